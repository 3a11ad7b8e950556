/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Base64 (RFC 4648 §4, the standard alphabet) decoding, for a kubeconfig's *-data fields and an
 * HTTP Basic credential.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/*
 * Decode len bytes of s into a new buffer (caller frees; NUL-terminated beyond *ret_len, which
 * counts every decoded byte, NULs inside included). Decoding ends at the first '='; with
 * skip_space, blanks and line ends are skipped, else they are refused. NULL with errno EINVAL
 * (a byte outside the alphabet, or padding followed by more than padding) or ENOMEM.
 */
char *vw_base64_decode(const char *s, size_t len, bool skip_space, size_t *ret_len);

/* SPDX-License-Identifier: Apache-2.0 */
/* Strict UTF-8 decoding (RFC 3629), for the sanitisers of names and label values. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/*
 * Length (1 to 4) of the valid UTF-8 sequence at s, at most n bytes (n >= 1), with its code
 * point in *ret_cp; 0 when s does not start one: no overlong forms, no surrogates,
 * nothing above U+10FFFF, no sequence cut by n. A NUL-terminated s may pass SIZE_MAX: a NUL is
 * never a continuation byte, so this never reads past it.
 */
size_t vw_utf8_decode(const unsigned char *s, size_t n, uint32_t *ret_cp);

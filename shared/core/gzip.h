/* SPDX-License-Identifier: Apache-2.0 */
/* gzip (RFC 1952) of a buffer in memory, with zlib: what /metrics sends to scrapers that accept
 * it (every Prometheus does). */
#pragma once

#include <stddef.h>

/* The gzip of in into a malloc'd *ret at zlib's default level (6): 0, -ENOMEM or -EIO. */
int vw_gzip(const void *in, size_t len, char **ret, size_t *ret_len);
/* The same at a zlib level, 1 (fastest) to 9 (smallest); -EINVAL for another. */
int vw_gzip_level(const void *in, size_t len, int level, char **ret, size_t *ret_len);

/* SPDX-License-Identifier: Apache-2.0 */
/* Decimal digits without printf: the exposition's and the passthrough frame's writers. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* v's decimal digits into out (at least max(20, width) bytes, no NUL), zero-padded on the left
 * to width digits (0: none): their count. */
static inline size_t vw_u64_digits(uint64_t v, char *out, size_t width)
{
	char tmp[20];
	size_t n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n < width && n < sizeof(tmp))
		tmp[n++] = '0';
	for (size_t i = 0; i < n; i++)
		out[i] = tmp[n - 1 - i];
	return n;
}

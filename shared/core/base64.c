/* SPDX-License-Identifier: Apache-2.0 */
#include "base64.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int b64_value(char ch)
{
	if (ch >= 'A' && ch <= 'Z')
		return ch - 'A';
	if (ch >= 'a' && ch <= 'z')
		return ch - 'a' + 26;
	if (ch >= '0' && ch <= '9')
		return ch - '0' + 52;
	return ch == '+' ? 62 : ch == '/' ? 63 : -1;
}

static bool blank(char ch)
{
	return ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t';
}

char *vw_base64_decode(const char *s, size_t len, bool skip_space, size_t *ret_len)
{
	unsigned acc = 0, bits = 0;
	size_t n = 0, i = 0;
	char *out = malloc(len / 4 * 3 + 4);

	if (!out)
		return NULL;
	for (; i < len && s[i] != '='; i++) {
		int v = b64_value(s[i]);

		if (v < 0 && skip_space && blank(s[i]))
			continue;
		if (v < 0)
			goto bad;
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[n++] = (char)((acc >> bits) & 0xff);
		}
	}
	for (; i < len; i++) /* padding, and only padding (or blanks where they are skipped) */
		if (s[i] != '=' && !(skip_space && blank(s[i])))
			goto bad;
	out[n] = '\0';
	*ret_len = n;
	return out;
bad:
	explicit_bzero(out, n);
	free(out);
	errno = EINVAL;
	return NULL;
}

/* SPDX-License-Identifier: Apache-2.0 */
#include "json.h"

#include <limits.h>
#include <stdint.h>

#include "utf8.h"

struct json_tokener *vw_json_tokener_new(int depth)
{
	struct json_tokener *tok = json_tokener_new_ex(depth);

	if (tok)
		json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	return tok;
}

struct json_object *vw_json_parse(struct json_tokener *tok, const char *s, size_t len,
				  enum json_type t)
{
	struct json_object *o;

	while (len > 0 && (s[len - 1] == '\n' || s[len - 1] == '\r' || s[len - 1] == ' ' ||
			   s[len - 1] == '\t'))
		len--;
	if (len == 0 || len > INT_MAX)
		return NULL;
	json_tokener_reset(tok);
	o = json_tokener_parse_ex(tok, s, (int)len);
	if (json_tokener_get_error(tok) != json_tokener_success ||
	    json_tokener_get_parse_end(tok) != len || !json_object_is_type(o, t)) {
		json_object_put(o);
		o = NULL;
	}
	json_tokener_reset(tok);
	return o;
}

/* Copies n bytes to out[len] unless out is NULL; the new length. */
static size_t put(char *out, size_t len, const char *s, size_t n)
{
	if (out)
		memcpy(out + len, s, n);
	return len + n;
}

size_t vw_json_escape(const char *s, size_t n, char *out, enum vw_json_invalid invalid)
{
	static const char hex[] = "0123456789abcdef";
	static const char shortcut[0x20] = { ['\b'] = 'b', ['\f'] = 'f', ['\n'] = 'n',
					     ['\r'] = 'r', ['\t'] = 't' };
	size_t len = 0, run = 0; /* run: the bytes before i that go out as they are */

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		uint32_t cp;

		if (c >= 0x80) {
			size_t k = vw_utf8_decode((const unsigned char *)s + i, n - i, &cp);

			if (k || invalid == VW_JSON_INVALID_KEEP) {
				k = VW_MAX(k, (size_t)1);
				run += k;
				i += k - 1;
				continue;
			}
		} else if (c >= 0x20 && c != '"' && c != '\\') {
			run++;
			continue;
		}
		len = put(out, len, s + i - run, run);
		run = 0;
		if (c >= 0x80)
			len = put(out, len, "\xef\xbf\xbd", 3); /* U+FFFD */
		else if (c >= 0x20 || shortcut[c])
			len = put(out, len, (char[]){ '\\', c >= 0x20 ? (char)c : shortcut[c] }, 2);
		else
			len = put(out, len, (char[]){ '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] }, 6);
	}
	return put(out, len, s + n - run, run);
}

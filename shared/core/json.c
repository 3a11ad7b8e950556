/* SPDX-License-Identifier: Apache-2.0 */
#include "json.h"

#include <limits.h>

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

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * json-c for untrusted input: a strict tokener with a depth limit, one parse of
 * a whole buffer into a value of an expected type, and type-checked accessors. Shared by the
 * pod metadata client and the container-runtime metadata reader; and the one JSON string escaper
 * of the writers that do without json-c.
 */
#pragma once

#include <errno.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "macro.h"

/* STRICT | VALIDATE_UTF8, nesting at most depth. NULL when out of memory. */
struct json_tokener *vw_json_tokener_new(int depth);
/*
 * s[0, len) as exactly one JSON value of type t (trailing whitespace allowed). NULL for
 * anything else: malformed, truncated, too deep, trailing data, another type, len > INT_MAX.
 * The tokener is reset either way.
 */
struct json_object *vw_json_parse(struct json_tokener *tok, const char *s, size_t len,
				  enum json_type t);

static inline void vw_json_putp(struct json_object **o)
{
	json_object_put(*o);
}

#define _cleanup_json_ _cleanup_(vw_json_putp)

/* o[key] when it exists and has type t, else NULL (o may be NULL). */
static inline struct json_object *vw_jget(struct json_object *o, const char *key,
					  enum json_type t)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, t))
		return NULL;
	return v;
}

#define vw_jobj(o, k) vw_jget(o, k, json_type_object)
#define vw_jarr(o, k) vw_jget(o, k, json_type_array)

/* A string value without embedded NULs, or NULL. */
static inline const char *vw_jstr_value(struct json_object *v)
{
	const char *s;

	if (!v || !json_object_is_type(v, json_type_string))
		return NULL;
	s = json_object_get_string(v);
	return strlen(s) == (size_t)json_object_get_string_len(v) ? s : NULL;
}

/* o[key] as a string without embedded NULs, or NULL. */
static inline const char *vw_jstr(struct json_object *o, const char *key)
{
	return vw_jstr_value(vw_jget(o, key, json_type_string));
}

/* The most bytes vw_json_escape() writes for n input bytes (a control byte as \u00XX). */
#define VW_JSON_ESCAPED_MAX(n) (6 * (n))

/* What vw_json_escape() does with a byte that starts no valid UTF-8 sequence. */
enum vw_json_invalid {
	VW_JSON_INVALID_REPLACE, /* U+FFFD: the JSON is valid whatever the input */
	VW_JSON_INVALID_KEEP,    /* as it is: json-c (not validating) reads the same bytes back */
};

/*
 * s[0, n) as the body of a JSON string (without its quotes), as json-c writes it less its
 * optional "\/": '"' and '\\' escaped, \b \f \n \r \t, any other control byte as \u00XX,
 * valid UTF-8 as it is, invalid bytes as `invalid` says. Its length; written at out
 * (VW_JSON_ESCAPED_MAX(n) bytes, not NUL-terminated) unless out is NULL.
 */
size_t vw_json_escape(const char *s, size_t n, char *out, enum vw_json_invalid invalid);

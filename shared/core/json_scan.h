/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Walking a large JSON document without building its tree. json-c turns every value into an
 * object of 100+ bytes, so a 20 MiB list of tiny values costs gigabytes; a list whose items are
 * parsed one at a time costs one item. The scanner checks the grammar of the whole text (strings
 * and their escapes, numbers, literals, nesting up to a depth) and hands out byte spans; each
 * span the caller cares about is then parsed strictly with json.h. Pure: no allocation.
 */
#pragma once

#include <stddef.h>

struct vw_json_span {
	const char *p;
	size_t len;
};

/*
 * s[0, len) must be one JSON object (surrounding whitespace allowed). fn gets each member's raw
 * key (the bytes between the quotes, escapes not decoded) and its value's span, in order; a
 * non-zero return from fn stops the walk and is returned. -EBADMSG: not valid JSON, not an
 * object, or nested deeper than max_depth.
 */
int vw_json_members(const char *s, size_t len, unsigned max_depth,
		    int (*fn)(const char *key, size_t key_len, struct vw_json_span value, void *ud),
		    void *ud);
/* The same for the elements of an array span (as vw_json_members handed it out). */
int vw_json_elements(struct vw_json_span array, unsigned max_depth,
		     int (*fn)(struct vw_json_span value, void *ud), void *ud);
/* True when the span is exactly the literal null. */
int vw_json_is_null(struct vw_json_span v);

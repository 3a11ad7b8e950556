/* SPDX-License-Identifier: Apache-2.0 */
#include "json_scan.h"

#include <errno.h>
#include <string.h>

static const char *ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

static int hex(char c)
{
	return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}

/* p at the opening quote: the byte after the closing one, or NULL. */
static const char *skip_string(const char *p, const char *end)
{
	for (p++; p < end; p++) {
		unsigned char c = (unsigned char)*p;

		if (c == '"')
			return p + 1;
		if (c < 0x20)
			return NULL;
		if (c != '\\')
			continue;
		if (++p >= end)
			return NULL;
		if (*p == 'u') {
			if (end - p < 5 || !hex(p[1]) || !hex(p[2]) || !hex(p[3]) || !hex(p[4]))
				return NULL;
			p += 4;
		} else if (!strchr("\"\\/bfnrt", *p) || *p == '\0') {
			return NULL;
		}
	}
	return NULL;
}

static const char *digits(const char *p, const char *end)
{
	const char *q = p;

	while (q < end && *q >= '0' && *q <= '9')
		q++;
	return q > p ? q : NULL;
}

/* RFC 8259 number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static const char *skip_number(const char *p, const char *end)
{
	if (p < end && *p == '-')
		p++;
	if (p < end && *p == '0')
		p++;
	else if (!(p = digits(p, end)))
		return NULL;
	if (p < end && *p == '.' && !(p = digits(p + 1, end)))
		return NULL;
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			p++;
		if (!(p = digits(p, end)))
			return NULL;
	}
	return p;
}

static const char *skip_literal(const char *p, const char *end, const char *lit)
{
	size_t n = strlen(lit);

	return (size_t)(end - p) >= n && memcmp(p, lit, n) == 0 ? p + n : NULL;
}

static const char *skip_value(const char *p, const char *end, unsigned depth);

/* p at '{' or '[': the byte after the matching close, or NULL. */
static const char *skip_container(const char *p, const char *end, unsigned depth)
{
	char close = *p == '{' ? '}' : ']';
	int object = *p == '{';

	if (depth == 0)
		return NULL;
	p = ws(p + 1, end);
	if (p < end && *p == close)
		return p + 1;
	for (;;) {
		if (object) {
			if (p >= end || *p != '"' || !(p = skip_string(p, end)))
				return NULL;
			p = ws(p, end);
			if (p >= end || *p != ':')
				return NULL;
			p = ws(p + 1, end);
		}
		if (!(p = skip_value(p, end, depth - 1)))
			return NULL;
		p = ws(p, end);
		if (p < end && *p == ',') {
			p = ws(p + 1, end);
			continue;
		}
		return p < end && *p == close ? p + 1 : NULL;
	}
}

static const char *skip_value(const char *p, const char *end, unsigned depth)
{
	if (p >= end)
		return NULL;
	switch (*p) {
	case '{':
	case '[':
		return skip_container(p, end, depth);
	case '"':
		return skip_string(p, end);
	case 't':
		return skip_literal(p, end, "true");
	case 'f':
		return skip_literal(p, end, "false");
	case 'n':
		return skip_literal(p, end, "null");
	default:
		return skip_number(p, end);
	}
}

/* Walk the container at [p, end) (whole text: trailing whitespace only), calling fn per entry. */
static int walk(const char *p, const char *end, char open, unsigned max_depth,
		int (*fn)(const char *key, size_t key_len, struct vw_json_span v, void *ud),
		void *ud)
{
	const char *stop;
	int r;

	p = ws(p, end);
	if (p >= end || *p != open || !(stop = skip_container(p, end, max_depth)) ||
	    ws(stop, end) != end)
		return -EBADMSG; /* the whole text is checked before anything is handed out */
	p = ws(p + 1, end);
	while (p < stop - 1) {
		const char *key = NULL, *v;
		size_t key_len = 0;

		if (open == '{') {
			const char *k_end = skip_string(p, end);

			key = p + 1;
			key_len = (size_t)(k_end - 1 - key);
			p = ws(ws(k_end, end) + 1, end); /* past ':' */
		}
		v = skip_value(p, end, max_depth - 1);
		r = fn(key, key_len, (struct vw_json_span){ p, (size_t)(v - p) }, ud);
		if (r != 0)
			return r;
		p = ws(v, end);
		if (*p == ',')
			p = ws(p + 1, end);
	}
	return 0;
}

int vw_json_members(const char *s, size_t len, unsigned max_depth,
		    int (*fn)(const char *key, size_t key_len, struct vw_json_span value, void *ud),
		    void *ud)
{
	return walk(s, s + len, '{', max_depth, fn, ud);
}

struct elements {
	int (*fn)(struct vw_json_span value, void *ud);
	void *ud;
};

static int element(const char *key, size_t key_len, struct vw_json_span v, void *ud)
{
	struct elements *e = ud;

	(void)key;
	(void)key_len;
	return e->fn(v, e->ud);
}

int vw_json_elements(struct vw_json_span array, unsigned max_depth,
		     int (*fn)(struct vw_json_span value, void *ud), void *ud)
{
	struct elements e = { fn, ud };

	return walk(array.p, array.p + array.len, '[', max_depth, element, &e);
}

int vw_json_is_null(struct vw_json_span v)
{
	return v.len == 4 && memcmp(v.p, "null", 4) == 0;
}

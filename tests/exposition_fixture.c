/* SPDX-License-Identifier: Apache-2.0 */
#include "exposition_fixture.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool name_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '_' || ch == ':';
}

/* The end of a label set starting after '{' (at its '}'), honouring quoted values; NULL when
 * the line ends first. */
static const char *labels_end(const char *p, const char *end)
{
	bool quoted = false;

	for (; p < end; p++) {
		if (quoted && *p == '\\' && p + 1 < end)
			p++;
		else if (*p == '"')
			quoted = !quoted;
		else if (!quoted && *p == '}')
			return p;
	}
	return NULL;
}

/* One line [l, end) as a sample: false when it is none. */
static bool parse_line(const char *l, const char *end, struct vw_expo_sample *s)
{
	const char *p = l, *close;
	char *num_end;

	while (p < end && name_char(*p))
		p++;
	if (p == l || (*l >= '0' && *l <= '9'))
		return false;
	*s = (struct vw_expo_sample){ .series = l, .name_len = (size_t)(p - l), .labels = p };
	if (p < end && *p == '{') {
		close = labels_end(p + 1, end);
		if (!close)
			return false;
		s->labels = p + 1;
		s->labels_len = (size_t)(close - p - 1);
		p = close + 1;
	}
	s->series_len = (size_t)(p - l);
	if (p >= end || (*p != ' ' && *p != '\t'))
		return false;
	s->value = strtod(p + 1, &num_end);
	return num_end != p + 1 && num_end <= end;
}

void vw_expo_begin(struct vw_expo_cursor *c, const char *text)
{
	*c = (struct vw_expo_cursor){ .p = text };
}

bool vw_expo_next(struct vw_expo_cursor *c, struct vw_expo_sample *s)
{
	while (c->p && *c->p) {
		const char *l = c->p, *nl = strchr(l, '\n'), *end = nl ? nl : l + strlen(l);

		c->p = nl ? nl + 1 : NULL;
		if (strncmp(l, "# TYPE ", 7) == 0) {
			const char *sp = memrchr(l, ' ', (size_t)(end - l));

			c->counter = sp && (size_t)(end - sp - 1) == 7 && memcmp(sp + 1, "counter", 7) == 0;
			continue;
		}
		if (parse_line(l, end, s)) {
			s->counter = c->counter;
			return true;
		}
	}
	return false;
}

bool vw_expo_is(const struct vw_expo_sample *s, const char *family)
{
	return strlen(family) == s->name_len && memcmp(s->series, family, s->name_len) == 0;
}

double vw_expo_value(const char *text, const char *series)
{
	size_t n = strlen(series);
	struct vw_expo_cursor c;
	struct vw_expo_sample s;

	vw_expo_begin(&c, text);
	while (vw_expo_next(&c, &s))
		if (s.series_len == n && memcmp(s.series, series, n) == 0)
			return s.value;
	return NAN;
}

double vw_expo_sum(const char *text, const char *family, const char *const *must)
{
	struct vw_expo_cursor c;
	struct vw_expo_sample s;
	double sum = 0;

	vw_expo_begin(&c, text);
	while (vw_expo_next(&c, &s)) {
		bool all = vw_expo_is(&s, family);

		for (size_t i = 0; all && must && must[i]; i++)
			all = memmem(s.series, s.series_len, must[i], strlen(must[i])) != NULL;
		if (all)
			sum += s.value;
	}
	return sum;
}

bool vw_expo_find(const char *text, const char *family, const char *labels, double *ret)
{
	struct vw_expo_cursor c;
	struct vw_expo_sample s;

	vw_expo_begin(&c, text);
	while (vw_expo_next(&c, &s)) {
		if (vw_expo_is(&s, family) &&
		    memmem(s.labels, s.labels_len, labels, strlen(labels))) {
			*ret = s.value;
			return true;
		}
	}
	return false;
}

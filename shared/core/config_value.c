/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Typed option values: Go durations, booleans, bounded numbers, strings with choices, string
 * lists. Each setter parses one flag-style value into its field or explains what is wrong.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config_priv.h"
#include "fileio.h"
#include "log.h"

#define DURATION_MAX_NS ((uint64_t)INT64_MAX)

const struct vw_opt_type_info vw_opt_types[VW_OPT_STRLIST + 1] = {
	[VW_OPT_STRING] = { "a string", "STRING", sizeof(char *) },
	[VW_OPT_DURATION] = { "a duration such as 300ms, 5s, 1m30s or 1.5h", "DURATION",
			      sizeof(uint64_t) },
	[VW_OPT_BOOL] = { "true or false (also yes/no, 1/0)", NULL, sizeof(bool) },
	[VW_OPT_UINT] = { "an unsigned decimal integer", "N", sizeof(uint64_t) },
	[VW_OPT_DOUBLE] = { "a finite number such as 0.5", "NUM", sizeof(double) },
	[VW_OPT_LOG_LEVEL] = { "one of: error, warn, info, debug", "LEVEL",
			       sizeof(enum vw_log_level) },
	[VW_OPT_STRLIST] = { "a list (YAML sequence, or comma-separated values)", "LIST",
			     sizeof(struct vw_strlist) },
};

int vw_config_msg(char *buf, size_t len, int r, const char *fmt, ...)
{
	va_list ap;

	if (buf && len) {
		va_start(ap, fmt);
		vsnprintf(buf, len, fmt, ap);
		va_end(ap);
	}
	return r;
}

/* ---- durations and booleans ---------------------------------------------------------------- */

static const struct {
	const char *name;
	uint64_t ns;
} duration_units[] = {
	{ "ns", 1 },
	{ "us", 1000 },
	{ "\u00b5s", 1000 }, /* micro sign */
	{ "\u03bcs", 1000 }, /* Greek mu */
	{ "ms", VW_NSEC_PER_MSEC },
	{ "s", VW_NSEC_PER_SEC },
	{ "m", 60 * VW_NSEC_PER_SEC },
	{ "h", 3600 * VW_NSEC_PER_SEC },
};

static int duration_unit(const char *s, size_t len, uint64_t *ret_ns)
{
	for (size_t i = 0; i < ARRAY_SIZE(duration_units); i++) {
		if (strlen(duration_units[i].name) == len &&
		    memcmp(s, duration_units[i].name, len) == 0) {
			*ret_ns = duration_units[i].ns;
			return 0;
		}
	}
	return -EINVAL;
}

/* One "<digits>[.<digits>]<unit>" component, as Go's time.ParseDuration reads it. */
static int duration_component(const char **sp, uint64_t *ret_ns)
{
	const char *s = *sp;
	uint64_t v = 0, f = 0, unit;
	double scale = 1;
	bool digits = false;
	size_t len;

	for (; isdigit((unsigned char)*s); s++, digits = true) {
		if (v > (DURATION_MAX_NS - (uint64_t)(*s - '0')) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	if (*s == '.') {
		/* Digits beyond what fits in f are dropped, as in Go. */
		for (s++; isdigit((unsigned char)*s); s++, digits = true) {
			if (f > (DURATION_MAX_NS - 9) / 10)
				continue;
			f = f * 10 + (uint64_t)(*s - '0');
			scale *= 10;
		}
	}
	len = strcspn(s, "0123456789.");
	if (!digits || len == 0 || duration_unit(s, len, &unit) < 0)
		return -EINVAL;
	if (v > DURATION_MAX_NS / unit)
		return -ERANGE;
	v *= unit;
	if (f > 0) {
		double frac = (double)f * ((double)unit / scale);

		if (frac >= (double)(DURATION_MAX_NS - v))
			return -ERANGE;
		v += (uint64_t)frac;
	}
	*sp = s + len;
	*ret_ns = v;
	return 0;
}

int vw_parse_duration(const char *s, uint64_t *ret_ns)
{
	uint64_t total = 0;

	if (!s || !*s)
		return -EINVAL;
	if (strcmp(s, "0") == 0) {
		*ret_ns = 0;
		return 0;
	}
	while (*s) {
		uint64_t ns;
		int r = duration_component(&s, &ns);

		if (r < 0)
			return r;
		if (ns > DURATION_MAX_NS - total)
			return -ERANGE;
		total += ns;
	}
	*ret_ns = total;
	return 0;
}

int vw_format_duration(uint64_t ns, char *buf, size_t size)
{
	static const struct {
		uint64_t div;
		const char *unit;
	} sub[] = { { VW_NSEC_PER_MSEC, "ms" }, { 1000, "us" }, { 1, "ns" } };
	static const struct {
		uint64_t sec;
		const char *unit;
	} parts[] = { { 3600, "h" }, { 60, "m" }, { 1, "s" } };
	size_t n = 0;

	if (ns == 0 || ns % VW_NSEC_PER_SEC != 0) {
		for (size_t i = 0; i < ARRAY_SIZE(sub); i++) {
			if (ns % sub[i].div == 0 || sub[i].div == 1) {
				n = (size_t)snprintf(buf, size, "%" PRIu64 "%s", ns / sub[i].div,
						     ns ? sub[i].unit : "s");
				break;
			}
		}
		return n < size ? 0 : -ENOBUFS;
	}
	uint64_t sec = ns / VW_NSEC_PER_SEC;

	if (size)
		buf[0] = '\0';
	for (size_t i = 0; i < ARRAY_SIZE(parts); i++) {
		uint64_t v = sec / parts[i].sec;

		sec %= parts[i].sec;
		if (v && n < size)
			n += (size_t)snprintf(buf + n, size - n, "%" PRIu64 "%s", v, parts[i].unit);
	}
	return n < size ? 0 : -ENOBUFS;
}

int vw_parse_bool(const char *s, bool *ret)
{
	static const char *const yes[] = { "true", "yes", "1" }, *const no[] = { "false", "no",
										 "0" };

	if (!s)
		return -EINVAL;
	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		if (strcasecmp(s, yes[i]) == 0 || strcasecmp(s, no[i]) == 0) {
			*ret = strcasecmp(s, yes[i]) == 0;
			return 0;
		}
	}
	return -EINVAL;
}

/* ---- string lists -------------------------------------------------------------------------- */

void vw_strlist_clear(struct vw_strlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

void vw_strlist_free(struct vw_strlist *l)
{
	vw_strlist_clear(l);
}

int vw_strlist_push(struct vw_strlist *l, const char *s, size_t len)
{
	_cleanup_free_ char *dup = strndup(s, len);
	char **nv;

	if (!dup)
		return -ENOMEM;
	nv = reallocarray(l->v, l->n + 2, sizeof(*nv)); /* and the NULL after the last */
	if (!nv)
		return -ENOMEM;
	l->v = nv;
	l->v[l->n++] = VW_TAKE_PTR(dup);
	l->v[l->n] = NULL;
	return 0;
}

/* Append "a, b,c" item by item; "" adds nothing (so --list= empties a list). */
static int strlist_add_csv(struct vw_strlist *l, const char *s, char *why, size_t whylen)
{
	const char *p = s;

	if (!*s)
		return 0;
	for (;;) {
		size_t len = strcspn(p, ",");
		const char *b = p, *e = p + len;
		int r;

		while (b < e && isspace((unsigned char)*b))
			b++;
		while (e > b && isspace((unsigned char)e[-1]))
			e--;
		if (b == e)
			return vw_config_msg(why, whylen, -EINVAL, "empty item in list \"%.*s\"",
					     VW_CONFIG_QUOTE_MAX, s);
		r = vw_strlist_push(l, b, (size_t)(e - b));
		if (r < 0)
			return vw_config_msg(why, whylen, r, "%s", strerror(-r));
		if (!p[len])
			return 0;
		p += len + 1;
	}
}

/* ---- typed values -------------------------------------------------------------------------- */

void vw_opt_choices_join(const struct vw_option *o, char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; o->choices && o->choices[i] && n < size; i++)
		n += (size_t)snprintf(buf + n, size - n, "%s%s", i ? ", " : "", o->choices[i]);
}

bool vw_opt_bounded(const struct vw_option *o)
{
	return o->min != o->max &&
	       (o->type == VW_OPT_DURATION || o->type == VW_OPT_UINT || o->type == VW_OPT_DOUBLE);
}

void vw_opt_bound_format(const struct vw_option *o, double v, char *buf, size_t size)
{
	if (o->type == VW_OPT_DURATION && v >= 0 && v * 1e9 <= (double)DURATION_MAX_NS)
		(void)vw_format_duration((uint64_t)(v * 1e9), buf, size);
	else
		snprintf(buf, size, "%.15g", v);
}

/* v in the option's unit (seconds for durations); shown is the value as the user wrote it. */
static int bounds_check(const struct vw_option *o, double v, const char *shown, char *why,
			size_t whylen)
{
	char lo[VW_DURATION_STRLEN], hi[VW_DURATION_STRLEN];

	if (!vw_opt_bounded(o) || (v >= o->min && v <= o->max))
		return 0;
	vw_opt_bound_format(o, o->min, lo, sizeof(lo));
	vw_opt_bound_format(o, o->max, hi, sizeof(hi));
	return vw_config_msg(why, whylen, -ERANGE, "%.*s is out of range (expected %s to %s)",
			     VW_CONFIG_QUOTE_MAX, shown, lo, hi);
}

static int bad_value(const struct vw_option *o, const char *s, char *why, size_t whylen)
{
	return vw_config_msg(why, whylen, -EINVAL, "invalid value \"%.*s\" (expected %s)",
			     VW_CONFIG_QUOTE_MAX, s, vw_opt_types[o->type].expect);
}

int vw_opt_check_choice(const struct vw_option *o, const char *s, char *why, size_t whylen)
{
	bool ok = !o->choices;
	char list[VW_CONFIG_MSG_MAX / 2];

	for (size_t i = 0; o->choices && o->choices[i]; i++)
		ok = ok || strcmp(s, o->choices[i]) == 0;
	if (ok)
		return 0;
	vw_opt_choices_join(o, list, sizeof(list));
	return vw_config_msg(why, whylen, -EINVAL, "invalid %s \"%.*s\" (expected one of: %s)",
			     o->type == VW_OPT_STRLIST ? "item" : "value", VW_CONFIG_QUOTE_MAX, s,
			     list);
}

bool vw_opt_boolish(const struct vw_option *o)
{
	bool t = false, f = false;

	if (o->type == VW_OPT_BOOL)
		return true;
	for (size_t i = 0; o->type == VW_OPT_STRING && o->choices && o->choices[i]; i++) {
		t = t || strcmp(o->choices[i], "true") == 0;
		f = f || strcmp(o->choices[i], "false") == 0;
	}
	return t && f;
}

static int set_string(const struct vw_option *o, void *cfg, const char *s, char *why, size_t whylen)
{
	char **field = vw_opt_field(o, cfg), *dup;
	bool b;
	int r;

	if (vw_opt_boolish(o) && vw_parse_bool(s, &b) == 0)
		s = b ? "true" : "false"; /* auto|true|false: every boolean spelling */
	r = vw_opt_check_choice(o, s, why, whylen);

	if (r < 0)
		return r;
	dup = strdup(s);
	if (!dup)
		return vw_config_msg(why, whylen, -ENOMEM, "%s", strerror(ENOMEM));
	free(*field);
	*field = dup;
	return 0;
}

static int set_duration(const struct vw_option *o, void *cfg, const char *s, char *why,
			size_t whylen)
{
	uint64_t ns;
	int r = vw_parse_duration(s, &ns);

	if (r == -ERANGE)
		return vw_config_msg(why, whylen, r, "duration \"%.*s\" is too long (at most %s)",
				     VW_CONFIG_QUOTE_MAX, s, "2562047h47m16s");
	if (r < 0)
		return vw_config_msg(why, whylen, r, "invalid duration \"%.*s\" (expected %s)",
				     VW_CONFIG_QUOTE_MAX, s, vw_opt_types[o->type].expect);
	r = bounds_check(o, (double)ns / 1e9, s, why, whylen);
	if (r < 0)
		return r;
	*(uint64_t *)vw_opt_field(o, cfg) = ns;
	return 0;
}

static int set_uint(const struct vw_option *o, void *cfg, const char *s, char *why, size_t whylen)
{
	uint64_t v;
	int r = vw_parse_u64(s, &v);

	if (r == -ERANGE)
		return vw_config_msg(why, whylen, r, "%.*s is too large (at most %" PRIu64 ")",
				     VW_CONFIG_QUOTE_MAX, s, UINT64_MAX);
	if (r < 0)
		return bad_value(o, s, why, whylen);
	r = bounds_check(o, (double)v, s, why, whylen);
	if (r < 0)
		return r;
	*(uint64_t *)vw_opt_field(o, cfg) = v;
	return 0;
}

static int set_double(const struct vw_option *o, void *cfg, const char *s, char *why, size_t whylen)
{
	char *end;
	double v;
	int r;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end || errno == ERANGE || !isfinite(v) || isspace((unsigned char)*s))
		return bad_value(o, s, why, whylen);
	r = bounds_check(o, v, s, why, whylen);
	if (r < 0)
		return r;
	*(double *)vw_opt_field(o, cfg) = v;
	return 0;
}

static int set_bool(const struct vw_option *o, void *cfg, const char *s, char *why, size_t whylen)
{
	if (vw_parse_bool(s, vw_opt_field(o, cfg)) < 0)
		return bad_value(o, s, why, whylen);
	return 0;
}

static int set_log_level(const struct vw_option *o, void *cfg, const char *s, char *why,
			 size_t whylen)
{
	if (vw_log_level_parse(s, vw_opt_field(o, cfg)) < 0)
		return bad_value(o, s, why, whylen);
	return 0;
}

static int set_strlist(const struct vw_option *o, void *cfg, const char *s, char *why,
		       size_t whylen)
{
	struct vw_strlist *l = vw_opt_field(o, cfg);
	size_t before = l->n;
	int r = strlist_add_csv(l, s, why, whylen);

	for (size_t i = before; r == 0 && i < l->n; i++)
		r = vw_opt_check_choice(o, l->v[i], why, whylen);
	while (r < 0 && l->n > before) { /* the list as it was */
		free(l->v[--l->n]);
		l->v[l->n] = NULL;
	}
	return r;
}

typedef int (*set_fn)(const struct vw_option *o, void *cfg, const char *s, char *why,
		      size_t whylen);

static const set_fn setters[] = {
	[VW_OPT_STRING] = set_string,	[VW_OPT_DURATION] = set_duration,
	[VW_OPT_BOOL] = set_bool,	[VW_OPT_UINT] = set_uint,
	[VW_OPT_DOUBLE] = set_double,	[VW_OPT_LOG_LEVEL] = set_log_level,
	[VW_OPT_STRLIST] = set_strlist,
};

/* Parse s like a flag value into the option's field. A list gets s's items appended. */
int vw_opt_set(const struct vw_option *o, void *cfg, const char *s, char *why, size_t whylen)
{
	return setters[o->type](o, cfg, s, why, whylen);
}

void vw_opt_free(const struct vw_option *o, void *cfg)
{
	if (o->type == VW_OPT_STRING) {
		char **field = vw_opt_field(o, cfg);

		free(*field);
		*field = NULL;
	} else if (o->type == VW_OPT_STRLIST) {
		vw_strlist_clear(vw_opt_field(o, cfg));
	}
}

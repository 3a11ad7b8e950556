/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A text exposition 0.0.4 as an OTLP/JSON ExportMetricsServiceRequest (otlp.h). The input is
 * our own writer's output (prom.c): "# HELP name text" (\\ and \n escaped), "# TYPE name
 * counter|gauge", then "name{label=\"value\",...} value" lines (\\, \" and \n escaped in
 * values). The JSON mapping is protobuf's canonical one (field names in lowerCamelCase, 64-bit
 * integers as strings, enums as numbers), which OTLP/HTTP receivers accept with
 * Content-Type: application/json.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "macro.h"
#include "otlp.h"

struct sb {
	char *p;
	size_t len, cap;
	bool oom;
};

/* Room for n more bytes and a NUL at b->p + b->len; NULL when out of memory (then for good). */
static char *sb_room(struct sb *b, size_t n)
{
	if (b->oom)
		return NULL;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *p;

		while (cap < b->len + n + 1)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p) {
			b->oom = true;
			return NULL;
		}
		b->p = p;
		b->cap = cap;
	}
	return b->p + b->len;
}

static void sb_add(struct sb *b, const char *s, size_t n)
{
	char *at = sb_room(b, n);

	if (!at)
		return;
	memcpy(at, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void sb_str(struct sb *b, const char *s)
{
	sb_add(b, s, strlen(s));
}

static void sb_printf(struct sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(struct sb *b, const char *fmt, ...)
{
	char buf[128];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > 0)
		sb_add(b, buf, VW_MIN((size_t)n, sizeof(buf) - 1));
}

/* A JSON string of n bytes of s, quoted and escaped (vw_json_escape: valid whatever the input). */
static void sb_json(struct sb *b, const char *s, size_t n)
{
	char *at = sb_room(b, VW_JSON_ESCAPED_MAX(n) + 2);

	if (!at)
		return;
	at[0] = '"';
	n = 1 + vw_json_escape(s, n, at + 1, VW_JSON_INVALID_REPLACE);
	at[n++] = '"';
	b->len += n;
	b->p[b->len] = '\0';
}

/* s[0..n) unescaped as the text format escapes (\\, \n; \" in label values) into out. */
static size_t unescape(const char *s, size_t n, char *out)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\\' && i + 1 < n && (s[i + 1] == 'n' || s[i + 1] == '\\' || s[i + 1] == '"')) {
			i++;
			out[o++] = s[i] == 'n' ? '\n' : s[i];
		} else { /* not an escape of the text format: kept as it is */
			out[o++] = s[i];
		}
	}
	return o;
}

static void attr(struct sb *b, bool *first, const char *key, const char *val, size_t val_len)
{
	if (!val || !val_len)
		return;
	sb_str(b, *first ? "{\"key\":" : ",{\"key\":");
	*first = false;
	sb_json(b, key, strlen(key));
	sb_str(b, ",\"value\":{\"stringValue\":");
	sb_json(b, val, val_len);
	sb_str(b, "}}");
}

static void resource(struct sb *b, const struct vw_otlp_resource *r)
{
	bool first = true;

	sb_str(b, "{\"resourceMetrics\":[{\"resource\":{\"attributes\":[");
	if (r) {
		attr(b, &first, "service.name", r->service_name,
		     r->service_name ? strlen(r->service_name) : 0);
		attr(b, &first, "service.version", r->service_version,
		     r->service_version ? strlen(r->service_version) : 0);
		attr(b, &first, "host.name", r->host_name, r->host_name ? strlen(r->host_name) : 0);
		attr(b, &first, "k8s.node.name", r->k8s_node_name,
		     r->k8s_node_name ? strlen(r->k8s_node_name) : 0);
	}
	sb_str(b, "]},\"scopeMetrics\":[{\"scope\":{\"name\":\"virtwatt\",\"version\":\"" VW_VERSION
		  "\"},\"metrics\":[");
}

/* The unit of a family from its name's suffix (OpenTelemetry's UCUM codes). */
static const char *unit_of(const char *name, size_t n)
{
	static const struct {
		const char *suffix, *unit;
	} map[] = { { "_joules", "J" }, { "_watts", "W" }, { "_seconds", "s" },
		    { "_bytes", "By" }, { "_ratio", "1" }, { "_grams", "g" } };

	if (n > 6 && memcmp(name + n - 6, "_total", 6) == 0)
		n -= 6;
	for (size_t i = 0; i < ARRAY_SIZE(map); i++) {
		size_t l = strlen(map[i].suffix);

		if (n > l && memcmp(name + n - l, map[i].suffix, l) == 0)
			return map[i].unit;
	}
	return "";
}

/* The family being converted. */
struct family {
	char name[256];
	size_t name_len;
	char help[2048];
	size_t help_len;
	bool counter, typed, open;
	size_t n_points;
};

struct conv {
	struct sb b;
	struct family f;
	size_t n_metrics;
	char start[24], time[24];
};

static void family_close(struct conv *c)
{
	if (c->f.open)
		sb_str(&c->b, c->f.counter ? "],\"aggregationTemporality\":2,\"isMonotonic\":true}}"
					   : "]}}");
	c->f.open = false;
	c->f.typed = false;
}

static void family_open(struct conv *c)
{
	struct family *f = &c->f;
	size_t n = f->name_len;

	if (f->counter && n > 6 && memcmp(f->name + n - 6, "_total", 6) == 0)
		n -= 6;
	sb_str(&c->b, c->n_metrics++ ? ",{\"name\":" : "{\"name\":");
	sb_json(&c->b, f->name, n);
	sb_str(&c->b, ",\"description\":");
	sb_json(&c->b, f->help, f->help_len);
	sb_str(&c->b, ",\"unit\":");
	sb_json(&c->b, unit_of(f->name, f->name_len), strlen(unit_of(f->name, f->name_len)));
	sb_str(&c->b, f->counter ? ",\"sum\":{\"dataPoints\":[" : ",\"gauge\":{\"dataPoints\":[");
	f->open = true;
	f->n_points = 0;
}

/* "# HELP name text" or "# TYPE name kind". */
static void comment(struct conv *c, const char *line, size_t n)
{
	struct family *f = &c->f;
	const char *name = line + 7, *sp;
	size_t name_len;

	if (n < 8 || (memcmp(line, "# HELP ", 7) != 0 && memcmp(line, "# TYPE ", 7) != 0))
		return;
	sp = memchr(name, ' ', n - 7);
	name_len = sp ? (size_t)(sp - name) : n - 7;
	if (!sp || name_len >= sizeof(f->name))
		return;
	if (line[2] == 'H') {
		size_t hn = n - 8 - name_len;

		family_close(c);
		memcpy(f->name, name, name_len);
		f->name_len = name_len;
		f->help_len = unescape(sp + 1, VW_MIN(hn, sizeof(f->help) - 1), f->help);
		return;
	}
	if (name_len != f->name_len || memcmp(name, f->name, name_len) != 0) {
		family_close(c);
		memcpy(f->name, name, name_len);
		f->name_len = name_len;
		f->help_len = 0;
	}
	f->counter = n - 8 - name_len == 7 && memcmp(sp + 1, "counter", 7) == 0;
	f->typed = true;
}

/* The attributes of a sample's {...}; false when malformed. */
static bool labels(struct sb *b, const char *p, const char *end)
{
	bool first = true;

	while (p < end && *p != '}') {
		const char *eq = memchr(p, '=', (size_t)(end - p)), *v, *q;
		char key[128], val[2 * VW_PROM_LABEL_MAX + 2];
		size_t kn;

		if (!eq || eq + 1 >= end || eq[1] != '"' || (size_t)(eq - p) >= sizeof(key))
			return false;
		kn = (size_t)(eq - p);
		memcpy(key, p, kn);
		key[kn] = '\0';
		v = eq + 2;
		for (q = v; q < end && *q != '"'; q++)
			if (*q == '\\')
				q++;
		if (q >= end || (size_t)(q - v) >= sizeof(val))
			return false;
		attr(b, &first, key, val, unescape(v, (size_t)(q - v), val));
		p = q + 1;
		if (p < end && *p == ',')
			p++;
	}
	return p < end;
}

/* The sample's value (the text format's float, NaN, +Inf, -Inf); false when it is none. */
static bool parse_value(const char *s, size_t n, double *ret)
{
	char buf[64], *end;

	if (!n || n >= sizeof(buf))
		return false;
	memcpy(buf, s, n);
	buf[n] = '\0';
	*ret = strtod(buf, &end);
	return end == buf + n;
}

static void value(struct sb *b, double v)
{
	if (isnan(v))
		sb_str(b, "\"NaN\"");
	else if (isinf(v))
		sb_str(b, v > 0 ? "\"Infinity\"" : "\"-Infinity\"");
	else
		sb_printf(b, "%.17g", v);
}

/* "name{...} value" or "name value" of the current family. */
static void sample(struct conv *c, const char *line, size_t n)
{
	struct family *f = &c->f;
	const char *end = line + n, *brace, *sp, *val;
	size_t mark;
	double v;

	if (!f->typed || n <= f->name_len || memcmp(line, f->name, f->name_len) != 0 ||
	    (line[f->name_len] != '{' && line[f->name_len] != ' '))
		return;
	sp = memrchr(line, ' ', n);
	val = sp ? sp + 1 : end;
	if (!parse_value(val, (size_t)(end - val), &v))
		return; /* malformed: left out */
	if (!f->open)
		family_open(c);
	mark = c->b.len;
	sb_str(&c->b, f->n_points ? ",{\"attributes\":[" : "{\"attributes\":[");
	brace = line[f->name_len] == '{' ? line + f->name_len + 1 : NULL;
	if (brace && !labels(&c->b, brace, sp)) {
		c->b.len = mark; /* malformed: left out */
		return;
	}
	sb_str(&c->b, "]");
	if (f->counter) /* sums start when the daemon did */
		sb_printf(&c->b, ",\"startTimeUnixNano\":\"%s\"", c->start);
	sb_printf(&c->b, ",\"timeUnixNano\":\"%s\",\"asDouble\":", c->time);
	value(&c->b, v);
	sb_str(&c->b, "}");
	f->n_points++;
}

int vw_otlp_json_from_text(const char *text, size_t len, const struct vw_otlp_resource *res,
			   uint64_t start_ns, uint64_t time_ns, char **ret, size_t *ret_len)
{
	struct conv *c = calloc(1, sizeof(*c));
	const char *p = text, *end = text + len;

	*ret = NULL;
	if (!c)
		return -ENOMEM;
	snprintf(c->start, sizeof(c->start), "%" PRIu64, start_ns);
	snprintf(c->time, sizeof(c->time), "%" PRIu64, time_ns);
	resource(&c->b, res);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (n && p[0] == '#')
			comment(c, p, n);
		else if (n)
			sample(c, p, n);
		p += n + 1;
	}
	family_close(c);
	sb_str(&c->b, "]}]}]}");
	if (c->b.oom) {
		free(c->b.p);
		free(c);
		return -ENOMEM;
	}
	*ret = c->b.p;
	if (ret_len)
		*ret_len = c->b.len;
	free(c);
	return 0;
}

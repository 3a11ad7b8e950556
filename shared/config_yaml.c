/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The YAML configuration file, read with libyaml's event parser: a mapping of mappings whose
 * key paths ("web.listenAddress") name options. Every error carries file:line:column from
 * libyaml's marks. Anchors and aliases are refused, so nothing can expand (billion laughs).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "config_priv.h"

#define _cleanup_event_ _cleanup_(yaml_event_delete)

struct yaml_reader {
	const struct vw_config_program *p;
	void *cfg;
	char *err;
	size_t errlen;
	const char *path;
	const char *buf; /* the whole file, for positions of reader errors */
	size_t len;
	yaml_parser_t parser;
};

static int _printf_(4, 5)
	mark_err(struct yaml_reader *rd, size_t line, size_t col, const char *fmt, ...)
{
	char msg[VW_CONFIG_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return vw_config_msg(rd->err, rd->errlen, -EINVAL, "%s:%zu:%zu: %s", rd->path, line + 1,
			     col + 1, msg);
}

#define at_mark(rd, m, ...) mark_err(rd, (m)->line, (m)->column, __VA_ARGS__)

static int yaml_syntax_err(struct yaml_reader *rd)
{
	const yaml_parser_t *y = &rd->parser;
	size_t line = 0, col = 0;

	if (y->error == YAML_MEMORY_ERROR)
		return vw_config_msg(rd->err, rd->errlen, -ENOMEM, "%s: out of memory", rd->path);
	if (y->error != YAML_READER_ERROR) {
		int r = at_mark(rd, &y->problem_mark, "YAML syntax error: %s", y->problem);

		if (y->context && rd->err)
			snprintf(rd->err + strlen(rd->err), rd->errlen - strlen(rd->err),
				 " (%s at line %zu, column %zu)", y->context,
				 y->context_mark.line + 1, y->context_mark.column + 1);
		return r;
	}
	/* The reader reports a byte offset only. */
	for (size_t i = 0; i < y->problem_offset && i < rd->len; i++) {
		if (rd->buf[i] == '\n') {
			line++;
			col = 0;
		} else if (((unsigned char)rd->buf[i] & 0xc0) != 0x80) {
			col++;
		}
	}
	return mark_err(rd, line, col, "invalid text: %s", y->problem);
}

static const char *event_anchor(const yaml_event_t *ev)
{
	switch (ev->type) {
	case YAML_SCALAR_EVENT:
		return (const char *)ev->data.scalar.anchor;
	case YAML_SEQUENCE_START_EVENT:
		return (const char *)ev->data.sequence_start.anchor;
	case YAML_MAPPING_START_EVENT:
		return (const char *)ev->data.mapping_start.anchor;
	default:
		return NULL;
	}
}

/* Next event; aliases and anchors are refused, so no document can expand (billion laughs). */
static int yaml_next(struct yaml_reader *rd, yaml_event_t *ev)
{
	const char *anchor;

	yaml_event_delete(ev);
	if (!yaml_parser_parse(&rd->parser, ev))
		return yaml_syntax_err(rd);
	if (ev->type == YAML_ALIAS_EVENT)
		return at_mark(rd, &ev->start_mark, "aliases (*%s) are not supported",
			       (const char *)ev->data.alias.anchor);
	anchor = event_anchor(ev);
	if (anchor)
		return at_mark(rd, &ev->start_mark, "anchors (&%s) are not supported", anchor);
	return 0;
}

static const char *event_kind(const yaml_event_t *ev)
{
	switch (ev->type) {
	case YAML_SCALAR_EVENT:
		return "scalar";
	case YAML_SEQUENCE_START_EVENT:
		return "sequence";
	case YAML_MAPPING_START_EVENT:
		return "mapping";
	default:
		return "YAML event";
	}
}

/* A plain empty, "~" or "null" scalar: YAML's null. */
static bool scalar_is_null(const yaml_event_t *ev)
{
	const char *v = (const char *)ev->data.scalar.value;

	return ev->type == YAML_SCALAR_EVENT && ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
	       (!*v || strcmp(v, "~") == 0 || strcasecmp(v, "null") == 0);
}

/* The scalar's text, or an error if it is null or hides a NUL byte. */
static int scalar_text(struct yaml_reader *rd, const yaml_event_t *ev, const char *path,
		       const struct vw_option *o, const char **ret)
{
	const char *v = (const char *)ev->data.scalar.value;

	if (scalar_is_null(ev))
		return at_mark(rd, &ev->start_mark, "%s: missing value (expected %s)", path,
			       vw_opt_types[o->type].expect);
	if (strlen(v) != ev->data.scalar.length)
		return at_mark(rd, &ev->start_mark, "%s: value contains a NUL byte", path);
	*ret = v;
	return 0;
}

static int yaml_scalar_option(struct yaml_reader *rd, const struct vw_option *o, const char *path,
			      const yaml_event_t *ev)
{
	const char *v = NULL;
	char why[VW_CONFIG_MSG_MAX];
	int r = scalar_text(rd, ev, path, o, &v);

	if (r < 0)
		return r;
	if (o->type == VW_OPT_STRLIST)
		vw_strlist_clear(vw_opt_field(o, rd->cfg));
	r = vw_opt_set(o, rd->cfg, v, why, sizeof(why));
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		return at_mark(rd, &ev->start_mark, "%s: %s", path, why);
	return 0;
}

/*
 * The next scalar in a sequence or mapping: 1 (in ev), 0 at the end event, or -errno.
 * what names the scalar for the error ("a key", "power.sources: a list item").
 */
static int yaml_next_scalar(struct yaml_reader *rd, yaml_event_t *ev, yaml_event_type_t end,
			    const char *what)
{
	int r = yaml_next(rd, ev);

	if (r < 0)
		return r;
	if (ev->type == end)
		return 0;
	if (ev->type != YAML_SCALAR_EVENT)
		return at_mark(rd, &ev->start_mark, "%s must be a scalar, got a %s", what,
			       event_kind(ev));
	return 1;
}

static int yaml_sequence_option(struct yaml_reader *rd, const struct vw_option *o, const char *path)
{
	struct vw_strlist *l = vw_opt_field(o, rd->cfg);
	_cleanup_free_ char *what = NULL;

	if (asprintf(&what, "%s: a list item", path) < 0)
		return -ENOMEM;
	vw_strlist_clear(l);
	for (;;) {
		_cleanup_event_ yaml_event_t ev = { 0 };
		const char *v = NULL;
		int r = yaml_next_scalar(rd, &ev, YAML_SEQUENCE_END_EVENT, what);

		if (r <= 0)
			return r;
		if (scalar_is_null(&ev) || !ev.data.scalar.length)
			return at_mark(rd, &ev.start_mark, "%s: empty list item", path);
		r = scalar_text(rd, &ev, path, o, &v);
		if (r == 0)
			r = vw_strlist_push(l, v, strlen(v));
		if (r < 0)
			return r;
	}
}

static int yaml_option(struct yaml_reader *rd, const struct vw_option *o, const char *path)
{
	_cleanup_event_ yaml_event_t ev = { 0 };
	int r = yaml_next(rd, &ev);

	if (r < 0)
		return r;
	if (ev.type == YAML_SCALAR_EVENT)
		return yaml_scalar_option(rd, o, path, &ev);
	if (ev.type == YAML_SEQUENCE_START_EVENT && o->type == VW_OPT_STRLIST)
		return yaml_sequence_option(rd, o, path);
	return at_mark(rd, &ev.start_mark, "%s: expected %s, got a %s", path,
		       vw_opt_types[o->type].expect, event_kind(&ev));
}

/* Keys seen in one mapping, for duplicate detection. */
struct seen_key {
	char *name;
	size_t line;
};

struct seen_keys {
	struct seen_key *v;
	size_t n;
};

static void seen_keys_free(struct seen_keys *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i].name);
	free(s->v);
}

static int seen_keys_add(struct yaml_reader *rd, struct seen_keys *s, const char *path,
			 const yaml_event_t *key)
{
	const char *name = (const char *)key->data.scalar.value;
	struct seen_key *nv;

	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i].name, name) == 0)
			return at_mark(rd, &key->start_mark,
				       "duplicate key \"%s\" (first set at line %zu)", path,
				       s->v[i].line);
	nv = reallocarray(s->v, s->n + 1, sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	s->v = nv;
	s->v[s->n].name = strdup(name);
	if (!s->v[s->n].name)
		return -ENOMEM;
	s->v[s->n++].line = key->start_mark.line + 1;
	return 0;
}

/* Not a sibling: perhaps a key placed at the wrong level ("interval" for monitor.interval). */
static const char *suggest_elsewhere(const struct vw_config_program *p, const char *name)
{
	struct vw_suggestion s = VW_SUGGESTION_INIT(name);
	const char *full = NULL;

	for (size_t i = 0; i < p->n_opts; i++) {
		const char *y = p->opts[i].yaml, *last, *before = s.best;

		if (!y)
			continue;
		last = strrchr(y, '.');
		last = last ? last + 1 : y;
		vw_suggest_consider(&s, last, strlen(last));
		if (s.best != before)
			full = y;
	}
	return full;
}

static int yaml_unknown_key(struct yaml_reader *rd, const char *prefix, const char *path,
			    const yaml_event_t *key)
{
	const char *name = (const char *)key->data.scalar.value, *elsewhere;
	struct vw_suggestion s = VW_SUGGESTION_INIT(name);
	size_t plen = strlen(prefix);

	if (strchr(name, '.') && (vw_opt_by_yaml(rd->p, path) || vw_yaml_is_section(rd->p, path)))
		return at_mark(rd, &key->start_mark,
			       "key \"%s\" contains a dot: write it as nested mappings", name);
	for (size_t i = 0; i < rd->p->n_opts; i++) {
		const char *y = rd->p->opts[i].yaml;

		if (vw_yaml_below(y, prefix, plen)) {
			const char *seg = y + plen + (plen ? 1 : 0);

			vw_suggest_consider(&s, seg, strcspn(seg, "."));
		}
	}
	if (s.best)
		return at_mark(rd, &key->start_mark,
			       "unknown key \"%s\" (did you mean \"%s%s%.*s\"?)", path, prefix,
			       plen ? "." : "", (int)s.best_len, s.best);
	elsewhere = suggest_elsewhere(rd->p, name);
	if (elsewhere)
		return at_mark(rd, &key->start_mark, "unknown key \"%s\" (did you mean \"%s\"?)",
			       path, elsewhere);
	return at_mark(rd, &key->start_mark, "unknown key \"%s\"", path);
}

static int yaml_mapping(struct yaml_reader *rd, const char *prefix);

/* A key that names a mapping of further keys ("web:"); null stands for an empty one. */
static int yaml_section(struct yaml_reader *rd, const char *path)
{
	_cleanup_event_ yaml_event_t ev = { 0 };
	int r = yaml_next(rd, &ev);

	if (r < 0)
		return r;
	if (ev.type == YAML_MAPPING_START_EVENT)
		return yaml_mapping(rd, path);
	if (scalar_is_null(&ev))
		return 0;
	return at_mark(rd, &ev.start_mark, "%s: expected a mapping of settings, got a %s", path,
		       event_kind(&ev));
}

static int yaml_key(struct yaml_reader *rd, const char *prefix, const yaml_event_t *key,
		    struct seen_keys *seen)
{
	const char *name = (const char *)key->data.scalar.value;
	_cleanup_free_ char *path = NULL;
	const struct vw_option *o;
	int r;

	if (asprintf(&path, "%s%s%s", prefix, *prefix ? "." : "", name) < 0)
		return -ENOMEM;
	o = strchr(name, '.') ? NULL : vw_opt_by_yaml(rd->p, path);
	if (!o && (strchr(name, '.') || !vw_yaml_is_section(rd->p, path)))
		return yaml_unknown_key(rd, prefix, path, key);
	r = seen_keys_add(rd, seen, path, key);
	if (r < 0)
		return r;
	return o ? yaml_option(rd, o, path) : yaml_section(rd, path);
}

/* After MAPPING_START: key/value pairs until MAPPING_END. prefix: the mapping's path or "". */
static int yaml_mapping(struct yaml_reader *rd, const char *prefix)
{
	_cleanup_(seen_keys_free) struct seen_keys seen = { 0 };

	for (;;) {
		_cleanup_event_ yaml_event_t key = { 0 };
		int r = yaml_next_scalar(rd, &key, YAML_MAPPING_END_EVENT, "a key");

		if (r <= 0)
			return r;
		r = yaml_key(rd, prefix, &key, &seen);
		if (r < 0)
			return r;
	}
}

/* STREAM_START, at most one document holding a mapping (or nothing), STREAM_END. */
static int yaml_stream(struct yaml_reader *rd)
{
	_cleanup_event_ yaml_event_t ev = { 0 };
	int r;

	r = yaml_next(rd, &ev); /* STREAM_START */
	if (r == 0)
		r = yaml_next(rd, &ev);
	if (r < 0 || ev.type == YAML_STREAM_END_EVENT) /* an empty file */
		return r;
	r = yaml_next(rd, &ev); /* the document's root node */
	if (r < 0)
		return r;
	if (ev.type == YAML_MAPPING_START_EVENT)
		r = yaml_mapping(rd, "");
	else if (!scalar_is_null(&ev))
		return at_mark(rd, &ev.start_mark,
			       "the top level must be a mapping of settings, got a %s",
			       event_kind(&ev));
	if (r == 0)
		r = yaml_next(rd, &ev); /* DOCUMENT_END */
	if (r == 0)
		r = yaml_next(rd, &ev);
	if (r == 0 && ev.type != YAML_STREAM_END_EVENT)
		return at_mark(rd, &ev.start_mark, "only one YAML document is allowed");
	return r;
}

/* Read a regular file of at most VW_CONFIG_MAX_BYTES. */
static int file_read(struct yaml_reader *rd, char **ret_buf, size_t *ret_len)
{
	const char *path = rd->path;
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	struct stat st;

	if (fd < 0 || fstat(fd, &st) < 0)
		return vw_config_msg(rd->err, rd->errlen, -errno, "cannot read config file %s: %s",
				     path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return vw_config_msg(rd->err, rd->errlen, -EINVAL,
				     "config file %s: not a regular file", path);
	buf = malloc(VW_CONFIG_MAX_BYTES + 1);
	if (!buf)
		return -ENOMEM;
	while (len <= VW_CONFIG_MAX_BYTES) {
		ssize_t n = read(fd, buf + len, VW_CONFIG_MAX_BYTES + 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return vw_config_msg(rd->err, rd->errlen, -errno,
					     "cannot read config file %s: %s", path,
					     strerror(errno));
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len > VW_CONFIG_MAX_BYTES)
		return vw_config_msg(rd->err, rd->errlen, -EFBIG,
				     "config file %s: larger than %d bytes", path,
				     VW_CONFIG_MAX_BYTES);
	*ret_buf = VW_TAKE_PTR(buf);
	*ret_len = len;
	return 0;
}

int vw_config_yaml_load(const struct vw_config_program *p, void *cfg, const char *path, char *err,
			size_t errlen)
{
	struct yaml_reader rd = { .p = p, .cfg = cfg, .err = err, .errlen = errlen, .path = path };
	_cleanup_free_ char *buf = NULL;
	int r = file_read(&rd, &buf, &rd.len);

	if (r < 0)
		return r;
	if (!yaml_parser_initialize(&rd.parser))
		return vw_config_msg(err, errlen, -ENOMEM, "%s: out of memory", path);
	rd.buf = buf;
	yaml_parser_set_input_string(&rd.parser, (const unsigned char *)buf, rd.len);
	r = yaml_stream(&rd);
	yaml_parser_delete(&rd.parser);
	return r;
}

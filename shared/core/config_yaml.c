/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The YAML configuration file, read with libyaml's event parser: a mapping of mappings whose
 * key paths ("web.listenAddress") name options. Every error carries file:line:column from
 * libyaml's marks. Anchors and aliases are refused, so nothing can expand (billion laughs).
 * Unknown keys are skipped with a warning unless strict; another program's keys (aliases) set
 * our options or are skipped with one warning saying why they mean nothing here.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_priv.h"
#include "yaml_reader.h"

#define _cleanup_event_ _cleanup_yaml_event_

/* Unknown keys warned about one by one (not strict); the rest are counted in one warning. */
#define UNKNOWN_KEYS_WARNED 32

struct yaml_reader {
	const struct vw_config_program *p;
	void *cfg;
	struct vw_yaml y;
	struct vw_config_yaml_mode mode;
	size_t unknown;        /* unknown keys skipped (not strict) */
	size_t unknown_line;   /* where the first one not warned about is */
};

#define at_mark(rd, m, ...) vw_yaml_err(&(rd)->y, m, __VA_ARGS__)
#define yaml_next(rd, ev) vw_yaml_next(&(rd)->y, ev)
#define event_kind vw_yaml_kind
#define scalar_is_null vw_yaml_is_null

/* The scalar's text, or an error if it is null or hides a NUL byte. */
static int scalar_text(struct yaml_reader *rd, const yaml_event_t *ev, const char *path,
		       const struct vw_option *o, const char **ret)
{
	const char *v = (const char *)ev->data.scalar.value;

	if (scalar_is_null(ev))
		return at_mark(rd, &ev->start_mark, "%s: missing value (expected %s)", path,
			       vw_opt_types[o->type].expect);
	if (vw_yaml_has_nul(ev))
		return at_mark(rd, &ev->start_mark, "%s: value contains a NUL byte", path);
	*ret = v;
	return 0;
}

static int yaml_scalar_option(struct yaml_reader *rd, const struct vw_option *o, const char *path,
			      const yaml_event_t *ev)
{
	const char *v = NULL;
	char why[VW_CONFIG_MSG_MAX], where[VW_CONFIG_MSG_MAX];
	int r = scalar_text(rd, ev, path, o, &v);

	if (r < 0)
		return r;
	snprintf(where, sizeof(where), "%s:%zu: %s", rd->y.path ? rd->y.path : "config",
		 (size_t)ev->start_mark.line + 1, path);
	v = vw_opt_value_alias(o, v, where, rd->mode.warnings);
	if (!v)
		return -ENOMEM;
	if (o->type == VW_OPT_STRLIST)
		vw_strlist_clear(vw_opt_field(o, rd->cfg));
	r = vw_opt_set(o, rd->cfg, v, why, sizeof(why));
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		return at_mark(rd, &ev->start_mark, "%s: %s", path, why);
	return 0;
}

static int yaml_sequence_option(struct yaml_reader *rd, const struct vw_option *o, const char *path)
{
	struct vw_strlist *l = vw_opt_field(o, rd->cfg);
	_cleanup_free_ char *what = NULL;
	char why[VW_CONFIG_MSG_MAX];

	if (asprintf(&what, "%s: a list item", path) < 0)
		return -ENOMEM;
	vw_strlist_clear(l);
	for (;;) {
		_cleanup_event_ yaml_event_t ev = { 0 };
		const char *v = NULL;
		int r = vw_yaml_next_scalar(&rd->y, &ev, YAML_SEQUENCE_END_EVENT, what);

		if (r <= 0)
			return r;
		if (scalar_is_null(&ev) || !ev.data.scalar.length)
			return at_mark(rd, &ev.start_mark, "%s: empty list item", path);
		r = scalar_text(rd, &ev, path, o, &v);
		if (r == 0 && vw_opt_check_choice(o, v, why, sizeof(why)) < 0)
			return at_mark(rd, &ev.start_mark, "%s: %s", path, why);
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

/* Consume the next node whole (a scalar, or a sequence or mapping with all it holds). With
 * quiet, *ret_quiet says whether the node was that value: a scalar equal to it (booleans
 * compared as booleans), or, for "", an empty sequence, mapping, string or null. */
static int skip_node(struct yaml_reader *rd, const char *quiet, bool *ret_quiet)
{
	size_t depth = 0, items = 0;
	bool is_quiet = false;

	do {
		_cleanup_event_ yaml_event_t ev = { 0 };
		int r = yaml_next(rd, &ev);

		if (r < 0)
			return r;
		if (depth == 0 && ev.type == YAML_SCALAR_EVENT && quiet) {
			const char *v = (const char *)ev.data.scalar.value;
			bool a, b;

			is_quiet = vw_yaml_is_null(&ev) ? !*quiet
				   : vw_parse_bool(v, &a) == 0 && vw_parse_bool(quiet, &b) == 0
					   ? a == b
					   : strcmp(v, quiet) == 0;
		}
		bool end = ev.type == YAML_SEQUENCE_END_EVENT || ev.type == YAML_MAPPING_END_EVENT;

		if (depth == 1 && !end)
			items++;
		if (ev.type == YAML_SEQUENCE_START_EVENT || ev.type == YAML_MAPPING_START_EVENT)
			depth++;
		else if (end && --depth == 0)
			is_quiet = quiet && !*quiet && items == 0;
	} while (depth > 0);
	if (ret_quiet)
		*ret_quiet = is_quiet;
	return 0;
}

/* Without --config.strict an unknown key is a warning (as in Kepler since 2026-08) and its
 * value, whatever it holds, is skipped. */
static int yaml_unknown(struct yaml_reader *rd, const char *prefix, const char *path,
			const yaml_event_t *key)
{
	int r;

	/* Past the first few, not strict: skipped without a suggestion or a warning of its own
	 * (each costs a look at every option and every warning before it: a file of 50,000
	 * unknown keys took 44 s). */
	if (!rd->mode.strict && rd->unknown++ >= UNKNOWN_KEYS_WARNED) {
		if (rd->unknown == UNKNOWN_KEYS_WARNED + 1)
			rd->unknown_line = key->start_mark.line + 1;
		return skip_node(rd, NULL, NULL);
	}
	r = yaml_unknown_key(rd, prefix, path, key);

	if (rd->mode.strict || r != -EINVAL)
		return r;
	r = vw_config_warn(rd->mode.warnings, "%s; ignored (--config.strict makes it an error)",
			   rd->y.err ? rd->y.err : path);
	if (rd->y.err && rd->y.errlen)
		rd->y.err[0] = '\0';
	return r < 0 ? r : skip_node(rd, NULL, NULL);
}

/* One of another program's settings that means nothing here: one warning, unless its value
 * asks for nothing. */
static int yaml_noeffect(struct yaml_reader *rd, const struct vw_option_alias *a, const char *path,
			 const yaml_event_t *key)
{
	char where[VW_CONFIG_MSG_MAX];
	bool quiet = false;
	int r = skip_node(rd, a->quiet, &quiet);

	if (r < 0 || quiet)
		return r;
	snprintf(where, sizeof(where), "%s:%zu: %s", rd->y.path ? rd->y.path : "config",
		 (size_t)key->start_mark.line + 1, path);
	return vw_config_warn_noeffect(rd->mode.warnings, where, a);
}

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
	const struct vw_option_alias *a;
	const struct vw_option *o;
	int r;

	if (asprintf(&path, "%s%s%s", prefix, *prefix ? "." : "", name) < 0)
		return -ENOMEM;
	o = strchr(name, '.') ? NULL : vw_opt_by_yaml(rd->p, path);
	a = o || strchr(name, '.') ? NULL : vw_alias_by_yaml(rd->p, path);
	if (a && a->target)
		o = vw_opt_by_flag(rd->p, a->target);
	if (!o && !a && (strchr(name, '.') || !vw_yaml_is_section(rd->p, path)))
		return yaml_unknown(rd, prefix, path, key);
	r = seen_keys_add(rd, seen, path, key);
	if (r < 0)
		return r;
	if (a && !a->target)
		return yaml_noeffect(rd, a, path, key);
	return o ? yaml_option(rd, o, path) : yaml_section(rd, path);
}

/* After MAPPING_START: key/value pairs until MAPPING_END. prefix: the mapping's path or "". */
static int yaml_mapping(struct yaml_reader *rd, const char *prefix)
{
	_cleanup_(seen_keys_free) struct seen_keys seen = { 0 };

	for (;;) {
		_cleanup_event_ yaml_event_t key = { 0 };
		int r = vw_yaml_next_scalar(&rd->y, &key, YAML_MAPPING_END_EVENT, "a key");

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

/* The opened file into the config, then closed. */
static int yaml_read(struct yaml_reader *rd, int opened)
{
	int r = opened;

	if (r < 0)
		return r;
	r = yaml_stream(rd);
	if (r == 0 && rd->unknown > UNKNOWN_KEYS_WARNED)
		r = vw_config_warn(rd->mode.warnings,
				   "%s: %zu more unknown keys ignored (the first at line %zu)",
				   rd->y.path, rd->unknown - UNKNOWN_KEYS_WARNED, rd->unknown_line);
	vw_yaml_close(&rd->y);
	return r;
}

static const struct vw_config_yaml_mode strict_mode = { .strict = true };

int vw_config_yaml_load(const struct vw_config_program *p, void *cfg, const char *path,
			const struct vw_config_yaml_mode *mode, char *err, size_t errlen)
{
	struct yaml_reader rd = { .p = p, .cfg = cfg, .mode = *(mode ? mode : &strict_mode) };

	return yaml_read(&rd, vw_yaml_open(&rd.y, path, "config file", VW_CONFIG_MAX_BYTES, err,
					   errlen));
}

int vw_config_yaml_load_buf(const struct vw_config_program *p, void *cfg, const char *path,
			    const char *buf, size_t len, const struct vw_config_yaml_mode *mode,
			    char *err, size_t errlen)
{
	struct yaml_reader rd = { .p = p, .cfg = cfg, .mode = *(mode ? mode : &strict_mode) };

	return yaml_read(&rd, vw_yaml_open_buf(&rd.y, path, "config file", buf, len,
					       VW_CONFIG_MAX_BYTES, err, errlen));
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Generic option loader. A daemon describes its options once (struct vw_option: flag, YAML key
 * path, type, field offset, default); vw_config_load fills the struct from the defaults, the
 * YAML file named by --config.file (config_yaml.c) and the flags, in that order. Nothing here
 * knows a daemon's options. Errors go to the caller's buffer, never to stderr.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config_priv.h"

/* getopt_long values: 1 is a positional argument in RETURN_IN_ORDER mode. */
#define FLAG_VAL_HELP 'h'
#define FLAG_VAL_VERSION 0x80
#define FLAG_VAL_OPT 0x100

struct flag_arg {
	size_t opt;
	const char *val; /* NULL: a bool flag without "=value" */
};

struct loader {
	const struct vw_config_program *p;
	void *cfg;
	char *err;
	size_t errlen;
	bool *list_replaced; /* per option: a flag has replaced the earlier list */
};

const struct vw_option *vw_opt_by_flag(const struct vw_config_program *p, const char *flag)
{
	for (size_t i = 0; i < p->n_opts; i++)
		if (strcmp(p->opts[i].flag, flag) == 0)
			return &p->opts[i];
	return NULL;
}

const struct vw_option *vw_opt_by_yaml(const struct vw_config_program *p, const char *path)
{
	for (size_t i = 0; i < p->n_opts; i++)
		if (p->opts[i].yaml && strcmp(p->opts[i].yaml, path) == 0)
			return &p->opts[i];
	return NULL;
}

bool vw_yaml_below(const char *y, const char *path, size_t len)
{
	return y && (len == 0 || (strncmp(y, path, len) == 0 && y[len] == '.'));
}

bool vw_yaml_is_section(const struct vw_config_program *p, const char *path)
{
	size_t len = strlen(path);

	for (size_t i = 0; i < p->n_opts; i++)
		if (len && vw_yaml_below(p->opts[i].yaml, path, len))
			return true;
	return false;
}

#define EDIT_MAX 64

/* Case-insensitive Levenshtein distance; long words count as far apart. */
static size_t edit_distance(const char *a, size_t na, const char *b, size_t nb)
{
	size_t row[EDIT_MAX + 1];

	if (na > EDIT_MAX || nb > EDIT_MAX)
		return SIZE_MAX;
	for (size_t j = 0; j <= nb; j++)
		row[j] = j;
	for (size_t i = 1; i <= na; i++) {
		size_t diag = row[0];

		row[0] = i;
		for (size_t j = 1; j <= nb; j++) {
			size_t up = row[j];
			bool same = tolower((unsigned char)a[i - 1]) ==
				    tolower((unsigned char)b[j - 1]);

			row[j] = VW_MIN(VW_MIN(row[j] + 1, row[j - 1] + 1), diag + (same ? 0 : 1));
			diag = up;
		}
	}
	return row[nb];
}

void vw_suggest_consider(struct vw_suggestion *s, const char *cand, size_t len)
{
	size_t wlen = strlen(s->word), d = edit_distance(s->word, wlen, cand, len);

	/* An abbreviation ("--web.listen") counts as one edit away. */
	if (wlen >= 3 && wlen < len && strncasecmp(cand, s->word, wlen) == 0)
		d = 1;
	/* Close enough to be a typo: one edit per four characters, never the whole word. */
	if (d <= 1 + wlen / 4 && d < wlen && d < s->dist) {
		s->best = cand;
		s->best_len = len;
		s->dist = d;
	}
}

/* ---- option table check -------------------------------------------------------------------- */

static bool name_ok(const char *s, bool dotted_key)
{
	if (!s || !*s || *s == '-' || *s == '.')
		return false;
	for (const char *c = s; *c; c++) {
		if (isspace((unsigned char)*c) || *c == '=' || (unsigned char)*c < 0x20)
			return false;
		if (dotted_key && *c == '.' && (c[1] == '.' || c[1] == '\0'))
			return false;
	}
	return true;
}

static int check_option(const struct vw_config_program *p, size_t i, char *err, size_t errlen)
{
	const struct vw_option *o = &p->opts[i];

	if (!name_ok(o->flag, false) || strcmp(o->flag, "help") == 0 ||
	    strcmp(o->flag, "version") == 0)
		return vw_config_msg(err, errlen, -EINVAL, "option %zu: bad flag name \"%s\"", i,
				     o->flag ? o->flag : "(null)");
	if ((unsigned)o->type >= ARRAY_SIZE(vw_opt_types))
		return vw_config_msg(err, errlen, -EINVAL, "--%s: unknown type %d", o->flag,
				     (int)o->type);
	if (o->yaml && !name_ok(o->yaml, true))
		return vw_config_msg(err, errlen, -EINVAL, "--%s: bad YAML key \"%s\"", o->flag,
				     o->yaml);
	if (o->choices && o->type != VW_OPT_STRING)
		return vw_config_msg(err, errlen, -EINVAL, "--%s: choices need a string option",
				     o->flag);
	if (o->min > o->max)
		return vw_config_msg(err, errlen, -EINVAL, "--%s: min > max", o->flag);
	if (strcmp(o->flag, VW_CONFIG_FILE_FLAG) == 0 && (o->type != VW_OPT_STRING || o->yaml))
		return vw_config_msg(err, errlen, -EINVAL, "--%s: must be a flag-only string",
				     VW_CONFIG_FILE_FLAG);
	for (size_t j = 0; j < i; j++) {
		const struct vw_option *q = &p->opts[j];

		if (strcmp(o->flag, q->flag) == 0)
			return vw_config_msg(err, errlen, -EINVAL, "--%s: declared twice", o->flag);
		if (o->yaml && q->yaml && strcmp(o->yaml, q->yaml) == 0)
			return vw_config_msg(err, errlen, -EINVAL, "YAML key %s: declared twice",
					     o->yaml);
	}
	if (o->yaml && vw_yaml_is_section(p, o->yaml))
		return vw_config_msg(err, errlen, -EINVAL,
				     "YAML key %s: both a value and a mapping", o->yaml);
	return 0;
}

/* Parse every default into a scratch struct laid out by the offsets. */
static int check_defaults(const struct vw_config_program *p, char *err, size_t errlen)
{
	_cleanup_free_ void *scratch = NULL;
	size_t size = 1;
	int r = 0;

	for (size_t i = 0; i < p->n_opts; i++)
		size = VW_MAX(size, p->opts[i].offset + vw_opt_types[p->opts[i].type].size);
	scratch = calloc(1, size);
	if (!scratch)
		return vw_config_msg(err, errlen, -ENOMEM, "%s", strerror(ENOMEM));
	for (size_t i = 0; i < p->n_opts && r == 0; i++) {
		const struct vw_option *o = &p->opts[i];
		char why[VW_CONFIG_MSG_MAX];

		if (o->defval && (r = vw_opt_set(o, scratch, o->defval, why, sizeof(why))) < 0)
			vw_config_msg(err, errlen, -EINVAL, "--%s: bad default: %s", o->flag, why);
	}
	vw_config_free(p, scratch);
	return r < 0 ? -EINVAL : 0;
}

int vw_config_check(const struct vw_config_program *p, char *err, size_t errlen)
{
	if (!p || !p->name || (p->n_opts && !p->opts))
		return vw_config_msg(err, errlen, -EINVAL, "no program description");
	for (size_t i = 0; i < p->n_opts; i++) {
		int r = check_option(p, i, err, errlen);

		if (r < 0)
			return r;
	}
	return check_defaults(p, err, errlen);
}

/* ---- flags --------------------------------------------------------------------------------- */

static struct option *longopts_new(const struct vw_config_program *p)
{
	struct option *lo = calloc(p->n_opts + 3, sizeof(*lo));

	if (!lo)
		return NULL;
	for (size_t i = 0; i < p->n_opts; i++)
		lo[i] = (struct option){
			.name = p->opts[i].flag,
			.has_arg = p->opts[i].type == VW_OPT_BOOL ? optional_argument
								  : required_argument,
			.val = FLAG_VAL_OPT + (int)i,
		};
	lo[p->n_opts] = (struct option){ .name = "help", .val = FLAG_VAL_HELP };
	lo[p->n_opts + 1] = (struct option){ .name = "version", .val = FLAG_VAL_VERSION };
	return lo;
}

static int unknown_flag(struct loader *ld, const char *tok)
{
	size_t len = strcspn(tok, "="), dashes = VW_MIN(strspn(tok, "-"), len);
	_cleanup_free_ char *word = strndup(tok + dashes, len - dashes);
	struct vw_suggestion s = VW_SUGGESTION_INIT(word);

	if (!word)
		return -ENOMEM;
	for (size_t i = 0; i < ld->p->n_opts; i++)
		vw_suggest_consider(&s, ld->p->opts[i].flag, strlen(ld->p->opts[i].flag));
	vw_suggest_consider(&s, "help", 4);
	vw_suggest_consider(&s, "version", 7);
	if (s.best)
		return vw_config_msg(ld->err, ld->errlen, -EINVAL,
				     "unknown flag %.*s (did you mean --%.*s?)", (int)len, tok,
				     (int)s.best_len, s.best);
	return vw_config_msg(ld->err, ld->errlen, -EINVAL, "unknown flag %.*s (see --help)",
			     (int)len, tok);
}

static int stray_argument(struct loader *ld, char **argv, int i)
{
	const char *prev = i > 0 ? argv[i - 1] : "";
	const struct vw_option *o =
		strncmp(prev, "--", 2) == 0 ? vw_opt_by_flag(ld->p, prev + 2) : NULL;
	bool b;

	if (o && o->type == VW_OPT_BOOL && vw_parse_bool(argv[i], &b) == 0)
		return vw_config_msg(ld->err, ld->errlen, -EINVAL,
				     "unexpected argument \"%s\" (a boolean flag takes its value "
				     "after '=': --%s=%s)",
				     argv[i], o->flag, argv[i]);
	if (argv[i][0] == '-') /* after "--" */
		return vw_config_msg(ld->err, ld->errlen, -EINVAL,
				     "unexpected argument \"%.*s\" after \"--\"",
				     VW_CONFIG_QUOTE_MAX, argv[i]);
	return vw_config_msg(ld->err, ld->errlen, -EINVAL,
			     "unexpected argument \"%.*s\" (flags start with --; see --help)",
			     VW_CONFIG_QUOTE_MAX, argv[i]);
}

/* getopt_long accepts unambiguous abbreviations; we do not (they break when flags are added). */
static const char *flag_token(char **argv, const char *arg)
{
	return arg && optind >= 2 && arg == argv[optind - 1] ? argv[optind - 2] : argv[optind - 1];
}

static bool flag_token_exact(const char *tok, const char *name)
{
	size_t n = strlen(name);

	if (strncmp(tok, "--", 2) != 0)
		return tok[0] == '-'; /* -h */
	return strncmp(tok + 2, name, n) == 0 && (tok[2 + n] == '\0' || tok[2 + n] == '=');
}

static void print_version(const struct vw_config_program *p, FILE *out)
{
	fprintf(out, "%s %s\n", p->name, p->version ? p->version : VW_VERSION);
#if defined(VW_REVISION) && defined(VW_BRANCH) && defined(VW_COMPILER)
	fprintf(out, "revision %s, branch %s, built with %s\n", VW_REVISION, VW_BRANCH,
		VW_COMPILER);
#endif
}

/* getopt_long's complaints (opterr = 0) put in words: 1, ':' or '?'. */
static int flag_error(struct loader *ld, int c, char **argv)
{
	const char *tok = argv[optind - 1];

	if (c == 1)
		return stray_argument(ld, argv, optind - 1);
	if (c == ':')
		return vw_config_msg(ld->err, ld->errlen, -EINVAL,
				     "%s: missing value (expected %s)", tok,
				     vw_opt_types[ld->p->opts[optopt - FLAG_VAL_OPT].type].expect);
	if (optopt && strncmp(tok, "--", 2) == 0)
		return vw_config_msg(ld->err, ld->errlen, -EINVAL, "%.*s takes no value",
				     (int)strcspn(tok, "="), tok);
	if (optopt)
		return vw_config_msg(ld->err, ld->errlen, -EINVAL,
				     "unknown flag -%c (long flags start with --; see --help)",
				     optopt);
	return unknown_flag(ld, tok);
}

/* One getopt_long return value: 0 (stored in *ret), VW_CONFIG_EXIT_OK, or -errno. */
static int flag_one(struct loader *ld, int c, char **argv, FILE *out, struct flag_arg *ret)
{
	const char *tok, *name;

	if (c == 1 || c == ':' || c == '?')
		return flag_error(ld, c, argv);
	name = c == FLAG_VAL_HELP      ? "help"
	       : c == FLAG_VAL_VERSION ? "version"
				       : ld->p->opts[c - FLAG_VAL_OPT].flag;
	tok = flag_token(argv, optarg);
	if (!flag_token_exact(tok, name))
		return unknown_flag(ld, tok);
	if (c == FLAG_VAL_HELP || c == FLAG_VAL_VERSION) {
		out = out ? out : stdout;
		(c == FLAG_VAL_HELP ? vw_config_usage : print_version)(ld->p, out);
		fflush(out);
		return VW_CONFIG_EXIT_OK;
	}
	*ret = (struct flag_arg){ .opt = (size_t)(c - FLAG_VAL_OPT), .val = optarg };
	return 0;
}

static int flags_collect(struct loader *ld, int argc, char **argv, FILE *out, struct flag_arg *args,
			 size_t *ret_n)
{
	_cleanup_free_ struct option *lo = longopts_new(ld->p);
	size_t n = 0;
	int c, r;

	if (!lo)
		return -ENOMEM;
	optind = 0; /* full re-initialisation, so loading can run again */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "-:h", lo, NULL)) != -1) {
		r = flag_one(ld, c, argv, out, &args[n]);
		if (r != 0)
			return r;
		n++;
	}
	if (optind < argc)
		return stray_argument(ld, argv, optind);
	*ret_n = n;
	return 0;
}

/* Apply the collected flags: only --config.file, or all the others. */
static int flags_apply(struct loader *ld, const struct flag_arg *args, size_t n, bool config_file)
{
	for (size_t i = 0; i < n; i++) {
		const struct vw_option *o = &ld->p->opts[args[i].opt];
		char why[VW_CONFIG_MSG_MAX];
		int r;

		if ((strcmp(o->flag, VW_CONFIG_FILE_FLAG) == 0) != config_file)
			continue;
		if (o->type == VW_OPT_STRLIST && !ld->list_replaced[args[i].opt]) {
			vw_strlist_clear(vw_opt_field(o, ld->cfg));
			ld->list_replaced[args[i].opt] = true;
		}
		r = vw_opt_set(o, ld->cfg, args[i].val ? args[i].val : "true", why, sizeof(why));
		if (r < 0)
			return vw_config_msg(ld->err, ld->errlen, r == -ENOMEM ? r : -EINVAL,
					     "--%s: %s", o->flag, why);
	}
	return 0;
}

/* ---- loading ------------------------------------------------------------------------------- */

void vw_config_free(const struct vw_config_program *p, void *cfg)
{
	if (!p || !cfg)
		return;
	for (size_t i = 0; i < p->n_opts; i++)
		vw_opt_free(&p->opts[i], cfg);
}

static int defaults_apply(struct loader *ld)
{
	for (size_t i = 0; i < ld->p->n_opts; i++) {
		const struct vw_option *o = &ld->p->opts[i];
		char why[VW_CONFIG_MSG_MAX];
		int r;

		if (!o->defval)
			continue;
		r = vw_opt_set(o, ld->cfg, o->defval, why, sizeof(why));
		if (r < 0)
			return vw_config_msg(ld->err, ld->errlen, r, "--%s: bad default: %s",
					     o->flag, why);
	}
	return 0;
}

static int load_all(struct loader *ld, int argc, char **argv, FILE *out)
{
	_cleanup_free_ struct flag_arg *args = calloc((size_t)VW_MAX(argc, 1), sizeof(*args));
	const struct vw_option *cf = vw_opt_by_flag(ld->p, VW_CONFIG_FILE_FLAG);
	size_t n = 0;
	int r;

	if (!args || !ld->list_replaced)
		return vw_config_msg(ld->err, ld->errlen, -ENOMEM, "%s", strerror(ENOMEM));
	r = defaults_apply(ld);
	if (r == 0 && argc > 1)
		r = flags_collect(ld, argc, argv, out, args, &n);
	if (r == 0)
		r = flags_apply(ld, args, n, true);
	if (r == 0 && cf) {
		const char *path = *(char **)vw_opt_field(cf, ld->cfg);

		if (path && *path)
			r = vw_config_yaml_load(ld->p, ld->cfg, path, ld->err, ld->errlen);
	}
	if (r == 0)
		r = flags_apply(ld, args, n, false);
	return r;
}

int vw_config_load(const struct vw_config_program *p, void *cfg, int argc, char **argv, FILE *out,
		   char *err, size_t errlen)
{
	_cleanup_free_ bool *replaced = NULL;
	struct loader ld = { .p = p, .cfg = cfg, .err = err, .errlen = errlen };
	int r;

	if (err && errlen)
		err[0] = '\0';
	if (!cfg)
		return vw_config_msg(err, errlen, -EINVAL, "no configuration to fill");
	r = vw_config_check(p, err, errlen);
	if (r < 0)
		return r;
	vw_config_free(p, cfg);
	replaced = calloc(VW_MAX(p->n_opts, 1), sizeof(*replaced));
	ld.list_replaced = replaced;
	r = load_all(&ld, argc, argv, out);
	if (r == -ENOMEM && err && errlen && !err[0])
		vw_config_msg(err, errlen, r, "%s", strerror(ENOMEM));
	if (r != VW_CONFIG_CONTINUE)
		vw_config_free(p, cfg);
	return r;
}

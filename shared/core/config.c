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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config_priv.h"

/* getopt_long values: 1 is a positional argument in RETURN_IN_ORDER mode. */
#define FLAG_VAL_HELP 'h'
#define FLAG_VAL_VERSION 0x80
#define FLAG_VAL_HELP_ALL 0x81
#define FLAG_VAL_OPT 0x100

struct flag_arg {
	size_t opt; /* SIZE_MAX: a setting accepted without effect */
	const char *val; /* NULL: a bool flag without "=value" */
};

/* What a long flag stands for: an option or an alias, perhaps in its --no- form. */
struct flag_def {
	char *name; /* "web.listen-address", "no-kube.enable" (allocated) */
	const struct vw_option *opt;	 /* the option set (an alias's target), or NULL */
	const struct vw_option_alias *alias; /* set through this alias, or NULL */
	bool negated;
};

struct loader {
	const struct vw_config_program *p;
	void *cfg;
	char *err;
	size_t errlen;
	bool *list_replaced; /* per option: a flag has replaced the earlier list */
	struct vw_strlist *warnings;
	struct flag_def *defs;
	size_t n_defs;
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

const struct vw_option_alias *vw_alias_by_flag(const struct vw_config_program *p, const char *flag)
{
	for (const struct vw_option_alias *a = p->aliases; a && (a->flag || a->yaml); a++)
		if (a->flag && strcmp(a->flag, flag) == 0)
			return a;
	return NULL;
}

const struct vw_option_alias *vw_alias_by_yaml(const struct vw_config_program *p, const char *path)
{
	for (const struct vw_option_alias *a = p->aliases; a && (a->flag || a->yaml); a++)
		if (a->yaml && strcmp(a->yaml, path) == 0)
			return a;
	return NULL;
}

int vw_config_warn(struct vw_strlist *warnings, const char *fmt, ...)
{
	_cleanup_free_ char *msg = NULL;
	va_list ap;
	int n;

	if (!warnings)
		return 0;
	va_start(ap, fmt);
	n = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	for (size_t i = 0; i < warnings->n; i++)
		if (strcmp(warnings->v[i], msg) == 0)
			return 0;
	return vw_strlist_push(warnings, msg, (size_t)n);
}

/* "-" and decimal digits, as Go's strconv.Atoi reads a negative int. */
static bool negative_integer(const char *s)
{
	return s[0] == '-' && s[1] && strspn(s + 1, "0123456789") == strlen(s + 1);
}

const char *vw_opt_value_alias(const struct vw_option *o, const char *s, const char *where,
			       struct vw_strlist *warnings)
{
	for (const struct vw_value_alias *v = o->value_aliases; v && v->text; v++) {
		bool any_negative = strcmp(v->text, "-*") == 0;

		if (any_negative ? !negative_integer(s) : strcmp(v->text, s) != 0)
			continue;
		if (vw_config_warn(warnings, "%s=%s is read as %s: %s", where, s, v->value, v->why) < 0)
			return NULL;
		return v->value;
	}
	return s;
}

int vw_config_warn_noeffect(struct vw_strlist *warnings, const char *what,
			    const struct vw_option_alias *a)
{
	return vw_config_warn(warnings, "%s is accepted but has no effect in virtwatt: %s", what,
			      a->why ? a->why : "it has no counterpart here");
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
	for (const struct vw_option_alias *a = p->aliases; a && (a->flag || a->yaml); a++)
		if (len && vw_yaml_below(a->yaml, path, len))
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
	if (o->choices && o->type != VW_OPT_STRING && o->type != VW_OPT_STRLIST)
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
	/* --help prints the default of an option with one, or of any non-string one, after the
	 * help: a help naming its own default would show two. */
	if (o->help && strstr(o->help, "(default:") &&
	    (o->defval || (o->type != VW_OPT_STRING && o->type != VW_OPT_STRLIST)))
		return vw_config_msg(err, errlen, -EINVAL,
				     "--%s: its help says \"(default:\", and --help adds the default",
				     o->flag);
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
		for (const struct vw_value_alias *v = o->value_aliases; v && v->text && r == 0; v++)
			if ((r = vw_opt_set(o, scratch, v->value, why, sizeof(why))) < 0)
				vw_config_msg(err, errlen, -EINVAL, "--%s: bad value for %s: %s",
					      o->flag, v->text, why);
	}
	vw_config_free(p, scratch);
	return r < 0 ? -EINVAL : 0;
}

/* An alias names no option's flag or key, and a target that exists. */
static int check_alias(const struct vw_config_program *p, const struct vw_option_alias *a,
		       char *err, size_t errlen)
{
	const struct vw_option *t = a->target ? vw_opt_by_flag(p, a->target) : NULL;
	const char *name = a->flag ? a->flag : a->yaml;

	if ((a->flag && (!name_ok(a->flag, false) || vw_opt_by_flag(p, a->flag) ||
			 vw_alias_by_flag(p, a->flag) != a)) ||
	    (a->yaml && (!name_ok(a->yaml, true) || vw_opt_by_yaml(p, a->yaml) ||
			 vw_alias_by_yaml(p, a->yaml) != a)))
		return vw_config_msg(err, errlen, -EINVAL, "alias %s: bad or taken name", name);
	if (a->target && !t)
		return vw_config_msg(err, errlen, -EINVAL, "alias %s: no option --%s", name,
				     a->target);
	if (!a->target && !a->why)
		return vw_config_msg(err, errlen, -EINVAL, "alias %s: no target and no reason",
				     name);
	if (a->flag && strncmp(a->flag, "no-", 3) == 0)
		return vw_config_msg(err, errlen, -EINVAL, "alias %s: the no- prefix is reserved",
				     name);
	return 0;
}

int vw_config_check(const struct vw_config_program *p, char *err, size_t errlen)
{
	if (!p || !p->name || (p->n_opts && !p->opts))
		return vw_config_msg(err, errlen, -EINVAL, "no program description");
	for (size_t i = 0; i < p->n_opts; i++) {
		int r = check_option(p, i, err, errlen);

		if (r < 0)
			return r;
		if (strncmp(p->opts[i].flag, "no-", 3) == 0)
			return vw_config_msg(err, errlen, -EINVAL,
					     "--%s: the no- prefix is reserved", p->opts[i].flag);
	}
	for (const struct vw_option_alias *a = p->aliases; a && (a->flag || a->yaml); a++) {
		int r = check_alias(p, a, err, errlen);

		if (r < 0)
			return r;
	}
	return check_defaults(p, err, errlen);
}

/* ---- flags --------------------------------------------------------------------------------- */

static void flag_defs_free(struct loader *ld)
{
	for (size_t i = 0; i < ld->n_defs; i++)
		free(ld->defs[i].name);
	free(ld->defs);
	ld->defs = NULL;
	ld->n_defs = 0;
}

/* A flag without effect is a boolean when the value that asks for nothing is one (or none is
 * given); else it takes any value ("" asking for nothing). */
static bool alias_boolean(const struct vw_option_alias *a)
{
	bool b;

	return !a->quiet || vw_parse_bool(a->quiet, &b) == 0;
}

static int flag_def_add(struct loader *ld, const char *name, const struct vw_option *o,
			const struct vw_option_alias *a)
{
	bool boolean = o ? vw_opt_boolish(o) : alias_boolean(a);

	for (int neg = 0; neg <= (boolean ? 1 : 0); neg++) {
		struct flag_def *d = &ld->defs[ld->n_defs];

		if (asprintf(&d->name, "%s%s", neg ? "no-" : "", name) < 0)
			return -ENOMEM;
		d->opt = o;
		d->alias = a;
		d->negated = neg;
		ld->n_defs++;
	}
	return 0;
}

/* Every flag: the options, the aliases, and the --no- form of each boolean. */
static int flag_defs_new(struct loader *ld)
{
	const struct vw_config_program *p = ld->p;
	size_t n = p->n_opts;

	for (const struct vw_option_alias *a = p->aliases; a && (a->flag || a->yaml); a++)
		n++;
	ld->defs = calloc(2 * n + 1, sizeof(*ld->defs));
	if (!ld->defs)
		return -ENOMEM;
	for (size_t i = 0; i < p->n_opts; i++)
		if (flag_def_add(ld, p->opts[i].flag, &p->opts[i], NULL) < 0)
			return -ENOMEM;
	for (const struct vw_option_alias *a = p->aliases; a && (a->flag || a->yaml); a++)
		if (a->flag && flag_def_add(ld, a->flag,
					    a->target ? vw_opt_by_flag(p, a->target) : NULL, a) < 0)
			return -ENOMEM;
	return 0;
}

static struct option *longopts_new(const struct loader *ld)
{
	struct option *lo = calloc(ld->n_defs + 4, sizeof(*lo));

	if (!lo)
		return NULL;
	for (size_t i = 0; i < ld->n_defs; i++) {
		const struct flag_def *d = &ld->defs[i];
		bool boolean = d->opt ? vw_opt_boolish(d->opt) : alias_boolean(d->alias);

		lo[i] = (struct option){
			.name = d->name,
			.has_arg = d->negated ? no_argument
				   : boolean  ? optional_argument
					      : required_argument,
			.val = FLAG_VAL_OPT + (int)i,
		};
	}
	lo[ld->n_defs] = (struct option){ .name = "help", .val = FLAG_VAL_HELP };
	lo[ld->n_defs + 1] = (struct option){ .name = "version", .val = FLAG_VAL_VERSION };
	lo[ld->n_defs + 2] = (struct option){ .name = "help-all", .val = FLAG_VAL_HELP_ALL };
	return lo;
}

static int unknown_flag(struct loader *ld, const char *tok)
{
	size_t len = strcspn(tok, "="), dashes = VW_MIN(strspn(tok, "-"), len);
	_cleanup_free_ char *word = strndup(tok + dashes, len - dashes);
	struct vw_suggestion s = VW_SUGGESTION_INIT(word);

	if (!word)
		return -ENOMEM;
	for (size_t i = 0; i < ld->n_defs; i++)
		vw_suggest_consider(&s, ld->defs[i].name, strlen(ld->defs[i].name));
	vw_suggest_consider(&s, "help", 4);
	vw_suggest_consider(&s, "help-all", 8);
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
	const struct vw_option_alias *a =
		strncmp(prev, "--", 2) == 0 ? vw_alias_by_flag(ld->p, prev + 2) : NULL;
	const struct vw_option *o = strncmp(prev, "--", 2) != 0 ? NULL
				    : a && a->target    ? vw_opt_by_flag(ld->p, a->target)
							: vw_opt_by_flag(ld->p, prev + 2);
	bool b;

	if (o && vw_opt_boolish(o) && vw_parse_bool(argv[i], &b) == 0)
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
	/* getopt_long matched an abbreviation that lacks its value ("--web.listen" last): unknown. */
	if (c == ':' && !flag_token_exact(tok, ld->defs[optopt - FLAG_VAL_OPT].name))
		return unknown_flag(ld, tok);
	if (c == ':')
		return vw_config_msg(ld->err, ld->errlen, -EINVAL,
				     "%s: missing value (expected %s)", tok,
				     vw_opt_types[ld->defs[optopt - FLAG_VAL_OPT].opt->type].expect);
	if (optopt && strncmp(tok, "--", 2) == 0)
		return vw_config_msg(ld->err, ld->errlen, -EINVAL, "%.*s takes no value",
				     (int)strcspn(tok, "="), tok);
	if (optopt)
		return vw_config_msg(ld->err, ld->errlen, -EINVAL,
				     "unknown flag -%c (long flags start with --; see --help)",
				     optopt);
	return unknown_flag(ld, tok);
}

/* A flag's value for the option it sets, or the warning for one without effect. */
static int flag_def_arg(struct loader *ld, const struct flag_def *d, struct flag_arg *ret)
{
	const char *val = d->negated ? "false" : optarg;
	char what[VW_CONFIG_MSG_MAX];
	bool b, quiet;

	if (d->opt) {
		*ret = (struct flag_arg){ .opt = (size_t)(d->opt - ld->p->opts), .val = val };
		return 0;
	}
	*ret = (struct flag_arg){ .opt = SIZE_MAX };
	if (!alias_boolean(d->alias)) {
		quiet = val && strcmp(val, d->alias->quiet) == 0;
	} else {
		if (val && vw_parse_bool(val, &b) < 0)
			return vw_config_msg(ld->err, ld->errlen, -EINVAL,
					     "--%s: invalid boolean \"%.*s\" (expected %s)",
					     d->alias->flag, VW_CONFIG_QUOTE_MAX, val,
					     vw_opt_types[VW_OPT_BOOL].expect);
		b = val ? b : true;
		quiet = d->alias->quiet && vw_parse_bool(d->alias->quiet, &quiet) == 0 &&
			quiet == b;
	}
	if (quiet)
		return 0;
	snprintf(what, sizeof(what), "--%s%s", d->negated ? "no-" : "", d->alias->flag);
	return vw_config_warn_noeffect(ld->warnings, what, d->alias);
}

/* One getopt_long return value: 0 (stored in *ret), VW_CONFIG_EXIT_OK, or -errno. */
static int flag_one(struct loader *ld, int c, char **argv, FILE *out, struct flag_arg *ret)
{
	const char *tok, *name;

	if (c == 1 || c == ':' || c == '?')
		return flag_error(ld, c, argv);
	name = c == FLAG_VAL_HELP       ? "help"
	       : c == FLAG_VAL_HELP_ALL ? "help-all"
	       : c == FLAG_VAL_VERSION  ? "version"
					: ld->defs[c - FLAG_VAL_OPT].name;
	tok = flag_token(argv, optarg);
	if (!flag_token_exact(tok, name))
		return unknown_flag(ld, tok);
	if (c == FLAG_VAL_HELP || c == FLAG_VAL_HELP_ALL || c == FLAG_VAL_VERSION) {
		out = out ? out : stdout;
		if (c == FLAG_VAL_VERSION)
			print_version(ld->p, out);
		else
			vw_config_usage_all(ld->p, c == FLAG_VAL_HELP_ALL, out);
		fflush(out);
		return VW_CONFIG_EXIT_OK;
	}
	return flag_def_arg(ld, &ld->defs[c - FLAG_VAL_OPT], ret);
}

static int flags_collect(struct loader *ld, int argc, char **argv, FILE *out, struct flag_arg *args,
			 size_t *ret_n)
{
	_cleanup_free_ struct option *lo = longopts_new(ld);
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

static bool flag_is_config(const struct vw_option *o)
{
	return strcmp(o->flag, VW_CONFIG_FILE_FLAG) == 0 || strcmp(o->flag, VW_CONFIG_STRICT_FLAG) == 0;
}

/* Apply the collected flags: only --config.file and --config.strict, or all the others. */
static int flags_apply(struct loader *ld, const struct flag_arg *args, size_t n, bool config_file)
{
	for (size_t i = 0; i < n; i++) {
		const struct vw_option *o;
		char why[VW_CONFIG_MSG_MAX], where[VW_CONFIG_MSG_MAX];
		const char *val;
		int r;

		if (args[i].opt == SIZE_MAX)
			continue; /* accepted without effect (warned) */
		o = &ld->p->opts[args[i].opt];
		if (flag_is_config(o) != config_file)
			continue;
		if (o->type == VW_OPT_STRLIST && !ld->list_replaced[args[i].opt]) {
			vw_strlist_clear(vw_opt_field(o, ld->cfg));
			ld->list_replaced[args[i].opt] = true;
		}
		snprintf(where, sizeof(where), "--%s", o->flag);
		val = vw_opt_value_alias(o, args[i].val ? args[i].val : "true", where, ld->warnings);
		if (!val)
			return vw_config_msg(ld->err, ld->errlen, -ENOMEM, "%s", strerror(ENOMEM));
		r = vw_opt_set(o, ld->cfg, val, why, sizeof(why));
		if (r < 0)
			return vw_config_msg(ld->err, ld->errlen, r == -ENOMEM ? r : -EINVAL,
					     "--%s: %s", o->flag, why);
	}
	return 0;
}

/* ---- loading ------------------------------------------------------------------------------- */

const void *vw_config_field(const struct vw_config_program *p, const void *cfg, const char *flag)
{
	const struct vw_option *o = p && cfg && flag ? vw_opt_by_flag(p, flag) : NULL;

	return o ? vw_opt_cfield(o, cfg) : NULL;
}

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
	const struct vw_option *strict = vw_opt_by_flag(ld->p, VW_CONFIG_STRICT_FLAG);
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
		struct vw_config_yaml_mode mode = {
			/* A program without --config.strict is always strict. */
			.strict = !strict || strict->type != VW_OPT_BOOL ||
				  *(bool *)vw_opt_field(strict, ld->cfg),
			.warnings = ld->warnings,
		};

		if (path && *path)
			r = vw_config_yaml_load(ld->p, ld->cfg, path, &mode, ld->err, ld->errlen);
	}
	if (r == 0)
		r = flags_apply(ld, args, n, false);
	return r;
}

int vw_config_load(const struct vw_config_program *p, void *cfg, int argc, char **argv, FILE *out,
		   char *err, size_t errlen)
{
	return vw_config_load_warn(p, cfg, argc, argv, out, NULL, err, errlen);
}

int vw_config_load_warn(const struct vw_config_program *p, void *cfg, int argc, char **argv,
			FILE *out, struct vw_strlist *warnings, char *err, size_t errlen)
{
	_cleanup_free_ bool *replaced = NULL;
	struct loader ld = {
		.p = p, .cfg = cfg, .err = err, .errlen = errlen, .warnings = warnings
	};
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
	r = flag_defs_new(&ld);
	if (r == 0)
		r = load_all(&ld, argc, argv, out);
	flag_defs_free(&ld);
	if (r == -ENOMEM && err && errlen && !err[0])
		vw_config_msg(err, errlen, r, "%s", strerror(ENOMEM));
	if (r != VW_CONFIG_CONTINUE)
		vw_config_free(p, cfg);
	return r;
}

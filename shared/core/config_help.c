/* SPDX-License-Identifier: Apache-2.0 */
/*
 * --help generated from the option table, and the effective configuration printed as YAML
 * nested by the options' key paths, so that it can be saved and loaded again.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_priv.h"
#include "log.h"

#define USAGE_COL 32
#define USAGE_WIDTH 80
#define NBSP "\x1f" /* a space wrap() never breaks at */

static void put_word(FILE *out, const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		fputc(s[i] == NBSP[0] ? ' ' : s[i], out);
}

/* Print text word by word from column col, wrapping to indent; ends the line. */
static void wrap(FILE *out, const char *text, size_t col, size_t indent)
{
	bool first = true;

	for (const char *s = text + strspn(text, " "); *s; s += strspn(s, " ")) {
		size_t len = strcspn(s, " ");

		if (!first && col + 1 + len > USAGE_WIDTH) {
			fprintf(out, "\n%*s", (int)indent, "");
			col = indent;
		} else if (!first) {
			fputc(' ', out);
			col++;
		}
		put_word(out, s, len);
		col += len;
		first = false;
		s += len;
	}
	fputc('\n', out);
}

static void usage_default(const struct vw_option *o, FILE *m)
{
	bool text = o->type == VW_OPT_STRING || o->type == VW_OPT_STRLIST;
	static const char *const zero[] = {
		[VW_OPT_DURATION] = "0s", [VW_OPT_BOOL] = "false",	[VW_OPT_UINT] = "0",
		[VW_OPT_DOUBLE] = "0",	  [VW_OPT_LOG_LEVEL] = "error",
	};

	if (o->defval && text && !*o->defval)
		fputs(" (default:" NBSP "\"\")", m);
	else if (o->defval)
		fprintf(m, " (default:" NBSP "%s)", o->defval);
	else if (!text)
		fprintf(m, " (default:" NBSP "%s)", zero[o->type]);
}

/* Whether usage_option() appends a sentence (choices, repeatability, range) to the help. */
static bool has_suffix(const struct vw_option *o)
{
	return o->choices || o->type == VW_OPT_LOG_LEVEL || o->type == VW_OPT_STRLIST ||
	       vw_opt_bounded(o);
}

/* One option; short (--help of a program with headings): without its YAML key line. */
static void usage_option(const struct vw_option *o, bool brief, FILE *out)
{
	_cleanup_free_ char *body = NULL;
	size_t len = 0, head;
	FILE *m = open_memstream(&body, &len);
	char buf[VW_CONFIG_MSG_MAX];

	if (!m)
		return;
	fputs(o->help ? o->help : "", m);
	if (has_suffix(o) && o->help && *o->help && !strchr(".:;", o->help[strlen(o->help) - 1]))
		fputc('.', m); /* "timeout. Range: ...", not "timeout Range: ..." */
	if (o->choices && o->type == VW_OPT_STRLIST) {
		vw_opt_choices_join(o, buf, sizeof(buf));
		fprintf(m, " Repeatable; values may be comma-separated, each one of: %s.", buf);
	} else if (o->choices) {
		vw_opt_choices_join(o, buf, sizeof(buf));
		fprintf(m, " One of: %s.", buf);
	} else if (o->type == VW_OPT_LOG_LEVEL) {
		fputs(" One of: error, warn, info, debug.", m);
	} else if (o->type == VW_OPT_STRLIST) {
		fputs(" Repeatable; values may be comma-separated.", m);
	}
	if (vw_opt_bounded(o)) {
		char lo[VW_DURATION_STRLEN], hi[VW_DURATION_STRLEN];

		vw_opt_bound_format(o, o->min, lo, sizeof(lo));
		vw_opt_bound_format(o, o->max, hi, sizeof(hi));
		fprintf(m, " Range:" NBSP "%s" NBSP "to" NBSP "%s.", lo, hi);
	}
	usage_default(o, m);
	if (fclose(m) != 0)
		return;
	head = (size_t)fprintf(out, "  --%s", o->flag);
	if (o->type != VW_OPT_BOOL)
		head += (size_t)fprintf(out, "=%s",
					o->metavar ? o->metavar : vw_opt_types[o->type].metavar);
	if (head + 2 > USAGE_COL) {
		fputc('\n', out);
		head = 0;
	}
	fprintf(out, "%*s", (int)(USAGE_COL - head), "");
	wrap(out, body, USAGE_COL, USAGE_COL);
	if (!brief)
		fprintf(out, "%*sYAML: %s\n", USAGE_COL, "", o->yaml ? o->yaml : "(flag only)");
}

/* The heading an option goes under: the first whose prefix its flag starts with. */
static const struct vw_help_group *option_group(const struct vw_config_program *p,
						 const struct vw_option *o)
{
	for (const struct vw_help_group *g = p->groups; g && g->title; g++)
		if (strncmp(o->flag, g->prefix, strlen(g->prefix)) == 0)
			return g;
	return NULL;
}

static void usage_aliases(const struct vw_config_program *p, FILE *out)
{
	if (!p->aliases || !(p->aliases[0].flag || p->aliases[0].yaml))
		return;
	fputs("\nKepler's spellings (accepted as they are):\n", out);
	for (const struct vw_option_alias *a = p->aliases; a->flag || a->yaml; a++) {
		_cleanup_free_ char *text = NULL;
		int n = asprintf(&text, "%s%s%s%s%s %s%s%s", a->flag ? "--" : "",
				 a->flag ? a->flag : "", a->flag && a->yaml ? ", " : "",
				 a->yaml ? "YAML " : "", a->yaml ? a->yaml : "",
				 a->target ? "-> --" : "has no effect: ",
				 a->target ? a->target : a->why, a->target ? "" : ".");

		if (n < 0)
			return;
		fputs("  ", out);
		wrap(out, text, 2, 6);
	}
}

void vw_config_usage(const struct vw_config_program *p, FILE *out)
{
	vw_config_usage_all(p, false, out);
}

void vw_config_usage_all(const struct vw_config_program *p, bool all, FILE *out)
{
	size_t hidden = 0;

	if (!out)
		out = stdout;
	fprintf(out, "Usage: %s [--FLAG[=VALUE]]...\n\n", p->name);
	if (p->summary) {
		wrap(out, p->summary, 0, 0);
		fputc('\n', out);
	}
	wrap(out,
	     "Settings start from the defaults shown below, then the YAML file named by "
	     "--config.file, then the flags: flags win. Each setting's YAML key nests by its "
	     "dots: web.listenAddress is listenAddress inside the web mapping. Write flags as "
	     "--flag=value or --flag value; a boolean flag alone means true, --no-FLAG false. "
	     "Durations use Go syntax: 300ms, 5s, 1m30s, 1.5h.",
	     0, 0);
	if (!p->groups) {
		fputs("\nFlags:\n", out);
		for (size_t i = 0; i < p->n_opts; i++)
			usage_option(&p->opts[i], false, out);
	}
	for (const struct vw_help_group *g = p->groups; g && g->title; g++) {
		bool any = false, seen = false;

		for (const struct vw_help_group *e = p->groups; e != g && !seen; e++)
			seen = strcmp(e->title, g->title) == 0; /* one heading, several prefixes */
		for (size_t i = 0; i < p->n_opts && !seen; i++) {
			const struct vw_help_group *og = option_group(p, &p->opts[i]);

			if (!og || strcmp(og->title, g->title) != 0)
				continue;
			if (g->advanced && !all) {
				hidden++;
				continue;
			}
			if (!any)
				fprintf(out, "\n%s:\n", g->title);
			any = true;
			usage_option(&p->opts[i], !all, out);
		}
	}
	fputs("\nHelp:\n", out);
	fprintf(out, "  %-*sShow the common flags and exit.\n", USAGE_COL - 2, "-h, --help");
	fprintf(out, "  %-*sShow every flag and Kepler's names, and exit.\n", USAGE_COL - 2,
		"--help-all");
	fprintf(out, "  %-*sShow the version and exit.\n", USAGE_COL - 2, "--version");
	if (all)
		usage_aliases(p, out);
	else if (hidden)
		fprintf(out, "\n%zu more flags (advanced tuning), each setting's YAML key and Kepler's "
			"spellings: --help-all\n",
			hidden);
}

/*
 * The code point of the UTF-8 sequence at s (*len bytes) that YAML would not read back as itself
 * inside double quotes: C1 controls (NEL is a line break there), LS and PS (line breaks too),
 * the BOM and the non-characters U+FFFE/U+FFFF (not printable). 0 for anything else.
 */
static unsigned yaml_unsafe(const unsigned char *s, size_t *len)
{
	unsigned cp;

	if (s[0] == 0xc2 && s[1] >= 0x80 && s[1] <= 0x9f) {
		*len = 2;
		return s[1];
	}
	if ((s[0] != 0xe2 && s[0] != 0xef) || (s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80)
		return 0;
	cp = (unsigned)(s[0] & 0x0f) << 12 | (unsigned)(s[1] & 0x3f) << 6 | (s[2] & 0x3f);
	if (cp != 0x2028 && cp != 0x2029 && cp != 0xfeff && cp != 0xfffe && cp != 0xffff)
		return 0;
	*len = 3;
	return cp;
}

static void print_quoted(const char *s, FILE *out)
{
	fputc('"', out);
	while (*s) {
		unsigned char c = (unsigned char)*s;
		size_t len = 1;
		unsigned cp;

		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			fprintf(out, "\\x%02x", c);
		else if ((cp = yaml_unsafe((const unsigned char *)s, &len)))
			fprintf(out, cp < 0x100 ? "\\x%02x" : "\\u%04x", cp);
		else
			fputc(c, out);
		s += len;
	}
	fputc('"', out);
}

static void print_double(double v, FILE *out)
{
	char buf[64];

	/* The shortest form that reads back to the same double. */
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(buf, sizeof(buf), "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	fputs(buf, out);
}

static void print_value(const struct vw_option *o, const void *cfg, const char *key, int depth,
			FILE *out)
{
	const void *f = vw_opt_cfield(o, cfg);
	char buf[VW_DURATION_STRLEN];

	if (o->type == VW_OPT_STRING && !*(char *const *)f) {
		fprintf(out, "# %s: (unset)\n", key);
		return;
	}
	fprintf(out, "%s:", key);
	switch (o->type) {
	case VW_OPT_STRING:
		fputc(' ', out);
		print_quoted(*(char *const *)f, out);
		break;
	case VW_OPT_DURATION:
		(void)vw_format_duration(*(const uint64_t *)f, buf, sizeof(buf));
		fprintf(out, " %s", buf);
		break;
	case VW_OPT_BOOL:
		fprintf(out, " %s", *(const bool *)f ? "true" : "false");
		break;
	case VW_OPT_UINT:
		fprintf(out, " %" PRIu64, *(const uint64_t *)f);
		break;
	case VW_OPT_DOUBLE:
		fputc(' ', out);
		print_double(*(const double *)f, out);
		break;
	case VW_OPT_LOG_LEVEL:
		fprintf(out, " %s", vw_log_level_name(*(const enum vw_log_level *)f));
		break;
	case VW_OPT_STRLIST: {
		const struct vw_strlist *l = f;

		fputs(l->n ? "" : " []", out);
		for (size_t i = 0; i < l->n; i++) {
			fprintf(out, "\n%*s- ", depth * 2 + 2, "");
			print_quoted(l->v[i], out);
		}
		break;
	}
	}
	fputc('\n', out);
}

/* Print every option below prefix (plen bytes, with its trailing dot), grouping segments. */
static void print_level(const struct vw_config_program *p, const void *cfg, const char *prefix,
			size_t plen, int depth, FILE *out)
{
	for (size_t i = 0; i < p->n_opts; i++) {
		const char *y = p->opts[i].yaml;
		size_t seg;
		bool dup = false;

		if (!y || strncmp(y, prefix, plen) != 0)
			continue;
		seg = strcspn(y + plen, ".");
		for (size_t j = 0; j < i && !dup; j++) {
			const char *q = p->opts[j].yaml;

			dup = q && strncmp(q, y, plen + seg) == 0 &&
			      (q[plen + seg] == '.' || q[plen + seg] == '\0');
		}
		if (dup)
			continue;
		fprintf(out, "%*s", depth * 2, "");
		if (y[plen + seg] == '\0') {
			print_value(&p->opts[i], cfg, y + plen, depth, out);
		} else {
			fprintf(out, "%.*s:\n", (int)seg, y + plen);
			print_level(p, cfg, y, plen + seg + 1, depth + 1, out);
		}
	}
}

void vw_config_print(const struct vw_config_program *p, const void *cfg, FILE *out)
{
	if (!out)
		out = stdout;
	fprintf(out, "# %s %s: effective configuration\n", p->name,
		p->version ? p->version : VW_VERSION);
	print_level(p, cfg, "", 0, 0, out);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internals shared by the option loader's files: config.c (table check, flags, loading),
 * config_value.c (typed values), config_yaml.c (the YAML file), config_help.c (--help and the
 * effective configuration). Not for daemons: they use config.h.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "macro.h"

#define VW_CONFIG_MSG_MAX 512
#define VW_CONFIG_QUOTE_MAX 64 /* longest piece of a bad value quoted in a message */

struct vw_opt_type_info {
	const char *expect;  /* what a value looks like, for messages and --help */
	const char *metavar; /* default metavar */
	size_t size;	     /* of the field */
};

/* Indexed by enum vw_opt_type; VW_OPT_STRLIST is the last. */
extern const struct vw_opt_type_info vw_opt_types[VW_OPT_STRLIST + 1];

/* snprintf into buf (if any) and return r, so errors read "return vw_config_msg(...)". */
int vw_config_msg(char *buf, size_t len, int r, const char *fmt, ...) _printf_(4, 5);

static inline void *vw_opt_field(const struct vw_option *o, void *cfg)
{
	return (char *)cfg + o->offset;
}

static inline const void *vw_opt_cfield(const struct vw_option *o, const void *cfg)
{
	return (const char *)cfg + o->offset;
}

/*
 * Parse s like a flag value into the option's field; a list gets s's comma-separated items
 * appended. -EINVAL, -ERANGE or -ENOMEM with the reason in why ("invalid duration \"5x\" ...").
 */
int vw_opt_set(const struct vw_option *o, void *cfg, const char *s, char *why, size_t whylen);
/* Free a string or list field and zero it. */
void vw_opt_free(const struct vw_option *o, void *cfg);
bool vw_opt_bounded(const struct vw_option *o);
/* A boolean flag (--x, --x=false, --no-x): a bool, or a string whose choices hold true and
 * false besides others (auto|true|false). */
bool vw_opt_boolish(const struct vw_option *o);
/* A bound as the user would write it: "1s" for a duration, "100" for a number. */
void vw_opt_bound_format(const struct vw_option *o, double v, char *buf, size_t size);
void vw_opt_choices_join(const struct vw_option *o, char *buf, size_t size);
/* s is one of the option's choices (a string's value, a list's item), or -EINVAL with why. */
int vw_opt_check_choice(const struct vw_option *o, const char *s, char *why, size_t whylen);

void vw_strlist_clear(struct vw_strlist *l);
int vw_strlist_push(struct vw_strlist *l, const char *s, size_t len);

const struct vw_option *vw_opt_by_flag(const struct vw_config_program *p, const char *flag);
const struct vw_option *vw_opt_by_yaml(const struct vw_config_program *p, const char *path);
/* Is YAML key y inside the mapping at path (len bytes; "" is the top level)? */
bool vw_yaml_below(const char *y, const char *path, size_t len);
/* Does some option's YAML key lie below path ("web" for "web.listenAddress")? */
bool vw_yaml_is_section(const struct vw_config_program *p, const char *path);

/* "Did you mean": the candidate closest to word, if close enough to be a typo. */
struct vw_suggestion {
	const char *word;
	const char *best;
	size_t best_len;
	size_t dist;
};

#define VW_SUGGESTION_INIT(w)                                                                      \
	{                                                                                          \
		.word = (w), .dist = SIZE_MAX                                                      \
	}
void vw_suggest_consider(struct vw_suggestion *s, const char *cand, size_t len);

const struct vw_option_alias *vw_alias_by_flag(const struct vw_config_program *p,
					       const char *flag);
const struct vw_option_alias *vw_alias_by_yaml(const struct vw_config_program *p,
					       const char *path);
/* Append a warning unless the same text is there already (each said once). 0 or -ENOMEM. */
int vw_config_warn(struct vw_strlist *warnings, const char *fmt, ...) _printf_(2, 3);
/* The text to parse for s, a value of o from `where` ("--flag", "file:line: key"): s, or the
 * value one of o's value aliases gives it, then warned about once. NULL on -ENOMEM. */
const char *vw_opt_value_alias(const struct vw_option *o, const char *s, const char *where,
			       struct vw_strlist *warnings);
/* The warning for a setting accepted without effect. */
int vw_config_warn_noeffect(struct vw_strlist *warnings, const char *what,
			    const struct vw_option_alias *a);

/* How the YAML file is read: unknown keys are errors (strict) or warnings. */
struct vw_config_yaml_mode {
	bool strict;
	struct vw_strlist *warnings; /* NULL: warnings dropped */
};

/* Read the YAML file at path into cfg; errors start with "path:line:column: ". */
int vw_config_yaml_load(const struct vw_config_program *p, void *cfg, const char *path,
			const struct vw_config_yaml_mode *mode, char *err, size_t errlen);
/* The same for the file's text in memory (tests, fuzzing); path names it in messages.
 * mode NULL: strict, as before aliases and warnings existed. */
int vw_config_yaml_load_buf(const struct vw_config_program *p, void *cfg, const char *path,
			    const char *buf, size_t len, const struct vw_config_yaml_mode *mode,
			    char *err, size_t errlen);

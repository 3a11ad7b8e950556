/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Options declared once in a table per daemon; each has a Kepler-style flag
 * (--web.listen-address) and a YAML key path (web.listenAddress). Defaults, then the YAML file
 * named by --config.file, then flags (flags win). Bad values are rejected with file:line:column;
 * unknown YAML keys are warnings (skipped), errors with --config.strict. Another program's
 * spellings (Kepler's) are aliases: they set one of our options, or are accepted without effect
 * with one warning saying why.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum vw_opt_type {
	VW_OPT_STRING,    /* char *, strdup'ed */
	VW_OPT_DURATION,  /* uint64_t ns; Go syntax "5s", "500ms", "1m30s", "2h" */
	VW_OPT_BOOL,      /* bool; flag form --x or --x=true/false, YAML true/false */
	VW_OPT_UINT,      /* uint64_t */
	VW_OPT_DOUBLE,    /* double, finite */
	VW_OPT_LOG_LEVEL, /* enum vw_log_level */
	VW_OPT_STRLIST,   /* struct vw_strlist; flag repeatable or comma-separated, YAML sequence */
};

struct vw_strlist {
	char **v; /* n strings and a NULL (v itself NULL while empty) */
	size_t n;
};

/*
 * Another program's value of one of our options that this option's syntax or range refuses
 * (Kepler's --monitor.max-terminated=-1, "unlimited"): read as `value` instead, with one warning
 * saying why. text is matched exactly, except "-*", which matches any negative integer ("-" and
 * digits). A table ends with a row whose text is NULL.
 */
struct vw_value_alias {
	const char *text;
	const char *value;
	const char *why;
};

struct vw_option {
	const char *flag;    /* "web.listen-address" (no leading dashes) */
	const char *yaml;    /* "web.listenAddress"; NULL: flag only */
	enum vw_opt_type type;
	size_t offset;       /* of the field in the config struct */
	const char *defval;  /* textual default parsed like a flag value; NULL: zero */
	const char *metavar; /* for --help */
	const char *help;
	double min, max;     /* numeric bounds (durations in seconds); min == max: unchecked */
	const char *const *choices; /* allowed string values (NULL-terminated), or NULL */
	const struct vw_value_alias *value_aliases; /* or NULL */
};

/*
 * Another program's spelling (Kepler's) of one of our options, or one of its settings that
 * means nothing here. flag (no dashes) and/or yaml. target: the flag of the option it sets (its
 * value is read as that option reads it; a boolean target's flag also has its --no- form).
 * target NULL: accepted without effect, with one warning carrying why; such a flag is a boolean
 * (--debug.pprof, --no-debug.pprof), such a YAML key any value. quiet: a value that asks for
 * nothing we lack ("false", "" for an empty list or string), accepted without the warning.
 * A table of aliases ends with an all-NULL row.
 */
struct vw_option_alias {
	const char *flag;
	const char *yaml;
	const char *target;
	const char *why;
	const char *quiet;
};

/* The --config.file option every daemon has (a char * field). */
#define VW_CONFIG_FILE_FLAG "config.file"
/* An optional flag-only boolean: unknown YAML keys are errors, not warnings. A program without
 * it is always strict. */
#define VW_CONFIG_STRICT_FLAG "config.strict"
/* Larger configuration files are refused (-EFBIG). */
#define VW_CONFIG_MAX_BYTES (1024 * 1024)
/* Enough for any vw_format_duration() result ("9223372036854775807ns" and the NUL). */
#define VW_DURATION_STRLEN 32

enum {
	VW_CONFIG_CONTINUE = 0,
	VW_CONFIG_EXIT_OK = 1, /* --help or --version was printed: exit 0 */
};

struct vw_config_program {
	const char *name;    /* "virtwatt-host" */
	const char *version;
	const char *summary; /* one paragraph for --help */
	const struct vw_option *opts;
	size_t n_opts;
	const struct vw_option_alias *aliases; /* NULL, or ended by an all-NULL row */
	/* --help's headings: an option goes under the first whose prefix its flag starts with;
	 * NULL-ended; NULL: one list. Options under a heading marked advanced show in --help-all. */
	const struct vw_help_group *groups;
};

struct vw_help_group {
	const char *prefix; /* "web." ("" matches all) */
	const char *title;
	bool advanced; /* only in --help-all */
};

/*
 * Fill cfg: defaults, then the YAML file (if --config.file is given), then the flags.
 * Returns VW_CONFIG_CONTINUE, VW_CONFIG_EXIT_OK, or -EINVAL/-ENOENT/... with a message in err
 * ("--monitor.interval: invalid duration \"5x\"", "cfg.yaml:3:5: unknown key \"monitr\"").
 * cfg must be zeroed before the first load; a later load frees what the previous one allocated.
 * On anything but VW_CONFIG_CONTINUE the fields are freed again (vw_config_free is harmless).
 * --help and --version print to out (NULL: stdout). argv is not reordered.
 */
int vw_config_load(const struct vw_config_program *p, void *cfg, int argc, char **argv,
		   FILE *out, char *err, size_t errlen);
/*
 * The same, with the warnings (unknown YAML keys, settings accepted without effect) appended to
 * warnings (NULL: dropped), each once, for the caller to log once logging is set up.
 */
int vw_config_load_warn(const struct vw_config_program *p, void *cfg, int argc, char **argv,
			FILE *out, struct vw_strlist *warnings, char *err, size_t errlen);
/*
 * Check an option table: flag and YAML key syntax, no duplicates, no key that is both a value
 * and a mapping, defaults that parse, bounds, choices only on strings. 0 or -EINVAL with err.
 * vw_config_load runs it first; a selfcheck test can run it on every daemon's table.
 */
int vw_config_check(const struct vw_config_program *p, char *err, size_t errlen);
/* The field in cfg of the option whose flag is `flag` (its type the option's); NULL: none. */
const void *vw_config_field(const struct vw_config_program *p, const void *cfg, const char *flag);
/* Free the strings and lists the loader allocated. */
void vw_config_free(const struct vw_config_program *p, void *cfg);
/* --help (all false: the common headings) and --help-all (all true: every option). */
void vw_config_usage(const struct vw_config_program *p, FILE *out);
void vw_config_usage_all(const struct vw_config_program *p, bool all, FILE *out);
void vw_strlist_free(struct vw_strlist *l);
/* Print the effective configuration as YAML (for --config.print and the logs). */
void vw_config_print(const struct vw_config_program *p, const void *cfg, FILE *out);

/* Go syntax, no sign: 0, 100ns, 2us, 300ms, 1m30s, 1.5h. -EINVAL bad form, -ERANGE > INT64_MAX. */
int vw_parse_duration(const char *s, uint64_t *ret_ns);
/* The shortest exact form vw_parse_duration reads back: 0s, 250ms, 1m30s. 0 or -ENOBUFS. */
int vw_format_duration(uint64_t ns, char *buf, size_t size);
/* true/false, yes/no, 1/0, case-insensitive. 0 or -EINVAL. */
int vw_parse_bool(const char *s, bool *ret);

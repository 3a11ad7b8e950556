/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What every YAML file virtwatt reads shares (the --config.file options, the web config): a
 * size-capped read of a regular file, libyaml's event parser with anchors and aliases refused
 * (nothing can expand: billion laughs), and errors as "path:line:column: message".
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <yaml.h>

#include "macro.h"

struct vw_yaml {
	yaml_parser_t parser;
	const char *path;
	char *buf; /* the whole file, for positions of reader errors */
	size_t len;
	char *err;
	size_t errlen;
	bool parser_ready;
	unsigned depth; /* sequences and mappings open */
};

/* No file virtwatt reads nests deeper (a Kepler config: 3 levels; a kubeconfig: 5). Deeper is
 * refused as soon as it is seen: libyaml's scanner costs O(depth) a token. */
#define VW_YAML_MAX_DEPTH 32

#define _cleanup_yaml_event_ _cleanup_(yaml_event_delete)

/*
 * Read path (a regular file of at most max_bytes) and start the parser. what names the file
 * in messages ("config file", "web config file"). 0 or -errno with the reason in err.
 */
int vw_yaml_open(struct vw_yaml *y, const char *path, const char *what, size_t max_bytes,
		 char *err, size_t errlen);
/* The same for a file already in memory (copied): path only names it in messages. */
int vw_yaml_open_buf(struct vw_yaml *y, const char *path, const char *what, const char *buf,
		     size_t len, size_t max_bytes, char *err, size_t errlen);
void vw_yaml_close(struct vw_yaml *y);
/* Next event (the previous one in ev is deleted first); anchors, aliases and nesting deeper
 * than VW_YAML_MAX_DEPTH are errors. */
int vw_yaml_next(struct vw_yaml *y, yaml_event_t *ev);
/* "path:line:col: message" into err; returns -EINVAL. m is 0-based, as libyaml's marks. */
int vw_yaml_err(struct vw_yaml *y, const yaml_mark_t *m, const char *fmt, ...) _printf_(3, 4);
/*
 * The next scalar in a sequence or mapping: 1 (in ev), 0 at the end event, or -errno.
 * what names the scalar for the error ("a key", "power.sources: a list item").
 */
int vw_yaml_next_scalar(struct vw_yaml *y, yaml_event_t *ev, yaml_event_type_t end,
			const char *what);
/* "scalar", "sequence", "mapping": for "expected ..., got a %s". */
const char *vw_yaml_kind(const yaml_event_t *ev);
/* A plain empty, "~" or "null" scalar: YAML's null. */
bool vw_yaml_is_null(const yaml_event_t *ev);
/* Does the scalar hide a NUL byte? */
bool vw_yaml_has_nul(const yaml_event_t *ev);

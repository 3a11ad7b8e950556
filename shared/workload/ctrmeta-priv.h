/* SPDX-License-Identifier: Apache-2.0 */
/*
 * For tests and fuzzing: the parsers behind vw_ctrmeta_lookup on a file's bytes in memory, with
 * what vw_ctrmeta_lookup would return for id (64 hex) had the file been read: 0 and the name,
 * -ENOENT when the file does not name id, -EINVAL when it is malformed. m lends its JSON parser.
 */
#pragma once

#include <stddef.h>

#include "ctrmeta.h"

/* Docker's <id>/config.v2.json. */
int vw_ctrmeta_parse_docker(struct vw_ctrmeta *m, const char *buf, size_t len, const char *id,
			    struct vw_ctrmeta_info *ret);
/* containers/storage's containers.json (Podman), alone in its index. */
int vw_ctrmeta_parse_podman(struct vw_ctrmeta *m, const char *buf, size_t len, const char *id,
			    struct vw_ctrmeta_info *ret);
/* nerdctl's names/<namespace>/<name> file, alone in its index. */
int vw_ctrmeta_parse_nerdctl(const char *name, const char *buf, size_t len, const char *id,
			     struct vw_ctrmeta_info *ret);

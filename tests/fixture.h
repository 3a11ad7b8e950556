/* SPDX-License-Identifier: Apache-2.0 */
/* Temporary fixture trees for tests: mkdtemp, write files by relative path, remove all. */
#pragma once

#include <stddef.h>

/* Create a fresh directory under $TMPDIR (or /tmp); returns a malloc'd path or NULL. */
char *vw_fixture_mkdtemp(const char *tag);
/* Write (creating parent directories) root/rel with the given text and mode (0 = 0644). */
int vw_fixture_write(const char *root, const char *rel, const char *text, int mode);
int vw_fixture_mkdir(const char *root, const char *rel);
int vw_fixture_symlink(const char *root, const char *target, const char *rel);
/* Remove a tree and free the path. */
void vw_fixture_rm(char *root);
/* Read a whole file into a malloc'd NUL-terminated buffer (NULL on error). */
char *vw_fixture_slurp(const char *path, size_t *ret_len);

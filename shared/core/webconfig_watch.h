/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Watching the web config file for changes (the HTTP server's reloads): the file and the files
 * it names (certificate, key, client CA) are stamped, the config's text digested; a change is
 * offered once a second poll sees it unchanged (a file being written is never loaded half-way),
 * a broken one keeps the configuration being served, and one that weakens security
 * (webconfig.h: vw_webconfig_diff) only when it carries VW_WEBCONFIG_WEAKER_MARKER and has
 * stayed unchanged for the settle period. Not thread-safe: the server's housekeeping thread
 * owns it.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct vw_webconfig;
struct vw_webconfig_watch;

/* NULL with errno set. settle_s: how long a weaker file must stay as it is. */
struct vw_webconfig_watch *vw_webconfig_watch_new(const char *path, unsigned settle_s);
void vw_webconfig_watch_free(struct vw_webconfig_watch *w);
const char *vw_webconfig_watch_path(const struct vw_webconfig_watch *w);

/* The first read: 0 with *ret (the caller's), now the configuration being served; or -errno,
 * the reason logged. */
int vw_webconfig_watch_load(struct vw_webconfig_watch *w, struct vw_webconfig **ret);

/*
 * One check against cur (the configuration being served). 1: *ret (the caller's) is to be
 * applied, what changed in changes and *ret_weaker whether it weakens security; then
 * vw_webconfig_watch_done() says whether it could be served. 0: nothing to apply (unchanged, a
 * change noted and waiting, a broken file or a refused weaker one, logged at a falling rate).
 */
int vw_webconfig_watch_poll(struct vw_webconfig_watch *w, const struct vw_webconfig *cur,
			    struct vw_webconfig **ret, char *changes, size_t len, bool *ret_weaker);
/* What poll offered is served (ok), or could not be: the previous one stays, said. */
void vw_webconfig_watch_done(struct vw_webconfig_watch *w, bool ok, bool weaker);

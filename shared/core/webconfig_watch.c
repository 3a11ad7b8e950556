/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The web config's watcher (webconfig_watch.h): what the last poll saw (the files' stamps and a
 * SHA-256 of the config's text) against what is loaded and what is pending.
 */
#include "webconfig_watch.h"

#include <errno.h>
#include <fcntl.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "fileio.h"
#include "log.h"
#include "macro.h"
#include "webconfig.h"

#define CONFIG_DIGEST_LEN 32 /* SHA-256 of the web config's text */

/* The web config file and the files it names, as last loaded: a change means a reload. */
struct file_stamp {
	bool present;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime, ctime;
};

enum { STAMP_CONFIG, STAMP_CERT, STAMP_KEY, STAMP_CA, N_STAMPS };

/* What a poll saw: the files' stamps and a digest of the config's text. */
struct config_seen {
	struct file_stamp stamps[N_STAMPS];
	uint8_t digest[CONFIG_DIGEST_LEN];
};

struct vw_webconfig_watch {
	char *path;
	unsigned settle_s;
	/* what is loaded; a different state seen by the last poll and when it was first seen
	 * (applied only once a second poll sees it unchanged); what poll last offered */
	struct config_seen loaded, pending, offered;
	bool has_pending;
	uint64_t pending_since_ns;
	struct vw_complaint reload_complaint, weaker_complaint;
};

struct vw_webconfig_watch *vw_webconfig_watch_new(const char *path, unsigned settle_s)
{
	struct vw_webconfig_watch *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->path = strdup(path);
	if (!w->path) {
		free(w);
		return NULL;
	}
	w->settle_s = settle_s;
	return w;
}

void vw_webconfig_watch_free(struct vw_webconfig_watch *w)
{
	if (!w)
		return;
	free(w->path);
	free(w);
}

const char *vw_webconfig_watch_path(const struct vw_webconfig_watch *w)
{
	return w->path;
}

static void stamp_take(const char *path, struct file_stamp *st)
{
	struct stat sb;

	memset(st, 0, sizeof(*st)); /* compared with memcmp: padding zeroed */
	if (!path || stat(path, &sb) < 0)
		return;
	st->present = true;
	st->dev = sb.st_dev;
	st->ino = sb.st_ino;
	st->size = sb.st_size;
	st->mtime = sb.st_mtim;
	st->ctime = sb.st_ctim;
}

/* The stamps of the config file and of the files wc names, and the digest of text. */
static void config_seen_take(const char *config, const struct vw_webconfig *wc, const char *text,
			     size_t len, struct config_seen *seen)
{
	memset(seen, 0, sizeof(*seen));
	stamp_take(config, &seen->stamps[STAMP_CONFIG]);
	stamp_take(wc ? wc->cert_file : NULL, &seen->stamps[STAMP_CERT]);
	stamp_take(wc ? wc->key_file : NULL, &seen->stamps[STAMP_KEY]);
	stamp_take(wc ? wc->client_ca_file : NULL, &seen->stamps[STAMP_CA]);
	if (text)
		gnutls_hash_fast(GNUTLS_DIG_SHA256, text, len, seen->digest);
}

/* The config file's text (malloc'd, NUL-terminated): 0 or -errno with the reason in err. */
static int config_text_read(const char *path, char **ret, size_t *ret_len, char *err,
			    size_t errlen)
{
	int r = vw_read_regular_at(AT_FDCWD, path, VW_WEBCONFIG_MAX_BYTES, ret, ret_len);

	if (r < 0)
		snprintf(err, errlen, "%s: %s", path,
			 r == -EFBIG	? "larger than 256 KiB"
			 : r == -EINVAL ? "not a regular file (a FIFO, a device or a socket)"
					: strerror(-r));
	return r;
}

int vw_webconfig_watch_load(struct vw_webconfig_watch *w, struct vw_webconfig **ret)
{
	char err[1024] = "";
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r = config_text_read(w->path, &text, &len, err, sizeof(err));

	if (r == 0)
		r = vw_webconfig_load_buf(w->path, text, len, ret, err, sizeof(err));
	if (r < 0) {
		vw_error("http: web config: %s", err[0] ? err : strerror(-r));
		return r;
	}
	config_seen_take(w->path, *ret, text, len, &w->loaded);
	return 0;
}

/*
 * A reload that would weaken security (vw_webconfig_diff) is applied only when the file says
 * so explicitly and has stayed as it is for the settle period: a file caught half-written, cut
 * short or emptied by a careless copy never turns TLS or authentication off.
 */
static bool weaker_allowed(struct vw_webconfig_watch *w, const char *text, size_t len,
			   uint64_t now, const char *changes)
{
	bool marked = vw_webconfig_allows_weaker(text, len);
	uint64_t settled = now - w->pending_since_ns;

	if (marked && settled >= (uint64_t)w->settle_s * VW_NSEC_PER_SEC)
		return true;
	vw_complain(&w->weaker_complaint, VW_LOG_WARN,
		    "http: web config %s changed but would weaken security (%s): refused, still "
		    "serving the previous configuration; to apply it on purpose, add the line "
		    "'%s' and leave the file unchanged for %u s%s",
		    w->path, changes, VW_WEBCONFIG_WEAKER_MARKER, w->settle_s,
		    marked ? " (it has the line; waiting for the file to settle)" : "");
	return false;
}

/*
 * A change (the file's size, times, inode or text, or those of the files it names) is only
 * noted at first; it is offered once the next poll sees the same state. A broken file keeps
 * the previous configuration (retried, its complaint rate-limited), and so does a weaker one
 * unless it is marked and settled (weaker_allowed).
 */
int vw_webconfig_watch_poll(struct vw_webconfig_watch *w, const struct vw_webconfig *cur,
			    struct vw_webconfig **ret, char *changes, size_t changes_len,
			    bool *ret_weaker)
{
	struct config_seen now;
	struct vw_webconfig *wc = NULL;
	_cleanup_free_ char *text = NULL;
	char err[1024] = "";
	uint64_t t = vw_now_ns();
	size_t len = 0;
	int r;

	*ret = NULL;
	r = config_text_read(w->path, &text, &len, err, sizeof(err));
	config_seen_take(w->path, cur, r == 0 ? text : NULL, len, &now);
	if (memcmp(&now, &w->loaded, sizeof(now)) == 0) {
		w->has_pending = false;
		vw_release(&w->weaker_complaint, VW_LOG_WARN,
			   "http: web config %s is back to the configuration being served", w->path);
		return 0;
	}
	if (!w->has_pending || memcmp(&now, &w->pending, sizeof(now)) != 0) {
		w->pending = now;
		w->has_pending = true;
		w->pending_since_ns = t;
		vw_debug("http: web config %s changed; applied once unchanged for one more check",
			 w->path);
		return 0;
	}
	if (r == 0)
		r = vw_webconfig_load_buf(w->path, text, len, &wc, err, sizeof(err));
	if (r < 0) {
		vw_complain(&w->reload_complaint, VW_LOG_ERROR,
			    "http: web config changed but is not usable, keeping the previous one: %s",
			    err[0] ? err : strerror(-r));
		return 0;
	}
	*ret_weaker = vw_webconfig_diff(cur, wc, changes, changes_len);
	if (*ret_weaker && !weaker_allowed(w, text, len, t, changes)) {
		vw_webconfig_free(wc);
		return 0;
	}
	config_seen_take(w->path, wc, text, len, &w->offered);
	*ret = wc;
	return 1;
}

void vw_webconfig_watch_done(struct vw_webconfig_watch *w, bool ok, bool weaker)
{
	if (!ok) {
		vw_complain(&w->reload_complaint, VW_LOG_ERROR,
			    "http: web config %s changed but cannot be served, keeping the previous "
			    "one", w->path);
		return;
	}
	vw_release(&w->reload_complaint, VW_LOG_INFO, "http: web config %s usable again",
		   w->path);
	vw_release(&w->weaker_complaint, VW_LOG_WARN, "http: web config %s: %s", w->path,
		   weaker ? "weaker settings applied as the file asks"
			  : "a file that does not weaken security replaced the refused one");
	w->loaded = w->offered;
	w->has_pending = false;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where the model comes from: a local file (an error if bad), else an HTTP(S) URL fetched with
 * the HTTP client (http_client.h) whose last good body is cached in cache_dir, else the
 * built-in default.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "fileio.h"
#include "http_client.h"
#include "log.h"
#include "macro.h"
#include "model.h"
#include "model_priv.h"
#include "procfs.h"

#define DEFAULT_TIMEOUT_MS 10000L
#define CACHE_NAME_MAX 48

struct body {
	char *data;
	size_t len;
};

static void set_origin(char *buf, size_t len, const char *kind, const char *what)
{
	if (buf && len)
		snprintf(buf, len, "%s%s%s", kind, what ? ":" : "", what ? what : "");
}

/* GET url (POST the JSON `post` when not NULL) into b (at most VW_MODEL_MAX_BYTES; HTTP >= 400
 * fails). 0 or -errno, reason in why. */
static int fetch(const char *url, const char *post, long timeout_ms, struct body *b, char *why,
		 size_t whylen)
{
	static const char *const json_headers[] = { "Content-Type: application/json", NULL };
	const struct vw_httpc_opts o = { .what = "model", .allow_http = true, .max_redirects = 3,
					 .timeout_ms = timeout_ms,
					 .max_body = VW_MODEL_MAX_BYTES };
	const struct vw_httpc_req req = { .method = post ? "POST" : "GET", .url = url,
					  .headers = post ? json_headers : NULL, .body = post,
					  .body_len = post ? strlen(post) : 0 };
	struct vw_httpc_resp resp = { 0 };
	struct vw_httpc *c;
	int r = vw_httpc_new(&o, &c, why, whylen);

	if (r < 0)
		return r;
	r = vw_httpc_do(c, &req, &resp);
	vw_httpc_free(c);
	if (r == 0 && resp.status >= 400) {
		snprintf(why, whylen, "The requested URL returned error: %ld", resp.status);
		r = -EIO;
	} else if (r == -EFBIG) {
		snprintf(why, whylen, "body larger than %u bytes", VW_MODEL_MAX_BYTES);
	} else if (r < 0) {
		snprintf(why, whylen, "%s", resp.error);
		r = r == -ETIMEDOUT || r == -ENOMEM ? r : -EIO;
	}
	if (r < 0) {
		vw_httpc_resp_clear(&resp);
		return r;
	}
	b->data = resp.body;
	b->len = resp.body_len;
	return 0;
}

int vw_model_http_fetch(const char *url, const char *post_json, long timeout_ms, char **ret,
			size_t *ret_len, char *why, size_t whylen)
{
	struct body b = { 0 };
	int r = fetch(url, post_json, timeout_ms > 0 ? timeout_ms : DEFAULT_TIMEOUT_MS, &b, why,
		      whylen);

	if (r < 0) {
		free(b.data);
		return r;
	}
	if (!b.data) {
		snprintf(why, whylen, "empty body");
		return -ENODATA;
	}
	*ret = b.data;
	*ret_len = b.len;
	return 0;
}

/* "model-<FNV-1a 64 of the URL>.json": stable, and safe as a file name whatever the URL. */
static void cache_name(const char *url, char *buf, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (const unsigned char *p = (const unsigned char *)url; *p; p++) {
		h ^= *p;
		h *= 0x100000001b3ULL;
	}
	snprintf(buf, len, "model-%016" PRIx64 ".json", h);
}

static int cache_dir_open(const char *dir, bool create)
{
	int fd = vw_root_open(dir);

	if (fd == -ENOENT && create) {
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			return -errno;
		fd = vw_root_open(dir);
	}
	return fd;
}

static void cache_store(const char *dir, const char *name, const struct body *b)
{
	_cleanup_close_ int fd = cache_dir_open(dir, true);
	int r = fd;

	if (fd >= 0)
		r = vw_write_file_atomic_at(fd, name, b->data, b->len, 0644);
	if (r < 0)
		vw_warn("model: write cache %s/%s: %s", dir, name, strerror(-r));
	else
		vw_debug("model: cached the model as %s/%s", dir, name);
}

/* Fetch and parse; on success the body replaces the cached copy. */
static int load_url(const struct vw_model_source_opts *o, const char *name, struct vw_model **ret,
		    char *why, size_t whylen)
{
	long timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : DEFAULT_TIMEOUT_MS;
	struct body b = {0};
	char reason[256];
	int r;

	r = fetch(o->url, NULL, timeout_ms, &b, why, whylen);
	if (r == 0) {
		r = vw_model_parse(b.data, b.len, o->url, ret, reason, sizeof(reason));
		if (r < 0)
			snprintf(why, whylen, "the body is not a usable model: %s", reason);
		else if (o->cache_dir)
			cache_store(o->cache_dir, name, &b);
	}
	free(b.data);
	return r;
}

/* The cached last good copy; its origin for trainer and output type is still the URL. */
static int load_cache(const struct vw_model_source_opts *o, const char *name, struct vw_model **ret)
{
	_cleanup_close_ int fd = -1;
	char why[256];
	int r;

	if (!o->cache_dir)
		return -ENOENT;
	fd = cache_dir_open(o->cache_dir, false);
	if (fd < 0)
		return fd;
	r = vw_model_load_file_at(fd, name, o->url, ret, why, sizeof(why));
	if (r < 0 && r != -ENOENT)
		vw_warn("model: cached copy %s/%s unusable: %s", o->cache_dir, name, why);
	return r;
}

static int from_url(const struct vw_model_source_opts *o, struct vw_model **ret, char *origin,
		    size_t originlen)
{
	char name[CACHE_NAME_MAX], why[512], path[4096];
	int r;

	cache_name(o->url, name, sizeof(name));
	r = load_url(o, name, ret, why, sizeof(why));
	if (r == 0) {
		set_origin(origin, originlen, "url", o->url);
		vw_info("model: loaded %s from %s", vw_model_name(*ret), o->url);
		return 0;
	}
	vw_warn("model: fetch %s: %s", o->url, why);
	r = load_cache(o, name, ret);
	if (r < 0)
		return r;
	snprintf(path, sizeof(path), "%s/%s", o->cache_dir, name);
	set_origin(origin, originlen, "cache", path);
	vw_warn("model: using the cached last good copy %s of %s", path, o->url);
	return 0;
}

static bool url_scheme_ok(const char *url)
{
	return strncasecmp(url, "http://", 7) == 0 || strncasecmp(url, "https://", 8) == 0;
}

/* The per-vCPU model of this machine's processor, if the table knows its architecture. */
static int builtin_percpu(const struct vw_model_source_opts *o, struct vw_model **ret,
			  char *ret_origin, size_t originlen)
{
	const struct vw_cpu_info *cpu = o->n_cpus ? &o->cpus[0] : NULL;
	const char *arch;
	bool exact;
	int r;

	arch = cpu ? vw_cpu_arch(cpu, &exact) : NULL;
	if (!arch) {
		vw_info("model: no per-vCPU figures for this processor (%s, %s family %d model %d%s%s); "
			"the default built-in model",
			cpu && cpu->vendor_id[0] ? cpu->vendor_id : "unknown vendor",
			cpu && cpu->model_name[0] ? cpu->model_name : "unnamed",
			cpu ? cpu->family : -1, cpu ? cpu->model : -1, o->machine ? ", on " : "",
			o->machine ? o->machine : "");
		return -ENOENT;
	}
	r = vw_model_percpu(arch, (unsigned)o->n_cpus, ret, ret_origin, originlen);
	if (r == 0)
		vw_info("model: %s: %s (%s) x %zu vCPUs%s%s, Kepler v0.7.12's per-vCPU figures%s",
			ret_origin, arch, cpu->model_name, o->n_cpus, o->machine ? " on " : "",
			o->machine ? o->machine : "", exact ? "" : " (the nearest architecture listed)");
	return r;
}

int vw_model_source_load(const struct vw_model_source_opts *o, struct vw_model **ret,
			 char *ret_origin, size_t originlen, char *err, size_t errlen)
{
	int r;

	if (err && errlen)
		err[0] = '\0';
	if (o->file) {
		char why[400] = "";

		r = vw_model_load_file_at(AT_FDCWD, o->file, o->file, ret, why, sizeof(why));
		if (r == 0) {
			set_origin(ret_origin, originlen, "file", o->file);
			vw_info("model: loaded %s from %s", vw_model_name(*ret), o->file);
		} else if (err && errlen) {
			/* The file named once, whatever the parser said (a read error names it). */
			if (strstr(why, o->file))
				snprintf(err, errlen, "--model.file: %s", why);
			else
				snprintf(err, errlen, "--model.file %s: %s", o->file,
					 why[0] ? why : strerror(-r));
		}
		return r;
	}
	if (o->url && !url_scheme_ok(o->url)) {
		if (err && errlen)
			snprintf(err, errlen, "model URL is not http(s): %s", o->url);
		return -EINVAL;
	}
	if (o->url && from_url(o, ret, ret_origin, originlen) == 0)
		return 0;
	if (o->percpu && builtin_percpu(o, ret, ret_origin, originlen) == 0)
		return 0;
	r = vw_model_load_builtin(ret);
	if (r < 0) {
		if (err && errlen)
			snprintf(err, errlen, "built-in model: %s", strerror(-r));
		return r;
	}
	set_origin(ret_origin, originlen, "builtin", NULL);
	vw_log(o->url ? VW_LOG_WARN : VW_LOG_INFO, "model: using the built-in model %s",
	       vw_model_builtin_name);
	return 0;
}

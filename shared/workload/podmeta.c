/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pod metadata for container -> pod lookups, on one worker thread.
 *
 * apiserver mode: GET /api/v1/pods?fieldSelector=spec.nodeName=<node> (remember the list's
 * resourceVersion), then watch from it: newline-delimited JSON events, framed here with a size
 * cap. A broken watch resumes from the last resourceVersion seen; 410 Gone (HTTP status or an
 * ERROR event) and an oversized event re-list. kubelet mode: poll GET /pods.
 *
 * The worker owns an HTTP client (http_client.h) and sleeps in it, so vw_podmeta_stop()'s
 * vw_httpc_wake() ends a stalled watch or a back-off sleep at once.
 */
#include "podmeta-priv.h"

#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "fileio.h"
#include "http_client.h"
#include "json_scan.h"
#include "log.h"
#include "macro.h"
#include "thread.h"

/* In-cluster defaults: the one place they are spelled. Every one is overridable by options. */
static const struct {
	const char *apiserver_url;
	const char *token_file;
	const char *ca_file;
	const char *kubelet_port;
} in_cluster = {
	.apiserver_url = "https://kubernetes.default.svc",
	.token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token",
	.ca_file = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt",
	.kubelet_port = "10250",
};

#define DEFAULT_POLL_NS (15 * VW_NSEC_PER_SEC)
#define DEFAULT_TIMEOUT_NS (30 * VW_NSEC_PER_SEC)
#define DEFAULT_GRACE_NS (120 * VW_NSEC_PER_SEC)
#define DEFAULT_BACKOFF_MIN_NS (1 * VW_NSEC_PER_SEC)
#define DEFAULT_BACKOFF_MAX_NS (60 * VW_NSEC_PER_SEC)
#define DEFAULT_MAX_EVENT (4u << 20)
#define LIST_MAX (64u << 20)         /* one list response; a node's pods are a few MiB */
#define ERROR_BODY_MAX (64u << 10)   /* non-200 bodies kept for the log */
#define TOKEN_MAX (16u << 10)
#define TOKEN_MAX_AGE_NS (60 * VW_NSEC_PER_SEC) /* projected tokens rotate: re-read now and then */
#define RV_MAX 128
#define WATCH_MIN_S 300 /* server-side watch timeout, randomised like client-go's */
#define QUIET_WATCH_NS VW_NSEC_PER_SEC
#define SWEEP_EVERY_NS VW_NSEC_PER_SEC
#define POLL_SLICE_MS 1000
/*
 * Kubernetes objects nest far deeper than our own frames (virtio-channel/proto.c: at most 6):
 * list -> items -> pod -> metadata -> managedFields -> fieldsV1 -> f:spec -> f:containers -> ...
 * reaches about 14, pod affinity terms about 15. 32 is json-c's default, set explicitly.
 */
#define JSON_DEPTH 32

/* ---- state ---- */

struct buf {
	char *data;
	size_t len, cap;
};

enum list_from {
	LIST_CACHED,     /* resourceVersion=0: any cached state (first list, cheap for etcd) */
	LIST_NOT_OLDER,  /* resourceVersion=<last seen> */
	LIST_CONSISTENT, /* no resourceVersion: after 410, never go back in time */
};

struct vw_podmeta {
	/* Fixed after start. */
	enum vw_podmeta_mode mode;
	char *base_url, *token_file, *ca_file, *node_name;
	char *static_token, *ca_pem, *cert_file, *key_file, *cert_pem, *key_pem; /* kubeconfig */
	bool insecure, allow_http;
	uint64_t poll_ns, timeout_ns, grace_ns, backoff_min_ns, backoff_max_ns;
	size_t max_event;
	struct vw_httpc *http;
	pthread_t thread;
	bool started; /* the worker runs (not an offline instance) */
	bool stop; /* __atomic */

	/* Worker thread only. */
	struct json_tokener *tok;
	char *auth;	/* "Authorization: Bearer ...", NULL: none */
	bool auth_set; /* auth is loaded (a token, or none) */
	char *token;
	uint64_t token_read_ns;
	char rv[RV_MAX];
	enum list_from list_from;
	struct vw_backoff backoff;
	uint64_t rng;
	uint64_t list_gen, next_sweep_ns;
	struct buf body;
	struct vw_complaint c_conn, c_status, c_event, c_token;

	/* Shared with lookups, under lock. */
	pthread_mutex_t lock;
	struct vw_podtable *table;
	bool synced;
};

static bool stopping(struct vw_podmeta *pm)
{
	return __atomic_load_n(&pm->stop, __ATOMIC_ACQUIRE);
}

/* Real monotonic time: sleeps and grace periods must not follow a test's fake clock. */
static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * VW_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static uint64_t rng_next(struct vw_podmeta *pm)
{
	uint64_t x = pm->rng; /* xorshift64 */

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return pm->rng = x;
}

/* ---- JSON from outside: strict tokener, depth limit, type checks on every access ---- */

static struct json_object *json_parse(struct vw_podmeta *pm, const char *s, size_t len)
{
	return vw_json_parse(pm->tok, s, len, json_type_object);
}

static bool jint(struct json_object *o, const char *key, int64_t *ret)
{
	struct json_object *v = vw_jget(o, key, json_type_int);

	if (!v)
		return false;
	errno = 0;
	*ret = json_object_get_int64(v);
	return errno == 0;
}

static void housekeeping(struct vw_podmeta *pm)
{
	uint64_t now = mono_ns();

	if (now >= pm->next_sweep_ns) {
		pthread_mutex_lock(&pm->lock);
		vw_podtable_sweep(pm->table, now);
		pthread_mutex_unlock(&pm->lock);
		pm->next_sweep_ns = now + SWEEP_EVERY_NS;
	}
}

/* ---- applying lists and events ---- */

static void set_rv(struct vw_podmeta *pm, const char *rv)
{
	if (!rv || !*rv)
		return;
	if (vw_copy_str(pm->rv, sizeof(pm->rv), rv) < 0)
		vw_complain(&pm->c_event, VW_LOG_WARN, "podmeta: resourceVersion too long");
}

static void apply_pod(struct vw_podmeta *pm, struct json_object *obj, uint64_t gen, bool deleted)
{
	uint64_t now = mono_ns();

	pthread_mutex_lock(&pm->lock);
	(void)vw_podtable_apply(pm->table, obj, gen, deleted, now);
	pthread_mutex_unlock(&pm->lock);
}

/* A PodList (API server or kubelet): upsert every item, mark the pods it lacks as gone. */
/* The parts of a PodList used; the items stay text until each is parsed on its own. */
struct list_scan {
	struct vw_podmeta *pm;
	struct vw_json_span kind, items, metadata;
	uint64_t gen;
	size_t skipped; /* items over max_event bytes */
};

#define LIST_HEAD_MAX (64u << 10) /* kind and the list's metadata: a few hundred bytes */

static bool key_is(const char *key, size_t n, const char *want)
{
	return n == strlen(want) && memcmp(key, want, n) == 0;
}

static int list_member(const char *key, size_t n, struct vw_json_span v, void *ud)
{
	struct list_scan *ls = ud;

	if (key_is(key, n, "kind"))
		ls->kind = v;
	else if (key_is(key, n, "items"))
		ls->items = v;
	else if (key_is(key, n, "metadata"))
		ls->metadata = v;
	return 0;
}

static int list_item(struct vw_json_span v, void *ud)
{
	struct list_scan *ls = ud;
	_cleanup_json_ struct json_object *pod = NULL;

	if (v.len > ls->pm->max_event) {
		ls->skipped++;
		return 0;
	}
	pod = json_parse(ls->pm, v.p, v.len); /* not an object: ignored */
	if (pod)
		apply_pod(ls->pm, pod, ls->gen, false);
	return 0;
}

static struct json_object *parse_head(struct vw_podmeta *pm, struct vw_json_span v,
				      enum json_type t)
{
	return v.p && v.len <= LIST_HEAD_MAX ? vw_json_parse(pm->tok, v.p, v.len, t) : NULL;
}

/*
 * A PodList, item by item: the whole text is checked first (json_scan.h), then each pod is
 * parsed and applied alone, so memory is one pod's tree whatever the list holds (json-c's tree
 * of a 20 MiB list of tiny values would be gigabytes).
 */
static int apply_list(struct vw_podmeta *pm, const char *body, size_t len)
{
	struct list_scan ls = { .pm = pm };
	_cleanup_json_ struct json_object *kind = NULL, *meta = NULL;
	uint64_t now;
	int r;

	if (vw_json_members(body, len, JSON_DEPTH, list_member, &ls) < 0)
		return -EBADMSG;
	kind = parse_head(pm, ls.kind, json_type_string);
	/* An empty list may say "items": null, or leave it out. */
	if (!kind || strcmp(json_object_get_string(kind), "PodList") != 0 ||
	    (ls.items.p && !vw_json_is_null(ls.items) && ls.items.p[0] != '['))
		return -EBADMSG;
	if (pm->mode == VW_PODMETA_APISERVER) {
		const char *rv;

		meta = parse_head(pm, ls.metadata, json_type_object);
		rv = vw_jstr(meta, "resourceVersion");
		if (!rv || !*rv)
			return -EBADMSG;
		set_rv(pm, rv);
	}
	ls.gen = ++pm->list_gen;
	if (ls.items.p && !vw_json_is_null(ls.items)) {
		r = vw_json_elements(ls.items, JSON_DEPTH - 1, list_item, &ls);
		if (r < 0)
			return r;
	}
	if (ls.skipped)
		vw_complain(&pm->c_event, VW_LOG_WARN,
			    "podmeta: %zu pods over %zu bytes ignored", ls.skipped, pm->max_event);
	now = mono_ns();
	pthread_mutex_lock(&pm->lock);
	vw_podtable_retire(pm->table, ls.gen, now);
	pm->synced = true;
	pthread_mutex_unlock(&pm->lock);
	return 0;
}

/* One watch event line. 0: applied or ignored; -ESTALE: 410, re-list; -EPROTO: other ERROR. */
static int handle_event(struct vw_podmeta *pm, const char *line, size_t len, unsigned *events)
{
	_cleanup_json_ struct json_object *ev = NULL;
	struct json_object *obj;
	const char *type;
	int64_t code = 0;

	if (strspn(line, " \t\r") == len)
		return 0; /* blank keep-alive line */
	ev = json_parse(pm, line, len);
	type = vw_jstr(ev, "type");
	obj = vw_jobj(ev, "object");
	if (!type || !obj) {
		vw_complain(&pm->c_event, VW_LOG_WARN, "podmeta: ignoring malformed watch event");
		return 0;
	}
	if (strcmp(type, "ERROR") == 0) {
		if (jint(obj, "code", &code) && code == 410)
			return -ESTALE;
		vw_complain(&pm->c_status, VW_LOG_WARN, "podmeta: watch error %lld: %.200s",
			    (long long)code, vw_jstr(obj, "message") ?: "");
		return -EPROTO;
	}
	if (strcmp(type, "ADDED") == 0 || strcmp(type, "MODIFIED") == 0)
		apply_pod(pm, obj, pm->list_gen, false);
	else if (strcmp(type, "DELETED") == 0)
		apply_pod(pm, obj, pm->list_gen, true);
	else if (strcmp(type, "BOOKMARK") != 0)
		return 0; /* unknown type: skip, keep the old resourceVersion */
	set_rv(pm, vw_jstr(vw_jobj(obj, "metadata"), "resourceVersion"));
	(*events)++;
	return 0;
}

/* ---- HTTP ---- */

struct xfer {
	struct vw_podmeta *pm;
	bool stream; /* frame lines as watch events */
	size_t cap;
	long status;
	int abort; /* why the write callback stopped the transfer */
	unsigned events;
};

static void buf_reset(struct buf *b)
{
	if (b->cap > (1u << 20)) { /* do not keep a big list's buffer around */
		free(b->data);
		*b = (struct buf){ 0 };
	}
	b->len = 0;
}

static int buf_append(struct buf *b, const char *p, size_t n, size_t max)
{
	if (n > max - b->len)
		return -EMSGSIZE;
	if (b->len + n + 1 > b->cap) {
		size_t cap = VW_MAX(VW_MAX(b->cap * 2, b->len + n + 1), (size_t)4096);
		char *nd = realloc(b->data, VW_MIN(cap, max + 1));

		if (!nd)
			return -ENOMEM;
		b->data = nd;
		b->cap = VW_MIN(cap, max + 1);
	}
	memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

/*
 * A chunk of a watch stream: framed into lines of at most cap bytes, each applied as an event.
 * 0, or why to stop: -EMSGSIZE (an oversized event: re-list) or handle_event's -ESTALE/-EPROTO.
 */
static int watch_feed(struct vw_podmeta *pm, const char *data, size_t n, size_t cap,
		      unsigned *events)
{
	while (n > 0) {
		const char *nl = memchr(data, '\n', n);
		size_t take = nl ? (size_t)(nl - data) : n;
		int r = buf_append(&pm->body, data, take, cap);

		if (r < 0)
			return r;
		if (!nl)
			break;
		r = handle_event(pm, pm->body.data, pm->body.len, events);
		pm->body.len = 0;
		if (r < 0)
			return r;
		data += take + 1;
		n -= take + 1;
	}
	return 0;
}

static int on_body(void *userdata, long status, const char *data, size_t n)
{
	struct xfer *x = userdata;
	struct vw_podmeta *pm = x->pm;

	x->status = status;
	if (x->status != 200) { /* keep the head of an error body for the log */
		size_t room = ERROR_BODY_MAX - VW_MIN(pm->body.len, ERROR_BODY_MAX);

		(void)buf_append(&pm->body, data, VW_MIN(n, room), ERROR_BODY_MAX);
		return 0;
	}
	if (!x->stream)
		return x->abort = buf_append(&pm->body, data, n, x->cap);
	/* an oversized event is dropped: re-list */
	return x->abort = watch_feed(pm, data, n, x->cap, &x->events);
}

static bool on_cancelled(void *userdata)
{
	return stopping(userdata);
}

static void on_idle(void *userdata)
{
	housekeeping(userdata);
}

static void backoff(struct vw_podmeta *pm)
{
	vw_httpc_sleep(pm->http, vw_backoff_next(&pm->backoff));
}

static void backoff_reset(struct vw_podmeta *pm)
{
	vw_backoff_reset(&pm->backoff);
	vw_release(&pm->c_conn, VW_LOG_INFO, "podmeta: connected");
}

static void auth_free(char *auth)
{
	if (auth)
		explicit_bzero(auth, strlen(auth));
	free(auth);
}

/* The Authorization header for token (NULL: none) into *ret: 0 or -ENOMEM. */
static int auth_header(const char *token, char **ret)
{
	*ret = NULL;
	if (!token)
		return 0;
	return asprintf(ret, "Authorization: Bearer %s", token) < 0 ? -ENOMEM : 0;
}

static void token_free(char *token)
{
	if (token)
		explicit_bzero(token, strlen(token));
	free(token);
}

static bool token_ok(const char *s)
{
	for (; *s; s++) {
		if (*s <= ' ' || *s > '~') /* would break or smuggle a header */
			return false;
	}
	return true;
}

/*
 * (Re-)read the bearer token. 1: a new token is in use; 0: unchanged, or none at all (no file:
 * requests go without Authorization, as through kubectl proxy); -errno: unreadable, the last
 * token stays.
 */
static int token_load(struct vw_podmeta *pm)
{
	char buf[TOKEN_MAX];
	char *token = NULL, *h;
	int r;

	pm->token_read_ns = mono_ns();
	if (!pm->token_file) { /* a kubeconfig's token, or a client certificate: fixed */
		if (pm->auth_set)
			return 0;
		r = auth_header(pm->static_token, &pm->auth);
		pm->auth_set = r == 0;
		return r;
	}
	r = vw_read_str_regular_at(AT_FDCWD, pm->token_file, buf, sizeof(buf)); /* never a FIFO */
	if (r == 0 && !token_ok(buf))
		r = -EINVAL;
	if (r < 0) {
		explicit_bzero(buf, sizeof(buf));
		/* The in-cluster default missing: not a pod (a systemd unit, a shell) */
		bool not_pod = r == -ENOENT && strcmp(pm->token_file, in_cluster.token_file) == 0;

		vw_complain(&pm->c_token, VW_LOG_WARN, "podmeta: token %s: %s%s", pm->token_file,
			    r == -EINVAL ? "not a regular file, or no token in it" : strerror(-r),
			    not_pod ? " (not in a pod: give --kube.config, or --kube.api-server with "
				      "--kube.token-file)"
				    : "");
		if (pm->auth_set)
			return r;
	} else {
		vw_release(&pm->c_token, VW_LOG_INFO, "podmeta: token %s readable", pm->token_file);
		if (pm->token && strcmp(pm->token, buf) == 0) {
			explicit_bzero(buf, sizeof(buf));
			return 0;
		}
		token = strdup(buf);
		explicit_bzero(buf, sizeof(buf));
		if (!token)
			return -ENOMEM;
	}
	if (auth_header(token, &h) < 0) {
		token_free(token);
		return -ENOMEM;
	}
	auth_free(pm->auth);
	token_free(pm->token);
	pm->auth = h;
	pm->auth_set = true;
	pm->token = token;
	return token ? 1 : 0;
}

/*
 * Run one GET to completion (any HTTP status: x->status). -ECANCELED when stopped, x->abort
 * when the body ended it, -EIO/-ETIMEDOUT on transport errors.
 */
static int xfer_run(struct vw_podmeta *pm, const char *url, struct xfer *x, long timeout_ms)
{
	const char *headers[] = { "Accept: application/json", NULL, NULL };
	struct vw_httpc_req req = { .url = url, .headers = headers, .timeout_ms = timeout_ms,
				    .on_body = on_body, .userdata = x };
	struct vw_httpc_resp resp = { 0 };
	int r;

	if (pm->token_file && mono_ns() - pm->token_read_ns >= TOKEN_MAX_AGE_NS)
		(void)token_load(pm);
	headers[1] = pm->auth;
	buf_reset(&pm->body);
	r = vw_httpc_do(pm->http, &req, &resp);
	if (x->status == 0)
		x->status = resp.status;
	if (r == -ECANCELED || stopping(pm))
		r = -ECANCELED;
	else if (x->abort < 0)
		r = x->abort;
	else if (r < 0) {
		vw_complain(&pm->c_conn, VW_LOG_WARN, "podmeta: GET %s: %s", url, resp.error);
		r = r == -ETIMEDOUT ? -ETIMEDOUT : -EIO;
	}
	vw_httpc_resp_clear(&resp);
	return r;
}

/* Judge a finished response's status. 0: 200; 1: 401 and a new token, retry now; -errno. */
static int check_status(struct vw_podmeta *pm, const char *what, long status)
{
	if (status == 200)
		return 0;
	if (status == 410)
		return -ESTALE; /* expected now and then: no complaint */
	if (status == 401 && token_load(pm) > 0) {
		vw_info("podmeta: %s: 401, token re-read, retrying", what);
		return 1;
	}
	vw_complain(&pm->c_status, VW_LOG_WARN, "podmeta: %s: HTTP %ld: %.200s", what, status,
		    pm->body.data ? pm->body.data : "");
	return status == 401 || status == 403 ? -EACCES : -EPROTO;
}

static char *pods_url(struct vw_podmeta *pm, bool watch)
{
	_cleanup_free_ char *sel_raw = NULL, *sel = NULL, *rv = NULL;
	char *url = NULL;
	int r = -1;

	if (asprintf(&sel_raw, "spec.nodeName=%s", pm->node_name) < 0)
		return NULL;
	sel = vw_url_escape(sel_raw);
	rv = vw_url_escape(pm->rv);
	if (!sel || !rv)
		return NULL;
	if (watch)
		r = asprintf(&url,
			     "%s/api/v1/pods?fieldSelector=%s&watch=1&resourceVersion=%s"
			     "&allowWatchBookmarks=true&timeoutSeconds=%u",
			     pm->base_url, sel, rv, WATCH_MIN_S + (unsigned)(rng_next(pm) % WATCH_MIN_S));
	else if (pm->list_from == LIST_CONSISTENT)
		r = asprintf(&url, "%s/api/v1/pods?fieldSelector=%s", pm->base_url, sel);
	else
		r = asprintf(&url, "%s/api/v1/pods?fieldSelector=%s&resourceVersion=%s", pm->base_url,
			     sel, pm->list_from == LIST_CACHED ? "0" : rv);
	return r < 0 ? NULL : url;
}

/* A list response's body, parsed and applied: 0, or -EBADMSG when it is not a PodList. */
static int list_apply_body(struct vw_podmeta *pm, const char *body, size_t len)
{
	return len ? apply_list(pm, body, len) : -EBADMSG;
}

/* GET a PodList and apply it. 1: retry now (new token). */
static int do_list(struct vw_podmeta *pm, const char *url, const char *what)
{
	struct xfer x = { .pm = pm, .cap = LIST_MAX };
	int r;

	r = xfer_run(pm, url, &x, (long)(pm->timeout_ns / VW_NSEC_PER_MSEC));
	if (r == -EMSGSIZE)
		vw_complain(&pm->c_status, VW_LOG_WARN, "podmeta: %s: over %u bytes", what, LIST_MAX);
	if (r < 0)
		return r;
	r = check_status(pm, what, x.status);
	if (r != 0)
		return r;
	r = list_apply_body(pm, pm->body.data, pm->body.len);
	if (r < 0)
		vw_complain(&pm->c_status, VW_LOG_WARN, "podmeta: %s: not a PodList", what);
	buf_reset(&pm->body);
	return r;
}

/* 0: resume the watch now; -ESTALE/-EMSGSIZE: re-list; 1: new token; other -errno: back off. */
static int do_watch(struct vw_podmeta *pm)
{
	_cleanup_free_ char *url = pods_url(pm, true);
	struct xfer x = { .pm = pm, .stream = true, .cap = pm->max_event };
	uint64_t t0 = mono_ns();
	int r;

	if (!url)
		return -ENOMEM;
	/* The server ends a watch after timeoutSeconds (5-10 min); allow it a minute more. */
	r = xfer_run(pm, url, &x, (long)(2 * WATCH_MIN_S + 60) * 1000L);
	if (r == -ECANCELED)
		return r;
	if (x.status != 200 && x.status != 0)
		return check_status(pm, "watch pods", x.status);
	if (r == -EMSGSIZE)
		vw_complain(&pm->c_event, VW_LOG_WARN,
			    "podmeta: watch event over %zu bytes dropped, re-listing", x.cap);
	if (r == -ESTALE || r == -EMSGSIZE || r == -EPROTO)
		return r;
	if (x.events > 0 || (r == 0 && mono_ns() - t0 >= QUIET_WATCH_NS)) {
		backoff_reset(pm);
		return 0;
	}
	return r < 0 ? r : -EAGAIN;
}

static void run_apiserver(struct vw_podmeta *pm)
{
	bool need_list = true;

	while (!stopping(pm)) {
		int r;

		if (need_list) {
			_cleanup_free_ char *url = pods_url(pm, false);

			r = url ? do_list(pm, url, "list pods") : -ENOMEM;
			if (r == 1)
				continue;
			if (r < 0) {
				backoff(pm);
				continue;
			}
			need_list = false;
			pm->list_from = LIST_NOT_OLDER;
			backoff_reset(pm);
		}
		r = do_watch(pm);
		if (r == 0 || r == 1)
			continue;
		if (r == -ESTALE || r == -EMSGSIZE) {
			need_list = true;
			if (r == -ESTALE) {
				vw_info("podmeta: resourceVersion %s expired, re-listing", pm->rv);
				pm->list_from = LIST_CONSISTENT;
			}
			continue;
		}
		backoff(pm);
	}
}

static void run_kubelet(struct vw_podmeta *pm)
{
	_cleanup_free_ char *url = NULL;

	if (asprintf(&url, "%s/pods", pm->base_url) < 0)
		return;
	while (!stopping(pm)) {
		int r = do_list(pm, url, "kubelet pods");

		if (r == 1)
			continue;
		if (r < 0) {
			backoff(pm);
			continue;
		}
		backoff_reset(pm);
		vw_httpc_sleep(pm->http, pm->poll_ns);
	}
}

static void *worker(void *arg)
{
	struct vw_podmeta *pm = arg;

	(void)token_load(pm);
	if (pm->mode == VW_PODMETA_APISERVER)
		run_apiserver(pm);
	else
		run_kubelet(pm);
	return NULL;
}

/* ---- lifecycle ---- */

static void pm_free(struct vw_podmeta *pm)
{
	if (!pm)
		return;
	vw_podtable_free(pm->table);
	vw_httpc_free(pm->http);
	if (pm->tok)
		json_tokener_free(pm->tok);
	auth_free(pm->auth);
	token_free(pm->token);
	free(pm->body.data);
	free(pm->base_url);
	free(pm->token_file);
	free(pm->ca_file);
	token_free(pm->static_token);
	free(pm->ca_pem);
	free(pm->cert_file);
	free(pm->key_file);
	free(pm->cert_pem);
	if (pm->key_pem) {
		explicit_bzero(pm->key_pem, strlen(pm->key_pem));
		free(pm->key_pem);
	}
	free(pm->node_name);
	pthread_mutex_destroy(&pm->lock);
	free(pm);
}

static bool empty(const char *s)
{
	return !s || !*s;
}

/* DNS-1123 subdomain, as node names are. */
static bool valid_node_name(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n <= 253 && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-.") == n;
}

static char *default_url(const struct vw_podmeta_opts *o)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	char *url = NULL;
	int r;

	if (o->mode == VW_PODMETA_KUBELET)
		r = asprintf(&url, "https://%s:%s", o->node_name, in_cluster.kubelet_port);
	else if (!empty(host) && !empty(port)) /* what client-go's in-cluster config uses */
		r = asprintf(&url, strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host,
			     port);
	else
		r = asprintf(&url, "%s", in_cluster.apiserver_url);
	return r < 0 ? NULL : url;
}

/* -EINVAL, saying which setting is wrong and what it should be. */
static int check_opts(const struct vw_podmeta_opts *o)
{
	if (!o || (o->mode != VW_PODMETA_APISERVER && o->mode != VW_PODMETA_KUBELET))
		return -EINVAL;
	if (!empty(o->node_name) && !valid_node_name(o->node_name)) {
		vw_error("podmeta: node name \"%.64s\" is not a Kubernetes node name (lower-case "
			 "letters, digits, '-' and '.'): set --kube.node-name", o->node_name);
		return -EINVAL;
	}
	/* Without a node the API server would stream every pod of the cluster (Kepler #2366). */
	if ((o->mode == VW_PODMETA_APISERVER || empty(o->url)) && empty(o->node_name)) {
		vw_error("podmeta: no node name: set --kube.node-name (or $NODE_NAME)");
		return -EINVAL;
	}
	if (!empty(o->url) && strncmp(o->url, "https://", 8) != 0 &&
	    !(o->allow_http && strncmp(o->url, "http://", 7) == 0)) {
		vw_error("podmeta: %.200s: only https:// URLs are used (the bearer token must not "
			 "travel in clear); for a kubelet with a self-signed certificate add "
			 "--kube.insecure-skip-tls-verify or --kube.ca-file", o->url);
		return -EINVAL;
	}
	if (o->backoff_min_ns && o->backoff_max_ns && o->backoff_min_ns > o->backoff_max_ns)
		return -EINVAL;
	return 0;
}

static int dup_opt(char **ret, const char *s)
{
	*ret = empty(s) ? NULL : strdup(s);
	return empty(s) || *ret ? 0 : -ENOMEM;
}

/* The client: https only unless allowed, the kubeconfig's or in-cluster TLS, keep-alive. */
static int http_new(struct vw_podmeta *pm)
{
	const struct vw_httpc_opts o = {
		.what = "podmeta", .allow_http = pm->allow_http,
		.timeout_ms = (long)(pm->timeout_ns / VW_NSEC_PER_MSEC),
		.connect_timeout_ms = (long)VW_MIN(pm->timeout_ns / VW_NSEC_PER_MSEC, 10000),
		.keepalive = true, .accept_encoding = true,
		.tls = { .ca_file = pm->ca_file, .ca_pem = pm->ca_pem, .cert_file = pm->cert_file,
			 .cert_pem = pm->cert_pem, .key_file = pm->key_file, .key_pem = pm->key_pem,
			 .insecure = pm->insecure },
		.cancelled = on_cancelled, .idle = on_idle, .userdata = pm,
	};
	char why[320];
	int r = vw_httpc_new(&o, &pm->http, why, sizeof(why));

	if (r < 0)
		vw_error("kube: pod metadata: %s", why);
	return r;
}

static int pm_init(struct vw_podmeta *pm, const struct vw_podmeta_opts *o)
{
	const char *ca = empty(o->ca_file) ? in_cluster.ca_file : o->ca_file;
	size_t n;

	pm->mode = o->mode;
	pm->insecure = o->insecure_skip_verify;
	pm->allow_http = o->allow_http;
	pm->poll_ns = o->poll_ns ?: DEFAULT_POLL_NS;
	pm->timeout_ns = o->timeout_ns ?: DEFAULT_TIMEOUT_NS;
	pm->grace_ns = o->grace_ns ?: DEFAULT_GRACE_NS;
	pm->backoff_min_ns = o->backoff_min_ns ?: DEFAULT_BACKOFF_MIN_NS;
	pm->backoff_max_ns = VW_MAX(o->backoff_max_ns ?: DEFAULT_BACKOFF_MAX_NS, pm->backoff_min_ns);
	pm->max_event = o->max_event_bytes ?: DEFAULT_MAX_EVENT;
	pm->rng = mono_ns() ^ (uintptr_t)pm ^ 0x9e3779b97f4a7c15ULL;
	/* jitter: up to a fifth of the delay */
	vw_backoff_init(&pm->backoff, pm->backoff_min_ns, pm->backoff_max_ns, 20, rng_next(pm));
	pm->list_from = LIST_CACHED;
	pm->base_url = empty(o->url) ? default_url(o) : strdup(o->url);
	/* A kubeconfig's inline token or client certificate replaces the in-cluster token. */
	bool fixed_auth = empty(o->token_file) &&
			  (!empty(o->token) || !empty(o->cert_file) || !empty(o->cert_pem));

	pm->token_file = fixed_auth ? NULL
				    : strdup(empty(o->token_file) ? in_cluster.token_file
								  : o->token_file);
	if (dup_opt(&pm->static_token, o->token) < 0 || dup_opt(&pm->ca_pem, o->ca_pem) < 0 ||
	    dup_opt(&pm->cert_file, o->cert_file) < 0 || dup_opt(&pm->key_file, o->key_file) < 0 ||
	    dup_opt(&pm->cert_pem, o->cert_pem) < 0 || dup_opt(&pm->key_pem, o->key_pem) < 0)
		return -ENOMEM;
	/* The in-cluster CA only when present (and no kubeconfig CA); otherwise the system store
	 * verifies. */
	if (!empty(o->ca_file) || (!pm->ca_pem && access(ca, R_OK) == 0))
		pm->ca_file = strdup(ca);
	pm->node_name = strdup(empty(o->node_name) ? "" : o->node_name);
	if (!pm->base_url || (!pm->token_file && !fixed_auth) || !pm->node_name || (!pm->ca_file && !empty(o->ca_file)))
		return -ENOMEM;
	n = strlen(pm->base_url);
	while (n > 0 && pm->base_url[n - 1] == '/')
		pm->base_url[--n] = '\0';
	pm->table = vw_podtable_new(pm->grace_ns);
	if (!pm->table)
		return -ENOMEM;
	pm->tok = vw_json_tokener_new(JSON_DEPTH);
	if (!pm->tok)
		return -ENOMEM;
	return http_new(pm);
}

struct vw_podmeta *vw_podmeta_new_offline(const struct vw_podmeta_opts *opts)
{
	struct vw_podmeta *pm;
	int r;

	r = check_opts(opts);
	if (r < 0) {
		errno = -r;
		return NULL;
	}
	pm = calloc(1, sizeof(*pm));
	if (!pm) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&pm->lock, NULL);
	r = pm_init(pm, opts);
	if (r < 0) {
		pm_free(pm);
		errno = -r;
		return NULL;
	}
	return pm;
}

int vw_podmeta_feed_list(struct vw_podmeta *pm, const char *body, size_t len)
{
	return list_apply_body(pm, body, len);
}

int vw_podmeta_feed_watch(struct vw_podmeta *pm, const char *data, size_t len)
{
	unsigned events = 0;
	int r = watch_feed(pm, data, len, pm->max_event, &events);

	if (r < 0)
		buf_reset(&pm->body); /* the transfer ends here: the next one starts afresh */
	return r;
}

struct vw_podmeta *vw_podmeta_start(const struct vw_podmeta_opts *opts)
{
	struct vw_podmeta *pm = vw_podmeta_new_offline(opts);
	int r;

	if (!pm)
		return NULL;
	if (pm->insecure)
		vw_warn("podmeta: TLS verification of %s disabled", pm->base_url);
	if (strncmp(pm->base_url, "http://", 7) == 0)
		vw_warn("podmeta: %s is plain HTTP: the token travels in clear", pm->base_url);
	/* Signals stay with the main thread. */
	r = vw_thread_create(&pm->thread, worker, pm);
	if (r < 0) {
		pm_free(pm);
		errno = -r;
		return NULL;
	}
	pm->started = true;
	vw_info("podmeta: %s mode, %s, node %s",
		pm->mode == VW_PODMETA_APISERVER ? "apiserver" : "kubelet", pm->base_url,
		*pm->node_name ? pm->node_name : "-");
	return pm;
}

void vw_podmeta_stop(struct vw_podmeta *pm)
{
	if (!pm)
		return;
	if (pm->started) {
		__atomic_store_n(&pm->stop, true, __ATOMIC_RELEASE);
		vw_httpc_wake(pm->http);
		pthread_join(pm->thread, NULL);
	}
	pm_free(pm);
}

/* ---- lookups ---- */

void vw_podmeta_table_stats(struct vw_podmeta *pm, struct vw_table_stat *pods,
			    struct vw_table_stat *ctrs)
{
	pthread_mutex_lock(&pm->lock);
	vw_podtable_table_stats(pm->table, pods, ctrs);
	pthread_mutex_unlock(&pm->lock);
}

int vw_podmeta_by_container(struct vw_podmeta *pm, const char *container_id,
			    struct vw_pod_info *ret, char *container_name, size_t namelen)
{
	int r;

	if (!pm || !container_id || !ret)
		return -EINVAL;
	pthread_mutex_lock(&pm->lock);
	r = vw_podtable_by_container(pm->table, container_id, mono_ns(), ret, container_name,
				     namelen);
	pthread_mutex_unlock(&pm->lock);
	return r;
}

int vw_podmeta_by_uid(struct vw_podmeta *pm, const char *uid, struct vw_pod_info *ret)
{
	int r;

	if (!pm || !uid || !ret)
		return -EINVAL;
	pthread_mutex_lock(&pm->lock);
	r = vw_podtable_by_uid(pm->table, uid, mono_ns(), ret);
	pthread_mutex_unlock(&pm->lock);
	return r;
}

bool vw_podmeta_synced(struct vw_podmeta *pm)
{
	bool synced;

	if (!pm)
		return false;
	pthread_mutex_lock(&pm->lock);
	synced = pm->synced;
	pthread_mutex_unlock(&pm->lock);
	return synced;
}

size_t vw_podmeta_count(struct vw_podmeta *pm)
{
	size_t n;

	if (!pm)
		return 0;
	pthread_mutex_lock(&pm->lock);
	n = vw_podtable_count(pm->table);
	pthread_mutex_unlock(&pm->lock);
	return n;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pod metadata against a fake Kubernetes API server and kubelet (libmicrohttpd on 127.0.0.1,
 * plain HTTP): list + watch with resume, 410 re-lists, 401 token re-read, hostile events, kubelet
 * polling, grace periods, prompt stop. Fixtures: tests/data/k8s/.
 */
#include "vw_test.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <json-c/json.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"
#include "log.h"
#include "macro.h"
#include "kubeconfig.h"
#include "tls_fixture.h"
#include "podmeta-priv.h"
#include "cgroup_path.h"

#define K8S VW_TEST_DATA "/k8s/"
#define NODE "node-a"

/* From tests/data/k8s/podlist.json, watch-events.jsonl, kubelet-pods.json. */
#define UID_APISERVER "3cae2e45-052c-4b11-80d3-4d7b2d2d3464"
#define HASH_APISERVER "a9ec91fd8f88efa3ec6d6ced50bb76a9"
#define UID_PROM "f6adb0af-0855-4bab-b25b-c853f18d0ce2"
#define UID_CHECKOUT "d0511cd2-29d2-4215-be0f-f77bc0609d99"
#define UID_REPORT "7c1e4a52-9d3b-4c8e-a1f0-2b6d9e5c3a71"
#define ID_APISERVER "8fa8c3a431ee4c139617ddd7a142a179a95edab4f317a427a31eceab4c9d5d01"
#define ID_PROM_INIT "e7508d369f979a7d59286d770ca27e19e31c0a9022eb952761889e067b899309"
#define ID_PROM_RELOADER "9d4ae5614b4093a2cec689e1b6fdd90a9cf7761a81536bed4ebbc0c869c3dc44"
#define ID_PROM_RELOADER_NEW "854265172b6550becf2fe63e6898fd5dd40eed7573a5ded7ea6bb40963907858"
#define ID_PROM_MAIN "fc31d96eb9a3b59533033e45a9136eb40cb6a0ad79ffe79b71f50e29abf00a40"
#define ID_PROM_MAIN_OLD "0f694be1d93b612329fd9bae763119a90f0f82bb863e4777e2df62841c483204"
#define ID_CHECKOUT_ISTIO "bfc15c4ee4466f0671a2e2a89a459b80a000094f6747fb5b8967913e812fb7cb"
#define ID_CHECKOUT_MAIN "a345febbc802776b73902d2f5a8b3d0208605dc4b734c28e851a1159f3a5b40b"
#define ID_CHECKOUT_DEBUG "a62eed6617e9c930b40ff26cc06e99e8c305e11b2c3ac4ff0c185806df0cd136"
#define ID_REPORT "845e91831319e89c4d656bdb80c278ac09a7230d61e5dfd2e1b1fbb436ac8917"
#define HASH_ETCD "842ea3c018e2245649b2c47863a3b2a7"
#define ID_ETCD_SETUP "b45be4f46abea9d62a19b768df68bc31e127667b8a0b09cdf330ca43243a7e0f"
#define ID_ETCD_MAIN "dda2d9b2dc0d471eb25b55d0a005906795a4af7cddde06fa3d468c5616e3b993"
#define ID_DNS "dd75a9d6fb309c4399fe425cd5f90ff95eba135d6924fb91766ee5d3726b168a"

#define WAIT_UNTIL(cond, ms)                                                                       \
	({                                                                                         \
		bool _ok = (cond);                                                                 \
		for (int _i = 0; !_ok && _i < (ms) / 5; _i++) {                                    \
			usleep(5000);                                                              \
			_ok = (cond);                                                              \
		}                                                                                  \
		_ok;                                                                               \
	})

/* ---- the fake server ---- */

struct req {
	char path[64];
	bool watch, bookmarks, has_rv;
	char rv[64];
	char field[96];
	char auth[160];
	bool client_verified; /* a TLS client certificate the fake's CA signed */
};

enum end {
	END_EOF,   /* clean end of a chunked body */
	END_BREAK, /* connection dropped mid-body */
	END_STALL, /* nothing more until the server stops */
};

struct reply {
	unsigned status;
	char *body; /* malloc'd; NULL = empty */
	bool stream;
	enum end end;
};

struct fake;
/* nth: this request's index among lists (non-watch) or among watches. */
typedef void (*route_fn)(struct fake *f, const struct req *r, size_t nth, struct reply *out);

struct fake {
	struct MHD_Daemon *d;
	unsigned port;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stopping;
	struct req reqs[128];
	size_t nreq, nlist, nwatch;
	route_fn route;
	const char *token_path; /* the 401 test rotates it */
	char url[64];
};

struct stream {
	struct fake *f;
	char *text;
	size_t len;
	enum end end;
};

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct stream *s = cls;

	if (pos < s->len) {
		size_t n = VW_MIN(max, s->len - (size_t)pos);

		memcpy(buf, s->text + pos, n);
		return (ssize_t)n;
	}
	if (s->end == END_EOF)
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (s->end == END_STALL) {
		pthread_mutex_lock(&s->f->lock);
		while (!s->f->stopping)
			pthread_cond_wait(&s->f->cond, &s->f->lock);
		pthread_mutex_unlock(&s->f->lock);
	}
	return MHD_CONTENT_READER_END_WITH_ERROR;
}

static void stream_free(void *cls)
{
	struct stream *s = cls;

	free(s->text);
	free(s);
}

static void copy_arg(struct MHD_Connection *c, enum MHD_ValueKind kind, const char *key, char *dst,
		     size_t size, bool *present)
{
	const char *v = MHD_lookup_connection_value(c, kind, key);

	snprintf(dst, size, "%s", v ? v : "");
	if (present)
		*present = v != NULL;
}

/* Over TLS: the client's certificate, verified against the trust list MHD was given. */
static bool client_verified(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	unsigned n = 0, status = 0;

	if (!ci || !ci->tls_session || !gnutls_certificate_get_peers(ci->tls_session, &n) || !n)
		return false;
	return gnutls_certificate_verify_peers2(ci->tls_session, &status) == 0 && status == 0;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct fake *f = cls;
	struct req r = { 0 };
	struct reply rep = { .status = 200 };
	struct MHD_Response *resp;
	enum MHD_Result ret;
	char flag[16];
	size_t nth;

	(void)method, (void)version, (void)upload, (void)upload_size, (void)con_cls;
	snprintf(r.path, sizeof(r.path), "%s", url);
	copy_arg(c, MHD_GET_ARGUMENT_KIND, "watch", flag, sizeof(flag), NULL);
	r.watch = strcmp(flag, "1") == 0 || strcmp(flag, "true") == 0;
	copy_arg(c, MHD_GET_ARGUMENT_KIND, "allowWatchBookmarks", flag, sizeof(flag), NULL);
	r.bookmarks = strcmp(flag, "true") == 0;
	copy_arg(c, MHD_GET_ARGUMENT_KIND, "resourceVersion", r.rv, sizeof(r.rv), &r.has_rv);
	copy_arg(c, MHD_GET_ARGUMENT_KIND, "fieldSelector", r.field, sizeof(r.field), NULL);
	copy_arg(c, MHD_HEADER_KIND, "Authorization", r.auth, sizeof(r.auth), NULL);
	r.client_verified = client_verified(c);

	pthread_mutex_lock(&f->lock);
	if (f->nreq < ARRAY_SIZE(f->reqs))
		f->reqs[f->nreq] = r;
	f->nreq++;
	nth = r.watch ? f->nwatch++ : f->nlist++;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);

	f->route(f, &r, nth, &rep);
	if (rep.stream) {
		struct stream *s = calloc(1, sizeof(*s));

		assert_non_null(s);
		*s = (struct stream){ f, rep.body, rep.body ? strlen(rep.body) : 0, rep.end };
		resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_read, s,
							 stream_free);
	} else {
		resp = MHD_create_response_from_buffer(rep.body ? strlen(rep.body) : 0,
						       rep.body ? rep.body : (char *)"",
						       rep.body ? MHD_RESPMEM_MUST_FREE
								: MHD_RESPMEM_PERSISTENT);
	}
	assert_non_null(resp);
	MHD_add_response_header(resp, "Content-Type", "application/json");
	ret = MHD_queue_response(c, rep.status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static struct fake *fake_start_tls(route_fn route, const char *key, const char *cert,
				   const char *trust);

static struct fake *fake_start(route_fn route)
{
	return fake_start_tls(route, NULL, NULL, NULL);
}

/* With key and cert (PEM text): HTTPS, asking for a client certificate trust signed. */
static struct fake *fake_start_tls(route_fn route, const char *key, const char *cert,
				   const char *trust)
{
	struct fake *f = calloc(1, sizeof(*f));
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = 0 };
	const union MHD_DaemonInfo *info;

	assert_non_null(f);
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->cond, NULL);
	f->route = route;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (key)
		f->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD |
						MHD_USE_THREAD_PER_CONNECTION | MHD_USE_TLS,
					0, NULL, NULL, on_request, f, MHD_OPTION_SOCK_ADDR, &sin,
					MHD_OPTION_HTTPS_MEM_KEY, key, MHD_OPTION_HTTPS_MEM_CERT,
					cert, MHD_OPTION_HTTPS_MEM_TRUST, trust, MHD_OPTION_END);
	else
		f->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD |
						MHD_USE_THREAD_PER_CONNECTION,
					0, NULL, NULL, on_request, f, MHD_OPTION_SOCK_ADDR, &sin,
					MHD_OPTION_END);
	assert_non_null(f->d);
	info = MHD_get_daemon_info(f->d, MHD_DAEMON_INFO_BIND_PORT);
	assert_non_null(info);
	f->port = info->port;
	snprintf(f->url, sizeof(f->url), "%s://127.0.0.1:%u", key ? "https" : "http", f->port);
	return f;
}

static void fake_stop(struct fake *f)
{
	pthread_mutex_lock(&f->lock);
	f->stopping = true;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
	MHD_stop_daemon(f->d);
	pthread_cond_destroy(&f->cond);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

static size_t fake_count(struct fake *f, bool watch)
{
	size_t n;

	pthread_mutex_lock(&f->lock);
	n = watch ? f->nwatch : f->nlist;
	pthread_mutex_unlock(&f->lock);
	return n;
}

static struct req fake_req(struct fake *f, size_t i)
{
	struct req r;

	pthread_mutex_lock(&f->lock);
	assert_true(i < f->nreq && i < ARRAY_SIZE(f->reqs));
	r = f->reqs[i];
	pthread_mutex_unlock(&f->lock);
	return r;
}

/* ---- fixtures and replies ---- */

static char *slurp(const char *name)
{
	char path[512];
	char *s;

	snprintf(path, sizeof(path), K8S "%s", name);
	s = vw_fixture_slurp(path, NULL);
	if (!s)
		fail_msg("cannot read %s", path);
	return s;
}

/* The fixture PodList with its list resourceVersion replaced. */
static char *podlist_rv(const char *rv)
{
	char *s = slurp("podlist.json"), *out;
	char *at = strstr(s, "\"resourceVersion\": \"184201\"");

	assert_non_null(at);
	assert_true(asprintf(&out, "%.*s\"resourceVersion\": \"%s\"%s", (int)(at - s), s, rv,
			     at + strlen("\"resourceVersion\": \"184201\"")) > 0);
	free(s);
	return out;
}

/* Line n (0-based) of watch-events.jsonl, with its newline. */
static char *event_line(int n)
{
	char *s = slurp("watch-events.jsonl"), *p = s, *out;

	for (int i = 0; i < n; i++) {
		p = strchr(p, '\n');
		assert_non_null(p);
		p++;
	}
	out = strndup(p, (size_t)(strchr(p, '\n') - p + 1));
	free(s);
	return out;
}

static void reply_file(struct reply *out, unsigned status, const char *name)
{
	out->status = status;
	out->body = slurp(name);
}

static void reply_stream(struct reply *out, char *text, enum end end)
{
	out->stream = true;
	out->body = text;
	out->end = end;
}

static void reply_stall(struct reply *out)
{
	reply_stream(out, NULL, END_STALL);
}

/* The usual script: lists get podlist.json, watches after the first stall. false: first watch. */
static bool route_usual(const struct req *r, size_t nth, struct reply *out)
{
	if (!r->watch)
		reply_file(out, 200, "podlist.json");
	else if (nth > 0)
		reply_stall(out);
	return !r->watch || nth > 0;
}

/* ---- podmeta setup ---- */

struct env {
	char *dir;
	char token[600];
	struct fake *f;
	struct vw_podmeta *pm;
};

static void env_token(struct env *e, const char *token)
{
	assert_int_equal(vw_fixture_write(e->dir, "token", token, 0600), 0);
}

static struct vw_podmeta_opts env_opts(struct env *e, route_fn route, const char *token)
{
	e->dir = vw_fixture_mkdtemp("podmeta");
	assert_non_null(e->dir);
	snprintf(e->token, sizeof(e->token), "%s/token", e->dir);
	env_token(e, token);
	e->f = fake_start(route);
	e->f->token_path = e->token;
	return (struct vw_podmeta_opts){
		.mode = VW_PODMETA_APISERVER,
		.url = e->f->url,
		.token_file = e->token,
		.node_name = NODE,
		.allow_http = true,
		.backoff_min_ns = 10 * VW_NSEC_PER_MSEC,
		.backoff_max_ns = 100 * VW_NSEC_PER_MSEC,
	};
}

/* env_opts() for the kubelet's /pods (token "kubelet-tok"), polled every 50 ms. */
static struct vw_podmeta_opts kubelet_opts(struct env *e, route_fn route)
{
	struct vw_podmeta_opts o = env_opts(e, route, "kubelet-tok");

	o.mode = VW_PODMETA_KUBELET;
	o.node_name = NULL;
	o.poll_ns = 50 * VW_NSEC_PER_MSEC;
	return o;
}

static void env_start(struct env *e, const struct vw_podmeta_opts *o)
{
	e->pm = vw_podmeta_start(o);
	assert_non_null(e->pm);
}

static double elapsed_s(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* Stop podmeta (timed: it must not wait for the stalled watch), then the server. */
static double env_stop(struct env *e)
{
	struct timespec t0;
	double dt;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	vw_podmeta_stop(e->pm);
	dt = elapsed_s(&t0);
	fake_stop(e->f);
	vw_fixture_rm(e->dir);
	return dt;
}

static void expect_pod(struct vw_podmeta *pm, const char *cid, const char *uid, const char *ns,
		       const char *name, uint64_t millis, const char *container)
{
	struct vw_pod_info info;
	char cname[64];

	if (vw_podmeta_by_container(pm, cid, &info, cname, sizeof(cname)) != 0)
		fail_msg("container %s (%s) not found", cid, container);
	assert_string_equal(info.uid, uid);
	assert_string_equal(info.namespace_, ns);
	assert_string_equal(info.name, name);
	assert_int_equal(info.cpu_request_millis, millis);
	assert_string_equal(cname, container);
}

/* ---- list, watch, break, resume ---- */

static void route_resume(struct fake *f, const struct req *r, size_t nth, struct reply *out)
{
	char *events, *text;

	(void)f;
	if (route_usual(r, nth, out))
		return;
	/* Every event, then half an event and a dropped connection. */
	events = slurp("watch-events.jsonl");
	assert_true(asprintf(&text, "%s{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\",\"meta",
			     events) > 0);
	free(events);
	reply_stream(out, text, END_BREAK);
}

/* Every container ID the list and watch of test_list_watch_resume leave, and its pod. */
static const struct {
	const char *cid, *uid, *ns, *name;
	uint64_t millis;
	const char *container;
} resumed[] = {
	{ ID_APISERVER, UID_APISERVER, "kube-system", "kube-apiserver-node-a", 250,
	  "kube-apiserver" },
	/* Init containers count only as sidecars: 1 + 10m; the plain init container's 0.1 not. */
	{ ID_PROM_MAIN, UID_PROM, "monitoring", "prometheus-k8s-0", 1010, "prometheus" },
	/* lastState.terminated: the OOM-killed run */
	{ ID_PROM_MAIN_OLD, UID_PROM, "monitoring", "prometheus-k8s-0", 1010, "prometheus" },
	{ ID_PROM_INIT, UID_PROM, "monitoring", "prometheus-k8s-0", 1010, "init-config-reloader" },
	/* MODIFIED: config-reloader restarted; both its IDs resolve. */
	{ ID_PROM_RELOADER_NEW, UID_PROM, "monitoring", "prometheus-k8s-0", 1010,
	  "config-reloader" },
	{ ID_PROM_RELOADER, UID_PROM, "monitoring", "prometheus-k8s-0", 1010, "config-reloader" },
	{ ID_REPORT, UID_REPORT, "batch", "report-28391520-qz8wm", 2000, "report" },
	/* DELETED, but within the grace period: cri-o IDs of container, sidecar, ephemeral. */
	{ ID_CHECKOUT_MAIN, UID_CHECKOUT, "shop", "checkout-7f9c6b8d4-x2m8q", 1550, "checkout" },
	{ ID_CHECKOUT_ISTIO, UID_CHECKOUT, "shop", "checkout-7f9c6b8d4-x2m8q", 1550,
	  "istio-proxy" },
	{ ID_CHECKOUT_DEBUG, UID_CHECKOUT, "shop", "checkout-7f9c6b8d4-x2m8q", 1550,
	  "debugger-7x2kq" },
};

static void test_list_watch_resume(void **state)
{
	struct env e = { 0 };
	struct vw_podmeta_opts o = env_opts(&e, route_resume, "tok-1\n");
	struct vw_pod_info info;
	struct req r;
	char cname[64];

	(void)state;
	assert_false(vw_podmeta_synced(NULL));
	env_start(&e, &o);
	assert_true(WAIT_UNTIL(fake_count(e.f, true) >= 2, 5000));

	/* The list: this node only, from the watch cache, with the token. */
	r = fake_req(e.f, 0);
	assert_string_equal(r.path, "/api/v1/pods");
	assert_false(r.watch);
	assert_string_equal(r.field, "spec.nodeName=" NODE);
	assert_true(r.has_rv);
	assert_string_equal(r.rv, "0");
	assert_string_equal(r.auth, "Bearer tok-1");
	/* The watch starts at the list's resourceVersion, with bookmarks. */
	r = fake_req(e.f, 1);
	assert_true(r.watch);
	assert_true(r.bookmarks);
	assert_string_equal(r.field, "spec.nodeName=" NODE);
	assert_string_equal(r.rv, "184201");
	/* After the break it resumes from the bookmark, the last complete event. */
	r = fake_req(e.f, 2);
	assert_true(r.watch);
	assert_string_equal(r.rv, "184300");
	assert_int_equal(fake_count(e.f, false), 1); /* no re-list */

	assert_true(vw_podmeta_synced(e.pm));
	/* apiserver, prometheus, report (ADDED); checkout was DELETED. */
	assert_int_equal(vw_podmeta_count(e.pm), 3);
	for (size_t i = 0; i < ARRAY_SIZE(resumed); i++)
		expect_pod(e.pm, resumed[i].cid, resumed[i].uid, resumed[i].ns, resumed[i].name,
			   resumed[i].millis, resumed[i].container);
	assert_int_equal(vw_podmeta_by_uid(e.pm, UID_CHECKOUT, &info), 0);
	/* By UID, and a mirror pod by the config hash its cgroups are named after. */
	assert_int_equal(vw_podmeta_by_uid(e.pm, UID_PROM, &info), 0);
	assert_string_equal(info.name, "prometheus-k8s-0");
	assert_int_equal(vw_podmeta_by_uid(e.pm, HASH_APISERVER, &info), 0);
	assert_string_equal(info.uid, UID_APISERVER);
	/* Unknown, and the partial event never applied. */
	assert_int_equal(vw_podmeta_by_container(e.pm, ID_ETCD_MAIN, &info, cname, sizeof(cname)),
			 -ENOENT);
	assert_int_equal(vw_podmeta_by_uid(e.pm, "00000000-0000-0000-0000-000000000000", &info),
			 -ENOENT);
	assert_int_equal(vw_podmeta_by_container(e.pm, ID_APISERVER, &info, NULL, 0), 0);
	assert_int_equal(vw_podmeta_by_container(e.pm, NULL, &info, NULL, 0), -EINVAL);
	assert_int_equal(vw_podmeta_by_uid(NULL, UID_PROM, &info), -EINVAL);

	/* The third watch stalls: stop must not wait for it. */
	assert_true(env_stop(&e) < 1.0);
}

/* ---- grace period after DELETED ---- */

static void route_delete(struct fake *f, const struct req *r, size_t nth, struct reply *out)
{
	(void)f;
	if (!route_usual(r, nth, out))
		reply_stream(out, event_line(2), END_STALL); /* DELETED checkout */
}

static void test_grace_expiry(void **state)
{
	struct env e = { 0 };
	struct vw_podmeta_opts o = env_opts(&e, route_delete, "tok");
	struct vw_pod_info info;

	(void)state;
	o.grace_ns = 300 * VW_NSEC_PER_MSEC;
	env_start(&e, &o);
	assert_true(WAIT_UNTIL(vw_podmeta_count(e.pm) == 2, 5000));
	assert_true(WAIT_UNTIL(vw_podmeta_by_uid(e.pm, UID_CHECKOUT, &info) == -ENOENT, 5000));
	assert_int_equal(vw_podmeta_by_container(e.pm, ID_CHECKOUT_MAIN, &info, NULL, 0), -ENOENT);
	assert_int_equal(vw_podmeta_by_container(e.pm, ID_CHECKOUT_DEBUG, &info, NULL, 0), -ENOENT);
	assert_int_equal(vw_podmeta_by_container(e.pm, ID_PROM_MAIN, &info, NULL, 0), 0);
	assert_true(env_stop(&e) < 1.0);
}

/* ---- 410 Gone: as an ERROR event and as an HTTP status ---- */

static void route_gone(struct fake *f, const struct req *r, size_t nth, struct reply *out)
{
	static const char *const list_rv[] = { "184201", "185000", "185100" };

	(void)f;
	if (!r->watch) {
		out->body = podlist_rv(list_rv[VW_MIN(nth, (size_t)2)]);
	} else if (nth == 0) {
		reply_stream(out, slurp("watch-error-410.jsonl"), END_EOF);
	} else if (nth == 1) {
		reply_file(out, 410, "status-410.json");
	} else {
		reply_stall(out);
	}
}

static void test_gone_relists(void **state)
{
	struct env e = { 0 };
	struct vw_podmeta_opts o = env_opts(&e, route_gone, "tok");
	static const struct {
		bool watch, has_rv;
		const char *rv;
	} want[] = {
		{ false, true, "0" },	   /* first list: cached */
		{ true, true, "184201" },  /* ERROR 410 event */
		{ false, false, "" },	   /* consistent re-list */
		{ true, true, "185000" },  /* HTTP 410 */
		{ false, false, "" },	   /* consistent re-list */
		{ true, true, "185100" },  /* stalls */
	};

	(void)state;
	env_start(&e, &o);
	assert_true(WAIT_UNTIL(fake_count(e.f, true) >= 3, 5000));
	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		struct req r = fake_req(e.f, i);

		if (r.watch != want[i].watch || r.has_rv != want[i].has_rv ||
		    strcmp(r.rv, want[i].rv) != 0)
			fail_msg("request %zu: watch %d rv %d '%s'", i, r.watch, r.has_rv, r.rv);
	}
	assert_int_equal(fake_count(e.f, false), 3);
	assert_int_equal(vw_podmeta_count(e.pm), 3);
	assert_true(env_stop(&e) < 1.0);
}

/* ---- 401: the token file rotated ---- */

static void route_401(struct fake *f, const struct req *r, size_t nth, struct reply *out)
{
	if (strcmp(r->auth, "Bearer tok-new") != 0) {
		/* The kubelet rotated the projected token just before we used the old one. */
		assert_int_equal(vw_fixture_write("/", f->token_path + 1, "tok-new\n", 0600), 0);
		reply_file(out, 401, "status-401.json");
	} else if (!route_usual(r, nth, out)) {
		reply_stall(out); /* the first watch too */
	}
}

static void test_unauthorized_rereads_token(void **state)
{
	struct env e = { 0 };
	struct vw_podmeta_opts o = env_opts(&e, route_401, "tok-old\n");
	struct req r;

	(void)state;
	o.backoff_min_ns = o.backoff_max_ns = 10 * VW_NSEC_PER_SEC; /* a retry must not wait */
	env_start(&e, &o);
	assert_true(WAIT_UNTIL(fake_count(e.f, true) >= 1, 3000));
	r = fake_req(e.f, 0);
	assert_string_equal(r.auth, "Bearer tok-old");
	r = fake_req(e.f, 1);
	assert_false(r.watch);
	assert_string_equal(r.auth, "Bearer tok-new");
	r = fake_req(e.f, 2);
	assert_true(r.watch);
	assert_string_equal(r.auth, "Bearer tok-new");
	assert_true(vw_podmeta_synced(e.pm));
	assert_int_equal(vw_podmeta_count(e.pm), 3);
	assert_true(env_stop(&e) < 1.0);
}

/* ---- the token file a FIFO ---- */

static void route_listed(struct fake *f, const struct req *r, size_t nth, struct reply *out)
{
	(void)f;
	if (!route_usual(r, nth, out))
		reply_stall(out);
}

/* After 3 s, a writer comes and goes: the old code's open() returns, its read finds nothing. */
static void *fifo_release(void *arg)
{
	int fd;

	sleep(3);
	fd = open(arg, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0)
		close(fd);
	return NULL;
}

/*
 * The token file replaced by a FIFO (whoever can write the secret's path): refused (a warning,
 * rate-limited), never waited on. The old code's pod thread blocked in open() until a writer
 * came, and the daemon's stop with it (here: until the test's own writer, 3 s later).
 */
static void test_token_fifo(void **state)
{
	struct env e = { 0 };
	struct vw_podmeta_opts o = env_opts(&e, route_listed, "tok\n");
	struct timespec t0;
	pthread_t th;

	(void)state;
	assert_int_equal(unlink(e.token), 0);
	assert_int_equal(mkfifo(e.token, 0600), 0);
	assert_int_equal(pthread_create(&th, NULL, fifo_release, e.token), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	env_start(&e, &o);
	usleep(300000); /* the pod thread at work */
	(void)env_stop(&e);
	assert_true(elapsed_s(&t0) < 2.0);
	assert_int_equal(pthread_join(th, NULL), 0);
}

/* ---- a kubeconfig's user: its token, read from the file, no token file ---- */

static void route_kubeconfig(struct fake *f, const struct req *r, size_t nth, struct reply *out)
{
	(void)f;
	if (strcmp(r->auth, "Bearer kc-token") != 0)
		reply_file(out, 401, "status-401.json");
	else if (!route_usual(r, nth, out))
		reply_stall(out);
}

static void test_kubeconfig_token(void **state)
{
	struct env e = { 0 };
	struct vw_podmeta_opts o = env_opts(&e, route_kubeconfig, "not-this-one\n");
	_cleanup_free_ char *text = NULL;
	char path[1024], err[512] = "";
	struct vw_kubeconfig k;

	(void)state;
	/* kubectl's shape: the server is the fake (plain HTTP: tests only), a user with a token. */
	assert_true(asprintf(&text,
			     "apiVersion: v1\nkind: Config\ncurrent-context: dev\n"
			     "clusters:\n- name: other\n  cluster: {server: https://10.9.9.9:6443}\n"
			     "- name: fake\n  cluster:\n    server: %s\n"
			     "contexts:\n- name: dev\n  context: {cluster: fake, user: u}\n"
			     "users:\n- name: u\n  user:\n    token: kc-token\n",
			     e.f->url) > 0);
	assert_int_equal(vw_fixture_write(e.dir, "kubeconfig", text, 0600), 0);
	snprintf(path, sizeof(path), "%s/kubeconfig", e.dir);
	if (vw_kubeconfig_load(path, &k, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_string_equal(k.server, e.f->url);
	o.url = k.server;
	o.token_file = NULL; /* as the daemon does: the kubeconfig's token replaces it */
	o.token = k.token;
	env_start(&e, &o);
	vw_kubeconfig_free(&k);
	assert_true(WAIT_UNTIL(vw_podmeta_synced(e.pm), 3000));
	assert_string_equal(fake_req(e.f, 0).auth, "Bearer kc-token");
	assert_int_equal(vw_podmeta_count(e.pm), 3);
	assert_true(env_stop(&e) < 1.0);
}

/* ---- a kubeconfig's client certificate and CA, as kind writes them (base64 PEM data) ---- */

static void route_client_cert(struct fake *f, const struct req *r, size_t nth, struct reply *out)
{
	(void)f;
	if (!r->client_verified || r->auth[0])
		reply_file(out, 401, "status-401.json");
	else if (!route_usual(r, nth, out))
		reply_stall(out);
}

static char *b64_file(const char *path)
{
	char cmd[1200];
	FILE *p;
	char *out = calloc(1, 65536);
	size_t n;

	snprintf(cmd, sizeof(cmd), "base64 -w0 '%s'", path);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_non_null(out);
	n = fread(out, 1, 65535, p);
	out[n] = '\0';
	assert_int_equal(pclose(p), 0);
	return out;
}

static void test_kubeconfig_client_certificate(void **state)
{
	struct tls_fixture tf;
	struct env e = { 0 };
	struct vw_podmeta_opts o;
	struct vw_kubeconfig k;
	char buf[1024], path[1024], err[512] = "";
	_cleanup_free_ char *key = NULL, *cert = NULL, *ca = NULL, *text = NULL;
	_cleanup_free_ char *ca64 = NULL, *crt64 = NULL, *key64 = NULL;

	(void)state;
	if (tls_fixture_init(&tf) < 0) {
		if (getenv("CI") && strcmp(getenv("CI"), "true") == 0)
			fail_msg("openssl is needed for the TLS fixture");
		skip();
	}
	key = vw_fixture_slurp(tls_fixture_path(&tf, "server.key", buf, sizeof(buf)), NULL);
	cert = vw_fixture_slurp(tls_fixture_path(&tf, "server.crt", buf, sizeof(buf)), NULL);
	ca = vw_fixture_slurp(tls_fixture_path(&tf, "ca.crt", buf, sizeof(buf)), NULL);
	assert_true(key && cert && ca);
	ca64 = b64_file(tls_fixture_path(&tf, "ca.crt", buf, sizeof(buf)));
	crt64 = b64_file(tls_fixture_path(&tf, "client.crt", buf, sizeof(buf)));
	key64 = b64_file(tls_fixture_path(&tf, "client.key", buf, sizeof(buf)));
	o = env_opts(&e, route_client_cert, "unused\n");
	fake_stop(e.f); /* the plain one: this test's server is HTTPS */
	e.f = fake_start_tls(route_client_cert, key, cert, ca);
	assert_true(asprintf(&text,
			     "apiVersion: v1\nkind: Config\ncurrent-context: kind-kind\n"
			     "clusters:\n- cluster:\n    certificate-authority-data: %s\n"
			     "    server: %s\n  name: kind-kind\n"
			     "contexts:\n- context:\n    cluster: kind-kind\n    user: kind-kind\n"
			     "  name: kind-kind\n"
			     "users:\n- name: kind-kind\n  user:\n"
			     "    client-certificate-data: %s\n    client-key-data: %s\n",
			     ca64, e.f->url, crt64, key64) > 0);
	assert_int_equal(vw_fixture_write(e.dir, "kubeconfig", text, 0600), 0);
	snprintf(path, sizeof(path), "%s/kubeconfig", e.dir);
	if (vw_kubeconfig_load(path, &k, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	/* As the daemon hands it over: https, the CA and the certificate from the file. */
	o.url = k.server;
	o.allow_http = false;
	o.token_file = NULL;
	o.ca_pem = k.ca_pem;
	o.cert_pem = k.cert_pem;
	o.key_pem = k.key_pem;
	env_start(&e, &o);
	vw_kubeconfig_free(&k);
	if (!WAIT_UNTIL(vw_podmeta_synced(e.pm), 5000))
		fail_msg("not synced over TLS with the client certificate (%zu requests)",
			 fake_count(e.f, false));
	assert_true(fake_req(e.f, 0).client_verified);
	assert_string_equal(fake_req(e.f, 0).auth, "");
	assert_int_equal(vw_podmeta_count(e.pm), 3);
	assert_true(env_stop(&e) < 1.0);
	tls_fixture_fini(&tf);
}

/* ---- garbage and oversized events ---- */

#define UID_GARBAGE "0b9e6f1c-2d3a-4b5c-8d7e-6f5a4b3c2d1e"
#define UID_BADCTR "1c0f7a2d-3e4b-4c6d-9e8f-7a6b5c4d3e2f"

static char *garbage_stream(void)
{
	static const char *const lines[] = {
		"not json at all",
		"{\"type\":\"ADDED\",\"object\":[]}",
		"{\"type\":\"ADDED\"}",
		"[1,2,3]",
		"{\"type\":7,\"object\":{}}",
		"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"uid\":123,\"name\":\"x\"}}}",
		"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"uid\":\"../../etc/passwd\","
		"\"name\":\"x\",\"namespace\":\"y\"}}}",
		"{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{}},\"x\":NaN}",
		"{\"type\":\"ADDED\",\"object\":{}} trailing",
		"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"\xff\xfe\"}}}",
		"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"uid\":\"" UID_GARBAGE
		"\",\"name\":\"a\\u0000b\",\"namespace\":\"x\"}}}",
		"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"uid\":\"" UID_GARBAGE "\","
		"\"name\":\"x\",\"namespace\":\"" /* 64 chars: one too many */
		"nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn\"}}}",
		"{\"type\":\"SOMETHING\",\"object\":{}}",
		"",
		"   \r",
		/* Valid pods with bad parts: a CPU request that is no quantity, a short ID. */
		"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"uid\":\"" UID_GARBAGE "\","
		"\"name\":\"cpu-garbage\",\"namespace\":\"x\",\"resourceVersion\":\"184210\"},"
		"\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":"
		"{\"cpu\":\"lots\"}}},{\"name\":\"d\",\"resources\":{\"requests\":{\"cpu\":5}}}]}}}",
		"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"uid\":\"" UID_BADCTR "\","
		"\"name\":\"bad-ctr\",\"namespace\":\"x\",\"resourceVersion\":\"184220\"},"
		"\"status\":{\"containerStatuses\":[{\"name\":\"c\",\"containerID\":"
		"\"containerd://abc\"},{\"name\":7,\"containerID\":\"containerd://" ID_DNS "\"}]}}}",
	};
	char *deep, *big, *text = NULL, *valid = event_line(0); /* ADDED report, rv 184230 */
	size_t n = 0;
	FILE *f = open_memstream(&text, &n);

	assert_non_null(f);
	for (size_t i = 0; i < ARRAY_SIZE(lines); i++)
		fprintf(f, "%s\n", lines[i]);
	/* 200 levels deep: over the tokener's limit. */
	deep = calloc(1, 512);
	assert_non_null(deep);
	memset(deep, '[', 200);
	memset(deep + 200, ']', 200);
	fprintf(f, "{\"type\":\"ADDED\",\"object\":{\"a\":%s}}\n", deep);
	free(deep);
	fputs(valid, f);
	free(valid);
	/* 20 KiB: over max_event_bytes, so the watch is dropped and the pods re-listed. */
	big = calloc(1, 20001);
	assert_non_null(big);
	memset(big, 'A', 20000);
	fprintf(f, "{\"type\":\"ADDED\",\"object\":{\"pad\":\"%s\"}}\n", big);
	free(big);
	/* Never read: the client hung up at the oversized event. */
	fputs("{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"999999\"}}}\n",
	      f);
	fclose(f);
	return text;
}

static void route_garbage(struct fake *f, const struct req *r, size_t nth, struct reply *out)
{
	(void)f;
	if (!route_usual(r, nth, out))
		reply_stream(out, garbage_stream(), END_EOF);
}

static void test_hostile_events(void **state)
{
	struct env e = { 0 };
	struct vw_podmeta_opts o = env_opts(&e, route_garbage, "tok");
	struct vw_pod_info info;
	struct req r;

	(void)state;
	o.max_event_bytes = 16 << 10;
	env_start(&e, &o);
	assert_true(WAIT_UNTIL(fake_count(e.f, true) >= 2, 5000));
	/* list, watch, re-list after the oversized event from the last good resourceVersion. */
	assert_int_equal(fake_count(e.f, false), 2);
	r = fake_req(e.f, 2);
	assert_false(r.watch);
	assert_true(r.has_rv);
	assert_string_equal(r.rv, "184230");
	r = fake_req(e.f, 3);
	assert_true(r.watch);
	assert_string_equal(r.rv, "184201"); /* the re-list's own resourceVersion */

	/* The good events were applied (and are in grace now: the re-list lacks them). */
	assert_int_equal(vw_podmeta_by_container(e.pm, ID_REPORT, &info, NULL, 0), 0);
	assert_string_equal(info.name, "report-28391520-qz8wm");
	assert_int_equal(vw_podmeta_by_uid(e.pm, UID_GARBAGE, &info), 0);
	assert_string_equal(info.name, "cpu-garbage");
	assert_int_equal(info.cpu_request_millis, 0);
	assert_int_equal(vw_podmeta_by_uid(e.pm, UID_BADCTR, &info), 0);
	assert_int_equal(vw_podmeta_by_container(e.pm, ID_DNS, &info, NULL, 0), -ENOENT);
	assert_int_equal(vw_podmeta_by_uid(e.pm, "../../etc/passwd", &info), -ENOENT);
	assert_int_equal(vw_podmeta_count(e.pm), 3);
	assert_true(env_stop(&e) < 1.0);
}

/* ---- kubelet /pods ---- */

/* kubelet-pods.json without its second pod (dns-default). */
static char *kubelet_pods_shrunk(void)
{
	char *s = slurp("kubelet-pods.json"), *out;
	struct json_object *o = json_tokener_parse(s), *items;

	assert_non_null(o);
	assert_true(json_object_object_get_ex(o, "items", &items));
	assert_int_equal(json_object_array_del_idx(items, 1, 1), 0);
	out = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	free(s);
	return out;
}

static void route_kubelet(struct fake *f, const struct req *r, size_t nth, struct reply *out)
{
	(void)f;
	if (strcmp(r->path, "/pods") != 0 || r->watch) {
		out->status = 404;
	} else if (nth == 0) {
		reply_file(out, 200, "kubelet-pods.json");
	} else if (nth == 1) {
		out->status = 500;
		out->body = strdup("boom");
	} else {
		out->body = kubelet_pods_shrunk();
	}
}

/*
 * kubelet-pods.json with 200,000 tiny items ahead of its pods (2 MiB of `{"x":1},`: millions of
 * json-c objects had the list been parsed whole) and a number among them: the pods are found,
 * the rest ignored. Then the same list cut short: not a PodList, the table kept.
 */
static char *kubelet_pods_padded(bool truncated)
{
	_cleanup_free_ char *s = slurp("kubelet-pods.json");
	const char *items = strstr(s, "\"items\"");
	const char *open = items ? strchr(items, '[') : NULL;
	size_t head, pad = 200000 * 8, len = strlen(s);
	char *out;

	assert_non_null(open);
	head = (size_t)(open + 1 - s);
	out = malloc(len + pad + 3);
	assert_non_null(out);
	memcpy(out, s, head);
	for (size_t i = 0; i < pad; i += 8)
		memcpy(out + head + i, "{\"x\":1},", 8);
	memcpy(out + head + pad, "1,", 2);
	memcpy(out + head + pad + 2, s + head, len - head + 1);
	if (truncated)
		out[head + pad / 2] = '\0';
	return out;
}

static void route_padded(struct fake *f, const struct req *r, size_t nth, struct reply *out)
{
	(void)f;
	if (strcmp(r->path, "/pods") != 0 || r->watch)
		out->status = 404;
	else
		out->body = kubelet_pods_padded(nth > 0);
}

static void test_big_list_item_by_item(void **state)
{
	struct env e = { 0 };
	struct vw_podmeta_opts o = kubelet_opts(&e, route_padded);
	struct vw_pod_info info;

	(void)state;
	env_start(&e, &o);
	assert_true(WAIT_UNTIL(vw_podmeta_synced(e.pm), 10000));
	expect_pod(e.pm, ID_ETCD_MAIN, HASH_ETCD, "openshift-etcd", "etcd-node-b", 340, "etcd");
	assert_int_equal(vw_podmeta_by_container(e.pm, ID_DNS, &info, NULL, 0), 0);
	assert_int_equal(vw_podmeta_count(e.pm), 2);
	/* The truncated lists that follow change nothing. */
	assert_true(WAIT_UNTIL(fake_count(e.f, false) >= 4, 10000));
	assert_int_equal(vw_podmeta_count(e.pm), 2);
	assert_int_equal(vw_podmeta_by_container(e.pm, ID_DNS, &info, NULL, 0), 0);
	assert_true(env_stop(&e) < 1.0);
}

static void test_kubelet_poll(void **state)
{
	struct env e = { 0 };
	struct vw_podmeta_opts o = kubelet_opts(&e, route_kubelet);
	struct vw_pod_info info;
	struct req r;

	(void)state;
	o.grace_ns = 300 * VW_NSEC_PER_MSEC;
	env_start(&e, &o);
	assert_true(WAIT_UNTIL(vw_podmeta_synced(e.pm), 5000));
	r = fake_req(e.f, 0);
	assert_string_equal(r.path, "/pods");
	assert_string_equal(r.auth, "Bearer kubelet-tok");
	/* Static pod: its UID is the config hash. */
	expect_pod(e.pm, ID_ETCD_MAIN, HASH_ETCD, "openshift-etcd", "etcd-node-b", 340, "etcd");
	expect_pod(e.pm, ID_ETCD_SETUP, HASH_ETCD, "openshift-etcd", "etcd-node-b", 340, "setup");
	assert_int_equal(vw_podmeta_by_uid(e.pm, HASH_ETCD, &info), 0);

	/* A failed poll keeps the table; a later poll without dns-default retires it. */
	assert_true(WAIT_UNTIL(vw_podmeta_by_container(e.pm, ID_DNS, &info, NULL, 0) == -ENOENT,
			       5000));
	assert_true(fake_count(e.f, false) >= 3);
	assert_int_equal(vw_podmeta_count(e.pm), 1);
	assert_int_equal(vw_podmeta_by_container(e.pm, ID_ETCD_MAIN, &info, NULL, 0), 0);
	assert_true(env_stop(&e) < 1.0);
}

/* ---- stop: during back-off, right after start ---- */

static unsigned closed_port(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
	close(fd);
	return ntohs(sin.sin_port);
}

static void test_stop_prompt(void **state)
{
	struct vw_podmeta_opts o = {
		.mode = VW_PODMETA_APISERVER,
		.node_name = NODE,
		.token_file = "/nonexistent/token",
		.allow_http = true,
	};
	struct vw_podmeta *pm;
	struct timespec t0;
	char url[64];

	(void)state;
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", closed_port());
	o.url = url;
	/* Nothing listens: the worker backs off (1 s, then 2 s ...). */
	pm = vw_podmeta_start(&o);
	assert_non_null(pm);
	usleep(1300 * 1000);
	assert_false(vw_podmeta_synced(pm));
	assert_int_equal(vw_podmeta_count(pm), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	vw_podmeta_stop(pm);
	assert_true(elapsed_s(&t0) < 0.5);

	pm = vw_podmeta_start(&o);
	assert_non_null(pm);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	vw_podmeta_stop(pm);
	assert_true(elapsed_s(&t0) < 0.5);
	vw_podmeta_stop(NULL);
}

static char token_log[4096];

static void capture_token_log(enum vw_log_level level, const char *msg, void *userdata)
{
	size_t n = strlen(token_log);

	(void)level;
	(void)userdata;
	snprintf(token_log + n, sizeof(token_log) - n, "%s\n", msg);
}

/* Outside a pod (a systemd unit) the in-cluster token is missing: the warning says what to give. */
static void test_not_in_pod_hint(void **state)
{
	struct vw_podmeta_opts o = {
		.mode = VW_PODMETA_APISERVER,
		.node_name = NODE,
		.allow_http = true,
	};
	struct vw_podmeta *pm;
	char url[64];

	(void)state;
	if (access("/var/run/secrets/kubernetes.io/serviceaccount/token", F_OK) == 0)
		skip(); /* in a pod: that token is there */
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", closed_port());
	o.url = url;
	token_log[0] = '\0';
	vw_log_set_sink(capture_token_log, NULL);
	pm = vw_podmeta_start(&o);
	assert_non_null(pm);
	for (int i = 0; i < 100 && !strstr(token_log, "podmeta: token "); i++)
		usleep(20 * 1000);
	vw_podmeta_stop(pm);
	vw_log_set_sink(NULL, NULL);
	if (!strstr(token_log, "serviceaccount/token: No such file or directory (not in a pod: "
			       "give --kube.config"))
		fail_msg("no hint in:\n%s", token_log);
}

static void test_bad_options(void **state)
{
	const struct vw_podmeta_opts good = {
		.mode = VW_PODMETA_APISERVER, .node_name = NODE, .url = "https://10.0.0.1:6443"
	};
	struct vw_podmeta_opts o;

	(void)state;
	errno = 0;
	assert_null(vw_podmeta_start(NULL));
	assert_int_equal(errno, EINVAL);
	o = good, o.node_name = NULL; /* would watch the whole cluster */
	assert_null(vw_podmeta_start(&o));
	assert_int_equal(errno, EINVAL);
	o = good, o.node_name = "Node_A";
	assert_null(vw_podmeta_start(&o));
	o = good, o.url = "http://127.0.0.1:8001"; /* plain HTTP only when allowed */
	assert_null(vw_podmeta_start(&o));
	assert_int_equal(errno, EINVAL);
	o = good, o.url = "ftp://10.0.0.1", o.allow_http = true;
	assert_null(vw_podmeta_start(&o));
	o = good, o.mode = (enum vw_podmeta_mode)7;
	assert_null(vw_podmeta_start(&o));
	o = good, o.mode = VW_PODMETA_KUBELET, o.url = NULL, o.node_name = NULL;
	assert_null(vw_podmeta_start(&o));
	o = good, o.backoff_min_ns = 2, o.backoff_max_ns = 1;
	assert_null(vw_podmeta_start(&o));
	assert_int_equal(errno, EINVAL);
}

/* ---- the table alone, with explicit times ---- */

#define SEC VW_NSEC_PER_SEC

static struct json_object *fixture_json(const char *name)
{
	char *text = slurp(name);
	struct json_object *o = json_tokener_parse(text);

	free(text);
	assert_non_null(o);
	return o;
}

static struct json_object *list_item(struct json_object *list, size_t i)
{
	return json_object_array_get_idx(vw_jarr(list, "items"), i);
}

static void test_table_grace(void **state)
{
	struct vw_podtable *t = vw_podtable_new(60 * SEC);
	struct json_object *list = fixture_json("podlist.json");
	char *line = event_line(1); /* MODIFIED prometheus */
	struct json_object *ev = json_tokener_parse(line);
	struct vw_pod_info info;
	char name[64];

	(void)state;
	free(line);
	assert_non_null(t);
	assert_non_null(ev);
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(vw_podtable_apply(t, list_item(list, i), 1, false, 0), 0);
	assert_int_equal(vw_podtable_count(t), 3);

	/* DELETED at t=10 s: resolvable until 70 s, not at 70 s; sweep frees it then. */
	assert_int_equal(vw_podtable_apply(t, list_item(list, 2), 1, true, 10 * SEC), 0);
	assert_int_equal(vw_podtable_count(t), 2);
	assert_int_equal(vw_podtable_by_uid(t, UID_CHECKOUT, 70 * SEC - 1, &info), 0);
	assert_int_equal(vw_podtable_by_container(t, ID_CHECKOUT_DEBUG, 70 * SEC - 1, &info, name,
						  sizeof(name)),
			 0);
	assert_string_equal(name, "debugger-7x2kq");
	assert_int_equal(vw_podtable_by_uid(t, UID_CHECKOUT, 70 * SEC, &info), -ENOENT);
	assert_int_equal(vw_podtable_by_container(t, ID_CHECKOUT_MAIN, 70 * SEC, &info, NULL, 0),
			 -ENOENT);
	vw_podtable_sweep(t, 69 * SEC);
	assert_int_equal(vw_podtable_by_uid(t, UID_CHECKOUT, 69 * SEC, &info), 0);
	vw_podtable_sweep(t, 70 * SEC);
	assert_int_equal(vw_podtable_by_uid(t, UID_CHECKOUT, 0, &info), -ENOENT);

	/* A replaced container stays resolvable for the grace period, from when it went. */
	assert_int_equal(vw_podtable_apply(t, json_object_object_get(ev, "object"), 1, false,
					   100 * SEC),
			 0);
	assert_int_equal(vw_podtable_by_container(t, ID_PROM_RELOADER, 159 * SEC, &info, NULL, 0), 0);
	assert_int_equal(vw_podtable_by_container(t, ID_PROM_RELOADER_NEW, 500 * SEC, &info, NULL, 0),
			 0);

	/* A pod gone missing from a list is retired; seen again, it lives again. */
	assert_int_equal(vw_podtable_apply(t, list_item(list, 0), 2, false, 200 * SEC), 0);
	vw_podtable_retire(t, 2, 200 * SEC);
	assert_int_equal(vw_podtable_count(t), 1);
	assert_int_equal(vw_podtable_by_uid(t, UID_PROM, 259 * SEC, &info), 0);
	assert_int_equal(vw_podtable_apply(t, list_item(list, 1), 3, false, 250 * SEC), 0);
	vw_podtable_retire(t, 3, 250 * SEC);
	assert_int_equal(vw_podtable_by_uid(t, UID_PROM, 1000 * SEC, &info), 0);
	assert_int_equal(vw_podtable_by_container(t, ID_PROM_MAIN, 1000 * SEC, &info, NULL, 0), 0);
	/* ... the apiserver pod (not in generation 3) went at 250 s, its hash alias with it. */
	assert_int_equal(vw_podtable_by_uid(t, HASH_APISERVER, 309 * SEC, &info), 0);
	vw_podtable_sweep(t, 310 * SEC);
	assert_int_equal(vw_podtable_by_uid(t, HASH_APISERVER, 310 * SEC, &info), -ENOENT);
	assert_int_equal(vw_podtable_by_container(t, ID_APISERVER, 310 * SEC, &info, NULL, 0),
			 -ENOENT);
	assert_int_equal(vw_podtable_count(t), 1);

	/* Not a pod. */
	assert_int_equal(vw_podtable_apply(t, list, 4, false, 0), -EINVAL);
	json_object_put(ev);
	json_object_put(list);
	vw_podtable_free(t); /* with entries left: ASan checks nothing leaks */
	vw_podtable_free(NULL);
}

/*
 * A virt-launcher pod's controller: its VirtualMachineInstance, from metadata.ownerReferences (the
 * shape of a real one, `oc get pod virt-launcher-fedora06-wwtvw -o yaml` in
 * github.com/akaliwod/ocp-virtualization, doc/ocp-kubevirt-fedora-disk/OcPod.md), as the kubelet's
 * /pods lists it and as an API server watch event carries it. Only a controller reference of
 * kind VirtualMachineInstance in group kubevirt.io counts, the first controller only; labels alone
 * (a pod's creator writes them) make no owner.
 */
#define VL_UID "e566efd1-741e-4def-9c1d-6a9f3e2b7c10"
#define VL_META(refs)                                                                              \
	"{\"metadata\":{\"name\":\"virt-launcher-fedora06-wwtvw\",\"generateName\":"                \
	"\"virt-launcher-fedora06-\",\"namespace\":\"default\",\"uid\":\"" VL_UID "\","              \
	"\"annotations\":{\"kubectl.kubernetes.io/default-container\":\"compute\","                 \
	"\"kubevirt.io/domain\":\"fedora06\"},\"labels\":{\"kubevirt.io\":\"virt-launcher\","        \
	"\"kubevirt.io/created-by\":\"2076f683-2d58-4f46-a2d9-4cb682060e36\","                      \
	"\"kubevirt.io/domain\":\"fedora06\",\"vm.kubevirt.io/name\":\"fedora06\"}" refs "},"       \
	"\"spec\":{\"nodeName\":\"" NODE "\",\"containers\":[{\"name\":\"compute\"}]},"           \
	"\"status\":{\"phase\":\"Running\"}}"
#define VL_REF(api, kind, name, ctl)                                                               \
	"{\"apiVersion\":\"" api "\",\"blockOwnerDeletion\":true," ctl "\"kind\":\"" kind "\","       \
	"\"name\":\"" name "\",\"uid\":\"2076f683-2d58-4f46-a2d9-4cb682060e36\"}"
#define VL_CTL "\"controller\":true,"
#define VL_VMI(name) VL_REF("kubevirt.io/v1", "VirtualMachineInstance", name, VL_CTL)
#define VL_RS VL_REF("apps/v1", "ReplicaSet", "web-5d8f", VL_CTL)

static void test_kubevirt_owner(void **state)
{
	static const struct {
		const char *pod, *owner;
		bool owned;
	} cases[] = {
		{ VL_META(",\"ownerReferences\":[" VL_VMI("fedora06") "]"), "fedora06", true },
		{ VL_META(""), "", false }, /* the labels alone */
		{ VL_META(",\"ownerReferences\":[]"), "", false },
		{ VL_META(",\"ownerReferences\":[" VL_RS "]"), "", false },
		/* an owner, not the controller; the controller a ReplicaSet */
		{ VL_META(",\"ownerReferences\":[" VL_REF("kubevirt.io/v1", "VirtualMachineInstance",
							  "fedora06", "\"controller\":false,") ","
			  VL_REF("kubevirt.io/v1", "VirtualMachineInstance", "fedora06", "")
			  "," VL_RS "]"),
		  "", false },
		{ VL_META(",\"ownerReferences\":[" VL_REF("kubevirt.io/v1", "VirtualMachineInstance",
							  "fedora06", "\"controller\":\"true\",")
			  "]"),
		  "", false },
		/* one controller counts, the first */
		{ VL_META(",\"ownerReferences\":[" VL_RS "," VL_VMI("fedora06") "]"), "", false },
		{ VL_META(",\"ownerReferences\":[" VL_REF("kubevirt.io/v1alpha3",
							  "VirtualMachineInstance", "fedora06", VL_CTL)
			  "]"),
		  "fedora06", true },
		{ VL_META(",\"ownerReferences\":[" VL_REF("kubevirt.io/v1", "VirtualMachine",
							  "fedora06", VL_CTL) "]"),
		  "", false },
		{ VL_META(",\"ownerReferences\":[" VL_REF("kubevirt.io.evil/v1",
							  "VirtualMachineInstance", "fedora06", VL_CTL)
			  "]"),
		  "", false },
		{ VL_META(",\"ownerReferences\":[" VL_REF("evil.kubevirt.io/v1",
							  "VirtualMachineInstance", "fedora06", VL_CTL)
			  "]"),
		  "", false },
		/* a VMI name no label value can match (over 63 bytes): owned, no name */
		{ VL_META(",\"ownerReferences\":[" VL_VMI("a123456789b123456789c123456789d123456789"
							 "e123456789f123456789g1234567890") "]"),
		  "", true },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		for (int shape = 0; shape < 2; shape++) {
			struct vw_podtable *t = vw_podtable_new(60 * SEC);
			char *text = NULL;
			struct json_object *o, *pod;
			struct vw_pod_info info;

			/* the kubelet's /pods list, or an API server watch event */
			assert_true(asprintf(&text,
					     shape ? "{\"type\":\"ADDED\",\"object\":%s}"
						   : "{\"kind\":\"PodList\",\"apiVersion\":\"v1\","
						     "\"items\":[%s]}",
					     cases[i].pod) > 0);
			o = json_tokener_parse(text);
			free(text);
			assert_non_null(o);
			pod = shape ? json_object_object_get(o, "object") : list_item(o, 0);
			assert_non_null(t);
			assert_int_equal(vw_podtable_apply(t, pod, 1, false, 0), 0);
			assert_int_equal(vw_podtable_by_uid(t, VL_UID, 0, &info), 0);
			assert_string_equal(info.kubevirt_vmi, "fedora06");
			if (info.kubevirt_owned != cases[i].owned ||
			    strcmp(info.kubevirt_owner, cases[i].owner) != 0)
				fail_msg("case %zu: owned %d by \"%s\"", i, info.kubevirt_owned,
					 info.kubevirt_owner);
			json_object_put(o);
			vw_podtable_free(t);
		}
	}
}

/* ---- pure parsers ---- */

static void test_cpu_quantities(void **state)
{
	static const struct {
		const char *q;
		int ret;
		uint64_t millis;
	} cases[] = {
		{ "250m", 0, 250 },
		{ "1", 0, 1000 },
		{ "0.5", 0, 500 },
		{ ".5", 0, 500 },
		{ "5.", 0, 5000 },
		{ "1.5", 0, 1500 },
		{ "0.1", 0, 100 },
		{ "10m", 0, 10 },
		{ "2k", 0, 2000000 },
		{ "1M", 0, 1000000000 },
		{ "1G", 0, 1000000000000ULL },
		{ "100n", 0, 1 }, /* rounded up, as MilliValue() */
		{ "1u", 0, 1 },
		{ "0.0001", 0, 1 },
		{ "1500u", 0, 2 },
		{ "0", 0, 0 },
		{ "0m", 0, 0 },
		{ "0e5", 0, 0 },
		{ "+1", 0, 1000 },
		{ "000250m", 0, 250 },
		{ "250.000m", 0, 250 },
		{ "1e3", 0, 1000000 },
		{ "1E-3", 0, 1 },
		{ "1e-40", 0, 1 },
		{ "1Ki", 0, 1024000 },
		{ "0.5Ki", 0, 512000 },
		{ "999999999999999999m", 0, 999999999999999999ULL },
		{ "", -EINVAL, 0 },
		{ "m", -EINVAL, 0 },
		{ ".", -EINVAL, 0 },
		{ "-1", -EINVAL, 0 },
		{ "-250m", -EINVAL, 0 },
		{ "1.2.3", -EINVAL, 0 },
		{ "1mm", -EINVAL, 0 },
		{ " 1", -EINVAL, 0 },
		{ "1 ", -EINVAL, 0 },
		{ "1e", -EINVAL, 0 },
		{ "1e+", -EINVAL, 0 },
		{ "abc", -EINVAL, 0 },
		{ "1Z", -EINVAL, 0 },
		{ "1ki", -EINVAL, 0 },
		{ "0x10", -EINVAL, 0 },
		{ "1e3m", -EINVAL, 0 },
		{ "1E", -ERANGE, 0 }, /* 10^18 cores */
		{ "1Ei", -ERANGE, 0 },
		{ "1e30", -ERANGE, 0 },
		{ "1e99999", -ERANGE, 0 },
		{ "18446744073709551616", -ERANGE, 0 },
		{ "1234567890123456789", -ERANGE, 0 },
	};
	uint64_t v;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		int r;

		v = 4242;
		r = vw_podmeta_parse_cpu_millis(cases[i].q, &v);
		if (r != cases[i].ret || (r == 0 && v != cases[i].millis))
			fail_msg("'%s': ret %d value %llu", cases[i].q, r, (unsigned long long)v);
	}
	assert_int_equal(vw_podmeta_parse_cpu_millis(NULL, &v), -EINVAL);
}

static void test_container_ids(void **state)
{
	char id[VW_CONTAINER_ID_LEN];
	enum vw_runtime rt;

	(void)state;
	assert_int_equal(vw_podmeta_parse_container_id("containerd://" ID_REPORT, id, &rt), 0);
	assert_string_equal(id, ID_REPORT);
	assert_int_equal(rt, VW_RUNTIME_CONTAINERD);
	assert_int_equal(vw_podmeta_parse_container_id("docker://" ID_REPORT, id, &rt), 0);
	assert_int_equal(rt, VW_RUNTIME_DOCKER);
	assert_int_equal(vw_podmeta_parse_container_id("cri-o://" ID_DNS, id, &rt), 0);
	assert_int_equal(rt, VW_RUNTIME_CRIO);
	assert_string_equal(id, ID_DNS);
	assert_int_equal(vw_podmeta_parse_container_id("cri-dockerd://" ID_DNS, id, &rt), 0);
	assert_int_equal(rt, VW_RUNTIME_UNKNOWN);
	assert_int_equal(vw_podmeta_parse_container_id("containerd://" ID_DNS, id, NULL), 0);

	static const char *const bad[] = {
		"",
		ID_DNS,
		"://" ID_DNS,
		"containerd:/" ID_DNS,
		"containerd://abc",
		"containerd://" ID_DNS "0",
		"containerd://dd75a9d6fb309c4399fe425cd5f90ff95eba135d6924fb91766ee5d3726b168", /* 63 */
		"containerd://DD75A9D6FB309C4399FE425CD5F90FF95EBA135D6924FB91766EE5D3726B168A",
		"containerd://" ID_DNS "/",
		NULL,
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		if (vw_podmeta_parse_container_id(bad[i], id, &rt) != -EINVAL)
			fail_msg("accepted '%s'", bad[i] ? bad[i] : "(null)");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cpu_quantities),
		cmocka_unit_test(test_container_ids),
		cmocka_unit_test(test_bad_options),
		cmocka_unit_test(test_token_fifo),
		cmocka_unit_test(test_table_grace),
		cmocka_unit_test(test_kubevirt_owner),
		cmocka_unit_test(test_list_watch_resume),
		cmocka_unit_test(test_grace_expiry),
		cmocka_unit_test(test_gone_relists),
		cmocka_unit_test(test_unauthorized_rereads_token),
		cmocka_unit_test(test_kubeconfig_token),
		cmocka_unit_test(test_kubeconfig_client_certificate),
		cmocka_unit_test(test_hostile_events),
		cmocka_unit_test(test_kubelet_poll),
		cmocka_unit_test(test_big_list_item_by_item),
		cmocka_unit_test(test_stop_prompt),
		cmocka_unit_test(test_not_in_pod_hint),
	};

	/* 127.0.0.1 must be reached directly. */
	unsetenv("http_proxy");
	unsetenv("HTTP_PROXY");
	unsetenv("all_proxy");
	unsetenv("ALL_PROXY");
	vw_log_set_level(VW_LOG_WARN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* The metrics endpoint on a real libmicrohttpd server, driven by libcurl over loopback. */
#include "vw_test.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "conntable.h"
#include "http.h"
#include "http_retire.h"
#include "log.h"
#include "macro.h"
#include "prom.h"

#define TEXT_CT "text/plain; version=0.0.4; charset=utf-8"
#define OM_CT "application/openmetrics-text; version=1.0.0; charset=utf-8"
#define OM_ACCEPT "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"
/* What Prometheus 3 sends by default, and Prometheus 2.5x. */
#define PROM3_ACCEPT                                                                               \
	"application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,application/"     \
	"openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;escaping=allow-utf-8;"    \
	"q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"
#define PROM2_ACCEPT                                                                               \
	"application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"  \
	"q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"

/* ---- Client ---- */

struct reply {
	CURLcode code;
	long status;
	char *body;
	size_t body_len;
	char *headers;
	size_t headers_len;
	char content_type[128];
};

static void reply_clear(struct reply *r)
{
	free(r->body);
	free(r->headers);
	*r = (struct reply){0};
}

struct request {
	const char *method; /* GET if NULL */
	const char *path;
	const char *accept;
	const char *body; /* sent with Content-Length */
	const char *header; /* one more request header line, or NULL */
	long timeout_ms;  /* 0: 20 s */
};

static void request_setup(CURL *c, uint16_t port, const struct request *q, char *url, size_t len)
{
	const char *method = q->method ? q->method : "GET";

	snprintf(url, len, "http://127.0.0.1:%u%s", (unsigned)port, q->path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, q->timeout_ms ? q->timeout_ms : 20000L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	if (strcmp(method, "HEAD") == 0)
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	else if (strcmp(method, "GET") != 0 || q->body)
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	if (q->body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, q->body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(q->body));
	}
}

/* Perform on an existing handle (keep-alive across calls), collecting status, headers, body. */
static void perform(CURL *c, uint16_t port, const struct request *q, struct reply *r)
{
	FILE *body = open_memstream(&r->body, &r->body_len);
	FILE *hdrs = open_memstream(&r->headers, &r->headers_len);
	struct curl_slist *list = NULL;
	char url[256], accept[256];
	const char *ct = NULL;

	if (!body || !hdrs) {
		/* no cmocka assert here: scraper threads call this */
		if (body)
			fclose(body);
		if (hdrs)
			fclose(hdrs);
		r->code = CURLE_OUT_OF_MEMORY;
		return;
	}
	curl_easy_reset(c);
	request_setup(c, port, q, url, sizeof(url));
	if (q->accept) {
		snprintf(accept, sizeof(accept), "Accept: %s", q->accept);
		list = curl_slist_append(NULL, accept);
	}
	if (q->header)
		list = curl_slist_append(list, q->header);
	if (list)
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, list);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, hdrs);
	r->code = curl_easy_perform(c);
	fclose(body);
	fclose(hdrs);
	curl_slist_free_all(list);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
	if (curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ct) == CURLE_OK && ct)
		snprintf(r->content_type, sizeof(r->content_type), "%s", ct);
}

static struct reply fetch(uint16_t port, const struct request *q)
{
	struct reply r = {0};
	CURL *c = curl_easy_init();

	assert_non_null(c);
	perform(c, port, q, &r);
	curl_easy_cleanup(c);
	return r;
}

static size_t discard(char *p, size_t size, size_t n, void *userdata)
{
	(void)p, (void)userdata;
	return size * n;
}

static bool has_header(const struct reply *r, const char *line)
{
	return r->headers && strcasestr(r->headers, line);
}

/* GET path with no special headers: the status; the body must equal want_body if given. */
static long get_status(uint16_t port, const char *path, const char *want_body)
{
	struct reply r = fetch(port, &(struct request){.path = path});
	long status = r.status;

	assert_int_equal(r.code, CURLE_OK);
	assert_true(has_header(&r, "\r\nX-Content-Type-Options: nosniff\r\n"));
	if (want_body)
		assert_string_equal(r.body, want_body);
	reply_clear(&r);
	return status;
}

static const char sample_text[] = "# HELP vw_up Up.\n# TYPE vw_up gauge\nvw_up 1\n";
static const char sample_om[] = "# TYPE vw_up gauge\n# HELP vw_up Up.\nvw_up 1\n# EOF\n";

/* ---- Server fixture ---- */

static bool healthy_flag;

static bool is_healthy(void *userdata, char *why, size_t len)
{
	snprintf(why, len, "test says so");
	return __atomic_load_n((bool *)userdata, __ATOMIC_RELAXED);
}

struct server {
	struct vw_exposition *x;
	struct vw_http *h;
	uint16_t port;
};

static void server_start(struct server *s, struct vw_http_opts opts)
{
	s->x = vw_exposition_new();
	assert_non_null(s->x);
	if (!opts.listen_address)
		opts.listen_address = "127.0.0.1:0";
	s->h = vw_http_start(&opts, s->x);
	assert_non_null(s->h);
	s->port = vw_http_port(s->h);
	assert_true(s->port > 0);
}

static void server_stop(struct server *s)
{
	vw_http_stop(s->h);
	vw_exposition_free(s->x);
}

static void publish(struct vw_exposition *x, const char *text, const char *om)
{
	char *t = strdup(text), *o = om ? strdup(om) : NULL;

	assert_non_null(t);
	vw_exposition_publish(x, t, strlen(t), o, om ? strlen(om) : 0);
}

/* A server with the sample snapshot already published. */
static void server_start_published(struct server *s, struct vw_http_opts opts)
{
	server_start(s, opts);
	publish(s->x, sample_text, sample_om);
}

/* cmocka setup and teardown: *state is a server_start_published() with the default options. */
static int server_setup(void **state)
{
	struct server *s = calloc(1, sizeof(*s));

	assert_non_null(s);
	server_start_published(s, (struct vw_http_opts){0});
	*state = s;
	return 0;
}

static int server_teardown(void **state)
{
	server_stop(*state);
	free(*state);
	return 0;
}

/* ---- Tests ---- */

static void test_parse_listen(void **state)
{
	static const char *const bad[] = {
		"", "28282", ":", "localhost:", ":65536", ":99999", ":-1", ":+80", ":0x50", ": 80",
		":80 ", "::1:80", "[::1]", "[::1:80", "[]:80", "[x]:80", "::1]:80", "a b:80",
		"host/x:80", "h\n:80", ":123456", "[::1]x:80",
	};
	static const struct {
		const char *listen, *host;
		uint16_t port;
	} good[] = {
		{ ":28282", "", 28282 },
		{ "127.0.0.1:0", "127.0.0.1", 0 },
		{ "[::1]:9", "::1", 9 },
		{ "localhost:65535", "localhost", 65535 },
		{ "[fe80::1%eth0]:80", "fe80::1%eth0", 80 },
	};
	char host[64], tiny[4];
	uint16_t port;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
		int r;

		host[0] = '\0', port = 0;
		r = vw_http_parse_listen(good[i].listen, host, sizeof(host), &port);
		if (r != 0 || strcmp(host, good[i].host) != 0 || port != good[i].port)
			fail_msg("'%s': %d, host '%s' port %u; expected 0, '%s' %u", good[i].listen, r,
				 host, port, good[i].host, good[i].port);
	}
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		if (vw_http_parse_listen(bad[i], host, sizeof(host), &port) != -EINVAL)
			fail_msg("accepted listen address '%s'", bad[i]);
	}
	assert_int_equal(vw_http_parse_listen(NULL, host, sizeof(host), &port), -EINVAL);
	assert_int_equal(vw_http_parse_listen("localhost:80", tiny, sizeof(tiny), &port), -EINVAL);
	assert_int_equal(vw_http_parse_listen("abc:80", tiny, sizeof(tiny), &port), 0);
}

static void test_start_errors(void **state)
{
	struct server s;
	char addr[32];

	(void)state;
	server_start(&s, (struct vw_http_opts){0});
	errno = 0;
	assert_null(vw_http_start(&(struct vw_http_opts){.listen_address = "nonsense"}, s.x));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(vw_http_start(&(struct vw_http_opts){.listen_address = "[::1]:99999"}, s.x));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(vw_http_start(&(struct vw_http_opts){.listen_address = "127.0.0.1:0"}, NULL));
	assert_int_equal(errno, EINVAL);
	assert_null(vw_http_start(NULL, s.x));
	assert_int_equal(errno, EINVAL);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", (unsigned)s.port);
	errno = 0;
	assert_null(vw_http_start(&(struct vw_http_opts){.listen_address = addr}, s.x));
	assert_int_equal(errno, EADDRINUSE);
	server_stop(&s);
	vw_http_stop(NULL);
	assert_int_equal(vw_http_port(NULL), 0);
}

static bool ready_flag;

static bool is_ready(void *userdata, char *why, size_t len)
{
	(void)userdata;
	snprintf(why, len, "the state file cannot be written");
	return __atomic_load_n(&ready_flag, __ATOMIC_RELAXED);
}

/* /readyz: 503 with the reason while the snapshot is stale or the daemon says so. */
static void test_ready_reasons(void **state)
{
	static uint64_t now = 1000 * VW_NSEC_PER_SEC;
	struct server s;

	(void)state;
	vw_clock_set_fake(&now);
	ready_flag = true;
	server_start_published(&s, (struct vw_http_opts){ .ready = is_ready,
							  .stale_after_ns = 20 * VW_NSEC_PER_SEC });
	assert_int_equal(get_status(s.port, "/readyz", "ok\n"), 200);
	__atomic_add_fetch(&now, 21 * VW_NSEC_PER_SEC, __ATOMIC_RELAXED);
	assert_int_equal(get_status(s.port, "/readyz",
				    "not ready: the last metrics snapshot is 21.0 s old (stale after "
				    "20.0 s): the sampling loop is stuck or rendering fails, see the "
				    "log\n"),
			 503);
	/* Stale metrics are still served: a scraper decides what to do with them. */
	assert_int_equal(get_status(s.port, "/metrics", sample_text), 200);
	publish(s.x, sample_text, sample_om);
	assert_int_equal(get_status(s.port, "/readyz", "ok\n"), 200);
	__atomic_store_n(&ready_flag, false, __ATOMIC_RELAXED);
	assert_int_equal(get_status(s.port, "/readyz",
				    "not ready: the state file cannot be written\n"), 503);
	server_stop(&s);
	vw_clock_set_fake(NULL);
}

/* Kepler's /probe/livez and /probe/readyz: JSON, 503 naming the failing check, GET and HEAD. */
static void test_kepler_probes(void **state)
{
	struct server s;
	struct reply r;

	(void)state;
	healthy_flag = true;
	server_start(&s, (struct vw_http_opts){.healthy = is_healthy, .userdata = &healthy_flag});
	r = fetch(s.port, &(struct request){.path = "/probe/readyz"});
	assert_int_equal(r.status, 503);
	assert_string_equal(r.content_type, "application/json");
	assert_string_equal(r.body, "{\"status\":\"not ready\",\"reason\":\"no metrics published "
				    "yet\"}\n");
	reply_clear(&r);
	publish(s.x, sample_text, sample_om);
	r = fetch(s.port, &(struct request){.path = "/probe/readyz"});
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "{\"status\":\"ok\"}\n");
	reply_clear(&r);
	r = fetch(s.port, &(struct request){.path = "/probe/livez"});
	assert_int_equal(r.status, 200);
	assert_string_equal(r.content_type, "application/json");
	assert_string_equal(r.body, "{\"status\":\"alive\"}\n");
	reply_clear(&r);
	__atomic_store_n(&healthy_flag, false, __ATOMIC_RELAXED);
	r = fetch(s.port, &(struct request){.path = "/probe/livez"});
	assert_int_equal(r.status, 503);
	assert_string_equal(r.body, "{\"status\":\"not alive\",\"reason\":\"test says so\"}\n");
	reply_clear(&r);
	__atomic_store_n(&healthy_flag, true, __ATOMIC_RELAXED);
	r = fetch(s.port, &(struct request){.method = "HEAD", .path = "/probe/livez"});
	assert_int_equal(r.status, 200);
	assert_int_equal(r.body_len, 0);
	reply_clear(&r);
	r = fetch(s.port, &(struct request){.method = "POST", .path = "/probe/readyz"});
	assert_int_equal(r.status, 405);
	reply_clear(&r);
	server_stop(&s);
}

static void test_health_and_ready(void **state)
{
	struct server s;

	(void)state;
	healthy_flag = true;
	server_start(&s, (struct vw_http_opts){.healthy = is_healthy, .userdata = &healthy_flag});
	assert_false(vw_exposition_ready(s.x));
	assert_int_equal(get_status(s.port, "/metrics", "no metrics published yet\n"), 503);
	assert_int_equal(get_status(s.port, "/readyz", "not ready: no metrics published yet\n"), 503);
	assert_int_equal(get_status(s.port, "/healthz", "ok\n"), 200);
	__atomic_store_n(&healthy_flag, false, __ATOMIC_RELAXED);
	assert_int_equal(get_status(s.port, "/healthz", "unhealthy: test says so\n"), 503);
	__atomic_store_n(&healthy_flag, true, __ATOMIC_RELAXED);

	publish(s.x, sample_text, sample_om);
	assert_true(vw_exposition_ready(s.x));
	assert_int_equal(get_status(s.port, "/readyz", "ok\n"), 200);
	assert_int_equal(get_status(s.port, "/healthz", "ok\n"), 200);
	assert_int_equal(get_status(s.port, "/metrics", sample_text), 200);
	server_stop(&s);
}

static void test_metrics_negotiated(void **state)
{
	struct server *s = *state;
	struct reply r;

	r = fetch(s->port, &(struct request){.path = "/metrics"});
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, sample_text);
	assert_string_equal(r.content_type, TEXT_CT);
	assert_true(has_header(&r, "\r\nVary: Accept, Accept-Encoding\r\n"));
	reply_clear(&r);

	r = fetch(s->port, &(struct request){.path = "/metrics", .accept = OM_ACCEPT});
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, sample_om);
	assert_string_equal(r.content_type, OM_CT);
	reply_clear(&r);

	/* OpenMetrics 0.0.1 asked for: the same rendering, announced as 0.0.1 */
	r = fetch(s->port, &(struct request){.path = "/metrics",
					      .accept = "application/openmetrics-text;version=0.0.1"});
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, sample_om);
	assert_string_equal(r.content_type,
			    "application/openmetrics-text; version=0.0.1; charset=utf-8");
	reply_clear(&r);

	/* The literal Accept headers of Prometheus 3 and 2 (2.5x): OpenMetrics 1.0.0. */
	r = fetch(s->port, &(struct request){.path = "/metrics", .accept = PROM3_ACCEPT});
	assert_string_equal(r.body, sample_om);
	assert_string_equal(r.content_type, OM_CT);
	reply_clear(&r);
	r = fetch(s->port, &(struct request){.path = "/metrics", .accept = PROM2_ACCEPT});
	assert_string_equal(r.body, sample_om);
	assert_string_equal(r.content_type, OM_CT);
	reply_clear(&r);
	/* Prometheus 3 with scrape_protocols: [PrometheusText1.0.0]: the text, as 1.0.0 */
	r = fetch(s->port, &(struct request){.path = "/metrics",
					      .accept = "text/plain;version=1.0.0;escaping=allow-utf-8;"
							"q=0.4,*/*;q=0.2"});
	assert_string_equal(r.body, sample_text);
	assert_string_equal(r.content_type,
			    "text/plain; version=1.0.0; charset=utf-8; escaping=underscores");
	reply_clear(&r);
	/* Prometheus 3 with scrape_protocols: [PrometheusText0.0.4] */
	r = fetch(s->port, &(struct request){.path = "/metrics",
					      .accept = "text/plain;version=0.0.4;q=0.3,*/*;q=0.2"});
	assert_string_equal(r.body, sample_text);
	assert_string_equal(r.content_type, TEXT_CT);
	reply_clear(&r);

	/* queries are ignored */
	r = fetch(s->port, &(struct request){.path = "/metrics?format=json&x=%00"});
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, sample_text);
	reply_clear(&r);

	/* no OpenMetrics rendering published: OpenMetrics clients get text */
	publish(s->x, "vw_up 2\n", NULL);
	r = fetch(s->port, &(struct request){.path = "/metrics", .accept = OM_ACCEPT});
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "vw_up 2\n");
	assert_string_equal(r.content_type, TEXT_CT);
	reply_clear(&r);
}

/* The window on given times: nothing before a request, then until the window after the last. */
static void test_openmetrics_window(void **state)
{
	const uint64_t t = 100 * VW_NSEC_PER_SEC, w = VW_EXPOSITION_OM_WINDOW_NS;
	struct vw_exposition *x = vw_exposition_new();

	(void)state;
	assert_non_null(x);
	assert_false(vw_exposition_openmetrics_wanted(x, 0));
	assert_false(vw_exposition_openmetrics_wanted(x, t));
	assert_false(vw_exposition_openmetrics_wanted(NULL, t));
	vw_exposition_openmetrics_asked(NULL, t);
	vw_exposition_openmetrics_asked(x, t);
	assert_true(vw_exposition_openmetrics_wanted(x, t));
	assert_true(vw_exposition_openmetrics_wanted(x, t - 1)); /* a clock read just before */
	assert_true(vw_exposition_openmetrics_wanted(x, t + w));
	assert_false(vw_exposition_openmetrics_wanted(x, t + w + 1));
	/* An older request noted late does not shorten the window; a newer one extends it. */
	vw_exposition_openmetrics_asked(x, t - VW_NSEC_PER_SEC);
	assert_true(vw_exposition_openmetrics_wanted(x, t + w));
	vw_exposition_openmetrics_asked(x, t + w);
	assert_true(vw_exposition_openmetrics_wanted(x, t + 2 * w));
	assert_false(vw_exposition_openmetrics_wanted(x, t + 2 * w + 1));
	/* A request at time 0 of a clock still counts. */
	vw_exposition_free(x);
	x = vw_exposition_new();
	assert_non_null(x);
	vw_exposition_openmetrics_asked(x, 0);
	assert_true(vw_exposition_openmetrics_wanted(x, 0));
	assert_true(vw_exposition_openmetrics_wanted(x, w));
	assert_false(vw_exposition_openmetrics_wanted(x, w + 2));
	vw_exposition_free(x);
}

/* /metrics with Accept naming OpenMetrics; HEAD when head. */
static struct reply fetch_om(uint16_t port, bool head)
{
	return fetch(port, &(struct request){.method = head ? "HEAD" : NULL, .path = "/metrics",
					     .accept = OM_ACCEPT});
}

static void assert_content_length(const struct reply *r, size_t len)
{
	char cl[64];

	snprintf(cl, sizeof(cl), "\r\nContent-Length: %zu\r\n", len);
	if (!has_header(r, cl))
		fail_msg("no '%s' in:\n%s", cl + 2, r->headers ? r->headers : "");
}

/*
 * Over HTTP: only a request that negotiates OpenMetrics (GET or HEAD, even before the first
 * snapshot) makes it wanted; until a snapshot carries it, such a request gets the text body
 * with the text Content-Type, never an error or an empty body.
 */
static void test_openmetrics_on_demand(void **state)
{
	static const char *const not_om[] = {
		NULL, "text/plain;version=0.0.4", "*/*",
		"application/openmetrics-text;version=1.0.0;q=0.4,text/plain;q=0.5",
		"application/openmetrics-text;version=2.0.0",
	};
	static uint64_t now = 5000 * VW_NSEC_PER_SEC;
	struct server s;
	struct reply r;

	(void)state;
	vw_clock_set_fake(&now);
	server_start(&s, (struct vw_http_opts){0});
	/* Asked before any snapshot: a 503, and the first snapshot should carry OpenMetrics. */
	r = fetch_om(s.port, false);
	assert_int_equal(r.status, 503);
	reply_clear(&r);
	assert_true(vw_exposition_openmetrics_wanted(s.x, now));
	server_stop(&s);

	server_start(&s, (struct vw_http_opts){0});
	publish(s.x, sample_text, NULL); /* what a daemon publishes while nobody asked */
	for (size_t i = 0; i < ARRAY_SIZE(not_om); i++) {
		r = fetch(s.port, &(struct request){.path = "/metrics", .accept = not_om[i]});
		assert_int_equal(r.status, 200);
		assert_string_equal(r.body, sample_text);
		assert_string_equal(r.content_type, TEXT_CT);
		reply_clear(&r);
		if (vw_exposition_openmetrics_wanted(s.x, now))
			fail_msg("Accept '%s' made OpenMetrics wanted", not_om[i] ? not_om[i] : "");
	}

	/* The first OpenMetrics request: the text, announced as text, and OpenMetrics wanted. */
	r = fetch_om(s.port, false);
	assert_int_equal(r.code, CURLE_OK);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, sample_text);
	assert_string_equal(r.content_type, TEXT_CT);
	assert_content_length(&r, strlen(sample_text));
	assert_true(has_header(&r, "\r\nVary: Accept, Accept-Encoding\r\n"));
	reply_clear(&r);
	assert_true(vw_exposition_openmetrics_wanted(s.x, now));
	assert_true(vw_exposition_openmetrics_wanted(s.x, now + VW_EXPOSITION_OM_WINDOW_NS));
	assert_false(vw_exposition_openmetrics_wanted(s.x, now + VW_EXPOSITION_OM_WINDOW_NS + 1));

	/* Quiet past the window; a HEAD asks again and is told what a GET would get. */
	now += VW_EXPOSITION_OM_WINDOW_NS + VW_NSEC_PER_SEC;
	assert_false(vw_exposition_openmetrics_wanted(s.x, now));
	r = fetch_om(s.port, true);
	assert_int_equal(r.code, CURLE_OK);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.body_len, 0);
	assert_string_equal(r.content_type, TEXT_CT);
	assert_content_length(&r, strlen(sample_text));
	reply_clear(&r);
	assert_true(vw_exposition_openmetrics_wanted(s.x, now));

	/* The next snapshot carries OpenMetrics: GET and HEAD get it, text clients still text. */
	publish(s.x, sample_text, sample_om);
	r = fetch_om(s.port, false);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, sample_om);
	assert_string_equal(r.content_type, OM_CT);
	reply_clear(&r);
	r = fetch_om(s.port, true);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.body_len, 0);
	assert_string_equal(r.content_type, OM_CT);
	assert_content_length(&r, strlen(sample_om));
	reply_clear(&r);
	assert_int_equal(get_status(s.port, "/metrics", sample_text), 200);
	server_stop(&s);
	vw_clock_set_fake(NULL);
}

static void test_head(void **state)
{
	struct server *s = *state;
	struct reply r;
	char cl[64];

	r = fetch(s->port, &(struct request){.method = "HEAD", .path = "/metrics"});
	assert_int_equal(r.code, CURLE_OK);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.body_len, 0);
	assert_string_equal(r.content_type, TEXT_CT);
	snprintf(cl, sizeof(cl), "\r\nContent-Length: %zu\r\n", strlen(sample_text));
	assert_true(has_header(&r, cl));
	reply_clear(&r);
}

/* vw_exposition_served() once it is at least gen, or what it is after 2 s. */
static uint64_t served_within(struct vw_exposition *x, uint64_t gen)
{
	uint64_t v = 0;

	for (int i = 0; i < 200 && (v = vw_exposition_served(x)) < gen; i++)
		usleep(10000);
	return v;
}

/*
 * A snapshot counts as served (terminated workloads' final values may go) only once a GET's
 * body went out whole: a HEAD carries no value, nor does an answer whose client left first
 * (a HEAD every second from a probe once dropped every short-lived process unseen).
 */
static void test_served_only_when_sent(void **state)
{
	const size_t big = 8u << 20; /* more than the sockets on both sides hold */
	struct sockaddr_in sa;
	struct server s;
	struct reply r;
	char *text, buf[4096];
	int fd, rcvbuf = 4096;

	(void)state;
	server_start(&s, (struct vw_http_opts){0});
	text = malloc(big + 1);
	assert_non_null(text);
	for (size_t i = 0; i < big; i += 16)
		memcpy(text + i, "vw_up{a=\"x\"} 1\n", 16);
	text[big] = '\0';
	vw_exposition_publish(s.x, text, big, NULL, 0); /* generation 1 */

	r = fetch(s.port, &(struct request){.method = "HEAD", .path = "/metrics"});
	assert_int_equal(r.status, 200);
	reply_clear(&r);
	usleep(300000);
	assert_int_equal(vw_exposition_served(s.x), 0);

	/* A GET whose client reads a little and goes */
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)), 0);
	sa = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons(s.port),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	snprintf(buf, sizeof(buf), "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
	assert_int_equal(write(fd, buf, strlen(buf)), (ssize_t)strlen(buf));
	assert_true(read(fd, buf, sizeof(buf)) > 0);
	close(fd); /* unread data: a reset */
	usleep(300000);
	assert_int_equal(vw_exposition_served(s.x), 0);

	/* A whole GET, gzipped or not */
	r = fetch(s.port, &(struct request){.path = "/metrics"});
	assert_int_equal(r.status, 200);
	assert_int_equal(r.body_len, big);
	reply_clear(&r);
	assert_int_equal(served_within(s.x, 1), 1);
	publish(s.x, sample_text, NULL); /* generation 2 */
	r = fetch(s.port, &(struct request){.path = "/metrics", .header = "Accept-Encoding: gzip"});
	assert_int_equal(r.status, 200);
	reply_clear(&r);
	assert_int_equal(served_within(s.x, 2), 2);
	server_stop(&s);
}

static void test_index_and_404(void **state)
{
	static const char *const missing[] = {"/nope", "/metrics/", "/metricsx", "/METRICS",
					      "/healthz/x", "//metrics", "/index.html"};
	struct server s;
	struct reply r;

	(void)state;
	server_start(&s, (struct vw_http_opts){.program = "virtwatt-<test>", .version = "9.8.7"});
	r = fetch(s.port, &(struct request){.path = "/"});
	assert_int_equal(r.status, 200);
	assert_string_equal(r.content_type, "text/html; charset=utf-8");
	assert_non_null(strstr(r.body, "<title>virtwatt-&lt;test&gt;</title>"));
	assert_non_null(strstr(r.body, "virtwatt-&lt;test&gt; 9.8.7"));
	assert_non_null(strstr(r.body, "<a href=\"/metrics\">"));
	assert_non_null(strstr(r.body, "<a href=\"/healthz\">"));
	assert_non_null(strstr(r.body, "<a href=\"/readyz\">"));
	assert_true(has_header(&r, "\r\nX-Content-Type-Options: nosniff\r\n"));
	reply_clear(&r);
	for (size_t i = 0; i < ARRAY_SIZE(missing); i++)
		assert_int_equal(get_status(s.port, missing[i], "not found\n"), 404);
	server_stop(&s);
}

static void test_methods(void **state)
{
	static const char *const methods[] = {"POST", "PUT", "DELETE", "PATCH", "OPTIONS"};
	struct server *s = *state;

	for (size_t i = 0; i < ARRAY_SIZE(methods); i++) {
		struct reply r = fetch(s->port, &(struct request){.method = methods[i],
								   .path = "/metrics"});

		assert_int_equal(r.code, CURLE_OK);
		assert_int_equal(r.status, 405);
		assert_true(has_header(&r, "\r\nAllow: GET, HEAD\r\n"));
		assert_null(strstr(r.body, "vw_up"));
		reply_clear(&r);
	}
	/* a body with a forbidden method is still a 405 */
	struct reply r = fetch(s->port, &(struct request){.method = "POST", .path = "/metrics",
							   .body = "x=1"});
	assert_int_equal(r.status, 405);
	reply_clear(&r);
}

static void test_body_rejected(void **state)
{
	struct server *s = *state;
	struct reply r;

	r = fetch(s->port, &(struct request){.path = "/metrics", .body = "hello=world"});
	assert_int_equal(r.status, 413);
	assert_null(strstr(r.body, "vw_up"));
	reply_clear(&r);
	/* still serving */
	assert_int_equal(get_status(s->port, "/metrics", sample_text), 200);
}

static void test_oversized_requests(void **state)
{
	struct server *s = *state;
	size_t n = 100 * 1024;
	_cleanup_free_ char *hdr = malloc(n + 16), *path = malloc(n + 16);
	struct curl_slist *list;
	struct reply r = {0};
	CURL *c;

	/* a 100 KiB header */
	strcpy(hdr, "X-Big: ");
	memset(hdr + 7, 'a', n);
	hdr[7 + n] = '\0';
	list = curl_slist_append(NULL, hdr);
	c = curl_easy_init();
	curl_easy_setopt(c, CURLOPT_URL, "http://127.0.0.1/metrics");
	curl_easy_setopt(c, CURLOPT_PORT, (long)s->port);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, list);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	r.code = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
	curl_easy_cleanup(c);
	curl_slist_free_all(list);
	/* refused with a 4xx, or the connection closed: never a 200 */
	assert_true(r.code != CURLE_OK || (r.status >= 400 && r.status < 500));
	/* a 100 KiB URL */
	path[0] = '/';
	memset(path + 1, 'p', n);
	path[n + 1] = '\0';
	r = fetch(s->port, &(struct request){.path = path});
	assert_true(r.code != CURLE_OK || (r.status >= 400 && r.status < 500));
	reply_clear(&r);
	assert_int_equal(get_status(s->port, "/metrics", sample_text), 200);
}

/* A raw TCP connection to the server that sends nothing. */
static int idle_connect(uint16_t port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* Seconds until the server closes fd (reads return 0), or -1 after limit_s. */
static double seconds_until_closed(int fd, int limit_s)
{
	struct timespec a, b;
	struct pollfd p = {.fd = fd, .events = POLLIN};
	char c;

	clock_gettime(CLOCK_MONOTONIC, &a);
	if (poll(&p, 1, limit_s * 1000) != 1 || read(fd, &c, 1) != 0)
		return -1;
	clock_gettime(CLOCK_MONOTONIC, &b);
	return (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
}

static void test_idle_timeout(void **state)
{
	struct server s;
	int fd;
	double t;

	(void)state;
	server_start(&s, (struct vw_http_opts){.timeout_s = 1});
	fd = idle_connect(s.port);
	t = seconds_until_closed(fd, 10);
	close(fd);
	assert_true(t >= 0.5 && t < 5);
	server_stop(&s);
}

/* Log lines seen by the test sink. */
static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;
static char seen_log[4096];

static void capture_sink(enum vw_log_level level, const char *msg, void *userdata)
{
	(void)level, (void)userdata;
	pthread_mutex_lock(&seen_lock);
	if (strlen(seen_log) + strlen(msg) + 2 < sizeof(seen_log)) {
		strcat(seen_log, msg);
		strcat(seen_log, "\n");
	}
	pthread_mutex_unlock(&seen_lock);
}

/*
 * With a limit of one connection, a connection that never sent a request head gives its slot
 * to a new one (evicted, closed at once), so a scrape is served; over the per-IP limit a new
 * connection is accepted and closed at once.
 */
static void test_connection_limits(void **state)
{
	struct server s;
	struct reply r;
	int fd;
	double t;

	(void)state;
	seen_log[0] = '\0';
	vw_log_set_sink(capture_sink, NULL);
	server_start_published(&s, (struct vw_http_opts){.max_connections = 1});
	fd = idle_connect(s.port);
	usleep(100 * 1000); /* let MHD accept it */
	r = fetch(s.port, &(struct request){.path = "/metrics", .timeout_ms = 1500});
	assert_int_equal(r.code, CURLE_OK);
	assert_int_equal(r.status, 200);
	reply_clear(&r);
	t = seconds_until_closed(fd, 5);
	assert_true(t >= 0 && t < 1);
	close(fd);
	server_stop(&s);

	server_start_published(&s, (struct vw_http_opts){.per_ip_connections = 1});
	fd = idle_connect(s.port);
	usleep(100 * 1000);
	r = fetch(s.port, &(struct request){.path = "/metrics", .timeout_ms = 1500});
	assert_true(r.code == CURLE_GOT_NOTHING || r.code == CURLE_RECV_ERROR);
	reply_clear(&r);
	close(fd);
	usleep(200 * 1000);
	assert_int_equal(get_status(s.port, "/metrics", sample_text), 200);
	server_stop(&s);
	vw_log_set_sink(NULL, NULL);
	if (!strstr(seen_log, "http: refused a connection from 127.0.0.1: it has 1 open already") &&
	    !strstr(seen_log, "http: libmicrohttpd: "))
		fail_msg("no refusal in the log:\n%s", seen_log);
}

static void key_of(const char *addr, struct vw_src_key *k)
{
	struct sockaddr_in6 in6 = {.sin6_family = AF_INET6};
	struct sockaddr_in in4 = {.sin_family = AF_INET};

	if (inet_pton(AF_INET, addr, &in4.sin_addr) == 1) {
		vw_src_key((struct sockaddr *)&in4, k);
		return;
	}
	assert_int_equal(inet_pton(AF_INET6, addr, &in6.sin6_addr), 1);
	vw_src_key((struct sockaddr *)&in6, k);
}

static bool same_source(const char *a, const char *b)
{
	struct vw_src_key x, y;

	key_of(a, &x);
	key_of(b, &y);
	return vw_src_key_equal(&x, &y);
}

static void noop_close(int fd)
{
	(void)fd;
}

/*
 * Sources are IPv4 addresses and IPv6 /64s: one host picks from a whole /64, so limits per
 * IPv6 address would limit nothing; a dual-stack socket's IPv4 clients count as IPv4.
 */
static void test_source_limits_per_64(void **state)
{
	struct vw_conntable *t = vw_conntable_new(64, 2);
	struct vw_src_key k;
	bool full;
	char buf[64];

	(void)state;
	assert_true(same_source("2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:fffe"));
	assert_false(same_source("2001:db8:1:2::1", "2001:db8:1:3::1"));
	assert_true(same_source("::ffff:192.0.2.7", "192.0.2.7"));
	assert_false(same_source("192.0.2.7", "192.0.2.8"));
	key_of("2001:db8:1:2:3:4:5:6", &k);
	vw_src_key_str(&k, buf, sizeof(buf));
	assert_string_equal(buf, "2001:db8:1:2::/64");
	/* Two connections from one /64, a third from another address of it is refused. */
	assert_non_null(t);
	for (int i = 0; i < 2; i++) {
		key_of(i ? "2001:db8::2" : "2001:db8::1", &k);
		assert_true(vw_conntable_admit(t, &k, noop_close, &full));
		assert_non_null(vw_conntable_add(t, &k, 100 + i, 1, NULL));
	}
	key_of("2001:db8::ffff:3", &k);
	assert_false(vw_conntable_admit(t, &k, noop_close, &full));
	assert_true(full);
	key_of("2001:db8:0:1::1", &k);
	assert_true(vw_conntable_admit(t, &k, noop_close, &full));
	vw_conntable_free(t);
}

/* A TCP connection to the server from a given loopback address. */
static int connect_from(uint16_t port, const char *from)
{
	struct sockaddr_in local = {.sin_family = AF_INET};
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(inet_pton(AF_INET, from, &local.sin_addr), 1);
	assert_int_equal(bind(fd, (struct sockaddr *)&local, sizeof(local)), 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* Whether the server has closed fd (EOF or an error), waiting up to wait_ms. */
static bool closed_by_server(int fd, int wait_ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	char buf[256];

	if (poll(&p, 1, wait_ms) != 1)
		return false;
	return read(fd, buf, sizeof(buf)) <= 0;
}

#define LORIS_SOURCES 5
#define LORIS_EACH 16

/*
 * Slowloris from 5 addresses, 16 connections each (80: more than the 64 slots), each sending
 * its request head one header line every 0.5 s (the idle timeout never fires): a scrape is
 * still served at once, and every trickling connection is closed once the 2 s head deadline
 * has passed.
 */
static void test_slowloris(void **state)
{
	static const char line[] = "GET /metrics HTTP/1.1\r\nHost: x\r\n";
	int fds[LORIS_SOURCES * LORIS_EACH];
	struct server s;
	unsigned open_after = 0;

	(void)state;
	server_start_published(&s, (struct vw_http_opts){.header_timeout_s = 2, .timeout_s = 30});
	for (int i = 0; i < LORIS_SOURCES * LORIS_EACH; i++) {
		char from[16];

		snprintf(from, sizeof(from), "127.0.0.%d", 2 + i / LORIS_EACH);
		fds[i] = connect_from(s.port, from);
		(void)!send(fds[i], line, sizeof(line) - 1, MSG_NOSIGNAL);
	}
	for (int step = 0; step < 10; step++) {
		usleep(500 * 1000);
		for (int i = 0; i < LORIS_SOURCES * LORIS_EACH; i++)
			(void)!send(fds[i], "X-Slow: 1\r\n", 11, MSG_NOSIGNAL);
		if (step % 2 == 0) {
			struct timespec t0, t1;
			struct reply r;
			double took;

			clock_gettime(CLOCK_MONOTONIC, &t0);
			r = fetch(s.port, &(struct request){.path = "/metrics", .timeout_ms = 3000});
			clock_gettime(CLOCK_MONOTONIC, &t1);
			took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
			if (r.code != CURLE_OK || r.status != 200 || took > 1.0)
				fail_msg("scrape during slowloris: curl %d, status %ld, %.2f s", r.code,
					 r.status, took);
			reply_clear(&r);
		}
	}
	/* 5 s of trickling: every connection is past its 2 s deadline (a busy machine may take
	 * another second to close them all). */
	for (int i = 0; i < LORIS_SOURCES * LORIS_EACH; i++) {
		open_after += !closed_by_server(fds[i], i ? 20 : 1000);
		close(fds[i]);
	}
	if (open_after)
		fail_msg("%u trickling connections still open after 5 s", open_after);
	server_stop(&s);
}

/*
 * Under `ulimit -n 64` the default 64 connections would take every descriptor: the limit is
 * lowered with a warning at start, and with 70 connections open files can still be opened (the
 * meters' reads). Runs in a child: the limit is the process's.
 */
static void test_fd_limit(void **state)
{
	int to_child[2], to_parent[2], status, fds[70];
	uint16_t port;
	pid_t pid;
	char go;

	(void)state;
	assert_int_equal(pipe(to_child), 0);
	assert_int_equal(pipe(to_parent), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rlimit rl = {.rlim_cur = 64, .rlim_max = 64};
		struct vw_exposition *x = vw_exposition_new();
		struct vw_http *h;
		int failed = 0;
		bool warned;

		close(to_child[1]);
		close(to_parent[0]);
		seen_log[0] = '\0';
		vw_log_set_sink(capture_sink, NULL);
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			_exit(10);
		h = vw_http_start(&(struct vw_http_opts){.listen_address = "127.0.0.1:0"}, x);
		if (!h)
			_exit(11);
		warned = strstr(seen_log, "does not fit the open-file limit (RLIMIT_NOFILE 64") &&
			 strstr(seen_log, "serving at most 8 connections");
		port = vw_http_port(h);
		if (write(to_parent[1], &port, sizeof(port)) != sizeof(port) ||
		    read(to_child[0], &go, 1) != 1)
			_exit(13);
		for (int i = 0; i < 20; i++) {
			int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

			failed += fd < 0;
			fds[i] = fd;
		}
		for (int i = 0; i < 20; i++)
			if (fds[i] >= 0)
				close(fds[i]);
		vw_http_stop(h);
		vw_exposition_free(x);
		_exit((warned ? 0 : 2) | (failed ? 4 : 0));
	}
	close(to_child[0]);
	close(to_parent[1]);
	assert_int_equal(read(to_parent[0], &port, sizeof(port)), sizeof(port));
	for (int i = 0; i < 70; i++) { /* from 5 addresses: past the limit per address */
		char from[16];

		snprintf(from, sizeof(from), "127.0.0.%d", 2 + i % 5);
		fds[i] = connect_from(port, from);
	}
	usleep(500 * 1000); /* accepted, as far as the server will */
	assert_int_equal(write(to_child[1], "g", 1), 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	for (int i = 0; i < 70; i++)
		close(fds[i]);
	close(to_child[1]);
	close(to_parent[0]);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) != 0)
		fail_msg("child: %s%s%s", WEXITSTATUS(status) & 2 ? "no warning at start; " : "",
			 WEXITSTATUS(status) & 4 ? "files could not be opened (EMFILE); " : "",
			 WEXITSTATUS(status) & ~6 ? "failed before the check" : "");
}

static void test_dual_stack(void **state)
{
	struct server s;
	struct reply r;
	char url[64];
	CURL *c;

	(void)state;
	server_start_published(&s, (struct vw_http_opts){.listen_address = ":0"});
	assert_int_equal(get_status(s.port, "/metrics", sample_text), 200);
	/* IPv6 loopback too, where the kernel has it */
	c = curl_easy_init();
	snprintf(url, sizeof(url), "http://[::1]:%u/readyz", (unsigned)s.port);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
	r.code = curl_easy_perform(c);
	if (r.code != CURLE_COULDNT_CONNECT) {
		assert_int_equal(r.code, CURLE_OK);
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
		assert_int_equal(r.status, 200);
	}
	curl_easy_cleanup(c);
	server_stop(&s);
}

/* Inflate a gzip body (as a scraper does). */
static char *gunzip(const char *in, size_t len)
{
	z_stream zs = {0};
	static char out[65536];

	assert_int_equal(inflateInit2(&zs, 15 + 16), Z_OK);
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)len;
	zs.next_out = (Bytef *)out;
	zs.avail_out = sizeof(out) - 1;
	assert_int_equal(inflate(&zs, Z_FINISH), Z_STREAM_END);
	out[zs.total_out] = '\0';
	inflateEnd(&zs);
	return out;
}

static void test_accepts_gzip(void **state)
{
	static const struct {
		const char *ae;
		bool gzip;
	} cases[] = {
		{NULL, false}, {"", false}, {"gzip", true}, {"GZip", true}, {"x-gzip", true},
		{"deflate, gzip, br, zstd", true}, {"gzip;q=0", false}, {"gzip; q=0.000", false},
		{"gzip;q=0.5", true}, {"*", true}, {"*;q=0", false}, {"gzip;q=0, *", false},
		{"identity", false}, {"gzipx", false}, {"br;q=1, *;q=0.1", true},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		if (vw_http_accepts_gzip(cases[i].ae) != cases[i].gzip)
			fail_msg("Accept-Encoding: %s: expected %s", cases[i].ae ? cases[i].ae : "(none)",
				 cases[i].gzip ? "gzip" : "identity");
}

/*
 * gzip to scrapers that accept it (Prometheus always sends Accept-Encoding: gzip), each
 * snapshot's rendering compressed once however many scrapes; identity otherwise.
 */
static void test_gzip(void **state)
{
	struct server s;
	struct reply r;

	(void)state;
	server_start_published(&s, (struct vw_http_opts){0});
	for (int i = 0; i < 3; i++) {
		r = fetch(s.port, &(struct request){.path = "/metrics",
						      .header = "Accept-Encoding: gzip"});
		assert_int_equal(r.status, 200);
		assert_true(has_header(&r, "\r\nContent-Encoding: gzip\r\n"));
		assert_true(has_header(&r, "\r\nVary: Accept, Accept-Encoding\r\n"));
		assert_true(r.body_len > 10 && (unsigned char)r.body[0] == 0x1f &&
			    (unsigned char)r.body[1] == 0x8b);
		/* XFL 4: compressed at the fastest level (exposition.h), not zlib's default */
		assert_int_equal((unsigned char)r.body[8], 4);
		assert_string_equal(gunzip(r.body, r.body_len), sample_text);
		reply_clear(&r);
	}
	assert_int_equal(vw_exposition_compressions(s.x), 1);
	/* Prometheus 3's request: OpenMetrics, gzipped. */
	r = fetch(s.port, &(struct request){.path = "/metrics", .accept = PROM3_ACCEPT,
					      .header = "Accept-Encoding: gzip"});
	assert_string_equal(r.content_type, OM_CT);
	assert_string_equal(gunzip(r.body, r.body_len), sample_om);
	reply_clear(&r);
	assert_int_equal(vw_exposition_compressions(s.x), 2);
	/* No Accept-Encoding, or gzip refused: identity. */
	r = fetch(s.port, &(struct request){.path = "/metrics", .header = "Accept-Encoding: gzip;q=0"});
	assert_false(has_header(&r, "Content-Encoding"));
	assert_string_equal(r.body, sample_text);
	reply_clear(&r);
	/* A new snapshot: compressed again, once. */
	publish(s.x, "vw_up 2\n", NULL);
	for (int i = 0; i < 2; i++) {
		r = fetch(s.port, &(struct request){.path = "/metrics",
						      .header = "Accept-Encoding: gzip"});
		assert_string_equal(gunzip(r.body, r.body_len), "vw_up 2\n");
		reply_clear(&r);
	}
	assert_int_equal(vw_exposition_compressions(s.x), 3);
	server_stop(&s);
}

/* ---- OpenMetrics derived from the text, on the first request for it ---- */

static const char *const gen_labels[] = { "line", NULL };
static const struct vw_metric_family gen_up = { "vw_gen_up", VW_METRIC_GAUGE, "Generation.",
						NULL, NULL };
static const struct vw_metric_family gen_seconds = {
	"vw_gen_seconds_total", VW_METRIC_COUNTER, "Seconds of \"generation\" g,\nby line.",
	"seconds", gen_labels
};

/* Generation g (its size varies with g) written by a writer of fmt; its layout kept when
 * ret_layout (text only). */
static char *render_gen(unsigned g, enum vw_prom_format fmt, size_t *ret_len,
			struct vw_prom_layout **ret_layout)
{
	struct vw_prom_writer *w = vw_prom_writer_new(fmt, 0);
	char *out = NULL, line[16];
	int r;

	if (!w)
		return NULL;
	r = ret_layout ? vw_prom_writer_keep_layout(w) : 0;
	if (r == 0)
		r = vw_prom_single(w, &gen_up, NULL, g);
	if (r == 0)
		r = vw_prom_family(w, &gen_seconds);
	for (unsigned i = 0; r == 0 && i < 200 + (g % 7) * 100; i++) {
		snprintf(line, sizeof(line), "%u", i);
		r = vw_prom_counter(w, (const char *[]){ line, NULL }, g + i / 4.0);
	}
	if (r == 0)
		r = vw_prom_finish(w, &out, ret_len);
	if (r == 0 && ret_layout) {
		*ret_layout = vw_prom_writer_take_layout(w);
		if (!*ret_layout)
			r = -EINVAL;
	}
	vw_prom_writer_free(w);
	if (r < 0)
		free(VW_TAKE_PTR(out));
	return out;
}

/* Publish generation g as a daemon does: the text and its layout. */
static void publish_gen(struct vw_exposition *x, unsigned g)
{
	struct vw_prom_layout *l = NULL;
	size_t len;
	char *text = render_gen(g, VW_PROM_TEXT_0_0_4, &len, &l);

	assert_non_null(text);
	vw_exposition_publish_layout(x, text, len, l);
}

/* r is generation g in the format asked, whole, as an OpenMetrics writer (not the derivation)
 * or a text writer writes it; *ret_g is g. */
static bool gen_reply_ok(const struct reply *r, bool om, unsigned *ret_g)
{
	const char *up = r->body ? strstr(r->body, "\nvw_gen_up ") : NULL;
	unsigned g;
	size_t len;
	bool ok;

	if (r->code != CURLE_OK || r->status != 200 || !up || sscanf(up, "\nvw_gen_up %u", &g) != 1)
		return false;
	_cleanup_free_ char *want = render_gen(g, om ? VW_PROM_OPENMETRICS_1_0_0 : VW_PROM_TEXT_0_0_4,
					      &len, NULL);
	ok = want && r->body_len == len && memcmp(r->body, want, len) == 0 &&
	     strcmp(r->content_type, om ? OM_CT : TEXT_CT) == 0;
	if (ok && ret_g)
		*ret_g = g;
	return ok;
}

/*
 * A snapshot published with its layout: OpenMetrics requests get the OpenMetrics rendering
 * (byte for byte an OpenMetrics writer's), derived once, by the first of them, with its gzip
 * made once too; text requests derive nothing; a snapshot no OpenMetrics scraper fetched is
 * never derived.
 */
static void test_openmetrics_derived(void **state)
{
	_cleanup_free_ char *text1 = NULL, *om1 = NULL, *copy = NULL;
	size_t text1_len, om1_len, len;
	struct server s;
	struct reply r;
	unsigned g = 0;

	(void)state;
	text1 = render_gen(1, VW_PROM_TEXT_0_0_4, &text1_len, NULL);
	om1 = render_gen(1, VW_PROM_OPENMETRICS_1_0_0, &om1_len, NULL);
	assert_non_null(text1);
	assert_non_null(om1);
	server_start(&s, (struct vw_http_opts){0});
	publish_gen(s.x, 1);
	for (int i = 0; i < 2; i++) {
		r = fetch(s.port, &(struct request){ .path = "/metrics" });
		assert_true(gen_reply_ok(&r, false, &g));
		reply_clear(&r);
	}
	assert_int_equal(vw_exposition_derivations(s.x), 0);
	for (int i = 0; i < 3; i++) {
		r = fetch_om(s.port, false);
		assert_true(gen_reply_ok(&r, true, &g));
		assert_int_equal(g, 1);
		assert_content_length(&r, om1_len);
		reply_clear(&r);
		assert_int_equal(vw_exposition_derivations(s.x), 1);
	}
	r = fetch_om(s.port, true);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.content_type, OM_CT);
	assert_content_length(&r, om1_len);
	reply_clear(&r);
	/* Prometheus 3: OpenMetrics, gzipped once for the snapshot. */
	for (int i = 0; i < 3; i++) {
		r = fetch(s.port, &(struct request){ .path = "/metrics", .accept = PROM3_ACCEPT,
						     .header = "Accept-Encoding: gzip" });
		assert_string_equal(r.content_type, OM_CT);
		assert_true(has_header(&r, "\r\nContent-Encoding: gzip\r\n"));
		assert_string_equal(gunzip(r.body, r.body_len), om1);
		reply_clear(&r);
	}
	assert_int_equal(vw_exposition_compressions(s.x), 1);
	assert_int_equal(vw_exposition_copy(s.x, 1, &copy, &len), 0);
	assert_string_equal(copy, om1);
	free(VW_TAKE_PTR(copy));
	assert_int_equal(vw_exposition_copy(s.x, 0, &copy, &len), 0);
	assert_string_equal(copy, text1);
	free(VW_TAKE_PTR(copy));
	assert_int_equal(vw_exposition_derivations(s.x), 1);

	/* The next snapshot: text and OpenMetrics alternately, derived once. */
	publish_gen(s.x, 2);
	for (int i = 0; i < 6; i++) {
		r = i % 2 ? fetch_om(s.port, false) : fetch(s.port, &(struct request){ .path = "/metrics" });
		assert_true(gen_reply_ok(&r, i % 2, &g));
		assert_int_equal(g, 2);
		reply_clear(&r);
	}
	assert_int_equal(vw_exposition_derivations(s.x), 2);
	/* One only scraped as text, then one without a layout: OpenMetrics requests get text. */
	publish_gen(s.x, 3);
	r = fetch(s.port, &(struct request){ .path = "/metrics" });
	assert_true(gen_reply_ok(&r, false, &g));
	reply_clear(&r);
	publish(s.x, text1, NULL);
	r = fetch_om(s.port, false);
	assert_string_equal(r.body, text1);
	assert_string_equal(r.content_type, TEXT_CT);
	reply_clear(&r);
	assert_int_equal(vw_exposition_derivations(s.x), 2);
	server_stop(&s);
}

#define DERIVE_ROUNDS 40

struct derive_race {
	struct vw_exposition *x;
	uint16_t port;
	unsigned asked; /* requests made so far, both scrapers */
	unsigned unavailable, bad, ok;
	unsigned last_gen;
};

struct derive_scraper {
	struct derive_race *rc;
	bool om_first;
};

/* Text and OpenMetrics alternately, from the start (before the first snapshot). */
static void *derive_scraper(void *arg)
{
	struct derive_scraper *ds = arg;
	struct derive_race *rc = ds->rc;
	CURL *c = curl_easy_init();

	for (unsigned i = 0; c && i < DERIVE_ROUNDS; i++) {
		bool om = (i % 2) != ds->om_first;
		struct reply r = { 0 };

		perform(c, rc->port,
			&(struct request){ .path = "/metrics", .accept = om ? OM_ACCEPT : NULL }, &r);
		if (r.code == CURLE_OK && r.status == 503)
			__atomic_add_fetch(&rc->unavailable, 1, __ATOMIC_RELAXED);
		else
			__atomic_add_fetch(gen_reply_ok(&r, om, NULL) ? &rc->ok : &rc->bad, 1,
					   __ATOMIC_RELAXED);
		__atomic_add_fetch(&rc->asked, 1, __ATOMIC_RELEASE);
		reply_clear(&r);
	}
	curl_easy_cleanup(c);
	return NULL;
}

/* Copies of the current snapshot in both formats, alternately, from two threads. */
static void *derive_copier(void *arg)
{
	struct derive_scraper *ds = arg;
	struct derive_race *rc = ds->rc;

	for (unsigned i = 0; i < DERIVE_ROUNDS; i++) {
		bool om = (i % 2) != ds->om_first;
		struct reply r = { .code = CURLE_OK, .status = 200 };

		if (vw_exposition_copy(rc->x, om, &r.body, &r.body_len) < 0) {
			__atomic_add_fetch(&rc->bad, 1, __ATOMIC_RELAXED);
			continue;
		}
		snprintf(r.content_type, sizeof(r.content_type), "%s", om ? OM_CT : TEXT_CT);
		__atomic_add_fetch(gen_reply_ok(&r, om, NULL) ? &rc->ok : &rc->bad, 1,
				   __ATOMIC_RELAXED);
		free(r.body);
	}
	return NULL;
}

/*
 * Two scrapers from before the first snapshot, one asking text then OpenMetrics, the other the
 * other way round, while snapshots are replaced: every body is one generation whole in the
 * format asked; no snapshot is derived twice. Then two threads on one snapshot: derived once.
 */
static void test_openmetrics_derived_concurrent(void **state)
{
	struct derive_race rc = { 0 };
	struct derive_scraper ds[2] = { { &rc, false }, { &rc, true } };
	pthread_t t[2];
	struct server s;
	unsigned g = 0;

	(void)state;
	server_start(&s, (struct vw_http_opts){ 0 });
	rc.x = s.x;
	rc.port = s.port;
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, derive_scraper, &ds[i]), 0);
	/* Both have asked once (503s) before the first snapshot. */
	while (__atomic_load_n(&rc.asked, __ATOMIC_ACQUIRE) < 2)
		usleep(1000);
	while (__atomic_load_n(&rc.asked, __ATOMIC_ACQUIRE) < 2 * DERIVE_ROUNDS) {
		publish_gen(s.x, ++g);
		usleep(3000);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	print_message("# %u bodies right, %u wrong, %u 503s, %u snapshots, %" PRIu64 " derived\n",
		      rc.ok, rc.bad, rc.unavailable, g, vw_exposition_derivations(s.x));
	assert_int_equal(rc.bad, 0);
	assert_true(rc.unavailable >= 2);
	assert_int_equal(rc.ok + rc.unavailable, 2 * DERIVE_ROUNDS);
	assert_true(vw_exposition_derivations(s.x) >= 1);
	assert_true(vw_exposition_derivations(s.x) <= g);

	for (int round = 0; round < 5; round++) {
		uint64_t before;

		publish_gen(s.x, ++g);
		before = vw_exposition_derivations(s.x);
		for (int i = 0; i < 2; i++)
			assert_int_equal(pthread_create(&t[i], NULL, derive_copier, &ds[i]), 0);
		for (int i = 0; i < 2; i++)
			pthread_join(t[i], NULL);
		assert_int_equal(rc.bad, 0);
		assert_int_equal(vw_exposition_derivations(s.x), before + 1);
	}
	server_stop(&s);
}

/* Keep-alive: scrapes on one connection, each a new request (curl reuses it). */
static void test_keep_alive(void **state)
{
	struct server s;
	CURL *c = curl_easy_init();
	long new_conns = -1;

	(void)state;
	server_start_published(&s, (struct vw_http_opts){0});
	for (int i = 0; i < 3; i++) {
		struct reply r = {0};

		perform(c, s.port, &(struct request){.path = "/metrics"}, &r);
		assert_int_equal(r.status, 200);
		assert_string_equal(r.body, sample_text);
		curl_easy_getinfo(c, CURLINFO_NUM_CONNECTS, &new_conns);
		if (i > 0)
			assert_int_equal(new_conns, 0); /* the same connection */
		reply_clear(&r);
	}
	curl_easy_cleanup(c);
	server_stop(&s);
}

/* [::]:PORT listens on IPv4 too, as node_exporter's (Helm charts copy "[::]:9100"). */
static void test_any6_dual_stack(void **state)
{
	struct server s;
	struct reply r;
	char url[64];
	CURL *c;

	(void)state;
	server_start_published(&s, (struct vw_http_opts){.listen_address = "[::]:0"});
	assert_int_equal(get_status(s.port, "/metrics", sample_text), 200); /* 127.0.0.1 */
	c = curl_easy_init();
	snprintf(url, sizeof(url), "http://[::1]:%u/readyz", (unsigned)s.port);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
	r.code = curl_easy_perform(c);
	assert_int_equal(r.code, CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
	assert_int_equal(r.status, 200);
	curl_easy_cleanup(c);
	server_stop(&s);
}

/* ---- Concurrency: 50 scrapers while snapshots are replaced in a loop ---- */

#define SCRAPERS 50
#define SCRAPES_EACH 10

/* Generation g: a header naming g, then lines that all carry g (size varies with g). */
static char *generation(unsigned g, bool om, size_t *ret_len)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	fprintf(f, "# HELP vw_gen Generation %u.\n# TYPE vw_gen gauge\n", g);
	for (unsigned i = 0; i < 1000 + (g % 13) * 500; i++)
		fprintf(f, "vw_gen{line=\"%u\"} %u\n", i, g);
	if (om)
		fputs("# EOF\n", f);
	fclose(f);
	*ret_len = len;
	return buf;
}

struct race {
	struct vw_exposition *x;
	uint16_t port;
	bool stop;
	unsigned published;
	unsigned bad;
	unsigned ok;
};

static void *publisher(void *arg)
{
	struct race *rc = arg;

	for (unsigned g = 1; !__atomic_load_n(&rc->stop, __ATOMIC_ACQUIRE); g++) {
		size_t tl, ol;
		char *t = generation(g, false, &tl), *o = generation(g, true, &ol);

		vw_exposition_publish(rc->x, t, tl, o, ol);
		__atomic_store_n(&rc->published, g, __ATOMIC_RELEASE);
		usleep(200);
	}
	return NULL;
}

/* A scraped body must be exactly one generation, whole. */
static bool body_consistent(const struct reply *r, bool om)
{
	unsigned g;
	size_t len;
	bool same;

	if (r->code != CURLE_OK || r->status != 200 || !r->body ||
	    sscanf(r->body, "# HELP vw_gen Generation %u.", &g) != 1)
		return false;
	_cleanup_free_ char *want = generation(g, om, &len);
	same = r->body_len == len && memcmp(r->body, want, len) == 0;
	return same && strcmp(r->content_type, om ? OM_CT : TEXT_CT) == 0;
}

static void *scraper(void *arg)
{
	struct race *rc = arg;
	CURL *c = curl_easy_init();

	for (unsigned i = 0; c && i < SCRAPES_EACH; i++) {
		bool om = i % 2;
		struct reply r = {0};

		perform(c, rc->port,
			&(struct request){.path = "/metrics", .accept = om ? OM_ACCEPT : NULL}, &r);
		__atomic_add_fetch(body_consistent(&r, om) ? &rc->ok : &rc->bad, 1, __ATOMIC_RELAXED);
		reply_clear(&r);
	}
	curl_easy_cleanup(c);
	return NULL;
}

static void test_concurrent_scrapes(void **state)
{
	pthread_t pub, scr[SCRAPERS];
	struct server s;
	struct race rc = {0};
	size_t tl, ol;
	char *t, *o;

	(void)state;
	server_start(&s, (struct vw_http_opts){.max_connections = 128,
					       .per_ip_connections = 128});
	t = generation(0, false, &tl);
	o = generation(0, true, &ol);
	vw_exposition_publish(s.x, t, tl, o, ol);
	rc.x = s.x;
	rc.port = s.port;
	assert_int_equal(pthread_create(&pub, NULL, publisher, &rc), 0);
	for (size_t i = 0; i < SCRAPERS; i++)
		assert_int_equal(pthread_create(&scr[i], NULL, scraper, &rc), 0);
	for (size_t i = 0; i < SCRAPERS; i++)
		pthread_join(scr[i], NULL);
	__atomic_store_n(&rc.stop, true, __ATOMIC_RELEASE);
	pthread_join(pub, NULL);
	print_message("# %u scrapes consistent, %u not, %u snapshots published meanwhile\n", rc.ok,
		      rc.bad, rc.published);
	assert_int_equal(rc.bad, 0);
	assert_int_equal(rc.ok, SCRAPERS * SCRAPES_EACH);
	assert_true(rc.published > 10);
	server_stop(&s);
}

static bool peer_never_gone(int fd)
{
	(void)fd;
	return false;
}

/*
 * The housekeeping thread's wake time: the earliest head start of the connections still in
 * their head plus the deadline (none: never), and which sockets are still open connections.
 */
static void test_conntable_deadlines(void **state)
{
	struct vw_conntable *t = vw_conntable_new(8, 8);
	struct vw_conn *a, *b;
	struct vw_src_key k;
	bool full;

	(void)state;
	key_of("192.0.2.1", &k);
	assert_int_equal(vw_conntable_next_deadline(t, 10), UINT64_MAX);
	assert_true(vw_conntable_admit(t, &k, noop_close, &full));
	a = vw_conntable_add(t, &k, 40, 100, NULL);
	assert_true(vw_conntable_admit(t, &k, noop_close, &full));
	b = vw_conntable_add(t, &k, 41, 50, NULL);
	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(vw_conntable_next_deadline(t, 10), 60);
	assert_int_equal(vw_conntable_next_deadline(t, UINT64_MAX), UINT64_MAX);
	vw_conn_head_done(t, b); /* its head came: its deadline no longer counts */
	assert_int_equal(vw_conntable_next_deadline(t, 10), 110);
	vw_conn_request_done(t, b, 200); /* answered: the next head's deadline from now */
	assert_int_equal(vw_conntable_next_deadline(t, 10), 110);
	assert_true(vw_conntable_open(t, 40) && vw_conntable_open(t, 41));
	assert_false(vw_conntable_open(t, 42));
	/* past a's deadline: marked for closing, no longer open, no longer the nearest */
	assert_int_equal(vw_conntable_expire(t, 111, 10, noop_close, peer_never_gone), 1);
	assert_false(vw_conntable_open(t, 40));
	assert_int_equal(vw_conntable_next_deadline(t, 10), 210);
	vw_conntable_remove(t, a);
	vw_conntable_remove(t, b);
	assert_false(vw_conntable_open(t, 41));
	assert_int_equal(vw_conntable_next_deadline(t, 10), UINT64_MAX);
	vw_conntable_free(t);
}

/* A fake server for the retirement's state machine: its open connections, what was called. */
struct fake_server {
	unsigned open, closes, cancels, stops, open_after_cancel;
	enum vw_retire_end why;
	uint64_t took_ns;
};

static unsigned fake_close_idle(void *cls)
{
	struct fake_server *f = cls;

	__atomic_add_fetch(&f->closes, 1, __ATOMIC_SEQ_CST);
	return __atomic_load_n(&f->open, __ATOMIC_SEQ_CST);
}

static void fake_cancel(void *cls)
{
	struct fake_server *f = cls;

	f->cancels++;
	__atomic_store_n(&f->open, f->open_after_cancel, __ATOMIC_SEQ_CST);
}

static void fake_stop(void *cls, enum vw_retire_end why, unsigned open, uint64_t took_ns)
{
	struct fake_server *f = cls;

	f->why = why;
	f->took_ns = took_ns;
	f->open = open;
	__atomic_store_n(&f->stops, 1, __ATOMIC_SEQ_CST);
}

static const struct vw_retire_ops fake_ops = {
	.close_idle = fake_close_idle, .cancel = fake_cancel, .stop = fake_stop,
};

static struct vw_retire *fake_retire(struct vw_retirements *rs, struct fake_server *f,
				     uint64_t bound_ms)
{
	struct vw_retire *r = vw_retire_new(&fake_ops, f, bound_ms * 1000000ULL);

	assert_non_null(r);
	assert_int_equal(vw_retirements_start(rs, r), 0);
	return r;
}

/* Whether the fake server was stopped within ms. */
static bool fake_stopped_within(struct fake_server *f, int ms)
{
	for (int i = 0; i < ms && !__atomic_load_n(&f->stops, __ATOMIC_SEQ_CST); i++)
		usleep(1000);
	return __atomic_load_n(&f->stops, __ATOMIC_SEQ_CST);
}

/*
 * The retirement waits for the server's last connection, woken by its events (a kick), up to
 * its bound; past it, parked work is cancelled and given the grace (drained if that answered
 * it, else cut); an end of everything stops it at once; ended ones are reaped.
 */
static void test_retire_states(void **state)
{
	struct vw_retirements *rs = vw_retirements_new();
	struct fake_server drained = { .open = 1 }, bound = { .open = 2 },
			   answered = { .open = 1, .open_after_cancel = 0 }, cut = { .open = 1 };
	struct vw_retire *r;
	struct timespec t0, t1;

	(void)state;
	assert_non_null(rs);
	/* Drained: stays while a connection is open, stops at the kick after its close. */
	r = fake_retire(rs, &drained, 10000);
	assert_false(fake_stopped_within(&drained, 100));
	assert_int_equal(__atomic_load_n(&drained.closes, __ATOMIC_SEQ_CST), 1); /* no polling */
	__atomic_store_n(&drained.open, 0, __ATOMIC_SEQ_CST);
	vw_retire_kick(r);
	assert_true(fake_stopped_within(&drained, 1000));
	assert_int_equal(drained.why, VW_RETIRE_DRAINED);
	assert_int_equal(drained.cancels, 0);
	/* The bound: cancelled, then cut after the grace; or drained by the cancel. */
	bound.open_after_cancel = 2;
	fake_retire(rs, &bound, 100);
	fake_retire(rs, &answered, 100);
	assert_true(fake_stopped_within(&bound, 2000) && fake_stopped_within(&answered, 2000));
	assert_int_equal(bound.why, VW_RETIRE_BOUND);
	assert_int_equal(bound.open, 2);
	assert_int_equal(bound.cancels, 1);
	assert_true(bound.took_ns >= (100 + VW_RETIRE_GRACE_MS) * 1000000ULL);
	assert_int_equal(answered.why, VW_RETIRE_DRAINED);
	assert_int_equal(answered.cancels, 1);
	vw_retirements_reap(rs);
	assert_int_equal(vw_retirements_count(rs), 0);
	/* Everything stopping: at once, not at its 10 s bound. */
	fake_retire(rs, &cut, 10000);
	assert_int_equal(vw_retirements_count(rs), 1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	vw_retirements_free(rs);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true(cut.stops && cut.why == VW_RETIRE_SHUTDOWN && cut.cancels == 0);
	assert_true((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 < 500);
}

static unsigned closed_fds;

static void count_close(int fd)
{
	closed_fds += (unsigned)fd;
}

/* A retiring server's connections with no request begun are closed, its others and another
 * server's are not; all of its own are counted until removed. */
static void test_conntable_close_idle(void **state)
{
	struct vw_conntable *t = vw_conntable_new(8, 8);
	int old_srv, new_srv;
	struct vw_src_key k;
	struct vw_conn *busy, *idle, *other;
	bool full;

	(void)state;
	key_of("127.0.0.1", &k);
	for (int i = 0; i < 3; i++)
		assert_true(vw_conntable_admit(t, &k, noop_close, &full));
	busy = vw_conntable_add(t, &k, 1, 0, &old_srv);
	idle = vw_conntable_add(t, &k, 10, 0, &old_srv);
	other = vw_conntable_add(t, &k, 100, 0, &new_srv);
	vw_conn_head_done(t, busy); /* being answered */
	closed_fds = 0;
	assert_int_equal(vw_conntable_close_idle(t, &old_srv, count_close), 2);
	assert_int_equal(closed_fds, 10);
	assert_false(vw_conntable_open(t, 10));
	assert_true(vw_conntable_open(t, 1) && vw_conntable_open(t, 100));
	/* Again: nothing more to close until the answer is done. */
	assert_int_equal(vw_conntable_close_idle(t, &old_srv, count_close), 2);
	assert_int_equal(closed_fds, 10);
	vw_conn_request_done(t, busy, 5);
	vw_conntable_remove(t, idle);
	assert_int_equal(vw_conntable_close_idle(t, &old_srv, count_close), 1);
	assert_int_equal(closed_fds, 11);
	vw_conntable_remove(t, busy);
	assert_int_equal(vw_conntable_close_idle(t, &old_srv, count_close), 0);
	assert_true(vw_conntable_open(t, 100));
	vw_conntable_remove(t, other);
	vw_conntable_free(t);
}

/* A request on a raw kept-alive connection, its answer read whole (the test body is short). */
static int served_connection(uint16_t port)
{
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
	struct pollfd p;
	char buf[4096];
	size_t got = 0;
	int fd = idle_connect(port);

	assert_int_equal(send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL), (ssize_t)sizeof(req) - 1);
	p = (struct pollfd){.fd = fd, .events = POLLIN};
	while (got < sizeof(buf) - 1 && !memmem(buf, got, "vw_up 1\n", 8) && poll(&p, 1, 5000) == 1) {
		ssize_t n = read(fd, buf + got, sizeof(buf) - 1 - got);

		assert_true(n > 0);
		got += (size_t)n;
	}
	assert_non_null(memmem(buf, got, "vw_up 1\n", 8));
	return fd;
}

/* Voluntary context switches of every thread but the caller's (the server's threads). */
static long server_wakeups(void)
{
	char path[300], line[128];
	long sum = 0;
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;

	assert_non_null(d);
	while ((de = readdir(d))) {
		FILE *f;

		if (de->d_name[0] == '.' || atol(de->d_name) == (long)gettid())
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/status", de->d_name);
		f = fopen(path, "r");
		while (f && fgets(line, sizeof(line), f))
			if (strncmp(line, "voluntary_ctxt_switches:", 24) == 0)
				sum += atol(line + 24);
		if (f)
			fclose(f);
	}
	closedir(d);
	return sum;
}

/*
 * A scraper that keeps its connection between scrapes costs the server no wake-up: the
 * housekeeping thread sleeps until the next head deadline (30 s here) instead of waking four
 * times a second to look at every connection.
 */
static void test_housekeeping_sleeps(void **state)
{
	struct server s;
	long w0, w1;
	int fd;

	(void)state;
	server_start_published(&s, (struct vw_http_opts){.timeout_s = 30, .header_timeout_s = 30});
	fd = served_connection(s.port);
	usleep(200 * 1000);
	w0 = server_wakeups();
	usleep(2000 * 1000);
	w1 = server_wakeups();
	close(fd);
	server_stop(&s);
	if (w1 - w0 > 2)
		fail_msg("the server's threads woke %ld times in 2 s with one idle connection",
			 w1 - w0);
}

/*
 * A kept-alive connection whose client closes its side is closed by the server at once, not
 * after the header timeout (30 s here): the housekeeping thread sees the close (EPOLLRDHUP)
 * and the peer gone; and one whose client half-closes right after its request is closed
 * soon after its answer too.
 */
static void test_peer_close_seen(void **state)
{
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
	struct server s;
	char buf[4096];
	double t;
	int fd;

	(void)state;
	server_start_published(&s, (struct vw_http_opts){.timeout_s = 30, .header_timeout_s = 30});
	fd = served_connection(s.port);
	usleep(300 * 1000); /* waiting for its next request */
	assert_int_equal(shutdown(fd, SHUT_WR), 0);
	t = seconds_until_closed(fd, 10);
	close(fd);
	if (t < 0 || t > 2)
		fail_msg("a kept-alive connection whose client closed: closed after %.2f s", t);

	fd = idle_connect(s.port);
	assert_int_equal(send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL), (ssize_t)sizeof(req) - 1);
	assert_int_equal(shutdown(fd, SHUT_WR), 0);
	{
		struct timespec a, b;
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t n = 1;

		clock_gettime(CLOCK_MONOTONIC, &a);
		while (n > 0 && poll(&p, 1, 10000) == 1)
			n = read(fd, buf, sizeof(buf));
		clock_gettime(CLOCK_MONOTONIC, &b);
		t = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
		if (n != 0 || t > 2)
			fail_msg("a connection half-closed after its request: closed after %.2f s", t);
	}
	close(fd);
	server_stop(&s);
}

/*
 * A scraper that opens a connection for each scrape and closes it after the answer (curl, a
 * probe) costs the server no ticking afterwards: the close is seen, the connection goes, and
 * the housekeeping thread sleeps again instead of looking every 250 ms for a header timeout
 * (30 s here). Ten such scrapes, then 2 s quiet: at most a few wake-ups (it was ~8 a second).
 */
static void test_closed_scraper_no_ticks(void **state)
{
	struct server s;
	long w0, w1;

	(void)state;
	server_start_published(&s, (struct vw_http_opts){.timeout_s = 30, .header_timeout_s = 30});
	for (int i = 0; i < 10; i++)
		close(served_connection(s.port));
	usleep(600 * 1000); /* each close seen and its connection gone */
	w0 = server_wakeups();
	usleep(2000 * 1000);
	w1 = server_wakeups();
	server_stop(&s);
	if (w1 - w0 > 2)
		fail_msg("the server's threads woke %ld times in 2 s after its scrapers closed",
			 w1 - w0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_listen),
		cmocka_unit_test(test_start_errors),
		cmocka_unit_test(test_health_and_ready),
		cmocka_unit_test(test_ready_reasons),
		cmocka_unit_test(test_kepler_probes),
		cmocka_unit_test_setup_teardown(test_metrics_negotiated, server_setup,
						server_teardown),
		cmocka_unit_test(test_openmetrics_window),
		cmocka_unit_test(test_openmetrics_on_demand),
		cmocka_unit_test_setup_teardown(test_head, server_setup, server_teardown),
		cmocka_unit_test(test_served_only_when_sent),
		cmocka_unit_test(test_index_and_404),
		cmocka_unit_test_setup_teardown(test_methods, server_setup, server_teardown),
		cmocka_unit_test_setup_teardown(test_body_rejected, server_setup, server_teardown),
		cmocka_unit_test_setup_teardown(test_oversized_requests, server_setup,
						server_teardown),
		cmocka_unit_test(test_idle_timeout),
		cmocka_unit_test(test_connection_limits),
		cmocka_unit_test(test_source_limits_per_64),
		cmocka_unit_test(test_slowloris),
		cmocka_unit_test(test_fd_limit),
		cmocka_unit_test(test_dual_stack),
		cmocka_unit_test(test_any6_dual_stack),
		cmocka_unit_test(test_keep_alive),
		cmocka_unit_test(test_accepts_gzip),
		cmocka_unit_test(test_gzip),
		cmocka_unit_test(test_concurrent_scrapes),
		cmocka_unit_test(test_housekeeping_sleeps),
		cmocka_unit_test(test_peer_close_seen),
		cmocka_unit_test(test_closed_scraper_no_ticks),
		cmocka_unit_test(test_conntable_deadlines),
		cmocka_unit_test(test_conntable_close_idle),
		cmocka_unit_test(test_retire_states),
		cmocka_unit_test(test_openmetrics_derived),
		cmocka_unit_test(test_openmetrics_derived_concurrent),
	};
	int r;

	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return 1;
	vw_log_set_level(VW_LOG_WARN);
	r = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return r;
}

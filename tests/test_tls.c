/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The metrics endpoint with a web config, on a real libmicrohttpd/GnuTLS server and libcurl
 * (OpenSSL) as the peer: TLS verified against the test CA, basic auth on every path, client
 * certificate modes, headers, rate limit, and the file re-read on change (a broken rewrite
 * keeps the old configuration). Certificates and hashes are made at test time.
 */
#include "vw_test.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"
#include "http.h"
#include "log.h"
#include "macro.h"
#include "tls_fixture.h"
#include "webconfig.h"

#define METRIC "virtwatt_tls_test_metric 42\n"
/* A cost-12 hash no password is known to match: each wrong login is a full cost-12 bcrypt. */
#define BOB_COST12 "$2y$12$abcdefghijklmnopqrstuOabcdefghijklmnopqrstuvwxyz01234"

static struct tls_fixture tf;
static char hash_alice[128], hash_bob[128];

struct client {
	const char *path;   /* default /metrics */
	const char *user;   /* basic auth, or NULL */
	const char *pass;
	const char *cacert; /* fixture file name; default ca.crt */
	const char *cert;   /* client certificate (fixture name without .crt/.key) */
	bool plain;	    /* http:// */
	const char *from;   /* local address to connect from (127.0.0.2, ...), or NULL */
	long tls_min;	    /* CURL_SSLVERSION_* or 0 */
	const char *authorization; /* a raw Authorization header value, or NULL */
	CURL *keep;	    /* a kept handle (its connection reused when still open), or NULL */
};

struct answer {
	CURLcode code;
	long status;
	char *body;
	size_t len;
	char *headers;
	size_t hlen;
	long connects; /* connections the request opened (0: it went on a kept one) */
};

static void answer_clear(struct answer *a)
{
	free(a->body);
	free(a->headers);
	*a = (struct answer){ 0 };
}

static struct answer get(uint16_t port, const struct client *q)
{
	struct answer a = { 0 };
	char url[256], ca[512], cert[512], key[512], name[64];
	FILE *body = open_memstream(&a.body, &a.len), *hdrs = open_memstream(&a.headers, &a.hlen);
	struct curl_slist *extra = NULL;
	CURL *c = q->keep ? q->keep : curl_easy_init();

	assert_non_null(c);
	curl_easy_reset(c); /* a kept handle keeps its connections, not its options */
	snprintf(url, sizeof(url), "%s://127.0.0.1:%u%s", q->plain ? "http" : "https",
		 (unsigned)port, q->path ? q->path : "/metrics");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 20000L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CAINFO,
			 tls_fixture_path(&tf, q->cacert ? q->cacert : "ca.crt", ca, sizeof(ca)));
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
	if (q->tls_min)
		curl_easy_setopt(c, CURLOPT_SSLVERSION, q->tls_min);
	if (q->cert) {
		snprintf(name, sizeof(name), "%s.crt", q->cert);
		curl_easy_setopt(c, CURLOPT_SSLCERT, tls_fixture_path(&tf, name, cert, sizeof(cert)));
		snprintf(name, sizeof(name), "%s.key", q->cert);
		curl_easy_setopt(c, CURLOPT_SSLKEY, tls_fixture_path(&tf, name, key, sizeof(key)));
	}
	if (q->from)
		curl_easy_setopt(c, CURLOPT_INTERFACE, q->from);
	if (q->user) {
		curl_easy_setopt(c, CURLOPT_USERNAME, q->user);
		curl_easy_setopt(c, CURLOPT_PASSWORD, q->pass);
	}
	if (q->authorization) {
		char line[256];

		snprintf(line, sizeof(line), "Authorization: %s", q->authorization);
		extra = curl_slist_append(NULL, line);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, extra);
	}
	curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, hdrs);
	a.code = curl_easy_perform(c);
	curl_slist_free_all(extra);
	fclose(body);
	fclose(hdrs);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &a.status);
	curl_easy_getinfo(c, CURLINFO_NUM_CONNECTS, &a.connects);
	if (!q->keep)
		curl_easy_cleanup(c);
	return a;
}

/* Status of a request (0 when TLS or the connection failed); no metric leaks on a refusal. */
static long status_of(uint16_t port, const struct client *q)
{
	struct answer a = get(port, q);
	long st = a.code == CURLE_OK ? a.status : 0;

	if (st != 200 && a.body && strstr(a.body, "virtwatt_"))
		fail_msg("status %ld but metric text in the body: %s", st, a.body);
	if (st == 401 && !strstr(a.headers, "WWW-Authenticate: Basic"))
		fail_msg("401 without WWW-Authenticate: Basic:\n%s", a.headers);
	answer_clear(&a);
	return st;
}

struct server {
	struct vw_exposition *x;
	struct vw_http *h;
	uint16_t port;
	char config[512];
	unsigned poll_ms, settle_s; /* reload options, 0: the defaults */
	unsigned timeout_s;	    /* web.timeout (and a retirement's bound), 0: 10 s */
	unsigned max_connections;   /* 0: 64 */
};

static void write_config(struct server *s, const char *text)
{
	char tmp[512];

	/* Whole-file replace, as editors and config managers do (rename). */
	assert_int_equal(vw_fixture_write(tf.dir, "web.yml.tmp", text, 0), 0);
	tls_fixture_path(&tf, "web.yml.tmp", tmp, sizeof(tmp));
	tls_fixture_path(&tf, "web.yml", s->config, sizeof(s->config));
	assert_int_equal(rename(tmp, s->config), 0);
}

static void server_start(struct server *s, const char *config_text)
{
	struct vw_http_opts o = { .listen_address = "127.0.0.1:0", .program = "virtwatt-test",
				  .version = "1" };

	s->x = vw_exposition_new();
	assert_non_null(s->x);
	vw_exposition_publish(s->x, strdup(METRIC), strlen(METRIC), NULL, 0);
	write_config(s, config_text);
	o.web_config_file = s->config;
	o.reload_poll_ms = s->poll_ms;
	o.reload_settle_s = s->settle_s;
	o.timeout_s = s->timeout_s;
	o.max_connections = s->max_connections;
	s->h = vw_http_start(&o, s->x);
	assert_non_null(s->h);
	s->port = vw_http_port(s->h);
}

static void server_stop(struct server *s)
{
	vw_http_stop(s->h);
	vw_exposition_free(s->x);
}

static char *config_fmt(const char *fmt, ...) _printf_(1, 2);
static char *config_fmt(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	assert_true(vasprintf(&s, fmt, ap) > 0);
	va_end(ap);
	return s;
}

#define TLS_FILES "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"

static void test_tls_basic_auth(void **state)
{
	_cleanup_free_ char *cfg = config_fmt(TLS_FILES "basic_auth_users:\n  alice: '%s'\n"
						      "  bob: '%s'\n",
					      hash_alice, hash_bob);
	const char *paths[] = { "/metrics", "/healthz", "/readyz", "/", "/nope" };
	struct server s = { 0 };
	struct answer a;

	(void)state;
	server_start(&s, cfg);
	/* Verified against the CA; the metric is served to alice and bob. */
	a = get(s.port, &(struct client){ .user = "alice", .pass = "alice-pw" });
	assert_int_equal(a.code, CURLE_OK);
	assert_int_equal(a.status, 200);
	assert_non_null(strstr(a.body, METRIC));
	answer_clear(&a);
	assert_int_equal(status_of(s.port, &(struct client){ .user = "bob", .pass = "b:o b" }),
			 200);
	/* The scheme in any case, as Prometheus' Go server takes it; a password with a NUL byte
	 * refused whole, not cut at the NUL into bob's ("bob:b:o b\0junk"). */
	assert_int_equal(status_of(s.port, &(struct client){
					   .authorization = "basic YWxpY2U6YWxpY2UtcHc=" }),
			 200);
	assert_int_equal(status_of(s.port, &(struct client){
					   .authorization = "Basic Ym9iOmI6byBiAGp1bms=" }),
			 401);
	/* Another CA does not verify this server; plain HTTP gets nothing. */
	a = get(s.port, &(struct client){ .user = "alice", .pass = "alice-pw",
					   .cacert = "other-ca.crt" });
	assert_int_not_equal(a.code, CURLE_OK);
	answer_clear(&a);
	assert_int_equal(status_of(s.port, &(struct client){ .plain = true, .user = "alice",
							      .pass = "alice-pw" }),
			 0);
	/* 401 and no data everywhere without the right credentials. */
	for (size_t i = 0; i < ARRAY_SIZE(paths); i++) {
		assert_int_equal(status_of(s.port, &(struct client){ .path = paths[i] }), 401);
		assert_int_equal(status_of(s.port, &(struct client){ .path = paths[i],
								      .user = "alice",
								      .pass = "wrong" }),
				 401);
		assert_int_equal(status_of(s.port, &(struct client){ .path = paths[i],
								      .user = "mallory",
								      .pass = "alice-pw" }),
				 401);
		assert_int_equal(status_of(s.port, &(struct client){ .path = paths[i],
								      .user = "bob",
								      .pass = "alice-pw" }),
				 401);
	}
	assert_int_equal(status_of(s.port, &(struct client){ .path = "/healthz", .user = "alice",
							      .pass = "alice-pw" }),
			 200);
	server_stop(&s);
}

static void test_versions_headers_excluded(void **state)
{
	_cleanup_free_ char *cfg = config_fmt(
		TLS_FILES "  min_version: TLS13\n"
			  "http_server_config:\n  headers:\n    X-Frame-Options: deny\n"
			  "    Content-Security-Policy: \"default-src 'self'\"\n"
			  "basic_auth_users:\n  alice: '%s'\n"
			  "basic_auth_excluded_paths: [/healthz]\n",
		hash_alice);
	struct server s = { 0 };
	struct answer a;

	(void)state;
	server_start(&s, cfg);
	a = get(s.port, &(struct client){ .path = "/healthz" });
	assert_int_equal(a.code, CURLE_OK);
	assert_int_equal(a.status, 200);
	assert_non_null(strstr(a.headers, "X-Frame-Options: deny"));
	assert_non_null(strstr(a.headers, "Content-Security-Policy: default-src 'self'"));
	assert_null(strstr(a.headers, "default-src 'none'"));
	answer_clear(&a);
	/* Only the excluded path is open; the 401 carries the configured headers too. */
	a = get(s.port, &(struct client){ .path = "/metrics" });
	assert_int_equal(a.status, 401);
	assert_non_null(strstr(a.headers, "X-Frame-Options: deny"));
	answer_clear(&a);
	/* TLS 1.2 at most on the client: refused by min_version TLS13. */
	assert_int_equal(status_of(s.port, &(struct client){ .path = "/healthz",
							      .tls_min = CURL_SSLVERSION_TLSv1_2 |
									 CURL_SSLVERSION_MAX_TLSv1_2 }),
			 0);
	server_stop(&s);
}

static void test_client_certificates(void **state)
{
	_cleanup_free_ char *verify = config_fmt(
		TLS_FILES "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n");
	_cleanup_free_ char *if_given = config_fmt(
		TLS_FILES "  client_auth_type: VerifyClientCertIfGiven\n  client_ca_file: ca.crt\n");
	_cleanup_free_ char *any = config_fmt(TLS_FILES "  client_auth_type: RequireAnyClientCert\n"
							"  client_ca_file: other-ca.crt\n");
	struct server s = { 0 };

	(void)state;
	server_start(&s, verify);
	assert_int_equal(status_of(s.port, &(struct client){ .cert = "client" }), 200);
	assert_int_not_equal(status_of(s.port, &(struct client){ 0 }), 200);
	assert_int_not_equal(status_of(s.port, &(struct client){ .cert = "stranger" }), 200);
	assert_int_not_equal(status_of(s.port, &(struct client){ .path = "/healthz",
								  .cert = "stranger" }),
			     200);
	server_stop(&s);

	server_start(&s, if_given);
	assert_int_equal(status_of(s.port, &(struct client){ 0 }), 200);
	assert_int_equal(status_of(s.port, &(struct client){ .cert = "client" }), 200);
	assert_int_not_equal(status_of(s.port, &(struct client){ .cert = "stranger" }), 200);
	server_stop(&s);

	/* Any certificate at all, not verified (the CA only names what to send). */
	server_start(&s, any);
	assert_int_not_equal(status_of(s.port, &(struct client){ 0 }), 200);
	assert_int_equal(status_of(s.port, &(struct client){ .cert = "stranger" }), 200);
	server_stop(&s);
}

static void test_rate_limit(void **state)
{
	_cleanup_free_ char *cfg = config_fmt(TLS_FILES "basic_auth_users:\n  alice: '%s'\n"
						      "rate_limit:\n  interval: 1h\n  burst: 2\n",
					      hash_alice);
	struct server s = { 0 };

	(void)state;
	server_start(&s, cfg);
	assert_int_equal(status_of(s.port, &(struct client){ .user = "alice", .pass = "alice-pw" }),
			 200);
	assert_int_equal(status_of(s.port, &(struct client){ 0 }), 401);
	/* The bucket is empty: 429, before any password is looked at. */
	assert_int_equal(status_of(s.port, &(struct client){ .user = "alice", .pass = "alice-pw" }),
			 429);
	assert_int_equal(status_of(s.port, &(struct client){ 0 }), 429);
	server_stop(&s);
}

/* Poll (up to 10 s) until a request gets want. */
static bool eventually(uint16_t port, const struct client *q, long want)
{
	for (int i = 0; i < 100; i++) {
		if (status_of(port, q) == want)
			return true;
		usleep(100 * 1000);
	}
	return false;
}

/* Move fixture file name aside (name.orig) and put a hard link to other in its place. */
static void replace_file(const char *name, const char *other)
{
	char path[512], orig[600], src[512];

	tls_fixture_path(&tf, name, path, sizeof(path));
	snprintf(orig, sizeof(orig), "%s.orig", path);
	assert_int_equal(rename(path, orig), 0);
	assert_int_equal(link(tls_fixture_path(&tf, other, src, sizeof(src)), path), 0);
}

static void restore_file(const char *name)
{
	char path[512], orig[600];

	tls_fixture_path(&tf, name, path, sizeof(path));
	snprintf(orig, sizeof(orig), "%s.orig", path);
	assert_int_equal(rename(orig, path), 0);
}

static void test_reload(void **state)
{
	_cleanup_free_ char *auth = config_fmt(TLS_FILES "basic_auth_users:\n  alice: '%s'\n",
					       hash_alice);
	const struct client anon = { 0 }, alice = { .user = "alice", .pass = "alice-pw" };
	/* Checked every 500 ms (the default 2 s runs in the daemons of test_tls_prometheus):
	 * each wait below spans at least three checks, where at 2 s it spanned one or two (a
	 * change is offered at the second check that sees it). */
	struct server s = { .poll_ms = 500 };

	(void)state;
	server_start(&s, TLS_FILES);
	assert_int_equal(status_of(s.port, &anon), 200);
	/* Users added: authentication from now on. */
	write_config(&s, auth);
	assert_true(eventually(s.port, &anon, 401));
	assert_int_equal(status_of(s.port, &alice), 200);
	/* A broken rewrite keeps the previous configuration, for as long as it stays broken. */
	write_config(&s, "tls_server_config:\n  cert_file: server.crt\n  key_file: [\n");
	for (int i = 0; i < 5; i++) {
		assert_int_equal(status_of(s.port, &anon), 401);
		assert_int_equal(status_of(s.port, &alice), 200);
		usleep(400 * 1000);
	}
	write_config(&s, "basic_auth_users:\n  alice: not-a-hash\n");
	usleep(1500 * 1000);
	assert_int_equal(status_of(s.port, &alice), 200);
	/* Fixed again, and the certificate file replaced in place: the new one is served. The
	 * fixed file is reloaded (a new file, the same settings): a request that meets the old
	 * server as it stops fails its handshake (status 0), so it is asked again. */
	write_config(&s, auth);
	usleep(1500 * 1000);
	assert_true(eventually(s.port, &alice, 200));
	replace_file("server.crt", "server2.crt");
	replace_file("server.key", "server2.key");
	assert_true(eventually(s.port, &(struct client){ .user = "alice", .pass = "alice-pw",
							  .cacert = "other-ca.crt" },
			       200));
	assert_int_equal(status_of(s.port, &alice), 0); /* the old CA no longer verifies it */
	server_stop(&s);
	restore_file("server.crt");
	restore_file("server.key");
}

/* Log lines at info and above ("W: " at warn and above, else "I: "), for the reload tests. */
static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;
static char seen_log[16384];

static void capture_sink(enum vw_log_level level, const char *msg, void *userdata)
{
	(void)userdata;
	if (level > VW_LOG_INFO)
		return;
	pthread_mutex_lock(&seen_lock);
	if (strlen(seen_log) + strlen(msg) + 5 < sizeof(seen_log)) {
		strcat(seen_log, level <= VW_LOG_WARN ? "W: " : "I: ");
		strcat(seen_log, msg);
		strcat(seen_log, "\n");
	}
	pthread_mutex_unlock(&seen_lock);
}

static void capture_start(void)
{
	seen_log[0] = '\0';
	vw_log_set_level(VW_LOG_INFO);
	vw_log_set_sink(capture_sink, NULL);
}

static void capture_stop(void)
{
	vw_log_set_sink(NULL, NULL);
	vw_log_set_level(VW_LOG_ERROR);
}

static unsigned seen_count(const char *what)
{
	unsigned n = 0;

	pthread_mutex_lock(&seen_lock);
	for (const char *p = seen_log; (p = strstr(p, what)); p++)
		n++;
	pthread_mutex_unlock(&seen_lock);
	return n;
}

/* Rewrite the config in place (open with O_TRUNC, as cp does), only its first len bytes. */
static void write_in_place(struct server *s, const char *text, size_t len)
{
	FILE *f = fopen(s->config, "r+");

	assert_non_null(f);
	assert_int_equal(ftruncate(fileno(f), 0), 0);
	assert_int_equal(fwrite(text, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

/* TLS, authentication or both must still be in force: plain HTTP gets nothing, no user 401. */
static void assert_still_protected(const struct server *s)
{
	assert_int_equal(status_of(s->port, &(struct client){ .plain = true }), 0);
	assert_int_equal(status_of(s->port, &(struct client){ 0 }), 401);
	assert_int_equal(status_of(s->port, &(struct client){ .user = "alice",
							       .pass = "alice-pw" }),
			 200);
}

/*
 * A web config truncated or caught half-written (a plain cp over it) never turns TLS or
 * authentication off: a weaker file is refused unless it carries the marker and has settled.
 */
static void test_reload_never_weaker(void **state)
{
	_cleanup_free_ char *auth = config_fmt(TLS_FILES "basic_auth_users:\n  alice: '%s'\n",
					       hash_alice);
	_cleanup_free_ char *marked = config_fmt(TLS_FILES "%s\n", VW_WEBCONFIG_WEAKER_MARKER);
	/* Checked every 200 ms; a weaker file must stay unchanged 2 s (30 s by default). Each
	 * wait spans at least seven checks, and the one past the settle period a second more. */
	struct server s = { .poll_ms = 200, .settle_s = 2 };
	struct timespec t0, t1;

	(void)state;
	capture_start();
	server_start(&s, auth);
	assert_still_protected(&s);
	/* Emptied (a truncation left as it is): an empty file is a valid, open config. */
	write_in_place(&s, "", 0);
	usleep(1500 * 1000);
	assert_still_protected(&s);
	/* Cut short after the TLS part: valid YAML, TLS on, no users; left past the settle
	 * period: without the marker it is never applied, however long it stays. */
	write_in_place(&s, auth, strlen(TLS_FILES));
	usleep(3000 * 1000);
	assert_still_protected(&s);
	assert_non_null(strstr(seen_log, "would weaken security (basic authentication OFF"));
	assert_null(strstr(seen_log, "reloaded"));
	/* Wanted on purpose: the marker, and the file unchanged for the settle period. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	write_config(&s, marked);
	usleep(1000 * 1000);
	assert_int_equal(status_of(s.port, &(struct client){ 0 }), 401);
	assert_true(eventually(s.port, &(struct client){ 0 }, 200));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true(t1.tv_sec - t0.tv_sec >= 2);
	assert_int_equal(status_of(s.port, &(struct client){ .plain = true }), 0); /* TLS stays */
	if (!strstr(seen_log, "W: http: web config") ||
	    !strstr(seen_log, "reloaded: basic authentication OFF (no users left); user alice "
			      "removed"))
		fail_msg("no warning saying what the reload changed:\n%s", seen_log);
	server_stop(&s);
	capture_stop();
}

/* A file that keeps changing is never loaded; once it stops, it is, once, with what changed. */
static void test_reload_waits_for_stable_file(void **state)
{
	_cleanup_free_ char *auth = config_fmt(TLS_FILES "basic_auth_users:\n  alice: '%s'\n",
					       hash_alice);
	_cleanup_free_ char *more = NULL;
	struct server s = { .poll_ms = 700 };

	(void)state;
	capture_start();
	server_start(&s, auth);
	/* Growing every 100 ms for 3 s, as a slow writer would: each state a valid, stronger
	 * config (users added), so only the stability rule holds it back. */
	for (int i = 0; i < 30; i++) {
		char *next = config_fmt("%s  user%d: '%s'\n", i ? more : auth, i, hash_bob);

		free(more);
		more = next;
		write_in_place(&s, more, strlen(more));
		usleep(100 * 1000);
	}
	if (seen_count("reloaded") != 0)
		fail_msg("a file still being written was loaded:\n%s", seen_log);
	usleep(2000 * 1000);
	assert_int_equal(seen_count("reloaded"), 1);
	/* At warn, saying what changed. */
	if (!strstr(seen_log, "W: http: web config") || !strstr(seen_log, "reloaded: user user0 added;"))
		fail_msg("no warning saying what the reload changed:\n%s", seen_log);
	assert_int_equal(status_of(s.port, &(struct client){ .user = "user29", .pass = "b:o b" }),
			 200);
	server_stop(&s);
	capture_stop();
}

static double since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

/* One request as alice on a kept handle: the status (0: no answer), and in *ret_connects the
 * connections it had to open (0: it went on the previous one). */
static long keep_get(CURL *c, uint16_t port, long *ret_connects)
{
	struct answer a = get(port, &(struct client){ .keep = c, .user = "alice",
						      .pass = "alice-pw" });
	long status = a.code == CURLE_OK ? a.status : 0;

	*ret_connects = a.connects;
	answer_clear(&a);
	return status;
}

/*
 * The file rewritten with the same settings (a configuration manager's run: a new file, the
 * same text): no reload, so a kept-alive connection goes on (a reload stops the old server with
 * the requests in flight on it); then a real change is still applied.
 */
static void test_same_settings_no_reload(void **state)
{
	_cleanup_free_ char *auth = config_fmt(TLS_FILES "basic_auth_users:\n  alice: '%s'\n",
					       hash_alice);
	_cleanup_free_ char *more = config_fmt(TLS_FILES "basic_auth_users:\n  alice: '%s'\n"
						       "  bob: '%s'\n",
					       hash_alice, hash_bob);
	struct server s = { .poll_ms = 200 };
	CURL *c = curl_easy_init();
	long connects = -1;

	(void)state;
	assert_non_null(c);
	capture_start();
	server_start(&s, auth);
	assert_int_equal(keep_get(c, s.port, &connects), 200);
	assert_int_equal(connects, 1);
	write_config(&s, auth); /* a new file (rename), the same text */
	usleep(1200 * 1000);    /* six checks: seen, settled, acted on */
	assert_int_equal(keep_get(c, s.port, &connects), 200);
	if (connects != 0)
		fail_msg("the kept connection was cut by a reload of the same settings:\n%s",
			 seen_log);
	assert_int_equal(seen_count("rewritten with the same settings"), 1);
	assert_int_equal(seen_count("reloaded"), 0);
	write_config(&s, more); /* a real change: bob added */
	assert_true(eventually(s.port, &(struct client){ .user = "bob", .pass = "b:o b" }, 200));
	assert_int_equal(seen_count("reloaded"), 1);
	/* The kept connection was the old server's, idle: closed by it, so the handle's next
	 * request opens one to the new server. */
	assert_int_equal(keep_get(c, s.port, &connects), 200);
	assert_int_equal(connects, 1);
	curl_easy_cleanup(c);
	server_stop(&s);
	capture_stop();
}

/* ---- A real change retires the old server gracefully ---- */

/* Lines of 41 bytes: 400000 make 16 MB, far more than the socket buffers hold (4 MB at most
 * on the server's side, net.ipv4.tcp_wmem). */
static size_t publish_big(struct server *s, int lines)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	for (int i = 0; i < lines; i++)
		fprintf(f, "virtwatt_tls_test_big{line=\"%07d\"} 42\n", i);
	assert_int_equal(fclose(f), 0);
	vw_exposition_publish(s->x, text, len, NULL, 0);
	return len;
}

/* A plain TCP connection to the server; rcvbuf > 0: that receive buffer (a slow reader's). */
static int raw_connect(uint16_t port, int rcvbuf)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	if (rcvbuf > 0)
		assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)), 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

static void raw_send(int fd, const char *text)
{
	assert_int_equal(send(fd, text, strlen(text), MSG_NOSIGNAL), (ssize_t)strlen(text));
}

/* Up to len bytes within wait_ms: how many (0: end of file or reset, -1: none came). */
static ssize_t raw_read(int fd, char *buf, size_t len, int wait_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;

	if (poll(&p, 1, wait_ms) != 1)
		return -1;
	n = recv(fd, buf, len, 0);
	return n < 0 ? 0 : n;
}

/* An answer's head (status line and headers, into head); its Content-Length. */
static size_t raw_read_head(int fd, char *head, size_t size, size_t *ret_body_read)
{
	size_t got = 0;
	char *end = NULL, *cl;

	while (!end) {
		ssize_t n = raw_read(fd, head + got, VW_MIN((size_t)1, size - 1 - got), 5000);

		if (n <= 0)
			fail_msg("no whole answer head: %.*s", (int)got, head);
		got += (size_t)n;
		head[got] = '\0';
		end = strstr(head, "\r\n\r\n");
	}
	*ret_body_read = got - (size_t)(end + 4 - head);
	cl = strcasestr(head, "Content-Length: ");
	assert_non_null(cl);
	return strtoul(cl + 16, NULL, 10);
}

/* Read and drop want bytes (or to the end): how many came. */
static size_t raw_drain(int fd, size_t want)
{
	static char buf[65536];
	size_t got = 0;

	while (got < want) {
		ssize_t n = raw_read(fd, buf, VW_MIN(sizeof(buf), want - got), 5000);

		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return got;
}

/* Whatever comes until the server closes fd (at most size - 1 bytes, 5 s). */
static size_t raw_rest(int fd, char *buf, size_t size)
{
	size_t got = 0;
	ssize_t n = 0;

	while (got < size - 1 && (n = raw_read(fd, buf + got, size - 1 - got, 5000)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	if (n < 0)
		fail_msg("the connection stayed open after %zu bytes", got);
	return got;
}

/* Poll (up to 10 s) until the log has what. */
static bool log_eventually(const char *what)
{
	for (int i = 0; i < 100; i++) {
		if (seen_count(what))
			return true;
		usleep(100 * 1000);
	}
	return false;
}

#define GET_METRICS "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
#define GET_HEALTHZ "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
#define RETIRED_OK "every request it had begun answered"

/*
 * Open (no authentication) to basic auth. The old server's scrape under way (a slow reader of a
 * 16 MB body) goes on to its last byte across the change; the request that reader had pipelined
 * behind it is not answered by the old server (its connection closed, no second answer); its
 * idle kept-alive connection is closed at once (not at the 10 s timeout), as is one that had
 * sent half a request head; a fresh connection meets the new settings (401). Once the scrape
 * is read, the old server stops. The old code stopped the old server at once: the scrape was
 * cut.
 */
static void test_reload_finishes_requests_begun(void **state)
{
	_cleanup_free_ char *auth = config_fmt("basic_auth_users:\n  alice: '%s'\n", hash_alice);
	struct server s = { .poll_ms = 100 };
	char head[4096], rest[4096];
	size_t big, body_read, cl;
	int slow, idle, half;
	double t;
	struct timespec t0;

	(void)state;
	capture_start();
	server_start(&s, "");
	big = publish_big(&s, 400000);
	slow = raw_connect(s.port, 4096);
	raw_send(slow, GET_METRICS GET_METRICS); /* the second one pipelined */
	cl = raw_read_head(slow, head, sizeof(head), &body_read);
	assert_non_null(strstr(head, "HTTP/1.1 200"));
	assert_int_equal(cl, big);
	idle = raw_connect(s.port, 0);
	raw_send(idle, GET_HEALTHZ);
	raw_read_head(idle, head, sizeof(head), &body_read);
	assert_int_equal(raw_drain(idle, 3 - body_read), 3 - body_read); /* "ok\n" */
	half = raw_connect(s.port, 0);
	raw_send(half, "GET /metrics HTTP/1.1\r\n");

	write_config(&s, auth);
	assert_true(eventually(s.port, &(struct client){ .plain = true }, 401));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* The old server's idle and half-head connections: closed, no answer. */
	assert_int_equal(raw_rest(idle, rest, sizeof(rest)), 0);
	raw_send(half, "Host: x\r\n\r\n");
	assert_int_equal(raw_rest(half, rest, sizeof(rest)), 0);
	t = since(&t0);
	if (t > 2.0)
		fail_msg("the old server's idle connections were closed after %.1f s", t);
	/* The scrape goes on, whole, and the pipelined request gets nothing. */
	assert_int_equal(seen_count(RETIRED_OK), 0);
	assert_int_equal(raw_drain(slow, cl - body_read), cl - body_read);
	raw_rest(slow, rest, sizeof(rest));
	if (rest[0])
		fail_msg("the retiring server answered a new request: %.200s", rest);
	assert_true(log_eventually(RETIRED_OK));
	assert_int_equal(status_of(s.port, &(struct client){ .plain = true, .user = "alice",
							      .pass = "alice-pw" }),
			 200);
	close(slow);
	close(idle);
	close(half);
	server_stop(&s);
	capture_stop();
}

/*
 * A scrape still under way at the bound (web.timeout, 2 s here) is cut by then and the old
 * server stopped: its reader (a 4 KB receive buffer) takes at most 4 KB every 15 ms, never
 * idle, too slow for 16 MB; 3 s after the change it reads what the server's socket still held,
 * at full speed, then the end.
 * (libmicrohttpd 0.9.75 times a connection out from its last read, so its own timeout, the
 * same web.timeout, may cut it a little before the bound: either way within it.)
 */
static void test_reload_bound(void **state)
{
	_cleanup_free_ char *auth = config_fmt("basic_auth_users:\n  alice: '%s'\n", hash_alice);
	struct server s = { .poll_ms = 100, .timeout_s = 2 };
	static char buf[65536];
	char head[4096];
	size_t big, body_read, got;
	int slow;
	ssize_t n = -1;
	const char *p;
	struct timespec t0;

	(void)state;
	capture_start();
	server_start(&s, "");
	big = publish_big(&s, 400000);
	slow = raw_connect(s.port, 4096);
	raw_send(slow, GET_METRICS);
	assert_int_equal(raw_read_head(slow, head, sizeof(head), &body_read), big);
	write_config(&s, auth);
	assert_true(eventually(s.port, &(struct client){ .plain = true }, 401));
	got = body_read;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (got < big) {
		n = raw_read(slow, buf, sizeof(buf), 5000);
		if (n <= 0)
			break;
		got += (size_t)n;
		if (since(&t0) < 3.0)
			usleep(15 * 1000);
	}
	if (n != 0 || got >= big)
		fail_msg("n %zd got %zu of %zu\n%s", n, got, big, seen_log);
	if (!log_eventually("server stopped"))
		fail_msg("got %zu of %zu, the old server still runs:\n%s", got, big, seen_log);
	p = strstr(seen_log, "server stopped after ");
	if (!strstr(seen_log, "stopped at its bound (web.timeout, 2 s): 1 connection(s)") &&
	    !(p && strtod(p + 21, NULL) <= 2.3))
		fail_msg("stopped past its bound:\n%s", seen_log);
	close(slow);
	server_stop(&s);
	capture_stop();
}

struct login {
	uint16_t port;
	char from[16];
	long status;
	CURLcode code;
	bool cancelled; /* a 503 saying the login was not checked */
};

/* A wrong password for bob (cost 12): parked for a bcrypt, then 401. */
static void *parked_login(void *arg)
{
	struct login *l = arg;
	struct answer a = get(l->port, &(struct client){ .plain = true, .from = l->from,
							  .user = "bob", .pass = "guess" });

	l->code = a.code;
	l->status = a.status;
	l->cancelled = a.status == 503 && a.body && strstr(a.body, "login not checked") &&
		       strstr(a.headers, "Retry-After: 1");
	answer_clear(&a);
	return NULL;
}

/*
 * Logins parked for a bcrypt (cost 12, one worker per two CPUs, at most 4: 0.2-0.3 s each)
 * when a user is added are answered by the old server, never cut (the old code cut every one
 * still parked: curl got nothing), and the old server stops once they are: all 401 within the
 * bound (8 logins, 10 s); past it (30 logins from four addresses, 1 s: more than 1.5 s of
 * bcrypt even on 4 workers) those still queued are cancelled, 503 saying so and Retry-After.
 */
static void test_reload_parked_logins(void **state)
{
	_cleanup_free_ char *cfg = config_fmt("basic_auth_users:\n  alice: '%s'\n  bob: %s\n",
					      hash_alice, BOB_COST12);
	_cleanup_free_ char *more = config_fmt("basic_auth_users:\n  alice: '%s'\n  bob: %s\n"
					       "  carol: '%s'\n", hash_alice, BOB_COST12, hash_bob);
	struct login l[30];

	(void)state;
	for (int bounded = 0; bounded < 2; bounded++) {
		struct server s = { .poll_ms = 100, .timeout_s = bounded ? 1 : 0 };
		int n = bounded ? 30 : 8, cancelled = 0;
		pthread_t th[30];

		capture_start();
		server_start(&s, cfg);
		for (int i = 0; i < n; i++) {
			l[i] = (struct login){ .port = s.port };
			snprintf(l[i].from, sizeof(l[i].from), "127.0.0.%d", 2 + i % 4);
			assert_int_equal(pthread_create(&th[i], NULL, parked_login, &l[i]), 0);
		}
		usleep(100 * 1000); /* all sent and parked: a bcrypt takes longer */
		write_config(&s, more);
		assert_true(eventually(s.port, &(struct client){ .plain = true, .user = "carol",
								  .pass = "b:o b" },
				       200));
		for (int i = 0; i < n; i++) {
			pthread_join(th[i], NULL);
			if (l[i].code != CURLE_OK ||
			    (l[i].status != 401 && !(bounded && l[i].cancelled)))
				fail_msg("parked login %d: %s, status %ld\n%s", i,
					 curl_easy_strerror(l[i].code), l[i].status, seen_log);
			cancelled += l[i].cancelled;
		}
		assert_true(bounded ? cancelled > 0 : cancelled == 0);
		/* Past the bound, answered within the grace (or cut, if the answers had not
		 * gone out: none was, above). */
		assert_true(log_eventually(bounded ? "server stopped" : RETIRED_OK));
		server_stop(&s);
		capture_stop();
	}
}

/*
 * Two changes in a row, each old server with a scrape under way (a reader that paused): two
 * retirements side by side. Read to the end, each scrape arrives whole and each old server
 * stops; or, stopping meanwhile takes no longer than a stop does (well under their 10 s
 * bound) and cuts both.
 */
static void test_two_retirements(void **state)
{
	_cleanup_free_ char *auth = config_fmt("basic_auth_users:\n  alice: '%s'\n", hash_alice);
	_cleanup_free_ char *more = config_fmt("basic_auth_users:\n  alice: '%s'\n  bob: '%s'\n",
					       hash_alice, hash_bob);
	char head[4096];
	size_t big, body_read[2];

	(void)state;
	for (int stop = 0; stop < 2; stop++) {
		struct server s = { .poll_ms = 100 };
		struct timespec t0;
		int slow[2];
		double t;

		capture_start();
		server_start(&s, "");
		big = publish_big(&s, 400000);
		slow[0] = raw_connect(s.port, 4096);
		raw_send(slow[0], GET_METRICS);
		assert_int_equal(raw_read_head(slow[0], head, sizeof(head), &body_read[0]), big);
		write_config(&s, auth);
		assert_true(eventually(s.port, &(struct client){ .plain = true }, 401));
		slow[1] = raw_connect(s.port, 4096);
		raw_send(slow[1], "GET /metrics HTTP/1.1\r\nHost: x\r\n"
				  "Authorization: Basic YWxpY2U6YWxpY2UtcHc=\r\n\r\n");
		assert_int_equal(raw_read_head(slow[1], head, sizeof(head), &body_read[1]), big);
		write_config(&s, more);
		assert_true(eventually(s.port, &(struct client){ .plain = true, .user = "bob",
								  .pass = "b:o b" },
				       200));
		if (seen_count("reloaded") != 2)
			fail_msg("%s", seen_log);
		assert_int_equal(seen_count(RETIRED_OK), 0);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		if (stop) {
			server_stop(&s);
			t = since(&t0);
			if (t > 1.0)
				fail_msg("stopping during two retirements took %.2f s", t);
		}
		for (int i = 0; i < 2; i++) {
			size_t got = raw_drain(slow[i], big - body_read[i]);

			if (stop ? got == big - body_read[i] : got != big - body_read[i])
				fail_msg("scrape %d: %zu of %zu bytes", i, got + body_read[i], big);
			close(slow[i]);
		}
		if (!stop) {
			for (int i = 0; i < 50 && seen_count(RETIRED_OK) < 2; i++)
				usleep(100 * 1000);
			if (seen_count(RETIRED_OK) != 2)
				fail_msg("%s", seen_log);
			server_stop(&s);
		} else {
			assert_int_equal(seen_count(RETIRED_OK), 0);
		}
		capture_stop();
	}
}

/*
 * web.max-connections (4) holds for the old and the new server together: with two scrapes
 * still under way on the retiring server, six idle connections to the new one keep two slots
 * (each newcomer takes the slot of the longest idle one), and the two scrapes, never evicted,
 * finish whole.
 */
static void test_retirement_shares_connection_limit(void **state)
{
	_cleanup_free_ char *auth = config_fmt("basic_auth_users:\n  alice: '%s'\n", hash_alice);
	struct server s = { .poll_ms = 100, .max_connections = 4 };
	char head[4096], c;
	size_t big, body_read[2];
	int slow[2], idle[6], open = 0;

	(void)state;
	capture_start();
	server_start(&s, "");
	big = publish_big(&s, 400000);
	for (int i = 0; i < 2; i++) {
		slow[i] = raw_connect(s.port, 4096);
		raw_send(slow[i], GET_METRICS);
		assert_int_equal(raw_read_head(slow[i], head, sizeof(head), &body_read[i]), big);
	}
	write_config(&s, auth);
	assert_true(eventually(s.port, &(struct client){ .plain = true }, 401));
	for (int i = 0; i < 6; i++) {
		idle[i] = raw_connect(s.port, 0);
		usleep(50 * 1000); /* accepted in order */
	}
	usleep(500 * 1000);
	for (int i = 0; i < 6; i++) {
		struct pollfd p = { .fd = idle[i], .events = POLLIN };

		if (poll(&p, 1, 0) == 0)
			open++;
		else
			assert_true(recv(idle[i], &c, 1, 0) <= 0); /* closed, no answer */
	}
	if (open != 2)
		fail_msg("%d idle connections kept beside the retiring server's 2", open);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(raw_drain(slow[i], big - body_read[i]), big - body_read[i]);
		close(slow[i]);
	}
	for (int i = 0; i < 6; i++)
		close(idle[i]);
	assert_true(log_eventually(RETIRED_OK));
	server_stop(&s);
	capture_stop();
}

/*
 * A cost-13 user (htpasswd -B -C 13: seconds of bcrypt here) neither delays the start nor a
 * stop: nothing is hashed before listening. Costs above 14 are refused (test_webconfig).
 */
static void test_high_cost_starts_promptly(void **state)
{
	_cleanup_free_ char *cfg = config_fmt(
		TLS_FILES "basic_auth_users:\n  carol: "
			  "$2y$13$abcdefghijklmnopqrstuOabcdefghijklmnopqrstuvwxyz01234\n"
			  "  alice: '%s'\n",
		hash_alice);
	struct server s = { 0 };
	struct timespec t0;
	double t;

	(void)state;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	server_start(&s, cfg);
	t = since(&t0);
	if (t > 1.0)
		fail_msg("listening took %.2f s with a cost-13 user", t);
	assert_int_equal(status_of(s.port, &(struct client){ .user = "alice", .pass = "alice-pw" }),
			 200);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	server_stop(&s);
	t = since(&t0);
	if (t > 1.0)
		fail_msg("stopping took %.2f s", t);
}

/* ---- Wrong-password floods ---- */

#define FLOODERS 16

struct flood {
	uint16_t port;
	int stop;
	unsigned n_401, n_other;
	char from[16];
};

/* Wrong passwords as fast as answers come, from one source address, until stopped. */
static void *flooder(void *arg)
{
	struct flood *f = arg;

	while (!__atomic_load_n(&f->stop, __ATOMIC_RELAXED)) {
		struct answer a = get(f->port, &(struct client){ .plain = true, .from = f->from,
								  .user = "bob", .pass = "guess" });

		if (a.code == CURLE_OK && a.status == 401) {
			__atomic_add_fetch(&f->n_401, 1, __ATOMIC_RELAXED);
		} else {
			__atomic_add_fetch(&f->n_other, 1, __ATOMIC_RELAXED);
			usleep(20 * 1000); /* refused at once (429, 503): do not spin */
		}
		answer_clear(&a);
	}
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/*
 * 16 connections from 4 addresses send wrong passwords for a cost-12 user while a scrape with
 * a cached login and the excluded /healthz must each still answer in well under 100 ms: bcrypt
 * runs off the HTTP thread, and each source may start only so many.
 */
static void test_wrong_password_flood(void **state)
{
	_cleanup_free_ char *cfg = config_fmt("basic_auth_users:\n  alice: '%s'\n  bob: " BOB_COST12
					      "\nbasic_auth_excluded_paths: [/healthz]\n",
					      hash_alice);
	const struct client alice = { .plain = true, .user = "alice", .pass = "alice-pw" };
	const struct client healthz = { .plain = true, .path = "/healthz" };
	struct flood f[FLOODERS];
	pthread_t th[FLOODERS];
	double took[2][10];
	struct server s = { 0 };
	unsigned wrong = 0;

	(void)state;
	server_start(&s, cfg);
	assert_int_equal(status_of(s.port, &alice), 200); /* now cached */
	for (int i = 0; i < FLOODERS; i++) {
		f[i] = (struct flood){ .port = s.port };
		snprintf(f[i].from, sizeof(f[i].from), "127.0.0.%d", 2 + i % 4);
		assert_int_equal(pthread_create(&th[i], NULL, flooder, &f[i]), 0);
	}
	usleep(1000 * 1000);
	for (int i = 0; i < 10; i++) {
		struct timespec t0;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		assert_int_equal(status_of(s.port, &alice), 200);
		took[0][i] = since(&t0);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		assert_int_equal(status_of(s.port, &healthz), 200);
		took[1][i] = since(&t0);
		usleep(100 * 1000);
	}
	/* The answers the flood got while it ran; then the server stops first, cancelling the
	 * queued logins (a cost-12 bcrypt each, one worker: waiting for them took ~7 s), and
	 * the flooders end on its refusals. */
	for (int i = 0; i < FLOODERS; i++) {
		__atomic_store_n(&f[i].stop, 1, __ATOMIC_RELAXED);
		wrong += __atomic_load_n(&f[i].n_401, __ATOMIC_RELAXED) +
			 __atomic_load_n(&f[i].n_other, __ATOMIC_RELAXED);
	}
	server_stop(&s);
	for (int i = 0; i < FLOODERS; i++)
		pthread_join(th[i], NULL);
	assert_true(wrong > 0);
	for (int k = 0; k < 2; k++) {
		qsort(took[k], 10, sizeof(double), cmp_double);
		if (took[k][5] > 0.1 || took[k][9] > 0.5)
			fail_msg("%s during the flood: median %.3f s, slowest %.3f s",
				 k ? "/healthz" : "a cached scrape", took[k][5], took[k][9]);
	}
}

/*
 * Failed logins are limited per source: past its allowance an address gets 429 with no bcrypt,
 * while another address is still checked (401) and a cached login from the limited one passes.
 */
static void test_failed_logins_limited_per_source(void **state)
{
	_cleanup_free_ char *cfg = config_fmt(
		"basic_auth_users:\n  alice: '%s'\n"
		"  bob: $2y$04$abcdefghijklmnopqrstuOabcdefghijklmnopqrstuvwxyz01234\n",
		hash_alice);
	const struct client wrong2 = { .plain = true, .from = "127.0.0.2", .user = "bob",
				       .pass = "guess" };
	struct server s = { 0 };
	int i;

	(void)state;
	server_start(&s, cfg);
	assert_int_equal(status_of(s.port, &(struct client){ .plain = true, .from = "127.0.0.2",
							      .user = "alice",
							      .pass = "alice-pw" }),
			 200);
	for (i = 0; i < 100; i++)
		if (status_of(s.port, &wrong2) == 429)
			break;
	assert_true(i >= 20 && i < 100); /* a few dozen wrong passwords are answered 401 first */
	assert_int_equal(status_of(s.port, &wrong2), 429);
	assert_int_equal(status_of(s.port, &(struct client){ .plain = true, .from = "127.0.0.3",
							      .user = "bob", .pass = "guess" }),
			 401);
	assert_int_equal(status_of(s.port, &(struct client){ .plain = true, .from = "127.0.0.2",
							      .user = "alice",
							      .pass = "alice-pw" }),
			 200);
	server_stop(&s);
}

static void test_bad_file_fails_start(void **state)
{
	struct vw_http_opts o = { .listen_address = "127.0.0.1:0" };
	struct vw_exposition *x = vw_exposition_new();
	char path[512];

	(void)state;
	assert_int_equal(vw_fixture_write(tf.dir, "bad.yml", "tls_server_config:\n  cert_file: "
				"server.crt\n  key_file: nope.key\n", 0), 0);
	o.web_config_file = tls_fixture_path(&tf, "bad.yml", path, sizeof(path));
	assert_null(vw_http_start(&o, x));
	o.web_config_file = "/nonexistent/web.yml";
	assert_null(vw_http_start(&o, x));
	vw_exposition_free(x);
	/* Debian 12's libmicrohttpd has TLS and basic auth. */
	assert_int_equal(MHD_is_feature_supported(MHD_FEATURE_TLS), MHD_YES);
	assert_int_equal(MHD_is_feature_supported(MHD_FEATURE_BASIC_AUTH), MHD_YES);
}

static int setup(void **state)
{
	(void)state;
	vw_log_set_level(VW_LOG_ERROR);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (tls_fixture_init(&tf) < 0 || tls_fixture_bcrypt("alice-pw", hash_alice, 128) < 0 ||
	    tls_fixture_bcrypt("b:o b", hash_bob, 128) < 0)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tls_fixture_fini(&tf);
	curl_global_cleanup();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tls_basic_auth),
		cmocka_unit_test(test_versions_headers_excluded),
		cmocka_unit_test(test_client_certificates),
		cmocka_unit_test(test_rate_limit),
		cmocka_unit_test(test_reload),
		cmocka_unit_test(test_reload_never_weaker),
		cmocka_unit_test(test_reload_waits_for_stable_file),
		cmocka_unit_test(test_same_settings_no_reload),
		cmocka_unit_test(test_reload_finishes_requests_begun),
		cmocka_unit_test(test_reload_bound),
		cmocka_unit_test(test_reload_parked_logins),
		cmocka_unit_test(test_two_retirements),
		cmocka_unit_test(test_retirement_shares_connection_limit),
		cmocka_unit_test(test_high_cost_starts_promptly),
		cmocka_unit_test(test_wrong_password_flood),
		cmocka_unit_test(test_failed_logins_limited_per_source),
		cmocka_unit_test(test_bad_file_fails_start),
	};

	if (system("command -v openssl >/dev/null 2>&1") != 0)
		return tls_fixture_skip("openssl (to make test certificates) is not installed");
	return cmocka_run_group_tests(tests, setup, teardown);
}

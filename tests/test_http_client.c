/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The outbound HTTP client (http_client.c) against a libmicrohttpd server on 127.0.0.1: status,
 * headers both ways, a POST body, the body cap, a timeout, a refused connection, https only,
 * cancellation from another thread; and the back-off and URL escaping it offers its users.
 */
#include "vw_test.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "http_client.h"
#include "macro.h"

#if MHD_VERSION >= 0x00097002
#define VW_MHD_RESULT enum MHD_Result
#else
#define VW_MHD_RESULT int
#endif

#define BIG_LEN (256u << 10)

struct upload {
	char data[4096];
	size_t len;
};

static char big[BIG_LEN];

static VW_MHD_RESULT reply(struct MHD_Connection *c, unsigned status, const char *body, size_t len)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body,
								 MHD_RESPMEM_MUST_COPY);
	VW_MHD_RESULT ret;

	MHD_add_response_header(r, "X-Served-By", "test");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static VW_MHD_RESULT handler(void *cls, struct MHD_Connection *c, const char *url,
			     const char *method, const char *version, const char *data,
			     size_t *data_len, void **con_cls)
{
	struct upload *up = *con_cls;
	const char *h;
	char out[4200];

	(void)cls, (void)version;
	if (strcmp(method, "POST") == 0) {
		if (!up) {
			*con_cls = calloc(1, sizeof(*up));
			return *con_cls ? MHD_YES : MHD_NO;
		}
		if (*data_len) {
			size_t n = VW_MIN(*data_len, sizeof(up->data) - 1 - up->len);

			memcpy(up->data + up->len, data, n);
			up->len += n;
			*data_len = 0;
			return MHD_YES;
		}
		snprintf(out, sizeof(out), "posted:%.*s", (int)up->len, up->data);
		return reply(c, 201, out, strlen(out));
	}
	if (strcmp(url, "/echo") == 0) {
		h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Test");
		snprintf(out, sizeof(out), "%s %s", method, h ? h : "-");
		return reply(c, 200, out, strlen(out));
	}
	if (strcmp(url, "/big") == 0)
		return reply(c, 200, big, sizeof(big));
	if (strcmp(url, "/slow") == 0) {
		sleep(2); /* one thread per connection: the others go on */
		return reply(c, 200, "late", 4);
	}
	return reply(c, 503, "busy", 4);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
		      enum MHD_RequestTerminationCode toe)
{
	(void)cls, (void)c, (void)toe;
	free(*con_cls);
	*con_cls = NULL;
}

struct ctx {
	struct MHD_Daemon *mhd;
	unsigned port;
	char url[128];
};

static int setup(void **state)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct ctx *c = calloc(1, sizeof(*c));

	memset(big, 'x', sizeof(big));
	c->mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0,
				  NULL, NULL, handler, NULL, MHD_OPTION_SOCK_ADDR, &sa,
				  MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_END);
	assert_non_null(c->mhd);
	c->port = MHD_get_daemon_info(c->mhd, MHD_DAEMON_INFO_BIND_PORT)->port;
	*state = c;
	return 0;
}

static int teardown(void **state)
{
	struct ctx *c = *state;

	MHD_stop_daemon(c->mhd);
	free(c);
	return 0;
}

static const char *url(struct ctx *c, const char *path)
{
	snprintf(c->url, sizeof(c->url), "http://127.0.0.1:%u%s", c->port, path);
	return c->url;
}

static struct vw_httpc *client(const struct vw_httpc_opts *o)
{
	struct vw_httpc *h = NULL;
	char why[256] = "";

	if (vw_httpc_new(o, &h, why, sizeof(why)) < 0)
		fail_msg("vw_httpc_new: %s", why);
	return h;
}

struct headers_seen {
	bool served_by;
};

static void on_header(void *userdata, const char *line, size_t len)
{
	struct headers_seen *s = userdata;

	if (len >= 17 && strncasecmp(line, "X-Served-By: test", 17) == 0)
		s->served_by = true;
}

static void test_requests(void **state)
{
	struct ctx *c = *state;
	struct vw_httpc_opts o = { .what = "test", .allow_http = true, .timeout_ms = 5000,
				   .max_body = 4096 };
	struct vw_httpc *h = client(&o);
	const char *const hdrs[] = { "X-Test: yes", NULL };
	struct headers_seen seen = { 0 };
	struct vw_httpc_req req = { .url = url(c, "/echo"), .headers = hdrs, .on_header = on_header,
				    .userdata = &seen };
	struct vw_httpc_resp resp = { 0 };

	assert_int_equal(vw_httpc_do(h, &req, &resp), 0);
	assert_int_equal(resp.status, 200);
	assert_string_equal(resp.body, "GET yes");
	assert_true(seen.served_by);
	/* a POST's body reaches the server; the status is passed through */
	req = (struct vw_httpc_req){ .method = "POST", .url = url(c, "/post"), .body = "{\"a\":1}",
				     .body_len = 7 };
	assert_int_equal(vw_httpc_do(h, &req, &resp), 0);
	assert_int_equal(resp.status, 201);
	assert_string_equal(resp.body, "posted:{\"a\":1}");
	req = (struct vw_httpc_req){ .method = "DELETE", .url = url(c, "/echo") };
	assert_int_equal(vw_httpc_do(h, &req, &resp), 0);
	assert_string_equal(resp.body, "DELETE -");
	req = (struct vw_httpc_req){ .url = url(c, "/other") };
	assert_int_equal(vw_httpc_do(h, &req, &resp), 0);
	assert_int_equal(resp.status, 503);
	/* over the cap */
	req = (struct vw_httpc_req){ .url = url(c, "/big") };
	assert_int_equal(vw_httpc_do(h, &req, &resp), -EFBIG);
	/* a timeout */
	req = (struct vw_httpc_req){ .url = url(c, "/slow"), .timeout_ms = 300 };
	assert_int_equal(vw_httpc_do(h, &req, &resp), -ETIMEDOUT);
	assert_true(resp.error[0] != '\0');
	vw_httpc_resp_clear(&resp);
	vw_httpc_free(h);

	/* discarded body (max_body 0), then a big one taken whole */
	o.max_body = 0;
	h = client(&o);
	req = (struct vw_httpc_req){ .url = url(c, "/big") };
	assert_int_equal(vw_httpc_do(h, &req, &resp), 0);
	assert_null(resp.body);
	vw_httpc_free(h);
	o.max_body = BIG_LEN;
	h = client(&o);
	assert_int_equal(vw_httpc_do(h, &req, &resp), 0);
	assert_int_equal(resp.body_len, BIG_LEN);
	vw_httpc_resp_clear(&resp);
	vw_httpc_free(h);
}

static void test_refusals(void **state)
{
	struct ctx *c = *state;
	struct vw_httpc_opts o = { .what = "test", .timeout_ms = 5000, .max_body = 4096 };
	struct vw_httpc *h = client(&o);
	struct vw_httpc_req req = { .url = url(c, "/echo") };
	struct vw_httpc_resp resp = { 0 };
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	char closed[64];

	/* https only: an http:// URL is not fetched */
	assert_true(vw_httpc_do(h, &req, &resp) < 0);
	assert_int_equal(resp.status, 0);
	vw_httpc_free(h);
	/* a port nobody listens on (bound, not listening) */
	o.allow_http = true;
	h = client(&o);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	snprintf(closed, sizeof(closed), "http://127.0.0.1:%u/", ntohs(sa.sin_port));
	req.url = closed;
	assert_int_equal(vw_httpc_do(h, &req, &resp), -ECONNREFUSED);
	close(fd);
	vw_httpc_resp_clear(&resp);
	vw_httpc_free(h);
}

struct cancel {
	atomic_bool stop;
	struct vw_httpc *h;
	unsigned idles;
};

static bool cancelled(void *userdata)
{
	struct cancel *k = userdata;

	return atomic_load(&k->stop);
}

static void idle(void *userdata)
{
	((struct cancel *)userdata)->idles++;
}

static void *canceller(void *arg)
{
	struct cancel *k = arg;
	struct timespec ts = { 0, 300 * 1000000L };

	nanosleep(&ts, NULL);
	atomic_store(&k->stop, true);
	vw_httpc_wake(k->h);
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A request and a sleep end at once when another thread cancels (the stop of a daemon). */
static void test_cancel(void **state)
{
	struct ctx *c = *state;
	struct cancel k = { 0 };
	struct vw_httpc_opts o = { .what = "test", .allow_http = true, .timeout_ms = 10000,
				   .max_body = 4096, .cancelled = cancelled, .idle = idle,
				   .userdata = &k };
	struct vw_httpc_req req = { .url = url(c, "/slow") };
	struct vw_httpc_resp resp = { 0 };
	pthread_t t;
	double t0;

	k.h = client(&o);
	assert_int_equal(pthread_create(&t, NULL, canceller, &k), 0);
	t0 = now_s();
	assert_int_equal(vw_httpc_do(k.h, &req, &resp), -ECANCELED);
	assert_true(now_s() - t0 < 1.5);
	pthread_join(t, NULL);

	atomic_store(&k.stop, false);
	assert_int_equal(pthread_create(&t, NULL, canceller, &k), 0);
	t0 = now_s();
	vw_httpc_sleep(k.h, 10ULL * 1000000000ULL);
	assert_true(now_s() - t0 < 1.5);
	pthread_join(t, NULL);
	vw_httpc_resp_clear(&resp);
	vw_httpc_free(k.h);
}

static void test_backoff_and_escape(void **state)
{
	static const uint64_t s = 1000000000ULL;
	static const uint64_t want[] = { 1 * s, 2 * s, 4 * s, 5 * s, 5 * s };
	struct vw_backoff b;
	char *e;

	(void)state;
	vw_backoff_init(&b, s, 5 * s, 0, 0);
	for (size_t i = 0; i < ARRAY_SIZE(want); i++)
		assert_int_equal(vw_backoff_next(&b), want[i]);
	vw_backoff_reset(&b);
	assert_int_equal(vw_backoff_next(&b), s);
	/* jitter: up to a fifth more, never less */
	vw_backoff_init(&b, s, 64 * s, 20, 42);
	for (uint64_t cur = s; cur <= 64 * s; cur *= 2) {
		uint64_t d = vw_backoff_next(&b);

		assert_true(d >= cur && d < cur + cur / 5);
	}
	/* a max below the min is raised to it */
	vw_backoff_init(&b, 2 * s, s, 0, 0);
	assert_int_equal(vw_backoff_next(&b), 2 * s);
	assert_int_equal(vw_backoff_next(&b), 2 * s);

	e = vw_url_escape("spec.nodeName=node-1 a/b~c_d\xc3\xa9");
	assert_string_equal(e, "spec.nodeName%3Dnode-1%20a%2Fb~c_d%C3%A9");
	free(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_requests, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cancel, setup, teardown),
		cmocka_unit_test(test_backoff_and_escape),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

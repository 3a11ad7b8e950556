/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vw_model_source_load() against a local libmicrohttpd server on 127.0.0.1 (port 0): a good
 * model, a slow response, HTTP 500, garbage, an oversized body, a redirect to file://. Checks the
 * cache is written on success and used on failure, and the builtin when nothing else works.
 */
#include "vw_test.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"
#include "log.h"
#include "macro.h"
#include "model.h"

#define GOOD_MODEL                                                                                 \
	"kepler-model-db_v0.6_nx12_std_v0.6_rapl_AbsPower_BPFOnly_SGDRegressorTrainer_1.json"
#define LOG_MODEL                                                                                  \
	"kepler-model-db_v0.7_ec2-0.7.11_rapl-sysfs_AbsPower_BPFOnly_LogarithmicRegressionTrainer_0.json"
#define SLOW_MS 3000

enum mode { MODE_GOOD, MODE_SLOW, MODE_500, MODE_GARBAGE, MODE_HUGE, MODE_REDIRECT };

static struct {
	struct MHD_Daemon *daemon;
	unsigned port;
	char *good, *logmodel;
	size_t good_len, logmodel_len;
	char *tmp;
	int mode;     /* for /switch, atomic */
	int requests; /* atomic */
	int stopping; /* atomic */
	char logs[8192];
} srv;

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const void *body,
			     size_t len, const char *location)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;

	if (location)
		MHD_add_response_header(r, "Location", location);
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result serve_mode(struct MHD_Connection *c, int mode)
{
	static const char garbage[] = "<html>this is not a model {\"package\": </html>";
	enum MHD_Result ret;
	char *huge;

	switch (mode) {
	case MODE_SLOW:
		for (int waited = 0;
		     waited < SLOW_MS && !__atomic_load_n(&srv.stopping, __ATOMIC_SEQ_CST);
		     waited += 20)
			sleep_ms(20);
		return reply(c, 200, srv.good, srv.good_len, NULL);
	case MODE_500:
		return reply(c, 500, "oops", 4, NULL);
	case MODE_GARBAGE:
		return reply(c, 200, garbage, sizeof(garbage) - 1, NULL);
	case MODE_HUGE:
		huge = malloc(VW_MODEL_MAX_BYTES + 4096);
		if (!huge)
			return MHD_NO;
		memset(huge, ' ', VW_MODEL_MAX_BYTES + 4096);
		memcpy(huge, srv.good, srv.good_len);
		ret = reply(c, 200, huge, VW_MODEL_MAX_BYTES + 4096, NULL);
		free(huge);
		return ret;
	case MODE_REDIRECT:
		return reply(c, 302, "", 0, "file:///nonexistent/model.json");
	default:
		return reply(c, 200, srv.good, srv.good_len, NULL);
	}
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
			       const char *method, const char *version, const char *upload,
			       size_t *upload_size, void **con_cls)
{
	(void)cls, (void)method, (void)version, (void)upload, (void)upload_size, (void)con_cls;
	__atomic_add_fetch(&srv.requests, 1, __ATOMIC_SEQ_CST);
	if (strcmp(url, "/switch") == 0)
		return serve_mode(c, __atomic_load_n(&srv.mode, __ATOMIC_SEQ_CST));
	if (strcmp(url, "/v0.7/AbsPower/BPFOnly/LogarithmicRegressionTrainer_0.json") == 0)
		return reply(c, 200, srv.logmodel, srv.logmodel_len, NULL);
	if (strcmp(url, "/good") == 0)
		return serve_mode(c, MODE_GOOD);
	return reply(c, 404, "no", 2, NULL);
}

static void capture_log(enum vw_log_level level, const char *msg, void *userdata)
{
	size_t n = strlen(srv.logs);

	(void)userdata;
	snprintf(srv.logs + n, sizeof(srv.logs) - n, "%s: %s\n", vw_log_level_name(level), msg);
}

static int setup(void **state)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
	char path[1024];

	(void)state;
	memset(&srv, 0, sizeof(srv));
	/* A proxy from the environment must not carry requests for 127.0.0.1 elsewhere. */
	setenv("NO_PROXY", "*", 1);
	setenv("no_proxy", "*", 1);
	snprintf(path, sizeof(path), "%s/models/%s", VW_TEST_DATA, GOOD_MODEL);
	srv.good = vw_fixture_slurp(path, &srv.good_len);
	snprintf(path, sizeof(path), "%s/models/%s", VW_TEST_DATA, LOG_MODEL);
	srv.logmodel = vw_fixture_slurp(path, &srv.logmodel_len);
	srv.tmp = vw_fixture_mkdtemp("model-source");
	if (!srv.good || !srv.logmodel || !srv.tmp)
		return -1;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	srv.daemon = MHD_start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0, NULL, NULL,
		handler, NULL, MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_END);
	if (!srv.daemon)
		return -1;
	srv.port = MHD_get_daemon_info(srv.daemon, MHD_DAEMON_INFO_BIND_PORT)->port;
	vw_log_set_sink(capture_log, NULL);
	return srv.port ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	vw_log_set_sink(NULL, NULL);
	__atomic_store_n(&srv.stopping, 1, __ATOMIC_SEQ_CST);
	if (srv.daemon)
		MHD_stop_daemon(srv.daemon);
	free(srv.good);
	free(srv.logmodel);
	vw_fixture_rm(srv.tmp);
	return 0;
}

struct outcome {
	int r;
	struct vw_model *m;
	char origin[4096];
	char err[256];
};

static struct outcome load(const char *file, const char *url_path, const char *cache,
			   long timeout_ms)
{
	char url[256];
	struct outcome o = {0};
	struct vw_model_source_opts opts = {
		.file = file, .cache_dir = cache, .timeout_ms = timeout_ms};

	if (url_path) {
		snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", srv.port, url_path);
		opts.url = strncmp(url_path, "/", 1) == 0 ? url : url_path;
	}
	srv.logs[0] = '\0';
	o.r = vw_model_source_load(&opts, &o.m, o.origin, sizeof(o.origin), o.err, sizeof(o.err));
	return o;
}

static void set_mode(int mode)
{
	__atomic_store_n(&srv.mode, mode, __ATOMIC_SEQ_CST);
}

static char *path_in_tmp(const char *rel)
{
	char *p;

	assert_true(asprintf(&p, "%s/%s", srv.tmp, rel) > 0);
	return p;
}

/* The single model-*.json in dir (malloc'd path), or NULL. */
static char *cache_file(const char *dir)
{
	struct dirent *e;
	char *found = NULL;
	DIR *d = opendir(dir);

	if (!d)
		return NULL;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, "model-", 6) != 0)
			continue;
		assert_null(found);
		assert_true(asprintf(&found, "%s/%s", dir, e->d_name) > 0);
	}
	closedir(d);
	return found;
}

static void assert_is_good_model(const struct outcome *o)
{
	assert_int_equal(o->r, 0);
	assert_non_null(o->m);
	assert_int_equal(vw_model_n_components(o->m), 4);
	assert_string_equal(vw_model_feature(o->m, 0), "bpf_cpu_time_ms");
	assert_null(strstr(o->origin, "builtin"));
}

static void assert_cache_holds_good(const char *cache)
{
	char *f = cache_file(cache);
	size_t len;
	char *body;

	assert_non_null(f);
	body = vw_fixture_slurp(f, &len);
	assert_non_null(body);
	assert_int_equal(len, srv.good_len);
	assert_memory_equal(body, srv.good, len);
	free(body);
	free(f);
}

/* A good body is used and cached; later failures of the same URL fall back to the cache. */
static void test_url_then_cache(void **state)
{
	char *cache = path_in_tmp("cache-a"); /* does not exist yet: created */
	struct outcome o;
	double t0;

	(void)state;
	set_mode(MODE_GOOD);
	o = load(NULL, "/switch", cache, 2000);
	assert_is_good_model(&o);
	assert_int_equal(strncmp(o.origin, "url:http://127.0.0.1:", 21), 0);
	vw_model_free(o.m);
	assert_cache_holds_good(cache);

	for (int mode = MODE_SLOW; mode <= MODE_REDIRECT; mode++) {
		set_mode(mode);
		t0 = now_s();
		o = load(NULL, "/switch", cache, 300);
		assert_is_good_model(&o);
		assert_int_equal(strncmp(o.origin, "cache:", 6), 0);
		assert_non_null(strstr(o.origin, cache));
		assert_non_null(strstr(srv.logs, "using the cached last good copy"));
		assert_true(now_s() - t0 < SLOW_MS / 1000.0 - 1); /* the timeout cut the slow one */
		vw_model_free(o.m);
		/* A failed fetch never replaces the last good copy. */
		assert_cache_holds_good(cache);
	}
	free(cache);
}

/* With nothing cached (or no cache at all) a failure gives the builtin. */
static void test_builtin_fallback(void **state)
{
	char *cache = path_in_tmp("cache-b");
	struct outcome o;

	(void)state;
	for (int mode = MODE_SLOW; mode <= MODE_REDIRECT; mode++) {
		set_mode(mode);
		o = load(NULL, "/switch", mode % 2 ? cache : NULL, 300);
		assert_int_equal(o.r, 0);
		assert_string_equal(o.origin, "builtin");
		assert_int_equal(vw_model_spec_cores(o.m), 96);
		assert_non_null(strstr(srv.logs, "using the built-in model"));
		vw_model_free(o.m);
	}
	assert_null(cache_file(cache));
	/* A 404. */
	o = load(NULL, "/nothing-here", cache, 300);
	assert_string_equal(o.origin, "builtin");
	vw_model_free(o.m);
	/* A corrupt cached copy is not used either. */
	set_mode(MODE_GOOD);
	o = load(NULL, "/switch", cache, 2000);
	assert_int_equal(strncmp(o.origin, "url:", 4), 0);
	vw_model_free(o.m);
	{
		char *f = cache_file(cache);

		assert_non_null(f);
		assert_int_equal(
			vw_fixture_write(srv.tmp, f + strlen(srv.tmp) + 1, "{\"package\": ", 0), 0);
		free(f);
	}
	set_mode(MODE_500);
	o = load(NULL, "/switch", cache, 300);
	assert_string_equal(o.origin, "builtin");
	assert_non_null(strstr(srv.logs, "unusable"));
	vw_model_free(o.m);
	/* Nothing configured. */
	o = load(NULL, NULL, NULL, 0);
	assert_int_equal(o.r, 0);
	assert_string_equal(o.origin, "builtin");
	vw_model_free(o.m);
	free(cache);
}

/* The URL names the trainer and output type, for the fetched body and for its cached copy. */
static void test_url_names_trainer(void **state)
{
	static const char *const path =
		"/v0.7/AbsPower/BPFOnly/LogarithmicRegressionTrainer_0.json";
	char *cache = path_in_tmp("cache-c");
	struct outcome o;
	char *f;

	(void)state;
	o = load(NULL, path, cache, 2000);
	assert_int_equal(o.r, 0);
	assert_string_equal(vw_model_trainer(o.m), "LogarithmicRegressionTrainer");
	assert_int_equal(vw_model_component_kind(o.m, 0), VW_MODEL_LOGARITHMIC);
	vw_model_free(o.m);
	f = cache_file(cache);
	assert_non_null(f);
	free(f);
	free(cache);
}

/* A local file wins over the URL; a bad or missing one is an error, not a fallback. */
static void test_file(void **state)
{
	char good[1024];
	char *bad = path_in_tmp("bad.json");
	int before;
	struct outcome o;

	(void)state;
	snprintf(good, sizeof(good), "%s/models/%s", VW_TEST_DATA, GOOD_MODEL);
	before = __atomic_load_n(&srv.requests, __ATOMIC_SEQ_CST);
	o = load(good, "/switch", NULL, 300);
	assert_is_good_model(&o);
	assert_int_equal(strncmp(o.origin, "file:", 5), 0);
	assert_string_equal(o.origin + 5, good);
	assert_int_equal(__atomic_load_n(&srv.requests, __ATOMIC_SEQ_CST), before);
	vw_model_free(o.m);

	assert_int_equal(vw_fixture_write(srv.tmp, "bad.json", "{\"package\": 1}", 0), 0);
	o = load(bad, "/good", NULL, 300);
	assert_int_equal(o.r, -EINVAL);
	assert_null(o.m);
	assert_non_null(strstr(o.err, "package"));
	/* A bad file's error names the file (and the flag), once. */
	{
		char want[1100];

		snprintf(want, sizeof(want), "--model.file %s: ", bad);
		if (strncmp(o.err, want, strlen(want)) != 0)
			fail_msg("error does not name the file: %s", o.err);
	}
	o = load("/nonexistent/virtwatt/model.json", "/good", NULL, 300);
	assert_int_equal(o.r, -ENOENT);
	assert_null(o.m);
	assert_non_null(strstr(o.err, "cannot read"));
	assert_string_equal(o.err, "--model.file: cannot read /nonexistent/virtwatt/model.json: No "
				   "such file or directory");
	free(bad);
}

static void on_alarm(int sig)
{
	(void)sig;
}

/*
 * A FIFO where --model.file, or the model URL's cached copy, should be (a careless deployment;
 * whoever can write the cache directory): refused as not a regular file, at once, the cache
 * warned about and the built-in model taken, as for any unusable copy. Before, the daemon's
 * start blocked in open() for ever (here: until the test's 2 s alarm, then EINTR).
 */
static void test_fifo(void **state)
{
	struct sigaction sa = { .sa_handler = on_alarm }, old_sa;
	char *fifo = path_in_tmp("fifo.json"), *cache = path_in_tmp("cache-fifo"), *cached;
	struct outcome o;
	double t0;

	(void)state;
	assert_int_equal(mkfifo(fifo, 0600), 0);
	set_mode(MODE_GOOD);
	o = load(NULL, "/switch", cache, 2000); /* a good copy cached, then a FIFO in its place */
	assert_is_good_model(&o);
	vw_model_free(o.m);
	cached = cache_file(cache);
	assert_non_null(cached);
	assert_int_equal(unlink(cached), 0);
	assert_int_equal(mkfifo(cached, 0600), 0);
	assert_int_equal(sigaction(SIGALRM, &sa, &old_sa), 0); /* no SA_RESTART */
	alarm(2);
	t0 = now_s();
	o = load(fifo, NULL, NULL, 300);
	assert_int_equal(o.r, -EINVAL);
	assert_null(o.m);
	assert_non_null(strstr(o.err, "fifo.json: not a regular file"));
	set_mode(MODE_500);
	o = load(NULL, "/switch", cache, 300);
	alarm(0);
	assert_int_equal(sigaction(SIGALRM, &old_sa, NULL), 0);
	assert_true(now_s() - t0 < 1.5);
	assert_int_equal(o.r, 0);
	assert_non_null(strstr(o.origin, "builtin"));
	assert_non_null(strstr(srv.logs, "unusable: cannot read"));
	assert_non_null(strstr(srv.logs, "not a regular file"));
	vw_model_free(o.m);
	free(cached);
	free(cache);
	free(fifo);
}

static void test_bad_scheme(void **state)
{
	struct outcome o;

	(void)state;
	o = load(NULL, "ftp://127.0.0.1/model.json", NULL, 300);
	assert_int_equal(o.r, -EINVAL);
	assert_null(o.m);
	assert_non_null(strstr(o.err, "not http(s)"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_url_then_cache),    cmocka_unit_test(test_builtin_fallback),
		cmocka_unit_test(test_url_names_trainer), cmocka_unit_test(test_file),
		cmocka_unit_test(test_bad_scheme),        cmocka_unit_test(test_fifo),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

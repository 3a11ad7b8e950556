/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A real Prometheus scraping the real virtwatt-host binary over HTTPS: one daemon with basic
 * auth, one requiring a client certificate from the test CA. Prometheus' own verdict (up) and
 * its HTTP API decide: the right credentials give up == 1 and queryable virtwatt series, a
 * wrong password or a missing certificate give up == 0. Then the basic-auth daemon's web config
 * changes three times while Prometheus scrapes it every second: each old server is retired
 * (what it began finishes, its kept-alive connection closed) and no scrape fails (Go's client
 * opens a new connection, or sends again a GET whose reused connection closed unanswered).
 * Loopback only, bounded in time; every process is killed by the teardown, pass or fail.
 */
#include "vw_test.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"
#include "host_fixture.h"
#include "macro.h"
#include "tls_fixture.h"

#define DEADLINE_S 60

static struct tls_fixture tf;
static struct host_fixture hf;
static pid_t pids[3]; /* the two daemons and Prometheus */

/* The daemon's output kept in log (a fixture file name) when not NULL. */
static unsigned start_host(pid_t *pid, const char *config, const char *log)
{
	char sys[600], proc[600], wc[600], path[512];
	char *argv[] = { VW_HOST_BIN, sys, proc, wc, "--web.listen-address=127.0.0.1:0",
			 "--monitor.interval=1s", "--monitor.sample-interval=200ms",
			 "--kube.node-name=tls-test", "--passthrough.enable=false", NULL };
	unsigned port = 0;

	snprintf(sys, sizeof(sys), "--host.sysfs=%s", hf.sys);
	snprintf(proc, sizeof(proc), "--host.procfs=%s", hf.proc);
	snprintf(wc, sizeof(wc), "--web.config-file=%s",
		 tls_fixture_path(&tf, config, path, sizeof(path)));
	if (log)
		assert_int_equal(vw_fixture_start_daemon_logged(
					 argv, tls_fixture_path(&tf, log, path, sizeof(path)), pid,
					 &port),
				 0);
	else
		assert_int_equal(vw_fixture_start_daemon(argv, pid, &port), 0);
	return port;
}

static pid_t start_prometheus(const char *config, unsigned port)
{
	char cfg[600], tsdb[600], listen[64], log[512];
	char *argv[] = { "prometheus", cfg, tsdb, listen, NULL };
	pid_t pid;

	snprintf(cfg, sizeof(cfg), "--config.file=%s/%s", tf.dir, config);
	snprintf(tsdb, sizeof(tsdb), "--storage.tsdb.path=%s/tsdb", tf.dir);
	snprintf(listen, sizeof(listen), "--web.listen-address=127.0.0.1:%u", port);
	pid = vw_fixture_spawn_logged(argv,
				      tls_fixture_path(&tf, "prometheus.log", log, sizeof(log)));
	assert_true(pid > 0);
	return pid;
}

/* The API's answer to an instant query (malloc'd JSON), or NULL. */
static char *query(unsigned port, const char *promql)
{
	CURL *c = curl_easy_init();
	char *q = curl_easy_escape(c, promql, 0), url[1024];
	long code = 0;
	char *body;

	snprintf(url, sizeof(url), "http://127.0.0.1:%u/api/v1/query?query=%s", port, q);
	curl_free(q);
	curl_easy_cleanup(c);
	body = vw_fixture_http_get(url, &code);
	if (code != 200) {
		free(body);
		return NULL;
	}
	return body;
}

/* The value of a one-sample result ("1", "0", ...), or "" if none yet. */
static void sample_value(const char *json, char *out, size_t size)
{
	const char *v = json ? strstr(json, "\"value\":[") : NULL;
	const char *q = v ? strchr(v, ',') : NULL;

	out[0] = '\0';
	if (q && q[1] == '"')
		snprintf(out, size, "%.*s", (int)strcspn(q + 2, "\""), q + 2);
}

/* Wait until promql's single sample reads want (within the deadline). */
static bool wait_value(unsigned port, const char *promql, const char *want, time_t deadline)
{
	char got[64] = "";

	while (time(NULL) < deadline) {
		char *json = query(port, promql);

		sample_value(json, got, sizeof(got));
		free(json);
		if (strcmp(got, want) == 0)
			return true;
		usleep(500 * 1000);
	}
	print_message("# %s: last value \"%s\", wanted \"%s\"\n", promql, got, want);
	return false;
}

/* Wait until the metadata API's answer for metric holds want (within the deadline). */
static bool wait_metadata(unsigned port, const char *metric, const char *want, time_t deadline)
{
	char url[512];

	snprintf(url, sizeof(url), "http://127.0.0.1:%u/api/v1/metadata?metric=%s", port, metric);
	while (time(NULL) < deadline) {
		long code = 0;
		char *json = vw_fixture_http_get(url, &code);
		bool found = code == 200 && json && strstr(json, want);

		if (found || time(NULL) + 1 >= deadline)
			print_message("# metadata of %s: %s\n", metric, json ? json : "(none)");
		free(json);
		if (found)
			return true;
		usleep(500 * 1000);
	}
	return false;
}

static void dump_prometheus_log(void)
{
	char path[512];
	char *log = vw_fixture_slurp(tls_fixture_path(&tf, "prometheus.log", path, sizeof(path)),
				     NULL);

	if (log)
		print_message("# prometheus.log (tail): %s\n",
			      strlen(log) > 3000 ? log + strlen(log) - 3000 : log);
	free(log);
}

/* How many times the basic-auth daemon's log has what. */
static unsigned host_log_count(const char *what)
{
	char path[512];
	char *log = vw_fixture_slurp(tls_fixture_path(&tf, "host-auth.log", path, sizeof(path)),
				     NULL);
	unsigned n = 0;

	for (const char *p = log; p && (p = strstr(p, what)); p++)
		n++;
	free(log);
	return n;
}

/*
 * Three real changes of auth.yml (a user added each time; the daemon checks every 2 s and
 * applies a change at the second check that sees it), each retiring the server Prometheus
 * keeps a connection to: up stays 1 through them all, and each old server stopped with every
 * request it had begun answered.
 */
static bool reloads_lose_no_scrape(unsigned prom_port, const char *hash)
{
	time_t start = time(NULL), deadline = start + 30;
	char text[4096], promql[128];
	size_t len;

	len = (size_t)snprintf(text, sizeof(text),
			       "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
			       "basic_auth_users:\n  prometheus: '%s'\n", hash);
	for (unsigned k = 1; k <= 3; k++) {
		len += (size_t)snprintf(text + len, sizeof(text) - len, "  user%u: '%s'\n", k, hash);
		assert_int_equal(vw_fixture_replace(tf.dir, "auth.yml", text), 0);
		while (host_log_count("reloaded") < k && time(NULL) < deadline)
			usleep(200 * 1000);
		if (host_log_count("reloaded") < k) {
			print_message("# change %u not applied within 30 s\n", k);
			return false;
		}
		sleep(1); /* a scrape of the new server */
	}
	while (host_log_count("every request it had begun answered") < 3 && time(NULL) < deadline)
		usleep(200 * 1000);
	if (host_log_count("every request it had begun answered") != 3 ||
	    host_log_count("stopped at its bound") != 0) {
		print_message("# the old servers did not all stop with their requests answered\n");
		return false;
	}
	/* Every scrape since the first change, each a success (a failed one is up 0). */
	snprintf(promql, sizeof(promql), "min_over_time(up{job=\"auth_ok\"}[%lds])",
		 (long)(time(NULL) - start));
	return wait_value(prom_port, promql, "1", time(NULL) + 5);
}

static void test_prometheus_scrapes_https(void **state)
{
	char hash[128], text[4096], ca[512], crt[512], key[512];
	unsigned auth_port, cert_port, prom_port = vw_fixture_free_port(SOCK_STREAM);
	time_t deadline = time(NULL) + DEADLINE_S;
	bool ok = true;

	(void)state;
	assert_int_equal(tls_fixture_bcrypt("scrape-pw", hash, sizeof(hash)), 0);
	snprintf(text, sizeof(text),
		 "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
		 "basic_auth_users:\n  prometheus: '%s'\n", hash);
	assert_int_equal(vw_fixture_write(tf.dir, "auth.yml", text, 0), 0);
	assert_int_equal(vw_fixture_write(tf.dir, "cert.yml",
					  "tls_server_config:\n  cert_file: server.crt\n"
					  "  key_file: server.key\n"
					  "  client_auth_type: RequireAndVerifyClientCert\n"
					  "  client_ca_file: ca.crt\n", 0), 0);
	auth_port = start_host(&pids[0], "auth.yml", "host-auth.log");
	cert_port = start_host(&pids[1], "cert.yml", NULL);
	tls_fixture_path(&tf, "ca.crt", ca, sizeof(ca));
	tls_fixture_path(&tf, "client.crt", crt, sizeof(crt));
	tls_fixture_path(&tf, "client.key", key, sizeof(key));
	snprintf(text, sizeof(text),
		 "global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}\n"
		 "scrape_configs:\n"
		 "  - job_name: auth_ok\n    scheme: https\n    tls_config: {ca_file: %s}\n"
		 "    basic_auth: {username: prometheus, password: scrape-pw}\n"
		 "    static_configs: [{targets: ['127.0.0.1:%u']}]\n"
		 "  - job_name: auth_badpw\n    scheme: https\n    tls_config: {ca_file: %s}\n"
		 "    basic_auth: {username: prometheus, password: wrong}\n"
		 "    static_configs: [{targets: ['127.0.0.1:%u']}]\n"
		 "  - job_name: cert_ok\n    scheme: https\n"
		 "    tls_config: {ca_file: %s, cert_file: %s, key_file: %s}\n"
		 "    static_configs: [{targets: ['127.0.0.1:%u']}]\n"
		 "  - job_name: cert_none\n    scheme: https\n    tls_config: {ca_file: %s}\n"
		 "    static_configs: [{targets: ['127.0.0.1:%u']}]\n",
		 ca, auth_port, ca, auth_port, ca, crt, key, cert_port, ca, cert_port);
	assert_int_equal(vw_fixture_write(tf.dir, "prometheus.yml", text, 0), 0);
	assert_int_not_equal(prom_port, 0);
	pids[2] = start_prometheus("prometheus.yml", prom_port);

	ok = ok && wait_value(prom_port, "up{job=\"auth_ok\"}", "1", deadline);
	ok = ok && wait_value(prom_port, "up{job=\"cert_ok\"}", "1", deadline);
	ok = ok && wait_value(prom_port, "up{job=\"auth_badpw\"}", "0", deadline);
	ok = ok && wait_value(prom_port, "up{job=\"cert_none\"}", "0", deadline);
	/* A virtwatt series from each authenticated scrape, through the query API. */
	ok = ok && wait_value(prom_port, "count(virtwatt_node_power_source_info{job=\"auth_ok\"})",
			      "1", deadline);
	ok = ok && wait_value(prom_port, "count(virtwatt_node_power_source_info{job=\"cert_ok\"})",
			      "1", deadline);
	/* Prometheus asks for OpenMetrics: from its second scrape on it gets the OpenMetrics the
	 * first request of each snapshot derives from the text, whose # UNIT lines (OpenMetrics
	 * only) reach its metadata. */
	ok = ok && wait_metadata(prom_port, "virtwatt_node_cpu_idle_baseline_watts",
				 "\"unit\":\"watts\"", deadline);
	/* And nothing from the refused ones. */
	ok = ok && wait_value(prom_port,
			      "count({__name__=~\"virtwatt_.+\",job=~\"auth_badpw|cert_none\"}) "
			      "or vector(0)",
			      "0", deadline);
	ok = ok && reloads_lose_no_scrape(prom_port, hash);
	if (!ok)
		dump_prometheus_log();
	assert_true(ok);
}

static int setup(void **state)
{
	static const struct host_fixture_zone zones[] = {
		{ "intel-rapl:0", "package-0", 262143328850ULL, 0, 60 },
	};

	(void)state;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (tls_fixture_init(&tf) < 0)
		return -1;
	return host_fixture_init(&hf, zones, 1, 2);
}

static int teardown(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(pids); i++) {
		if (pids[i] > 0) {
			kill(pids[i], SIGKILL);
			waitpid(pids[i], NULL, 0);
			pids[i] = 0;
		}
	}
	host_fixture_fini(&hf);
	tls_fixture_fini(&tf);
	curl_global_cleanup();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prometheus_scrapes_https),
	};

	if (system("command -v prometheus >/dev/null 2>&1") != 0)
		return tls_fixture_skip("prometheus is not installed (deploy/install-deps.sh --test)");
	if (system("command -v openssl >/dev/null 2>&1") != 0)
		return tls_fixture_skip("openssl (to make test certificates) is not installed");
	return cmocka_run_group_tests(tests, setup, teardown);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The virtwatt-host binary as a user runs it: --help, bad flags and config files, then a real
 * daemon on a fixture host serving /metrics, /healthz, /readyz over HTTP, stopped by SIGTERM.
 */
#include "vw_test.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"
#include "host_fixture.h"
#include "macro.h"

struct proc {
	pid_t pid;
	int err_fd; /* the child's stderr */
	char log[65536];
	size_t log_len;
};

/* The daemon a test started: killed by the teardown if the test failed before stopping it. */
static pid_t running_pid;

static int stop_leftover(void **state)
{
	(void)state;
	vw_fixture_kill(&running_pid);
	return 0;
}

static int spawn(struct proc *p, char *const argv[])
{
	int pipefd[2];

	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	p->pid = fork();
	if (p->pid < 0)
		return -errno;
	if (p->pid == 0) {
		dup2(pipefd[1], STDERR_FILENO);
		dup2(pipefd[1], STDOUT_FILENO);
		execv(argv[0], argv);
		_exit(127);
	}
	close(pipefd[1]);
	running_pid = p->pid;
	p->err_fd = pipefd[0];
	p->log_len = 0;
	p->log[0] = '\0';
	return 0;
}

/* A full log buffer lets its older half go, so the child's output is always read. */
static void make_room(struct proc *p)
{
	size_t half = p->log_len / 2;

	if (p->log_len < sizeof(p->log) - 1)
		return;
	memmove(p->log, p->log + half, p->log_len - half);
	p->log_len -= half;
	p->log[p->log_len] = '\0';
}

/* What the child wrote, read once into the log: the bytes read (0 at its end, -1 on error). */
static ssize_t read_more(struct proc *p)
{
	ssize_t n;

	make_room(p);
	n = read(p->err_fd, p->log + p->log_len, sizeof(p->log) - 1 - p->log_len);
	if (n > 0) {
		p->log_len += (size_t)n;
		p->log[p->log_len] = '\0';
	}
	return n;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* Read child output until `needle` appears or timeout_ms passes (by the clock: a chatty child,
 * log.level debug, gives many short reads). */
static bool wait_output(struct proc *p, const char *needle, int timeout_ms)
{
	for (long long end = now_ms() + timeout_ms; now_ms() < end;) {
		struct pollfd pfd = { .fd = p->err_fd, .events = POLLIN };

		if (strstr(p->log, needle))
			return true;
		if (poll(&pfd, 1, 50) > 0 && read_more(p) <= 0)
			return strstr(p->log, needle) != NULL;
	}
	return strstr(p->log, needle) != NULL;
}

/* The port of the first "http: listening on ... (port N)" line, whole (0: none in 10 s). */
static unsigned listen_port(struct proc *p)
{
	long long end = now_ms() + 10000;
	unsigned port;
	char close;

	while (now_ms() < end) {
		const char *at = strstr(p->log, "(port ");

		if (at && sscanf(at + 6, "%u%c", &port, &close) == 2 && (close == ')' || close == ','))
			return port;
		(void)wait_output(p, "\x01never", 50);
	}
	fputs(p->log, stderr);
	return 0;
}

/* Read what the child wrote so far without waiting: a daemon whose stderr pipe fills up stops
 * in write(). */
static void drain(struct proc *p)
{
	struct pollfd pfd = { .fd = p->err_fd, .events = POLLIN };

	while (poll(&pfd, 1, 0) > 0 && (pfd.revents & POLLIN) && read_more(p) > 0)
		;
}

/* The meter half a simulated second on, then 100 ms of the daemon's; what it wrote meanwhile read
 * (p not NULL): a daemon whose output pipe fills up stops in write(). */
static void meter_tick(struct host_fixture *fx, struct proc *p)
{
	struct timespec ts = { 0, 100 * 1000 * 1000 };

	assert_int_equal(host_fixture_advance(fx, 0.5), 0);
	nanosleep(&ts, NULL);
	if (p)
		drain(p);
}

static int finish(struct proc *p)
{
	int st;

	(void)wait_output(p, "\x01never", 30000); /* returns at end of output */
	waitpid(p->pid, &st, 0);
	running_pid = 0;
	close(p->err_fd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static const char *const bad_values[][2] = {
	{ "--web.listen-address=:70000", "--web.listen-address: invalid address \":70000\"" },
	{ "--metrics=node,vms", "--metrics: invalid item \"vms\" (expected one of: node, process, "
				"container, pod, vm)" },
	{ "--monitor.interval=0s", "--monitor.interval:" },
	{ "--log.format=xml", "--log.format: invalid value \"xml\"" },
	{ "--passthrough.enable=maybe", "--passthrough.enable: invalid value \"maybe\"" },
	{ "--cpu.irq-accounting=on", "--cpu.irq-accounting: invalid value \"on\"" },
};

static void test_help_and_errors(void **state)
{
	char *help[] = { VW_HOST_BIN, "--help", NULL };
	char *bad[] = { VW_HOST_BIN, "--monitor.interval=5x", NULL };
	char *dir = vw_fixture_mkdtemp("cfg");
	char cfgarg[600];
	/* An unknown key is a warning (as in Kepler), an error with --config.strict. */
	char *badcfg[] = { VW_HOST_BIN, cfgarg, "--config.strict", NULL };
	struct proc p;

	(void)state;
	assert_int_equal(spawn(&p, help), 0);
	assert_int_equal(finish(&p), 0);
	for (const char *f = "--web.listen-address\0--host.sysfs\0--host.procfs\0--monitor.interval\0"
			     "--config.file\0--log.level\0--model.file\0";
	     *f; f += strlen(f) + 1)
		if (!strstr(p.log, f))
			fail_msg("--help lacks %s:\n%s", f, p.log);

	assert_int_equal(spawn(&p, bad), 0);
	assert_int_equal(finish(&p), 2);
	assert_non_null(strstr(p.log, "monitor.interval"));

	/* Values checked when parsed: exit 2 with the reason, before any start-up line. */
	for (size_t i = 0; i < ARRAY_SIZE(bad_values); i++) {
		char *argv[] = { VW_HOST_BIN, (char *)bad_values[i][0], NULL };

		assert_int_equal(spawn(&p, argv), 0);
		assert_int_equal(finish(&p), 2);
		if (!strstr(p.log, bad_values[i][1]) || strstr(p.log, "starting"))
			fail_msg("%s:\n%s", bad_values[i][0], p.log);
	}

	assert_int_equal(vw_fixture_write(dir, "c.yaml", "monitor:\n  interval: 5s\n  intervl: 1s\n", 0), 0);
	snprintf(cfgarg, sizeof(cfgarg), "--config.file=%s/c.yaml", dir);
	assert_int_equal(spawn(&p, badcfg), 0);
	assert_int_equal(finish(&p), 2);
	assert_non_null(strstr(p.log, "c.yaml:3:"));
	vw_fixture_rm(dir);
}

struct buf {
	char *data;
	size_t len;
};

/* One request; the body (replacing b's) and its length in b; returns the status. */
static long http(const char *url, const char *method, struct buf *b)
{
	long code;

	free(b->data);
	b->data = vw_fixture_http(url, method, &code);
	b->len = b->data ? strlen(b->data) : 0;
	return code;
}

/* What Prometheus 2 sends when OpenMetrics is allowed (its default scrape_protocols). */
#define PROMETHEUS_ACCEPT                                                                      \
	"application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;" \
	"q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"

static size_t body_append(char *p, size_t size, size_t n, void *userdata)
{
	FILE *f = userdata;

	return fwrite(p, size, n, f);
}

/* GET url with an Accept header: the status, the body in b and the Content-Type in ct. */
static long http_accept(const char *url, const char *accept, struct buf *b, char *ct,
			size_t ct_len)
{
	struct curl_slist *list = NULL;
	char header[256];
	const char *type = NULL;
	long code = 0;
	CURL *c = curl_easy_init();
	FILE *f;

	free(b->data);
	*b = (struct buf){ 0 };
	ct[0] = '\0';
	f = open_memstream(&b->data, &b->len);
	assert_non_null(c);
	assert_non_null(f);
	snprintf(header, sizeof(header), "Accept: %s", accept);
	list = curl_slist_append(NULL, header);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, list);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, body_append);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, f);
	if (curl_easy_perform(c) == CURLE_OK) {
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
		if (curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &type) == CURLE_OK && type)
			snprintf(ct, ct_len, "%s", type);
	}
	fclose(f);
	curl_easy_cleanup(c);
	curl_slist_free_all(list);
	return code;
}

/*
 * The daemon renders OpenMetrics only once a scraper asked: Prometheus' first scrape is
 * answered in text (as text), a later one in OpenMetrics.
 */
static void check_openmetrics_on_demand(struct host_fixture *fx, unsigned port)
{
	char url[128], ct[128];
	struct buf b = { 0 };
	int i;

	snprintf(url, sizeof(url), "http://127.0.0.1:%u/metrics", port);
	assert_int_equal(http_accept(url, PROMETHEUS_ACCEPT, &b, ct, sizeof(ct)), 200);
	assert_string_equal(ct, "text/plain; version=0.0.4; charset=utf-8");
	assert_non_null(strstr(b.data, "# TYPE kepler_node_cpu_joules_total counter\n"));
	assert_null(strstr(b.data, "# EOF"));
	/* The next snapshot (1 s; later on a loaded machine) carries OpenMetrics. */
	for (i = 0; i < 100; i++) {
		meter_tick(fx, NULL);
		assert_int_equal(http_accept(url, PROMETHEUS_ACCEPT, &b, ct, sizeof(ct)), 200);
		if (strstr(ct, "openmetrics"))
			break;
	}
	if (i == 100)
		fail_msg("no OpenMetrics after 10 s; last Content-Type '%s'", ct);
	assert_string_equal(ct, "application/openmetrics-text; version=1.0.0; charset=utf-8");
	assert_non_null(strstr(b.data, "# TYPE kepler_node_cpu_joules counter\n"));
	assert_true(b.len > 6 && strcmp(b.data + b.len - 6, "# EOF\n") == 0);
	/* Text scrapers are unaffected. */
	assert_int_equal(http_accept(url, "text/plain;version=0.0.4", &b, ct, sizeof(ct)), 200);
	assert_string_equal(ct, "text/plain; version=0.0.4; charset=utf-8");
	assert_null(strstr(b.data, "# EOF"));
	free(b.data);
}

/* One package zone, 60 W. */
static const struct host_fixture_zone package_zone[] = {
	{ "intel-rapl:0", "package-0", 262143328850ULL, 0, 60 },
};

/* A fixture host of zones (two CPUs), and the daemon's --host.sysfs and --host.procfs options for
 * it (600 bytes each). */
static void fixture_host(struct host_fixture *fx, const struct host_fixture_zone *zones,
			 unsigned n_zones, char sys[static 600], char proc[static 600])
{
	assert_int_equal(host_fixture_init(fx, zones, n_zones, 2), 0);
	snprintf(sys, 600, "--host.sysfs=%s", fx->sys);
	snprintf(proc, 600, "--host.procfs=%s", fx->proc);
}

static void test_serves_metrics(void **state)
{
	struct host_fixture fx;
	char sys[600], proc[600], url[128];
	/* A fixture /proc has no processes to account: no passthrough, as the error says. */
	char *argv[] = { VW_HOST_BIN, sys, proc, "--web.listen-address=127.0.0.1:0",
			 "--monitor.interval=1s", "--monitor.sample-interval=200ms",
			 "--kube.node-name=daemon-test", "--passthrough.enable=false", NULL };
	struct buf b = { 0 };
	struct proc p;
	unsigned port = 0;
	long code = 0;

	(void)state;
	fixture_host(&fx, package_zone, 1, sys, proc);
	assert_int_equal(spawn(&p, argv), 0);
	assert_true(wait_output(&p, "(port ", 5000));
	assert_int_equal(sscanf(strstr(p.log, "(port ") + 6, "%u", &port), 1);

	/* The meter advances while the daemon runs. */
	for (int i = 0; i < 40 && code != 200; i++) {
		meter_tick(&fx, NULL);
		snprintf(url, sizeof(url), "http://127.0.0.1:%u/readyz", port);
		code = http(url, "GET", &b);
	}
	assert_int_equal(code, 200);
	for (int i = 0; i < 15; i++)
		meter_tick(&fx, NULL);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/metrics", port);
	assert_int_equal(http(url, "GET", &b), 200);
	assert_non_null(strstr(b.data, "kepler_node_cpu_joules_total{zone=\"package\",path=\"/sys/class/powercap/intel-rapl:0\",node_name=\"daemon-test\"}"));
	assert_non_null(strstr(b.data, "source=\"rapl\""));
	check_openmetrics_on_demand(&fx, port);
	assert_int_equal(http(url, "HEAD", &b), 200);
	assert_int_equal(b.len, 0);
	assert_int_equal(http(url, "POST", &b), 405);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/healthz", port);
	assert_int_equal(http(url, "GET", &b), 200);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/nope", port);
	assert_int_equal(http(url, "GET", &b), 404);
	free(b.data);

	kill(p.pid, SIGTERM);
	assert_int_equal(finish(&p), 0);
	assert_non_null(strstr(p.log, "stopping"));
	host_fixture_fini(&fx);
}

/* Each non-empty line of the log is one JSON object (--log.format=json). */
static void assert_json_lines(const char *log)
{
	size_t lines = 0;

	for (const char *l = log; *l;) {
		size_t len = strcspn(l, "\n");

		if (len) {
			if (strncmp(l, "{\"time\":\"", 9) != 0 || l[len - 1] != '}' ||
			    !memmem(l, len, "\"level\":\"", 9) || !memmem(l, len, "\"msg\":\"", 7))
				fail_msg("not a JSON log line: %.*s", (int)len, l);
			lines++;
		}
		l += len + (l[len] == '\n');
	}
	assert_true(lines >= 3);
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

/*
 * Kepler's own configuration files, unchanged, start virtwatt-host and it serves node energy:
 * their keys map to ours or are accepted with one warning each saying why they mean nothing
 * here. Only the roots (fixture meters) and the port (tests run side by side) come from flags,
 * which beat the file as in Kepler; --log.format=json makes every line a JSON object.
 */
static void test_kepler_config_files(void **state)
{
	static const char *const files[] = { "config.yaml", "compose-default-config.yaml" };

	(void)state;
	for (size_t f = 0; f < ARRAY_SIZE(files); f++) {
		struct host_fixture fx;
		char sys[600], proc[600], cfg[600], url[128];
		char *argv[] = { VW_HOST_BIN, cfg, sys, proc, "--web.listen-address=127.0.0.1:0",
				 "--log.format=json", "--kube.node-name=kepler-file", NULL };
		struct buf b = { 0 };
		struct proc p;
		unsigned port = 0;
		long code = 0;

		fixture_host(&fx, package_zone, 1, sys, proc);
		snprintf(cfg, sizeof(cfg), "--config.file=%s/tests/data/kepler-config/%s",
			 VW_SOURCE_ROOT, files[f]);
		assert_int_equal(spawn(&p, argv), 0);
		port = listen_port(&p);
		if (!port)
			fail_msg("%s: no server", files[f]);
		snprintf(url, sizeof(url), "http://127.0.0.1:%u/metrics", port);
		/* monitor.interval: 5s in the file: the second snapshot has the first interval. */
		for (int i = 0; i < 150 && !(b.data && strstr(b.data, "kepler_node_cpu_joules_total{"));
		     i++) {
			meter_tick(&fx, &p);
			code = http(url, "GET", &b);
		}
		assert_int_equal(code, 200);
		if (!strstr(b.data, "kepler_node_cpu_joules_total{zone=\"package\","))
			fail_msg("%s: no node energy:\n%s", files[f], b.data);
		drain(&p);
		/* Each key without effect is said once, with why; nothing is an error. */
		assert_int_equal(count(p.log, "debug.pprof.enabled is accepted but has no effect"), 1);
		assert_int_equal(count(p.log, "exporter.prometheus.debugCollectors is accepted"), 1);
		assert_int_equal(count(p.log, "monitor.staleness is accepted"), 1);
		assert_null(strstr(p.log, "unknown key"));
		/* (A fixture /proc has no processes: the CPU accountant's errors are this fixture's.)
		 * Passthrough, auto, is off without accounting: said, no error. */
		if ((strstr(p.log, "\"level\":\"error\",\"msg\":\"config") ||
		     strstr(p.log, "\"level\":\"error\",\"msg\":\"passthrough")) &&
		    fputs(p.log, stderr) >= 0)
			fail_msg("%s: an error logged", files[f]);
		assert_non_null(strstr(p.log, "passthrough: off: "));
		/* experimental.platform.redfish.enabled: false: its configFile is not read. */
		assert_non_null(strstr(p.log, "platform.redfish.enabled is false"));
		kill(p.pid, SIGTERM);
		assert_int_equal(finish(&p), 0);
		assert_json_lines(p.log);
		free(b.data);
		host_fixture_fini(&fx);
	}
}

/*
 * Kepler's flags parse as kingpin reads them: booleans with their --no- form, repeatable
 * --web.listen-address and --metrics, flags without effect warned about once. The daemon
 * serves on both addresses.
 */
static void test_kepler_flags(void **state)
{
	struct host_fixture fx;
	char sys[600], proc[600], url[128];
	char *argv[] = { VW_HOST_BIN, sys, proc, "--web.listen-address=127.0.0.1:0",
			 "--web.listen-address=[::1]:0", "--monitor.interval=1s",
			 "--metrics=node", "--metrics=container", "--metrics", "pod",
			 "--log.format", "json", "--log.level=info", "--debug.pprof",
			 "--no-exporter.prometheus", "--exporter.stdout", "--no-kube.enable",
			 "--experimental.gpu.enabled=false", "--no-experimental.platform.redfish.enabled",
			 "--experimental.hwmon.force-enabled=false", "--kube.node-name=flags", NULL };
	struct buf b = { 0 };
	struct proc p;
	unsigned port = 0;
	long code = 0;

	(void)state;
	fixture_host(&fx, package_zone, 1, sys, proc);
	assert_int_equal(spawn(&p, argv), 0);
	port = listen_port(&p);
	assert_true(port > 0);
	/* Two servers: one per --web.listen-address. */
	assert_true(wait_output(&p, "http: listening on [::1]:0", 5000));
	assert_true(wait_output(&p, "http: listening on 127.0.0.1:0", 5000));
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/healthz", port);
	for (int i = 0; i < 40 && code != 200; i++) {
		meter_tick(&fx, &p);
		code = http(url, "GET", &b);
	}
	assert_int_equal(code, 200);
	/* --exporter.stdout: the snapshot on standard output. */
	assert_true(wait_output(&p, "# TYPE kepler_node_cpu_joules_total counter", 5000));
	assert_int_equal(count(p.log, "--debug.pprof is accepted but has no effect"), 1);
	assert_int_equal(count(p.log, "--no-exporter.prometheus is accepted but has no effect"), 1);
	kill(p.pid, SIGTERM);
	assert_int_equal(finish(&p), 0);
	free(b.data);
	host_fixture_fini(&fx);
}

/*
 * Passthrough asked for explicitly where no VM can be accounted (a fixture /proc: no CPU
 * accounting) stays an error naming the fix; by default (auto) the host starts without it.
 */
static void test_passthrough_asked_but_impossible(void **state)
{
	struct host_fixture fx;
	char sys[600], proc[600];
	char *argv[] = { VW_HOST_BIN, sys, proc, "--web.listen-address=127.0.0.1:0",
			 "--metrics=node,container,pod", "--passthrough.enable=true", NULL };
	struct proc p;

	(void)state;
	fixture_host(&fx, package_zone, 1, sys, proc);
	assert_int_equal(spawn(&p, argv), 0);
	assert_int_equal(finish(&p), 1);
	if (!strstr(p.log, "passthrough: --passthrough.enable=true but no per-process CPU "
			   "accounting could be opened"))
		fail_msg("%s", p.log);
	assert_null(strstr(p.log, "--metrics lacks vm"));
	host_fixture_fini(&fx);
}

/*
 * A guest with no passthrough says where it looked, each place on its line, and once at warn
 * level that none was found with the fix; it never claims to use the passthrough, and its
 * power source info says estimated.
 */
static void test_guest_says_where_it_looked(void **state)
{
	char *dir = vw_fixture_mkdtemp("gsearch");
	char dev[600], sys[600], folder[600], want[800], url[128];
	char *argv[] = { VW_GUEST_BIN, dev, sys, folder, "--web.listen-address=127.0.0.1:0",
			 "--monitor.interval=1s", "--state.file=", "--cpu.accounting=procfs",
			 "--kube.node-name=gsearch", NULL };
	struct buf b = { 0 };
	struct proc p;
	unsigned port;
	long code = 0;

	(void)state;
	assert_int_equal(vw_fixture_mkdir(dir, "dev"), 0);
	assert_int_equal(vw_fixture_mkdir(dir, "sys"), 0);
	snprintf(dev, sizeof(dev), "--host.devfs=%s/dev", dir);
	snprintf(sys, sizeof(sys), "--host.sysfs=%s/sys", dir);
	snprintf(folder, sizeof(folder), "--passthrough.folder=%s/run/virtwatt/host", dir);
	assert_int_equal(spawn(&p, argv), 0);
	port = listen_port(&p);
	assert_true(port > 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/metrics", port);
	for (int i = 0; i < 50 && code != 200; i++) {
		usleep(100 * 1000);
		code = http(url, "GET", &b);
	}
	assert_int_equal(code, 200);
	usleep(2500 * 1000); /* a few ticks: the warning is not repeated */
	drain(&p);
	snprintf(want, sizeof(want),
		 "passthrough: looked at %s/dev/virtio-ports/org.virtwatt.power.0: absent\"", dir);
	assert_non_null(strstr(p.log, want));
	snprintf(want, sizeof(want),
		 "passthrough: looked at %s/run/virtwatt/host (--passthrough.folder): absent\"", dir);
	assert_non_null(strstr(p.log, want));
	assert_non_null(strstr(p.log, "passthrough: looked at /run/virtwatt-host: "));
	assert_int_equal(count(p.log, "level=warn msg=\"passthrough: no channel or shared folder "
				      "from the host found"),
			 1);
	assert_non_null(strstr(p.log, "attach deploy/libvirt/power-channel.xml"));
	assert_null(strstr(p.log, "using source passthrough"));
	assert_non_null(strstr(b.data, "virtwatt_guest_power_source_info{source=\"model\",host_source=\"none\",kind=\"estimated\","));
	kill(p.pid, SIGTERM);
	assert_int_equal(finish(&p), 0);
	free(b.data);
	vw_fixture_rm(dir);
}

/* One daemon run on a fixture meter: the first /metrics holding `needle` (NULL after 8 s). */
static char *serve_until(struct host_fixture *fx, char *const argv[], const char *needle)
{
	struct buf b = { 0 };
	struct proc p;
	char url[128];
	unsigned port;

	assert_int_equal(spawn(&p, argv), 0);
	port = listen_port(&p);
	assert_true(port > 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/metrics", port);
	for (int i = 0; i < 80; i++) {
		meter_tick(fx, &p);
		if (http(url, "GET", &b) == 200 && strstr(b.data, needle))
			break;
	}
	kill(p.pid, SIGTERM);
	assert_int_equal(finish(&p), 0);
	return b.data;
}

/* Kepler's rapl.zones reads only the zones named; cpu.preferredMeters [fake] is the estimate. */
static void test_rapl_zones_and_preferred_meters(void **state)
{
	static const struct host_fixture_zone zones[] = {
		{ "intel-rapl:0", "package-0", 262143328850ULL, 0, 60 },
		{ "intel-rapl:0:0", "dram", 65712999613ULL, 0, 10 },
	};
	struct host_fixture fx;
	char sys[600], proc[600];
	char *argv[] = { VW_HOST_BIN, sys, proc, "--web.listen-address=127.0.0.1:0",
			 "--monitor.interval=1s", "--kube.node-name=zones", NULL, NULL };
	char *body;

	(void)state;
	fixture_host(&fx, zones, 2, sys, proc);
	/* Both zones without it (the test can fail). */
	body = serve_until(&fx, argv, "kepler_node_cpu_joules_total{zone=\"dram\"");
	assert_non_null(strstr(body, "kepler_node_cpu_joules_total{zone=\"dram\""));
	free(body);
	argv[6] = "--rapl.zones=package";
	body = serve_until(&fx, argv, "kepler_node_cpu_joules_total{zone=\"package\"");
	assert_non_null(strstr(body, "kepler_node_cpu_joules_total{zone=\"package\""));
	assert_non_null(strstr(body, "source=\"rapl\""));
	assert_null(strstr(body, "kepler_node_cpu_joules_total{zone=\"dram\""));
	free(body);
	argv[6] = "--cpu.preferred-meters=fake";
	body = serve_until(&fx, argv, "virtwatt_node_power_source_info{source=\"estimator\"");
	assert_non_null(strstr(body, "virtwatt_node_power_source_info{source=\"estimator\""));
	assert_null(strstr(body, "source=\"rapl\""));
	free(body);
	host_fixture_fini(&fx);
}

/* 1 s of its own CPU time, however long a loaded machine takes to give it. */
static void busy_child_exit(void)
{
	vw_fixture_spin(1.0);
	_exit(0);
}

/*
 * The real machine: BPF accounting (as root), the estimator (no RAPL here: Kepler's default
 * model, for its package and dram zones), and workload energy that adds up to the node's, per
 * zone and mode, to the microjoule.
 */
static void test_workloads_add_up_on_this_machine(void **state)
{
	char *argv[] = { VW_HOST_BIN, "--web.listen-address=127.0.0.1:0", "--monitor.interval=1s",
			 "--monitor.sample-interval=250ms", "--kube.node-name=e2e",
			 "--metrics.process-top-n=0", "--model.builtin=kepler", NULL };
	bool ci = getenv("CI") && strcmp(getenv("CI"), "true") == 0;
	struct buf b = { 0 };
	char url[128], busy_pid[64], busy[600], gone[700];
	struct proc p;
	unsigned port = 0;
	pid_t child;

	(void)state;
	assert_int_equal(spawn(&p, argv), 0);
	assert_true(wait_output(&p, "(port ", 5000));
	assert_int_equal(sscanf(strstr(p.log, "(port ") + 6, "%u", &port), 1);
	child = fork();
	if (child == 0)
		busy_child_exit();
	snprintf(busy_pid, sizeof(busy_pid), "pid=\"%d\"", (int)child);
	for (int i = 0; i < 600 && waitpid(child, NULL, WNOHANG) != child; i++) {
		drain(&p); /* until the child is done (60 s at most) */
		usleep(100 * 1000);
	}
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/metrics", port);
	/* The exit is seen at the daemon's next interval (1 s; later on a loaded machine). */
	/* Its PID, comm and exe: PIDs wrap under the suite (pid_max 32768), and a later process
	 * given its PID (an ordinary one has another comm or exe) is not it. */
	snprintf(busy, sizeof(busy), "%s,comm=\"test_daemon\",exe=\"%s\"", busy_pid,
		 VW_BUILD_ROOT "/tests/test_daemon");
	snprintf(gone, sizeof(gone), "%s,type=\"regular\",state=\"terminated\"", busy);
	for (int i = 0; i < 300; i++) { /* 30 s at most */
		free(b.data);
		b = (struct buf){ 0 };
		assert_int_equal(http(url, "GET", &b), 200);
		if (strstr(b.data, gone))
			break;
		drain(&p);
		usleep(100 * 1000);
	}

	if (geteuid() == 0 && ci) {
		assert_non_null(strstr(b.data, "virtwatt_cpu_accounting_info{method=\"bpf\""));
		assert_non_null(strstr(b.data, "virtwatt_cpu_accounting_ghosts_total{method=\"bpf\""));
		assert_non_null(strstr(b.data,
				       "virtwatt_cpu_accounting_stale_slots_removed_total{method=\"bpf\""));
		/* --cpu.ran-walk=auto (the default) says whether its switch program is on */
		assert_non_null(strstr(b.data, "virtwatt_cpu_accounting_ran_walk_active{method=\"bpf\""));

		assert_non_null(strstr(b.data,
				       "virtwatt_cpu_accounting_exit_events_lost_total{method=\"bpf\""));
		/* a healthy machine keeps every exit */
		for (const char *const *why = (const char *const[]){ "process_map_full",
								     "no_thread_slot", "pid_reused",
								     NULL };
		     *why; why++) {
			char want[160];

			snprintf(want, sizeof(want),
				 "virtwatt_cpu_accounting_untracked_exits_total{reason=\"%s\","
				 "method=\"bpf\",",
				 *why);
			assert_non_null(strstr(b.data, want));
		}
		/* interrupt spans that found a map full: counted per map, and which way it went
		 * said at start (--cpu.irq-accounting=auto: on or off, and why) */
		for (const char *const *map = (const char *const[]){ "cgroup", "process", NULL };
		     *map; map++) {
			char want[160];

			snprintf(want, sizeof(want),
				 "virtwatt_cpu_accounting_irq_untracked_spans_total{map=\"%s\","
				 "method=\"bpf\",",
				 *map);
			assert_non_null(strstr(b.data, want));
			snprintf(want, sizeof(want),
				 "virtwatt_cpu_accounting_irq_untracked_seconds_total{map=\"%s\","
				 "method=\"bpf\",",
				 *map);
			assert_non_null(strstr(b.data, want));
		}
		assert_non_null(strstr(p.log, "cpu: bpf: interrupt accounting "));
	}
	else if (!strstr(b.data, "method=\"bpf\""))
		print_message("# note: CPU accounting is not bpf here (not root?)\n");
#define SUM(family, must) vw_fixture_sample_sum_all(b.data, family, must)
	for (const char *const *zone = (const char *const[]){ "zone=\"package\"", "zone=\"dram\"", NULL };
	     *zone; zone++) {
		const char *act[] = { *zone, NULL }, *actm[] = { *zone, "mode=\"active\"", NULL };
		const char *idlem[] = { *zone, "mode=\"idle\"", NULL };
		double node_a = SUM("kepler_node_cpu_active_joules_total", act);
		double node_i = SUM("kepler_node_cpu_idle_joules_total", act);
		double wl_a = SUM("kepler_container_cpu_joules_total", act) +
			      SUM("virtwatt_node_cpu_ended_containers_joules_total", actm) +
			      SUM("virtwatt_node_cpu_uncontained_joules_total", actm) +
			      SUM("virtwatt_node_cpu_unattributed_joules_total", actm);
		double wl_i = SUM("virtwatt_container_cpu_idle_joules_total", act) +
			      SUM("virtwatt_node_cpu_ended_containers_joules_total", idlem) +
			      SUM("virtwatt_node_cpu_uncontained_joules_total", idlem) +
			      SUM("virtwatt_node_cpu_unattributed_joules_total", idlem);

		assert_true(node_a > 0);
		assert_double_near(wl_a, node_a, 2e-6);
		assert_double_near(wl_i, node_i, 2e-6);
	}
	/* The busy child (1 s of its CPU time, and its fork and exit) is reported terminated with
	 * its CPU time and a share of the energy. */
	{
		const char *m[] = { busy, "zone=\"package\"", "state=\"terminated\"", NULL };
		const char *sec[] = { busy, NULL };
		double mine = SUM("kepler_process_cpu_joules_total", m);
		double cpu = SUM("kepler_process_cpu_seconds_total", sec);

		if (!(mine > 0 && cpu >= 1.0 && cpu < 1.5)) {
			const char *l = strstr(b.data, busy);

			fail_msg("the busy child: %.4f J, %.3f s of CPU; its first line: %.300s", mine,
				 cpu, l ? l : "(none)");
		}
	}
#undef SUM
	free(b.data);
	/* On this machine's /proc, start-up's read-only file pages were let go (residency.h):
	 * GnuTLS's initialisation, the options, the model's parse. */
	{
		const char *l = strstr(p.log, "virtwatt-host: start-up done: ");
		unsigned kib = 0, n = 0;

		assert_non_null(l);
		assert_int_equal(sscanf(l, "virtwatt-host: start-up done: %u KiB of %u", &kib, &n), 2);
		print_message("# start-up: %u KiB of %u mappings let go\n", kib, n);
		assert_true(kib > 256 && n > 2);
	}
	kill(p.pid, SIGTERM);
	assert_int_equal(finish(&p), 0);
}

/* --cpu.irq-accounting=off reaches the bpf accountant, which says so at start (root). */
static void test_irq_accounting_off(void **state)
{
	char *argv[] = { VW_HOST_BIN, "--web.listen-address=127.0.0.1:0", "--monitor.interval=1s",
			 "--kube.node-name=e2e", "--model.builtin=kepler",
			 "--cpu.accounting=bpf", "--cpu.irq-accounting=off", NULL };
	struct proc p;
	bool said;

	(void)state;
	if (geteuid() != 0)
		skip();
	assert_int_equal(spawn(&p, argv), 0);
	said = wait_output(&p, "interrupt accounting off (--cpu.irq-accounting=off)", 15000);
	kill(p.pid, SIGTERM);
	(void)finish(&p);
	if (!said && strstr(p.log, "--cpu.accounting=bpf cannot open"))
		skip(); /* no bpf here */
	if (!said)
		fail_msg("no interrupt accounting line:\n%s", p.log);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_irq_accounting_off, stop_leftover),
		cmocka_unit_test_teardown(test_help_and_errors, stop_leftover),
		cmocka_unit_test_teardown(test_serves_metrics, stop_leftover),
		cmocka_unit_test_teardown(test_kepler_config_files, stop_leftover),
		cmocka_unit_test_teardown(test_kepler_flags, stop_leftover),
		cmocka_unit_test_teardown(test_passthrough_asked_but_impossible, stop_leftover),
		cmocka_unit_test_teardown(test_guest_says_where_it_looked, stop_leftover),
		cmocka_unit_test_teardown(test_rapl_zones_and_preferred_meters, stop_leftover),
		cmocka_unit_test_teardown(test_workloads_add_up_on_this_machine, stop_leftover),
	};

	curl_global_init(CURL_GLOBAL_DEFAULT);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

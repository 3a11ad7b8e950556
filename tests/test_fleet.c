/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The numbers survive aggregation across a fleet: two real virtwatt-host daemons (node-a,
 * node-b) over fixture meters of known power, each with QEMU processes in its fixture /proc
 * that libvirt's test driver names as OpenStack instances of two projects (Nova's metadata in
 * the domain XML); a real Prometheus (Debian's) scrapes both and remote-writes everything into
 * a real VictoriaMetrics (Debian's victoria-metrics, a horizontally scalable TSDB); PromQL on
 * VictoriaMetrics gives per-node and per-project energy equal to the truth within 1 %.
 *
 * The truth is the meters': each node's package energy is what its fixture counter advanced
 * while the test ran it (the clock is stopped before and after), and with idle power pinned at
 * 0 W and the VMs' vCPUs the only CPU time, a VM's energy is its share of its node's: node-a's
 * one VM takes all of node-a's, node-b's two VMs split node-b's 1:3 (their vCPU time, always
 * in that ratio). So project demo = a + b/4, project prod = 3b/4.
 * Loopback only, bounded in time; every process is killed by the teardown, pass or fail.
 */
#include "vw_test.h"

#include <curl/curl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"
#include "host_fixture.h"
#include "json.h"
#include "macro.h"
#include "vm_fixture.h"

#define MAXR 262143328850ULL
#define NCPUS 4
#define RUN_MS 12000
#define DEADLINE_S 90
#define UA1 "a1a1a1a1-0000-4000-8000-0000000000a1"
#define UB2 "b2b2b2b2-0000-4000-8000-0000000000b2"
#define UB3 "b3b3b3b3-0000-4000-8000-0000000000b3"
#define DEMO "2fa3b6c8d1e04b5f9a7c6d5e4f3a2b10"
#define PROD "9c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f"

static const struct host_fixture_zone zone_a[] = { { "intel-rapl:0", "package-0", MAXR, 0, 40 } };
static const struct host_fixture_zone zone_b[] = { { "intel-rapl:0", "package-0", MAXR, 0, 70 } };

/* One node: its meter, its QEMUs' vCPU threads (weights: shares of the node's CPU time). */
struct node {
	const char *name;
	struct host_fixture fx;
	uint32_t qemu_pid[2];
	unsigned weight[2]; /* of 4: the vCPU's share of the busy time */
	size_t n_vms;
	uint64_t vcpu_ns[2];
	uint64_t energy_at_start_uj;
	pid_t daemon;
	unsigned port;
};

struct fleet {
	char *dir;
	struct node nodes[2];
	struct host_fixture_clock clock;
	bool running;
	uint64_t done_ms;
	pid_t prometheus, vm;
	unsigned prom_port, vm_port;
};

static struct fleet F;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Both QEMUs' vCPU time, then the meter (in whole 10 ms ticks), while running: 2 busy CPUs of 4. */
static void node_step(struct node *n, uint64_t ms)
{
	char rel[64], text[64];
	uint64_t busy_ns = 2 * ms * 1000000;

	for (size_t i = 0; i < n->n_vms; i++) {
		n->vcpu_ns[i] += busy_ns * n->weight[i] / 4;
		snprintf(rel, sizeof(rel), "%" PRIu32 "/task/%" PRIu32 "/schedstat", n->qemu_pid[i],
			 n->qemu_pid[i] + 1);
		snprintf(text, sizeof(text), "%" PRIu64 " 0 0\n", n->vcpu_ns[i]);
		(void)host_fixture_stage(&n->fx, n->fx.proc, rel, text);
	}
	(void)host_fixture_advance_ms(&n->fx, 0.5, ms);
}

static void fleet_step(void *ud)
{
	struct fleet *f = ud;
	uint64_t now = now_ms(), ms = (now - f->done_ms) / 10 * 10;

	if (!f->running) {
		f->done_ms = now;
		return;
	}
	if (ms == 0)
		return;
	for (size_t i = 0; i < 2; i++)
		node_step(&f->nodes[i], ms);
	f->done_ms += ms;
}

static void set_running(bool on)
{
	pthread_mutex_lock(&F.clock.lock);
	F.running = on;
	F.done_ms = now_ms();
	pthread_mutex_unlock(&F.clock.lock);
}

/* A libvirt test-driver domain as an OpenStack compute node defines it. */
#define NOVA_DOMAIN(name, uuid, project_id, project)                                               \
	"<domain type='test'><name>" name "</name><uuid>" uuid "</uuid><metadata>"                \
	"<nova:instance xmlns:nova='http://openstack.org/xmlns/libvirt/nova/1.1'>"                 \
	"<nova:name>" name "</nova:name><nova:flavor name='m1.small'/><nova:owner>"                \
	"<nova:user uuid='85bd8e9aba8a4d5d8b6a3a7a5c2e1f00'>admin</nova:user>"                     \
	"<nova:project uuid='" project_id "'>" project "</nova:project></nova:owner>"              \
	"</nova:instance></metadata><memory>1048576</memory><vcpu>1</vcpu>"                        \
	"<os><type>hvm</type></os><devices/></domain>"

static void node_setup(struct node *n, const char *name, const struct host_fixture_zone *z,
		       const char *const *uuids, const unsigned *weights, size_t n_vms,
		       const char *domains)
{
	static const char *const threads[] = { "qemu-system-x86", "CPU 0/KVM", NULL };
	char sys[600], proc[600], uri[700], node[64], log[600], file[64];
	char *argv[] = { VW_HOST_BIN, sys, proc, uri, node,
			 "--web.listen-address=127.0.0.1:0", "--monitor.interval=1s",
			 "--monitor.sample-interval=200ms", "--cpu.accounting=procfs",
			 "--metrics=node,vm", "--passthrough.enable=false", "--gpu.enable=false",
			 "--power.idle-watts=package=0", NULL };

	n->name = name;
	assert_int_equal(host_fixture_init(&n->fx, z, 1, NCPUS), 0);
	n->fx.atomic = true;
	n->n_vms = n_vms;
	for (size_t i = 0; i < n_vms; i++) {
		char cmd[256];

		n->qemu_pid[i] = 4000 + 100 * (uint32_t)i;
		n->weight[i] = weights[i];
		snprintf(cmd, sizeof(cmd), "/usr/bin/qemu-system-x86_64|-name|guest=%s-vm%zu|-uuid|%s|"
			 "-smp|1", name, i, uuids[i]);
		assert_int_equal(vm_fixture_proc(n->fx.proc, n->qemu_pid[i], 5000 + i, cmd, threads,
						 NULL), 0);
	}
	snprintf(file, sizeof(file), "libvirt-%s.xml", name);
	assert_int_equal(vw_fixture_write(F.dir, file, domains, 0), 0);
	snprintf(sys, sizeof(sys), "--host.sysfs=%s", n->fx.sys);
	snprintf(proc, sizeof(proc), "--host.procfs=%s", n->fx.proc);
	snprintf(uri, sizeof(uri), "--libvirt.uri=test://%s/%s", F.dir, file);
	snprintf(node, sizeof(node), "--kube.node-name=%s", name);
	snprintf(log, sizeof(log), "%s/%s.log", F.dir, name);
	assert_int_equal(vw_fixture_start_daemon_logged(argv, log, &n->daemon, &n->port), 0);
}

static int setup(void **state)
{
	static const char *const ua[] = { UA1 }, *const ub[] = { UB2, UB3 };
	static const unsigned wa[] = { 4 }, wb[] = { 1, 3 };

	(void)state;
	F.dir = vw_fixture_mkdtemp("fleet");
	if (host_fixture_clock_start(&F.clock, 50, fleet_step, &F) < 0)
		return -1;
	node_setup(&F.nodes[0], "node-a", zone_a, ua, wa, 1,
		   "<node>" NOVA_DOMAIN("web-a", UA1, DEMO, "demo") "</node>\n");
	node_setup(&F.nodes[1], "node-b", zone_b, ub, wb, 2,
		   "<node>" NOVA_DOMAIN("web-b", UB2, DEMO, "demo")
			   NOVA_DOMAIN("db-b", UB3, PROD, "prod") "</node>\n");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	host_fixture_clock_stop(&F.clock);
	for (size_t i = 0; i < 2; i++) {
		vw_fixture_kill(&F.nodes[i].daemon);
		host_fixture_fini(&F.nodes[i].fx);
	}
	vw_fixture_kill(&F.prometheus);
	vw_fixture_kill(&F.vm);
	vw_fixture_rm(F.dir);
	return 0;
}

static void start_victoria_metrics(void)
{
	char data[600], listen[64], log[600];
	char *argv[] = { "victoria-metrics", data, listen, "-retentionPeriod=1d",
			 "-search.latencyOffset=0s", "-search.disableCache",
			 "-dedup.minScrapeInterval=0s", NULL };

	F.vm_port = vw_fixture_free_port(SOCK_STREAM);
	snprintf(data, sizeof(data), "-storageDataPath=%s/vmdata", F.dir);
	snprintf(listen, sizeof(listen), "-httpListenAddr=127.0.0.1:%u", F.vm_port);
	snprintf(log, sizeof(log), "%s/victoria-metrics.log", F.dir);
	F.vm = vw_fixture_spawn_tied(argv, log);
	assert_true(F.vm > 0);
}

static void start_prometheus(void)
{
	char cfg[600], tsdb[600], listen[64], log[600], text[2048];
	char *argv[] = { "prometheus", cfg, tsdb, listen, NULL };

	F.prom_port = vw_fixture_free_port(SOCK_STREAM);
	snprintf(text, sizeof(text),
		 "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n"
		 "scrape_configs:\n  - job_name: virtwatt-host\n    static_configs:\n"
		 "      - targets: ['127.0.0.1:%u', '127.0.0.1:%u']\n"
		 "remote_write:\n  - url: http://127.0.0.1:%u/api/v1/write\n"
		 "    queue_config:\n      batch_send_deadline: 500ms\n      min_backoff: 100ms\n",
		 F.nodes[0].port, F.nodes[1].port, F.vm_port);
	assert_int_equal(vw_fixture_write(F.dir, "prometheus.yml", text, 0), 0);
	snprintf(cfg, sizeof(cfg), "--config.file=%s/prometheus.yml", F.dir);
	snprintf(tsdb, sizeof(tsdb), "--storage.tsdb.path=%s/tsdb", F.dir);
	snprintf(listen, sizeof(listen), "--web.listen-address=127.0.0.1:%u", F.prom_port);
	snprintf(log, sizeof(log), "%s/prometheus.log", F.dir);
	F.prometheus = vw_fixture_spawn_tied(argv, log);
	assert_true(F.prometheus > 0);
}

/* VictoriaMetrics' answer to an instant query: each sample's value by the given label. */
struct result {
	char key[8][64];
	double value[8];
	size_t n;
};

static bool vm_query(const char *promql, const char *label, struct result *res)
{
	CURL *c = curl_easy_init();
	char *q = curl_easy_escape(c, promql, 0), url[2048];
	struct json_tokener *tok = vw_json_tokener_new(16);
	_cleanup_json_ struct json_object *root = NULL;
	struct json_object *list;
	long code = 0;
	char *body;

	snprintf(url, sizeof(url), "http://127.0.0.1:%u/api/v1/query?query=%s", F.vm_port, q);
	curl_free(q);
	curl_easy_cleanup(c);
	body = vw_fixture_http_get(url, &code);
	res->n = 0;
	/* {"status":"success","data":{"result":[{"metric":{"label":"key",...},"value":[ts,"v"]}]}} */
	if (body && code == 200 && tok)
		root = vw_json_parse(tok, body, strlen(body), json_type_object);
	free(body);
	json_tokener_free(tok);
	list = vw_jarr(vw_jobj(root, "data"), "result");
	if (!list)
		return false;
	for (size_t i = 0; i < json_object_array_length(list) && res->n < 8; i++) {
		struct json_object *r = json_object_array_get_idx(list, i);
		struct json_object *v = vw_jarr(r, "value");
		const char *key = vw_jstr(vw_jobj(r, "metric"), label);
		const char *num = v ? vw_jstr_value(json_object_array_get_idx(v, 1)) : NULL;

		if (!key || !num)
			return false;
		snprintf(res->key[res->n], sizeof(res->key[0]), "%s", key);
		res->value[res->n++] = strtod(num, NULL);
	}
	return true;
}

static double value_of(const struct result *r, const char *key)
{
	for (size_t i = 0; i < r->n; i++)
		if (strcmp(r->key[i], key) == 0)
			return r->value[i];
	return -1;
}

static uint64_t node_energy_uj(struct node *n)
{
	uint64_t e;

	pthread_mutex_lock(&F.clock.lock);
	e = n->fx.energy_uj[0];
	pthread_mutex_unlock(&F.clock.lock);
	return e;
}

/* Both daemons list every VM with its project before the meters run (nothing accrues before). */
static void await_vms(void)
{
	char *a = vw_fixture_scrape_when(F.nodes[0].port, "project_name=\"demo\"");
	char *b = vw_fixture_scrape_when(F.nodes[1].port, "project_name=\"prod\"");

	assert_non_null(a);
	assert_non_null(b);
	free(a);
	free(b);
	a = vw_fixture_scrape_when(F.nodes[0].port, "kepler_vm_cpu_joules_total{vm_id=\"" UA1);
	b = vw_fixture_scrape_when(F.nodes[1].port, "kepler_vm_cpu_joules_total{vm_id=\"" UB3);
	assert_non_null(a);
	assert_non_null(b);
	free(a);
	free(b);
}

static void dump_logs(void)
{
	static const char *const names[] = { "prometheus.log", "victoria-metrics.log",
					     "node-a.log", "node-b.log" };

	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		char path[700];
		char *log;

		snprintf(path, sizeof(path), "%s/%s", F.dir, names[i]);
		log = vw_fixture_slurp(path, NULL);
		if (log)
			print_message("# %s (tail): %s\n", names[i],
				      strlen(log) > 1500 ? log + strlen(log) - 1500 : log);
		free(log);
	}
}

static bool near(double got, double want)
{
	return want > 0 && got >= want * 0.99 && got <= want * 1.01;
}

static void test_fleet_aggregation(void **state)
{
	/* The counters as they stand (the meters are stopped), per node and per project. */
	static const char q_node[] =
		"sum by (node_name) (last_over_time(kepler_node_cpu_joules_total{zone=\"package\"}[1m]))";
	static const char q_project[] =
		"sum by (project_name) ("
		"  sum by (node_name, vm_id) (last_over_time(kepler_vm_cpu_joules_total{zone=\"package\"}[1m]))"
		"  * on (node_name, vm_id) group_left (project_name)"
		"    max by (node_name, vm_id, project_name) (last_over_time(virtwatt_vm_info{platform=\"openstack\"}[1m])))";
	double truth_a, truth_b, want_demo, want_prod;
	time_t deadline = time(NULL) + DEADLINE_S;
	struct result nodes = { 0 }, projects = { 0 };
	bool ok = false;

	(void)state;
	start_victoria_metrics();
	await_vms();
	F.nodes[0].energy_at_start_uj = node_energy_uj(&F.nodes[0]);
	F.nodes[1].energy_at_start_uj = node_energy_uj(&F.nodes[1]);
	set_running(true);
	usleep(RUN_MS * 1000);
	set_running(false);
	truth_a = (double)(node_energy_uj(&F.nodes[0]) - F.nodes[0].energy_at_start_uj) / 1e6;
	truth_b = (double)(node_energy_uj(&F.nodes[1]) - F.nodes[1].energy_at_start_uj) / 1e6;
	want_demo = truth_a + truth_b / 4;
	want_prod = truth_b * 3 / 4;
	print_message("# truth: node-a %.3f J, node-b %.3f J; demo %.3f J, prod %.3f J\n", truth_a,
		      truth_b, want_demo, want_prod);
	assert_true(truth_a > 40.0 * RUN_MS / 1000 * 0.9);

	/* Prometheus only now: it scrapes the counters at rest and writes them on. */
	start_prometheus();
	while (time(NULL) < deadline && !ok) {
		sleep(1);
		ok = vm_query(q_node, "node_name", &nodes) && vm_query(q_project, "project_name", &projects) &&
		     near(value_of(&nodes, "node-a"), truth_a) &&
		     near(value_of(&nodes, "node-b"), truth_b) &&
		     near(value_of(&projects, "demo"), want_demo) &&
		     near(value_of(&projects, "prod"), want_prod);
	}
	print_message("# VictoriaMetrics: node-a %.3f J, node-b %.3f J; demo %.3f J, prod %.3f J\n",
		      value_of(&nodes, "node-a"), value_of(&nodes, "node-b"),
		      value_of(&projects, "demo"), value_of(&projects, "prod"));
	if (!ok)
		dump_logs();
	assert_true(ok);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_fleet_aggregation, setup, teardown),
	};

	curl_global_init(CURL_GLOBAL_DEFAULT);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

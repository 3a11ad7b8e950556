/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GPUs end to end: the real virtwatt-host with --gpu.nvml-library pointing at the fake
 * libnvidia-ml.so.1 (fake_nvml.c), scraped over HTTP. Two GPUs: GPU 0 with an energy counter
 * (what it adds comes back to the mJ), GPU 1 power-only (its energy call NOT_SUPPORTED: its
 * power comes back within 1 %). Kepler's kepler_node_gpu_* families with their labels, the
 * configured idle power splitting each interval exactly; per-process shares to the processes the
 * host knows. And with no library at all the host runs as before: no GPU series, one info
 * line, the CPU families all there; with the driver loaded after the host started, the GPUs
 * are found then.
 */
#include "vw_test.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake_nvml.h"
#include "fixture.h"

#define UUID0 "GPU-5d1c7a3e-0f42-4b1a-9c3d-1e2f3a4b5c6d"
#define UUID1 "GPU-77aa88bb-99cc-4dd0-8ee1-f2a3b4c5d6e7"
#define LABELS0 "gpu=\"0\",gpu_uuid=\"" UUID0 "\",gpu_name=\"NVIDIA H100 80GB HBM3\"," \
		"vendor=\"nvidia\",node_name=\"gpu-node\""
#define LABELS1 "gpu=\"1\",gpu_uuid=\"" UUID1 "\",gpu_name=\"Tesla T4\",vendor=\"nvidia\"," \
		"node_name=\"gpu-node\""
#define GPU1_W 70.0
#define IDLE_W 30.0

static pid_t daemon_pid;
static char *dir;

static int stop_leftover(void **state)
{
	(void)state;
	vw_fixture_kill(&daemon_pid);
	if (dir)
		vw_fixture_rm(dir);
	dir = NULL;
	return 0;
}

/* A fresh directory with an empty sys/ (no meter: the CPU zones are the model's); argv's
 * --host.sysfs into sys, the log's path into log. */
static void make_dir(char sys[600], char log[640])
{
	dir = vw_fixture_mkdtemp("gpu_host");
	assert_non_null(dir);
	assert_int_equal(vw_fixture_mkdir(dir, "sys"), 0);
	snprintf(sys, 600, "--host.sysfs=%s/sys", dir);
	snprintf(log, 640, "%s/host.log", dir);
}

/* The fake's two GPUs, GPU 0's counter at energy0_mj; procs: more lines (processes), or "". */
static void write_state_procs(unsigned long long energy0_mj, const char *procs)
{
	char text[1024];

	snprintf(text, sizeof(text),
		 "count=2\n"
		 "0.uuid=" UUID0 "\n0.name=NVIDIA H100 80GB HBM3\n0.energy_mj=%llu\n"
		 "0.power_mw=118000\n0.util=%u\n0.mig=0\n"
		 "1.uuid=" UUID1 "\n1.name=Tesla T4\n1.energy_ret=3\n1.power_mw=%.0f\n"
		 "1.util=35\n1.mig_ret=3\n%s",
		 energy0_mj, *procs ? 80 : 0, GPU1_W * 1000, procs);
	fake_nvml_write(dir, text);
}

static void write_state(unsigned long long energy0_mj)
{
	write_state_procs(energy0_mj, "");
}

static double sample(const char *body, const char *family, const char *labels)
{
	return vw_fixture_sample_sum(body, family, labels);
}

/* Scrape until `family{labels}` equals want (10 s at most); the body that had it. */
static char *await_value(unsigned port, const char *family, const char *labels, double want)
{
	char *body = vw_fixture_await_sample(port, family, labels, want, false, 10);

	if (!body)
		fail_msg("%s{%s} never reached %g", family, labels, want);
	return body;
}

/* Idle and active add up to the total, for a GPU's counters, to the µJ. */
static void check_split(const char *body, const char *labels)
{
	double total = sample(body, "kepler_node_gpu_joules_total", labels);
	double idle = sample(body, "kepler_node_gpu_idle_joules_total", labels);
	double active = sample(body, "kepler_node_gpu_active_joules_total", labels);

	assert_double_near(idle + active, total, 2e-6);
}

static void test_host_gpu_families(void **state)
{
	char sys[600], lib[600], log[640], *body;
	char *argv[] = { VW_HOST_BIN, sys, "--host.procfs=/proc", "--libvirt.uri=",
			 "--passthrough.enable=false", "--web.listen-address=127.0.0.1:0",
			 "--monitor.interval=1s", "--monitor.sample-interval=250ms",
			 "--metrics=node", "--kube.node-name=gpu-node", lib,
			 "--gpu.idle-watts=30", NULL };
	double j1a, j1b, t_a, t_b, w1;
	unsigned port = 0;

	(void)state;
	make_dir(sys, log);
	snprintf(lib, sizeof(lib), "--gpu.nvml-library=%s", VW_FAKE_NVML);
	fake_nvml_use(dir, NULL, 0); /* the daemon inherits it */
	write_state(7000000); /* GPU 0's counter: 7000 J since the driver loaded */
	assert_int_equal(vw_fixture_start_daemon_logged(argv, log, &daemon_pid, &port), 0);

	/* Both GPUs, with Kepler's labels; GPU 0's counter has not moved yet: 0 J counted. */
	body = await_value(port, "kepler_node_gpu_info", LABELS1, 1);
	assert_non_null(strstr(body, "kepler_node_gpu_info{" LABELS0 "} 1\n"));
	assert_non_null(strstr(body, "kepler_node_gpu_joules_total{" LABELS0 "} 0\n"));
	assert_non_null(strstr(body, "virtwatt_node_gpu_meter_info{gpu=\"0\",gpu_uuid=\"" UUID0
				     "\",source=\"nvml\",energy=\"counter\",mig_mode=\"disabled\","
				     "node_name=\"gpu-node\"} 1\n"));
	assert_non_null(strstr(body, "virtwatt_node_gpu_meter_info{gpu=\"1\",gpu_uuid=\"" UUID1
				     "\",source=\"nvml\",energy=\"power\",mig_mode=\"unsupported\","
				     "node_name=\"gpu-node\"} 1\n"));
	assert_non_null(strstr(body, "method=\"configured\""));
	assert_non_null(strstr(body, "kepler_node_cpu_joules_total{")); /* the CPU's as ever */
	free(body);

	/* GPU 0 uses 1234.567 J: exactly that comes back, split at 30 W idle. */
	write_state(7000000 + 1234567);
	body = await_value(port, "kepler_node_gpu_joules_total", LABELS0, 1234.567);
	check_split(body, LABELS0);
	check_split(body, LABELS1);
	free(body);

	/* GPU 1's power integrated: 70 W per interval and over two seconds, within 1 %. */
	body = await_value(port, "kepler_node_gpu_info", LABELS1, 1);
	j1a = sample(body, "kepler_node_gpu_joules_total", LABELS1);
	t_a = vw_fixture_monotonic_s();
	free(body);
	sleep(3);
	body = await_value(port, "kepler_node_gpu_info", LABELS1, 1);
	t_b = vw_fixture_monotonic_s();
	j1b = sample(body, "kepler_node_gpu_joules_total", LABELS1);
	w1 = sample(body, "kepler_node_gpu_watts", LABELS1);
	print_message("# GPU 1: %.3f J in %.2f s, last interval %.4f W\n", j1b - j1a, t_b - t_a,
		      w1);
	assert_double_near(w1, GPU1_W, GPU1_W / 100);
	assert_double_near(sample(body, "kepler_node_gpu_idle_watts", LABELS1), IDLE_W,
			   IDLE_W / 100);
	assert_double_near(sample(body, "kepler_node_gpu_active_watts", LABELS1), GPU1_W - IDLE_W,
			   GPU1_W / 100);
	/* Published once a second: the counter lags the scrape by up to an interval at each end. */
	assert_true(j1b - j1a >= GPU1_W * (t_b - t_a - 1.5) &&
		    j1b - j1a <= GPU1_W * (t_b - t_a + 1.5));
	assert_double_near(sample(body, "virtwatt_node_gpu_usage_ratio",
				  "gpu=\"1\",gpu_uuid=\"" UUID1 "\""),
			   0.35, 1e-9);
	/* GPU 0 has not moved since: still exactly what it used, its watts now 0. */
	assert_double_near(sample(body, "kepler_node_gpu_joules_total", LABELS0), 1234.567, 0);
	assert_double_near(sample(body, "kepler_node_gpu_watts", LABELS0), 0, 0);
	check_split(body, LABELS0);
	check_split(body, LABELS1);
	assert_double_near(sample(body, "virtwatt_node_gpu_read_errors_total", NULL), 0, 0);
	free(body);
	assert_int_equal(vw_fixture_stop_daemon(daemon_pid), 0);
	daemon_pid = 0;
	stop_leftover(NULL);
}

/*
 * Per process: this test (PID self) and a child of it run on GPU 0, sampled at 60 % and 20 %
 * SM; the child alone is listed on GPU 1, without samples. The real host with process
 * metrics: GPU 0's active energy goes 3 : 1 to them, GPU 1's all to the child, with Kepler's
 * process labels, and the node's active GPU energy is the processes' plus the unattributed
 * rest, exactly.
 */
static void test_host_gpu_processes(void **state)
{
	char sys[600], lib[600], log[640], procs[128], self[64], kid[64], *body;
	char *argv[] = { VW_HOST_BIN, sys, "--host.procfs=/proc", "--libvirt.uri=",
			 "--passthrough.enable=false", "--web.listen-address=127.0.0.1:0",
			 "--monitor.interval=1s", "--monitor.sample-interval=250ms",
			 "--metrics=node,process", "--metrics.process-top-n=0",
			 "--cpu.accounting=procfs", "--kube.node-name=gpu-node", lib,
			 "--gpu.idle-watts=30", NULL };
	double node0, node1, p_self, p_kid, rest, uncont;
	unsigned port = 0;
	pid_t child;

	(void)state;
	make_dir(sys, log);
	snprintf(lib, sizeof(lib), "--gpu.nvml-library=%s", VW_FAKE_NVML);
	fake_nvml_use(dir, NULL, 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		pause();
		_exit(0);
	}
	snprintf(procs, sizeof(procs), "0.procs=%d:60,%d:20\n1.procs=%d:0\n", (int)getpid(),
		 (int)child, (int)child);
	snprintf(self, sizeof(self), "pid=\"%d\"", (int)getpid());
	snprintf(kid, sizeof(kid), "pid=\"%d\"", (int)child);
	write_state_procs(7000000, procs);
	assert_int_equal(vw_fixture_start_daemon_logged(argv, log, &daemon_pid, &port), 0);
	body = vw_fixture_scrape_when(port, "kepler_process_gpu_joules_total{");
	assert_non_null(body);
	free(body);
	write_state_procs(7000000 + 1234567, procs); /* GPU 0 uses 1234.567 J */
	body = await_value(port, "kepler_node_gpu_joules_total", LABELS0, 1234.567);
	free(body);
	sleep(2);
	body = await_value(port, "kepler_node_gpu_joules_total", LABELS0, 1234.567);
	node0 = sample(body, "kepler_node_gpu_active_joules_total", LABELS0);
	node1 = sample(body, "kepler_node_gpu_active_joules_total", LABELS1);
	p_self = sample(body, "kepler_process_gpu_joules_total", self);
	p_kid = sample(body, "kepler_process_gpu_joules_total", kid);
	rest = sample(body, "virtwatt_node_gpu_unattributed_joules_total", NULL);
	uncont = sample(body, "virtwatt_node_gpu_uncontained_joules_total", NULL);
	print_message("# GPU 0 active %.6f J, GPU 1 active %.6f J; self %.6f J, child %.6f J, "
		      "unattributed %.6f J, uncontained %.6f J\n",
		      node0, node1, p_self, p_kid, rest, uncont);
	assert_true(node0 > 1000 && node1 > 0);
	assert_double_near(p_self, node0 * 3 / 4, 2e-6);
	assert_double_near(p_kid, node0 / 4 + node1, 3e-6);
	assert_double_near(p_self + p_kid + rest, node0 + node1, 3e-6);
	assert_double_near(rest, 0, 0);
	assert_double_near(uncont, p_self + p_kid, 3e-6); /* this test runs in no container */
	assert_non_null(strstr(body, "kepler_process_gpu_watts{"));
	{
		char want[256];

		snprintf(want, sizeof(want), "kepler_process_gpu_joules_total{%s,comm=\"", self);
		assert_non_null(strstr(body, want));
	}
	free(body);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	assert_int_equal(vw_fixture_stop_daemon(daemon_pid), 0);
	daemon_pid = 0;
	stop_leftover(NULL);
}

/* No NVML library: the host starts and serves as before, with no GPU series, said once. */
static void test_host_without_library(void **state)
{
	char sys[600], log[640], *body, *said;
	char *argv[] = { VW_HOST_BIN, sys, "--host.procfs=/proc", "--libvirt.uri=",
			 "--passthrough.enable=false", "--web.listen-address=127.0.0.1:0",
			 "--monitor.interval=1s", "--monitor.sample-interval=250ms",
			 "--metrics=node", "--gpu.nvml-library=/nonexistent/libnvidia-ml.so.1",
			 NULL };
	unsigned port = 0;
	const char *p;
	int lines = 0;

	(void)state;
	make_dir(sys, log);
	assert_int_equal(vw_fixture_start_daemon_logged(argv, log, &daemon_pid, &port), 0);
	body = vw_fixture_scrape_when(port, "kepler_node_cpu_joules_total{");
	assert_non_null(body);
	assert_null(strstr(body, "_gpu_")); /* (the branch label may say gpu) */
	assert_non_null(strstr(body, "kepler_node_cpu_joules_total{"));
	free(body);
	assert_int_equal(vw_fixture_stop_daemon(daemon_pid), 0);
	daemon_pid = 0;
	said = vw_fixture_slurp(log, NULL);
	assert_non_null(said);
	for (p = said; (p = strstr(p, "gpu:")); p++)
		lines++;
	assert_int_equal(lines, 1);
	assert_non_null(strstr(said, "level=info msg=\"gpu: no GPU found (nvml: cannot load "
				     "/nonexistent/libnvidia-ml.so.1"));
	free(said);
	stop_leftover(NULL);
}

/*
 * The driver is not loaded when the host starts (the GPU Operator's driver container comes
 * later; the library is there, nvmlInit says DRIVER_NOT_LOADED): no GPU series, one info line
 * naming the fix, and once the driver is loaded the GPUs are found at the next look (back-off:
 * 10 s after the first) and exported with their labels, GPU 0's counter since the driver
 * loaded a baseline, not energy; what it adds then comes back exactly.
 */
static void test_host_driver_loaded_later(void **state)
{
	char sys[600], lib[600], log[640], *body, *said;
	char *argv[] = { VW_HOST_BIN, sys, "--host.procfs=/proc", "--libvirt.uri=",
			 "--passthrough.enable=false", "--web.listen-address=127.0.0.1:0",
			 "--monitor.interval=1s", "--monitor.sample-interval=250ms",
			 "--metrics=node", "--kube.node-name=gpu-node", lib, NULL };
	unsigned port = 0;

	(void)state;
	make_dir(sys, log);
	snprintf(lib, sizeof(lib), "--gpu.nvml-library=%s", VW_FAKE_NVML);
	fake_nvml_use(dir, NULL, 0); /* the daemon inherits it */
	write_state_procs(7000000, "init=9\n");
	assert_int_equal(vw_fixture_start_daemon_logged(argv, log, &daemon_pid, &port), 0);
	body = vw_fixture_scrape_when(port, "kepler_node_cpu_joules_total{");
	assert_non_null(body);
	assert_null(strstr(body, "kepler_node_gpu_"));
	free(body);

	write_state(7000000); /* the driver is loaded */
	body = vw_fixture_await_sample(port, "kepler_node_gpu_info", LABELS0, 1, false, 30);
	assert_non_null(body);
	assert_non_null(strstr(body, "kepler_node_gpu_info{" LABELS1 "} 1\n"));
	assert_non_null(strstr(body, "kepler_node_gpu_joules_total{" LABELS0 "} 0\n"));
	free(body);
	write_state(7000000 + 250125);
	body = await_value(port, "kepler_node_gpu_joules_total", LABELS0, 250.125);
	check_split(body, LABELS0);
	free(body);
	assert_int_equal(vw_fixture_stop_daemon(daemon_pid), 0);
	daemon_pid = 0;
	said = vw_fixture_slurp(log, NULL);
	assert_non_null(said);
	assert_non_null(strstr(said, "Driver Not Loaded"));
	assert_non_null(strstr(said, "/run/nvidia/driver"));
	assert_non_null(strstr(said, "found after start"));
	free(said);
	stop_leftover(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_host_gpu_families, stop_leftover),
		cmocka_unit_test_teardown(test_host_gpu_processes, stop_leftover),
		cmocka_unit_test_teardown(test_host_without_library, stop_leftover),
		cmocka_unit_test_teardown(test_host_driver_loaded_later, stop_leftover),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

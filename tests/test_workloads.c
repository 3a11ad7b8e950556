/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The workload registry on a procfs fixture and scripted CPU snapshots: processes map to
 * containers and pods, each interval's energy is split exactly (node = containers +
 * uncontained + unattributed, per zone and mode), idle follows pod CPU requests, and terminated
 * workloads stay until a scrape has seen them.
 */
#include "vw_test.h"

#include <limits.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cgroupfs.h"
#include "fileio.h"
#include "fixture.h"
#include "attribute_gpu.h"
#include "gpu.h"
#include "log.h"
#include "perf_counters.h"
#include "vm_source.h"
#include "workloads.h"
#include "workloads_fixture.h"
#include "workloads_priv.h" /* render_plain, the kept cgroup files */
#include "exposition_fixture.h"

#define CID_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define CID_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define POD_UID "11111111-2222-3333-4444-555555555555"
/* The rows the pod cases read: nginx's (PID 100, in container A); the pod web's, with more. */
#define NGINX_ROW                                                                                  \
	"{pid=\"100\",comm=\"nginx\",exe=\"\",type=\"container\",state=\"running\","               \
	"container_id=\"" CID_A "\",vm_id=\"\",node_name=\"n1\"}"
#define NGINX_ROW_Z                                                                                \
	"{pid=\"100\",comm=\"nginx\",exe=\"\",type=\"container\",state=\"running\","               \
	"container_id=\"" CID_A "\",vm_id=\"\",zone=\"package\",node_name=\"n1\"}"
#define WEB_POD(more)                                                                              \
	"{pod_id=\"" POD_UID "\",pod_name=\"web\",pod_namespace=\"shop\",state=\"running\"," more  \
	"node_name=\"n1\"}"

struct proc_def {
	uint32_t pid, ppid;
	const char *comm;
	const char *cgroup; /* /proc/PID/cgroup content */
};

static const struct proc_def procs[] = {
	{ 100, 1, "nginx", "0::/system.slice/docker-" CID_A ".scope\n" },
	{ 101, 100, "nginx", "0::/system.slice/docker-" CID_A ".scope\n" },
	{ 200, 1, "app",
	  "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod11111111_2222_3333_"
	  "4444_555555555555.slice/cri-containerd-" CID_B ".scope\n" },
	{ 300, 1, "sshd", "0::/system.slice/ssh.service\n" },
	{ 2, 0, "kthreadd", "0::/\n" },
	{ 400, 2, "kworker/0:1", "0::/\n" },
	{ 500, 1, "qemu-system-x86", "0::/machine.slice/machine-qemu\\x2d1\\x2dvm1.scope/libvirt/emulator\n" },
	{ 501, 2, "vhost-500", "0::/machine.slice/machine-qemu\\x2d1\\x2dvm1.scope/libvirt/emulator\n" },
};

struct ctx {
	char *root;
	int procfd;
	struct vw_workloads *w;
	struct vw_cpu_snapshot snap;
	struct vw_proc_cpu cpu[ARRAY_SIZE(procs)];
	uint64_t node[VW_ZONE__COUNT][2];
};

static void write_procs(struct ctx *c)
{
	for (size_t i = 0; i < ARRAY_SIZE(procs); i++) {
		char rel[64], stat[256];

		snprintf(rel, sizeof(rel), "%u/cgroup", procs[i].pid);
		assert_int_equal(vw_fixture_write(c->root, rel, procs[i].cgroup, 0), 0);
		snprintf(rel, sizeof(rel), "%u/stat", procs[i].pid);
		snprintf(stat, sizeof(stat),
			 "%u (%s) S %u 1 1 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 %u 0 0\n", procs[i].pid,
			 procs[i].comm, procs[i].ppid, 1000 + procs[i].pid);
		assert_int_equal(vw_fixture_write(c->root, rel, stat, 0), 0);
		c->cpu[i] = (struct vw_proc_cpu){ .tgid = procs[i].pid,
						  .start_time = 1000 + procs[i].pid };
		snprintf(c->cpu[i].comm, sizeof(c->cpu[i].comm), "%s", procs[i].comm);
	}
}

/* The host's rule, as the engine sees it: a process the caller says works for a leader. */
static uint32_t adopted_by(const char *comm)
{
	return strcmp(comm, "vhost-500") == 0 ? 500 : 0;
}

static void setup_top(struct ctx *c, struct vw_podmeta *pm, size_t top_n)
{
	struct vw_workloads_opts o = { .host_cpus = 2, .processes = true, .containers = true,
				       .pods = true, .vms = true, .podmeta = pm,
				       .max_terminated = 100, .adopted_by = adopted_by,
				       .process_top_n = top_n };

	memset(c, 0, sizeof(*c));
	c->root = vw_fixture_mkdtemp("wl");
	assert_non_null(c->root);
	write_procs(c);
	c->procfd = vw_root_open(c->root);
	assert_true(c->procfd >= 0);
	o.procfs_fd = c->procfd;
	c->w = vw_workloads_new(&o);
	assert_non_null(c->w);
	c->snap.procs = c->cpu;
	c->snap.n_procs = ARRAY_SIZE(procs);
}

static void setup(struct ctx *c, struct vw_podmeta *pm)
{
	setup_top(c, pm, 0);
}

static void teardown(struct ctx *c)
{
	vw_workloads_free(c->w);
	close(c->procfd);
	vw_fixture_rm(c->root);
}

/* No CPU time for any process: the baseline interval, or one where nothing ran. */
static const uint64_t zero[ARRAY_SIZE(procs)];

/* One interval: add CPU ms to each process (by index), split `active`/`idle` µJ of package. */
static void interval(struct ctx *c, const uint64_t *cpu_ms, uint64_t active, uint64_t idle)
{
	struct vw_zone_energy ze[VW_ZONE__COUNT] = { 0 };

	for (size_t i = 0; i < ARRAY_SIZE(procs); i++)
		c->cpu[i].cpu_ns += cpu_ms[i] * 1000000ULL;
	ze[VW_ZONE_PACKAGE] = (struct vw_zone_energy){ true, active, idle };
	c->node[VW_ZONE_PACKAGE][0] += active;
	c->node[VW_ZONE_PACKAGE][1] += idle;
	assert_int_equal(vw_workloads_update(c->w, &c->snap, ze, 5 * VW_NSEC_PER_SEC), 0);
}

/* cmocka setup and teardown: *state is a ctx without pods, its baseline interval taken. */
static int baseline_setup(void **state)
{
	struct ctx *c = malloc(sizeof(*c));

	assert_non_null(c);
	setup(c, NULL);
	interval(c, zero, 0, 0);
	*state = c;
	return 0;
}

static int baseline_teardown(void **state)
{
	teardown(*state);
	free(*state);
	return 0;
}

static void assert_conserved(struct ctx *c)
{
	struct vw_workloads_totals t;

	vw_workloads_totals(c->w, &t);
	for (int z = 0; z < VW_ZONE__COUNT; z++)
		for (int m = 0; m < 2; m++) {
			uint64_t sum = t.containers[z][m] + t.uncontained[z][m] + t.unattributed[z][m];

			if (sum != c->node[z][m])
				fail_msg("zone %d mode %d: %llu + %llu + %llu != node %llu", z, m,
					 (unsigned long long)t.containers[z][m],
					 (unsigned long long)t.uncontained[z][m],
					 (unsigned long long)t.unattributed[z][m],
					 (unsigned long long)c->node[z][m]);
			assert_true(t.pods[z][m] <= t.containers[z][m]);
			assert_int_equal(t.processes[z][m],
					 t.containers[z][m] + t.uncontained[z][m]);
		}
}

/* The value of the sample `series` (name and labels), or NAN. */
static double value(const char *text, const char *series)
{
	return vw_expo_value(text, series);
}

static void test_split_without_pods(void **state)
{
	/* 100, 101 in container A; 200 in container B; 300 system; 2 and 400 kernel. */
	static const uint64_t ms[ARRAY_SIZE(procs)] = { 1000, 1000, 2000, 500, 0, 500 };
	struct ctx *c = *state;
	char *text;

	interval(c, ms, 10000000, 5000000);
	assert_conserved(c);
	text = workloads_fixture_render(c->w);
	/* Nothing reserved: idle follows CPU time like active. A has 2 of 5 s. */
	assert_double_near(value(text, "kepler_container_cpu_joules_total{container_id=\"" CID_A
				       "\",container_name=\"\",runtime=\"docker\",state=\"running\","
				       "zone=\"package\",pod_id=\"\",node_name=\"n1\"}"),
			   4.0, 1e-9);
	assert_double_near(value(text, "virtwatt_container_cpu_idle_joules_total{container_id=\"" CID_A
				       "\",container_name=\"\",runtime=\"docker\",state=\"running\","
				       "zone=\"package\",pod_id=\"\",node_name=\"n1\"}"),
			   2.0, 1e-9);
	assert_double_near(value(text, "kepler_process_cpu_joules_total{pid=\"300\",comm=\"sshd\",exe=\"\","
				       "type=\"regular\",state=\"running\",container_id=\"\",vm_id=\"\","
				       "zone=\"package\",node_name=\"n1\"}"),
			   1.0, 1e-9);
	assert_double_near(value(text, "kepler_process_cpu_seconds_total{pid=\"200\",comm=\"app\",exe=\"\","
				       "type=\"container\",container_id=\"" CID_B "\",vm_id=\"\",node_name=\"n1\"}"),
			   2.0, 1e-9);
	/* Processes outside containers (sshd, the kworker): 2 J active, 1 J idle. */
	assert_double_near(value(text, "virtwatt_node_cpu_uncontained_joules_total{zone=\"package\","
				       "mode=\"active\",node_name=\"n1\"}"),
			   2.0, 1e-9);
	assert_double_near(value(text, "virtwatt_node_cpu_unattributed_joules_total{zone=\"package\","
				       "mode=\"idle\",node_name=\"n1\"}"),
			   0.0, 0);
	free(text);
	/* An interval where nothing ran: all of it is unattributed, still conserved. */
	interval(c, zero, 3000000, 1000000);
	assert_conserved(c);
}

/* A process's interval power is its share of this interval: one that ran, then did not, shows
 * 0 W after (only the processes that got a share are cleared each interval), its joules kept. */
static void test_idle_process_power_cleared(void **state)
{
	static const uint64_t ms[ARRAY_SIZE(procs)] = { 0, 0, 0, 1000 }; /* sshd only */
	static const uint64_t ms_nginx[ARRAY_SIZE(procs)] = { 1000 };    /* nginx only */
#define SSHD_ROW(state)                                                                            \
	"{pid=\"300\",comm=\"sshd\",exe=\"\",type=\"regular\",state=\"" state "\",container_id=\"\"," \
	"vm_id=\"\",zone=\"package\",node_name=\"n1\"}"
	struct ctx *c = *state;
	char *text;

	interval(c, ms, 10000000, 5000000);
	text = workloads_fixture_render(c->w);
	assert_double_near(value(text, "kepler_process_cpu_watts" SSHD_ROW("running")), 2.0, 1e-9);
	free(text);
	interval(c, ms_nginx, 10000000, 5000000);
	text = workloads_fixture_render(c->w);
	assert_double_near(value(text, "kepler_process_cpu_watts" SSHD_ROW("running")), 0.0, 0);
	assert_double_near(value(text, "kepler_process_cpu_joules_total" SSHD_ROW("running")), 10.0,
			   1e-9);
	assert_double_near(value(text, "kepler_process_cpu_watts" NGINX_ROW_Z), 2.0, 1e-9);
	free(text);
	interval(c, zero, 10000000, 5000000);
	text = workloads_fixture_render(c->w);
	assert_double_near(value(text, "kepler_process_cpu_watts" NGINX_ROW_Z), 0.0, 0);
	free(text);
	assert_conserved(c);
#undef SSHD_ROW
}

static void test_terminated_kept_until_scraped(void **state)
{
	static const uint64_t ms[ARRAY_SIZE(procs)] = { 100, 100, 100, 100, 0, 0 };
	struct ctx *c = *state;
	char *text;

	interval(c, ms, 1000000, 1000000);
	c->cpu[1].exited = true; /* 101 exits after one more slice */
	interval(c, ms, 1000000, 1000000);
	c->snap.n_procs = ARRAY_SIZE(procs); /* the accountant reports an exit once... */
	text = workloads_fixture_render(c->w);
	assert_non_null(strstr(text, "pid=\"101\",comm=\"nginx\",exe=\"\",type=\"container\",state=\"terminated\""));
	free(text);
	vw_workloads_published(c->w, 7, 0); /* published as generation 7, nothing scraped yet */
	c->cpu[1] = c->cpu[5];              /* ...and not again: 101 leaves the snapshot */
	c->snap.n_procs = ARRAY_SIZE(procs) - 1;
	interval(c, zero, 1000000, 0);
	vw_workloads_published(c->w, 8, 6); /* a scrape served generation 6: keep */
	text = workloads_fixture_render(c->w);
	assert_non_null(strstr(text, "pid=\"101\""));
	free(text);
	vw_workloads_published(c->w, 9, 7); /* generation 7 (its final value) was served: drop */
	text = workloads_fixture_render(c->w);
	assert_null(strstr(text, "pid=\"101\""));
	/* Its energy stays in its container, which lives on with process 100. */
	assert_non_null(strstr(text, "container_id=\"" CID_A "\",container_name=\"\",runtime=\"docker\",state=\"running\""));
	free(text);
	assert_conserved(c);
}

/* The exposition adds up as the node's counters do, per zone and mode, to the µJ: containers
 * (running and terminated, as exported) + those no longer exported + uncontained +
 * unattributed. What a scraper sees in any one scrape, whatever ended before it. */
static void assert_rendered_conserved(struct ctx *c)
{
	static const char *const cont[2] = { "kepler_container_cpu_joules_total",
					     "virtwatt_container_cpu_idle_joules_total" };
	static const char *const mode[2] = { "mode=\"active\"", "mode=\"idle\"" };
	char *text = workloads_fixture_render(c->w);

	for (int m = 0; m < 2; m++) {
		const char *z[] = { "zone=\"package\"", NULL }, *zm[] = { z[0], mode[m], NULL };
		double parts = vw_fixture_sample_sum_all(text, cont[m], z) +
			       vw_fixture_sample_sum_all(
				       text, "virtwatt_node_cpu_ended_containers_joules_total", zm) +
			       vw_fixture_sample_sum_all(
				       text, "virtwatt_node_cpu_uncontained_joules_total", zm) +
			       vw_fixture_sample_sum_all(
				       text, "virtwatt_node_cpu_unattributed_joules_total", zm);

		if (fabs(parts - (double)c->node[VW_ZONE_PACKAGE][m] / 1e6) > 1e-6)
			fail_msg("%s: the exposition's parts %.6f J, the node %.6f J", mode[m], parts,
				 (double)c->node[VW_ZONE_PACKAGE][m] / 1e6);
	}
	free(text);
}

/* The same for the GPU's active energy: containers + those no longer exported + uncontained +
 * VMs + unattributed = what the GPUs gave (node_uj). */
static void assert_rendered_gpu_conserved(struct ctx *c, uint64_t node_uj)
{
	static const char *const parts_fams[] = {
		"kepler_container_gpu_joules_total", "virtwatt_node_gpu_ended_containers_joules_total",
		"virtwatt_node_gpu_uncontained_joules_total", "virtwatt_vm_gpu_joules_total",
		"virtwatt_node_gpu_unattributed_joules_total",
	};
	const char *any[] = { NULL };
	char *text = workloads_fixture_render(c->w);
	double parts = 0;

	for (size_t i = 0; i < ARRAY_SIZE(parts_fams); i++)
		parts += vw_fixture_sample_sum_all(text, parts_fams[i], any);
	if (fabs(parts - (double)node_uj / 1e6) > 1e-6)
		fail_msg("GPU: the exposition's parts %.6f J, the node %.6f J", parts,
			 (double)node_uj / 1e6);
	free(text);
}

static int gpu_interval(struct vw_workloads *w, const struct vw_gpu_pid_energy *e, size_t n,
			uint64_t idle_per_gpu, uint64_t active, size_t n_gpus);

/*
 * A container ends and is dropped once a scrape has served its final value (Kepler's way): the
 * exposition still adds up to the node, its energy now in the ended-containers total (the e2e
 * check "node = containers + uncontained + unattributed" missed by what such a container held:
 * 0.2 J of package, 745 J of platform for a container that burnt a CPU for a few seconds).
 */
static void test_ended_container_conserved(void **state)
{
	static const uint64_t ms[ARRAY_SIZE(procs)] = { 700, 300, 100, 100, 0, 200 };
	/* GPU: 100 and 101 (container A), 200 (B), 300 (no container), 999 (unknown). */
	static const struct vw_gpu_pid_energy e[] = {
		{ 100, 3000000 }, { 101, 1000000 }, { 200, 2000000 }, { 300, 500000 }, { 999, 250000 },
	};
	struct ctx *c = *state;
	uint64_t gpu = 0;
	char *text;

	interval(c, ms, 9000000, 3000000);
	assert_int_equal(gpu_interval(c->w, e, ARRAY_SIZE(e), 0, 7000000, 1), 0);
	gpu += 7000000;
	assert_rendered_conserved(c);
	assert_rendered_gpu_conserved(c, gpu);
	c->cpu[0].exited = c->cpu[1].exited = true; /* container A's processes exit */
	interval(c, ms, 9000000, 3000000);
	assert_int_equal(gpu_interval(c->w, e, ARRAY_SIZE(e), 0, 7000000, 1), 0);
	gpu += 7000000;
	assert_rendered_conserved(c);
	assert_rendered_gpu_conserved(c, gpu);
	vw_workloads_published(c->w, 5, 0);
	/* Reported once: both leave the snapshot (the last entries take their places). */
	c->cpu[0] = c->cpu[ARRAY_SIZE(procs) - 1];
	c->cpu[1] = c->cpu[ARRAY_SIZE(procs) - 2];
	c->snap.n_procs = ARRAY_SIZE(procs) - 2;
	interval(c, ms, 5000000, 2000000);
	text = workloads_fixture_render(c->w);
	assert_non_null(strstr(text, "container_id=\"" CID_A "\",container_name=\"\",runtime=\"docker\",state=\"terminated\""));
	free(text);
	assert_rendered_conserved(c);
	vw_workloads_published(c->w, 6, 5); /* the generation with its final value... */
	vw_workloads_published(c->w, 7, 6); /* ... was served: its series go */
	text = workloads_fixture_render(c->w);
	assert_null(strstr(text, "container_id=\"" CID_A "\""));
	free(text);
	assert_rendered_conserved(c);
	assert_rendered_gpu_conserved(c, gpu); /* A's 8 J of GPU now in the ended total */
	interval(c, ms, 4000000, 1000000);
	assert_int_equal(gpu_interval(c->w, e + 2, 2, 0, 3000000, 1), 0);
	gpu += 3000000;
	assert_rendered_conserved(c);
	assert_rendered_gpu_conserved(c, gpu);
	assert_conserved(c);
}

/* ---- Pods from a fake kubelet ---- */

static const char kubelet_pods[] =
	"{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"items\":[{\"metadata\":{\"name\":\"web\","
	"\"namespace\":\"shop\",\"uid\":\"" POD_UID "\"},\"spec\":{\"nodeName\":\"n1\","
	"\"containers\":[{\"name\":\"app\",\"resources\":{\"requests\":{\"cpu\":\"500m\"},"
	"\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]},"
	"\"status\":{\"phase\":\"Running\",\"containerStatuses\":[{\"name\":\"app\","
	"\"containerID\":\"containerd://" CID_B "\"}]}}]}";

/* A registry with the kubelet's pod, its baseline and one interval: 5 s of CPU (every process
 * but kthreadd ran 1 s), 10 J active, 8 J idle of package. */
static void pod_interval_start(struct ctx *c, struct kubelet_fixture *k)
{
	static const uint64_t ms[ARRAY_SIZE(procs)] = { 1000, 1000, 1000, 1000, 0, 1000 };

	kubelet_fixture_start(k, kubelet_pods);
	setup(c, k->pm);
	interval(c, zero, 0, 0);
	interval(c, ms, 10000000, 8000000);
}

static void test_idle_by_pod_request(void **state)
{
	struct kubelet_fixture k;
	char *text;
	struct ctx c;

	(void)state;
	/* The pod reserves 500m of 2000m: 2 J of the 8 J idle. */
	pod_interval_start(&c, &k);
	assert_conserved(&c);
	text = workloads_fixture_render(c.w);
	assert_double_near(value(text, "virtwatt_pod_cpu_idle_joules_total"
				       WEB_POD("zone=\"package\",")),
			   2.0, 1e-9);
	assert_double_near(value(text, "kepler_pod_cpu_joules_total" WEB_POD("zone=\"package\",")),
			   2.0, 1e-9);
	assert_non_null(strstr(text, "container_id=\"" CID_B "\",container_name=\"app\""));
	/* The unreserved 6 J of idle stay with the node; non-pod workloads get no idle. */
	assert_double_near(value(text, "virtwatt_node_cpu_unattributed_joules_total{zone=\"package\","
				       "mode=\"idle\",node_name=\"n1\"}"),
			   6.0, 1e-9);
	free(text);
	teardown(&c);
	kubelet_fixture_stop(&k);
}

/* The web pod with two containers: app (B) and a sidecar (A, whose processes will end). */
static const char kubelet_pods_two[] =
	"{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"items\":[{\"metadata\":{\"name\":\"web\","
	"\"namespace\":\"shop\",\"uid\":\"" POD_UID "\"},\"spec\":{\"nodeName\":\"n1\","
	"\"containers\":[{\"name\":\"app\"},{\"name\":\"side\"}]},"
	"\"status\":{\"phase\":\"Running\",\"containerStatuses\":[{\"name\":\"app\","
	"\"containerID\":\"containerd://" CID_B "\"},{\"name\":\"side\","
	"\"containerID\":\"docker://" CID_A "\"}]}}]}";

/*
 * What holds in every scrape between a pod and its containers (docs/attribution.md): the pod's
 * energy is its containers' as they were exported and of those no longer exported, so Σ of
 * its exported containers <= the pod, and what the pod holds beyond them is in the node's
 * ended-containers total (here, where the sidecar is the only container that went: equal to
 * it), per mode, to the µJ; the node adds up as before.
 */
static void assert_pod_identity(struct ctx *c)
{
	static const char *const cont[2] = { "kepler_container_cpu_joules_total",
					     "virtwatt_container_cpu_idle_joules_total" };
	static const char *const pod[2] = { "kepler_pod_cpu_joules_total",
					    "virtwatt_pod_cpu_idle_joules_total" };
	static const char *const mode[2] = { "mode=\"active\"", "mode=\"idle\"" };
	char *text = workloads_fixture_render(c->w);

	for (int m = 0; m < 2; m++) {
		const char *zp[] = { "zone=\"package\"", "pod_id=\"" POD_UID "\"", NULL };
		const char *zm[] = { "zone=\"package\"", mode[m], NULL };
		double conts = vw_fixture_sample_sum_all(text, cont[m], zp),
		       pods = vw_fixture_sample_sum_all(text, pod[m], zp),
		       ended = vw_fixture_sample_sum_all(
			       text, "virtwatt_node_cpu_ended_containers_joules_total", zm);

		if (conts > pods + 1e-6 || fabs(pods - conts - ended) > 1e-6)
			fail_msg("%s: the pod %.6f J, its exported containers %.6f J, ended %.6f J",
				 mode[m], pods, conts, ended);
	}
	free(text);
	assert_rendered_conserved(c);
}

/*
 * A container of a live pod ends and is dropped once served: the pod keeps its energy (a pod's
 * counter never goes back), its exported containers now sum below it, by exactly what the
 * ended-containers total took.
 */
static void test_pod_container_dropped(void **state)
{
	static const uint64_t ms[ARRAY_SIZE(procs)] = { 700, 300, 1000, 100, 0, 200 };
	struct kubelet_fixture k;
	struct ctx c;
	char *text;

	(void)state;
	kubelet_fixture_start(&k, kubelet_pods_two);
	setup(&c, k.pm);
	interval(&c, zero, 0, 0);
	interval(&c, ms, 9000000, 3000000);
	text = workloads_fixture_render(c.w);
	assert_non_null(strstr(text, "container_id=\"" CID_A "\",container_name=\"side\""));
	free(text);
	assert_pod_identity(&c);
	c.cpu[0].exited = c.cpu[1].exited = true; /* the sidecar's processes exit */
	interval(&c, ms, 9000000, 3000000);
	assert_pod_identity(&c);
	vw_workloads_published(c.w, 5, 0);
	c.cpu[0] = c.cpu[ARRAY_SIZE(procs) - 1];
	c.cpu[1] = c.cpu[ARRAY_SIZE(procs) - 2];
	c.snap.n_procs = ARRAY_SIZE(procs) - 2;
	interval(&c, ms, 5000000, 2000000);
	assert_pod_identity(&c);
	vw_workloads_published(c.w, 6, 5);
	vw_workloads_published(c.w, 7, 6); /* its final value served: the sidecar's series go */
	text = workloads_fixture_render(c.w);
	assert_null(strstr(text, "container_id=\"" CID_A "\""));
	assert_non_null(strstr(text, "pod_id=\"" POD_UID "\""));
	free(text);
	assert_pod_identity(&c);
	interval(&c, ms, 4000000, 1000000);
	assert_pod_identity(&c);
	assert_conserved(&c);
	teardown(&c);
	kubelet_fixture_stop(&k);
}

/* The pod's idle GPU joules and the node's unreserved ones, as rendered. */
static void assert_gpu_idle(struct vw_workloads *w, double pod_j, double unreserved_j)
{
	char *text = workloads_fixture_render(w);

	assert_double_near(value(text, "virtwatt_pod_gpu_idle_joules_total" WEB_POD("")),
			   pod_j, 1e-9);
	assert_double_near(value(text, "virtwatt_node_gpu_idle_unreserved_joules_total{"
				       "node_name=\"n1\"}"),
			   unreserved_j, 1e-9);
	free(text);
}

/*
 * GPU energy (workload_gpu.c): each process's share goes to it, its container and its pod; an
 * unknown PID's and what no process took stay the node's; nothing is given beyond the node's
 * active GPU energy; only workloads that used a GPU have GPU series; idle GPU energy by the
 * pods' nvidia.com/gpu requests.
 */
static int gpu_interval(struct vw_workloads *w, const struct vw_gpu_pid_energy *e, size_t n,
			uint64_t idle_per_gpu, uint64_t active, size_t n_gpus)
{
	struct vw_gpu_attr_device dev[2] = { { idle_per_gpu, active }, { idle_per_gpu, 0 } };

	return vw_workloads_gpu(w, &(struct vw_workloads_gpu_in){ .pids = e, .n_pids = n,
								  .devices = dev,
								  .n_devices = n_gpus });
}

static void test_gpu_energy(void **state)
{
	const struct vw_gpu_pid_energy e[] = {
		{ 100, 3000000 }, { 200, 2000000 }, { 300, 1000000 }, { 999, 500000 },
	};
	struct kubelet_fixture k;
	char *text;
	struct ctx c;

	(void)state;
	pod_interval_start(&c, &k);
	text = workloads_fixture_render(c.w);
	assert_null(strstr(text, "_gpu_")); /* no GPU: no GPU family */
	free(text);
	assert_int_equal(gpu_interval(c.w, e, ARRAY_SIZE(e), 0, 7000000, 1), 0);
	text = workloads_fixture_render(c.w);
	assert_double_near(value(text, "kepler_process_gpu_joules_total" NGINX_ROW), 3.0, 1e-9);
	assert_double_near(value(text, "kepler_process_gpu_watts" NGINX_ROW),
			   0.6, 1e-9); /* 3 J over the 5 s interval */
	assert_double_near(value(text, "kepler_container_gpu_joules_total{container_id=\"" CID_A
				       "\",container_name=\"\",runtime=\"docker\",state=\"running\","
				       "pod_id=\"\",node_name=\"n1\"}"),
			   3.0, 1e-9);
	assert_double_near(value(text, "kepler_pod_gpu_joules_total" WEB_POD("")), 2.0, 1e-9);
	assert_double_near(value(text, "virtwatt_node_gpu_uncontained_joules_total{node_name=\"n1\"}"),
			   1.0, 1e-9); /* sshd's */
	assert_double_near(value(text, "virtwatt_node_gpu_unattributed_joules_total{node_name=\"n1\"}"),
			   1.0, 1e-9); /* PID 999's 0.5 J and the 0.5 J nobody took */
	assert_null(strstr(text, "kepler_process_gpu_joules_total{pid=\"101\""));
	free(text);
	/* Shares beyond the node's active GPU energy are cut to it. */
	assert_int_equal(gpu_interval(c.w, e, ARRAY_SIZE(e), 0, 1000000, 1), 0);
	text = workloads_fixture_render(c.w);
	assert_double_near(value(text, "kepler_process_gpu_joules_total" NGINX_ROW), 4.0, 1e-9);
	assert_double_near(value(text, "kepler_pod_gpu_joules_total" WEB_POD("")), 2.0, 1e-9);
	free(text);
	assert_int_equal(vw_workloads_gpu(c.w, &(struct vw_workloads_gpu_in){ .n_pids = 1 }),
			 -EINVAL);
	/* Idle GPU energy by nvidia.com/gpu: the pod's one GPU (a limit alone) of the node's two
	 * reserves half of the 8 J; the other half is the node's, unreserved. */
	assert_int_equal(gpu_interval(c.w, NULL, 0, 4000000, 0, 2), 0);
	assert_gpu_idle(c.w, 4.0, 4.0);
	/* Of one GPU, its one GPU reserves all of it. */
	assert_int_equal(gpu_interval(c.w, NULL, 0, 1000000, 0, 1), 0);
	assert_gpu_idle(c.w, 5.0, 4.0);
	teardown(&c);
	kubelet_fixture_stop(&k);
}

/*
 * The snapshot's PID 100 (nginx, started at 7) exited before the registry read its
 * /proc/PID/cgroup, and another process (started at 1100, in container A) took its PID: the
 * cgroup read was the newcomer's, and the exited process, with its CPU energy, was placed in
 * container A. Its start time is checked after the read: not A's, uncontained. Its binary,
 * read at a render, is not the newcomer's either.
 */
static void test_container_pid_reused_before_cgroup(void **state)
{
	static const uint64_t ms[ARRAY_SIZE(procs)] = { 100, 0, 0, 0, 0, 0 };
	struct ctx c;
	char *text;

	(void)state;
	setup(&c, NULL);
	for (int pid = 100; pid <= 101; pid++) {
		char link[PATH_MAX];

		snprintf(link, sizeof(link), "%s/%d/exe", c.root, pid);
		assert_int_equal(symlink("/usr/sbin/nginx", link), 0);
	}
	c.cpu[0].start_time = 7;
	interval(&c, zero, 0, 0);
	interval(&c, ms, 1000000, 0);
	text = workloads_fixture_render(c.w);
	assert_null(strstr(text, "{pid=\"100\",comm=\"nginx\",exe=\"\",type=\"container\""));
	/* nor shown with the newcomer's binary (read at the render) */
	assert_non_null(strstr(text, "{pid=\"100\",comm=\"nginx\",exe=\"\",type=\"regular\","
				     "state=\"running\",container_id=\"\""));
	assert_non_null(strstr(text, "{pid=\"101\",comm=\"nginx\",exe=\"/usr/sbin/nginx\""));
	free(text);
	teardown(&c);
}

/*
 * A GPU job (PID 700) ends within an interval and another process takes its PID in the same
 * interval (a fork storm wraps the PID space): the GPU's samples of PID 700 could be either's,
 * and the live one, perhaps another tenant's, took the job's GPU energy. Now the node's,
 * unattributed; the next interval's, the PID one process's again, is the new process's.
 */
static void test_gpu_pid_reused_in_interval(void **state)
{
	const struct vw_gpu_pid_energy e[] = { { 700, 2000000 } };
	struct vw_zone_energy ze[VW_ZONE__COUNT] = { 0 };
	struct vw_proc_cpu rows[2];
	struct ctx c;
	char *text;

	(void)state;
	setup(&c, NULL);
	ze[VW_ZONE_PACKAGE] = (struct vw_zone_energy){ true, 1000000, 0 };
	rows[0] = (struct vw_proc_cpu){ .tgid = 700, .start_time = 1, .kind = VW_PROC_KIND_USER,
					.cpu_ns = 10 * VW_NSEC_PER_MSEC };
	snprintf(rows[0].comm, sizeof(rows[0].comm), "train");
	rows[1] = rows[0];
	rows[1].start_time = 2;
	snprintf(rows[1].comm, sizeof(rows[1].comm), "other");
	c.snap.procs = rows;
	c.snap.n_procs = 1;
	assert_int_equal(vw_workloads_update(c.w, &c.snap, ze, 5 * VW_NSEC_PER_SEC), 0);
	rows[0].cpu_ns = 20 * VW_NSEC_PER_MSEC;
	rows[0].exited = true; /* the job ends, and its PID is another's */
	c.snap.n_procs = 2;
	assert_int_equal(vw_workloads_update(c.w, &c.snap, ze, 5 * VW_NSEC_PER_SEC), 0);
	assert_int_equal(gpu_interval(c.w, e, ARRAY_SIZE(e), 0, 2000000, 1), 0);
	text = workloads_fixture_render(c.w);
	assert_double_near(value(text, "virtwatt_node_gpu_unattributed_joules_total{node_name=\"n1\"}"),
			   2.0, 1e-9);
	assert_null(strstr(text, "kepler_process_gpu_joules_total{pid=\"700\""));
	free(text);

	c.snap.procs = &rows[1]; /* the next interval: PID 700 is the new process alone */
	c.snap.n_procs = 1;
	rows[1].cpu_ns = 30 * VW_NSEC_PER_MSEC;
	assert_int_equal(vw_workloads_update(c.w, &c.snap, ze, 5 * VW_NSEC_PER_SEC), 0);
	assert_int_equal(gpu_interval(c.w, e, ARRAY_SIZE(e), 0, 2000000, 1), 0);
	text = workloads_fixture_render(c.w);
	assert_non_null(strstr(text, "kepler_process_gpu_joules_total{pid=\"700\",comm=\"other\""));
	assert_double_near(value(text, "virtwatt_node_gpu_unattributed_joules_total{node_name=\"n1\"}"),
			   2.0, 1e-9);
	free(text);
	teardown(&c);
}

/* A kubelet that says 503 until told to answer: a pod list that arrives late. */
static bool kubelet_up;

static enum MHD_Result serve_late(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *data,
				  size_t *size, void **con_cls)
{
	static const char down[] = "not yet";
	bool up = __atomic_load_n(&kubelet_up, __ATOMIC_ACQUIRE);
	const char *text = up ? kubelet_pods : down;
	struct MHD_Response *r;
	enum MHD_Result ret;

	(void)cls, (void)url, (void)method, (void)version, (void)data, (void)size, (void)con_cls;
	r = MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
	if (up)
		MHD_add_response_header(r, "Content-Type", "application/json");
	ret = MHD_queue_response(conn, up ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE, r);
	MHD_destroy_response(r);
	return ret;
}

/*
 * A container that runs before the pod list arrives (every DaemonSet rollout, node reboot
 * order, crash-restart): it gets its pod, its name and its reserved idle once the list is
 * there, and the pod owns its energy from then on.
 */
static void test_pod_list_arrives_late(void **state)
{
	static const uint64_t ms[ARRAY_SIZE(procs)] = { 1000, 1000, 1000, 1000, 0, 1000 };
	struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL,
						serve_late, NULL, MHD_OPTION_END);
	struct vw_podmeta_opts po = { .mode = VW_PODMETA_KUBELET, .allow_http = true,
				      .node_name = "n1", .poll_ns = VW_NSEC_PER_SEC / 5,
				      .backoff_min_ns = VW_NSEC_PER_SEC / 10,
				      .backoff_max_ns = VW_NSEC_PER_SEC / 5 };
	struct vw_workloads_totals t;
	struct vw_podmeta *pm;
	char url[64], *text;
	struct ctx c;
	int waited = 0;

	(void)state;
	__atomic_store_n(&kubelet_up, false, __ATOMIC_RELEASE);
	assert_non_null(d);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u",
		 MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT)->port);
	po.url = url;
	assert_non_null(pm = vw_podmeta_start(&po));
	setup(&c, pm);
	interval(&c, ms, 0, 0); /* the baseline: the containers are seen, no pod list yet */
	interval(&c, ms, 10000000, 8000000);
	vw_workloads_totals(c.w, &t);
	assert_int_equal(t.pods[VW_ZONE_PACKAGE][0], 0); /* no pod known: none owns anything */
	text = workloads_fixture_render(c.w);
	assert_non_null(strstr(text, "container_id=\"" CID_B "\",container_name=\"\""));
	free(text);

	__atomic_store_n(&kubelet_up, true, __ATOMIC_RELEASE);
	while (!vw_podmeta_synced(pm) && waited++ < 250) {
		struct timespec ts = { 0, 20 * 1000 * 1000 };

		nanosleep(&ts, NULL);
	}
	assert_true(vw_podmeta_synced(pm));
	/* The next interval: process 200 (1 s of the 5 s of CPU) is the pod's; 500m of 2000m. */
	interval(&c, ms, 10000000, 8000000);
	assert_conserved(&c);
	vw_workloads_totals(c.w, &t);
	assert_int_equal(t.pods[VW_ZONE_PACKAGE][0], 2000000);
	assert_int_equal(t.pods[VW_ZONE_PACKAGE][1], 2000000);
	text = workloads_fixture_render(c.w);
	assert_non_null(strstr(text, "container_id=\"" CID_B "\",container_name=\"app\""));
	assert_double_near(value(text, "kepler_pod_cpu_joules_total" WEB_POD("zone=\"package\",")),
			   2.0, 1e-9);
	free(text);
	teardown(&c);
	vw_podmeta_stop(pm);
	MHD_stop_daemon(d);
}

/* With hardware counters, package follows instructions and dram cache misses; without, CPU. */
static void test_split_keys_from_counters(void **state)
{
	static const uint64_t ms[ARRAY_SIZE(procs)] = { 1000, 0, 1000, 0, 0, 0 };
	/* Containers A and B: package 6 and 2 J, dram 1 and 4 J; uncore has no fitting counter:
	 * CPU time, 1 J each. */
#define KEYS_ROW(cid, runtime, zone, j)                                                           \
	"kepler_container_cpu_joules_total{container_id=\"" cid "\",container_name=\"\",runtime=\"" \
	runtime "\",state=\"running\",zone=\"" zone "\",pod_id=\"\",node_name=\"n1\"} " j "\n"
	static const char *const want[] = {
		KEYS_ROW(CID_A, "docker", "package", "6"),
		KEYS_ROW(CID_B, "containerd", "package", "2"),
		KEYS_ROW(CID_A, "docker", "dram", "1"),
		KEYS_ROW(CID_B, "containerd", "dram", "4"),
		KEYS_ROW(CID_A, "docker", "uncore", "1"),
		KEYS_ROW(CID_B, "containerd", "uncore", "1"),
	};
#undef KEYS_ROW
	struct vw_proc_counters hw[ARRAY_SIZE(procs)] = { 0 };
	struct vw_zone_energy ze[VW_ZONE__COUNT] = { 0 };
	struct vw_workloads_totals t;
	struct ctx c;
	char *text;

	(void)state;
	setup(&c, NULL);
	c.snap.counters = hw;
	c.snap.hw_available = VW_HW_BIT(VW_HW_INSTRUCTIONS) | VW_HW_BIT(VW_HW_CACHE_MISSES);
	interval(&c, zero, 0, 0);
	/* Equal CPU time; process 100 (container A) retires 3x the instructions of 200 (B),
	 * and 200 misses the cache 4x as often. */
	hw[0] = (struct vw_proc_counters){ .instructions = 3000000000ULL, .cache_misses = 1000 };
	hw[2] = (struct vw_proc_counters){ .instructions = 1000000000ULL, .cache_misses = 4000 };
	for (size_t i = 0; i < ARRAY_SIZE(procs); i++)
		c.cpu[i].cpu_ns += ms[i] * 1000000ULL;
	ze[VW_ZONE_PACKAGE] = (struct vw_zone_energy){ true, 8000000, 0 };
	ze[VW_ZONE_DRAM] = (struct vw_zone_energy){ true, 5000000, 0 };
	ze[VW_ZONE_UNCORE] = (struct vw_zone_energy){ true, 2000000, 0 };
	assert_int_equal(vw_workloads_update(c.w, &c.snap, ze, 5 * VW_NSEC_PER_SEC), 0);
	text = workloads_fixture_render(c.w);
	for (size_t i = 0; i < ARRAY_SIZE(want); i++)
		if (!strstr(text, want[i]))
			fail_msg("no container sample ending %s in:\n%s", want[i], text);
	free(text);
	vw_workloads_totals(c.w, &t);
	assert_int_equal(t.containers[VW_ZONE_PACKAGE][0], 8000000);
	assert_int_equal(t.containers[VW_ZONE_DRAM][0], 5000000);
	teardown(&c);
}

/*
 * Interrupts the kernel counted in a process's time for others' work (the bpf accountant's
 * vw_cpu_snapshot.irq_procs) weigh nothing in the split: nginx (container A) and sshd ran 1 s
 * each, 0.5 s of nginx's in others' interrupts, so 9 J go 1 : 2. Its exported CPU time stays
 * the kernel's 1 s. Before: 4.5 J each.
 */
static void test_irq_out_of_weights(void **state)
{
	static const uint64_t ms[ARRAY_SIZE(procs)] = { 1000, 0, 0, 1000 }; /* nginx, sshd */
	static const struct vw_proc_irq irq[] = { { .tgid = 100, .ns = 500000000 } };
	struct vw_workloads_totals t;
	struct ctx c;
	char *text;

	(void)state;
	setup(&c, NULL);
	interval(&c, zero, 0, 0);
	c.snap.irq_procs = irq;
	c.snap.n_irq_procs = ARRAY_SIZE(irq);
	interval(&c, ms, 9000000, 0);
	vw_workloads_totals(c.w, &t);
	assert_int_equal(t.containers[VW_ZONE_PACKAGE][0], 3000000);
	assert_int_equal(t.uncontained[VW_ZONE_PACKAGE][0], 6000000);
	assert_conserved(&c);
	text = workloads_fixture_render(c.w);
	if (value(text, "kepler_process_cpu_seconds_total{pid=\"100\",comm=\"nginx\",exe=\"\","
			"type=\"container\",container_id=\"" CID_A "\",vm_id=\"\",node_name=\"n1\"}") != 1.0)
		fail_msg("nginx's CPU time is not the kernel's 1 s: %.200s",
			 strstr(text, "kepler_process_cpu_seconds_total{pid=\"100\"") ?: "none");
	free(text);
	teardown(&c);
}

#define VM_UUID "6f1c2f3a-8f4e-4c1b-9d62-0c7e5d1a2b3c"
#define VML(zone, state) "{vm_id=\"" VM_UUID "\",vm_name=\"vm1\",hypervisor=\"kvm\",state=\"" state "\",zone=\"" zone "\",node_name=\"n1\"}"

static void set_vm(struct ctx *c, uint32_t qemu_pid, bool listed)
{
	struct vw_group vm = { .id = VM_UUID, .name = "vm1", .kind = "kvm", .reserved_cpus = 1,
			       .leader_pid = qemu_pid };

	assert_int_equal(vw_workloads_set_groups(c->w, &vm, listed ? 1 : 0), 0);
}

/*
 * A process scan spread over a busy machine reads more CPU time than the kernel says ran (here
 * 1.3 s against the root cgroup's 1.0 s): the container keeps its cgroup's exact share of the
 * kernel's total (40 %), the scanned uncontained processes share the rest.
 */
static void test_scan_beyond_root_total(void **state)
{
	/* nginx (container A) 400 ms, sshd 900 ms: 1.3 s read, 1.0 s ran. */
	static const uint64_t ms[ARRAY_SIZE(procs)] = { 400, 0, 0, 900, 0, 0, 0, 0 };
	struct vw_workloads_opts o = { .host_cpus = 2, .processes = true, .containers = true,
				       .max_terminated = 100 };
	struct vw_workloads_totals t;
	char *sys = vw_fixture_mkdtemp("wlsys");
	struct vw_cgroupfs *cg;
	struct ctx c;
	int sysfd;

	(void)state;
	assert_non_null(sys);
	assert_int_equal(vw_fixture_write(sys, "fs/cgroup/cgroup.controllers", "cpu\n", 0), 0);
	assert_int_equal(vw_fixture_write(sys, "fs/cgroup/cpu.stat", "usage_usec 0\n", 0), 0);
	assert_int_equal(vw_fixture_write(sys, "fs/cgroup/system.slice/docker-" CID_A ".scope/cpu.stat",
					  "usage_usec 0\n", 0), 0);
	sysfd = vw_root_open(sys);
	assert_true(sysfd >= 0);
	assert_non_null(cg = vw_cgroupfs_open(sysfd));
	memset(&c, 0, sizeof(c));
	c.root = vw_fixture_mkdtemp("wl");
	write_procs(&c);
	c.procfd = vw_root_open(c.root);
	o.procfs_fd = c.procfd;
	o.cgroupfs = cg;
	assert_non_null(c.w = vw_workloads_new(&o));
	c.snap.procs = c.cpu;
	c.snap.n_procs = ARRAY_SIZE(procs);
	interval(&c, zero, 0, 0);
	assert_int_equal(vw_fixture_write(sys, "fs/cgroup/cpu.stat", "usage_usec 1000000\n", 0), 0);
	assert_int_equal(vw_fixture_write(sys, "fs/cgroup/system.slice/docker-" CID_A ".scope/cpu.stat",
					  "usage_usec 400000\n", 0), 0);
	interval(&c, ms, 10000000, 0);
	assert_conserved(&c);
	vw_workloads_totals(c.w, &t);
	assert_int_equal(t.containers[VW_ZONE_PACKAGE][0], 4000000);
	assert_int_equal(t.uncontained[VW_ZONE_PACKAGE][0], 6000000);
	teardown(&c);
	vw_cgroupfs_free(cg);
	close(sysfd);
	vw_fixture_rm(sys);
}

/* A local user's cgroup under its own service manager, named after container A (its ID read
 * from a real container's /proc/PID/cgroup): systemd-run --user --scope --unit docker-<ID>. */
#define BORROWED_CG                                                                                \
	"user.slice/user-1000.slice/user@1000.service/app.slice/docker-" CID_A ".scope"

/*
 * Container A's ID claimed by a second cgroup under user@1000.service. The container's energy
 * stays its real cgroup's share of the interval's 1.0 s, whichever is seen first; the
 * borrower's processes are no processes of the container; the claims are counted. Before:
 * the borrower's processes were the container's, and seen first its cgroup was the
 * container's CPU (the container 40 % where it ran 60 %).
 */
static void borrowed_case(bool borrower_first)
{
	static const uint64_t ms[ARRAY_SIZE(procs)] = { 400, 0, 0, 600, 0, 0, 0, 0 };
	struct vw_workloads_opts o = { .host_cpus = 2, .processes = true, .containers = true,
				       .max_terminated = 100 };
	struct vw_workloads_totals t;
	char *sys = vw_fixture_mkdtemp("wlborrow"), *text;
	struct vw_cgroupfs *cg;
	struct ctx c;
	int sysfd;

	assert_non_null(sys);
	assert_int_equal(vw_fixture_write(sys, "fs/cgroup/cgroup.controllers", "cpu\n", 0), 0);
	assert_int_equal(vw_fixture_write(sys, "fs/cgroup/cpu.stat", "usage_usec 0\n", 0), 0);
	assert_int_equal(vw_fixture_write(sys, "fs/cgroup/system.slice/docker-" CID_A ".scope/cpu.stat",
					  "usage_usec 0\n", 0), 0);
	assert_int_equal(vw_fixture_write(sys, "fs/cgroup/" BORROWED_CG "/cpu.stat",
					  "usage_usec 0\n", 0), 0);
	sysfd = vw_root_open(sys);
	assert_true(sysfd >= 0);
	assert_non_null(cg = vw_cgroupfs_open(sysfd));
	memset(&c, 0, sizeof(c));
	c.root = vw_fixture_mkdtemp("wl");
	write_procs(&c);
	/* The borrower: PID 300 (after the container's 100 and 101), or PID 100 and 101 are the
	 * borrower's and 300 the container's real process. */
	if (borrower_first) {
		assert_int_equal(vw_fixture_write(c.root, "100/cgroup", "0::/" BORROWED_CG "\n", 0), 0);
		assert_int_equal(vw_fixture_write(c.root, "101/cgroup", "0::/" BORROWED_CG "\n", 0), 0);
		assert_int_equal(vw_fixture_write(c.root, "300/cgroup",
						  "0::/system.slice/docker-" CID_A ".scope\n", 0), 0);
	} else {
		assert_int_equal(vw_fixture_write(c.root, "300/cgroup", "0::/" BORROWED_CG "\n", 0), 0);
	}
	c.procfd = vw_root_open(c.root);
	o.procfs_fd = c.procfd;
	o.cgroupfs = cg;
	assert_non_null(c.w = vw_workloads_new(&o));
	c.snap.procs = c.cpu;
	c.snap.n_procs = ARRAY_SIZE(procs);
	interval(&c, zero, 0, 0);
	assert_int_equal(vw_fixture_write(sys, "fs/cgroup/cpu.stat", "usage_usec 1000000\n", 0), 0);
	/* PIDs 100, 101 ran 400 ms, PID 300 600 ms: each cgroup's total is its processes'. */
	assert_int_equal(vw_fixture_write(sys, "fs/cgroup/system.slice/docker-" CID_A ".scope/cpu.stat",
					  borrower_first ? "usage_usec 600000\n"
							 : "usage_usec 400000\n", 0), 0);
	assert_int_equal(vw_fixture_write(sys, "fs/cgroup/" BORROWED_CG "/cpu.stat",
					  borrower_first ? "usage_usec 400000\n"
							 : "usage_usec 600000\n", 0), 0);
	interval(&c, ms, 10000000, 0);
	vw_workloads_totals(c.w, &t);
	print_message("# borrower %s: container %llu, uncontained %llu uJ\n",
		      borrower_first ? "first" : "second",
		      (unsigned long long)t.containers[VW_ZONE_PACKAGE][0],
		      (unsigned long long)t.uncontained[VW_ZONE_PACKAGE][0]);
	assert_conserved(&c);
	/* The container's real cgroup's share, never the borrower's. */
	assert_int_equal(t.containers[VW_ZONE_PACKAGE][0], borrower_first ? 6000000 : 4000000);
	text = workloads_fixture_render(c.w);
	assert_non_null(strstr(text, "virtwatt_container_cgroup_conflicts_total{node_name=\"n1\"} "));
	assert_true(value(text, "virtwatt_container_cgroup_conflicts_total{node_name=\"n1\"}") >= 1);
	/* The borrower's processes are the container's no more (placed again when the real
	 * cgroup overruled theirs). */
	if (borrower_first)
		assert_non_null(strstr(text, "{pid=\"100\",comm=\"nginx\",exe=\"\",type=\"regular\","
					     "state=\"running\",container_id=\"\","));
	else
		assert_non_null(strstr(text, "{pid=\"300\",comm=\"sshd\",exe=\"\",type=\"regular\","
					     "state=\"running\",container_id=\"\","));
	free(text);
	teardown(&c);
	vw_cgroupfs_free(cg);
	close(sysfd);
	vw_fixture_rm(sys);
}

static void test_borrowed_container_id(void **state)
{
	(void)state;
	borrowed_case(false);
	borrowed_case(true);
}

#define KEPT_CONTS (VW_WL_CG_KEPT + 4)

/* Real cgroups made for test_cg_kept_files, removed whatever its end. */
static struct {
	char parent[PATH_MAX];
	char cid[KEPT_CONTS][65];
} kept_cg;

static void kept_cg_rmdir(size_t i)
{
	char path[PATH_MAX + 96];

	snprintf(path, sizeof(path), "%s/docker-%s.scope", kept_cg.parent, kept_cg.cid[i]);
	(void)rmdir(path);
}

static int kept_cg_teardown(void **state)
{
	(void)state;
	if (!kept_cg.parent[0])
		return 0;
	for (size_t i = 0; i < KEPT_CONTS; i++)
		kept_cg_rmdir(i);
	(void)rmdir(kept_cg.parent);
	kept_cg.parent[0] = '\0';
	return 0;
}

/*
 * The containers' cgroup usage files on the real cgroup filesystem (root): the root's and
 * those of the first 16 containers stay open between intervals, no more; a container that
 * ends, or whose cgroup goes, closes its file; freeing the registry closes them all.
 */
static void test_cg_kept_files(void **state)
{
	struct vw_workloads_opts o = { .host_cpus = 2, .processes = true, .containers = true,
				       .max_terminated = 100 };
	struct vw_zone_energy ze[VW_ZONE__COUNT] = { 0 };
	struct vw_proc_cpu cpu[KEPT_CONTS];
	struct vw_cpu_snapshot snap = { .procs = cpu, .n_procs = KEPT_CONTS };
	struct vw_workloads *w;
	struct vw_cgroupfs *cg;
	char *root;
	int sysfd, procfd, proc;
	size_t n0;

	(void)state;
	if (geteuid() != 0)
		skip(); /* cgroups are made below */
	sysfd = vw_root_open("/sys");
	proc = vw_root_open("/proc");
	assert_true(sysfd >= 0 && proc >= 0);
	cg = vw_cgroupfs_open(sysfd);
	if (!cg)
		skip();
	snprintf(kept_cg.parent, sizeof(kept_cg.parent), "/sys/%s/vw-kept-%d", vw_cgroupfs_mount(cg),
		 (int)getpid());
	if (mkdir(kept_cg.parent, 0755) < 0) {
		kept_cg.parent[0] = '\0';
		vw_cgroupfs_free(cg);
		close(sysfd);
		close(proc);
		skip(); /* a read-only cgroup filesystem */
	}
	root = vw_fixture_mkdtemp("wlkept");
	assert_non_null(root);
	for (size_t i = 0; i < KEPT_CONTS; i++) {
		char rel[64], text[512], path[PATH_MAX + 96];

		snprintf(kept_cg.cid[i], sizeof(kept_cg.cid[i]), "%056x%08zx", 0xc0de, i);
		snprintf(path, sizeof(path), "%s/docker-%s.scope", kept_cg.parent, kept_cg.cid[i]);
		assert_int_equal(mkdir(path, 0755), 0);
		/* v1's cpuacct line and v2's: the hierarchy found reads its own. */
		snprintf(text, sizeof(text), "2:cpuacct:/vw-kept-%d/docker-%s.scope\n"
			 "0::/vw-kept-%d/docker-%s.scope\n", (int)getpid(), kept_cg.cid[i],
			 (int)getpid(), kept_cg.cid[i]);
		snprintf(rel, sizeof(rel), "%zu/cgroup", 1000 + i);
		assert_int_equal(vw_fixture_write(root, rel, text, 0), 0);
		snprintf(rel, sizeof(rel), "%zu/stat", 1000 + i);
		snprintf(text, sizeof(text),
			 "%zu (app) S 1 1 1 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 %zu 0 0\n", 1000 + i,
			 2000 + i);
		assert_int_equal(vw_fixture_write(root, rel, text, 0), 0);
		cpu[i] = (struct vw_proc_cpu){ .tgid = (uint32_t)(1000 + i), .start_time = 2000 + i,
					       .comm = "app" };
	}
	procfd = vw_root_open(root);
	assert_true(procfd >= 0);
	o.procfs_fd = procfd;
	o.cgroupfs = cg;
	n0 = vw_fixture_open_fds(proc);
	assert_non_null(w = vw_workloads_new(&o));
	assert_int_equal(vw_workloads_update(w, &snap, ze, 0), 0);
	assert_int_equal(vw_workloads_update(w, &snap, ze, VW_NSEC_PER_SEC), 0);
	assert_int_equal(vw_fixture_open_fds(proc), n0 + 1 + VW_WL_CG_KEPT);
	/* The first 5 processes end: their containers end and close their files, the last 4
	 * take no slot (15 live containers, all kept). */
	snap.procs = cpu + 5;
	snap.n_procs = KEPT_CONTS - 5;
	for (int k = 0; k < 2; k++)
		assert_int_equal(vw_workloads_update(w, &snap, ze, VW_NSEC_PER_SEC), 0);
	assert_int_equal(vw_fixture_open_fds(proc), n0 + 1 + KEPT_CONTS - 5);
	/* Containers 0 and 1 back (17 live): one of them gets the 16th slot, the other none. */
	memmove(cpu + 2, cpu + 5, (KEPT_CONTS - 5) * sizeof(*cpu));
	snap.procs = cpu;
	snap.n_procs = KEPT_CONTS - 3;
	assert_int_equal(vw_workloads_update(w, &snap, ze, VW_NSEC_PER_SEC), 0);
	assert_int_equal(vw_fixture_open_fds(proc), n0 + 1 + VW_WL_CG_KEPT);
	/* A kept container's cgroup removed: its file reads ENODEV and is closed, its slot
	 * passes to the one left waiting at the next interval. */
	kept_cg_rmdir(5);
	assert_int_equal(vw_workloads_update(w, &snap, ze, VW_NSEC_PER_SEC), 0);
	assert_int_equal(vw_fixture_open_fds(proc), n0 + 1 + VW_WL_CG_KEPT - 1);
	assert_int_equal(vw_workloads_update(w, &snap, ze, VW_NSEC_PER_SEC), 0);
	assert_int_equal(vw_fixture_open_fds(proc), n0 + 1 + VW_WL_CG_KEPT);
	vw_workloads_free(w);
	assert_int_equal(vw_fixture_open_fds(proc), n0);
	vw_cgroupfs_free(cg);
	close(procfd);
	close(sysfd);
	close(proc);
	vw_fixture_rm(root);
}

/* A VM is its QEMU process plus the vhost threads it adopts; it reserves vCPUs / host CPUs of idle. */
static void test_vm_energy(void **state)
{
	/* Only the VM runs: QEMU 1.5 s and its vhost thread 0.5 s; sshd 2 s. */
	static const uint64_t ms[ARRAY_SIZE(procs)] = { 0, 0, 0, 2000, 0, 0, 1500, 500 };
	struct vw_workloads_totals t;
	struct ctx c;
	char *text;

	(void)state;
	setup(&c, NULL);
	set_vm(&c, 500, true);
	interval(&c, zero, 0, 0);
	set_vm(&c, 500, true);
	interval(&c, ms, 8000000, 6000000);
	assert_conserved(&c);
	text = workloads_fixture_render(c.w);
	/* Active by CPU: 2 of 4 s. Idle: 1 vCPU of 2 host CPUs reserves half: 3 J; the other half
	 * is unreserved and stays with the node (the VM is the only reservation). */
	assert_double_near(value(text, "kepler_vm_cpu_joules_total" VML("package", "running")), 4.0, 1e-9);
	assert_double_near(value(text, "virtwatt_vm_cpu_idle_joules_total" VML("package", "running")), 3.0, 1e-9);
	assert_double_near(value(text, "virtwatt_vm_cpu_idle_watts" VML("package", "running")), 0.6, 1e-9);
	assert_double_near(value(text, "virtwatt_node_cpu_unattributed_joules_total{zone=\"package\","
				       "mode=\"idle\",node_name=\"n1\"}"), 3.0, 1e-9);
	assert_non_null(strstr(text, "pid=\"500\",comm=\"qemu-system-x86\",exe=\"\",type=\"vm\",state=\"running\","
				     "container_id=\"\",vm_id=\"" VM_UUID "\""));
	assert_non_null(strstr(text, "pid=\"501\",comm=\"vhost-500\",exe=\"\",type=\"vm\""));
	free(text);
	vw_workloads_totals(c.w, &t);
	assert_int_equal(t.vms[VW_ZONE_PACKAGE][0], 4000000);
	assert_int_equal(t.vms[VW_ZONE_PACKAGE][1], 3000000);
	{ /* what the publisher and the host's training read of it: energy, name, CPU time */
		struct vw_group_energy ge[2];

		assert_int_equal(vw_workloads_group_energy(c.w, ge, 2), 1);
		assert_string_equal(ge[0].id, VM_UUID);
		assert_string_equal(ge[0].name, "vm1");
		assert_int_equal(ge[0].cpu_ns, 2000000000ULL); /* QEMU 1.5 s + vhost 0.5 s */
		assert_int_equal(ge[0].zones[0].zone, VW_ZONE_PACKAGE);
		assert_int_equal(ge[0].zones[0].active_uj, 4000000);
		assert_int_equal(ge[0].zones[0].idle_uj, 3000000);
		assert_int_equal(ge[0].total_uj[0], 7000000);
		/* The next interval gives nothing: the publisher gets that interval, not the last
		 * one again; the training still reads the totals. */
		interval(&c, ms, 0, 0);
		assert_int_equal(vw_workloads_group_energy(c.w, ge, 2), 1);
		assert_int_equal(ge[0].zones[0].active_uj + ge[0].zones[0].idle_uj, 0);
		assert_int_equal(ge[0].total_uj[0], 7000000);
	}

	/* The VM is destroyed: terminated, shown once more, then hidden after a scrape. */
	assert_int_equal(vw_workloads_n_groups(c.w), 1);
	set_vm(&c, 500, false);
	interval(&c, zero, 1000000, 1000000);
	text = workloads_fixture_render(c.w);
	assert_double_near(value(text, "kepler_vm_cpu_joules_total" VML("package", "terminated")), 4.0, 1e-9);
	free(text);
	{ /* remembered (shown as terminated), but no longer one of the groups the publisher and
	   * the training size their buffers to */
		struct vw_table_stat tables[VW_TABLE__COUNT];
		struct vw_group_energy ge[2];

		vw_workloads_table_stats(c.w, tables);
		assert_int_equal(tables[VW_TABLE_VM].entries, 1);
		assert_int_equal(vw_workloads_n_groups(c.w), 0);
		assert_int_equal(vw_workloads_group_energy(c.w, ge, 2), 0);
	}
	vw_workloads_published(c.w, 3, 0);
	vw_workloads_published(c.w, 4, 3);
	text = workloads_fixture_render(c.w);
	assert_null(strstr(text, "kepler_vm_cpu_joules_total{vm_id"));
	free(text);

	/* Re-created with the same UUID (same QEMU PID here): the counters carry on. */
	set_vm(&c, 500, true);
	interval(&c, ms, 8000000, 0);
	text = workloads_fixture_render(c.w);
	assert_double_near(value(text, "kepler_vm_cpu_joules_total" VML("package", "running")), 8.0, 1e-9);
	free(text);
	assert_conserved(&c);
	teardown(&c);
}

/* The kepler_vm_* and virtwatt_vm_* lines of a render, in order (each VM's labels are escaped
 * once a render and copied into every family and zone: the text must not change). */
static char *vm_lines(const char *text)
{
	size_t len = strlen(text), n = 0;
	char *out = calloc(len + 1, 1);

	assert_non_null(out);
	for (const char *p = text; *p;) {
		const char *e = strchr(p, '\n');
		size_t k = e ? (size_t)(e - p) + 1 : strlen(p);

		if (strncmp(p, "kepler_vm_", 10) == 0 || strncmp(p, "virtwatt_vm_cpu_idle_", 21) == 0) {
			memcpy(out + n, p, k);
			n += k;
		}
		p += k;
	}
	return out;
}

#define VM2_UUID "0d2b9a14-3c55-4e7f-8a90-b1c2d3e4f506"
#define ODD_NAME "we\"ird\\vm\nx"

static void set_vms(struct ctx *c, const char *name_a, bool with_b)
{
	struct vw_group vm[2] = {
		{ .id = VM_UUID, .kind = "kvm", .reserved_cpus = 1, .leader_pid = 500 },
		{ .id = VM2_UUID, .name = "b", .kind = "kvm", .reserved_cpus = 1 },
	};

	snprintf(vm[0].name, sizeof(vm[0].name), "%s", name_a);
	assert_int_equal(vw_workloads_set_groups(c->w, vm, with_b ? 2 : 1), 0);
}

/*
 * The VM level's exact text, labels escaped (a quote, a backslash, a newline in a name) in all
 * four families; a renamed VM shows its new name at once and never the old one; a VM that
 * leaves is shown terminated once, then loses every series.
 */
static void test_vm_render_text(void **state)
{
	static const uint64_t ms[ARRAY_SIZE(procs)] = { 0, 0, 0, 2000, 0, 0, 1500, 500 };
#define VA(name, st) "{vm_id=\"" VM_UUID "\",vm_name=\"" name "\",hypervisor=\"kvm\",state=\"" st "\",zone=\"package\",node_name=\"n1\"} "
#define VB(st) "{vm_id=\"" VM2_UUID "\",vm_name=\"b\",hypervisor=\"kvm\",state=\"" st "\",zone=\"package\",node_name=\"n1\"} "
#define ODD "we\\\"ird\\\\vm x" /* a newline becomes a space */
	static const char want[] =
		"kepler_vm_cpu_joules_total" VA(ODD, "running") "4\n"
		"kepler_vm_cpu_joules_total" VB("running") "0\n"
		"kepler_vm_cpu_watts" VA(ODD, "running") "0.8\n"
		"kepler_vm_cpu_watts" VB("running") "0\n"
		"virtwatt_vm_cpu_idle_joules_total" VA(ODD, "running") "3\n"
		"virtwatt_vm_cpu_idle_joules_total" VB("running") "0\n"
		"virtwatt_vm_cpu_idle_watts" VA(ODD, "running") "0.6\n"
		"virtwatt_vm_cpu_idle_watts" VB("running") "0\n";
	struct ctx c;
	char *text, *got;

	(void)state;
	setup(&c, NULL);
	set_vms(&c, ODD_NAME, true);
	interval(&c, zero, 0, 0);
	set_vms(&c, ODD_NAME, true);
	interval(&c, ms, 8000000, 6000000);
	text = workloads_fixture_render(c.w);
	got = vm_lines(text);
	assert_string_equal(got, want);
	free(got);
	free(text);

	/* Renamed: the new name in every family, the old one nowhere. */
	set_vms(&c, "renamed", true);
	interval(&c, zero, 1000000, 1000000);
	text = workloads_fixture_render(c.w);
	assert_non_null(strstr(text, "kepler_vm_cpu_joules_total" VA("renamed", "running") "4\n"));
	assert_non_null(strstr(text, "virtwatt_vm_cpu_idle_watts" VA("renamed", "running")));
	assert_null(strstr(text, "we\\\"ird"));
	free(text);

	/* B leaves: terminated once, then none of its series after a scrape has seen it. */
	set_vms(&c, "renamed", false);
	interval(&c, zero, 1000000, 1000000);
	text = workloads_fixture_render(c.w);
	assert_non_null(strstr(text, "kepler_vm_cpu_joules_total" VB("terminated") "0\n"));
	free(text);
	vw_workloads_published(c.w, 4, 0);
	vw_workloads_published(c.w, 5, 4);
	text = workloads_fixture_render(c.w);
	assert_null(strstr(text, VM2_UUID));
	assert_non_null(strstr(text, "kepler_vm_cpu_joules_total" VA("renamed", "running")));
	free(text);
	teardown(&c);
#undef VA
#undef VB
#undef ODD
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void test_conservation_property(void **state)
{
	struct ctx *c = *state;
	uint64_t ms[ARRAY_SIZE(procs)] = { 0 };

	for (int step = 0; step < 2000; step++) {
		for (size_t i = 0; i < ARRAY_SIZE(procs); i++)
			ms[i] = rnd() % 4 == 0 ? 0 : rnd() % 5000;
		interval(c, ms, rnd() % 1000000000000ULL, rnd() % 500000000000ULL);
		assert_conserved(c);
		vw_workloads_published(c->w, (uint64_t)step + 1, (uint64_t)step);
	}
}

/* vw_workloads_each_process's callback: PIDs must come in ascending order, and all of them. */
struct pid_order {
	uint32_t last;
	size_t n;
	bool ascending;
	uint32_t kernel_pids; /* their sum */
};

static void each_pid(void *ctx, uint32_t tgid, uint64_t start_time, const char *comm,
		     const char *(*exe_of)(void *at), void *at)
{
	struct pid_order *o = ctx;
	const char *exe = exe_of(at);

	(void)start_time;
	(void)comm;
	if (!exe) /* a kernel thread */
		o->kernel_pids += tgid;
	else
		assert_string_equal(exe, ""); /* the fixture has no exe links */
	if (o->n && tgid <= o->last)
		o->ascending = false;
	o->last = tgid;
	o->n++;
}

/*
 * Processes that appear with PIDs below known ones (PIDs wrap) are merged into the table in
 * place: each keeps its own CPU time and energy, lookups find all of them, the list stays in
 * PID order. sshd (300) ran 1 s and kworker (400, added after 300 with 2 below it) 3 s of the
 * 4 s: 1/4 and 3/4 of the package's active energy.
 */
static void test_added_below_known_pids(void **state)
{
	static const uint64_t ms[ARRAY_SIZE(procs)] = { 0, 0, 0, 1000, 0, 3000, 0, 0 };
	struct ctx c;
	struct pid_order o = { .ascending = true };
	char *text;

	(void)state;
	setup(&c, NULL);
	c.snap.n_procs = 4; /* 100, 101, 200, 300 */
	interval(&c, zero, 0, 0);
	c.snap.n_procs = ARRAY_SIZE(procs); /* then 2, 400, 500, 501: 2 sorts first */
	interval(&c, zero, 0, 0);
	interval(&c, ms, 4000000, 0);
	assert_int_equal(vw_workloads_each_process(c.w, each_pid, &o), 0);
	assert_int_equal(o.n, ARRAY_SIZE(procs));
	assert_true(o.ascending);
	assert_int_equal(o.kernel_pids, 2 + 400 + 501); /* kthreadd and its children */
	text = workloads_fixture_render(c.w);
	assert_double_near(value(text, "kepler_process_cpu_joules_total{pid=\"300\",comm=\"sshd\","
				       "exe=\"\",type=\"regular\",state=\"running\",container_id=\"\","
				       "vm_id=\"\",zone=\"package\",node_name=\"n1\"}"),
			   1.0, 1e-9);
	assert_double_near(value(text, "kepler_process_cpu_joules_total{pid=\"400\",comm=\"kworker/0:1\","
				       "exe=\"\",type=\"regular\",state=\"running\",container_id=\"\","
				       "vm_id=\"\",zone=\"package\",node_name=\"n1\"}"),
			   3.0, 1e-9);
	free(text);
	teardown(&c);
}

/*
 * What the accountant tells of a process wins over /proc/PID/stat, which is then not read: a
 * kernel thread in a container's cgroup (a vhost worker) stays out of the container; a user
 * process whose stat names kthreadd as its parent (a usermode helper) is the container's. The
 * registry reads stat only where the accountant does not say (kind unknown).
 */
static void test_kind_from_accountant(void **state)
{
	static const char cg_a[] = "0::/system.slice/docker-" CID_A ".scope\n";
	struct vw_proc_cpu cpu[ARRAY_SIZE(procs) + 3];
	struct ctx c;
	char *text;

	(void)state;
	setup(&c, NULL);
	memcpy(cpu, c.cpu, sizeof(c.cpu));
	cpu[ARRAY_SIZE(procs)] = (struct vw_proc_cpu){ .tgid = 600, .start_time = 1600,
						       .kind = VW_PROC_KIND_KTHREAD,
						       .comm = "vhost-worker" };
	cpu[ARRAY_SIZE(procs) + 1] = (struct vw_proc_cpu){ .tgid = 601, .start_time = 1601,
							   .kind = VW_PROC_KIND_USER,
							   .comm = "modprobe" };
	cpu[ARRAY_SIZE(procs) + 2] = (struct vw_proc_cpu){ .tgid = 602, .start_time = 1602,
							   .comm = "helper" };
	assert_int_equal(vw_fixture_write(c.root, "600/cgroup", cg_a, 0), 0);
	assert_int_equal(vw_fixture_write(c.root, "601/cgroup", cg_a, 0), 0);
	assert_int_equal(vw_fixture_write(c.root, "601/stat",
					  "601 (modprobe) S 2 1 1 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 "
					  "0 1601 0 0\n", 0), 0);
	assert_int_equal(vw_fixture_write(c.root, "602/cgroup", cg_a, 0), 0);
	assert_int_equal(vw_fixture_write(c.root, "602/stat",
					  "602 (helper) S 2 1 1 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 "
					  "0 1602 0 0\n", 0), 0);
	c.snap.procs = cpu;
	c.snap.n_procs = ARRAY_SIZE(cpu);
	assert_int_equal(vw_workloads_update(c.w, &c.snap, (struct vw_zone_energy[VW_ZONE__COUNT]){ 0 },
					     5 * VW_NSEC_PER_SEC), 0);
	for (size_t i = ARRAY_SIZE(procs); i < ARRAY_SIZE(cpu); i++)
		cpu[i].cpu_ns += 1000000000ULL;
	{
		struct vw_zone_energy ze[VW_ZONE__COUNT] = { 0 };

		ze[VW_ZONE_PACKAGE] = (struct vw_zone_energy){ true, 3000000, 0 };
		assert_int_equal(vw_workloads_update(c.w, &c.snap, ze, 5 * VW_NSEC_PER_SEC), 0);
	}
	text = workloads_fixture_render(c.w);
	/* 1 J each: the kernel thread outside, the user process in A; the unknown one's stat
	 * says kthreadd's child (the old rule): outside. */
	assert_double_near(value(text, "kepler_process_cpu_joules_total{pid=\"600\",comm=\"vhost-worker\","
				       "exe=\"\",type=\"regular\",state=\"running\",container_id=\"\","
				       "vm_id=\"\",zone=\"package\",node_name=\"n1\"}"),
			   1.0, 1e-9);
	assert_double_near(value(text, "kepler_process_cpu_joules_total{pid=\"601\",comm=\"modprobe\","
				       "exe=\"\",type=\"container\",state=\"running\",container_id=\"" CID_A
				       "\",vm_id=\"\",zone=\"package\",node_name=\"n1\"}"),
			   1.0, 1e-9);
	assert_double_near(value(text, "kepler_process_cpu_joules_total{pid=\"602\",comm=\"helper\","
				       "exe=\"\",type=\"regular\",state=\"running\",container_id=\"\","
				       "vm_id=\"\",zone=\"package\",node_name=\"n1\"}"),
			   1.0, 1e-9);
	assert_double_near(value(text, "kepler_container_cpu_joules_total{container_id=\"" CID_A
				       "\",container_name=\"\",runtime=\"docker\",state=\"running\","
				       "zone=\"package\",pod_id=\"\",node_name=\"n1\"}"),
			   1.0, 1e-9);
	free(text);
	teardown(&c);
}

/* The PIDs of the process family's package series, in the order rendered, into pids[]. */
static size_t rendered_pids(const char *text, uint32_t *pids, size_t max)
{
	static const char fam[] = "\nkepler_process_cpu_joules_total{pid=\"";
	size_t n = 0;

	for (const char *l = strstr(text, fam); l; l = strstr(l + 1, fam)) {
		const char *eol = strchr(l + 1, '\n');

		if (eol && memmem(l, (size_t)(eol - l), "zone=\"package\"", 14)) {
			assert_true(n < max);
			pids[n++] = (uint32_t)strtoul(l + sizeof(fam) - 1, NULL, 10);
		}
	}
	return n;
}

static int cmp_ms_desc(const void *a, const void *b)
{
	const uint32_t *x = a, *y = b; /* {ms, pid} */

	if (x[0] != y[0])
		return x[0] > y[0] ? -1 : 1;
	return x[1] < y[1] ? -1 : x[1] > y[1];
}

/*
 * --metrics.process-top-n: exactly the N processes with the most energy, most first, equal
 * energy in PID order. Scripted: 101 and 300 ran 400 ms each (1 J each, exactly), 200 300 ms;
 * 400 and 100 less. Then 300 processes with distinct times in a shuffled PID order against a
 * sort of the same numbers.
 */
static void test_top_n(void **state)
{
	static const uint64_t ms[ARRAY_SIZE(procs)] = { 100, 400, 300, 400, 0, 200, 0, 0 };
	enum { MANY = 300, TOP = 20 };
	struct vw_zone_energy ze[VW_ZONE__COUNT] = { 0 };
	struct vw_proc_cpu many[MANY];
	uint32_t pids[MANY], want[MANY][2];
	struct ctx c;
	char *text;
	size_t n;

	(void)state;
	setup_top(&c, NULL, 3);
	interval(&c, zero, 0, 0);
	interval(&c, ms, 1400000, 0);
	text = workloads_fixture_render(c.w);
	n = rendered_pids(text, pids, MANY);
	free(text);
	assert_int_equal(n, 3);
	assert_int_equal(pids[0], 101);
	assert_int_equal(pids[1], 300);
	assert_int_equal(pids[2], 200);
	teardown(&c);

	setup_top(&c, NULL, TOP);
	srand(16);
	for (uint32_t i = 0; i < MANY; i++) {
		uint32_t j = i ? (uint32_t)rand() % (i + 1) : 0;

		want[i][0] = want[j][0]; /* a shuffle of 1 .. MANY ms */
		want[j][0] = i + 1;
	}
	for (uint32_t i = 0; i < MANY; i++) {
		want[i][1] = 1000 + i;
		many[i] = (struct vw_proc_cpu){ .tgid = want[i][1], .start_time = 1,
						.kind = VW_PROC_KIND_USER, .comm = "w" };
	}
	c.snap.procs = many;
	c.snap.n_procs = MANY;
	assert_int_equal(vw_workloads_update(c.w, &c.snap, ze, 5 * VW_NSEC_PER_SEC), 0);
	for (uint32_t i = 0; i < MANY; i++)
		many[i].cpu_ns = want[i][0] * VW_NSEC_PER_MSEC;
	ze[VW_ZONE_PACKAGE] = (struct vw_zone_energy){ true, 45150000, 0 }; /* 1 mJ per ms */
	assert_int_equal(vw_workloads_update(c.w, &c.snap, ze, 5 * VW_NSEC_PER_SEC), 0);
	text = workloads_fixture_render(c.w);
	n = rendered_pids(text, pids, MANY);
	free(text);
	qsort(want, MANY, sizeof(want[0]), cmp_ms_desc);
	assert_int_equal(n, TOP);
	for (size_t i = 0; i < TOP; i++)
		assert_int_equal(pids[i], want[i][1]);
	assert_int_equal(want[0][0], MANY);
	teardown(&c);
}

/* The registry rendered as it serves (pieces, tails, the label cache), then as the plain
 * reference (every label escaped in every sample): byte for byte the same, twice (the second
 * from the cache). Returns the text (malloc'd). */
static char *render_same_as_plain(struct vw_workloads *w)
{
	char *got, *again, *want;

	got = workloads_fixture_render(w);
	w->render_plain = true;
	want = workloads_fixture_render(w);
	w->render_plain = false;
	again = workloads_fixture_render(w);
	assert_string_equal(got, want);
	assert_string_equal(again, want);
	free(again);
	free(want);
	return got;
}

/* Odd comms: quotes, backslashes, a newline, a tab, invalid UTF-8, a two-byte character. */
static const char *const odd_comms[] = { "we\"ird", "back\\slash", "new\nline", "t\tab",
					 "bad\xff\xfe", "caf\xc3\xa9", "plain", "a\"b\\c\"d" };

/* PID i of the varied registry: its /proc files (cgroup: container A, B or none; exe: a link
 * with odd bytes, or none) and its snapshot row. */
static void varied_proc(struct ctx *c, struct vw_proc_cpu *row, uint32_t pid, uint64_t start,
			const char *comm)
{
	static const char *const cg[] = { "0::/system.slice/docker-" CID_A ".scope\n",
					  "0::/kubepods.slice/cri-containerd-" CID_B ".scope\n",
					  "0::/system.slice/x.service\n" };
	char rel[32], target[64], path[PATH_MAX];

	snprintf(rel, sizeof(rel), "%u/cgroup", pid);
	assert_int_equal(vw_fixture_write(c->root, rel, cg[(pid + start) % 3], 0), 0);
	snprintf(rel, sizeof(rel), "%u/exe", pid);
	snprintf(target, sizeof(target), "/opt/x \"%u\"\\%s", pid, start % 2 ? "b\xe2\x82\xac" : "a");
	snprintf(path, sizeof(path), "%s/%s", c->root, rel);
	(void)unlink(path);
	if (pid % 5)
		assert_int_equal(vw_fixture_symlink(c->root, target, rel), 0);
	*row = (struct vw_proc_cpu){ .tgid = pid, .start_time = start, .kind = VW_PROC_KIND_USER };
	snprintf(row->comm, sizeof(row->comm), "%s", comm);
}

/*
 * The exposition is the same with the render's shortcuts (label pieces, tails, the label cache
 * kept between renders) as without: 240 processes with odd comms and executables in and out
 * of containers, top 60 by energy in two zones, over 14 intervals where processes come and
 * go (their series shown terminated, then gone), the ranking changes, a shown process's comm
 * changes (it exec'd: a new executable too) and a shown PID is reused by a new process (a new
 * start time, another comm and container) beside its terminated predecessor.
 */
static void test_render_matches_plain(void **state)
{
	enum { MANY = 240, TOP = 60, ROUNDS = 14 };
	struct vw_zone_energy ze[VW_ZONE__COUNT] = { 0 };
	struct vw_proc_cpu rows[MANY];
	uint32_t next_pid = 5000;
	struct ctx c;

	(void)state;
	setup_top(&c, NULL, TOP);
	for (uint32_t i = 0; i < MANY; i++)
		varied_proc(&c, &rows[i], 2000 + i, 7, odd_comms[i % ARRAY_SIZE(odd_comms)]);
	c.snap.procs = rows;
	c.snap.n_procs = MANY;
	srand(29);
	for (int round = 0; round < ROUNDS; round++) {
		char *text;

		for (uint32_t i = 0; i < MANY; i++) /* ranks move: a few processes ran much */
			rows[i].cpu_ns += (uint64_t)(rand() % 100 < 30 ? rand() % 4000 : rand() % 20) *
					  VW_NSEC_PER_MSEC;
		if (round >= 2 && round % 3 == 2) /* some go: replaced by new PIDs */
			for (uint32_t k = 0; k < 8; k++) {
				uint32_t i = (uint32_t)rand() % MANY;

				varied_proc(&c, &rows[i], next_pid++, 9,
					    odd_comms[(i + k) % ARRAY_SIZE(odd_comms)]);
			}
		if (round == 4) /* the top process from now on, and 2001 the next */
			rows[0].cpu_ns += 100000 * VW_NSEC_PER_MSEC,
			rows[1].cpu_ns += 90000 * VW_NSEC_PER_MSEC;
		if (round == 5) { /* the top process exec'd: a new comm and executable */
			uint64_t ns = rows[0].cpu_ns, start = rows[0].start_time;

			varied_proc(&c, &rows[0], rows[0].tgid, start + 1, "ne\"w\\comm");
			rows[0].start_time = start; /* the same process: only its link changed */
			rows[0].cpu_ns = ns;
		}
		if (round == 8) /* PID 2001 reused: another start time, comm and container */
			varied_proc(&c, &rows[1], rows[1].tgid, 11, "re\\used\"");
		if (round == 9)
			rows[1].cpu_ns += 80000 * VW_NSEC_PER_MSEC;
		ze[VW_ZONE_PACKAGE] = (struct vw_zone_energy){ true, 9000000, 3000000 };
		ze[VW_ZONE_DRAM] = (struct vw_zone_energy){ true, 1000000, 500000 };
		assert_int_equal(vw_workloads_update(c.w, &c.snap, ze, 5 * VW_NSEC_PER_SEC), 0);
		text = render_same_as_plain(c.w);
		if (round == 6 && !strstr(text, "comm=\"ne\\\"w\\\\comm\""))
			fputs(text, stderr), fail();
		if (round == 9) {
			assert_non_null(strstr(text, "{pid=\"2001\",comm=\"re\\\\used\\\"\""));
			assert_non_null(strstr(text, "{pid=\"2001\",comm=\"back\\\\slash\""));
		}
		assert_non_null(strstr(text, "comm=\"we\\\"ird\""));
		free(text);
		vw_workloads_published(c.w, (uint64_t)round + 1, (uint64_t)round);
	}
	teardown(&c);
}

/* Point PID's /proc/PID/exe at /usr/bin/COMM-TAG. */
static void link_exe(struct ctx *c, uint32_t pid, const char *comm, const char *tag)
{
	char rel[32], target[64], path[PATH_MAX];

	snprintf(rel, sizeof(rel), "%u/exe", pid);
	snprintf(target, sizeof(target), "/usr/bin/%s-%s", comm, tag);
	snprintf(path, sizeof(path), "%s/%s", c->root, rel);
	(void)unlink(path);
	assert_int_equal(vw_fixture_symlink(c->root, target, rel), 0);
}

/* Whether the render shows process PID with the executable /usr/bin/EXE. */
static bool shows_exe(const char *text, uint32_t pid, const char *exe)
{
	char head[32], tail[96];

	snprintf(head, sizeof(head), "{pid=\"%u\",comm=\"", pid);
	snprintf(tail, sizeof(tail), ",exe=\"/usr/bin/%s\"", exe);
	for (const char *at = strstr(text, head); at; at = strstr(at + 1, head)) {
		const char *e = strstr(at, ",exe=\"");

		if (e && strncmp(e, tail, strlen(tail)) == 0)
			return true;
	}
	return false;
}

/*
 * Top 3 of procs, every link -v1, two intervals: 101 (nginx) and 300 (sshd) ranked and shown,
 * 100 (nginx) not; the first render returned.
 */
static char *exe_top3(struct ctx *c)
{
	static const uint64_t ms[ARRAY_SIZE(procs)] = { 100, 400, 300, 400, 0, 200, 0, 0 };

	setup_top(c, NULL, 3);
	for (size_t i = 0; i < ARRAY_SIZE(procs); i++)
		link_exe(c, procs[i].pid, procs[i].comm, "v1");
	interval(c, zero, 0, 0);
	interval(c, ms, 1400000, 0);
	return workloads_fixture_render(c->w);
}

/*
 * A process's executable is read when it is first shown (or a VM scan asks), never for one
 * outside the top N: nginx (100) ranks fourth of three while its link says -v1, is shown once it
 * ranks first, and shows -v2, the link then. One shown keeps what was read (101 shows -v1 after
 * its link changed), and one that exec'd (a new comm) is read again at its next showing.
 */
static void test_exe_read_when_shown(void **state)
{
	static const uint64_t nginx[ARRAY_SIZE(procs)] = { 5000, 0, 0, 0, 0, 0, 0, 0 };
	struct ctx c;
	char *text;

	(void)state;
	text = exe_top3(&c);
	assert_true(shows_exe(text, 101, "nginx-v1"));
	assert_true(shows_exe(text, 300, "sshd-v1"));
	assert_null(strstr(text, "pid=\"100\""));
	free(text);
	for (size_t i = 0; i < ARRAY_SIZE(procs); i++)
		link_exe(&c, procs[i].pid, procs[i].comm, "v2");
	snprintf(c.cpu[3].comm, sizeof(c.cpu[3].comm), "sshd-session"); /* 300 exec'd */
	interval(&c, nginx, 5000000, 0);
	text = workloads_fixture_render(c.w);
	assert_true(shows_exe(text, 100, "nginx-v2")); /* never read before it was shown */
	assert_true(shows_exe(text, 101, "nginx-v1")); /* read once, kept */
	assert_true(shows_exe(text, 300, "sshd-v2"));  /* exec'd: read again */
	assert_false(shows_exe(text, 300, "sshd-v1"));
	free(text);
	teardown(&c);
}

/*
 * One that exits before it is first shown is shown without an executable, its link not read:
 * the link now is its PID's next owner's (-reused), not its. One shown before keeps what was read.
 */
static void test_exe_not_read_after_exit(void **state)
{
	static const uint64_t last[ARRAY_SIZE(procs)] = { 5000, 0, 0, 0, 0, 0, 0, 0 };
	struct ctx c;
	char *text;

	(void)state;
	text = exe_top3(&c);
	assert_true(shows_exe(text, 101, "nginx-v1"));
	assert_null(strstr(text, "pid=\"100\""));
	free(text);
	link_exe(&c, 100, "nginx", "reused");
	link_exe(&c, 101, "nginx", "reused");
	c.cpu[0].exited = true; /* 100 exits after a last, busy slice: shown first */
	interval(&c, last, 5000000, 0);
	text = workloads_fixture_render(c.w);
	assert_non_null(strstr(text, "{pid=\"100\",comm=\"nginx\",exe=\"\",type=\"container\","
				     "state=\"terminated\""));
	assert_false(shows_exe(text, 100, "nginx-reused"));
	assert_true(shows_exe(text, 101, "nginx-v1"));
	free(text);
	teardown(&c);
}

/* The first sample line (name and labels) that appears twice in text, or NULL. */
static char *duplicate_series(const char *text)
{
	size_t n = 0, cap = 64;
	char **lines = malloc(cap * sizeof(*lines)), *dup = NULL;

	assert_non_null(lines);
	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n'), *sp;

		nl = nl ? nl : p + strlen(p);
		sp = memrchr(p, ' ', (size_t)(nl - p));
		if (*p != '#' && sp) {
			if (n == cap)
				assert_non_null(lines = realloc(lines, (cap *= 2) * sizeof(*lines)));
			lines[n++] = strndup(p, (size_t)(sp - p));
		}
		p = *nl ? nl + 1 : nl;
	}
	for (size_t i = 0; i < n && !dup; i++)
		for (size_t j = i + 1; j < n && !dup; j++)
			if (strcmp(lines[i], lines[j]) == 0)
				dup = strdup(lines[i]);
	for (size_t i = 0; i < n; i++)
		free(lines[i]);
	free(lines);
	return dup;
}

/*
 * A fork storm wraps the PIDs (pid_max 32768: 20 s at 1,700 forks a second): PID 700 runs
 * `true` and exits, three times over as three processes, and nobody scrapes. No snapshot shows
 * a series twice (a scrape promtool and OpenMetrics parsers refuse): neither the running one
 * beside its predecessor's end (kepler_process_cpu_seconds_total has no state label) nor two
 * ends; each end is shown, the latest, and the ones superseded are evicted, counted.
 */
static void test_reused_pid_terminated_twice(void **state)
{
	static const char series[] = "kepler_process_cpu_seconds_total{pid=\"700\",comm=\"true\","
				     "exe=\"\",type=\"regular\",container_id=\"\",vm_id=\"\","
				     "node_name=\"n1\"}";
	struct vw_zone_energy ze[VW_ZONE__COUNT] = { 0 };
	struct vw_proc_cpu row;
	struct ctx c;

	(void)state;
	setup(&c, NULL);
	c.snap.procs = &row;
	c.snap.n_procs = 0;
	ze[VW_ZONE_PACKAGE] = (struct vw_zone_energy){ true, 1000000, 0 };
	assert_int_equal(vw_workloads_update(c.w, &c.snap, ze, 5 * VW_NSEC_PER_SEC), 0);
	for (uint64_t start = 1; start <= 3; start++) {
		char *text, *dup;

		row = (struct vw_proc_cpu){ .tgid = 700, .start_time = start,
					    .kind = VW_PROC_KIND_USER };
		snprintf(row.comm, sizeof(row.comm), "true");
		c.snap.n_procs = 1;
		row.cpu_ns = 10 * VW_NSEC_PER_MSEC; /* runs */
		assert_int_equal(vw_workloads_update(c.w, &c.snap, ze, 5 * VW_NSEC_PER_SEC), 0);
		text = workloads_fixture_render(c.w);
		dup = duplicate_series(text);
		if (dup)
			fail_msg("run %llu, a series twice: %s", (unsigned long long)start, dup);
		free(text);
		row.cpu_ns = start * 100 * VW_NSEC_PER_MSEC; /* and exits */
		row.exited = true;
		assert_int_equal(vw_workloads_update(c.w, &c.snap, ze, 5 * VW_NSEC_PER_SEC), 0);
		text = workloads_fixture_render(c.w);
		dup = duplicate_series(text);
		if (dup)
			fail_msg("after end %llu, a series twice: %s", (unsigned long long)start, dup);
		if (!(fabs(value(text, series) - (double)start / 10) < 1e-9))
			fail_msg("after end %llu: %s = %g", (unsigned long long)start, series,
				 value(text, series));
		free(text);
		vw_workloads_published(c.w, start, 0); /* nobody scrapes */
	}
	assert_int_equal(c.w->evictions[VW_TABLE_PROCESS], 2);
	teardown(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_split_without_pods, baseline_setup,
						baseline_teardown),
		cmocka_unit_test_setup_teardown(test_ended_container_conserved, baseline_setup,
						baseline_teardown),
		cmocka_unit_test_setup_teardown(test_terminated_kept_until_scraped, baseline_setup,
						baseline_teardown),
		cmocka_unit_test(test_idle_by_pod_request),
		cmocka_unit_test(test_added_below_known_pids),
		cmocka_unit_test(test_kind_from_accountant),
		cmocka_unit_test(test_top_n),
		cmocka_unit_test(test_reused_pid_terminated_twice),
		cmocka_unit_test(test_gpu_pid_reused_in_interval),
		cmocka_unit_test(test_container_pid_reused_before_cgroup),
		cmocka_unit_test(test_exe_read_when_shown),
		cmocka_unit_test(test_exe_not_read_after_exit),
		cmocka_unit_test(test_gpu_energy),
		cmocka_unit_test(test_pod_container_dropped),
		cmocka_unit_test(test_pod_list_arrives_late),
		cmocka_unit_test(test_split_keys_from_counters),
		cmocka_unit_test(test_irq_out_of_weights),
		cmocka_unit_test(test_scan_beyond_root_total),
		cmocka_unit_test(test_borrowed_container_id),
		cmocka_unit_test(test_vm_energy),
		cmocka_unit_test(test_vm_render_text),
		cmocka_unit_test(test_render_matches_plain),
		cmocka_unit_test_teardown(test_cg_kept_files, kept_cg_teardown),
		cmocka_unit_test_setup_teardown(test_conservation_property, baseline_setup,
						baseline_teardown),
		cmocka_unit_test_setup_teardown(test_idle_process_power_cleared, baseline_setup,
						baseline_teardown),
	};

	vw_log_set_level(VW_LOG_WARN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

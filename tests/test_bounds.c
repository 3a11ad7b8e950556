/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every table stays bounded whatever the scrape pattern (here: no scraper at all). Churn drives
 * each one well past its cap quickly: the workload registry's processes, containers, pods and
 * VMs, the cgroup walk, the pod metadata table, the publisher's VM states and the guest's
 * series state. Each stays at its cap, its eviction counter moves, and no energy leaves a total
 * that must stay monotonic (an evicted container's energy is still in its pod's counter).
 */
#include "vw_test.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cgroupfs_priv.h"
#include "fileio.h"
#include "fixture.h"
#include "podmeta-priv.h"
#include "publish.h"
#include "selfstats.h"
#include "series_state_priv.h"
#include "vm_source.h"
#include "workloads.h"
#include "workloads_fixture.h"

#define CAP 4
#define STEPS 12
#define POD0 "00000000-0000-0000-0000-000000000000"

/* Container ids and pod UIDs of step k: 64 and 12 decimal digits are valid hex. */
static void cid(char out[VW_CONTAINER_ID_LEN], char kind, unsigned k)
{
	snprintf(out, VW_CONTAINER_ID_LEN, "%c%063u", kind, k);
}

static void pod_uid(char out[VW_POD_UID_LEN], unsigned k)
{
	snprintf(out, VW_POD_UID_LEN, "00000000-0000-0000-0000-%012u", k);
}

/* ---- A kubelet listing pod 0 (container x and c1..c12) and pods 1..12 (container dK) ---- */

static char *kubelet_list(void)
{
	char *buf = NULL, id[VW_CONTAINER_ID_LEN], uid[VW_POD_UID_LEN];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	fprintf(f, "{\"kind\":\"PodList\",\"items\":[");
	for (unsigned p = 0; p <= STEPS; p++) {
		pod_uid(uid, p);
		fprintf(f, "%s{\"metadata\":{\"name\":\"pod%u\",\"namespace\":\"ns\",\"uid\":\"%s\"},"
			   "\"spec\":{\"nodeName\":\"n1\",\"containers\":[]},"
			   "\"status\":{\"containerStatuses\":[", p ? "," : "", p, uid);
		for (unsigned k = p ? p : 0; k <= (p ? p : STEPS); k++) {
			cid(id, p ? 'd' : k ? 'c' : 'e', k);
			fprintf(f, "%s{\"name\":\"%c%u\",\"containerID\":\"containerd://%s\"}",
				k == (p ? p : 0) ? "" : ",", p ? 'd' : k ? 'c' : 'x', k, id);
		}
		fprintf(f, "]}}");
	}
	fprintf(f, "]}");
	fclose(f);
	return buf;
}

/* ---- The registry ---- */

struct churn {
	char *root;
	int procfd;
	struct vw_workloads *w;
	struct vw_proc_cpu cpu[3];
	uint64_t gen;
};

/* A process of the fixture /proc in a kubepods container. */
static void add_proc(struct churn *c, uint32_t pid, const char *uid, const char *id)
{
	char rel[64], text[512], poduid[VW_POD_UID_LEN];

	snprintf(poduid, sizeof(poduid), "%s", uid);
	for (char *p = poduid; *p; p++)
		*p = *p == '-' ? '_' : *p;
	snprintf(rel, sizeof(rel), "%u/cgroup", pid);
	snprintf(text, sizeof(text),
		 "0::/kubepods.slice/kubepods-pod%s.slice/cri-containerd-%s.scope\n", poduid, id);
	assert_int_equal(vw_fixture_write(c->root, rel, text, 0), 0);
	snprintf(rel, sizeof(rel), "%u/stat", pid);
	snprintf(text, sizeof(text), "%u (app) S 1 1 1 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 %u 0 0\n",
		 pid, pid);
	assert_int_equal(vw_fixture_write(c->root, rel, text, 0), 0);
}

static void step(struct churn *c, size_t n, uint64_t active, uint64_t idle)
{
	struct vw_zone_energy ze[VW_ZONE__COUNT] = { 0 };
	struct vw_cpu_snapshot snap = { .procs = c->cpu, .n_procs = n };

	ze[VW_ZONE_PACKAGE] = (struct vw_zone_energy){ true, active, idle };
	assert_int_equal(vw_workloads_update(c->w, &snap, ze, 5 * VW_NSEC_PER_SEC), 0);
}

/* A level's CPU and idle joules in text, over its series whose labels hold needle. */
static double energy(const char *text, const char *level, const char *needle)
{
	char cpu[64], idle[64];

	snprintf(cpu, sizeof(cpu), "kepler_%s_cpu_joules_total", level);
	snprintf(idle, sizeof(idle), "virtwatt_%s_cpu_idle_joules_total", level);
	return vw_fixture_sample_sum(text, cpu, needle) + vw_fixture_sample_sum(text, idle, needle);
}

static void set_vm(struct churn *c, unsigned k)
{
	struct vw_group vm = { .kind = "kvm", .reserved_cpus = 1 };

	snprintf(vm.id, sizeof(vm.id), "6f1c2f3a-8f4e-4c1b-9d62-%012u", k);
	snprintf(vm.name, sizeof(vm.name), "vm%u", k);
	assert_int_equal(vw_workloads_set_groups(c->w, &vm, 1), 0);
}

/*
 * Each step: container x of pod 0 runs on (pid 500); a process of container cK (pod 0) and one
 * of container dK (pod K) run and exit; VM K replaces VM K-1. Nobody scrapes. Each level keeps
 * at most CAP terminated entries, and pod 0's counter keeps every evicted cK's energy.
 */
static void test_registry_churn(void **state)
{
	char *list = kubelet_list(), id[VW_CONTAINER_ID_LEN], uid[VW_POD_UID_LEN];
	struct vw_workloads_opts o = { .host_cpus = 2, .processes = true, .containers = true,
				       .pods = true, .vms = true, .max_terminated = CAP };
	struct vw_table_stat t[VW_TABLE__COUNT] = { 0 };
	struct churn c = { 0 };
	struct kubelet_fixture kl;
	double evicted_c = 0; /* final energy of the cK containers, evicted or not */

	(void)state;
	kubelet_fixture_start(&kl, list);
	c.root = vw_fixture_mkdtemp("bounds");
	c.procfd = vw_root_open(c.root);
	assert_true(c.procfd >= 0);
	o.procfs_fd = c.procfd;
	o.podmeta = kl.pm;
	c.w = vw_workloads_new(&o);
	assert_non_null(c.w);
	pod_uid(uid, 0);
	cid(id, 'e', 0);
	add_proc(&c, 500, uid, id);
	c.cpu[0] = (struct vw_proc_cpu){ .tgid = 500, .start_time = 500, .comm = "x" };
	step(&c, 1, 0, 0); /* baseline */
	for (unsigned k = 1; k <= STEPS; k++) {
		char needle[128], *text;

		pod_uid(uid, 0);
		cid(id, 'c', k);
		add_proc(&c, 1000 + k, uid, id);
		pod_uid(uid, k);
		cid(id, 'd', k);
		add_proc(&c, 2000 + k, uid, id);
		c.cpu[0].cpu_ns += 100 * VW_NSEC_PER_MSEC;
		c.cpu[1] = (struct vw_proc_cpu){ .tgid = 1000 + k, .start_time = 1000 + k,
						 .comm = "c", .cpu_ns = 200 * VW_NSEC_PER_MSEC,
						 .exited = true };
		c.cpu[2] = (struct vw_proc_cpu){ .tgid = 2000 + k, .start_time = 2000 + k,
						 .comm = "d", .cpu_ns = 300 * VW_NSEC_PER_MSEC,
						 .exited = true };
		set_vm(&c, k);
		step(&c, 3, 6000000, 3000000);
		text = workloads_fixture_render(c.w);
		cid(id, 'c', k);
		snprintf(needle, sizeof(needle), "container_id=\"%s\"", id);
		evicted_c += energy(text, "container", needle);
		/* Pod 0 = x + every cK that ever ran, evicted ones included. */
		cid(id, 'e', 0);
		snprintf(needle, sizeof(needle), "container_id=\"%s\"", id);
		assert_double_near(energy(text, "pod", "pod_name=\"pod0\""),
				   evicted_c + energy(text, "container", needle), 1e-5);
		free(text);
		vw_workloads_published(c.w, ++c.gen, 0); /* nobody scrapes */
		vw_workloads_table_stats(c.w, t);
		/* Live: pid 500; x, cK and dK (they ran this interval); pod 0 and pod K; VM K.
		 * Terminated: at most CAP each. */
		assert_true(t[VW_TABLE_PROCESS].entries <= 1 + CAP);
		assert_true(t[VW_TABLE_CONTAINER].entries <= 3 + CAP);
		assert_true(t[VW_TABLE_POD].entries <= 2 + CAP);
		assert_true(t[VW_TABLE_VM].entries <= 1 + CAP);
		/* Same for the snapshot: the exited processes leave it. */
		c.cpu[1] = c.cpu[0];
	}
	/* Two exits per step, CAP kept: the rest was evicted, unscraped. Containers and pods end
	 * an interval after their last process. */
	assert_int_equal(t[VW_TABLE_PROCESS].entries, 1 + CAP);
	assert_int_equal(t[VW_TABLE_PROCESS].evictions, 2 * STEPS - CAP);
	assert_int_equal(t[VW_TABLE_CONTAINER].entries, 3 + CAP);
	assert_int_equal(t[VW_TABLE_CONTAINER].evictions, 2 * (STEPS - 1) - CAP);
	assert_int_equal(t[VW_TABLE_POD].entries, 2 + CAP);
	assert_int_equal(t[VW_TABLE_POD].evictions, STEPS - 1 - CAP);
	assert_int_equal(t[VW_TABLE_VM].entries, 1 + CAP);
	assert_int_equal(t[VW_TABLE_VM].evictions, STEPS - 1 - CAP);
	vw_workloads_free(c.w);
	kubelet_fixture_stop(&kl);
	close(c.procfd);
	vw_fixture_rm(c.root);
	free(list);
}

/* ---- The cgroup walk ---- */

static void test_cgroup_walk_churn(void **state)
{
	char *root = vw_fixture_mkdtemp("cgw");
	char rel[128];
	struct vw_table_stat t;
	struct vw_cgroupfs *cg;
	int fd;

	(void)state;
	assert_int_equal(vw_fixture_write(root, "fs/cgroup/cgroup.controllers", "cpu\n", 0), 0);
	fd = vw_root_open(root);
	assert_true(fd >= 0);
	cg = vw_cgroupfs_open(fd);
	assert_non_null(cg);
	vw_cgroupfs_set_max(cg, CAP);
	for (unsigned k = 0; k < STEPS; k++) {
		snprintf(rel, sizeof(rel), "fs/cgroup/c%u", k);
		assert_int_equal(vw_fixture_mkdir(root, rel), 0);
		assert_int_equal(vw_cgroupfs_scan(cg), 0);
		vw_cgroupfs_table_stat(cg, &t);
		assert_true(t.entries <= CAP);
	}
	/* The root and CAP - 1 children fit; every walk refused the rest it saw. */
	assert_int_equal(t.entries, CAP);
	assert_true(t.evictions > 0);
	vw_cgroupfs_free(cg);
	close(fd);
	vw_fixture_rm(root);
}

/* ---- The pod metadata table ---- */

static struct json_object *pod_json(unsigned k)
{
	char text[512], uid[VW_POD_UID_LEN], id[VW_CONTAINER_ID_LEN];

	pod_uid(uid, k);
	cid(id, 'c', k);
	snprintf(text, sizeof(text),
		 "{\"metadata\":{\"name\":\"p%u\",\"namespace\":\"ns\",\"uid\":\"%s\"},"
		 "\"spec\":{\"nodeName\":\"n1\",\"containers\":[]},\"status\":{\"containerStatuses\":"
		 "[{\"name\":\"c\",\"containerID\":\"containerd://%s\"}]}}",
		 k, uid, id);
	return json_tokener_parse(text);
}

static void test_pod_table_churn(void **state)
{
	struct vw_podtable *pt = vw_podtable_new(3600 * VW_NSEC_PER_SEC);
	struct vw_table_stat pods, ctrs;

	(void)state;
	assert_non_null(pt);
	vw_podtable_set_caps(pt, CAP, CAP);
	/* Pods come and go (deleted, still in their hour of grace): at the cap, the one deleted
	 * the longest ago makes room. */
	for (unsigned k = 1; k <= STEPS; k++) {
		struct json_object *p = pod_json(k);

		assert_int_equal(vw_podtable_apply(pt, p, k, false, k * VW_NSEC_PER_SEC), 0);
		assert_int_equal(vw_podtable_apply(pt, p, k, true, k * VW_NSEC_PER_SEC), 0);
		json_object_put(p);
		vw_podtable_table_stats(pt, &pods, &ctrs);
		assert_true(pods.entries <= CAP && ctrs.entries <= CAP);
	}
	assert_int_equal(pods.evictions, STEPS - CAP);
	assert_int_equal(ctrs.evictions, STEPS - CAP);
	/* Live pods fill it: a new one is refused, and counted. */
	for (unsigned k = 100; k < 100 + CAP + 2; k++) {
		struct json_object *p = pod_json(k);

		(void)vw_podtable_apply(pt, p, k, false, 100 * VW_NSEC_PER_SEC);
		json_object_put(p);
	}
	vw_podtable_table_stats(pt, &pods, &ctrs);
	assert_int_equal(pods.entries, CAP);
	assert_int_equal(pods.evictions, STEPS - CAP + CAP + 2);
	vw_podtable_free(pt);
}

/* ---- The publisher's VM states ---- */

static void test_publisher_churn(void **state)
{
	struct vw_publisher *p = vw_publisher_new(&(struct vw_publish_opts){ .seed = 1 });
	struct vw_table_stat t;
	const size_t n = 4096 + 50; /* the cap on vanished VMs remembered is 4096 */

	(void)state;
	assert_non_null(p);
	for (size_t k = 0; k < n; k++) {
		struct vw_vm_energy vm = { .n_zones = 1 };

		snprintf(vm.uuid, sizeof(vm.uuid), "6f1c2f3a-8f4e-4c1b-9d62-%012zu", k);
		vm.zones[0] = (struct vw_zone_owner_energy){ .zone = VW_ZONE_PACKAGE, .idle_uj = k };
		assert_int_equal(vw_publisher_update(p, &vm, 1), 0);
	}
	vw_publisher_table_stat(p, &t);
	assert_int_equal(t.entries, 1 + 4096);
	assert_int_equal(t.evictions, n - 1 - 4096);
	vw_publisher_free(p);
}

/* ---- The guest's series state ---- */

/* One rendering of the counters c_total{k="first".."first+n-1"}, each at value. */
static void learn_series(struct vw_series_state *s, unsigned first, unsigned n, unsigned value)
{
	vw_series_state_begin(s);
	for (unsigned k = first; k < first + n; k++) {
		char key[64];
		int len = snprintf(key, sizeof(key), "c_total{k=\"%u\"}", k);
		uint64_t out;

		assert_true(vw_series_state_learn(s, key, (size_t)len, value * 1000000ull, &out) >=
			    0);
	}
	assert_int_equal(vw_series_state_end(s), 0);
}

static void test_series_churn(void **state)
{
	struct vw_series_state *s = vw_series_state_new(100);
	uint64_t v;

	(void)state;
	assert_non_null(s);
	/* 40 new series each render, 10 renders: the longest unseen go first. */
	for (unsigned r = 0; r < 10; r++) {
		learn_series(s, r * 40, 40, 5);
		assert_true(vw_series_state_size(s) <= 100);
	}
	assert_true(vw_series_state_size(s) >= 80);
	assert_int_equal(vw_series_state_evictions(s), 400 - vw_series_state_size(s));
	assert_int_equal(vw_series_state_get(s, "c_total{k=\"399\"}", &v), 0);
	assert_int_equal(vw_series_state_get(s, "c_total{k=\"0\"}", &v), -ENOENT);
	/* One render larger than the cap: all its series are kept (they are being served). */
	learn_series(s, 1000, 150, 7);
	assert_int_equal(vw_series_state_size(s), 150);
	assert_int_equal(vw_series_state_get(s, "c_total{k=\"1000\"}", &v), 0);
	vw_series_state_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_registry_churn),
		cmocka_unit_test(test_cgroup_walk_churn),
		cmocka_unit_test(test_pod_table_churn),
		cmocka_unit_test(test_publisher_churn),
		cmocka_unit_test(test_series_churn),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

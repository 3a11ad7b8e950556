/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Attribution as a pure function (shared/engine/attribute.h) on fixed numbers: each case names
 * every owner's exact share in µJ (process, container, pod, VM, the node's uncontained and
 * unattributed; active and idle), so a share given to the wrong owner fails, and every case is
 * checked for conservation. The worked example and its variants are docs/attribution.md's.
 */
#include "vw_test.h"

#include <errno.h>
#include <stdio.h>

#include "attribute.h"
#include "macro.h"
#include "perf_counters.h"

#define PKG VW_ZONE_PACKAGE
#define NONE (-1)

/* A process: CPU ms (as ns), container, VM, live. */
#define PROC(ms, cont, v_) \
	{ .cpu_ns = (ms) * 1000000ULL, .container = (cont), .vm = (v_), .live = true }
#define CONT(p_) { .pod = (p_), .live = true }

struct owner_want {
	uint64_t active, idle;
};

/* What vw_attribute() gave: the groups' shares and, by the callback, the processes'. */
struct result {
	struct vw_attribution a;
	struct vw_attr_share procs[40];
};

static void take_proc(void *ctx, size_t i, enum vw_zone z, enum vw_attr_mode m, uint64_t uj)
{
	struct result *r = ctx;

	assert_true(i < ARRAY_SIZE(r->procs));
	assert_true(uj > 0); /* only shares are given */
	r->procs[i].uj[z][m] += uj;
}

/* Every share, conserved: node = containers + uncontained + unattributed; a container at least
 * its processes; a pod its containers; a VM its processes; the uncontained at least the
 * processes in no container. */
static void assert_conserved(const struct result *r, const struct vw_attr_in *in)
{
	const struct vw_attribution *a = &r->a;

	for (int z = 0; z < VW_ZONE__COUNT; z++)
		for (int m = 0; m < VW_ATTR__MODES; m++) {
			uint64_t node = 0, conts = 0, pods[16] = { 0 }, vms[16] = { 0 };
			uint64_t in_cont[16] = { 0 }, loose = 0;

			if (in->zones[z].present)
				node = m == VW_ATTR_ACTIVE ? in->zones[z].active_uj
							   : in->zones[z].idle_uj;
			assert_true(in->n_conts <= 16 && in->n_pods <= 16 && in->n_vms <= 16);
			for (size_t i = 0; i < in->n_procs; i++) {
				const struct vw_attr_proc *p = &in->procs[i];
				uint64_t uj = r->procs[i].uj[z][m];

				if (p->container >= 0)
					in_cont[p->container] += uj;
				else
					loose += uj;
				if (p->vm >= 0)
					vms[p->vm] += uj;
			}
			for (size_t c = 0; c < in->n_conts; c++) {
				conts += a->conts[c].uj[z][m];
				assert_true(a->conts[c].uj[z][m] >= in_cont[c]);
				if (in->conts[c].pod >= 0)
					pods[in->conts[c].pod] += a->conts[c].uj[z][m];
			}
			for (size_t p = 0; p < in->n_pods; p++)
				assert_int_equal(a->pods[p].uj[z][m], pods[p]);
			for (size_t v = 0; v < in->n_vms; v++)
				assert_int_equal(a->vms[v].uj[z][m], vms[v]);
			assert_true(a->uncontained[z][m] >= loose);
			if (conts + a->uncontained[z][m] + a->unattributed[z][m] != node)
				fail_msg("zone %d mode %d: %ju + %ju + %ju != node %ju", z, m,
					 (uintmax_t)conts, (uintmax_t)a->uncontained[z][m],
					 (uintmax_t)a->unattributed[z][m], (uintmax_t)node);
		}
}

static void expect(const char *who, size_t i, const struct vw_attr_share *got, enum vw_zone z,
		   uint64_t active, uint64_t idle)
{
	if (got->uj[z][VW_ATTR_ACTIVE] != active || got->uj[z][VW_ATTR_IDLE] != idle)
		fail_msg("%s %zu zone %d: active %ju idle %ju, expected %ju and %ju", who, i, z,
			 (uintmax_t)got->uj[z][VW_ATTR_ACTIVE], (uintmax_t)got->uj[z][VW_ATTR_IDLE],
			 (uintmax_t)active, (uintmax_t)idle);
}

/* Each owner of a level, in order: {active, idle} of zone z. */
#define EXPECT_LEVEL(who, shares, z, ...)                                                          \
	do {                                                                                       \
		const struct owner_want w_[] = { __VA_ARGS__ };                                    \
		for (size_t i_ = 0; i_ < ARRAY_SIZE(w_); i_++)                                     \
			expect(who, i_, &(shares)[i_], z, w_[i_].active, w_[i_].idle);             \
	} while (0)

static void expect_node(const struct result *r, enum vw_zone z, uint64_t unc_active,
			uint64_t unc_idle, uint64_t unattr_active, uint64_t unattr_idle)
{
	const struct vw_attribution *a = &r->a;
	const uint64_t got[] = {
		a->uncontained[z][VW_ATTR_ACTIVE], a->uncontained[z][VW_ATTR_IDLE],
		a->unattributed[z][VW_ATTR_ACTIVE], a->unattributed[z][VW_ATTR_IDLE],
	};
	const uint64_t want[] = { unc_active, unc_idle, unattr_active, unattr_idle };
	static const char *const what[] = { "uncontained active", "uncontained idle",
					    "unattributed active", "unattributed idle" };

	for (size_t i = 0; i < ARRAY_SIZE(got); i++)
		if (got[i] != want[i])
			fail_msg("zone %d %s: %ju, expected %ju", z, what[i], (uintmax_t)got[i],
				 (uintmax_t)want[i]);
}

static void run(struct result *r, const struct vw_attr_in *in)
{
	memset(r->procs, 0, sizeof(r->procs));
	assert_int_equal(vw_attribute(&r->a, in, take_proc, r), 0);
	assert_conserved(r, in);
}

/*
 * docs/attribution.md's worked example: 8 CPUs, 250,000,007 µJ of package, 150,000,000 of it
 * idle. p1 (pod A, container a1) 3000 ms, p2 (pod A, a2) 1000, p3 (pod B, b1) 500, p4 (VM v1's
 * QEMU) 2000, p5 (kubelet, in no pod or container) 500; pod A requests 2000m, pod B 1000m, v1
 * has 2 vCPUs.
 */
static const struct vw_attr_proc example_procs[] = {
	PROC(3000, 0, NONE), PROC(1000, 1, NONE), PROC(500, 2, NONE),
	PROC(2000, NONE, 0), PROC(500, NONE, NONE),
};
static const struct vw_attr_container example_conts[] = { CONT(0), CONT(0), CONT(1) };

static struct vw_attr_in example(const uint64_t pod_millis[2], const uint64_t vm_millis[1])
{
	struct vw_attr_in in = {
		.procs = example_procs, .n_procs = ARRAY_SIZE(example_procs),
		.conts = example_conts, .n_conts = ARRAY_SIZE(example_conts),
		.pod_millis = pod_millis, .n_pods = 2, .vm_millis = vm_millis, .n_vms = 1,
		.capacity_millis = 8000,
	};

	in.zones[PKG] = (struct vw_zone_energy){ .present = true, .active_uj = 100000007,
						 .idle_uj = 150000000 };
	return in;
}

static void test_worked_example(void **state)
{
	static const uint64_t pods[] = { 2000, 1000 }, vms[] = { 2000 };
	struct result r = { 0 };
	struct vw_attr_in in = example(pods, vms);

	(void)state;
	run(&r, &in);
	/* Active by CPU time 3000 : 1000 : 500 : 2000 : 500, the 3 µJ left to p1, p3, p5. Idle
	 * 37.5 J each to pod A and v1, 18.75 J to pod B, pod A's 3 : 1 over a1 and a2. */
	EXPECT_LEVEL("process", r.procs, PKG, { 42857146, 28125000 }, { 14285715, 9375000 },
		     { 7142858, 18750000 }, { 28571430, 37500000 }, { 7142858, 0 });
	EXPECT_LEVEL("container", r.a.conts, PKG, { 42857146, 28125000 }, { 14285715, 9375000 },
		     { 7142858, 18750000 });
	EXPECT_LEVEL("pod", r.a.pods, PKG, { 57142861, 37500000 }, { 7142858, 18750000 });
	EXPECT_LEVEL("vm", r.a.vms, PKG, { 28571430, 37500000 });
	/* p4 and p5 are in no container; the 3000 of 8000 millicores no one reserved: the
	 * node's. */
	expect_node(&r, PKG, 28571430 + 7142858, 37500000, 0, 56250000);
	/* No other zone was given anything. */
	for (int z = 0; z < VW_ZONE__COUNT; z++)
		if (z != PKG)
			expect("process", 0, &r.procs[0], (enum vw_zone)z, 0, 0);
	vw_attribution_release(&r.a);
}

/* The variants: nothing reserved (idle by CPU time, 3 µJ left to p4, then p3 and p5's tie)
 * and over-commit (10,000 of 8,000 millicores: 4 : 4 : 2, the node keeps nothing). */
static void test_worked_example_variants(void **state)
{
	static const uint64_t none[] = { 0, 0 }, none_vm[] = { 0 };
	static const uint64_t over[] = { 4000, 4000 }, over_vm[] = { 2000 };
	struct result r = { 0 };
	struct vw_attr_in in = example(none, none_vm);

	(void)state;
	run(&r, &in);
	EXPECT_LEVEL("process", r.procs, PKG, { 42857146, 64285714 }, { 14285715, 21428571 },
		     { 7142858, 10714286 }, { 28571430, 42857143 }, { 7142858, 10714286 });
	EXPECT_LEVEL("pod", r.a.pods, PKG, { 57142861, 64285714 + 21428571 },
		     { 7142858, 10714286 });
	EXPECT_LEVEL("vm", r.a.vms, PKG, { 28571430, 42857143 });
	expect_node(&r, PKG, 35714288, 42857143 + 10714286, 0, 0);

	in = example(over, over_vm); /* the same memory, reused: results replaced */
	run(&r, &in);
	EXPECT_LEVEL("pod", r.a.pods, PKG, { 57142861, 60000000 }, { 7142858, 60000000 });
	EXPECT_LEVEL("container", r.a.conts, PKG, { 42857146, 45000000 }, { 14285715, 15000000 },
		     { 7142858, 60000000 });
	EXPECT_LEVEL("vm", r.a.vms, PKG, { 28571430, 30000000 });
	expect_node(&r, PKG, 35714288, 30000000, 0, 0);
	vw_attribution_release(&r.a);
}

/*
 * An interval where nothing ran: active stays with the node; reserved idle goes equally to the
 * live containers of a pod and to the live processes of each (an exited process in the table
 * gets none), and equally to a VM's live processes; a pod whose containers are all gone, and a
 * VM with no process, leave theirs to the node; a container in no pod gets no idle.
 */
static void test_zero_activity(void **state)
{
	static const struct vw_attr_proc procs[] = {
		{ .container = 0, .vm = NONE, .live = true },  /* p0: pod 0, a0 */
		{ .container = 0, .vm = NONE, .live = false }, /* p1: a0, exited */
		{ .container = 1, .vm = NONE, .live = true },  /* p2: pod 0, a1 */
		{ .container = NONE, .vm = 0, .live = true },  /* p3: VM 0's QEMU */
		{ .container = NONE, .vm = 0, .live = true },  /* p4: its vhost thread */
		{ .container = 2, .vm = NONE, .live = true },  /* p5: a container in no pod */
		{ .container = 3, .vm = NONE, .live = false }, /* p6: pod 1's gone container */
	};
	static const struct vw_attr_container conts[] = {
		CONT(0), CONT(0), CONT(NONE), { .pod = 1, .live = false },
	};
	static const uint64_t pods[] = { 2000, 400 }, vms[] = { 1000, 600 };
	struct vw_attr_in in = { .procs = procs, .n_procs = ARRAY_SIZE(procs), .conts = conts,
				 .n_conts = ARRAY_SIZE(conts), .pod_millis = pods, .n_pods = 2,
				 .vm_millis = vms, .n_vms = 2, .capacity_millis = 8000 };
	struct result r = { 0 };

	(void)state;
	in.zones[PKG] = (struct vw_zone_energy){ .present = true, .active_uj = 5,
						 .idle_uj = 20000003 };
	run(&r, &in);
	/* 20,000,003 x {2000, 400, 1000, 600, rest 4000} / 8000: 5,000,000.75, 1,000,000.15,
	 * 2,500,000.375, 1,500,000.225, 10,000,001.5; the 2 µJ left to .75 and .5. Pod 0's
	 * 5,000,001 equally over a0 and a1 (the odd µJ to a0), a0's to p0 alone; pod 1's and
	 * VM 1's to no one. */
	EXPECT_LEVEL("process", r.procs, PKG, { 0, 2500001 }, { 0, 0 }, { 0, 2500000 },
		     { 0, 1250000 }, { 0, 1250000 }, { 0, 0 }, { 0, 0 });
	EXPECT_LEVEL("container", r.a.conts, PKG, { 0, 2500001 }, { 0, 2500000 }, { 0, 0 },
		     { 0, 0 });
	EXPECT_LEVEL("pod", r.a.pods, PKG, { 0, 5000001 }, { 0, 0 });
	EXPECT_LEVEL("vm", r.a.vms, PKG, { 0, 2500000 }, { 0, 0 });
	expect_node(&r, PKG, 0, 2500000, 5, 10000002 + 1000000 + 1500000);

	/* Nothing in the interval at all, nothing reserved: all zeros, still conserved. */
	in.zones[PKG] = (struct vw_zone_energy){ .present = true };
	in.n_pods = in.n_vms = in.n_conts = in.n_procs = 0;
	run(&r, &in);
	expect_node(&r, PKG, 0, 0, 0, 0);
	vw_attribution_release(&r.a);
}

/*
 * The kernel's totals: a container's cgroup ran more than its processes (the rest is the
 * container's own part), the root ran more than everything seen (the unseen rest is
 * uncontained). Then a scan that read more than the root ran: the scanned weights shrink, the
 * cgroup's stays exact.
 */
static void test_cgroup_and_root_totals(void **state)
{
	static const struct vw_attr_proc procs[] = {
		PROC(400, 0, NONE), /* in c0, whose cgroup ran 600 ms */
		PROC(200, NONE, NONE),
	};
	static const struct vw_attr_container conts[] = {
		{ .pod = NONE, .live = true, .cg_valid = true, .cg_ns = 600000000 },
	};
	static const struct vw_attr_proc scan[] = {
		PROC(300, 1, NONE), /* c1: no cgroup total */
		PROC(600, NONE, NONE),
		PROC(0, 0, NONE),
	};
	static const struct vw_attr_container scan_conts[] = {
		{ .pod = NONE, .live = true, .cg_valid = true, .cg_ns = 400000000 },
		CONT(NONE),
	};
	struct vw_attr_in in = { .procs = procs, .n_procs = ARRAY_SIZE(procs), .conts = conts,
				 .n_conts = ARRAY_SIZE(conts), .capacity_millis = 2000,
				 .root_valid = true, .root_ns = 1000000000 };
	struct result r = { 0 };

	(void)state;
	in.zones[PKG] = (struct vw_zone_energy){ .present = true, .active_uj = 1000000,
						 .idle_uj = 3000 };
	run(&r, &in);
	/* 600 : 200 : 200 unseen of the root's 1000 ms; idle (nothing reserved) the same way. */
	EXPECT_LEVEL("process", r.procs, PKG, { 400000, 1200 }, { 200000, 600 });
	EXPECT_LEVEL("container", r.a.conts, PKG, { 600000, 1800 });
	expect_node(&r, PKG, 400000, 1200, 0, 0);

	/* Read 400 (cgroup) + 300 + 600 = 1300 ms against the root's 1000: the 900 scanned
	 * shrink to the 600 left, 200 : 400. */
	in = (struct vw_attr_in){ .procs = scan, .n_procs = ARRAY_SIZE(scan), .conts = scan_conts,
				  .n_conts = ARRAY_SIZE(scan_conts), .capacity_millis = 2000,
				  .root_valid = true, .root_ns = 1000000000 };
	in.zones[PKG] = (struct vw_zone_energy){ .present = true, .active_uj = 10000000 };
	run(&r, &in);
	EXPECT_LEVEL("container", r.a.conts, PKG, { 4000000, 0 }, { 2000000, 0 });
	EXPECT_LEVEL("process", r.procs, PKG, { 2000000, 0 }, { 4000000, 0 }, { 0, 0 });
	expect_node(&r, PKG, 4000000, 0, 0, 0);
	vw_attribution_release(&r.a);
}

/*
 * A process that moved from c0 (pod 0) to c1 (pod 1) during the interval: it is c1's now and
 * its 500 ms are its own reading, but the kernel says 300 of them ran in c0 and 200 in c1. c0
 * keeps what ran in it (its other process's 100 ms and its own part, 300 ms), c1 gives the
 * mover only what ran there.
 */
static void test_moved_between_containers(void **state)
{
	static const struct vw_attr_proc procs[] = { PROC(100, 0, NONE), PROC(500, 1, NONE) };
	static const struct vw_attr_container conts[] = {
		{ .pod = 0, .live = true, .cg_valid = true, .cg_ns = 400000000 },
		{ .pod = 1, .live = true, .cg_valid = true, .cg_ns = 200000000 },
	};
	static const uint64_t pods[] = { 1000, 3000 };
	struct vw_attr_in in = { .procs = procs, .n_procs = 2, .conts = conts, .n_conts = 2,
				 .pod_millis = pods, .n_pods = 2, .capacity_millis = 4000,
				 .root_valid = true, .root_ns = 600000000 };
	struct result r = { 0 };

	(void)state;
	in.zones[PKG] = (struct vw_zone_energy){ .present = true, .active_uj = 600000,
						 .idle_uj = 40000 };
	run(&r, &in);
	/* Idle 1 : 3 by requests: pod 0's 10,000 over c0 (by its cgroup, it alone in its pod),
	 * then to the process 100 of 400 and c0's own part 300. */
	EXPECT_LEVEL("process", r.procs, PKG, { 100000, 2500 }, { 200000, 30000 });
	EXPECT_LEVEL("container", r.a.conts, PKG, { 400000, 10000 }, { 200000, 30000 });
	EXPECT_LEVEL("pod", r.a.pods, PKG, { 400000, 10000 }, { 200000, 30000 });
	expect_node(&r, PKG, 0, 0, 0, 0);
	vw_attribution_release(&r.a);
}

/*
 * Keys per zone: with counters, package by instructions, dram by cache misses (a cgroup's CPU
 * total counts neither, so c0 is its process's counts), uncore by CPU time (c0's cgroup); a
 * zone whose idle is the node's keeps it whole.
 */
static void test_keys_per_zone(void **state)
{
	static const struct vw_attr_proc procs[] = {
		{ .cpu_ns = 1000, .container = 0, .vm = NONE, .live = true },
		{ .cpu_ns = 1000, .container = 1, .vm = NONE, .live = true },
	};
	static const struct vw_attr_counters hw[] = {
		{ .instructions = 3000, .cache_misses = 1000 },
		{ .instructions = 1000, .cache_misses = 4000 },
	};
	static const struct vw_attr_container conts[] = {
		{ .pod = NONE, .live = true, .cg_valid = true, .cg_ns = 3000 },
		CONT(NONE),
	};
	struct vw_attr_in in = { .procs = procs, .n_procs = 2, .conts = conts, .n_conts = 2,
				 .capacity_millis = 2000,
				 .counters = hw,
				 .hw_available = VW_HW_BIT(VW_HW_INSTRUCTIONS) |
						 VW_HW_BIT(VW_HW_CACHE_MISSES) };
	struct result r = { 0 };

	(void)state;
	in.zones[VW_ZONE_PACKAGE] = (struct vw_zone_energy){ true, 8000000, 4000, false };
	in.zones[VW_ZONE_DRAM] = (struct vw_zone_energy){ true, 5000000, 0, false };
	in.zones[VW_ZONE_UNCORE] = (struct vw_zone_energy){ true, 2000000, 0, false };
	in.zones[VW_ZONE_PSYS] = (struct vw_zone_energy){ true, 4, 7000, true };
	run(&r, &in);
	EXPECT_LEVEL("container", r.a.conts, VW_ZONE_PACKAGE, { 6000000, 3000 }, { 2000000, 1000 });
	EXPECT_LEVEL("container", r.a.conts, VW_ZONE_DRAM, { 1000000, 0 }, { 4000000, 0 });
	/* c0's cgroup ran 3000 ns, 2000 beyond its process: c0's own part. */
	EXPECT_LEVEL("container", r.a.conts, VW_ZONE_UNCORE, { 1500000, 0 }, { 500000, 0 });
	EXPECT_LEVEL("process", r.procs, VW_ZONE_UNCORE, { 500000, 0 }, { 500000, 0 });
	EXPECT_LEVEL("container", r.a.conts, VW_ZONE_PSYS, { 3, 0 }, { 1, 0 });
	expect_node(&r, VW_ZONE_PSYS, 0, 0, 0, 7000);
	expect_node(&r, VW_ZONE_CORE, 0, 0, 0, 0); /* absent */

	in.hw_available = VW_HW_BIT(VW_HW_CACHE_MISSES); /* no instructions: package by CPU */
	run(&r, &in);
	EXPECT_LEVEL("container", r.a.conts, VW_ZONE_PACKAGE, { 6000000, 3000 }, { 2000000, 1000 });
	EXPECT_LEVEL("container", r.a.conts, VW_ZONE_DRAM, { 1000000, 0 }, { 4000000, 0 });
	in.counters = NULL; /* without counters: CPU time everywhere */
	run(&r, &in);
	EXPECT_LEVEL("container", r.a.conts, VW_ZONE_PACKAGE, { 6000000, 3000 }, { 2000000, 1000 });
	EXPECT_LEVEL("container", r.a.conts, VW_ZONE_DRAM, { 3750000, 0 }, { 1250000, 0 });
	vw_attribution_release(&r.a);
}

/* A KubeVirt VM: its QEMU is in a pod's container, so the pod's request is its reservation;
 * the VM's own (vCPUs) would count it twice and is not taken. */
static void test_vm_in_pod(void **state)
{
	static const struct vw_attr_proc procs[] = { PROC(100, 0, 0), PROC(300, NONE, NONE) };
	static const struct vw_attr_container conts[] = { CONT(0) };
	static const uint64_t pods[] = { 1000 }, vms[] = { 2000 };
	struct vw_attr_in in = { .procs = procs, .n_procs = 2, .conts = conts, .n_conts = 1,
				 .pod_millis = pods, .n_pods = 1, .vm_millis = vms, .n_vms = 1,
				 .capacity_millis = 4000 };
	struct result r = { 0 };

	(void)state;
	in.zones[PKG] = (struct vw_zone_energy){ .present = true, .active_uj = 4000,
						 .idle_uj = 7000 };
	run(&r, &in);
	/* Idle 7000 x {1000, 2000, rest 1000} / 4000: the pod's 1750 to QEMU; the VM's 3500
	 * has no process of its own (QEMU is the pod's) and stays the node's. */
	EXPECT_LEVEL("process", r.procs, PKG, { 1000, 1750 }, { 3000, 0 });
	EXPECT_LEVEL("vm", r.a.vms, PKG, { 1000, 1750 });
	EXPECT_LEVEL("pod", r.a.pods, PKG, { 1000, 1750 });
	expect_node(&r, PKG, 3000, 0, 0, 1750 + 3500);
	vw_attribution_release(&r.a);
}

static void test_bad_indices(void **state)
{
	struct vw_attr_proc procs[] = { PROC(1, 1, NONE) };
	struct vw_attr_container conts[] = { CONT(NONE) };
	struct vw_attr_in in = { .procs = procs, .n_procs = 1, .conts = conts, .n_conts = 1 };
	struct result r = { 0 };

	(void)state;
	assert_int_equal(vw_attribute(&r.a, &in, take_proc, &r), -EINVAL); /* container 1 of 1 */
	procs[0].container = 0;
	procs[0].vm = 0;
	assert_int_equal(vw_attribute(&r.a, &in, take_proc, &r), -EINVAL); /* VM 0 of none */
	procs[0].vm = NONE;
	conts[0].pod = 0;
	assert_int_equal(vw_attribute(&r.a, &in, take_proc, &r), -EINVAL); /* pod 0 of none */
	conts[0].pod = NONE;
	assert_int_equal(vw_attribute(&r.a, &in, take_proc, &r), 0);
	vw_attribution_release(&r.a);
}

/* reallocarray() wrapped (tests/meson.build: mock): the fail_at-th call from now fails. */
static int fail_at;

void *__real_reallocarray(void *p, size_t n, size_t size);
void *__wrap_reallocarray(void *p, size_t n, size_t size);
void *__wrap_reallocarray(void *p, size_t n, size_t size)
{
	if (fail_at > 0 && --fail_at == 0)
		return NULL;
	return __real_reallocarray(p, n, size);
}

static void count_given(void *ctx, size_t i, enum vw_zone z, enum vw_attr_mode m, uint64_t uj)
{
	(void)i, (void)z, (void)m, (void)uj;
	++*(int *)ctx;
}

/* Out of memory at each allocation in turn, on fresh memory and on memory that must grow:
 * -ENOMEM and nothing given; the next call, with memory, gives the worked example exactly. */
static void test_out_of_memory(void **state)
{
	static const uint64_t pods[] = { 2000, 1000 }, vms[] = { 2000 };
	struct vw_attr_in in = example(pods, vms), small = in;
	int k, failed = 0;

	(void)state;
	small.n_procs = small.n_conts = small.n_pods = small.n_vms = 0;
	for (k = 1; k < 64; k++) {
		for (int grown = 0; grown < 2; grown++) {
			struct result r = { 0 };

			if (grown)
				run(&r, &small);
			int given = 0;

			fail_at = k;
			if (vw_attribute(&r.a, &in, count_given, &given) == 0) {
				fail_at = 0;
				assert_true(given > 0);
				vw_attribution_release(&r.a);
				continue;
			}
			fail_at = 0;
			assert_int_equal(given, 0);
			failed++;
			run(&r, &in);
			EXPECT_LEVEL("pod", r.a.pods, PKG, { 57142861, 37500000 },
				     { 7142858, 18750000 });
			EXPECT_LEVEL("process", r.procs, PKG, { 42857146, 28125000 });
			vw_attribution_release(&r.a);
		}
		if (!failed)
			break; /* no k-th allocation on either path: all were tried */
		failed = 0;
	}
	assert_true(k > 8); /* the results and the scratch: at least 8 allocations */
}

static uint64_t rng = 0x2545f4914f6cdd1dULL;

static uint64_t rnd(uint64_t n)
{
	vw_test_xorshift(&rng);
	return n ? rng % n : rng;
}

/* Random memberships, usage, cgroup totals, reservations and energies: always conserved. */
static void test_conservation_property(void **state)
{
	struct vw_attr_proc procs[40];
	struct vw_attr_counters hw[40];
	struct vw_attr_container conts[12];
	uint64_t pods[6], vms[6];
	struct result r = { 0 };

	(void)state;
	for (int round = 0; round < 2000; round++) {
		struct vw_attr_in in = { .procs = procs, .n_procs = rnd(41), .conts = conts,
					 .n_conts = rnd(13), .pod_millis = pods, .n_pods = rnd(7),
					 .vm_millis = vms, .n_vms = rnd(7),
					 .capacity_millis = rnd(3) * 4000,
					 .root_valid = rnd(2), .root_ns = rnd(100000),
					 .counters = rnd(2) ? hw : NULL,
					 .hw_available = (unsigned)rnd(8) };

		for (size_t i = 0; i < in.n_procs; i++) {
			procs[i] = (struct vw_attr_proc){
				.cpu_ns = rnd(3) ? rnd(20000) : 0,
				.container = in.n_conts && rnd(3) ? (int32_t)rnd(in.n_conts) : NONE,
				.vm = in.n_vms && !rnd(3) ? (int32_t)rnd(in.n_vms) : NONE,
				.live = rnd(4) };
			hw[i] = (struct vw_attr_counters){ .instructions = rnd(1000000),
							   .cache_misses = rnd(3) ? rnd(1000) : 0 };
		}
		for (size_t c = 0; c < in.n_conts; c++)
			conts[c] = (struct vw_attr_container){
				.pod = in.n_pods && rnd(2) ? (int32_t)rnd(in.n_pods) : NONE,
				.live = rnd(4), .cg_valid = rnd(2), .cg_ns = rnd(30000) };
		for (size_t p = 0; p < 6; p++)
			pods[p] = rnd(2) ? rnd(4000) : 0, vms[p] = rnd(2) ? rnd(4) * 1000 : 0;
		for (int z = 0; z < VW_ZONE__COUNT; z++)
			in.zones[z] = (struct vw_zone_energy){ rnd(2), rnd(0) >> rnd(64),
							       rnd(0) >> rnd(64), !rnd(5) };
		run(&r, &in);
	}
	vw_attribution_release(&r.a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_worked_example),
		cmocka_unit_test(test_worked_example_variants),
		cmocka_unit_test(test_zero_activity),
		cmocka_unit_test(test_cgroup_and_root_totals),
		cmocka_unit_test(test_moved_between_containers),
		cmocka_unit_test(test_keys_per_zone),
		cmocka_unit_test(test_vm_in_pod),
		cmocka_unit_test(test_bad_indices),
		cmocka_unit_test(test_out_of_memory),
		cmocka_unit_test(test_conservation_property),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

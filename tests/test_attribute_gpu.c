/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GPU attribution as a pure function (shared/engine/attribute_gpu.h) on fixed numbers: each
 * case names every owner's exact share in µJ (each process's use, container, pod, VM, the
 * node's uncontained, unattributed and unreserved; active and idle), so a share given to the
 * wrong owner fails, and every case is checked for conservation.
 */
#include "vw_test.h"

#include <errno.h>
#include <stdio.h>

#include "attribute_gpu.h"
#include "macro.h"

#define NONE (-1)
#define USE(uj, cont) { .active_uj = (uj), .known = true, .container = (cont) }
#define UNKNOWN(uj) { .active_uj = (uj), .known = false, .container = NONE }

/* The k values of got against want, named who[i]. */
static void expect_each(const char *who, const uint64_t *got, const uint64_t *want, size_t k)
{
	for (size_t i = 0; i < k; i++)
		if (got[i] != want[i])
			fail_msg("%s %zu: %ju µJ, expected %ju", who, i, (uintmax_t)got[i],
				 (uintmax_t)want[i]);
}

#define EXPECT(who, got, ...)                                                                      \
	do {                                                                                       \
		const uint64_t w_[] = { __VA_ARGS__ };                                             \
		expect_each(who, got, w_, ARRAY_SIZE(w_));                                         \
	} while (0)

static void expect_node(const struct vw_gpu_attribution *a, uint64_t uncontained,
			uint64_t unattributed, uint64_t unreserved)
{
	EXPECT("node (uncontained, unattributed, unreserved)",
	       ((const uint64_t[]){ a->uncontained, a->unattributed, a->unreserved }), uncontained,
	       unattributed, unreserved);
}

/* node active = uses + VMs + unattributed, uses = containers + uncontained, a pod = its
 * containers, node idle = pods + VMs + unreserved. */
static void assert_conserved(const struct vw_gpu_attribution *a, const struct vw_gpu_attr_in *in)
{
	uint64_t active = 0, idle = 0, uses = 0, conts = 0, pods_idle = 0, vms_a = 0, vms_i = 0;
	uint64_t pod_active[8] = { 0 };

	assert_true(in->n_pods <= 8);
	for (size_t i = 0; i < in->n_devices; i++)
		active += in->devices[i].active_uj, idle += in->devices[i].idle_uj;
	for (size_t i = 0; i < in->n_uses; i++) {
		uses += a->uses[i];
		assert_true(a->uses[i] <= in->uses[i].active_uj);
		if (!in->uses[i].known)
			assert_int_equal(a->uses[i], 0);
	}
	for (size_t c = 0; c < in->n_conts; c++) {
		conts += a->cont_active[c];
		if (in->cont_pod[c] >= 0)
			pod_active[in->cont_pod[c]] += a->cont_active[c];
	}
	for (size_t p = 0; p < in->n_pods; p++) {
		assert_int_equal(a->pod_active[p], pod_active[p]);
		pods_idle += a->pod_idle[p];
	}
	for (size_t v = 0; v < in->n_vms; v++)
		vms_a += a->vm_active[v], vms_i += a->vm_idle[v];
	assert_int_equal(uses, conts + a->uncontained);
	assert_int_equal(active, uses + vms_a + a->unattributed);
	assert_int_equal(idle, pods_idle + vms_i + a->unreserved);
}

static void run(struct vw_gpu_attribution *a, const struct vw_gpu_attr_in *in)
{
	assert_int_equal(vw_attribute_gpu(a, in), 0);
	assert_conserved(a, in);
}

/*
 * Four GPUs: 14.5 J active, 9.75 J idle. VM 0 has two vGPUs (3 J + 0.5 J active, 1 J + 0.25 J
 * idle), VM 1 one (1 J, 0.5 J), a VM not known one more (0.25 J each, the node's). Containers
 * c0 and c1 in pod 0, c2 in pod 1, c3 in none; pod 0 requests 2 GPUs, pod 2 (no container) 1,
 * pod 1 none.
 */
static const struct vw_gpu_attr_device example_devices[] = {
	{ .idle_uj = 6000000, .active_uj = 10000000 },
	{ .idle_uj = 2000000, .active_uj = 4500000 },
	{ .idle_uj = 1000000, .active_uj = 0 },
	{ .idle_uj = 750000, .active_uj = 0 },
};
static const struct vw_gpu_attr_vgpu example_vgpus[] = {
	{ .vm = 0, .idle_uj = 1000000, .active_uj = 3000000 },
	{ .vm = 1, .idle_uj = 500000, .active_uj = 1000000 },
	{ .vm = NONE, .idle_uj = 250000, .active_uj = 250000 },
	{ .vm = 0, .idle_uj = 250000, .active_uj = 500000 },
};
static const int32_t example_cont_pod[] = { 0, 0, 1, NONE };
static const uint64_t example_pod_gpus[] = { 2, 0, 1 };

static struct vw_gpu_attr_in example(const struct vw_gpu_attr_use *uses, size_t n_uses)
{
	return (struct vw_gpu_attr_in){
		.devices = example_devices, .n_devices = ARRAY_SIZE(example_devices),
		.vgpus = example_vgpus, .n_vgpus = ARRAY_SIZE(example_vgpus),
		.uses = uses, .n_uses = n_uses,
		.cont_pod = example_cont_pod, .n_conts = ARRAY_SIZE(example_cont_pod),
		.pod_gpus = example_pod_gpus, .n_pods = ARRAY_SIZE(example_pod_gpus), .n_vms = 2 };
}

static void test_example(void **state)
{
	static const struct vw_gpu_attr_use uses[] = {
		USE(2000000, 0), USE(1500000, 1), UNKNOWN(700000), USE(1200000, NONE),
		USE(2500000, 2), USE(300000, 3),  USE(1000000, 0), USE(1000000, 2),
		USE(100000, 1),
	};
	struct vw_gpu_attribution a = { 0 };
	struct vw_gpu_attr_in in = example(uses, ARRAY_SIZE(uses));

	(void)state;
	run(&a, &in);
	/* The known VMs take 4.5 J active and 1.75 J idle first: 10 J and 8 J are left. */
	EXPECT("vm active", a.vm_active, 3500000, 1000000);
	EXPECT("vm idle", a.vm_idle, 1250000, 500000);
	/* Each known process its own share (9.6 J of the 10 J), the unknown PID's none. */
	EXPECT("use", a.uses, 2000000, 1500000, 0, 1200000, 2500000, 300000, 1000000, 1000000,
	       100000);
	EXPECT("container active", a.cont_active, 3000000, 1600000, 3500000, 300000);
	EXPECT("pod active", a.pod_active, 4600000, 3500000, 0);
	/* Idle: 2 and 1 of the 4 GPUs reserved, a quarter the node's. */
	EXPECT("pod idle", a.pod_idle, 4000000, 0, 2000000);
	expect_node(&a, 1200000, 400000, 2000000);
	vw_gpu_attribution_release(&a);
}

/* Shares beyond the node's active are cut to it, in order: a later process gets what is left,
 * the next nothing; an unknown PID takes nothing even first. A VM that takes more than the
 * devices' energy leaves the processes nothing (never a wrap). */
static void test_cut_in_order(void **state)
{
	static const struct vw_gpu_attr_device dev = { .idle_uj = 300000, .active_uj = 1000000 };
	static const struct vw_gpu_attr_use uses[] = {
		UNKNOWN(5000000), USE(600000, NONE), USE(700000, 0), USE(100000, 0),
	};
	static const int32_t cont_pod[] = { NONE };
	struct vw_gpu_attr_vgpu big = { .vm = 0, .idle_uj = 400000, .active_uj = 1500000 };
	struct vw_gpu_attribution a = { 0 };
	struct vw_gpu_attr_in in = { .devices = &dev, .n_devices = 1, .uses = uses,
				     .n_uses = ARRAY_SIZE(uses), .cont_pod = cont_pod,
				     .n_conts = 1, .n_vms = 1 };

	(void)state;
	run(&a, &in);
	EXPECT("use", a.uses, 0, 600000, 400000, 0);
	EXPECT("container active", a.cont_active, 400000);
	/* No pod: the idle is all the node's. */
	expect_node(&a, 600000, 0, 300000);
	in.vgpus = &big, in.n_vgpus = 1;
	assert_int_equal(vw_attribute_gpu(&a, &in), 0);
	EXPECT("use", a.uses, 0, 0, 0, 0);
	EXPECT("vm", ((const uint64_t[]){ a.vm_active[0], a.vm_idle[0] }), 1500000, 400000);
	expect_node(&a, 0, 0, 0);
	vw_gpu_attribution_release(&a);
}

/* Requests above the node's GPUs: normalised by the requests, the node keeps no idle; the
 * same pods on a node with no GPU listed: no idle at all, nothing given. */
static void test_over_commit_and_no_device(void **state)
{
	static const struct vw_gpu_attr_device dev[] = { { 900000, 0 }, { 300000, 0 } };
	static const uint64_t pod_gpus[] = { 1, 3 };
	struct vw_gpu_attribution a = { 0 };
	struct vw_gpu_attr_in in = { .devices = dev, .n_devices = 2, .pod_gpus = pod_gpus,
				     .n_pods = 2 };

	(void)state;
	run(&a, &in);
	EXPECT("pod idle", a.pod_idle, 300000, 900000);
	expect_node(&a, 0, 0, 0);
	in.n_devices = 0;
	run(&a, &in);
	EXPECT("pod idle", a.pod_idle, 0, 0);
	expect_node(&a, 0, 0, 0);
	vw_gpu_attribution_release(&a);
}

/* Every index out of range, or an array missing, is -EINVAL; the last call's shares stand. */
static void test_bad_indices(void **state)
{
	static const struct vw_gpu_attr_use one[] = { USE(1, 0) };
	struct vw_gpu_attr_use bad_use[] = { USE(1, 4) };
	struct vw_gpu_attr_vgpu bad_vgpu[] = { { .vm = 2 } };
	int32_t bad_pod[] = { 0, 0, 3, NONE };
	struct vw_gpu_attribution a = { 0 };
	struct vw_gpu_attr_in in = example(one, 1), bad;

	(void)state;
	run(&a, &in);
	bad = in, bad.uses = bad_use;
	assert_int_equal(vw_attribute_gpu(&a, &bad), -EINVAL);
	bad_use[0].container = -2;
	assert_int_equal(vw_attribute_gpu(&a, &bad), -EINVAL);
	bad = in, bad.vgpus = bad_vgpu, bad.n_vgpus = 1;
	assert_int_equal(vw_attribute_gpu(&a, &bad), -EINVAL);
	bad_vgpu[0].vm = -2;
	assert_int_equal(vw_attribute_gpu(&a, &bad), -EINVAL);
	bad = in, bad.cont_pod = bad_pod;
	assert_int_equal(vw_attribute_gpu(&a, &bad), -EINVAL);
	bad = in, bad.pod_gpus = NULL;
	assert_int_equal(vw_attribute_gpu(&a, &bad), -EINVAL);
	bad = in, bad.devices = NULL;
	assert_int_equal(vw_attribute_gpu(&a, &bad), -EINVAL);
	EXPECT("vm active", a.vm_active, 3500000, 1000000);
	EXPECT("use", a.uses, 1);
	vw_gpu_attribution_release(&a);
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

/* Out of memory at each allocation in turn, on fresh memory and on memory that must grow:
 * -ENOMEM, the last call's shares as they were; the next call, with memory, is exact. */
static void test_out_of_memory(void **state)
{
	static const struct vw_gpu_attr_use one[] = { USE(1, 0) };
	struct vw_gpu_attr_use many[40];
	struct vw_gpu_attr_in small = example(one, 1), big = example(many, ARRAY_SIZE(many));
	int k, failed = 0;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(many); i++)
		many[i] = (struct vw_gpu_attr_use)USE(1000, (int32_t)(i % 4));
	for (k = 1; k < 32; k++) {
		for (int grown = 0; grown < 2; grown++) {
			struct vw_gpu_attribution a = { 0 };

			if (grown)
				run(&a, &small);
			fail_at = k;
			if (vw_attribute_gpu(&a, &big) == 0) {
				fail_at = 0;
				vw_gpu_attribution_release(&a);
				continue;
			}
			fail_at = 0;
			failed++;
			if (grown) {
				EXPECT("use", a.uses, 1);
				EXPECT("vm active", a.vm_active, 3500000, 1000000);
			}
			run(&a, &big);
			EXPECT("container active", a.cont_active, 10000, 10000, 10000, 10000);
			EXPECT("pod idle", a.pod_idle, 4000000, 0, 2000000);
			vw_gpu_attribution_release(&a);
		}
		if (!failed)
			break; /* no k-th allocation on either path: all were tried */
		failed = 0;
	}
	assert_true(k > 6); /* six arrays */
}

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(uint64_t n)
{
	vw_test_xorshift(&rng);
	return n ? rng % n : rng;
}

/* Random memberships, shares, requests and energies (the vGPUs within the devices'): always
 * conserved, and the arrays grow and shrink between calls. */
static void test_conservation_property(void **state)
{
	struct vw_gpu_attr_device dev[8];
	struct vw_gpu_attr_vgpu vgpus[6];
	struct vw_gpu_attr_use uses[40];
	int32_t cont_pod[12];
	uint64_t pod_gpus[6];
	struct vw_gpu_attribution a = { 0 };

	(void)state;
	for (int round = 0; round < 2000; round++) {
		struct vw_gpu_attr_in in = { .devices = dev, .n_devices = rnd(9), .vgpus = vgpus,
					     .n_vgpus = rnd(7), .uses = uses, .n_uses = rnd(41),
					     .cont_pod = cont_pod, .n_conts = rnd(13),
					     .pod_gpus = pod_gpus, .n_pods = rnd(7),
					     .n_vms = rnd(4) };
		uint64_t idle = 0, active = 0;

		for (size_t i = 0; i < in.n_devices; i++) {
			dev[i] = (struct vw_gpu_attr_device){ rnd(1ULL << 40), rnd(1ULL << 40) };
			idle += dev[i].idle_uj, active += dev[i].active_uj;
		}
		for (size_t i = 0; i < in.n_vgpus; i++) { /* within what is left */
			vgpus[i] = (struct vw_gpu_attr_vgpu){
				.vm = in.n_vms && rnd(4) ? (int32_t)rnd(in.n_vms) : NONE,
				.idle_uj = rnd(idle / 8 + 1), .active_uj = rnd(active / 8 + 1) };
			idle -= vgpus[i].idle_uj, active -= vgpus[i].active_uj;
		}
		for (size_t i = 0; i < in.n_uses; i++)
			uses[i] = (struct vw_gpu_attr_use){
				.active_uj = rnd(3) ? rnd(1ULL << 38) : 0, .known = rnd(4),
				.container = in.n_conts && rnd(3) ? (int32_t)rnd(in.n_conts) : NONE };
		for (size_t c = 0; c < in.n_conts; c++)
			cont_pod[c] = in.n_pods && rnd(2) ? (int32_t)rnd(in.n_pods) : NONE;
		for (size_t p = 0; p < 6; p++)
			pod_gpus[p] = rnd(2) ? rnd(5) : 0;
		run(&a, &in);
	}
	vw_gpu_attribution_release(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_example),
		cmocka_unit_test(test_cut_in_order),
		cmocka_unit_test(test_over_commit_and_no_device),
		cmocka_unit_test(test_bad_indices),
		cmocka_unit_test(test_out_of_memory),
		cmocka_unit_test(test_conservation_property),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

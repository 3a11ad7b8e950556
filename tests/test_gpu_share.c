/* SPDX-License-Identifier: Apache-2.0 */
/* One GPU's active energy among its processes (gpu_share.h), on fixed numbers, exact; and an
 * interval's processes as gpu.c feeds them (gpu_procs.h), tick by tick. */
#include "vw_test.h"

#include <errno.h>

#include "gpu_procs.h"
#include "gpu_share.h"
#include "macro.h"

static uint64_t sum(const uint64_t *v, size_t n)
{
	uint64_t s = 0;

	for (size_t i = 0; i < n; i++)
		s += v[i];
	return s;
}

/* Two processes sampled 60 % and 20 % of the time: 3 : 1. */
static void test_by_sm_share(void **state)
{
	const struct vw_gpu_proc_use p[] = { { 100, 300, 5 }, { 200, 100, 5 } };
	uint64_t out[2], rest = 9;

	(void)state;
	assert_int_equal(vw_gpu_share(1000000, p, 2, 400, out, &rest), 0);
	assert_int_equal(out[0], 750000);
	assert_int_equal(out[1], 250000);
	assert_int_equal(rest, 0);
}

/* One process alone (exclusive mode or not) takes it all, sampled or only listed. */
static void test_single_process_gets_all(void **state)
{
	const struct vw_gpu_proc_use sampled = { 7, 90, 3 }, listed = { 8, 0, 3 };
	uint64_t out, rest;

	(void)state;
	assert_int_equal(vw_gpu_share(123456789, &sampled, 1, 450, &out, &rest), 0);
	assert_int_equal(out, 123456789);
	assert_int_equal(rest, 0);
	assert_int_equal(vw_gpu_share(123456789, &listed, 1, 0, &out, &rest), 0);
	assert_int_equal(out, 123456789);
	assert_int_equal(rest, 0);
}

/* The samples explain 40 of the device's 80 busy points: half the energy by samples, the
 * other half to the listed processes without samples, by the ticks they were listed in. */
static void test_remainder_to_unsampled(void **state)
{
	const struct vw_gpu_proc_use p[] = {
		{ 1, 40, 5 }, /* sampled */
		{ 2, 0, 3 },  /* listed 3 ticks, no sample */
		{ 3, 0, 1 },  /* listed 1 tick */
	};
	uint64_t out[3], rest;

	(void)state;
	assert_int_equal(vw_gpu_share(1000, p, 3, 80, out, &rest), 0);
	assert_int_equal(out[0], 500);
	assert_int_equal(out[1], 375);
	assert_int_equal(out[2], 125);
	assert_int_equal(rest, 0);
	/* Device utilization unknown, or no more than the samples: all to the sampled. */
	assert_int_equal(vw_gpu_share(1000, p, 3, 0, out, &rest), 0);
	assert_int_equal(out[0], 1000);
	assert_int_equal(out[1] + out[2] + rest, 0);
	assert_int_equal(vw_gpu_share(1000, p, 3, 30, out, &rest), 0);
	assert_int_equal(out[0], 1000);
}

/* Nobody there: the node keeps it, explicitly. */
static void test_no_process(void **state)
{
	const struct vw_gpu_proc_use idle = { 5, 0, 0 };
	uint64_t out = 77, rest = 0;

	(void)state;
	assert_int_equal(vw_gpu_share(999, NULL, 0, 100, NULL, &rest), 0);
	assert_int_equal(rest, 999);
	assert_int_equal(vw_gpu_share(999, &idle, 1, 100, &out, &rest), 0);
	assert_int_equal(out, 0);
	assert_int_equal(rest, 999);
	assert_int_equal(vw_gpu_share(1, NULL, 1, 0, &out, &rest), -EINVAL);
	assert_int_equal(vw_gpu_share(1, &idle, 1, 0, &out, NULL), -EINVAL);
}

/* Random cases: exact conservation, and no process without use gets anything. */
static void test_conserved(void **state)
{
	uint64_t seed = 1414;

	(void)state;
	for (int c = 0; c < 2000; c++) {
		struct vw_gpu_proc_use p[8];
		uint64_t out[8], rest, total = vw_test_rng(&seed) >> (vw_test_rng(&seed) % 64);
		size_t n = vw_test_rng(&seed) % 9;
		uint64_t busy = vw_test_rng(&seed) % 900;

		for (size_t i = 0; i < n; i++)
			p[i] = (struct vw_gpu_proc_use){
				.pid = (uint32_t)i + 1,
				.sm_sum = vw_test_rng(&seed) % 3 ? 0 : vw_test_rng(&seed) % 400,
				.ticks = vw_test_rng(&seed) % 6,
			};
		assert_int_equal(vw_gpu_share(total, p, n, busy, out, &rest), 0);
		assert_true(sum(out, n) + rest == total);
		for (size_t i = 0; i < n; i++)
			if (!p[i].sm_sum && !p[i].ticks)
				assert_int_equal(out[i], 0);
	}
}

static struct vw_gpu_procs procs; /* large: not on the stack */

/* One interval of `ticks` ticks at `busy` % device utilization: processes 100 and 200 listed
 * each tick; the driver brings a sample only at the interval's first tick (where sampled), of
 * a % and b % SM (0: none for that process); closed over 1,000,000 µJ of active energy. Each
 * one's share in *ra and *rb. */
static void interval(unsigned ticks, unsigned busy, unsigned a, unsigned b, bool sampled,
		     uint64_t *ra, uint64_t *rb)
{
	uint64_t rest;

	for (unsigned t = 0; t < ticks; t++) {
		bool now = sampled && t == 0;
		const struct vw_gpu_proc_sample s[] = {
			{ .pid = 100, .sm_util = now ? a : 0, .sampled = now && a, .running = true },
			{ .pid = 200, .sm_util = now ? b : 0, .sampled = now && b, .running = true },
		};

		vw_gpu_procs_add(&procs, s, 2);
	}
	rest = vw_gpu_procs_close(&procs, 1000000, 0, (uint64_t)busy * ticks);
	*ra = *rb = 0;
	for (size_t k = 0; k < procs.n_last; k++) {
		if (procs.last[k].pid == 100)
			*ra = procs.last[k].active_uj;
		if (procs.last[k].pid == 200)
			*rb = procs.last[k].active_uj;
	}
	assert_int_equal(*ra + *rb + rest, 1000000);
}

/*
 * A driver that samples process utilization less often than the interval (NVML: every 1/6 s to
 * 1 s by product): an interval without any sample while both processes run keeps their last
 * sampled split (60 : 25 here), as bench/truth found with the fake NVML sampling every 2 s
 * against 1 s intervals (A -15 %, B +35 % when such intervals split evenly by listing time);
 * for VW_GPU_CARRY_INTERVALS intervals in a row, then by listing time again.
 */
static void test_interval_without_samples(void **state)
{
	uint64_t a, b;

	(void)state;
	procs = (struct vw_gpu_procs){ 0 };
	interval(5, 85, 60, 25, true, &a, &b);
	assert_int_equal(a, 1000000 * 60 / 85);
	assert_int_equal(b, 1000000 - 1000000 * 60 / 85);
	for (unsigned i = 0; i < VW_GPU_CARRY_INTERVALS; i++) {
		uint64_t a2, b2;

		interval(5, 85, 0, 0, false, &a2, &b2);
		assert_int_equal(a2, a); /* not 500000 each */
		assert_int_equal(b2, b);
	}
	interval(5, 85, 0, 0, false, &a, &b); /* too long without: listing time */
	assert_int_equal(a, 500000);
	assert_int_equal(b, 500000);
	interval(5, 85, 60, 25, true, &a, &b); /* sampled again */
	interval(5, 85, 0, 0, false, &a, &b);
	assert_int_equal(a, 1000000 * 60 / 85);
}

/*
 * The same driver, one value per process per call averaged since the last sample: a sample
 * after four calls without one stands for five ticks. Process 100 runs at 60 % SM on a device
 * 60 % busy; process 200 only holds a context (listed, never sampled). 100 takes it all: its
 * sample times the five ticks explains the device's busy time. Counted once per call it
 * explained 60 of 300 and 200 took 80 %.
 */
static void test_sparse_samples_weighted(void **state)
{
	uint64_t a, b;

	(void)state;
	procs = (struct vw_gpu_procs){ 0 };
	interval(5, 60, 60, 0, true, &a, &b); /* the first sample: no span known before it */
	for (unsigned i = 0; i < 3; i++) {
		interval(5, 60, 60, 0, true, &a, &b);
		assert_int_equal(a, 1000000);
		assert_int_equal(b, 0);
	}
	/* Busier than the samples explain (85 % against 60 %): 200 takes the unexplained 25. */
	interval(5, 85, 60, 0, true, &a, &b);
	assert_int_equal(a, 1000000 * 60 / 85);
	assert_int_equal(b, 1000000 - 1000000 * 60 / 85);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_by_sm_share),
		cmocka_unit_test(test_single_process_gets_all),
		cmocka_unit_test(test_remainder_to_unsampled),
		cmocka_unit_test(test_no_process),
		cmocka_unit_test(test_conserved),
		cmocka_unit_test(test_interval_without_samples),
		cmocka_unit_test(test_sparse_samples_weighted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * --cpu.ran-walk=auto's decision (shared/engine/cpu_ranwalk.c), pure: on when the full walks
 * of a window would cost at least twice the switch marker, off when less than the marker,
 * unchanged between (no flapping); one decision every VW_RANWALK_EVERY reads; the counts
 * parsed from /proc/stat and /proc/loadavg as the kernel writes them. The attach and detach
 * that follow, on the real kernel, are test_cpu_ranwalk's auto_* cases.
 */
#include "vw_test.h"

#include <errno.h>
#include <string.h>

#include "cpu_ranwalk.h"

static const struct vw_ranwalk_costs cost = { .task_ns = 220, .switch_ns = 45 };

static bool decide(bool on, uint64_t task_reads, uint64_t switches)
{
	struct vw_ranwalk_window w = { .task_reads = task_reads, .switches = switches };

	return vw_ranwalk_decide(&cost, on, &w);
}

/* With the default costs, the windows bench/daemon_cpu.sh measured on the 2-vCPU build
 * machine (bench/README.md "2026-11-28: autowalk"), 5 reads of 1 s: 10,130 tasks and 2,145
 * switches a second: on; 1,150 tasks and 3,400 switches a second: off; 10,000 tasks and 12,000
 * switches a second (a busy node, the marks as dear as the walks): off. */
static void test_decide_bench_cases(void **state)
{
	const struct vw_ranwalk_costs def = { VW_RANWALK_TASK_NS, VW_RANWALK_SWITCH_NS };
	struct vw_ranwalk_window w10k = { 10130 * 5, 2145 * 5 }, w1k = { 1150 * 5, 3400 * 5 },
				 busy = { 10000 * 5, 12000 * 5 };

	(void)state;
	assert_true(vw_ranwalk_decide(&def, false, &w10k));
	assert_true(vw_ranwalk_decide(&def, true, &w10k));
	assert_false(vw_ranwalk_decide(&def, false, &w1k));
	assert_false(vw_ranwalk_decide(&def, true, &w1k));
	assert_false(vw_ranwalk_decide(&def, false, &busy));
	assert_false(vw_ranwalk_decide(&def, true, &busy));
	assert_false(decide(false, 0, 0)); /* nothing seen: nothing attached */
	assert_true(decide(false, 1, 0));  /* no switch at all: the marker costs nothing */
}

/* The hysteresis band: walks between one and two markers' cost keep the mode. */
static void test_decide_hysteresis(void **state)
{
	uint64_t tasks = 9000; /* 1.98 ms of walks */

	(void)state;
	/* marker 1.98 ms / 2 = 0.99 ms: 22,000 switches */
	assert_true(decide(false, tasks, 22000));
	assert_false(decide(false, tasks, 22001));
	/* in the band: off stays off, on stays on */
	assert_false(decide(false, tasks, 30000));
	assert_true(decide(true, tasks, 30000));
	/* the marker costs as much as the walks: still on; more: off */
	assert_true(decide(true, tasks, 44000));
	assert_false(decide(true, tasks, 44001));
	/* huge counts saturate, they do not wrap into the other answer */
	assert_false(decide(true, 1, UINT64_MAX));
	assert_true(decide(false, UINT64_MAX, 1));
}

/* With the default costs, 10,000 tasks: switches a window for walks 1.33 x the marker. */
#define BAND ((uint64_t)10000 * VW_RANWALK_EVERY * VW_RANWALK_TASK_NS / VW_RANWALK_SWITCH_NS * 3 / 4)

/* A flat mix in the band, window after window: one mode, never a switch back and forth. */
static void test_auto_no_flap(void **state)
{
	struct vw_ranwalk_auto a;
	uint64_t ctxt = 1000000;
	unsigned changes = 0;
	bool was;

	(void)state;
	vw_ranwalk_auto_init(&a);
	assert_false(a.on);
	assert_true(vw_ranwalk_auto_tick(&a)); /* the first read primes */
	assert_false(vw_ranwalk_auto_end(&a, ctxt, 10000));
	assert_int_equal(a.windows, 0);
	/* many sleepers, few switches: on after one window of VW_RANWALK_EVERY reads */
	for (unsigned i = 1; i < VW_RANWALK_EVERY; i++)
		assert_false(vw_ranwalk_auto_tick(&a));
	assert_true(vw_ranwalk_auto_tick(&a));
	ctxt += 5000;
	assert_true(vw_ranwalk_auto_end(&a, ctxt, 10000));
	assert_int_equal(a.windows, 1);
	/* the switch rate climbs into the band (walks 1-2 x the marker): stays on */
	was = a.on;
	for (int wdw = 0; wdw < 20; wdw++) {
		for (unsigned i = 0; i < VW_RANWALK_EVERY; i++)
			(void)vw_ranwalk_auto_tick(&a);
		ctxt += BAND + (uint64_t)(wdw % 3) * 100;
		changes += vw_ranwalk_auto_end(&a, ctxt, 10000) != was;
		was = a.on;
	}
	assert_int_equal(changes, 0);
	assert_true(a.on);
	/* a count that went back (another procfs, a reset) decides nothing: it primes again */
	for (unsigned i = 0; i < VW_RANWALK_EVERY; i++)
		(void)vw_ranwalk_auto_tick(&a);
	ctxt = 5;
	assert_true(vw_ranwalk_auto_end(&a, ctxt, 10000));
	/* a storm: off at the next window's end, not before */
	for (unsigned i = 1; i < VW_RANWALK_EVERY; i++)
		assert_false(vw_ranwalk_auto_tick(&a));
	assert_true(vw_ranwalk_auto_tick(&a));
	ctxt += 10000000;
	assert_false(vw_ranwalk_auto_end(&a, ctxt, 10000));
	/* back in the band: stays off */
	for (int wdw = 0; wdw < 20; wdw++) {
		for (unsigned i = 0; i < VW_RANWALK_EVERY; i++)
			(void)vw_ranwalk_auto_tick(&a);
		ctxt += BAND;
		assert_false(vw_ranwalk_auto_end(&a, ctxt, 10000));
	}
	for (unsigned i = 0; i < VW_RANWALK_EVERY; i++)
		(void)vw_ranwalk_auto_tick(&a);
	assert_true(vw_ranwalk_auto_end(&a, ctxt + 1, 10000)); /* one switch in 5 reads: on */
}

/* The tasks of a window are those of the reads it had, not of VW_RANWALK_EVERY. */
static void test_auto_counts_reads(void **state)
{
	struct vw_ranwalk_auto a;
	uint64_t on, off;

	(void)state;
	vw_ranwalk_auto_init(&a);
	(void)vw_ranwalk_auto_tick(&a);
	(void)vw_ranwalk_auto_end(&a, 0, 0);
	for (unsigned i = 0; i < VW_RANWALK_EVERY; i++)
		(void)vw_ranwalk_auto_tick(&a);
	/* 5 reads x 1,000 tasks: walks of 5,000 tasks; on at half their cost in marks */
	on = (uint64_t)VW_RANWALK_EVERY * 1000 * VW_RANWALK_TASK_NS / 2 / VW_RANWALK_SWITCH_NS;
	off = (uint64_t)VW_RANWALK_EVERY * 1000 * VW_RANWALK_TASK_NS / VW_RANWALK_SWITCH_NS + 1;
	assert_true(vw_ranwalk_auto_end(&a, on, 1000));
	for (unsigned i = 0; i < VW_RANWALK_EVERY; i++)
		(void)vw_ranwalk_auto_tick(&a);
	/* off: the marks cost more than the walks (by one switch) */
	assert_false(vw_ranwalk_auto_end(&a, on + off, 1000));
}

static void test_parse(void **state)
{
	/* /proc/stat's shape (6.x): cpu lines, a long intr line, then ctxt */
	static const char stat[] = "cpu  4705 356 584 3699176 23060 0 277 0 0 0\n"
				   "cpu0 1393 280 234 1846556 12356 0 129 0 0 0\n"
				   "intr 1462898 0 9 0 0 0 0 3 0 1 0 0 0 0 0 0 0 0 0 0\n"
				   "ctxt 1990473\n"
				   "btime 1062191376\n"
				   "processes 2915\n"
				   "procs_running 1\n";
	static const char noctxt[] = "cpu  1 2 3\nctxtx 5\nbtime 1\n";
	uint64_t v = 0;

	(void)state;
	assert_int_equal(vw_ranwalk_parse_ctxt(stat, strlen(stat), &v), 0);
	assert_int_equal(v, 1990473);
	assert_int_equal(vw_ranwalk_parse_ctxt(noctxt, strlen(noctxt), &v), -ENOENT);
	assert_int_equal(vw_ranwalk_parse_ctxt("ctxt -3\n", 8, &v), -EINVAL);
	assert_int_equal(vw_ranwalk_parse_ctxt("ctxt 77", 7, &v), 0); /* no newline */
	assert_int_equal(v, 77);
	assert_int_equal(vw_ranwalk_parse_tasks("0.20 0.18 0.12 1/10234 12345\n", &v), 0);
	assert_int_equal(v, 10234);
	assert_int_equal(vw_ranwalk_parse_tasks("0.20 0.18 0.12 1-80 12345\n", &v), -EINVAL);
	assert_int_equal(vw_ranwalk_parse_tasks("0.20 0.18\n", &v), -EINVAL);
	assert_int_equal(vw_ranwalk_parse_tasks("0.20 0.18 0.12 1/ 5\n", &v), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decide_bench_cases),
		cmocka_unit_test(test_decide_hysteresis),
		cmocka_unit_test(test_auto_no_flap),
		cmocka_unit_test(test_auto_counts_reads),
		cmocka_unit_test(test_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

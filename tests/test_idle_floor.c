/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The GPU idle baseline (idle_floor.h) on fixed series: the lowest sustained power at low
 * utilization, following the device down and back up, deaf to lone dips and to busy spans.
 */
#include "vw_test.h"

#include <errno.h>

#include "idle.h"
#include "idle_floor.h"
#include "macro.h"

#define LOW 0.02  /* utilization of an idle interval */
#define BUSY 0.90 /* of a busy one */

static void floor_freep(struct vw_idle_floor **f)
{
	vw_idle_floor_free(*f);
}
#define _cleanup_floor_ _cleanup_(floor_freep)

static struct vw_idle_floor *floor_new(size_t window, size_t sustain)
{
	struct vw_idle_floor *f = vw_idle_floor_new(window, sustain, 0.10);

	assert_non_null(f);
	return f;
}

static double floor_of(const struct vw_idle_floor *f)
{
	double w = -1;

	assert_int_equal(vw_idle_floor_get(f, &w), 0);
	return w;
}

static void feed(struct vw_idle_floor *f, int n, double watts, double util)
{
	for (int i = 0; i < n; i++)
		vw_idle_floor_add(f, watts, util);
}

static void test_bad_arguments(void **state)
{
	(void)state;
	errno = 0;
	assert_null(vw_idle_floor_new(0, 1, 0.1));
	assert_int_equal(errno, EINVAL);
	assert_null(vw_idle_floor_new(10, 0, 0.1));
	assert_null(vw_idle_floor_new(10, 11, 0.1));
	assert_null(vw_idle_floor_new(VW_IDLE_MAX_WINDOW + 1, 3, 0.1));
	assert_null(vw_idle_floor_new(1000, VW_IDLE_FLOOR_MAX_SUSTAIN + 1, 0.1));
	assert_null(vw_idle_floor_new(10, 3, -0.1));
	assert_null(vw_idle_floor_new(10, 3, 1.5));
	assert_null(vw_idle_floor_new(10, 3, NAN));
	vw_idle_floor_free(NULL);
	vw_idle_floor_add(NULL, 1, 0);
	assert_int_equal(vw_idle_floor_get(NULL, &(double){ 0 }), -EINVAL);
}

/* Nothing before `sustain` qualifying intervals in a row. */
static void test_needs_a_sustained_run(void **state)
{
	_cleanup_floor_ struct vw_idle_floor *f = floor_new(20, 3);
	double w = 7;

	(void)state;
	assert_int_equal(vw_idle_floor_get(f, &w), -EAGAIN);
	feed(f, 2, 50, LOW);
	vw_idle_floor_add(f, 300, BUSY);
	feed(f, 2, 50, LOW);
	assert_int_equal(vw_idle_floor_get(f, &w), -EAGAIN);
	assert_true(w == 7); /* untouched */
	vw_idle_floor_add(f, 52, LOW);
	assert_double_near(floor_of(f), 52, 0); /* the run's highest: 50, 50, 52 */
}

/* A lone dip between two readings is no sustained level; neither is a busy interval. */
static void test_dips_and_busy_spans_ignored(void **state)
{
	_cleanup_floor_ struct vw_idle_floor *f = floor_new(50, 3);

	(void)state;
	feed(f, 5, 60, LOW);
	vw_idle_floor_add(f, 20, LOW); /* one interval at 20 W */
	feed(f, 5, 60, LOW);
	vw_idle_floor_add(f, 25, BUSY); /* low power but busy: not idle */
	vw_idle_floor_add(f, 25, BUSY);
	vw_idle_floor_add(f, 25, BUSY);
	feed(f, 10, 250, BUSY);
	assert_double_near(floor_of(f), 60, 0);
}

/* The idle power drops (clocks settle, a fan slows): the baseline follows after `sustain`. */
static void test_follows_a_drop(void **state)
{
	_cleanup_floor_ struct vw_idle_floor *f = floor_new(100, 3);

	(void)state;
	for (int i = 0; i < 10; i++) {
		feed(f, 4, 55, LOW);
		feed(f, 4, 280, BUSY);
	}
	assert_double_near(floor_of(f), 55, 0);
	feed(f, 2, 38, LOW);
	assert_double_near(floor_of(f), 55, 0);
	vw_idle_floor_add(f, 38, LOW);
	assert_double_near(floor_of(f), 38, 0);
	feed(f, 30, 280, BUSY); /* busy for a while: the baseline stays */
	assert_double_near(floor_of(f), 38, 0);
}

/* The idle power rises (a driver reload, persistence mode, a hot room): the lower runs age out
 * of the window and the baseline comes back up to what the device sustains now. */
static void test_comes_back_up(void **state)
{
	_cleanup_floor_ struct vw_idle_floor *f = floor_new(40, 3);

	(void)state;
	feed(f, 10, 30, LOW);
	assert_double_near(floor_of(f), 30, 0);
	for (int i = 0; i < 5; i++) {
		feed(f, 4, 45, LOW);
		feed(f, 4, 300, BUSY);
	}
	assert_double_near(floor_of(f), 45, 0); /* 40 intervals on: the 30 W run is gone */
	/* Busy all along for a whole window: the last baseline is kept, not forgotten. */
	feed(f, 80, 300, BUSY);
	assert_double_near(floor_of(f), 45, 0);
}

/* No utilization reported (NaN): every interval qualifies; the lowest sustained power wins. */
static void test_unknown_utilization(void **state)
{
	_cleanup_floor_ struct vw_idle_floor *f = floor_new(30, 3);

	(void)state;
	feed(f, 3, 200, NAN);
	assert_double_near(floor_of(f), 200, 0); /* started under load: too high at first */
	feed(f, 3, 41, NAN);
	assert_double_near(floor_of(f), 41, 0);
	vw_idle_floor_add(f, NAN, NAN);  /* not a reading: breaks the run */
	vw_idle_floor_add(f, -5, NAN);   /* nor is a negative power */
	feed(f, 2, 10, NAN);
	assert_double_near(floor_of(f), 41, 0);
}

/* With noise, the baseline stays within the noise of the true idle power. */
static void test_noisy_idle(void **state)
{
	_cleanup_floor_ struct vw_idle_floor *f = floor_new(720, 3);
	uint64_t seed = 14;

	(void)state;
	for (int i = 0; i < 720; i++) {
		bool busy = (i / 7) % 3 == 0;
		double w = busy ? 250 : 62;

		vw_idle_floor_add(f, w + vw_test_rng_double(&seed, -1.5, 1.5),
				  busy ? BUSY : LOW);
	}
	assert_double_near(floor_of(f), 62, 1.5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_arguments),
		cmocka_unit_test(test_needs_a_sustained_run),
		cmocka_unit_test(test_dips_and_busy_spans_ignored),
		cmocka_unit_test(test_follows_a_drop),
		cmocka_unit_test(test_comes_back_up),
		cmocka_unit_test(test_unknown_utilization),
		cmocka_unit_test(test_noisy_idle),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Power integrated into µJ on the caller's clock (integrator.h): exact, carried, no made-up spans. */
#include "vw_test.h"

#include <math.h>

#include "integrator.h"
#include "macro.h"

#define SEC VW_NSEC_PER_SEC
#define WATT 1000000ULL /* µW */

static void test_first_reading_sets_the_time(void **state)
{
	struct vw_power_integrator in = { 0 };

	(void)state;
	assert_int_equal(vw_power_integrate(&in, 100 * WATT, 5 * SEC), 0);
	assert_int_equal(vw_power_integrate(&in, 100 * WATT, 7 * SEC), 200 * WATT);
	assert_int_equal(in.energy_uj, 200000000);
}

/* A fresh integrator fed uw at 0, then steps times dt_ns apart (the first only sets the time). */
static struct vw_power_integrator integrate_steps(uint64_t uw, uint64_t dt_ns, int steps)
{
	struct vw_power_integrator in = { 0 };
	uint64_t t = 0;

	vw_power_integrate(&in, uw, t);
	for (int i = 0; i < steps; i++) {
		t += dt_ns;
		vw_power_integrate(&in, uw, t);
	}
	return in;
}

/* 1 µW for 1 ms, a thousand times: 1 µJ, nothing lost to rounding. */
static void test_carry_is_exact(void **state)
{
	struct vw_power_integrator in;

	(void)state;
	in = integrate_steps(1, 1000000, 1000);
	assert_int_equal(in.energy_uj, 1);
	assert_int_equal(in.rem_nuj, 0);
	/* 333.333333 W for 9 steps of 0.333333333 s, summed in steps as in one product. */
	in = integrate_steps(333333333, 333333333, 9);
	/* 333333333 µW x 2999999997 ns = 999999998000000001 (1e-9 µJ) */
	assert_int_equal(in.energy_uj, 999999998);
	assert_int_equal(in.rem_nuj, 1);
}

/* A failed read: the span until the next good reading is not counted. */
static void test_break_skips_the_span(void **state)
{
	struct vw_power_integrator in = { 0 };

	(void)state;
	vw_power_integrate(&in, 50 * WATT, 0);
	vw_power_integrate(&in, 50 * WATT, 1 * SEC);
	vw_power_integrator_break(&in);
	assert_int_equal(vw_power_integrate(&in, 50 * WATT, 4 * SEC), 50 * WATT);
	assert_int_equal(vw_power_integrate(&in, 50 * WATT, 5 * SEC), 100 * WATT);
}

/* A clock that steps back counts nothing and starts over; huge spans saturate. */
static void test_clock_back_and_saturation(void **state)
{
	struct vw_power_integrator in = { 0 };

	(void)state;
	vw_power_integrate(&in, 10 * WATT, 10 * SEC);
	assert_int_equal(vw_power_integrate(&in, 10 * WATT, 9 * SEC), 0);
	assert_int_equal(vw_power_integrate(&in, 10 * WATT, 10 * SEC), 10 * WATT);
	in.energy_uj = UINT64_MAX - 5;
	assert_true(vw_power_integrate(&in, UINT64_MAX, UINT64_MAX) == UINT64_MAX);
	assert_true(vw_power_integrate(&in, 1, UINT64_MAX) == UINT64_MAX);
}

/* The estimator's spans: watts as whole µW (nothing for NaN or below zero), integrated over each
 * span with the carry, so a million 3 ns spans give what one 3 ms span does. */
static void test_spans_and_watts(void **state)
{
	struct vw_power_integrator fine = { 0 }, coarse = { 0 };

	(void)state;
	assert_int_equal(vw_power_uw(12.3456789), 12345679);
	assert_int_equal(vw_power_uw(-1.0), 0);
	assert_int_equal(vw_power_uw(NAN), 0);
	assert_int_equal(vw_power_uw(1e300), UINT64_MAX);
	for (int i = 0; i < 1000000; i++)
		(void)vw_power_integrate_span(&fine, vw_power_uw(42.5), 3);
	assert_int_equal(vw_power_integrate_span(&coarse, vw_power_uw(42.5), 3000000), 127500);
	assert_int_equal(fine.energy_uj, coarse.energy_uj);
	assert_int_equal(vw_power_integrate_span(&coarse, 0, VW_NSEC_PER_SEC), 127500);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_reading_sets_the_time),
		cmocka_unit_test(test_carry_is_exact),
		cmocka_unit_test(test_break_skips_the_span),
		cmocka_unit_test(test_clock_back_and_saturation),
		cmocka_unit_test(test_spans_and_watts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

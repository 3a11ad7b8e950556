/* SPDX-License-Identifier: Apache-2.0 */
#include "vw_test.h"

#include "energy.h"
#include "macro.h"

#define MAX_RANGE 262143328850ULL /* a real package-0 max_energy_range_uj */
#define SEC VW_NSEC_PER_SEC
#define WATT 1000000ULL /* µW */

struct delta_case {
	uint64_t prev, cur, max;
	bool ok;
	uint64_t delta;
};

static void test_delta_table(void **state)
{
	static const struct delta_case cases[] = {
		{ 100, 350, MAX_RANGE, true, 250 },                    /* no wrap */
		{ MAX_RANGE - 1000, 500, MAX_RANGE, true, 1500 },      /* wrap, +1 pinned */
		{ MAX_RANGE - 1, 0, MAX_RANGE, true, 1 },              /* wrap to zero */
		{ MAX_RANGE, 0, MAX_RANGE, true, 0 },                  /* wrap from max itself */
		{ 0, MAX_RANGE, MAX_RANGE, true, MAX_RANGE },          /* whole range, no wrap */
		{ 777, 777, MAX_RANGE, true, 0 },                      /* equal */
		{ 777, 777, 0, true, 0 },                              /* equal, max unknown */
		{ 5, 9, 0, true, 4 },                                  /* increase, max unknown */
		{ 9, 5, 0, false, 0 },                                 /* decrease, max unknown */
		{ 100, MAX_RANGE + 1, MAX_RANGE, false, 0 },           /* raw above max */
		{ MAX_RANGE + 1, 100, MAX_RANGE, false, 0 },           /* prev above max */
		{ 0, UINT64_MAX, 0, true, UINT64_MAX },                /* widest, max unknown */
		{ UINT64_MAX, 0, UINT64_MAX, true, 0 },                /* 64-bit edge */
		{ UINT64_MAX - 1, 1, UINT64_MAX, true, 2 },            /* wraps at 2^64 - 1 */
		{ 1, UINT64_MAX - 1, UINT64_MAX, true, UINT64_MAX - 2 }, /* no wrap at the edge */
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		const struct delta_case *c = &cases[i];
		uint64_t d = 424242;
		bool ok = vw_energy_delta(c->prev, c->cur, c->max, &d);

		if (ok != c->ok)
			fail_msg("case %zu: ok = %d, expected %d", i, ok, c->ok);
		if (ok && d != c->delta)
			fail_msg("case %zu: delta = %llu, expected %llu", i, (unsigned long long)d,
				 (unsigned long long)c->delta);
		if (!ok)
			assert_true(d == 424242); /* untouched on failure */
	}
}

/* c with its ceiling (µW) and the first reading, raw µJ at ns: the baseline. */
static void counter_start(struct vw_energy_counter *c, uint64_t max_range_uj, uint64_t max_uw,
			  uint64_t raw_uj, uint64_t ns)
{
	vw_energy_counter_init(c, max_range_uj, max_uw);
	assert_int_equal(vw_energy_counter_update(c, raw_uj, ns, NULL), VW_ENERGY_BASELINE);
}

static void test_baseline_then_growth(void **state)
{
	struct vw_energy_counter c;
	uint64_t d = 99;

	(void)state;
	vw_energy_counter_init(&c, MAX_RANGE, 0);
	assert_false(c.primed);
	assert_int_equal(vw_energy_counter_update(&c, 5000000, 1 * SEC, &d), VW_ENERGY_BASELINE);
	assert_int_equal(d, 0);
	assert_int_equal(c.total_uj, 0);
	assert_true(c.primed);
	assert_int_equal(vw_energy_counter_update(&c, 6000000, 2 * SEC, &d), VW_ENERGY_OK);
	assert_int_equal(d, 1000000);
	assert_int_equal(vw_energy_counter_update(&c, 6000000, 3 * SEC, &d), VW_ENERGY_OK);
	assert_int_equal(d, 0);
	assert_int_equal(vw_energy_counter_update(&c, 8500000, 4 * SEC, NULL), VW_ENERGY_OK);
	assert_int_equal(c.total_uj, 3500000);
	assert_int_equal(c.last_raw_uj, 8500000);
	assert_int_equal(c.last_ns, 4 * SEC);
	assert_int_equal(c.gaps, 0);
	assert_int_equal(c.wraps, 0);
}

static void test_wrap(void **state)
{
	struct vw_energy_counter c;
	uint64_t d;

	(void)state;
	counter_start(&c, MAX_RANGE, 300 * WATT, MAX_RANGE - 1000, 10 * SEC);
	assert_int_equal(vw_energy_counter_update(&c, 500, 11 * SEC, &d), VW_ENERGY_WRAPPED);
	assert_int_equal(d, 1500);
	assert_int_equal(c.total_uj, 1500);
	assert_int_equal(c.wraps, 1);
	assert_int_equal(vw_energy_counter_update(&c, 2500, 12 * SEC, &d), VW_ENERGY_OK);
	assert_int_equal(c.total_uj, 3500);
	assert_int_equal(c.gaps, 0);
}

static void test_decrease_max_unknown_is_gap(void **state)
{
	struct vw_energy_counter c;
	uint64_t d = 7;

	(void)state;
	counter_start(&c, 0, 0, 1000, 1 * SEC);
	vw_energy_counter_update(&c, 3000, 2 * SEC, NULL);
	assert_int_equal(vw_energy_counter_update(&c, 200, 3 * SEC, &d), VW_ENERGY_GAP);
	assert_int_equal(d, 0);
	assert_int_equal(c.total_uj, 2000);
	assert_int_equal(c.gaps, 1);
	assert_int_equal(c.wraps, 0);
	/* The gap's reading is the new baseline. */
	assert_int_equal(vw_energy_counter_update(&c, 700, 4 * SEC, &d), VW_ENERGY_OK);
	assert_int_equal(d, 500);
	assert_int_equal(c.total_uj, 2500);
}

static void test_long_elapsed_is_gap(void **state)
{
	struct vw_energy_counter c;
	/* 262143 J at 300 W: one wrap every ~874 s. */
	uint64_t wrap_ns = MAX_RANGE * 1000 / 300 + 1;

	(void)state;
	counter_start(&c, MAX_RANGE, 300 * WATT, 1000, 0);
	/* Just short of a whole range at the ceiling: fine, even on a small increase. */
	assert_int_equal(vw_energy_counter_update(&c, 2000, wrap_ns - 2, NULL), VW_ENERGY_OK);
	/* A clock jump of ~14.6 min: at 300 W the meter could have gone round once... */
	counter_start(&c, MAX_RANGE, 300 * WATT, 1000, 0);
	assert_int_equal(vw_energy_counter_update(&c, 2000, wrap_ns, NULL), VW_ENERGY_GAP);
	assert_int_equal(c.total_uj, 0);
	assert_int_equal(c.gaps, 1);
	/* ...then normal service from the new baseline. */
	assert_int_equal(vw_energy_counter_update(&c, 3000, wrap_ns + SEC, NULL), VW_ENERGY_OK);
	assert_int_equal(c.total_uj, 1000);
	/* The boundary: 300 J range at 300 W is exactly one second; a whole second is a gap. */
	counter_start(&c, 300000000, 300 * WATT, 0, 0);
	assert_int_equal(vw_energy_counter_update(&c, 10, SEC - 1, NULL), VW_ENERGY_OK);
	assert_int_equal(c.total_uj, 10);
	counter_start(&c, 300000000, 300 * WATT, 0, 0);
	assert_int_equal(vw_energy_counter_update(&c, 10, SEC, NULL), VW_ENERGY_GAP);
	assert_int_equal(c.total_uj, 0);
}

static void test_implausible_jump_is_gap(void **state)
{
	struct vw_energy_counter c;
	uint64_t d;

	(void)state;
	counter_start(&c, MAX_RANGE, 100 * WATT, 1000000, 1 * SEC);
	/* 100 J in 1 s is exactly the ceiling: accepted. */
	assert_int_equal(vw_energy_counter_update(&c, 101000000, 2 * SEC, &d), VW_ENERGY_OK);
	assert_int_equal(d, 100000000);
	/* One µJ more than 100 W allows. */
	assert_int_equal(vw_energy_counter_update(&c, 201000001, 3 * SEC, &d), VW_ENERGY_GAP);
	assert_int_equal(d, 0);
	/* A junk spike, then back: the way back looks like a wrap of absurd size, also a gap. */
	assert_int_equal(vw_energy_counter_update(&c, 250000000000ULL, 4 * SEC, NULL),
			 VW_ENERGY_GAP);
	assert_int_equal(vw_energy_counter_update(&c, 201500000, 5 * SEC, NULL), VW_ENERGY_GAP);
	assert_int_equal(vw_energy_counter_update(&c, 202000000, 6 * SEC, &d), VW_ENERGY_OK);
	assert_int_equal(d, 500000);
	assert_int_equal(c.total_uj, 100500000);
	assert_int_equal(c.gaps, 3);
	/* Any energy in zero time is implausible with a ceiling; none is fine. */
	assert_int_equal(vw_energy_counter_update(&c, 202000000, 6 * SEC, &d), VW_ENERGY_OK);
	assert_int_equal(vw_energy_counter_update(&c, 202000001, 6 * SEC, &d), VW_ENERGY_GAP);
}

static void test_junk_above_max(void **state)
{
	struct vw_energy_counter c;
	uint64_t d;

	(void)state;
	vw_energy_counter_init(&c, MAX_RANGE, 0);
	/* Junk as the very first reading is no baseline. */
	assert_int_equal(vw_energy_counter_update(&c, UINT64_MAX, 1 * SEC, NULL), VW_ENERGY_GAP);
	assert_false(c.primed);
	assert_int_equal(vw_energy_counter_update(&c, 1000, 2 * SEC, NULL), VW_ENERGY_BASELINE);
	assert_int_equal(vw_energy_counter_update(&c, 2000, 3 * SEC, NULL), VW_ENERGY_OK);
	/* Junk mid-stream: dropped, and the next valid reading is the baseline. */
	assert_int_equal(vw_energy_counter_update(&c, MAX_RANGE + 1, 4 * SEC, &d), VW_ENERGY_GAP);
	assert_int_equal(d, 0);
	assert_int_equal(vw_energy_counter_update(&c, 5000, 5 * SEC, &d), VW_ENERGY_BASELINE);
	assert_int_equal(vw_energy_counter_update(&c, 5500, 6 * SEC, &d), VW_ENERGY_OK);
	assert_int_equal(d, 500);
	assert_int_equal(c.total_uj, 1500);
	assert_int_equal(c.gaps, 2);
	/* max itself is a valid reading. */
	assert_int_equal(vw_energy_counter_update(&c, MAX_RANGE, 7 * SEC, NULL), VW_ENERGY_OK);
}

static void test_clock_backwards_is_gap(void **state)
{
	struct vw_energy_counter c;

	(void)state;
	counter_start(&c, MAX_RANGE, 0, 1000, 10 * SEC);
	assert_int_equal(vw_energy_counter_update(&c, 2000, 9 * SEC, NULL), VW_ENERGY_GAP);
	assert_int_equal(vw_energy_counter_update(&c, 2600, 10 * SEC, NULL), VW_ENERGY_OK);
	assert_int_equal(c.total_uj, 600);
}

static void test_uint64_edges(void **state)
{
	struct vw_energy_counter c;
	uint64_t d;

	(void)state;
	/* A ceiling so high that elapsed x ceiling needs more than 64 bits. */
	counter_start(&c, UINT64_MAX, UINT64_MAX, UINT64_MAX - 10, 0);
	assert_int_equal(vw_energy_counter_update(&c, 5, 1, &d), VW_ENERGY_WRAPPED);
	assert_true(d == 15);
	/* elapsed = 2^64-1 ns at 2^64-1 µW: about 3.4e29 µJ, far beyond any range: a gap. */
	counter_start(&c, MAX_RANGE, UINT64_MAX, 0, 0);
	assert_int_equal(vw_energy_counter_update(&c, 1, UINT64_MAX, NULL), VW_ENERGY_GAP);
	/* A big delta against a small ceiling must not overflow into acceptance. */
	counter_start(&c, 0, 1, 0, 0);
	assert_int_equal(vw_energy_counter_update(&c, UINT64_MAX, UINT64_MAX, NULL),
			 VW_ENERGY_GAP);
	/* The total saturates instead of wrapping. */
	vw_energy_counter_init(&c, 0, 0);
	c.total_uj = UINT64_MAX - 5;
	vw_energy_counter_update(&c, 0, 0, NULL);
	assert_int_equal(vw_energy_counter_update(&c, 100, SEC, &d), VW_ENERGY_OK);
	assert_true(c.total_uj == UINT64_MAX);
	assert_true(vw_energy_add(UINT64_MAX, 1) == UINT64_MAX);
	assert_true(vw_energy_add(1, 2) == 3);
	assert_true(vw_energy_add(UINT64_MAX - 1, 1) == UINT64_MAX);
}

static void test_watts(void **state)
{
	(void)state;
	assert_double_near(vw_energy_watts(1000000, SEC), 1.0, 1e-12);
	assert_double_near(vw_energy_watts(42500000, SEC / 2), 85.0, 1e-9);
	assert_double_near(vw_energy_watts(1500, 11 * SEC - 10 * SEC), 0.0015, 1e-15);
	assert_double_near(vw_energy_watts(0, SEC), 0.0, 0);
	assert_double_near(vw_energy_watts(123, 0), 0.0, 0);
	assert_double_near(vw_energy_watts(UINT64_MAX, 1), 1.8446744073709552e22, 1e7);
}

enum step_kind { STEP_NORMAL, STEP_LONG, STEP_JUNK, STEP_BURST };

/*
 * A meter that wraps at P_RANGE with a ceiling of P_CEIL µW. The reference knows the true
 * energy and what kind of step it generated, never the raw readings, and from that alone says
 * which intervals count: normal ones that follow a valid reading.
 */
#define P_RANGE 500000000ULL /* 500 J: several wraps per run */
#define P_CEIL (100 * WATT)

struct ref {
	uint64_t true_uj, total_uj, gaps, wraps;
	bool prev_valid; /* the last reading was a usable baseline */
};

static enum step_kind pick_step(uint64_t *s, uint64_t *ret_elapsed, uint64_t *ret_energy)
{
	uint64_t roll = vw_test_rng(s) % 100;
	uint64_t elapsed = vw_test_rng_range(s, SEC / 2, 3 * SEC / 2);
	/* Up to 90 W over the interval: always under the ceiling. */
	uint64_t energy = vw_test_rng_range(s, 0, elapsed * 90 / 1000);

	if (roll < 4) { /* long pause: the ceiling could cover a whole range */
		elapsed = vw_test_rng_range(s, P_RANGE * 1000 / 100, 600 * SEC);
		energy = vw_test_rng_range(s, 0, 3 * P_RANGE);
		*ret_elapsed = elapsed;
		*ret_energy = energy;
		return STEP_LONG;
	}
	*ret_elapsed = elapsed;
	if (roll < 8) { /* more than the ceiling allows (below a whole range) */
		*ret_energy = vw_test_rng_range(s, elapsed / 10 + 1, P_RANGE / 2);
		return STEP_BURST;
	}
	*ret_energy = energy;
	return roll < 12 ? STEP_JUNK : STEP_NORMAL;
}

static void ref_step(struct ref *r, enum step_kind k, uint64_t energy)
{
	uint64_t before = r->true_uj / P_RANGE;

	r->true_uj += energy;
	if (k == STEP_NORMAL && r->prev_valid) {
		r->total_uj += energy;
		r->wraps += r->true_uj / P_RANGE != before;
	}
	/* Junk is always a gap; after junk, the next valid reading is a baseline, not a gap. */
	if (k == STEP_JUNK || (k != STEP_NORMAL && r->prev_valid))
		r->gaps++;
	r->prev_valid = k != STEP_JUNK;
}

static void test_property_totals(void **state)
{
	struct vw_energy_counter c;
	struct ref r = { .true_uj = 123456789 };
	uint64_t seed = 0x5eed2465, now = 0, last_total = 0;

	(void)state;
	counter_start(&c, P_RANGE, P_CEIL, r.true_uj % P_RANGE, now);
	r.prev_valid = true;
	for (int i = 0; i < 200000; i++) {
		uint64_t elapsed, energy, raw;
		enum step_kind k = pick_step(&seed, &elapsed, &energy);

		now += elapsed;
		ref_step(&r, k, energy);
		raw = k == STEP_JUNK ? P_RANGE + 1 + vw_test_rng(&seed) % 1000 : r.true_uj % P_RANGE;
		vw_energy_counter_update(&c, raw, now, NULL);
		if (c.total_uj < last_total)
			fail_msg("step %d: total fell from %llu to %llu", i,
				 (unsigned long long)last_total, (unsigned long long)c.total_uj);
		last_total = c.total_uj;
	}
	assert_true(c.total_uj == r.total_uj);
	assert_true(c.gaps == r.gaps);
	assert_true(c.wraps == r.wraps);
	assert_true(r.wraps > 100); /* the run exercised wraps, gaps and both together */
	assert_true(r.gaps > 1000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_delta_table),
		cmocka_unit_test(test_baseline_then_growth),
		cmocka_unit_test(test_wrap),
		cmocka_unit_test(test_decrease_max_unknown_is_gap),
		cmocka_unit_test(test_long_elapsed_is_gap),
		cmocka_unit_test(test_implausible_jump_is_gap),
		cmocka_unit_test(test_junk_above_max),
		cmocka_unit_test(test_clock_backwards_is_gap),
		cmocka_unit_test(test_uint64_edges),
		cmocka_unit_test(test_watts),
		cmocka_unit_test(test_property_totals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
#include "vw_test.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "idle.h"
#include "interval.h"
#include "macro.h"

#define SEC VW_NSEC_PER_SEC

/* n points of watts = idle + slope x usage (+- noise), usage spread over [ulo, uhi]. */
static void feed_line(struct vw_idle_fit *f, uint64_t *seed, int n, double idle, double slope,
		      double ulo, double uhi, double noise)
{
	for (int i = 0; i < n; i++) {
		double u = vw_test_rng_double(seed, ulo, uhi);

		vw_idle_fit_add(f, u, idle + slope * u + vw_test_rng_double(seed, -noise, noise));
	}
}

static void fit_freep(struct vw_idle_fit **f)
{
	vw_idle_fit_free(*f);
}

/* A fit that is freed when f goes out of scope. */
#define _cleanup_fit_ _cleanup_(fit_freep)

static struct vw_idle_fit *fit_new(size_t window, double min_spread)
{
	struct vw_idle_fit *f = vw_idle_fit_new(window, min_spread);

	assert_non_null(f);
	return f;
}

struct point {
	double usage, watts;
};

static void add_points(struct vw_idle_fit *f, const struct point *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		vw_idle_fit_add(f, p[i].usage, p[i].watts);
}

/* ADD_POINTS(f, { usage, watts }, ...): add these points to f in order. */
#define ADD_POINTS(f, ...)                                                                         \
	add_points((f), (const struct point[]){ __VA_ARGS__ },                                     \
		   ARRAY_SIZE(((const struct point[]){ __VA_ARGS__ })))

static double fitted(const struct vw_idle_fit *f)
{
	double w = -123;

	assert_int_equal(vw_idle_fit_get(f, &w), 0);
	return w;
}

static void test_new_rejects_bad_arguments(void **state)
{
	struct vw_idle_fit *f;
	double w;

	(void)state;
	errno = 0;
	assert_null(vw_idle_fit_new(VW_IDLE_MIN_POINTS - 1, 0.05));
	assert_int_equal(errno, EINVAL);
	assert_null(vw_idle_fit_new(VW_IDLE_MAX_WINDOW + 1, 0.05));
	assert_null(vw_idle_fit_new(60, -0.1));
	assert_null(vw_idle_fit_new(60, NAN));
	assert_int_equal(vw_idle_fit_get(NULL, &w), -EINVAL);
	vw_idle_fit_free(NULL);
	vw_idle_fit_add(NULL, 0.5, 10);
	f = vw_idle_fit_new(VW_IDLE_MIN_POINTS, 0);
	assert_non_null(f);
	assert_int_equal(vw_idle_fit_get(f, &w), -EAGAIN);
	vw_idle_fit_free(f);
}

static void test_fit_synthetic(void **state)
{
	_cleanup_fit_ struct vw_idle_fit *f = fit_new(120, 0.05);
	uint64_t seed = 40100;

	(void)state;
	/* Two points are not enough, even with spread. */
	vw_idle_fit_add(f, 0.1, 50);
	vw_idle_fit_add(f, 0.9, 130);
	double w;
	assert_int_equal(vw_idle_fit_get(f, &w), -EAGAIN);
	/* idle 40 W, 100 W more at full load, +-2 W of noise, usage 10..90 %. */
	feed_line(f, &seed, 120, 40, 100, 0.1, 0.9, 2);
	assert_double_near(fitted(f), 40, 1.0);
	/* Noise-free data gives the intercept exactly. */
	feed_line(f, &seed, 120, 40, 100, 0.1, 0.9, 0);
	assert_double_near(fitted(f), 40, 1e-9);
}

static void test_no_spread_keeps_last_good(void **state)
{
	_cleanup_fit_ struct vw_idle_fit *f = fit_new(4, 0.09);
	uint64_t seed = 7;
	double w;

	(void)state;
	/* Steady load: usage stddev ~0.006 < 0.09, nothing to fit yet. */
	feed_line(f, &seed, 4, 40, 100, 0.49, 0.51, 0.5);
	assert_int_equal(vw_idle_fit_get(f, &w), -EAGAIN);
	/* Load varies (usage stddev exactly 0.1): a fit. */
	ADD_POINTS(f, { 0.4, 80 }, { 0.6, 100 }, { 0.4, 80 }, { 0.6, 100 });
	double good = fitted(f);
	assert_double_near(good, 40, 1e-9);
	/*
	 * Steady again, on points far below that line: from the first of them on the window's
	 * stddev is under 0.09 (0.083, 0.071, 0.043, 0), so the last good intercept stays. A
	 * refit through these points would move it.
	 */
	for (int i = 0; i < 4; i++) {
		vw_idle_fit_add(f, 0.5, 60);
		assert_true(fitted(f) == good);
	}
	/* Spread returns: a new fit. */
	ADD_POINTS(f, { 0.2, 40 }, { 0.8, 100 }, { 0.2, 40 }, { 0.8, 100 });
	assert_double_near(fitted(f), 20, 1e-9);
	vw_idle_fit_free(f);

	/* Identical usage everywhere (Sxx = 0) is no spread either, even with min_spread 0. */
	f = fit_new(5, 0);
	for (int i = 0; i < 5; i++)
		vw_idle_fit_add(f, 0.3, 70 + i);
	assert_int_equal(vw_idle_fit_get(f, &w), -EAGAIN);
}

static void test_window_slides_down_and_up(void **state)
{
	_cleanup_fit_ struct vw_idle_fit *f = fit_new(60, 0.05);
	uint64_t seed = 1811;

	(void)state;
	feed_line(f, &seed, 60, 60, 80, 0.05, 0.95, 1);
	assert_double_near(fitted(f), 60, 1.5);
	/* Idle falls (a C-state fix, fans slower): the estimate follows down... */
	feed_line(f, &seed, 60, 30, 80, 0.05, 0.95, 1);
	assert_double_near(fitted(f), 30, 1.5);
	/*
	 * ...and back up after a phase of heavy load, which Kepler v0.7's sticky minimum (#1811)
	 * could never do: its idle only ever went down.
	 */
	feed_line(f, &seed, 60, 50, 80, 0.05, 0.95, 1);
	assert_double_near(fitted(f), 50, 1.5);
	/* Half a window of new points moves it part of the way. */
	feed_line(f, &seed, 30, 20, 80, 0.05, 0.95, 0);
	double mid = fitted(f);
	assert_true(mid > 20 && mid < 50);
}

static void test_negative_slope_rejected(void **state)
{
	_cleanup_fit_ struct vw_idle_fit *f = fit_new(10, 0.05);
	uint64_t seed = 99;
	double w;

	(void)state;
	/* Power falling with load never yields a fit. */
	feed_line(f, &seed, 10, 100, -50, 0.1, 0.9, 0);
	assert_int_equal(vw_idle_fit_get(f, &w), -EAGAIN);
	vw_idle_fit_free(f);

	/* After a good fit (40 W + 50 W x u), every window below slopes down: 40 stays. */
	f = fit_new(3, 0.05);
	ADD_POINTS(f, { 0.1, 45 }, { 0.5, 65 }, { 0.9, 85 });
	assert_double_near(fitted(f), 40, 1e-9);
	vw_idle_fit_add(f, 0.1, 200);
	assert_double_near(fitted(f), 40, 1e-9);
	vw_idle_fit_add(f, 0.9, 10);
	assert_double_near(fitted(f), 40, 1e-9);
	vw_idle_fit_add(f, 0.5, 100);
	assert_double_near(fitted(f), 40, 1e-9);
	vw_idle_fit_free(f);

	/* A flat line (slope 0) is fine: idle is all there is. */
	f = fit_new(3, 0.05);
	ADD_POINTS(f, { 0.1, 42 }, { 0.5, 42 }, { 0.9, 42 });
	assert_double_near(fitted(f), 42, 1e-9);
}

static void test_intercept_clamped(void **state)
{
	_cleanup_fit_ struct vw_idle_fit *f = fit_new(4, 0.05);

	(void)state;
	/* Line through (0.2, 10), (0.5, 70), (0.8, 130): slope 200, intercept -30 -> 0. */
	ADD_POINTS(f, { 0.2, 10 }, { 0.5, 70 }, { 0.8, 130 });
	assert_double_near(fitted(f), 0, 0);
	/*
	 * (0.6, 30), (0.6, 30), (0.9, 40), (0.2, 36): slope 4.04, intercept 31.68, above the
	 * lowest power held for two intervals (30 W): clamped to 30.
	 */
	ADD_POINTS(f, { 0.6, 30 }, { 0.6, 30 }, { 0.9, 40 }, { 0.2, 36 });
	assert_double_near(fitted(f), 30, 0);
	/*
	 * (0.5, 10), (0.5, 90), (0.9, 50), (0.9, 60): slope 12.5, intercept 43.75. The 10 W is
	 * one interval short of energy the next one has (their mean is 50 W): below the lowest of
	 * two consecutive intervals' means (50 W), the intercept stands.
	 */
	ADD_POINTS(f, { 0.5, 10 }, { 0.5, 90 }, { 0.9, 50 }, { 0.9, 60 });
	assert_double_near(fitted(f), 43.75, 1e-9);
}

/*
 * A late sample: a machine drawing 40 W + 80 W x usage, its fit window full of good points,
 * then one interval 18 % short and the next 18 % long (a stalled thread, a meter's counter
 * written late: CI's truth_fake saw it). Clamped to that one low point, idle fell to 32.9 W
 * for the whole window and every workload's active power rose by a quarter. The pair's mean is
 * the truth: idle stays 40 W, and so it does as the pair moves through the window, oldest and
 * newest included.
 */
static void test_late_sample_does_not_pin_idle(void **state)
{
	_cleanup_fit_ struct vw_idle_fit *f = fit_new(60, 0.05);
	static const double u[] = { 0, 0.25, 0.1, 0.35 };

	(void)state;
	for (int i = 0; i < 60; i++)
		vw_idle_fit_add(f, u[i % 4], 40 + 80 * u[i % 4]);
	assert_double_near(fitted(f), 40, 1e-9);
	vw_idle_fit_add(f, 0, 40 * 0.82);
	vw_idle_fit_add(f, 0, 40 * 1.18);
	for (int i = 0; i < 60; i++) {
		/* Least squares moves by under 0.4 W for one point 7.2 W off among 60: */
		assert_double_near(fitted(f), 40, 0.4);
		vw_idle_fit_add(f, u[i % 4], 40 + 80 * u[i % 4]);
	}
	assert_double_near(fitted(f), 40, 1e-9);
}

static void test_bad_points_ignored(void **state)
{
	_cleanup_fit_ struct vw_idle_fit *f = fit_new(3, 0.05);
	double w;

	(void)state;
	vw_idle_fit_add(f, 0.2, 30);
	vw_idle_fit_add(f, NAN, 500);
	vw_idle_fit_add(f, 0.5, INFINITY);
	vw_idle_fit_add(f, 0.5, -3);
	vw_idle_fit_add(f, 0.6, 50);
	assert_int_equal(vw_idle_fit_get(f, &w), -EAGAIN); /* only two good points */
	/*
	 * Usage above 1 counts as 1: (0.2,30), (0.6,50), (1,70) is a line with intercept 20
	 * (taken at 5.0 it would be 36.9, clamped to 30).
	 */
	vw_idle_fit_add(f, 5.0, 70);
	assert_double_near(fitted(f), 20, 1e-9);
}

static void split(uint64_t energy, uint64_t elapsed, double idle_w, double usage,
		  uint64_t want_idle)
{
	uint64_t idle = 1, active = 1;

	vw_idle_split(energy, elapsed, idle_w, usage, &idle, &active);
	if (idle != want_idle || active != energy - want_idle)
		fail_msg("split(%llu, %llu, %g, %g) = %llu + %llu, expected idle %llu",
			 (unsigned long long)energy, (unsigned long long)elapsed, idle_w, usage,
			 (unsigned long long)idle, (unsigned long long)active,
			 (unsigned long long)want_idle);
}

static void test_split_known_idle(void **state)
{
	(void)state;
	split(10000000, SEC, 4.0, 0.9, 4000000);       /* 4 W of 10 W, usage ignored */
	split(10000000, 2 * SEC, 4.0, 0.0, 8000000);   /* longer interval */
	split(3000000, SEC, 4.0, 0.0, 3000000);        /* idle above measured: all idle */
	split(0, SEC, 4.0, 0.5, 0);                    /* nothing measured */
	split(5000000, 0, 4.0, 0.5, 0);                /* empty interval */
	split(5000000, SEC, 0.0, 0.5, 0);              /* zero idle is a known idle */
	split(UINT64_MAX, UINT64_MAX, 1e30, 0.5, UINT64_MAX); /* beyond 2^64: capped */
	split(UINT64_MAX, SEC, 1.0, 0.5, 1000000);
}

static void test_split_residual(void **state)
{
	(void)state;
	split(1000, SEC, -1, 0.25, 750);
	split(1000, SEC, -1, 0.0, 1000);
	split(1000, SEC, -1, 1.0, 0);
	split(1000, SEC, -1, -0.5, 1000); /* usage clamped to [0, 1] */
	split(1000, SEC, -1, 1.5, 0);
	split(1000, SEC, -1, NAN, 1000); /* unknown usage: all idle, nothing to workloads */
	split(1000, SEC, NAN, 0.25, 750); /* NaN idle is no idle */
	split(1000, SEC, INFINITY, 0.25, 750);
	split(UINT64_MAX, SEC, -1, 0.0, UINT64_MAX);
}

static void test_split_rounding(void **state)
{
	(void)state;
	/* 0.5 W x 3 µs = 1.5 µJ -> 2; 0.5 W x 5 µs = 2.5 µJ -> 3: half away from zero. */
	split(10, 3000, 0.5, 0, 2);
	split(10, 5000, 0.5, 0, 3);
	split(10, 2000, 0.7, 0, 1); /* 1.4 -> 1 */
	/* (1 - 0.5) x 3 = 1.5 -> 2 idle, 1 active. */
	split(3, SEC, -1, 0.5, 2);
	split(5, SEC, -1, 0.5, 3);
	split(7, SEC, -1, 0.9, 1); /* 0.7 -> 1 */
}

static void test_split_conservation_property(void **state)
{
	uint64_t seed = 0xc0ffee;

	(void)state;
	for (int i = 0; i < 100000; i++) {
		uint64_t energy = vw_test_rng(&seed) >> (vw_test_rng(&seed) % 64);
		uint64_t elapsed = vw_test_rng(&seed) >> (vw_test_rng(&seed) % 64);
		double usage = vw_test_rng_double(&seed, -0.5, 1.5);
		double idle_w;
		uint64_t idle, active;

		switch (vw_test_rng(&seed) % 4) {
		case 0:
			idle_w = -vw_test_rng_double(&seed, 0, 10);
			break;
		case 1:
			idle_w = NAN;
			break;
		default:
			idle_w = vw_test_rng_double(&seed, 0, 500);
		}
		vw_idle_split(energy, elapsed, idle_w, usage, &idle, &active);
		assert_true(idle <= energy);
		assert_true(idle + active == energy);
		if (energy >= (1ULL << 50) || elapsed >= (1ULL << 40))
			continue; /* checked above: conservation and the cap */
		/*
		 * Against the formula in long double: equal but where the two precisions round a
		 * value within a hair of .5 differently, hence +-1.
		 */
		long double want = idle_w >= 0 ? roundl((long double)idle_w * elapsed / 1000)
						: roundl((1 - fminl(fmaxl(usage, 0), 1)) * energy);
		if (want > energy)
			want = energy;
		if (fabsl((long double)idle - want) > 1)
			fail_msg("step %d: idle %llu, expected %.1Lf", i, (unsigned long long)idle,
				 want);
	}
}

/* The worked example of docs/idle.md, number for number. */
static void test_docs_example(void **state)
{
	_cleanup_fit_ struct vw_idle_fit *f = fit_new(4, 0.05);
	uint64_t idle, active;

	(void)state;
	ADD_POINTS(f, { 0.2, 62 }, { 0.4, 78 }, { 0.6, 102 }, { 0.8, 118 });
	assert_double_near(fitted(f), 42, 1e-9);
	/* Next interval: 1 s at 90 % usage, 130 J measured. */
	vw_idle_split(130000000, SEC, fitted(f), 0.9, &idle, &active);
	assert_int_equal(idle, 42000000);
	assert_int_equal(active, 88000000);
	/* Kepler's (1 - u) x P: 13 J of "idle" on a machine that idles at 42 W (#2465). */
	vw_idle_split(130000000, SEC, -1, 0.9, &idle, &active);
	assert_int_equal(idle, 13000000);
	assert_int_equal(active, 117000000);
	/* 0.5 W of idle over 3 µs is 1.5 µJ: rounds half away from zero, to 2. */
	vw_idle_split(10, 3000, 0.5, 0.5, &idle, &active);
	assert_int_equal(idle, 2);
	assert_int_equal(active, 8);
}

#define NX12_RAPL                                                                                  \
	VW_TEST_DATA "/nx12/"                                                  \
			   "kepler-model-db_v0.6_nx12_preprocess_abs_default_rapl_BPFOnly.csv"

struct sample {
	double cpu_ms, watts;
};

/* (CPU ms per s, package W) rows of the nx12 file; returns the count. */
static size_t load_nx12(struct sample *rows, size_t max)
{
	FILE *f = fopen(NX12_RAPL, "re");
	char line[512];
	size_t n = 0;

	if (!f)
		return 0;
	while (n < max && fgets(line, sizeof(line), f))
		if (sscanf(line, "%*[^,],%lf,%lf", &rows[n].cpu_ms, &rows[n].watts) == 2)
			n++;
	fclose(f);
	return n;
}

/*
 * Real measurements (tests/data/nx12, Kepler's nx12 data set: one machine under stress-ng, a row
 * every 3 s, package idle about 31 W). Usage is the CPU rate over the highest in the file. A
 * 3-minute window keeps the intercept at the machine's idle all along, through every load level;
 * the residual (1 - u) x P gives well under that whenever the load is high (#2465).
 */
static void test_fit_real_data(void **state)
{
	static struct sample rows[4096];
	size_t n = load_nx12(rows, ARRAY_SIZE(rows));
	_cleanup_fit_ struct vw_idle_fit *f = fit_new(60, 0.05);
	double max_ms = 0, lo = INFINITY, hi = -INFINITY, res_sum = 0;
	size_t fits = 0, busy = 0;

	(void)state;
	assert_int_equal(n, 2202);
	for (size_t i = 0; i < n; i++)
		max_ms = fmax(max_ms, rows[i].cpu_ms);
	for (size_t i = 0; i < n; i++) {
		double u = rows[i].cpu_ms / max_ms, w;

		vw_idle_fit_add(f, u, rows[i].watts);
		if (vw_idle_fit_get(f, &w) == 0) {
			lo = fmin(lo, w);
			hi = fmax(hi, w);
			fits++;
		}
		if (u > 0.7) {
			res_sum += (1 - u) * rows[i].watts;
			busy++;
		}
	}
	assert_true(fits > 2000);
	if (lo < 30.5 || hi > 32.5)
		fail_msg("fitted idle ranged over [%.2f, %.2f] W, expected within [30.5, 32.5] (30.9-31.9)", lo,
			 hi);
	assert_true(busy > 400);
	assert_true(res_sum / (double)busy < 20); /* about 13 W */
}

static void test_method_names(void **state)
{
	(void)state;
	assert_string_equal(vw_idle_method_name(VW_IDLE_CONFIGURED), "configured");
	assert_string_equal(vw_idle_method_name(VW_IDLE_SOURCE), "source");
	assert_string_equal(vw_idle_method_name(VW_IDLE_FITTED), "fitted");
	assert_string_equal(vw_idle_method_name(VW_IDLE_RESIDUAL), "residual");
	assert_string_equal(vw_idle_method_name((enum vw_idle_method)42), "unknown");
}

/* Closing intervals of a counter: the energy since the last close, split by an idle power or
 * by the source's own idle counter; the view's totals add up to the counter; a gap makes the
 * interval unclean. */
static void test_interval_close(void **state)
{
	struct vw_energy_counter ctr, idle_ctr;
	struct vw_interval_mark m = { 0 };
	struct vw_interval_split s;
	struct {
		uint64_t total_uj, idle_uj, active_uj;
		double watts, idle_watts, active_watts, idle_baseline_w;
	} v = { 0 };

	(void)state;
	vw_energy_counter_init(&ctr, 0, 0);
	vw_energy_counter_init(&idle_ctr, 0, 0);
	ctr.total_uj = 50000000; /* 50 J over 5 s at 4 W idle: 20 J idle */
	assert_true(vw_interval_close(&m, &ctr, NULL, 5 * VW_NSEC_PER_SEC, 4.0, 0.5, &s));
	assert_int_equal(s.energy_uj, 50000000);
	assert_int_equal(s.idle_uj, 20000000);
	assert_int_equal(s.active_uj, 30000000);
	assert_double_near(s.watts, 10.0, 1e-9);
	assert_double_near(s.idle_baseline_w, 4.0, 1e-9);
	VW_INTERVAL_ADD(&v, &s);
	/* The source's own split: 10 J more, of which its idle counter says 3 J. */
	ctr.total_uj += 10000000;
	idle_ctr.total_uj = 3000000;
	ctr.gaps = 1;
	assert_false(vw_interval_close(&m, &ctr, &idle_ctr, 5 * VW_NSEC_PER_SEC, 4.0, 0.5, &s));
	assert_int_equal(s.idle_uj, 3000000);
	assert_int_equal(s.active_uj, 7000000);
	assert_double_near(s.idle_baseline_w, 0.6, 1e-9); /* none used: the idle power it gave */
	VW_INTERVAL_ADD(&v, &s);
	assert_int_equal(v.total_uj, ctr.total_uj);
	assert_int_equal(v.idle_uj + v.active_uj, v.total_uj);
	assert_double_near(v.watts, 2.0, 1e-9);
	/* The residual rule, and nothing since the last close. */
	assert_true(vw_interval_close(&m, &ctr, NULL, 5 * VW_NSEC_PER_SEC, -1, 0.25, &s));
	assert_int_equal(s.energy_uj, 0);
	vw_interval_split(1000, NULL, VW_NSEC_PER_SEC, -1, 0.25, &s);
	assert_int_equal(s.idle_uj, 750);
	assert_double_near(s.idle_baseline_w, s.idle_watts, 1e-12);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_rejects_bad_arguments),
		cmocka_unit_test(test_fit_synthetic),
		cmocka_unit_test(test_no_spread_keeps_last_good),
		cmocka_unit_test(test_window_slides_down_and_up),
		cmocka_unit_test(test_negative_slope_rejected),
		cmocka_unit_test(test_intercept_clamped),
		cmocka_unit_test(test_late_sample_does_not_pin_idle),
		cmocka_unit_test(test_bad_points_ignored),
		cmocka_unit_test(test_split_known_idle),
		cmocka_unit_test(test_split_residual),
		cmocka_unit_test(test_split_rounding),
		cmocka_unit_test(test_split_conservation_property),
		cmocka_unit_test(test_docs_example),
		cmocka_unit_test(test_fit_real_data),
		cmocka_unit_test(test_method_names),
		cmocka_unit_test(test_interval_close),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * shared/model/model_online.c: a known linear law recovered with R² ≈ 1, noise scored near 0,
 * rings and targets that stay at their caps, a zone that keeps its last good fit, cumulative
 * counters turned into exact rates, and the weight file read back by our loader to the same
 * predictions.
 */
#include "vw_test.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "model.h"
#include "model_online.h"

static const char *const zones[] = { "package", "dram" };

/* A store whose first target is the node's (its id in *ret_node), as the host's is. */
static struct vw_online *store(size_t max_samples, size_t max_targets, size_t min_samples,
			       size_t *ret_node)
{
	struct vw_online_opts o = { .zones = zones, .n_zones = 2, .max_samples = max_samples,
				    .max_targets = max_targets, .min_samples = min_samples,
				    .folds = 5, .train = { .kind = VW_TRAIN_LINEAR } };
	struct vw_online *s = vw_online_new(&o);

	assert_non_null(s);
	assert_int_equal(vw_online_target(s, "node", ret_node), 0);
	return s;
}

/* package = 20 + 0.01·x W, dram = 5 + 0.002·x W: x in CPU ms/s (4 CPUs: 0..4000). */
static void add_law(struct vw_online *s, size_t t, size_t n, uint64_t seed, double icpt)
{
	for (size_t i = 0; i < n; i++) {
		double x = vw_test_rng_double(&seed, 0, 4000);
		double y[2] = { icpt + 0.01 * x, 5 + 0.002 * x };

		assert_int_equal(vw_online_add(s, t, x, y), 0);
	}
}

static double slope(const struct vw_online_fit *f)
{
	return f->fit.weight[0] / f->fit.scale[0];
}

static void test_linear_law(void **state)
{
	size_t t;
	struct vw_online *s = store(200, 4, 20, &t);
	const struct vw_online_fit *pkg, *dram;

	(void)state;
	add_law(s, t, 19, 1, 20);
	assert_int_equal(vw_online_refit(s, t, 1000), 0); /* 19 < min-samples 20 */
	assert_false(vw_online_zone_fit(s, t, 0)->valid);
	assert_int_equal(vw_online_zone_fit(s, t, 0)->failures, 1);
	{
		char *none = NULL;

		assert_int_equal(vw_online_to_json(s, t, &none), -ENODATA);
		assert_null(none);
	}
	add_law(s, t, 181, 2, 20);
	assert_int_equal(vw_online_refit(s, t, 2000), 2);
	pkg = vw_online_zone_fit(s, t, 0);
	dram = vw_online_zone_fit(s, t, 1);
	assert_true(pkg->valid && dram->valid);
	assert_double_near(pkg->fit.bias, 20, 1e-9);
	assert_double_near(slope(pkg), 0.01, 1e-12);
	assert_double_near(dram->fit.bias, 5, 1e-9);
	assert_double_near(slope(dram), 0.002, 1e-12);
	assert_int_equal(pkg->score.rows, 200);
	assert_true(pkg->score.r2 > 1 - 1e-12 && pkg->score.r2 <= 1);
	assert_double_near(pkg->score.mae_w, 0, 1e-9);
	assert_double_near(pkg->fitted_unix_s, 2000, 0);
	assert_int_equal(pkg->failures, 1);
	vw_online_free(s);
}

/* Power that does not depend on CPU time: the held-out R² says so. */
static void test_noise(void **state)
{
	size_t t;
	struct vw_online *s = store(300, 1, 30, &t);
	uint64_t seed = 9;

	(void)state;
	for (int i = 0; i < 300; i++) {
		double x = vw_test_rng_double(&seed, 0, 4000);
		double y[2] = { 50 + vw_test_rng_double(&seed, -10, 10), NAN };

		assert_int_equal(vw_online_add(s, t, x, y), 0);
	}
	assert_int_equal(vw_online_refit(s, t, 1), 1); /* dram has no power at all */
	print_message("# noise: held-out R² %.4f, MAE %.3f W\n",
		      vw_online_zone_fit(s, t, 0)->score.r2,
		      vw_online_zone_fit(s, t, 0)->score.mae_w);
	assert_true(vw_online_zone_fit(s, t, 0)->score.r2 < 0.05);
	assert_double_near(vw_online_zone_fit(s, t, 0)->score.mae_w, 5, 0.6); /* E|U(-10,10)| */
	assert_false(vw_online_zone_fit(s, t, 1)->valid);
	vw_online_free(s);
}

/* 10x the ring: it holds its cap, and the fit is of the newest rows only. */
static void test_bounded(void **state)
{
	size_t t, u;
	struct vw_online *s = store(50, 3, 10, &t);
	double nan_row[2] = { NAN, NAN };

	(void)state;
	add_law(s, t, 450, 3, 100); /* an older law: 100 W idle */
	assert_int_equal(vw_online_n_samples(s, t), 50);
	add_law(s, t, 50, 4, 20);
	assert_int_equal(vw_online_n_samples(s, t), 50);
	assert_int_equal(vw_online_refit(s, t, 1), 2);
	assert_double_near(vw_online_zone_fit(s, t, 0)->fit.bias, 20, 1e-9);
	assert_int_equal(vw_online_zone_fit(s, t, 0)->score.rows, 50);
	assert_int_equal(vw_online_add(s, t, 10, nan_row), -EINVAL);
	assert_int_equal(vw_online_add(s, t, -1, (double[]){ 1, 1 }), -EINVAL);

	/* Targets: three at most; a removed one makes room, the others keep their ids. */
	assert_int_equal(vw_online_target(s, "vm-a", &u), 0);
	assert_int_equal(vw_online_target(s, "vm-b", &u), 0);
	assert_int_equal(vw_online_target(s, "vm-c", &u), -ENOSPC);
	assert_int_equal(vw_online_target(s, "vm-a", &u), 0);
	assert_int_equal(u, 1);
	vw_online_set_label(s, 2, "b's name");
	vw_online_remove(s, u);
	assert_int_equal(vw_online_n_targets(s), 2);
	assert_string_equal(vw_online_id(s, 1), "vm-b");
	assert_string_equal(vw_online_label(s, 1), "b's name");
	assert_string_equal(vw_online_label(s, 0), "");
	assert_int_equal(vw_online_target(s, "vm-c", &u), 0);
	assert_int_equal(u, 2);
	assert_int_equal(vw_online_n_samples(s, u), 0);
	assert_int_equal(vw_online_target(s, "", &u), -EINVAL);
	vw_online_free(s);
}

/* A zone that no longer has enough samples keeps its last good fit; the other moves on. */
static void test_keeps_last_good(void **state)
{
	size_t t;
	struct vw_online *s = store(10, 1, 10, &t);
	uint64_t seed = 5;

	(void)state;
	add_law(s, t, 10, 6, 20);
	assert_int_equal(vw_online_refit(s, t, 1), 2);
	for (int i = 0; i < 10; i++) { /* dram's meter fails: no dram power */
		double x = vw_test_rng_double(&seed, 0, 4000);
		double y[2] = { 30 + 0.02 * x, NAN };

		assert_int_equal(vw_online_add(s, t, x, y), 0);
	}
	assert_int_equal(vw_online_refit(s, t, 2), 1);
	assert_double_near(vw_online_zone_fit(s, t, 0)->fit.bias, 30, 1e-9);
	assert_double_near(vw_online_zone_fit(s, t, 0)->fitted_unix_s, 2, 0);
	assert_true(vw_online_zone_fit(s, t, 1)->valid);
	assert_double_near(vw_online_zone_fit(s, t, 1)->fit.bias, 5, 1e-9);
	assert_double_near(vw_online_zone_fit(s, t, 1)->fitted_unix_s, 1, 0);
	assert_int_equal(vw_online_zone_fit(s, t, 1)->failures, 1);
	assert_int_equal(vw_online_zone_fit(s, t, 0)->failures, 0);
	vw_online_free(s);
}

static struct vw_online_counters counters(uint64_t t_ms, uint64_t cpu_ms, uint64_t pkg_uj,
					  uint64_t dram_uj)
{
	return (struct vw_online_counters){ .now_ns = t_ms * 1000000,
					    .cpu_ns = cpu_ms * 1000000,
					    .energy_uj = { pkg_uj, dram_uj },
					    .present = { true, true } };
}

/* Cumulative counters to rates: CPU ms per second and watts, exactly. */
static void test_observe(void **state)
{
	size_t t;
	struct vw_online *s = store(10, 1, 5, &t);
	struct vw_online_counters c = counters(1000, 0, 0, 0);

	(void)state;
	assert_int_equal(vw_online_observe(s, t, &c), 0); /* the baseline */
	c = counters(3000, 1000, 60000000, 10000000);     /* 2 s: 500 ms/s, 30 W, 5 W */
	assert_int_equal(vw_online_observe(s, t, &c), 1);
	assert_int_equal(vw_online_observe(s, t, &c), 0); /* no time elapsed */
	c = counters(4000, 1500, 100000000, 10000000);    /* 500 ms/s, 40 W, dram 0 W */
	c.faults[1] = 1;                                  /* ... but dram skipped energy */
	assert_int_equal(vw_online_observe(s, t, &c), 1);
	c = counters(5000, 1400, 150000000, 20000000);    /* CPU time went back: a baseline */
	c.faults[1] = 1;
	assert_int_equal(vw_online_observe(s, t, &c), 0);
	c = counters(5500, 1400, 160000000, 10000000);    /* 0 ms/s, 20 W; dram went back */
	c.faults[1] = 1;
	assert_int_equal(vw_online_observe(s, t, &c), 1);
	c = counters(6000, 1500, 160000000, 10000000);
	c.present[0] = false;
	c.faults[1] = 2;                                  /* no zone left: no sample */
	assert_int_equal(vw_online_observe(s, t, &c), 0);

	/* Dram back and package gone at the interval's start: dram only. */
	c = counters(7000, 1500, 170000000, 10000000);
	c.faults[1] = 2;
	assert_int_equal(vw_online_observe(s, t, &c), 1);
	{
		static const double want[][3] = {
			{ 500, 30, 5 }, { 500, 40, NAN }, { 0, 20, NAN }, { 0, NAN, 0 },
		};
		double x, y[2];

		assert_int_equal(vw_online_n_samples(s, t), ARRAY_SIZE(want));
		for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
			assert_int_equal(vw_online_sample(s, t, i, &x, y), 0);
			assert_double_near(x, want[i][0], 1e-12);
			for (size_t z = 0; z < 2; z++) {
				if (isnan(want[i][z + 1]))
					assert_true(isnan(y[z]));
				else
					assert_double_near(y[z], want[i][z + 1], 1e-12);
			}
		}
		assert_int_equal(vw_online_sample(s, t, 4, &x, y), -ENOENT);
	}
	vw_online_free(s);
}

/* The file the host writes, read by the loader --model.file uses: the same predictions. */
static void test_json_roundtrip(void **state)
{
	size_t t;
	struct vw_online *s = store(100, 1, 10, &t);
	_cleanup_free_ char *json = NULL;
	struct vw_model *m = NULL;
	char err[256] = "";

	(void)state;
	add_law(s, t, 100, 8, 20);
	assert_int_equal(vw_online_refit(s, t, 1), 2);
	assert_int_equal(vw_online_to_json(s, t, &json), 0);
	if (vw_model_parse(json, strlen(json), "/var/lib/virtwatt/models/node.json", &m, err,
			   sizeof(err)) < 0)
		fail_msg("%s\n%s", err, json);
	assert_int_equal(vw_model_n_components(m), 2);
	for (double x = 0; x <= 8000; x += 250) {
		struct vw_feature f = { "bpf_cpu_time_ms", x };
		struct vw_model_input in = { .features = &f, .n_features = 1 };

		for (size_t z = 0; z < 2; z++) {
			struct vw_model_result r;
			double want = vw_train_predict(&vw_online_zone_fit(s, t, z)->fit, &x);

			assert_string_equal(vw_model_component(m, z), zones[z]);
			assert_int_equal(vw_model_eval(m, z, &in, &r), 0);
			assert_double_near(r.watts, want, 0);
			assert_double_near(r.watts, z ? 5 + 0.002 * x : 20 + 0.01 * x, 1e-9);
		}
	}
	vw_model_free(m);
	vw_online_free(s);
}

static void test_bad_options(void **state)
{
	struct vw_online_opts o = { .zones = zones, .n_zones = 2, .max_samples = 10,
				    .max_targets = 1, .min_samples = 4, .folds = 5 };

	(void)state;
	assert_null(vw_online_new(&o)); /* fewer samples than folds */
	assert_int_equal(errno, EINVAL);
	o.min_samples = 11; /* more than the ring holds */
	assert_null(vw_online_new(&o));
	o.min_samples = 5;
	o.n_zones = 0;
	assert_null(vw_online_new(&o));
	o.n_zones = 2;
	vw_online_free(vw_online_new(&o));
	vw_online_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_linear_law),   cmocka_unit_test(test_noise),
		cmocka_unit_test(test_bounded),      cmocka_unit_test(test_keeps_last_good),
		cmocka_unit_test(test_observe),      cmocka_unit_test(test_json_roundtrip),
		cmocka_unit_test(test_bad_options),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The estimator power source on the built-in model: each zone's counter is the integral of the
 * model's power over the reads' elapsed time, in whole microjoules with the fraction carried,
 * so many short reads add up to what one long read gives.
 */
#include "vw_test.h"

#include <math.h>

#include "model.h"
#include "power_source.h"

static void open_builtin(struct vw_model **m, struct vw_power_source *src)
{
	assert_int_equal(vw_model_load_builtin(m), 0);
	assert_int_equal(vw_power_source_open(
				 (const struct vw_power_source_ops *const[]){ &vw_src_estimator, NULL },
				 &(struct vw_power_env){ .model = *m, .model_origin = "builtin",
							 .host_cores = 4 },
				 NULL, src),
			 0);
}

static void test_short_reads_add_up(void **state)
{
	struct vw_model *m1 = NULL, *m2 = NULL;
	struct vw_power_source fine, coarse;
	const struct vw_zone_info *zones;
	uint64_t raw_fine[VW_POWER_MAX_ZONES], raw_coarse[VW_POWER_MAX_ZONES];
	int errs[VW_POWER_MAX_ZONES];
	struct vw_node_activity act = { .cpu_ms_per_s = 1500, .usage_ratio = 0.4, .ncpus = 4 };
	size_t n;

	(void)state;
	open_builtin(&m1, &fine);
	open_builtin(&m2, &coarse);
	n = fine.ops->zones(fine.state, &zones);
	assert_true(n >= 1);
	/* 1,000,000 reads of 3 ns (a fraction of a microjoule each at any model's watts) ... */
	act.elapsed_ns = 3;
	for (int i = 0; i < 1000000; i++)
		assert_int_equal(fine.ops->read(fine.state, &act, raw_fine, errs), 0);
	/* ... against one read of 3 ms. */
	act.elapsed_ns = 3000000;
	assert_int_equal(coarse.ops->read(coarse.state, &act, raw_coarse, errs), 0);
	for (size_t i = 0; i < n; i++) {
		assert_true(raw_coarse[i] > 100); /* the model gives power: something to compare */
		assert_true(llabs((long long)raw_fine[i] - (long long)raw_coarse[i]) <= 1);
	}
	vw_power_source_close(&fine);
	vw_power_source_close(&coarse);
	vw_model_free(m1);
	vw_model_free(m2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_short_reads_add_up),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

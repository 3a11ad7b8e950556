/* SPDX-License-Identifier: Apache-2.0 */
/*
 * shared/model/model.c against the Kepler fixtures in tests/data/models/. Expected values are computed
 * here from numbers read out of the JSON with json-c (model_ref.c), never through the module.
 */
#include "vw_test.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "macro.h"
#include "model.h"
#include "model_ref.h"

#define NX12 "kepler-model-db_v0.6_nx12_std_v0.6_"
#define EC2 "kepler-model-db_v0.7_ec2-0.7.11_rapl-sysfs_AbsPower_"
#define K0712 "kepler-v0.7.12_data_model_weight_"
#define KMS "kepler-model-server_27b97ff_tests_test_models_"
#define PCUD "package,core,uncore,dram"
#define EPS 1e-9

struct fixture_case {
	const char *file;
	const char *comps; /* NULL: must be rejected */
	enum vw_model_kind kind;
	enum vw_model_output output;
	const char *trainer;
	const char *reason; /* for rejects: a substring of the reason */
};

static const struct fixture_case fixtures[] = {
	{NX12 "acpi_AbsPower_BPFOnly_SGDRegressorTrainer_1.json", "platform", VW_MODEL_LINEAR,
	 VW_MODEL_ABS_POWER, "SGDRegressorTrainer", NULL},
	{NX12 "rapl_AbsPower_BPFOnly_LinearRegressionTrainer_1.json", PCUD, VW_MODEL_LINEAR,
	 VW_MODEL_ABS_POWER, "LinearRegressionTrainer", NULL},
	{NX12 "rapl_AbsPower_BPFOnly_SGDRegressorTrainer_1.json", PCUD, VW_MODEL_LINEAR,
	 VW_MODEL_ABS_POWER, "SGDRegressorTrainer", NULL},
	{NX12 "rapl_DynPower_BPFOnly_SGDRegressorTrainer_1.json", PCUD, VW_MODEL_LINEAR,
	 VW_MODEL_DYN_POWER, "SGDRegressorTrainer", NULL},
	{"kepler-model-db_v0.7_ec2-0.7.11_node_type_index.json", NULL, 0, 0, NULL,
	 "not a model: a node_type_index.json"},
	{EC2 "BPFOnly_ExponentialRegressionTrainer_0.json", PCUD, VW_MODEL_EXPONENTIAL,
	 VW_MODEL_ABS_POWER, "ExponentialRegressionTrainer", NULL},
	{EC2 "BPFOnly_LogarithmicRegressionTrainer_0.json", PCUD, VW_MODEL_LOGARITHMIC,
	 VW_MODEL_ABS_POWER, "LogarithmicRegressionTrainer", NULL},
	{EC2 "BPFOnly_SGDRegressorTrainer_0.json", PCUD, VW_MODEL_LINEAR, VW_MODEL_ABS_POWER,
	 "SGDRegressorTrainer", NULL},
	{EC2 "CounterOnly_SGDRegressorTrainer_0.json", PCUD, VW_MODEL_LINEAR, VW_MODEL_ABS_POWER,
	 "SGDRegressorTrainer", NULL},
	{KMS "AbsComponentModelWeight_Full_KerasCompWeightFullPipeline_"
	     "KerasCompWeightFullPipeline.json",
	 "core,dram", VW_MODEL_LINEAR, VW_MODEL_ABS_POWER, "SGDRegressorTrainer", NULL},
	{KMS "AbsModelWeight_CounterOnly_Sample_Sample.json", "total", VW_MODEL_LINEAR,
	 VW_MODEL_ABS_POWER, "SGDRegressorTrainer", NULL},
	{KMS "AbsModelWeight_CounterOnly_Sample_metadata.json", NULL, 0, 0, NULL,
	 "not a model: a model metadata.json"},
	{KMS "DynComponentModelWeight_BPFOnly_ScikitMixed_ScikitMixed.json", "package,dram",
	 VW_MODEL_LINEAR, VW_MODEL_DYN_POWER, "SGDRegressorTrainer", NULL},
	{KMS "DynComponentModelWeight_CgroupOnly_ScikitMixed_ScikitMixed.json", "package,dram",
	 VW_MODEL_LINEAR, VW_MODEL_DYN_POWER, "SGDRegressorTrainer", NULL},
	{KMS "DynComponentModelWeight_CgroupOnly_ScikitMixed_metadata.json", NULL, 0, 0, NULL,
	 "not a model: a model metadata.json"},
	{"kepler-v0.5.5_data_model_weight_acpi_AbsPowerModel_meanvariance.json", "platform",
	 VW_MODEL_LINEAR, VW_MODEL_ABS_POWER, "SGDRegressorTrainer", NULL},
	{"kepler-v0.5.5_data_model_weight_rapl_AbsPowerModel_meanvariance.json", PCUD,
	 VW_MODEL_LINEAR, VW_MODEL_ABS_POWER, "SGDRegressorTrainer", NULL},
	{"kepler-v0.6_data_model_weight_acpi_AbsPowerModel_scale.json", "platform", VW_MODEL_LINEAR,
	 VW_MODEL_ABS_POWER, "SGDRegressorTrainer", NULL},
	{K0712 "acpi_AbsPowerModel.json", "platform", VW_MODEL_LINEAR, VW_MODEL_ABS_POWER,
	 "SGDRegressorTrainer", NULL},
	{K0712 "acpi_DynPowerModel.json", "platform", VW_MODEL_LINEAR, VW_MODEL_DYN_POWER,
	 "SGDRegressorTrainer", NULL},
	{K0712 "intel_rapl_AbsPowerModel.json", PCUD, VW_MODEL_LINEAR, VW_MODEL_ABS_POWER,
	 "SGDRegressorTrainer", NULL},
	{K0712 "intel_rapl_DynPowerModel.json", PCUD, VW_MODEL_LINEAR, VW_MODEL_DYN_POWER,
	 "SGDRegressorTrainer", NULL},
};

static int load(const char *file, struct vw_model **ret, char *err, size_t errlen)
{
	char path[1024];

	snprintf(path, sizeof(path), "%s/models/%s", VW_TEST_DATA, file);
	return vw_model_load_file(path, ret, err, errlen);
}

static void model_freep(struct vw_model **m)
{
	vw_model_free(*m);
}

static void json_putp(json_object **j)
{
	json_object_put(*j);
}

/* Freed (put) when the variable goes out of scope. */
#define _cleanup_model_ _cleanup_(model_freep)
#define _cleanup_json_ _cleanup_(json_putp)

static struct vw_model *load_ok(const char *file)
{
	struct vw_model *m = NULL;
	char err[256];

	if (load(file, &m, err, sizeof(err)) < 0)
		fail_msg("%s: %s", file, err);
	return m;
}

static struct vw_model *parse_ok(const char *json, const char *origin)
{
	struct vw_model *m = NULL;
	char err[256];

	if (vw_model_parse(json, strlen(json), origin, &m, err, sizeof(err)) < 0)
		fail_msg("parse: %s", err);
	return m;
}

static size_t comp_index(const struct vw_model *m, const char *name)
{
	for (size_t i = 0; i < vw_model_n_components(m); i++)
		if (strcmp(vw_model_component(m, i), name) == 0)
			return i;
	fail_msg("no component %s", name);
	return 0;
}

/* Evaluate one component at n features, or fail the test. */
static struct vw_model_result eval_n(const struct vw_model *m, const char *comp,
				     const struct vw_feature *f, size_t n, unsigned host_cores)
{
	struct vw_model_input in = {.features = f, .n_features = n, .host_cores = host_cores};
	struct vw_model_result res;

	assert_int_equal(vw_model_eval(m, comp_index(m, comp), &in, &res), 0);
	return res;
}

static struct vw_model_result eval1(const struct vw_model *m, const char *comp, const char *feat,
				    double x, unsigned host_cores)
{
	struct vw_feature f = {feat, x};

	return eval_n(m, comp, &f, 1, host_cores);
}

static const struct fixture_case *find_case(const char *file)
{
	for (size_t i = 0; i < ARRAY_SIZE(fixtures); i++)
		if (strcmp(fixtures[i].file, file) == 0)
			return &fixtures[i];
	return NULL;
}

static void check_loaded(const struct fixture_case *fc, const struct vw_model *m)
{
	char comps[128] = "";

	for (size_t i = 0; i < vw_model_n_components(m); i++) {
		if (i)
			strcat(comps, ",");
		strcat(comps, vw_model_component(m, i));
		assert_int_equal(vw_model_component_kind(m, i), fc->kind);
	}
	assert_string_equal(comps, fc->comps);
	assert_int_equal(vw_model_output_type(m), fc->output);
	assert_string_equal(vw_model_trainer(m), fc->trainer);
}

/* Every file in tests/data/models/ is in the table, and loads or is rejected as it says. */
static void test_fixture_table(void **state)
{
	char dir[1024], err[256];
	size_t seen = 0;
	struct dirent *e;
	DIR *d;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/models", VW_TEST_DATA);
	d = opendir(dir);
	assert_non_null(d);
	while ((e = readdir(d))) {
		const struct fixture_case *fc;
		struct vw_model *m = NULL;
		int r;

		if (!strstr(e->d_name, ".json"))
			continue;
		fc = find_case(e->d_name);
		if (!fc) {
			fail_msg("fixture %s is not in the table", e->d_name);
			continue;
		}
		seen++;
		r = load(e->d_name, &m, err, sizeof(err));
		if (fc->comps) {
			if (r < 0)
				fail_msg("%s: expected to load: %s", e->d_name, err);
			check_loaded(fc, m);
		} else {
			assert_int_equal(r, -EINVAL);
			assert_null(m);
			if (!strstr(err, fc->reason))
				fail_msg("%s: reason '%s', expected '%s'", e->d_name, err,
					 fc->reason);
		}
		vw_model_free(m);
	}
	closedir(d);
	assert_int_equal(seen, ARRAY_SIZE(fixtures));
}

/* ---- the reference: formulas of docs/models.md over numbers read with json-c ---- */

static double ref_get(json_object *j, const char *comp, const char *rest)
{
	char path[256];

	snprintf(path, sizeof(path), "%s%sAll_Weights/%s", comp ? comp : "", comp ? "/" : "", rest);
	return vw_ref_num(j, path);
}

static double ref_term(json_object *j, const char *comp, const char *key, const char *what)
{
	char rest[160];

	snprintf(rest, sizeof(rest), "Numerical_Variables/%s/%s", key, what);
	return ref_get(j, comp, rest);
}

/* v0.6+: bias + Σ w·x/scale, keys as spelled in the file. */
static double ref_linear_scale(json_object *j, const char *comp, const char *const *keys,
			       const double *x, size_t n)
{
	double p = ref_get(j, comp, "Bias_Weight");

	for (size_t i = 0; i < n; i++)
		p += ref_term(j, comp, keys[i], "weight") * x[i] /
		     ref_term(j, comp, keys[i], "scale");
	return p;
}

/* <= v0.5: bias + Σ w·(x − mean)/√variance. */
static double ref_linear_std(json_object *j, const char *comp, const char *const *keys,
			     const double *x, size_t n)
{
	double p = ref_get(j, comp, "Bias_Weight");

	for (size_t i = 0; i < n; i++)
		p += ref_term(j, comp, keys[i], "weight") *
		     (x[i] - ref_term(j, comp, keys[i], "mean")) /
		     sqrt(ref_term(j, comp, keys[i], "variance"));
	return p;
}

static double ref_curve(json_object *j, const char *comp, size_t i)
{
	char path[160];

	snprintf(path, sizeof(path), "%s/All_Weights/CurveFit_Weights", comp);
	return vw_ref_idx(j, path, i);
}

/* v0.7: x̂ = x/scale, P = bias + w·x̂; page cache hit has weight 0 (a value there changes nothing).
 */
static void test_eval_v07_scale(void **state)
{
	const char *file = K0712 "intel_rapl_AbsPowerModel.json";
	static const char *const comps[] = {"package", "dram"};
	static const char *const key[] = {"bpf_cpu_time_ms"};
	const double xs[] = {0, 1, 500, 5000, 95877, 150000};
	_cleanup_model_ struct vw_model *m = load_ok(file);
	_cleanup_json_ json_object *j = vw_ref_load(file);

	(void)state;
	for (size_t c = 0; c < ARRAY_SIZE(comps); c++) {
		double bias = ref_get(j, comps[c], "Bias_Weight");
		double s = ref_term(j, comps[c], key[0], "scale");

		for (size_t i = 0; i < ARRAY_SIZE(xs); i++) {
			struct vw_feature f[] = {{"bpf_cpu_time_ms", xs[i]},
						 {"bpf_page_cache_hit", 12345}};
			struct vw_model_result r = eval_n(m, comps[c], f, 2, 0);

			assert_double_near(r.watts, ref_linear_scale(j, comps[c], key, &xs[i], 1),
					   EPS);
			assert_double_near(r.idle_watts, bias, EPS);
			assert_int_equal(r.extrapolated, xs[i] / s > 1);
			assert_false(r.clamped);
		}
	}
	assert_true(vw_model_component_is_zero(m, comp_index(m, "core")));
	assert_true(vw_model_component_is_zero(m, comp_index(m, "uncore")));
	assert_false(vw_model_component_is_zero(m, comp_index(m, "package")));
	assert_int_equal(vw_model_n_features(m), 1);
	assert_string_equal(vw_model_feature(m, 0), "bpf_cpu_time_ms");
	assert_string_equal(vw_model_name(m), "SGDRegressorTrainer_0");
}

/* Three counters, negative weights included. */
static void test_eval_counters(void **state)
{
	const char *file = EC2 "CounterOnly_SGDRegressorTrainer_0.json";
	static const char *const keys[] = {"cache_miss", "cpu_cycles", "cpu_instructions"};
	const double x[] = {1.2e9, 2.5e11, 3.1e11};
	struct vw_feature f[] = {{"cache_miss", x[0]}, {"cpu_cycles", x[1]}, {"cpu_instr", x[2]}};
	_cleanup_model_ struct vw_model *m = load_ok(file);
	_cleanup_json_ json_object *j = vw_ref_load(file);

	(void)state;
	assert_double_near(eval_n(m, "package", f, 3, 0).watts,
			   ref_linear_scale(j, "package", keys, x, 3), EPS);
	assert_double_near(eval_n(m, "dram", f, 3, 0).watts,
			   ref_linear_scale(j, "dram", keys, x, 3), EPS);
	assert_int_equal(vw_model_n_features(m), 3);
}

/* v0.6 nx12: {scale, mean: 0, variance: 0}; the file says bpf_cpu_time_us (an alias). */
static void test_eval_v06_alias(void **state)
{
	const char *file = NX12 "rapl_AbsPower_BPFOnly_SGDRegressorTrainer_1.json";
	static const char *const key[] = {"bpf_cpu_time_us"};
	const double xs[] = {0, 219, 5911, 12000, 29170};
	_cleanup_model_ struct vw_model *m = load_ok(file);
	_cleanup_json_ json_object *j = vw_ref_load(file);

	(void)state;
	assert_string_equal(vw_model_feature(m, 0), "bpf_cpu_time_ms");
	for (size_t i = 0; i < ARRAY_SIZE(xs); i++) {
		double s = ref_term(j, "package", key[0], "scale");
		struct vw_model_result us = eval1(m, "package", "bpf_cpu_time_us", xs[i], 0);
		struct vw_model_result ms = eval1(m, "package", "bpf_cpu_time_ms", xs[i], 0);

		assert_double_near(us.watts, ref_linear_scale(j, "package", key, &xs[i], 1), EPS);
		assert_double_near(ms.watts, us.watts, 0);
		assert_double_near(eval1(m, "dram", "bpf_cpu_time_us", xs[i], 0).watts,
				   ref_linear_scale(j, "dram", key, &xs[i], 1), EPS);
		/* SGD_1's scale is below the data's maximum: x̂ ≈ 4.9, flagged, never clamped. */
		assert_int_equal(us.extrapolated, xs[i] / s > 1);
	}
	assert_null(vw_model_warning(m));
}

/* <= v0.5: x̂ = (x − mean)/√variance; idle is the model at x = 0. */
static void test_eval_mean_variance(void **state)
{
	const char *file = "kepler-v0.5.5_data_model_weight_rapl_AbsPowerModel_meanvariance.json";
	static const char *const key[] = {"bpf_cpu_time_us"};
	const double xs[] = {0, 1000, 5608, 40000};
	const double zero = 0;
	_cleanup_model_ struct vw_model *m = load_ok(file);
	_cleanup_json_ json_object *j = vw_ref_load(file);

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(xs); i++) {
		struct vw_model_result r = eval1(m, "package", "bpf_cpu_time_ms", xs[i], 0);

		assert_double_near(r.watts, ref_linear_std(j, "package", key, &xs[i], 1), EPS);
		assert_double_near(r.idle_watts, ref_linear_std(j, "package", key, &zero, 1), EPS);
		assert_false(r.extrapolated); /* a z-score says nothing about the training range */
		assert_double_near(eval1(m, "dram", "bpf_cpu_time_ms", xs[i], 0).watts,
				   ref_linear_std(j, "dram", key, &xs[i], 1), EPS);
	}
}

/* 2023 total model: mean/variance, cpu_instr alias, categorical cpu_architecture. */
static void test_eval_categorical(void **state)
{
	const char *file = KMS "AbsModelWeight_CounterOnly_Sample_Sample.json";
	static const char *const keys[] = {"cpu_cycles", "cpu_instr", "cpu_time"};
	const double x[] = {7e9, 4.2e9, 170000};
	struct vw_feature f[] = {
		{"cpu_cycles", x[0]}, {"cpu_instructions", x[1]}, {"cpu_time", x[2]}};
	struct vw_category broadwell = {"cpu_architecture", "Broadwell"};
	struct vw_category zen = {"cpu_architecture", "Zen 4"};
	struct vw_model_input in = {.features = f, .n_features = 3, .n_categories = 1};
	_cleanup_model_ struct vw_model *m = load_ok(file);
	_cleanup_json_ json_object *j = vw_ref_load(file);
	struct vw_model_result r;
	double c;

	(void)state;
	c = ref_get(j, NULL, "Categorical_Variables/cpu_architecture/Broadwell/weight");
	in.categories = &broadwell;
	assert_int_equal(vw_model_eval(m, 0, &in, &r), 0);
	assert_double_near(r.watts, ref_linear_std(j, NULL, keys, x, 3) + c, EPS);
	in.categories = &zen; /* unseen in training: C = 0 */
	assert_int_equal(vw_model_eval(m, 0, &in, &r), 0);
	assert_double_near(r.watts, ref_linear_std(j, NULL, keys, x, 3), EPS);
	assert_string_equal(vw_model_component(m, 0), "total");
}

/* Exponential: P = a·e^{b·x̂} + c; the dram curve's feature is bpf_page_cache_hit. */
static void test_eval_exponential(void **state)
{
	const char *file = EC2 "BPFOnly_ExponentialRegressionTrainer_0.json";
	const double xs[] = {0, 1000, 20000, 95877};
	_cleanup_model_ struct vw_model *m = load_ok(file);
	_cleanup_json_ json_object *j = vw_ref_load(file);
	double a = ref_curve(j, "package", 0), b = ref_curve(j, "package", 1);
	double c = ref_curve(j, "package", 2),
	       s = ref_term(j, "package", "bpf_cpu_time_ms", "scale");
	double ad = ref_curve(j, "dram", 0), bd = ref_curve(j, "dram", 1),
	       cd = ref_curve(j, "dram", 2);

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(xs); i++) {
		struct vw_feature f[] = {{"bpf_cpu_time_ms", xs[i]}, {"bpf_page_cache_hit", 0}};
		struct vw_model_result r = eval_n(m, "package", f, 2, 0);

		assert_double_near(r.watts, a * exp(b * xs[i] / s) + c, 1e-6);
		assert_double_near(r.idle_watts, a + c, 1e-6);
		/* Fed CPU time (Kepler's x[0] bug) dram would reach a·e + c ≈ −3940 W at x̂ = 1. */
		assert_double_near(eval_n(m, "dram", f, 2, 0).watts, ad + cd, 1e-9);
	}
	/* On the page-cache feature it is trained on, dram soon goes negative: clamped. */
	for (double hits = 0.001; hits < 1; hits *= 3) {
		double raw =
			ad * exp(bd * hits / ref_term(j, "dram", "bpf_page_cache_hit", "scale")) +
			cd;
		struct vw_model_result r = eval1(m, "dram", "bpf_page_cache_hit", hits, 0);

		assert_double_near(r.watts, raw < 0 ? 0 : raw, 1e-9);
		assert_int_equal(r.clamped, raw < 0);
	}
	assert_true(ad * exp(bd) + cd < -3900);
}

/* Logarithmic: P = a·ln(b·x̂ + 1) + c, c = −683.4 W: negative below ≈ 370 ms/s, clamped. */
static void test_eval_logarithmic_clamp(void **state)
{
	const char *file = EC2 "BPFOnly_LogarithmicRegressionTrainer_0.json";
	const double xs[] = {0, 100, 360, 380, 1000, 50000};
	_cleanup_model_ struct vw_model *m = load_ok(file);
	_cleanup_json_ json_object *j = vw_ref_load(file);
	double a = ref_curve(j, "package", 0), b = ref_curve(j, "package", 1);
	double c = ref_curve(j, "package", 2),
	       s = ref_term(j, "package", "bpf_cpu_time_ms", "scale");

	(void)state;
	assert_double_near(c, -683.4, 0.1);
	assert_double_near(a * log(b * 100 / s + 1) + c, -92, 1); /* models.md §8 */
	for (size_t i = 0; i < ARRAY_SIZE(xs); i++) {
		double raw = a * log(b * xs[i] / s + 1) + c;
		struct vw_model_result r = eval1(m, "package", "bpf_cpu_time_ms", xs[i], 0);

		assert_int_equal(r.clamped, true); /* idle (c) is always negative */
		assert_double_near(r.idle_watts, 0, 0);
		assert_double_near(r.watts, raw < 0 ? 0 : raw, 1e-9);
		assert_int_equal(raw < 0, xs[i] < 370);
	}
	assert_double_near(eval1(m, "dram", "bpf_cpu_time_ms", 50000, 0).watts,
			   ref_curve(j, "dram", 2), 1e-12);
}

/* Weights within the parser's bounds (1e7, scale 1) give 1e10 W at 1000 ms/s: a model server's
 * mistake or a hostile file. Clamped to 10 kW and flagged, idle too; a sane output untouched. */
static void test_eval_absurd_clamped(void **state)
{
	static const char json[] =
		"{\"package\": {\"All_Weights\": {\"Bias_Weight\": 69.9, \"Categorical_Variables\": "
		"{}, \"Numerical_Variables\": {\"bpf_cpu_time_ms\": {\"scale\": 1, \"mean\": 0, "
		"\"variance\": 0, \"weight\": 1e7}}}}, \"dram\": {\"All_Weights\": {\"Bias_Weight\": "
		"1e7, \"Categorical_Variables\": {}, \"Numerical_Variables\": {}}}}";
	_cleanup_model_ struct vw_model *m = parse_ok(json, NULL);
	struct vw_model_result r;

	(void)state;
	r = eval1(m, "package", "bpf_cpu_time_ms", 0, 0);
	assert_double_near(r.watts, 69.9, 1e-9);
	assert_false(r.clamped);
	r = eval1(m, "package", "bpf_cpu_time_ms", 1000, 0);
	assert_double_near(r.watts, VW_MODEL_MAX_WATTS, 0);
	assert_double_near(r.idle_watts, 69.9, 1e-9);
	assert_true(r.clamped);
	r = eval1(m, "dram", "bpf_cpu_time_ms", 1000, 0);
	assert_double_near(r.watts, VW_MODEL_MAX_WATTS, 0);
	assert_double_near(r.idle_watts, VW_MODEL_MAX_WATTS, 0);
	assert_true(r.clamped);
}

static const char logistic_json[] =
	"{\"model_name\": \"LogisticRegressionTrainer_3\", \"platform\": {\"All_Weights\": {"
	"\"Categorical_Variables\": {}, \"Numerical_Variables\": {\"bpf_page_cache_hit\": "
	"{\"scale\": 1.0}, \"bpf_cpu_time_ms\": {\"scale\": 4000.0}}, "
	"\"CurveFit_Weights\": [180.0, 0.4, 9.0, 35.0]}}}";

/* Logistic: P = A/(1 + e^{−k(x̂ − x0)}) + off; idle A/(1 + e^{k·x0}) + off. */
static void test_eval_logistic(void **state)
{
	const double xs[] = {0, 800, 1600, 4000, 9000};
	struct vw_model *m = parse_ok(logistic_json, NULL);
	json_object *j = vw_ref_parse(logistic_json);
	double A = ref_curve(j, "platform", 0), x0 = ref_curve(j, "platform", 1);
	double k = ref_curve(j, "platform", 2), off = ref_curve(j, "platform", 3);
	double s = ref_term(j, "platform", "bpf_cpu_time_ms", "scale");

	(void)state;
	assert_int_equal(vw_model_component_kind(m, 0), VW_MODEL_LOGISTIC);
	for (size_t i = 0; i < ARRAY_SIZE(xs); i++) {
		struct vw_model_result r = eval1(m, "platform", "bpf_cpu_time_ms", xs[i], 0);

		assert_double_near(r.watts, A / (1 + exp(-k * (xs[i] / s - x0))) + off, 1e-9);
		assert_double_near(r.idle_watts, A / (1 + exp(k * x0)) + off, 1e-9);
		assert_int_equal(r.extrapolated, xs[i] > s);
	}
	json_object_put(j);
	vw_model_free(m);
}

/*
 * Core ratio: with machine_spec.cores >= host cores, idle ×= host/spec and the output is scaled
 * idle + (model(x) − model(0)). The builtin carries node type 0's spec (m5.metal, 96).
 */
static void test_core_ratio(void **state)
{
	const char *file = K0712 "intel_rapl_AbsPowerModel.json";
	static const char *const key[] = {"bpf_cpu_time_ms"};
	const unsigned hosts[] = {0, 1, 8, 95, 96, 97, 4096};
	json_object *j = vw_ref_load(file);
	json_object *types = vw_ref_load("kepler-model-db_v0.7_ec2-0.7.11_node_type_index.json");
	double spec = vw_ref_num(types, "0/attrs/cores");
	struct vw_model *plain = load_ok(file);
	struct vw_model *b = NULL;
	const double x = 12000;

	(void)state;
	assert_int_equal(vw_model_load_builtin(&b), 0);
	assert_int_equal(vw_model_spec_cores(b), (unsigned)spec);
	assert_int_equal(vw_model_spec_cores(plain), 0);
	for (size_t h = 0; h < ARRAY_SIZE(hosts); h++) {
		double ratio = hosts[h] > 0 && hosts[h] <= spec ? hosts[h] / spec : 1;

		for (const char *const *c = (const char *const[]){"package", "dram", NULL}; *c;
		     c++) {
			double idle = ref_get(j, *c, "Bias_Weight") * ratio;
			double dyn =
				ref_linear_scale(j, *c, key, &x, 1) - ref_get(j, *c, "Bias_Weight");
			struct vw_model_result r = eval1(b, *c, "bpf_cpu_time_ms", x, hosts[h]);
			struct vw_model_result p = eval1(plain, *c, "bpf_cpu_time_ms", x, hosts[h]);

			assert_double_near(r.idle_watts, idle, EPS);
			assert_double_near(r.watts, idle + dyn, EPS);
			/* Without machine_spec nothing is scaled. */
			assert_double_near(p.watts, ref_linear_scale(j, *c, key, &x, 1), EPS);
		}
	}
	json_object_put(types);
	json_object_put(j);
	vw_model_free(plain);
	vw_model_free(b);
}

/* The builtin is the v0.7.12 intel_rapl AbsPower file plus a machine_spec. */
static void test_builtin(void **state)
{
	struct vw_model *file = load_ok(K0712 "intel_rapl_AbsPowerModel.json");
	struct vw_model *b = NULL;

	(void)state;
	assert_int_equal(vw_model_load_builtin(&b), 0);
	assert_int_equal(strncmp(vw_model_builtin_name, "builtin:", 8), 0);
	assert_non_null(strstr(vw_model_builtin_name, "m5.metal"));
	assert_string_equal(vw_model_trainer(b), "SGDRegressorTrainer");
	assert_int_equal(vw_model_output_type(b), VW_MODEL_ABS_POWER);
	assert_null(vw_model_warning(b));
	assert_int_equal(vw_model_n_components(b), vw_model_n_components(file));
	for (size_t i = 0; i < vw_model_n_components(b); i++) {
		const char *c = vw_model_component(b, i);

		assert_string_equal(c, vw_model_component(file, i));
		for (double x = 0; x < 200000; x += 17000)
			assert_double_near(eval1(b, c, "bpf_cpu_time_ms", x, 0).watts,
					   eval1(file, c, "bpf_cpu_time_ms", x, 0).watts, 0);
	}
	vw_model_free(file);
	vw_model_free(b);
}

/* nx12 LinearRegressionTrainer_1: scale 3.55e-05 on CPU time only makes sense as x·scale. */
static void test_anomaly(void **state)
{
	const char *file = NX12 "rapl_AbsPower_BPFOnly_LinearRegressionTrainer_1.json";
	const char *node_info =
		"{\"platform\": {\"All_Weights\": {\"Bias_Weight\": 1.0, "
		"\"Numerical_Variables\": {\"node_info\": {\"scale\": 0.5, \"weight\": 2.0}}}}}";
	_cleanup_model_ struct vw_model *m = load_ok(file);
	_cleanup_json_ json_object *j = vw_ref_load(file);
	double s = ref_term(j, "package", "bpf_cpu_time_us", "scale");
	const double xs[] = {0, 10000, 20000, 29170};
	struct vw_model *ok;

	(void)state;
	assert_non_null(vw_model_warning(m));
	assert_non_null(strstr(vw_model_warning(m), "x*scale"));
	assert_non_null(strstr(vw_model_warning(m), "bpf_cpu_time_ms"));
	for (size_t i = 0; i < ARRAY_SIZE(xs); i++) {
		struct vw_model_result r = eval1(m, "package", "bpf_cpu_time_us", xs[i], 0);

		assert_double_near(r.watts,
				   ref_get(j, "package", "Bias_Weight") +
					   ref_term(j, "package", "bpf_cpu_time_us", "weight") *
						   xs[i] * s,
				   EPS);
		assert_int_equal(r.extrapolated, xs[i] * s > 1);
	}
	/* A sane file has no warning; node_info (a constant 1) is no rate. */
	ok = load_ok(NX12 "rapl_AbsPower_BPFOnly_SGDRegressorTrainer_1.json");
	assert_null(vw_model_warning(ok));
	vw_model_free(ok);
	ok = parse_ok(node_info, NULL);
	assert_null(vw_model_warning(ok));
	assert_double_near(eval1(ok, "platform", "node_info", 1, 0).watts, 1.0 + 2.0 * 1 / 0.5,
			   EPS);
	vw_model_free(ok);
}

/* The curve's feature is chosen by name, whatever the order in the file. */
static void test_curve_feature_by_name(void **state)
{
	static const struct {
		const char *comp, *numerical, *feature;
		double x, scale;
	} cases[] = {
		{"package",
		 "{\"bpf_page_cache_hit\": {\"scale\": 1.0}, \"bpf_cpu_time_ms\": {\"scale\": 1000.0}}",
		 "bpf_cpu_time_ms", 500, 1000},
		{"package",
		 "{\"cache_miss\": {\"scale\": 10.0}, \"cpu_instructions\": {\"scale\": 100.0}}",
		 "cpu_instructions", 50, 100},
		{"package", "{\"foo\": {\"scale\": 1.0}, \"bar\": {\"scale\": 50.0}}", "bar", 25,
		 50},
		{"dram",
		 "{\"bpf_cpu_time_ms\": {\"scale\": 1000.0}, \"bpf_page_cache_hit\": {\"scale\": 2.0}}",
		 "bpf_page_cache_hit", 1, 2},
		{"package", "{\"foo\": {\"scale\": 20.0}, \"bar\": {\"scale\": 50.0}}", NULL, 0, 0},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char json[512], err[256];
		struct vw_model *m = NULL;
		/* Every other feature gets a value that would change the result if it were used. */
		struct vw_feature f[] = {{"bpf_page_cache_hit", 3},
					 {"bpf_cpu_time_ms", 777},
					 {"cache_miss", 9},
					 {"cpu_instructions", 33},
					 {"foo", 0.7},
					 {"bar", 11}};
		int r;

		snprintf(
			json, sizeof(json),
			"{\"model_name\": \"ExponentialRegressionTrainer_0\", \"%s\": {\"All_Weights\": "
			"{\"Categorical_Variables\": {}, \"Numerical_Variables\": %s, "
			"\"CurveFit_Weights\": [2.0, 1.0, 3.0]}}}",
			cases[i].comp, cases[i].numerical);
		r = vw_model_parse(json, strlen(json), NULL, &m, err, sizeof(err));
		if (!cases[i].feature) {
			assert_int_equal(r, -EINVAL);
			assert_non_null(strstr(err, "cannot tell which feature"));
			continue;
		}
		assert_int_equal(r, 0);
		for (size_t k = 0; k < ARRAY_SIZE(f); k++)
			if (strcmp(f[k].name, cases[i].feature) == 0)
				f[k].value = cases[i].x;
		assert_double_near(eval_n(m, cases[i].comp, f, ARRAY_SIZE(f), 0).watts,
				   2.0 * exp(1.0 * cases[i].x / cases[i].scale) + 3.0, EPS);
		assert_int_equal(vw_model_n_features(m), 1);
		assert_string_equal(vw_model_feature(m, 0), cases[i].feature);
		vw_model_free(m);
	}
}

static void test_aliases(void **state)
{
	(void)state;
	assert_string_equal(vw_model_feature_canonical("bpf_cpu_time_us"), "bpf_cpu_time_ms");
	assert_string_equal(vw_model_feature_canonical("cpu_instr"), "cpu_instructions");
	assert_string_equal(vw_model_feature_canonical("cpu_time"), "cpu_time");
	assert_string_equal(vw_model_feature_canonical("bpf_cpu_time_ms"), "bpf_cpu_time_ms");
}

/* Trainer from model_name, else the origin's base name, else SGD; Dyn from the origin. */
static void test_identity(void **state)
{
	const char *url =
		"https://raw.githubusercontent.com/sustainable-computing-io/kepler-model-db/"
		"main/models/v0.7/ec2-0.7.11/rapl-sysfs/DynPower/BPFOnly/"
		"LogarithmicRegressionTrainer_0.json?raw=1";
	const char *meta = "{\"model_name\": \"Sample\", \"mae\": 13.1, \"machine_spec\": "
			   "{\"processor\": \"intel_xeon_e5_2686v4\", \"cores\": 8, \"chips\": 1}, "
			   "\"platform\": {\"All_Weights\": {\"Bias_Weight\": 5.0, "
			   "\"Numerical_Variables\": {}}}}";
	char *log_json = NULL, path[1024], err[256];
	struct vw_model *m = NULL;
	size_t len;

	(void)state;
	snprintf(path, sizeof(path), "%s/models/%s", VW_TEST_DATA,
		 EC2 "BPFOnly_LogarithmicRegressionTrainer_0.json");
	log_json = vw_fixture_slurp(path, &len);
	assert_non_null(log_json);
	assert_int_equal(vw_model_parse(log_json, len, url, &m, err, sizeof(err)), 0);
	assert_string_equal(vw_model_trainer(m), "LogarithmicRegressionTrainer");
	assert_string_equal(vw_model_name(m), "LogarithmicRegressionTrainer");
	assert_int_equal(vw_model_output_type(m), VW_MODEL_DYN_POWER);
	assert_true(isnan(vw_model_mae(m)));
	vw_model_free(m);
	/* Without an origin the trainer is SGD, and a curve fit is then refused. */
	assert_int_equal(vw_model_parse(log_json, len, NULL, &m, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "not a curve fit"));
	free(log_json);

	m = parse_ok(meta, "/srv/models/AbsPower/whatever.json");
	assert_string_equal(vw_model_name(m), "Sample");
	assert_string_equal(vw_model_trainer(m), "Sample");
	assert_int_equal(vw_model_output_type(m), VW_MODEL_ABS_POWER);
	assert_double_near(vw_model_mae(m), 13.1, 0);
	assert_int_equal(vw_model_spec_cores(m), 8);
	assert_int_equal(vw_model_n_features(m), 0);
	assert_false(vw_model_component_is_zero(m, 0));
	/* 4 host cores of the 8: idle 5 W → 2.5 W. */
	assert_double_near(eval1(m, "platform", "x", 1, 4).watts, 2.5, EPS);
	vw_model_free(m);
}

static void test_eval_errors(void **state)
{
	const char *blowup = "{\"model_name\": \"ExponentialRegressionTrainer_0\", \"package\": {"
			     "\"All_Weights\": {\"Numerical_Variables\": {\"bpf_cpu_time_ms\": "
			     "{\"scale\": 1.0}}, \"CurveFit_Weights\": [1.0, 1000.0, 0.0]}}}";
	struct vw_model *m = load_ok(K0712 "acpi_AbsPowerModel.json");
	struct vw_feature nan_f = {"bpf_cpu_time_ms", NAN}, null_f = {NULL, 1}, ok_f = {"x", 1};
	struct vw_model_input in = {.features = &ok_f, .n_features = 1};
	struct vw_model_result r;

	(void)state;
	assert_int_equal(vw_model_eval(m, 1, &in, &r), -EINVAL);
	assert_int_equal(vw_model_eval(m, 0, NULL, &r), -EINVAL);
	in.features = &nan_f;
	assert_int_equal(vw_model_eval(m, 0, &in, &r), -EINVAL);
	in.features = &null_f;
	assert_int_equal(vw_model_eval(m, 0, &in, &r), -EINVAL);
	assert_null(vw_model_component(m, 1));
	vw_model_free(m);
	m = parse_ok(blowup, NULL);
	ok_f = (struct vw_feature){"bpf_cpu_time_ms", 1e6};
	in.features = &ok_f;
	assert_int_equal(vw_model_eval(m, 0, &in, &r), -ERANGE);
	vw_model_free(m);
	vw_model_free(NULL);
}

#define NV "\"Numerical_Variables\": {\"bpf_cpu_time_ms\": {\"scale\": 10.0, \"weight\": 1.0}}"
#define COMP(aw) "{\"package\": {\"All_Weights\": " aw "}}"
#define TRAINER(t, aw) "{\"model_name\": \"" t "\", \"package\": {\"All_Weights\": " aw "}}"
#define SPEC(s) "{\"machine_spec\": " s ", \"package\": {\"All_Weights\": {" NV "}}}"

static const struct {
	const char *json, *reason;
} hostile[] = {
	{"", "empty"},
	{"{}", "no component"},
	{"[]", "not an object"},
	{"null", "null"},
	{"42", "not an object"},
	{"\"model\"", "not an object"},
	{"{\"package\": ", "truncated"},
	{"{\"package\": {\"All_Weights\": {" NV "}}, }", "invalid JSON"},
	{COMP("{" NV "}") " x", "invalid JSON"},
	{COMP("{" NV "}") " {}", "invalid JSON"},
	{COMP("{\"Bias_Weight\": NaN, " NV "}"), "finite"},
	{COMP("{\"Bias_Weight\": -Infinity, " NV "}"), "finite"},
	{COMP("{\"Bias_Weight\": 1e999, " NV "}"), "finite"},
	{COMP("{\"Bias_Weight\": 2e7, " NV "}"), "absurd"},
	{COMP("{\"Bias_Weight\": 99999999999999999999999, " NV "}"), "absurd"},
	{COMP("{\"Bias_Weight\": \"1\", " NV "}"), "expected a number"},
	{COMP("{\"Bias_Weight\": true, " NV "}"), "expected a number"},
	{COMP("{\"Numerical_Variables\": {\"x\": {\"scale\": 1, \"weight\": -3e7}}}"), "absurd"},
	{COMP("{\"Numerical_Variables\": {\"x\": {\"scale\": 1e300, \"weight\": 1}}}"), "absurd"},
	{COMP("{\"Numerical_Variables\": {\"x\": {\"scale\": -1, \"weight\": 1}}}"), "negative"},
	{COMP("{\"Numerical_Variables\": {\"x\": {\"mean\": 1, \"variance\": -1, \"weight\": 1}}}"),
	 "negative"},
	{COMP("{\"Numerical_Variables\": {\"x\": {\"scale\": 1, \"weight\": 1, \"bogus\": 2}}}"),
	 "unknown key"},
	{COMP("{\"Numerical_Variables\": {\"x\": [1]}}"), "expected an object"},
	{COMP("{\"Numerical_Variables\": []}"), "expected an object"},
	{COMP("[]"), "expected an object"},
	{COMP("{\"Bias_Weight\": 1}"), "no Numerical_Variables"},
	{COMP("{" NV ", \"Foo\": 1}"), "unknown key"},
	{COMP("{" NV ", \"XGboost_Weights\": \"abc\"}"), "XGBoost"},
	{COMP("{" NV ", \"CurveFit_Weights\": [1, 2, 3]}"), "not a curve fit"},
	{COMP("{\"Numerical_Variables\": {\"bad name\": {\"scale\": 1, \"weight\": 1}}}"),
	 "bad feature name"},
	{COMP("{\"Numerical_Variables\": {\"bpf_cpu_time_us\": {\"scale\": 1, \"weight\": 1}, "
	      "\"bpf_cpu_time_ms\": {\"scale\": 1, \"weight\": 1}}}"),
	 "twice"},
	{COMP("{" NV ", \"Categorical_Variables\": {\"arch\": {\"Zen\": {\"weight\": \"x\"}}}}"),
	 "expected a number"},
	{COMP("{" NV ", \"Categorical_Variables\": {\"arch\": {\"Zen\": 1}}}"),
	 "expected an object"},
	{COMP("{" NV ", \"Categorical_Variables\": {\"arch\": {\"Zen\": {\"w\": 1}}}}"), "weight"},
	{"{\"pkg\": {\"All_Weights\": {" NV "}}, \"package\": {\"All_Weights\": {" NV "}}}",
	 "twice"},
	{"{\"package\": {\"All_Weights\": {" NV "}, \"extra\": 1}}", "unknown key"},
	{"{\"gpu\": {\"All_Weights\": {" NV "}}}", "unknown top-level key"},
	{"{\"package\": {}}", "no All_Weights"},
	{"{\"package\": 3}", "expected an object"},
	{"{\"model_name\": 7, \"package\": {\"All_Weights\": {" NV "}}}", "model_name"},
	{"{\"model_name\": \"a\\nb\", \"package\": {\"All_Weights\": {" NV "}}}", "model_name"},
	{SPEC("{\"cores\": \"96\"}"), "expected a number"},
	{SPEC("{\"cores\": 1.5}"), "positive integer"},
	{SPEC("{\"cores\": 0}"), "positive integer"},
	{SPEC("{\"cores\": 1e12}"), "absurd"},
	{SPEC("{\"processor\": [1]}"), "string or a number"},
	{SPEC("[]"), "expected an object"},
	{"{\"mae\": -1, \"package\": {\"All_Weights\": {" NV "}}}", "negative"},
	{TRAINER("LogarithmicRegressionTrainer_0", "{" NV ", \"CurveFit_Weights\": [1, 2, 3, 4]}"),
	 "needs 3"},
	{TRAINER("ExponentialRegressionTrainer_0", "{" NV ", \"CurveFit_Weights\": [1, 2]}"),
	 "needs 3"},
	{TRAINER("LogisticRegressionTrainer_0", "{" NV ", \"CurveFit_Weights\": [1, 2, 3]}"),
	 "needs 4"},
	{TRAINER("LogisticRegressionTrainer_0", "{" NV "}"), "needs 4"},
	{TRAINER("ExponentialRegressionTrainer_0", "{" NV ", \"CurveFit_Weights\": [1, 2, \"3\"]}"),
	 "expected a number"},
	{TRAINER("ExponentialRegressionTrainer_0", "{" NV ", \"CurveFit_Weights\": []}"), "values"},
	{TRAINER("ExponentialRegressionTrainer_0", "{" NV ", \"CurveFit_Weights\": {}}"),
	 "expected an array"},
	{TRAINER("ExponentialRegressionTrainer_0",
		 "{" NV ", \"Bias_Weight\": 1, \"CurveFit_Weights\": [1, 2, 3]}"),
	 "Bias_Weight"},
	{TRAINER("ExponentialRegressionTrainer_0",
		 "{\"Numerical_Variables\": {\"bpf_cpu_time_ms\": {\"weight\": 1}}, "
		 "\"CurveFit_Weights\": [1, 2, 3]}"),
	 "no scale"},
};

static void check_rejected(const char *json, size_t len, const char *reason)
{
	struct vw_model *m = NULL;
	char err[256];
	int r = vw_model_parse(json, len, NULL, &m, err, sizeof(err));

	if (r != -EINVAL)
		fail_msg("accepted (%d): %.120s", r, json);
	assert_null(m);
	assert_true(err[0] != '\0');
	assert_null(strchr(err, '\n'));
	if (reason && !strstr(err, reason))
		fail_msg("reason '%s', expected '%s' for %.120s", err, reason, json);
}

static void test_hostile(void **state)
{
	static const char nul[] = COMP("{" NV "}") "\0{}";
	const size_t deep = 200000;
	char *s = malloc(deep + 1);

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(hostile); i++)
		check_rejected(hostile[i].json, strlen(hostile[i].json), hostile[i].reason);
	check_rejected(nul, sizeof(nul) - 1, "trailing data");
	assert_non_null(s);
	memset(s, '[', deep);
	check_rejected(s, 60000, "invalid JSON"); /* past the depth limit, under the values' */
	check_rejected(s, deep, "values");
	for (size_t i = 0; i + 5 <= deep; i += 5)
		memcpy(s + i, "{\"a\":", 5);
	check_rejected(s, deep, "invalid JSON");
	free(s);
	/* Something close to valid but too large is refused before parsing. */
	s = calloc(1, VW_MODEL_MAX_BYTES + 2);
	assert_non_null(s);
	memset(s, ' ', VW_MODEL_MAX_BYTES + 1);
	s[0] = '{';
	s[VW_MODEL_MAX_BYTES] = '}';
	check_rejected(s, VW_MODEL_MAX_BYTES + 1, "too large");
	/* Within the size, 2 million values ("0,"), the keys of an object alike: refused before
	 * json-c builds its tree of them (150 MB; 300 MB under ASan), commas in strings not
	 * counted. */
	memset(s, 0, VW_MODEL_MAX_BYTES + 2);
	memcpy(s, "{\"package\": [", 13);
	for (size_t i = 13; i + 2 < VW_MODEL_MAX_BYTES; i += 2)
		memcpy(s + i, "0,", 2);
	memcpy(s + VW_MODEL_MAX_BYTES - 3, "0]}", 3);
	check_rejected(s, VW_MODEL_MAX_BYTES, "more than 65536 values");
	memset(s, ',', VW_MODEL_MAX_BYTES);
	memcpy(s, "{\"a\": \"", 7);
	memcpy(s + VW_MODEL_MAX_BYTES - 2, "\"}", 2);
	check_rejected(s, VW_MODEL_MAX_BYTES, "unknown");
	free(s);
}

/* Every strict prefix of a model is refused. */
static void test_truncated(void **state)
{
	char path[1024];
	size_t len;
	char *json;

	(void)state;
	snprintf(path, sizeof(path), "%s/models/%s", VW_TEST_DATA,
		 K0712 "intel_rapl_AbsPowerModel.json");
	json = vw_fixture_slurp(path, &len);
	assert_non_null(json);
	len = (size_t)(strrchr(json, '}') - json);
	for (size_t n = 0; n <= len; n++)
		check_rejected(json, n, NULL);
	free(json);
}

/* 1 MB of random bytes, and fixtures with random bytes changed: refused or sane, never a crash. */
static void test_garbage_and_mutations(void **state)
{
	static const char *const files[] = {
		K0712 "intel_rapl_AbsPowerModel.json",
		EC2 "BPFOnly_LogarithmicRegressionTrainer_0.json",
		KMS "AbsComponentModelWeight_Full_KerasCompWeightFullPipeline_"
		    "KerasCompWeightFullPipeline.json"};
	const size_t big = 1 << 20;
	uint64_t seed = 0x9e3779b97f4a7c15ULL;
	size_t accepted = 0, refused = 0;
	char *buf = malloc(big), path[1024], err[256];

	(void)state;
	assert_non_null(buf);
	for (size_t i = 0; i < big; i++)
		buf[i] = (char)vw_test_xorshift(&seed);
	check_rejected(buf, big, NULL);
	free(buf);
	for (size_t f = 0; f < ARRAY_SIZE(files); f++) {
		size_t len;
		char *orig;

		snprintf(path, sizeof(path), "%s/models/%s", VW_TEST_DATA, files[f]);
		orig = vw_fixture_slurp(path, &len);
		assert_non_null(orig);
		for (int it = 0; it < 3000; it++) {
			char *mut = malloc(len);
			struct vw_model *m = NULL;
			int r;

			assert_non_null(mut);
			memcpy(mut, orig, len);
			for (uint64_t k = vw_test_xorshift(&seed) % 4 + 1; k > 0; k--)
				mut[vw_test_xorshift(&seed) % len] =
					"0123456789.-e\"{}[],:aE \x01\xff"[vw_test_xorshift(&seed) % 26];
			r = vw_model_parse(mut, len, files[f], &m, err, sizeof(err));
			if (r == 0) {
				struct vw_feature in_f = {"bpf_cpu_time_ms", 5000};
				struct vw_model_input in = {
					.features = &in_f, .n_features = 1, .host_cores = 4};
				struct vw_model_result res;

				for (size_t c = 0; c < vw_model_n_components(m); c++) {
					r = vw_model_eval(m, c, &in, &res);
					assert_true(r == 0 || r == -ERANGE);
					assert_true(r < 0 ||
						    (isfinite(res.watts) && res.watts >= 0));
				}
				accepted++;
			} else {
				assert_int_equal(r, -EINVAL);
				assert_true(err[0] != '\0');
				refused++;
			}
			vw_model_free(m);
			free(mut);
		}
		free(orig);
	}
	print_message("# mutations: %zu accepted, %zu refused\n", accepted, refused);
	assert_true(refused > 0);
}

static void test_load_file_errors(void **state)
{
	struct vw_model *m = NULL;
	char err[256];

	(void)state;
	assert_int_equal(load("no-such-model.json", &m, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "cannot read"));
	assert_int_equal(vw_model_load_file(VW_TEST_DATA, &m, err, sizeof(err)), -EISDIR);
	assert_null(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixture_table),
		cmocka_unit_test(test_eval_v07_scale),
		cmocka_unit_test(test_eval_counters),
		cmocka_unit_test(test_eval_v06_alias),
		cmocka_unit_test(test_eval_mean_variance),
		cmocka_unit_test(test_eval_categorical),
		cmocka_unit_test(test_eval_exponential),
		cmocka_unit_test(test_eval_logarithmic_clamp),
		cmocka_unit_test(test_eval_logistic),
		cmocka_unit_test(test_core_ratio),
		cmocka_unit_test(test_builtin),
		cmocka_unit_test(test_anomaly),
		cmocka_unit_test(test_curve_feature_by_name),
		cmocka_unit_test(test_aliases),
		cmocka_unit_test(test_identity),
		cmocka_unit_test(test_eval_errors),
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_eval_absurd_clamped),
		cmocka_unit_test(test_garbage_and_mutations),
		cmocka_unit_test(test_load_file_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

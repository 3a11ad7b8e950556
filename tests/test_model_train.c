/* SPDX-License-Identifier: Apache-2.0 */
/*
 * shared/model/model_train.c and shared/model/csv.c: exact recovery of known coefficients, tolerances
 * derived from the noise, deterministic folds, the logarithm beating a line on concave data,
 * weight files that our loader reads back to identical predictions, CSV errors with line
 * numbers, and the nx12 comparison with the published LinearRegressionTrainer_1 on the same
 * held-out rows.
 */
#include "vw_test.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csv.h"
#include "fixture.h"
#include "macro.h"
#include "model.h"
#include "model_train.h"

#define NX12_RAPL VW_TEST_DATA "/nx12/kepler-model-db_v0.6_nx12_preprocess_abs_default_rapl_BPFOnly.csv"
#define NX12_LINEAR                                                                                \
	VW_TEST_DATA "/models/kepler-model-db_v0.6_nx12_std_v0.6_rapl_AbsPower_BPFOnly_"           \
		     "LinearRegressionTrainer_1.json"
#define PUBLISHED_LINEAR_MAE_W 23.1 /* docs/models.md, whole file */

static size_t *all_rows(size_t n)
{
	size_t *rows = calloc(n, sizeof(*rows));

	assert_non_null(rows);
	for (size_t i = 0; i < n; i++)
		rows[i] = i;
	return rows;
}

/* Noise-free y = 4.5 + 2·x0 − 0.75·x1 + 0.001·x2 over features of very different ranges. */
static void test_linear_exact(void **state)
{
	enum { N = 200, P = 3 };
	static const double slope[P] = {2, -0.75, 0.001}, icpt = 4.5;
	double x[N * P], y[N];
	_cleanup_free_ size_t *rows = all_rows(N);
	struct vw_train_opts o = {.kind = VW_TRAIN_LINEAR};
	struct vw_train_fit f;
	uint64_t s = 42;

	(void)state;
	for (size_t i = 0; i < N; i++) {
		x[i * P + 0] = vw_test_rng_double(&s, 0, 10);
		x[i * P + 1] = vw_test_rng_double(&s, -300, 500);
		x[i * P + 2] = vw_test_rng_double(&s, 0, 1e5);
		y[i] = icpt;
		for (size_t j = 0; j < P; j++)
			y[i] += slope[j] * x[i * P + j];
	}
	assert_int_equal(vw_train_fit(&o, x, y, P, rows, N, &f), 0);
	assert_double_near(f.bias, icpt, 1e-9);
	for (size_t j = 0; j < P; j++) {
		double m = 0;

		for (size_t i = 0; i < N; i++)
			m = fmax(m, fabs(x[i * P + j]));
		assert_double_near(f.scale[j], m, 0); /* MaxAbsScaler */
		assert_double_near(f.weight[j] / f.scale[j], slope[j], 1e-9);
	}
	for (size_t i = 0; i < N; i++)
		assert_double_near(vw_train_predict(&f, x + i * P), y[i], 1e-9 * fmax(1, y[i]));
}

/*
 * y = 10 + 0.5·x + e, e uniform in [−h, h] (σ = h/√3): the estimates must lie within 4 standard
 * errors, σ/√Sxx for the slope and σ·√(1/n + x̄²/Sxx) for the intercept.
 */
static void test_linear_noise(void **state)
{
	enum { N = 500 };
	const double h = 3, sigma = h / sqrt(3);
	double x[N], y[N], mean = 0, sxx = 0, se_slope, se_icpt;
	_cleanup_free_ size_t *rows = all_rows(N);
	struct vw_train_opts o = {.kind = VW_TRAIN_LINEAR};
	struct vw_train_fit f, ridge;
	uint64_t s = 7;

	(void)state;
	for (size_t i = 0; i < N; i++) {
		x[i] = vw_test_rng_double(&s, 0, 100);
		y[i] = 10 + 0.5 * x[i] + vw_test_rng_double(&s, -h, h);
		mean += x[i] / N;
	}
	for (size_t i = 0; i < N; i++)
		sxx += (x[i] - mean) * (x[i] - mean);
	se_slope = sigma / sqrt(sxx);
	se_icpt = sigma * sqrt(1.0 / N + mean * mean / sxx);
	assert_int_equal(vw_train_fit(&o, x, y, 1, rows, N, &f), 0);
	print_message("# noise ±%g: slope %.6f (±%.6f), intercept %.5f (±%.5f)\n", h,
		      f.weight[0] / f.scale[0], 4 * se_slope, f.bias, 4 * se_icpt);
	assert_double_near(f.weight[0] / f.scale[0], 0.5, 4 * se_slope);
	assert_double_near(f.bias, 10, 4 * se_icpt);
	/* ridge shrinks the slope towards 0 */
	o.ridge = 100;
	assert_int_equal(vw_train_fit(&o, x, y, 1, rows, N, &ridge), 0);
	assert_true(fabs(ridge.weight[0]) < fabs(f.weight[0]));
}

static void test_linear_degenerate(void **state)
{
	double x[] = {1, 2, 2, 4, 3, 6, 4, 8}, y[] = {1, 2, 3, 4}, beta[2], icpt;
	double c[] = {1, 5, 2, 5, 3, 5, 4, 5};
	_cleanup_free_ size_t *rows = all_rows(4);
	struct vw_train_opts o = {.kind = VW_TRAIN_LINEAR};
	struct vw_train_fit f;

	(void)state;
	/* x1 = 2·x0: collinear, unless ridge */
	assert_int_equal(vw_train_lstsq(x, y, 4, 2, 0, beta, &icpt), -EDOM);
	assert_int_equal(vw_train_lstsq(x, y, 4, 2, 1, beta, &icpt), 0);
	/* a constant column gets weight 0, the intercept takes it */
	assert_int_equal(vw_train_fit(&o, c, y, 2, rows, 4, &f), 0);
	assert_double_near(f.weight[1], 0, 0);
	assert_double_near(f.weight[0] / f.scale[0], 1, 1e-12);
	assert_double_near(f.bias, 0, 1e-12);
	assert_int_equal(vw_train_fit(&o, c, y, 0, rows, 4, &f), -EINVAL);
	assert_int_equal(vw_train_fit(&o, c, y, 2, rows, 0, &f), -EINVAL);
}

static void check_fold_sizes(const unsigned *fold, size_t n, unsigned k)
{
	size_t count[VW_TRAIN_MAX_FOLDS] = {0}, lo = n, hi = 0;

	for (size_t i = 0; i < n; i++) {
		assert_true(fold[i] < k);
		count[fold[i]]++;
	}
	for (unsigned f = 0; f < k; f++) {
		lo = VW_MIN(lo, count[f]);
		hi = VW_MAX(hi, count[f]);
	}
	assert_true(hi - lo <= 1);
}

static void test_folds(void **state)
{
	enum { N = 103 };
	unsigned a[N], b[N], c[N];
	bool differ = false;

	(void)state;
	assert_int_equal(vw_train_folds(N, 10, 1, false, a), 0);
	assert_int_equal(vw_train_folds(N, 10, 1, false, b), 0);
	assert_memory_equal(a, b, sizeof(a));
	check_fold_sizes(a, N, 10);
	assert_int_equal(vw_train_folds(N, 10, 2, false, c), 0);
	for (size_t i = 0; i < N; i++)
		differ |= a[i] != c[i];
	assert_true(differ);
	/* fixed numbers: the split is the same on every machine */
	assert_memory_equal(a, ((unsigned[]){8, 7, 2, 4, 4, 1, 2, 1}), 8 * sizeof(unsigned));
	assert_int_equal(vw_train_folds(N, 7, 99, true, c), 0);
	check_fold_sizes(c, N, 7);
	for (size_t i = 1; i < N; i++)
		assert_true(c[i] == c[i - 1] || c[i] == c[i - 1] + 1);
	assert_int_equal(vw_train_folds(N, 1, 1, false, a), -EINVAL);
	assert_int_equal(vw_train_folds(5, 6, 1, false, a), -EINVAL);
	assert_int_equal(vw_train_folds(N, VW_TRAIN_MAX_FOLDS + 1, 1, false, a), -EINVAL);
}

/* Concave data: y = 40 + 60·ln(8·x/xmax + 1), x in [0, 5000]. */
static void concave(double *x, double *y, size_t n, double noise, uint64_t seed)
{
	for (size_t i = 0; i < n; i++) {
		x[i] = vw_test_rng_double(&seed, 0, 5000);
		y[i] = 40 + 60 * log(8 * x[i] / 5000 + 1);
		if (noise > 0)
			y[i] += vw_test_rng_double(&seed, -noise, noise);
	}
}

static void test_log_exact(void **state)
{
	enum { N = 300 };
	double x[N], y[N];
	_cleanup_free_ size_t *rows = all_rows(N);
	struct vw_train_opts o = {.kind = VW_TRAIN_LOG};
	struct vw_train_fit f;

	(void)state;
	concave(x, y, N, 0, 3);
	assert_int_equal(vw_train_fit(&o, x, y, 1, rows, N, &f), 0);
	/* b is relative to this fit's scale (max x), not to 5000 */
	assert_double_near(f.curve[1] * 5000 / f.scale[0], 8, 1e-6);
	assert_double_near(f.curve[0], 60, 1e-6);
	assert_double_near(f.curve[2], 40, 1e-6);
	x[5] = -1;
	assert_int_equal(vw_train_fit(&o, x, y, 1, rows, N, &f), -EDOM);
}

static double cv_mae(enum vw_train_kind kind, const double *x, const double *y, size_t n,
		     const unsigned *fold)
{
	struct vw_train_opts o = {.kind = kind};
	_cleanup_free_ double *pred = calloc(n, sizeof(*pred));
	struct vw_train_score s;

	assert_non_null(pred);
	assert_int_equal(vw_train_cross_validate(&o, x, y, 1, n, fold, 5, pred), 0);
	vw_train_score(pred, y, n, &s);
	assert_int_equal(s.rows, n);
	return s.mae_w;
}

static void test_log_beats_linear(void **state)
{
	enum { N = 400 };
	double x[N], y[N], lin, lg;
	unsigned fold[N];

	(void)state;
	concave(x, y, N, 2, 11);
	assert_int_equal(vw_train_folds(N, 5, 1, false, fold), 0);
	lin = cv_mae(VW_TRAIN_LINEAR, x, y, N, fold);
	lg = cv_mae(VW_TRAIN_LOG, x, y, N, fold);
	print_message("# concave data, 5-fold held-out MAE: linear %.3f, log %.3f\n", lin, lg);
	assert_true(lg < lin);
	assert_true(lg < 1.1); /* uniform noise ±2 has mean |e| = 1 */
}

/* R²: 1 for exact predictions, 0 for the mean, below 0 for worse, NAN for constant actuals. */
static void test_score_r2(void **state)
{
	const double y[] = {1, 2, 3, 4}, mean[] = {2.5, 2.5, 2.5, 2.5}, flat[] = {3, 3, 3, 3};
	const double off[] = {2, 1, 4, 3}; /* Σe² = 4, Σ(y - ȳ)² = 5 */
	struct vw_train_score s;

	(void)state;
	vw_train_score(y, y, 4, &s);
	assert_double_near(s.r2, 1, 0);
	vw_train_score(mean, y, 4, &s);
	assert_double_near(s.r2, 0, 1e-15);
	vw_train_score(off, y, 4, &s);
	assert_double_near(s.r2, 1 - 4.0 / 5, 1e-15);
	assert_double_near(s.mae_w, 1, 0);
	vw_train_score(y, flat, 4, &s);
	assert_true(isnan(s.r2));
}

/* Write the fits as a weight file, parse it with our loader: identical predictions. */
static void check_roundtrip(const struct vw_train_fit *fits, const char *origin,
			    const double *x, size_t n, size_t p, const char *const *feats)
{
	static const char *const zones[] = {"package", "dram"};
	struct vw_feature in_f[4];
	struct vw_model_input in = {.features = in_f, .n_features = p};
	_cleanup_free_ char *json = NULL;
	struct vw_model *m = NULL;
	char err[256];

	assert_int_equal(vw_train_to_json(fits, zones, 2, feats, &json), 0);
	if (vw_model_parse(json, strlen(json), origin, &m, err, sizeof(err)) < 0)
		fail_msg("%s: %s\n%s", origin, err, json);
	assert_null(vw_model_warning(m));
	assert_string_equal(vw_model_trainer(m), vw_train_trainer(fits[0].kind));
	assert_int_equal(vw_model_n_components(m), 2);
	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < p; j++)
			in_f[j] = (struct vw_feature){feats[j], x[i * p + j]};
		for (size_t z = 0; z < 2; z++) {
			struct vw_model_result r;
			double want = vw_train_predict(&fits[z], x + i * p);

			assert_string_equal(vw_model_component(m, z), zones[z]);
			assert_int_equal(vw_model_eval(m, z, &in, &r), 0);
			assert_double_near(r.watts, want < 0 ? 0 : want, 0);
		}
	}
	vw_model_free(m);
}

static void test_roundtrip(void **state)
{
	enum { N = 120 };
	static const char *const feats[] = {"bpf_cpu_time_ms", "cpu_instructions"};
	double x[N * 2], y1[N], y2[N], xs[N];
	_cleanup_free_ size_t *rows = all_rows(N);
	struct vw_train_fit lin[2], lg[2];
	struct vw_train_opts o = {.kind = VW_TRAIN_LINEAR};
	uint64_t s = 5;

	(void)state;
	concave(xs, y1, N, 1, 9);
	for (size_t i = 0; i < N; i++) {
		x[2 * i] = xs[i];
		x[2 * i + 1] = vw_test_rng_double(&s, 0, 3e9);
		y2[i] = 20 + x[2 * i + 1] * 1e-8 + vw_test_rng_double(&s, -1, 1);
	}
	assert_int_equal(vw_train_fit(&o, x, y1, 2, rows, N, &lin[0]), 0);
	assert_int_equal(vw_train_fit(&o, x, y2, 2, rows, N, &lin[1]), 0);
	o.kind = VW_TRAIN_LOG;
	assert_int_equal(vw_train_fit(&o, x, y1, 2, rows, N, &lg[0]), 0);
	assert_int_equal(vw_train_fit(&o, x, y2, 2, rows, N, &lg[1]), 0);
	check_roundtrip(lin, "out/AbsPower/Basic/LinearRegressionTrainer_0.json", x, N, 2, feats);
	check_roundtrip(lg, "out/AbsPower/Basic/LogarithmicRegressionTrainer_0.json", x, N, 2,
			feats);
	/* mixed kinds cannot share a file */
	lin[1] = lg[1];
	{
		_cleanup_free_ char *json = NULL;

		assert_int_equal(vw_train_to_json(lin, (const char *[]){"package", "dram"}, 2,
						  feats, &json),
				 -EINVAL);
	}
}

/* Write text to the group's tmpdir/name, read it with the CSV reader; the error must contain want. */
static void csv_expect(const char *name, const char *text, int ret, const char *want)
{
	char path[1024], err[512] = "";
	struct vw_csv *c = NULL;
	double *v = NULL;
	size_t rows = 0, cols[] = {0, 1};
	int r;

	assert_int_equal(vw_fixture_write(vw_fixture_tmpdir, name, text, 0), 0);
	snprintf(path, sizeof(path), "%s/%s", vw_fixture_tmpdir, name);
	r = vw_csv_open(path, &c, err, sizeof(err));
	if (r == 0) {
		r = vw_csv_read_numbers(c, cols, 2, 3, &v, &rows, err, sizeof(err));
		vw_csv_free(c);
	}
	free(v);
	if (r != ret || !strstr(err, want))
		fail_msg("%s: %d '%s' (want %d '%s')", name, r, err, ret, want);
}

static void test_csv(void **state)
{
	char path[1024], err[256];
	struct vw_csv *c = NULL;
	double *v = NULL;
	size_t rows, cols[] = {2, 0};

	(void)state;
	csv_expect("num.csv", "a,b\n1,2\n3,x\n", -EINVAL, "num.csv:3: column b: bad number 'x'");
	csv_expect("nan.csv", "a,b\n1,nan\n", -EINVAL, "nan.csv:2: column b");
	csv_expect("short.csv", "a,b\n1,2\n\n3\n", -EINVAL, "short.csv:4: wrong number of fields");
	csv_expect("long.csv", "a,b\n1,2,3\n", -EINVAL, "long.csv:2: wrong number of fields");
	csv_expect("dup.csv", "a,a\n1,2\n", -EINVAL, "dup.csv:1: column 'a' twice");
	csv_expect("empty.csv", "", -ENODATA, "empty, no header");
	csv_expect("nodata.csv", "a,b\n\n", -ENODATA, "no data rows");
	csv_expect("cap.csv", "a,b\n1,2\n1,2\n1,2\n1,2\n", -EFBIG, "cap.csv:5: more than 3");
	/* quotes, an empty (index) name, CRLF, blank lines, other columns free text */
	assert_int_equal(vw_fixture_write(vw_fixture_tmpdir, "ok.csv",
					  ",\"x,y\",z\r\n0,\"1,5\",2.5\r\n\r\n1,txt,-3e2\r\n", 0),
			 0);
	snprintf(path, sizeof(path), "%s/ok.csv", vw_fixture_tmpdir);
	assert_int_equal(vw_csv_open(path, &c, err, sizeof(err)), 0);
	assert_int_equal(vw_csv_n_columns(c), 3);
	assert_string_equal(vw_csv_column_name(c, 1), "x,y");
	assert_int_equal(vw_csv_find(c, "z"), 2);
	assert_int_equal(vw_csv_find(c, "q"), (size_t)-1);
	assert_int_equal(vw_csv_read_numbers(c, cols, 2, 0, &v, &rows, err, sizeof(err)), 0);
	assert_int_equal(rows, 2);
	assert_double_near(v[0], 2.5, 0);
	assert_double_near(v[2], -300, 0);
	assert_double_near(v[3], 1, 0);
	free(v);
	vw_csv_free(c);
	assert_int_equal(vw_csv_open("/nonexistent/x.csv", &c, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "x.csv"));
}

/* The published LinearRegressionTrainer_1 (x·scale, as our loader applies it) on one row. */
static double published_linear(const struct vw_model *m, double x)
{
	struct vw_feature f = {"bpf_cpu_time_us", x};
	struct vw_model_input in = {.features = &f, .n_features = 1};
	struct vw_model_result r;

	assert_string_equal(vw_model_component(m, 0), "package");
	assert_int_equal(vw_model_eval(m, 0, &in, &r), 0);
	return r.watts;
}

/*
 * nx12, 10-fold cross-validation with seed 1: every row is predicted once by a model that did
 * not see it, so the held-out rows are the whole file, the rows the published models were
 * scored on in docs/models.md (they, trained on a random 90 % of this file, saw most of them).
 */
static void test_nx12(void **state)
{
	size_t cols[2], n;
	_cleanup_free_ double *v = NULL, *x = NULL, *y = NULL, *pred = NULL, *pub = NULL;
	_cleanup_free_ unsigned *fold = NULL;
	struct vw_train_score ours, lin, published;
	struct vw_csv *c = NULL;
	struct vw_model *m = NULL;
	struct vw_train_opts o = {.kind = VW_TRAIN_LOG};
	char err[256];

	(void)state;
	assert_int_equal(vw_csv_open(NX12_RAPL, &c, err, sizeof(err)), 0);
	cols[0] = vw_csv_find(c, "bpf_cpu_time_us");
	cols[1] = vw_csv_find(c, "package_power");
	assert_int_equal(vw_csv_read_numbers(c, cols, 2, 0, &v, &n, err, sizeof(err)), 0);
	vw_csv_free(c);
	assert_int_equal(n, 2202);
	x = calloc(n, sizeof(*x));
	y = calloc(n, sizeof(*y));
	pred = calloc(n, sizeof(*pred));
	pub = calloc(n, sizeof(*pub));
	fold = calloc(n, sizeof(*fold));
	assert_true(x && y && pred && pub && fold);
	for (size_t i = 0; i < n; i++) {
		x[i] = v[2 * i];
		y[i] = v[2 * i + 1];
	}
	assert_int_equal(vw_model_load_file(NX12_LINEAR, &m, err, sizeof(err)), 0);
	for (size_t i = 0; i < n; i++)
		pub[i] = published_linear(m, x[i]);
	vw_model_free(m);
	vw_train_score(pub, y, n, &published);

	assert_int_equal(vw_train_folds(n, 10, 1, false, fold), 0);
	assert_int_equal(vw_train_cross_validate(&o, x, y, 1, n, fold, 10, pred), 0);
	vw_train_score(pred, y, n, &ours);
	o.kind = VW_TRAIN_LINEAR;
	assert_int_equal(vw_train_cross_validate(&o, x, y, 1, n, fold, 10, pred), 0);
	vw_train_score(pred, y, n, &lin);
	print_message("# nx12 package, %zu rows: published LinearRegressionTrainer_1 MAE %.2f W "
		      "MAPE %.1f %%; held-out (10-fold, seed 1) linear %.2f W %.1f %%, "
		      "logarithmic %.2f W %.1f %% (%.2f W better than published)\n",
		      n, published.mae_w, published.mape_pct, lin.mae_w, lin.mape_pct, ours.mae_w,
		      ours.mape_pct, published.mae_w - ours.mae_w);
	assert_true(ours.mae_w < published.mae_w);
	assert_true(ours.mae_w < PUBLISHED_LINEAR_MAE_W);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_linear_exact),
		cmocka_unit_test(test_linear_noise),
		cmocka_unit_test(test_linear_degenerate),
		cmocka_unit_test(test_folds),
		cmocka_unit_test(test_log_exact),
		cmocka_unit_test(test_log_beats_linear),
		cmocka_unit_test(test_score_r2),
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_csv),
		cmocka_unit_test(test_nx12),
	};

	return cmocka_run_group_tests(tests, vw_fixture_tmpdir_setup, vw_fixture_tmpdir_teardown);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Runs the built virtwatt-model on the nx12 data set with Kepler's models and checks every
 * prediction and the MAE/MAPE against a computation made here from the CSV and from numbers read
 * out of the model JSON with json-c. Prints the figures as TAP comments.
 */
#include "vw_test.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "fixture.h"
#include "macro.h"
#include "model_ref.h"

#ifndef VW_MODEL_CLI
#error "VW_MODEL_CLI (the path of the built virtwatt-model) must be set by meson"
#endif

#define NX12 "kepler-model-db_v0.6_nx12_std_v0.6_"
#define RAPL_CSV "kepler-model-db_v0.6_nx12_preprocess_abs_default_rapl_BPFOnly.csv"
#define ACPI_CSV "kepler-model-db_v0.6_nx12_preprocess_abs_default_acpi_BPFOnly.csv"
#define DYN_CSV "kepler-model-db_v0.6_nx12_preprocess_dyn_default_min_rapl_BPFOnly.csv"
#define RAPL_V0712 "kepler-v0.7.12_data_model_weight_intel_rapl_AbsPowerModel.json"
#define MAX_COMPS 5
#define MAX_ROWS 4096

extern char **environ;

struct cli_result {
	int status;
	char *out, *err;
};

struct cli_score {
	char comp[16];
	size_t rows, mape_rows, zeros, clamped, extrapolated;
	double mae, mape; /* mape NAN for n/a */
};

/* The CLI's stdout, parsed. */
struct cli_table {
	size_t n_rows, n_comps, n_scores;
	char comps[MAX_COMPS][16];
	double *pred[MAX_COMPS];
	struct cli_score scores[MAX_COMPS];
};

static char *data_path(const char *sub, const char *file)
{
	char *p;

	assert_true(asprintf(&p, "%s/%s/%s", VW_TEST_DATA, sub, file) > 0);
	return p;
}

/* Run the CLI with argv (NULL-terminated, argv[0] excluded); capture stdout and stderr. */
static struct cli_result run_cli(const char *const *args)
{
	char *argv[16] = {(char *)VW_MODEL_CLI}, out_path[1024], err_path[1024];
	posix_spawn_file_actions_t fa;
	struct cli_result res = {0};
	size_t n = 1, len;
	pid_t pid;
	int st;

	for (; args[n - 1] && n < ARRAY_SIZE(argv) - 1; n++)
		argv[n] = (char *)args[n - 1];
	snprintf(out_path, sizeof(out_path), "%s/stdout", vw_fixture_tmpdir);
	snprintf(err_path, sizeof(err_path), "%s/stderr", vw_fixture_tmpdir);
	assert_int_equal(posix_spawn_file_actions_init(&fa), 0);
	posix_spawn_file_actions_addopen(&fa, 1, out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_int_equal(posix_spawn(&pid, VW_MODEL_CLI, &fa, NULL, argv, environ), 0);
	posix_spawn_file_actions_destroy(&fa);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	res.status = WEXITSTATUS(st);
	res.out = vw_fixture_slurp(out_path, &len);
	res.err = vw_fixture_slurp(err_path, &len);
	assert_non_null(res.out);
	assert_non_null(res.err);
	return res;
}

static void cli_result_free(struct cli_result *r)
{
	free(r->out);
	free(r->err);
}

static void parse_header(struct cli_table *t, char *line)
{
	char *save = NULL, *tok = strtok_r(line, ",", &save);

	assert_string_equal(tok, "row");
	while ((tok = strtok_r(NULL, ",", &save))) {
		size_t len = strlen(tok);

		assert_true(t->n_comps < MAX_COMPS);
		assert_true(len > 6 && strcmp(tok + len - 6, "_watts") == 0);
		snprintf(t->comps[t->n_comps], sizeof(t->comps[0]), "%.*s", (int)(len - 6), tok);
		t->pred[t->n_comps] = calloc(MAX_ROWS, sizeof(double));
		assert_non_null(t->pred[t->n_comps]);
		t->n_comps++;
	}
}

static void parse_row(struct cli_table *t, char *line)
{
	char *end;
	double idx = strtod(line, &end);

	assert_true(t->n_rows < MAX_ROWS);
	assert_double_near(idx, (double)t->n_rows, 0);
	for (size_t c = 0; c < t->n_comps; c++) {
		assert_true(*end == ',');
		t->pred[c][t->n_rows] = strtod(end + 1, &end);
	}
	assert_true(*end == '\0');
	t->n_rows++;
}

static void parse_score(struct cli_table *t, const char *line)
{
	struct cli_score *s = &t->scores[t->n_scores++];
	char mape[32];

	assert_int_equal(sscanf(line,
				"# %15[^:]: rows=%zu mae_w=%lf mape_pct=%31s mape_rows=%zu "
				"zero_actuals_skipped=%zu clamped=%zu extrapolated=%zu",
				s->comp, &s->rows, &s->mae, mape, &s->mape_rows, &s->zeros,
				&s->clamped, &s->extrapolated),
			 8);
	s->mape = strcmp(mape, "n/a") == 0 ? NAN : strtod(mape, NULL);
}

static struct cli_table parse_output(char *out)
{
	struct cli_table t = {0};
	char *save = NULL, *line = strtok_r(out, "\n", &save);

	assert_non_null(line);
	parse_header(&t, line);
	while ((line = strtok_r(NULL, "\n", &save))) {
		if (line[0] == '#')
			parse_score(&t, line);
		else
			parse_row(&t, line);
	}
	return t;
}

static void table_free(struct cli_table *t)
{
	for (size_t c = 0; c < t->n_comps; c++)
		free(t->pred[c]);
}

static const struct cli_score *score_of(const struct cli_table *t, const char *comp)
{
	for (size_t i = 0; i < t->n_scores; i++)
		if (strcmp(t->scores[i].comp, comp) == 0)
			return &t->scores[i];
	fail_msg("no score line for %s", comp);
	return &t->scores[MAX_COMPS - 1]; /* not reached: fail_msg() does not return */
}

/* One column of a CSV as numbers (the test's own reader). */
static double *read_column(const char *csv, const char *col, size_t *ret_n)
{
	FILE *f = fopen(csv, "re");
	double *v = calloc(MAX_ROWS, sizeof(double));
	char line[4096];
	size_t idx = (size_t)-1, n = 0;

	assert_non_null(f);
	assert_non_null(v);
	assert_non_null(fgets(line, sizeof(line), f));
	line[strcspn(line, "\r\n")] = '\0';
	{
		char *rest = line, *tok;

		for (size_t i = 0; (tok = strsep(&rest, ",")); i++) /* empty names count */
			if (strcmp(tok, col) == 0)
				idx = i;
	}
	if (idx == (size_t)-1)
		fail_msg("%s: no column %s", csv, col);
	while (fgets(line, sizeof(line), f)) {
		char *p = line;

		for (size_t i = 0; i < idx; i++)
			p = strchr(p, ',') + 1;
		assert_true(n < MAX_ROWS);
		v[n++] = strtod(p, NULL);
	}
	fclose(f);
	*ret_n = n;
	return v;
}

/* A linear one-feature component as written in the JSON, and how to apply it. */
struct ref_model {
	const char *label;
	const char *file, *key; /* the feature as spelled in the file */
	bool multiply;          /* x·scale (the nx12 LinearRegression anomaly) */
	double idle_ratio;      /* machine_spec core ratio, 1 without */
};

/* The prediction, clamped at 0; *clamped and *extrapolated as the CLI counts them. */
static double ref_predict(json_object *j, const struct ref_model *rm, const char *comp, double x,
			  bool *clamped, bool *extrapolated)
{
	char path[256];
	double bias, w, s, p, xhat;

	snprintf(path, sizeof(path), "%s/All_Weights/Bias_Weight", comp);
	bias = vw_ref_num(j, path);
	snprintf(path, sizeof(path), "%s/All_Weights/Numerical_Variables/%s/weight", comp, rm->key);
	w = vw_ref_num(j, path);
	snprintf(path, sizeof(path), "%s/All_Weights/Numerical_Variables/%s/scale", comp, rm->key);
	s = vw_ref_num(j, path);
	xhat = rm->multiply ? x * s : x / s;
	p = bias * rm->idle_ratio + w * xhat;
	*clamped = p < 0 || bias < 0;
	*extrapolated = w != 0 && xhat > 1;
	return p < 0 ? 0 : p;
}

/* Check the CLI's rows and scores for one component; print MAE and MAPE. */
static void check_component(const struct cli_table *t, size_t c, json_object *j,
			    const struct ref_model *rm, const char *csv, const double *x, size_t n)
{
	char col[64];
	size_t n_act, mape_rows = 0, zeros = 0, n_clamped = 0, n_extrapolated = 0;
	double *act, abs_sum = 0, pct_sum = 0;
	const struct cli_score *s;

	snprintf(col, sizeof(col), "%s_power", t->comps[c]);
	act = read_column(csv, col, &n_act);
	assert_int_equal(n_act, n);
	for (size_t i = 0; i < n; i++) {
		bool clamped, extrapolated;
		double want = ref_predict(j, rm, t->comps[c], x[i], &clamped, &extrapolated);

		assert_double_near(t->pred[c][i], want, 5e-7);
		abs_sum += fabs(want - act[i]);
		n_clamped += clamped;
		n_extrapolated += extrapolated;
		if (fabs(act[i]) < 1e-6) { /* the CLI's documented zero: below 1 µW */
			zeros++;
			continue;
		}
		mape_rows++;
		pct_sum += fabs(want - act[i]) / fabs(act[i]);
	}
	s = score_of(t, t->comps[c]);
	assert_int_equal(s->rows, n);
	assert_int_equal(s->mape_rows, mape_rows);
	assert_int_equal(s->zeros, zeros);
	assert_int_equal(s->clamped, n_clamped);
	assert_int_equal(s->extrapolated, n_extrapolated);
	assert_double_near(s->mae, abs_sum / (double)n, 1e-6);
	if (mape_rows) {
		assert_double_near(s->mape, 100 * pct_sum / (double)mape_rows,
				   1e-6 * fmax(1, s->mape));
		print_message("# %-36s %-8s MAE %6.2f W  MAPE %7.1f %% (%zu rows, %zu zero actuals "
			      "skipped, %zu extrapolated)\n",
			      rm->label, t->comps[c], s->mae, s->mape, n, zeros, n_extrapolated);
	} else {
		assert_true(isnan(s->mape));
	}
	free(act);
}

/* Run the CLI on one model and CSV; check every row and every score against the reference. */
static void check_run(const char *model_arg, const struct ref_model *rm, const char *csv_file,
		      const char *host_cores, const char *comps)
{
	char *csv = data_path("nx12", csv_file);
	char *model =
		strcmp(model_arg, "builtin") ? data_path("models", model_arg) : strdup("builtin");
	const char *args[] = {"--host-cores", host_cores, model, csv, NULL};
	struct cli_result r = run_cli(host_cores ? args : args + 2);
	json_object *j = vw_ref_load(rm->file);
	struct cli_table t;
	char got[128] = "";
	size_t n;
	double *x = read_column(csv, "bpf_cpu_time_us", &n);

	if (r.status != 0)
		fail_msg("exit %d: %s", r.status, r.err);
	t = parse_output(r.out);
	assert_int_equal(t.n_rows, n);
	for (size_t c = 0; c < t.n_comps; c++) {
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", c ? "," : "",
			 t.comps[c]);
		check_component(&t, c, j, rm, csv, x, n);
	}
	assert_string_equal(got, comps);
	table_free(&t);
	json_object_put(j);
	cli_result_free(&r);
	free(x);
	free(csv);
	free(model);
}

static void test_nx12_sgd(void **state)
{
	const struct ref_model rm = {"nx12 SGD_1 rapl AbsPower, rapl csv",
				     NX12 "rapl_AbsPower_BPFOnly_SGDRegressorTrainer_1.json",
				     "bpf_cpu_time_us", false, 1};
	const struct ref_model acpi = {"nx12 SGD_1 acpi AbsPower, acpi csv",
				       NX12 "acpi_AbsPower_BPFOnly_SGDRegressorTrainer_1.json",
				       "bpf_cpu_time_us", false, 1};
	const struct ref_model dyn = {"nx12 SGD_1 rapl DynPower, dyn csv",
				      NX12 "rapl_DynPower_BPFOnly_SGDRegressorTrainer_1.json",
				      "bpf_cpu_time_us", false, 1};

	(void)state;
	check_run(rm.file, &rm, RAPL_CSV, NULL, "package,core,uncore,dram");
	check_run(acpi.file, &acpi, ACPI_CSV, NULL, "platform");
	check_run(dyn.file, &dyn, DYN_CSV, NULL, "package,core,uncore,dram");
}

/* LinearRegressionTrainer_1: evaluated as x·scale, with a warning on stderr. */
static void test_nx12_linear_anomaly(void **state)
{
	const struct ref_model rm = {"nx12 Linear_1 (x*scale), rapl csv",
				     NX12 "rapl_AbsPower_BPFOnly_LinearRegressionTrainer_1.json",
				     "bpf_cpu_time_us", true, 1};
	char *model = data_path("models", rm.file), *csv = data_path("nx12", RAPL_CSV);
	const char *args[] = {model, csv, NULL};
	struct cli_result r = run_cli(args);

	(void)state;
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.err, "warning"));
	assert_non_null(strstr(r.err, "x*scale"));
	cli_result_free(&r);
	free(model);
	free(csv);
	check_run(rm.file, &rm, RAPL_CSV, NULL, "package,core,uncore,dram");
}

/* Kepler's shipped default (m5.metal) on nx12, and the builtin with the core ratio. */
static void test_v0712_and_builtin(void **state)
{
	json_object *types = vw_ref_load("kepler-model-db_v0.7_ec2-0.7.11_node_type_index.json");
	struct ref_model rm = {"kepler v0.7.12 intel_rapl, rapl csv", RAPL_V0712, "bpf_cpu_time_ms",
			       false, 1};

	(void)state;
	check_run(RAPL_V0712, &rm, RAPL_CSV, NULL, "package,core,uncore,dram");
	rm.idle_ratio = 16 / vw_ref_num(types, "0/attrs/cores");
	rm.label = "builtin --host-cores 16, rapl csv";
	check_run("builtin", &rm, RAPL_CSV, "16", "package,core,uncore,dram");
	json_object_put(types);
}

static void expect_failure(const char *const *args, int status, const char *msg)
{
	struct cli_result r = run_cli(args);

	if (r.status != status || !strstr(r.err, msg))
		fail_msg("exit %d (want %d), stderr '%s' (want '%s')", r.status, status, r.err,
			 msg);
	cli_result_free(&r);
}

static void test_errors(void **state)
{
	_cleanup_free_ char *rapl = data_path("nx12", RAPL_CSV);
	_cleanup_free_ char *acpi = data_path("nx12", ACPI_CSV);
	_cleanup_free_ char *counters = data_path(
		"models",
		"kepler-model-db_v0.7_ec2-0.7.11_rapl-sysfs_AbsPower_CounterOnly_SGDRegressorTrainer_0.json");
	_cleanup_free_ char *index =
		data_path("models", "kepler-model-db_v0.7_ec2-0.7.11_node_type_index.json");
	char bad[1024], short_row[1024];
	struct cli_result r;

	(void)state;
	snprintf(bad, sizeof(bad), "%s/bad.csv", vw_fixture_tmpdir);
	assert_int_equal(vw_fixture_write(vw_fixture_tmpdir, "bad.csv",
					  "bpf_cpu_time_us,package_power\n100,50\n200,x1\n", 0),
			 0);
	snprintf(short_row, sizeof(short_row), "%s/short.csv", vw_fixture_tmpdir);
	assert_int_equal(vw_fixture_write(vw_fixture_tmpdir, "short.csv",
					  "bpf_cpu_time_us,package_power\n100\n", 0),
			 0);
	expect_failure((const char *[]){NULL}, 2, "expected MODEL.json and DATA.csv");
	expect_failure((const char *[]){"--format", "json", "builtin", rapl, NULL}, 2, "only csv");
	expect_failure((const char *[]){"--host-cores", "0", "builtin", rapl, NULL}, 2,
		       "host-cores");
	expect_failure((const char *[]){"--bogus", "builtin", rapl, NULL}, 2, "Usage");
	expect_failure((const char *[]){counters, acpi, NULL}, 1,
		       "no column for feature cache_miss");
	expect_failure((const char *[]){"builtin", bad, NULL}, 1,
		       "bad.csv:3: column package_power");
	expect_failure((const char *[]){"builtin", short_row, NULL}, 1, "short.csv:2:");
	expect_failure((const char *[]){index, rapl, NULL}, 1, "not a model");
	expect_failure((const char *[]){"builtin", "/nonexistent/data.csv", NULL}, 1, "data.csv");
	r = run_cli((const char *[]){"--help", NULL});
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "zero_actuals_skipped"));
	assert_non_null(strstr(r.out, "Exit status"));
	cli_result_free(&r);
}

/* The held-out MAE the train subcommand printed for one output type, zone and trainer. */
static double train_mae(const char *out, const char *key)
{
	const char *p = strstr(out, key);
	double mae;

	if (!p)
		fail_msg("no line '%s' in:\n%s", key, out);
	p = strchr(p + strlen(key), ','); /* after heldout_rows */
	assert_non_null(p);
	mae = strtod(p + 1, NULL);
	assert_true(mae > 0);
	return mae;
}

/*
 * virtwatt-model train on nx12: exit 0, files in the kepler-model-db layout that the evaluate
 * mode loads, and a held-out package MAE below the published LinearRegressionTrainer_1's on
 * the same rows (every row is held out once; check_run recomputes the published figure).
 */
static void test_train(void **state)
{
	char *rapl = data_path("nx12", RAPL_CSV), *linear = data_path(
		"models", NX12 "rapl_AbsPower_BPFOnly_LinearRegressionTrainer_1.json");
	char out[1024], model[1200];
	struct cli_result r, e;
	struct cli_table t;
	double log_mae, lin_mae;

	(void)state;
	snprintf(out, sizeof(out), "%s/trained", vw_fixture_tmpdir);
	r = run_cli((const char *[]){"train", "-o", out, "--seed", "1", "-k", "10", rapl, NULL});
	if (r.status != 0)
		fail_msg("train: exit %d: %s", r.status, r.err);
	log_mae = train_mae(r.out, "AbsPower,package,LogarithmicRegressionTrainer,2202");
	lin_mae = train_mae(r.out, "AbsPower,package,LinearRegressionTrainer,2202");
	assert_non_null(strstr(r.out, "# AbsPower: selected LogarithmicRegressionTrainer"));
	snprintf(model, sizeof(model), "%s/AbsPower/BPFOnly/LogarithmicRegressionTrainer_0.json",
		 out);
	assert_non_null(strstr(r.out, model));
	e = run_cli((const char *[]){linear, rapl, NULL});
	assert_int_equal(e.status, 0);
	t = parse_output(e.out);
	print_message("# train nx12 package held-out MAE: logarithmic %.2f W, linear %.2f W; "
		      "published LinearRegressionTrainer_1 %.2f W on the same rows\n",
		      log_mae, lin_mae, score_of(&t, "package")->mae);
	assert_true(log_mae < score_of(&t, "package")->mae);
	table_free(&t);
	cli_result_free(&e);
	/* the written file evaluates with the evaluate mode */
	e = run_cli((const char *[]){model, rapl, NULL});
	assert_int_equal(e.status, 0);
	assert_non_null(strstr(e.out, "# package: rows=2202"));
	cli_result_free(&e);
	cli_result_free(&r);
	/* the same seed, the same figures */
	r = run_cli((const char *[]){"train", "-n", "--seed", "1", "--output-type", "abs", rapl,
				     NULL});
	assert_int_equal(r.status, 0);
	assert_double_near(train_mae(r.out, "AbsPower,package,LogarithmicRegressionTrainer,2202"),
			   log_mae, 0);
	assert_null(strstr(r.out, "wrote"));
	cli_result_free(&r);
	free(rapl);
	free(linear);
}

static void test_train_errors(void **state)
{
	char *rapl = data_path("nx12", RAPL_CSV), bad[1024];
	struct cli_result r;
	static const char *const flags[] = {"--output-dir", "--zones", "--features",
					    "--output-type", "--trainer", "--curve-feature",
					    "--folds", "--seed", "--split", "--ridge",
					    "--node-type", "--feature-group", "--max-rows",
					    "--dry-run"};

	(void)state;
	snprintf(bad, sizeof(bad), "%s/train-bad.csv", vw_fixture_tmpdir);
	assert_int_equal(vw_fixture_write(vw_fixture_tmpdir, "train-bad.csv",
					  "bpf_cpu_time_ms,package_power\n1,2\n3,4\n5,oops\n", 0),
			 0);
	expect_failure((const char *[]){"train", NULL}, 2, "expected one DATA.csv");
	expect_failure((const char *[]){"train", "-k", "1", rapl, NULL}, 2, "--folds");
	expect_failure((const char *[]){"train", "--trainer", "svr", rapl, NULL}, 2,
		       "unknown 'svr'");
	expect_failure((const char *[]){"train", "--zones", "gpu", "-n", rapl, NULL}, 1,
		       "zone gpu: unknown");
	expect_failure((const char *[]){"train", "--features", "cache_miss", "-n", rapl, NULL},
		       1, "no column for feature cache_miss");
	expect_failure((const char *[]){"train", "-n", bad, NULL}, 1,
		       "train-bad.csv:4: column package_power: bad number 'oops'");
	r = run_cli((const char *[]){"train", "--help", NULL});
	assert_int_equal(r.status, 0);
	for (size_t i = 0; i < ARRAY_SIZE(flags); i++)
		if (!strstr(r.out, flags[i]))
			fail_msg("train --help does not explain %s", flags[i]);
	cli_result_free(&r);
	free(rapl);
}

/*
 * "auto" is what the daemons pick without --model.file on this machine (named on stderr, as
 * in their log and virtwatt_node_power_source_info{model}), and that name given back as
 * builtin:percpu-... evaluates to the same numbers, so a user can reproduce the estimate.
 */
static void test_auto_and_percpu(void **state)
{
	char csv[1024], proc[1024], name[160];
	struct cli_result a, b, c;
	const char *at;

	(void)state;
	snprintf(csv, sizeof(csv), "%s/cpu.csv", vw_fixture_tmpdir);
	assert_int_equal(vw_fixture_write(vw_fixture_tmpdir, "cpu.csv",
					  "bpf_cpu_time_ms\n0\n250\n1000\n4000\n", 0),
			 0);
	/* A 4-CPU Cascade Lake (an AWS m5's Xeon Platinum 8259CL), as its cpuinfo reads. */
	{
		char text[2048] = "";
		size_t n = 0;

		for (int i = 0; i < 4; i++)
			n += (size_t)snprintf(text + n, sizeof(text) - n,
					      "processor\t: %d\nvendor_id\t: GenuineIntel\ncpu family\t: 6\n"
					      "model\t\t: 85\nmodel name\t: Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz\n"
					      "stepping\t: 7\nphysical id\t: 0\ncore id\t\t: %d\n\n",
					      i, i / 2);
		assert_int_equal(vw_fixture_write(vw_fixture_tmpdir, "proc/cpuinfo", text, 0), 0);
	}
	snprintf(proc, sizeof(proc), "%s/proc", vw_fixture_tmpdir);
	a = run_cli((const char *[]){"--procfs", proc, "auto", csv, NULL});
	if (a.status != 0)
		fail_msg("auto: %s", a.err);
	at = strstr(a.err, "virtwatt-model: auto: builtin:percpu-");
	assert_non_null(at);
	assert_int_equal(sscanf(at + strlen("virtwatt-model: auto: "), "%159s", name), 1);
	assert_string_equal(name, "builtin:percpu-Cascade_Lake-4vcpu");
	b = run_cli((const char *[]){"--host-cores", "4", name, csv, NULL});
	assert_int_equal(b.status, 0);
	assert_string_equal(a.out, b.out);
	/* It is not Kepler's default model: the numbers differ. */
	c = run_cli((const char *[]){"builtin", csv, NULL});
	assert_int_equal(c.status, 0);
	assert_string_not_equal(a.out, c.out);
	cli_result_free(&a);
	cli_result_free(&b);
	cli_result_free(&c);
	expect_failure((const char *[]){"builtin:percpu-Nowhere-4vcpu", csv, NULL}, 1,
		       "no per-vCPU figures for \"Nowhere\"");
	expect_failure((const char *[]){"builtin:percpu-4vcpu", csv, NULL}, 1,
		       "expected builtin:percpu-ARCH-Nvcpu");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nx12_sgd),
		cmocka_unit_test(test_nx12_linear_anomaly),
		cmocka_unit_test(test_v0712_and_builtin),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_auto_and_percpu),
		cmocka_unit_test(test_train),
		cmocka_unit_test(test_train_errors),
	};

	return cmocka_run_group_tests(tests, vw_fixture_tmpdir_setup, vw_fixture_tmpdir_teardown);
}

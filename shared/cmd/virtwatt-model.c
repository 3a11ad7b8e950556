/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtwatt-model: evaluate a Kepler power model on every row of a CSV, and score it against the
 * CSV's measured <component>_power columns (MAE, MAPE); "virtwatt-model train" fits models
 * (train.c).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csv.h"
#include "fileio.h"
#include "macro.h"
#include "model.h"
#include "procfs.h"
#include "train.h"

enum { EXIT_OK = 0, EXIT_DATA = 1, EXIT_USAGE = 2, DONE = -1 /* --help, --version */ };

#define NO_COLUMN ((size_t)-1)
#define ZERO_W 1e-6 /* an actual below 1 µW is 0 (float noise of idle-removed data) for MAPE */

struct options {
	unsigned host_cores;
	const char *model;
	const char *data;
	const char *procfs; /* for MODEL "auto": this machine's processors */
};

/* Accuracy of one component against its <component>_power column. */
struct score {
	size_t actual_col; /* NO_COLUMN: no measurements */
	size_t rows, mape_rows, zeros, clamped, extrapolated;
	double abs_err_sum, abs_pct_sum;
};

struct run {
	struct options *opt; /* load_model may set host_cores ("auto") */
	struct vw_model *model;
	FILE *in;
	char **header;
	size_t n_cols;
	size_t *feature_col; /* per model feature */
	struct vw_feature *features;
	struct score *scores; /* per component */
	struct vw_model_result *results;
	double *actuals;
	size_t line_no;
};

static void usage(FILE *f)
{
	fputs("Usage: virtwatt-model [--host-cores N] [--format csv] MODEL.json DATA.csv\n"
	      "       virtwatt-model train [OPTIONS] DATA.csv   (see virtwatt-model train --help)\n"
	      "\n"
	      "Evaluate a Kepler power model (a weight JSON of any era, see docs/models.md) on every\n"
	      "row of DATA.csv and print one CSV line per row: the row index (from 0), then one\n"
	      "prediction in W per component, in columns named <component>_watts. MODEL may be\n"
	      "\"builtin\" (or \"builtin:kepler\") for Kepler's default model compiled in,\n"
	      "\"builtin:percpu-ARCH-Nvcpu\" for a per-vCPU model as the daemons name it in their\n"
	      "log and virtwatt_node_power_source_info{model} (builtin:percpu-Cascade_Lake-4vcpu),\n"
	      "or \"auto\" for what virtwatt-host and virtwatt-guest pick on this machine without\n"
	      "--model.file (--model.builtin=auto: this processor's per-vCPU model, else Kepler's\n"
	      "default; its name on stderr, and --host-cores defaults to this machine's CPUs).\n"
	      "\n"
	      "The CSV's header names the features, as Kepler's per-second rates; aliases are\n"
	      "accepted (bpf_cpu_time_us is bpf_cpu_time_ms, cpu_instr is cpu_instructions). Other\n"
	      "columns are ignored. Every feature the model uses must have a column.\n"
	      "\n"
	      "When the CSV has a <component>_power column (W), the accuracy follows the rows on\n"
	      "stdout as comment lines, one per such component:\n"
	      "  # <component>: rows=N mae_w=X mape_pct=Y mape_rows=N zero_actuals_skipped=N "
	      "clamped=N extrapolated=N\n"
	      "MAE is the mean |prediction - actual|; MAPE the mean |prediction - actual| / actual\n"
	      "over the rows whose actual is not 0, i.e. not below 1 uW (mape_rows;\n"
	      "zero_actuals_skipped says how many were left out; mape_pct=n/a when none is left).\n"
	      "clamped counts the rows whose raw output (or idle) was negative or over 10 kW and\n"
	      "so clamped to 0 or 10 kW;\n"
	      "extrapolated those with an input beyond the training range.\n"
	      "\n"
	      "Options:\n"
	      "  --host-cores N  logical CPUs of the machine the data came from: with a model whose\n"
	      "                  machine_spec has at least N cores, idle is scaled by N/cores\n"
	      "  --format csv    output format (csv, the only one, is the default)\n"
	      "  --procfs PATH   the procfs whose cpuinfo \"auto\" reads (default: /proc)\n"
	      "  -h, --help      show this help\n"
	      "  --version       show the version\n"
	      "\n"
	      "Exit status: 0 success, 1 bad model or data (the reason on stderr), 2 usage error.\n",
	      f);
}

static int parse_args(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{"host-cores", required_argument, NULL, 'c'},
		{"format", required_argument, NULL, 'f'},
		{"procfs", required_argument, NULL, 'p'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	uint64_t v;
	int c;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			if (vw_parse_u64(optarg, &v) < 0 || v == 0 || v > 65536) {
				fprintf(stderr, "virtwatt-model: --host-cores: not 1..65536: %s\n",
					optarg);
				return EXIT_USAGE;
			}
			o->host_cores = (unsigned)v;
			break;
		case 'f':
			if (strcmp(optarg, "csv") != 0) {
				fprintf(stderr,
					"virtwatt-model: --format: only csv is supported\n");
				return EXIT_USAGE;
			}
			break;
		case 'p':
			o->procfs = optarg;
			break;
		case 'h':
			usage(stdout);
			return DONE;
		case 'V':
			printf("virtwatt-model %s\n", VW_VERSION);
			return DONE;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, "virtwatt-model: expected MODEL.json and DATA.csv\n");
		usage(stderr);
		return EXIT_USAGE;
	}
	o->model = argv[optind];
	o->data = argv[optind + 1];
	return EXIT_OK;
}

static size_t column_of(const struct run *run, const char *name, bool canonical)
{
	for (size_t i = 0; i < run->n_cols; i++) {
		const char *h =
			canonical ? vw_model_feature_canonical(run->header[i]) : run->header[i];

		if (strcmp(h, name) == 0)
			return i;
	}
	return NO_COLUMN;
}

static int read_header(struct run *run, char **line, size_t *cap)
{
	size_t max = 4096;

	if (getline(line, cap, run->in) < 0) {
		fprintf(stderr, "virtwatt-model: %s: empty, no header\n", run->opt->data);
		return -EINVAL;
	}
	run->line_no = 1;
	run->header = calloc(max, sizeof(*run->header));
	if (!run->header)
		return -ENOMEM;
	run->n_cols = vw_csv_split(*line, run->header, max);
	if (run->n_cols == 0) {
		fprintf(stderr, "virtwatt-model: %s:1: too many columns\n", run->opt->data);
		return -EINVAL;
	}
	for (size_t i = 0; i < run->n_cols; i++) {
		run->header[i] = strdup(run->header[i]);
		if (!run->header[i]) {
			run->n_cols = i;
			return -ENOMEM;
		}
	}
	return 0;
}

/* Find a column for every feature the model uses, and the <component>_power columns. */
static int map_columns(struct run *run)
{
	size_t nf = vw_model_n_features(run->model), nc = vw_model_n_components(run->model);
	char name[96];

	run->feature_col = calloc(nf ? nf : 1, sizeof(*run->feature_col));
	run->features = calloc(nf ? nf : 1, sizeof(*run->features));
	run->scores = calloc(nc, sizeof(*run->scores));
	run->results = calloc(nc, sizeof(*run->results));
	run->actuals = calloc(nc, sizeof(*run->actuals));
	if (!run->feature_col || !run->features || !run->scores || !run->results || !run->actuals)
		return -ENOMEM;
	for (size_t f = 0; f < nf; f++) {
		const char *feat = vw_model_feature(run->model, f);

		run->feature_col[f] = column_of(run, feat, true);
		if (run->feature_col[f] == NO_COLUMN) {
			fprintf(stderr,
				"virtwatt-model: %s: no column for feature %s (aliases accepted)\n",
				run->opt->data, feat);
			return -EINVAL;
		}
		run->features[f].name = feat;
	}
	for (size_t c = 0; c < nc; c++) {
		snprintf(name, sizeof(name), "%s_power", vw_model_component(run->model, c));
		run->scores[c].actual_col = column_of(run, name, false);
	}
	return 0;
}

static int field_number(const struct run *run, char **fields, size_t col, double *ret)
{
	if (vw_csv_parse_number(fields[col], ret) == 0)
		return 0;
	fprintf(stderr, "virtwatt-model: %s:%zu: column %s: bad number '%s'\n", run->opt->data,
		run->line_no, run->header[col], fields[col]);
	return -EINVAL;
}

static void score_add(struct score *s, const struct vw_model_result *r, double actual)
{
	double err = fabs(r->watts - actual);

	s->rows++;
	s->abs_err_sum += err;
	s->clamped += r->clamped;
	s->extrapolated += r->extrapolated;
	if (fabs(actual) < ZERO_W) {
		s->zeros++;
		return;
	}
	s->mape_rows++;
	s->abs_pct_sum += err / fabs(actual);
}

/* Evaluate every component on one split row, then (all fields good) print its line. */
static int eval_row(struct run *run, char **fields, size_t row)
{
	struct vw_model_input in = {.features = run->features,
				    .n_features = vw_model_n_features(run->model),
				    .host_cores = run->opt->host_cores};
	size_t nc = vw_model_n_components(run->model);

	for (size_t f = 0; f < in.n_features; f++)
		if (field_number(run, fields, run->feature_col[f], &run->features[f].value) < 0)
			return -EINVAL;
	for (size_t c = 0; c < nc; c++) {
		if (run->scores[c].actual_col != NO_COLUMN &&
		    field_number(run, fields, run->scores[c].actual_col, &run->actuals[c]) < 0)
			return -EINVAL;
		if (vw_model_eval(run->model, c, &in, &run->results[c]) < 0) {
			fprintf(stderr,
				"virtwatt-model: %s:%zu: %s: the model's output is not finite\n",
				run->opt->data, run->line_no, vw_model_component(run->model, c));
			return -ERANGE;
		}
	}
	printf("%zu", row);
	for (size_t c = 0; c < nc; c++) {
		printf(",%.6f", run->results[c].watts);
		if (run->scores[c].actual_col != NO_COLUMN)
			score_add(&run->scores[c], &run->results[c], run->actuals[c]);
	}
	putchar('\n');
	return 0;
}

static int eval_rows(struct run *run, char **line, size_t *cap)
{
	_cleanup_free_ char **fields = calloc(run->n_cols + 1, sizeof(*fields));
	size_t row = 0;

	if (!fields)
		return -ENOMEM;
	while (getline(line, cap, run->in) >= 0) {
		size_t n;

		run->line_no++;
		if ((*line)[strspn(*line, " \t\r\n")] == '\0')
			continue;
		n = vw_csv_split(*line, fields, run->n_cols + 1);
		if (n != run->n_cols) {
			fprintf(stderr, "virtwatt-model: %s:%zu: %s fields, the header has %zu\n",
				run->opt->data, run->line_no, n ? "wrong number of" : "too many",
				run->n_cols);
			return -EINVAL;
		}
		if (eval_row(run, fields, row++) < 0)
			return -EINVAL;
	}
	if (row == 0) {
		fprintf(stderr, "virtwatt-model: %s: no data rows\n", run->opt->data);
		return -EINVAL;
	}
	return 0;
}

static void print_scores(const struct run *run)
{
	for (size_t c = 0; c < vw_model_n_components(run->model); c++) {
		const struct score *s = &run->scores[c];

		if (s->actual_col == NO_COLUMN || s->rows == 0)
			continue;
		printf("# %s: rows=%zu mae_w=%.6f ", vw_model_component(run->model, c), s->rows,
		       s->abs_err_sum / (double)s->rows);
		if (s->mape_rows > 0)
			printf("mape_pct=%.6f", 100 * s->abs_pct_sum / (double)s->mape_rows);
		else
			printf("mape_pct=n/a");
		printf(" mape_rows=%zu zero_actuals_skipped=%zu clamped=%zu extrapolated=%zu\n",
		       s->mape_rows, s->zeros, s->clamped, s->extrapolated);
	}
}

/* "builtin:percpu-Cascade_Lake-4vcpu": the architecture (underscores are spaces) and vCPUs. */
static int load_percpu(const char *name, struct vw_model **ret)
{
	const char *spec = name + strlen("builtin:percpu-"), *dash = strrchr(spec, '-');
	char arch[128], got[160];
	uint64_t n;
	size_t len;

	if (!dash || dash == spec || (size_t)(dash - spec) >= sizeof(arch) ||
	    strlen(dash) < 6 || strcmp(dash + strlen(dash) - 4, "vcpu") != 0)
		goto bad;
	len = strlen(dash + 1) - 4;
	{
		char num[32];

		if (len == 0 || len >= sizeof(num))
			goto bad;
		memcpy(num, dash + 1, len);
		num[len] = '\0';
		if (vw_parse_u64(num, &n) < 0 || n == 0 || n > 65536)
			goto bad;
	}
	memcpy(arch, spec, (size_t)(dash - spec));
	arch[dash - spec] = '\0';
	for (char *c = arch; *c; c++)
		*c = *c == '_' ? ' ' : *c;
	if (vw_model_percpu(arch, (unsigned)n, ret, got, sizeof(got)) == 0)
		return 0;
	fprintf(stderr, "virtwatt-model: %s: no per-vCPU figures for \"%s\"\n", name, arch);
	return -ENOENT;
bad:
	fprintf(stderr, "virtwatt-model: %s: expected builtin:percpu-ARCH-Nvcpu (e.g. "
			"builtin:percpu-Cascade_Lake-4vcpu)\n",
		name);
	return -EINVAL;
}

/* What the daemons pick without --model.file: vw_model_source_load with --model.builtin=auto
 * on this machine's processors. Its name to stderr; *host_cores: this machine's CPUs. */
static int load_auto(const struct options *o, struct vw_model **ret, unsigned *host_cores)
{
	_cleanup_close_ int fd = vw_root_open(o->procfs ? o->procfs : "/proc");
	struct vw_cpu_info *cpus = NULL;
	size_t n = 0;
	char origin[256] = "", err[256] = "";
	int r;

	if (fd < 0 || vw_procfs_read_cpuinfo(fd, &cpus, &n) < 0) {
		fprintf(stderr, "virtwatt-model: auto: cannot read %s/cpuinfo\n",
			o->procfs ? o->procfs : "/proc");
		return -ENOENT;
	}
	r = vw_model_source_load(&(struct vw_model_source_opts){ .cpus = cpus, .n_cpus = n,
								 .percpu = true },
				 ret, origin, sizeof(origin), err, sizeof(err));
	free(cpus);
	if (r < 0) {
		fprintf(stderr, "virtwatt-model: auto: %s\n", err[0] ? err : strerror(-r));
		return r;
	}
	fprintf(stderr, "virtwatt-model: auto: %s (%zu CPUs)\n", origin, n);
	if (!*host_cores)
		*host_cores = (unsigned)n;
	return 0;
}

static int load_model(struct options *o, struct vw_model **ret)
{
	char err[256];
	int r;

	if (strcmp(o->model, "builtin") == 0 || strcmp(o->model, "builtin:kepler") == 0)
		return vw_model_load_builtin(ret);
	if (strncmp(o->model, "builtin:percpu-", strlen("builtin:percpu-")) == 0)
		return load_percpu(o->model, ret);
	if (strcmp(o->model, "auto") == 0)
		return load_auto(o, ret, &o->host_cores);
	r = vw_model_load_file(o->model, ret, err, sizeof(err));
	if (r < 0)
		fprintf(stderr, "virtwatt-model: %s: %s\n", o->model, err);
	else if (vw_model_warning(*ret))
		fprintf(stderr, "virtwatt-model: warning: %s: %s\n", o->model,
			vw_model_warning(*ret));
	return r;
}

static void print_header(const struct run *run)
{
	printf("row");
	for (size_t c = 0; c < vw_model_n_components(run->model); c++)
		printf(",%s_watts", vw_model_component(run->model, c));
	putchar('\n');
}

static void run_free(struct run *run)
{
	for (size_t i = 0; i < run->n_cols; i++)
		free(run->header[i]);
	free(run->header);
	free(run->feature_col);
	free(run->features);
	free(run->scores);
	free(run->results);
	free(run->actuals);
	if (run->in)
		fclose(run->in);
	vw_model_free(run->model);
}

static int run_all(struct run *run)
{
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;
	int r;

	if (load_model(run->opt, &run->model) < 0)
		return -EINVAL;
	run->in = fopen(run->opt->data, "re");
	if (!run->in) {
		fprintf(stderr, "virtwatt-model: %s: %s\n", run->opt->data, strerror(errno));
		return -errno;
	}
	r = read_header(run, &line, &cap);
	if (r == 0)
		r = map_columns(run);
	if (r < 0)
		return r;
	print_header(run);
	r = eval_rows(run, &line, &cap);
	if (r == 0)
		print_scores(run);
	return r;
}

int main(int argc, char **argv)
{
	struct options o = {0};
	struct run run = {.opt = &o};
	int r;

	if (argc > 1 && strcmp(argv[1], "train") == 0)
		return vw_cmd_train(argc - 1, argv + 1);
	r = parse_args(argc, argv, &o);

	if (r != EXIT_OK)
		return r == DONE ? EXIT_OK : r;
	r = run_all(&run);
	run_free(&run);
	if (r == -ENOMEM)
		fprintf(stderr, "virtwatt-model: out of memory\n");
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "virtwatt-model: write error on stdout\n");
		return EXIT_DATA;
	}
	return r < 0 ? EXIT_DATA : EXIT_OK;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtwatt-model train: fit per-zone AbsPower/DynPower models (linear and logarithmic) on a CSV,
 * score them by k-fold cross-validation, write Kepler weight files and check that our loader
 * reads every file back to the same predictions.
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
#include "model_train.h"
#include "train.h"

enum { EXIT_OK = 0, EXIT_DATA = 1, EXIT_USAGE = 2, DONE = -1 };

#define MAX_ZONES 5
#define N_KINDS 2
#define N_TYPES 2
#define MATCH_REL 1e-9 /* reloaded file vs fit: relative difference allowed */

static const char *const known_zones[MAX_ZONES] = {"package", "core", "uncore", "dram",
						   "platform"};
static const char *const type_names[N_TYPES] = {"AbsPower", "DynPower"};

struct train_opts {
	const char *data, *out_dir, *group, *curve_name;
	char *feature_buf, *zone_buf;
	const char *features[VW_TRAIN_MAX_FEATURES];
	const char *zones[MAX_ZONES];
	size_t n_features, n_zones;
	bool type[N_TYPES], kind[N_KINDS], blocks, dry_run;
	unsigned k, node_type;
	uint64_t seed;
	double ridge;
	size_t max_rows;
};

struct dataset {
	size_t n_rows, p, n_zones;
	double *x;            /* n_rows × p */
	double *y[MAX_ZONES]; /* per zone, W */
	const char *zone[MAX_ZONES];
	unsigned *fold;
};

static void usage(FILE *f)
{
	fputs("Usage: virtwatt-model train [OPTIONS] DATA.csv\n"
	      "\n"
	      "Fit power models per zone on DATA.csv, score them on held-out rows by k-fold\n"
	      "cross-validation, and write Kepler model-server weight files that Kepler and\n"
	      "virtwatt both load. DATA.csv has a header; the features are per-second rates as\n"
	      "Kepler exports them (bpf_cpu_time_ms = CPU ms per second, alias bpf_cpu_time_us),\n"
	      "the zones' measured power is in columns <zone>_power (W). Other columns are ignored.\n"
	      "\n"
	      "Two trainers, both Kepler's: LinearRegressionTrainer (least squares,\n"
	      "P = bias + sum weight*x/scale) and LogarithmicRegressionTrainer\n"
	      "(P = a*ln(b*x/scale + 1) + c on one feature), scale being max|x| over the training rows\n"
	      "(at least 1). Every trainer asked for is fitted on all rows and written; stdout gets\n"
	      "one line per output type, zone and trainer with the held-out MAE and MAPE (each row is\n"
	      "predicted by the model fitted on the other folds), then the trainer selected for each\n"
	      "output type: the lowest held-out MAE summed over the zones.\n"
	      "\n"
	      "Files: DIR/<AbsPower|DynPower>/<GROUP>/<Trainer>_<N>.json, the layout of\n"
	      "kepler-model-db. Each is read back with virtwatt's loader and must predict what the\n"
	      "fit predicts on every row.\n"
	      "\n"
	      "Options:\n"
	      "  -o, --output-dir DIR   where to write the files (default: .)\n"
	      "  --zones LIST           comma-separated zones to fit (package, core, uncore, dram,\n"
	      "                         platform); default: every zone with a <zone>_power column\n"
	      "  --features LIST        comma-separated feature columns (aliases accepted;\n"
	      "                         default: bpf_cpu_time_ms). Written under canonical names\n"
	      "  --output-type LIST     abs, dyn or abs,dyn (default). abs: AbsPower, the measured\n"
	      "                         power; dyn: DynPower, each zone minus its minimum over the\n"
	      "                         file (Kepler's MinIdleIsolator; a no-op on isolated data)\n"
	      "  --trainer LIST         linear, log or linear,log (default)\n"
	      "  --curve-feature NAME   the logarithmic model's feature (default: bpf_cpu_time_ms,\n"
	      "                         else cpu_instructions, else the first feature); must be >= 0\n"
	      "  -k, --folds K          folds for cross-validation, 2..100 (default: 10)\n"
	      "  --seed N               seed of the random split (default: 1): the same seed gives\n"
	      "                         the same folds and figures everywhere\n"
	      "  --split random|blocks  random (default): rows shuffled with the seed, dealt to the\n"
	      "                         folds in turn; blocks: K contiguous blocks in file order\n"
	      "                         (time order: no neighbouring rows on both sides)\n"
	      "  --ridge L              ridge penalty L >= 0 on the linear model's standardised\n"
	      "                         coefficients (default: 0, ordinary least squares)\n"
	      "  --node-type N          the <N> of the file names, Kepler's node type (default: 0)\n"
	      "  --feature-group NAME   the <GROUP> folder (default: BPFOnly, CounterOnly or Basic\n"
	      "                         from the features, else Custom)\n"
	      "  --max-rows N           refuse a CSV with more data rows (default: 1000000)\n"
	      "  -n, --dry-run          fit and report, write nothing\n"
	      "  -h, --help             show this help\n"
	      "\n"
	      "Exit status: 0 success, 1 bad data or a fit that failed (reason on stderr, with the\n"
	      "CSV line), 2 usage error.\n",
	      f);
}

/* Split a comma list (in a strdup'd buffer kept in *buf) into at most max names. */
static int split_list(const char *flag, const char *arg, char **buf, const char **out,
		      size_t max, size_t *ret_n)
{
	char *save = NULL, *tok;
	size_t n = 0;

	free(*buf);
	*buf = strdup(arg);
	if (!*buf)
		return -ENOMEM;
	for (tok = strtok_r(*buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == max) {
			fprintf(stderr, "virtwatt-model train: %s: more than %zu names\n", flag,
				max);
			return -EINVAL;
		}
		out[n++] = tok;
	}
	if (n == 0) {
		fprintf(stderr, "virtwatt-model train: %s: empty list\n", flag);
		return -EINVAL;
	}
	*ret_n = n;
	return 0;
}

/* Set flags[i] for each name of the list found in names[]. */
static int parse_set(const char *flag, const char *arg, const char *const *names, bool *flags,
		     size_t n)
{
	_cleanup_free_ char *buf = NULL;
	const char *items[8];
	size_t m;

	if (split_list(flag, arg, &buf, items, ARRAY_SIZE(items), &m) < 0)
		return -EINVAL;
	memset(flags, 0, n * sizeof(*flags));
	for (size_t i = 0; i < m; i++) {
		size_t j = 0;

		while (j < n && strcmp(items[i], names[j]) != 0)
			j++;
		if (j == n) {
			fprintf(stderr, "virtwatt-model train: %s: unknown '%s'\n", flag, items[i]);
			return -EINVAL;
		}
		flags[j] = true;
	}
	return 0;
}

static int parse_uint(const char *flag, const char *arg, uint64_t lo, uint64_t hi, uint64_t *ret)
{
	if (vw_parse_u64(arg, ret) < 0 || *ret < lo || *ret > hi) {
		fprintf(stderr, "virtwatt-model train: %s: not %llu..%llu: %s\n", flag,
			(unsigned long long)lo, (unsigned long long)hi, arg);
		return -EINVAL;
	}
	return 0;
}

static bool group_name_ok(const char *s)
{
	return *s && strlen(s) <= 64 &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") ==
		       strlen(s);
}

static int parse_option(int c, const char *arg, struct train_opts *o)
{
	static const char *const types[] = {"abs", "dyn"}, *const kinds[] = {"linear", "log"};
	uint64_t v;

	switch (c) {
	case 'o':
		o->out_dir = arg;
		return 0;
	case 'z':
		return split_list("--zones", arg, &o->zone_buf, o->zones, MAX_ZONES, &o->n_zones);
	case 'f':
		return split_list("--features", arg, &o->feature_buf, o->features,
				  VW_TRAIN_MAX_FEATURES, &o->n_features);
	case 't':
		return parse_set("--output-type", arg, types, o->type, N_TYPES);
	case 'T':
		return parse_set("--trainer", arg, kinds, o->kind, N_KINDS);
	case 'C':
		o->curve_name = arg;
		return 0;
	case 'k':
		if (parse_uint("--folds", arg, 2, VW_TRAIN_MAX_FOLDS, &v) < 0)
			return -EINVAL;
		o->k = (unsigned)v;
		return 0;
	case 's':
		return parse_uint("--seed", arg, 0, UINT64_MAX, &o->seed);
	case 'S':
		if (strcmp(arg, "random") != 0 && strcmp(arg, "blocks") != 0) {
			fprintf(stderr, "virtwatt-model train: --split: random or blocks\n");
			return -EINVAL;
		}
		o->blocks = strcmp(arg, "blocks") == 0;
		return 0;
	case 'r':
		if (vw_csv_parse_number(arg, &o->ridge) < 0 || !(o->ridge >= 0)) {
			fprintf(stderr, "virtwatt-model train: --ridge: not a number >= 0: %s\n",
				arg);
			return -EINVAL;
		}
		return 0;
	case 'N':
		if (parse_uint("--node-type", arg, 0, 1000000, &v) < 0)
			return -EINVAL;
		o->node_type = (unsigned)v;
		return 0;
	case 'g':
		if (!group_name_ok(arg)) {
			fprintf(stderr, "virtwatt-model train: --feature-group: [A-Za-z0-9_-]+\n");
			return -EINVAL;
		}
		o->group = arg;
		return 0;
	case 'm':
		if (parse_uint("--max-rows", arg, 1, VW_CSV_MAX_ROWS, &v) < 0)
			return -EINVAL;
		o->max_rows = v;
		return 0;
	case 'n':
		o->dry_run = true;
		return 0;
	default:
		return -EINVAL;
	}
}

static int parse_args(int argc, char **argv, struct train_opts *o)
{
	static const struct option longopts[] = {
		{"output-dir", required_argument, NULL, 'o'},
		{"zones", required_argument, NULL, 'z'},
		{"features", required_argument, NULL, 'f'},
		{"output-type", required_argument, NULL, 't'},
		{"trainer", required_argument, NULL, 'T'},
		{"curve-feature", required_argument, NULL, 'C'},
		{"folds", required_argument, NULL, 'k'},
		{"seed", required_argument, NULL, 's'},
		{"split", required_argument, NULL, 'S'},
		{"ridge", required_argument, NULL, 'r'},
		{"node-type", required_argument, NULL, 'N'},
		{"feature-group", required_argument, NULL, 'g'},
		{"max-rows", required_argument, NULL, 'm'},
		{"dry-run", no_argument, NULL, 'n'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:k:nh", longopts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return DONE;
		}
		if (c == '?' || parse_option(c, optarg, o) < 0) {
			fprintf(stderr, "Try 'virtwatt-model train --help'.\n");
			return EXIT_USAGE;
		}
	}
	if (argc - optind != 1) {
		fprintf(stderr, "virtwatt-model train: expected one DATA.csv\n"
				"Try 'virtwatt-model train --help'.\n");
		return EXIT_USAGE;
	}
	o->data = argv[optind];
	return EXIT_OK;
}

/* ---- data ---- */

static const char *default_group(const struct train_opts *o)
{
	static const char *const bpf[] = {"bpf_cpu_time_ms", "bpf_page_cache_hit", NULL};
	static const char *const counter[] = {"cache_miss", "cpu_cycles", "cpu_instructions",
					      NULL};
	bool any_bpf = false, any_counter = false;

	for (size_t j = 0; j < o->n_features; j++) {
		const char *f = vw_model_feature_canonical(o->features[j]);
		bool b = false, c = false;

		for (size_t i = 0; bpf[i]; i++)
			b |= strcmp(f, bpf[i]) == 0;
		for (size_t i = 0; counter[i]; i++)
			c |= strcmp(f, counter[i]) == 0;
		if (!b && !c)
			return "Custom";
		any_bpf |= b;
		any_counter |= c;
	}
	return any_bpf && any_counter ? "Basic" : any_bpf ? "BPFOnly" : "CounterOnly";
}

static size_t feature_column(const struct vw_csv *csv, const char *feature)
{
	const char *want = vw_model_feature_canonical(feature);

	for (size_t i = 0; i < vw_csv_n_columns(csv); i++)
		if (strcmp(vw_model_feature_canonical(vw_csv_column_name(csv, i)), want) == 0)
			return i;
	return (size_t)-1;
}

/* The columns to read: features, then each zone's <zone>_power. */
static int map_columns(struct train_opts *o, const struct vw_csv *csv, size_t *cols,
		       size_t *ret_n)
{
	char name[64];
	size_t n = 0;

	for (size_t j = 0; j < o->n_features; j++) {
		cols[n] = feature_column(csv, o->features[j]);
		if (cols[n++] == (size_t)-1) {
			fprintf(stderr, "virtwatt-model train: %s: no column for feature %s\n",
				o->data, o->features[j]);
			return -EINVAL;
		}
	}
	if (o->n_zones == 0) /* default: every known zone with a column */
		for (size_t z = 0; z < MAX_ZONES; z++) {
			snprintf(name, sizeof(name), "%s_power", known_zones[z]);
			if (vw_csv_find(csv, name) != (size_t)-1)
				o->zones[o->n_zones++] = known_zones[z];
		}
	if (o->n_zones == 0) {
		fprintf(stderr, "virtwatt-model train: %s: no <zone>_power column\n", o->data);
		return -EINVAL;
	}
	for (size_t z = 0; z < o->n_zones; z++) {
		size_t k = 0;

		while (k < MAX_ZONES && strcmp(o->zones[z], known_zones[k]) != 0)
			k++;
		snprintf(name, sizeof(name), "%s_power", o->zones[z]);
		cols[n] = vw_csv_find(csv, name);
		if (k == MAX_ZONES || cols[n++] == (size_t)-1) {
			fprintf(stderr, "virtwatt-model train: %s: zone %.32s: %s\n", o->data,
				o->zones[z], k == MAX_ZONES ? "unknown" : "no <zone>_power column");
			return -EINVAL;
		}
	}
	*ret_n = n;
	return 0;
}

static void dataset_free(struct dataset *d)
{
	free(d->x);
	for (size_t z = 0; z < d->n_zones; z++)
		free(d->y[z]);
	free(d->fold);
}

/* Read the CSV into d: x row-major, one y array per zone. */
static int load_data(struct train_opts *o, struct dataset *d)
{
	struct vw_csv *csv = NULL;
	size_t cols[VW_TRAIN_MAX_FEATURES + MAX_ZONES], n_cols, w;
	_cleanup_free_ double *v = NULL;
	char err[512] = "";
	int r;

	r = vw_csv_open(o->data, &csv, err, sizeof(err));
	if (r == 0)
		r = map_columns(o, csv, cols, &n_cols) < 0 ? -EINVAL : 0;
	if (r == 0)
		r = vw_csv_read_numbers(csv, cols, n_cols, o->max_rows, &v, &d->n_rows, err,
					sizeof(err));
	vw_csv_free(csv);
	if (r != 0) { /* whatever failed: n_cols is set only when all three returned 0 */
		if (err[0])
			fprintf(stderr, "virtwatt-model train: %s\n", err);
		return r;
	}
	d->p = o->n_features;
	w = n_cols;
	d->x = calloc(d->n_rows * d->p, sizeof(double));
	if (!d->x)
		return -ENOMEM;
	for (size_t z = 0; z < o->n_zones; z++) {
		d->zone[z] = o->zones[z];
		d->y[z] = calloc(d->n_rows, sizeof(double));
		d->n_zones = z + 1;
		if (!d->y[z])
			return -ENOMEM;
	}
	for (size_t i = 0; i < d->n_rows; i++) {
		memcpy(d->x + i * d->p, v + i * w, d->p * sizeof(double));
		for (size_t z = 0; z < d->n_zones; z++)
			d->y[z][i] = v[i * w + d->p + z];
	}
	return 0;
}

/* ---- training ---- */

/* One output type: per trainer and zone, the held-out score and the fit on all rows. */
struct results {
	struct vw_train_score score[N_KINDS][MAX_ZONES];
	struct vw_train_fit fit[N_KINDS][MAX_ZONES];
	double mae_sum[N_KINDS];
};

static size_t curve_feature(const struct train_opts *o)
{
	static const char *const prefer[] = {"bpf_cpu_time_ms", "cpu_instructions"};
	const char *want = o->curve_name;

	for (size_t i = 0; !want && i < ARRAY_SIZE(prefer); i++)
		for (size_t j = 0; j < o->n_features; j++)
			if (strcmp(vw_model_feature_canonical(o->features[j]), prefer[i]) == 0)
				return j;
	for (size_t j = 0; want && j < o->n_features; j++)
		if (strcmp(vw_model_feature_canonical(o->features[j]),
			   vw_model_feature_canonical(want)) == 0)
			return j;
	return want ? (size_t)-1 : 0;
}

static int fit_zone(const struct train_opts *o, const struct dataset *d, const double *y,
		    enum vw_train_kind kind, struct vw_train_score *score,
		    struct vw_train_fit *fit)
{
	struct vw_train_opts to = {.kind = kind, .ridge = o->ridge,
				   .curve_feature = curve_feature(o)};

	return vw_train_evaluate(&to, d->x, y, d->p, d->n_rows, d->fold, o->k, score, fit);
}

/* DynPower: each zone minus its minimum (MinIdleIsolator). */
static int zone_values(const struct dataset *d, size_t z, bool dyn, double **ret)
{
	double *y = malloc(d->n_rows * sizeof(*y)), min = INFINITY;

	if (!y)
		return -ENOMEM;
	for (size_t i = 0; i < d->n_rows; i++)
		min = VW_MIN(min, d->y[z][i]);
	for (size_t i = 0; i < d->n_rows; i++)
		y[i] = dyn ? d->y[z][i] - min : d->y[z][i];
	*ret = y;
	return 0;
}

static int train_type(const struct train_opts *o, const struct dataset *d, bool dyn,
		      struct results *res)
{
	for (size_t z = 0; z < d->n_zones; z++) {
		_cleanup_free_ double *y = NULL;
		int r = zone_values(d, z, dyn, &y);

		for (size_t k = 0; r == 0 && k < N_KINDS; k++) {
			if (!o->kind[k])
				continue;
			r = fit_zone(o, d, y, (enum vw_train_kind)k, &res->score[k][z],
				     &res->fit[k][z]);
			if (r < 0)
				fprintf(stderr,
					"virtwatt-model train: %s %s %s: fit failed: %s\n",
					type_names[dyn], d->zone[z],
					vw_train_trainer((enum vw_train_kind)k),
					r == -EDOM ? "degenerate data (collinear features, or "
						     "a negative value for the logarithm)"
						   : strerror(-r));
			if (r == 0)
				res->mae_sum[k] += res->score[k][z].mae_w;
		}
		if (r < 0)
			return r;
	}
	return 0;
}

static void print_results(const struct train_opts *o, const struct dataset *d, bool dyn,
			  const struct results *res, size_t best)
{
	for (size_t z = 0; z < d->n_zones; z++)
		for (size_t k = 0; k < N_KINDS; k++) {
			const struct vw_train_score *s = &res->score[k][z];

			if (!o->kind[k])
				continue;
			printf("%s,%s,%s,%zu,%.6f,", type_names[dyn], d->zone[z],
			       vw_train_trainer((enum vw_train_kind)k), s->rows, s->mae_w);
			if (s->mape_rows)
				printf("%.6f\n", s->mape_pct);
			else
				printf("n/a\n");
		}
	printf("# %s: selected %s (held-out MAE summed over the zones: %.3f W", type_names[dyn],
	       vw_train_trainer((enum vw_train_kind)best), res->mae_sum[best]);
	for (size_t k = 0; k < N_KINDS; k++)
		if (o->kind[k] && k != best)
			printf("; %s %.3f W", vw_train_trainer((enum vw_train_kind)k),
			       res->mae_sum[k]);
	printf(")\n");
}

/* ---- files ---- */

/* Load the written file with virtwatt's loader; every row must predict what the fit does. */
static int verify(const struct train_opts *o, const struct dataset *d, const char *path,
		  const struct vw_train_fit *fits)
{
	struct vw_feature feats[VW_TRAIN_MAX_FEATURES];
	struct vw_model_input in = {.features = feats, .n_features = d->p};
	struct vw_model *m = NULL;
	char err[256];
	int r = vw_model_load_file(path, &m, err, sizeof(err));

	if (r < 0) {
		fprintf(stderr, "virtwatt-model train: %s: our loader refuses it: %s\n", path, err);
		return r;
	}
	for (size_t j = 0; j < d->p; j++)
		feats[j].name = vw_model_feature_canonical(o->features[j]);
	for (size_t i = 0; r == 0 && i < d->n_rows; i++) {
		for (size_t j = 0; j < d->p; j++)
			feats[j].value = d->x[i * d->p + j];
		for (size_t z = 0; r == 0 && z < d->n_zones; z++) {
			struct vw_model_result res = {.watts = NAN};
			double want = VW_MAX(0.0, vw_train_predict(&fits[z], d->x + i * d->p));

			if (vw_model_eval(m, z, &in, &res) < 0 ||
			    strcmp(vw_model_component(m, z), d->zone[z]) != 0 ||
			    fabs(res.watts - want) > MATCH_REL * VW_MAX(1.0, fabs(want))) {
				fprintf(stderr,
					"virtwatt-model train: %s: row %zu, %s: reloaded file "
					"predicts %.9g W, the fit %.9g W\n",
					path, i, d->zone[z], res.watts, want);
				r = -EPROTO;
			}
		}
	}
	vw_model_free(m);
	return r;
}

static int write_model(const struct train_opts *o, const struct dataset *d, bool dyn,
		       enum vw_train_kind kind, const struct vw_train_fit *fits)
{
	const char *names[VW_TRAIN_MAX_FEATURES];
	_cleanup_free_ char *json = NULL, *dir = NULL, *path = NULL;
	_cleanup_close_ int dfd = -1;
	int r;

	for (size_t j = 0; j < d->p; j++)
		names[j] = vw_model_feature_canonical(o->features[j]);
	r = vw_train_to_json(fits, d->zone, d->n_zones, names, &json);
	if (r < 0)
		return r;
	if (asprintf(&dir, "%s/%s/%s", o->out_dir, type_names[dyn],
		     o->group ? o->group : default_group(o)) < 0 ||
	    asprintf(&path, "%s/%s_%u.json", dir, vw_train_trainer(kind), o->node_type) < 0) {
		dir = path = NULL;
		return -ENOMEM;
	}
	r = dfd = vw_dir_create_open(dir);
	if (r >= 0)
		r = vw_write_file_atomic_at(dfd, strrchr(path, '/') + 1, json, strlen(json), 0644);
	if (r < 0) {
		fprintf(stderr, "virtwatt-model train: %s: %s\n", path, strerror(-r));
		return r;
	}
	r = verify(o, d, path, fits);
	if (r == 0)
		printf("# %s: wrote %s\n", type_names[dyn], path);
	return r;
}

static int run(const struct train_opts *o, const struct dataset *d)
{
	printf("# data=%s rows=%zu features=", o->data, d->n_rows);
	for (size_t j = 0; j < d->p; j++)
		printf("%s%s", j ? "+" : "", vw_model_feature_canonical(o->features[j]));
	printf(" folds=%u split=%s", o->k, o->blocks ? "blocks" : "random");
	if (!o->blocks)
		printf(" seed=%llu", (unsigned long long)o->seed);
	printf("\noutput_type,zone,trainer,heldout_rows,heldout_mae_w,heldout_mape_pct\n");
	for (size_t t = 0; t < N_TYPES; t++) {
		struct results res = {0};
		size_t best = o->kind[VW_TRAIN_LINEAR] ? VW_TRAIN_LINEAR : VW_TRAIN_LOG;
		int r;

		if (!o->type[t])
			continue;
		r = train_type(o, d, t == 1, &res);
		if (r < 0)
			return r;
		for (size_t k = 0; k < N_KINDS; k++)
			if (o->kind[k] && res.mae_sum[k] < res.mae_sum[best])
				best = k;
		print_results(o, d, t == 1, &res, best);
		for (size_t k = 0; !o->dry_run && k < N_KINDS; k++) {
			if (!o->kind[k])
				continue;
			r = write_model(o, d, t == 1, (enum vw_train_kind)k, res.fit[k]);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

int vw_cmd_train(int argc, char **argv)
{
	struct train_opts o = {.out_dir = ".", .k = 10, .seed = 1,
			       .type = {true, true}, .kind = {true, true},
			       .features = {"bpf_cpu_time_ms"}, .n_features = 1};
	struct dataset d = {0};
	int r = parse_args(argc, argv, &o);

	if (r == EXIT_OK && curve_feature(&o) == (size_t)-1) {
		fprintf(stderr, "virtwatt-model train: --curve-feature %s is not in --features\n",
			o.curve_name);
		r = EXIT_USAGE;
	}
	if (r == EXIT_OK) {
		r = load_data(&o, &d);
		if (r == 0 && d.n_rows < o.k) {
			fprintf(stderr, "virtwatt-model train: %s: %zu rows, fewer than %u folds\n",
				o.data, d.n_rows, o.k);
			r = -EINVAL;
		}
		if (r == 0 && !(d.fold = calloc(d.n_rows, sizeof(*d.fold))))
			r = -ENOMEM;
		if (r == 0)
			r = vw_train_folds(d.n_rows, o.k, o.seed, o.blocks, d.fold);
		if (r == 0)
			r = run(&o, &d);
		if (r == -ENOMEM)
			fprintf(stderr, "virtwatt-model train: out of memory\n");
		r = r < 0 ? EXIT_DATA : EXIT_OK;
	}
	dataset_free(&d);
	free(o.feature_buf);
	free(o.zone_buf);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "virtwatt-model train: write error on stdout\n");
		return EXIT_DATA;
	}
	return r == DONE ? EXIT_OK : r;
}

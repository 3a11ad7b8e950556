/* SPDX-License-Identifier: Apache-2.0 */
/* Least squares, the linear and logarithmic Kepler trainers, k-fold splits (model_train.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "model_train.h"

#define ZERO_W 1e-6         /* an actual below 1 µW counts as 0 for MAPE (as virtwatt-model) */
#define PIVOT_MIN 1e-12     /* Cholesky pivot of the correlation matrix: below it, collinear */
#define LOG_GRID_PER_DECADE 10
#define GOLDEN_TOL 1e-10 /* width of the final interval in ln b */

const char *vw_train_trainer(enum vw_train_kind kind)
{
	return kind == VW_TRAIN_LOG ? "LogarithmicRegressionTrainer" : "LinearRegressionTrainer";
}

static bool column_constant(const double *a, size_t n, size_t p, size_t j)
{
	for (size_t i = 1; i < n; i++)
		if (a[i * p + j] != a[j])
			return false;
	return true;
}

/* Solve g·x = r in place (g symmetric positive definite, q × q, lower Cholesky). */
static int cholesky_solve(double *g, double *r, size_t q)
{
	for (size_t j = 0; j < q; j++) {
		double d = g[j * q + j];

		for (size_t k = 0; k < j; k++)
			d -= g[j * q + k] * g[j * q + k];
		if (!(d > PIVOT_MIN))
			return -EDOM;
		g[j * q + j] = sqrt(d);
		for (size_t i = j + 1; i < q; i++) {
			double s = g[i * q + j];

			for (size_t k = 0; k < j; k++)
				s -= g[i * q + k] * g[j * q + k];
			g[i * q + j] = s / g[j * q + j];
		}
	}
	for (size_t i = 0; i < q; i++) { /* L·z = r */
		for (size_t k = 0; k < i; k++)
			r[i] -= g[i * q + k] * r[k];
		r[i] /= g[i * q + i];
	}
	for (size_t i = q; i-- > 0;) { /* Lᵀ·x = z */
		for (size_t k = i + 1; k < q; k++)
			r[i] -= g[k * q + i] * r[k];
		r[i] /= g[i * q + i];
	}
	return 0;
}

/* Means and standard deviations of the columns of a, and the indices of the varying ones. */
static size_t standardise(const double *a, size_t n, size_t p, double *mean, double *sd,
			  size_t *active)
{
	size_t q = 0;

	for (size_t j = 0; j < p; j++) {
		double s = 0, ss = 0;

		for (size_t i = 0; i < n; i++)
			s += a[i * p + j];
		mean[j] = s / (double)n;
		for (size_t i = 0; i < n; i++)
			ss += (a[i * p + j] - mean[j]) * (a[i * p + j] - mean[j]);
		sd[j] = sqrt(ss / (double)n);
		if (!column_constant(a, n, p, j) && sd[j] > 0)
			active[q++] = j;
	}
	return q;
}

int vw_train_lstsq(const double *a, const double *y, size_t n, size_t p, double ridge,
		   double *ret_beta, double *ret_intercept)
{
	double mean[VW_TRAIN_MAX_FEATURES], sd[VW_TRAIN_MAX_FEATURES], r[VW_TRAIN_MAX_FEATURES];
	double g[VW_TRAIN_MAX_FEATURES * VW_TRAIN_MAX_FEATURES], ymean = 0, icpt;
	size_t active[VW_TRAIN_MAX_FEATURES], q;
	int ret;

	if (n == 0 || p > VW_TRAIN_MAX_FEATURES || !(ridge >= 0) || !isfinite(ridge))
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		ymean += y[i];
	ymean /= (double)n;
	q = standardise(a, n, p, mean, sd, active);
	for (size_t u = 0; u < q; u++) {
		size_t j = active[u];

		r[u] = 0;
		for (size_t i = 0; i < n; i++)
			r[u] += (a[i * p + j] - mean[j]) / sd[j] * (y[i] - ymean);
		for (size_t v = 0; v <= u; v++) {
			size_t k = active[v];
			double s = 0;

			for (size_t i = 0; i < n; i++)
				s += (a[i * p + j] - mean[j]) * (a[i * p + k] - mean[k]);
			g[u * q + v] = g[v * q + u] = s / (sd[j] * sd[k]);
		}
		g[u * q + u] += ridge;
	}
	/* Pivots are compared with PIVOT_MIN on the correlation scale. */
	for (size_t u = 0; u < q * q; u++)
		g[u] /= (double)n;
	for (size_t u = 0; u < q; u++)
		r[u] /= (double)n;
	ret = cholesky_solve(g, r, q);
	if (ret < 0)
		return ret;
	icpt = ymean;
	for (size_t j = 0; j < p; j++)
		ret_beta[j] = 0;
	for (size_t u = 0; u < q; u++) {
		size_t j = active[u];

		ret_beta[j] = r[u] / sd[j];
		icpt -= ret_beta[j] * mean[j];
	}
	*ret_intercept = icpt;
	return 0;
}

/* MaxAbsScaler over the rows, at least 1 (see struct vw_train_fit). */
static double max_abs_scale(const double *x, size_t p, size_t j, const size_t *rows, size_t n)
{
	double m = 0;

	for (size_t i = 0; i < n; i++)
		m = VW_MAX(m, fabs(x[rows[i] * p + j]));
	return VW_MAX(m, 1.0);
}

static int fit_linear(const struct vw_train_opts *o, const double *x, const double *y, size_t p,
		      const size_t *rows, size_t n, struct vw_train_fit *f)
{
	_cleanup_free_ double *a = calloc(n * p, sizeof(*a));
	_cleanup_free_ double *yy = calloc(n, sizeof(*yy));
	double beta[VW_TRAIN_MAX_FEATURES];
	int r;

	if (!a || !yy)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		memcpy(a + i * p, x + rows[i] * p, p * sizeof(*a));
		yy[i] = y[rows[i]];
	}
	r = vw_train_lstsq(a, yy, n, p, o->ridge, beta, &f->bias);
	if (r < 0)
		return r;
	for (size_t j = 0; j < p; j++)
		f->weight[j] = beta[j] * f->scale[j];
	return 0;
}

/* The log model's state while b is searched: x̂, y, and a buffer for ln(b·x̂ + 1). */
struct log_fit {
	const double *xhat, *y;
	double *u;
	size_t n;
};

/* Least-squares a and c for this b; returns the squared error. */
static double log_sse(struct log_fit *lf, double b, double *ret_a, double *ret_c)
{
	double a, c, sse = 0;

	for (size_t i = 0; i < lf->n; i++)
		lf->u[i] = log(b * lf->xhat[i] + 1);
	if (vw_train_lstsq(lf->u, lf->y, lf->n, 1, 0, &a, &c) < 0)
		return INFINITY;
	for (size_t i = 0; i < lf->n; i++) {
		double e = (a == 0 ? 0 : a * lf->u[i]) + c - lf->y[i];

		sse += e * e;
	}
	if (ret_a)
		*ret_a = a;
	if (ret_c)
		*ret_c = c;
	return sse;
}

/* ln b minimising the squared error: the best point of a log grid, then golden section. */
static double log_search(struct log_fit *lf)
{
	const double lo = log(VW_TRAIN_LOG_B_MIN), hi = log(VW_TRAIN_LOG_B_MAX);
	const size_t steps = (size_t)lround(log10(VW_TRAIN_LOG_B_MAX / VW_TRAIN_LOG_B_MIN) *
					    LOG_GRID_PER_DECADE);
	const double step = (hi - lo) / (double)steps, phi = (sqrt(5) - 1) / 2;
	double best = INFINITY, tb = lo, tg, l, h, t1, t2, f1, f2;

	for (size_t i = 0; i <= steps; i++) {
		double t = lo + step * (double)i, s = log_sse(lf, exp(t), NULL, NULL);

		if (s < best) {
			best = s;
			tb = t;
		}
	}
	tg = tb;
	l = VW_MAX(lo, tb - step);
	h = VW_MIN(hi, tb + step);
	t1 = h - phi * (h - l);
	t2 = l + phi * (h - l);
	f1 = log_sse(lf, exp(t1), NULL, NULL);
	f2 = log_sse(lf, exp(t2), NULL, NULL);
	while (h - l > GOLDEN_TOL) {
		if (f1 <= f2) {
			h = t2;
			t2 = t1;
			f2 = f1;
			t1 = h - phi * (h - l);
			f1 = log_sse(lf, exp(t1), NULL, NULL);
		} else {
			l = t1;
			t1 = t2;
			f1 = f2;
			t2 = l + phi * (h - l);
			f2 = log_sse(lf, exp(t2), NULL, NULL);
		}
	}
	tb = (l + h) / 2;
	return log_sse(lf, exp(tb), NULL, NULL) <= best ? tb : tg;
}

static int fit_log(const struct vw_train_opts *o, const double *x, const double *y, size_t p,
		   const size_t *rows, size_t n, struct vw_train_fit *f)
{
	_cleanup_free_ double *xhat = calloc(n, sizeof(*xhat));
	_cleanup_free_ double *yy = calloc(n, sizeof(*yy));
	_cleanup_free_ double *u = calloc(n, sizeof(*u));
	struct log_fit lf = {.xhat = xhat, .y = yy, .u = u, .n = n};
	size_t j = o->curve_feature;
	double t;

	if (j >= p)
		return -EINVAL;
	if (!xhat || !yy || !u)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		double v = x[rows[i] * p + j];

		if (v < 0)
			return -EDOM; /* ln(b·x̂ + 1) needs x ≥ 0 */
		xhat[i] = v / f->scale[j];
		yy[i] = y[rows[i]];
	}
	t = log_search(&lf);
	f->curve_feature = j;
	f->curve[1] = exp(t);
	if (!isfinite(log_sse(&lf, f->curve[1], &f->curve[0], &f->curve[2])))
		return -EDOM;
	return 0;
}

int vw_train_fit(const struct vw_train_opts *o, const double *x, const double *y,
		 size_t n_features, const size_t *rows, size_t n, struct vw_train_fit *ret)
{
	struct vw_train_fit f = {.kind = o->kind, .n_features = n_features};
	int r;

	if (n == 0 || n_features == 0 || n_features > VW_TRAIN_MAX_FEATURES)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (!isfinite(y[rows[i]]))
			return -EINVAL;
		for (size_t j = 0; j < n_features; j++)
			if (!isfinite(x[rows[i] * n_features + j]))
				return -EINVAL;
	}
	for (size_t j = 0; j < n_features; j++)
		f.scale[j] = max_abs_scale(x, n_features, j, rows, n);
	switch (o->kind) {
	case VW_TRAIN_LINEAR:
		r = fit_linear(o, x, y, n_features, rows, n, &f);
		break;
	case VW_TRAIN_LOG:
		r = fit_log(o, x, y, n_features, rows, n, &f);
		break;
	default:
		return -EINVAL;
	}
	if (r < 0)
		return r;
	*ret = f;
	return 0;
}

/* The same arithmetic, in the same order, as model_eval.c on the written file. */
double vw_train_predict(const struct vw_train_fit *f, const double *x_row)
{
	double sum;

	if (f->kind == VW_TRAIN_LOG) {
		const double *w = f->curve;
		double xhat = x_row[f->curve_feature] / f->scale[f->curve_feature];

		return (w[0] == 0 ? 0 : w[0] * log(w[1] * xhat + 1)) + w[2];
	}
	sum = f->bias;
	for (size_t j = 0; j < f->n_features; j++)
		if (f->weight[j] != 0)
			sum += f->weight[j] * (x_row[j] / f->scale[j]);
	return sum;
}

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

int vw_train_folds(size_t n, unsigned k, uint64_t seed, bool blocks, unsigned *ret_fold)
{
	_cleanup_free_ size_t *perm = NULL;

	if (k < 2 || k > VW_TRAIN_MAX_FOLDS || k > n)
		return -EINVAL;
	if (blocks) {
		for (size_t i = 0; i < n; i++)
			ret_fold[i] = (unsigned)(i * k / n);
		return 0;
	}
	perm = calloc(n, sizeof(*perm));
	if (!perm)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		perm[i] = i;
	for (size_t i = n - 1; i > 0; i--) {
		size_t j = (size_t)(splitmix64(&seed) % (i + 1)), t = perm[i];

		perm[i] = perm[j];
		perm[j] = t;
	}
	for (size_t i = 0; i < n; i++)
		ret_fold[perm[i]] = (unsigned)(i % k);
	return 0;
}

int vw_train_cross_validate(const struct vw_train_opts *o, const double *x, const double *y,
			    size_t n_features, size_t n_rows, const unsigned *fold, unsigned k,
			    double *ret_pred)
{
	_cleanup_free_ size_t *rows = calloc(n_rows, sizeof(*rows));

	if (!rows)
		return -ENOMEM;
	for (unsigned f = 0; f < k; f++) {
		struct vw_train_fit fit;
		size_t n = 0;
		int r;

		for (size_t i = 0; i < n_rows; i++)
			if (fold[i] != f)
				rows[n++] = i;
		r = vw_train_fit(o, x, y, n_features, rows, n, &fit);
		if (r < 0)
			return r;
		for (size_t i = 0; i < n_rows; i++) {
			if (fold[i] == f) {
				double v = vw_train_predict(&fit, x + i * n_features);

				ret_pred[i] = v < 0 ? 0 : v;
			}
		}
	}
	return 0;
}

void vw_train_score(const double *pred, const double *actual, size_t n,
		    struct vw_train_score *ret)
{
	double abs_sum = 0, pct_sum = 0, sq_sum = 0, mean = 0, var_sum = 0;
	size_t mape_rows = 0;

	for (size_t i = 0; i < n; i++)
		mean += actual[i] / (double)n;
	for (size_t i = 0; i < n; i++) {
		double e = fabs(pred[i] - actual[i]);

		abs_sum += e;
		sq_sum += e * e;
		var_sum += (actual[i] - mean) * (actual[i] - mean);
		if (fabs(actual[i]) >= ZERO_W) {
			pct_sum += e / fabs(actual[i]);
			mape_rows++;
		}
	}
	*ret = (struct vw_train_score){
		.rows = n,
		.mae_w = n ? abs_sum / (double)n : NAN,
		.mape_rows = mape_rows,
		.mape_pct = mape_rows ? 100 * pct_sum / (double)mape_rows : NAN,
		.r2 = var_sum > 0 ? 1 - sq_sum / var_sum : NAN,
	};
}

int vw_train_evaluate(const struct vw_train_opts *o, const double *x, const double *y,
		      size_t n_features, size_t n_rows, const unsigned *fold, unsigned k,
		      struct vw_train_score *ret_score, struct vw_train_fit *ret_fit)
{
	_cleanup_free_ double *pred = calloc(n_rows ? n_rows : 1, sizeof(*pred));
	_cleanup_free_ size_t *all = calloc(n_rows ? n_rows : 1, sizeof(*all));
	int r;

	if (!pred || !all)
		return -ENOMEM;
	for (size_t i = 0; i < n_rows; i++)
		all[i] = i;
	r = vw_train_cross_validate(o, x, y, n_features, n_rows, fold, k, pred);
	if (r == 0)
		r = vw_train_fit(o, x, y, n_features, all, n_rows, ret_fit);
	if (r == 0)
		vw_train_score(pred, y, n_rows, ret_score);
	return r;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fitting Kepler-style power models (docs/models.md, "Training"): pure functions on arrays of
 * doubles, no I/O. Data are row-major: x is n_rows × n_features, y one value per row; a fit
 * uses the rows listed in `rows`.
 *
 * - Linear (LinearRegressionTrainer): ordinary least squares, optionally ridge, solved on
 *   standardised features (normal equations, Cholesky) and stored as Kepler stores it:
 *   P = bias + Σ weight_j · x_j / scale_j, scale_j the MaxAbsScaler max |x_j| of the rows.
 * - Logarithmic (LogarithmicRegressionTrainer): P = a · ln(b · x̂ + 1) + c on one feature,
 *   x̂ = x / scale, b > 0: for each b the best a and c are least squares, and b is searched
 *   (a log grid, then golden section) for the smallest squared error, which is the objective
 *   kepler-model-server's curve_fit minimises.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VW_TRAIN_MAX_FEATURES 32
#define VW_TRAIN_MAX_FOLDS 100
#define VW_TRAIN_LOG_B_MIN 1e-3 /* range searched for the logarithm's b */
#define VW_TRAIN_LOG_B_MAX 1e6

enum vw_train_kind {
	VW_TRAIN_LINEAR,
	VW_TRAIN_LOG,
};

struct vw_train_opts {
	enum vw_train_kind kind;
	double ridge;         /* linear: penalty λ·Σβ² on the standardised coefficients; 0 = OLS */
	size_t curve_feature; /* log: the index of its single feature */
};

struct vw_train_fit {
	enum vw_train_kind kind;
	size_t n_features;
	/* MaxAbsScaler max |x_j| over the training rows, but at least 1: a scale below 1 reads
	 * as the x·scale anomaly in our loader, and sklearn turns 0 into 1 too. */
	double scale[VW_TRAIN_MAX_FEATURES];
	double weight[VW_TRAIN_MAX_FEATURES]; /* linear: per x̂_j */
	double bias;                          /* linear */
	size_t curve_feature;                 /* log */
	double curve[3];                      /* log: a, b, c */
};

/* The Kepler trainer name: "LinearRegressionTrainer", "LogarithmicRegressionTrainer". */
const char *vw_train_trainer(enum vw_train_kind kind);

/*
 * Least squares y ≈ intercept + Σ beta_j a_j over n rows of the row-major n × p matrix a, on
 * standardised columns (a constant column gets beta 0), with ridge λ ≥ 0 on the standardised
 * coefficients. -EDOM when the columns are collinear and λ = 0, -EINVAL on bad sizes.
 */
int vw_train_lstsq(const double *a, const double *y, size_t n, size_t p, double ridge,
		   double *ret_beta, double *ret_intercept);

/* Fit a model on the given rows. -EINVAL bad input, -EDOM degenerate data, -ENOMEM. */
int vw_train_fit(const struct vw_train_opts *o, const double *x, const double *y,
		 size_t n_features, const size_t *rows, size_t n, struct vw_train_fit *ret);

/* The fit's raw output for one row of features (before clamping at 0, as the evaluator does). */
double vw_train_predict(const struct vw_train_fit *f, const double *x_row);

/*
 * Assign each of n rows a fold in [0, k): blocks = false shuffles the rows (Fisher-Yates with
 * splitmix64 from seed: the same seed, the same folds on every machine) and deals them out in
 * turn; blocks = true cuts the rows, in order, into k contiguous blocks (time order, no seed).
 * Fold sizes differ by at most one. -EINVAL unless 2 ≤ k ≤ min(n, VW_TRAIN_MAX_FOLDS).
 */
int vw_train_folds(size_t n, unsigned k, uint64_t seed, bool blocks, unsigned *ret_fold);

/*
 * k-fold cross-validation: for each fold, fit on the other folds and predict the fold's rows.
 * ret_pred[i] is the out-of-fold prediction for row i, clamped at 0 as virtwatt's evaluator
 * clamps it.
 */
int vw_train_cross_validate(const struct vw_train_opts *o, const double *x, const double *y,
			    size_t n_features, size_t n_rows, const unsigned *fold, unsigned k,
			    double *ret_pred);

struct vw_train_score {
	size_t rows;
	double mae_w;
	size_t mape_rows; /* rows whose actual is not 0 (|actual| >= 1 µW) */
	double mape_pct;  /* NAN when mape_rows is 0 */
	double r2; /* 1 - Σ(pred - actual)² / Σ(actual - mean)²; NAN when the actuals are all equal */
};

void vw_train_score(const double *pred, const double *actual, size_t n,
		    struct vw_train_score *ret);

/*
 * What a trainer does with one target: cross-validate on the folds (the held-out score, from
 * the out-of-fold predictions clamped at 0), then fit on all n_rows rows (the model to keep).
 * Errors as vw_train_fit's.
 */
int vw_train_evaluate(const struct vw_train_opts *o, const double *x, const double *y,
		      size_t n_features, size_t n_rows, const unsigned *fold, unsigned k,
		      struct vw_train_score *ret_score, struct vw_train_fit *ret_fit);

/*
 * The Kepler weight file (v0.7 layout, what kepler-model-db publishes and Kepler's regressor
 * reads) for one fit per zone: {"<zone>": {"All_Weights": {...}}, ...} with, for linear fits,
 * Bias_Weight and Numerical_Variables {feature: {scale, weight}}, for logarithmic fits
 * Numerical_Variables {feature: {scale}} (the curve's feature only) and CurveFit_Weights
 * [a, b, c]; Categorical_Variables is {}. Numbers are written with 17 significant digits, so
 * they read back exactly. All fits must be of one kind. *ret_json is malloc'd.
 * (model_train_json.c)
 */
int vw_train_to_json(const struct vw_train_fit *fits, const char *const *zones, size_t n_zones,
		     const char *const *features, char **ret_json);

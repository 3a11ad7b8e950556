/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internals of struct vw_model shared by the parser (model.c, model_weights.c) and the
 * evaluator (model_eval.c). Nothing else includes this.
 */
#pragma once

#include <json-c/json.h>

#include "macro.h"
#include "model.h"

#define VW_MODEL_MAX_COMPONENTS 5 /* package, core, uncore, dram, platform */
#define VW_MODEL_MAX_TERMS 64     /* numerical features per component */
#define VW_MODEL_MAX_CATS 16      /* categorical variables per component */
#define VW_MODEL_MAX_LEVELS 64    /* values per categorical variable */
#define VW_MODEL_NO_TERM ((size_t)-1)
#define VW_MODEL_MAX_NAME 128      /* feature, category and model names */
#define VW_MODEL_MAX_COEF 1e7      /* |weight|, |bias|, curve coefficients, mae */
#define VW_MODEL_MAX_SCALE 1e15    /* scale and |mean|: counters reach ~1e12 events/s */
#define VW_MODEL_MAX_VARIANCE 1e30 /* variance of such counters */
#define VW_MODEL_MAX_VALUES 65536u  /* JSON values in one file (a model has ~13,000 at most) */

/* How a raw feature value x becomes the normalised x̂. */
enum vw_model_norm {
	VW_MODEL_NORM_SKIP,      /* no usable scale or variance: the term is skipped */
	VW_MODEL_NORM_DIV_SCALE, /* v0.6+: x / scale (MaxAbsScaler) */
	VW_MODEL_NORM_MUL_SCALE, /* nx12 LinearRegressionTrainer_1 anomaly: x * scale */
	VW_MODEL_NORM_STANDARD,  /* <= v0.5: (x - mean) / sqrt(variance) */
};

struct vw_model_term {
	char *name; /* canonical feature name */
	double weight;
	double scale;
	double mean;
	double sd; /* sqrt(variance) */
	enum vw_model_norm norm;
};

struct vw_model_level {
	char *value;
	double weight;
};

struct vw_model_catvar {
	char *name;
	struct vw_model_level *levels;
	size_t n_levels;
};

struct vw_model_comp {
	const char *name; /* static string: "package", ..., "total" */
	enum vw_model_kind kind;
	double bias;
	double curve[4]; /* [a, b, c] or [A, x0, k, off] */
	size_t n_curve;
	size_t curve_term; /* index into terms for curve fits, else VW_MODEL_NO_TERM */
	struct vw_model_term *terms;
	size_t n_terms;
	struct vw_model_catvar *cats;
	size_t n_cats;
};

struct vw_model {
	char *name;
	char *trainer;
	char *warning;
	enum vw_model_output output;
	unsigned spec_cores; /* machine_spec.cores, 0 when absent */
	double mae;          /* NAN when absent */
	struct vw_model_comp comps[VW_MODEL_MAX_COMPONENTS];
	size_t n_comps;
	char **features; /* canonical names of the features used by non-zero terms */
	size_t n_features;
};

/* Parser state: the model being built and where a failure's one-line reason goes. */
struct vw_model_parse {
	struct vw_model *m;
	char *err;
	size_t errlen;
};

/* Write the reason (control characters replaced) and return -EINVAL. */
int vw_model_fail(struct vw_model_parse *p, const char *fmt, ...) _printf_(2, 3);
/* Say "out of memory" and return -ENOMEM. */
int vw_model_oom(struct vw_model_parse *p);
/* A finite JSON number with |v| <= limit, or a reason naming `what`. */
int vw_model_get_number(struct vw_model_parse *p, json_object *o, const char *what, double limit,
			double *ret);
int vw_model_get_object(struct vw_model_parse *p, json_object *o, const char *what);
/* 1..VW_MODEL_MAX_NAME characters: [A-Za-z0-9_.:-], or any printable ASCII if printable. */
bool vw_model_name_ok(const char *s, bool printable);

enum vw_model_kind vw_model_kind_from_trainer(const char *trainer);
/* Fill component c (name and kind set) from its All_Weights object. */
int vw_model_parse_weights(struct vw_model_parse *p, struct vw_model_comp *c, json_object *aw);

/* True when the term contributes to the output (linear weight != 0, or the curve's feature). */
bool vw_model_term_used(const struct vw_model_comp *c, size_t t);

/*
 * GET url, or POST post_json (Content-Type: application/json) when not NULL, with a timeout
 * (<= 0: 10 s), at most VW_MODEL_MAX_BYTES, HTTP >= 400 failing. *ret (malloc'd,
 * NUL-terminated) and *ret_len on success; -ETIMEDOUT, -EFBIG, -EIO, -ENODATA (empty body) with
 * the reason in why. Used by model_source.c and model_server.c.
 */
int vw_model_http_fetch(const char *url, const char *post_json, long timeout_ms, char **ret,
			size_t *ret_len, char *why, size_t whylen);

/* SPDX-License-Identifier: Apache-2.0 */
/* Parser for one component's All_Weights (numerical, categorical, curve fit); see model.c. */
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "libm_lazy.h"
#include "macro.h"
#include "model.h"
#include "model_priv.h"

enum vw_model_kind vw_model_kind_from_trainer(const char *trainer)
{
	if (strstr(trainer, "Exponential"))
		return VW_MODEL_EXPONENTIAL;
	if (strstr(trainer, "Logarithmic"))
		return VW_MODEL_LOGARITHMIC;
	if (strstr(trainer, "Logistic"))
		return VW_MODEL_LOGISTIC;
	return VW_MODEL_LINEAR;
}

/* ---- Numerical_Variables ---- */

static size_t find_term(const struct vw_model_comp *c, const char *name)
{
	for (size_t i = 0; i < c->n_terms; i++)
		if (strcmp(c->terms[i].name, name) == 0)
			return i;
	return VW_MODEL_NO_TERM;
}

struct term_raw {
	double scale, mean, variance;
	bool has_scale, has_variance;
};

static int parse_term_keys(struct vw_model_parse *p, const char *where, json_object *obj,
			   struct vw_model_term *t, struct term_raw *raw)
{
	char what[VW_MODEL_MAX_NAME + 96];
	int r = vw_model_get_object(p, obj, where);

	if (r < 0)
		return r;
	json_object_object_foreach (obj, key, val) {
		snprintf(what, sizeof(what), "%s.%.20s", where, key);
		if (strcmp(key, "weight") == 0) {
			r = vw_model_get_number(p, val, what, VW_MODEL_MAX_COEF, &t->weight);
		} else if (strcmp(key, "scale") == 0) {
			r = vw_model_get_number(p, val, what, VW_MODEL_MAX_SCALE, &raw->scale);
			raw->has_scale = true;
		} else if (strcmp(key, "mean") == 0) {
			r = vw_model_get_number(p, val, what, VW_MODEL_MAX_SCALE, &raw->mean);
		} else if (strcmp(key, "variance") == 0) {
			r = vw_model_get_number(p, val, what, VW_MODEL_MAX_VARIANCE,
						&raw->variance);
			raw->has_variance = true;
		} else {
			return vw_model_fail(p, "%s: unknown key '%.40s'", where, key);
		}
		if (r < 0)
			return r;
	}
	if (raw->scale < 0 || raw->variance < 0)
		return vw_model_fail(p, "%s: negative scale or variance", where);
	return 0;
}

/*
 * v0.6+ divides by the MaxAbsScaler scale; a scale below 1 on a rate feature is the nx12
 * LinearRegressionTrainer_1 anomaly (a 1/range factor), which only makes sense multiplied.
 * Without a scale key, <= v0.5 standardises with mean and variance.
 */
static void term_set_norm(struct vw_model_term *t, const struct term_raw *raw)
{
	t->scale = raw->scale;
	t->mean = raw->mean;
	if (raw->has_scale && raw->scale > 0) {
		bool rate = strcmp(t->name, "node_info") != 0;

		t->norm =
			raw->scale < 1 && rate ? VW_MODEL_NORM_MUL_SCALE : VW_MODEL_NORM_DIV_SCALE;
	} else if (!raw->has_scale && raw->has_variance && raw->variance > 0) {
		t->norm = VW_MODEL_NORM_STANDARD;
		t->sd = sqrt(raw->variance);
	} else {
		t->norm = VW_MODEL_NORM_SKIP;
	}
}

static int parse_term(struct vw_model_parse *p, struct vw_model_comp *c, const char *key,
		      json_object *obj)
{
	struct vw_model_term *t = &c->terms[c->n_terms];
	struct term_raw raw = {0};
	char where[VW_MODEL_MAX_NAME + 64];
	const char *name;
	int r;

	if (!vw_model_name_ok(key, false))
		return vw_model_fail(p, "%s: bad feature name '%.40s'", c->name, key);
	name = vw_model_feature_canonical(key);
	if (find_term(c, name) != VW_MODEL_NO_TERM)
		return vw_model_fail(p, "%s: feature %s given twice (aliases fold together)",
				     c->name, name);
	snprintf(where, sizeof(where), "%s.Numerical_Variables.%s", c->name, key);
	r = parse_term_keys(p, where, obj, t, &raw);
	if (r < 0)
		return r;
	t->name = strdup(name);
	if (!t->name)
		return vw_model_oom(p);
	c->n_terms++;
	term_set_norm(t, &raw);
	return 0;
}

/* Check obj is an object of at most limit entries and allocate one element per entry. */
static int alloc_entries(struct vw_model_parse *p, json_object *obj, const char *what, size_t limit,
			 size_t size, void **ret)
{
	size_t n;
	int r = vw_model_get_object(p, obj, what);

	if (r < 0)
		return r;
	n = (size_t)json_object_object_length(obj);
	if (n > limit)
		return vw_model_fail(p, "%s: %zu entries (limit %zu)", what, n, limit);
	*ret = calloc(n ? n : 1, size);
	return *ret ? 0 : vw_model_oom(p);
}

/* ---- Categorical_Variables: {feature: {value: {"weight": w}}} ---- */

static int parse_level(struct vw_model_parse *p, struct vw_model_catvar *v, const char *key,
		       json_object *obj)
{
	struct vw_model_level *l = &v->levels[v->n_levels];
	char where[2 * VW_MODEL_MAX_NAME + 64];
	json_object *w;
	int r;

	snprintf(where, sizeof(where), "Categorical_Variables.%s.%.40s", v->name, key);
	if (!vw_model_name_ok(key, true))
		return vw_model_fail(p, "%s: bad category value", where);
	r = vw_model_get_object(p, obj, where);
	if (r < 0)
		return r;
	if (json_object_object_length(obj) != 1 || !json_object_object_get_ex(obj, "weight", &w))
		return vw_model_fail(p, "%s: expected exactly {\"weight\": number}", where);
	r = vw_model_get_number(p, w, where, VW_MODEL_MAX_COEF, &l->weight);
	if (r < 0)
		return r;
	l->value = strdup(key);
	if (!l->value)
		return vw_model_oom(p);
	v->n_levels++;
	return 0;
}

static int parse_catvar(struct vw_model_parse *p, struct vw_model_comp *c, const char *key,
			json_object *obj)
{
	struct vw_model_catvar *v = &c->cats[c->n_cats];
	char where[VW_MODEL_MAX_NAME + 64];
	int r;

	if (!vw_model_name_ok(key, false))
		return vw_model_fail(p, "%s: bad categorical variable name '%.40s'", c->name, key);
	snprintf(where, sizeof(where), "%s.Categorical_Variables.%s", c->name, key);
	r = alloc_entries(p, obj, where, VW_MODEL_MAX_LEVELS, sizeof(*v->levels),
			  (void **)&v->levels);
	if (r < 0)
		return r;
	c->n_cats++;
	v->name = strdup(key);
	if (!v->name)
		return vw_model_oom(p);
	json_object_object_foreach (obj, value, wobj) {
		r = parse_level(p, v, value, wobj);
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * A component's Numerical_Variables or Categorical_Variables (section): an object of at most
 * limit entries, one element of size bytes allocated in *ret for each, each parsed by fn.
 */
typedef int entry_fn(struct vw_model_parse *p, struct vw_model_comp *c, const char *key,
		     json_object *obj);

static int parse_section(struct vw_model_parse *p, struct vw_model_comp *c, json_object *obj,
			 const char *section, size_t limit, size_t size, void **ret, entry_fn *fn)
{
	char where[64];
	int r;

	snprintf(where, sizeof(where), "%s.%s", c->name, section);
	r = alloc_entries(p, obj, where, limit, size, ret);
	if (r < 0)
		return r;
	json_object_object_foreach (obj, key, val) {
		r = fn(p, c, key, val);
		if (r < 0)
			return r;
	}
	return 0;
}

/* ---- curve fits ---- */

static int parse_curve(struct vw_model_parse *p, struct vw_model_comp *c, json_object *arr)
{
	size_t n;
	int r;

	if (!json_object_is_type(arr, json_type_array))
		return vw_model_fail(p, "%s.CurveFit_Weights: expected an array", c->name);
	n = json_object_array_length(arr);
	if (n == 0 || n > ARRAY_SIZE(c->curve))
		return vw_model_fail(p, "%s.CurveFit_Weights: %zu values (a curve fit has 3 or 4)",
				     c->name, n);
	for (size_t i = 0; i < n; i++) {
		r = vw_model_get_number(p, json_object_array_get_idx(arr, i),
					"CurveFit_Weights value", VW_MODEL_MAX_COEF, &c->curve[i]);
		if (r < 0)
			return r;
	}
	c->n_curve = n;
	return 0;
}

static bool scale_nontrivial(const struct vw_model_term *t)
{
	if (t->norm == VW_MODEL_NORM_SKIP)
		return false;
	return t->norm == VW_MODEL_NORM_STANDARD || t->scale != 1.0;
}

/*
 * The curve's single input, chosen by name as kepler-model-server trained it (train_types.py:
 * bpf_cpu_time_ms / cpu_instructions; dram: bpf_page_cache_hit / cache_miss), else the only
 * feature with a non-trivial scale. Never "x[0]" of an unordered map (models.md §8).
 */
static int choose_curve_term(struct vw_model_parse *p, struct vw_model_comp *c)
{
	static const char *const cpu[] = {"bpf_cpu_time_ms", "cpu_instructions", NULL};
	static const char *const dram[] = {"bpf_page_cache_hit", "cache_miss", "bpf_cpu_time_ms",
					   "cpu_instructions", NULL};
	const char *const *names = strcmp(c->name, "dram") == 0 ? dram : cpu;
	size_t idx = VW_MODEL_NO_TERM, candidates = 0;

	for (; *names && idx == VW_MODEL_NO_TERM; names++)
		idx = find_term(c, *names);
	if (idx == VW_MODEL_NO_TERM) {
		for (size_t i = 0; i < c->n_terms; i++) {
			if (scale_nontrivial(&c->terms[i])) {
				idx = i;
				candidates++;
			}
		}
		if (candidates != 1)
			return vw_model_fail(p,
					     "%s: cannot tell which feature the curve fit uses "
					     "(%zu candidates)",
					     c->name, candidates);
	}
	if (c->terms[idx].norm == VW_MODEL_NORM_SKIP)
		return vw_model_fail(p, "%s: curve feature %s has no scale", c->name,
				     c->terms[idx].name);
	c->curve_term = idx;
	return 0;
}

static int check_kind(struct vw_model_parse *p, struct vw_model_comp *c, bool has_bias)
{
	static const char *const kind_names[] = {"linear", "exponential", "logarithmic",
						 "logistic"};
	size_t want = c->kind == VW_MODEL_LOGISTIC ? 4 : 3;
	char why[400];

	if (c->kind == VW_MODEL_LINEAR) {
		if (c->n_curve > 0)
			return vw_model_fail(
				p, "%s: CurveFit_Weights, but trainer %s is not a curve fit",
				c->name, p->m->trainer);
		return 0;
	}
	if (c->n_curve != want)
		return vw_model_fail(p, "%s: %s fit needs %zu CurveFit_Weights, got %zu", c->name,
				     kind_names[c->kind], want, c->n_curve);
	if (has_bias)
		return vw_model_fail(p, "%s: Bias_Weight in a %s fit", c->name,
				     kind_names[c->kind]);
	/* exp and log: libm, loaded on first use (libm_lazy.c), so here rather than mid-interval */
	if (vw_libm_load(why, sizeof(why)) < 0)
		return vw_model_fail(p, "%s: the %s fit needs libm's exp and log: %s", c->name,
				     kind_names[c->kind], why);
	return choose_curve_term(p, c);
}

/* ---- components ---- */

static int parse_weights_key(struct vw_model_parse *p, struct vw_model_comp *c, const char *key,
			     json_object *val, bool *has_bias, bool *has_numerical)
{
	char what[64];

	if (strcmp(key, "Bias_Weight") == 0) {
		snprintf(what, sizeof(what), "%s.Bias_Weight", c->name);
		*has_bias = true;
		return vw_model_get_number(p, val, what, VW_MODEL_MAX_COEF, &c->bias);
	}
	if (strcmp(key, "Numerical_Variables") == 0) {
		*has_numerical = true;
		return parse_section(p, c, val, key, VW_MODEL_MAX_TERMS, sizeof(*c->terms),
				     (void **)&c->terms, parse_term);
	}
	if (strcmp(key, "Categorical_Variables") == 0)
		return parse_section(p, c, val, key, VW_MODEL_MAX_CATS, sizeof(*c->cats),
				     (void **)&c->cats, parse_catvar);
	if (strcmp(key, "CurveFit_Weights") == 0)
		return parse_curve(p, c, val);
	if (strcasecmp(key, "XGBoost_Weights") == 0)
		return vw_model_fail(p, "%s: XGBoost weights are not supported", c->name);
	return vw_model_fail(p, "%s.All_Weights: unknown key '%.40s'", c->name, key);
}

int vw_model_parse_weights(struct vw_model_parse *p, struct vw_model_comp *c, json_object *aw)
{
	bool has_bias = false, has_numerical = false;
	char where[64];
	int r;

	snprintf(where, sizeof(where), "%s.All_Weights", c->name);
	r = vw_model_get_object(p, aw, where);
	if (r < 0)
		return r;
	json_object_object_foreach (aw, key, val) {
		r = parse_weights_key(p, c, key, val, &has_bias, &has_numerical);
		if (r < 0)
			return r;
	}
	if (!has_numerical)
		return vw_model_fail(p, "%s: no Numerical_Variables", where);
	return check_kind(p, c, has_bias);
}

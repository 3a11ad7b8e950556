/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: Kepler model weight files in every era (model.c, model_weights.c), as a
 * local file, a URL body (model_source.c) or a model server's answer (model_server.c) hand
 * them to vw_model_parse: once with no origin, once with a model-server origin that names a
 * curve-fit trainer and DynPower (the origin decides the trainer when the file names none).
 * Properties of an accepted model: every component evaluates, at zero load and at load, to a
 * finite non-negative power (or -ERANGE for a curve far outside its range), and at zero load
 * to its idle power; and the model written back as a v0.6+ weight file parses to the same
 * model (names, kinds, coefficients, normalisations, categories, features, warning).
 */
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "model.h"
#include "model_priv.h"

static const char *const origins[] = {
	NULL,
	"server:http://kepler-model-server:8100/model/rapl-sysfs/DynPower/BPFOnly/"
	"LogarithmicRegressionTrainer_0.json",
};

/* ---- writing a parsed model back ---- */

static void add(json_object *o, const char *key, json_object *v)
{
	if (!v || json_object_object_add(o, key, v) < 0)
		abort();
}

static json_object *term_json(const struct vw_model_term *t)
{
	json_object *o = json_object_new_object();

	if (!o)
		abort();
	add(o, "weight", json_object_new_double(t->weight));
	add(o, "mean", json_object_new_double(t->mean));
	if (t->norm == VW_MODEL_NORM_STANDARD)
		add(o, "variance",
		    json_object_new_double(VW_MIN(t->sd * t->sd, VW_MODEL_MAX_VARIANCE)));
	else
		add(o, "scale", json_object_new_double(t->norm == VW_MODEL_NORM_SKIP ? 0 : t->scale));
	return o;
}

static json_object *weights_json(const struct vw_model_comp *c)
{
	json_object *aw = json_object_new_object(), *nv = json_object_new_object();

	if (!aw || !nv)
		abort();
	if (c->kind == VW_MODEL_LINEAR)
		add(aw, "Bias_Weight", json_object_new_double(c->bias));
	for (size_t i = 0; i < c->n_terms; i++)
		add(nv, c->terms[i].name, term_json(&c->terms[i]));
	add(aw, "Numerical_Variables", nv);
	if (c->n_cats) {
		json_object *cv = json_object_new_object();

		if (!cv)
			abort();
		for (size_t i = 0; i < c->n_cats; i++) {
			json_object *levels = json_object_new_object();

			if (!levels)
				abort();
			for (size_t j = 0; j < c->cats[i].n_levels; j++) {
				json_object *w = json_object_new_object();

				if (!w)
					abort();
				add(w, "weight", json_object_new_double(c->cats[i].levels[j].weight));
				add(levels, c->cats[i].levels[j].value, w);
			}
			add(cv, c->cats[i].name, levels);
		}
		add(aw, "Categorical_Variables", cv);
	}
	if (c->kind != VW_MODEL_LINEAR) {
		json_object *a = json_object_new_array();

		if (!a)
			abort();
		for (size_t i = 0; i < c->n_curve; i++)
			if (json_object_array_add(a, json_object_new_double(c->curve[i])) < 0)
				abort();
		add(aw, "CurveFit_Weights", a);
	}
	return aw;
}

static char *write_back(const struct vw_model *m)
{
	json_object *root = json_object_new_object();
	char *text;

	if (!root)
		abort();
	add(root, "model_name", json_object_new_string(m->name));
	if (!isnan(m->mae))
		add(root, "mae", json_object_new_double(m->mae));
	if (m->spec_cores) {
		json_object *spec = json_object_new_object();

		if (!spec)
			abort();
		add(spec, "cores", json_object_new_int64(m->spec_cores));
		add(root, "machine_spec", spec);
	}
	for (size_t i = 0; i < m->n_comps; i++) {
		if (strcmp(m->comps[i].name, "total") == 0) {
			add(root, "All_Weights", weights_json(&m->comps[i]));
		} else {
			json_object *comp = json_object_new_object();

			if (!comp)
				abort();
			add(comp, "All_Weights", weights_json(&m->comps[i]));
			add(root, m->comps[i].name, comp);
		}
	}
	text = strdup(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN));
	json_object_put(root);
	if (!text)
		abort();
	return text;
}

/* ---- comparing two models ---- */

static bool num_eq(double a, double b)
{
	return a == b || (isnan(a) && isnan(b));
}

static bool term_eq(const struct vw_model_term *a, const struct vw_model_term *b)
{
	if (strcmp(a->name, b->name) || a->norm != b->norm || !num_eq(a->weight, b->weight) ||
	    !num_eq(a->mean, b->mean))
		return false;
	if (a->norm == VW_MODEL_NORM_STANDARD) /* sqrt(sd * sd) may be an ulp away */
		return fabs(a->sd - b->sd) <= 1e-12 * fabs(a->sd);
	return a->norm == VW_MODEL_NORM_SKIP || num_eq(a->scale, b->scale);
}

static bool comp_eq(const struct vw_model_comp *a, const struct vw_model_comp *b)
{
	if (strcmp(a->name, b->name) || a->kind != b->kind || !num_eq(a->bias, b->bias) ||
	    a->n_curve != b->n_curve || a->curve_term != b->curve_term ||
	    a->n_terms != b->n_terms || a->n_cats != b->n_cats)
		return false;
	for (size_t i = 0; i < a->n_curve; i++)
		if (!num_eq(a->curve[i], b->curve[i]))
			return false;
	for (size_t i = 0; i < a->n_terms; i++)
		if (!term_eq(&a->terms[i], &b->terms[i]))
			return false;
	for (size_t i = 0; i < a->n_cats; i++) {
		const struct vw_model_catvar *x = &a->cats[i], *y = &b->cats[i];

		if (strcmp(x->name, y->name) || x->n_levels != y->n_levels)
			return false;
		for (size_t j = 0; j < x->n_levels; j++)
			if (strcmp(x->levels[j].value, y->levels[j].value) ||
			    !num_eq(x->levels[j].weight, y->levels[j].weight))
				return false;
	}
	return true;
}

static bool opt_str_eq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static void check_same(const struct vw_model *a, const struct vw_model *b, const char *text)
{
	bool same = strcmp(a->name, b->name) == 0 && strcmp(a->trainer, b->trainer) == 0 &&
		    opt_str_eq(a->warning, b->warning) && a->output == b->output &&
		    a->spec_cores == b->spec_cores && num_eq(a->mae, b->mae) &&
		    a->n_comps == b->n_comps && a->n_features == b->n_features;

	for (size_t i = 0; same && i < a->n_comps; i++)
		same = comp_eq(&a->comps[i], &b->comps[i]);
	for (size_t i = 0; same && i < a->n_features; i++)
		same = strcmp(a->features[i], b->features[i]) == 0;
	vw_fuzz_assert(same, "written back, the model parses differently:\n%s", text);
}

/* ---- evaluation ---- */

static void check_eval(const struct vw_model *m)
{
	struct vw_feature feats[VW_MODEL_MAX_COMPONENTS * VW_MODEL_MAX_TERMS];
	size_t n = VW_MIN(vw_model_n_features(m), ARRAY_SIZE(feats));
	struct vw_category cat = { "cpu_architecture", "Sky Lake" };
	struct vw_model_input zero = { .categories = &cat, .n_categories = 1, .host_cores = 4 };
	struct vw_model_input load = zero;

	for (size_t i = 0; i < n; i++)
		feats[i] = (struct vw_feature){ vw_model_feature(m, i), 0.5 + (double)i };
	load.features = feats;
	load.n_features = n;
	for (size_t c = 0; c < vw_model_n_components(m); c++) {
		struct vw_model_result r0, r1;
		int e0 = vw_model_eval(m, c, &zero, &r0), e1 = vw_model_eval(m, c, &load, &r1);

		vw_fuzz_assert(e0 == 0 || e0 == -ERANGE, "eval at 0: %d", e0);
		vw_fuzz_assert(e1 == 0 || e1 == -ERANGE, "eval at load: %d", e1);
		if (e0 == 0)
			vw_fuzz_assert(isfinite(r0.watts) && r0.watts >= 0 &&
					       isfinite(r0.idle_watts) && r0.idle_watts >= 0 &&
					       r0.watts == r0.idle_watts,
				       "at zero load: %g W, idle %g W", r0.watts, r0.idle_watts);
		if (e1 == 0)
			vw_fuzz_assert(isfinite(r1.watts) && r1.watts >= 0 &&
					       isfinite(r1.idle_watts) && r1.idle_watts >= 0,
				       "at load: %g W, idle %g W", r1.watts, r1.idle_watts);
	}
}

static void one_origin(const char *json, size_t size, const char *origin)
{
	struct vw_model *m = NULL, *again = NULL;
	char err[512];
	_cleanup_free_ char *text = NULL;
	int r = vw_model_parse(json, size, origin, &m, err, sizeof(err));

	if (r < 0) {
		vw_fuzz_assert(r == -EINVAL || r == -ENOMEM, "parse returned %d", r);
		vw_fuzz_assert(err[0] && !strpbrk(err, "\n\r"), "reason: \"%s\"", err);
		return;
	}
	check_eval(m);
	text = write_back(m);
	r = vw_model_parse(text, strlen(text), origin, &again, err, sizeof(err));
	vw_fuzz_assert(r == 0, "written back, the model does not parse: %s\n%s", err, text);
	check_same(m, again, text);
	vw_model_free(again);
	vw_model_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	for (size_t i = 0; i < ARRAY_SIZE(origins); i++)
		one_origin((const char *)data, size, origins[i]);
	return 0;
}

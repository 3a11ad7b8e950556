/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pure evaluation of a parsed model (formulas in docs/models.md): normalise, linear or curve,
 * idle at x = 0, the machine_spec core ratio on idle, clamping to [0, VW_MODEL_MAX_WATTS].
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "macro.h"
#include "model.h"
#include "model_priv.h"

const char *vw_model_name(const struct vw_model *m)
{
	return m->name;
}

const char *vw_model_trainer(const struct vw_model *m)
{
	return m->trainer;
}

enum vw_model_output vw_model_output_type(const struct vw_model *m)
{
	return m->output;
}

const char *vw_model_warning(const struct vw_model *m)
{
	return m->warning;
}

double vw_model_mae(const struct vw_model *m)
{
	return m->mae;
}

unsigned vw_model_spec_cores(const struct vw_model *m)
{
	return m->spec_cores;
}

size_t vw_model_n_components(const struct vw_model *m)
{
	return m->n_comps;
}

const char *vw_model_component(const struct vw_model *m, size_t i)
{
	return i < m->n_comps ? m->comps[i].name : NULL;
}

enum vw_model_kind vw_model_component_kind(const struct vw_model *m, size_t i)
{
	return i < m->n_comps ? m->comps[i].kind : VW_MODEL_LINEAR;
}

size_t vw_model_n_features(const struct vw_model *m)
{
	return m->n_features;
}

const char *vw_model_feature(const struct vw_model *m, size_t i)
{
	return i < m->n_features ? m->features[i] : NULL;
}

static bool cats_zero(const struct vw_model_comp *c)
{
	for (size_t i = 0; i < c->n_cats; i++)
		for (size_t j = 0; j < c->cats[i].n_levels; j++)
			if (c->cats[i].levels[j].weight != 0)
				return false;
	return true;
}

bool vw_model_component_is_zero(const struct vw_model *m, size_t i)
{
	const struct vw_model_comp *c;

	if (i >= m->n_comps)
		return true;
	c = &m->comps[i];
	if (!cats_zero(c))
		return false;
	switch (c->kind) {
	case VW_MODEL_LINEAR:
		for (size_t t = 0; t < c->n_terms; t++)
			if (vw_model_term_used(c, t))
				return false;
		return c->bias == 0;
	case VW_MODEL_LOGISTIC:
		return c->curve[0] == 0 && c->curve[3] == 0;
	default:
		return c->curve[0] == 0 && c->curve[2] == 0;
	}
}

/* C: the sum of the weights of the observed category values. */
static double categorical_sum(const struct vw_model_comp *c, const struct vw_model_input *in)
{
	double sum = 0;

	for (size_t k = 0; k < in->n_categories; k++) {
		const struct vw_category *cat = &in->categories[k];

		for (size_t i = 0; i < c->n_cats; i++) {
			if (strcmp(c->cats[i].name, cat->name) != 0)
				continue;
			for (size_t j = 0; j < c->cats[i].n_levels; j++)
				if (strcmp(c->cats[i].levels[j].value, cat->value) == 0)
					sum += c->cats[i].levels[j].weight;
		}
	}
	return sum;
}

/* The raw input for a feature; a feature the host does not supply counts as 0. */
static double input_value(const struct vw_model_input *in, const char *name)
{
	if (!in)
		return 0;
	for (size_t k = 0; k < in->n_features; k++)
		if (strcmp(vw_model_feature_canonical(in->features[k].name), name) == 0)
			return in->features[k].value;
	return 0;
}

static double normalise(const struct vw_model_term *t, double x, bool *extrapolated)
{
	double xhat;

	switch (t->norm) {
	case VW_MODEL_NORM_DIV_SCALE:
		xhat = x / t->scale;
		break;
	case VW_MODEL_NORM_MUL_SCALE:
		xhat = x * t->scale;
		break;
	case VW_MODEL_NORM_STANDARD:
		/* A z-score: the training range is unknown, so no extrapolation flag. */
		return (x - t->mean) / t->sd;
	default:
		return 0;
	}
	if (extrapolated && fabs(xhat) > 1)
		*extrapolated = true;
	return xhat;
}

static double curve_value(const struct vw_model_comp *c, double xhat)
{
	const double *w = c->curve;

	switch (c->kind) {
	case VW_MODEL_EXPONENTIAL:
		return (w[0] == 0 ? 0 : w[0] * exp(w[1] * xhat)) + w[2];
	case VW_MODEL_LOGARITHMIC:
		return (w[0] == 0 ? 0 : w[0] * log(w[1] * xhat + 1)) + w[2];
	case VW_MODEL_LOGISTIC:
		return (w[0] == 0 ? 0 : w[0] / (1 + exp(-w[2] * (xhat - w[1])))) + w[3];
	default:
		return NAN;
	}
}

/* The model's raw output at the given inputs (in == NULL: all features at 0), C included. */
static double comp_value(const struct vw_model_comp *c, const struct vw_model_input *in,
			 double cat_sum, bool *extrapolated)
{
	double sum;

	if (c->kind != VW_MODEL_LINEAR) {
		const struct vw_model_term *t = &c->terms[c->curve_term];

		return cat_sum +
		       curve_value(c, normalise(t, input_value(in, t->name), extrapolated));
	}
	sum = c->bias + cat_sum;
	for (size_t i = 0; i < c->n_terms; i++) {
		const struct vw_model_term *t = &c->terms[i];

		if (vw_model_term_used(c, i))
			sum += t->weight * normalise(t, input_value(in, t->name), extrapolated);
	}
	return sum;
}

static int check_input(const struct vw_model_input *in)
{
	if (!in || (in->n_features && !in->features) || (in->n_categories && !in->categories))
		return -EINVAL;
	for (size_t k = 0; k < in->n_features; k++)
		if (!in->features[k].name || !isfinite(in->features[k].value))
			return -EINVAL;
	for (size_t k = 0; k < in->n_categories; k++)
		if (!in->categories[k].name || !in->categories[k].value)
			return -EINVAL;
	return 0;
}

/*
 * Idle is the model at x = 0. With a machine_spec of at least host_cores cores, idle is scaled
 * by host_cores / spec_cores and the result is scaled idle + (model(x) - model(0)): Kepler
 * scaled idle alone and left the absolute output unscaled, so the two disagreed.
 */
int vw_model_eval(const struct vw_model *m, size_t comp, const struct vw_model_input *in,
		  struct vw_model_result *ret)
{
	const struct vw_model_comp *c;
	bool extrapolated = false;
	double cat_sum, at_x, at_0, idle, watts;

	if (!m || comp >= m->n_comps || !ret || check_input(in) < 0)
		return -EINVAL;
	c = &m->comps[comp];
	cat_sum = categorical_sum(c, in);
	at_x = comp_value(c, in, cat_sum, &extrapolated);
	at_0 = comp_value(c, NULL, cat_sum, NULL);
	idle = at_0;
	watts = at_x;
	if (m->spec_cores > 0 && in->host_cores > 0 && m->spec_cores >= in->host_cores) {
		idle = at_0 * in->host_cores / m->spec_cores;
		watts = idle + (at_x - at_0);
	}
	if (!isfinite(watts) || !isfinite(idle))
		return -ERANGE;
	*ret = (struct vw_model_result){
		.watts = watts < 0 ? 0 : VW_MIN(watts, VW_MODEL_MAX_WATTS),
		.idle_watts = idle < 0 ? 0 : VW_MIN(idle, VW_MODEL_MAX_WATTS),
		.clamped = watts < 0 || idle < 0 || watts > VW_MODEL_MAX_WATTS ||
			   idle > VW_MODEL_MAX_WATTS,
		.extrapolated = extrapolated,
	};
	return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Kepler weight files from fitted models (model_train.h). */
#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "model_train.h"

static void json_putp(json_object **o)
{
	json_object_put(*o);
}

#define _cleanup_json_ __attribute__((cleanup(json_putp)))

/* Add key → value to obj, taking value; -ENOMEM (value dropped) on failure. */
static int add(json_object *obj, const char *key, json_object *value)
{
	if (!value || json_object_object_add(obj, key, value) < 0) {
		json_object_put(value);
		return -ENOMEM;
	}
	return 0;
}

static int add_double(json_object *obj, const char *key, double v)
{
	return add(obj, key, json_object_new_double(v));
}

static json_object *numerical(const struct vw_train_fit *f, const char *const *features)
{
	_cleanup_json_ json_object *nv = json_object_new_object();

	if (!nv)
		return NULL;
	for (size_t j = 0; j < f->n_features; j++) {
		json_object *e;

		if (f->kind == VW_TRAIN_LOG && j != f->curve_feature)
			continue;
		e = json_object_new_object();
		if (add(nv, features[j], e) < 0 || add_double(e, "scale", f->scale[j]) < 0)
			return NULL;
		if (f->kind == VW_TRAIN_LINEAR && add_double(e, "weight", f->weight[j]) < 0)
			return NULL;
	}
	return json_object_get(nv);
}

static json_object *all_weights(const struct vw_train_fit *f, const char *const *features)
{
	_cleanup_json_ json_object *aw = json_object_new_object();
	json_object *curve;

	if (!aw)
		return NULL;
	if (f->kind == VW_TRAIN_LINEAR && add_double(aw, "Bias_Weight", f->bias) < 0)
		return NULL;
	if (add(aw, "Categorical_Variables", json_object_new_object()) < 0 ||
	    add(aw, "Numerical_Variables", numerical(f, features)) < 0)
		return NULL;
	if (f->kind == VW_TRAIN_LOG) {
		curve = json_object_new_array();
		if (add(aw, "CurveFit_Weights", curve) < 0)
			return NULL;
		for (size_t i = 0; i < 3; i++) {
			json_object *v = json_object_new_double(f->curve[i]);

			if (!v || json_object_array_add(curve, v) < 0) {
				json_object_put(v);
				return NULL;
			}
		}
	}
	return json_object_get(aw);
}

int vw_train_to_json(const struct vw_train_fit *fits, const char *const *zones, size_t n_zones,
		     const char *const *features, char **ret_json)
{
	_cleanup_json_ json_object *root = json_object_new_object();
	const char *s;

	for (size_t z = 0; z < n_zones; z++)
		if (fits[z].kind != fits[0].kind)
			return -EINVAL;
	if (!root)
		return -ENOMEM;
	for (size_t z = 0; z < n_zones; z++) {
		json_object *comp = json_object_new_object();

		if (add(root, zones[z], comp) < 0 ||
		    add(comp, "All_Weights", all_weights(&fits[z], features)) < 0)
			return -ENOMEM;
	}
	s = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY |
							 JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!s || !(*ret_json = strdup(s)))
		return -ENOMEM;
	return 0;
}

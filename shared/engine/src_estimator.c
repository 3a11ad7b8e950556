/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The estimator power source: where no meter exists, node power per component comes from a
 * Kepler model evaluated on the node's CPU time (bpf_cpu_time_ms = CPU ms per wall second).
 * The model's watts are integrated over each read's elapsed time straight into a cumulative µJ
 * counter per zone that only grows (shared/energy/integrator.h: µW x ns in integers, the part
 * below 1 µJ carried to the next read), as for any meter that gives power: it never wraps
 * (max_range_uj 0) and has nothing to unwrap. The model's value at zero load is each zone's idle
 * power.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "model.h"
#include "integrator.h"
#include "power_source.h"

struct est_zone {
	size_t comp;                        /* model component index */
	struct vw_power_integrator counter; /* the zone's µJ so far */
};

struct estimator {
	const struct vw_model *model;
	unsigned host_cores;
	size_t n;
	struct vw_zone_info info[VW_POWER_MAX_ZONES];
	struct est_zone z[VW_POWER_MAX_ZONES];
	uint64_t clamped, extrapolated;
	char name[160];
	struct vw_complaint complaint;
};

static void eval_input(const struct estimator *e, double cpu_ms_per_s, struct vw_feature *f,
		       struct vw_model_input *in)
{
	*f = (struct vw_feature){ .name = "bpf_cpu_time_ms", .value = cpu_ms_per_s };
	*in = (struct vw_model_input){ .features = f, .n_features = 1,
				       .host_cores = e->host_cores };
}

static int zone_for_component(const char *comp, enum vw_zone *ret)
{
	if (strcmp(comp, "total") == 0) {
		*ret = VW_ZONE_PLATFORM;
		return 0;
	}
	return vw_zone_parse(comp, ret, NULL);
}

static int add_zone(struct estimator *e, size_t comp)
{
	struct vw_zone_info *zi = &e->info[e->n];
	struct vw_model_result res;
	struct vw_model_input in;
	struct vw_feature f;
	enum vw_zone zone;
	int r;

	if (zone_for_component(vw_model_component(e->model, comp), &zone) < 0) {
		vw_warn("estimator: model component \"%s\" is not a known zone; ignored",
			vw_model_component(e->model, comp));
		return 0;
	}
	eval_input(e, 0.0, &f, &in);
	r = vw_model_eval(e->model, comp, &in, &res);
	if (r < 0)
		return r;
	*zi = (struct vw_zone_info){ .zone = zone, .idle_w = res.idle_watts };
	snprintf(zi->path, sizeof(zi->path), "estimator");
	e->z[e->n++] = (struct est_zone){ .comp = comp };
	return 0;
}

static int est_open(const struct vw_power_env *env, void **ret_state)
{
	struct estimator *e;
	size_t ncomp;

	if (!env->model)
		return -ENODEV;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->model = env->model;
	e->host_cores = env->host_cores;
	/* Name the model by where it came from: "builtin:...", "file:PATH", "url:URL". */
	if (env->model_origin && strcmp(env->model_origin, "builtin") == 0)
		snprintf(e->name, sizeof(e->name), "%s", vw_model_builtin_name);
	else if (env->model_origin && *env->model_origin)
		snprintf(e->name, sizeof(e->name), "%s", env->model_origin);
	else
		snprintf(e->name, sizeof(e->name), "%s", vw_model_name(env->model));
	ncomp = vw_model_n_components(env->model);
	for (size_t i = 0; i < ncomp && e->n < VW_POWER_MAX_ZONES; i++) {
		int r;

		if (vw_model_component_is_zero(env->model, i))
			continue;
		r = add_zone(e, i);
		if (r < 0) {
			free(e);
			return r;
		}
	}
	if (e->n == 0) {
		vw_error("estimator: model %s has no usable component", e->name);
		free(e);
		return -EINVAL;
	}
	if (vw_model_output_type(env->model) == VW_MODEL_DYN_POWER)
		vw_warn("estimator: model %s is a DynPower model: node power will exclude idle",
			e->name);
	*ret_state = e;
	return 0;
}

static size_t est_zones(void *state, const struct vw_zone_info **ret)
{
	struct estimator *e = state;

	*ret = e->info;
	return e->n;
}

static int est_read(void *state, const struct vw_node_activity *act, uint64_t *raw_uj, int *errs)
{
	struct estimator *e = state;
	struct vw_model_input in;
	struct vw_feature f;

	eval_input(e, act->cpu_ms_per_s, &f, &in);
	for (size_t i = 0; i < e->n; i++) {
		struct vw_model_result res;
		int r = vw_model_eval(e->model, e->z[i].comp, &in, &res);

		errs[i] = r;
		if (r < 0) {
			raw_uj[i] = e->z[i].counter.energy_uj;
			continue;
		}
		e->clamped += res.clamped;
		e->extrapolated += res.extrapolated;
		if (res.clamped)
			vw_complain(&e->complaint, VW_LOG_WARN,
				    "estimator: model %s gave negative or absurd (over %.0f W) power "
				    "for %s; clamped (virtwatt_model_clamped_total)",
				    e->name, VW_MODEL_MAX_WATTS, vw_zone_name(e->info[i].zone));
		raw_uj[i] = vw_power_integrate_span(&e->z[i].counter, vw_power_uw(res.watts),
						    act->elapsed_ns);
	}
	return 0;
}

static void est_stats(void *state, struct vw_power_source_stats *ret)
{
	struct estimator *e = state;

	*ret = (struct vw_power_source_stats){ .clamped = e->clamped,
					       .extrapolated = e->extrapolated,
					       .model = e->name };
}

static void est_close(void *state)
{
	free(state);
}

const struct vw_power_source_ops vw_src_estimator = {
	.name = "estimator",
	.measured = false,
	.open = est_open,
	.zones = est_zones,
	.read = est_read,
	.stats = est_stats,
	.close = est_close,
};

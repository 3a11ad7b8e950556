/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The host's model as a power source: the engine's estimator run on the model this VM's host
 * trained for it and pushed over the passthrough (host_model.h), between the passthrough and
 * the foreign default in the guest's chain. Fresh once the guest holds such a model. A newer
 * model is taken at the next read: the estimator is opened again on it, and each zone's
 * counter carries on from where the old one stopped (one per zone kind, path "model", like the
 * passthrough's), so a switch never moves a counter back.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "energy.h"
#include "guest_sources.h"
#include "host_model.h"
#include "model.h"

struct host_model_src {
	struct vw_guest_host_model *slot;
	unsigned host_cores;
	struct vw_model *model; /* the one the estimator runs on (owned) */
	char origin[VW_GUEST_MODEL_NAME_MAX + 8];
	void *est;              /* the estimator's state, or NULL */
	int kind_of[VW_POWER_MAX_ZONES]; /* the estimator's zone i: its zone kind */
	uint64_t offset[VW_ZONE__COUNT], last[VW_ZONE__COUNT];
	struct vw_zone_info info[VW_ZONE__COUNT];
};

static int hm_open(const struct vw_power_env *env, void **ret_state)
{
	const struct vw_guest_ctx *ctx = env->ctx;
	struct host_model_src *h;

	if (!ctx || !ctx->host_model)
		return -ENODEV; /* --passthrough.enable=false: no host to push one */
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->slot = ctx->host_model;
	h->host_cores = env->host_cores;
	vw_guest_zone_kinds(h->info, "model");
	*ret_state = h;
	return 0;
}

static size_t hm_zones(void *state, const struct vw_zone_info **ret)
{
	struct host_model_src *h = state;

	*ret = h->info;
	return VW_ZONE__COUNT;
}

/* Run the estimator on the slot's newer model, the counters carried on. */
static void take_pending(struct host_model_src *h)
{
	struct vw_power_env env = { .host_cores = h->host_cores };
	const struct vw_zone_info *zi;
	void *est = NULL;
	size_t n;

	if (!h->slot->pending)
		return;
	snprintf(h->origin, sizeof(h->origin), "host:%s", h->slot->pending_name);
	env.model = h->slot->pending;
	env.model_origin = h->origin;
	if (vw_src_estimator.open(&env, &est) < 0) { /* checked when accepted: cannot happen */
		vw_model_free(h->slot->pending);
		h->slot->pending = NULL;
		return;
	}
	if (h->est)
		vw_src_estimator.close(h->est);
	for (size_t z = 0; z < VW_ZONE__COUNT; z++)
		h->offset[z] = h->last[z];
	vw_model_free(h->model);
	h->model = h->slot->pending;
	h->slot->pending = NULL;
	h->est = est;
	n = vw_src_estimator.zones(est, &zi);
	for (size_t i = 0; i < n && i < VW_POWER_MAX_ZONES; i++) {
		h->kind_of[i] = (int)zi[i].zone;
		h->info[zi[i].zone].idle_w = zi[i].idle_w;
	}
}

static int hm_read(void *state, const struct vw_node_activity *act, uint64_t *raw_uj, int *errs)
{
	struct host_model_src *h = state;
	uint64_t raw[VW_POWER_MAX_ZONES] = { 0 };
	int err[VW_POWER_MAX_ZONES] = { 0 }, r;
	const struct vw_zone_info *zi;
	size_t n;

	take_pending(h);
	for (size_t z = 0; z < VW_ZONE__COUNT; z++) {
		errs[z] = -ENODATA;
		raw_uj[z] = h->last[z];
	}
	if (!h->est)
		return -ENODATA;
	r = vw_src_estimator.read(h->est, act, raw, err);
	n = vw_src_estimator.zones(h->est, &zi);
	for (size_t i = 0; i < n && i < VW_POWER_MAX_ZONES; i++) {
		int z = h->kind_of[i];

		errs[z] = err[i];
		if (err[i] == 0)
			h->last[z] = raw_uj[z] = vw_energy_add(h->offset[z], raw[i]);
	}
	return r;
}

static bool hm_fresh(void *state)
{
	const struct host_model_src *h = state;

	return h->est || h->slot->pending;
}

static void hm_stats(void *state, struct vw_power_source_stats *ret)
{
	struct host_model_src *h = state;

	if (h->est)
		vw_src_estimator.stats(h->est, ret);
	else
		*ret = (struct vw_power_source_stats){ 0 };
	ret->model = h->origin[0] ? h->origin : NULL;
}

static void hm_close(void *state)
{
	struct host_model_src *h = state;

	if (h->est)
		vw_src_estimator.close(h->est);
	vw_model_free(h->model);
	free(h);
}

const struct vw_power_source_ops vw_src_host_model = {
	.name = "estimator",
	.standby = true,
	.measured = false,
	.open = hm_open,
	.zones = hm_zones,
	.read = hm_read,
	.fresh = hm_fresh,
	.stats = hm_stats,
	.close = hm_close,
};

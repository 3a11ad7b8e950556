/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The passthrough power source: this VM's own energy as its host measured and split it,
 * received over the virtio-serial port or the shared folder (virtio-channel/reader.h). It is
 * first in the guest's chain, before the estimator, and fresh only while frames keep coming.
 *
 * One zone per zone kind, path "vm": each zone's idle and active counters are the accumulator's
 * (each only grows across host restarts and takeovers), read as the host split them, so its
 * exact split reaches the guest's workloads. A zone the host never sent reads -ENODATA (not
 * present).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guest_sources.h"
#include "reader.h"

struct passthrough {
	const struct vw_reader *reader;
	struct vw_zone_info info[VW_ZONE__COUNT];
};

static int pt_open(const struct vw_power_env *env, void **ret_state)
{
	struct passthrough *p;

	const struct vw_guest_ctx *ctx = env->ctx;

	if (!ctx || !ctx->reader)
		return -ENODEV; /* --passthrough.enable=false */
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->reader = ctx->reader;
	vw_guest_zone_kinds(p->info, "vm");
	*ret_state = p;
	return 0;
}

static size_t pt_zones(void *state, const struct vw_zone_info **ret)
{
	struct passthrough *p = state;

	*ret = p->info;
	return VW_ZONE__COUNT;
}

static const struct vw_proto_acc_zone *acc_zone(const struct passthrough *p, size_t i)
{
	const struct vw_proto_acc_zone *a = &vw_reader_acc(p->reader)->zones[i];

	return a->seen || a->idle_uj || a->active_uj ? a : NULL;
}

static int pt_read_split(void *state, const struct vw_node_activity *act, uint64_t *idle_uj,
			 uint64_t *active_uj, int *errs)
{
	struct passthrough *p = state;
	int r = -ENODATA;

	(void)act;
	for (size_t i = 0; i < VW_ZONE__COUNT; i++) {
		const struct vw_proto_acc_zone *a = acc_zone(p, i);

		errs[i] = a ? 0 : -ENODATA;
		idle_uj[i] = a ? a->idle_uj : 0;
		active_uj[i] = a ? a->active_uj : 0;
		if (a) {
			p->info[i].idle_w = a->idle_w; /* the host's baseline for this VM */
			r = 0;
		}
	}
	return r;
}

static bool pt_fresh(void *state)
{
	struct passthrough *p = state;

	return vw_reader_fresh(p->reader);
}

static void pt_stats(void *state, struct vw_power_source_stats *ret)
{
	struct passthrough *p = state;
	const struct vw_host_frame *f = vw_reader_last(p->reader);

	*ret = (struct vw_power_source_stats){ .model = f && f->model[0] ? f->model : NULL };
}

static void pt_close(void *state)
{
	free(state);
}

const struct vw_power_source_ops vw_src_passthrough = {
	.name = "passthrough",
	.standby = true,
	.measured = true, /* the host's figures; whether it measured them is in its frames */
	.open = pt_open,
	.zones = pt_zones,
	.read_split = pt_read_split,
	.fresh = pt_fresh,
	.stats = pt_stats,
	.close = pt_close,
};

/* SPDX-License-Identifier: Apache-2.0 */
#include "accum.h"

#include <string.h>

/* Saturating: totals stop at UINT64_MAX rather than wrap (2^64 uJ is 584 000 years at 1 kW). */
static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t delta(struct vw_proto_acc *acc, uint64_t prev, uint64_t cur)
{
	if (cur >= prev)
		return cur - prev;
	acc->falls++; /* vw_proto_rx_accept stops this; a zone that came back lower lands here */
	return 0;
}

static void add_zone(struct vw_proto_acc *acc, const struct vw_proto_zone *z)
{
	struct vw_proto_acc_zone *t = &acc->zones[z->zone];
	uint64_t di = z->idle_uj, da = z->active_uj;

	if (t->seen) {
		di = delta(acc, t->prev_idle_uj, z->idle_uj);
		da = delta(acc, t->prev_active_uj, z->active_uj);
	}
	t->idle_uj = add_sat(t->idle_uj, di);
	t->active_uj = add_sat(t->active_uj, da);
	t->prev_idle_uj = z->idle_uj;
	t->prev_active_uj = z->active_uj;
	t->idle_w = z->idle_w;
	t->active_w = z->active_w;
	t->seen = true;
}

void vw_proto_acc_add(struct vw_proto_acc *acc, const struct vw_host_frame *f)
{
	if (acc->have && f->epoch != acc->epoch) {
		acc->restarts++;
		for (size_t z = 0; z < VW_ZONE__COUNT; z++)
			acc->zones[z].seen = false;
	}
	acc->have = true;
	acc->epoch = f->epoch;
	for (size_t i = 0; i < f->n_zones; i++)
		if ((unsigned)f->zones[i].zone < VW_ZONE__COUNT)
			add_zone(acc, &f->zones[i]);
}

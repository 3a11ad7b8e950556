/* SPDX-License-Identifier: Apache-2.0 */
#include "interval.h"

#include "idle.h"
#include "macro.h"

void vw_interval_split(uint64_t energy_uj, const uint64_t *source_idle_uj, uint64_t elapsed_ns,
		       double idle_w, double usage, struct vw_interval_split *ret)
{
	uint64_t idle_uj, active_uj;

	if (source_idle_uj) {
		idle_uj = VW_MIN(energy_uj, *source_idle_uj);
		active_uj = energy_uj - idle_uj;
		idle_w = -1;
	} else {
		vw_idle_split(energy_uj, elapsed_ns, idle_w, usage, &idle_uj, &active_uj);
	}
	*ret = (struct vw_interval_split){
		.energy_uj = energy_uj,
		.idle_uj = idle_uj,
		.active_uj = active_uj,
		.watts = vw_energy_watts(energy_uj, elapsed_ns),
		.idle_watts = vw_energy_watts(idle_uj, elapsed_ns),
		.active_watts = vw_energy_watts(active_uj, elapsed_ns),
	};
	ret->idle_baseline_w = idle_w >= 0 ? idle_w : ret->idle_watts;
}

bool vw_interval_close(struct vw_interval_mark *m, const struct vw_energy_counter *ctr,
		       const struct vw_energy_counter *idle_ctr, uint64_t elapsed_ns, double idle_w,
		       double usage, struct vw_interval_split *ret)
{
	uint64_t source_idle = idle_ctr ? idle_ctr->total_uj - m->idle_uj : 0;
	bool clean = ctr->gaps == m->gaps;

	vw_interval_split(ctr->total_uj - m->total_uj, idle_ctr ? &source_idle : NULL, elapsed_ns,
			  idle_w, usage, ret);
	m->total_uj = ctr->total_uj;
	m->idle_uj = idle_ctr ? idle_ctr->total_uj : m->idle_uj;
	m->gaps = ctr->gaps;
	return clean;
}

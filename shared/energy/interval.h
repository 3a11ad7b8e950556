/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Closing an interval of a cumulative µJ counter, one way for a host's zones, a GPU and the
 * guest's zones: the energy the counter gained since the last close, split into idle and active
 * (by the source's own idle counter where the source splits itself, else by vw_idle_split() on
 * an idle power and the interval's usage), the interval's watts, and the close added to a
 * view's totals, which only grow.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "energy.h"

/* One closed interval. */
struct vw_interval_split {
	uint64_t energy_uj, idle_uj, active_uj; /* idle_uj + active_uj == energy_uj */
	double watts, idle_watts, active_watts;
	/* The idle power the split used; where it had none (the residual rule, the source's own
	 * split), the idle power it gave. */
	double idle_baseline_w;
};

/*
 * energy_uj over elapsed_ns split: the idle part is min(*source_idle_uj, energy_uj) where the
 * source split it (source_idle_uj not NULL), else vw_idle_split(energy_uj, elapsed_ns, idle_w,
 * usage). Pure.
 */
void vw_interval_split(uint64_t energy_uj, const uint64_t *source_idle_uj, uint64_t elapsed_ns,
		       double idle_w, double usage, struct vw_interval_split *ret);

/* Where a counter (and its idle counter, where the source splits) stood at the last close. */
struct vw_interval_mark {
	uint64_t total_uj, idle_uj, gaps;
};

/*
 * Close the interval of ctr at its last reading: the energy since the mark, split as
 * vw_interval_split() says (by idle_ctr's gain since the mark when idle_ctr is not NULL); the
 * mark moves to now. True when the interval is clean (the counter had no gap in it): an
 * interval an idle baseline may be learnt from.
 */
bool vw_interval_close(struct vw_interval_mark *m, const struct vw_energy_counter *ctr,
		       const struct vw_energy_counter *idle_ctr, uint64_t elapsed_ns, double idle_w,
		       double usage, struct vw_interval_split *ret);

/* Add the closed interval s to view v, any struct with the split families' fields (total_uj,
 * idle_uj, active_uj, watts, idle_watts, active_watts: split_families.h) and idle_baseline_w. */
#define VW_INTERVAL_ADD(v, s)                                                                      \
	do {                                                                                       \
		(v)->total_uj = vw_energy_add((v)->total_uj, (s)->energy_uj);                      \
		(v)->idle_uj = vw_energy_add((v)->idle_uj, (s)->idle_uj);                          \
		(v)->active_uj = vw_energy_add((v)->active_uj, (s)->active_uj);                    \
		(v)->watts = (s)->watts;                                                           \
		(v)->idle_watts = (s)->idle_watts;                                                 \
		(v)->active_watts = (s)->active_watts;                                             \
		(v)->idle_baseline_w = (s)->idle_baseline_w;                                       \
	} while (0)

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Idle versus active. Idle power is the node's power at zero load; per zone it is taken, in
 * order, from: a configured override; the source itself (a model evaluated at zero load); a
 * least-squares line of power against CPU usage over a sliding window (its intercept, clamped
 * to [0, lowest power in the window]), the last good fit kept while the window lacks spread;
 * and before any fit exists, the per-interval residual (1 - usage) x power. The split of each
 * interval's energy is exact: idle + active == energy.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum vw_idle_method {
	VW_IDLE_CONFIGURED,
	VW_IDLE_SOURCE,   /* the power source knows it (estimator model at zero load) */
	VW_IDLE_FITTED,   /* intercept of the sliding-window fit */
	VW_IDLE_RESIDUAL, /* bootstrap: (1 - usage) x power, until a fit exists */
};

const char *vw_idle_method_name(enum vw_idle_method m);

struct vw_idle_fit; /* opaque: one per zone */

/* window = number of (usage, watts) points kept; min_spread = usage spread needed to fit. */
struct vw_idle_fit *vw_idle_fit_new(size_t window, double min_spread);
void vw_idle_fit_free(struct vw_idle_fit *f);
void vw_idle_fit_add(struct vw_idle_fit *f, double usage, double watts);
/* Current intercept (last good one kept). -EAGAIN before the first good fit. */
int vw_idle_fit_get(const struct vw_idle_fit *f, double *ret_idle_w);

/*
 * Pure split of one interval's energy. idle_w < 0 means "no idle power known": the residual
 * rule applies with usage. Result: idle_uj + active_uj == energy_uj, idle_uj <= energy_uj.
 */
void vw_idle_split(uint64_t energy_uj, uint64_t elapsed_ns, double idle_w, double usage,
		   uint64_t *ret_idle_uj, uint64_t *ret_active_uj);

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Idle versus active. Idle power is the node's power at zero load; per zone it is taken, in
 * order, from: a configured override; the source itself (a model evaluated at zero load); a
 * least-squares line of power against CPU usage over a sliding window (its intercept, clamped
 * to [0, lowest power over two consecutive points in the window]), the last good fit kept
 * while the window lacks spread; and before any fit exists, the per-interval residual (1 - usage) x power. The split of each
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
	VW_IDLE_FLOOR,    /* lowest power sustained at low utilization (idle_floor.h: GPUs) */
};

const char *vw_idle_method_name(enum vw_idle_method m);

struct vw_idle_fit; /* opaque: one per zone */

/* A fit needs at least this many points; windows are bounded in size. */
#define VW_IDLE_MIN_POINTS 3
#define VW_IDLE_MAX_WINDOW 65536

/*
 * window = number of (usage, watts) points kept (VW_IDLE_MIN_POINTS..VW_IDLE_MAX_WINDOW);
 * min_spread = usage spread needed to fit, as the population standard deviation of the usage
 * values in the window (e.g. 0.05). NULL with errno (EINVAL, ENOMEM) on failure.
 */
struct vw_idle_fit *vw_idle_fit_new(size_t window, double min_spread);
void vw_idle_fit_free(struct vw_idle_fit *f);
/*
 * Add one interval's point (usage clamped to [0, 1]; non-finite values and negative watts are
 * ignored) and refit: the line is accepted only with enough spread and a slope >= 0; its
 * intercept is clamped to [0, lowest mean watts of two consecutive points in the window: one
 * late sample's low point and the high one that follows do not pin it]. The oldest point
 * drops out, so the estimate follows the machine both down and up.
 */
void vw_idle_fit_add(struct vw_idle_fit *f, double usage, double watts);
/* Current intercept (last good one kept). -EAGAIN before the first good fit. */
int vw_idle_fit_get(const struct vw_idle_fit *f, double *ret_idle_w);

/*
 * Pure split of one interval's energy. idle_w >= 0: idle_uj = min(round(idle_w x elapsed),
 * energy_uj). idle_w < 0 (or not finite) means "no idle power known": the residual rule
 * idle_uj = round((1 - usage) x energy_uj) applies, usage clamped to [0, 1] (NaN counts as 0).
 * Result: idle_uj + active_uj == energy_uj, idle_uj <= energy_uj. Rounding is half away from 0.
 */
void vw_idle_split(uint64_t energy_uj, uint64_t elapsed_ns, double idle_w, double usage,
		   uint64_t *ret_idle_uj, uint64_t *ret_active_uj);

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An idle baseline for a device whose power does not follow CPU usage (a GPU): the lowest
 * power the device sustained while it was (nearly) unused, over a sliding window of intervals.
 *
 *   qualifying  an interval whose utilization is at most max_util, or unknown (NaN: a device
 *               that does not report it has every interval qualify);
 *   sustained   `sustain` consecutive qualifying intervals; the level of such a run is the
 *               highest power among them (the device held at least that much that long), so a
 *               lone dip between two readings does not pull the baseline down;
 *   window      the last `window` intervals; the baseline is the lowest level of any run in
 *               them. It follows the device down as soon as a lower level is sustained, and up
 *               once the lower runs have aged out of the window: not a minimum that never moves
 *               again (Kepler's lowest-ever reading, which a start under load also fixes too
 *               high).
 *
 * While the window holds no sustained run (busy all along) the last baseline is kept. Pure:
 * no clock, no I/O; the caller feeds one point per interval.
 */
#pragma once

#include <stddef.h>

struct vw_idle_floor;

#define VW_IDLE_FLOOR_MAX_SUSTAIN 64

/*
 * window: 1..VW_IDLE_MAX_WINDOW intervals (idle.h); sustain: 1..min(window,
 * VW_IDLE_FLOOR_MAX_SUSTAIN); max_util in [0, 1]. NULL with errno (EINVAL, ENOMEM).
 */
struct vw_idle_floor *vw_idle_floor_new(size_t window, size_t sustain, double max_util);
void vw_idle_floor_free(struct vw_idle_floor *f);
/* One interval: its mean power and utilization (0..1, NaN unknown). Negative or non-finite
 * watts are not a reading: the point breaks any run and qualifies for none. */
void vw_idle_floor_add(struct vw_idle_floor *f, double watts, double util);
/* The baseline; -EAGAIN before the first sustained run. */
int vw_idle_floor_get(const struct vw_idle_floor *f, double *ret_w);

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A meter that gives power, not energy (the ACPI power meter, a BMC's DCMI reading or watts
 * sensor, a GPU without an energy counter, the estimator's model), integrated into a cumulative
 * µJ counter that never wraps (max_range_uj 0):
 *
 *     energy += power just read x (now - time of the previous good read)
 *
 * in integers: µW x ns is 1e-9 µJ, the part below one µJ carried to the next read, so no energy
 * is lost to rounding however often it is read. The first read only sets the time; so does the
 * first after a failure (vw_power_integrator_break()): the time a failure covers is never made
 * up afterwards, the counter stands still meanwhile and never goes back.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct vw_power_integrator {
	uint64_t energy_uj; /* whole microjoules integrated so far */
	uint64_t rem_nuj;   /* the integral's part below 1 µJ, in 1e-9 µJ (µW x ns) */
	uint64_t last_ns;   /* the time of the last good read */
	bool primed;        /* last_ns is the previous read's and it was good */
};

/*
 * A good reading of power_uw at now_ns: add power_uw x (now_ns - last good read) unless this is
 * the first since a break. A clock that went back counts nothing and starts over. Returns the
 * counter.
 */
uint64_t vw_power_integrate(struct vw_power_integrator *in, uint64_t power_uw, uint64_t now_ns);
/*
 * power_uw over a span of elapsed_ns added to the counter, the part below 1 µJ carried: for a
 * source that knows each read's span rather than its time (the estimator: the model's watts
 * over the interval). Returns the counter.
 */
uint64_t vw_power_integrate_span(struct vw_power_integrator *in, uint64_t power_uw,
				 uint64_t elapsed_ns);
/* Watts as whole µW (rounded; 0 for a negative, zero or NaN power, saturated above). */
uint64_t vw_power_uw(double watts);
/* A failed read: nothing counted up to the next good one, which only sets the time again. */
void vw_power_integrator_break(struct vw_power_integrator *in);

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A power reading integrated into a cumulative microjoule counter on the caller's clock, for
 * meters that give power, not energy:
 *
 *     energy += power just read x (now - time of the previous good reading)
 *
 * exact in integers: µW x ns is 1e-9 µJ and the part below one µJ is carried to the next
 * reading, so nothing is lost to rounding however often it is read. The first reading, and the
 * first after a break (a failed read), only set the time: a span the meter could not be read
 * is not made up afterwards. A clock that steps back counts nothing and starts over. The
 * counter saturates at UINT64_MAX; it never wraps and never goes back.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct vw_power_integrator {
	uint64_t energy_uj; /* whole microjoules integrated so far */
	uint64_t rem_nuj;   /* the integral's part below 1 µJ, in 1e-9 µJ (µW x ns) */
	uint64_t last_ns;   /* time of the last good reading */
	bool primed;        /* last_ns is the previous reading's and it was good */
};

/* Add power_uw held over (now_ns - the last reading's time); returns the µJ added. */
uint64_t vw_power_integrator_add(struct vw_power_integrator *in, uint64_t power_uw,
				 uint64_t now_ns);

/* A reading failed: the next good one only sets the time again. */
static inline void vw_power_integrator_break(struct vw_power_integrator *in)
{
	in->primed = false;
}

/* SPDX-License-Identifier: Apache-2.0 */
#include "integrator.h"

#include <math.h>

#include "energy.h"

#define NS_UW_PER_UJ 1000000000ULL /* ns x µW per µJ */

typedef unsigned __int128 vw_u128;

uint64_t vw_power_integrate_span(struct vw_power_integrator *in, uint64_t power_uw,
				 uint64_t elapsed_ns)
{
	/* < 2^128 - 2^65 + 2^30: the sum cannot overflow. */
	vw_u128 nuj = (vw_u128)power_uw * elapsed_ns + in->rem_nuj;
	vw_u128 whole = nuj / NS_UW_PER_UJ;

	in->rem_nuj = (uint64_t)(nuj % NS_UW_PER_UJ);
	in->energy_uj = vw_energy_add(in->energy_uj, whole > UINT64_MAX ? UINT64_MAX : (uint64_t)whole);
	return in->energy_uj;
}

uint64_t vw_power_integrate(struct vw_power_integrator *in, uint64_t power_uw, uint64_t now_ns)
{
	if (in->primed && now_ns > in->last_ns)
		(void)vw_power_integrate_span(in, power_uw, now_ns - in->last_ns);
	in->last_ns = now_ns;
	in->primed = true;
	return in->energy_uj;
}

uint64_t vw_power_uw(double watts)
{
	double uw = watts * 1e6;

	if (!(uw > 0)) /* negative, zero or NaN */
		return 0;
	return uw >= 9.2e18 ? UINT64_MAX : (uint64_t)llround(uw); /* 9.2 TW: no real power */
}

void vw_power_integrator_break(struct vw_power_integrator *in)
{
	in->primed = false;
}

/* SPDX-License-Identifier: Apache-2.0 */
#include "integrator.h"

#include "energy.h"

#define NS_UW_PER_UJ 1000000000ULL /* ns x µW per µJ */

typedef unsigned __int128 vw_u128;

uint64_t vw_power_integrate(struct vw_power_integrator *in, uint64_t power_uw, uint64_t now_ns)
{
	if (in->primed && now_ns > in->last_ns) {
		/* < 2^128 - 2^65 + 2^30: the sum cannot overflow. */
		vw_u128 nuj = (vw_u128)power_uw * (now_ns - in->last_ns) + in->rem_nuj;
		vw_u128 whole = nuj / NS_UW_PER_UJ;

		in->rem_nuj = (uint64_t)(nuj % NS_UW_PER_UJ);
		in->energy_uj = vw_energy_add(in->energy_uj,
					      whole > UINT64_MAX ? UINT64_MAX : (uint64_t)whole);
	}
	in->last_ns = now_ns;
	in->primed = true;
	return in->energy_uj;
}

void vw_power_integrator_break(struct vw_power_integrator *in)
{
	in->primed = false;
}

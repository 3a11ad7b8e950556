/* SPDX-License-Identifier: Apache-2.0 */
#include "energy.h"

/*
 * Products of a time in ns and a power in µW (1e-15 J, i.e. 1e-9 µJ) overflow 64 bits after a
 * few hours at a few hundred watts, so every comparison of energy against time x power is done
 * in 128 bits, scaled to 1e-9 µJ on both sides.
 */
typedef unsigned __int128 vw_u128;

#define NS_UW_PER_UJ 1000000000ULL /* ns x µW per µJ */

void vw_energy_counter_init(struct vw_energy_counter *c, uint64_t max_range_uj,
			    uint64_t max_power_uw)
{
	*c = (struct vw_energy_counter){
		.max_range_uj = max_range_uj,
		.max_power_uw = max_power_uw,
	};
}

bool vw_energy_delta(uint64_t prev, uint64_t cur, uint64_t max_range_uj, uint64_t *ret_delta_uj)
{
	if (max_range_uj && (prev > max_range_uj || cur > max_range_uj))
		return false;
	if (cur >= prev) {
		*ret_delta_uj = cur - prev;
		return true;
	}
	if (!max_range_uj)
		return false;
	/* prev <= max, so neither term overflows and the sum stays below max. */
	*ret_delta_uj = (max_range_uj - prev) + cur;
	return true;
}

/* At the ceiling, could the meter have counted through its whole range in elapsed_ns? */
static bool may_span_whole_range(const struct vw_energy_counter *c, uint64_t elapsed_ns)
{
	if (!c->max_power_uw || !c->max_range_uj)
		return false;
	return (vw_u128)elapsed_ns * c->max_power_uw >= (vw_u128)c->max_range_uj * NS_UW_PER_UJ;
}

/* Is delta more than the meter could count in elapsed_ns at its ceiling? */
static bool exceeds_ceiling(const struct vw_energy_counter *c, uint64_t delta_uj,
			    uint64_t elapsed_ns)
{
	if (!c->max_power_uw)
		return false;
	return (vw_u128)delta_uj * NS_UW_PER_UJ > (vw_u128)elapsed_ns * c->max_power_uw;
}

static void rebaseline(struct vw_energy_counter *c, uint64_t raw_uj, uint64_t now_ns)
{
	c->last_raw_uj = raw_uj;
	c->last_ns = now_ns;
	c->primed = true;
}

static enum vw_energy_result gap(struct vw_energy_counter *c, uint64_t raw_uj, uint64_t now_ns)
{
	c->gaps++;
	rebaseline(c, raw_uj, now_ns);
	return VW_ENERGY_GAP;
}

enum vw_energy_result vw_energy_counter_update(struct vw_energy_counter *c, uint64_t raw_uj,
					       uint64_t now_ns, uint64_t *ret_delta_uj)
{
	uint64_t delta = 0, elapsed;
	bool wrapped;

	if (ret_delta_uj)
		*ret_delta_uj = 0;
	if (c->max_range_uj && raw_uj > c->max_range_uj) {
		/* Junk cannot serve as a baseline: the next valid reading will. */
		c->gaps++;
		c->primed = false;
		return VW_ENERGY_GAP;
	}
	if (!c->primed) {
		rebaseline(c, raw_uj, now_ns);
		return VW_ENERGY_BASELINE;
	}
	if (now_ns < c->last_ns)
		return gap(c, raw_uj, now_ns);
	elapsed = now_ns - c->last_ns;
	if (may_span_whole_range(c, elapsed))
		return gap(c, raw_uj, now_ns);
	if (!vw_energy_delta(c->last_raw_uj, raw_uj, c->max_range_uj, &delta))
		return gap(c, raw_uj, now_ns);
	if (exceeds_ceiling(c, delta, elapsed))
		return gap(c, raw_uj, now_ns);

	wrapped = raw_uj < c->last_raw_uj;
	if (wrapped)
		c->wraps++;
	c->total_uj = vw_energy_add(c->total_uj, delta);
	rebaseline(c, raw_uj, now_ns);
	if (ret_delta_uj)
		*ret_delta_uj = delta;
	return wrapped ? VW_ENERGY_WRAPPED : VW_ENERGY_OK;
}

double vw_energy_watts(uint64_t delta_uj, uint64_t elapsed_ns)
{
	if (elapsed_ns == 0)
		return 0.0;
	/* µJ / ns = 1e-6 J / 1e-9 s = 1e3 W */
	return (double)delta_uj * 1e3 / (double)elapsed_ns;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Monotonic 64-bit microjoule accumulators fed by raw meter readings that wrap at
 * max_energy_range_uj. Integers until output; a reading that cannot be unwrapped with
 * certainty is a gap (counted), never negative or invented energy.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "macro.h"

struct vw_energy_counter {
	uint64_t total_uj;     /* accumulated since start (or since its owner emptied it: node.c
				* does at each close, the interval being all it needs); only grows */
	uint64_t last_raw_uj;  /* last raw reading (baseline for the next delta) */
	uint64_t last_ns;      /* CLOCK_MONOTONIC of last_raw_uj */
	uint64_t max_range_uj; /* raw counter wraps after this value; 0 = unknown */
	uint64_t max_power_uw; /* plausibility ceiling for the meter; 0 = none */
	uint64_t gaps;         /* readings dropped as ambiguous */
	uint64_t wraps;        /* wraps unwrapped */
	bool primed;           /* a baseline exists */
};

enum vw_energy_result {
	VW_ENERGY_BASELINE, /* first reading (or first after a gap): no delta */
	VW_ENERGY_OK,       /* delta added */
	VW_ENERGY_WRAPPED,  /* delta added across one wrap */
	VW_ENERGY_GAP,      /* could not be known: no delta, new baseline, gaps++ */
};

void vw_energy_counter_init(struct vw_energy_counter *c, uint64_t max_range_uj,
			    uint64_t max_power_uw);

/*
 * Pure wrap-safe delta: cur >= prev ? cur - prev : (max - prev) + cur.
 * False when it cannot be known (a decrease with max unknown, or prev/cur above max).
 */
bool vw_energy_delta(uint64_t prev, uint64_t cur, uint64_t max_range_uj, uint64_t *ret_delta_uj);

/*
 * Feed a raw reading taken at now_ns. A gap when: the delta is unknowable; elapsed time at the
 * plausibility ceiling could cover a whole wrap; or the delta exceeds elapsed x ceiling.
 * *ret_delta_uj (optional) gets the energy added (0 unless OK or WRAPPED).
 * After a gap the reading is the new baseline, except a raw value above max_range_uj (junk):
 * that one is dropped and the next valid reading becomes the baseline. A clock going backwards
 * is a gap too. total_uj saturates at UINT64_MAX and never decreases.
 */
enum vw_energy_result vw_energy_counter_update(struct vw_energy_counter *c, uint64_t raw_uj,
					       uint64_t now_ns, uint64_t *ret_delta_uj);

/* Saturating add for derived accumulators (never wraps, never decreases). */
static inline uint64_t vw_energy_add(uint64_t total_uj, uint64_t delta_uj)
{
	return vw_add_sat(total_uj, delta_uj);
}

/* Power from an energy delta over an interval, in watts (0 for an empty interval). */
double vw_energy_watts(uint64_t delta_uj, uint64_t elapsed_ns);

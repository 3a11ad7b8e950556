/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtwatt-guest's core. Every interval: poll the passthrough channel, pick the power source
 * (fresh passthrough, else the model) with hysteresis, take the interval's node energy per zone
 * from it, split it over this VM's workloads with the host's registry and ratio code, render,
 * keep every counter monotonic (series_state.h) and publish the snapshot.
 *
 * Sources: passthrough gives the VM's exact idle and active energy (the accumulator's deltas);
 * the model (the host's estimator power source, evaluated on this VM's CPU time) gives
 * estimated node power, whose idle part no workload gets (the guest cannot know its share of
 * the host's idle). A switch takes effect at the next interval: the interval in which fresh
 * frames come back is still the model's, and passthrough counts from the frames seen then, so
 * no energy is counted twice; passthrough that has been stale for passthrough.stale-after
 * publication intervals hands over to the model.
 */
#pragma once

#include <signal.h>
#include <stdint.h>

#include "http.h"
#include "options.h"
#include "workloads.h"
#include "zone.h"

struct vw_guest;

enum vw_guest_source {
	VW_GUEST_MODEL,
	VW_GUEST_PASSTHROUGH,
};

int vw_guest_new(const struct vw_guest_config *cfg, struct vw_guest **ret);
void vw_guest_free(struct vw_guest *g);

/* Close the interval ending at now_ns (CLOCK_MONOTONIC): the first call only takes baselines. */
int vw_guest_tick(struct vw_guest *g, uint64_t now_ns);

struct vw_exposition *vw_guest_exposition(struct vw_guest *g);
/* The source the last interval's energy came from. */
enum vw_guest_source vw_guest_source_used(const struct vw_guest *g);
const char *vw_guest_source_name(enum vw_guest_source s);
/* The last interval's node energy per zone: [zone][0] active, [zone][1] idle (µJ), and what
 * the workloads were given of it. */
void vw_guest_last_interval(const struct vw_guest *g, uint64_t node[VW_ZONE__COUNT][2],
			    uint64_t given[VW_ZONE__COUNT][2]);
/* The workload registry's totals (NULL registry: all zero). */
void vw_guest_workload_totals(const struct vw_guest *g, struct vw_workloads_totals *ret);

int vw_guest_run(struct vw_guest *g, volatile sig_atomic_t *stop);

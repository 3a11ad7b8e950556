/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Carbon, as an estimate that says so: each interval's energy of the node and of every
 * container, pod and VM, times the grid's carbon intensity over that interval, integrated into
 * virtwatt_{node,container,pod,vm}_co2e_grams_total. Absent unless an intensity is configured.
 *
 * The intensity (gCO2e per kWh) is a static figure (--carbon.intensity) or a table of
 * time -> intensity the operator refreshes (--carbon.intensity-file, e.g. from a grid
 * operator's feed): a step function, each entry holding from its time until the next one, the
 * last one until the file says more. Over an interval the time-weighted mean of that function
 * is used, so energy drawn at a steady rate is converted exactly whatever the steps. A span
 * before the table's first entry has no intensity: its energy is not converted and the span is
 * counted (virtwatt_carbon_intensity_missing_seconds_total).
 *
 * The energy comes from the very counters the exposition writes (prom.h's counter observer):
 * kepler_node_cpu_joules_total (node, per zone: zones overlap, never sum them), and Kepler's
 * container, pod and VM cpu joules (their active energy, as Kepler counts it). A workload's
 * carbon series keeps its energy series' labels (state follows it) plus intensity_source
 * (static, or file:NAME).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "prom.h"

/* ---- The intensity ---- */

struct vw_intensity_point {
	int64_t unix_s;
	double g_per_kwh;
};

/*
 * A table's text: one entry a line, "TIME INTENSITY" or "TIME,INTENSITY", TIME in Unix
 * seconds or RFC 3339 UTC (2026-11-27T12:00:00Z), '#' comments and blank lines ignored; times
 * strictly increasing; intensities finite, 0 to 10000. 0 with a malloc'd table, or -EINVAL
 * with the line and what is wrong in why.
 */
int vw_intensity_parse(const char *text, size_t len, struct vw_intensity_point **ret,
		       size_t *ret_n, char *why, size_t whylen);

/*
 * The integral of the step function over [from_ns, to_ns) (Unix ns) in g/kWh x seconds, and
 * in *missing_s the part of the span before the first entry (no intensity). Pure.
 */
double vw_intensity_integral(const struct vw_intensity_point *t, size_t n, int64_t from_ns,
			     int64_t to_ns, double *missing_s);

/* ---- The tracker ---- */

struct vw_carbon_opts {
	double static_g_per_kwh; /* used when file is NULL; > 0 */
	const char *file;        /* the intensity table (re-read when it changes) */
	bool baseline_first;     /* the first snapshot's counters are a baseline, not energy
				  * (the guest, whose counters survive its restarts) */
	int64_t start_ns;        /* Unix ns the counters start from (0: now) */
};

struct vw_carbon;

/* NULL with errno: EINVAL (why says: an unreadable or malformed file at start), ENOMEM. */
struct vw_carbon *vw_carbon_new(const struct vw_carbon_opts *o, char *why, size_t whylen);
void vw_carbon_free(struct vw_carbon *c);

/*
 * Around one text render: begin (now, Unix ns) fixes the interval since the last render and
 * re-reads a changed file; the writer's counter observer (vw_carbon_observe, ctx c) converts
 * each energy sample's increase; render with commit writes the carbon families (after every
 * energy family) and forgets the series no longer written. Another rendering of the same
 * snapshot (OpenMetrics) renders without commit and without begin or the observer.
 */
void vw_carbon_begin(struct vw_carbon *c, int64_t now_ns);
void vw_carbon_observe(void *c, const struct vw_metric_family *f, const char *const *values,
		       uint64_t micro);
int vw_carbon_render(struct vw_carbon *c, struct vw_prom_writer *w, const char *node_name,
		     bool commit);

extern const struct vw_family_table vw_carbon_family_table;

/* SPDX-License-Identifier: Apache-2.0 */
/* virtwatt-host's metric families and the rendering of a node snapshot (pure: no I/O). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "idle.h"
#include "power_source.h"
#include "procfs.h"
#include "prom.h"
#include "processinfo.h"
#include "zone.h"

struct vw_node_zone_view {
	enum vw_zone zone;
	const char *path;
	uint64_t total_uj, idle_uj, active_uj;
	double watts, idle_watts, active_watts;
	double idle_baseline_w; /* idle power the split used this interval */
	enum vw_idle_method idle_method;
	uint64_t gaps;
	uint64_t wraps; /* counter wraps unwrapped */
	uint64_t read_errors;
	uint64_t filled_us; /* counted from a meter reading held after a failed request */
};

struct vw_node_view {
	const char *node_name;
	const char *source;     /* the CPU zones': "rapl", "estimator" */
	bool measured;
	const char *platform_source; /* the platform meter ("acpi"), or NULL for none */
	/* The platform meter's own readings (kepler_platform_watts rows); none while stale. */
	const struct vw_platform_reading *platform_readings;
	size_t n_platform_readings;
	/* Platform minus the CPU zones (package, dram), each interval's clamped at 0 and summed:
	 * fans, disks, NICs, PSU losses. Rendered where the node has both. */
	bool has_noncpu;
	uint64_t noncpu_uj;
	double noncpu_watts;
	const char *model;      /* model identity when estimated, else NULL */
	uint64_t model_clamped; /* estimator outputs clamped at 0 */
	uint64_t model_extrapolated; /* estimator inputs beyond the model's training range */
	double usage_ratio;
	const struct vw_node_zone_view *zones;
	size_t n_zones;
	const struct vw_cpu_info *cpus;
	size_t n_cpus;
	const struct vw_processinfo *self; /* the daemon's own process_* gauges, or NULL */
};

/* Write the node families into w (the caller owns the writer and finishes it). */
int vw_host_metrics_write(const struct vw_node_view *v, struct vw_prom_writer *w);

/* The static family table (for the selfcheck test). */
extern const struct vw_metric_family vw_host_families[];
extern const struct vw_family_table vw_host_family_table;

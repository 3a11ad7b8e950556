/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Hardware counters per CPU (cycles, instructions, cache misses) behind an ops table: the real
 * back-end opens perf events per CPU, a fake one serves scripted counts to tests. Where the
 * machine has no hardware PMU (most VMs, the build machine) the real back-end's open fails
 * with -ENOENT or -EOPNOTSUPP and the caller splits energy by CPU time instead:
 * vw_split_key_for_zone() says which usage divides which zone.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "zone.h"

enum vw_hw_counter {
	VW_HW_CYCLES,
	VW_HW_INSTRUCTIONS,
	VW_HW_CACHE_MISSES,
	VW_HW__COUNT,
};

#define VW_HW_BIT(c) (1u << (c))

/* Cumulative counts of one CPU since open, scaled up when the PMU was multiplexed. */
struct vw_hw_sample {
	uint64_t value[VW_HW__COUNT];
};

/* Fake back-end script: each read of CPU c adds step[c][counter] to its counts. */
struct vw_hw_fake_script {
	unsigned available; /* VW_HW_BIT() mask of the counters this "machine" has */
	unsigned ncpus;
	const uint64_t (*step)[VW_HW__COUNT]; /* ncpus rows */
};

struct vw_hw_env {
	unsigned ncpus;                       /* CPUs 0..ncpus-1 */
	const struct vw_hw_fake_script *fake; /* the fake back-end's script */
};

struct vw_hw_counters_ops {
	const char *name;
	/*
	 * 0 when at least one counter works on some CPU. -ENOENT / -EOPNOTSUPP: no such hardware
	 * event here; -EACCES / -EPERM: perf_event_paranoid or missing CAP_PERFMON.
	 */
	int (*open)(const struct vw_hw_env *env, void **ret_state);
	/* VW_HW_BIT() mask of the counters that opened. */
	unsigned (*available)(void *state);
	/* Cumulative counts of one CPU; counters not available read 0. -EINVAL past ncpus. */
	int (*read)(void *state, unsigned cpu, struct vw_hw_sample *ret);
	void (*close)(void *state);
};

extern const struct vw_hw_counters_ops vw_hw_perf;
extern const struct vw_hw_counters_ops vw_hw_fake;

/*
 * One counting event of kind c for every task on one CPU (pid -1), read_format with the enabled
 * and running times: an fd, or -errno (-ENOENT / -EOPNOTSUPP without a PMU, -ENODEV for an
 * offline CPU). standin: a software event in its place (CPU time in ns for cycles and
 * instructions, context switches for cache misses), so that the per-process path runs where
 * there is no PMU; for tests and benchmarks only.
 */
int vw_hw_open_cpu(enum vw_hw_counter c, unsigned cpu, bool standin);

/* "cycles", "instructions", "cache_misses". */
const char *vw_hw_counter_name(enum vw_hw_counter c);

/* Sum of every CPU's counts. */
int vw_hw_read_total(const struct vw_hw_counters_ops *ops, void *state, unsigned ncpus,
		     struct vw_hw_sample *ret);

/* Which usage divides a zone's dynamic energy among workloads. */
enum vw_split_key {
	VW_SPLIT_CPU_TIME,
	VW_SPLIT_INSTRUCTIONS,
	VW_SPLIT_CACHE_MISSES,
};

/*
 * Kepler v0.7's choice: instructions for package and core (work done by the cores), cache
 * misses for dram (memory traffic), CPU time for every other zone (uncore, psys, platform) and
 * whenever the wanted counter is not in `available` (a VW_HW_BIT() mask; 0 without counters).
 */
enum vw_split_key vw_split_key_for_zone(enum vw_zone zone, unsigned available);
/* "cpu_time", "instructions", "cache_misses". */
const char *vw_split_key_name(enum vw_split_key key);

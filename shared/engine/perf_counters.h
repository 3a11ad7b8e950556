/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Hardware counters per CPU (cycles, instructions, cache misses): the perf events the BPF
 * accountant reads per task (cpu_bpf.c). Where the machine has no hardware PMU (most VMs, the
 * build machine) opening them fails with -ENOENT or -EOPNOTSUPP and energy splits by CPU time
 * instead: vw_split_key_for_zone() says which usage divides which zone.
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

/* SPDX-License-Identifier: Apache-2.0 */
/* Hardware counters per CPU (perf_event_open, for the BPF accountant) and the zone split key. */
#include "perf_counters.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"

static const char *const counter_names[VW_HW__COUNT] = {
	[VW_HW_CYCLES] = "cycles",
	[VW_HW_INSTRUCTIONS] = "instructions",
	[VW_HW_CACHE_MISSES] = "cache_misses",
};

const char *vw_hw_counter_name(enum vw_hw_counter c)
{
	return (unsigned)c < VW_HW__COUNT ? counter_names[c] : "unknown";
}

/* ---- perf_event_open ---- */

static const uint64_t perf_configs[VW_HW__COUNT] = {
	[VW_HW_CYCLES] = PERF_COUNT_HW_CPU_CYCLES,
	[VW_HW_INSTRUCTIONS] = PERF_COUNT_HW_INSTRUCTIONS,
	[VW_HW_CACHE_MISSES] = PERF_COUNT_HW_CACHE_MISSES,
};

/* Software events that stand in for each kind where there is no PMU (tests, benchmarks):
 * CPU time in ns for cycles and instructions, context switches for cache misses. */
static const uint64_t standin_configs[VW_HW__COUNT] = {
	[VW_HW_CYCLES] = PERF_COUNT_SW_CPU_CLOCK,
	[VW_HW_INSTRUCTIONS] = PERF_COUNT_SW_CPU_CLOCK,
	[VW_HW_CACHE_MISSES] = PERF_COUNT_SW_CONTEXT_SWITCHES,
};

int vw_hw_open_cpu(enum vw_hw_counter c, unsigned cpu, bool standin)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = standin ? PERF_TYPE_SOFTWARE : PERF_TYPE_HARDWARE,
		.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING,
	};
	long fd;

	if ((unsigned)c >= VW_HW__COUNT)
		return -EINVAL;
	attr.config = standin ? standin_configs[c] : perf_configs[c];
	fd = syscall(SYS_perf_event_open, &attr, -1, (int)cpu, -1, PERF_FLAG_FD_CLOEXEC);
	return fd < 0 ? -errno : (int)fd;
}

enum vw_split_key vw_split_key_for_zone(enum vw_zone zone, unsigned available)
{
	switch (zone) {
	case VW_ZONE_PACKAGE:
	case VW_ZONE_CORE:
		if (available & VW_HW_BIT(VW_HW_INSTRUCTIONS))
			return VW_SPLIT_INSTRUCTIONS;
		break;
	case VW_ZONE_DRAM:
		if (available & VW_HW_BIT(VW_HW_CACHE_MISSES))
			return VW_SPLIT_CACHE_MISSES;
		break;
	default:
		break;
	}
	return VW_SPLIT_CPU_TIME;
}

const char *vw_split_key_name(enum vw_split_key key)
{
	switch (key) {
	case VW_SPLIT_INSTRUCTIONS:
		return "instructions";
	case VW_SPLIT_CACHE_MISSES:
		return "cache_misses";
	case VW_SPLIT_CPU_TIME:
		break;
	}
	return "cpu_time";
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Hardware counters per CPU: perf_event_open back-end, a scripted fake, the zone split key. */
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

static unsigned env_ncpus(const struct vw_hw_env *env)
{
	long n = sysconf(_SC_NPROCESSORS_CONF);

	if (env && env->ncpus)
		return env->ncpus;
	return n > 0 ? (unsigned)n : 1;
}

/* ---- perf_event_open ---- */

struct perf_state {
	unsigned ncpus;
	unsigned available;
	int *fds; /* [cpu * VW_HW__COUNT + counter], -1 when not open */
};

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

static void perf_close(void *state)
{
	struct perf_state *s = state;

	if (!s)
		return;
	for (size_t i = 0; s->fds && i < (size_t)s->ncpus * VW_HW__COUNT; i++)
		vw_closep(&s->fds[i]);
	free(s->fds);
	free(s);
}

static int perf_open(const struct vw_hw_env *env, void **ret_state)
{
	struct perf_state *s = calloc(1, sizeof(*s));
	int first_err = 0;

	if (!s)
		return -ENOMEM;
	s->ncpus = env_ncpus(env);
	s->fds = malloc((size_t)s->ncpus * VW_HW__COUNT * sizeof(*s->fds));
	if (!s->fds) {
		perf_close(s);
		return -ENOMEM;
	}
	for (unsigned cpu = 0; cpu < s->ncpus; cpu++) {
		for (unsigned c = 0; c < VW_HW__COUNT; c++) {
			int fd = vw_hw_open_cpu(c, cpu, false);

			s->fds[cpu * VW_HW__COUNT + c] = fd;
			if (fd >= 0)
				s->available |= VW_HW_BIT(c);
			else if (fd != -ENODEV && !first_err) /* ENODEV: CPU offline */
				first_err = fd;
		}
	}
	if (!s->available) {
		perf_close(s);
		return first_err ? first_err : -ENODEV;
	}
	vw_debug("perf: hardware counters open on %u CPUs (mask 0x%x)", s->ncpus, s->available);
	*ret_state = s;
	return 0;
}

static unsigned perf_available(void *state)
{
	return ((struct perf_state *)state)->available;
}

/* value * enabled / running: the count had the PMU been ours all the time. */
static uint64_t scaled(const uint64_t v[3])
{
	if (v[2] == 0)
		return 0;
	if (v[2] >= v[1])
		return v[0];
	return (uint64_t)((unsigned __int128)v[0] * v[1] / v[2]);
}

static int perf_read(void *state, unsigned cpu, struct vw_hw_sample *ret)
{
	struct perf_state *s = state;

	if (cpu >= s->ncpus)
		return -EINVAL;
	*ret = (struct vw_hw_sample){ 0 };
	for (unsigned c = 0; c < VW_HW__COUNT; c++) {
		int fd = s->fds[cpu * VW_HW__COUNT + c];
		uint64_t v[3]; /* value, time enabled, time running */
		ssize_t n;

		if (fd < 0)
			continue;
		n = read(fd, v, sizeof(v));
		if (n < 0)
			return -errno;
		if (n != (ssize_t)sizeof(v))
			return -EIO;
		ret->value[c] = scaled(v);
	}
	return 0;
}

const struct vw_hw_counters_ops vw_hw_perf = {
	.name = "perf",
	.open = perf_open,
	.available = perf_available,
	.read = perf_read,
	.close = perf_close,
};

/* ---- fake ---- */

struct fake_state {
	const struct vw_hw_fake_script *script;
	struct vw_hw_sample *counts; /* per CPU */
};

static void fake_close(void *state)
{
	struct fake_state *s = state;

	if (!s)
		return;
	free(s->counts);
	free(s);
}

static int fake_open(const struct vw_hw_env *env, void **ret_state)
{
	struct fake_state *s;

	if (!env || !env->fake || !env->fake->step || !env->fake->ncpus)
		return -EINVAL;
	if (!env->fake->available)
		return -ENOENT; /* like a VM without a PMU */
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->script = env->fake;
	s->counts = calloc(env->fake->ncpus, sizeof(*s->counts));
	if (!s->counts) {
		fake_close(s);
		return -ENOMEM;
	}
	*ret_state = s;
	return 0;
}

static unsigned fake_available(void *state)
{
	return ((struct fake_state *)state)->script->available;
}

static int fake_read(void *state, unsigned cpu, struct vw_hw_sample *ret)
{
	struct fake_state *s = state;

	if (cpu >= s->script->ncpus)
		return -EINVAL;
	for (unsigned c = 0; c < VW_HW__COUNT; c++)
		if (s->script->available & VW_HW_BIT(c))
			s->counts[cpu].value[c] += s->script->step[cpu][c];
	*ret = s->counts[cpu];
	return 0;
}

const struct vw_hw_counters_ops vw_hw_fake = {
	.name = "fake",
	.open = fake_open,
	.available = fake_available,
	.read = fake_read,
	.close = fake_close,
};

int vw_hw_read_total(const struct vw_hw_counters_ops *ops, void *state, unsigned ncpus,
		     struct vw_hw_sample *ret)
{
	struct vw_hw_sample sum = { 0 };

	for (unsigned cpu = 0; cpu < ncpus; cpu++) {
		struct vw_hw_sample one;
		int r = ops->read(state, cpu, &one);

		if (r < 0)
			return r;
		for (unsigned c = 0; c < VW_HW__COUNT; c++)
			sum.value[c] += one.value[c];
	}
	*ret = sum;
	return 0;
}

/* ---- split key ---- */

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

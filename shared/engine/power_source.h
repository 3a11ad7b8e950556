/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Power sources: static const ops tables probed in preference order. A source exposes zones
 * and, on each read, one raw cumulative microjoule counter per zone (wrapping at the zone's
 * max_range_uj, 0 = never), or two where it knows the split (read_split: idle and active). The
 * node-energy stage (node.h) turns those into monotonic totals and intervals.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zone.h"

struct vw_model;
struct vw_option;
struct vw_option_alias;
struct vw_power_source_ops;

/* One source's configuration, as a daemon hands it over (vw_power_source_config()). */
struct vw_source_config {
	const struct vw_power_source_ops *ops;
	const void *config;
};

#define VW_POWER_MAX_ZONES 64

struct vw_zone_info {
	enum vw_zone zone;
	unsigned socket;       /* package index for per-socket zones, else 0 */
	char path[128];        /* Kepler's `path` label: /sys/class/powercap/intel-rapl:0[:N] */
	uint64_t max_range_uj; /* raw counter wraps after this; 0 = unknown */
	uint64_t max_power_uw; /* plausibility ceiling, 0 = none (powercap: 4 x constraint_0) */
	double idle_w;         /* source-provided idle power (a model at zero load); <0 = none */
};

/*
 * One reading of a whole-node meter, as a row of Kepler's kepler_platform_watts{source,
 * node_name, bmc_id, chassis_id, source_id, source_name, source_type}: what the meter itself
 * calls it (a Redfish chassis's PowerControl or PowerSupply, a DCMI reading). Empty strings are
 * labels the meter has no value for.
 */
#define VW_PLATFORM_LABEL 64
struct vw_platform_reading {
	char bmc_id[VW_PLATFORM_LABEL];
	char chassis_id[VW_PLATFORM_LABEL];
	char source_id[VW_PLATFORM_LABEL];
	char source_name[VW_PLATFORM_LABEL];
	char source_type[VW_PLATFORM_LABEL];
	uint64_t uw; /* the reading, µW */
};
#define VW_PLATFORM_MAX_READINGS 16

/* What the node sampler knows about the interval; the estimator needs it. */
struct vw_node_activity {
	uint64_t now_ns;
	uint64_t elapsed_ns;      /* since the previous read; 0 on the first */
	double cpu_ms_per_s;      /* CPU milliseconds per wall second, all CPUs (Kepler's feature) */
	double usage_ratio;       /* 0..1 */
	unsigned ncpus;
};

struct vw_power_env {
	int sysfs_fd;                 /* root of --host.sysfs */
	/* Root of --host.devfs as a path (a library opens its device by name: FreeIPMI's
	 * in-band driver); NULL: none, no device below it is looked for. */
	const char *devfs;
	const struct vw_model *model; /* for the estimator; not owned */
	const char *model_origin;     /* file path, URL or "builtin" */
	unsigned host_cores;          /* for the model's machine_spec core ratio */
	const void *ctx;              /* a daemon's own sources' input (the guest's passthrough
				       * reader); the engine's sources ignore it */
	/* Each source's own configuration (its ops' options, configured), n_configs of them. */
	const struct vw_source_config *configs;
	size_t n_configs;
};

/* Counters a source may report (all optional, zero when not applicable). */
struct vw_power_source_stats {
	uint64_t clamped;      /* model evaluations whose output was negative, clamped to 0 */
	uint64_t extrapolated; /* model evaluations outside the training range */
	const char *model;     /* model identity, or NULL for a meter */
	/* A polled meter's (poller.h), for its one zone: spans it counted nothing for (gaps,
	 * cumulative) and the time it counted from a reading held after a failed request. */
	uint64_t gaps;
	uint64_t filled_ns;
};

/*
 * A source's own options, declared beside its ops (a meter's flags): config.h rows whose offsets
 * are into the source's options struct of `size` bytes, and Kepler's spellings of them. A daemon
 * puts the rows of every source in its chains into its option table (--help, the YAML file) and
 * hands each source its filled struct, or what configure() made of it, through
 * vw_power_source_config().
 */
struct vw_source_options {
	const struct vw_option *rows;
	size_t n_rows;
	const struct vw_option_alias *aliases; /* NULL, or ended by an all-NULL row */
	size_t size;
	/* Optional: once at start, before any source opens, whether or not this one is tried:
	 * check the options and read what they name (a BMC file, a password file) into the
	 * source's configuration *ret (NULL: none, the source gives -ENODEV), freed by release().
	 * -errno, logged naming the flag, stops the start. Without it the source gets opts. */
	int (*configure)(const void *opts, const char *node_name, void **ret);
	void (*release)(void *config);
	/* Optional: whether the options ask for this source before the others of its chain when
	 * nothing names an order (Kepler's experimental.hwmon.forceEnabled). */
	bool (*first)(const void *opts);
};

struct vw_power_source_ops {
	const char *name; /* "rapl", "estimator": the `source` label */
	const char *about; /* what it reads, for --help's list of a chain's sources; NULL: nothing */
	bool measured;    /* a real meter (false: estimated) */
	bool standby;     /* opens at once, used only while its data comes (the guest's
			   * passthrough): said so at start, not "using" */
	/* -ENODEV when this machine has no such meter; other -errno on failure. */
	int (*open)(const struct vw_power_env *env, void **ret_state);
	/* Zones of this source; valid until close. */
	size_t (*zones)(void *state, const struct vw_zone_info **ret_zones);
	/*
	 * Fill raw_uj[i] for each zone; errs[i] = 0 or -errno for that zone (-ENODATA: the source
	 * has no energy for it yet). Returns 0 when at least one zone was read, else the first
	 * error. A source that splits idle and active itself has read_split instead.
	 */
	int (*read)(void *state, const struct vw_node_activity *act, uint64_t *raw_uj, int *errs);
	/* Instead of read, for a source that knows each zone's split (the guest's passthrough:
	 * its host's split for this VM): the idle and the active counter of each zone. */
	int (*read_split)(void *state, const struct vw_node_activity *act, uint64_t *idle_uj,
			  uint64_t *active_uj, int *errs);
	/* Optional: counters for metrics. */
	void (*stats)(void *state, struct vw_power_source_stats *ret);
	/* Optional: whether the source has fresh readings now (without it: always). A daemon
	 * that keeps a chain open uses its first fresh source (vw_power_source_pick). */
	bool (*fresh)(void *state);
	/* Optional: a whole-node meter's current readings (at most max; none while they are
	 * stale), for kepler_platform_watts. */
	size_t (*readings)(void *state, struct vw_platform_reading *out, size_t max);
	void (*close)(void *state);
	/* Optional: the source's own options. */
	const struct vw_source_options *options;
};

/* The configuration env holds for ops (NULL: none given). */
const void *vw_power_source_config(const struct vw_power_env *env,
				   const struct vw_power_source_ops *ops);

/* What read() returns for per-zone results errs[0..n): 0 when one zone was read, else the first
 * error (-ENODEV for no zone). */
int vw_power_read_result(const int *errs, size_t n);

/* The model estimator (src_estimator.c): the source of last resort, in both daemons' chains. */
extern const struct vw_power_source_ops vw_src_estimator;

struct vw_power_source {
	const struct vw_power_source_ops *ops;
	void *state;
};

/*
 * Open the first source of `chain` (a daemon's sources in preference order, NULL-terminated)
 * that works. `only` (optional, NULL-terminated) restricts and orders by name. -ENODEV when
 * none works, -EINVAL for a name not in the chain.
 */
int vw_power_source_open(const struct vw_power_source_ops *const *chain,
			 const struct vw_power_env *env, const char *const *only,
			 struct vw_power_source *ret);
void vw_power_source_close(struct vw_power_source *src);

/*
 * For a daemon that switches sources at run time (the guest: passthrough while its host
 * publishes, else the model): open every source of `chain` that works, in order, into
 * ret[0..*ret_n). -ENODEV when none opens.
 */
int vw_power_source_open_each(const struct vw_power_source_ops *const *chain,
			      const struct vw_power_env *env, struct vw_power_source *ret,
			      size_t max, size_t *ret_n);
/* The first fresh source of s[0..n) (n - 1 when none is: the last resort). */
size_t vw_power_source_pick(const struct vw_power_source *s, size_t n);

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The host's meters told their options: each source of the host's chains that declares options
 * (power/src_*.c) makes its configuration from its options struct (its configure(): the BMC
 * file, a password file), and env->configs hands each one its own at open. Nothing here knows
 * one meter from another.
 */
#pragma once

#include "options.h"
#include "power.h"

#define VW_HOST_METERS_MAX 16

struct vw_host_meters {
	struct vw_source_config configs[VW_HOST_METERS_MAX]; /* env->configs */
	size_t n;
};

/*
 * Configure every meter of the host's chains, whether or not it will be tried; -errno (logged
 * by the meter, naming the flag or the file) on a configuration error.
 */
int vw_host_meters_setup(struct vw_host_meters *m, const struct vw_host_config *cfg,
			 const char *node_name);
void vw_host_meters_fini(struct vw_host_meters *m);

/*
 * The CPU zones' sources in preference order (vw_power_source_open()'s `only`): power.sources;
 * else Kepler's cpu.preferredMeters (fake, Kepler's random meter, is our estimate) with the
 * estimator last; else those a source's options put first (experimental.hwmon.forceEnabled:
 * hwmon) and the chain's others after; else NULL, all in chain order. names has room for 8 and
 * the NULL. -EINVAL (logged) for a preferred meter Kepler does not have.
 */
int vw_host_cpu_source_names(const struct vw_host_config *c, const char **names,
			     const char *const **ret);

/* What vw_host_meters_open() opens at most: the CPU zones' source, then a platform meter. */
#define VW_HOST_METERS_OPENED 2

/*
 * Open the CPU zones' source (src[0]: one must open, in vw_host_cpu_source_names()' order),
 * then a platform meter if the machine has one (src[1], platform.sources; "none": not tried):
 * none found is a value, not an error (said once; the platform zone is then a model's, or
 * absent). *n: how many opened, which the caller closes; -errno (logged) when no CPU source
 * opens or platform.sources names a meter this build lacks.
 */
int vw_host_meters_open(const struct vw_host_config *cfg, const struct vw_power_env *env,
			struct vw_power_source src[VW_HOST_METERS_OPENED], size_t *n);

/* SPDX-License-Identifier: Apache-2.0 */
/* The host's meters configured as the daemon does it: flags through the host's option table. */
#pragma once

#include "meters.h"

/* cfg (zeroed here) from flags (NULL-ended, no program name); a bad flag fails the test. */
void meter_fixture_load(struct vw_host_config *cfg, const char *const *flags);
void meter_fixture_free(struct vw_host_config *cfg);
#define METER_FIXTURE_LOAD(cfg, ...)                                                               \
	meter_fixture_load(cfg, (const char *const[]){ __VA_ARGS__, NULL })

/* The configuration hm (vw_host_meters_setup's) hands src at open; NULL: none. */
const void *meter_fixture_config(const struct vw_host_meters *hm,
				 const struct vw_power_source_ops *src);

/* The meter of the host's chains named name (its `source` label): a meter whose ops are
 * declared only in power/chain.c is found so. */
const struct vw_power_source_ops *meter_fixture_find(const char *name);

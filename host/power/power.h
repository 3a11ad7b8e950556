/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtwatt-host's meters: one file per meter behind the engine's power-source ops table
 * (shared/engine/power_source.h), and the host's chain of them in preference order.
 */
#pragma once

#include "power_source.h"

/*
 * RAPL through <sysfs>/class/powercap (src_powercap.c). open(): -ENODEV without zones,
 * -EACCES when every energy_uj is root-only. read() logs per-zone failures itself, rate-limited.
 */
extern const struct vw_power_source_ops vw_src_powercap;

/* Preference order: a real meter first, the model only where no meter exists (NULL-ended). */
extern const struct vw_power_source_ops *const vw_host_power_sources[];
/*
 * Whole-node meters, in preference order (NULL-ended): the first that opens gives the node's
 * platform zone, beside the CPU zones of vw_host_power_sources.
 */
extern const struct vw_power_source_ops *const vw_host_platform_sources[];

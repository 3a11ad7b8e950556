/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kepler's split families of a kind of device at node level ("cpu": the node's zones, "gpu":
 * each GPU): its energy (an exact counter from integer microjoules) and power, whole, in
 * active state and in idle state. Declared once for shared/engine/metrics.c and
 * shared/gpu/gpu_metrics.c: the six families, first in their tables, and the field rows that
 * produce them from a view with the fields total_uj, watts, active_uj, active_watts, idle_uj
 * and idle_watts.
 */
#pragma once

#include "prom.h"

enum {
	VW_SPLIT_JOULES, VW_SPLIT_WATTS, VW_SPLIT_ACTIVE_JOULES, VW_SPLIT_ACTIVE_WATTS,
	VW_SPLIT_IDLE_JOULES, VW_SPLIT_IDLE_WATTS, VW_SPLIT__COUNT,
};

#define VW_SPLIT_PAIR(fj, fw, dev, state, in_state, labels)                                        \
	[fj] = { "kepler_node_" dev "_" state "joules_total", VW_METRIC_COUNTER,                   \
		 "Energy consumption of " dev in_state " at node level in joules", "joules",       \
		 labels },                                                                         \
	[fw] = { "kepler_node_" dev "_" state "watts", VW_METRIC_GAUGE,                            \
		 "Power consumption of " dev in_state " at node level in watts", "watts", labels }

/* The six family rows of dev's table, each series labelled with labels. */
#define VW_SPLIT_FAMILIES(dev, labels)                                                             \
	VW_SPLIT_PAIR(VW_SPLIT_JOULES, VW_SPLIT_WATTS, dev, "", "", labels),                       \
	VW_SPLIT_PAIR(VW_SPLIT_ACTIVE_JOULES, VW_SPLIT_ACTIVE_WATTS, dev, "active_",               \
		      " in active state", labels),                                                 \
	VW_SPLIT_PAIR(VW_SPLIT_IDLE_JOULES, VW_SPLIT_IDLE_WATTS, dev, "idle_", " in idle state",   \
		      labels)

/* The six field rows (vw_prom_field_families()) for a view of type. */
#define VW_SPLIT_FIELDS(type)                                                                      \
	VW_PROM_FIELD_FAMILY(VW_SPLIT_JOULES, MICRO, type, total_uj),                              \
	VW_PROM_FIELD_FAMILY(VW_SPLIT_WATTS, GAUGE, type, watts),                                  \
	VW_PROM_FIELD_FAMILY(VW_SPLIT_ACTIVE_JOULES, MICRO, type, active_uj),                      \
	VW_PROM_FIELD_FAMILY(VW_SPLIT_ACTIVE_WATTS, GAUGE, type, active_watts),                    \
	VW_PROM_FIELD_FAMILY(VW_SPLIT_IDLE_JOULES, MICRO, type, idle_uj),                          \
	VW_PROM_FIELD_FAMILY(VW_SPLIT_IDLE_WATTS, GAUGE, type, idle_watts)

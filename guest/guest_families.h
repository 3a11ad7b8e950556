/* SPDX-License-Identifier: Apache-2.0 */
/* The guest's own families (guest_metrics.c, rendered by guest/daemon.c), for docs/metrics.md. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "prom.h"

extern const struct vw_family_table vw_guest_family_table;

struct vw_reader;

/* Where this interval's energy came from. */
struct vw_guest_source_view {
	const char *source;      /* "passthrough", "model" */
	const char *host_source; /* the host's source while passthrough is used, else "none" */
	bool measured;           /* the host's meter, not its estimate nor ours */
	const char *model;       /* the model behind it, NULL for none */
	uint64_t switches;       /* between passthrough and model */
};

/* virtwatt_guest_power_source_info and _switches_total, then the passthrough's families
 * (frames, rejections, restarts, age) when it is enabled (reader not NULL). */
int vw_guest_families_render(struct vw_prom_writer *w, const struct vw_guest_source_view *s,
			     const struct vw_reader *reader, const char *node_name);

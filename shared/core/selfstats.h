/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The exporter's own bookkeeping as metrics: how full each bounded table is and how often its
 * cap evicted something (virtwatt_table_*), and which metric families were left out of an
 * exposition because they would not fit its byte cap (virtwatt_exposition_*). See
 * docs/configuration.md "Bounds".
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log.h"
#include "prom.h"

enum vw_table {
	VW_TABLE_PROCESS,            /* workload registry: processes */
	VW_TABLE_CONTAINER,          /* containers */
	VW_TABLE_POD,                /* pods */
	VW_TABLE_VM,                 /* VMs (gone ones remembered for their UUID) */
	VW_TABLE_CGROUP,             /* the CPU-accounting cgroup hierarchy's ids and paths */
	VW_TABLE_POD_METADATA,       /* pods from the API server or kubelet */
	VW_TABLE_CONTAINER_METADATA, /* their containers */
	VW_TABLE_PUBLISHER_VM,       /* the passthrough publisher's per-VM state */
	VW_TABLE_SERIES,             /* virtwatt-guest: counter series kept monotonic */
	VW_TABLE__COUNT,
};

/* One table's figures. present: the table exists in this daemon (else it is not exported). */
struct vw_table_stat {
	bool present;
	uint64_t entries;
	uint64_t evictions; /* cumulative */
};

/* "process", "container", ... (the table label). */
const char *vw_table_name(enum vw_table t);

struct vw_selfstats;

struct vw_selfstats *vw_selfstats_new(void);
void vw_selfstats_free(struct vw_selfstats *s);

/*
 * After a rendering into w (drop-oversize mode, prom.h) for snapshot `seq`: count each family it
 * dropped, once per snapshot whatever the number of renderings (text, OpenMetrics), and log it
 * (rate-limited) with the fix. max_bytes: the cap, for the message.
 */
void vw_selfstats_note_dropped(struct vw_selfstats *s, const struct vw_prom_writer *w,
			       uint64_t seq, size_t max_bytes);
/* Once per snapshot, after its renderings: a snapshot that dropped nothing ends the complaint. */
void vw_selfstats_snapshot_done(struct vw_selfstats *s, uint64_t seq);
/* Times family `name` was dropped (0 if never). */
uint64_t vw_selfstats_dropped(const struct vw_selfstats *s, const char *name);

/* The families: table entries and evictions, families dropped. */
int vw_selfstats_render(const struct vw_selfstats *s, struct vw_prom_writer *w,
			const struct vw_table_stat tables[VW_TABLE__COUNT], const char *node_name);

/*
 * What a daemon does at the start of each rendering into w with cap max_bytes (0: none): keep
 * room back for the families below, so a snapshot that drops a family still says so.
 */
void vw_selfstats_hold_room(struct vw_prom_writer *w, size_t max_bytes);

/*
 * What a daemon does at the end of each rendering: give back the room kept, note what w
 * dropped so far, write the families above, and note again (they may not have fit either).
 */
int vw_selfstats_write(struct vw_selfstats *s, struct vw_prom_writer *w,
		       const struct vw_table_stat tables[VW_TABLE__COUNT], const char *node_name,
		       uint64_t seq, size_t max_bytes);

extern const struct vw_metric_family vw_selfstats_families[];
extern const struct vw_family_table vw_selfstats_family_table;

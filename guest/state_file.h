/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The state file's policy (docs/guest.md "State file"): the series state (series_state.h) is
 * loaded once at start and written when it changed, at most every write interval and always
 * when the daemon stops cleanly, atomically and durably. A file that cannot be loaded (too big,
 * corrupt, unreadable) is never overwritten: it is renamed aside (<file>.bad-<unix time>), the
 * error names it and the fix, counters start from zero this once (Prometheus sees one reset)
 * and virtwatt_guest_state_info says so. When it cannot be set aside, nothing is written this
 * run and /readyz says why.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "prom.h"
#include "series_state.h"

enum vw_state_status {
	VW_STATE_DISABLED,       /* --state.file="" */
	VW_STATE_NEW,            /* no file yet */
	VW_STATE_LOADED,         /* loaded; its writer stopped cleanly */
	VW_STATE_LOADED_UNCLEAN, /* loaded; its writer did not stop cleanly (crash, power loss):
				  * counters may be up to one write interval behind what was served */
	VW_STATE_SET_ASIDE,      /* unloadable, renamed aside; counters started from zero */
	VW_STATE_UNWRITABLE,     /* no state kept this run (directory, or the bad file could not
				  * be set aside) */
};

const char *vw_state_status_name(enum vw_state_status s);

struct vw_state_file;

/* path NULL or "": disabled. Loads into series. NULL only on ENOMEM. */
struct vw_state_file *vw_state_file_open(const char *path, struct vw_series_state *series,
					 uint64_t write_interval_ns);
/* Close; writes nothing (vw_state_file_flush() does). */
void vw_state_file_free(struct vw_state_file *f);

/* After a snapshot: write when the state changed and the interval has passed since the last
 * attempt. */
void vw_state_file_tick(struct vw_state_file *f, uint64_t now_ns);
/* A clean stop: write now (marked clean). */
void vw_state_file_flush(struct vw_state_file *f);

enum vw_state_status vw_state_file_status(const struct vw_state_file *f);
/* Writes done and failed. */
uint64_t vw_state_file_writes(const struct vw_state_file *f);
uint64_t vw_state_file_write_errors(const struct vw_state_file *f);
/* For /readyz (thread-safe): false with why (may be NULL) while state cannot be kept
 * (unwritable, or the last write failed). */
bool vw_state_file_ok(struct vw_state_file *f, char *why, size_t len);

/* virtwatt_guest_state_info, _writes_total, _write_errors_total. */
int vw_state_file_render(const struct vw_state_file *f, struct vw_prom_writer *w,
			 const char *node_name);
extern const struct vw_metric_family vw_state_file_families[];
extern const struct vw_family_table vw_state_file_family_table;

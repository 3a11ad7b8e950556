/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Counters that never go back, whatever restarts underneath: every counter sample of a rendered
 * exposition (a series: its name and labels) is remembered with its last raw value and an
 * offset. A raw value below the last one is a reset (the guest daemon restarted, a registry
 * dropped and re-created a series): the last raw value is added to the offset, as Prometheus'
 * rate() would, so the exported value keeps growing. The exported values are saved in a small
 * JSON state file (atomically) and become the offsets of the next run, so a daemon restart or a
 * live migration (the state file travels with the disk) keeps every series monotonic.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Series unseen for this many renders are forgotten (not saved). */
#define VW_SERIES_STATE_KEEP 17280 /* a day of 5 s intervals */
#define VW_SERIES_STATE_MAX_BYTES (16u << 20)

struct vw_series_state;

struct vw_series_state *vw_series_state_new(void);
void vw_series_state_free(struct vw_series_state *s);

/*
 * Rewrite an exposition (text 0.0.4 or OpenMetrics): each counter sample gets its offset added.
 * learn: update the last raw values and offsets from this exposition (once per snapshot, with
 * the text format); false: only apply them (the OpenMetrics rendering of the same snapshot).
 * Lines pass through byte for byte while a series' offset is 0. *ret is malloc'd.
 */
int vw_series_state_apply(struct vw_series_state *s, const char *in, size_t len, bool learn,
			  char **ret, size_t *ret_len);

/* Exported value in microunits of a series ("name{labels}"), for tests. -ENOENT if unknown. */
int vw_series_state_get(const struct vw_series_state *s, const char *key, uint64_t *ret_micro);
size_t vw_series_state_size(const struct vw_series_state *s);

/*
 * {"v":1,"series":{"<name{labels}>":<exported microunits>,...}} written with
 * vw_write_file_atomic_at. load: -ENOENT when absent; -EINVAL for a file that is not such a
 * state (nothing loaded: the caller starts afresh and says so).
 */
int vw_series_state_save(struct vw_series_state *s, int dirfd, const char *rel);
int vw_series_state_load(struct vw_series_state *s, int dirfd, const char *rel);

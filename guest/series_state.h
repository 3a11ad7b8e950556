/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Counters that never go back, whatever restarts underneath: every counter sample of a rendered
 * exposition (a series: its name and labels) is remembered with its last raw value and an
 * offset. A raw value below the last one is a reset (the guest daemon restarted, a registry
 * dropped and re-created a series): the last raw value is added to the offset, as Prometheus'
 * rate() would, so the exported value keeps growing. The exported values are saved in a small
 * JSON state file (atomically) and become the offsets of the next run, so a daemon restart or a
 * live migration (the state file travels with the disk) keeps every series monotonic. The table
 * is bounded (max_series, the least recently seen series evicted first) and so is the file.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Series unseen for this many renders are forgotten (not saved). */
#define VW_SERIES_STATE_KEEP 17280 /* a day of 5 s intervals */
#define VW_SERIES_STATE_DEFAULT_MAX 50000
/* Longer series keys are not kept: a rendered key (name, at most 10 labels of 256 escaped
 * bytes) never comes near it. */
#define VW_SERIES_KEY_MAX 8192

struct vw_series_state;

/*
 * max_series bounds the table (0: VW_SERIES_STATE_DEFAULT_MAX): after each learning pass the
 * series unseen the longest are evicted until it holds max_series, never one of the pass
 * itself (a series in the exposition is always kept monotonic). NULL on ENOMEM.
 */
struct vw_series_state *vw_series_state_new(size_t max_series);
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
/* Series evicted at the cap, or too long to keep, so far. */
uint64_t vw_series_state_evictions(const struct vw_series_state *s);
/* Whether an exported value changed since the last save (or load). */
bool vw_series_state_dirty(const struct vw_series_state *s);

/*
 * {"v":1,"clean":<bool>,"series":{"<name{labels}>":<exported microunits>,...}} written with
 * vw_write_file_atomic_at (temp file, fsync, rename, directory fsync). clean: written by a
 * daemon that is stopping (nothing was served after it).
 */
int vw_series_state_save(struct vw_series_state *s, int dirfd, const char *rel, bool clean);
/*
 * Load a saved state: -ENOENT when absent; -EFBIG over vw_series_state_max_file_bytes();
 * -EINVAL for a file that is not such a state; else -errno. Nothing is loaded on failure.
 * A file with more series than max_series loads the first max_series (the rest is counted as
 * evicted). *ret_clean: the file says its writer stopped cleanly.
 */
int vw_series_state_load(struct vw_series_state *s, int dirfd, const char *rel, bool *ret_clean);
/* The same for the file's bytes (len of them, NUL-terminated or not). */
int vw_series_state_load_buf(struct vw_series_state *s, const char *buf, size_t len,
			     bool *ret_clean);
/* The largest file a state of max_series series can be (every key at VW_SERIES_KEY_MAX, all
 * of it escaped): what the loader accepts. */
size_t vw_series_state_max_file_bytes(size_t max_series);

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Counters that never go back, whatever restarts underneath: every counter sample the guest
 * renders (a series: its name and labels, as the writer hands it over) is remembered with its
 * last raw value and an offset. A raw value below the last one is a reset (the guest daemon restarted, a registry
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
 * A snapshot's renderings pass their counters through the state (prom.h's counter filter):
 * vw_series_state_begin(), the text rendering with vw_series_state_learn as its filter (each
 * sample's raw value learnt, the exported value written), vw_series_state_end() (the table
 * trimmed to max_series), then any other rendering of the same snapshot with
 * vw_series_state_offset (the same exported values, nothing learnt). A sample whose offset is
 * 0 is written as rendered. The filters take the state as their context.
 */
void vw_series_state_begin(struct vw_series_state *s);
int vw_series_state_end(struct vw_series_state *s);
int vw_series_state_learn(void *s, const char *key, size_t len, uint64_t micro, uint64_t *ret);
int vw_series_state_offset(void *s, const char *key, size_t len, uint64_t micro, uint64_t *ret);

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

/* The guest exposition's hooks (daemon_base.h: render_begin, render_end, tables): the text
 * rendering learns each counter's raw value and writes raw + the saved offset (begin ... end);
 * the OpenMetrics one writes the same values, learning nothing. */
struct vw_prom_writer;
struct vw_table_stat;
void vw_series_state_render_begin(struct vw_series_state *s, struct vw_prom_writer *w, bool text);
int vw_series_state_render_end(struct vw_series_state *s, bool text);
void vw_series_state_table(const struct vw_series_state *s, struct vw_table_stat *t);

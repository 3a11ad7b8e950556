/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The snapshot store between a daemon and its metrics endpoint: the daemon publishes each
 * rendered exposition, the server (http.h) serves the last one whole. No HTTP here.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vw_prom_layout;

/*
 * The last rendered exposition: text 0.0.4, and OpenMetrics 1.0.0 while a scraper asks for it
 * (rendered, or derived from the text by the first request for it); thread-safe. Snapshots are
 * reference-counted: a scrape takes a reference under the mutex and sends that snapshot whole,
 * however many publishes happen meanwhile; the old one is freed when its last scrape is done.
 */
struct vw_exposition;

/* NULL with errno set on failure. */
struct vw_exposition *vw_exposition_new(void);
/* Call after vw_http_stop(); snapshots still being sent stay valid until sent. */
void vw_exposition_free(struct vw_exposition *x);
/*
 * Take ownership of two malloc'd buffers and replace the published snapshot. om may be NULL
 * (no scraper wants it, see vw_exposition_openmetrics_wanted()): OpenMetrics requests then get
 * the text format. On allocation failure (logged) the buffers are freed and the previous
 * snapshot stays.
 */
uint64_t vw_exposition_publish(struct vw_exposition *x, char *text, size_t text_len, char *om,
			       size_t om_len);
/*
 * The same with OpenMetrics to be derived from the text (prom.h: vw_prom_openmetrics_derive())
 * by the first request for it, then kept with the snapshot: one pass over the text, and none
 * for a snapshot no OpenMetrics scraper fetched. Takes ownership of layout; NULL: text only.
 */
uint64_t vw_exposition_publish_layout(struct vw_exposition *x, char *text, size_t text_len,
				      struct vw_prom_layout *layout);
/* The generation (1, 2, ... as returned by publish) a scrape of /metrics last served; 0 if
 * none yet. Lets terminated workloads be dropped once a scraper has seen their final value. */
uint64_t vw_exposition_served(struct vw_exposition *x);
/* Note generation gen served: a body of it went out whole (the server calls it once a GET's
 * answer is sent, never for a HEAD or an answer cut short). */
void vw_exposition_mark_served(struct vw_exposition *x, uint64_t gen);
/*
 * Copy out the current snapshot in one format (caller frees); om of a snapshot published
 * without OpenMetrics (or whose derivation failed) gives the text. -EAGAIN before the first.
 */
int vw_exposition_copy(struct vw_exposition *x, int om, char **ret, size_t *ret_len);
/*
 * The zlib level of the gzip a scrape gets: the fastest. A 48 KB exposition (1,000 processes)
 * takes 1.3 M instructions at 1 and 3.0 M at zlib's default 6 (callgrind, 2026-11-28), for a
 * body of 7.3 KB instead of 6.4 KB: Prometheus asks every scrape for gzip.
 */
#define VW_EXPOSITION_GZIP_LEVEL 1
/* gzip renderings made so far (each snapshot's text or OpenMetrics is compressed at most once,
 * by the first scrape that accepts gzip). */
uint64_t vw_exposition_compressions(struct vw_exposition *x);
/* OpenMetrics renderings derived from a layout so far (at most one per snapshot). */
uint64_t vw_exposition_derivations(struct vw_exposition *x);
/* True once a snapshot exists. */
bool vw_exposition_ready(struct vw_exposition *x);
/* Nanoseconds since the last publish (vw_now_ns() clock); UINT64_MAX before the first. */
uint64_t vw_exposition_age_ns(struct vw_exposition *x);

/*
 * OpenMetrics on demand. The HTTP server notes every /metrics request (GET or HEAD) whose
 * Accept header negotiated OpenMetrics, with or without a snapshot to serve; a daemon renders
 * OpenMetrics for a snapshot only while vw_exposition_openmetrics_wanted() is true: from the
 * first such request until VW_EXPOSITION_OM_WINDOW_NS after the last. Meanwhile an OpenMetrics
 * request gets the text rendering with the text Content-Type, as content negotiation allows
 * (Prometheus lists text/plain as its fallback), so the first OpenMetrics scrape after a start
 * or a quiet window is answered in text and the next snapshot carries OpenMetrics.
 * Times are CLOCK_MONOTONIC nanoseconds (vw_now_ns()). The window is longer than any practical
 * scrape interval (past 5 minutes, Prometheus' default query lookback already loses series
 * between scrapes); a scraper asking less often than that always gets text.
 */
#define VW_EXPOSITION_OM_WINDOW_NS (10ULL * 60 * 1000000000ULL)
/* A scraper asked for OpenMetrics at now_ns (the latest time noted is kept). */
void vw_exposition_openmetrics_asked(struct vw_exposition *x, uint64_t now_ns);
/* Whether a snapshot published at now_ns should carry an OpenMetrics rendering. */
bool vw_exposition_openmetrics_wanted(struct vw_exposition *x, uint64_t now_ns);

/*
 * For the server: one snapshot held while it is sent. vw_exposition_take() returns the current
 * one with a reference taken (NULL before the first publish); vw_snapshot_unref() gives it back.
 */
struct vw_snapshot;

struct vw_snapshot *vw_exposition_take(struct vw_exposition *x);
void vw_snapshot_unref(struct vw_snapshot *s);
/* Whether the snapshot carries an OpenMetrics rendering: published with one, or derived now
 * from its layout (the first call that asks makes it, under the snapshot's lock; false when
 * that fails, logged). */
bool vw_snapshot_has_openmetrics(struct vw_exposition *x, struct vw_snapshot *s);
/*
 * The body of one rendering (om: OpenMetrics, which the snapshot must carry: the text if it
 * does not); not yet noted served (vw_snapshot_gen(), vw_exposition_mark_served()). With gzip, the rendering's gzip (made by the first
 * scrape that asks for it, then kept) and *ret_gzipped set; the plain body if it cannot be made.
 */
const char *vw_snapshot_serve(struct vw_exposition *x, struct vw_snapshot *s, bool om, bool gzip,
			      size_t *ret_len, bool *ret_gzipped);
/* The snapshot's generation (as returned by publish). */
uint64_t vw_snapshot_gen(const struct vw_snapshot *s);

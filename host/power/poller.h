/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A meter read on a thread of its own: the BMCs (Redfish, IPMI/DCMI), which answer in hundreds
 * of ms to seconds, rate-limit and sometimes hang, so no request runs on the sampling thread.
 *
 * The poller thread makes one request every interval_ns (measured from each request's start),
 * backing off while the meter fails (the interval, then twice it: never longer, so a meter
 * that answers again is heard from within two intervals, and the next request after it comes
 * at the normal interval), and keeps the last good reading with the vw_now_ns() it was taken
 * at. The readings are integrated on their own timeline (the *line*, under the lock): each
 * reading's power counts from its own time until the next reading's, never for longer than
 * stale_ns (integrator.h: µW x ns in integers, the part below 1 µJ carried). The sampling
 * thread's read() counts what the line gained since its last read, up to its own time (the
 * last reading held), the first read only setting the time. So a sampling thread that runs
 * late (an interval close that took seconds on a loaded machine) counts each reading over the
 * time it held, not the newest reading over the whole wait: a step of power (100 W to 0 W)
 * lands when the meter saw it, wherever the samples fall (it cost 2 s at 100 W, 4.8 % of an
 * e2e span, when the newest reading was spread over a late sample's whole wait).
 *
 * A reading older than stale_ns is stale: it counts nothing (it is never carried forward past
 * that). Within stale_ns a failed request (a 503 from a busy BMC) leaves the last reading in
 * use: that time is *filled* from it, said in the log (info, once a run) and summed in
 * filled_ns. Every span the zone counted nothing for, from the last time it counted to the
 * first fresh reading after, is a *gap*: counted (gaps, unmeasured_ns; the daemon adds it to
 * virtwatt_node_energy_gaps_total) and logged at warn with its length; counting resumes from
 * that reading's own time, not from the next read. So every span is counted, filled (and
 * flagged) or recorded as a gap. A request answering -ENODATA (the meter
 * says it measures nothing now) drops the held reading at once and is no failure (no back-off).
 * What a zone without a fresh reading reports: the last request's error, else -ESTALE (a
 * request still in flight), else -ENODATA (none yet).
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "integrator.h"
#include "log.h"
#include "power_source.h"

#define VW_POLLER_BACKOFF_MAX_NS (60ULL * 1000000000ULL)
#define VW_POLLER_BACKOFF_INTERVALS 2 /* the back-off never exceeds this many intervals */

struct vw_poller_ops {
	/*
	 * One request, on the poller's thread: 0 and a reading into *ret (reading_size bytes,
	 * beginning with its power as a uint64_t µW), -ENODATA when the meter measures nothing
	 * now, -ECANCELED when cancel() aborted it, else -errno.
	 */
	int (*poll)(void *ctx, void *ret);
	/* Optional, called by vw_poller_fini() before it joins: abort the request in flight. */
	void (*cancel)(void *ctx);
	/* Optional: what failed, for the log ("cannot connect"); else "the power reading". */
	const char *(*failing)(void *ctx);
};

struct vw_poller {
	const struct vw_poller_ops *ops;
	void *ctx;
	char what[160]; /* the log's prefix: "redfish: https://bmc.example" */
	uint64_t interval_ns, stale_ns;
	size_t reading_size;

	/* The poller thread's own. */
	pthread_t thread;
	bool running;
	uint64_t first_delay_ns;
	uint64_t backoff_ns;
	struct vw_complaint poll_complaint;

	/* Shared: under lock. */
	pthread_mutex_t lock;
	pthread_cond_t wake; /* on CLOCK_MONOTONIC */
	bool stop;
	void *last;       /* the last good reading */
	uint64_t last_ns; /* its vw_now_ns(); 0: none to hold (never, or -ENODATA since) */
	int last_err;     /* the last request's result */
	struct vw_power_integrator line; /* the readings' timeline: last_ns = the last reading's */
	uint64_t line_uw; /* the power the line holds from line.last_ns (the last reading's) */

	/* read()'s own (the sampling thread). */
	struct vw_power_integrator energy;
	unsigned __int128 line_seen; /* the line's energy (1e-9 µJ) counted up to energy.last_ns */
	struct vw_complaint complaint, fill_complaint;
	bool gap_open;        /* counting stopped at gap_from_ns and has not resumed */
	uint64_t gap_from_ns;
	uint64_t gaps;        /* spans counted nothing for, each ended by a fresh reading */
	uint64_t unmeasured_ns; /* their length */
	uint64_t filled_ns;   /* time counted from a reading held after a failed request */
};

/* Set up p (not started) for ops on ctx; what names the meter in the log. 0 or -errno. */
int vw_poller_init(struct vw_poller *p, const struct vw_poller_ops *ops, void *ctx,
		   const char *what, uint64_t interval_ns, uint64_t stale_ns, size_t reading_size);
/* Before start: a request's result made on the caller's thread (open()'s first reading). */
void vw_poller_seed(struct vw_poller *p, int r, const void *reading);
/*
 * One request's result r (reading when 0) at now_ns, as the thread takes it: published (under
 * the lock), logged; returns the wait before the next request. The thread's step, callable on a
 * fake clock without the thread.
 */
uint64_t vw_poller_step(struct vw_poller *p, int r, const void *reading, uint64_t now_ns);
/* Start the thread, its first request first_delay_ns from now. 0 or -errno. */
int vw_poller_start(struct vw_poller *p, uint64_t first_delay_ns);
/* Stop the thread (cancelling the request in flight) and free what init() set up. */
void vw_poller_fini(struct vw_poller *p);

/* A source's stats() of its one zone: gaps and filled_ns (power_source.h). */
void vw_poller_stats(const struct vw_poller *p, struct vw_power_source_stats *ret);
/* 0 and the last reading into *ret (optional) when fresh now, else what the zone reports. */
int vw_poller_current(struct vw_poller *p, void *ret);
/*
 * A power source's read() of its one zone: the fresh reading's power integrated up to now_ns
 * into *raw_uj, *err 0; else nothing counted (the next fresh read only sets the time) and *err
 * what the zone reports, complained about once. vw_power_read_result() of it.
 */
int vw_poller_read(struct vw_poller *p, uint64_t now_ns, uint64_t *raw_uj, int *err);

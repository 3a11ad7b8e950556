/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Retiring an HTTP server after a web config change (http.c), gracefully and within a bound.
 * Its successor already owns the listening socket and the retired server takes no new
 * connection (the caller quiesced it); what it had begun finishes: a scrape whose body is
 * being sent, a login parked for a bcrypt. It answers no new request (http.c closes a request
 * that arrives on one of its kept-alive connections without an answer, as a client retries
 * a GET on a reused connection closed before any answer), and its connections waiting for a
 * request are closed at once and again at each event. It stops once it has no connection
 * left, or at the bound (then parked work is cancelled, given a short grace to be answered,
 * and whatever is left is cut), or at once on vw_retirements_free() (the daemon stopping).
 *
 * Each retirement waits on a thread of its own, woken by its server's connection events
 * (vw_retire_kick), so the housekeeping thread that started it never waits for a request.
 */
#pragma once

#include <stdint.h>

/* Why a retirement ended. */
enum vw_retire_end {
	VW_RETIRE_DRAINED,  /* no connection left: everything begun finished */
	VW_RETIRE_BOUND,    /* the bound passed: what was left was cut */
	VW_RETIRE_SHUTDOWN, /* vw_retirements_free(): the server is stopping */
};

struct vw_retire_ops {
	/* Close the server's connections with no request begun; how many it still has. Called
	 * on the retirement's thread, often: must not block. */
	unsigned (*close_idle)(void *cls);
	/* The bound passed: cancel the work waiting off the server's thread (parked logins), so
	 * its requests are answered. May wait for work under way (a bcrypt). */
	void (*cancel)(void *cls);
	/* Stop the server and free it: any connection still open is cut. open: as close_idle
	 * last said; took_ns: since the retirement started. */
	void (*stop)(void *cls, enum vw_retire_end why, unsigned open, uint64_t took_ns);
};

/* Time given after cancel for the cancelled requests to be answered. */
#define VW_RETIRE_GRACE_MS 250

struct vw_retirements; /* the servers being retired */
struct vw_retire;      /* one */

struct vw_retirements *vw_retirements_new(void);
/*
 * A retirement of cls, not yet started: the server may kick it from then on (store it where
 * the server's callbacks find it, then vw_retirements_start()). NULL with errno.
 */
struct vw_retire *vw_retire_new(const struct vw_retire_ops *ops, void *cls, uint64_t bound_ns);
/*
 * Start waiting (on a thread of its own) for at most bound_ns from now. 0, or -errno: then
 * it was not started and the caller stops the server itself and frees r (vw_retire_free).
 */
int vw_retirements_start(struct vw_retirements *rs, struct vw_retire *r);
void vw_retire_free(struct vw_retire *r); /* one never started */
/* Something changed on the server (a request ended, a connection opened or closed). */
void vw_retire_kick(struct vw_retire *r);
/* Release the retirements that ended (their threads joined). */
void vw_retirements_reap(struct vw_retirements *rs);
/* Retirements not yet released (tests, logs). */
unsigned vw_retirements_count(struct vw_retirements *rs);
/* End every retirement now (VW_RETIRE_SHUTDOWN: what is left is cut), join and free. */
void vw_retirements_free(struct vw_retirements *rs);

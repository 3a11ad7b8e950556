/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Basic authentication that cannot be used against the server: bcrypt runs on a small pool of
 * worker threads, never on the HTTP thread, so a flood of wrong passwords costs at most the
 * pool's threads and never delays a scrape whose login is cached, an excluded path or a
 * refusal. Logins not in the cache queue (a bounded queue: past it, VW_AUTH_BUSY), and each
 * source (srcaddr.h: an IPv4 address or an IPv6 /64) may start only so many bcrypts (a token
 * bucket; a success gives its token back): past that, VW_AUTH_LIMITED without any bcrypt.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "srcaddr.h"
#include "webauth.h"

#define VW_AUTHPOOL_QUEUE 32	       /* logins waiting for a worker */
#define VW_AUTHPOOL_SOURCE_BURST 30    /* bcrypts a source may start at once ... */
#define VW_AUTHPOOL_SOURCE_EVERY_MS 1000 /* ... and one more per this */
#define VW_AUTHPOOL_SOURCES 1024       /* sources remembered */

enum vw_auth_result {
	VW_AUTH_OK,	   /* cached login, or the bcrypt matched */
	VW_AUTH_DENIED,	   /* wrong user or password */
	VW_AUTH_QUEUED,	   /* submitted: done() will be called from a worker */
	VW_AUTH_BUSY,	   /* the queue is full (answer 503, try later) */
	VW_AUTH_LIMITED,   /* this source failed too often (answer 429) */
	VW_AUTH_CANCELLED, /* the pool stopped before the job ran (answer 503) */
};

struct vw_authpool;
struct vw_auth_job;

/* workers: 0 picks one per two CPUs, at least 1, at most 4. NULL with errno on failure. */
struct vw_authpool *vw_authpool_new(struct vw_webauth *auth, unsigned workers);
/*
 * Stop: cancel what is queued (their done() is called with VW_AUTH_CANCELLED), let the jobs
 * being computed finish (their done() is called), join the workers. Every done() has returned
 * when this returns; later submissions are VW_AUTH_BUSY. Then free it once nothing can submit.
 */
void vw_authpool_stop(struct vw_authpool *p);
void vw_authpool_free(struct vw_authpool *p); /* stops it first if needed */

/*
 * Check a login from src. A cached login is VW_AUTH_OK at once. Otherwise, unless the source
 * is limited or the queue full, a job is made: park(cls) is called (under the pool's lock,
 * before any worker can see the job: e.g. suspend the connection), the job is queued and
 * VW_AUTH_QUEUED returned with *ret_job. On a worker, done(cls) is called once its result is
 * known (vw_auth_job_result); the caller releases the job once it has read the result
 * (vw_auth_job_release), not before done() ran.
 */
enum vw_auth_result vw_authpool_submit(struct vw_authpool *p, const struct vw_src_key *src,
				       const char *user, const char *pass,
				       void (*park)(void *cls), void (*done)(void *cls),
				       void *cls, struct vw_auth_job **ret_job);
enum vw_auth_result vw_auth_job_result(const struct vw_auth_job *j);
void vw_auth_job_release(struct vw_auth_job *j);

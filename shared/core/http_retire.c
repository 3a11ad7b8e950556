/* SPDX-License-Identifier: Apache-2.0 */
/* Retiring HTTP servers: each on a thread of its own, until drained or its bound (http_retire.h). */
#include "http_retire.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "macro.h"
#include "thread.h"

struct vw_retire {
	struct vw_retire *next; /* in its vw_retirements, under its lock */
	struct vw_retirements *rs;
	const struct vw_retire_ops *ops;
	void *cls;
	uint64_t bound_ns, start_ns;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* CLOCK_MONOTONIC */
	unsigned long events; /* kicks, under lock */
	bool now, ended;      /* under lock: end at once; the thread is done */
};

struct vw_retirements {
	pthread_mutex_t lock;
	struct vw_retire *head;
};

static uint64_t mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * VW_NSEC_PER_SEC + (uint64_t)t.tv_nsec;
}

struct vw_retirements *vw_retirements_new(void)
{
	struct vw_retirements *rs = calloc(1, sizeof(*rs));

	if (rs)
		pthread_mutex_init(&rs->lock, NULL);
	return rs;
}

struct vw_retire *vw_retire_new(const struct vw_retire_ops *ops, void *cls, uint64_t bound_ns)
{
	struct vw_retire *r = calloc(1, sizeof(*r));
	pthread_condattr_t ca;
	int e;

	if (!r)
		return NULL;
	*r = (struct vw_retire){ .ops = ops, .cls = cls, .bound_ns = bound_ns };
	pthread_condattr_init(&ca);
	e = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (e == 0)
		e = pthread_cond_init(&r->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (e != 0) {
		free(r);
		errno = e;
		return NULL;
	}
	pthread_mutex_init(&r->lock, NULL);
	return r;
}

void vw_retire_free(struct vw_retire *r)
{
	if (!r)
		return;
	pthread_cond_destroy(&r->cond);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

void vw_retire_kick(struct vw_retire *r)
{
	pthread_mutex_lock(&r->lock);
	r->events++;
	pthread_cond_signal(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

/* Sleep until a kick after *seen, an end, or until (monotonic ns). True: end at once. */
static bool retire_wait(struct vw_retire *r, unsigned long *seen, uint64_t until)
{
	struct timespec ts = { .tv_sec = (time_t)(until / VW_NSEC_PER_SEC),
			       .tv_nsec = (long)(until % VW_NSEC_PER_SEC) };
	bool now;

	pthread_mutex_lock(&r->lock);
	while (r->events == *seen && !r->now && mono_ns() < until)
		if (pthread_cond_timedwait(&r->cond, &r->lock, &ts) == ETIMEDOUT)
			break;
	*seen = r->events;
	now = r->now;
	pthread_mutex_unlock(&r->lock);
	return now;
}

/* Close idle connections at each event until none is left, until, or an end: how many left. */
static unsigned retire_drain(struct vw_retire *r, uint64_t until, bool *ret_now)
{
	unsigned long seen = 0;
	unsigned open;

	*ret_now = false;
	for (;;) {
		open = r->ops->close_idle(r->cls);
		if (open == 0 || *ret_now || mono_ns() >= until)
			return open;
		*ret_now = retire_wait(r, &seen, until);
	}
}

static void *retire_main(void *arg)
{
	struct vw_retire *r = arg;
	enum vw_retire_end why = VW_RETIRE_DRAINED;
	bool now;
	unsigned open = retire_drain(r, r->start_ns + r->bound_ns, &now);

	if (open && now) {
		why = VW_RETIRE_SHUTDOWN;
	} else if (open) {
		why = VW_RETIRE_BOUND;
		r->ops->cancel(r->cls);
		open = retire_drain(r, mono_ns() + VW_RETIRE_GRACE_MS * 1000000ULL, &now);
		if (!open)
			why = VW_RETIRE_DRAINED; /* the cancelled logins were answered */
	}
	r->ops->stop(r->cls, why, open, mono_ns() - r->start_ns);
	pthread_mutex_lock(&r->lock);
	r->ended = true;
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

int vw_retirements_start(struct vw_retirements *rs, struct vw_retire *r)
{
	int e;

	r->rs = rs;
	r->start_ns = mono_ns();
	e = vw_thread_create(&r->thread, retire_main, r);
	if (e < 0)
		return e;
	pthread_mutex_lock(&rs->lock);
	r->next = rs->head;
	rs->head = r;
	pthread_mutex_unlock(&rs->lock);
	return 0;
}

static bool retire_ended(struct vw_retire *r)
{
	bool ended;

	pthread_mutex_lock(&r->lock);
	ended = r->ended;
	pthread_mutex_unlock(&r->lock);
	return ended;
}

void vw_retirements_reap(struct vw_retirements *rs)
{
	struct vw_retire *done = NULL;

	if (!rs)
		return;
	pthread_mutex_lock(&rs->lock);
	for (struct vw_retire **p = &rs->head; *p;) {
		struct vw_retire *r = *p;

		if (retire_ended(r)) {
			*p = r->next;
			r->next = done;
			done = r;
		} else {
			p = &r->next;
		}
	}
	pthread_mutex_unlock(&rs->lock);
	while (done) {
		struct vw_retire *next = done->next;

		pthread_join(done->thread, NULL);
		vw_retire_free(done);
		done = next;
	}
}

unsigned vw_retirements_count(struct vw_retirements *rs)
{
	unsigned n = 0;

	if (!rs)
		return 0;
	pthread_mutex_lock(&rs->lock);
	for (struct vw_retire *r = rs->head; r; r = r->next)
		n++;
	pthread_mutex_unlock(&rs->lock);
	return n;
}

void vw_retirements_free(struct vw_retirements *rs)
{
	struct vw_retire *r;

	if (!rs)
		return;
	/* Every one told first, so they stop side by side, then each joined. */
	pthread_mutex_lock(&rs->lock);
	for (r = rs->head; r; r = r->next) {
		pthread_mutex_lock(&r->lock);
		r->now = true;
		pthread_cond_signal(&r->cond);
		pthread_mutex_unlock(&r->lock);
	}
	r = rs->head;
	rs->head = NULL;
	pthread_mutex_unlock(&rs->lock);
	while (r) {
		struct vw_retire *next = r->next;

		pthread_join(r->thread, NULL);
		vw_retire_free(r);
		r = next;
	}
	pthread_mutex_destroy(&rs->lock);
	free(rs);
}

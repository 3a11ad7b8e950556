/* SPDX-License-Identifier: Apache-2.0 */
#include "ticker.h"

#include <string.h>
#include <time.h>

#include "log.h"
#include "macro.h"
#include "thread.h"

uint64_t vw_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * VW_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

int vw_mono_lock_init(pthread_mutex_t *lock, pthread_cond_t *wake)
{
	pthread_condattr_t ca;
	int r = -pthread_condattr_init(&ca);

	if (r == 0) {
		r = -pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		if (r == 0)
			r = -pthread_cond_init(wake, &ca);
		pthread_condattr_destroy(&ca);
	}
	if (r == 0) {
		r = -pthread_mutex_init(lock, NULL);
		if (r < 0)
			pthread_cond_destroy(wake);
	}
	return r;
}

int vw_ticker_init(struct vw_ticker *t, const char *what)
{
	int r = vw_mono_lock_init(&t->lock, &t->wake);

	if (r < 0) {
		vw_error("%s: cannot set up the reading thread: %s", what, strerror(-r));
		return r;
	}
	t->ready = true;
	return 0;
}

static void *run(void *arg)
{
	struct vw_ticker *t = arg;
	uint64_t due = vw_mono_ns() + t->period_ns;

	pthread_mutex_lock(&t->lock);
	while (!t->stop) {
		struct timespec ts = { .tv_sec = (time_t)(due / VW_NSEC_PER_SEC),
				       .tv_nsec = (long)(due % VW_NSEC_PER_SEC) };
		uint64_t now;

		pthread_cond_timedwait(&t->wake, &t->lock, &ts);
		now = vw_mono_ns();
		if (t->stop || now < due)
			continue;
		pthread_mutex_unlock(&t->lock);
		t->tick(t->arg);
		pthread_mutex_lock(&t->lock);
		due = now + t->period_ns; /* a thread held up does not catch up in a burst */
	}
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

int vw_ticker_start(struct vw_ticker *t, uint64_t period_ns, void (*tick)(void *arg), void *arg,
		    const char *what)
{
	int r;

	t->period_ns = period_ns;
	t->tick = tick;
	t->arg = arg;
	r = vw_thread_create(&t->thread, run, t);
	if (r < 0) {
		vw_error("%s: cannot start the reading thread: %s", what, strerror(-r));
		return r;
	}
	t->running = true;
	return 0;
}

void vw_ticker_stop(struct vw_ticker *t)
{
	if (!t->running)
		return;
	pthread_mutex_lock(&t->lock);
	t->stop = true;
	pthread_cond_signal(&t->wake);
	pthread_mutex_unlock(&t->lock);
	pthread_join(t->thread, NULL);
	t->running = false;
	t->stop = false;
}

void vw_ticker_fini(struct vw_ticker *t)
{
	vw_ticker_stop(t);
	if (t->ready) {
		pthread_cond_destroy(&t->wake);
		pthread_mutex_destroy(&t->lock);
		t->ready = false;
	}
}

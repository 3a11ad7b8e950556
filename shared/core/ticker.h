/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A meter's reading thread on its own clock: every period, tick(arg), called without the lock.
 * The lock is the meter's too (its readings and state). Real time for the waits
 * (CLOCK_MONOTONIC), even under a test's fake vw_now_ns(); a thread held up does not catch up
 * in a burst: the next tick is a whole period after the late one. Both daemons' meters use it:
 * the host's power gauges (host/power: the ACPI meter, generic hwmon power sensors, the BMC
 * poller's lock) and the GPUs read for power (shared/gpu), a guest's passed-through GPU too.
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* How often a power gauge (the ACPI meter, a generic hwmon power sensor, a GPU without an
 * energy counter) is read by its meter's own thread, beside each sample's own reading. */
#define VW_GAUGE_TICK_NS (250ULL * 1000000ULL)

struct vw_ticker {
	pthread_mutex_t lock;
	pthread_cond_t wake; /* on CLOCK_MONOTONIC */
	bool ready;          /* lock and wake set up */
	bool stop;
	bool running;
	pthread_t thread;
	uint64_t period_ns;
	void (*tick)(void *arg);
	void *arg;
};

/* CLOCK_MONOTONIC in ns. */
uint64_t vw_mono_ns(void);

/* A mutex and a condition variable that waits on CLOCK_MONOTONIC. 0 or -errno (neither left). */
int vw_mono_lock_init(pthread_mutex_t *lock, pthread_cond_t *wake);

/* The lock; what names the meter in the error logged. 0 or -errno. */
int vw_ticker_init(struct vw_ticker *t, const char *what);

/* The thread: tick(arg) every period_ns. 0 or -errno (logged, naming what). */
int vw_ticker_start(struct vw_ticker *t, uint64_t period_ns, void (*tick)(void *arg), void *arg,
		    const char *what);

/* The thread stopped and joined (none running: nothing); the lock stays, and
 * vw_ticker_start() may start it again (a meter that changes what the thread reads). */
void vw_ticker_stop(struct vw_ticker *t);

/* The thread stopped and joined, the lock gone; safe on a ticker never initialised (zeroed). */
void vw_ticker_fini(struct vw_ticker *t);

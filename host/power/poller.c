/* SPDX-License-Identifier: Apache-2.0 */
#include "poller.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "macro.h"
#include "power_source.h"
#include "thread.h"
#include "ticker.h"

int vw_poller_init(struct vw_poller *p, const struct vw_poller_ops *ops, void *ctx,
		   const char *what, uint64_t interval_ns, uint64_t stale_ns, size_t reading_size)
{
	int r;

	*p = (struct vw_poller){ .ops = ops, .ctx = ctx, .interval_ns = interval_ns,
				 .stale_ns = stale_ns, .reading_size = reading_size };
	snprintf(p->what, sizeof(p->what), "%s", what);
	p->last = calloc(1, reading_size);
	if (!p->last)
		return -ENOMEM;
	r = vw_mono_lock_init(&p->lock, &p->wake); /* the poller's own clock: vw_mono_ns() */
	if (r < 0) {
		free(p->last);
		p->last = NULL;
	}
	return r;
}

#define NUJ_PER_UJ 1000000000ULL /* µW x ns per µJ */

typedef unsigned __int128 vw_u128;

/* Under lock: the line's energy at t in 1e-9 µJ (the last reading held up to t, at most
 * stale_ns past its time). */
static vw_u128 line_at_locked(const struct vw_poller *p, uint64_t t)
{
	vw_u128 e = (vw_u128)p->line.energy_uj * NUJ_PER_UJ + p->line.rem_nuj;

	if (p->line.primed && t > p->line.last_ns)
		e += (vw_u128)p->line_uw * VW_MIN(t - p->line.last_ns, p->stale_ns);
	return e;
}

/* Under lock: a request's result at now_ns. A reading (or -ENODATA) ends the last reading's
 * span on the line; a failed request leaves it held (until it is stale). */
static void publish(struct vw_poller *p, int r, const void *reading, uint64_t now_ns)
{
	p->last_err = r;
	if ((r == 0 || r == -ENODATA) && p->line.primed && now_ns > p->line.last_ns)
		(void)vw_power_integrate_span(&p->line, p->line_uw,
					      VW_MIN(now_ns - p->line.last_ns, p->stale_ns));
	if (r == 0) {
		memcpy(p->last, reading, p->reading_size);
		p->last_ns = now_ns;
		memcpy(&p->line_uw, reading, sizeof(p->line_uw));
		p->line.last_ns = p->line.primed ? VW_MAX(p->line.last_ns, now_ns) : now_ns;
		p->line.primed = true;
	} else if (r == -ENODATA) {
		p->last_ns = 0; /* the meter says it measures nothing now: nothing to hold */
		p->line.primed = false;
	}
}

void vw_poller_seed(struct vw_poller *p, int r, const void *reading)
{
	publish(p, r, reading, vw_now_ns());
}

/* The wait before the next request: the interval, or the back-off after a failure. */
static uint64_t next_delay(struct vw_poller *p, int r)
{
	if (r == 0 || r == -ENODATA) {
		p->backoff_ns = 0;
		return p->interval_ns;
	}
	p->backoff_ns = p->backoff_ns ? VW_MIN(2 * p->backoff_ns, VW_POLLER_BACKOFF_MAX_NS)
				      : p->interval_ns;
	p->backoff_ns = VW_MIN(p->backoff_ns, VW_POLLER_BACKOFF_INTERVALS * p->interval_ns);
	return VW_MAX(p->backoff_ns, 1);
}

static void log_poll(struct vw_poller *p, int r, uint64_t delay_ns)
{
	if (r == 0 || r == -ENODATA)
		vw_release(&p->poll_complaint, VW_LOG_INFO, "%s: answering again", p->what);
	else if (r != -ECANCELED)
		vw_complain(&p->poll_complaint, VW_LOG_WARN, "%s: %s failed: %s; retrying in %llu ms",
			    p->what, p->ops->failing ? p->ops->failing(p->ctx) : "the power reading",
			    strerror(-r), (unsigned long long)(delay_ns / VW_NSEC_PER_MSEC));
}

/* Sleep until due_ns (vw_mono_ns()) or stop; under lock. false when stopping. */
static bool wait_until(struct vw_poller *p, uint64_t due_ns)
{
	while (!p->stop && vw_mono_ns() < due_ns) {
		struct timespec ts = { .tv_sec = (time_t)(due_ns / VW_NSEC_PER_SEC),
				       .tv_nsec = (long)(due_ns % VW_NSEC_PER_SEC) };

		pthread_cond_timedwait(&p->wake, &p->lock, &ts);
	}
	return !p->stop;
}

uint64_t vw_poller_step(struct vw_poller *p, int r, const void *reading, uint64_t now_ns)
{
	uint64_t delay = next_delay(p, r);

	log_poll(p, r, delay);
	pthread_mutex_lock(&p->lock);
	publish(p, r, reading, now_ns);
	pthread_mutex_unlock(&p->lock);
	return delay;
}

static void *poller(void *arg)
{
	struct vw_poller *p = arg;
	void *reading = calloc(1, p->reading_size);
	uint64_t due = vw_mono_ns() + p->first_delay_ns;

	pthread_mutex_lock(&p->lock);
	while (reading && wait_until(p, due)) {
		uint64_t start = vw_mono_ns(), delay;
		int r;

		pthread_mutex_unlock(&p->lock); /* the slow part: read() never waits for it */
		r = p->ops->poll(p->ctx, reading);
		delay = vw_poller_step(p, r, reading, vw_now_ns());
		pthread_mutex_lock(&p->lock);
		due = start + delay;
	}
	if (!reading)
		p->last_err = -ENOMEM;
	pthread_mutex_unlock(&p->lock);
	free(reading);
	return NULL;
}

int vw_poller_start(struct vw_poller *p, uint64_t first_delay_ns)
{
	int r;

	p->first_delay_ns = first_delay_ns;
	r = vw_thread_create(&p->thread, poller, p);
	p->running = r == 0;
	return r;
}

void vw_poller_fini(struct vw_poller *p)
{
	if (!p->last)
		return; /* never set up */
	if (p->running) {
		pthread_mutex_lock(&p->lock);
		p->stop = true;
		if (p->ops->cancel)
			p->ops->cancel(p->ctx);
		pthread_cond_signal(&p->wake);
		pthread_mutex_unlock(&p->lock);
		pthread_join(p->thread, NULL);
		p->running = false;
	}
	pthread_cond_destroy(&p->wake);
	pthread_mutex_destroy(&p->lock);
	free(p->last);
	p->last = NULL;
}

/* Under lock: 0 when the held reading is fresh now, else what the zone reports. */
static int fresh_locked(const struct vw_poller *p)
{
	uint64_t now = vw_now_ns();

	if (p->last_ns && !(now > p->last_ns && now - p->last_ns > p->stale_ns))
		return 0;
	return p->last_err < 0 ? p->last_err : p->last_ns ? -ESTALE : -ENODATA;
}

void vw_poller_stats(const struct vw_poller *p, struct vw_power_source_stats *ret)
{
	ret->gaps = p->gaps;
	ret->filled_ns = p->filled_ns;
}

int vw_poller_current(struct vw_poller *p, void *ret)
{
	int r;

	pthread_mutex_lock(&p->lock);
	r = fresh_locked(p);
	if (r == 0 && ret)
		memcpy(ret, p->last, p->reading_size);
	pthread_mutex_unlock(&p->lock);
	return r;
}

/* A fresh reading (taken at taken_ns) after counting stopped: the gap ends there. */
static void gap_close(struct vw_poller *p, uint64_t taken_ns)
{
	uint64_t from = p->gap_from_ns, len = taken_ns > from ? taken_ns - from : 0;

	p->gap_open = false;
	p->gaps++;
	p->unmeasured_ns += len;
	/* Counting resumes at the reading's own time: nothing after it is lost. */
	p->energy.primed = true;
	p->energy.last_ns = VW_MAX(from, taken_ns);
	vw_warn("%s: %.1f s not measured (no fresh reading): counted as a gap "
		"(virtwatt_node_energy_gaps_total), nothing filled in; counting again from the first "
		"fresh reading's time",
		p->what, (double)len / 1e9);
}

/* What the line gained since the last read, up to line_now, counted (the first read after a
 * break only sets the time). */
static void count_line(struct vw_poller *p, vw_u128 line_now, uint64_t now_ns)
{
	if (p->energy.primed && line_now > p->line_seen) {
		vw_u128 d = line_now - p->line_seen, whole = d / NUJ_PER_UJ;

		(void)vw_power_integrate_span(&p->energy, whole > UINT64_MAX ? UINT64_MAX
									 : (uint64_t)whole,
					      NUJ_PER_UJ);
		(void)vw_power_integrate_span(&p->energy, (uint64_t)(d % NUJ_PER_UJ), 1);
	}
	if (!p->energy.primed || line_now > p->line_seen)
		p->line_seen = line_now;
	p->energy.last_ns = now_ns;
	p->energy.primed = true;
}

int vw_poller_read(struct vw_poller *p, uint64_t now_ns, uint64_t *raw_uj, int *err)
{
	uint64_t uw = 0, taken = 0;
	vw_u128 line_now = 0, line_resume = 0;
	int r, last_err = 0;

	pthread_mutex_lock(&p->lock);
	r = fresh_locked(p);
	if (r == 0) {
		memcpy(&uw, p->last, sizeof(uw));
		taken = p->last_ns;
		last_err = p->last_err;
		line_now = line_at_locked(p, now_ns);
		line_resume = line_at_locked(p, VW_MAX(p->gap_from_ns, taken));
	}
	pthread_mutex_unlock(&p->lock);
	if (r < 0) {
		if (p->energy.primed && !p->gap_open) {
			p->gap_open = true;
			p->gap_from_ns = p->energy.last_ns;
		}
		vw_power_integrator_break(&p->energy);
		vw_complain(&p->complaint, VW_LOG_WARN,
			    "%s: no fresh reading (%s); no energy counted until there is one",
			    p->what, r == -ENODATA ? "the meter measures no power now" : strerror(-r));
	} else {
		vw_release(&p->complaint, VW_LOG_INFO,
			   "%s: fresh readings again; energy counted from this one on", p->what);
		if (p->gap_open && taken <= now_ns) {
			gap_close(p, taken);
			p->line_seen = line_resume; /* the line at the time counting resumes */
		}
		if (last_err < 0 && p->energy.primed && now_ns > p->energy.last_ns) {
			p->filled_ns += now_ns - p->energy.last_ns;
			vw_complain(&p->fill_complaint, VW_LOG_INFO,
				    "%s: the last request failed (%s); counting on with the last "
				    "reading (%.1f W) until it is stale "
				    "(virtwatt_node_energy_filled_seconds_total)",
				    p->what, strerror(-last_err), (double)uw / 1e6);
		} else if (last_err == 0) {
			vw_release(&p->fill_complaint, VW_LOG_INFO,
				   "%s: requests answer again; no more filling", p->what);
		}
		count_line(p, line_now, now_ns);
	}
	*raw_uj = p->energy.energy_uj;
	*err = r;
	return vw_power_read_result(err, 1);
}

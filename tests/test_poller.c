/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The BMC poller (host/power/poller.h) with a scripted meter: what a zone reports and counts
 * for a fresh, a stale, a failed and an empty reading (on a fake clock), a 45 s outage (its
 * steps on a fake clock: gaps counted, filling said), a late sample across a step of power
 * (each reading counted over the time it held), then the real thread: its readings, its
 * back-off while the meter fails, and a close that cancels a hung request.
 */
#include "vw_test.h"

#include <errno.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "poller.h"

#define MS 1000000ULL
#define SEC 1000000000ULL

struct meter {
	atomic_int result;   /* what the next request answers */
	atomic_ulong uw;     /* its power when 0 */
	atomic_int calls;
	atomic_bool hang;    /* requests block until cancelled */
	atomic_bool cancelled;
};

static int meter_poll(void *ctx, void *ret)
{
	struct meter *m = ctx;
	uint64_t uw = atomic_load(&m->uw);

	atomic_fetch_add(&m->calls, 1);
	while (atomic_load(&m->hang) && !atomic_load(&m->cancelled))
		usleep(1000);
	if (atomic_load(&m->cancelled))
		return -ECANCELED;
	memcpy(ret, &uw, sizeof(uw));
	return atomic_load(&m->result);
}

static void meter_cancel(void *ctx)
{
	struct meter *m = ctx;

	atomic_store(&m->cancelled, true);
}

static const struct vw_poller_ops meter_ops = { .poll = meter_poll, .cancel = meter_cancel };

static uint64_t now_ns = 1000 * SEC; /* the fake clock */

static int read_at(struct vw_poller *p, uint64_t t, uint64_t *raw)
{
	int err = 1;

	now_ns = t;
	vw_poller_read(p, t, raw, &err);
	return err;
}

/* Without the thread: each result seeded as a request's, read on the fake clock. */
static void test_zone_reports(void **state)
{
	struct meter m = { 0 };
	struct vw_poller p;
	uint64_t raw = 0, uw = 0, t = now_ns, w100 = 100000000;

	(void)state;
	vw_clock_set_fake(&now_ns);
	assert_int_equal(vw_poller_init(&p, &meter_ops, &m, "test", SEC, 3 * SEC, sizeof(uw)), 0);
	assert_int_equal(read_at(&p, t, &raw), -ENODATA); /* nothing yet */
	vw_poller_seed(&p, 0, &w100);
	assert_int_equal(read_at(&p, t, &raw), 0);
	assert_int_equal(raw, 0); /* the first fresh read only sets the time */
	assert_int_equal(read_at(&p, t += SEC, &raw), 0);
	assert_int_equal(raw, 100000000); /* 100 W for 1 s */
	/* A failed request within the bound: the last reading still counts, said (filled). */
	vw_poller_seed(&p, -EAGAIN, &uw);
	assert_int_equal(read_at(&p, t += SEC, &raw), 0);
	assert_int_equal(raw, 200000000);
	assert_int_equal(p.filled_ns, SEC);
	assert_int_equal(vw_poller_current(&p, &uw), 0);
	assert_int_equal(uw, w100);
	/* Past it: nothing counted, the request's error reported. */
	assert_int_equal(read_at(&p, t += 2 * SEC, &raw), -EAGAIN);
	assert_int_equal(raw, 200000000);
	/* A request still out (no error since the reading): -ESTALE. */
	now_ns = t - 2 * SEC;
	vw_poller_seed(&p, 0, &w100);
	assert_int_equal(read_at(&p, t += 2 * SEC, &raw), -ESTALE);
	assert_int_equal(raw, 200000000);
	/* Fresh again: counted from that reading's own time (a second before this read); the
	 * 4 s without a fresh reading are not made up but counted as a gap. */
	assert_int_equal(p.gaps, 0);
	vw_poller_seed(&p, 0, &w100);
	assert_int_equal(read_at(&p, t += SEC, &raw), 0);
	assert_int_equal(raw, 300000000);
	assert_true(p.gaps == 1 && p.unmeasured_ns == 4 * SEC && !p.gap_open);
	assert_int_equal(read_at(&p, t += SEC, &raw), 0);
	assert_int_equal(raw, 400000000);
	/* Every second so far counted (4 s, 1 of them filled) or a gap (4 s). */
	assert_int_equal(raw / 100 + p.unmeasured_ns / 1000, (t - 1000 * SEC) / 1000); /* µs */
	/* -ENODATA drops the held reading at once, however fresh. */
	vw_poller_seed(&p, -ENODATA, &uw);
	assert_int_equal(vw_poller_current(&p, NULL), -ENODATA);
	assert_int_equal(read_at(&p, t += SEC, &raw), -ENODATA);
	assert_int_equal(raw, 400000000);
	assert_true(p.gap_open);
	vw_poller_fini(&p);
	vw_clock_set_fake(NULL);
}

static void wait_calls(struct meter *m, int n)
{
	for (int i = 0; i < 2000 && atomic_load(&m->calls) < n; i++)
		usleep(1000);
	assert_true(atomic_load(&m->calls) >= n);
}

/* The thread: readings every interval, fewer requests while the meter fails. */
static void test_thread_backoff(void **state)
{
	struct meter m = { .uw = 5000000 };
	struct vw_poller p;
	uint64_t uw = 0;
	int before;

	(void)state;
	assert_int_equal(vw_poller_init(&p, &meter_ops, &m, "test", 20 * MS, SEC, sizeof(uw)), 0);
	assert_int_equal(vw_poller_start(&p, 0), 0);
	wait_calls(&m, 1);
	usleep(10000);
	assert_int_equal(vw_poller_current(&p, &uw), 0);
	assert_int_equal(uw, 5000000);
	/* Working: about one request per 20 ms. */
	before = atomic_load(&m.calls);
	usleep(400000);
	assert_true(atomic_load(&m.calls) - before >= 10);
	/* Failing: 20 ms, then 40 ms apart, never more (two intervals): at most 11 in 400 ms. */
	atomic_store(&m.result, -EIO);
	wait_calls(&m, atomic_load(&m.calls) + 1);
	before = atomic_load(&m.calls);
	usleep(400000);
	assert_true(atomic_load(&m.calls) - before <= 11);
	assert_true(atomic_load(&m.calls) - before >= 5);
	assert_int_equal(vw_poller_current(&p, NULL), 0); /* the bound (1 s) not yet past */
	vw_poller_fini(&p);
}

/*
 * Issue 29: a 45 s BMC outage, on a fake clock (the thread's steps driven here: a request every
 * 5 s, the back-off after a failure, a sampling read every second, staleness 12 s, 300 W).
 * The first request after the BMC answers again comes within two intervals, counting resumes
 * from that reading, and the span counted nothing for is one counted gap: every second is
 * counted (some filled from the last reading, and said so) or recorded as a gap, none lost
 * silently. (The old back-off, doubling to 60 s, first asked 25 s after the BMC came back, and
 * no gap was counted: 6.6 kJ lost unseen.)
 */
static void test_outage_recovery(void **state)
{
	const uint64_t interval = 5 * SEC, down_at = 1020 * SEC, up_at = down_at + 45 * SEC + SEC / 2;
	const uint64_t end = up_at + 40 * SEC, uw = 300000000;
	struct meter m = { 0 };
	struct vw_poller p;
	uint64_t t = 1000 * SEC, due = t, raw = 0, first_up = 0, counted_from = 0;
	uint64_t raw_at_up = 0;

	(void)state;
	vw_clock_set_fake(&now_ns);
	now_ns = t;
	assert_int_equal(vw_poller_init(&p, &meter_ops, &m, "test", interval, 12 * SEC,
					sizeof(uint64_t)), 0);
	for (; t <= end; t += SEC) {
		int err;

		now_ns = t;
		while (due <= t) { /* the requests due by now, each at its own time */
			bool up = due < down_at || due >= up_at;
			uint64_t delay;

			now_ns = due;
			delay = vw_poller_step(&p, up ? 0 : -EIO, &uw, due);
			if (up && due >= up_at && !first_up)
				first_up = due;
			due += delay;
		}
		now_ns = t;
		err = read_at(&p, t, &raw);
		if (t >= up_at && !counted_from && err == 0 && raw > raw_at_up)
			counted_from = t;
		if (t < up_at)
			raw_at_up = raw;
	}
	print_message("# outage 45 s: BMC back at +0 s, first request +%.0f s, counted again at "
		      "+%.0f s; %llu gap of %.0f s, %.0f s filled, %.1f J counted of %.1f J\n",
		      (double)(first_up - up_at) / 1e9, (double)(counted_from - up_at) / 1e9,
		      (unsigned long long)p.gaps, (double)p.unmeasured_ns / 1e9,
		      (double)p.filled_ns / 1e9, (double)raw / 1e6,
		      300.0 * (double)(end - 1000 * SEC) / 1e9);
	assert_true(first_up - up_at <= 2 * interval);
	/* Counting resumed at the first read after that request (the sampling second). */
	assert_true(counted_from >= first_up && counted_from - first_up <= SEC);
	assert_int_equal(p.gaps, 1);
	assert_false(p.gap_open);
	/* Counted + gap = all of it, to the last read (t - 1 s; the first read only set the
	 * time: from 1000 s). */
	assert_int_equal(raw / 300 + p.unmeasured_ns / 1000, (t - SEC - 1000 * SEC) / 1000); /* µs */
	/* What was filled: from the first failed request until the reading went stale. */
	assert_true(p.filled_ns > 0 && p.filled_ns <= 12 * SEC);
	vw_poller_fini(&p);
	vw_clock_set_fake(NULL);
}

/*
 * A late sample at a step of power: readings every 250 ms, 100 W until 10 s then 0 W, then
 * 100 W again from 20 s; the sampling thread (every 250 ms) misses 2 s across each step, as
 * when an interval close takes 2 s on a loaded machine. Each reading counts over the time it
 * held: the zone has exactly 100 W x 10 s after the fall and + 100 W x 5 s at 25 s. (Before,
 * the newest reading covered the whole wait: 0 W for the 2 s around the fall, 950 J, 4.8 % of
 * an e2e span short, and 2 s too many at the rise: no gap counted for either.)
 */
static void test_late_sample(void **state)
{
	const uint64_t start = 1000 * SEC, step = SEC / 4, w100 = 100000000;
	struct meter m = { 0 };
	struct vw_poller p;
	uint64_t raw = 0;

	(void)state;
	vw_clock_set_fake(&now_ns);
	assert_int_equal(vw_poller_init(&p, &meter_ops, &m, "test", step, 5 * SEC + SEC / 2,
					sizeof(uint64_t)), 0);
	for (uint64_t t = start; t <= start + 25 * SEC; t += step) {
		uint64_t s = t - start, uw = s < 10 * SEC || s >= 20 * SEC ? w100 : 0;
		bool late = (s > 19 * SEC / 2 && s < 23 * SEC / 2) ||
			    (s > 39 * SEC / 2 && s < 43 * SEC / 2);

		now_ns = t;
		(void)vw_poller_step(&p, 0, &uw, t);
		if (!late)
			assert_int_equal(read_at(&p, t, &raw), 0);
		if (s == 13 * SEC)
			assert_int_equal(raw, 1000000000); /* 100 W x 10 s, no more, no less */
	}
	assert_int_equal(raw, 1500000000);
	assert_int_equal(p.gaps, 0);
	vw_poller_fini(&p);
	vw_clock_set_fake(NULL);
}

/* A hung request: read() never waits for it and fini() cancels it. */
static void test_hung_request(void **state)
{
	struct meter m = { .uw = 7000000, .hang = true };
	struct vw_poller p;
	struct timespec a, b;
	uint64_t raw;
	int err;

	(void)state;
	assert_int_equal(vw_poller_init(&p, &meter_ops, &m, "test", 20 * MS, SEC, sizeof(raw)), 0);
	assert_int_equal(vw_poller_start(&p, 0), 0);
	wait_calls(&m, 1);
	clock_gettime(CLOCK_MONOTONIC, &a);
	vw_poller_read(&p, 1, &raw, &err);
	assert_int_equal(err, -ENODATA);
	vw_poller_fini(&p);
	clock_gettime(CLOCK_MONOTONIC, &b);
	assert_true(atomic_load(&m.cancelled));
	assert_true(b.tv_sec - a.tv_sec < 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_zone_reports),
		cmocka_unit_test(test_thread_backoff),
		cmocka_unit_test(test_outage_recovery),
		cmocka_unit_test(test_hung_request),
		cmocka_unit_test(test_late_sample),
	};

	vw_log_set_level(VW_LOG_ERROR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

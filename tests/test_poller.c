/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The BMC poller (host/power/poller.h) with a scripted meter: what a zone reports and counts
 * for a fresh, a stale, a failed and an empty reading (on a fake clock), then the real thread:
 * its readings, its back-off while the meter fails, and a close that cancels a hung request.
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
	/* A failed request within the bound: the last reading still counts. */
	vw_poller_seed(&p, -EAGAIN, &uw);
	assert_int_equal(read_at(&p, t += SEC, &raw), 0);
	assert_int_equal(raw, 200000000);
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
	/* Fresh again: that read only sets the time, the gap is not made up. */
	vw_poller_seed(&p, 0, &w100);
	assert_int_equal(read_at(&p, t += SEC, &raw), 0);
	assert_int_equal(raw, 200000000);
	assert_int_equal(read_at(&p, t += SEC, &raw), 0);
	assert_int_equal(raw, 300000000);
	/* -ENODATA drops the held reading at once, however fresh. */
	vw_poller_seed(&p, -ENODATA, &uw);
	assert_int_equal(vw_poller_current(&p, NULL), -ENODATA);
	assert_int_equal(read_at(&p, t += SEC, &raw), -ENODATA);
	assert_int_equal(raw, 300000000);
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
	/* Failing: 20, 40, 80, 160 ms apart (then 320): at most 5 in 400 ms. */
	atomic_store(&m.result, -EIO);
	wait_calls(&m, atomic_load(&m.calls) + 1);
	before = atomic_load(&m.calls);
	usleep(400000);
	assert_true(atomic_load(&m.calls) - before <= 5);
	assert_int_equal(vw_poller_current(&p, NULL), 0); /* the bound (1 s) not yet past */
	vw_poller_fini(&p);
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
		cmocka_unit_test(test_hung_request),
	};

	vw_log_set_level(VW_LOG_ERROR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

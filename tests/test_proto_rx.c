/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Acceptance rules (sequence, epoch, VM, energy, spike, conflicting publishers), the line framer
 * and the guest accumulator, on the guest's clock passed in.
 */
#include "vw_test.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accum.h"
#include "macro.h"
#include "proto.h"

#define UUID "6f1c2a9e-3b4d-4e5f-8a7b-0c1d2e3f4a5b"
#define OTHER_UUID "00000000-0000-4000-8000-000000000001"

static struct vw_host_frame frame(uint64_t epoch, uint64_t seq, uint64_t idle, uint64_t active)
{
	struct vw_host_frame f = {
		.version = VW_PROTO_VERSION, .epoch = epoch, .seq = seq, .vm_uuid = UUID,
		.interval_ms = 5000, .source = "rapl", .n_zones = 2,
		.zones = {{VW_ZONE_PACKAGE, idle, active, 10, 5},
			  {VW_ZONE_DRAM, idle / 10, active / 10, 1, 0.5}},
	};
	return f;
}

static size_t encode(const struct vw_host_frame *f, char *buf, size_t size)
{
	size_t len;

	assert_int_equal(vw_proto_encode_host(f, buf, size, &len), 0);
	return len;
}

/* ---- acceptance ---- */

#define SEC VW_NSEC_PER_SEC
#define T0 (1000 * SEC)

static void test_rx_rules(void **state)
{
	struct vw_proto_rx rx = {0};
	struct vw_host_frame f;
	uint64_t now = T0;

	(void)state;
	f = frame(100, 5, 1000, 2000);
	assert_int_equal(vw_proto_rx_accept(&rx, &f, now), VW_PROTO_OK);
	assert_string_equal(rx.expect_uuid, UUID); /* the first frame fixes the VM */
	assert_int_equal(rx.take, VW_PROTO_TAKE_WHOLE);
	/* The sequence repeats, then goes back: dropped, counted, last good kept. */
	assert_int_equal(vw_proto_rx_accept(&rx, &f, now += 5 * SEC), VW_PROTO_E_SEQ);
	f.seq = 4;
	assert_int_equal(vw_proto_rx_accept(&rx, &f, now), VW_PROTO_E_SEQ);
	assert_true(rx.rejected[VW_PROTO_E_SEQ] == 2 && rx.last.seq == 5);
	/* Gaps are fine: cumulative counters make lost frames harmless. */
	f = frame(100, 50, 1500, 2500);
	assert_int_equal(vw_proto_rx_accept(&rx, &f, now), VW_PROTO_OK);
	assert_int_equal(rx.take, VW_PROTO_TAKE_DELTA);
	/* A counter falling within an epoch: dropped; both modes, any zone. */
	f = frame(100, 51, 1499, 2500);
	assert_int_equal(vw_proto_rx_accept(&rx, &f, now += 5 * SEC), VW_PROTO_E_ENERGY);
	f = frame(100, 51, 1500, 2600);
	f.zones[1].active_uj = 0;
	assert_int_equal(vw_proto_rx_accept(&rx, &f, now), VW_PROTO_E_ENERGY);
	/* Another VM's frame. */
	f = frame(100, 52, 1600, 2600);
	memcpy(f.vm_uuid, OTHER_UUID, sizeof(f.vm_uuid));
	assert_int_equal(vw_proto_rx_accept(&rx, &f, now), VW_PROTO_E_UUID);
	/* A new epoch with small counters (a host restart?): held while ours may still publish
	 * (its history would be counted twice if it were a second publisher), then, ours silent
	 * for two intervals, taken whole: lower seq and energy. */
	f = frame(7, 1, 10, 20);
	assert_int_equal(vw_proto_rx_accept(&rx, &f, now += 5 * SEC), VW_PROTO_E_PENDING);
	assert_true(rx.epoch == 100 && rx.epochs == 0);
	f = frame(7, 2, 12, 22);
	assert_int_equal(vw_proto_rx_accept(&rx, &f, now += 6 * SEC), VW_PROTO_OK);
	assert_true(rx.epoch == 7 && rx.seq == 2 && rx.epochs == 1);
	assert_int_equal(rx.take, VW_PROTO_TAKE_WHOLE);
	/* The superseded epoch again, even newer and small: a conflict, never a second restart. */
	f = frame(100, 60, 1600, 2600);
	assert_int_equal(vw_proto_rx_accept(&rx, &f, now += SEC), VW_PROTO_E_CONFLICT);
	f = frame(100, 1, 0, 0);
	assert_int_equal(vw_proto_rx_accept(&rx, &f, now), VW_PROTO_E_CONFLICT);
	/* A zone the last frame lacked cannot be checked against it. */
	f = frame(7, 3, 15, 25);
	f.n_zones = 1;
	assert_int_equal(vw_proto_rx_accept(&rx, &f, now += 4 * SEC), VW_PROTO_OK);
	f = frame(7, 4, 16, 26);
	assert_int_equal(vw_proto_rx_accept(&rx, &f, now += 5 * SEC), VW_PROTO_OK);
	assert_true(rx.accepted == 5 && rx.epochs == 1 && rx.takeovers == 0);
	assert_true(rx.rejected[VW_PROTO_E_PENDING] == 1);
	assert_true(rx.rejected[VW_PROTO_E_ENERGY] == 2 && rx.rejected[VW_PROTO_E_UUID] == 1);
	assert_true(rx.rejected[VW_PROTO_E_CONFLICT] == 2);
}

static void test_rx_expected_vm(void **state)
{
	struct vw_proto_rx rx = {.expect_uuid = "6F1C2A9E-3B4D-4E5F-8A7B-0C1D2E3F4A5B"};
	struct vw_host_frame f = frame(1, 1, 1, 1);
	char buf[VW_PROTO_MAX_FRAME];
	size_t len;

	(void)state;
	assert_int_equal(vw_proto_rx_accept(&rx, &f, T0), VW_PROTO_OK); /* any case configured */
	memcpy(f.vm_uuid, OTHER_UUID, sizeof(f.vm_uuid));
	f.seq = 2;
	assert_int_equal(vw_proto_rx_accept(&rx, &f, T0), VW_PROTO_E_UUID);
	/* rx_line counts decode errors as well. */
	assert_int_equal(vw_proto_rx_line(&rx, "{", 1, T0), VW_PROTO_E_SYNTAX);
	assert_true(rx.rejected[VW_PROTO_E_SYNTAX] == 1);
	f = frame(1, 3, 2, 2);
	len = encode(&f, buf, sizeof(buf));
	assert_int_equal(vw_proto_rx_line(&rx, buf, len - 1, T0 + 5 * SEC), VW_PROTO_OK);
	assert_int_equal(vw_proto_rx_line(&rx, buf, len - 1, T0 + 5 * SEC), VW_PROTO_E_SEQ);
	assert_true(rx.accepted == 2);
}

/* ---- publishers and a guest, on the guest's clock ---- */

/* One host process publishing one VM: a package zone at `watts`, 40 % idle. */
struct pub {
	uint64_t epoch, seq, interval_ms;
	double watts;
	double uj; /* cumulative since the epoch began */
};

static struct vw_host_frame pub_frame(const struct pub *p)
{
	uint64_t uj = (uint64_t)p->uj, idle = uj * 2 / 5;
	struct vw_host_frame f = {
		.version = VW_PROTO_VERSION, .epoch = p->epoch, .seq = p->seq, .vm_uuid = UUID,
		.interval_ms = p->interval_ms, .source = "rapl", .n_zones = 1,
		.zones = {{VW_ZONE_PACKAGE, idle, uj - idle, p->watts * 0.4, p->watts * 0.6}},
	};
	return f;
}

/* The publisher runs `secs` and sends its next frame. */
static struct vw_host_frame pub_run(struct pub *p, double secs)
{
	p->uj += p->watts * secs * 1e6;
	p->seq++;
	return pub_frame(p);
}

struct guest {
	struct vw_proto_rx rx;
	struct vw_proto_acc acc;
};

static enum vw_proto_error feed(struct guest *g, const struct vw_host_frame *f, uint64_t now)
{
	enum vw_proto_error e = vw_proto_rx_accept(&g->rx, f, now);

	if (e == VW_PROTO_OK)
		vw_proto_acc_add(&g->acc, &g->rx);
	return e;
}

static double total_j(const struct guest *g)
{
	const struct vw_proto_acc_zone *z = &g->acc.zones[VW_ZONE_PACKAGE];

	return (double)(z->idle_uj + z->active_uj) / 1e6;
}

/* p runs secs and publishes; the guest reads that frame dt later (*now += dt): feed()'s result. */
static enum vw_proto_error publish(struct guest *g, struct pub *p, double secs, uint64_t *now,
				   uint64_t dt)
{
	struct vw_host_frame f = pub_run(p, secs);

	*now += dt;
	return feed(g, &f, *now);
}

/* A guest starting on a live host: p's current frame taken whole at now; its total then. */
static struct guest *guest_on(const struct pub *p, uint64_t now, double *ret_start)
{
	struct guest *g = calloc(1, sizeof(*g));
	struct vw_host_frame f = pub_frame(p);

	assert_non_null(g);
	assert_int_equal(feed(g, &f, now), VW_PROTO_OK);
	*ret_start = total_j(g);
	return g;
}

/*
 * Two publishers for one VM, 1 s intervals, their frames interleaved half a second apart for 12 s
 * at 20 W (240 J). The v1 rule (every epoch change a restart, added whole) counted each frame's
 * whole history (the user's report: 5,860 J). Here A's frames count, B's are conflicts.
 */
static void test_two_publishers_interleaved(void **state)
{
	struct pub a = { .epoch = 111, .seq = 40, .interval_ms = 1000, .watts = 20, .uj = 1000e6 };
	struct pub b = { .epoch = 222, .seq = 90, .interval_ms = 1000, .watts = 20, .uj = 3000e6 };
	uint64_t now = T0;
	double start, v1 = 0;
	struct guest *g = guest_on(&a, now, &start);

	(void)state;
	assert_double_near(start, 1000, 1e-6);
	for (int i = 0; i < 12; i++) {
		struct vw_host_frame fb = pub_run(&b, 1), fa = pub_run(&a, 1);

		assert_int_equal(feed(g, &fb, now += SEC / 2), VW_PROTO_E_CONFLICT);
		assert_int_equal(feed(g, &fa, now += SEC / 2), VW_PROTO_OK);
		v1 += (fb.zones[0].idle_uj + fb.zones[0].active_uj + fa.zones[0].idle_uj +
		       fa.zones[0].active_uj) / 1e6;
	}
	print_message("# two publishers, 12 s at 20 W: counted %.1f J (v1 rule: %.0f J)\n",
		      total_j(g) - start, v1);
	assert_double_near(total_j(g) - start, 240, 24);
	assert_true(g->rx.rejected[VW_PROTO_E_CONFLICT] == 12 && g->rx.epochs == 0);
	assert_true(g->rx.epoch == a.epoch);
	free(g);
}

/*
 * Both publishers started with the guest: B's first frame is small enough to be a restart, so
 * it is held (pending) while A may still publish; A's next frame shows B to be a second
 * publisher, rejected from then on. Taking it whole at once, as a restart, counted B's 1.5 s of
 * history on top of A's (+12 %): now exactly A's delivery.
 */
static void test_two_publishers_from_start(void **state)
{
	struct pub a = { .epoch = 5, .interval_ms = 1000, .watts = 20 };
	struct pub b = { .epoch = 6, .interval_ms = 1000, .watts = 20 };
	struct guest *g = calloc(1, sizeof(*g));
	uint64_t now = T0;

	(void)state;
	assert_int_equal(publish(g, &a, 1, &now, SEC), VW_PROTO_OK);
	assert_int_equal(publish(g, &b, 1.5, &now, SEC / 2), VW_PROTO_E_PENDING); /* 30 J */
	for (int i = 0; i < 11; i++) {
		assert_int_equal(publish(g, &a, 1, &now, SEC / 2), VW_PROTO_OK);
		assert_int_equal(publish(g, &b, 1, &now, SEC / 2), VW_PROTO_E_CONFLICT);
	}
	print_message("# both from the start: counted %.1f J, A delivered %.1f J\n", total_j(g),
		      a.uj / 1e6);
	assert_double_near(total_j(g), a.uj / 1e6, 1e-6);
	assert_true(g->rx.rejected[VW_PROTO_E_CONFLICT] == 11 && g->rx.epochs == 0);
	free(g);
}

/*
 * Two honest publishers interleaved, the second starting at any point of the first's interval
 * and any time after the guest (from its first frame to 30 s in), frames read as they come or
 * a little late: the guest counts exactly one publisher's delivery, never both (the hidden
 * check of issue 29 saw +12 %); one publisher alone is exact.
 */
static void test_two_publishers_exact(void **state)
{
	static const double phases[] = { 0.1, 0.25, 0.5, 0.75, 0.9 };
	static const int b_starts[] = { 0, 1, 3, 30 };

	(void)state;
	for (size_t ph = 0; ph < ARRAY_SIZE(phases); ph++)
		for (size_t bs = 0; bs < ARRAY_SIZE(b_starts); bs++) {
			struct pub a = { .epoch = 5, .interval_ms = 1000, .watts = 20 };
			struct pub b = { .epoch = 6, .interval_ms = 1000, .watts = 33 };
			struct guest *g = calloc(1, sizeof(*g)), *one = calloc(1, sizeof(*one));
			uint64_t now = T0, t_one = T0;
			double a_from = 0, b_from = 0, got;
			bool b_on = false;

			assert_non_null(g);
			assert_non_null(one);
			for (int i = 0; i < 60; i++) {
				struct vw_host_frame fa = pub_run(&a, 1), fb;
				enum vw_proto_error e;

				e = feed(g, &fa, now += (uint64_t)((1 - phases[ph]) * SEC));
				assert_true(e == VW_PROTO_OK || e == VW_PROTO_E_CONFLICT);
				assert_int_equal(feed(one, &fa, t_one += SEC), VW_PROTO_OK);
				if (i < b_starts[bs])
					continue;
				/* B started phases[ph] s after A's frame: its first frame
				 * holds that much. */
				fb = pub_run(&b, b_on ? 1 : phases[ph]);
				b_on = true;
				e = feed(g, &fb, now += (uint64_t)(phases[ph] * SEC));
				assert_true(e == VW_PROTO_OK || e == VW_PROTO_E_CONFLICT ||
					    e == VW_PROTO_E_PENDING);
			}
			got = total_j(g);
			a_from = a.uj / 1e6;
			b_from = b.uj / 1e6;
			print_message("# phase %.2f, B from %2d s: counted %.3f J; A delivered %.3f "
				      "J, B %.3f J\n", phases[ph], b_starts[bs], got, a_from,
				      b_from);
			/* The first publisher's delivery, exactly: B never counts. */
			assert_double_near(got, a_from, 1e-6);
			assert_int_equal(g->rx.epoch, a.epoch);
			assert_double_near(total_j(one), a_from, 1e-6);
			free(g);
			free(one);
		}
}

/*
 * The old instance exits while the other keeps publishing: once the current epoch has been
 * silent two intervals the other takes over from its first frame after the last accepted
 * one, never with its history; at most about one interval is lost.
 */
static void test_takeover_when_current_stops(void **state)
{
	struct pub a = { .epoch = 1, .seq = 7, .interval_ms = 1000, .watts = 20, .uj = 500e6 };
	struct pub b = { .epoch = 2, .seq = 3, .interval_ms = 1000, .watts = 20, .uj = 9000e6 };
	uint64_t now = T0;
	double start;
	struct guest *g = guest_on(&a, now, &start);

	(void)state;
	for (int i = 0; i < 6; i++) {
		assert_int_equal(publish(g, &b, 1, &now, SEC / 2), VW_PROTO_E_CONFLICT);
		assert_int_equal(publish(g, &a, 1, &now, SEC / 2), VW_PROTO_OK);
	}
	/* A is gone; B goes on: rejected until A has been silent 2 s, then B takes over. */
	for (int i = 0; i < 6; i++) {
		assert_int_equal(publish(g, &b, 1, &now, SEC),
				 i < 2 ? VW_PROTO_E_CONFLICT : VW_PROTO_OK);
	}
	print_message("# takeover: counted %.1f J of 240 J\n", total_j(g) - start);
	assert_true(g->rx.takeovers == 1 && g->rx.epoch == b.epoch && g->rx.epochs == 1);
	assert_true(total_j(g) - start <= 240 + 1e-6);
	assert_true(total_j(g) - start >= 240 - 20 - 1e-6); /* one interval at most */
	assert_double_near(total_j(g) - start, 240, 24);
	/* A's frames, should any still come, are conflicts now. */
	assert_int_equal(publish(g, &a, 1, &now, SEC / 2), VW_PROTO_E_CONFLICT);
	free(g);
}

/* A takeover with no base frame (the first frame of the other epoch comes after the silence)
 * starts from it: nothing of its history is added. */
static void test_takeover_without_base(void **state)
{
	struct pub a = { .epoch = 1, .interval_ms = 5000, .watts = 20, .uj = 500e6 };
	struct pub b = { .epoch = 2, .interval_ms = 5000, .watts = 20, .uj = 9000e6 };
	struct guest *g = calloc(1, sizeof(*g));
	struct vw_host_frame f = pub_run(&a, 5);
	uint64_t now = T0;
	double before;

	(void)state;
	assert_int_equal(feed(g, &f, now), VW_PROTO_OK);
	before = total_j(g);
	f = pub_run(&b, 5);
	/* 9 kJ in 16 s is no restart, and ours is silent: a takeover, from nothing. */
	assert_int_equal(feed(g, &f, now += 11 * SEC), VW_PROTO_OK);
	assert_int_equal(g->rx.take, VW_PROTO_TAKE_BASE);
	assert_double_near(total_j(g), before, 1e-6);
	assert_int_equal(publish(g, &b, 5, &now, 5 * SEC), VW_PROTO_OK);
	assert_double_near(total_j(g), before + 100, 1e-6);
	free(g);
}

/* Frames replayed: the current epoch's are `seq`, a superseded epoch's `conflict`; none counts. */
static void test_replay(void **state)
{
	struct pub a = { .epoch = 10, .interval_ms = 1000, .watts = 20, .uj = 100e6 };
	struct pub b = { .epoch = 11, .interval_ms = 1000, .watts = 20 };
	struct guest *g = calloc(1, sizeof(*g));
	struct vw_host_frame old[5];
	uint64_t now = T0;
	double total;

	(void)state;
	for (int i = 0; i < 5; i++) {
		old[i] = pub_run(&a, 1);
		assert_int_equal(feed(g, &old[i], now += SEC), VW_PROTO_OK);
	}
	for (int i = 0; i < 5; i++)
		assert_int_equal(feed(g, &old[i], now), VW_PROTO_E_SEQ);
	assert_int_equal(publish(g, &b, 2, &now, 3 * SEC), VW_PROTO_OK); /* the host restarted */
	total = total_j(g);
	/* Old frames again, even after the current epoch fell silent: never a takeover. */
	now += 10 * SEC;
	for (int i = 0; i < 5; i++)
		assert_int_equal(feed(g, &old[i], now), VW_PROTO_E_CONFLICT);
	assert_double_near(total_j(g), total, 1e-6);
	assert_true(g->rx.rejected[VW_PROTO_E_SEQ] == 5 && g->rx.rejected[VW_PROTO_E_CONFLICT] == 5);
	free(g);
}

/* A genuine host restart loses nothing; a guest restart starts at the host's own figure. */
static void test_restarts(void **state)
{
	struct pub a = { .epoch = 70, .interval_ms = 5000, .watts = 30, .uj = 7000e6 };
	struct pub b = { .epoch = 71, .interval_ms = 5000, .watts = 30 };
	struct guest *g = calloc(1, sizeof(*g));
	uint64_t now = T0;

	(void)state;
	assert_int_equal(publish(g, &a, 5, &now, 0), VW_PROTO_OK);
	assert_double_near(total_j(g), 7150, 1e-6); /* the host's figure */
	for (int i = 0; i < 3; i++) {
		assert_int_equal(publish(g, &a, 5, &now, 5 * SEC), VW_PROTO_OK);
	}
	/* The host stops; 4 s later a new one starts and publishes 3 s after that. */
	assert_int_equal(publish(g, &b, 3, &now, 12 * SEC), VW_PROTO_OK);
	assert_int_equal(g->rx.take, VW_PROTO_TAKE_WHOLE);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(publish(g, &b, 5, &now, 5 * SEC), VW_PROTO_OK);
	}
	assert_double_near(total_j(g), a.uj / 1e6 + b.uj / 1e6, 1e-6); /* nothing lost */
	assert_true(g->rx.epochs == 1 && g->rx.takeovers == 0 && g->acc.restarts == 1);
	/* A restart after a long silence may carry a long history: it began after our last frame. */
	b = (struct pub){ .epoch = 72, .interval_ms = 5000, .watts = 30 };
	assert_int_equal(publish(g, &b, 3000, &now, 3600 * SEC), VW_PROTO_OK);
	assert_int_equal(g->rx.take, VW_PROTO_TAKE_WHOLE);
	free(g);
}

/*
 * A frame whose counters jump by a megajoule one second after the last: rejected (spike); the
 * next frame counts from the last good one, so nothing of the jump is counted and nothing
 * delivered is lost. The same jump with watts that claim it is still no power a VM draws.
 */
static void test_spike(void **state)
{
	struct pub a = { .epoch = 3, .interval_ms = 1000, .watts = 20, .uj = 50e6 };
	uint64_t now = T0;
	double start, used = 0;
	struct guest *g = guest_on(&a, now, &start);
	struct vw_host_frame f;

	(void)state;
	for (int i = 0; i < 12; i++) {
		f = pub_run(&a, 1);
		used += 20;
		if (i == 4 || i == 8) {
			f.zones[0].active_uj += 1000000000000ULL; /* 1 MJ */
			if (i == 8)
				f.zones[0].active_w = 1e6; /* claimed, too */
			assert_int_equal(feed(g, &f, now += SEC), VW_PROTO_E_SPIKE);
			continue;
		}
		assert_int_equal(feed(g, &f, now += SEC), VW_PROTO_OK);
	}
	print_message("# spikes: counted %.1f J of %.1f J\n", total_j(g) - start, used);
	assert_double_near(total_j(g) - start, used, used / 10);
	assert_double_near(total_j(g) - start, used, 1e-6); /* in fact exactly */
	assert_true(g->rx.rejected[VW_PROTO_E_SPIKE] == 2);
	free(g);
}

/* A configured ceiling replaces the automatic one, both ways. */
static void test_spike_max_watts(void **state)
{
	struct pub a = { .epoch = 3, .interval_ms = 1000, .watts = 20 };
	struct guest *g = calloc(1, sizeof(*g));
	uint64_t now = T0;

	(void)state;
	g->rx.max_watts = 100;
	assert_int_equal(publish(g, &a, 1, &now, SEC), VW_PROTO_OK);
	a.watts = 90;
	assert_int_equal(publish(g, &a, 1, &now, SEC), VW_PROTO_OK);
	a.watts = 150; /* over 100 W, even when the frame says so */
	assert_int_equal(publish(g, &a, 1, &now, SEC), VW_PROTO_E_SPIKE);
	/* Automatic: 4 x 300 W reported is allowed. */
	memset(g, 0, sizeof(*g));
	a.watts = 20;
	assert_int_equal(publish(g, &a, 1, &now, SEC), VW_PROTO_OK);
	a.watts = 300;
	assert_int_equal(publish(g, &a, 1, &now, SEC), VW_PROTO_OK);
	free(g);
}

/* Counters that step up and stay (a host adding a VM's history again): the step is dropped,
 * counting goes on from it; one interval is lost, the step never counted. */
static void test_spike_lasting_step(void **state)
{
	struct pub a = { .epoch = 3, .interval_ms = 1000, .watts = 20, .uj = 50e6 };
	uint64_t now = T0;
	double start;
	struct guest *g = guest_on(&a, now, &start);

	(void)state;
	for (int i = 0; i < 12; i++) {
		if (i == 4)
			a.uj += 5e12; /* 5 MJ, for good */
		assert_int_equal(publish(g, &a, 1, &now, SEC),
				 i == 4 ? VW_PROTO_E_SPIKE : VW_PROTO_OK);
	}
	print_message("# lasting step: counted %.1f J of 240 J\n", total_j(g) - start);
	assert_double_near(total_j(g) - start, 240 - 20, 1e-6);
	assert_int_equal(g->rx.take, VW_PROTO_TAKE_DELTA);
	free(g);
}

/*
 * No false spikes: counters that move once per 10 frames (published every second, measured
 * every 10 s), and frames read in a burst (all at one instant) after the guest was paused.
 */
static void test_no_false_spike(void **state)
{
	struct pub a = { .epoch = 3, .interval_ms = 1000, .watts = 200 };
	struct guest *g = calloc(1, sizeof(*g));
	struct vw_host_frame f, burst[5];
	uint64_t now = T0;

	(void)state;
	for (int i = 1; i <= 40; i++) {
		a.seq++;
		if (i % 10 == 0)
			a.uj += a.watts * 10 * 1e6;
		f = pub_frame(&a);
		assert_int_equal(feed(g, &f, now += SEC), VW_PROTO_OK);
	}
	assert_double_near(total_j(g), 8000, 1e-6);
	for (int i = 0; i < 5; i++)
		burst[i] = pub_run(&a, 1);
	now += 5 * SEC;
	for (int i = 0; i < 5; i++)
		assert_int_equal(feed(g, &burst[i], now), VW_PROTO_OK);
	assert_double_near(total_j(g), 9000, 1e-6);
	free(g);
}

/* ---- framer ---- */

struct lines {
	size_t n;
	char got[16][VW_PROTO_MAX_FRAME];
	size_t len[16];
};

static void collect(const char *line, size_t len, void *userdata)
{
	struct lines *l = userdata;

	assert_true(l->n < ARRAY_SIZE(l->got));
	assert_int_equal(line[len], '\0');
	memcpy(l->got[l->n], line, len + 1);
	l->len[l->n++] = len;
}

static void test_framer_split_everywhere(void **state)
{
	struct vw_host_frame f1 = frame(1, 1, 10, 20), f2 = frame(1, 2, 11, 21);
	char stream[2 * VW_PROTO_MAX_FRAME];
	size_t n1, n2;
	struct lines *l = calloc(1, sizeof(*l));

	(void)state;
	n1 = encode(&f1, stream, sizeof(stream));
	n2 = encode(&f2, stream + n1, sizeof(stream) - n1);
	for (size_t cut = 0; cut <= n1 + n2; cut++) {
		struct vw_framer *fr = vw_framer_new(VW_PROTO_MAX_FRAME);

		l->n = 0;
		vw_framer_feed(fr, stream, cut, collect, l);
		vw_framer_feed(fr, stream + cut, n1 + n2 - cut, collect, l);
		assert_int_equal(l->n, 2);
		assert_int_equal(l->len[0], n1 - 1);
		assert_memory_equal(l->got[0], stream, n1 - 1);
		assert_memory_equal(l->got[1], stream + n1, n2 - 1);
		vw_framer_free(fr);
	}
	/* One byte at a time. */
	struct vw_framer *fr = vw_framer_new(VW_PROTO_MAX_FRAME);
	l->n = 0;
	for (size_t i = 0; i < n1 + n2; i++)
		vw_framer_feed(fr, stream + i, 1, collect, l);
	assert_int_equal(l->n, 2);
	vw_framer_free(fr);
	free(l);
}

static void test_framer_resync_and_limits(void **state)
{
	struct vw_framer *fr = vw_framer_new(16);
	struct lines *l = calloc(1, sizeof(*l));
	static const char a[] = "partial\xff" "one\n\n\nfifteen-bytes-x\nsixteen-bytes-xx\nok\n";
	static const char b[] = "ab\0cd\nef\n";

	(void)state;
	assert_null(vw_framer_new(1));
	assert_int_equal(errno, EINVAL);
	assert_null(vw_framer_new((1u << 20) + 1));
	vw_framer_free(NULL);
	vw_framer_feed(fr, a, sizeof(a) - 1, collect, l);
	/* 0xFF dropped "partial"; blank lines skipped; 15 bytes fit a 16-byte cap, 16 do not. */
	assert_int_equal(l->n, 3);
	assert_string_equal(l->got[0], "one");
	assert_string_equal(l->got[1], "fifteen-bytes-x");
	assert_string_equal(l->got[2], "ok");
	assert_true(vw_framer_stats(fr).oversized == 1 && vw_framer_stats(fr).resyncs == 1);
	/* A NUL inside a line makes it invalid; the next line is fine. */
	vw_framer_feed(fr, b, sizeof(b) - 1, collect, l);
	assert_int_equal(l->n, 4);
	assert_string_equal(l->got[3], "ef");
	assert_true(vw_framer_stats(fr).invalid == 1);
	/* 0xFF also ends an oversized line's drop; reset drops a partial line. */
	vw_framer_feed(fr, "0123456789abcdefXYZ\xffgood\nhalf", 29, collect, l);
	vw_framer_reset(fr);
	vw_framer_feed(fr, "new\n", 4, collect, l);
	assert_int_equal(l->n, 6);
	assert_string_equal(l->got[4], "good");
	assert_string_equal(l->got[5], "new");
	assert_true(vw_framer_stats(fr).oversized == 2);
	vw_framer_free(fr);
	free(l);
}

static void count_line(const char *line, size_t len, void *userdata)
{
	(void)line;
	(void)len;
	(*(size_t *)userdata)++;
}

/* Floods: 64 MiB with no newline, then many short and long lines; memory never grows. */
static void test_framer_flood(void **state)
{
	struct vw_framer *fr = vw_framer_new(VW_PROTO_MAX_FRAME);
	char *chunk = malloc(1 << 20);
	size_t lines = 0;

	(void)state;
	memset(chunk, 'x', 1 << 20);
	for (int i = 0; i < 64; i++)
		vw_framer_feed(fr, chunk, 1 << 20, count_line, &lines);
	vw_framer_feed(fr, "\nok\n", 4, count_line, &lines);
	assert_int_equal(lines, 1);
	assert_true(vw_framer_stats(fr).oversized == 1);
	for (size_t i = 0; i < (1 << 20); i += 2)
		chunk[i + 1] = '\n';
	for (int i = 0; i < 8; i++)
		vw_framer_feed(fr, chunk, 1 << 20, count_line, &lines);
	assert_int_equal(lines, 1 + 8 * (1 << 19));
	vw_framer_free(fr);
	free(chunk);
}

/* ---- accumulator ---- */

static void test_acc_epochs(void **state)
{
	struct guest *g = calloc(1, sizeof(*g));
	struct vw_proto_acc *acc = &g->acc;
	struct vw_host_frame f;
	uint64_t now = T0;

	(void)state;
	/* The first frame counts whole: the guest total starts at the host's own figure. */
	f = frame(1, 1, 1000, 2000);
	assert_int_equal(feed(g, &f, now), VW_PROTO_OK);
	assert_true(acc->zones[VW_ZONE_PACKAGE].idle_uj == 1000);
	assert_true(acc->zones[VW_ZONE_PACKAGE].active_uj == 2000);
	f = frame(1, 2, 1500, 2100);
	assert_int_equal(feed(g, &f, now += 5 * SEC), VW_PROTO_OK);
	assert_true(acc->zones[VW_ZONE_PACKAGE].idle_uj == 1500);
	assert_true(acc->zones[VW_ZONE_DRAM].active_uj == 210);
	/* Host restart: counters start again near 0; the guest adds them on top (once the old
	 * epoch has been silent two intervals: until then it might be a second publisher). */
	f = frame(2, 1, 300, 40);
	assert_int_equal(feed(g, &f, now += 11 * SEC), VW_PROTO_OK);
	assert_true(acc->zones[VW_ZONE_PACKAGE].idle_uj == 1800);
	assert_true(acc->zones[VW_ZONE_PACKAGE].active_uj == 2140);
	assert_true(acc->restarts == 1);
	f = frame(2, 2, 400, 50);
	assert_int_equal(feed(g, &f, now += 5 * SEC), VW_PROTO_OK);
	assert_true(acc->zones[VW_ZONE_PACKAGE].idle_uj == 1900);
	assert_double_near(acc->zones[VW_ZONE_DRAM].active_w, 0.5, 0);
	/* A zone that vanishes and comes back lower within an epoch adds nothing. */
	f = frame(2, 3, 500, 60);
	f.n_zones = 1;
	assert_int_equal(feed(g, &f, now += 5 * SEC), VW_PROTO_OK);
	f = frame(2, 4, 600, 70);
	f.zones[1].idle_uj = 1;
	assert_int_equal(feed(g, &f, now += 5 * SEC), VW_PROTO_OK);
	assert_true(acc->zones[VW_ZONE_DRAM].idle_uj == 150 + 30 + 10);
	assert_true(acc->falls == 1);
	free(g);
}

/* Random epochs, gaps, lost frames and bursts: every total only grows, and sums what the host
 * sent. */
static void test_acc_never_decreases(void **state)
{
	struct guest *g = calloc(1, sizeof(*g));
	uint64_t s = 11, epoch = 1, seq = 0, idle = 0, active = 0, prev = 0, now = T0;
	uint64_t done = 0, cur_epoch = 0, last_in_epoch = 0; /* what the host sent, per epoch */

	(void)state;
	for (int i = 0; i < 20000; i++) {
		struct vw_host_frame f;
		uint64_t r = vw_test_rng_range(&s, 0, 99), steps;

		if (r < 3) { /* host restart */
			epoch = vw_test_rng(&s) >> 2;
			seq = vw_test_rng_range(&s, 0, 5);
			idle = active = 0;
		}
		steps = vw_test_rng_range(&s, 1, 3);
		seq += steps;
		idle += vw_test_rng_range(&s, 0, 5000000) * steps;
		active += vw_test_rng_range(&s, 0, 5000000) * steps;
		f = frame(epoch, seq, idle, active);
		now += vw_test_rng_range(&s, 0, 6) * SEC; /* read late, in bursts, or on time */
		if (r >= 3 && r < 10)
			continue; /* lost: the next frame's cumulative value covers it */
		if (feed(g, &f, now) != VW_PROTO_OK)
			continue;
		assert_true(g->acc.zones[VW_ZONE_PACKAGE].idle_uj >= prev);
		prev = g->acc.zones[VW_ZONE_PACKAGE].idle_uj;
		if (f.epoch != cur_epoch) {
			done += last_in_epoch;
			cur_epoch = f.epoch;
		}
		last_in_epoch = idle;
		assert_true(prev == done + last_in_epoch);
	}
	assert_true(prev > 0);
	assert_true(g->acc.falls == 0);
	assert_true(g->acc.restarts == g->rx.epochs && g->rx.takeovers == 0);
	for (int e = 0; e < VW_PROTO_E__COUNT; e++) /* restarts read too soon wait (pending) */
		assert_true(g->rx.rejected[e] == 0 || e == VW_PROTO_E_PENDING);
	free(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rx_rules),
		cmocka_unit_test(test_rx_expected_vm),
		cmocka_unit_test(test_two_publishers_interleaved),
		cmocka_unit_test(test_two_publishers_from_start),
		cmocka_unit_test(test_two_publishers_exact),
		cmocka_unit_test(test_takeover_when_current_stops),
		cmocka_unit_test(test_takeover_without_base),
		cmocka_unit_test(test_replay),
		cmocka_unit_test(test_restarts),
		cmocka_unit_test(test_spike),
		cmocka_unit_test(test_spike_max_watts),
		cmocka_unit_test(test_spike_lasting_step),
		cmocka_unit_test(test_no_false_spike),
		cmocka_unit_test(test_framer_split_everywhere),
		cmocka_unit_test(test_framer_resync_and_limits),
		cmocka_unit_test(test_framer_flood),
		cmocka_unit_test(test_acc_epochs),
		cmocka_unit_test(test_acc_never_decreases),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The publisher's channel side against unix socket servers standing in for QEMU's channel
 * sockets: a peer that reads everything, one that never reads, one that reads a byte a second,
 * one that closes and re-listens in a loop. Time is a fake clock passed to tick(), so a two
 * minute run takes well under a second.
 */
#include "vw_test.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <pthread.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fileio.h"
#include "fixture.h"
#include "macro.h"
#include "accum.h"
#include "model_rx.h"
#include "procfs.h"
#include "proto.h"
#include "publish.h"
#include "publish_input.h"
#include "publish_priv.h"

#define SEC VW_NSEC_PER_SEC
#define MSEC VW_NSEC_PER_MSEC
#define T0 (1000 * SEC)
#define MAX_FRAMES 512

struct peer {
	char path[256];
	char uuid[37];
	int lfd, cfd;
	bool at_start;               /* the next byte read is a connection's first */
	uint64_t connections, resync_bad;
	struct vw_framer *fr;
	struct vw_proto_rx rx;
	uint64_t now;
	uint64_t seq[MAX_FRAMES], at[MAX_FRAMES];
	size_t n;
	char head[16];               /* the first bytes ever read */
	size_t n_head;
	struct vw_model_rx models;   /* model frames, for this VM only */
};

static void on_line(const char *line, size_t len, void *userdata)
{
	struct peer *pe = userdata;
	enum vw_proto_error e;

	if (vw_proto_line_is_model(line, len)) {
		if (!pe->models.scratch)
			assert_int_equal(vw_model_rx_init(&pe->models), 0);
		e = vw_model_rx_line(&pe->models, pe->uuid, line, len, pe->now);
		if (e != VW_PROTO_OK)
			fail_msg("%s: model: %s", pe->uuid, vw_proto_error_name(e));
		return;
	}
	e = vw_proto_rx_line(&pe->rx, line, len, pe->now);

	if (e != VW_PROTO_OK)
		fail_msg("%s: %s: %.*s", pe->uuid, vw_proto_error_name(e), (int)len, line);
	assert_string_equal(pe->rx.last.vm_uuid, pe->uuid);
	if (pe->n < MAX_FRAMES) {
		pe->seq[pe->n] = pe->rx.last.seq;
		pe->at[pe->n++] = pe->now;
	}
}

static void peer_listen(struct peer *pe)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int small = 1024;

	pe->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	assert_true(pe->lfd >= 0);
	assert_int_equal(setsockopt(pe->lfd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)), 0);
	assert_int_equal(setsockopt(pe->lfd, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
	assert_true(strlen(pe->path) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, pe->path, strlen(pe->path));
	(void)unlink(pe->path);
	assert_int_equal(bind(pe->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(pe->lfd, 4), 0);
}

static void peer_init(struct peer *pe, const char *dir, const char *name, const char *uuid)
{
	*pe = (struct peer){ .cfd = -1 };
	snprintf(pe->path, sizeof(pe->path), "%s/%s.sock", dir, name);
	snprintf(pe->uuid, sizeof(pe->uuid), "%s", uuid);
	snprintf(pe->rx.expect_uuid, sizeof(pe->rx.expect_uuid), "%s", uuid);
	pe->fr = vw_framer_new(VW_PROTO_MAX_FRAME);
	assert_non_null(pe->fr);
	peer_listen(pe);
}

static void peer_close(struct peer *pe)
{
	if (pe->cfd >= 0)
		close(pe->cfd);
	if (pe->lfd >= 0)
		close(pe->lfd);
	pe->cfd = pe->lfd = -1;
	(void)unlink(pe->path);
}

static void peer_free(struct peer *pe)
{
	peer_close(pe);
	vw_framer_free(pe->fr);
	vw_model_rx_done(&pe->models);
}

static void peer_accept(struct peer *pe)
{
	if (pe->cfd >= 0 || pe->lfd < 0)
		return;
	pe->cfd = accept4(pe->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (pe->cfd >= 0) {
		/* A new connection is a new guest (QEMU restarted): fresh acceptance state. */
		pe->rx = (struct vw_proto_rx){ 0 };
		memcpy(pe->rx.expect_uuid, pe->uuid, sizeof(pe->uuid));
		vw_framer_reset(pe->fr);
		pe->connections++;
		pe->at_start = true;
	}
}

/* Read up to max bytes; every connection must start with the 0xFF resync byte. */
static void peer_read(struct peer *pe, size_t max, uint64_t now)
{
	char buf[4096];

	pe->now = now;
	while (pe->cfd >= 0 && max > 0) {
		ssize_t n = recv(pe->cfd, buf, VW_MIN(sizeof(buf), max), MSG_DONTWAIT);

		if (n == 0) {
			close(pe->cfd);
			pe->cfd = -1;
			break;
		}
		if (n < 0)
			break;
		if (pe->at_start) {
			pe->resync_bad += (unsigned char)buf[0] != VW_PROTO_RESYNC;
			pe->at_start = false;
		}
		for (ssize_t i = 0; i < n && pe->n_head < sizeof(pe->head); i++)
			pe->head[pe->n_head++] = buf[i];
		vw_framer_feed(pe->fr, buf, (size_t)n, on_line, pe);
		max -= (size_t)n;
	}
}

static uint64_t real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec;
}

static void vm_set(struct vw_vm_energy *vm, const char *uuid, const char *path)
{
	/* The peers listen in this process: it is every VM's QEMU. */
	*vm = (struct vw_vm_energy){ .n_zones = 1, .qemu_pid = (uint32_t)getpid() };
	snprintf(vm->uuid, sizeof(vm->uuid), "%s", uuid);
	snprintf(vm->channel_path, sizeof(vm->channel_path), "%s", path ? path : "");
	vm->zones[0] = (struct vw_zone_owner_energy){ .zone = VW_ZONE_PACKAGE };
}

/* One second of a VM drawing idle_w + active_w. */
static void vm_run(struct vw_vm_energy *vm, double idle_w, double active_w)
{
	vm->zones[0].idle_uj += (uint64_t)(idle_w * 1e6);
	vm->zones[0].active_uj += (uint64_t)(active_w * 1e6);
	vm->zones[0].idle_w = idle_w;
	vm->zones[0].active_w = active_w;
}

static struct vw_publisher *new_publisher_procfs(uint64_t period_ns, double jitter,
						const char *procfs_root)
{
	struct vw_publish_opts o = {
		.period_ns = period_ns, .jitter = jitter, .seed = 42, .epoch = 7, .source = "rapl",
		.procfs_root = procfs_root,
	};
	struct vw_publisher *p = vw_publisher_new(&o);

	assert_non_null(p);
	return p;
}

/* Channels connected through /proc/self/fd/N of the socket file's O_PATH fd. */
static struct vw_publisher *new_publisher(uint64_t period_ns, double jitter)
{
	return new_publisher_procfs(period_ns, jitter, "/proc");
}

#define U_GOOD "11111111-1111-4111-8111-111111111111"
#define U_STUCK "22222222-2222-4222-8222-222222222222"
#define U_SLOW "33333333-3333-4333-8333-333333333333"
#define U_LOOP "44444444-4444-4444-8444-444444444444"

static void test_hostile_peers(void **state)
{
	char *dir = vw_fixture_mkdtemp("publish");
	struct peer good, stuck, slow, loop;
	struct vw_vm_energy vms[4];
	struct vw_publish_vm_stats st;
	const uint64_t step = 50 * MSEC, period = 1 * SEC;
	const double jitter = 0.1;
	uint64_t max_tick = 0, loop_frames = 0;
	struct vw_publisher *p;

	(void)state;
	assert_non_null(dir);
	assert_true(signal(SIGPIPE, SIG_DFL) != SIG_ERR); /* a SIGPIPE would kill the test */
	peer_init(&good, dir, "good", U_GOOD);
	peer_init(&stuck, dir, "stuck", U_STUCK);
	peer_init(&slow, dir, "slow", U_SLOW);
	peer_init(&loop, dir, "loop", U_LOOP);
	vm_set(&vms[0], U_GOOD, good.path);
	vm_set(&vms[1], U_STUCK, stuck.path);
	vm_set(&vms[2], U_SLOW, slow.path);
	vm_set(&vms[3], U_LOOP, loop.path);
	p = new_publisher(period, jitter);

	for (uint64_t t = 0; t <= 120 * SEC; t += step) {
		uint64_t t1;

		if (t % SEC == 0) {
			for (size_t i = 0; i < 4; i++)
				vm_run(&vms[i], 10.0 + (double)i, 20.0);
			assert_int_equal(vw_test_publish_update(p, vms, 4), 0);
		}
		t1 = real_ns();
		assert_int_equal(vw_publisher_tick(p, T0 + t, NULL), 0);
		max_tick = VW_MAX(max_tick, real_ns() - t1);

		peer_accept(&good);
		peer_read(&good, SIZE_MAX, t);
		peer_accept(&stuck); /* and never reads */
		peer_accept(&slow);
		if (t % SEC == 0)
			peer_read(&slow, 1, t);
		peer_accept(&loop);
		peer_read(&loop, SIZE_MAX, t);
		if (t % (3 * SEC) == 1500 * MSEC) { /* the VM restarts: a new socket inode */
			loop_frames += loop.n;
			loop.n = 0;
			peer_close(&loop);
			peer_listen(&loop);
		}
		assert_true(vw_publisher_bytes_held(p) <= 4 * 2 * VW_PROTO_MAX_FRAME);
	}

	/* tick() never waited on anyone (a blocking write would hang here forever). */
	assert_true(max_tick < 250 * MSEC);

	/* The well-behaved VM got every round, in order, on the jittered schedule. */
	assert_true(vw_publisher_seq(p) >= 120 / (1 + jitter));
	assert_true(vw_publisher_seq(p) <= 120 / (1 - jitter) + 1);
	assert_int_equal(good.n, vw_publisher_seq(p));
	assert_int_equal(good.rx.accepted, good.n);
	for (size_t i = 0; i < good.n; i++) {
		assert_int_equal(good.seq[i], i + 1);
		if (i > 0) {
			uint64_t gap = good.at[i] - good.at[i - 1];

			assert_true(gap >= (uint64_t)((1 - jitter) * (double)period));
			assert_true(gap <= (uint64_t)((1 + jitter) * (double)period) + step);
		}
	}
	assert_int_equal(good.connections, 1);
	assert_int_equal(good.resync_bad, 0);
	assert_int_equal(vw_publisher_vm_stats(p, U_GOOD, &st), 0);
	assert_int_equal(st.replaced, 0);
	assert_int_equal(st.sent, good.n);
	/* A guest that reads: only the newest frame is held (256 B for one zone), no copy of it
	 * being written (it went out whole, straight from there). */
	assert_true(st.bytes_held <= 512);

	/* The stuck VM: its socket filled up, newer frames replaced older ones, memory bounded. */
	assert_int_equal(vw_publisher_vm_stats(p, U_STUCK, &st), 0);
	assert_int_equal(st.published, vw_publisher_seq(p));
	assert_true(st.replaced > 0);
	assert_true(st.sent < st.published);
	assert_true(st.bytes_held <= 2 * VW_PROTO_MAX_FRAME);
	assert_int_equal(st.connects, 1);

	/* One byte a second: it saw a resync byte, then the start of a frame. */
	assert_int_equal(vw_publisher_vm_stats(p, U_SLOW, &st), 0);
	assert_true(st.replaced > 0);
	assert_true(st.bytes_held <= 2 * VW_PROTO_MAX_FRAME);
	assert_true(slow.n_head >= 8);
	assert_int_equal((unsigned char)slow.head[0], VW_PROTO_RESYNC);
	assert_memory_equal(slow.head + 1, "{\"v\":1,", 7);

	/* The restarting VM: reconnected each time, each connection began with 0xFF. */
	assert_int_equal(vw_publisher_vm_stats(p, U_LOOP, &st), 0);
	assert_true(loop.connections >= 30);
	assert_int_equal(loop.resync_bad, 0);
	assert_true(loop_frames + loop.n >= loop.connections);
	assert_true(st.connects >= loop.connections);

	vw_publisher_free(p);
	peer_free(&good);
	peer_free(&stuck);
	peer_free(&slow);
	peer_free(&loop);
	vw_fixture_rm(dir);
}

static void test_options(void **state)
{
	const struct vw_publish_opts bad[] = {
		{ .period_ns = 999 * MSEC },
		{ .period_ns = 2 * 3600 * SEC },
		{ .jitter = 0.6 },
		{ .jitter = -0.1 },
		{ .jitter = NAN },
		{ .power_step_w = -1 },
		{ .power_step_w = 1e-300 },
		{ .source = "Not A Source!" },
		{ .source = "" },
		{ .model = "a\nb" },
		{ .epoch = UINT64_MAX },
	};

	/* fd 0 open, to see that a failed constructor closes nothing it does not own */
	int fd0 = fcntl(0, F_GETFD) >= 0 ? -1 : open("/dev/null", O_RDONLY | O_CLOEXEC);

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		errno = 0;
		assert_null(vw_publisher_new(&bad[i]));
		assert_int_equal(errno, EINVAL);
	}
	assert_true(fcntl(0, F_GETFD) >= 0);
	if (fd0 >= 0)
		close(fd0);
	errno = 0;
	assert_null(vw_publisher_new(&(struct vw_publish_opts){ .share_root = "/nonexistent/x" }));
	assert_int_equal(errno, ENOENT);
}

/* Intervals of `rounds` publications driven exactly at next_due(). */
static void schedule(uint64_t period, double jitter, uint64_t seed, uint64_t *ret_min,
		     uint64_t *ret_max)
{
	struct vw_publish_opts o = { .period_ns = period, .jitter = jitter, .seed = seed };
	struct vw_publisher *p = vw_publisher_new(&o);
	uint64_t now = T0, last = 0;
	bool pub;

	assert_non_null(p);
	*ret_min = UINT64_MAX;
	*ret_max = 0;
	for (int i = 0; i < 400; i++) {
		uint64_t due = vw_publisher_next_due(p);

		if (i > 0) {
			/* Nothing happens before it is due, whoever calls tick(). */
			assert_true(due > now);
			assert_int_equal(vw_publisher_tick(p, due - 1, &pub), 0);
			assert_false(pub);
			now = due;
		}
		assert_int_equal(vw_publisher_tick(p, now, &pub), 0);
		assert_true(pub);
		if (i > 0) {
			*ret_min = VW_MIN(*ret_min, now - last);
			*ret_max = VW_MAX(*ret_max, now - last);
		}
		last = now;
	}
	assert_int_equal(vw_publisher_seq(p), 400);
	vw_publisher_free(p);
}

static void test_schedule(void **state)
{
	uint64_t lo, hi, lo2, hi2;

	(void)state;
	/* period +- jitter x period, and the spread is really used. */
	schedule(10 * SEC, 0.2, 1, &lo, &hi);
	assert_true(lo >= 8 * SEC && hi <= 12 * SEC);
	assert_true(lo < 8300 * MSEC && hi > 11700 * MSEC);
	/* The default jitter (0.1) when none is given: never off. */
	schedule(5 * SEC, 0, 2, &lo, &hi);
	assert_true(lo >= 4500 * MSEC && hi <= 5500 * MSEC && hi - lo > 500 * MSEC);
	/* At the 1 s floor the jitter only ever lengthens an interval. */
	schedule(1 * SEC, 0.5, 3, &lo, &hi);
	assert_int_equal(lo, 1 * SEC);
	assert_true(hi <= 1500 * MSEC && hi > 1400 * MSEC);
	/* Seeded: another seed, another schedule. */
	schedule(10 * SEC, 0.2, 4, &lo2, &hi2);
	assert_true(lo2 != lo || hi2 != hi);
}

/* A publisher and one listening peer per VM, ticked once a second of fake time. */
struct rig {
	char *dir;
	struct vw_publisher *p;
	struct peer peers[2];
	struct vw_vm_energy vms[2];
	size_t n;
	uint64_t now;
};

static void rig_init(struct rig *r, size_t n)
{
	static const char *const uuids[] = { U_GOOD, U_STUCK };

	*r = (struct rig){ .dir = vw_fixture_mkdtemp("publish"), .n = n, .now = T0 };
	assert_non_null(r->dir);
	r->p = new_publisher(1 * SEC, 0.1);
	for (size_t i = 0; i < n; i++) {
		char name[32];

		snprintf(name, sizeof(name), "vm%zu", i);
		peer_init(&r->peers[i], r->dir, name, uuids[i]);
		vm_set(&r->vms[i], uuids[i], r->peers[i].path);
	}
}

static void rig_free(struct rig *r)
{
	vw_publisher_free(r->p);
	for (size_t i = 0; i < r->n; i++)
		peer_free(&r->peers[i]);
	vw_fixture_rm(r->dir);
}

/* cmocka setups and teardown: *state is a rig with one VM, or two. */
static int rig_setup(void **state, size_t n)
{
	struct rig *r = malloc(sizeof(*r));

	assert_non_null(r);
	rig_init(r, n);
	*state = r;
	return 0;
}

static int one_vm_setup(void **state)
{
	return rig_setup(state, 1);
}

static int two_vms_setup(void **state)
{
	return rig_setup(state, 2);
}

static int rig_teardown(void **state)
{
	rig_free(*state);
	free(*state);
	return 0;
}

/* Publish one round now (whatever the schedule says) and let every peer read it. */
static void rig_round(struct rig *r)
{
	uint64_t due = vw_publisher_next_due(r->p);
	bool pub;

	r->now = VW_MAX(r->now + 1 * SEC, due);
	assert_int_equal(vw_test_publish_update(r->p, r->vms, r->n), 0);
	assert_int_equal(vw_publisher_tick(r->p, r->now, &pub), 0);
	assert_true(pub);
	for (size_t i = 0; i < r->n; i++) {
		peer_accept(&r->peers[i]);
		peer_read(&r->peers[i], SIZE_MAX, r->now);
	}
}

static const struct vw_proto_zone *last_zone(const struct peer *pe, enum vw_zone z)
{
	for (size_t i = 0; i < pe->rx.last.n_zones; i++)
		if (pe->rx.last.zones[i].zone == z)
			return &pe->rx.last.zones[i];
	return NULL;
}

static void test_rounding(void **state)
{
	struct rig *r = *state;
	const struct vw_proto_zone *z;
	uint64_t rng = 5, prev_i = 0, prev_a = 0, sum_i = 123456789, sum_a = 987654321;

	r->vms[0].zones[0] = (struct vw_zone_owner_energy){
		.zone = VW_ZONE_PACKAGE, .idle_uj = 123456789, .active_uj = 987654321,
		.idle_w = 12.345, .active_w = 0.04,
	};
	rig_round(r);
	z = last_zone(&r->peers[0], VW_ZONE_PACKAGE);
	assert_non_null(z);
	assert_int_equal(z->idle_uj, 123400000); /* down to 0.1 J */
	assert_int_equal(z->active_uj, 987600000);
	assert_true(z->idle_w == 12.3);          /* to the nearest 0.1 W, exactly 12.3 */
	assert_true(z->active_w == 0.0);
	/* Random intervals: published counters never fall. */
	for (int i = 0; i < 200; i++) {
		struct vw_zone_owner_energy *in = &r->vms[0].zones[0];

		if (i != 100) { /* 100: an interval with nothing in it */
			in->idle_uj += vw_test_rng_range(&rng, 0, 300000);
			in->active_uj += vw_test_rng_range(&rng, 0, 3000000);
		}
		sum_i += in->idle_uj; /* each interval counted once */
		sum_a += in->active_uj;
		in->idle_w = vw_test_rng_double(&rng, 0, 50);
		rig_round(r);
		z = last_zone(&r->peers[0], VW_ZONE_PACKAGE);
		assert_non_null(z);
		assert_true(z->idle_uj >= prev_i && z->active_uj >= prev_a);
		assert_int_equal(z->idle_uj % 100000, 0);
		assert_int_equal(z->active_uj % 100000, 0);
		assert_int_equal(z->idle_uj, sum_i - sum_i % 100000);
		assert_int_equal(z->active_uj, sum_a - sum_a % 100000);
		assert_double_near(z->idle_w * 10, nearbyint(z->idle_w * 10), 1e-9);
		prev_i = z->idle_uj;
		prev_a = z->active_uj;
	}
	assert_int_equal(r->peers[0].rx.accepted, 201);
}

static void test_own_numbers(void **state)
{
	struct rig *r = *state;

	r->vms[1].n_zones = 2;
	r->vms[1].zones[1] = (struct vw_zone_owner_energy){ .zone = VW_ZONE_DRAM };
	for (int i = 0; i < 5; i++) {
		vm_run(&r->vms[0], 1, 9);
		vm_run(&r->vms[1], 3, 27);
		r->vms[1].zones[1].active_uj += 2000000;
		r->vms[1].zones[1].active_w = 2;
		rig_round(r);
	}
	for (size_t i = 0; i < 2; i++) {
		const struct vw_host_frame *f = &r->peers[i].rx.last;
		const struct vw_proto_zone *z = last_zone(&r->peers[i], VW_ZONE_PACKAGE);

		/* on_line() already checked every frame carried this VM's UUID only */
		assert_int_equal(r->peers[i].rx.accepted, 5);
		assert_int_equal(f->n_zones, i == 0 ? 1 : 2);
		assert_int_equal(z->active_uj, i == 0 ? 45000000 : 135000000);
		assert_true(z->active_w == (i == 0 ? 9.0 : 27.0));
		assert_int_equal(f->epoch, 7);
		assert_int_equal(f->seq, 5);
	}
	assert_null(last_zone(&r->peers[0], VW_ZONE_DRAM));
	assert_int_equal(last_zone(&r->peers[1], VW_ZONE_DRAM)->active_uj, 10000000);
}

/* The VM's model goes out with its next frame, again every VW_PUBLISH_MODEL_RESEND rounds and
 * after its guest reconnects; the same model set again is no news; only to a listed VM, with a
 * body and name a frame carries. The other VM never gets it. */
static void test_model_push(void **state)
{
	struct rig *r = *state;
	const char *body = "{\"package\":{\"All_Weights\":{\"Bias_Weight\":12}}}";
	char big[VW_PROTO_MAX_MODEL + 2];
	struct peer *pe = &r->peers[0];

	rig_round(r);
	assert_int_equal(vw_publisher_set_model(r->p, U_GOOD, "host:vm:lin", body, strlen(body)),
			 0);
	rig_round(r);
	assert_true(pe->models.accepted == 1 && pe->models.unchanged == 0);
	assert_string_equal(pe->models.cur->body, body);
	assert_string_equal(pe->models.cur->name, "host:vm:lin");
	assert_int_equal(pe->models.cur->epoch, 7);
	assert_int_equal(vw_publisher_set_model(r->p, U_GOOD, "host:vm:lin", body, strlen(body)),
			 0);
	for (int i = 0; i < VW_PUBLISH_MODEL_RESEND - 1; i++)
		rig_round(r);
	assert_true(pe->models.accepted == 1 && pe->models.unchanged == 0);
	rig_round(r); /* the resend */
	assert_true(pe->models.accepted == 1 && pe->models.unchanged == 1);
	assert_null(r->peers[1].models.cur);
	/* The guest reconnects (QEMU restarted): it gets the model with its first frame. */
	close(pe->cfd);
	pe->cfd = -1;
	for (int i = 0; i < 100 && pe->models.unchanged == 1; i++) {
		r->now += 100 * MSEC;
		assert_int_equal(vw_publisher_tick(r->p, r->now, NULL), 0);
		peer_accept(pe);
		peer_read(pe, SIZE_MAX, r->now);
	}
	assert_int_equal(pe->connections, 2);
	assert_int_equal(pe->models.unchanged, 2);
	/* Refused: a VM not listed, an oversized body, a name outside the alphabet. */
	memset(big, ' ', sizeof(big));
	assert_int_equal(vw_publisher_set_model(r->p, "0b6cbd1e-7a55-4f0e-9b8a-58a0b4c3d2e1",
						"x", body, strlen(body)),
			 -ENOENT);
	assert_int_equal(vw_publisher_set_model(r->p, U_GOOD, "x", big, sizeof(big)), -EINVAL);
	assert_int_equal(vw_publisher_set_model(r->p, U_GOOD, "a/b", body, strlen(body)),
			 -EINVAL);
}

static void test_vanish_and_return(void **state)
{
	struct rig *r = *state;
	struct vw_publish_vm_stats st;
	char c;

	vm_run(&r->vms[0], 0, 100); /* 100 J */
	rig_round(r);
	/* Gone: closed at once (the peer sees EOF), counters kept. */
	assert_int_equal(vw_test_publish_update(r->p, NULL, 0), 0);
	assert_int_equal(vw_publisher_tick(r->p, r->now + 1, NULL), 0);
	assert_int_equal(recv(r->peers[0].cfd, &c, 1, MSG_DONTWAIT), 0);
	assert_int_equal(vw_publisher_vm_stats(r->p, U_GOOD, &st), 0);
	assert_false(st.connected);
	assert_int_equal(vw_publisher_bytes_held(r->p), 0);
	close(r->peers[0].cfd);
	r->peers[0].cfd = -1;
	/* Back with the source still counting: no reset, no double count. */
	vm_run(&r->vms[0], 0, 30);
	rig_round(r);
	assert_int_equal(last_zone(&r->peers[0], VW_ZONE_PACKAGE)->active_uj, 130000000);
	/* Back again later: still continues. */
	assert_int_equal(vw_test_publish_update(r->p, NULL, 0), 0);
	assert_int_equal(vw_publisher_tick(r->p, r->now + 1, NULL), 0);
	peer_read(&r->peers[0], SIZE_MAX, r->now + 1);
	assert_int_equal(r->peers[0].cfd, -1); /* EOF seen */
	r->vms[0].zones[0].active_uj = 5000000;
	rig_round(r);
	assert_int_equal(last_zone(&r->peers[0], VW_ZONE_PACKAGE)->active_uj, 135000000);
	assert_int_equal(r->peers[0].connections, 3);
	assert_int_equal(r->peers[0].resync_bad, 0);
}

/* The first VM's round at 100 W, its guest's acceptance state then in *saved (optional); then
 * saved (virsh save): its QEMU exits, a round passes without it. */
static void rig_saved(struct rig *r, struct vw_proto_rx *saved)
{
	struct peer *pe = &r->peers[0];

	vm_run(&r->vms[0], 0, 100);
	rig_round(r);
	if (saved)
		*saved = pe->rx;
	assert_int_equal(vw_test_publish_update(r->p, NULL, 0), 0);
	assert_int_equal(vw_publisher_tick(r->p, r->now + 1, NULL), 0);
	peer_read(pe, SIZE_MAX, r->now + 1);
	assert_int_equal(pe->cfd, -1); /* EOF seen */
	r->now = vw_publisher_next_due(r->p);
	assert_int_equal(vw_publisher_tick(r->p, r->now, NULL), 0);
}

/*
 * A VM restored from a save (virsh save, virsh restore): its QEMU gone for a round, then a new
 * one under the same UUID. Its frame goes out at the tick after the update that lists it again,
 * not at the next round (up to a period later: the restored guest's clock runs on from its last
 * frame, and it went stale to its model before the round came, tests/e2e/lifecycle.py). The
 * restored guest, its acceptance state the one it was saved with, accepts it (a seq newer than
 * any it saw, the energy continued) and the round's frame after it.
 */
static void test_restored_vm_at_once(void **state)
{
	struct rig *r = *state;
	struct peer *pe = &r->peers[0];
	struct vw_proto_rx saved;
	uint64_t due, seq;
	size_t n;

	rig_saved(r, &saved);
	/* Restored, 30 J more, a tenth of a period after that round. */
	due = vw_publisher_next_due(r->p);
	r->now += SEC / 10;
	assert_true(r->now < due);
	vm_run(&r->vms[0], 0, 30);
	assert_int_equal(vw_test_publish_update(r->p, r->vms, 1), 0);
	n = pe->n;
	for (int i = 0; i < 3 && pe->n == n; i++) {
		assert_int_equal(vw_publisher_tick(r->p, r->now, NULL), 0);
		if (pe->cfd < 0) {
			peer_accept(pe);
			if (pe->cfd >= 0)
				pe->rx = saved; /* the guest's memory, restored */
		}
		peer_read(pe, SIZE_MAX, r->now);
	}
	assert_int_equal(pe->n, n + 1);
	assert_true(pe->rx.last.seq > saved.last.seq);
	assert_int_equal(last_zone(pe, VW_ZONE_PACKAGE)->active_uj, 130000000);
	/* The round, on its schedule: a newer seq again. */
	seq = pe->rx.last.seq;
	vm_run(&r->vms[0], 0, 1);
	r->now = due;
	assert_int_equal(vw_test_publish_update(r->p, r->vms, 1), 0);
	assert_int_equal(vw_publisher_tick(r->p, r->now, NULL), 0);
	peer_read(pe, SIZE_MAX, r->now);
	assert_int_equal(pe->n, n + 2);
	assert_true(pe->rx.last.seq > seq);
	assert_int_equal(last_zone(pe, VW_ZONE_PACKAGE)->active_uj, 131000000);
	assert_int_equal(pe->connections, 2);
	assert_int_equal(pe->resync_bad, 0);
}

/*
 * A VM restored as the daemon lists it: its new QEMU first (the process scan's, with no channel:
 * libvirt's answer has not come), its channel a listing later, between two rounds. The channel,
 * new, is connected at the next tick and the guest gets its frame then, not at the round (up to
 * a period later; the restored guest went stale meanwhile, tests/e2e/lifecycle.py): whether the
 * channel comes with an update() (the next interval's) or with vw_publisher_set_channel()
 * (libvirt's answer, mid-interval, no energy with it).
 */
static void restored_channel_later(struct rig *r, bool mid_interval)
{
	struct peer *pe = &r->peers[0];
	uint64_t due;
	size_t n;
	bool pub;

	rig_saved(r, NULL);
	due = vw_publisher_next_due(r->p);
	/* Restored: listed by its QEMU alone; its frame at once has no channel to go to. */
	r->now += SEC / 10;
	vm_run(&r->vms[0], 0, 30);
	r->vms[0].channel_path[0] = '\0';
	assert_int_equal(vw_test_publish_update(r->p, r->vms, 1), 0);
	assert_int_equal(vw_publisher_tick(r->p, r->now, &pub), 0);
	assert_false(pub);
	peer_accept(pe);
	assert_int_equal(pe->cfd, -1);
	n = pe->n;
	/* Its channel, a listing later, the round still ahead. */
	r->now += SEC / 10;
	assert_true(r->now < due);
	assert_int_equal(vw_publisher_next_due(r->p), due); /* nothing to do before it, yet */
	snprintf(r->vms[0].channel_path, sizeof(r->vms[0].channel_path), "%s", pe->path);
	if (mid_interval)
		assert_int_equal(vw_publisher_set_channel(r->p, U_GOOD, pe->path,
							  (uint32_t)getpid(), 0),
				 0);
	else
		assert_int_equal(vw_test_publish_update(r->p, r->vms, 1), 0);
	assert_true(vw_publisher_next_due(r->p) <= r->now); /* a tick now, for the channel */
	for (int i = 0; i < 3 && pe->n == n; i++) {
		assert_int_equal(vw_publisher_tick(r->p, r->now, &pub), 0);
		assert_false(pub); /* no round: the VM's own frame */
		peer_accept(pe);
		peer_read(pe, SIZE_MAX, r->now);
	}
	assert_int_equal(pe->n, n + 1);
	assert_int_equal(last_zone(pe, VW_ZONE_PACKAGE)->active_uj, 130000000);
	assert_int_equal(pe->connections, 2);
	assert_int_equal(pe->resync_bad, 0);
	/* The round, on its schedule: the same energy, a newer seq; the channel is kept. */
	r->now = due;
	assert_int_equal(vw_test_publish_update(r->p, r->vms, 1), 0);
	assert_int_equal(vw_publisher_tick(r->p, r->now, &pub), 0);
	assert_true(pub);
	peer_read(pe, SIZE_MAX, r->now);
	assert_int_equal(pe->n, n + 2);
	assert_int_equal(last_zone(pe, VW_ZONE_PACKAGE)->active_uj, 130000000);
	assert_int_equal(pe->connections, 2);
}

static void test_restored_channel_at_update(void **state)
{
	restored_channel_later(*state, false);
}

static void test_restored_channel_mid_interval(void **state)
{
	struct rig *r = *state;

	restored_channel_later(r, true);
	/* A VM the publisher does not list: nothing (its update lists it). */
	assert_int_equal(vw_publisher_set_channel(r->p, U_STUCK, r->peers[0].path, 1, 0), -ENOENT);
	assert_int_equal(vw_test_publish_update(r->p, NULL, 0), 0);
	assert_int_equal(vw_publisher_set_channel(r->p, U_GOOD, r->peers[0].path, 1, 0), -ENOENT);
}

/*
 * With no VM the daemon is not woken for rounds that would publish to nobody (next_wake() is
 * "never", next_due() still says when the schedule has one), and the first VM that comes gets
 * its round at once with seq where the schedule had it: the rounds that passed are counted,
 * as a twin ticked at every due time counts them. It was one wake-up more each interval.
 */
static void test_no_vm_no_wakeup(void **state)
{
	struct rig *r = *state;
	struct vw_publisher *twin = new_publisher(1 * SEC, 0.1);
	uint64_t t = T0;
	bool pub;

	assert_int_equal(vw_publisher_next_wake(r->p), UINT64_MAX);
	assert_int_equal(vw_publisher_tick(r->p, T0, &pub), 0);
	assert_true(pub);
	assert_int_equal(vw_publisher_next_wake(r->p), UINT64_MAX);
	assert_true(vw_publisher_next_due(r->p) < T0 + 2 * SEC);
	/* the twin, ticked at every due time for 60 s */
	while (t <= T0 + 60 * SEC) {
		assert_int_equal(vw_publisher_tick(twin, t, &pub), 0);
		assert_true(pub);
		t = vw_publisher_next_due(twin);
	}
	/* a VM at T0 + 60 s: woken at once, its first round numbered as the twin's last */
	r->now = T0 + 60 * SEC;
	vm_run(&r->vms[0], 0, 10);
	assert_int_equal(vw_test_publish_update(r->p, r->vms, 1), 0);
	assert_true(vw_publisher_next_wake(r->p) <= r->now);
	assert_int_equal(vw_publisher_tick(r->p, r->now, &pub), 0);
	assert_true(pub);
	if (vw_publisher_seq(r->p) + 1 < vw_publisher_seq(twin) ||
	    vw_publisher_seq(r->p) > vw_publisher_seq(twin) + 1)
		fail_msg("seq %" PRIu64 " after 60 s without a VM; the schedule had %" PRIu64,
			 vw_publisher_seq(r->p), vw_publisher_seq(twin));
	peer_accept(&r->peers[0]);
	peer_read(&r->peers[0], SIZE_MAX, r->now);
	assert_int_equal(r->peers[0].rx.last.seq, vw_publisher_seq(r->p));
	/* with the VM, its rounds wake the daemon; a late tick is one round, none skipped */
	assert_true(vw_publisher_next_wake(r->p) <= r->now + 2 * SEC);
	{
		uint64_t seq = vw_publisher_seq(r->p);

		assert_int_equal(vw_publisher_tick(r->p, r->now + 5 * SEC, &pub), 0);
		assert_true(pub);
		assert_int_equal(vw_publisher_seq(r->p), seq + 1);
	}
	/* gone again: woken only when its retention (1 h) ends, then forgotten on time */
	assert_int_equal(vw_test_publish_update(r->p, NULL, 0), 0);
	{
		uint64_t w = vw_publisher_next_wake(r->p);
		struct vw_publish_vm_stats st;

		assert_int_equal(w, r->now + 5 * SEC + 3600 * SEC);
		assert_int_equal(vw_publisher_tick(r->p, w, NULL), 0);
		assert_int_equal(vw_test_publish_update(r->p, NULL, 0), 0);
		assert_true(vw_publisher_vm_stats(r->p, U_GOOD, &st) < 0);
	}
	assert_int_equal(vw_publisher_next_wake(r->p), UINT64_MAX);
	vw_publisher_free(twin);
}

static void test_invalid_uuid(void **state)
{
	static const char *const bad[] = {
		"../../../../etc/x", "11111111-1111-4111-8111-11111111111/",
		"11111111-1111-4111-8111-1111111111..", "11111111-1111-4111-8111-11111111111A",
		"", "11111111-1111-4111-8111-11111111111g", "11111111_1111-4111-8111-111111111111",
	};
	struct vw_vm_energy vms[ARRAY_SIZE(bad) + 1];
	struct vw_publisher *p = new_publisher(1 * SEC, 0.1);
	struct vw_publish_vm_stats st;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		vm_set(&vms[i], "", NULL);
		snprintf(vms[i].uuid, sizeof(vms[i].uuid), "%s", bad[i]);
	}
	vm_set(&vms[ARRAY_SIZE(bad)], U_GOOD, NULL);
	assert_int_equal(vw_test_publish_update(p, vms, ARRAY_SIZE(vms)), -EINVAL);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		assert_int_equal(vw_publisher_vm_stats(p, vms[i].uuid, &st), -ENOENT);
	assert_int_equal(vw_publisher_vm_stats(p, U_GOOD, &st), 0);
	vw_publisher_free(p);
}

/* The per-VM families' exact text: each row's vm_id (escaped once a VM and family) as it was
 * escaped row by row; a VM's five failure reasons and four states in order. */
static void test_render_text(void **state)
{
#define ROWS(u)                                                                                    \
	"virtwatt_vm_passthrough_failures_total{vm_id=\"" u "\",reason=\"connect\",node_name=\"n\\\"1\"} 0\n" \
	"virtwatt_vm_passthrough_failures_total{vm_id=\"" u "\",reason=\"send\",node_name=\"n\\\"1\"} 0\n" \
	"virtwatt_vm_passthrough_failures_total{vm_id=\"" u "\",reason=\"share_write\",node_name=\"n\\\"1\"} 0\n" \
	"virtwatt_vm_passthrough_failures_total{vm_id=\"" u "\",reason=\"lock_refused\",node_name=\"n\\\"1\"} 0\n" \
	"virtwatt_vm_passthrough_failures_total{vm_id=\"" u "\",reason=\"share_timeout\",node_name=\"n\\\"1\"} 0\n"
#define STATES(u)                                                                                  \
	"virtwatt_vm_passthrough_channel_state{vm_id=\"" u "\",state=\"connected\",node_name=\"n\\\"1\"} 0\n" \
	"virtwatt_vm_passthrough_channel_state{vm_id=\"" u "\",state=\"disconnected\",node_name=\"n\\\"1\"} 0\n" \
	"virtwatt_vm_passthrough_channel_state{vm_id=\"" u "\",state=\"absent\",node_name=\"n\\\"1\"} 1\n" \
	"virtwatt_vm_passthrough_channel_state{vm_id=\"" u "\",state=\"not_published\",node_name=\"n\\\"1\"} 0\n"
	struct vw_vm_energy vms[2];
	struct vw_publisher *p = new_publisher(1 * SEC, 0.1);
	struct vw_prom_writer *w = vw_prom_writer_new(VW_PROM_TEXT_0_0_4, 0);
	char *text = NULL;
	size_t len;

	(void)state;
	assert_non_null(w);
	vm_set(&vms[0], U_GOOD, NULL);
	vm_set(&vms[1], U_STUCK, NULL);
	assert_int_equal(vw_test_publish_update(p, vms, 2), 0);
	assert_int_equal(vw_publisher_render(p, w, "n\"1"), 0);
	assert_int_equal(vw_prom_finish(w, &text, &len), 0);
	assert_non_null(strstr(text, ROWS(U_GOOD) ROWS(U_STUCK)));
	assert_non_null(strstr(text, STATES(U_GOOD) STATES(U_STUCK)));
	assert_non_null(strstr(text, "virtwatt_vm_passthrough_last_success_timestamp_seconds{vm_id=\"" U_GOOD
				     "\",node_name=\"n\\\"1\"} 0\n"));
	free(text);
	vw_prom_writer_free(w);
	vw_publisher_free(p);
#undef ROWS
#undef STATES
}

static void test_guest_bytes(void **state)
{
	struct rig *r = *state;
	struct vw_publish_vm_stats st;
	char hello[VW_PROTO_MAX_HELLO], junk[65536];
	size_t len;
	uint64_t t1;

	vm_run(&r->vms[0], 1, 1);
	rig_round(r);
	assert_int_equal(vw_proto_encode_hello(&(struct vw_guest_hello){ .version = 1, .ack_seq = 1 },
					       hello, sizeof(hello), &len), 0);
	assert_int_equal(send(r->peers[0].cfd, hello, len, 0), (ssize_t)len);
	assert_int_equal(send(r->peers[0].cfd, "{\"v\":1,\"hello\":\"x\"}\n", 20, 0), 20);
	memset(junk, 'x', sizeof(junk)); /* one endless line: dropped, never buffered */
	for (int i = 0; i < 8; i++)
		(void)send(r->peers[0].cfd, junk, sizeof(junk), MSG_DONTWAIT);
	t1 = real_ns();
	for (int i = 0; i < 40; i++)
		assert_int_equal(vw_publisher_tick(r->p, r->now + (uint64_t)i, NULL), 0);
	assert_true(real_ns() - t1 < 2 * SEC);
	assert_int_equal(vw_publisher_vm_stats(r->p, U_GOOD, &st), 0);
	assert_true(st.connected);
	assert_int_equal(st.hellos, 1);
	assert_int_equal(st.ack_seq, 1);
	assert_int_equal(st.rx_bad, 1);
	assert_true(st.rx_bytes > 20 + len);
	/* Guest bytes never make the host publish: still one round. */
	assert_int_equal(vw_publisher_seq(r->p), 1);
}

struct flooder {
	int fd;
	volatile bool stop;
	uint64_t sent;
};

/* A guest writing to its port as fast as QEMU takes it: the host's socket is never empty. */
static void *flood(void *arg)
{
	struct flooder *f = arg;
	static char junk[65536];

	memset(junk, 'x', sizeof(junk));
	while (!f->stop) {
		ssize_t n = send(f->fd, junk, sizeof(junk), MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n > 0)
			f->sent += (uint64_t)n;
		else if (n < 0 && errno != EAGAIN)
			break;
		else
			usleep(100);
	}
	return NULL;
}

/*
 * A guest that floods its channel, against the host's loop as the daemon runs it: poll the
 * publisher's fd until its next round, tick when woken. The guest's bytes are read up to a budget
 * a round (64 KiB), then not until the next round: the old code read all it sent, 64 KiB a
 * wake-up, and the loop woke as fast as the guest wrote (a host CPU spent on one guest).
 */
static void test_flooding_guest(void **state)
{
	struct rig *r = *state;
	struct vw_publish_vm_stats st0, st;
	struct flooder f = { .fd = -1 };
	uint64_t t0, wakes = 0, cpu0, cpu;
	struct timespec ts;
	pthread_t th;

	vm_run(&r->vms[0], 1, 1);
	rig_round(r);
	f.fd = r->peers[0].cfd;
	assert_true(f.fd >= 0);
	assert_int_equal(setsockopt(f.fd, SOL_SOCKET, SO_SNDBUF, &(int){ 1 << 20 }, sizeof(int)), 0);
	assert_int_equal(vw_publisher_vm_stats(r->p, U_GOOD, &st0), 0);
	assert_int_equal(pthread_create(&th, NULL, flood, &f), 0);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	cpu0 = (uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec;
	t0 = real_ns();
	while (real_ns() - t0 < SEC / 2) { /* half a second, within one round (no round due) */
		struct pollfd pfd = { .fd = vw_publisher_fd(r->p), .events = POLLIN };

		if (poll(&pfd, 1, 50) > 0) {
			wakes++;
			assert_int_equal(vw_publisher_tick(r->p, r->now, NULL), 0);
		}
	}
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	cpu = (uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec - cpu0;
	f.stop = true;
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(vw_publisher_vm_stats(r->p, U_GOOD, &st), 0);
	print_message("# flooding guest: sent %" PRIu64 " B in 0.5 s; host read %" PRIu64
		      " B, woke %" PRIu64 " times, %.1f ms of CPU\n",
		      f.sent, st.rx_bytes - st0.rx_bytes, wakes, (double)cpu / 1e6);
	assert_true(st.connected);
	assert_true(st.rx_bytes - st0.rx_bytes <= 64 * 1024);
	assert_true(wakes <= 16); /* a wake-up a send of the guest's until the budget is spent */
	/* The next round reads again (a hello after a flood is still seen), and publishes. */
	rig_round(r);
	assert_int_equal(vw_publisher_tick(r->p, r->now, NULL), 0);
	assert_int_equal(vw_publisher_vm_stats(r->p, U_GOOD, &st0), 0);
	assert_true(st0.rx_bytes > st.rx_bytes);
	assert_true(st0.connected);
	assert_int_equal(r->peers[0].rx.last.seq, vw_publisher_seq(r->p));
	/* A guest that closes while over its budget is seen gone: what it left in the socket (at
	 * most its send buffer, 2 MiB here) is read to the end, 64 KiB a wake-up. */
	close(r->peers[0].cfd);
	r->peers[0].cfd = -1;
	for (int i = 0; i < 100 && st0.connected; i++) {
		struct pollfd pfd = { .fd = vw_publisher_fd(r->p), .events = POLLIN };

		(void)poll(&pfd, 1, 50);
		assert_int_equal(vw_publisher_tick(r->p, r->now, NULL), 0);
		assert_int_equal(vw_publisher_vm_stats(r->p, U_GOOD, &st0), 0);
	}
	assert_false(st0.connected);
}

static void test_backoff_and_path_change(void **state)
{
	struct rig *r = *state;
	struct vw_publish_vm_stats st;
	uint64_t t;

	snprintf(r->vms[0].channel_path, sizeof(r->vms[0].channel_path), "%.200s/other.sock", r->dir);
	vm_run(&r->vms[0], 1, 1);
	assert_int_equal(vw_test_publish_update(r->p, r->vms, 1), 0);
	/* Nobody listens there: retried with backoff, not on every tick. */
	for (t = 0; t < 60 * SEC; t += 10 * MSEC)
		assert_int_equal(vw_publisher_tick(r->p, T0 + t, NULL), 0);
	assert_int_equal(vw_publisher_vm_stats(r->p, U_GOOD, &st), 0);
	assert_false(st.connected);
	assert_true(st.connect_errors >= 5 && st.connect_errors <= 12);
	assert_true(st.bytes_held <= 2 * VW_PROTO_MAX_FRAME);
	assert_true(st.replaced > 0);
	/* The VM's domain XML now names the listening socket: reconnected at once. */
	snprintf(r->vms[0].channel_path, sizeof(r->vms[0].channel_path), "%s", r->peers[0].path);
	assert_int_equal(vw_test_publish_update(r->p, r->vms, 1), 0);
	assert_true(vw_publisher_next_due(r->p) <= T0 + t);
	assert_int_equal(vw_publisher_tick(r->p, T0 + t, NULL), 0);
	peer_accept(&r->peers[0]);
	peer_read(&r->peers[0], SIZE_MAX, T0 + t);
	assert_int_equal(r->peers[0].connections, 1);
	assert_int_equal(r->peers[0].resync_bad, 0);
	/* The newest frame, sent on connecting rather than a period later. */
	assert_int_equal(r->peers[0].rx.accepted, 1);
	assert_int_equal(r->peers[0].rx.last.seq, vw_publisher_seq(r->p));
}

/* One round: the VM's next second, the update, a tick at the next due time, the peer's side. */
static uint64_t round_at(struct vw_publisher *p, struct vw_vm_energy *vm, struct peer *pe,
			 uint64_t t)
{
	bool pub;

	vm_run(vm, 5, 5);
	t = VW_MAX(t + SEC, vw_publisher_next_due(p));
	assert_int_equal(vw_test_publish_update(p, vm, 1), 0);
	assert_int_equal(vw_publisher_tick(p, t, &pub), 0);
	assert_true(pub);
	peer_accept(pe);
	peer_read(pe, SIZE_MAX, t);
	/* a connect that completed after the round: its frames go out on the next tick */
	assert_int_equal(vw_publisher_tick(p, t + 1, NULL), 0);
	peer_accept(pe);
	peer_read(pe, SIZE_MAX, t);
	return t;
}

/*
 * Steady rounds check no lock file's or socket's identity (inotify reported nothing in their
 * directories); a socket replaced under a live connection and a lock file removed are still
 * seen in the next round.
 */
static void test_identity_watched(void **state)
{
	char *dir = vw_fixture_mkdtemp("pubwatch"), locks[600];
	struct vw_publish_opts o = { .period_ns = SEC, .seed = 42, .epoch = 7, .source = "rapl",
				     .lock_dir = locks };
	struct vw_publish_stats ps;
	struct vw_publish_vm_stats st;
	struct vw_vm_energy vm;
	struct vw_publisher *p;
	struct peer pe;
	uint64_t t = T0, c0;
	int old_cfd;

	(void)state;
	assert_non_null(dir);
	snprintf(locks, sizeof(locks), "%s/locks", dir);
	p = vw_publisher_new(&o);
	assert_non_null(p);
	peer_init(&pe, dir, "vm", U_GOOD);
	vm_set(&vm, U_GOOD, pe.path);
	for (int i = 0; i < 3; i++)
		t = round_at(p, &vm, &pe, t);
	assert_int_equal(pe.connections, 1);
	vw_publisher_stats(p, &ps);
	c0 = ps.identity_checks;
	for (int i = 0; i < 5; i++)
		t = round_at(p, &vm, &pe, t);
	vw_publisher_stats(p, &ps);
	assert_int_equal(ps.identity_checks, c0); /* nothing happened: nothing checked */
	assert_int_equal(pe.n, 8);

	/* QEMU's socket replaced while the old connection stays open (a second QEMU bound the
	 * path): the next round checks, and the publisher connects to the new one. */
	old_cfd = pe.cfd;
	pe.cfd = -1;
	close(pe.lfd);
	peer_listen(&pe);
	t = round_at(p, &vm, &pe, t);
	t = round_at(p, &vm, &pe, t);
	assert_int_equal(pe.connections, 2);
	assert_true(pe.cfd >= 0);
	close(old_cfd);

	/* The lock file removed: not published until the lock is ours again. */
	vw_publisher_stats(p, &ps);
	c0 = ps.identity_checks;
	snprintf(locks + strlen(locks), sizeof(locks) - strlen(locks), "/%s.lock", U_GOOD);
	assert_int_equal(unlink(locks), 0);
	vm_run(&vm, 5, 5);
	t = VW_MAX(t + SEC, vw_publisher_next_due(p));
	assert_int_equal(vw_test_publish_update(p, &vm, 1), 0);
	assert_int_equal(vw_publisher_tick(p, t, NULL), 0);
	assert_int_equal(vw_publisher_vm_stats(p, U_GOOD, &st), 0);
	assert_false(st.locked);
	vw_publisher_stats(p, &ps);
	assert_true(ps.identity_checks > c0);

	vw_publisher_free(p);
	peer_free(&pe);
	vw_fixture_rm(dir);
}

/*
 * A guest that stops reading: once its socket refused a send, no round writes to it until epoll
 * reports room; when it reads again it gets whole frames, the newest last, nothing spliced.
 */
static void test_blocked_guest_catches_up(void **state)
{
	char *dir = vw_fixture_mkdtemp("pubblock");
	struct vw_publish_vm_stats st;
	struct vw_publisher *p = new_publisher(SEC, 0.1);
	struct vw_vm_energy vm;
	struct peer pe;
	uint64_t t = T0, sent;
	bool pub;

	(void)state;
	assert_non_null(dir);
	peer_init(&pe, dir, "vm", U_GOOD);
	vm_set(&vm, U_GOOD, pe.path);
	for (int i = 0; i < 200; i++) { /* never read: the socket fills */
		vm_run(&vm, 5, 5);
		t = VW_MAX(t + SEC, vw_publisher_next_due(p));
		assert_int_equal(vw_test_publish_update(p, &vm, 1), 0);
		assert_int_equal(vw_publisher_tick(p, t, &pub), 0);
		peer_accept(&pe);
	}
	assert_int_equal(vw_publisher_vm_stats(p, U_GOOD, &st), 0);
	assert_true(st.sent < st.published);
	/* refused once: the rounds after wait for room, no send() each (once more at most: a
	 * partly written frame's rest) */
	assert_true(st.sends_refused >= 1 && st.sends_refused <= 2);
	sent = st.sent;
	for (int i = 0; i < 5; i++) { /* still full: nothing more goes out */
		t = VW_MAX(t + SEC, vw_publisher_next_due(p));
		assert_int_equal(vw_publisher_tick(p, t, &pub), 0);
	}
	assert_int_equal(vw_publisher_vm_stats(p, U_GOOD, &st), 0);
	assert_int_equal(st.sent, sent);
	/* It reads again: every line whole (the peer fails on any spliced one), the newest last. */
	for (int i = 0; i < 20; i++) {
		peer_read(&pe, SIZE_MAX, t);
		assert_int_equal(vw_publisher_tick(p, t + (uint64_t)i, NULL), 0);
	}
	peer_read(&pe, SIZE_MAX, t);
	assert_true(pe.n > 0);
	assert_int_equal(pe.rx.last.seq, vw_publisher_seq(p));
	assert_int_equal(pe.resync_bad, 0);
	vw_publisher_free(p);
	peer_free(&pe);
	vw_fixture_rm(dir);
}

/* ---- Whose socket: a compromised QEMU's socket or link where another VM's is ---- */

#define U_A "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"
#define NOBODY 65534

/* Five seconds of one VM on p (a round a second); its stats. */
static void run_one(struct vw_publisher *p, struct vw_vm_energy *vm,
		    struct vw_publish_vm_stats *st)
{
	static uint64_t t0 = T0;

	for (uint64_t t = 0; t <= 5 * SEC; t += 100 * MSEC) {
		if (t % SEC == 0) {
			vm_run(vm, 1.0, 1.0);
			assert_int_equal(vw_test_publish_update(p, vm, 1), 0);
		}
		assert_int_equal(vw_publisher_tick(p, t0 + t, NULL), 0);
	}
	t0 += 60 * SEC; /* past any backoff: the next run retries at once */
	assert_int_equal(vw_publisher_vm_stats(p, vm->uuid, st), 0);
}

static pid_t peer_child = -1;

/* The child of listen_as_nobody(), whatever the test did. */
static int kill_peer_child(void **state)
{
	(void)state;
	if (peer_child > 0) {
		kill(peer_child, SIGKILL);
		(void)waitpid(peer_child, NULL, 0);
	}
	peer_child = -1;
	return 0;
}

/* A listener at path in a child running as NOBODY (a compromised QEMU: the qemu user); its
 * pid. The child stays until killed (kill_peer_child), or this process dies. Its backlog is
 * deep: it takes connections one at a time, and on a loaded machine it may not run between
 * the refused connects a test makes (a backlog of 4 filled, and the connect that was to
 * succeed got EAGAIN: 6 of 12 runs at load 6.7). */
static pid_t listen_as_nobody_at(const char *path, pid_t at);

static pid_t listen_as_nobody(const char *path)
{
	return listen_as_nobody_at(path, 0);
}

/* The same with the child's PID exactly at (> 0: vw_fixture_fork_at(), a PID reused on
 * purpose; the caller checked vw_fixture_fork_at_probe()). Its child keeps to plain system
 * calls (setres[ug]id through syscall(): glibc's would signal the threads of this process). */
static pid_t listen_as_nobody_at(const char *path, pid_t at)
{
	int ready[2];
	char c;
	pid_t pid;

	assert_int_equal(pipe(ready), 0);
	pid = at > 0 ? vw_fixture_fork_at(at) : fork();
	if (at > 0 && pid < 0)
		fail_msg("a child at PID %d: %s (its last holder not reaped?)", (int)at,
			 strerror(-pid));
	assert_true(pid >= 0);
	if (pid == 0) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		int fd;

		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 ||
		    syscall(SYS_setresgid, NOBODY, NOBODY, NOBODY) < 0 ||
		    syscall(SYS_setresuid, NOBODY, NOBODY, NOBODY) < 0)
			_exit(1);
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		memcpy(sa.sun_path, path, strlen(path));
		if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 128) < 0)
			_exit(2);
		if (write(ready[1], "x", 1) != 1)
			_exit(3);
		for (;;) { /* takes what comes (a backlog left full would refuse connects) */
			char buf[4096];
			int cfd = accept(fd, NULL, NULL);

			while (cfd >= 0 && read(cfd, buf, sizeof(buf)) > 0)
				;
			if (cfd >= 0)
				close(cfd);
		}
	}
	peer_child = pid;
	close(ready[1]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	return pid;
}

/* A PID no process has now (a child that exited and was reaped). */
static pid_t gone_pid(void)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	return pid;
}

/* A peer test's folder, open to NOBODY (its listener binds there), and VM A's socket path in it. */
struct peer_dir {
	char *dir;
	char path[256];
};

static void peer_dir_init(struct peer_dir *d)
{
	d->dir = vw_fixture_mkdtemp("peer");
	assert_non_null(d->dir);
	assert_int_equal(chmod(d->dir, 0777), 0);
	snprintf(d->path, sizeof(d->path), "%s/a.sock", d->dir);
}

/* The listener's child killed, the socket and the folder gone. */
static void peer_dir_fini(struct peer_dir *d)
{
	kill_peer_child(NULL);
	unlink(d->path);
	vw_fixture_rm(d->dir);
}

/* A run whose listener was refused as a stranger's: never connected, nothing sent, counted. */
static void assert_peer_refused(const struct vw_publish_vm_stats *st)
{
	assert_int_equal(st->connects, 0);
	assert_int_equal(st->sent, 0);
	assert_true(st->peer_rejected >= 1);
}

/* Another user's listener where VM A's socket is: refused, counted, not written to; the same
 * listener is taken once it is A's QEMU (a QEMU that listens itself, as the qemu user). While
 * A's QEMU is gone (A restarting, its list not updated yet) it is refused uncounted. */
static void test_peer_other_user(void **state)
{
	struct peer_dir d;
	struct vw_vm_energy vm;
	struct vw_publish_vm_stats st;
	struct vw_publish_stats ps;
	struct vw_publisher *p = new_publisher(SEC, 0.1);
	pid_t child;

	(void)state;
	peer_dir_init(&d);
	child = listen_as_nobody(d.path);
	vm_set(&vm, U_A, d.path);
	vm.qemu_pid = (uint32_t)gone_pid(); /* its QEMU exited: not a stranger's socket yet */
	run_one(p, &vm, &st);
	assert_int_equal(st.connects, 0);
	assert_true(st.connect_errors >= 1);
	assert_int_equal(st.peer_rejected, 0);

	vm.qemu_pid = (uint32_t)getpid(); /* its QEMU: this process, alive, not the child */
	run_one(p, &vm, &st);
	assert_peer_refused(&st);
	assert_true(st.connect_errors >= st.peer_rejected);
	vw_publisher_stats(p, &ps);
	assert_int_equal(ps.peer_rejected, st.peer_rejected);
	{
		struct vw_prom_writer *w = vw_prom_writer_new(VW_PROM_TEXT_0_0_4, 0);
		char *text = NULL, want[128];
		size_t len;

		assert_non_null(w);
		assert_int_equal(vw_publisher_render(p, w, "n"), 0);
		assert_int_equal(vw_prom_finish(w, &text, &len), 0);
		snprintf(want, sizeof(want),
			 "\nvirtwatt_passthrough_channel_peer_rejected_total{node_name=\"n\"} %" PRIu64
			 "\n", st.peer_rejected);
		assert_non_null(strstr(text, want));
		free(text);
		vw_prom_writer_free(w);
	}

	vm.qemu_pid = (uint32_t)child; /* now it is A's QEMU */
	run_one(p, &vm, &st);
	assert_int_equal(st.connects, 1);
	assert_true(st.sent >= 1);

	vw_publisher_free(p);
	peer_dir_fini(&d);
}

/* /proc/PID/stat starttime of pid (ticks since boot). */
static uint64_t start_of(pid_t pid)
{
	char path[64], buf[1024], comm[VW_COMM_LEN];
	uint64_t ticks, start = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	assert_true(vw_read_file_at(AT_FDCWD, path, buf, sizeof(buf), NULL) >= 0);
	assert_int_equal(vw_procfs_parse_pid_stat(buf, comm, &ticks, &start), 0);
	return start;
}

/* Skip (fail under CI) where a PID cannot be reused on purpose: vw_fixture_fork_at(). */
#define REQUIRE_FORK_AT()                                                                          \
	do {                                                                                       \
		int _e = vw_fixture_fork_at_probe();                                               \
		REQUIRE(_e == 0, "a child at a chosen PID needs clone3() with set_tid (root, "     \
				 "Linux 5.5): %s",                                                 \
			strerror(-_e));                                                            \
	} while (0)

/*
 * Adversarial: VM A's QEMU exits and, before the list says so, its PID is taken by a hostile
 * process (the qemu user's, forking until it gets it) listening where A's socket is: it passed
 * SO_PEERCRED's PID rule and got A's frames. Its starttime is not the listed QEMU's: refused,
 * counted; the same listener once the list names it (its own starttime) is taken. The PID is
 * reused on purpose (vw_fixture_fork_at(): root); skipped where it cannot be.
 */
static void test_peer_pid_reused(void **state)
{
	struct peer_dir d;
	struct vw_vm_energy vm;
	struct vw_publish_vm_stats st;
	struct vw_publisher *p;
	uint64_t qemu_start;
	pid_t qemu, child = -1;

	(void)state;
	REQUIRE_FORK_AT();
	peer_dir_init(&d);
	qemu = fork(); /* A's QEMU */
	assert_true(qemu >= 0);
	if (qemu == 0) {
		pause();
		_exit(0);
	}
	qemu_start = start_of(qemu);
	usleep(50000); /* starttime is in clock ticks (10 ms): a later start must show */
	kill(qemu, SIGKILL);
	assert_int_equal(waitpid(qemu, NULL, 0), qemu);
	child = listen_as_nobody_at(d.path, qemu);
	assert_int_equal(child, qemu);
	assert_true(start_of(child) != qemu_start);
	p = new_publisher(SEC, 0.1);
	vm_set(&vm, U_A, d.path);
	vm.qemu_pid = (uint32_t)qemu; /* the list not updated yet: the exited QEMU */
	vm.qemu_start_time = qemu_start;
	run_one(p, &vm, &st);
	assert_peer_refused(&st);
	vw_pub_peer_use_ops(&vw_pub_peer_no_pidfd); /* the starttime rule holds without pidfds */
	run_one(p, &vm, &st);
	vw_pub_peer_use_ops(NULL);
	assert_peer_refused(&st);

	vm.qemu_start_time = start_of(child); /* the list names it: a QEMU it is, then */
	run_one(p, &vm, &st);
	assert_int_equal(st.connects, 1);

	vw_publisher_free(p);
	peer_dir_fini(&d);
}

/* A child as NOBODY bound and listening at path hands this process its listening socket
 * (SCM_RIGHTS) and exits; the socket (its peer credentials the child's) and the child's PID,
 * reaped, through ret_pid. Connects need no accept: the backlog holds them. */
static int listen_then_exit(const char *path, pid_t *ret_pid)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 }, c;
	struct iovec iov = { .iov_base = &c, .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			      .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	int sp[2], fd = -1;
	pid_t pid;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		int lfd;

		if (setresgid(NOBODY, NOBODY, NOBODY) < 0 || setresuid(NOBODY, NOBODY, NOBODY) < 0)
			_exit(1);
		lfd = socket(AF_UNIX, SOCK_STREAM, 0);
		memcpy(sa.sun_path, path, strlen(path));
		if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 128) < 0)
			_exit(2);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &lfd, sizeof(int));
		_exit(sendmsg(sp[1], &msg, 0) == 1 ? 0 : 3);
	}
	close(sp[1]);
	if (recvmsg(sp[0], &msg, 0) == 1 && (cm = CMSG_FIRSTHDR(&msg)) && cm->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	close(sp[0]);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	assert_true(fd >= 0);
	*ret_pid = pid;
	return fd;
}

/* Does this kernel give a socket's peer as a pidfd (SO_PEERPIDFD, Linux 6.5)? */
static bool have_peer_pidfd(void)
{
	int sp[2], fd;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
	fd = vw_pub_peer_kernel.pidfd(sp[0]);
	close(sp[0]);
	close(sp[1]);
	if (fd >= 0)
		close(fd);
	return fd >= 0;
}

/*
 * Adversarial: a process of the qemu user listens where VM A's socket is, hands its listening
 * socket to another process and exits; A's QEMU then gets its PID (here on purpose,
 * vw_fixture_fork_at()). SO_PEERCRED gives the PID of the process that listened, a number now
 * A's QEMU's, whose starttime is the one listed: the stranger got A's frames. The listener's pidfd
 * (SO_PEERPIDFD) names the process that listened, exited: refused, counted. Where the kernel
 * has no SO_PEERPIDFD (forced: vw_pub_peer_no_pidfd) it still passes, the limit docs/publish.md
 * states.
 */
static void test_peer_listener_maker_exited(void **state)
{
	struct peer_dir d;
	struct vw_vm_energy vm;
	struct vw_publish_vm_stats st;
	struct vw_publisher *p;
	pid_t maker, qemu = -1;
	int lfd;

	(void)state;
	REQUIRE(geteuid() == 0, "a listener as nobody needs root");
	REQUIRE(have_peer_pidfd(), "SO_PEERPIDFD needs Linux 6.5");
	REQUIRE_FORK_AT();
	peer_dir_init(&d);
	lfd = listen_then_exit(d.path, &maker);
	qemu = vw_fixture_fork_at(maker); /* A's QEMU */
	if (qemu < 0)
		fail_msg("a child at PID %d: %s (its last holder not reaped?)", (int)maker,
			 strerror(-qemu));
	if (qemu == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		pause();
		_exit(0);
	}
	peer_child = qemu;
	assert_int_equal(qemu, maker);
	p = new_publisher(SEC, 0.1);
	vm_set(&vm, U_A, d.path);
	vm.qemu_pid = (uint32_t)qemu;
	vm.qemu_start_time = start_of(qemu);
	run_one(p, &vm, &st);
	assert_peer_refused(&st);

	vw_pub_peer_use_ops(&vw_pub_peer_no_pidfd); /* a kernel before 6.5: the PID alone */
	run_one(p, &vm, &st);
	vw_pub_peer_use_ops(NULL);
	assert_int_equal(st.connects, 1);

	vw_publisher_free(p);
	close(lfd);
	peer_dir_fini(&d);
}

/* A procfs root as a container with the host's /proc bound sees it: self (the connect goes
 * through self/fd/N) and a QEMU, pid, started at 4242 ticks, that is not in this PID namespace. */
static char *qemu_procfs(pid_t pid)
{
	char *proc = vw_fixture_mkdtemp("peerproc");
	char pdir[300], stat[160], self[300];

	assert_non_null(proc);
	snprintf(self, sizeof(self), "%s/self", proc);
	assert_int_equal(symlink("/proc/self", self), 0);
	snprintf(pdir, sizeof(pdir), "%s/%d", proc, (int)pid);
	assert_int_equal(mkdir(pdir, 0755), 0);
	snprintf(stat, sizeof(stat),
		 "%d (qemu-system-x86) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 4242 0 0\n",
		 (int)pid);
	assert_int_equal(vw_fixture_replace(pdir, "stat", stat), 0);
	return proc;
}

/* A daemon in a container with the host's /proc bound and a PID namespace of its own: the
 * list's QEMU PIDs are the host's, alive under the procfs root, absent from the daemon's own
 * namespace. A stranger's listener is still refused, counted and said, not taken for a VM
 * restarting (kill() on the host PID found nothing: refused without a word, every time). */
static void test_peer_qemu_in_procfs_only(void **state)
{
	pid_t host_pid = gone_pid(); /* no process here: the QEMU is another namespace's */
	char *proc = qemu_procfs(host_pid);
	struct peer_dir d;
	struct vw_vm_energy vm;
	struct vw_publish_vm_stats st;
	struct vw_publisher *p;

	(void)state;
	peer_dir_init(&d);
	listen_as_nobody(d.path);
	p = new_publisher_procfs(SEC, 0.1, proc);
	vm_set(&vm, U_A, d.path);
	vm.qemu_pid = (uint32_t)host_pid;
	vm.qemu_start_time = 4242;
	run_one(p, &vm, &st);
	assert_peer_refused(&st);

	vw_publisher_free(p);
	peer_dir_fini(&d);
	vw_fixture_rm(proc);
}

/* The warnings a forked daemon logged (outside_ns_run()). */
static char ns_log[4096];

static void ns_sink(enum vw_log_level level, const char *msg, void *ud)
{
	size_t used = strlen(ns_log);

	(void)ud;
	if (level >= VW_LOG_WARN)
		snprintf(ns_log + used, sizeof(ns_log) - used, "%s\n", msg);
}

/* The daemon's side of test_peer_outside_pid_ns() and test_peer_outside_pid_ns_qemu(), as PID 1
 * of a new PID namespace, its listed QEMU qemu_pid started at qemu_start under proc: 0 when the
 * listener was taken (want_connect) or refused, counted and the warning names the fix; else
 * which check failed. no_pidfd: the fallback of kernels before 6.5 forced. No cmocka asserts
 * in a forked process. */
static int outside_ns_run(const char *proc, const char *path, pid_t qemu_pid, uint64_t qemu_start,
			  bool no_pidfd, bool want_connect)
{
	struct vw_publish_opts o = { .period_ns = SEC, .jitter = 0.1, .seed = 42, .epoch = 7,
				     .source = "rapl", .procfs_root = proc };
	struct vw_publisher *p;
	struct vw_publish_vm_stats st;
	struct vw_vm_energy vm;
	int bad = 0;

	vw_log_set_sink(ns_sink, NULL);
	if (no_pidfd)
		vw_pub_peer_use_ops(&vw_pub_peer_no_pidfd);
	if (getpid() != 1 || !(p = vw_publisher_new(&o)))
		return 10;
	vm_set(&vm, U_A, path);
	vm.qemu_pid = (uint32_t)qemu_pid;
	vm.qemu_start_time = qemu_start;
	for (uint64_t t = 0; t <= 5 * SEC && !bad; t += 100 * MSEC) {
		if (t % SEC == 0) {
			vm_run(&vm, 1.0, 1.0);
			bad = vw_test_publish_update(p, &vm, 1) < 0 ? 11 : 0;
		}
		if (!bad && vw_publisher_tick(p, T0 + t, NULL) < 0)
			bad = 12;
	}
	if (!bad && vw_publisher_vm_stats(p, vm.uuid, &st) < 0)
		bad = 13;
	else if (!bad && want_connect)
		bad = st.connects != 1 || st.sent < 1 || st.peer_rejected != 0 ? 17 : 0;
	else if (!bad && (st.connects != 0 || st.sent != 0))
		bad = 14; /* the stranger got the VM's frames */
	else if (!bad && st.peer_rejected < 1)
		bad = 15;
	else if (!bad && (!strstr(ns_log, "is in a PID namespace this daemon does not see") ||
			  !strstr(ns_log, "hostPID: true") || !strstr(ns_log, "--passthrough.share-root")))
		bad = 16;
	vw_publisher_free(p);
	if (bad)
		fprintf(stderr, "outside_ns_run: %d; logged:\n%s", bad, ns_log);
	return bad;
}

/* outside_ns_run() in a PID namespace of its own; its exit status. */
static int outside_ns(const char *proc, const char *path, pid_t qemu_pid, uint64_t qemu_start,
		      bool no_pidfd, bool want_connect)
{
	pid_t child = fork();
	int status = -1;

	assert_true(child >= 0);
	if (child == 0) {
		pid_t gc;
		int s = -1;

		if (unshare(CLONE_NEWPID) < 0)
			_exit(20);
		gc = fork();
		if (gc == 0)
			_exit(outside_ns_run(proc, path, qemu_pid, qemu_start, no_pidfd,
					     want_connect));
		if (gc < 0 || waitpid(gc, &s, 0) != gc)
			_exit(21);
		_exit(WIFEXITED(s) ? WEXITSTATUS(s) : 22);
	}
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

/*
 * A daemon in a PID namespace of its own (a container without hostPID) with the host's /proc,
 * on a kernel without SO_PEERPIDFD (forced): SO_PEERCRED gives PID 0 for a listener outside
 * it, which can be no VM's QEMU. Refused, counted, and the warning says why and names the fix
 * (the PID-namespace rule of publish_chan.c's check_peer()), not the generic "something else
 * put a socket there". The daemon runs as PID 1 of a new PID namespace (root: CLONE_NEWPID);
 * the listener stays here.
 */
static void test_peer_outside_pid_ns(void **state)
{
	struct peer_dir d;
	char *proc;
	pid_t host_pid;

	(void)state;
	REQUIRE(geteuid() == 0, "a new PID namespace (and a listener as nobody) needs root");
	peer_dir_init(&d);
	host_pid = gone_pid();
	proc = qemu_procfs(host_pid);
	listen_as_nobody(d.path);
	assert_int_equal(outside_ns(proc, d.path, host_pid, 4242, true, false), 0);

	peer_dir_fini(&d);
	vw_fixture_rm(proc);
}

/*
 * The same daemon, its procfs root the host's /proc, where the listener is the VM's QEMU
 * listening itself: SO_PEERCRED's PID is 0 there, but the listener's pidfd (SO_PEERPIDFD), read
 * through <procfs>/self/fdinfo, gives its PID in the host's namespace: the list's. Taken.
 */
static void test_peer_outside_pid_ns_qemu(void **state)
{
	struct peer_dir d;
	pid_t qemu;

	(void)state;
	REQUIRE(geteuid() == 0, "a new PID namespace (and a listener as nobody) needs root");
	REQUIRE(have_peer_pidfd(), "SO_PEERPIDFD needs Linux 6.5");
	peer_dir_init(&d);
	qemu = listen_as_nobody(d.path);
	assert_int_equal(outside_ns("/proc", d.path, qemu, start_of(qemu), false, true), 0);

	peer_dir_fini(&d);
}

/* A VM restarted: its new QEMU listens before the list names it (refused, uncounted, retried
 * with a growing backoff); the update that names it connects at once, not a backoff later. */
static void test_peer_new_qemu_at_once(void **state)
{
	struct peer_dir d;
	struct vw_vm_energy vm;
	struct vw_publish_vm_stats st;
	struct vw_publisher *p = new_publisher(SEC, 0.1);
	uint64_t t;
	pid_t child;

	(void)state;
	peer_dir_init(&d);
	child = listen_as_nobody(d.path);
	vm_set(&vm, U_A, d.path);
	vm.qemu_pid = (uint32_t)gone_pid(); /* the list still names the old QEMU */
	for (t = 0; t < 20 * SEC; t += 100 * MSEC) {
		if (t % SEC == 0)
			assert_int_equal(vw_test_publish_update(p, &vm, 1), 0);
		assert_int_equal(vw_publisher_tick(p, T0 + t, NULL), 0);
	}
	assert_int_equal(vw_publisher_vm_stats(p, U_A, &st), 0);
	assert_int_equal(st.connects, 0);
	assert_true(st.connect_errors >= 4); /* backoff now 8 s or more */
	assert_int_equal(st.peer_rejected, 0);

	vm.qemu_pid = (uint32_t)child; /* the list names the new QEMU */
	assert_int_equal(vw_test_publish_update(p, &vm, 1), 0);
	assert_int_equal(vw_publisher_tick(p, T0 + t, NULL), 0);
	assert_int_equal(vw_publisher_vm_stats(p, U_A, &st), 0);
	assert_int_equal(st.connects, 1);

	vw_publisher_free(p);
	peer_dir_fini(&d);
}

/*
 * A VM restored (or started) whose new QEMU the list names before it listens: its first connect
 * is refused, and the next ones come every 100 ms for 5 s, not after 0.5 s, 1 s, 2 s of backoff
 * (its guest goes stale 3 s after its last frame and counts its model meanwhile).
 */
static void test_new_qemu_eager(void **state)
{
	struct peer_dir d;
	struct vw_vm_energy vm;
	struct vw_publish_vm_stats st;
	struct vw_publisher *p = new_publisher(SEC, 0.1);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	uint64_t t;
	int fd;

	(void)state;
	peer_dir_init(&d);
	vm_set(&vm, U_A, d.path);
	vm.qemu_pid = (uint32_t)gone_pid(); /* the saved VM's QEMU, gone */
	assert_int_equal(vw_publisher_tick(p, T0, NULL), 0);
	for (t = 0; t < 10 * SEC; t += 100 * MSEC) { /* nobody there: backoff grows */
		if (t % SEC == 0)
			assert_int_equal(vw_test_publish_update(p, &vm, 1), 0);
		assert_int_equal(vw_publisher_tick(p, T0 + t, NULL), 0);
	}
	vm.qemu_pid = (uint32_t)getpid(); /* the restored QEMU, listed, not listening yet */
	assert_int_equal(vw_test_publish_update(p, &vm, 1), 0);
	assert_int_equal(vw_publisher_tick(p, T0 + t, NULL), 0);
	assert_int_equal(vw_publisher_vm_stats(p, U_A, &st), 0);
	assert_int_equal(st.connects, 0);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0); /* ... and now it listens */
	assert_true(fd >= 0);
	memcpy(sa.sun_path, d.path, strlen(d.path));
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 8), 0);
	for (uint64_t u = 10 * MSEC; u <= 250 * MSEC; u += 10 * MSEC)
		assert_int_equal(vw_publisher_tick(p, T0 + t + u, NULL), 0);
	assert_int_equal(vw_publisher_vm_stats(p, U_A, &st), 0);
	assert_int_equal(st.connects, 1); /* within 250 ms, not the backoff's 500 ms */

	vw_publisher_free(p);
	close(fd);
	unlink(d.path);
	peer_dir_fini(&d);
}

/* VM A's path a symlink to VM B's socket (B's listener is this process's, root, bound under
 * B's path, and this process is A's QEMU too: only the link gives it away): never followed.
 * A link in a directory is followed only when root's (or ours), so /var/run -> /run works. */
static void test_peer_symlink(void **state)
{
	char *dir = vw_fixture_mkdtemp("peer");
	char a[256], evil[256], ok[256], via[300];
	struct peer b;
	struct vw_vm_energy vm;
	struct vw_publish_vm_stats st;

	(void)state;
	assert_non_null(dir);
	peer_init(&b, dir, "b", U_GOOD);
	snprintf(a, sizeof(a), "%s/a.sock", dir);
	assert_int_equal(symlink(b.path, a), 0);
	for (int procfs = 0; procfs < 2; procfs++) {
		struct vw_publisher *p = new_publisher_procfs(SEC, 0.1, procfs ? "/proc" : NULL);

		vm_set(&vm, U_A, a);
		run_one(p, &vm, &st);
		peer_accept(&b);
		assert_int_equal(st.connects, 0);
		assert_true(st.connect_errors >= 1);
		assert_int_equal(b.connections, 0);
		vw_publisher_free(p);
	}

	/* B's own socket through a directory link the qemu user made: refused; root's: taken. */
	snprintf(evil, sizeof(evil), "%s/evil", dir);
	snprintf(ok, sizeof(ok), "%s/ok", dir);
	assert_int_equal(symlink(".", evil), 0);
	assert_int_equal(lchown(evil, NOBODY, NOBODY), 0);
	assert_int_equal(symlink(dir, ok), 0);
	{
		struct vw_publisher *p = new_publisher(SEC, 0.1);

		snprintf(via, sizeof(via), "%s/b.sock", evil);
		vm_set(&vm, U_GOOD, via);
		run_one(p, &vm, &st);
		peer_accept(&b);
		assert_int_equal(st.connects, 0);
		assert_int_equal(b.connections, 0);
		vw_publisher_free(p);
		p = new_publisher(SEC, 0.1);
		snprintf(via, sizeof(via), "%s/b.sock", ok);
		vm_set(&vm, U_GOOD, via);
		run_one(p, &vm, &st);
		peer_accept(&b);
		assert_int_equal(st.connects, 1);
		assert_int_equal(b.connections, 1);
		vw_publisher_free(p);
	}
	unlink(a);
	unlink(evil);
	unlink(ok);
	peer_free(&b);
	vw_fixture_rm(dir);
}

/* VM A's path a hard link of VM B's socket (libvirt's daemon, root, made both): the listener
 * is root's but bound under B's path, and A's QEMU is another process: refused. A's own root
 * listener bound under A's path is taken. By path too (no procfs root). */
static void test_peer_hardlink(void **state)
{
	char *dir = vw_fixture_mkdtemp("peer");
	struct peer a, b;
	struct vw_vm_energy vm;
	struct vw_publish_vm_stats st;
	struct vw_publisher *p = new_publisher_procfs(SEC, 0.1, NULL);

	(void)state;
	assert_non_null(dir);
	peer_init(&b, dir, "b", U_GOOD);
	peer_init(&a, dir, "a", U_A);
	close(a.lfd); /* A's QEMU is gone; B's socket linked in its place */
	a.lfd = -1;
	assert_int_equal(unlink(a.path), 0);
	assert_int_equal(link(b.path, a.path), 0);
	vm_set(&vm, U_A, a.path);
	vm.qemu_pid = (uint32_t)getppid(); /* A's QEMU: some other process */
	run_one(p, &vm, &st);
	assert_int_equal(st.connects, 0);
	assert_true(st.peer_rejected >= 1);
	/* The connect reached B's backlog (it is checked once made): closed, nothing written. */
	peer_accept(&b);
	peer_read(&b, SIZE_MAX, 0);
	assert_int_equal(b.n_head, 0);
	assert_int_equal(st.sent, 0);

	assert_int_equal(unlink(a.path), 0);
	peer_listen(&a); /* A's socket, root's, bound under A's path */
	run_one(p, &vm, &st);
	peer_accept(&a);
	assert_int_equal(st.connects, 1);
	assert_int_equal(a.connections, 1);

	vw_publisher_free(p);
	peer_free(&a);
	peer_free(&b);
	vw_fixture_rm(dir);
}

/*
 * Adversarial: a path that names the socket with a trailing slash ("b.sock/"): connect() by path
 * says ENOTDIR, and so does the walk. It took "b.sock/" for "b.sock", connected through the
 * O_PATH fd, then the identity check's stat() of the path failed: a disconnect and a reconnect
 * each round that checked (every round where no directory watch is possible).
 */
static void test_peer_trailing_slash(void **state)
{
	char *dir = vw_fixture_mkdtemp("peer");
	char via[300];
	struct peer b;
	struct vw_vm_energy vm;
	struct vw_publish_vm_stats st;
	struct vw_publisher *p = new_publisher(SEC, 0.1);

	(void)state;
	assert_non_null(dir);
	peer_init(&b, dir, "b", U_GOOD);
	snprintf(via, sizeof(via), "%s/", b.path);
	vm_set(&vm, U_GOOD, via);
	run_one(p, &vm, &st);
	peer_accept(&b);
	assert_int_equal(st.connects, 0);
	assert_true(st.connect_errors >= 1);
	assert_int_equal(b.connections, 0);
	vw_publisher_free(p);
	peer_free(&b);
	vw_fixture_rm(dir);
}

/*
 * Adversarial, the walk itself: "..", doubled slashes and a relative path reach the socket as
 * the kernel would; a loop of (trusted, root's) directory links ends in ELOOP after 40, not a
 * hang; a link's target too long to join, ENAMETOOLONG.
 */
static void test_open_socket_paths(void **state)
{
	char *dir = vw_fixture_mkdtemp("peer");
	char path[600], cwd[512], loop[300], longl[300], target[4091];
	const char *base;
	struct peer b;
	struct stat st;
	int fd;

	(void)state;
	assert_non_null(dir);
	peer_init(&b, dir, "b", U_GOOD);
	base = strrchr(dir, '/') + 1;
	snprintf(path, sizeof(path), "%s/../%s//b.sock", dir, base);
	fd = vw_pub_open_socket(path, &st);
	assert_true(fd >= 0);
	close(fd);
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(dir), 0);
	fd = vw_pub_open_socket("./b.sock", &st);
	assert_int_equal(chdir(cwd), 0);
	assert_true(fd >= 0);
	close(fd);
	snprintf(loop, sizeof(loop), "%s/loop", dir);
	assert_int_equal(symlink("loop", loop), 0);
	snprintf(path, sizeof(path), "%s/b.sock", loop);
	assert_int_equal(vw_pub_open_socket(path, &st), -ELOOP);
	memset(target, 'x', sizeof(target) - 1);
	target[sizeof(target) - 1] = '\0';
	for (size_t i = 200; i < sizeof(target) - 1; i += 200)
		target[i] = '/';
	snprintf(longl, sizeof(longl), "%s/long", dir);
	assert_int_equal(symlink(target, longl), 0);
	snprintf(path, sizeof(path), "%s/b.sock", longl);
	assert_int_equal(vw_pub_open_socket(path, &st), -ENAMETOOLONG);
	unlink(loop);
	unlink(longl);
	peer_free(&b);
	vw_fixture_rm(dir);
}

/* A FIFO or a regular file (or a link to one) where the socket should be: refused, never
 * opened for reading, the loop not blocked. */
static void test_peer_not_socket(void **state)
{
	char *dir = vw_fixture_mkdtemp("peer");
	char fifo[256], file[256], link_[256];
	const char *paths[] = { fifo, file, link_ };
	struct vw_vm_energy vm;
	struct vw_publish_vm_stats st;

	(void)state;
	assert_non_null(dir);
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	snprintf(file, sizeof(file), "%s/file", dir);
	snprintf(link_, sizeof(link_), "%s/link", dir);
	assert_int_equal(mkfifo(fifo, 0666), 0);
	assert_int_equal(vw_fixture_write(dir, "file", "x", 0644), 0);
	assert_int_equal(symlink(fifo, link_), 0);
	for (size_t i = 0; i < ARRAY_SIZE(paths); i++) {
		struct vw_publisher *p = new_publisher(SEC, 0.1);

		vm_set(&vm, U_A, paths[i]);
		run_one(p, &vm, &st);
		assert_int_equal(st.connects, 0);
		assert_true(st.connect_errors >= 1);
		assert_int_equal(st.peer_rejected, 0);
		vw_publisher_free(p);
	}
	unlink(fifo);
	unlink(file);
	unlink(link_);
	vw_fixture_rm(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hostile_peers),
		cmocka_unit_test(test_options),
		cmocka_unit_test(test_schedule),
		cmocka_unit_test_setup_teardown(test_rounding, one_vm_setup, rig_teardown),
		cmocka_unit_test_setup_teardown(test_own_numbers, two_vms_setup, rig_teardown),
		cmocka_unit_test_setup_teardown(test_vanish_and_return, one_vm_setup, rig_teardown),
		cmocka_unit_test_setup_teardown(test_restored_vm_at_once, one_vm_setup, rig_teardown),
		cmocka_unit_test_setup_teardown(test_restored_channel_at_update, one_vm_setup,
						rig_teardown),
		cmocka_unit_test_setup_teardown(test_restored_channel_mid_interval, one_vm_setup,
						rig_teardown),
		cmocka_unit_test_setup_teardown(test_no_vm_no_wakeup, one_vm_setup, rig_teardown),
		cmocka_unit_test_setup_teardown(test_model_push, two_vms_setup, rig_teardown),
		cmocka_unit_test(test_invalid_uuid),
		cmocka_unit_test_teardown(test_peer_other_user, kill_peer_child),
		cmocka_unit_test_teardown(test_peer_qemu_in_procfs_only, kill_peer_child),
		cmocka_unit_test_teardown(test_peer_outside_pid_ns, kill_peer_child),
		cmocka_unit_test_teardown(test_peer_new_qemu_at_once, kill_peer_child),
		cmocka_unit_test(test_new_qemu_eager),
		cmocka_unit_test_teardown(test_peer_pid_reused, kill_peer_child),
		cmocka_unit_test_teardown(test_peer_listener_maker_exited, kill_peer_child),
		cmocka_unit_test_teardown(test_peer_outside_pid_ns_qemu, kill_peer_child),
		cmocka_unit_test(test_peer_symlink),
		cmocka_unit_test(test_peer_hardlink),
		cmocka_unit_test(test_peer_not_socket),
		cmocka_unit_test(test_peer_trailing_slash),
		cmocka_unit_test(test_open_socket_paths),
		cmocka_unit_test(test_render_text),
		cmocka_unit_test_setup_teardown(test_guest_bytes, one_vm_setup, rig_teardown),
		cmocka_unit_test_setup_teardown(test_flooding_guest, one_vm_setup, rig_teardown),
		cmocka_unit_test_setup_teardown(test_backoff_and_path_change, one_vm_setup,
						rig_teardown),
		cmocka_unit_test(test_identity_watched),
		cmocka_unit_test(test_blocked_guest_catches_up),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

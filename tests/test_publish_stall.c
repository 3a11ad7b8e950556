/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A VM's shared folder on a file system that stops answering (a dead NFS hard mount, a stuck
 * virtiofsd or FUSE daemon): every system call on it blocks until the file system answers.
 * The stand-in is a FUSE mount whose /dev/fuse descriptor nobody reads (no libfuse needed):
 * every request on it waits until the descriptor is closed, which aborts the connection
 * (ENOTCONN) and ends the hang.
 *
 * Two VMs, one of whose folders (<share_root>/<uuid>, and the folder its <filesystem> exports)
 * is that mount. The publisher runs on a thread of its own, the test waiting a bounded time
 * for each round, so a hang is a failure rather than a test that never ends.
 */
#include "vw_test.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "fileio.h"
#include "fixture.h"
#include "log.h"
#include "macro.h"
#include "prom.h"
#include "publish.h"
#include "publish_input.h"

#define SEC VW_NSEC_PER_SEC
#define HUNG "5a0c9e0e-7f3b-4c61-9d1e-2b7a4f6c8d90"
#define FINE "6b1dafaf-8a4c-4d72-8e2f-3c8b5a7d9ea1"
#define ROUND_LIMIT_S 20 /* a round not back by then hung: the test ends it and fails */
#define ROUNDS 6

/* Warnings the publisher logged. */
static char logged[16384];
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;

static void sink(enum vw_log_level level, const char *msg, void *ud)
{
	size_t used;

	(void)ud;
	if (level > VW_LOG_WARN)
		return;
	pthread_mutex_lock(&log_mu);
	used = strlen(logged);
	snprintf(logged + used, sizeof(logged) - used, "%s\n", msg);
	pthread_mutex_unlock(&log_mu);
}

static size_t count_in_log(const char *needle)
{
	size_t n = 0;

	pthread_mutex_lock(&log_mu);
	for (const char *s = logged; (s = strstr(s, needle)); s++)
		n++;
	pthread_mutex_unlock(&log_mu);
	return n;
}

/* The publisher and its rounds, run by the "daemon" thread. */
struct rig {
	char *root;
	char chan_path[108];
	char hung_dir[200];       /* <root>/HUNG, the mount */
	int fuse_fd;              /* the hung mount's /dev/fuse, never read */
	struct vw_publisher *p;
	struct vw_vm_energy vms[2]; /* HUNG (a channel too), FINE */
	uint64_t total_uj[2];       /* energy handed to the publisher so far, per VM */
	uint64_t now;
	int root_fd, lfd, cfd;
	/* A round: asked by the test, done by the thread. */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int asked, done;
	bool quit;
	const char *bad; /* what went wrong on the daemon thread, or NULL */
	uint64_t fine_uj[32]; /* FINE's energy_uj after each round (0: unreadable) */
};

/* One round: a second of both VMs drawing 10 W and 20 W, the update, the tick (on the daemon
 * thread: no cmocka assertion there, what went wrong is kept in r->bad). */
static void rig_round(struct rig *r)
{
	static const double watts[2] = { 10, 20 };
	bool pub;

	for (size_t i = 0; i < 2; i++) {
		uint64_t uj = (uint64_t)(watts[i] * 1e6);

		r->vms[i].zones[0].active_uj += uj;
		r->vms[i].zones[0].active_w = watts[i];
		r->total_uj[i] += uj;
	}
	r->now = VW_MAX(r->now + 1 * SEC, vw_publisher_next_due(r->p));
	if (vw_test_publish_update(r->p, r->vms, 2) < 0)
		r->bad = "update failed";
	else if (vw_publisher_tick(r->p, r->now, &pub) < 0 || !pub)
		r->bad = "tick failed or published no round";
}

static void *daemon_thread(void *arg)
{
	struct rig *r = arg;

	pthread_mutex_lock(&r->mu);
	for (;;) {
		while (!r->quit && r->done == r->asked)
			pthread_cond_wait(&r->cv, &r->mu);
		if (r->quit)
			break;
		pthread_mutex_unlock(&r->mu);
		rig_round(r);
		pthread_mutex_lock(&r->mu);
		if (vw_read_u64_at(r->root_fd, FINE "/intel-rapl:0/energy_uj",
				   &r->fine_uj[r->done % ARRAY_SIZE(r->fine_uj)]) < 0)
			r->fine_uj[r->done % ARRAY_SIZE(r->fine_uj)] = 0;
		r->done++;
		pthread_cond_broadcast(&r->cv);
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

/* One round on the daemon thread, waited for at most ROUND_LIMIT_S: a round that hangs is ended
 * (the mount aborted, so the thread comes back) and fails the test. */
static void round_bounded(struct rig *r, pthread_t t, const char *what)
{
	struct timespec until;
	int e = 0;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += ROUND_LIMIT_S;
	pthread_mutex_lock(&r->mu);
	r->asked++;
	pthread_cond_broadcast(&r->cv);
	while (r->done != r->asked && e != ETIMEDOUT)
		e = pthread_cond_timedwait(&r->cv, &r->mu, &until);
	pthread_mutex_unlock(&r->mu);
	if (r->bad)
		fail_msg("%s: round %d: %s", what, r->asked, r->bad);
	if (e != ETIMEDOUT)
		return;
	vw_fixture_fuse_end(r->hung_dir, &r->fuse_fd);
	pthread_mutex_lock(&r->mu);
	r->quit = true;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	pthread_join(t, NULL);
	fail_msg("%s: round %d not back after %d s: the publisher waited on the folder whose file "
		 "system does not answer",
		 what, r->asked, ROUND_LIMIT_S);
}

static size_t threads_now(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	size_t n = 0;

	assert_non_null(d);
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Bytes the guest end of HUNG's channel got so far, its frames counted by their newlines. */
static size_t channel_frames(struct rig *r)
{
	static size_t lines;
	char buf[65536];
	ssize_t n;

	if (r->cfd < 0)
		r->cfd = accept4(r->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	while (r->cfd >= 0 && (n = recv(r->cfd, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
		for (ssize_t i = 0; i < n; i++)
			lines += buf[i] == '\n';
	return lines;
}

static double rendered_failures(struct rig *r, const char *uuid, const char *reason)
{
	struct vw_prom_writer *w = vw_prom_writer_new(VW_PROM_TEXT_0_0_4, 0);
	char *text = NULL, want[256], *at;
	size_t len;
	double v = -1;

	assert_non_null(w);
	assert_int_equal(vw_publisher_render(r->p, w, "n"), 0);
	assert_int_equal(vw_prom_finish(w, &text, &len), 0);
	snprintf(want, sizeof(want),
		 "virtwatt_vm_passthrough_failures_total{vm_id=\"%s\",reason=\"%s\",node_name=\"n\"} ",
		 uuid, reason);
	at = strstr(text, want);
	if (at)
		v = strtod(at + strlen(want), NULL);
	free(text);
	vw_prom_writer_free(w);
	return v;
}

static void vm_init(struct vw_vm_energy *vm, const char *uuid)
{
	*vm = (struct vw_vm_energy){ .n_zones = 1, .qemu_pid = (uint32_t)getpid() };
	snprintf(vm->uuid, sizeof(vm->uuid), "%s", uuid);
	vm->zones[0].zone = VW_ZONE_PACKAGE;
}

static void channel_listen(struct rig *r)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	assert_true(snprintf(r->chan_path, sizeof(r->chan_path), "%s/hung.sock", r->root) <
		    (int)sizeof(r->chan_path));
	memcpy(sa.sun_path, r->chan_path, strlen(r->chan_path));
	r->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	assert_true(r->lfd >= 0);
	assert_int_equal(bind(r->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(r->lfd, 4), 0);
	memcpy(r->vms[0].channel_path, r->chan_path, sizeof(r->chan_path));
}

/*
 * Before, the first update asked whether the hung VM's guest may write its folder (statvfs on
 * the hung mount) and never came back: no frame for any VM on any transport, no interval
 * closed, the daemon's /healthz failing. Now every round comes back; the other VM's folder is
 * written each round with its totals, the hung VM's channel gets its frame each round; the
 * hung folder's rounds are counted (reason share_timeout) and warned once, naming the folder;
 * the rounds spawn no thread each; once the file system answers again (here: the mount gone)
 * its folder is written again, with every joule handed over meanwhile.
 */
static void test_hung_share(void **state)
{
	struct rig r = { .root = vw_fixture_mkdtemp("stall"), .root_fd = -1, .lfd = -1,
			 .cfd = -1, .fuse_fd = -1, .now = 1000 * SEC };
	struct vw_publish_opts o = { .period_ns = 1 * SEC, .seed = 1, .epoch = 1,
				     .source = "rapl", .procfs_root = "/proc" };
	size_t threads_after2 = 0, frames;
	pthread_t t;
	uint64_t v;
	int r_mount;

	(void)state;
	REQUIRE(geteuid() == 0, "a FUSE mount needs root");
	REQUIRE(access("/dev/fuse", R_OK | W_OK) == 0, "no /dev/fuse");
	/* A mount namespace of this process's own: the mount goes with it, whatever happens. */
	assert_int_equal(unshare(CLONE_NEWNS), 0);
	assert_int_equal(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	assert_non_null(r.root);
	assert_true(snprintf(r.hung_dir, sizeof(r.hung_dir), "%s/%s", r.root, HUNG) <
		    (int)sizeof(r.hung_dir));
	assert_int_equal(mkdir(r.hung_dir, 0755), 0);
	r_mount = vw_fixture_fuse_hang(r.hung_dir, &r.fuse_fd);
	REQUIRE(r_mount == 0, "cannot mount FUSE: %s", strerror(-r_mount));
	r.root_fd = open(r.root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(r.root_fd >= 0);

	vm_init(&r.vms[0], HUNG);
	vm_init(&r.vms[1], FINE);
	memcpy(r.vms[0].share_dir, r.hung_dir, sizeof(r.hung_dir)); /* exported */
	channel_listen(&r);
	o.share_root = r.root;
	r.p = vw_publisher_new(&o);
	assert_non_null(r.p);
	logged[0] = '\0';
	vw_log_set_sink(sink, NULL);
	pthread_mutex_init(&r.mu, NULL);
	pthread_cond_init(&r.cv, NULL);
	assert_int_equal(pthread_create(&t, NULL, daemon_thread, &r), 0);

	for (int i = 0; i < ROUNDS; i++) {
		round_bounded(&r, t, "the folder hung");
		/* the other VM's folder: written this round, with all its energy */
		assert_int_equal(r.fine_uj[i], r.total_uj[1]);
		if (i == 1)
			threads_after2 = threads_now();
	}
	/* the hung VM's channel: a frame each round (its first round's, the early one, too) */
	frames = channel_frames(&r);
	assert_true(frames >= ROUNDS);
	/* each round given up on the hung folder counted; one warning naming it */
	assert_true(rendered_failures(&r, HUNG, "share_timeout") >= ROUNDS - 1);
	assert_true(rendered_failures(&r, FINE, "share_timeout") == 0);
	assert_int_equal(count_in_log("does not answer"), 1);
	assert_true(count_in_log(r.hung_dir) >= 1);
	/* no thread a round: the one stuck on the hung folder stays the only one it holds */
	assert_int_equal(threads_now(), threads_after2);

	/* The file system answers again: its folder is written, with every joule meanwhile. */
	vw_fixture_fuse_end(r.hung_dir, &r.fuse_fd);
	for (int i = 0; i < 200; i++) {
		round_bounded(&r, t, "after the hang");
		if (vw_read_u64_at(r.root_fd, HUNG "/intel-rapl:0/energy_uj", &v) == 0 &&
		    v == r.total_uj[0])
			break;
		usleep(10000); /* (the stuck call's ENOTCONN reaches its thread) */
	}
	assert_int_equal(vw_read_u64_at(r.root_fd, HUNG "/intel-rapl:0/energy_uj", &v), 0);
	assert_int_equal(v, r.total_uj[0]);
	assert_true(channel_frames(&r) > frames);
	assert_int_equal(count_in_log("does not answer"), 1);

	pthread_mutex_lock(&r.mu);
	r.quit = true;
	pthread_cond_broadcast(&r.cv);
	pthread_mutex_unlock(&r.mu);
	pthread_join(t, NULL);
	vw_log_set_sink(NULL, NULL);
	vw_publisher_free(r.p);
	if (r.cfd >= 0)
		close(r.cfd);
	close(r.lfd);
	close(r.root_fd);
	vw_fixture_rm(r.root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hung_share),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

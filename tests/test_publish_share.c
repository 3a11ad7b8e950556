/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The publisher's shared-folder side: the powercap tree's layout and units, continuity across a
 * host restart, the wrap, symlinks and hostile UUIDs, and a reader racing the writer.
 */
#include "vw_test.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fileio.h"
#include "fixture.h"
#include "log.h"
#include "macro.h"
#include "proto.h"
#include "model_rx.h"
#include "prom.h"
#include "publish.h"
#include "publish_input.h"
#include "publish_priv.h"
#include "reader.h"

#define SEC VW_NSEC_PER_SEC
#define UUID "5a0c9e0e-7f3b-4c61-9d1e-2b7a4f6c8d90"
#define OTHER "6b1dafaf-8a4c-4d72-8e2f-3c8b5a7d9ea1"

struct rig {
	char *root;
	const char *procfs; /* the publisher's procfs root (NULL: none) */
	uint64_t retain_ns;
	struct vw_publisher *p;
	struct vw_vm_energy vm;
	uint64_t now;
	int fd; /* the VM's folder */
};

static void rig_start(struct rig *r, uint64_t epoch, uint64_t max_range_uj)
{
	struct vw_publish_opts o = {
		.period_ns = 1 * SEC, .share_root = r->root, .epoch = epoch, .seed = epoch,
		.max_energy_range_uj = max_range_uj, .source = "rapl", .retain_ns = r->retain_ns,
		.procfs_root = r->procfs,
	};

	r->p = vw_publisher_new(&o);
	assert_non_null(r->p);
	r->vm = (struct vw_vm_energy){ .n_zones = 1 };
	memcpy(r->vm.uuid, UUID, sizeof(r->vm.uuid));
	r->vm.zones[0].zone = VW_ZONE_PACKAGE;
	r->now = 1000 * SEC;
}

static void rig_init(struct rig *r, uint64_t max_range_uj)
{
	*r = (struct rig){ .root = vw_fixture_mkdtemp("share"), .fd = -1 };
	assert_non_null(r->root);
	rig_start(r, 1, max_range_uj);
}

static void rig_free(struct rig *r)
{
	vw_publisher_free(r->p);
	if (r->fd >= 0)
		close(r->fd);
	vw_fixture_rm(r->root);
}

/* seconds of the VM drawing watts (package: 20 % idle, 80 % active), then one publication */
static void rig_run(struct rig *r, int seconds, double watts)
{
	struct vw_zone_owner_energy *z = &r->vm.zones[0];
	bool pub;

	for (int i = 0; i < seconds; i++) {
		z->idle_uj += (uint64_t)(watts * 0.2 * 1e6);
		z->active_uj += (uint64_t)(watts * 0.8 * 1e6);
	}
	z->idle_w = watts * 0.2;
	z->active_w = watts * 0.8;
	r->now = VW_MAX(r->now + (uint64_t)seconds * SEC, vw_publisher_next_due(r->p));
	assert_int_equal(vw_test_publish_update(r->p, &r->vm, 1), 0);
	assert_int_equal(vw_publisher_tick(r->p, r->now, &pub), 0);
	assert_true(pub);
	if (r->fd < 0) {
		r->fd = vw_dir_open_at(AT_FDCWD, r->root);
		assert_true(r->fd >= 0);
	}
}

static uint64_t energy_uj(const struct rig *r, const char *zone)
{
	char rel[64];
	uint64_t v;

	snprintf(rel, sizeof(rel), UUID "/%s/energy_uj", zone);
	assert_int_equal(vw_read_u64_at(r->fd, rel, &v), 0);
	return v;
}

static void test_layout_and_units(void **state)
{
	struct rig r;
	struct vw_host_frame f;
	struct stat st;
	char buf[VW_PROTO_MAX_FRAME + 1];
	size_t len;
	uint64_t v0;
	mode_t mask = umask(022);

	(void)state;
	umask(mask);
	rig_init(&r, 0);
	rig_run(&r, 1, 25);
	assert_int_equal(vw_read_str_at(r.fd, UUID "/intel-rapl:0/name", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "package-0");
	assert_int_equal(vw_read_str_at(r.fd, UUID "/intel-rapl:0/max_energy_range_uj", buf,
					sizeof(buf)), 0);
	assert_string_equal(buf, "281474976710656"); /* 2^48 uJ */
	assert_int_equal(fstatat(r.fd, UUID, &st, 0), 0);
	assert_int_equal(st.st_mode & 07777, 0755); /* whatever the umask */
	assert_int_equal(fstatat(r.fd, UUID "/intel-rapl:0/energy_uj", &st, 0), 0);
	assert_int_equal(st.st_mode & 07777, 0644 & ~mask);
	assert_int_equal(fstatat(r.fd, UUID "/intel-rapl:0:0", &st, 0), -1); /* no dram energy */

	/* A guest reads frame.json: the next round's is written (unread ones are skipped). */
	assert_int_equal(vw_read_file_at(r.fd, UUID "/frame.json", buf, sizeof(buf), &len), 0);
	/* Units: 25 W for 10 s is 250 J, 250,000,000 uJ -- not 25e6 x 10 / 5 (Scaphandre #428). */
	v0 = energy_uj(&r, "intel-rapl:0");
	assert_int_equal(v0, 25000000);
	rig_run(&r, 10, 25);
	assert_int_equal(energy_uj(&r, "intel-rapl:0") - v0, 250000000);

	/* frame.json is the channel's frame, whole, for this VM only. */
	assert_int_equal(vw_read_file_at(r.fd, UUID "/frame.json", buf, sizeof(buf), &len), 0);
	assert_true(len > 1 && buf[len - 1] == '\n');
	assert_int_equal(vw_proto_decode_host(buf, len - 1, &f), VW_PROTO_OK);
	assert_string_equal(f.vm_uuid, UUID);
	assert_int_equal(f.seq, 2);
	assert_int_equal(f.zones[0].idle_uj + f.zones[0].active_uj, 275000000);
	assert_double_near(f.zones[0].idle_w + f.zones[0].active_w, 25.0, 1e-9);

	/* dram appears: its own zone, intel-rapl:0:0 "dram". */
	r.vm.n_zones = 2;
	r.vm.zones[1] = (struct vw_zone_owner_energy){ .zone = VW_ZONE_DRAM, .idle_uj = 3000000 };
	rig_run(&r, 1, 25);
	assert_int_equal(vw_read_str_at(r.fd, UUID "/intel-rapl:0:0/name", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "dram");
	assert_int_equal(energy_uj(&r, "intel-rapl:0:0"), 3000000);
	rig_free(&r);
}

/* An energy_uj that has not changed is not written again (an idle VM's dram: four system
 * calls a round saved), nor is a frame.json nobody opened; a change is written at once. */
static void test_unchanged_energy_kept(void **state)
{
	struct rig r;
	struct stat e0, e1, f0, f1;

	(void)state;
	rig_init(&r, 0);
	rig_run(&r, 1, 25);
	assert_int_equal(fstatat(r.fd, UUID "/intel-rapl:0/energy_uj", &e0, 0), 0);
	assert_int_equal(fstatat(r.fd, UUID "/frame.json", &f0, 0), 0);
	rig_run(&r, 1, 0.01); /* 10 mJ: under the 0.1 J step, the rounded value stays */
	assert_int_equal(fstatat(r.fd, UUID "/intel-rapl:0/energy_uj", &e1, 0), 0);
	assert_int_equal(fstatat(r.fd, UUID "/frame.json", &f1, 0), 0);
	assert_true(e1.st_ino == e0.st_ino); /* the same file: not replaced */
	assert_true(f1.st_ino == f0.st_ino); /* unread: not replaced either */
	assert_int_equal(energy_uj(&r, "intel-rapl:0"), 25000000);
	rig_run(&r, 1, 25);
	assert_int_equal(fstatat(r.fd, UUID "/intel-rapl:0/energy_uj", &e1, 0), 0);
	assert_true(e1.st_ino != e0.st_ino);
	assert_int_equal(energy_uj(&r, "intel-rapl:0"), 50000000);

	/* The VM leaves and comes back: its folder's files are written again whole. */
	assert_int_equal(vw_test_publish_update(r.p, &r.vm, 0), 0);
	assert_int_equal(unlinkat(r.fd, UUID "/intel-rapl:0/energy_uj", 0), 0);
	rig_run(&r, 1, 0);
	assert_int_equal(energy_uj(&r, "intel-rapl:0"), 50000000);
	rig_free(&r);
}

/* The VM's model as model.json beside frame.json, read back by the guest's own reader. */
static void test_model_file(void **state)
{
	struct rig r;
	const char *body = "{\"package\":{\"All_Weights\":{\"Bias_Weight\":12}}}";
	char dir[600];
	struct vw_reader_config rc = { .path = dir, .vm_uuid = UUID };
	struct vw_reader *rd;

	(void)state;
	rig_init(&r, 0);
	rig_run(&r, 1, 10);
	assert_int_equal(vw_publisher_set_model(r.p, UUID, "host:vm:lin", body, strlen(body)), 0);
	rig_run(&r, 1, 10);
	snprintf(dir, sizeof(dir), "%s/" UUID, r.root);
	rd = vw_reader_new(&rc);
	assert_non_null(rd);
	assert_int_equal(vw_reader_poll(rd), 1);
	assert_non_null(vw_reader_models(rd)->cur);
	assert_string_equal(vw_reader_models(rd)->cur->body, body);
	assert_string_equal(vw_reader_models(rd)->cur->name, "host:vm:lin");
	vw_reader_free(rd);
	rig_free(&r);
}

static void test_restart_continues(void **state)
{
	struct rig r;
	uint64_t before, prev;

	(void)state;
	rig_init(&r, 0);
	rig_run(&r, 100, 30);
	before = energy_uj(&r, "intel-rapl:0");
	assert_int_equal(before, 3000000000);
	/* The host restarts: a new publisher, a new epoch, its own counters from zero. */
	vw_publisher_free(r.p);
	rig_start(&r, 2, 0);
	rig_run(&r, 0, 30);
	assert_int_equal(energy_uj(&r, "intel-rapl:0"), before);
	prev = before;
	for (int i = 0; i < 20; i++) {
		uint64_t v;

		rig_run(&r, 1, 30);
		v = energy_uj(&r, "intel-rapl:0");
		assert_int_equal(v, prev + 30000000);
		prev = v;
	}
	rig_free(&r);
}

static void test_vm_returns(void **state)
{
	struct rig r;

	(void)state;
	rig_init(&r, 0);
	rig_run(&r, 10, 10);
	assert_int_equal(energy_uj(&r, "intel-rapl:0"), 100000000);
	/* The VM goes away and comes back (a reboot): the folder continues, nothing counted twice. */
	assert_non_null(r.p->vms[0]->share_job);
	assert_int_equal(vw_test_publish_update(r.p, NULL, 0), 0);
	/* Gone, remembered for the retain period: its folder's work (600 bytes and its buffer) is
	 * not, only what the folder's next open needs (the offsets, checked by what follows). */
	assert_int_equal(r.p->n_vms, 1);
	assert_null(r.p->vms[0]->share_job);
	rig_run(&r, 1, 10);
	assert_int_equal(energy_uj(&r, "intel-rapl:0"), 110000000);
	/* ... and again. */
	assert_int_equal(vw_test_publish_update(r.p, NULL, 0), 0);
	rig_run(&r, 2, 10);
	assert_int_equal(energy_uj(&r, "intel-rapl:0"), 130000000);
	rig_free(&r);
}

static void test_wrap(void **state)
{
	const uint64_t max = 1000000000; /* 1 kJ, so it wraps in a test */
	struct rig r;
	uint64_t prev, cur, total = 0;
	char buf[32];

	(void)state;
	rig_init(&r, max);
	/* A previous run left the counter just under the range. */
	assert_int_equal(vw_fixture_write(r.root, UUID "/intel-rapl:0/energy_uj", "999900000\n", 0),
			 0);
	rig_run(&r, 0, 25);
	prev = energy_uj(&r, "intel-rapl:0");
	assert_int_equal(prev, 999900000);
	assert_int_equal(vw_read_str_at(r.fd, UUID "/intel-rapl:0/max_energy_range_uj", buf,
					sizeof(buf)), 0);
	assert_string_equal(buf, "1000000000");
	for (int i = 0; i < 100; i++) {
		rig_run(&r, 1, 25);
		cur = energy_uj(&r, "intel-rapl:0");
		assert_true(cur < max);
		/* The usual reader's unwrap is exact: (max - prev) + cur, no +1. */
		total += cur >= prev ? cur - prev : (max - prev) + cur;
		prev = cur;
	}
	assert_int_equal(total, 100 * 25000000ULL);
	assert_int_equal(energy_uj(&r, "intel-rapl:0"), (999900000 + 2500000000ULL) % max);
	rig_free(&r);
}

static void test_symlinks_refused(void **state)
{
	struct rig r;
	struct vw_publish_vm_stats st;
	char *outside = vw_fixture_mkdtemp("outside");
	char *text, path[512];

	(void)state;
	rig_init(&r, 0);
	assert_non_null(outside);
	assert_int_equal(vw_fixture_write(outside, "energy_uj", "42\n", 0), 0);
	assert_int_equal(vw_fixture_write(outside, "victim", "keep\n", 0), 0);
	/* intel-rapl:0 planted as a link out of the share: refused, nothing written there. */
	assert_int_equal(vw_fixture_mkdir(r.root, UUID), 0);
	assert_int_equal(vw_fixture_symlink(r.root, outside, UUID "/intel-rapl:0"), 0);
	rig_run(&r, 1, 25);
	assert_int_equal(vw_publisher_vm_stats(r.p, UUID, &st), 0);
	assert_int_equal(st.share_errors, 1);
	snprintf(path, sizeof(path), "%s/energy_uj", outside);
	text = vw_fixture_slurp(path, NULL);
	assert_string_equal(text, "42\n");
	free(text);
	snprintf(path, sizeof(path), "%s/name", outside);
	assert_int_equal(access(path, F_OK), -1);
	/* frame.json planted as a link: the link is replaced, its target untouched. */
	snprintf(path, sizeof(path), "%s/victim", outside);
	assert_int_equal(vw_fixture_mkdir(r.root, OTHER), 0);
	assert_int_equal(vw_fixture_symlink(r.root, path, OTHER "/frame.json"), 0);
	memcpy(r.vm.uuid, OTHER, sizeof(r.vm.uuid));
	rig_run(&r, 1, 25);
	text = vw_fixture_slurp(path, NULL);
	assert_string_equal(text, "keep\n");
	free(text);
	assert_int_equal(vw_publisher_vm_stats(r.p, OTHER, &st), 0);
	assert_int_equal(st.share_errors, 0);
	rig_free(&r);
	vw_fixture_rm(outside);
}

static void on_alarm(int sig)
{
	(void)sig; /* only interrupts a blocked open (no SA_RESTART) */
}

/*
 * What a guest that can write its folder (a share exported without <readonly/>, virtiofs on a
 * libvirt before 11) plants where the host reads energy_uj back when it first opens a zone: a
 * FIFO (the host, root, blocked in open() for ever: every VM's publication and the sampling loop
 * stopped) or a link to a host file (its number taken as the VM's counter: a host file read for
 * the guest, /sys/class/powercap's energy_uj among them). Both are junk: the zone restarts from
 * 0, and the rename replaces them, their targets untouched.
 */
static void test_planted_energy_file(void **state)
{
	struct sigaction sa = { .sa_handler = on_alarm }, old_sa;
	struct rig r;
	struct stat st;
	char *outside = vw_fixture_mkdtemp("outside");
	char path[512], *text;
	uint64_t t0, v;

	(void)state;
	rig_init(&r, 0);
	assert_non_null(outside);
	assert_int_equal(vw_fixture_mkdir(r.root, UUID), 0);
	assert_int_equal(vw_fixture_mkdir(r.root, UUID "/intel-rapl:0"), 0);
	snprintf(path, sizeof(path), "%s/" UUID "/intel-rapl:0/energy_uj", r.root);
	assert_int_equal(mkfifo(path, 0644), 0);
	assert_int_equal(sigaction(SIGALRM, &sa, &old_sa), 0);
	alarm(2); /* the old code's open returns EINTR then, rather than hang the test */
	t0 = vw_now_ns();
	rig_run(&r, 1, 25);
	alarm(0);
	assert_int_equal(sigaction(SIGALRM, &old_sa, NULL), 0);
	assert_true(vw_now_ns() - t0 < SEC); /* never waited for a writer */
	assert_int_equal(energy_uj(&r, "intel-rapl:0"), 25000000);
	assert_int_equal(fstatat(r.fd, UUID "/intel-rapl:0/energy_uj", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISREG(st.st_mode));

	/* A link to a host file holding a number: not read, replaced, its target kept. */
	assert_int_equal(vw_fixture_write(outside, "energy_uj", "4242000000\n", 0), 0);
	snprintf(path, sizeof(path), "%s/energy_uj", outside);
	assert_int_equal(vw_fixture_mkdir(r.root, OTHER), 0);
	assert_int_equal(vw_fixture_mkdir(r.root, OTHER "/intel-rapl:0"), 0);
	assert_int_equal(vw_fixture_symlink(r.root, path, OTHER "/intel-rapl:0/energy_uj"), 0);
	memcpy(r.vm.uuid, OTHER, sizeof(r.vm.uuid));
	rig_run(&r, 1, 25);
	assert_int_equal(vw_read_u64_at(r.fd, OTHER "/intel-rapl:0/energy_uj", &v), 0);
	assert_int_equal(v, 25000000); /* the old code: 4242000000 + 25 J */
	text = vw_fixture_slurp(path, NULL);
	assert_string_equal(text, "4242000000\n");
	free(text);
	rig_free(&r);
	vw_fixture_rm(outside);
}

static void test_folder_link_and_bad_uuid(void **state)
{
	struct rig r;
	struct vw_publish_vm_stats st;
	char *outside = vw_fixture_mkdtemp("outside");
	int dfd;

	(void)state;
	rig_init(&r, 0);
	assert_non_null(outside);
	assert_int_equal(vw_fixture_symlink(r.root, outside, UUID), 0);
	rig_run(&r, 1, 25);
	assert_int_equal(vw_publisher_vm_stats(r.p, UUID, &st), 0);
	assert_int_equal(st.share_errors, 1);
	dfd = vw_dir_open_at(AT_FDCWD, outside);
	assert_true(dfd >= 0);
	assert_int_equal(faccessat(dfd, "frame.json", F_OK, 0), -1);
	assert_int_equal(faccessat(dfd, "intel-rapl:0", F_OK, 0), -1);
	close(dfd);
	/* Names that would leave the share are refused before any file system call. */
	memcpy(r.vm.uuid, "../../../../../../../../tmp/x", 30);
	assert_int_equal(vw_test_publish_update(r.p, &r.vm, 1), -EINVAL);
	memcpy(r.vm.uuid, "5a0c9e0e/7f3b-4c61-9d1e-2b7a4f6c8d90", 37);
	assert_int_equal(vw_test_publish_update(r.p, &r.vm, 1), -EINVAL);
	assert_int_equal(vw_publisher_tick(r.p, r.now + 10 * SEC, NULL), 0);
	assert_int_equal(faccessat(r.fd, "5a0c9e0e", F_OK, 0), -1);
	rig_free(&r);
	vw_fixture_rm(outside);
}

/* ---- a reader racing the writer ---- */

struct race {
	int fd;
	bool stop, failed; /* atomics */
	uint64_t reads, frames_ok, last_uj, last_seq;
	char error[256];
};

static void *reader(void *arg)
{
	struct race *rc = arg;
	char buf[VW_PROTO_MAX_FRAME + 1];

	while (!__atomic_load_n(&rc->stop, __ATOMIC_ACQUIRE) && !rc->error[0]) {
		struct vw_host_frame f;
		size_t len;
		uint64_t v;
		int r;

		r = vw_read_file_at(rc->fd, UUID "/frame.json", buf, sizeof(buf), &len);
		if (r == 0) {
			if (len == 0 || buf[len - 1] != '\n' ||
			    vw_proto_decode_host(buf, len - 1, &f) != VW_PROTO_OK || f.seq < rc->last_seq)
				snprintf(rc->error, sizeof(rc->error), "torn frame.json: %.*s",
					 (int)VW_MIN(len, 200), buf);
			else
				rc->last_seq = f.seq;
			rc->frames_ok++;
		} else if (r != -ENOENT) {
			snprintf(rc->error, sizeof(rc->error), "frame.json: %s", strerror(-r));
		}
		r = vw_read_u64_at(rc->fd, UUID "/intel-rapl:0/energy_uj", &v);
		if (r == 0 && v < rc->last_uj)
			snprintf(rc->error, sizeof(rc->error), "energy_uj fell: %llu < %llu",
				 (unsigned long long)v, (unsigned long long)rc->last_uj);
		else if (r == 0)
			rc->last_uj = v;
		else if (r != -ENOENT) /* empty (-ENODATA) or junk (-EINVAL) = torn */
			snprintf(rc->error, sizeof(rc->error), "energy_uj: %s", strerror(-r));
		rc->reads++;
	}
	__atomic_store_n(&rc->failed, rc->error[0] != '\0', __ATOMIC_RELEASE);
	return NULL;
}

static void test_reader_races_writer(void **state)
{
	struct rig r;
	struct race rc = { 0 };
	pthread_t t;

	(void)state;
	rig_init(&r, 0);
	/* Big frames make a torn read likelier: a model name and several zones. */
	r.vm.n_zones = 3;
	r.vm.zones[1].zone = VW_ZONE_DRAM;
	r.vm.zones[2].zone = VW_ZONE_CORE;
	rig_run(&r, 1, 25);
	rc.fd = r.fd;
	assert_int_equal(pthread_create(&t, NULL, reader, &rc), 0);
	for (int i = 0; i < 400 && !__atomic_load_n(&rc.failed, __ATOMIC_ACQUIRE); i++) {
		r.vm.zones[1].active_uj += 1234567;
		r.vm.zones[2].active_uj += 7654321;
		rig_run(&r, 1, 25 + i % 7);
	}
	__atomic_store_n(&rc.stop, true, __ATOMIC_RELEASE);
	assert_int_equal(pthread_join(t, NULL), 0);
	if (rc.error[0])
		fail_msg("%s", rc.error);
	assert_true(rc.reads > 100);
	assert_true(rc.frames_ok > 100);
	rig_free(&r);
}

/*
 * A slow reader: it opened frame.json and energy_uj, then stalled (a guest paused between open
 * and read, 9p's fid held) while the writer went on for rounds. What it reads at last is the
 * whole frame and value the names held when it opened them, never a later round's bytes over
 * them: each round makes new files, the old ones live on for whoever holds them.
 */
static void test_slow_reader_keeps_its_frame(void **state)
{
	char then[VW_PROTO_MAX_FRAME + 1], held[VW_PROTO_MAX_FRAME + 1], now[VW_PROTO_MAX_FRAME + 1];
	struct vw_host_frame f_then, f_now;
	size_t len_then, len_now;
	uint64_t uj_then;
	ssize_t n;
	int ffd, efd;
	struct rig r;

	(void)state;
	rig_init(&r, 0);
	rig_run(&r, 1, 25);
	rig_run(&r, 1, 30);
	assert_int_equal(vw_read_file_at(r.fd, UUID "/frame.json", then, sizeof(then), &len_then), 0);
	uj_then = energy_uj(&r, "intel-rapl:0");
	ffd = openat(r.fd, UUID "/frame.json", O_RDONLY | O_CLOEXEC);
	efd = openat(r.fd, UUID "/intel-rapl:0/energy_uj", O_RDONLY | O_CLOEXEC);
	assert_true(ffd >= 0 && efd >= 0);
	for (int i = 0; i < 5; i++) /* other powers: every round's frame and value differ */
		rig_run(&r, 1, 40 + 10 * i);
	n = pread(ffd, held, sizeof(held), 0);
	assert_int_equal(n, (ssize_t)len_then);
	assert_memory_equal(held, then, len_then);
	assert_int_equal(held[n - 1], '\n');
	assert_int_equal(vw_proto_decode_host(held, (size_t)n - 1, &f_then), VW_PROTO_OK);
	n = pread(efd, held, sizeof(held) - 1, 0);
	assert_true(n > 0);
	held[n] = '\0';
	assert_int_equal(strtoull(held, NULL, 10), uj_then);
	/* The name meanwhile holds the newest round's frame (opened: written every round since). */
	assert_int_equal(vw_read_file_at(r.fd, UUID "/frame.json", now, sizeof(now), &len_now), 0);
	assert_int_equal(vw_proto_decode_host(now, len_now - 1, &f_now), VW_PROTO_OK);
	assert_int_equal(f_now.seq, vw_publisher_seq(r.p));
	assert_true(f_now.seq >= f_then.seq + 5);
	assert_true(energy_uj(&r, "intel-rapl:0") > uj_then);
	close(ffd);
	close(efd);
	rig_free(&r);
}


static uint64_t rejected_total(const struct vw_reader *rd)
{
	struct vw_reader_health h;
	uint64_t n = 0;

	vw_reader_health(rd, &h);
	for (size_t i = 0; i < VW_PROTO_E__COUNT; i++)
		n += h.rejected[i];
	return n;
}

/* ---- when frame.json is written (publish_share_decide.c on a real folder) ---- */

static ino_t frame_ino(const struct rig *r)
{
	struct stat st;

	assert_int_equal(fstatat(r->fd, UUID "/frame.json", &st, 0), 0);
	return st.st_ino;
}

static uint64_t share_count(const struct rig *r, const char *reason)
{
	struct vw_publish_stats ps;

	vw_publisher_stats(r->p, &ps);
	for (size_t i = 0; i < VW_PUBLISH_SHARE_REASONS; i++)
		if (strcmp(vw_publisher_share_reason(i, NULL), reason) == 0)
			return ps.share_frames[i];
	fail_msg("no reason %s", reason);
	return 0;
}

/*
 * Nobody opens frame.json: written in the first round, then only by the keep-alive (never
 * older than 30 s), each skip counted; the energy_uj files go on changing. Fails when every
 * round writes it (the old rule), and when the keep-alive lets it age.
 */
static void test_share_unread_skipped(void **state)
{
	uint64_t last_change, longest = 0, uj0;
	int writes = 1;
	struct rig r;
	ino_t ino;

	(void)state;
	rig_init(&r, 0);
	rig_run(&r, 1, 25);
	ino = frame_ino(&r);
	last_change = r.now;
	uj0 = energy_uj(&r, "intel-rapl:0");
	for (int i = 0; i < 90; i++) {
		rig_run(&r, 1, 25);
		if (frame_ino(&r) != ino) {
			ino = frame_ino(&r);
			writes++;
			longest = VW_MAX(longest, r.now - last_change);
			last_change = r.now;
		}
		assert_true(r.now - last_change <= 30 * SEC);
	}
	assert_true(writes >= 3 && writes <= 5); /* the first, then one per ~29 s */
	assert_true(longest >= 25 * SEC);
	assert_true(energy_uj(&r, "intel-rapl:0") > uj0); /* the zones are written as before */
	assert_int_equal(share_count(&r, "first"), 1);
	assert_int_equal(share_count(&r, "keepalive"), (uint64_t)writes - 1);
	assert_int_equal(share_count(&r, "unread"), (uint64_t)(91 - writes));
	assert_int_equal(share_count(&r, "opened"), 0);
	rig_free(&r);
}

/*
 * A real guest reader on the folder. Reading every round, it gets every round's frame, as
 * before (fresh each poll). Gone for two minutes (frames skipped meanwhile), it comes back: its
 * first read is an older frame, the next round's is current, and its totals are the host's to
 * the microjoule: a skipped frame loses nothing (frames carry cumulative counters, and the
 * spike rule measures the gap in the host's rounds), and the guest never goes stale because of
 * it. Fails when an open is not seen (the frame then stays old) or when it is ignored.
 */
static void test_share_reader_gets_every_round(void **state)
{
	struct vw_reader_config rc = { .vm_uuid = UUID };
	const struct vw_host_frame *last;
	const struct vw_proto_acc *acc;
	char dir[600], buf[VW_PROTO_MAX_FRAME + 1];
	struct vw_host_frame f;
	struct vw_reader *rd;
	struct rig r;
	size_t len;
	ino_t ino;

	(void)state;
	rig_init(&r, 0);
	snprintf(dir, sizeof(dir), "%s/" UUID, r.root);
	rc.path = dir;
	rd = vw_reader_new(&rc);
	assert_non_null(rd);
	for (int i = 0; i < 10; i++) {
		rig_run(&r, 1, 20 + i);
		assert_int_equal(vw_reader_poll(rd), 1); /* a new frame each time */
		assert_int_equal(vw_reader_last(rd)->seq, vw_publisher_seq(r.p));
		assert_true(vw_reader_fresh(rd));
	}
	/* The guest stops reading: after a minute without opens the frames are skipped. */
	for (int i = 0; i < 120; i++)
		rig_run(&r, 1, 30);
	ino = frame_ino(&r);
	rig_run(&r, 1, 30);
	assert_true(frame_ino(&r) == ino);
	assert_true(share_count(&r, "unread") > 0);
	/* Back: an older frame first (at most 30 s old), accepted, then the current one. */
	assert_int_equal(vw_reader_poll(rd), 1);
	last = vw_reader_last(rd);
	assert_true(last->seq < vw_publisher_seq(r.p));
	assert_true(last->seq + 31 >= vw_publisher_seq(r.p));
	assert_true(vw_reader_fresh(rd));
	rig_run(&r, 1, 30);
	assert_int_equal(vw_reader_poll(rd), 1);
	assert_int_equal(vw_reader_last(rd)->seq, vw_publisher_seq(r.p));
	assert_true(vw_reader_fresh(rd));
	/* Its totals: everything the host published for the VM, nothing lost or counted twice. */
	assert_int_equal(vw_read_file_at(r.fd, UUID "/frame.json", buf, sizeof(buf), &len), 0);
	assert_int_equal(vw_proto_decode_host(buf, len - 1, &f), VW_PROTO_OK);
	acc = vw_reader_acc(rd);
	assert_int_equal(acc->zones[VW_ZONE_PACKAGE].idle_uj, f.zones[0].idle_uj);
	assert_int_equal(acc->zones[VW_ZONE_PACKAGE].active_uj, f.zones[0].active_uj);
	assert_int_equal(f.zones[0].idle_uj + f.zones[0].active_uj,
			 energy_uj(&r, "intel-rapl:0")); /* the whole epoch's energy */
	assert_int_equal(rejected_total(rd), 0);
	vw_reader_free(rd);
	rig_free(&r);
}

/* In a private mount namespace (the child of a fork): the share root a noatime tmpfs, and
 * the guest's reads through a read-only bind mount of it, as deploy/libvirt/README.md exports
 * a folder to virtiofsd. Neither moves atime; the open is seen all the same. Then the tmpfs
 * full for a round: the frame is written again with the room back. 0: as expected. */
/* Fill the file system of dirfd with dirfd/filler: 0 once it is full. */
static int fill(int dirfd)
{
	static const char block[4096];
	int fd = openat(dirfd, "filler", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ssize_t n = 0;

	if (fd < 0)
		return -errno;
	while ((n = write(fd, block, sizeof(block))) > 0)
		;
	close(fd);
	return n < 0 && errno == ENOSPC ? 0 : -EIO;
}

static int noatime_ro_child(const char *base)
{
	char rw[512], ro[512], rel[600], buf[VW_PROTO_MAX_FRAME + 1];
	struct stat before, after, a0;
	struct vw_publish_vm_stats st;
	struct vw_publisher *p;
	struct vw_vm_energy vm = { .n_zones = 1, .zones = { { .zone = VW_ZONE_PACKAGE } } };
	uint64_t now = 1000 * SEC;
	int fd, rfd;
	bool pub;

	snprintf(rw, sizeof(rw), "%s/rw", base);
	snprintf(ro, sizeof(ro), "%s/ro", base);
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 || mkdir(rw, 0755) < 0 ||
	    mkdir(ro, 0755) < 0 || mount("tmpfs", rw, "tmpfs", MS_NOATIME, "mode=0755,size=256k") < 0 ||
	    mount(rw, ro, NULL, MS_BIND, NULL) < 0 ||
	    mount(NULL, ro, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) < 0)
		return 10;
	memcpy(vm.uuid, UUID, sizeof(vm.uuid));
	p = vw_publisher_new(&(struct vw_publish_opts){ .period_ns = SEC, .share_root = rw,
							.epoch = 1, .seed = 1 });
	if (!p)
		return 11;
	fd = vw_dir_open_at(AT_FDCWD, rw);
	rfd = vw_dir_open_at(AT_FDCWD, ro);
	for (int i = 0; i < 4; i++) { /* the first, then unread: skipped */
		vm.zones[0].active_uj += 10000000;
		now = VW_MAX(now + SEC, vw_publisher_next_due(p));
		if (fd < 0 || rfd < 0 || vw_test_publish_update(p, &vm, 1) < 0 ||
		    vw_publisher_tick(p, now, &pub) < 0 || !pub)
			return 12;
		if (i == 0 && fstatat(fd, UUID "/frame.json", &a0, 0) < 0)
			return 13;
	}
	if (fstatat(fd, UUID "/frame.json", &before, 0) < 0 || before.st_ino != a0.st_ino)
		return 14; /* unread frames were written */
	snprintf(rel, sizeof(rel), UUID "/frame.json");
	if (vw_read_str_at(rfd, rel, buf, sizeof(buf)) < 0)
		return 15;
	if (fstatat(fd, UUID "/frame.json", &after, 0) < 0 ||
	    after.st_atim.tv_sec != before.st_atim.tv_sec ||
	    after.st_atim.tv_nsec != before.st_atim.tv_nsec)
		return 16; /* atime moved: the case this covers is not the one made here */
	now = VW_MAX(now + SEC, vw_publisher_next_due(p));
	if (vw_test_publish_update(p, &vm, 1) < 0 || vw_publisher_tick(p, now, &pub) < 0)
		return 12;
	if (fstatat(fd, UUID "/frame.json", &after, 0) < 0 || after.st_ino == before.st_ino)
		return 17; /* the open through the read-only mount was not seen */
	/* The folder's file system full for a round (its energy_uj not written), then room again:
	 * frame.json is written again at once, read or not (e2e/faults.py's check). */
	for (int i = 0; i < 70; i++) { /* past the minute of activity: unread again */
		vm.zones[0].active_uj += 10000000;
		now = VW_MAX(now + SEC, vw_publisher_next_due(p));
		if (vw_test_publish_update(p, &vm, 1) < 0 || vw_publisher_tick(p, now, &pub) < 0)
			return 12;
	}
	if (fstatat(fd, UUID "/frame.json", &before, 0) < 0 || fill(fd) < 0)
		return 18;
	vm.zones[0].active_uj += 10000000;
	now = VW_MAX(now + SEC, vw_publisher_next_due(p));
	if (vw_test_publish_update(p, &vm, 1) < 0 || vw_publisher_tick(p, now, &pub) < 0 ||
	    vw_publisher_vm_stats(p, UUID, &st) < 0 || st.share_errors == 0)
		return 19; /* the full file system went unnoticed */
	if (unlinkat(fd, "filler", 0) < 0)
		return 18;
	vm.zones[0].active_uj += 10000000;
	now = VW_MAX(now + SEC, vw_publisher_next_due(p));
	if (vw_test_publish_update(p, &vm, 1) < 0 || vw_publisher_tick(p, now, &pub) < 0 ||
	    fstatat(fd, UUID "/frame.json", &after, 0) < 0 || after.st_ino == before.st_ino)
		return 20; /* not written again once there was room */
	vw_publisher_free(p);
	close(fd);
	close(rfd);
	return 0;
}

static void test_share_open_seen_without_atime(void **state)
{
	char *base = vw_fixture_mkdtemp("share-ns");
	int status = -1;
	pid_t pid;

	(void)state;
	assert_non_null(base);
	REQUIRE(geteuid() == 0, "mounting a noatime tmpfs in a private namespace needs root");
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(unshare(CLONE_NEWNS) < 0 ? 9 : noatime_ro_child(base));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 9 || WEXITSTATUS(status) == 10)
		REQUIRE(false, "no private mount namespace or tmpfs mount here (status %d)",
			WEXITSTATUS(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	vw_fixture_rm(base);
}

/* The rig's VM and OTHER published, then both gone for good (past retain_ns); plant() runs
 * before they go, gone() (optional) once they have gone. */
static void publish_two_then_forget_at(struct rig *r, void (*plant)(struct rig *r, void *ud),
				       void (*gone)(struct rig *r, void *ud), void *ud)
{
	struct vw_vm_energy two[2] = { r->vm, r->vm };
	bool pub;

	memcpy(two[1].uuid, OTHER, sizeof(two[1].uuid));
	for (int i = 0; i < 2; i++) {
		two[0].zones[0].idle_uj = two[1].zones[0].idle_uj += 1000000;
		r->now = VW_MAX(r->now + SEC, vw_publisher_next_due(r->p));
		assert_int_equal(vw_test_publish_update(r->p, two, 2), 0);
		assert_int_equal(vw_publisher_tick(r->p, r->now, &pub), 0);
		assert_true(pub);
	}
	assert_int_equal(vw_publisher_set_model(r->p, UUID, "m", "{}", 2), 0);
	r->now = VW_MAX(r->now + SEC, vw_publisher_next_due(r->p));
	assert_int_equal(vw_publisher_tick(r->p, r->now, &pub), 0);
	if (r->fd < 0)
		r->fd = vw_dir_open_at(AT_FDCWD, r->root);
	assert_true(r->fd >= 0);
	assert_int_equal(faccessat(r->fd, UUID "/model.json", F_OK, 0), 0);
	if (plant)
		plant(r, ud);
	/* Gone: the folders stay with their last frame while the VMs are retained... */
	assert_int_equal(vw_test_publish_update(r->p, NULL, 0), 0);
	if (gone)
		gone(r, ud);
	r->now += r->retain_ns - SEC;
	assert_int_equal(vw_publisher_tick(r->p, r->now, &pub), 0);
	assert_int_equal(vw_test_publish_update(r->p, NULL, 0), 0);
	assert_int_equal(faccessat(r->fd, UUID "/frame.json", F_OK, 0), 0);
	/* ... and go with them. */
	r->now += 2 * SEC;
	assert_int_equal(vw_publisher_tick(r->p, r->now, &pub), 0);
	assert_int_equal(vw_test_publish_update(r->p, NULL, 0), 0);
}

static void publish_two_then_forget(struct rig *r, void (*plant)(struct rig *r, void *ud), void *ud)
{
	publish_two_then_forget_at(r, plant, NULL, ud);
}

struct planted {
	char *outside;
};

/* In OTHER's folder: its dram zone a link to a directory outside, model.json a link to a file
 * outside, a file of someone else's; and a temp left over in the VM's. */
static void plant_links(struct rig *r, void *ud)
{
	struct planted *pl = ud;
	char path[512];

	assert_int_equal(vw_fixture_write(pl->outside, "energy_uj", "42\n", 0), 0);
	assert_int_equal(vw_fixture_write(pl->outside, "name", "dram\n", 0), 0);
	assert_int_equal(vw_fixture_write(pl->outside, "frame.json", "keep\n", 0), 0);
	assert_int_equal(vw_fixture_symlink(r->root, pl->outside, OTHER "/intel-rapl:0:0"), 0);
	snprintf(path, sizeof(path), "%s/frame.json", pl->outside);
	assert_int_equal(vw_fixture_symlink(r->root, path, OTHER "/model.json"), 0);
	assert_int_equal(vw_fixture_write(r->root, OTHER "/notes.txt", "theirs\n", 0), 0);
	assert_int_equal(vw_fixture_write(r->root, UUID "/frame.json.tmp.99999", "{\n", 0), 0);
}

static void test_gone_share_removed(void **state)
{
	struct planted pl = { .outside = vw_fixture_mkdtemp("outside") };
	struct rig r = { .root = vw_fixture_mkdtemp("share"), .fd = -1, .retain_ns = 10 * SEC };
	char *text, path[512];
	struct stat st;

	(void)state;
	assert_non_null(r.root);
	assert_non_null(pl.outside);
	rig_start(&r, 1, 0);
	publish_two_then_forget(&r, plant_links, &pl);
	/* The VM's folder is gone whole: frame, model, zone, the leftover temp. */
	assert_int_equal(fstatat(r.fd, UUID, &st, AT_SYMLINK_NOFOLLOW), -1);
	assert_int_equal(errno, ENOENT);
	/* OTHER's: ours removed, links removed or left but never followed, theirs kept. */
	assert_int_equal(faccessat(r.fd, OTHER "/frame.json", F_OK, AT_SYMLINK_NOFOLLOW), -1);
	assert_int_equal(faccessat(r.fd, OTHER "/intel-rapl:0", F_OK, AT_SYMLINK_NOFOLLOW), -1);
	assert_int_equal(faccessat(r.fd, OTHER "/model.json", F_OK, AT_SYMLINK_NOFOLLOW), -1);
	assert_int_equal(fstatat(r.fd, OTHER "/intel-rapl:0:0", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(faccessat(r.fd, OTHER "/notes.txt", F_OK, 0), 0);
	for (int i = 0; i < 3; i++) {
		static const char *const names[] = { "energy_uj", "name", "frame.json" };
		static const char *const want[] = { "42\n", "dram\n", "keep\n" };

		snprintf(path, sizeof(path), "%s/%s", pl.outside, names[i]);
		text = vw_fixture_slurp(path, NULL);
		assert_non_null(text);
		assert_string_equal(text, want[i]);
		free(text);
	}
	rig_free(&r);
	vw_fixture_rm(pl.outside);
}

/* A folder replaced by a link to a directory outside: the link is not followed, nor removed. */
static void plant_folder_link(struct rig *r, void *ud)
{
	struct planted *pl = ud;
	char other[512];

	assert_int_equal(vw_fixture_write(pl->outside, "frame.json", "keep\n", 0), 0);
	assert_int_equal(vw_fixture_mkdir(pl->outside, "intel-rapl:0"), 0);
	assert_int_equal(vw_fixture_write(pl->outside, "intel-rapl:0/energy_uj", "42\n", 0), 0);
	snprintf(other, sizeof(other), "%s/%s", r->root, OTHER);
	vw_fixture_rm(strdup(other));
	assert_int_equal(vw_fixture_symlink(r->root, pl->outside, OTHER), 0);
}

static void test_gone_share_link_not_followed(void **state)
{
	struct planted pl = { .outside = vw_fixture_mkdtemp("outside") };
	struct rig r = { .root = vw_fixture_mkdtemp("share"), .fd = -1, .retain_ns = 10 * SEC };
	char *text, path[512];
	struct stat st;

	(void)state;
	assert_non_null(r.root);
	assert_non_null(pl.outside);
	rig_start(&r, 1, 0);
	publish_two_then_forget(&r, plant_folder_link, &pl);
	assert_int_equal(fstatat(r.fd, UUID, &st, AT_SYMLINK_NOFOLLOW), -1);
	assert_int_equal(fstatat(r.fd, OTHER, &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISLNK(st.st_mode));
	snprintf(path, sizeof(path), "%s/frame.json", pl.outside);
	text = vw_fixture_slurp(path, NULL);
	assert_string_equal(text, "keep\n");
	free(text);
	snprintf(path, sizeof(path), "%s/intel-rapl:0/energy_uj", pl.outside);
	text = vw_fixture_slurp(path, NULL);
	assert_string_equal(text, "42\n");
	free(text);
	rig_free(&r);
	vw_fixture_rm(pl.outside);
}

/* The libvirt hook preparing OTHER's start after it went: its folder's time moves on (touch). */
static void touch_other(struct rig *r, void *ud)
{
	struct timespec later[2] = { { .tv_nsec = UTIME_OMIT }, { 0 } };
	struct stat st;

	(void)ud;
	assert_int_equal(fstatat(r->fd, OTHER, &st, 0), 0);
	later[1] = (struct timespec){ .tv_sec = st.st_mtim.tv_sec + 1, .tv_nsec = st.st_mtim.tv_nsec };
	assert_int_equal(utimensat(r->fd, OTHER, later, AT_SYMLINK_NOFOLLOW), 0);
}

/*
 * A VM started at the moment it is forgotten: the hook touched its folder (prepare), QEMU is
 * about to open it. The folder stays whole, with its last frame and energy (the host that sees
 * the VM again continues from them), and no tombstone is left; the untouched VM's goes.
 */
static void test_gone_share_touched_kept(void **state)
{
	struct rig r = { .root = vw_fixture_mkdtemp("share"), .fd = -1, .retain_ns = 10 * SEC };
	struct stat st;

	(void)state;
	assert_non_null(r.root);
	rig_start(&r, 1, 0);
	publish_two_then_forget_at(&r, NULL, touch_other, NULL);
	assert_int_equal(fstatat(r.fd, UUID, &st, AT_SYMLINK_NOFOLLOW), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(fstatat(r.fd, OTHER, &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(faccessat(r.fd, OTHER "/frame.json", F_OK, 0), 0);
	assert_int_equal(faccessat(r.fd, OTHER "/intel-rapl:0/energy_uj", F_OK, 0), 0);
	assert_int_equal(faccessat(r.fd, "." OTHER ".gone", F_OK, AT_SYMLINK_NOFOLLOW), -1);
	assert_int_equal(faccessat(r.fd, "." UUID ".gone", F_OK, AT_SYMLINK_NOFOLLOW), -1);
	rig_free(&r);
}


/* What the publisher warned (export_sink). */
static char export_log[8192];

static void export_sink(enum vw_log_level level, const char *msg, void *ud)
{
	size_t used = strlen(export_log);

	(void)ud;
	if (level >= VW_LOG_WARN)
		snprintf(export_log + used, sizeof(export_log) - used, "%s\n", msg);
}

/* The publisher's virtwatt_passthrough_share_writable_vms: checked in the exposition too. */
static size_t writable_vms(const struct rig *r)
{
	struct vw_publish_stats ps;
	struct vw_prom_writer *w = vw_prom_writer_new(VW_PROM_TEXT_0_0_4, 0);
	char *text = NULL, want[128];
	size_t len;

	vw_publisher_stats(r->p, &ps);
	assert_non_null(w);
	assert_int_equal(vw_publisher_render(r->p, w, "n"), 0);
	assert_int_equal(vw_prom_finish(w, &text, &len), 0);
	snprintf(want, sizeof(want), "\nvirtwatt_passthrough_share_writable_vms{node_name=\"n\"} %zu\n",
		 ps.share_writable_vms);
	assert_non_null(strstr(text, want));
	free(text);
	vw_prom_writer_free(w);
	return ps.share_writable_vms;
}

/* A stand-in QEMU: a child in a mount namespace of its own where dir is a read-only bind mount
 * of itself (the operator's read-only export); it waits until killed. */
static pid_t qemu_with_ro_export(const char *dir)
{
	int ready[2];
	pid_t pid;
	char c = 0;

	assert_int_equal(pipe(ready), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(ready[0]);
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || unshare(CLONE_NEWNS) < 0 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
		    mount(dir, dir, NULL, MS_BIND, NULL) < 0 ||
		    mount(NULL, dir, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) < 0)
			_exit(1);
		if (write(ready[1], "x", 1) != 1)
			_exit(2);
		for (;;)
			pause();
	}
	close(ready[1]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	return pid;
}

/*
 * A tenant's guest that can write its folder can fill the file system of every VM's folder (a
 * 32 MiB tmpfs in deploy/libvirt), whose frames then fail: virtiofs before libvirt 11 takes no
 * <readonly/>, and deploy/libvirt/README.md asks for a read-only bind mount there. Before, a
 * writable export went unnoticed. Now: a VM whose <filesystem> has no <readonly/> and whose
 * source is not on a read-only mount, as its QEMU sees it, is warned (naming the VM, the folder
 * and the fix) and counted; <readonly/>, or a read-only mount in the QEMU's namespace (the
 * daemon's own sees the folder writable), is not; a VM no longer listed is not counted.
 */
static void test_share_export_writable(void **state)
{
	struct rig r = { .root = vw_fixture_mkdtemp("share"), .fd = -1, .procfs = "/proc" };
	char *exp = vw_fixture_mkdtemp("export");
	pid_t qemu;

	(void)state;
	REQUIRE(geteuid() == 0, "a read-only bind mount in a mount namespace needs root");
	assert_non_null(r.root);
	assert_non_null(exp);
	rig_start(&r, 1, 0);
	export_log[0] = '\0';
	vw_log_set_sink(export_sink, NULL);

	rig_run(&r, 1, 10); /* no <filesystem>: nothing to ask */
	assert_int_equal(writable_vms(&r), 0);

	snprintf(r.vm.share_dir, sizeof(r.vm.share_dir), "%s", exp); /* a writable export */
	rig_run(&r, 1, 10);
	assert_int_equal(writable_vms(&r), 1);
	assert_non_null(strstr(export_log, "VM " UUID ": its guest may write its shared folder"));
	assert_non_null(strstr(export_log, exp));
	assert_non_null(strstr(export_log, "Add <readonly/>"));
	assert_non_null(strstr(export_log, "read-only bind mount"));

	r.vm.share_readonly = true; /* <readonly/> added */
	rig_run(&r, 1, 10);
	assert_int_equal(writable_vms(&r), 0);

	r.vm.share_readonly = false; /* taken out again: its QEMU sees a read-only mount */
	qemu = qemu_with_ro_export(exp);
	r.vm.qemu_pid = (uint32_t)qemu;
	rig_run(&r, 1, 10);
	assert_int_equal(writable_vms(&r), 0);
	assert_int_equal(access(exp, W_OK), 0); /* (this process's view: writable) */

	kill(qemu, SIGKILL);
	assert_int_equal(waitpid(qemu, NULL, 0), qemu);
	r.vm.qemu_pid = (uint32_t)getpid(); /* the VM started again, its QEMU without the mount */
	rig_run(&r, 1, 10);
	assert_int_equal(writable_vms(&r), 1);

	assert_int_equal(vw_test_publish_update(r.p, NULL, 0), 0); /* the VM gone */
	assert_int_equal(writable_vms(&r), 0);

	vw_log_set_sink(NULL, NULL);
	rig_free(&r);
	vw_fixture_rm(exp);
}

/*
 * The source named through a symlink with an absolute target (/var/run -> /run on most hosts):
 * QEMU resolves it in its own namespace, and so must the check. Here the daemon's namespace
 * shows the folder read-only (ProtectSystem=strict) while its QEMU (this process) writes it:
 * the check, run in a child with that view, must say writable. Before, the walk from
 * <procfs>/PID/root went on at the symlink's target in the daemon's own namespace: "read-only",
 * and a writable export went unwarned. Without a QEMU root to go by (its root unreadable) the
 * answer is "not known", no longer the daemon's view.
 */
static void test_share_export_symlink(void **state)
{
	char *exp = vw_fixture_mkdtemp("export"), *top = vw_fixture_mkdtemp("links"), lnk[PATH_MAX];
	pid_t qemu = getpid(), daemon;
	int procfs = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC), status;

	(void)state;
	REQUIRE(geteuid() == 0, "a read-only bind mount in a mount namespace needs root");
	assert_non_null(exp);
	assert_non_null(top);
	assert_true(procfs >= 0);
	snprintf(lnk, sizeof(lnk), "%s/run", top);
	assert_int_equal(symlink(exp, lnk), 0); /* absolute */
	assert_int_equal(vw_pub_share_export_writable(procfs, qemu, lnk, false), 1);
	daemon = fork();
	assert_true(daemon >= 0);
	if (daemon == 0) { /* the daemon under ProtectSystem=strict: the folder read-only here */
		if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
		    mount(exp, exp, NULL, MS_BIND, NULL) < 0 ||
		    mount(NULL, exp, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) < 0)
			_exit(100);
		if (vw_pub_share_export_writable(-1, 0, lnk, false) != 0) /* (its own view) */
			_exit(101);
		_exit(10 + vw_pub_share_export_writable(procfs, qemu, lnk, false));
	}
	assert_int_equal(waitpid(daemon, &status, 0), daemon);
	assert_true(WIFEXITED(status));
	assert_true(WEXITSTATUS(status) < 100);
	if (WEXITSTATUS(status) == 10)
		fail_msg("the symlink's target resolved in the daemon's namespace: read-only");
	assert_int_equal(WEXITSTATUS(status), 11);
	/* a QEMU whose root cannot be had: not known */
	assert_true(vw_pub_share_export_writable(procfs, INT32_MAX, lnk, false) < 0);
	close(procfs);
	vw_fixture_rm(top);
	vw_fixture_rm(exp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout_and_units),
		cmocka_unit_test(test_model_file),
		cmocka_unit_test(test_restart_continues),
		cmocka_unit_test(test_vm_returns),
		cmocka_unit_test(test_wrap),
		cmocka_unit_test(test_symlinks_refused),
		cmocka_unit_test(test_folder_link_and_bad_uuid),
		cmocka_unit_test(test_reader_races_writer),
		cmocka_unit_test(test_unchanged_energy_kept),
		cmocka_unit_test(test_planted_energy_file),
		cmocka_unit_test(test_gone_share_removed),
		cmocka_unit_test(test_gone_share_link_not_followed),
		cmocka_unit_test(test_gone_share_touched_kept),
		cmocka_unit_test(test_slow_reader_keeps_its_frame),
		cmocka_unit_test(test_share_unread_skipped),
		cmocka_unit_test(test_share_reader_gets_every_round),
		cmocka_unit_test(test_share_open_seen_without_atime),
		cmocka_unit_test(test_share_export_writable),
		cmocka_unit_test(test_share_export_symlink),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

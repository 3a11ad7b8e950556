/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One publisher per VM (issue #11): the per-VM lock in --passthrough.lock-dir.
 * - Two publishers in this process: the second is refused, names the holder (this PID, from the
 *   kernel's /proc/locks), retries once a second, publishes nothing, and takes over with counters
 *   that start at the takeover when the first goes away; a deleted lock file stops its holder;
 *   a vanished VM is unlocked; a lock directory that cannot exist.
 * - Lock files of VMs gone for good: removed by their last holder once the VM is forgotten, kept
 *   when another process took the VM over; a file unlinked between a taker's open and its flock
 *   (flock wrapped) is never the lock taken, so two publishers never both hold the VM.
 * - Two real virtwatt-host processes on one fixture host with one QEMU process: the second
 *   refuses to publish the first's VM and says why (its PID), exports the refusal; when the
 *   first exits the second takes over without a restart, and a guest reader on the VM's shared
 *   folder counts what the VM used, within 10 %, across the change.
 * - A real virtwatt-host whose VM's folder is on a file system that does not answer: its loop,
 *   /metrics and /healthz go on, the stall is exported, the folder written once it answers.
 */
#include "vw_test.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"
#include "host_fixture.h"
#include "log.h"
#include "macro.h"
#include "publish.h"
#include "reader.h"
#include "vm_fixture.h"

#define UUID "3c1d5e7f-9a0b-4c2d-8e4f-5a6b7c8d9e0f"
#define THE_VM "vm_id=\"" UUID "\""
#define SEC VW_NSEC_PER_SEC

static char *path_of(const char *a, const char *b)
{
	char *p = NULL;

	assert_true(asprintf(&p, "%s/%s", a, b) > 0);
	return p;
}

static bool exists(const char *dir, const char *rel)
{
	_cleanup_free_ char *p = path_of(dir, rel);

	return access(p, F_OK) == 0;
}

static void vm_energy(struct vw_vm_energy *e, uint64_t uj)
{
	*e = (struct vw_vm_energy){ .uuid = UUID, .n_zones = 1 };
	e->zones[0] = (struct vw_zone_owner_energy){ VW_ZONE_PACKAGE, uj / 2, uj / 2, 5, 5 };
}

/* The frame the publisher behind `share` last wrote for the VM. */
static bool read_frame(const char *share, struct vw_host_frame *f)
{
	_cleanup_free_ char *p = path_of(share, UUID "/frame.json");
	_cleanup_free_ char *text = NULL;
	size_t len;

	text = vw_fixture_slurp(p, &len);
	return text && len > 1 && vw_proto_decode_host(text, len - 1, f) == VW_PROTO_OK;
}

static void test_two_publishers_in_process(void **state)
{
	char *dir = vw_fixture_mkdtemp("lock");
	_cleanup_free_ char *share1 = path_of(dir, "share1"), *share2 = path_of(dir, "share2");
	_cleanup_free_ char *locks = path_of(dir, "run/virtwatt/lock"), *note = NULL;
	_cleanup_free_ char *lockfile = path_of(locks, UUID ".lock");
	struct vw_publish_opts o = { .period_ns = SEC, .energy_step_uj = 1, .lock_dir = locks,
				     .procfs_root = "/proc", .seed = 3 };
	struct vw_publisher *p1, *p2;
	struct vw_publish_stats st;
	struct vw_publish_vm_stats vs;
	struct vw_vm_energy e;
	struct vw_host_frame f;
	uint64_t now = 1000 * SEC, refused;
	char want[64];

	(void)state;
	assert_int_equal(vw_fixture_mkdir(dir, "share1"), 0);
	assert_int_equal(vw_fixture_mkdir(dir, "share2"), 0);
	o.share_root = share1;
	o.epoch = 11;
	p1 = vw_publisher_new(&o);
	o.share_root = share2;
	o.epoch = 22;
	p2 = vw_publisher_new(&o);
	assert_true(p1 && p2);
	assert_false(exists(dir, "run")); /* created when a VM first needs its lock */

	vm_energy(&e, 10000000);
	assert_int_equal(vw_publisher_update(p1, &e, 1), 0);
	assert_int_equal(vw_publisher_update(p2, &e, 1), 0);
	assert_int_equal(vw_publisher_tick(p1, now, NULL), 0);
	assert_int_equal(vw_publisher_tick(p2, now, NULL), 0);
	assert_true(read_frame(share1, &f) && f.epoch == 11);
	assert_false(exists(share2, UUID)); /* the second publisher wrote nothing for the VM */
	vw_publisher_stats(p2, &st);
	assert_true(st.vms_held_elsewhere == 1 && st.vms_lock_failed == 0 && st.lock_refused >= 1);
	refused = st.lock_refused;
	assert_int_equal(vw_publisher_vm_stats(p2, UUID, &vs), 0);
	assert_false(vs.locked);
	assert_int_equal(vs.lock_holder_pid, getpid()); /* the kernel's record of the holder */
	assert_int_equal(vw_publisher_vm_stats(p1, UUID, &vs), 0);
	assert_true(vs.locked && vs.lock_refused == 0);
	note = vw_fixture_slurp(lockfile, NULL);
	snprintf(want, sizeof(want), "pid=%d epoch=11 host=", (int)getpid());
	assert_non_null(note);
	assert_true(strncmp(note, want, strlen(want)) == 0);
	{
		struct stat sb;

		assert_int_equal(stat(lockfile, &sb), 0);
		assert_int_equal(sb.st_mode & 0777, 0600);
	}

	/* Retried once a second, not on every tick. */
	for (int i = 1; i <= 9; i++)
		assert_int_equal(vw_publisher_tick(p2, now + (uint64_t)i * 100000000ULL, NULL), 0);
	vw_publisher_stats(p2, &st);
	assert_true(st.lock_refused == refused);
	assert_true(vw_publisher_next_due(p2) <= now + SEC);

	/* The first goes away: the second takes over, its counters for the VM starting now (the
	 * interval it was given before is not its to publish). */
	vm_energy(&e, 40000000);
	assert_int_equal(vw_publisher_update(p1, &e, 1), 0);
	assert_int_equal(vw_publisher_update(p2, &e, 1), 0);
	vw_publisher_free(p1);
	assert_int_equal(vw_publisher_tick(p2, now += SEC, NULL), 0);
	vw_publisher_stats(p2, &st);
	assert_true(st.vms_held_elsewhere == 0 && st.lock_refused == refused);
	assert_true(read_frame(share2, &f) && f.epoch == 22);
	assert_true(f.zones[0].idle_uj + f.zones[0].active_uj == 0);
	vm_energy(&e, 2000000);
	assert_int_equal(vw_publisher_update(p2, &e, 1), 0);
	assert_int_equal(vw_publisher_tick(p2, now += 2 * SEC, NULL), 0);
	assert_true(read_frame(share2, &f));
	assert_true(f.zones[0].idle_uj + f.zones[0].active_uj == 2000000);
	free(note);
	note = vw_fixture_slurp(lockfile, NULL);
	assert_non_null(strstr(note, "epoch=22"));

	/* Someone deletes the lock file and a third publisher locks a new one: the second stops. */
	assert_int_equal(unlink(lockfile), 0);
	o.share_root = share1;
	o.epoch = 33;
	p1 = vw_publisher_new(&o);
	assert_non_null(p1);
	assert_int_equal(vw_publisher_update(p1, &e, 1), 0);
	assert_int_equal(vw_publisher_tick(p1, now, NULL), 0);
	assert_true(read_frame(share1, &f) && f.epoch == 33);
	assert_int_equal(vw_publisher_tick(p2, now += 2 * SEC, NULL), 0);
	assert_int_equal(vw_publisher_tick(p2, now += 2 * SEC, NULL), 0);
	vw_publisher_stats(p2, &st);
	assert_true(st.vms_held_elsewhere == 1);
	vw_publisher_free(p1);
	vw_publisher_free(p2);
	vw_fixture_rm(dir);
}

/* A VM that vanishes from a publisher's list is unlocked: another may take it; when it comes
 * back the first is refused, and takes it again only once the other lets go. */
struct captured {
	unsigned warn, error;
};

static void capture_sink(enum vw_log_level level, const char *msg, void *ud)
{
	struct captured *c = ud;

	if (!strstr(msg, "is published by another process"))
		return;
	c->warn += level == VW_LOG_WARN;
	c->error += level == VW_LOG_ERROR;
}

/*
 * A VM another process publishes is an expected state (a handover, two instances side by
 * side): a warning, rate-limited, not an error on every retry (once a second).
 */
static void test_lock_conflict_rate_limited_warning(void **state)
{
	char *dir = vw_fixture_mkdtemp("lockw");
	_cleanup_free_ char *locks = path_of(dir, "lock");
	struct vw_publish_opts o = { .period_ns = SEC, .energy_step_uj = 1, .lock_dir = locks,
				     .procfs_root = "/proc", .seed = 3 };
	struct captured c = { 0 };
	struct vw_publisher *p1, *p2;
	struct vw_publish_stats st;
	struct vw_vm_energy e;
	uint64_t now = 1000 * SEC;

	(void)state;
	vw_clock_set_fake(&now);
	o.epoch = 1;
	p1 = vw_publisher_new(&o);
	o.epoch = 2;
	p2 = vw_publisher_new(&o);
	assert_true(p1 && p2);
	vm_energy(&e, 10000000);
	assert_int_equal(vw_publisher_update(p1, &e, 1), 0);
	assert_int_equal(vw_publisher_update(p2, &e, 1), 0);
	assert_int_equal(vw_publisher_tick(p1, now, NULL), 0);
	vw_log_set_sink(capture_sink, &c);
	for (int i = 0; i < 600; i++, now += SEC / 10) /* a minute of 100 ms ticks */
		assert_int_equal(vw_publisher_tick(p2, now, NULL), 0);
	vw_log_set_sink(NULL, NULL);
	vw_clock_set_fake(NULL);
	vw_publisher_stats(p2, &st);
	assert_true(st.lock_refused >= 55); /* retried every second all along */
	assert_int_equal(c.error, 0);
	assert_true(c.warn >= 1 && c.warn <= 7); /* 0, 1, 3, 7, 15, 31 s: six, not thirty */
	vw_publisher_free(p1);
	vw_publisher_free(p2);
	vw_fixture_rm(dir);
}

static void test_vanished_vm_unlocked(void **state)
{
	char *dir = vw_fixture_mkdtemp("lock");
	_cleanup_free_ char *locks = path_of(dir, "lock");
	struct vw_publish_opts o = { .period_ns = SEC, .lock_dir = locks, .seed = 5 };
	struct vw_publisher *p1 = vw_publisher_new(&o), *p2 = vw_publisher_new(&o);
	struct vw_publish_vm_stats vs;
	struct vw_vm_energy e;
	uint64_t now = 10 * SEC;

	(void)state;
	assert_true(p1 && p2);
	vm_energy(&e, 1000);
	assert_int_equal(vw_publisher_update(p1, &e, 1), 0);
	assert_int_equal(vw_publisher_update(p2, &e, 1), 0);
	assert_int_equal(vw_publisher_vm_stats(p1, UUID, &vs), 0);
	assert_true(vs.locked);
	assert_int_equal(vw_publisher_update(p1, NULL, 0), 0); /* gone from p1's list */
	assert_int_equal(vw_publisher_tick(p2, now += 2 * SEC, NULL), 0);
	assert_int_equal(vw_publisher_vm_stats(p2, UUID, &vs), 0);
	assert_true(vs.locked);
	assert_int_equal(vw_publisher_update(p1, &e, 1), 0); /* back */
	assert_int_equal(vw_publisher_tick(p1, now += 2 * SEC, NULL), 0);
	assert_int_equal(vw_publisher_vm_stats(p1, UUID, &vs), 0);
	assert_false(vs.locked);
	vw_publisher_free(p2);
	assert_int_equal(vw_publisher_tick(p1, now += 2 * SEC, NULL), 0);
	assert_int_equal(vw_publisher_vm_stats(p1, UUID, &vs), 0);
	assert_true(vs.locked);
	vw_publisher_free(p1);
	vw_fixture_rm(dir);
}

/* flock wrapped ('mock' in tests/meson.build): the next flocks find the named file unlinked
 * between the taker's open and its flock, as when its holder removes it at that moment. */
static const char *unlink_before_flock;
static int unlinks_left;

int __real_flock(int fd, int op);
int __wrap_flock(int fd, int op);
int __wrap_flock(int fd, int op)
{
	if (unlinks_left > 0 && (op & LOCK_EX)) {
		unlinks_left--;
		assert_int_equal(unlink(unlink_before_flock), 0);
	}
	return __real_flock(fd, op);
}

static bool locked(struct vw_publisher *p)
{
	struct vw_publish_vm_stats vs;

	assert_int_equal(vw_publisher_vm_stats(p, UUID, &vs), 0);
	return vs.locked;
}

static void test_lock_unlinked_before_flock(void **state)
{
	char *dir = vw_fixture_mkdtemp("lock");
	_cleanup_free_ char *locks = path_of(dir, "lock");
	_cleanup_free_ char *file = path_of(locks, UUID ".lock");
	struct vw_publish_opts o = { .period_ns = SEC, .lock_dir = locks, .seed = 5 };
	struct vw_publisher *p1 = vw_publisher_new(&o), *p2 = vw_publisher_new(&o);
	struct vw_vm_energy e;
	uint64_t now = 10 * SEC;

	(void)state;
	assert_true(p1 && p2);
	vm_energy(&e, 1000);
	/* p1 opens (creates) the file, which is unlinked before its flock: it opens the name again
	 * and locks that file, the one p2 then finds locked. */
	unlink_before_flock = file;
	unlinks_left = 1;
	assert_int_equal(vw_publisher_update(p1, &e, 1), 0);
	assert_int_equal(unlinks_left, 0);
	assert_true(locked(p1));
	assert_true(exists(locks, UUID ".lock"));
	assert_int_equal(vw_publisher_update(p2, &e, 1), 0);
	assert_false(locked(p2)); /* one publisher, not two */
	vw_publisher_free(p1);
	/* Unlinked under it every time: not taken (never on an unlinked file), tried again later. */
	unlinks_left = 4;
	assert_int_equal(vw_publisher_tick(p2, now += 2 * SEC, NULL), 0);
	assert_int_equal(unlinks_left, 0);
	assert_false(locked(p2));
	assert_int_equal(vw_publisher_tick(p2, now += 2 * SEC, NULL), 0);
	assert_true(locked(p2));
	assert_true(exists(locks, UUID ".lock"));
	vw_publisher_free(p2);
	vw_fixture_rm(dir);
}

/* A VM gone for good: its last holder removes its lock file, unless another process holds it. */
static void test_gone_vm_lock_removed(void **state)
{
	char *dir = vw_fixture_mkdtemp("lock");
	_cleanup_free_ char *locks = path_of(dir, "lock");
	struct vw_publish_opts o = { .period_ns = SEC, .lock_dir = locks, .seed = 5,
				     .retain_ns = 10 * SEC };
	struct vw_publisher *p1 = vw_publisher_new(&o), *p2 = vw_publisher_new(&o);
	struct vw_vm_energy e;
	uint64_t now = 10 * SEC;

	(void)state;
	assert_true(p1 && p2);
	vm_energy(&e, 1000);
	/* Taken over: p1 forgets the VM, p2 holds it and keeps its file. */
	assert_int_equal(vw_publisher_tick(p1, now, NULL), 0);
	assert_int_equal(vw_publisher_update(p1, &e, 1), 0);
	assert_true(locked(p1));
	assert_int_equal(vw_publisher_update(p2, &e, 1), 0);
	assert_int_equal(vw_publisher_update(p1, NULL, 0), 0);
	assert_int_equal(vw_publisher_tick(p2, now += 2 * SEC, NULL), 0);
	assert_true(locked(p2));
	assert_int_equal(vw_publisher_tick(p1, now += 20 * SEC, NULL), 0);
	assert_int_equal(vw_publisher_update(p1, NULL, 0), 0); /* forgotten */
	assert_int_equal(vw_publisher_vm_stats(p1, UUID, &(struct vw_publish_vm_stats){ 0 }),
			 -ENOENT);
	assert_true(exists(locks, UUID ".lock"));
	assert_int_equal(vw_publisher_tick(p2, now += 2 * SEC, NULL), 0);
	assert_true(locked(p2)); /* its file is still the name's */
	/* Gone from p2 too: kept retain_ns, then its file goes with it. */
	assert_int_equal(vw_publisher_update(p2, NULL, 0), 0);
	assert_int_equal(vw_publisher_tick(p2, now += 5 * SEC, NULL), 0);
	assert_int_equal(vw_publisher_update(p2, NULL, 0), 0);
	assert_true(exists(locks, UUID ".lock"));
	assert_int_equal(vw_publisher_tick(p2, now += 6 * SEC, NULL), 0);
	assert_int_equal(vw_publisher_update(p2, NULL, 0), 0);
	assert_false(exists(locks, UUID ".lock"));
	/* The VM back on p1: a new file, locked. */
	assert_int_equal(vw_publisher_update(p1, &e, 1), 0);
	assert_true(locked(p1));
	assert_true(exists(locks, UUID ".lock"));
	vw_publisher_free(p1);
	vw_publisher_free(p2);
	vw_fixture_rm(dir);
}

/* A lock directory that cannot be made: nothing is published, nothing breaks, it is exported. */
static void test_lock_dir_unusable(void **state)
{
	char *dir = vw_fixture_mkdtemp("lock");
	_cleanup_free_ char *share = path_of(dir, "share"), *bad = path_of(dir, "file/lock");
	struct vw_publish_opts o = { .period_ns = SEC, .share_root = share, .lock_dir = bad };
	struct vw_publisher *p;
	struct vw_publish_stats st;
	struct vw_vm_energy e;

	(void)state;
	assert_int_equal(vw_fixture_mkdir(dir, "share"), 0);
	assert_int_equal(vw_fixture_write(dir, "file", "not a directory\n", 0), 0);
	p = vw_publisher_new(&o);
	assert_non_null(p);
	vm_energy(&e, 1000);
	assert_int_equal(vw_publisher_update(p, &e, 1), 0);
	for (uint64_t t = 1; t <= 3; t++)
		assert_int_equal(vw_publisher_tick(p, t * SEC, NULL), 0);
	vw_publisher_stats(p, &st);
	assert_true(st.vms_lock_failed == 1 && st.vms_held_elsewhere == 0);
	assert_false(exists(share, UUID));
	vw_publisher_free(p);
	vw_fixture_rm(dir);
}

/* ---- two real daemons ---- */

#define QEMU_PID 4242

struct meter {
	struct host_fixture fx;
	struct host_fixture_clock clock;
	bool run;
	uint64_t vcpu_ns; /* the QEMU's vCPU threads' CPU time */
};

/* While `run`, every 100 ms: the meter advances a simulated second (half busy) and the VM's
 * vCPU threads run 100 ms and 50 ms. */
static void meter_step(void *ud)
{
	struct meter *m = ud;
	char rel[64], text[64];

	if (!m->run)
		return;
	m->vcpu_ns += 50000000;
	for (int t = 1; t <= 2; t++) {
		snprintf(rel, sizeof(rel), "%d/task/%d/schedstat", QEMU_PID, QEMU_PID + t);
		snprintf(text, sizeof(text), "%" PRIu64 " 0 0\n", m->vcpu_ns * (uint64_t)(3 - t));
		(void)host_fixture_stage(&m->fx, m->fx.proc, rel, text);
	}
	(void)host_fixture_advance(&m->fx, 0.5);
}

static void meter_run(struct meter *m, bool run)
{
	pthread_mutex_lock(&m->clock.lock);
	m->run = run;
	pthread_mutex_unlock(&m->clock.lock);
}

/*
 * The fixture host both daemon tests run on: one package zone at 200 W, one QEMU process (the VM,
 * two vCPU threads) in its /proc, a share folder in dir, the meter's clock running; and the
 * daemon's --host.sysfs, --host.procfs, --passthrough.share-root, --passthrough.lock-dir
 * options for it (each 600 bytes). Stopped and freed by meter_free().
 */
static struct meter *meter_new(const char *dir, const char *share, const char *locks,
			       char sys[static 600], char proc[static 600], char sh[static 600],
			       char lk[static 600])
{
	static const struct host_fixture_zone zones[] = {
		{ "intel-rapl:0", "package-0", 262143328850ULL, 0, 20 }, /* x10 per s: 200 W */
	};
	static const char *const threads[] = { "qemu-system-x86", "CPU 0/TCG", "CPU 1/TCG", NULL };
	struct meter *m = calloc(1, sizeof(*m));

	assert_non_null(m);
	assert_int_equal(host_fixture_init(&m->fx, zones, 1, 4), 0);
	assert_int_equal(vm_fixture_proc(m->fx.proc, QEMU_PID, 5000,
					 "/usr/bin/qemu-system-x86_64|-name|guest=vm1|-uuid|" UUID
					 "|-smp|2",
					 threads, NULL),
			 0);
	assert_int_equal(vw_fixture_mkdir(dir, "share"), 0);
	snprintf(sys, 600, "--host.sysfs=%s", m->fx.sys);
	snprintf(proc, 600, "--host.procfs=%s", m->fx.proc);
	snprintf(sh, 600, "--passthrough.share-root=%s", share);
	snprintf(lk, 600, "--passthrough.lock-dir=%s", locks);
	m->fx.atomic = true; /* daemons read the meter while it advances */
	m->run = true;
	assert_int_equal(host_fixture_clock_start(&m->clock, 100, meter_step, m), 0);
	return m;
}

static void meter_free(struct meter *m)
{
	host_fixture_clock_stop(&m->clock);
	host_fixture_fini(&m->fx);
	free(m);
}

/* The VM's package energy as a daemon counts it (active + idle), or -1 if unreachable. */
static double vm_joules(unsigned port, char **ret_body)
{
	char url[64];
	long code = 0;
	char *body;
	double j;

	snprintf(url, sizeof(url), "http://127.0.0.1:%u/metrics", port);
	body = vw_fixture_http_get(url, &code);
	if (!body || code != 200) {
		free(body);
		return -1;
	}
	j = vw_fixture_sample_sum(body, "kepler_vm_cpu_joules_total", THE_VM) +
	    vw_fixture_sample_sum(body, "virtwatt_vm_cpu_idle_joules_total", THE_VM);
	if (ret_body)
		*ret_body = body;
	else
		free(body);
	return j;
}

static double guest_joules(struct vw_reader *rd)
{
	const struct vw_proto_acc_zone *z = &vw_reader_acc(rd)->zones[VW_ZONE_PACKAGE];

	(void)vw_reader_poll(rd);
	return (double)(z->idle_uj + z->active_uj) / 1e6;
}

/* The meter runs for seconds while the guest reads every 200 ms, as its daemon would: a reader
 * that looks only now and then meets a new publisher's epoch late, with more energy than it
 * can believe began since (a takeover then counts from the frame it first sees). */
static void run_and_read(struct meter *m, struct vw_reader *rd, int seconds)
{
	meter_run(m, true);
	for (int i = 0; i < seconds * 5; i++) {
		usleep(200 * 1000);
		(void)vw_reader_poll(rd);
	}
	meter_run(m, false);
}

/* With the meter stopped: wait until the guest's total and the daemon's VM energy stay put for
 * 2.5 s (the last measured energy published and read). */
static void settle(struct vw_reader *rd, unsigned port, double *ret_guest, double *ret_vm)
{
	double g = -1, v = -1;

	for (int i = 0; i < 40; i++) {
		double g2, v2;

		usleep(2500 * 1000);
		g2 = guest_joules(rd);
		v2 = vm_joules(port, NULL);
		if (g2 == g && v2 == v && v >= 0) {
			*ret_guest = g;
			*ret_vm = v;
			return;
		}
		g = g2;
		v = v2;
	}
	fail_msg("the guest's total or the VM's energy never settled");
}

static bool log_has(const char *logpath, const char *needle, int timeout_s)
{
	for (int i = 0; i < timeout_s * 10; i++) {
		_cleanup_free_ char *log = vw_fixture_slurp(logpath, NULL);

		if (log && strstr(log, needle))
			return true;
		usleep(100 * 1000);
	}
	return false;
}

static void test_two_daemons(void **state)
{
	struct meter *m;
	char *dir = vw_fixture_mkdtemp("lockd");
	_cleanup_free_ char *share = path_of(dir, "share"), *locks = path_of(dir, "lock");
	_cleanup_free_ char *vmdir = path_of(share, UUID), *log1 = path_of(dir, "host1.log");
	_cleanup_free_ char *log2 = path_of(dir, "host2.log"), *body = NULL;
	char sys[600], proc[600], sh[600], lk[600], name[64], msg[128];
	char *argv[] = { VW_HOST_BIN, sys, proc, sh, lk, name, "--libvirt.uri=",
			 "--web.listen-address=127.0.0.1:0", "--monitor.interval=1s",
			 "--monitor.sample-interval=200ms", "--passthrough.interval=1s",
			 "--cpu.accounting=procfs", "--metrics.process-top-n=0", NULL };
	struct vw_reader_config rc = { .path = vmdir, .vm_uuid = UUID };
	struct vw_reader *rd;
	struct vw_reader_health h;
	struct vw_host_frame f;
	unsigned port1 = 0, port2 = 0;
	pid_t pid1, pid2;
	double g0, v0, g1, v1, g2, v2;
	uint64_t epoch1;

	(void)state;
	m = meter_new(dir, share, locks, sys, proc, sh, lk); /* two daemons read the meter */

	/* The first daemon publishes the VM. */
	snprintf(name, sizeof(name), "--kube.node-name=lock1");
	assert_int_equal(vw_fixture_start_daemon_logged(argv, log1, &pid1, &port1), 0);
	for (int i = 0; i < 100 && !read_frame(share, &f); i++)
		usleep(100 * 1000);
	assert_true(read_frame(share, &f));
	epoch1 = f.epoch;

	/* The second refuses it, naming the first, and exports the refusal. */
	snprintf(name, sizeof(name), "--kube.node-name=lock2");
	assert_int_equal(vw_fixture_start_daemon_logged(argv, log2, &pid2, &port2), 0);
	/* Its procfs is the fixture's, without /proc/locks: the PID comes from the lock file. */
	snprintf(msg, sizeof(msg), "its lock file says 'pid=%d epoch=%" PRIu64, (int)pid1, epoch1);
	assert_true(log_has(log2, msg, 20));
	assert_true(log_has(log2, "Stop the other virtwatt-host", 1));
	for (int i = 0; i < 100; i++) {
		free(body);
		body = NULL;
		if (vm_joules(port2, &body) > 0 &&
		    vw_fixture_sample_sum(body, "virtwatt_passthrough_vms_not_published",
			       "reason=\"held_elsewhere\"") == 1)
			break;
		usleep(100 * 1000);
	}
	assert_non_null(body);
	assert_true(vw_fixture_sample_sum(body, "virtwatt_passthrough_vms_not_published",
			       "reason=\"held_elsewhere\"") == 1);
	assert_true(vw_fixture_sample_sum(body, "virtwatt_passthrough_lock_refused_total", NULL) >=
		    1);

	/* The guest reads the VM's folder; the meter stops while both daemons catch up. */
	rd = vw_reader_new(&rc);
	assert_non_null(rd);
	meter_run(m, false);
	settle(rd, port2, &g0, &v0);
	assert_true(read_frame(share, &f) && f.epoch == epoch1); /* the second never wrote */
	run_and_read(m, rd, 5);
	settle(rd, port2, &g1, &v1);
	assert_true(read_frame(share, &f) && f.epoch == epoch1);

	/* The first exits: the second takes over within about a second, without a restart. */
	assert_int_equal(vw_fixture_stop_daemon(pid1), 0);
	assert_true(log_has(log2, "its lock is ours now, publishing it", 20));
	for (int i = 0; i < 100 && !(read_frame(share, &f) && f.epoch != epoch1); i++) {
		usleep(100 * 1000);
		(void)vw_reader_poll(rd);
	}
	assert_true(f.epoch != epoch1);
	run_and_read(m, rd, 5);
	settle(rd, port2, &g2, &v2);
	assert_true(read_frame(share, &f) && f.epoch != epoch1);
	vw_reader_health(rd, &h);
	print_message("# guest counted %.3f J + %.3f J; the VM used %.3f J + %.3f J (host 2's "
		      "count); epochs %" PRIu64 ", takeovers %" PRIu64 ", conflicts %" PRIu64 "\n",
		      g1 - g0, g2 - g1, v1 - v0, v2 - v1, h.epochs, h.takeovers,
		      h.rejected[VW_PROTO_E_CONFLICT]);
	assert_true(v1 - v0 > 0 && v2 - v1 > 0);
	assert_double_near(g1 - g0, v1 - v0, (v1 - v0) / 10);
	assert_double_near(g2 - g1, v2 - v1, (v2 - v1) / 10);
	assert_true(h.epochs == 1 && h.rejected[VW_PROTO_E_CONFLICT] == 0);

	assert_int_equal(vw_fixture_stop_daemon(pid2), 0);
	vw_reader_free(rd);
	meter_free(m);
	vw_fixture_rm(dir);
}

/* /metrics of the daemon on port (NULL on failure). */
static char *scrape(unsigned port)
{
	char url[64];
	long code = 0;
	char *body;

	snprintf(url, sizeof(url), "http://127.0.0.1:%u/metrics", port);
	body = vw_fixture_http_get(url, &code);
	if (body && code != 200) {
		free(body);
		body = NULL;
	}
	return body;
}

/* Scrapes, 100 ms apart, until family{match} sums to want: false after 5 s (*body: the last). */
static bool scrape_until(unsigned port, const char *family, const char *match, double want,
			 char **body)
{
	for (int i = 0; i < 50; i++) {
		free(*body);
		*body = scrape(port);
		if (*body && vw_fixture_sample_sum(*body, family, match) == want)
			return true;
		usleep(100 * 1000);
	}
	return false;
}

/*
 * A Kepler command line on a node with VMs, --metrics=node,container,pod: the host starts, the
 * VM's energy is still computed and passed to it (no kepler_vm_* series), and whether the VM
 * receives its power is in virtwatt_vm_passthrough_*: frames written, the last success, the
 * state; a folder that cannot be written counts failures and the last success stops.
 */
static void test_delivery_metrics_without_vm_series(void **state)
{
	struct meter *m;
	char *dir = vw_fixture_mkdtemp("deliv");
	_cleanup_free_ char *share = path_of(dir, "share"), *locks = path_of(dir, "lock");
	_cleanup_free_ char *vmdir = path_of(share, UUID), *log = path_of(dir, "host.log");
	_cleanup_free_ char *body = NULL;
	char sys[600], proc[600], sh[600], lk[600];
	char *argv[] = { VW_HOST_BIN, sys, proc, sh, lk, "--libvirt.uri=",
			 "--web.listen-address=127.0.0.1:0", "--monitor.interval=1s",
			 "--monitor.sample-interval=200ms", "--passthrough.interval=1s",
			 "--cpu.accounting=procfs", "--metrics=node,container,pod",
			 "--kube.node-name=deliv", NULL };
	const char *frames_share[] = { THE_VM, "transport=\"share\"", NULL };
	const char *absent[] = { THE_VM, "state=\"absent\"", NULL };
	const char *share_fail[] = { THE_VM, "reason=\"share_write\"", NULL };
	struct vw_host_frame f;
	unsigned port = 0;
	pid_t pid;
	double last_ok = 0, frames = 0;
	int i;

	(void)state;
	m = meter_new(dir, share, locks, sys, proc, sh, lk);
	assert_int_equal(vw_fixture_start_daemon_logged(argv, log, &pid, &port), 0);
	/* The VM gets frames with energy in them. */
	for (i = 0; i < 150 && !(read_frame(share, &f) && f.n_zones && f.zones[0].active_uj > 0);
	     i++)
		usleep(100 * 1000);
	assert_true(i < 150);
	for (i = 0; i < 100; i++) {
		free(body);
		body = scrape(port);
		if (body && vw_fixture_sample_sum_all(body, "virtwatt_vm_passthrough_frames_total",
						      frames_share) >= 2)
			break;
		usleep(100 * 1000);
	}
	assert_non_null(body);
	/* No VM series: --metrics lacks vm. */
	assert_null(strstr(body, "kepler_vm_cpu_joules_total{"));
	frames = vw_fixture_sample_sum_all(body, "virtwatt_vm_passthrough_frames_total",
					   frames_share);
	assert_true(frames >= 2);
	last_ok = vw_fixture_sample_sum(body,
					"virtwatt_vm_passthrough_last_success_timestamp_seconds",
					THE_VM);
	assert_true(fabs(last_ok - (double)time(NULL)) < 30);
	assert_true(vw_fixture_sample_sum_all(body, "virtwatt_vm_passthrough_channel_state",
					      absent) == 1);
	assert_true(vw_fixture_sample_sum_all(body, "virtwatt_vm_passthrough_failures_total",
					      share_fail) == 0);
	/* The folder becomes unwritable (a file where the VM's directory was). */
	{ /* swapped in one step: the daemon makes a missing folder again at its next round */
		_cleanup_free_ char *swap = path_of(share, UUID ".old");

		assert_int_equal(vw_fixture_write(share, UUID ".old", "not a directory", 0), 0);
		assert_int_equal(renameat2(AT_FDCWD, swap, AT_FDCWD, vmdir, RENAME_EXCHANGE), 0);
		/* the folder, now (takes its argument); again while the daemon's write of a file
		 * into it (through the directory fd it holds) kept it from going */
		for (i = 0; i < 50 && access(swap, F_OK) == 0; i++)
			vw_fixture_rm(strdup(swap));
		assert_int_equal(access(swap, F_OK), -1);
	}
	for (i = 0; i < 100; i++) {
		free(body);
		body = scrape(port);
		if (body && vw_fixture_sample_sum_all(body, "virtwatt_vm_passthrough_failures_total",
						      share_fail) >= 2)
			break;
		usleep(100 * 1000);
	}
	assert_true(i < 100);
	/* The last success stays where it was while failures go on: an alert on time() - it
	 * fires. */
	{
		const char *ts = "virtwatt_vm_passthrough_last_success_timestamp_seconds";
		double ok1 = vw_fixture_sample_sum(body, ts, THE_VM), fail1, ok2;

		fail1 = vw_fixture_sample_sum_all(body, "virtwatt_vm_passthrough_failures_total",
						  share_fail);
		assert_true(ok1 - last_ok < 2.5);
		usleep(2500 * 1000);
		free(body);
		body = scrape(port);
		assert_non_null(body);
		ok2 = vw_fixture_sample_sum(body, ts, THE_VM);
		assert_true(ok2 == ok1);
		assert_true((double)time(NULL) - ok2 >= 2);
		assert_true(vw_fixture_sample_sum_all(body, "virtwatt_vm_passthrough_failures_total",
						      share_fail) > fail1);
	}
	assert_int_equal(vw_fixture_stop_daemon(pid), 0);
	meter_free(m);
	vw_fixture_rm(dir);
}



/* meter_new() in a mount namespace of this process's (the daemon's too: a FUSE mount made in it
 * goes with them). */
static struct meter *hung_meter_new(const char *dir, const char *share, const char *locks,
				    char sys[static 600], char proc[static 600],
				    char sh[static 600], char lk[static 600])
{
	assert_int_equal(unshare(CLONE_NEWNS), 0);
	assert_int_equal(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	return meter_new(dir, share, locks, sys, proc, sh, lk);
}
/* A real daemon on the meter's trees (sys, proc), its share root and lock directory (sh, lk),
 * publishing every second, its node named node. */
#define HUNG_DAEMON_ARGV(node)                                                                \
	{ VW_HOST_BIN, sys, proc, sh, lk, "--libvirt.uri=", "--web.listen-address=127.0.0.1:0",  \
	  "--monitor.interval=1s", "--monitor.sample-interval=200ms",                           \
	  "--passthrough.interval=1s", "--cpu.accounting=procfs", "--kube.node-name=" node,     \
	  NULL }
/*
 * The real daemon with its VM's folder on a FUSE mount nobody serves (a dead NFS hard mount, a
 * stuck virtiofsd). Before, its loop blocked in the folder's first open: the node's energy stood
 * still in /metrics, and /healthz failed 3 intervals + 10 s later. Now the loop goes on: the
 * node's energy grows between two scrapes, /healthz answers 200, the stall is exported
 * (virtwatt_passthrough_share_stalled_vms 1, failures of reason share_timeout growing), and once
 * the mount goes the folder gets its frame and the stall is over.
 */
static void test_hung_share_daemon(void **state)
{
	struct meter *m;
	char *dir = vw_fixture_mkdtemp("hungd");
	_cleanup_free_ char *share = path_of(dir, "share"), *locks = path_of(dir, "lock");
	_cleanup_free_ char *vmdir = path_of(share, UUID), *log = path_of(dir, "host.log");
	_cleanup_free_ char *body = NULL;
	char sys[600], proc[600], sh[600], lk[600], url[64];
	char *argv[] = HUNG_DAEMON_ARGV("hungd");
	const char *timeouts[] = { THE_VM, "reason=\"share_timeout\"", NULL };
	const char *node = "node_name=\"hungd\"", *package = "zone=\"package\"";
	struct vw_host_frame f;
	double joules, late;
	unsigned port = 0;
	long code = 0;
	int fuse_fd = -1, r, i;
	pid_t pid;

	(void)state;
	REQUIRE(geteuid() == 0 && access("/dev/fuse", R_OK | W_OK) == 0,
		"a FUSE mount needs root and /dev/fuse");
	m = hung_meter_new(dir, share, locks, sys, proc, sh, lk);
	assert_int_equal(vw_fixture_mkdir(share, UUID), 0);
	r = vw_fixture_fuse_hang(vmdir, &fuse_fd);
	REQUIRE(r == 0, "cannot mount FUSE: %s", strerror(-r));
	assert_int_equal(vw_fixture_start_daemon_logged(argv, log, &pid, &port), 0);
	for (i = 0; i < 150; i++) {
		free(body);
		body = scrape(port);
		if (body && vw_fixture_sample_sum_all(body, "virtwatt_vm_passthrough_failures_total",
						      timeouts) >= 2)
			break;
		usleep(100 * 1000);
	}
	if (i == 150)
		vw_fixture_fuse_end(vmdir, &fuse_fd); /* (the old daemon: let it stop) */
	assert_true(i < 150);
	assert_true(vw_fixture_sample_sum(body, "virtwatt_passthrough_share_stalled_vms", node) == 1);
	joules = vw_fixture_sample_sum(body, "kepler_node_cpu_joules_total", package);
	late = vw_fixture_sample_sum_all(body, "virtwatt_vm_passthrough_failures_total", timeouts);
	usleep(3000 * 1000);
	free(body);
	body = scrape(port);
	assert_non_null(body);
	assert_true(vw_fixture_sample_sum(body, "kepler_node_cpu_joules_total", package) > joules);
	assert_true(vw_fixture_sample_sum_all(body, "virtwatt_vm_passthrough_failures_total",
					      timeouts) > late);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/healthz", port);
	free(vw_fixture_http_get(url, &code));
	assert_int_equal(code, 200);

	/* It answers again (the mount gone): the folder is written, the stall over. */
	vw_fixture_fuse_end(vmdir, &fuse_fd);
	for (i = 0; i < 100 && !read_frame(share, &f); i++)
		usleep(100 * 1000);
	assert_true(i < 100);
	assert_true(scrape_until(port, "virtwatt_passthrough_share_stalled_vms", node, 0, &body));
	assert_true(log_has(log, "its file system does not answer", 1));
	assert_true(log_has(log, "its file system answers again", 1));
	assert_int_equal(vw_fixture_stop_daemon(pid), 0);
	meter_free(m);
	vw_fixture_rm(dir);
}

/*
 * The share root on a file system that does not answer (a folder of a dead NFS mount, say): the
 * daemon opened it at start on its own thread, before it served anything, and never started (no
 * /metrics, no /healthz, no frame on any channel). Now the open is waited for 1 s: the daemon
 * starts with the folders off, says so once and counts it (virtwatt_passthrough_share_root_
 * stalled), its intervals close; once the root answers (here: the mount gone, the folder under it
 * there) the VM's folder gets frames.
 */
struct hung_root {
	char *mnt;
	int fuse_fd;
	pid_t pid;
};

/* A check that, failing, lets the daemon and the mount go first (the old daemon never ends). */
static void hung_root_check(struct hung_root *h, bool ok, const char *what)
{
	if (ok)
		return;
	vw_fixture_fuse_end(h->mnt, &h->fuse_fd);
	vw_fixture_kill(&h->pid);
	fail_msg("%s", what);
}

static void test_hung_share_root_daemon(void **state)
{
	struct meter *m;
	char *dir = vw_fixture_mkdtemp("hungr");
	_cleanup_free_ char *mnt = path_of(dir, "nfs"), *share = path_of(mnt, "share");
	_cleanup_free_ char *locks = path_of(dir, "lock"), *log = path_of(dir, "host.log");
	_cleanup_free_ char *body = NULL;
	char sys[600], proc[600], sh[600], lk[600], url[64];
	char *argv[] = HUNG_DAEMON_ARGV("hungr");
	const char *node = "node_name=\"hungr\"", *package = "zone=\"package\"";
	struct hung_root h = { .mnt = mnt, .fuse_fd = -1, .pid = -1 };
	struct vw_host_frame f;
	double joules;
	unsigned port = 0;
	long code = 0;
	int r, i;

	(void)state;
	REQUIRE(geteuid() == 0 && access("/dev/fuse", R_OK | W_OK) == 0,
		"a FUSE mount needs root and /dev/fuse");
	m = hung_meter_new(dir, share, locks, sys, proc, sh, lk);
	assert_int_equal(vw_fixture_mkdir(mnt, "share"), 0); /* (under the mount: there after it) */
	r = vw_fixture_fuse_hang(mnt, &h.fuse_fd);
	REQUIRE(r == 0, "cannot mount FUSE: %s", strerror(-r));
	/* (bounded: a daemon not listening within 10 s is killed) */
	r = vw_fixture_start_daemon_logged(argv, log, &h.pid, &port);
	hung_root_check(&h, r == 0, "the daemon did not start with its share root hung");
	for (i = 0; i < 50; i++) {
		free(body);
		body = scrape(port);
		if (body && vw_fixture_sample_sum(body, "kepler_node_cpu_joules_total", package) > 0)
			break;
		usleep(100 * 1000);
	}
	hung_root_check(&h, i < 50, "no node energy within 5 s");
	hung_root_check(&h,
			vw_fixture_sample_sum(body, "virtwatt_passthrough_share_root_stalled",
					      node) == 1,
			"the share root's stall is not counted");
	joules = vw_fixture_sample_sum(body, "kepler_node_cpu_joules_total", package);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/healthz", port);
	free(vw_fixture_http_get(url, &code));
	hung_root_check(&h, code == 200, "/healthz failed");
	usleep(2500 * 1000);
	free(body);
	body = scrape(port);
	hung_root_check(&h,
			body && vw_fixture_sample_sum(body, "kepler_node_cpu_joules_total",
						      package) > joules,
			"the intervals stopped closing");

	/* It answers (the mount gone, the folder under it there): the VM's folder gets frames. */
	vw_fixture_fuse_end(mnt, &h.fuse_fd);
	for (i = 0; i < 100 && !read_frame(share, &f); i++)
		usleep(100 * 1000);
	hung_root_check(&h, i < 100, "no frame in the folder 10 s after the root answers");
	assert_string_equal(f.vm_uuid, UUID);
	hung_root_check(&h,
			scrape_until(port, "virtwatt_passthrough_share_root_stalled", node, 0,
				     &body),
			"the share root's stall not over");
	hung_root_check(&h, log_has(log, "does not answer", 1), "the stall not said");
	hung_root_check(&h, log_has(log, "answers: the VMs' shared folders are written", 1),
			"its end not said");
	assert_int_equal(vw_fixture_stop_daemon(h.pid), 0);
	meter_free(m);
	vw_fixture_rm(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_publishers_in_process),
		cmocka_unit_test(test_lock_conflict_rate_limited_warning),
		cmocka_unit_test(test_vanished_vm_unlocked),
		cmocka_unit_test(test_lock_unlinked_before_flock),
		cmocka_unit_test(test_gone_vm_lock_removed),
		cmocka_unit_test(test_lock_dir_unusable),
		cmocka_unit_test(test_two_daemons),
		cmocka_unit_test(test_delivery_metrics_without_vm_series),
		cmocka_unit_test(test_hung_share_daemon),
		cmocka_unit_test(test_hung_share_root_daemon),
	};

	vw_log_set_level(VW_LOG_WARN);
	if (getenv("VW_TEST_FILTER")) /* one test: VW_TEST_FILTER=test_hung_share_root_daemon */
		cmocka_set_test_filter(getenv("VW_TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PID namespaces (shared/workload/pidns.h): the probe and the map on fixture
 * procfs trees (ns/pid links "pid:[N]", status files with NSpid lines), then on this machine's
 * /proc (SAME for a test in the initial namespace) and on real child namespaces made here with
 * unshare(2): a child namespace's own procfs seen from outside (CHILD_PROCFS), and this
 * machine's /proc seen from inside one (DAEMON_IN_CHILD, its processes' PIDs translated).
 */
#include "vw_test.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture.h"
#include "pidns.h"
#include "log.h"

#define INIT "pid:[4026531836]"
#define CHILD "pid:[4026532177]"
#define OTHER "pid:[4026532300]"

/* A process of the fixture: <pid>/status with this NSpid line ("" for none, NULL for no
 * status) and <pid>/ns/pid pointing at link (NULL: none). */
static void proc(const char *root, unsigned pid, const char *nspid, const char *link)
{
	char rel[64], text[512];

	if (nspid) {
		snprintf(rel, sizeof(rel), "%u/status", pid);
		snprintf(text, sizeof(text),
			 "Name:\tx\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t%u\nNgid:\t0\n"
			 "Pid:\t%u\nPPid:\t1\nTracerPid:\t0\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\n"
			 "FDSize:\t64\nGroups:\t\n%s%s%sNSpgid:\t%u\nVmPeak:\t1 kB\n",
			 pid, pid, *nspid ? "NSpid:\t" : "", nspid, *nspid ? "\n" : "", pid);
		assert_int_equal(vw_fixture_write(root, rel, text, 0), 0);
	}
	if (link) {
		snprintf(rel, sizeof(rel), "%u/ns", pid);
		assert_int_equal(vw_fixture_mkdir(root, rel), 0);
		snprintf(rel, sizeof(rel), "%u/ns/pid", pid);
		assert_int_equal(vw_fixture_symlink(root, link, rel), 0);
	}
}

/* <root>/self -> <pid>, replacing any. */
static void self_is(const char *root, unsigned pid)
{
	char target[16], path[600];

	snprintf(path, sizeof(path), "%s/self", root);
	(void)unlink(path);
	snprintf(target, sizeof(target), "%u", pid);
	assert_int_equal(vw_fixture_symlink(root, target, "self"), 0);
}

/* PID 2 of the fixture: kthreadd (flags with PF_KTHREAD) or a plain process. */
static void pid2(const char *root, bool kthread)
{
	assert_int_equal(vw_fixture_write(root, "2/stat",
					  kthread ? "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0\n"
						  : "2 (sh (x) y) S 1 2 2 0 -1 4194560 0 0\n",
					  0),
			 0);
}

static struct vw_pidns probe(struct vw_fixture_root *f, enum vw_pidns_mode want)
{
	struct vw_pidns ns;

	assert_int_equal(vw_pidns_probe(f->fd, &ns), 0);
	if (ns.mode != want)
		fail_msg("mode %s, expected %s (%s)", vw_pidns_mode_name(ns.mode),
			 vw_pidns_mode_name(want), ns.how);
	return ns;
}

/* ---- The probe on fixtures ---- */

struct fx_proc {
	unsigned pid;
	const char *nspid, *link; /* as proc() takes them */
};

struct probe_case {
	const char *what;
	struct fx_proc procs[3];
	unsigned self; /* <root>/self -> this PID, 0: none */
	int kthreadd;  /* 2/stat: -1 none, 0 a plain process, 1 kthreadd */
	enum vw_pidns_mode want;
	uint32_t daemon_pid;
	unsigned level;
	uint64_t procfs_ino; /* 0: not checked */
	const char *how;     /* a part of the explanation */
};

static const struct probe_case probe_cases[] = {
	{ "the host's /proc, the daemon in it", { { 1, "1", INIT }, { 100, "100", INIT } }, 100,
	  -1, VW_PIDNS_SAME, 100, 0, VW_PIDNS_INIT_INO, "1/ns/pid is pid:[4026531836]" },
	{ "a container's own /proc", { { 1, "1", CHILD }, { 7, "7", CHILD } }, 7, -1,
	  VW_PIDNS_CHILD_PROCFS, 7, 0, 4026532177u, NULL },
	{ "another namespace's /proc, the daemon not in it (self dangling)", { { 1, "1", CHILD } },
	  4242, -1, VW_PIDNS_CHILD_PROCFS, 0, 0, 4026532177u, "not among" },
	{ "a pod without hostPID mounting the host's /proc",
	  { { 1, "1", INIT }, { 4242, "4242\t1", OTHER } }, 4242, -1, VW_PIDNS_DAEMON_IN_CHILD,
	  4242, 1, VW_PIDNS_INIT_INO, NULL },
	/* PID 1's link unreadable (as for root here: PID 1 holds capabilities the test lacks). */
	{ "the daemon in it tells by its own link", { { 1, "1", NULL }, { 100, "100", INIT } }, 100,
	  -1, VW_PIDNS_SAME, 100, 0, VW_PIDNS_INIT_INO, "the daemon lives in it" },
	{ "the daemon in it, a child namespace", { { 1, "1", NULL }, { 101, "101", CHILD } }, 101,
	  -1, VW_PIDNS_CHILD_PROCFS, 101, 0, 4026532177u, NULL },
	{ "the daemon below it, nothing else to tell",
	  { { 1, "1", NULL }, { 4242, "4242\t1", OTHER } }, 4242, -1, VW_PIDNS_UNKNOWN, 4242, 1,
	  0, "2/stat unreadable" },
	{ "the daemon below it, kthreadd in it", { { 1, "1", NULL }, { 4242, "4242\t1", OTHER } },
	  4242, 1, VW_PIDNS_DAEMON_IN_CHILD, 4242, 1, 0, "PID 2 is a kernel thread" },
	{ "the daemon below it, no kernel thread in it",
	  { { 1, "1", NULL }, { 4242, "4242\t1", OTHER } }, 4242, 0, VW_PIDNS_CHILD_PROCFS, 4242,
	  1, 0, "PID 2 is not a kernel thread" },
	/* Before Linux 4.1 there is no NSpid: the two links decide, and nothing without them. */
	{ "no NSpid, the links differ", { { 1, "", INIT }, { 300, "", OTHER } }, 300, -1,
	  VW_PIDNS_DAEMON_IN_CHILD, 0, 1, VW_PIDNS_INIT_INO, NULL },
	{ "no NSpid, the links agree", { { 1, "", INIT }, { 301, "", INIT } }, 301, -1,
	  VW_PIDNS_SAME, 0, 0, VW_PIDNS_INIT_INO, NULL },
	{ "no NSpid, no link of PID 1", { { 1, "", NULL }, { 302, "", OTHER } }, 302, 1,
	  VW_PIDNS_UNKNOWN, 0, 0, 0, "own namespace unknown" },
	{ "nothing at all", { { 0 } }, 0, -1, VW_PIDNS_UNKNOWN, 0, 0, 0, "neither self nor 1" },
};

static void test_probe(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(probe_cases); i++) {
		const struct probe_case *c = &probe_cases[i];
		struct vw_fixture_root *f;
		struct vw_pidns ns;

		print_message("# %s\n", c->what);
		assert_int_equal(vw_fixture_root_setup((void **)&f), 0);
		for (size_t j = 0; j < ARRAY_SIZE(c->procs) && c->procs[j].pid; j++)
			proc(f->path, c->procs[j].pid, c->procs[j].nspid, c->procs[j].link);
		if (c->self)
			self_is(f->path, c->self);
		if (c->kthreadd >= 0)
			pid2(f->path, c->kthreadd);
		ns = probe(f, c->want);
		assert_int_equal(ns.daemon_pid, c->daemon_pid);
		assert_int_equal(ns.daemon_level, c->level);
		if (c->procfs_ino)
			assert_int_equal(ns.procfs_ino, c->procfs_ino);
		if (c->how && !strstr(ns.how, c->how))
			fail_msg("\"%s\" does not say \"%s\"", ns.how, c->how);
		vw_fixture_root_teardown((void **)&f);
	}
}

/* Malformed links and NSpid lines are not believed. */
static void test_malformed(void **state)
{
	struct vw_fixture_root *f = *state;
	static const char *const bad[] = { "4242\tx", "4242\t-1", "\t", "4242\t1\t",
					   "99999999999\t1" };
	char path[600];

	proc(f->path, 1, "1", "pid:[abc]");
	proc(f->path, 4242, "4242\t1", "mnt:[4026531836]");
	self_is(f->path, 4242);
	/* Neither 1/ns/pid nor 2/stat: cannot tell. */
	probe(f, VW_PIDNS_UNKNOWN);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct vw_pidns ns;

		snprintf(path, sizeof(path), "%s/4242/status", f->path);
		assert_int_equal(unlink(path), 0);
		proc(f->path, 4242, bad[i], NULL);
		assert_int_equal(vw_pidns_probe(f->fd, &ns), 0);
		if (i == 3) /* a trailing tab is still a whole line */
			assert_int_equal(ns.daemon_pid, 4242);
		else if (ns.daemon_pid != 0)
			fail_msg("NSpid \"%s\" read as PID %u", bad[i], ns.daemon_pid);
	}
	assert_int_equal(vw_pidns_probe(-1, &(struct vw_pidns){ 0 }), -EINVAL);
	assert_int_equal(vw_pidns_probe(f->fd, NULL), -EINVAL);
}

/* ---- The map on a fixture ---- */

static void test_map(void **state)
{
	struct vw_fixture_root *f = *state;
	char *r = f->path;
	struct vw_pidns ns;
	uint32_t pids[] = { 7, 1, 5000, 0, 8, 9, 12345 };
	uint32_t again[] = { 7 };
	char path[600];

	proc(r, 1, "1", INIT);
	proc(r, 4242, "4242\t1", OTHER);          /* the daemon, PID 1 of its namespace */
	proc(r, 4300, "4300\t7", OTHER);          /* a GPU process beside it */
	proc(r, 4301, "4301\t7", CHILD);          /* PID 7 of a sibling namespace */
	proc(r, 4302, "4302\t3\t7", OTHER);       /* PID 7 a level further down */
	proc(r, 5000, "5000", INIT);              /* a host process */
	proc(r, 6000, "6000\t8", "garbage");      /* unverifiable, sharing 8: neither */
	proc(r, 6001, "6001\t8", "garbage");
	proc(r, 6002, "6002\t9", "garbage");      /* unverifiable, alone: taken */
	self_is(r, 4242);
	ns = probe(f, VW_PIDNS_DAEMON_IN_CHILD);

	assert_int_equal(vw_pidns_map(&ns, f->fd, pids, ARRAY_SIZE(pids)), 3);
	assert_int_equal(pids[0], 4300);
	assert_int_equal(pids[1], 4242);
	assert_int_equal(pids[2], 5000);  /* not in the daemon's namespace: the host's already */
	assert_int_equal(pids[3], 0);
	assert_int_equal(pids[4], 8);
	assert_int_equal(pids[5], 6002);
	assert_int_equal(pids[6], 12345);
	assert_int_equal(ns.scans, 1);

	/* Cached: no second scan in the interval, nor the next, for what is known or missed. */
	assert_int_equal(vw_pidns_map(&ns, f->fd, again, 1), 1);
	assert_int_equal(again[0], 4300);
	vw_pidns_next_interval(&ns);
	{
		uint32_t host[] = { 5000, 12345, 7 };

		assert_int_equal(vw_pidns_map(&ns, f->fd, host, 3), 1);
		assert_int_equal(host[0], 5000);
		assert_int_equal(host[2], 4300);
	}
	assert_int_equal(ns.scans, 1);

	/* PID 7 exits and 4300 is reused deeper down: the cache entry is checked, not trusted,
	 * and the interval's one scan finds no PID 7; a second miss in it does not scan. */
	snprintf(path, sizeof(path), "%s/4300/status", r);
	assert_int_equal(unlink(path), 0);
	proc(r, 4300, "4300\t2\t7", NULL);
	again[0] = 7;
	assert_int_equal(vw_pidns_map(&ns, f->fd, again, 1), 0);
	assert_int_equal(again[0], 7);
	assert_int_equal(ns.scans, 2);
	{
		uint32_t other[] = { 14 };

		assert_int_equal(vw_pidns_map(&ns, f->fd, other, 1), 0);
		assert_int_equal(ns.scans, 2);
	}
	/* A PID a scan missed does not scan again, even in a new interval; one that missed only
	 * because the interval had scanned already (14, above) does, and the scan finds the new
	 * PID 7 too. */
	proc(r, 4400, "4400\t7", OTHER);
	vw_pidns_next_interval(&ns);
	assert_int_equal(vw_pidns_map(&ns, f->fd, again, 1), 0);
	assert_int_equal(again[0], 7);
	assert_int_equal(ns.scans, 2);
	{
		uint32_t other[] = { 14 };

		assert_int_equal(vw_pidns_map(&ns, f->fd, other, 1), 0);
		assert_int_equal(other[0], 14);
		assert_int_equal(ns.scans, 3);
	}
	assert_int_equal(vw_pidns_map(&ns, f->fd, again, 1), 1);
	assert_int_equal(again[0], 4400);
	assert_int_equal(ns.scans, 3);
	vw_pidns_fini(&ns);
	vw_pidns_fini(&ns);

	/* Other modes leave PIDs alone. */
	ns.mode = VW_PIDNS_SAME;
	again[0] = 7;
	assert_int_equal(vw_pidns_map(&ns, f->fd, again, 1), 0);
	assert_int_equal(again[0], 7);
	assert_int_equal(vw_pidns_map(&ns, f->fd, NULL, 1), -EINVAL);
}

/* ---- The log line ---- */

static char logged[1024];

static void keep_log(enum vw_log_level level, const char *msg, void *ud)
{
	(void)ud;
	snprintf(logged, sizeof(logged), "%s %s", vw_log_level_name(level), msg);
}

static void test_log(void **state)
{
	struct vw_pidns ns = { .mode = VW_PIDNS_CHILD_PROCFS };

	(void)state;
	snprintf(ns.how, sizeof(ns.how), "1/ns/pid is " CHILD);
	vw_log_set_sink(keep_log, NULL);
	vw_pidns_log_gpu(&ns, "/proc");
	assert_non_null(strstr(logged, "warn"));
	assert_non_null(strstr(logged, "/proc shows a child PID namespace"));
	assert_non_null(strstr(logged, "hostPID"));
	assert_non_null(strstr(logged, "--host.procfs"));
	ns.mode = VW_PIDNS_DAEMON_IN_CHILD;
	ns.daemon_level = 1;
	vw_pidns_log_gpu(&ns, "/host/proc");
	assert_non_null(strstr(logged, "info"));
	assert_non_null(strstr(logged, "1 level down"));
	ns.mode = VW_PIDNS_UNKNOWN;
	vw_pidns_log_gpu(&ns, "/host/proc");
	assert_non_null(strstr(logged, "cannot tell"));
	vw_log_set_sink(NULL, NULL);
	assert_string_equal(vw_pidns_mode_name(VW_PIDNS_DAEMON_IN_CHILD),
			    "daemon-in-child");
}

/* ---- This machine ---- */

/* Whether this test runs in the initial PID namespace (its /proc then is that namespace's). */
static bool in_initial_ns(void)
{
	char link[64] = "";

	assert_true(readlink("/proc/self/ns/pid", link, sizeof(link) - 1) > 0);
	return strcmp(link, INIT) == 0;
}

static void test_real_proc(void **state)
{
	int fd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct vw_pidns ns;
	uint32_t pids[] = { (uint32_t)getpid(), 1 };

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(vw_pidns_probe(fd, &ns), 0);
	print_message("# /proc: %s (%s)\n", vw_pidns_mode_name(ns.mode), ns.how);
	/* Run in a container with its own PID namespace, /proc is that namespace's. */
	assert_int_equal(ns.mode, in_initial_ns() ? VW_PIDNS_SAME : VW_PIDNS_CHILD_PROCFS);
	assert_int_equal(ns.daemon_pid, (uint32_t)getpid());
	assert_int_equal(ns.daemon_level, 0);
	assert_int_equal(vw_pidns_map(&ns, fd, pids, 2), 0);
	assert_int_equal(pids[0], (uint32_t)getpid());
	vw_pidns_fini(&ns);
	close(fd);
}

/* What the process inside the child namespace found, for the test outside. */
struct inside {
	int err; /* where it failed: -errno, 0 fine */
	char step[32];
	struct vw_pidns ns;
	int mapped;
	uint32_t pids[3];
	uint32_t second_host_pid; /* PID 2 of the namespace, as the host numbers it */
};

static void report(int fd, struct inside *in, const char *step, int err)
{
	in->err = err;
	snprintf(in->step, sizeof(in->step), "%s", step);
	in->ns.cache = NULL;
	if (write(fd, in, sizeof(*in)) != (ssize_t)sizeof(*in))
		_exit(3);
}

/*
 * PID 1 of a new namespace: a private mount namespace with the namespace's own procfs at dir,
 * a second process in it, and the probe and map run here against the host's procfs
 * (host_proc, opened outside). Stays until killed.
 */
static void namespace_init(int host_proc, const char *dir, int out)
{
	struct inside in = { 0 };
	pid_t second;

	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		report(out, &in, "mount namespace", -errno);
	else if (mount("proc", dir, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		report(out, &in, "mount proc", -errno);
	else if ((second = fork()) == 0) {
		pause();
		_exit(0);
	} else {
		in.err = vw_pidns_probe(host_proc, &in.ns);
		in.pids[0] = 1;
		in.pids[1] = (uint32_t)second; /* 2: its PID here */
		in.pids[2] = 999999;           /* nobody here: left alone */
		in.mapped = vw_pidns_map(&in.ns, host_proc, in.pids, 3);
		vw_pidns_fini(&in.ns);
		report(out, &in, "probe", in.err);
	}
	for (;;)
		pause();
}

static pid_t ns_parent, ns_init; /* to end them when a check fails */

static int end_namespace(void **state)
{
	(void)state;
	if (ns_init > 0)
		kill(ns_init, SIGKILL); /* PID 1 gone: the kernel ends the namespace */
	if (ns_parent > 0)
		waitpid(ns_parent, NULL, 0);
	ns_init = ns_parent = 0;
	return 0;
}

static void test_real_namespaces(void **state)
{
	char *dir = vw_fixture_mkdtemp("pidns-proc");
	int host_proc = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
	int pfd[2], gfd[2], st, child_fd;
	struct vw_pidns ns;
	struct inside in;
	char path[700];
	pid_t c1, init_pid = 0;
	bool initial = in_initial_ns();
	struct stat sb;

	(void)state;
	assert_non_null(dir);
	assert_true(host_proc >= 0);
	assert_int_equal(pipe(pfd), 0);
	assert_int_equal(pipe(gfd), 0);
	c1 = ns_parent = fork();
	assert_true(c1 >= 0);
	if (c1 == 0) { /* unshares, then its child is PID 1 of the new namespace */
		int err = unshare(CLONE_NEWPID) < 0 ? -errno : 0;
		pid_t gc;

		if (err < 0) {
			if (write(gfd[1], &err, sizeof(err)) < 0)
				_exit(3);
			_exit(0);
		}
		gc = fork();
		if (gc == 0)
			namespace_init(host_proc, dir, pfd[1]);
		if (write(gfd[1], &gc, sizeof(gc)) < 0)
			_exit(3);
		waitpid(gc, NULL, 0);
		_exit(0);
	}
	close(pfd[1]);
	close(gfd[1]);
	assert_int_equal(read(gfd[0], &init_pid, sizeof(init_pid)), sizeof(init_pid));
	REQUIRE(init_pid > 0, "unshare(CLONE_NEWPID): %s (needs root with CAP_SYS_ADMIN)",
		strerror(-init_pid));
	ns_init = init_pid;
	assert_int_equal(read(pfd[0], &in, sizeof(in)), sizeof(in));
	if (in.err < 0)
		fail_msg("inside the namespace, %s: %s", in.step, strerror(-in.err));

	/* Inside, this machine's /proc: the host's namespace, the daemon a level down. */
	print_message("# inside: %s (%s)\n", vw_pidns_mode_name(in.ns.mode), in.ns.how);
	assert_int_equal(in.ns.daemon_pid, (uint32_t)init_pid);
	assert_int_equal(in.ns.daemon_level, 1);
	if (!initial) { /* a container's /proc seen from a namespace below: not the host's */
		assert_int_equal(in.ns.mode, VW_PIDNS_CHILD_PROCFS);
		assert_int_equal(in.mapped, 0);
		goto outside;
	}
	assert_int_equal(in.ns.mode, VW_PIDNS_DAEMON_IN_CHILD);
	assert_int_equal(in.mapped, 2);
	assert_int_equal(in.pids[0], (uint32_t)init_pid);
	assert_true(in.pids[1] != 2 && in.pids[1] > 0);
	{
		char rel[64], status[4096] = "";
		FILE *f;

		snprintf(rel, sizeof(rel), "/proc/%u/status", in.pids[1]);
		f = fopen(rel, "r");
		assert_non_null(f);
		status[fread(status, 1, sizeof(status) - 1, f)] = '\0';
		fclose(f);
		snprintf(rel, sizeof(rel), "\nNSpid:\t%u\t2\n", in.pids[1]);
		if (!strstr(status, rel)) /* the host's PID of the namespace's PID 2 */
			fail_msg("%u is not PID 2 of the namespace:\n%s", in.pids[1], status);
	}
	assert_int_equal(in.pids[2], 999999);

outside:
	/* Outside, the namespace's own procfs: a child namespace, this process not in it. */
	snprintf(path, sizeof(path), "/proc/%d/root%s", (int)init_pid, dir);
	child_fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(child_fd >= 0);
	assert_int_equal(vw_pidns_probe(child_fd, &ns), 0);
	print_message("# outside: %s (%s)\n", vw_pidns_mode_name(ns.mode), ns.how);
	assert_int_equal(ns.mode, VW_PIDNS_CHILD_PROCFS);
	assert_int_equal(ns.daemon_pid, 0);
	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)init_pid);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(ns.procfs_ino, (uint64_t)sb.st_ino);
	assert_true(ns.procfs_ino != VW_PIDNS_INIT_INO);

	close(child_fd);
	kill(init_pid, SIGKILL); /* PID 1 gone: the kernel ends the namespace */
	assert_int_equal(waitpid(c1, &st, 0), c1);
	ns_init = ns_parent = 0;
	close(pfd[0]);
	close(gfd[0]);
	close(host_proc);
	vw_fixture_rm(dir);
}

int main(void)
{
#define FX(t) cmocka_unit_test_setup_teardown(t, vw_fixture_root_setup, vw_fixture_root_teardown)
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_probe),
		FX(test_malformed),
		FX(test_map),
		cmocka_unit_test(test_log),
		cmocka_unit_test(test_real_proc),
		cmocka_unit_test_teardown(test_real_namespaces, end_namespace),
	};

	vw_log_set_level(VW_LOG_INFO);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CPU accountants. Live: a busy and a sleeping child in a fresh cgroup v2 group, measured by
 * the bpf accountant (tp_btf, then raw_tp with key-by-key map reads) and by the procfs one
 * against /proc/PID/schedstat. Offline: the procfs parser on fixture trees, the snapshot
 * history, the registry, and hardware counters with a fake source.
 *
 * The bpf cases need root and kernel BTF: elsewhere they skip with the reason, under CI=true a
 * missing capability fails.
 */
#include "vw_test.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cpu_account.h"
#include "cpu_account_priv.h"
#include "fileio.h"
#include "fixture.h"
#include "log.h"

static int procfd = -1, sysfd = -1;

static bool in_ci(void)
{
	const char *ci = getenv("CI");

	return ci && strcmp(ci, "true") == 0;
}

/* Skip with a reason here, fail under CI=true. */
#define REQUIRE(cond, ...)                                                                         \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			if (in_ci())                                                               \
				fail_msg(__VA_ARGS__);                                             \
			print_message("# SKIP: ");                                                 \
			print_message(__VA_ARGS__);                                                \
			print_message("\n");                                                       \
			skip();                                                                    \
		}                                                                                  \
	} while (0)

static uint64_t schedstat_ns(pid_t pid)
{
	char path[64], buf[128];
	uint64_t v = 0;

	snprintf(path, sizeof(path), "%d/schedstat", (int)pid);
	assert_int_equal(vw_read_file_at(procfd, path, buf, sizeof(buf), NULL), 0);
	buf[strcspn(buf, " ")] = '\0';
	assert_int_equal(vw_parse_u64(buf, &v), 0);
	return v;
}

/* The cgroup2 mount point from <procfs>/self/mountinfo ("" when there is none). */
static void cgroup2_mount(char *buf, size_t size)
{
	_cleanup_free_ char *text = malloc(1 << 20);
	char *line, *save = NULL;

	buf[0] = '\0';
	assert_non_null(text);
	assert_int_equal(vw_read_file_at(procfd, "self/mountinfo", text, 1 << 20, NULL), 0);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		const char *sep = strstr(line, " - ");
		char mnt[512];

		if (!sep || strncmp(sep + 3, "cgroup2 ", 8) != 0)
			continue;
		/* id parent major:minor root mountpoint ... */
		if (sscanf(line, "%*s %*s %*s %*s %511s", mnt) == 1 && !strchr(mnt, '\\')) {
			snprintf(buf, size, "%s", mnt);
			return;
		}
	}
}

struct child {
	pid_t pid;
	int go;   /* write end: one byte starts it */
	int stop; /* write end: closing it ends the sleeper */
};

static double thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A child that waits for "go", then spins for ~1.5 s of CPU (busy) or blocks until stopped. */
static void spawn(struct child *c, bool busy)
{
	int go[2], stop[2];
	char b;

	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	assert_int_equal(pipe2(stop, O_CLOEXEC), 0);
	c->pid = fork();
	assert_true(c->pid >= 0);
	if (c->pid == 0) {
		close(go[1]);
		close(stop[1]);
		if (read(go[0], &b, 1) != 1)
			_exit(2);
		if (busy) {
			double end = thread_cpu_s() + 1.5;
			volatile uint64_t x = 0;

			while (thread_cpu_s() < end)
				for (int i = 0; i < 10000; i++)
					x += (uint64_t)i;
		} else if (read(stop[0], &b, 1) < 0) {
			_exit(3);
		}
		_exit(0);
	}
	close(go[0]);
	close(stop[0]);
	c->go = go[1];
	c->stop = stop[1];
}

static void start(struct child *c)
{
	assert_int_equal(write(c->go, "g", 1), 1);
	close(c->go);
	c->go = -1;
}

static void reap(struct child *c)
{
	int status;

	if (c->stop >= 0)
		close(c->stop);
	c->stop = -1;
	assert_int_equal(waitpid(c->pid, &status, 0), c->pid);
	c->pid = 0;
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/*
 * Wait until the child has exited but keep it as a zombie (its schedstat stays readable), and
 * return its final runtime. EXIT_ZOMBIE is set in exit_notify(), before the task's last
 * switch-out, so its schedstat may still grow for a moment: wait until it stops.
 */
static uint64_t wait_zombie(struct child *c)
{
	siginfo_t si = { 0 };
	uint64_t last, now;

	assert_int_equal(waitid(P_PID, (id_t)c->pid, &si, WEXITED | WNOWAIT), 0);
	now = schedstat_ns(c->pid);
	for (int i = 0; i < 200; i++) {
		usleep(5000);
		last = now;
		now = schedstat_ns(c->pid);
		if (now == last)
			return now;
	}
	fail_msg("schedstat of zombie %d keeps changing", (int)c->pid);
	return 0;
}

static const struct vw_proc_cpu *find_proc(const struct vw_cpu_snapshot *s, pid_t pid)
{
	const struct vw_proc_cpu *hit = NULL;

	for (size_t i = 0; i < s->n_procs; i++) {
		if (s->procs[i].tgid != (uint32_t)pid)
			continue;
		assert_null(hit); /* one entry per process */
		hit = &s->procs[i];
	}
	return hit;
}

static const struct vw_cgroup_cpu *find_cgroup(const struct vw_cpu_snapshot *s, uint64_t id)
{
	for (size_t i = 0; i < s->n_cgroups; i++)
		if (s->cgroups[i].cgroup_id == id)
			return &s->cgroups[i];
	return NULL;
}

#define assert_ns_near(got, want, rel, abs_ns)                                                     \
	do {                                                                                       \
		double _g = (double)(got), _w = (double)(want);                                    \
		double _tol = VW_MAX((rel) * _w, (double)(abs_ns));                                \
		if (!(fabs(_g - _w) <= _tol))                                                      \
			fail_msg("%s = %.0f ns, expected %.0f ns +- %.0f (%.3f %%)", #got, _g, _w, \
				 _tol, _w > 0 ? 100.0 * (_g - _w) / _w : 0.0);                     \
	} while (0)

struct scenario {
	const char *accountant;
	uint32_t flags;
	double rel_tol;    /* relative tolerance against schedstat */
	uint64_t abs_tol;  /* absolute floor of the tolerance, ns */
	bool cgroups;      /* per-cgroup totals are expected */
	bool exit_at_zombie; /* the exit is reported while the child is still a zombie */
};

static int counted_exits(const struct vw_cpu_snapshot *s, pid_t pid, uint64_t *ret_ns)
{
	const struct vw_proc_cpu *p = find_proc(s, pid);

	if (!p || !p->exited)
		return 0;
	*ret_ns = p->cpu_ns;
	return 1;
}

/* What a live scenario holds, so that the teardown can undo it when an assertion fails. */
static struct {
	struct vw_cpu_accountant acc;
	struct child busy, idle;
	char cgdir[600];
} live;

static void move_to_cgroup(const char *cgdir, pid_t pid)
{
	char procs[640], buf[32];
	int fd, n;

	snprintf(procs, sizeof(procs), "%s/cgroup.procs", cgdir);
	fd = open(procs, O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	n = snprintf(buf, sizeof(buf), "%d", (int)pid);
	assert_int_equal(write(fd, buf, (size_t)n), n);
	close(fd);
}

static void run_scenario(const struct scenario *sc)
{
	static unsigned seq;
	struct vw_cpu_env env = { .procfs_fd = procfd, .sysfs_fd = sysfd, .flags = sc->flags };
	struct vw_cpu_accountant *acc = &live.acc;
	struct child *busy = &live.busy, *idle = &live.idle;
	struct vw_cpu_snapshot snap;
	const struct vw_proc_cpu *p;
	const struct vw_cgroup_cpu *cg;
	char mnt[512];
	uint64_t cgid = 0, s1, s2, final_ns, idle_ns, cg_total = 0, exit_ns = 0;
	int r, exits = 0;
	struct stat st;
	pid_t pid;

	r = vw_cpu_accountant_open(&env, sc->accountant, acc);
	REQUIRE(r == 0, "%s accountant unavailable here: %s", sc->accountant, strerror(-r));
	assert_string_equal(acc->ops->name, sc->accountant);

	cgroup2_mount(mnt, sizeof(mnt));
	REQUIRE(mnt[0], "no cgroup2 mount in /proc/self/mountinfo");
	snprintf(live.cgdir, sizeof(live.cgdir), "%s/vw-test-%d-%u", mnt, (int)getpid(), seq++);
	r = mkdir(live.cgdir, 0755) < 0 ? -errno : 0;
	if (r < 0) {
		live.cgdir[0] = '\0';
		REQUIRE(r == 0, "mkdir in %s: %s", mnt, strerror(-r));
	}
	assert_int_equal(stat(live.cgdir, &st), 0);
	cgid = st.st_ino; /* a cgroup v2 id is its directory's inode number */

	spawn(busy, true);
	spawn(idle, false);
	move_to_cgroup(live.cgdir, busy->pid);
	move_to_cgroup(live.cgdir, idle->pid);

	/* Before: both children are there, with next to nothing. */
	assert_int_equal(acc->ops->read(acc->state, &snap), 0);
	assert_non_null(p = find_proc(&snap, busy->pid));
	assert_false(p->exited);
	assert_true(p->cpu_ns < 50 * VW_NSEC_PER_MSEC);
	start(busy);
	start(idle);

	/* Mid-run: the busy child's running slice is included (in-flight). */
	usleep(700 * 1000);
	s1 = schedstat_ns(busy->pid);
	assert_int_equal(acc->ops->read(acc->state, &snap), 0);
	s2 = schedstat_ns(busy->pid);
	assert_non_null(p = find_proc(&snap, busy->pid));
	print_message("# %s mid-run: schedstat %.6f..%.6f s, accountant %.6f s\n", sc->accountant,
		      (double)s1 / 1e9, (double)s2 / 1e9, (double)p->cpu_ns / 1e9);
	assert_true(s1 > 300 * VW_NSEC_PER_MSEC);
	assert_true(p->cpu_ns + sc->abs_tol + (uint64_t)(sc->rel_tol * (double)s1) >= s1);
	assert_true(p->cpu_ns <= s2 + sc->abs_tol);
	if (sc->cgroups)
		assert_int_equal(p->cgroup_id, cgid);

	/* The busy child exits: held as a zombie, its schedstat is final. */
	final_ns = wait_zombie(busy);
	idle_ns = schedstat_ns(idle->pid);
	assert_int_equal(acc->ops->read(acc->state, &snap), 0);
	assert_non_null(p = find_proc(&snap, busy->pid));
	print_message("# %s busy child at exit: schedstat %.6f s, accountant %.6f s (%+.4f %%)%s\n",
		      sc->accountant, (double)final_ns / 1e9, (double)p->cpu_ns / 1e9,
		      100.0 * ((double)p->cpu_ns - (double)final_ns) / (double)final_ns,
		      p->exited ? ", exited" : "");
	assert_ns_near(p->cpu_ns, final_ns, sc->rel_tol, sc->abs_tol);
	assert_int_equal(p->exited, sc->exit_at_zombie);
	exits += counted_exits(&snap, busy->pid, &exit_ns);
	assert_non_null(p = find_proc(&snap, idle->pid));
	assert_false(p->exited);
	assert_ns_near(p->cpu_ns, idle_ns, sc->rel_tol, sc->abs_tol);
	assert_true(p->cpu_ns < 20 * VW_NSEC_PER_MSEC); /* the sleeper's time is tiny */
	if (sc->cgroups) {
		assert_int_equal(p->cgroup_id, cgid);
		assert_non_null(cg = find_cgroup(&snap, cgid));
		/* Both children after the move; what they ran before it is in the old group. */
		assert_true(cg->cpu_ns <= final_ns + idle_ns);
		assert_ns_near(cg->cpu_ns, final_ns + idle_ns, sc->rel_tol, sc->abs_tol);
		cg_total = cg->cpu_ns;
	}

	/* Reaped: the exit shows up exactly once, with the final time. */
	pid = busy->pid;
	reap(busy);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(acc->ops->read(acc->state, &snap), 0);
		exits += counted_exits(&snap, pid, &exit_ns);
		if (sc->exit_at_zombie || i == 1)
			assert_null(find_proc(&snap, pid));
	}
	assert_int_equal(exits, 1);
	assert_ns_near(exit_ns, final_ns, sc->rel_tol, sc->abs_tol);

	/* The sleeper goes too (its exit costs CPU: compare with its zombie's schedstat); the
	 * cgroup keeps everything its tasks ever ran. */
	close(idle->stop);
	idle->stop = -1;
	idle_ns = wait_zombie(idle);
	pid = idle->pid;
	exits = 0;
	for (int i = 0; i < 3; i++) {
		if (i == 1)
			reap(idle);
		assert_int_equal(acc->ops->read(acc->state, &snap), 0);
		exits += counted_exits(&snap, pid, &exit_ns);
		if (sc->cgroups) {
			assert_non_null(cg = find_cgroup(&snap, cgid));
			assert_true(cg->cpu_ns >= cg_total);
			cg_total = cg->cpu_ns;
		}
	}
	assert_int_equal(exits, 1);
	assert_ns_near(exit_ns, idle_ns, sc->rel_tol, sc->abs_tol);
	assert_null(find_proc(&snap, pid));
	if (sc->cgroups) /* every ns the two children ran after the move */
		assert_ns_near(cg_total, final_ns + idle_ns, sc->rel_tol, sc->abs_tol);
}

static void end_child(struct child *c)
{
	if (c->go >= 0)
		close(c->go);
	if (c->stop >= 0)
		close(c->stop);
	if (c->pid > 0) {
		kill(c->pid, SIGKILL);
		(void)waitpid(c->pid, NULL, 0);
	}
	*c = (struct child){ .pid = 0, .go = -1, .stop = -1 };
}

static int live_setup(void **state)
{
	(void)state;
	live.busy = live.idle = (struct child){ .pid = 0, .go = -1, .stop = -1 };
	return 0;
}

static int live_teardown(void **state)
{
	(void)state;
	end_child(&live.busy);
	end_child(&live.idle);
	if (live.cgdir[0] && rmdir(live.cgdir) < 0)
		print_message("# rmdir %s: %s\n", live.cgdir, strerror(errno));
	live.cgdir[0] = '\0';
	vw_cpu_accountant_close(&live.acc);
	return 0;
}

static void test_bpf_tp_btf(void **state)
{
	static const struct scenario sc = {
		.accountant = "bpf", .rel_tol = 0.005, .abs_tol = 100 * 1000,
		.cgroups = true, .exit_at_zombie = true,
	};

	(void)state;
	REQUIRE(VW_HAVE_BPF, "built without BPF (-Dbpf)");
	REQUIRE(geteuid() == 0, "BPF needs root");
	run_scenario(&sc);
}

static void test_bpf_raw_tp_no_batch(void **state)
{
	static const struct scenario sc = {
		.accountant = "bpf", .flags = VW_CPU_BPF_RAW_TP | VW_CPU_BPF_NO_BATCH,
		.rel_tol = 0.005, .abs_tol = 100 * 1000, .cgroups = true, .exit_at_zombie = true,
	};

	(void)state;
	REQUIRE(VW_HAVE_BPF, "built without BPF (-Dbpf)");
	REQUIRE(geteuid() == 0, "BPF needs root");
	run_scenario(&sc);
}

/*
 * procfs: exact to the ns while every thread lives (task schedstat sum); the tolerance allows
 * the stat fallback, 2 clock ticks (utime and stime each truncated), plus 0.5 %.
 */
static void test_procfs_live(void **state)
{
	struct scenario sc = {
		.accountant = "procfs", .rel_tol = 0.005, .cgroups = false,
		.exit_at_zombie = false,
	};

	(void)state;
	sc.abs_tol = 2 * vw_cpu_ns_per_tick();
	REQUIRE(geteuid() == 0, "moving children into a new cgroup needs root");
	run_scenario(&sc);
}

static int group_setup(void **state)
{
	(void)state;
	if (getenv("VW_TEST_DEBUG"))
		vw_log_set_level(VW_LOG_DEBUG);
	procfd = vw_root_open("/proc");
	sysfd = vw_root_open("/sys");
	return procfd >= 0 && sysfd >= 0 ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	vw_closep(&procfd);
	vw_closep(&sysfd);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_bpf_tp_btf, live_setup, live_teardown),
		cmocka_unit_test_setup_teardown(test_bpf_raw_tp_no_batch, live_setup, live_teardown),
		cmocka_unit_test_setup_teardown(test_procfs_live, live_setup, live_teardown),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Who owns the energy, against the real kernel (root): the workload registry, fed by the real
 * CPU accountant (bpf, then procfs) and the real cgroup hierarchy, must give a container the
 * share of each interval's energy that the kernel says its cgroup ran, whatever its processes
 * did: hundreds of short-lived children that no snapshot ever sees alive (a build), or a
 * process that runs outside the container and then moves into it (docker exec, a scope move).
 * The truth is the kernel's own accounting (cpuacct.usage or cpu.stat), read beside the run.
 */
#include "vw_test.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cgroupfs.h"
#include "cpu_account.h"
#include "fileio.h"
#include "fixture.h"
#include "workloads.h"

/* A container ID of this run's own (a daemon running beside the test sees it come and go: one
 * ID that every run re-created would read there as one container whose counters went back). */
static char cid[65];
#define POWER_W 10 /* active package power: energy is POWER_W x each interval's length */

static int procfd = -1, sysfd = -1;

/* One run: a parent cgroup (not a container) with a docker-named container cgroup below. */
static struct {
	struct vw_cgroupfs *cg;
	struct vw_cpu_accountant acc;
	struct vw_workloads *w;
	char mnt[160], parent[700], cont[800], parent_rel[64], cont_rel[160];
	pid_t child;
	uint64_t energy;   /* active µJ handed out */
	double expect_uj;  /* of it, the container's by the kernel's per-interval totals */
	uint64_t root_ns, cg_ns; /* the kernel's totals at the last interval */
	double cg_run_ns;  /* what the container's cgroup ran over the test */
	double last_s;     /* when the last interval ended */
} run;

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Write pid into a cgroup's cgroup.procs (also from a child, which must not assert). */
static int join(const char *dir, pid_t pid)
{
	char path[900], buf[32];
	int fd, n, r;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = snprintf(buf, sizeof(buf), "%d", (int)pid);
	r = write(fd, buf, (size_t)n) == n ? 0 : -errno;
	close(fd);
	return r;
}

static void start(const char *accountant)
{
	static unsigned runs;
	struct vw_cpu_env env = { .procfs_fd = procfd, .sysfs_fd = sysfd };
	struct vw_workloads_opts o = { .procfs_fd = procfd, .processes = true, .containers = true,
				       .max_terminated = 100000 };
	struct vw_zone_energy none[VW_ZONE__COUNT] = { 0 };
	struct vw_cpu_snapshot snap;
	char *mnt = run.mnt;
	int r;

	if (strcmp(accountant, "bpf") == 0)
		REQUIRE(VW_HAVE_BPF, "built without BPF (-Dbpf)");
	REQUIRE(geteuid() == 0, "cgroups and BPF need root");
	run.cg = vw_cgroupfs_open(sysfd);
	REQUIRE(run.cg, "no cgroup hierarchy accounts CPU time under /sys/fs/cgroup");
	snprintf(run.mnt, sizeof(run.mnt), "/sys/%s", vw_cgroupfs_mount(run.cg));
	snprintf(run.parent_rel, sizeof(run.parent_rel), "vw-owners-%d", (int)getpid());
	snprintf(cid, sizeof(cid), "%016llx%016x%032x", (unsigned long long)getpid(), ++runs, 0xabcdef);
	snprintf(run.cont_rel, sizeof(run.cont_rel), "%s/docker-%s.scope", run.parent_rel, cid);
	snprintf(run.parent, sizeof(run.parent), "%s/%s", mnt, run.parent_rel);
	snprintf(run.cont, sizeof(run.cont), "%s/%s", mnt, run.cont_rel);
	REQUIRE(mkdir(run.parent, 0755) == 0, "mkdir %s: %s", run.parent, strerror(errno));
	assert_int_equal(mkdir(run.cont, 0755), 0);
	env.cgroup_v1 = vw_cgroupfs_is_v1(run.cg);
	r = vw_cpu_accountant_open(&env, accountant, &run.acc);
	REQUIRE(r == 0, "%s accountant unavailable here: %s", accountant, strerror(-r));
	o.host_cpus = (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
	o.cgroupfs = run.cg;
	assert_non_null(run.w = vw_workloads_new(&o));
	assert_int_equal(run.acc.ops->read(run.acc.state, &snap), 0);
	assert_int_equal(vw_workloads_update(run.w, &snap, none, 0), 0);
	run.last_s = mono_s();
}

static uint64_t usage(const char *rel)
{
	uint64_t ns = 0;

	assert_int_equal(vw_cgroupfs_usage(run.cg, rel, &ns), 0);
	return ns;
}

/* The kernel's totals now: the reference each interval's truth is taken from. */
static void mark(void)
{
	run.root_ns = usage("");
	run.cg_ns = usage(run.cont_rel);
}

/*
 * One interval of POWER_W x dt of active package energy. The truth: the interval's energy
 * times the share of all CPU time the container's cgroup ran in it (the kernel's totals,
 * read right after the registry's own reading).
 */
static void step(void)
{
	struct vw_zone_energy ze[VW_ZONE__COUNT] = { 0 };
	double now = mono_s();
	uint64_t dt_ns = (uint64_t)((now - run.last_s) * 1e9);
	uint64_t e = POWER_W * dt_ns / 1000, root = run.root_ns, cg = run.cg_ns;
	struct vw_cpu_snapshot snap;

	run.last_s = now;
	ze[VW_ZONE_PACKAGE] = (struct vw_zone_energy){ .present = true, .active_uj = e };
	assert_int_equal(run.acc.ops->read(run.acc.state, &snap), 0);
	assert_int_equal(vw_workloads_update(run.w, &snap, ze, dt_ns), 0);
	mark();
	run.energy += e;
	if (run.root_ns > root)
		run.expect_uj += (double)e * (double)(run.cg_ns - cg) / (double)(run.root_ns - root);
	run.cg_run_ns += (double)(run.cg_ns - cg);
}

/* The container owns what its cgroup ran: 95 % of it at least, never more than 3 % above. */
static void check_share(const char *accountant, const char *what)
{
	struct vw_workloads_totals t;
	uint64_t got;

	vw_workloads_totals(run.w, &t);
	got = t.containers[VW_ZONE_PACKAGE][0];
	print_message("# %s, %s: the container's cgroup ran %.3f s; by the kernel's per-interval "
		      "shares it owns %.1f %% of the active energy; the registry gave it %.1f %%\n",
		      accountant, what, run.cg_run_ns / 1e9, 100 * run.expect_uj / (double)run.energy,
		      100 * (double)got / (double)run.energy);
	if ((double)got < 0.95 * run.expect_uj ||
	    (double)got > 1.03 * run.expect_uj + 0.01 * (double)run.energy)
		fail_msg("%s, %s: the container got %llu uJ, its cgroup's share is %.0f uJ",
			 accountant, what, (unsigned long long)got, run.expect_uj);
}

static void check_conserved(void)
{
	struct vw_workloads_totals t;

	vw_workloads_totals(run.w, &t);
	assert_int_equal(t.containers[VW_ZONE_PACKAGE][0] + t.uncontained[VW_ZONE_PACKAGE][0] +
				 t.unattributed[VW_ZONE_PACKAGE][0],
			 run.energy);
	assert_true(t.processes[VW_ZONE_PACKAGE][0] <=
		    t.containers[VW_ZONE_PACKAGE][0] + t.uncontained[VW_ZONE_PACKAGE][0]);
}

/* The container as rendered: its ID, runtime and a non-zero energy. */
static void check_rendered(void)
{
	struct vw_prom_writer *pw = vw_prom_writer_new(VW_PROM_TEXT_0_0_4, 0);
	char *out = NULL, want[160];

	assert_non_null(pw);
	assert_int_equal(vw_workloads_render(run.w, pw, "n1", run.acc.ops->name, NULL), 0);
	assert_int_equal(vw_prom_finish(pw, &out, NULL), 0);
	vw_prom_writer_free(pw);

	snprintf(want, sizeof(want), "kepler_container_cpu_joules_total{container_id=\"%s\"", cid);
	if (!strstr(out, want))
		fail_msg("no container series for %s:\n%.2000s", cid, out);
	assert_non_null(strstr(out, "runtime=\"docker\""));
	free(out);
}

static int teardown(void **state)
{
	(void)state;
	if (run.child > 0) {
		kill(run.child, SIGKILL);
		(void)waitpid(run.child, NULL, 0);
	}
	vw_workloads_free(run.w);
	vw_cpu_accountant_close(&run.acc);
	/* Nothing is left in them once the child is reaped (its children were reaped by it). */
	if (run.cont[0] && rmdir(run.cont) < 0 && errno != ENOENT)
		print_message("# rmdir %s: %s\n", run.cont, strerror(errno));
	if (run.parent[0] && rmdir(run.parent) < 0 && errno != ENOENT)
		print_message("# rmdir %s: %s\n", run.parent, strerror(errno));
	vw_cgroupfs_free(run.cg);
	memset(&run, 0, sizeof(run));
	return 0;
}

/* ---- a build: a driver forks hundreds of short CPU-bound children ---- */

/* For 3 s, and until 200 children (0.8 s of CPU) ran: fewer fit in 3 s on a loaded machine
 * (60 s at most). */
#define BURST_S 3.0
#define BURST_KIDS 200

static void driver(void)
{
	double t0 = mono_s();

	if (join(run.cont, getpid()) < 0)
		_exit(3);
	for (unsigned n = 0; mono_s() < t0 + BURST_S || (n < BURST_KIDS && mono_s() < t0 + 60);
	     n++) {
		pid_t p = fork();

		if (p == 0) {
			vw_fixture_spin(0.004); /* a compiler job: lives a few ms, far below one interval */
			_exit(0);
		}
		if (p < 0 || waitpid(p, NULL, 0) != p)
			_exit(4);
	}
	_exit(0);
}

/* *state: the accountant, "bpf" or "procfs". */
static void test_burst(void **state)
{
	const char *accountant = *state;
	int st;

	start(accountant);
	mark();
	run.child = fork();
	assert_true(run.child >= 0);
	if (run.child == 0)
		driver();
	for (pid_t done = 0; done != run.child;) { /* intervals of 0.5 s until the driver is done */
		usleep(500 * 1000);
		step();
		assert_true((done = waitpid(run.child, &st, WNOHANG)) >= 0);
	}
	run.child = 0;
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	step();
	/* The burst really ran: most of this machine's CPU time when nothing else runs (its
	 * 200 children at least). */
	assert_true(run.cg_run_ns > 0.5e9);
	check_share(accountant, "a build of short-lived processes");
	check_conserved();
	check_rendered();
}

/* ---- a process that runs outside the container, then moves in ---- */

/* Runs 0.3 s outside, moves in, runs 0.3 s, then waits (alive, inside) for its pipe to close:
 * the procfs accountant finds a container only through a process it sees alive in it. */
static void mover(int hold)
{
	char c;

	vw_fixture_spin(0.3);
	if (join(run.cont, getpid()) < 0)
		_exit(3);
	vw_fixture_spin(0.3);
	while (read(hold, &c, 1) < 0 && errno == EINTR)
		;
	_exit(0);
}

/* *state: the accountant, "bpf" or "procfs". */
static void test_move_in(void **state)
{
	const char *accountant = *state;
	int st, hold[2];

	start(accountant);
	assert_int_equal(pipe(hold), 0);
	assert_int_equal(join(run.parent, getpid()), 0); /* so the child starts outside */
	run.child = fork();
	assert_true(run.child >= 0);
	if (run.child == 0) {
		close(hold[1]);
		mover(hold[0]);
	}
	close(hold[0]);
	/* The test process goes back to the root, so the parent can be removed. */
	assert_int_equal(join(run.mnt, getpid()), 0);
	mark();
	step(); /* the child is alive, outside (seen uncontained) or already inside */
	for (int i = 0; i < 100 && usage(run.cont_rel) - run.cg_ns < 250 * VW_NSEC_PER_MSEC; i++)
		usleep(50 * 1000); /* until it has moved and run inside */
	step(); /* seen alive inside */
	close(hold[1]);
	assert_int_equal(waitpid(run.child, &st, 0), run.child);
	run.child = 0;
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	step();
	/* Only the half after the move is the container's (0.3 s of 0.6 s). */
	assert_true(run.cg_run_ns > 0.2e9 && run.cg_run_ns < 0.45e9);
	check_share(accountant, "a process that moved in mid-interval");
	check_conserved();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		vw_unit_test_case("test_burst_bpf", test_burst, NULL, teardown, "bpf"),
		vw_unit_test_case("test_burst_procfs", test_burst, NULL, teardown, "procfs"),
		vw_unit_test_case("test_move_bpf", test_move_in, NULL, teardown, "bpf"),
		vw_unit_test_case("test_move_procfs", test_move_in, NULL, teardown, "procfs"),
	};
	int r;

	vw_log_set_level(VW_LOG_WARN);
	procfd = vw_root_open("/proc");
	sysfd = vw_root_open("/sys");
	r = cmocka_run_group_tests(tests, NULL, NULL);
	close(procfd);
	close(sysfd);
	return r;
}

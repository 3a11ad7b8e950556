/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A workload cannot make another pay for its interrupts (root, real kernel, 2+ CPUs). Without
 * CONFIG_IRQ_TIME_ACCOUNTING the kernel adds each hardirq, and the softirqs at its exit, to the
 * runtime of whatever task it interrupted and to that task's cgroup. An attacker in cgroup B
 * that sleeps 20 us at a time on the CPU where a victim in cgroup A burns makes the kernel
 * count its timer interrupts (hrtimer expiry, wake-up) in A's usage: 9 % of the victim's time
 * on the 6.18 build VM (bench/evasion.sh). The bpf accountant times those spans per
 * interrupted cgroup (vw_cpu_snapshot.irq) and the registry takes them out of the container's
 * total. Checked: the spans it reports for A are a real share of A's usage with the attacker
 * beside it (>= 2 %: the measured 9 % leaves room for a slow or loaded machine), and the
 * victim container's CPU time in the registry is A's usage less them. Failed before: no spans
 * at all (0 %), and the container held all of A's usage.
 */
#include "vw_test.h"

#include <fcntl.h>
#include <sched.h>
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
#include "cpu_test.h"
#include "fileio.h"
#include "workloads.h"
#include "workloads_priv.h"

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* In a child: into the cgroup dir, onto cpu. No asserts (a child). */
static int settle(const char *dir, int cpu)
{
	char path[900], buf[32];
	cpu_set_t set;
	int fd, n;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = snprintf(buf, sizeof(buf), "%d", (int)getpid());
	if (write(fd, buf, (size_t)n) != n) {
		close(fd);
		return -1;
	}
	close(fd);
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

static pid_t spawn(const char *dir, int cpu, bool burner, double secs)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		struct timespec ts = { 0, 20000 };
		volatile unsigned long x = 0;
		double t0 = mono_s();

		if (settle(dir, cpu) < 0) {
			fprintf(stderr, "# settle %s: %s\n", dir, strerror(errno));
			_exit(2);
		}
		while (mono_s() - t0 < secs)
			if (burner)
				for (int i = 0; i < 10000; i++)
					x += (unsigned long)i;
			else
				clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
		_exit(0);
	}
	return pid;
}

/* A process's runtime so far (/proc/PID/schedstat's first field: its threads' summed). */
static uint64_t schedstat_ns(pid_t pid)
{
	unsigned long long ns = 0;
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)pid);
	f = fopen(path, "re");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%llu", &ns), 1);
	fclose(f);
	return ns;
}

static uint64_t snap_irq(const struct vw_cpu_snapshot *s, uint64_t id)
{
	uint64_t ns = 0;

	for (size_t i = 0; i < s->n_irq; i++)
		if (s->irq[i].cgroup_id == id)
			ns += s->irq[i].ns;
	return ns;
}

/* The CPU time the registry exports for the container at rel and the process pid. */
static void figures(const struct vw_workloads *w, const char *rel, pid_t pid, uint64_t *cont,
		    uint64_t *proc)
{
	for (size_t i = 0; i < w->n_conts; i++)
		if (w->conts[i].cg_path && strcmp(w->conts[i].cg_path, rel) == 0)
			*cont = w->conts[i].cpu_ns;
	for (size_t i = 0; i < w->n_procs; i++)
		if (w->procs[i].tgid == (uint32_t)pid && !w->procs[i].terminated)
			*proc = w->procs[i].cpu_ns;
}

static void test_timer_wakes(void **state)
{
	struct vw_cpu_env env = { .procfs_fd = procfd, .sysfs_fd = sysfd };
	struct vw_workloads_opts o = { .procfs_fd = procfd, .processes = true, .containers = true };
	struct vw_zone_energy none[VW_ZONE__COUNT] = { 0 };
	char mnt[160], a[700], b[700], a_rel[200], b_rel[200];
	int cpu = (int)sysconf(_SC_NPROCESSORS_ONLN) - 1, st, r;
	uint64_t u0, u1, irq = 0, cont_ns = 0, p0, p1, pirq = 0, proc_ns = 0, ua, uc, pa, pb;
	uint64_t cont_cpu0 = 0, cont_cpu1 = 0, proc_cpu0 = 0, proc_cpu1 = 0;
	uint64_t procs_sum = 0, cgroups_sum = 0, top_ns = 0, untracked = 0;
	uint32_t top_tgid = 0;
	size_t n_irq_procs = 0;
	struct vw_cpu_accountant acc;
	struct vw_cpu_snapshot snap;
	struct vw_cgroupfs *cg;
	struct vw_workloads *w;
	pid_t victim, attacker;
	struct stat sa;

	(void)state;
	REQUIRE(VW_HAVE_BPF, "built without BPF (-Dbpf)");
	REQUIRE(geteuid() == 0, "cgroups and BPF need root");
	REQUIRE(cpu >= 1, "needs 2 CPUs");
	REQUIRE(!btf_has_name("irqtime"), "the kernel leaves interrupt time out of tasks' time "
					    "itself (CONFIG_IRQ_TIME_ACCOUNTING)");
	assert_non_null(cg = vw_cgroupfs_open(sysfd));
	snprintf(mnt, sizeof(mnt), "/sys/%s", vw_cgroupfs_mount(cg));
	/* Containers of this run's own (docker-named: the registry places them). */
	snprintf(a_rel, sizeof(a_rel), "docker-%016llx%048x.scope", (unsigned long long)getpid(), 0xa);
	snprintf(b_rel, sizeof(b_rel), "docker-%016llx%048x.scope", (unsigned long long)getpid(), 0xb);
	snprintf(a, sizeof(a), "%s/%s", mnt, a_rel);
	snprintf(b, sizeof(b), "%s/%s", mnt, b_rel);
	REQUIRE(mkdir(a, 0755) == 0, "mkdir %s: %s", a, strerror(errno));
	assert_int_equal(mkdir(b, 0755), 0);
	assert_int_equal(stat(a, &sa), 0);
	env.cgroup_v1 = vw_cgroupfs_is_v1(cg);
	r = vw_cpu_accountant_open(&env, "bpf", &acc);
	REQUIRE(r == 0, "bpf accountant unavailable here: %s", strerror(-r));
	o.host_cpus = (unsigned)cpu + 1;
	o.cgroupfs = cg;
	assert_non_null(w = vw_workloads_new(&o));

	/* The victim first, so that the registry knows its container before the interval. */
	victim = spawn(a, cpu, true, 2.5);
	usleep(300000);
	(void)vw_cgroupfs_scan(cg);
	assert_int_equal(acc.ops->read(acc.state, &snap), 0);
	assert_int_equal(vw_workloads_update(w, &snap, none, 0), 0);
	/*
	 * The registry's interval starts at this read (the process's figures) and at the update's
	 * usage read (the container's), which fall between a and 0 below; it ends at the next
	 * read (between b and 1) and the update after it (between 1 and c). On a loaded machine
	 * this process waits milliseconds between them while the victim runs: each check below
	 * takes the readings that bracket what the registry's interval can have held.
	 */
	assert_int_equal(vw_cgroupfs_usage(cg, a_rel, &ua), 0);
	pa = schedstat_ns(victim);
	assert_int_equal(acc.ops->read(acc.state, &snap), 0);
	assert_int_equal(vw_workloads_update(w, &snap, none, 100000000), 0);
	assert_int_equal(vw_cgroupfs_usage(cg, a_rel, &u0), 0);
	p0 = schedstat_ns(victim);
	figures(w, a_rel, victim, &cont_cpu0, &proc_cpu0);
	attacker = spawn(b, cpu, false, 1.8);
	usleep(2000000);
	pb = schedstat_ns(victim);
	assert_int_equal(acc.ops->read(acc.state, &snap), 0);
	assert_int_equal(vw_cgroupfs_usage(cg, a_rel, &u1), 0);
	p1 = schedstat_ns(victim);
	for (size_t i = 0; i < snap.n_irq_procs; i++)
		if (snap.irq_procs[i].tgid == (uint32_t)victim)
			pirq = snap.irq_procs[i].ns;
	irq = snap_irq(&snap, (uint64_t)sa.st_ino);
	/* Said where the victim's process shows no interrupts (once in ~50 loaded runs, not
	 * explained): whether the read's two maps still add up alike, and who has the most. */
	for (size_t i = 0; i < snap.n_irq_procs; i++) {
		procs_sum += snap.irq_procs[i].ns;
		if (snap.irq_procs[i].ns > top_ns) {
			top_ns = snap.irq_procs[i].ns;
			top_tgid = snap.irq_procs[i].tgid;
		}
	}
	for (size_t i = 0; i < snap.n_irq; i++)
		cgroups_sum += snap.irq[i].ns;
	n_irq_procs = snap.n_irq_procs;
	untracked = snap.irq_untracked_spans[VW_CPU_IRQ_PROCESS];
	for (size_t i = 0; i < snap.n_irq && getenv("VW_TEST_VERBOSE"); i++)
		print_message("# irq cgroup %llu: %llu ns (A is %llu)\n", (unsigned long long)snap.irq[i].cgroup_id, (unsigned long long)snap.irq[i].ns, (unsigned long long)sa.st_ino);
	assert_int_equal(vw_workloads_update(w, &snap, none, 2000000000), 0);
	assert_int_equal(vw_cgroupfs_usage(cg, a_rel, &uc), 0);
	for (size_t i = 0; i < w->n_conts; i++)
		if (w->conts[i].cg_path && strcmp(w->conts[i].cg_path, a_rel) == 0)
			cont_ns = w->conts[i].cg_delta_ns;
	for (size_t i = 0; i < w->n_procs; i++)
		if (w->procs[i].tgid == (uint32_t)victim && !w->procs[i].terminated)
			proc_ns = w->procs[i].delta_ns;
	figures(w, a_rel, victim, &cont_cpu1, &proc_cpu1);
	kill(attacker, SIGKILL);
	kill(victim, SIGKILL);
	waitpid(attacker, &st, 0);
	waitpid(victim, &st, 0);
	print_message("# victim's cgroup ran %.3f s, of it %.3f s interrupts (%.1f %%); its "
		      "container counted %.3f s\n", (double)(u1 - u0) / 1e9, (double)irq / 1e9,
		      100.0 * (double)irq / (double)(u1 - u0), (double)cont_ns / 1e9);
	print_message("# the victim ran %.3f s, of it %.3f s interrupts; the registry counted it "
		      "%.3f s\n", (double)(p1 - p0) / 1e9, (double)pirq / 1e9, (double)proc_ns / 1e9);
	print_message("# the victim ran between the readings and the registry's: cgroup %.3f + "
		      "%.3f s, process %.3f + %.3f s\n", (double)(u0 - ua) / 1e9,
		      (double)(uc - u1) / 1e9, (double)(p0 - pa) / 1e9, (double)(p1 - pb) / 1e9);
	vw_workloads_free(w);
	vw_cpu_accountant_close(&acc);
	vw_cgroupfs_free(cg);
	for (int i = 0; i < 50 && (rmdir(a) < 0 || rmdir(b) < 0); i++)
		usleep(20000);
	assert_true(u1 > u0);
	if (irq * 50 < u1 - u0)
		fail_msg("the victim's cgroup paid %.3f s of interrupts, below 2 %% of its %.3f s",
			 (double)irq / 1e9, (double)(u1 - u0) / 1e9);
	if (pirq * 50 < p1 - p0)
		fail_msg("the victim paid %.3f s of interrupts, below 2 %% of its %.3f s (the read's "
			 "processes %zu, their interrupts %.3f s, the cgroups' %.3f s; the most: PID "
			 "%u, %.3f s; the victim PID %d, the attacker %d, this test %d; %llu spans "
			 "found the process map full)",
			 (double)pirq / 1e9, (double)(p1 - p0) / 1e9, n_irq_procs,
			 (double)procs_sum / 1e9, (double)cgroups_sum / 1e9, top_tgid,
			 (double)top_ns / 1e9, (int)victim, (int)attacker, (int)getpid(),
			 (unsigned long long)untracked);
	/* At most what the victim ran from before the registry's interval to after it (pa to
	 * p1), less its interrupts; 20 ms of slack for the accountant's running slice, where
	 * the interrupts are 80 ms here. */
	if (proc_ns + pirq / 2 > p1 - pa + 20000000)
		fail_msg("the registry counted the victim %.3f s, its %.3f s less %.3f s of interrupts "
			 "expected", (double)proc_ns / 1e9, (double)(p1 - pa) / 1e9, (double)pirq / 1e9);
	/* What it exports as their CPU time stays the kernel's (kepler_*_cpu_seconds_total): at
	 * least what the victim ran within the registry's interval for sure (the container's
	 * holds u0 to u1, the process's p0 to pb), its interrupts included. */
	if (cont_cpu1 - cont_cpu0 + 20000000 < u1 - u0 || proc_cpu1 - proc_cpu0 + 20000000 < pb - p0)
		fail_msg("the registry's CPU time for the victim's container %.3f s and process "
			 "%.3f s, where the kernel counted %.3f s and %.3f s",
			 (double)(cont_cpu1 - cont_cpu0) / 1e9, (double)(proc_cpu1 - proc_cpu0) / 1e9,
			 (double)(u1 - u0) / 1e9, (double)(pb - p0) / 1e9);
	/* The container's interval lies within the usage readings ua and uc: 20 ms of slack. */
	if (cont_ns + irq / 2 > uc - ua + 20000000)
		fail_msg("the victim's container counted %.3f s, its cgroup's %.3f s less %.3f s "
			 "of interrupts expected", (double)cont_ns / 1e9, (double)(uc - ua) / 1e9,
			 (double)irq / 1e9);
}

/* Three burners (in this test's cgroup) for secs, reaped: the tick interrupts each. */
static void burn_three(double secs)
{
	pid_t pid[3];
	int st;

	for (int i = 0; i < 3; i++) {
		pid[i] = fork();
		assert_true(pid[i] >= 0);
		if (pid[i] == 0) {
			volatile unsigned long x = 0;
			double t0 = mono_s();

			while (mono_s() - t0 < secs)
				for (int k = 0; k < 10000; k++)
					x += (unsigned long)k;
			_exit(0);
		}
	}
	for (int i = 0; i < 3; i++)
		waitpid(pid[i], &st, 0);
}

/* An accountant with flags, one read, three burners for secs, the read after them in snap. */
static int burn_read(uint32_t flags, double secs, struct vw_cpu_accountant *acc,
		     struct vw_cpu_snapshot *snap)
{
	struct vw_cpu_env env = { .procfs_fd = procfd, .sysfs_fd = sysfd, .flags = flags };
	int r = vw_cpu_accountant_open(&env, "bpf", acc);

	if (r < 0)
		return r;
	assert_int_equal(acc->ops->read(acc->state, snap), 0);
	burn_three(secs);
	assert_int_equal(acc->ops->read(acc->state, snap), 0);
	return 0;
}

/*
 * A gap is counted, not hidden: with maps of one entry (VW_CPU_BPF_SMALL_IRQ_MAPS, where the
 * daemon's hold 4,096), the first process interrupted in an interval takes the one entry and
 * the spans of every other one find the map full. They are counted, spans and ns
 * (vw_cpu_snapshot.irq_untracked_*), and the registry carries the counts to the exposition
 * (virtwatt_cpu_accounting_irq_untracked_*_total). Failed before: no count at all (the
 * failed update was dropped silently).
 */
static void test_full_maps_counted(void **state)
{
	struct vw_workloads_opts o = { .procfs_fd = procfd, .processes = true };
	struct vw_zone_energy none[VW_ZONE__COUNT] = { 0 };
	struct vw_cpu_accountant acc;
	struct vw_cpu_snapshot snap;
	struct vw_workloads *w;
	int r;

	(void)state;
	REQUIRE(VW_HAVE_BPF, "built without BPF (-Dbpf)");
	REQUIRE(geteuid() == 0, "BPF needs root");
	REQUIRE(!btf_has_name("irqtime"), "the kernel leaves interrupt time out of tasks' time "
					    "itself (CONFIG_IRQ_TIME_ACCOUNTING)");
	r = burn_read(VW_CPU_BPF_SMALL_IRQ_MAPS, 1.0, &acc, &snap);
	REQUIRE(r == 0, "bpf accountant unavailable here: %s", strerror(-r));
	print_message("# maps of one entry: %zu cgroup(s), %zu process(es) counted; lost: %llu "
		      "spans (%.3f ms) of cgroups, %llu spans (%.3f ms) of processes\n",
		      snap.n_irq, snap.n_irq_procs,
		      (unsigned long long)snap.irq_untracked_spans[VW_CPU_IRQ_CGROUP],
		      (double)snap.irq_untracked_ns[VW_CPU_IRQ_CGROUP] / 1e6,
		      (unsigned long long)snap.irq_untracked_spans[VW_CPU_IRQ_PROCESS],
		      (double)snap.irq_untracked_ns[VW_CPU_IRQ_PROCESS] / 1e6);
	assert_true(snap.n_irq <= 1 && snap.n_irq_procs <= 1);
	assert_true(snap.irq_untracked_spans[VW_CPU_IRQ_PROCESS] > 0);
	assert_true(snap.irq_untracked_ns[VW_CPU_IRQ_PROCESS] > 0);
	/* a span lasts at least a few hundred ns, never a whole second */
	assert_true(snap.irq_untracked_ns[VW_CPU_IRQ_PROCESS] >=
		    100 * snap.irq_untracked_spans[VW_CPU_IRQ_PROCESS]);
	assert_true(snap.irq_untracked_ns[VW_CPU_IRQ_CGROUP] >=
		    100 * snap.irq_untracked_spans[VW_CPU_IRQ_CGROUP]);
	assert_non_null(w = vw_workloads_new(&o));
	assert_int_equal(vw_workloads_update(w, &snap, none, 0), 0);
	for (int k = 0; k < VW_CPU_IRQ__COUNT; k++) {
		assert_int_equal(w->irq_untracked_spans[k], snap.irq_untracked_spans[k]);
		assert_int_equal(w->irq_untracked_ns[k], snap.irq_untracked_ns[k]);
	}
	vw_workloads_free(w);
	vw_cpu_accountant_close(&acc);
}

/*
 * --cpu.irq-accounting=off (VW_CPU_BPF_NO_IRQ): no interrupt programs, no spans, where the
 * same burners with the default give some. Failed before: the flag changed nothing.
 */
static void test_off(void **state)
{
	struct vw_cpu_accountant acc;
	struct vw_cpu_snapshot snap;
	size_t on_procs;
	int r;

	(void)state;
	REQUIRE(VW_HAVE_BPF, "built without BPF (-Dbpf)");
	REQUIRE(geteuid() == 0, "BPF needs root");
	REQUIRE(!btf_has_name("irqtime"), "the kernel leaves interrupt time out of tasks' time "
					    "itself (CONFIG_IRQ_TIME_ACCOUNTING)");
	r = burn_read(0, 0.5, &acc, &snap);
	REQUIRE(r == 0, "bpf accountant unavailable here: %s", strerror(-r));
	on_procs = snap.n_irq_procs;
	vw_cpu_accountant_close(&acc);
	assert_int_equal(burn_read(VW_CPU_BPF_NO_IRQ, 0.5, &acc, &snap), 0);
	print_message("# processes interrupted: %zu with the default, %zu with it off\n", on_procs,
		      snap.n_irq_procs);
	assert_true(on_procs > 0);
	assert_int_equal(snap.n_irq_procs, 0);
	assert_int_equal(snap.n_irq, 0);
	vw_cpu_accountant_close(&acc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_timer_wakes),
		cmocka_unit_test(test_full_maps_counted),
		cmocka_unit_test(test_off),
	};

	vw_log_set_level(VW_LOG_WARN);
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

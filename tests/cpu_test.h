/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the CPU accountant tests on the real kernel share (test_cpu_account.c,
 * test_cpu_ranwalk.c, test_cpu_exitring.c; each includes this once, after vw_test.h): the roots
 * (the real /proc and /sys) opened once per group and closed after it, with debug logging where
 * VW_TEST_DEBUG is set (main() passes group_setup and group_teardown to cmocka), a process's
 * one entry in a snapshot, a child's start time and its entry by PID and start time (PIDs wrap
 * under the suite: pid_max 32768), children reaped with the kernel's own CPU time of each, a sleep
 * that resumes after signals (ms), a process's runtime from its threads' schedstat, a mass exit
 * (test_cpu_exitring.c, test_cpu_ranwalk.c).
 */
#pragma once

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cpu_account.h"

#include "fileio.h"
#include "fixture.h"
#include "log.h"
#include "macro.h"
#include "procfs.h"

static int procfd = -1, sysfd = -1;

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

/* A name among the kernel's BTF strings (the type CONFIG_IRQ_TIME_ACCOUNTING adds: "irqtime"). */
__attribute__((unused)) static bool btf_has_name(const char *name)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, n = strlen(name);
	FILE *f = fopen("/sys/kernel/btf/vmlinux", "re");

	if (!f)
		return false;
	buf = malloc(64u << 20);
	if (buf)
		len = fread(buf, 1, 64u << 20, f);
	fclose(f);
	for (size_t i = 0; i + n + 1 < len; i++)
		if (buf[i] == '\0' && memcmp(buf + i + 1, name, n) == 0 && buf[i + 1 + n] == '\0')
			return true;
	return false;
}

/* /proc/PID/stat's starttime (ticks since boot), or false when there is no such process. */
__attribute__((unused)) static bool proc_start(uint32_t pid, uint64_t *ret)
{
	struct vw_pid_stat st;
	char path[64], buf[1024];

	snprintf(path, sizeof(path), "%u/stat", pid);
	if (vw_read_file_at(procfd, path, buf, sizeof(buf), NULL) < 0 ||
	    vw_procfs_parse_pid_stat_fields(buf, &st) < 0)
		return false;
	*ret = st.start;
	return true;
}

/*
 * pid's one entry in s. While pid is there (alive, or a child not yet reaped) it is the entry
 * that started when it did: PIDs wrap under the suite (pid_max 32768), and the same read may
 * report the exit of an earlier process that had the PID.
 */
__attribute__((unused)) static const struct vw_proc_cpu *find_proc(const struct vw_cpu_snapshot *s,
								  pid_t pid)
{
	const struct vw_proc_cpu *hit = NULL;
	uint64_t start = 0;
	bool there = proc_start((uint32_t)pid, &start);

	for (size_t i = 0; i < s->n_procs; i++) {
		if (s->procs[i].tgid != (uint32_t)pid || (there && s->procs[i].start_time != start))
			continue;
		assert_null(hit); /* one entry per process */
		hit = &s->procs[i];
	}
	return hit;
}

/*
 * A child's start time, read before it is reaped: alive or a zombie, no other process can hold
 * its PID. Once reaped, a later process may be given the PID: match entries by PID and this.
 */
__attribute__((unused)) static uint64_t child_start(pid_t pid)
{
	uint64_t start = 0;

	assert_true(proc_start((uint32_t)pid, &start));
	return start;
}

/* pid's entry that started at start (ticks since boot), if listed. */
__attribute__((unused)) static const struct vw_proc_cpu *
find_proc_started(const struct vw_cpu_snapshot *s, pid_t pid, uint64_t start)
{
	for (size_t i = 0; i < s->n_procs; i++)
		if (s->procs[i].tgid == (uint32_t)pid && s->procs[i].start_time == start)
			return &s->procs[i];
	return NULL;
}

/* A reaped child: its PID and the kernel's CPU time of it at the reap. */
struct reaped {
	pid_t pid;
	uint64_t ns;
};

/*
 * n children reaped, each exited 0, into out: wait4's rusage, user + system, which the kernel
 * makes sum to the process's sum_exec_runtime (cputime_adjust), here to the microsecond; its
 * exit path (exit_mm: the unmapping of an ASan process's address space, milliseconds on a
 * loaded machine) is in it, as it is in the runtime the accountant reports at its free.
 */
__attribute__((unused)) static void reap_children(int n, struct reaped *out)
{
	for (int i = 0; i < n; i++) {
		struct rusage ru;
		uint64_t sec, usec;
		int st;
		pid_t pid = wait4(-1, &st, 0, &ru);

		assert_true(pid > 0);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		sec = (uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec;
		usec = (uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec;
		out[i] = (struct reaped){ pid, sec * VW_NSEC_PER_SEC + usec * 1000 };
	}
}

__attribute__((unused)) static void sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* A schedstat file's first field (path under the procfs root): the task's se.sum_exec_runtime. */
__attribute__((unused)) static int schedstat_at(const char *path, uint64_t *ret)
{
	char buf[128];
	int r = vw_read_file_at(procfd, path, buf, sizeof(buf), NULL);

	if (r < 0)
		return r;
	buf[strcspn(buf, " ")] = '\0';
	return vw_parse_u64(buf, ret);
}

/* The kernel's runtime of a process: its live threads' se.sum_exec_runtime summed, as schedstat
 * gives it per thread (task/TID/schedstat); a thread that exited meanwhile is passed over. */
__attribute__((unused)) static uint64_t proc_runtime(pid_t pid)
{
	char path[300], buf[128];
	uint64_t sum = 0;
	struct dirent *e;
	DIR *d;
	int fd;

	snprintf(path, sizeof(path), "%d/task", (int)pid);
	fd = openat(procfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	d = fdopendir(fd);
	assert_non_null(d);
	while ((e = readdir(d))) {
		uint64_t v = 0;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%d/task/%s/schedstat", (int)pid, e->d_name);
		if (vw_read_file_at(procfd, path, buf, sizeof(buf), NULL) < 0)
			continue; /* a thread that exited meanwhile */
		buf[strcspn(buf, " ")] = '\0';
		assert_int_equal(vw_parse_u64(buf, &v), 0);
		sum += v;
	}
	closedir(d);
	return sum;
}

/* ---- Mass exits (cpu_exitring, cpu_ranwalk) ---- */

struct mass_kid {
	int32_t pid;
	int32_t pad;
	uint64_t ns;    /* its own schedstat just before _exit */
	uint64_t start; /* its stat's starttime: a later process given its PID is not it */
};

__attribute__((unused)) static int cmp_kid(const void *a, const void *b)
{
	const struct mass_kid *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

/* A mass exit's kids (k, sorted by PID, n) a read reports: none after its exit was, each exited
 * once (counted in reported) with its final runtime (at_reap: the kernel's at its reap) and its
 * kind from the exit, or as the ghost check's catch (counted in *ghosts): a free the kernel
 * fired that never reached the program (a 6.18 kernel drops some under load, a batch of an
 * RCU callback run at once: 120 of 500 seen; docs/attribution.md), reported with what its
 * threads ran to their exit, its exit path missing: at least what it read of itself, never
 * over the kernel's at its reap (the same 1 ms of do_exit's end and wait4's rounding). How many
 * exits were new. */
__attribute__((unused)) static int mass_seen(const struct vw_cpu_snapshot *snap,
					     const struct mass_kid *k, int n,
					     const uint64_t *at_reap, unsigned *reported,
					     int *ghosts)
{
	int seen = 0;

	for (size_t i = 0; i < snap->n_procs; i++) {
		const struct vw_proc_cpu *q = &snap->procs[i];
		const struct mass_kid key = { .pid = (int32_t)q->tgid }, *m;

		m = bsearch(&key, k, (size_t)n, sizeof(*k), cmp_kid);
		/* PIDs wrap (pid_max 32768) under the suite's other tests: a process that took a
		 * kid's PID after it is another one, whatever it reports (alive at the last read,
		 * or its own exit and runtime). */
		if (!m || q->start_time != m->start)
			continue;
		if (reported[m - k]) /* none alive, none reported again, once its exit was */
			fail_msg("pid %d reported %s after its exit", m->pid,
				 q->exited ? "exited again" : "alive");
		if (!q->exited)
			continue;
		reported[m - k]++;
		seen++;
		if (q->kind == VW_PROC_KIND_UNKNOWN) { /* the ghost check's: no kind */
			(*ghosts)++;
			if (q->cpu_ns < m->ns || q->cpu_ns > at_reap[m - k] + VW_NSEC_PER_MSEC)
				fail_msg("pid %d (a ghost): %llu ns reported, %llu ns read before its "
					 "exit, %llu ns at its reap", m->pid,
					 (unsigned long long)q->cpu_ns, (unsigned long long)m->ns,
					 (unsigned long long)at_reap[m - k]);
			continue;
		}
		/* Its final runtime: at least what it read of itself and the kernel's at its reap,
		 * its exit path in it (exit_mm of an ASan process: over 5 ms on a loaded machine),
		 * at most the microseconds of do_exit's end after the reap (and wait4's rounding)
		 * more. */
		if (q->cpu_ns < m->ns || q->cpu_ns < at_reap[m - k] ||
		    q->cpu_ns > at_reap[m - k] + VW_NSEC_PER_MSEC)
			fail_msg("pid %d: %llu ns reported, %llu ns read before its exit, %llu ns at "
				 "its reap", m->pid, (unsigned long long)q->cpu_ns,
				 (unsigned long long)m->ns, (unsigned long long)at_reap[m - k]);
	}
	return seen;
}

/*
 * A mass exit's ghosts (mass_seen's count, of n) against the snapshot's count since before it
 * (ghosts_counted): each one counted, and at most half of them, so that frees which stop
 * reaching the program altogether still fail (2,000 ghosts then), as a count that does not
 * move with them does.
 */
__attribute__((unused)) static void mass_ghosts_check(int ghosts, int n, uint64_t ghosts_counted)
{
	print_message("# %d of %d processes reported by the ghost check (their free lost), %llu "
		      "ghosts counted\n", ghosts, n, (unsigned long long)ghosts_counted);
	if ((uint64_t)ghosts > ghosts_counted || ghosts > n / 2)
		fail_msg("%d of %d processes reported by the ghost check, %llu ghosts counted",
			 ghosts, n, (unsigned long long)ghosts_counted);
}

#define MASS_MAX 2000

/*
 * A mass exit of n short processes (at most MASS_MAX), each reaped by the test, read by a: each
 * reported exited exactly once, within the reads that follow the frees, with its final runtime
 * (at least what it read of its own schedstat just before it exited; the kernel's at its reap,
 * wait4's, exit path in), its kind known from the exit (so the registry reads no
 * /proc/PID/stat for it), or as the ghost check's catch where its free was lost (mass_seen,
 * mass_ghosts_check); none stays alive. A read every read_every forks (0: none), as the
 * daemon's during a storm; reaped reap_every at a time with a read after each (their frees, an
 * RCU grace period after each reap, are events too), 0: all at once with no read between.
 * The exit events lost meanwhile, returned.
 */
__attribute__((unused)) static uint64_t mass_exit(struct vw_cpu_accountant *a, int n,
						  int read_every, int reap_every)
{
	static struct mass_kid k[MASS_MAX];
	static unsigned reported[MASS_MAX];
	static struct reaped reaped[MASS_MAX];
	static uint64_t at_reap[MASS_MAX]; /* k[i]'s CPU time at its reap, the kernel's */
	struct vw_cpu_snapshot snap;
	uint64_t lost0, ghosts0;
	int p[2], left = n, ghosts = 0;

	assert_true(n <= MASS_MAX);
	memset(reported, 0, sizeof(reported));
	assert_int_equal(a->ops->read(a->state, &snap), 0);
	lost0 = snap.exits_lost;
	ghosts0 = snap.ghosts;
	assert_int_equal(pipe(p), 0);
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();

		assert_true(pid >= 0);
		if (pid == 0) {
			struct mass_kid me = { .pid = getpid() };
			struct vw_pid_stat st;
			char buf[512];

			close(p[0]);
			vw_fixture_spin(0.0002);
			if (vw_read_file_at(procfd, "self/stat", buf, sizeof(buf), NULL) < 0 ||
			    vw_procfs_parse_pid_stat_fields(buf, &st) < 0)
				_exit(1);
			me.start = st.start;
			if (schedstat_at("self/schedstat", &me.ns) < 0 ||
			    write(p[1], &me, sizeof(me)) != sizeof(me))
				_exit(1);
			_exit(0);
		}
		if (read_every && i % read_every == read_every - 1)
			assert_int_equal(a->ops->read(a->state, &snap), 0);
	}
	close(p[1]);
	for (int i = 0; i < n; i++) /* all written before any exit: nothing waits on a reap */
		assert_int_equal(read(p[0], &k[i], sizeof(k[i])), sizeof(k[i]));
	close(p[0]);
	qsort(k, (size_t)n, sizeof(*k), cmp_kid);
	/* Reaped reap_every at a time: 2,000 reaps with no read between them are 2,000 frees and
	 * the exits that came late, with the machine's own, in one window, and the bpf ring holds
	 * 4,681 events. */
	for (int i = 0, c; i < n; i += c) {
		c = reap_every ? VW_MIN(reap_every, n - i) : n;
		reap_children(c, reaped + i);
		for (int j = i; j < i + c; j++) { /* none reaped before all were forked: distinct */
			struct mass_kid key = { .pid = reaped[j].pid }, *m;

			assert_non_null(m = bsearch(&key, k, (size_t)n, sizeof(*k), cmp_kid));
			at_reap[m - k] = reaped[j].ns;
		}
		if (reap_every) {
			assert_int_equal(a->ops->read(a->state, &snap), 0);
			left -= mass_seen(&snap, k, n, at_reap, reported, &ghosts);
		}
	}
	/* Reads until every one was reported (the frees come after an RCU grace period, late on
	 * a loaded machine: 30 s at most), then two more where none may show again. */
	for (int r = 0, after = 0; after < 2; r++) {
		if (r == 200)
			fail_msg("%d of %d processes not reported exited after %d reads (30 s)", left,
				 n, r);
		after += left == 0;
		sleep_ms(150);
		assert_int_equal(a->ops->read(a->state, &snap), 0);
		left -= mass_seen(&snap, k, n, at_reap, reported, &ghosts);
	}
	for (int i = 0; i < n; i++)
		if (reported[i] != 1)
			fail_msg("pid %d reported exited %u times", k[i].pid, reported[i]);
	mass_ghosts_check(ghosts, n, snap.ghosts - ghosts0);
	print_message("# %d processes, each reported exited once, exact; exit events lost: %llu; "
		      "the machine's ghosts %llu -> %llu\n", n,
		      (unsigned long long)(snap.exits_lost - lost0), (unsigned long long)ghosts0,
		      (unsigned long long)snap.ghosts);
	return snap.exits_lost - lost0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the CPU accountant tests on the real kernel share (test_cpu_account.c,
 * test_cpu_ranwalk.c, test_cpu_exitring.c; each includes this once, after vw_test.h): the roots
 * (the real /proc and /sys) opened once per group and closed after it, with debug logging where
 * VW_TEST_DEBUG is set (main() passes group_setup and group_teardown to cmocka), a process's
 * one entry in a snapshot, a child's start time and its entry by PID and start time (PIDs wrap
 * under the suite: pid_max 32768), children reaped with the kernel's own CPU time of each, a sleep
 * that resumes after signals (ms).
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>

#include "cpu_account.h"

#include "fileio.h"
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

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

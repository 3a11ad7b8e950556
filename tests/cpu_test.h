/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the CPU accountant tests on the real kernel share (test_cpu_account.c,
 * test_cpu_ranwalk.c, test_cpu_exitring.c; each includes this once, after vw_test.h): the roots
 * (the real /proc and /sys) opened once per group and closed after it, with debug logging where
 * VW_TEST_DEBUG is set (main() passes group_setup and group_teardown to cmocka), a process's
 * one entry in a snapshot, a sleep that resumes after signals (ms).
 */
#pragma once

#include <errno.h>
#include <stdlib.h>
#include <sys/types.h>
#include <time.h>

#include "cpu_account.h"

#include "fileio.h"
#include "log.h"
#include "macro.h"

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

__attribute__((unused)) static const struct vw_proc_cpu *find_proc(const struct vw_cpu_snapshot *s,
								  pid_t pid)
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

__attribute__((unused)) static void sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

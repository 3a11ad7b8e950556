/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CPU accountant tests' roots (the real /proc and /sys), opened once per group and closed
 * after it, with debug logging where VW_TEST_DEBUG is set: included by one test file each
 * (test_cpu_account.c, test_cpu_ranwalk.c, test_cpu_exitring.c), whose tests read procfd and
 * sysfd and whose main() passes group_setup and group_teardown to cmocka.
 */
#pragma once

#include <stdlib.h>

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

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the tests over the fake libnvidia-ml.so.1 (fake_nvml.c) share: its state, the file
 * nvml.state in a folder, named in FAKE_NVML_STATE (read by this process and by the daemons it
 * starts, which inherit it), written whole (renamed into place: the fake never reads half).
 * Include after vw_test.h.
 */
#pragma once

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fixture.h"

/* The fake's state file in dir, named in FAKE_NVML_STATE, none there yet (the fake then says
 * there is no driver); its path in ret[len] where ret is not NULL. */
__attribute__((unused)) static void fake_nvml_use(const char *dir, char *ret, size_t len)
{
	char path[1024];

	snprintf(path, sizeof(path), "%s/nvml.state", dir);
	assert_int_equal(setenv("FAKE_NVML_STATE", path, 1), 0);
	unlink(path);
	if (ret)
		snprintf(ret, len, "%s", path);
}

/* The fake's state in dir from now on: text, its key=value lines (fake_nvml.c). */
__attribute__((unused)) static void fake_nvml_write(const char *dir, const char *text)
{
	assert_int_equal(vw_fixture_replace(dir, "nvml.state", text), 0);
}

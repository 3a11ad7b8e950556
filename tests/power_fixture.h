/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Checks the power sources' tests share. Header only: the fixture library (tests/meson.build's
 * lib_fixture) is built without host/power's headers.
 */
#pragma once

#include "vw_test.h"

#include "power.h"

/* A measuring source called name with every op; closing nothing is harmless. */
static inline void vw_fixture_assert_source_ops(const struct vw_power_source_ops *src,
						const char *name)
{
	assert_string_equal(src->name, name);
	assert_true(src->measured);
	assert_non_null(src->open);
	assert_non_null(src->zones);
	assert_non_null(src->read);
	assert_non_null(src->close);
	src->close(NULL);
}

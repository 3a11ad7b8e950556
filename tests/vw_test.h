/* SPDX-License-Identifier: Apache-2.0 */
/* Common includes for cmocka tests. */
#pragma once

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka.h needs the above first. */
#include <cmocka.h>

#include <math.h>

#define assert_double_near(a, b, eps)                                                              \
	do {                                                                                       \
		double _a = (a), _b = (b);                                                         \
		if (!(fabs(_a - _b) <= (eps)))                                                     \
			fail_msg("%s = %.17g, expected %.17g (+-%g)", #a, _a, _b, (double)(eps)); \
	} while (0)

/* Where the repo's test data lives (set by meson). */
#ifndef VW_TEST_DATA
#define VW_TEST_DATA "tests/data"
#endif
#ifndef VW_SHARED_FIXTURES
#define VW_SHARED_FIXTURES "../shared/fixtures"
#endif

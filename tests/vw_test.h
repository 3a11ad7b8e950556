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
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/*
 * One test function run as several cases: each has its own name in the TAP output and finds arg
 * in *state (cmocka_unit_test_prestate_setup_teardown() names every case after the function).
 */
#define vw_unit_test_case(name, f, setup, teardown, arg)                                           \
	{ name, f, setup, teardown, (void *)(arg) }

/* CI=true: a missing capability is a failure there, never a skip. */
static inline bool vw_test_in_ci(void)
{
	const char *ci = getenv("CI");

	return ci && strcmp(ci, "true") == 0;
}

/* Skip with a reason here, fail under CI=true. */
#define REQUIRE(cond, ...)                                                                         \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			if (vw_test_in_ci())                                                       \
				fail_msg(__VA_ARGS__);                                             \
			print_message("# SKIP: ");                                                 \
			print_message(__VA_ARGS__);                                                \
			print_message("\n");                                                       \
			skip();                                                                    \
		}                                                                                  \
	} while (0)

#define assert_double_near(a, b, eps)                                                              \
	do {                                                                                       \
		double _a = (a), _b = (b);                                                         \
		if (!(fabs(_a - _b) <= (eps)))                                                     \
			fail_msg("%s = %.17g, expected %.17g (+-%g)", #a, _a, _b, (double)(eps)); \
	} while (0)

/* splitmix64: a small generator for property tests, reproducible from a fixed seed. */
static inline uint64_t vw_test_rng(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* xorshift64 (13, 7, 17): the sequence the older property tests were written against, from *s
 * (never 0). */
static inline uint64_t vw_test_xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Uniform integer in [lo, hi], hi - lo < UINT64_MAX. */
static inline uint64_t vw_test_rng_range(uint64_t *s, uint64_t lo, uint64_t hi)
{
	return lo + vw_test_rng(s) % (hi - lo + 1);
}

/* Uniform double in [lo, hi). */
static inline double vw_test_rng_double(uint64_t *s, double lo, double hi)
{
	return lo + (hi - lo) * (double)(vw_test_rng(s) >> 11) / (double)(1ULL << 53);
}

/* Where the repo's test data lives (set by meson). */
#ifndef VW_TEST_DATA
#define VW_TEST_DATA "tests/data"
#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The tests' exposition reader (exposition_fixture.c): what every C test that reads /metrics
 * relies on, on a fixed text with the hard cases (label values with spaces, braces and escaped
 * quotes, a timestamp, a name that prefixes another, junk lines, counters and gauges).
 */
#include "vw_test.h"

#include <math.h>

#include "exposition_fixture.h"
#include "macro.h"

static const char text[] =
	"# HELP a_total A counter.\n"
	"# TYPE a_total counter\n"
	"a_total{zone=\"package\",path=\"/x y\"} 3\n"
	"a_total{zone=\"dram\",path=\"/a} b\\\"c\"} 4.5 1700000000000\n"
	"a_total_more{zone=\"package\"} 100\n"
	"# TYPE g gauge\n"
	"g 7\n"
	"g{zone=\"package\"} NaN\n"
	"\n"
	"junk line without value\n"
	"{zone=\"x\"} 9\n"
	"9bad 1\n"
	"g{zone=\"unterminated 5\n"
	"h 8";

static void test_iterate(void **state)
{
	static const struct {
		const char *series;
		double value;
		bool counter;
	} want[] = {
		{ "a_total{zone=\"package\",path=\"/x y\"}", 3, true },
		{ "a_total{zone=\"dram\",path=\"/a} b\\\"c\"}", 4.5, true },
		{ "a_total_more{zone=\"package\"}", 100, true },
		{ "g", 7, false },
		{ "g{zone=\"package\"}", NAN, false },
		{ "h", 8, false },
	};
	struct vw_expo_cursor c;
	struct vw_expo_sample s;
	size_t n = 0;

	(void)state;
	vw_expo_begin(&c, text);
	while (vw_expo_next(&c, &s)) {
		assert_true(n < ARRAY_SIZE(want));
		assert_int_equal(s.series_len, strlen(want[n].series));
		assert_memory_equal(s.series, want[n].series, s.series_len);
		if (isnan(want[n].value))
			assert_true(isnan(s.value));
		else
			assert_double_near(s.value, want[n].value, 0);
		assert_int_equal(s.counter, want[n].counter);
		n++;
	}
	assert_int_equal(n, ARRAY_SIZE(want));
	vw_expo_begin(&c, text);
	assert_true(vw_expo_next(&c, &s));
	assert_true(vw_expo_is(&s, "a_total"));
	assert_false(vw_expo_is(&s, "a_tota"));
	assert_int_equal(s.name_len, strlen("a_total"));
	assert_int_equal(s.labels_len, strlen("zone=\"package\",path=\"/x y\""));
}

static void test_lookups(void **state)
{
	double v = 0;

	(void)state;
	/* exact series only: a prefix of a series, or of a longer name, is not it */
	assert_double_near(vw_expo_value(text, "a_total{zone=\"package\",path=\"/x y\"}"), 3, 0);
	assert_true(isnan(vw_expo_value(text, "a_total{zone=\"package\"")));
	assert_true(isnan(vw_expo_value(text, "a_total")));
	assert_double_near(vw_expo_value(text, "g"), 7, 0);
	assert_double_near(vw_expo_value(text, "h"), 8, 0);
	/* a family's sum leaves out a longer name that starts with it */
	assert_double_near(vw_expo_sum(text, "a_total", NULL), 7.5, 0);
	assert_double_near(vw_expo_sum(text, "a_total", (const char *const[]){ "dram", NULL }),
			    4.5, 0);
	assert_double_near(
		vw_expo_sum(text, "a_total", (const char *const[]){ "dram", "package", NULL }), 0, 0);
	assert_double_near(vw_expo_sum(text, "nothing", NULL), 0, 0);
	assert_true(vw_expo_find(text, "a_total", "zone=\"dram\"", &v));
	assert_double_near(v, 4.5, 0);
	assert_false(vw_expo_find(text, "a_total", "zone=\"none\"", &v));
	assert_false(vw_expo_find(text, "a_tota", "zone=\"dram\"", &v));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_iterate),
		cmocka_unit_test(test_lookups),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

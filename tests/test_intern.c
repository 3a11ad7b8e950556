/* SPDX-License-Identifier: Apache-2.0 */
#include "vw_test.h"

#include <stdio.h>
#include <string.h>

#include "intern.h"

static void test_intern(void **state)
{
	struct vw_intern *t = vw_intern_new();
	const char *a, *b, *e;
	const char *many[200];
	char buf[32];

	(void)state;
	assert_non_null(t);
	strcpy(buf, "/usr/bin/sleep");
	a = vw_intern_get(t, buf);
	strcpy(buf, "/usr/bin/other");
	b = vw_intern_get(t, "/usr/bin/sleep");
	assert_ptr_equal(a, b); /* one copy, not the caller's buffer */
	assert_string_equal(a, "/usr/bin/sleep");
	e = vw_intern_get(t, "");
	assert_string_equal(e, "");
	assert_int_equal(vw_intern_count(t), 1);
	vw_intern_put(t, e);
	vw_intern_put(t, a);
	assert_int_equal(vw_intern_count(t), 1);
	vw_intern_put(t, b);
	assert_int_equal(vw_intern_count(t), 0);
	/* Past the first buckets: every string found again after the table grew. */
	for (int i = 0; i < 200; i++) {
		snprintf(buf, sizeof(buf), "/bin/p%d", i % 100);
		many[i] = vw_intern_get(t, buf);
		assert_non_null(many[i]);
	}
	assert_int_equal(vw_intern_count(t), 100);
	for (int i = 0; i < 100; i++)
		assert_ptr_equal(many[i], many[i + 100]);
	for (int i = 0; i < 150; i++)
		vw_intern_put(t, many[i]);
	assert_int_equal(vw_intern_count(t), 50);
	assert_string_equal(many[199], "/bin/p99");
	vw_intern_free(t); /* with 50 strings still held */
	vw_intern_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_intern),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

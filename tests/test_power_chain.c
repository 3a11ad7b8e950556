/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A chain kept open for switching at run time (the guest's passthrough, then the model):
 * vw_power_source_open_each opens what works in order, vw_power_source_pick takes the first
 * fresh one and the last resort when none is.
 */
#include "vw_test.h"

#include <errno.h>
#include <stdlib.h>

#include "power_source.h"

struct fake {
	bool fresh;
	int closed;
};

static struct fake fakes[3];

static int open_fake(const struct vw_power_env *env, void **ret, size_t i)
{
	(void)env;
	*ret = &fakes[i];
	return 0;
}

static int open_a(const struct vw_power_env *env, void **ret)
{
	return open_fake(env, ret, 0);
}

static int open_b(const struct vw_power_env *env, void **ret)
{
	return open_fake(env, ret, 1);
}

static int open_absent(const struct vw_power_env *env, void **ret)
{
	(void)env;
	(void)ret;
	return -ENODEV;
}

static size_t no_zones(void *state, const struct vw_zone_info **ret)
{
	(void)state;
	*ret = NULL;
	return 0;
}

static int read_none(void *state, const struct vw_node_activity *act, uint64_t *raw, int *errs)
{
	(void)state, (void)act, (void)raw, (void)errs;
	return 0;
}

static bool is_fresh(void *state)
{
	return ((struct fake *)state)->fresh;
}

static void close_fake(void *state)
{
	((struct fake *)state)->closed++;
}

#define FAKE(n, o, f) { .name = n, .open = o, .zones = no_zones, .read = read_none, \
			.fresh = f, .close = close_fake }
static const struct vw_power_source_ops src_a = FAKE("a", open_a, is_fresh);
static const struct vw_power_source_ops src_absent = FAKE("absent", open_absent, is_fresh);
static const struct vw_power_source_ops src_last = FAKE("last", open_b, NULL);

static void test_open_each_and_pick(void **state)
{
	const struct vw_power_source_ops *const chain[] = { &src_a, &src_absent, &src_last, NULL };
	struct vw_power_source s[3];
	size_t n = 0;

	(void)state;
	assert_int_equal(vw_power_source_open_each(chain, &(struct vw_power_env){ 0 }, s, 3, &n), 0);
	assert_int_equal(n, 2); /* the absent one is skipped, the order kept */
	assert_ptr_equal(s[0].ops, &src_a);
	assert_ptr_equal(s[1].ops, &src_last);
	fakes[0].fresh = true;
	assert_int_equal(vw_power_source_pick(s, n), 0);
	fakes[0].fresh = false; /* stale: the last resort, which has no freshness of its own */
	assert_int_equal(vw_power_source_pick(s, n), 1);
	for (size_t i = 0; i < n; i++)
		vw_power_source_close(&s[i]);
	assert_int_equal(fakes[0].closed, 1);
	assert_int_equal(fakes[1].closed, 1);
}

static void test_open_each_none(void **state)
{
	const struct vw_power_source_ops *const chain[] = { &src_absent, NULL };
	struct vw_power_source s[1];
	size_t n = 5;

	(void)state;
	assert_int_equal(vw_power_source_open_each(chain, &(struct vw_power_env){ 0 }, s, 1, &n),
			 -ENODEV);
	assert_int_equal(n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_each_and_pick),
		cmocka_unit_test(test_open_each_none),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

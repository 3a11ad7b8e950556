/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vw_sort_runs and vw_merge_sorted against qsort on the same input: tables in order, with a few
 * sorted runs (the merge path, which must keep equal entries in their order), with many (the
 * qsort path), and random; merges whose smaller part is either side.
 */
#include "vw_test.h"

#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "sort.h"

struct item {
	unsigned key;
	unsigned seq; /* position before sorting: tells stability */
};

static int cmp_key(const void *a, const void *b)
{
	const struct item *x = a, *y = b;

	return x->key < y->key ? -1 : x->key > y->key;
}

static int cmp_key_seq(const void *a, const void *b)
{
	const struct item *x = a, *y = b;
	int c = cmp_key(a, b);

	return c ? c : x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int cmp_size(const void *a, const void *b)
{
	const size_t *x = a, *y = b;

	return *x < *y ? -1 : *x > *y;
}

/* n items in `runs` ascending runs of random lengths (keys from a small range: many equal). */
static void fill_runs(struct item *it, size_t n, size_t runs, unsigned range)
{
	size_t *cut = calloc(runs + 1, sizeof(*cut));

	assert_non_null(cut);
	cut[runs] = n;
	for (size_t r = 1; r < runs; r++)
		cut[r] = (size_t)rand() % (n + 1);
	qsort(cut, runs + 1, sizeof(*cut), cmp_size);
	for (size_t i = 0; i < n; i++)
		it[i] = (struct item){ .key = (unsigned)rand() % range, .seq = (unsigned)i };
	for (size_t r = 0; r < runs; r++)
		qsort(it + cut[r], cut[r + 1] - cut[r], sizeof(*it), cmp_key_seq);
	for (size_t i = 0; i < n; i++)
		it[i].seq = (unsigned)i;
	free(cut);
}

static size_t count_runs(const struct item *it, size_t n)
{
	size_t runs = n > 0;

	for (size_t i = 1; i < n; i++)
		runs += cmp_key(&it[i - 1], &it[i]) > 0;
	return runs;
}

/* Sorted like the reference: same keys in the same order; stable where it merged. */
static void check_sorted(const struct item *got, const struct item *in, size_t n, bool stable)
{
	struct item *want = malloc((n + 1) * sizeof(*want));

	assert_non_null(want);
	memcpy(want, in, n * sizeof(*want));
	qsort(want, n, sizeof(*want), cmp_key_seq);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(got[i].key, want[i].key);
		if (stable)
			assert_int_equal(got[i].seq, want[i].seq);
	}
	free(want);
}

static void test_sort_runs(void **state)
{
	static const size_t sizes[] = { 0, 1, 2, 3, 10, 100, 1000, 10000 };
	static const unsigned ranges[] = { 3, 1000, 1u << 30 };

	(void)state;
	srand(7);
	for (size_t s = 0; s < ARRAY_SIZE(sizes); s++)
		for (size_t g = 0; g < ARRAY_SIZE(ranges); g++)
			for (size_t runs = 1; runs <= 12; runs++) {
				size_t n = sizes[s];
				struct item *in = malloc((n + 1) * sizeof(*in));
				struct item *got = malloc((n + 1) * sizeof(*got));
				size_t had;

				assert_non_null(in);
				assert_non_null(got);
				fill_runs(in, n, runs, ranges[g]);
				had = count_runs(in, n);
				memcpy(got, in, n * sizeof(*got));
				vw_sort_runs(got, n, sizeof(*got), cmp_key);
				/* Up to 8 runs it merges: equal keys keep their order. */
				check_sorted(got, in, n, had <= 8);
				free(in);
				free(got);
			}
}

/* Random and reversed tables: the qsort path, still sorted. */
static void test_sort_many_runs(void **state)
{
	enum { N = 5000 };
	struct item *in = malloc(N * sizeof(*in)), *got = malloc(N * sizeof(*got));

	(void)state;
	assert_non_null(in);
	assert_non_null(got);
	for (size_t i = 0; i < N; i++)
		in[i] = (struct item){ .key = (unsigned)rand(), .seq = (unsigned)i };
	memcpy(got, in, N * sizeof(*got));
	vw_sort_runs(got, N, sizeof(*got), cmp_key);
	check_sorted(got, in, N, false);
	for (size_t i = 0; i < N; i++)
		in[i] = (struct item){ .key = (unsigned)(N - i), .seq = (unsigned)i };
	memcpy(got, in, N * sizeof(*got));
	vw_sort_runs(got, N, sizeof(*got), cmp_key);
	check_sorted(got, in, N, true);
	free(in);
	free(got);
}

/* Two runs, the smaller on either side, interleaved or one wholly below the other. */
static void test_merge_sorted(void **state)
{
	static const unsigned left[] = { 1, 3, 3, 5, 9, 20, 21, 22 };
	static const unsigned right[] = { 0, 3, 4, 30 };
	struct item a[ARRAY_SIZE(left) + ARRAY_SIZE(right)], in[ARRAY_SIZE(a)];
	size_t nl = ARRAY_SIZE(left), n = ARRAY_SIZE(a);

	(void)state;
	for (int side = 0; side < 2; side++) {
		/* side 0: the long run first (the right part goes aside); 1: the short one first. */
		const unsigned *first = side ? right : left, *second = side ? left : right;
		size_t n1 = side ? n - nl : nl;

		for (size_t i = 0; i < n; i++)
			in[i] = (struct item){ .key = i < n1 ? first[i] : second[i - n1],
					       .seq = (unsigned)i };
		memcpy(a, in, sizeof(a));
		assert_int_equal(vw_merge_sorted(a, n1, n, sizeof(*a), cmp_key), 0);
		check_sorted(a, in, n, true);
		/* Wholly below: the right run's keys under the left's (a PID wrap). */
		for (size_t i = 0; i < n; i++)
			in[i] = (struct item){ .key = i < n1 ? 100 + (unsigned)i : (unsigned)i,
					       .seq = (unsigned)i };
		memcpy(a, in, sizeof(a));
		assert_int_equal(vw_merge_sorted(a, n1, n, sizeof(*a), cmp_key), 0);
		check_sorted(a, in, n, true);
	}
	/* Nothing to do: an empty side, or already in order. */
	for (size_t i = 0; i < n; i++)
		in[i] = a[i] = (struct item){ .key = (unsigned)i, .seq = (unsigned)i };
	assert_int_equal(vw_merge_sorted(a, 0, n, sizeof(*a), cmp_key), 0);
	assert_int_equal(vw_merge_sorted(a, n, n, sizeof(*a), cmp_key), 0);
	assert_int_equal(vw_merge_sorted(a, 5, n, sizeof(*a), cmp_key), 0);
	assert_memory_equal(a, in, sizeof(a));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sort_runs),
		cmocka_unit_test(test_sort_many_runs),
		cmocka_unit_test(test_merge_sorted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

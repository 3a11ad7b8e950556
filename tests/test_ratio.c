/* SPDX-License-Identifier: Apache-2.0 */
#include "vw_test.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "macro.h"
#include "ratio.h"

typedef unsigned __int128 u128;

#define MAXN 200         /* property test: workloads per case */
#define CASES 10000      /* property test: random cases */
#define U64(...) ((const uint64_t[]){__VA_ARGS__})
#define IDX(...) ((const size_t[]){__VA_ARGS__})

static void expect_parts(const uint64_t *out, const uint64_t *want, size_t n, uint64_t rest,
			 uint64_t want_rest)
{
	for (size_t i = 0; i < n; i++)
		if (out[i] != want[i])
			fail_msg("part %zu = %ju, expected %ju", i, (uintmax_t)out[i],
				 (uintmax_t)want[i]);
	if (rest != want_rest)
		fail_msg("rest = %ju, expected %ju", (uintmax_t)rest, (uintmax_t)want_rest);
}

static void expect_split(uint64_t total, const uint64_t *w, size_t n, const uint64_t *want,
			 uint64_t want_rest)
{
	uint64_t out[16], rest = 12345;

	assert_true(n <= ARRAY_SIZE(out));
	assert_int_equal(vw_ratio_split(total, w, n, out, &rest), 0);
	expect_parts(out, want, n, rest, want_rest);
}

static void expect_idle(uint64_t idle, const uint64_t *reserve, const uint64_t *fallback,
			size_t n, uint64_t capacity, const uint64_t *want, uint64_t want_rest)
{
	uint64_t out[16], rest = 12345;

	assert_true(n <= ARRAY_SIZE(out));
	assert_int_equal(vw_ratio_split_idle(idle, reserve, fallback, n, capacity, out, &rest), 0);
	expect_parts(out, want, n, rest, want_rest);
}

#define EXPECT_SPLIT(total, w, want, rest) expect_split(total, w, ARRAY_SIZE(w), want, rest)
#define EXPECT_IDLE(idle, reserve, fallback, cap, want, rest)                                      \
	expect_idle(idle, reserve, fallback, ARRAY_SIZE(reserve), cap, want, rest)

static void test_split_examples(void **state)
{
	(void)state;
	EXPECT_SPLIT(100, U64(1, 3), U64(25, 75), 0);
	EXPECT_SPLIT(7, U64(3, 2, 2), U64(3, 2, 2), 0);
	/* 16 2/3 each: floors give 96, the 4 left go to the lowest indices. */
	EXPECT_SPLIT(100, U64(1, 1, 1, 1, 1, 1), U64(17, 17, 17, 17, 16, 16), 0);
	/* 10 x {2,3,5,7}/17 = 1 3/17, 1 13/17, 2 16/17, 4 2/17: the 2 left go to 16/17, 13/17. */
	EXPECT_SPLIT(10, U64(2, 3, 5, 7), U64(1, 2, 3, 4), 0);
	/* Zero weights get nothing; the tie at 1/2 goes to the lower index. */
	EXPECT_SPLIT(5, U64(0, 1, 0, 1), U64(0, 3, 0, 2), 0);
	EXPECT_SPLIT(0, U64(4, 5), U64(0, 0), 0);
	EXPECT_SPLIT(1, U64(1, 1000000), U64(0, 1), 0);
}

static void test_split_largest_remainder(void **state)
{
	(void)state;
	/* 3 1/3 each: one leftover, tie, lowest index. */
	EXPECT_SPLIT(10, U64(1, 1, 1), U64(4, 3, 3), 0);
	/* 3 2/3 each: two leftovers. */
	EXPECT_SPLIT(11, U64(1, 1, 1), U64(4, 4, 3), 0);
	/* The larger remainder wins over the lower index: 10 x {1,2}/3 = 3 1/3, 6 2/3. */
	EXPECT_SPLIT(10, U64(1, 2), U64(3, 7), 0);
	/* 1 over 3 equal weights, then 2 over them: order is by index among ties only. */
	EXPECT_SPLIT(1, U64(5, 5, 5), U64(1, 0, 0), 0);
	EXPECT_SPLIT(2, U64(5, 5, 5), U64(1, 1, 0), 0);
	/* The remainders 1/7 ... 6/7 in shuffled order: 3 leftovers go to 6/7, 5/7, 4/7. */
	EXPECT_SPLIT(3, U64(1, 5, 2, 6, 4, 3), U64(0, 1, 0, 1, 1, 0), 0);
	/* Deterministic: the same call gives the same answer. */
	EXPECT_SPLIT(10, U64(1, 1, 1), U64(4, 3, 3), 0);
}

static void test_split_edges(void **state)
{
	const uint64_t M = UINT64_MAX, half = UINT64_C(1) << 63, w256 = UINT64_C(1) << 56;
	uint64_t big[256], out[256], rest;

	(void)state;
	/* n = 0: everything is left over; arrays may be NULL. */
	assert_int_equal(vw_ratio_split(42, NULL, 0, NULL, &rest), 0);
	assert_true(rest == 42);
	/* All weights zero: nothing is claimed. */
	EXPECT_SPLIT(42, U64(0, 0, 0), U64(0, 0, 0), 42);
	EXPECT_SPLIT(M, U64(0), U64(0), M);
	/* A single weight takes it all. */
	EXPECT_SPLIT(42, U64(7), U64(42), 0);
	EXPECT_SPLIT(M, U64(M), U64(M), 0);
	EXPECT_SPLIT(M, U64(1), U64(M), 0);
	/* Huge totals and weights, exactly: (2^64 - 1) / 2 = 2^63 - 1/2 each. */
	EXPECT_SPLIT(M, U64(M, M), U64(half, half - 1), 0);
	/* M x M / (M + 1) = M - 1 + 1/(M + 1); M / (M + 1) rounds up on the larger remainder. */
	EXPECT_SPLIT(M, U64(M, 1), U64(M - 1, 1), 0);
	/* The weights' sum is 256 x M, far above 64 bits: each gets 2^56 - 1/256. */
	for (size_t i = 0; i < ARRAY_SIZE(big); i++)
		big[i] = M;
	assert_int_equal(vw_ratio_split(M, big, ARRAY_SIZE(big), out, &rest), 0);
	for (size_t i = 0; i < ARRAY_SIZE(big); i++)
		assert_true(out[i] == (i < 255 ? w256 : w256 - 1));
	assert_true(rest == 0);
	/* Invalid arguments. */
	assert_int_equal(vw_ratio_split(1, NULL, 1, out, &rest), -EINVAL);
	assert_int_equal(vw_ratio_split(1, big, 1, NULL, &rest), -EINVAL);
	assert_int_equal(vw_ratio_split(1, big, 1, out, NULL), -EINVAL);
	assert_int_equal(vw_ratio_split(1, NULL, 0, NULL, NULL), -EINVAL);
}

static void test_idle_reserved(void **state)
{
	(void)state;
	/* 1 and 3 CPUs of 8: an eighth and three eighths; the node keeps half. */
	EXPECT_IDLE(1000, U64(1000, 3000), NULL, 8000, U64(125, 375), 500);
	/* Fully reserved: the node keeps nothing. */
	EXPECT_IDLE(1000, U64(4000, 4000), NULL, 8000, U64(500, 500), 0);
	/* Workloads without a reservation get no idle, even with CPU time. */
	EXPECT_IDLE(1000, U64(2000, 0), U64(1, 99), 4000, U64(500, 0), 500);
	/* The node rounds as the last part: 2 1/2 each of 4 parts, 2 leftovers to indices 0, 1. */
	EXPECT_IDLE(10, U64(1000, 1000, 1000), NULL, 4000, U64(3, 3, 2), 2);
	/* ... and takes the leftover when its remainder is the largest: 1 1/9, 1 1/9, 7 7/9. */
	EXPECT_IDLE(10, U64(1000, 1000), NULL, 9000, U64(1, 1), 8);
	/* Huge idle and reservations stay exact. */
	EXPECT_IDLE(UINT64_MAX, U64(UINT64_MAX - 1), NULL, UINT64_MAX, U64(UINT64_MAX - 1), 1);
}

static void test_idle_overcommit(void **state)
{
	(void)state;
	/* 12 CPUs reserved of 8: normalised by the reservations, nothing left to the node. */
	EXPECT_IDLE(1000, U64(6000, 6000), NULL, 8000, U64(500, 500), 0);
	EXPECT_IDLE(1000, U64(2000, 6000, 2000), NULL, 8000, U64(200, 600, 200), 0);
	/* Capacity 0 (unknown) is over-commit too. */
	EXPECT_IDLE(1000, U64(1000, 3000), NULL, 0, U64(250, 750), 0);
	/* Reservations whose sum passes 64 bits. */
	EXPECT_IDLE(11, U64(UINT64_MAX, UINT64_MAX, UINT64_MAX), NULL, 8000, U64(4, 4, 3), 0);
}

static void test_idle_fallback(void **state)
{
	uint64_t out[2], rest;

	(void)state;
	/* Nothing reserved: by CPU time, as vw_ratio_split. */
	EXPECT_IDLE(10, U64(0, 0, 0), U64(1, 1, 1), 4000, U64(4, 3, 3), 0);
	EXPECT_IDLE(10, U64(0, 0), U64(1, 4), 0, U64(2, 8), 0);
	/* No fallback, or no CPU time either: the node keeps it. */
	EXPECT_IDLE(10, U64(0, 0), NULL, 4000, U64(0, 0), 10);
	EXPECT_IDLE(10, U64(0, 0), NULL, 0, U64(0, 0), 10);
	EXPECT_IDLE(10, U64(0, 0), U64(0, 0), 4000, U64(0, 0), 10);
	/* No workloads. */
	assert_int_equal(vw_ratio_split_idle(10, NULL, NULL, 0, 4000, NULL, &rest), 0);
	assert_true(rest == 10);
	/* Invalid arguments: fallback alone may be NULL. */
	assert_int_equal(vw_ratio_split_idle(10, NULL, U64(1, 1), 2, 4000, out, &rest), -EINVAL);
	assert_int_equal(vw_ratio_split_idle(10, U64(1, 1), NULL, 2, 4000, NULL, &rest), -EINVAL);
	assert_int_equal(vw_ratio_split_idle(10, U64(1, 1), NULL, 2, 4000, out, NULL), -EINVAL);
}

static void test_hierarchy_examples(void **state)
{
	/* Processes 0..4 in containers 0, 0, 1, 2, 2; containers in pods 0, 0, 1. */
	const uint64_t proc[] = {10, 20, 30, 40, 50};
	const size_t proc_of[] = {0, 0, 1, 2, 2}, cont_of[] = {0, 0, 1}, pod_of[] = {0, 0};
	uint64_t cont[3], pod[2], node, own[3];

	(void)state;
	assert_int_equal(vw_ratio_sum_children(proc, proc_of, 5, NULL, 3, cont), 0);
	expect_parts(cont, U64(30, 30, 90), 3, 0, 0);
	assert_int_equal(vw_ratio_sum_children(cont, cont_of, 3, NULL, 2, pod), 0);
	expect_parts(pod, U64(60, 90), 2, 0, 0);
	/* The node adds its own part (unclaimed energy) to its pods. */
	assert_int_equal(vw_ratio_sum_children(pod, pod_of, 2, U64(7), 1, &node), 0);
	assert_true(node == 157);
	/* And the residual gives it back; children own nothing beyond their parts. */
	assert_int_equal(vw_ratio_residual(pod, pod_of, 2, &node, 1, own), 0);
	assert_true(own[0] == 7);
	assert_int_equal(vw_ratio_residual(proc, proc_of, 5, cont, 3, own), 0);
	expect_parts(own, U64(0, 0, 0), 3, 0, 0);
	/* Parents without children. */
	assert_int_equal(vw_ratio_sum_children(NULL, NULL, 0, U64(1, 2), 2, pod), 0);
	expect_parts(pod, U64(1, 2), 2, 0, 0);
	/* Errors. */
	assert_int_equal(vw_ratio_sum_children(proc, IDX(0, 3), 2, NULL, 3, cont), -ERANGE);
	assert_int_equal(vw_ratio_sum_children(proc, NULL, 2, NULL, 3, cont), -EINVAL);
	assert_int_equal(vw_ratio_sum_children(proc, proc_of, 5, NULL, 3, NULL), -EINVAL);
	assert_int_equal(vw_ratio_sum_children(U64(UINT64_MAX, 1), pod_of, 2, NULL, 1, &node),
			 -EOVERFLOW);
	assert_int_equal(vw_ratio_sum_children(U64(1), pod_of, 1, U64(UINT64_MAX), 1, &node),
			 -EOVERFLOW);
	node = 100;
	assert_int_equal(vw_ratio_residual(U64(60, 41), pod_of, 2, &node, 1, own), -EDOM);
	assert_int_equal(vw_ratio_residual(proc, proc_of, 5, NULL, 3, own), -EINVAL);
	assert_int_equal(vw_ratio_residual(proc, IDX(9), 1, cont, 3, own), -ERANGE);
}

/* ---- property test ------------------------------------------------------------------------ */

struct rng {
	uint64_t s;
};

/* xorshift64*, fixed seed: the same cases every run. */
static uint64_t rnd(struct rng *g)
{
	g->s ^= g->s >> 12;
	g->s ^= g->s << 25;
	g->s ^= g->s >> 27;
	return g->s * UINT64_C(2685821657736338717);
}

static uint64_t rnd_below(struct rng *g, uint64_t n)
{
	return rnd(g) % n;
}

/* Weights and totals from every range that matters, biased to the edges. */
static uint64_t rnd_value(struct rng *g, unsigned regime)
{
	uint64_t v;

	switch (regime % 6) {
	case 0:
		return 0;
	case 1:
		return rnd_below(g, 4); /* many ties and zeros */
	case 2:
		return rnd_below(g, 1000000);
	case 3:
		v = rnd(g); /* two statements: the draws must come in a fixed order */
		return v >> rnd_below(g, 64); /* every magnitude */
	case 4:
		return UINT64_MAX - rnd_below(g, 1000); /* near the top */
	default:
		return rnd(g);
	}
}

/* Per case, the weights come from one or two regimes, so some cases are all zero or all huge. */
static void rnd_weights(struct rng *g, uint64_t *w, size_t n)
{
	unsigned a = (unsigned)rnd_below(g, 6), b = (unsigned)rnd_below(g, 6);

	for (size_t i = 0; i < n; i++)
		w[i] = rnd_value(g, rnd_below(g, 2) ? a : b);
}

static uint64_t rnd_total(struct rng *g)
{
	return rnd_value(g, (unsigned)rnd_below(g, 6));
}

/*
 * Check one split against the rules, computing the exact shares independently: conservation,
 * the rest, floor <= part <= ceil, and the largest-remainder order (every part rounded up has
 * a larger remainder than every part not rounded up, or an equal one at a lower index).
 * Returns how many parts were rounded up.
 */
static size_t check_split(uint64_t total, const uint64_t *w, size_t n, const uint64_t *out,
			uint64_t rest)
{
	u128 sum_w = 0, sum_out = rest, up_rem = 0, down_rem = 0;
	size_t up_idx = 0, down_idx = 0, ups = 0;
	bool any_up = false, any_down = false;

	for (size_t i = 0; i < n; i++) {
		sum_w += w[i];
		sum_out += out[i];
	}
	if (sum_out != total)
		fail_msg("parts + rest = %ju.., total %ju", (uintmax_t)sum_out, (uintmax_t)total);
	assert_true(rest == (sum_w == 0 ? total : 0));
	if (sum_w == 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		u128 exact = (u128)total * w[i], fl = exact / sum_w, rem = exact % sum_w;

		if (rem != 0 && out[i] == fl + 1) {
			ups++;
			/* the weakest part rounded up: lowest remainder, highest index */
			if (!any_up || rem <= up_rem)
				up_rem = rem, up_idx = i;
			any_up = true;
		} else if (out[i] == fl) {
			/* the strongest part not rounded up: highest remainder, lowest index */
			if (!any_down || rem > down_rem)
				down_rem = rem, down_idx = i;
			any_down = true;
		} else {
			fail_msg("part %zu = %ju outside [floor, ceil] of its share", i,
				 (uintmax_t)out[i]);
		}
	}
	if (any_up && any_down && !(up_rem > down_rem || (up_rem == down_rem && up_idx < down_idx)))
		fail_msg("part %zu rounded up before part %zu", up_idx, down_idx);
	/* The leftover is below the number of parts (the remainders add up to it x sum_w). */
	assert_true(ups < n);
	return ups;
}

enum idle_case { IDLE_FALLBACK, IDLE_OVERCOMMIT, IDLE_NODE_REST, IDLE__COUNT };

/* The idle split is a split over the reservations plus the node's unreserved part. */
static enum idle_case check_idle(uint64_t idle, const uint64_t *reserve, const uint64_t *fallback,
		       size_t n, uint64_t capacity, const uint64_t *out, uint64_t rest)
{
	uint64_t w[MAXN + 1], parts[MAXN + 1];
	u128 reserved = 0;

	for (size_t i = 0; i < n; i++)
		reserved += reserve[i];
	if (reserved == 0) {
		check_split(idle, fallback, n, out, rest);
		return IDLE_FALLBACK;
	}
	memcpy(w, reserve, n * sizeof(*w));
	memcpy(parts, out, n * sizeof(*parts));
	w[n] = capacity > reserved ? (uint64_t)(capacity - reserved) : 0;
	parts[n] = rest;
	check_split(idle, w, n + 1, parts, 0);
	return capacity > reserved ? IDLE_NODE_REST : IDLE_OVERCOMMIT;
}

/*
 * Processes -> containers -> pods -> node with a random shape: summing up gives every parent
 * exactly its children, the node exactly the total, and the residuals give back the rest.
 */
static void check_tree(struct rng *g, const uint64_t *proc, size_t n, uint64_t rest,
		       uint64_t total)
{
	size_t n_cont = 1 + (size_t)rnd_below(g, n), n_pod = 1 + (size_t)rnd_below(g, n_cont);
	size_t proc_of[MAXN], cont_of[MAXN], pod_of[MAXN] = {0};
	uint64_t cont[MAXN], pod[MAXN], node, own[MAXN];
	u128 direct[MAXN] = {0};

	for (size_t i = 0; i < n; i++)
		proc_of[i] = (size_t)rnd_below(g, n_cont);
	for (size_t i = 0; i < n_cont; i++)
		cont_of[i] = (size_t)rnd_below(g, n_pod);
	assert_int_equal(vw_ratio_sum_children(proc, proc_of, n, NULL, n_cont, cont), 0);
	assert_int_equal(vw_ratio_sum_children(cont, cont_of, n_cont, NULL, n_pod, pod), 0);
	assert_int_equal(vw_ratio_sum_children(pod, pod_of, n_pod, &rest, 1, &node), 0);
	assert_true(node == total);
	/* each pod is its processes, summed here without the helper */
	for (size_t i = 0; i < n; i++)
		direct[cont_of[proc_of[i]]] += proc[i];
	for (size_t p = 0; p < n_pod; p++)
		assert_true(direct[p] == pod[p]);
	assert_int_equal(vw_ratio_residual(proc, proc_of, n, cont, n_cont, own), 0);
	for (size_t c = 0; c < n_cont; c++)
		assert_true(own[c] == 0);
	assert_int_equal(vw_ratio_residual(pod, pod_of, n_pod, &node, 1, own), 0);
	assert_true(own[0] == rest);
}

struct workloads {
	size_t n;
	uint64_t cpu[MAXN], reserve[MAXN], active[MAXN], idle[MAXN];
	uint64_t active_total, idle_total, capacity, active_rest, idle_rest;
};

static void rnd_workloads(struct rng *g, struct workloads *wl)
{
	uint64_t reserved = 0, delta;

	wl->n = (size_t)rnd_below(g, MAXN + 1);
	rnd_weights(g, wl->cpu, wl->n);
	rnd_weights(g, wl->reserve, wl->n);
	if (rnd_below(g, 8) == 0) /* nothing reserved: the CPU-time fallback */
		memset(wl->reserve, 0, sizeof(wl->reserve));
	wl->active_total = rnd_total(g);
	wl->idle_total = rnd_total(g);
	/* capacity: anything, or just around the reservations' sum (saturated at UINT64_MAX) */
	for (size_t i = 0; i < wl->n; i++)
		if (__builtin_add_overflow(reserved, wl->reserve[i], &reserved))
			reserved = UINT64_MAX;
	delta = rnd_below(g, 1000);
	switch (rnd_below(g, 3)) {
	case 0:
		wl->capacity = rnd_total(g);
		break;
	case 1:
		wl->capacity = reserved > UINT64_MAX - delta ? UINT64_MAX : reserved + delta;
		break;
	default:
		wl->capacity = reserved < delta ? 0 : reserved - delta;
	}
}

/* What the random cases reached: each kind must come up often enough to count. */
struct coverage {
	size_t tree, rounded, no_weight, near_max, idle[IDLE__COUNT];
};

static void test_property(void **state)
{
	struct rng g = {.s = UINT64_C(0x9e3779b97f4a7c15)};
	struct workloads wl, again;
	struct coverage cov = {0};

	(void)state;
	for (int c = 0; c < CASES; c++) {
		rnd_workloads(&g, &wl);
		assert_int_equal(vw_ratio_split(wl.active_total, wl.cpu, wl.n, wl.active,
						&wl.active_rest),
				 0);
		cov.rounded += check_split(wl.active_total, wl.cpu, wl.n, wl.active,
					   wl.active_rest) > 0;
		cov.no_weight += wl.active_rest > 0;
		cov.near_max += wl.active_total > UINT64_MAX - 1000;
		assert_int_equal(vw_ratio_split_idle(wl.idle_total, wl.reserve, wl.cpu, wl.n,
						     wl.capacity, wl.idle, &wl.idle_rest),
				 0);
		cov.idle[check_idle(wl.idle_total, wl.reserve, wl.cpu, wl.n, wl.capacity, wl.idle,
				    wl.idle_rest)]++;

		/* deterministic: a second run gives the same parts */
		again = wl;
		assert_int_equal(vw_ratio_split_idle(wl.idle_total, wl.reserve, wl.cpu, wl.n,
						     wl.capacity, again.idle, &again.idle_rest),
				 0);
		for (size_t i = 0; i < wl.n; i++)
			assert_true(again.idle[i] == wl.idle[i]);
		assert_true(again.idle_rest == wl.idle_rest);

		if (wl.n == 0)
			continue;
		check_tree(&g, wl.active, wl.n, wl.active_rest, wl.active_total);
		check_tree(&g, wl.idle, wl.n, wl.idle_rest, wl.idle_total);
		cov.tree++;
	}
	print_message("# %d random cases: %zu with a hierarchy, %zu rounded, %zu with no weight, "
		      "%zu near UINT64_MAX; idle: %zu by CPU time, %zu over-committed, "
		      "%zu with a node rest\n",
		      CASES, cov.tree, cov.rounded, cov.no_weight, cov.near_max,
		      cov.idle[IDLE_FALLBACK], cov.idle[IDLE_OVERCOMMIT], cov.idle[IDLE_NODE_REST]);
	assert_true(cov.tree > CASES / 2 && cov.rounded > CASES / 4);
	assert_true(cov.no_weight > CASES / 100 && cov.near_max > CASES / 100);
	for (size_t k = 0; k < IDLE__COUNT; k++)
		assert_true(cov.idle[k] > CASES / 100);
}

/*
 * Many parts, as a node of 10,000 processes has: past the 256 parts of weight > 0 whose
 * remainders the split selects from on the stack, it selects by passes over the weights. Both
 * sides of that bound, with most weights 0 (idle processes) or none, checked as above.
 */
static void test_property_many(void **state)
{
	enum { MANY = 3000, MANY_CASES = 300 };
	struct rng g = {.s = UINT64_C(0x243f6a8885a308d3)};
	uint64_t *w = calloc(MANY, sizeof(*w)), *out = calloc(MANY, sizeof(*out)), rest;
	size_t busy_sides[2] = {0}, rounded = 0;

	(void)state;
	assert_non_null(w);
	assert_non_null(out);
	for (int c = 0; c < MANY_CASES; c++) {
		size_t n = 200 + rnd_below(&g, MANY - 200), busy = 0;
		uint64_t total;
		unsigned idle_share = (unsigned)rnd_below(&g, 4); /* 0, 1/4 .. 3/4 idle */
		unsigned regime = 1 + (unsigned)rnd_below(&g, 5); /* weights > 0 drawn */

		for (size_t i = 0; i < n; i++) {
			w[i] = rnd_below(&g, 4) < idle_share ? 0 : rnd_value(&g, regime);
			busy += w[i] != 0;
		}
		busy_sides[busy > 256]++;
		total = rnd_total(&g);
		assert_int_equal(vw_ratio_split(total, w, n, out, &rest), 0);
		rounded += check_split(total, w, n, out, rest) > 0;
	}
	print_message("# %d cases of up to %d parts: %zu with at most 256 busy, %zu with more, "
		      "%zu rounded\n",
		      MANY_CASES, MANY, busy_sides[0], busy_sides[1], rounded);
	assert_true(busy_sides[0] > MANY_CASES / 10 && busy_sides[1] > MANY_CASES / 10);
	assert_true(rounded > MANY_CASES / 4);
	free(w);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split_examples),
		cmocka_unit_test(test_split_largest_remainder),
		cmocka_unit_test(test_split_edges),
		cmocka_unit_test(test_idle_reserved),
		cmocka_unit_test(test_idle_overcommit),
		cmocka_unit_test(test_idle_fallback),
		cmocka_unit_test(test_hierarchy_examples),
		cmocka_unit_test(test_property),
		cmocka_unit_test(test_property_many),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

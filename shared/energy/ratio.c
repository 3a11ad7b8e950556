/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ratio model in integers. A split of `total` over weights w[0..n) (plus, for idle, one
 * virtual last part: the node's unreserved share) works in three passes, all in place:
 *
 *   1. floor:     out[i] = floor(total x w[i] / S), S = the sum of all weights, in 128 bits;
 *   2. threshold: the leftover L = total - sum(out) is below the number of parts; find t, the
 *                 L-th largest remainder r[i] = total x w[i] - out[i] x S, by bisection;
 *   3. award:     one more microjoule to every part with r[i] > t, then to the lowest indices
 *                 with r[i] == t until L are given.
 *
 * Remainders are recomputed from out[i] rather than stored, so nothing is allocated and there
 * is no limit on n. total x w[i] < 2^128 and S <= n x (2^64 - 1) both fit in unsigned __int128,
 * so every uint64_t input is exact and nothing overflows. t >= 1 (a zero remainder is never
 * rounded up), so every part lies between the floor and the ceiling of its exact share.
 * Bisection takes at most log2(S) passes (72 for 256 parts of UINT64_MAX), usually far
 * fewer since it stops as soon as exactly L remainders reach the midpoint.
 */
#include "ratio.h"

#include <errno.h>
#include <stdbool.h>

typedef unsigned __int128 u128;

struct split {
	uint64_t total;
	const uint64_t *w; /* n real weights */
	uint64_t *out;     /* n real parts */
	size_t n;
	uint64_t extra_w;   /* weight of the virtual part n (0: none) */
	uint64_t extra_out; /* its part: the rest */
	u128 sum;           /* of all n + 1 weights */
};

static uint64_t weight_at(const struct split *s, size_t i)
{
	return i < s->n ? s->w[i] : s->extra_w;
}

static uint64_t *part_at(struct split *s, size_t i)
{
	return i < s->n ? &s->out[i] : &s->extra_out;
}

/* Exact remainder of part i, in units of 1/S microjoule. */
static u128 remainder_at(struct split *s, size_t i)
{
	return (u128)s->total * weight_at(s, i) - (u128)*part_at(s, i) * s->sum;
}

static size_t count_at_least(struct split *s, u128 t)
{
	size_t c = 0;

	for (size_t i = 0; i <= s->n; i++)
		c += remainder_at(s, i) >= t;
	return c;
}

/* Pass 1: floors; returns the leftover microjoules (fewer than n + 1). */
static uint64_t split_floor(struct split *s)
{
	uint64_t given = 0;

	for (size_t i = 0; i <= s->n; i++) {
		uint64_t *p = part_at(s, i);

		*p = (uint64_t)((u128)s->total * weight_at(s, i) / s->sum);
		given += *p; /* sum of floors <= total: no wrap */
	}
	return s->total - given;
}

/*
 * Pass 2: the leftover-th largest remainder. Invariant: at least `left` remainders are
 * >= lo, fewer than `left` are >= hi. Since the remainders add up to left x S with each
 * below S, more than `left` of them are >= 1, so lo = 1 holds at the start.
 */
static u128 split_threshold(struct split *s, uint64_t left)
{
	u128 lo = 1, hi = s->sum;

	while (hi - lo > 1) {
		u128 mid = lo + (hi - lo) / 2;
		size_t c = count_at_least(s, mid);

		if (c == left)
			return mid;
		if (c > left)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* Pass 3: round up the largest remainders, ties to the lower index. */
static void split_award(struct split *s, uint64_t left, u128 t)
{
	uint64_t ties = left - count_at_least(s, t + 1); /* those above t take the rest first */

	for (size_t i = 0; i <= s->n && left > 0; i++) {
		u128 r = remainder_at(s, i);

		if (r > t || (r == t && ties > 0)) {
			if (r == t)
				ties--;
			(*part_at(s, i))++;
			left--;
		}
	}
}

static void split_run(struct split *s)
{
	uint64_t left;

	if (s->sum == 0) {
		for (size_t i = 0; i < s->n; i++)
			s->out[i] = 0;
		s->extra_out = s->total;
		return;
	}
	left = split_floor(s);
	if (left > 0)
		split_award(s, left, split_threshold(s, left));
}

static u128 sum_of(const uint64_t *w, size_t n)
{
	u128 sum = 0;

	for (size_t i = 0; i < n; i++)
		sum += w[i];
	return sum;
}

int vw_ratio_split(uint64_t total, const uint64_t *weights, size_t n, uint64_t *out,
		   uint64_t *ret_rest)
{
	struct split s = {.total = total, .w = weights, .out = out, .n = n};

	if (!ret_rest || (n > 0 && (!weights || !out)))
		return -EINVAL;
	s.sum = sum_of(weights, n);
	split_run(&s);
	*ret_rest = s.extra_out;
	return 0;
}

int vw_ratio_split_idle(uint64_t idle, const uint64_t *reserve, const uint64_t *fallback,
			size_t n, uint64_t capacity, uint64_t *out, uint64_t *ret_rest)
{
	struct split s = {.total = idle, .w = reserve, .out = out, .n = n};
	u128 reserved;

	if (!ret_rest || (n > 0 && (!reserve || !out)))
		return -EINVAL;
	reserved = sum_of(reserve, n);
	if (reserved == 0 && fallback)
		return vw_ratio_split(idle, fallback, n, out, ret_rest);
	/* Unreserved capacity is the node's part; with nothing reserved and no fallback it is
	 * the only part (or the sum is 0), so the node keeps it all either way. */
	if (capacity > reserved)
		s.extra_w = (uint64_t)(capacity - reserved);
	s.sum = reserved + s.extra_w;
	split_run(&s);
	*ret_rest = s.extra_out;
	return 0;
}

/*
 * out[p] = init[p] (0 for a NULL init when adding) plus or minus every child_uj[i] with
 * parent_of[i] == p, checked: -EOVERFLOW past UINT64_MAX, -EDOM below 0.
 */
static int fold_children(const uint64_t *child_uj, const size_t *parent_of, size_t n_child,
			 const uint64_t *init, size_t n_parent, uint64_t *out, bool subtract)
{
	if (n_child > 0 && (!child_uj || !parent_of))
		return -EINVAL;
	if (n_parent > 0 && (!out || (subtract && !init)))
		return -EINVAL;
	for (size_t i = 0; i < n_child; i++)
		if (parent_of[i] >= n_parent)
			return -ERANGE;
	for (size_t p = 0; p < n_parent; p++)
		out[p] = init ? init[p] : 0;
	for (size_t i = 0; i < n_child; i++) {
		uint64_t *p = &out[parent_of[i]];

		if (subtract ? __builtin_sub_overflow(*p, child_uj[i], p) :
			       __builtin_add_overflow(*p, child_uj[i], p))
			return subtract ? -EDOM : -EOVERFLOW;
	}
	return 0;
}

int vw_ratio_sum_children(const uint64_t *child_uj, const size_t *parent_of, size_t n_child,
			  const uint64_t *own_uj, size_t n_parent, uint64_t *ret_parent_uj)
{
	return fold_children(child_uj, parent_of, n_child, own_uj, n_parent, ret_parent_uj,
			     false);
}

int vw_ratio_residual(const uint64_t *child_uj, const size_t *parent_of, size_t n_child,
		      const uint64_t *parent_uj, size_t n_parent, uint64_t *ret_own_uj)
{
	return fold_children(child_uj, parent_of, n_child, parent_uj, n_parent, ret_own_uj, true);
}

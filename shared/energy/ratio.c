/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ratio model in integers. A split of `total` over weights w[0..n) (plus, for idle, one
 * virtual last part: the node's unreserved share) works in three passes, all in place:
 *
 *   1. floor:     out[i] = floor(total x w[i] / S), S = the sum of all weights, in 128 bits;
 *   2. threshold: the leftover L = total - sum(out) is below the number of parts; find t, the
 *                 L-th largest remainder r[i] = total x w[i] - out[i] x S, by a select (below);
 *   3. award:     one more microjoule to every part with r[i] > t, then to the lowest indices
 *                 with r[i] == t until L are given.
 *
 * Remainders are recomputed from out[i] rather than stored (but for a few on the stack), so
 * nothing is allocated and there is no limit on n. total x w[i] < 2^128 and S <= n x (2^64 - 1) both fit in unsigned __int128,
 * so every uint64_t input is exact and nothing overflows. t >= 1 (a zero remainder is never
 * rounded up), so every part lies between the floor and the ceiling of its exact share.
 * Up to 256 parts of weight > 0 (a container's processes, most nodes' busy ones), their
 * remainders, kept from pass 1 on the stack, are selected from in place (quickselect);
 * beyond, a radix select (each pass counts the remainders in 256 buckets of the range still
 * open and keeps the bucket holding the L-th) takes ceil(log2(S) / 8) passes (4 for a second of two CPUs' time
 * in ns, 10 at most), where bisection took one a bit. A part of weight 0 has part and
 * remainder 0 and is skipped by every pass: at 10,000 mostly idle processes nearly all.
 */
#include "ratio.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

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
		if (weight_at(s, i))
			c += remainder_at(s, i) >= t;
	return c;
}

/* Remainders gathered in pass 1 for a select in place, where the parts of weight > 0 fit. */
#define GATHER_MAX 256

/*
 * Pass 1: floors; returns the leftover microjoules (fewer than n + 1). The remainders of the
 * parts of weight > 0 go to rem[] while they fit; *ret_k is how many such parts there are.
 */
static uint64_t split_floor(struct split *s, u128 rem[GATHER_MAX], size_t *ret_k)
{
	uint64_t given = 0;
	size_t k = 0;

	for (size_t i = 0; i <= s->n; i++) {
		uint64_t *p = part_at(s, i), w = weight_at(s, i);
		u128 x;

		if (!w) {
			*p = 0;
			continue;
		}
		x = (u128)s->total * w;
		*p = (uint64_t)(x / s->sum);
		if (k < GATHER_MAX)
			rem[k] = x - (u128)*p * s->sum;
		k++;
		given += *p; /* sum of floors <= total: no wrap */
	}
	*ret_k = k;
	return s->total - given;
}

static void swap128(u128 *a, u128 *b)
{
	u128 t = *a;

	*a = *b;
	*b = t;
}

/* The k-th largest (k >= 1) of a[0..n), by a three-way quickselect that reorders a. */
static u128 kth_largest(u128 *a, size_t n, size_t k)
{
	size_t lo = 0, hi = n, want = k - 1;

	while (hi - lo > 1) {
		u128 pivot = a[lo + (hi - lo) / 2];
		size_t lt = lo, i = lo, gt = hi; /* [lo, lt) > pivot, [lt, gt) == pivot, [gt, hi) < */

		while (i < gt) {
			if (a[i] > pivot)
				swap128(&a[lt++], &a[i++]);
			else if (a[i] < pivot)
				swap128(&a[i], &a[--gt]);
			else
				i++;
		}
		if (want < lt)
			hi = lt;
		else if (want >= gt)
			lo = gt;
		else
			return pivot;
	}
	return a[lo];
}

/*
 * Pass 2, many parts of weight > 0: the leftover-th largest remainder, exactly. Every
 * remainder is below S, so below 2^bits; the window [lo, lo + 2^bits) holds at least `left`
 * remainders and `left` counts what is still to be found in it (those above it are counted
 * off). Each pass splits the window in 256 buckets and keeps the one holding the left-th
 * largest.
 */
static u128 split_threshold(struct split *s, uint64_t left)
{
	size_t hist[256];
	unsigned bits = 0;
	u128 lo = 0;

	for (u128 v = s->sum - 1; v; v >>= 1)
		bits++;
	while (bits > 0) {
		unsigned step = bits < 8 ? bits : 8, shift = bits - step;
		int b;

		memset(hist, 0, sizeof(hist));
		for (size_t i = 0; i <= s->n; i++) {
			u128 r;

			if (!weight_at(s, i))
				continue;
			r = remainder_at(s, i);
			if (r >= lo && (r - lo) >> bits == 0)
				hist[(size_t)((r - lo) >> shift)]++;
		}
		for (b = (1 << step) - 1; b > 0 && hist[b] < left; b--)
			left -= hist[b];
		lo += (u128)b << shift;
		bits = shift;
	}
	return lo;
}

/* Pass 3: round up the largest remainders, ties to the lower index; `above` of them are > t. */
static void split_award(struct split *s, uint64_t left, u128 t, size_t above)
{
	uint64_t ties = left - above; /* those above t take the rest first */

	for (size_t i = 0; i <= s->n && left > 0; i++) {
		u128 r;

		if (!weight_at(s, i))
			continue;
		r = remainder_at(s, i);
		if (r > t || (r == t && ties > 0)) {
			if (r == t)
				ties--;
			(*part_at(s, i))++;
			left--;
		}
	}
}

/*
 * The threshold t is the left-th largest remainder: since the remainders add up to left x S
 * with each below S, more than `left` of them are >= 1 (all of weight > 0), so t >= 1.
 */
static void split_run(struct split *s)
{
	u128 rem[GATHER_MAX], t;
	size_t k, above = 0;
	uint64_t left;

	if (s->sum == 0) {
		for (size_t i = 0; i < s->n; i++)
			s->out[i] = 0;
		s->extra_out = s->total;
		return;
	}
	left = split_floor(s, rem, &k);
	if (left == 0)
		return;
	if (k <= GATHER_MAX) {
		t = kth_largest(rem, k, left);
		for (size_t i = 0; i < k; i++)
			above += rem[i] > t;
	} else {
		t = split_threshold(s, left);
		above = count_at_least(s, t + 1);
	}
	split_award(s, left, t, above);
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

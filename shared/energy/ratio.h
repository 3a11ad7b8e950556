/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ratio model, as pure integer functions. Every split is exact to the microjoule: the
 * parts plus the explicit remainder always equal the whole, no part is negative, and rounding
 * goes by largest remainder (ties to the lower index), so results are deterministic.
 *
 * Each part lies between the floor and the ceiling of its exact share total x w / sum(w).
 * Products and sums are carried in 128 bits, so any uint64_t totals and weights are exact (no
 * scaling, no overflow), and nothing is allocated: the functions run in place on the caller's
 * arrays, with no limit on n. See docs/attribution.md for how virtwatt uses them.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

/*
 * Split `total` in proportion to `weights` (e.g. each workload's CPU-time delta in the
 * interval). out[i] gets its share; *ret_rest what no weight claims (all of it when the sum of
 * weights is 0 or n is 0, else 0). -EINVAL for a NULL ret_rest, or n > 0 with NULL arrays.
 * Never -EOVERFLOW: the weights' sum is kept in 128 bits and cannot overflow.
 */
int vw_ratio_split(uint64_t total, const uint64_t *weights, size_t n, uint64_t *out,
		   uint64_t *ret_rest);

/*
 * Idle energy by reservation: workload i reserves reserve[i] units (CPU millicores for pods,
 * vCPUs x 1000 for VMs) of `capacity` (host CPUs x 1000). Each gets idle x reserve / D with
 * D = max(capacity, sum of reserves); the unreserved part stays in *ret_rest (the node's own
 * idle), and takes part in the rounding as if it were the last workload. Over-commit (reserves
 * above capacity) normalises by the reserves' sum and leaves *ret_rest 0. When nothing is
 * reserved, idle is split by `fallback` weights (CPU time) instead, as vw_ratio_split does;
 * a NULL fallback then leaves all of it in *ret_rest. -EINVAL as for vw_ratio_split (reserve
 * and out must be non-NULL when n > 0; fallback may be NULL).
 */
int vw_ratio_split_idle(uint64_t idle, const uint64_t *reserve, const uint64_t *fallback,
			size_t n, uint64_t capacity, uint64_t *out, uint64_t *ret_rest);

/*
 * The hierarchy (processes -> containers -> pods -> node). Energy is split once, at the
 * leaves, and summed upwards, so every parent is exactly its children plus its own part.
 *
 * ret_parent_uj[p] = own_uj[p] (0 when own_uj is NULL) + the sum of child_uj[i] over every i
 * with parent_of[i] == p. -EINVAL for NULL arrays where a count is > 0, -ERANGE for a
 * parent_of[i] >= n_parent (nothing written), -EOVERFLOW when a parent's sum overflows
 * (ret_parent_uj then unspecified).
 */
int vw_ratio_sum_children(const uint64_t *child_uj, const size_t *parent_of, size_t n_child,
			  const uint64_t *own_uj, size_t n_parent, uint64_t *ret_parent_uj);

/*
 * The converse, and the check: ret_own_uj[p] = parent_uj[p] minus the sum of its children, what
 * a parent holds besides them (the node's unreserved idle, the rest of a split). -EINVAL and
 * -ERANGE as above; -EDOM when the children of a parent add up to more than the parent
 * (ret_own_uj then unspecified).
 */
int vw_ratio_residual(const uint64_t *child_uj, const size_t *parent_of, size_t n_child,
		      const uint64_t *parent_uj, size_t n_parent, uint64_t *ret_own_uj);

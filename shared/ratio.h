/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ratio model, as pure integer functions. Every split is exact to the microjoule: the
 * parts plus the explicit remainder always equal the whole, no part is negative, and rounding
 * goes by largest remainder (ties to the lower index), so results are deterministic.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

/*
 * Split `total` in proportion to `weights` (e.g. each workload's CPU-time delta in the
 * interval). out[i] gets its share; *ret_rest what no weight claims (all of it when the sum of
 * weights is 0, else 0). -EINVAL for n > 0 with NULL arrays; -EOVERFLOW when the weights' sum
 * overflows.
 */
int vw_ratio_split(uint64_t total, const uint64_t *weights, size_t n, uint64_t *out,
		   uint64_t *ret_rest);

/*
 * Idle energy by reservation: workload i reserves reserve[i] units (CPU millicores for pods,
 * vCPUs x 1000 for VMs) of `capacity` (host CPUs x 1000). Each gets idle x reserve / D with
 * D = max(capacity, sum of reserves); the unreserved part stays in *ret_rest (the node's own
 * idle). When nothing is reserved, idle is split by `fallback` weights (CPU time) instead, as
 * vw_ratio_split does.
 */
int vw_ratio_split_idle(uint64_t idle, const uint64_t *reserve, const uint64_t *fallback,
			size_t n, uint64_t capacity, uint64_t *out, uint64_t *ret_rest);

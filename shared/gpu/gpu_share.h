/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One GPU's active energy of an interval among the processes that used it (pure, exact to the
 * µJ: the shares plus the rest equal the whole).
 *
 *   sampled     processes with utilization samples share in proportion to their SM
 *               utilization summed over the interval's samples (a process alone on the device,
 *               exclusive or not, takes it all);
 *   unsampled   processes listed as running but without a sample (too short a kernel, an old
 *               driver) take what the samples do not explain: when the device's own
 *               utilization over the interval exceeds the samples' sum, the difference's share
 *               of the energy goes to them in proportion to the sample ticks they were listed
 *               in; with no sample at all they take everything that way;
 *   rest        with no process at all, the energy is the node's (ret_rest): explicit, never
 *               spread over processes that did not run there.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct vw_gpu_proc_use {
	uint32_t pid;
	uint64_t sm_sum;  /* SM utilization (percent) summed over the interval's samples */
	uint64_t ticks;   /* sample ticks it was listed as running in */
};

/*
 * Split active_uj over p[0..n) into out[0..n) and *ret_rest. busy_sum: the device's own
 * utilization (percent) summed over the interval's ticks (0: unknown). -EINVAL for NULL arrays
 * with n > 0 or a NULL ret_rest.
 */
int vw_gpu_share(uint64_t active_uj, const struct vw_gpu_proc_use *p, size_t n,
		 uint64_t busy_sum, uint64_t *out, uint64_t *ret_rest);

/* SPDX-License-Identifier: Apache-2.0 */
#include "gpu_share.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "macro.h"
#include "ratio.h"

typedef unsigned __int128 vw_u128;

/* Split total over the processes whose weight (sm_sum, else ticks of the unsampled) is picked,
 * adding to out; what no weight claims is returned. */
static uint64_t split_by(uint64_t total, const struct vw_gpu_proc_use *p, size_t n, bool sampled,
			 uint64_t *out)
{
	uint64_t rest = total;
	_cleanup_free_ uint64_t *weights = calloc(n ? n : 1, sizeof(*weights));
	_cleanup_free_ uint64_t *part = calloc(n ? n : 1, sizeof(*part));

	if (!weights || !part)
		return total; /* no memory: it stays the node's */
	for (size_t i = 0; i < n; i++)
		weights[i] = sampled ? p[i].sm_sum : p[i].sm_sum ? 0 : p[i].ticks;
	if (vw_ratio_split(total, weights, n, part, &rest) < 0)
		return total;
	for (size_t i = 0; i < n; i++)
		out[i] += part[i];
	return rest;
}

int vw_gpu_share(uint64_t active_uj, const struct vw_gpu_proc_use *p, size_t n,
		 uint64_t busy_sum, uint64_t *out, uint64_t *ret_rest)
{
	uint64_t sampled = 0, unsampled_ticks = 0, to_sampled = active_uj;

	if (!ret_rest || (n && (!p || !out)))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		out[i] = 0;
		sampled += p[i].sm_sum;
		unsampled_ticks += p[i].sm_sum ? 0 : p[i].ticks;
	}
	/* The samples explain sampled/busy_sum of the device's busy time; the rest is for the
	 * unsampled processes, when there are any. */
	if (sampled && unsampled_ticks && busy_sum > sampled)
		to_sampled = (uint64_t)((vw_u128)active_uj * sampled / busy_sum);
	else if (!sampled)
		to_sampled = 0;
	*ret_rest = split_by(to_sampled, p, n, true, out);
	*ret_rest += split_by(active_uj - to_sampled, p, n, false, out);
	return 0;
}

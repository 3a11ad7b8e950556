/* SPDX-License-Identifier: Apache-2.0 */
#include "gpu_procs.h"

#include <string.h>

static struct vw_gpu_proc_use *use_of(struct vw_gpu_procs *p, uint32_t pid)
{
	for (size_t k = 0; k < p->n_use; k++)
		if (p->use[k].pid == pid)
			return &p->use[k];
	if (p->n_use == VW_GPU_MAX_TRACKED) {
		p->dropped++;
		return NULL;
	}
	p->use[p->n_use] = (struct vw_gpu_proc_use){ .pid = pid };
	return &p->use[p->n_use++];
}

void vw_gpu_procs_add(struct vw_gpu_procs *p, const struct vw_gpu_proc_sample *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct vw_gpu_proc_use *u = use_of(p, s[i].pid);

		if (!u)
			continue;
		if (s[i].sampled)
			u->sm_sum += s[i].sm_util;
		if (s[i].running)
			u->ticks++;
	}
}

uint64_t vw_gpu_procs_close(struct vw_gpu_procs *p, uint64_t active_uj, uint64_t busy_sum)
{
	uint64_t out[VW_GPU_MAX_TRACKED], rest = active_uj;

	p->n_last = 0;
	if (vw_gpu_share(active_uj, p->use, p->n_use, busy_sum, out, &rest) < 0)
		rest = active_uj;
	else
		for (size_t k = 0; k < p->n_use; k++)
			if (out[k])
				p->last[p->n_last++] = (struct vw_gpu_pid_energy){
					.pid = p->use[k].pid, .active_uj = out[k]
				};
	p->n_use = 0;
	return rest;
}

/* SPDX-License-Identifier: Apache-2.0 */
#include "gpu_procs.h"

#include <stdbool.h>
#include <string.h>

#include "macro.h"
#include "ratio.h"

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
	uint64_t weight = 0;

	p->ticks++;
	p->since_sample++;
	for (size_t i = 0; i < n && !weight; i++)
		if (s[i].sampled)
			weight = VW_MIN(p->since_sample, p->ticks + p->prev_ticks);
	if (weight)
		p->since_sample = 0;
	for (size_t i = 0; i < n; i++) {
		struct vw_gpu_proc_use *u = use_of(p, s[i].pid);

		if (!u)
			continue;
		if (s[i].sampled)
			u->sm_sum += s[i].sm_util * weight;
		if (s[i].running)
			u->ticks++;
	}
}

static bool same_vgpu(const struct vw_gpu_vgpu_sample *a, const struct vw_gpu_vgpu_sample *b)
{
	return a->instance == b->instance && a->vm_id_type == b->vm_id_type &&
	       strcmp(a->vm_id, b->vm_id) == 0;
}

void vw_gpu_procs_add_vgpus(struct vw_gpu_procs *p, const struct vw_gpu_vgpu_sample *s,
			    size_t n)
{
	p->vticks++;
	for (size_t i = 0; i < n; i++) {
		size_t k = 0;

		while (k < p->n_vuse && !same_vgpu(&p->vuse[k].id, &s[i]))
			k++;
		if (k == ARRAY_SIZE(p->vuse)) {
			p->dropped++;
			continue;
		}
		if (k == p->n_vuse)
			p->vuse[p->n_vuse++] = (struct vw_gpu_vgpu_use){ 0 };
		p->vuse[k].id = s[i];
		p->vuse[k].ticks++;
		if (s[i].sampled)
			p->vuse[k].sm_sum += s[i].sm_util;
	}
}

void vw_gpu_procs_reset(struct vw_gpu_procs *p)
{
	p->ticks = 0;
	p->n_use = 0;
	p->n_vuse = 0;
	p->vticks = 0;
}

/* The vGPUs' idle shares: each reserved share of the device for the ticks it was listed. */
static void share_vgpu_idle(struct vw_gpu_procs *p, uint64_t idle_uj, uint64_t *out)
{
	uint64_t reserve[VW_GPU_MAX_VGPUS], rest;

	for (size_t k = 0; k < p->n_vuse; k++)
		reserve[k] = (uint64_t)p->vuse[k].id.reserved_ppm * p->vuse[k].ticks;
	if (vw_ratio_split_idle(idle_uj, reserve, NULL, p->n_vuse, 1000000 * p->vticks, out,
				&rest) < 0)
		memset(out, 0, p->n_vuse * sizeof(*out)); /* it stays the node's */
}

static bool any_sampled(const struct vw_gpu_procs *p)
{
	for (size_t k = 0; k < p->n_use; k++)
		if (p->use[k].sm_sum)
			return true;
	for (size_t k = 0; k < p->n_vuse; k++)
		if (p->vuse[k].sm_sum)
			return true;
	return false;
}

/* The SM rate of each process sampled and listed this interval, for the intervals after. */
static void keep_rates(struct vw_gpu_procs *p)
{
	p->n_rate = 0;
	p->rate_age = 0;
	for (size_t k = 0; k < p->n_use; k++) {
		const struct vw_gpu_proc_use *u = &p->use[k];

		if (u->sm_sum && u->ticks)
			p->rate[p->n_rate++] = (struct vw_gpu_sm_rate){
				.pid = u->pid, .milli_per_tick = u->sm_sum * 1000 / u->ticks };
	}
}

/* No sample this interval: each listed process its last rate times the ticks listed now. */
static void carry_rates(struct vw_gpu_procs *p)
{
	if (!p->n_rate || p->rate_age >= VW_GPU_CARRY_INTERVALS)
		return;
	p->rate_age++;
	for (size_t k = 0; k < p->n_use; k++) {
		struct vw_gpu_proc_use *u = &p->use[k];

		for (size_t r = 0; r < p->n_rate && u->ticks; r++)
			if (p->rate[r].pid == u->pid) {
				uint64_t est = p->rate[r].milli_per_tick * u->ticks / 1000;

				u->sm_sum = est ? est : 1;
				break;
			}
	}
}

uint64_t vw_gpu_procs_close(struct vw_gpu_procs *p, uint64_t active_uj, uint64_t idle_uj,
			    uint64_t busy_sum)
{
	struct vw_gpu_proc_use all[VW_GPU_MAX_TRACKED + VW_GPU_MAX_VGPUS];
	uint64_t out[VW_GPU_MAX_TRACKED + VW_GPU_MAX_VGPUS], idle[VW_GPU_MAX_VGPUS] = { 0 };
	uint64_t rest = active_uj;
	size_t n = p->n_use + p->n_vuse;

	if (any_sampled(p))
		keep_rates(p);
	else
		carry_rates(p);
	memcpy(all, p->use, p->n_use * sizeof(*all));
	for (size_t k = 0; k < p->n_vuse; k++)
		all[p->n_use + k] = (struct vw_gpu_proc_use){ .sm_sum = p->vuse[k].sm_sum,
							      .ticks = p->vuse[k].ticks };
	p->n_last = p->n_vlast = 0;
	if (vw_gpu_share(active_uj, all, n, busy_sum, out, &rest) < 0) {
		rest = active_uj;
		memset(out, 0, n * sizeof(*out));
	}
	for (size_t k = 0; k < p->n_use; k++)
		if (out[k])
			p->last[p->n_last++] = (struct vw_gpu_pid_energy){ .pid = p->use[k].pid,
									   .active_uj = out[k] };
	share_vgpu_idle(p, idle_uj, idle);
	for (size_t k = 0; k < p->n_vuse; k++) {
		const struct vw_gpu_vgpu_sample *id = &p->vuse[k].id;
		struct vw_gpu_vgpu_energy *e = &p->vlast[p->n_vlast++];

		*e = (struct vw_gpu_vgpu_energy){ .vm_id_type = id->vm_id_type,
						  .idle_uj = idle[k],
						  .active_uj = out[p->n_use + k] };
		memcpy(e->vm_id, id->vm_id, sizeof(e->vm_id));
		memcpy(e->mdev_uuid, id->mdev_uuid, sizeof(e->mdev_uuid));
	}
	p->prev_ticks = p->ticks;
	vw_gpu_procs_reset(p);
	return rest;
}

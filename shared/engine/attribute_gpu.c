/* SPDX-License-Identifier: Apache-2.0 */
#include "attribute_gpu.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "energy.h"
#include "macro.h"
#include "ratio.h"

/* Every index names an entry of the input. */
static int validate(const struct vw_gpu_attr_in *in)
{
	if ((in->n_devices && !in->devices) || (in->n_vgpus && !in->vgpus) ||
	    (in->n_uses && !in->uses) || (in->n_conts && !in->cont_pod) ||
	    (in->n_pods && !in->pod_gpus))
		return -EINVAL;
	for (size_t i = 0; i < in->n_vgpus; i++) {
		int32_t vm = in->vgpus[i].vm;

		if (vm < -1 || (vm >= 0 && (size_t)vm >= in->n_vms))
			return -EINVAL;
	}
	for (size_t i = 0; i < in->n_uses; i++) {
		int32_t c = in->uses[i].container;

		if (c < -1 || (c >= 0 && (size_t)c >= in->n_conts))
			return -EINVAL;
	}
	for (size_t c = 0; c < in->n_conts; c++) {
		int32_t pod = in->cont_pod[c];

		if (pod < -1 || (pod >= 0 && (size_t)pod >= in->n_pods))
			return -EINVAL;
	}
	return 0;
}

/* The k arrays hold at least n each (contents not kept; allocated once even for nothing). */
static int fit(size_t *cap, size_t n, uint64_t **arrs[], size_t k)
{
	if (*cap && n <= *cap)
		return 0;
	n = VW_MAX(n, VW_MAX(*cap * 2, (size_t)16));
	for (size_t i = 0; i < k; i++) {
		uint64_t *p = reallocarray(*arrs[i], n, sizeof(uint64_t));

		if (!p)
			return -ENOMEM;
		*arrs[i] = p;
	}
	*cap = n;
	return 0;
}

/* Arrays sized for the input (pods' idle one more: the split's unreserved part), zeroed. */
static int prepare(struct vw_gpu_attribution *a, const struct vw_gpu_attr_in *in)
{
	if (fit(&a->cap_uses, in->n_uses, (uint64_t **[]){ &a->uses }, 1) < 0 ||
	    fit(&a->cap_conts, in->n_conts, (uint64_t **[]){ &a->cont_active }, 1) < 0 ||
	    fit(&a->cap_pods, in->n_pods + 1, (uint64_t **[]){ &a->pod_active, &a->pod_idle },
		2) < 0 ||
	    fit(&a->cap_vms, in->n_vms, (uint64_t **[]){ &a->vm_active, &a->vm_idle }, 2) < 0)
		return -ENOMEM;
	memset(a->uses, 0, in->n_uses * sizeof(uint64_t));
	memset(a->cont_active, 0, in->n_conts * sizeof(uint64_t));
	memset(a->pod_active, 0, (in->n_pods + 1) * sizeof(uint64_t));
	memset(a->pod_idle, 0, (in->n_pods + 1) * sizeof(uint64_t));
	memset(a->vm_active, 0, in->n_vms * sizeof(uint64_t));
	memset(a->vm_idle, 0, in->n_vms * sizeof(uint64_t));
	a->uncontained = a->unattributed = a->unreserved = 0;
	return 0;
}

/* The VMs' vGPU shares; *ret_idle and *ret_active: what they took. */
static void give_vgpus(struct vw_gpu_attribution *a, const struct vw_gpu_attr_in *in,
		       uint64_t *ret_idle, uint64_t *ret_active)
{
	*ret_idle = *ret_active = 0;
	for (size_t i = 0; i < in->n_vgpus; i++) {
		const struct vw_gpu_attr_vgpu *g = &in->vgpus[i];

		if (g->vm < 0)
			continue; /* the node's */
		a->vm_idle[g->vm] = vw_energy_add(a->vm_idle[g->vm], g->idle_uj);
		a->vm_active[g->vm] = vw_energy_add(a->vm_active[g->vm], g->active_uj);
		*ret_idle = vw_energy_add(*ret_idle, g->idle_uj);
		*ret_active = vw_energy_add(*ret_active, g->active_uj);
	}
}

/* The processes' shares of active, in order while it lasts; the rest unattributed. */
static void give_uses(struct vw_gpu_attribution *a, const struct vw_gpu_attr_in *in,
		      uint64_t active)
{
	uint64_t given = 0;

	for (size_t i = 0; i < in->n_uses; i++) {
		const struct vw_gpu_attr_use *u = &in->uses[i];
		uint64_t uj = VW_MIN(u->active_uj, active - given);
		int32_t c = u->container;

		if (!u->known || !uj)
			continue;
		given += uj;
		a->uses[i] = uj;
		if (c < 0) {
			a->uncontained = vw_energy_add(a->uncontained, uj);
			continue;
		}
		a->cont_active[c] = vw_energy_add(a->cont_active[c], uj);
		if (in->cont_pod[c] >= 0)
			a->pod_active[in->cont_pod[c]] =
				vw_energy_add(a->pod_active[in->cont_pod[c]], uj);
	}
	a->unattributed = active - given;
}

/* Idle by the pods' requests out of the node's GPUs; the rest unreserved. */
static void give_idle(struct vw_gpu_attribution *a, const struct vw_gpu_attr_in *in,
		      uint64_t idle)
{
	a->unreserved = idle;
	if (in->n_devices == 0)
		return; /* GPUs that cannot be counted: the node's */
	if (vw_ratio_split_idle(idle, in->pod_gpus, NULL, in->n_pods, in->n_devices, a->pod_idle,
				&a->unreserved) < 0) {
		a->unreserved = idle;
		memset(a->pod_idle, 0, (in->n_pods + 1) * sizeof(uint64_t));
	}
}

int vw_attribute_gpu(struct vw_gpu_attribution *a, const struct vw_gpu_attr_in *in)
{
	uint64_t idle = 0, active = 0, vm_idle, vm_active;
	int r = validate(in);

	if (r == 0)
		r = prepare(a, in);
	if (r < 0)
		return r;
	for (size_t i = 0; i < in->n_devices; i++) {
		idle = vw_energy_add(idle, in->devices[i].idle_uj);
		active = vw_energy_add(active, in->devices[i].active_uj);
	}
	give_vgpus(a, in, &vm_idle, &vm_active);
	give_uses(a, in, active - VW_MIN(vm_active, active));
	give_idle(a, in, idle - VW_MIN(vm_idle, idle));
	return 0;
}

void vw_gpu_attribution_release(struct vw_gpu_attribution *a)
{
	free(a->uses);
	free(a->cont_active);
	free(a->pod_active);
	free(a->pod_idle);
	free(a->vm_active);
	free(a->vm_idle);
	*a = (struct vw_gpu_attribution){ 0 };
}

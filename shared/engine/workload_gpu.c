/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GPU energy in the workload registry: each interval's active GPU energy per process (from the
 * GPUs' own per-process shares, shared/gpu/gpu_share.h) goes to the process the registry knows
 * by that PID, then to its container and pod by the same ownership as its CPU energy; what no
 * known process takes is the node's, explicitly. Kepler's families, with its CPU families'
 * labels minus zone: kepler_{process,container,pod}_gpu_{joules_total,watts} (active energy, as
 * Kepler counts it), shown for the workloads that used a GPU.
 *
 * Who gets what is attribute_gpu.h's pure function; this file resolves PIDs and VM ids to the
 * registry's entries, fills its input and adds the shares. A VM with vGPUs (a vGPU host) takes
 * its vGPUs' shares of the devices' active and idle energy before the processes and pods take
 * theirs: virtwatt_vm_gpu_{,idle_}{joules_total,watts}.
 *
 * For every interval: node GPU active = containers' + uncontained processes' + VMs' +
 * unattributed, and node GPU idle = pods' + VMs' + unreserved. A container whose series go
 * (workload_retention.c) adds its active energy to the node's ended-containers total, so the
 * exposition adds up in every scrape, not only while no container has gone.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "energy.h"
#include "attribute_gpu.h"
#include "gpu.h"
#include "ratio.h"
#include "workloads_priv.h"

static const char *const l_proc[] = { "pid", "comm", "exe", "type", "state", "container_id",
				      "vm_id", "node_name", NULL };
static const char *const l_cont[] = { "container_id", "container_name", "runtime", "state",
				      "pod_id", "node_name", NULL };
static const char *const l_pod[] = { "pod_id", "pod_name", "pod_namespace", "state", "node_name",
				     NULL };
static const char *const l_vm[] = { "vm_id", "vm_name", "hypervisor", "state", "node_name",
				    NULL };
static const char *const l_node[] = { "node_name", NULL };

enum { F_PROC_J, F_PROC_W, F_CONT_J, F_CONT_W, F_POD_J, F_POD_W, F_UNATTR, F_UNCONT, F_POD_IDLE,
       F_UNRESERVED, F_VM_J, F_VM_W, F_VM_IDLE_J, F_VM_IDLE_W, F_ENDED };

#define KEPLER_GPU(f, level, labels)                                                               \
	[f##_J] = { "kepler_" level "_gpu_joules_total", VW_METRIC_COUNTER,                        \
		    "Energy consumption of gpu at " level " level in joules", "joules", labels },  \
	[f##_W] = { "kepler_" level "_gpu_watts", VW_METRIC_GAUGE,                                 \
		    "Power consumption of gpu at " level " level in watts", "watts", labels }

static const struct vw_metric_family gpu_families[] = {
	KEPLER_GPU(F_PROC, "process", l_proc),
	KEPLER_GPU(F_CONT, "container", l_cont),
	KEPLER_GPU(F_POD, "pod", l_pod),
	[F_UNATTR] = { "virtwatt_node_gpu_unattributed_joules_total", VW_METRIC_COUNTER,
		       "Active GPU energy no workload took: intervals with no GPU process listed, "
		       "processes this exporter does not know (another PID namespace, gone)",
		       "joules", l_node },
	[F_UNCONT] = { "virtwatt_node_gpu_uncontained_joules_total", VW_METRIC_COUNTER,
		       "Active GPU energy of processes in no container, including those that have "
		       "exited",
		       "joules", l_node },
	[F_POD_IDLE] = { "virtwatt_pod_gpu_idle_joules_total", VW_METRIC_COUNTER,
			 "Idle GPU energy a pod reserved: the node's GPUs' idle energy by its "
			 "containers' nvidia.com/gpu requests out of the node's GPUs",
			 "joules", l_pod },
	[F_UNRESERVED] = { "virtwatt_node_gpu_idle_unreserved_joules_total", VW_METRIC_COUNTER,
			   "Idle GPU energy no pod's nvidia.com/gpu request or VM's vGPU reserved "
			   "(the node's)",
			   "joules", l_node },
	[F_VM_J] = { "virtwatt_vm_gpu_joules_total", VW_METRIC_COUNTER,
		     "Active GPU energy of a VM's vGPUs in joules: their share of the devices' "
		     "active energy by SM utilization (as kepler_pod_gpu_joules_total)",
		     "joules", l_vm },
	[F_VM_W] = { "virtwatt_vm_gpu_watts", VW_METRIC_GAUGE,
		     "Active GPU power of a VM's vGPUs in watts", "watts", l_vm },
	[F_VM_IDLE_J] = { "virtwatt_vm_gpu_idle_joules_total", VW_METRIC_COUNTER,
			  "Idle GPU energy a VM's vGPUs reserved in joules: each vGPU holds the "
			  "share of its device its type reserves (1 of the most instances of that "
			  "type the device holds)",
			  "joules", l_vm },
	[F_VM_IDLE_W] = { "virtwatt_vm_gpu_idle_watts", VW_METRIC_GAUGE,
			  "Idle GPU power a VM's vGPUs reserved in watts", "watts", l_vm },
	[F_ENDED] = { "virtwatt_node_gpu_ended_containers_joules_total", VW_METRIC_COUNTER,
		      "Active GPU energy of containers no longer exported (ended and dropped once a "
		      "scrape served their final value, or evicted): node GPU active = containers + "
		      "this + uncontained + VMs + unattributed in every scrape",
		      "joules", l_node },
};
const struct vw_family_table vw_workload_gpu_family_table = {
	"shared/engine/workload_gpu.c: vw_workloads_render_gpu()", "virtwatt-host, virtwatt-guest",
	"where a GPU lists its processes, per --metrics level, the workloads that used a GPU",
	gpu_families, ARRAY_SIZE(gpu_families),
};

/* The registry's entry for a GPU process: the live one, else one that ended and whose final
 * value is not published yet (a job that finished within the interval). None where the PID
 * was two processes' in this interval (one ended, another took its PID: the GPU's samples of
 * it could be either's; the new one, perhaps another tenant's, took the job's energy): the
 * node's, unattributed. */
static struct wl_proc *gpu_owner(struct vw_workloads *w, uint32_t pid)
{
	struct wl_proc *p = vw_wl_lookup_live(w, pid, w->n_procs);

	if (p) {
		for (size_t i = 0; i < w->n_procs; i++)
			if (w->procs[i].tgid == pid && w->procs[i].ended_now)
				return NULL;
		return p;
	}
	for (size_t i = 0; i < w->n_procs; i++)
		if (w->procs[i].tgid == pid && w->procs[i].terminated && !w->procs[i].final_gen)
			return &w->procs[i];
	return NULL;
}

/* The listed VM a vGPU names ("": none), -1 for none. */
static int32_t gpu_vm(const struct vw_workloads *w, const char *id)
{
	for (size_t k = 0; id[0] && k < w->n_vms; k++)
		if (w->vms[k].listed && strcmp(w->vms[k].uuid, id) == 0)
			return (int32_t)k;
	return -1;
}

/* The registry's tables as attribute_gpu.h's input: PIDs and VM ids resolved to its entries
 * (owners[i]: use i's process, NULL unknown), the pods' requests while live. */
struct gpu_input {
	struct vw_gpu_attr_in in;
	struct wl_proc **owners;
	struct vw_gpu_attr_use *uses;
	struct vw_gpu_attr_vgpu *vgpus;
	int32_t *cont_pod;
	uint64_t *pod_gpus;
};

static void gpu_input_free(struct gpu_input *g)
{
	free(g->owners);
	free(g->uses);
	free(g->vgpus);
	free(g->cont_pod);
	free(g->pod_gpus);
}

static int gpu_input(struct vw_workloads *w, const struct vw_workloads_gpu_in *gi,
		     struct gpu_input *g)
{
	g->owners = calloc(gi->n_pids + 1, sizeof(*g->owners));
	g->uses = calloc(gi->n_pids + 1, sizeof(*g->uses));
	g->vgpus = calloc(gi->n_groups + 1, sizeof(*g->vgpus));
	g->cont_pod = calloc(w->n_conts + 1, sizeof(*g->cont_pod));
	g->pod_gpus = calloc(w->n_pods + 1, sizeof(*g->pod_gpus));
	if (!g->owners || !g->uses || !g->vgpus || !g->cont_pod || !g->pod_gpus)
		return -ENOMEM;
	for (size_t i = 0; i < gi->n_pids; i++) {
		struct wl_proc *p = g->owners[i] = gpu_owner(w, gi->pids[i].pid);

		if (p && !p->gpu && !(p->gpu = calloc(1, sizeof(*p->gpu)))) /* for add_shares() */
			return -ENOMEM;
		g->uses[i] = (struct vw_gpu_attr_use){
			.active_uj = gi->pids[i].active_uj, .known = p != NULL,
			.container = p && vw_wl_in_container(w, p) ? p->container : -1 };
	}
	for (size_t i = 0; i < gi->n_groups; i++) {
		int32_t vm = gpu_vm(w, gi->groups[i].id);

		g->vgpus[i] = (struct vw_gpu_attr_vgpu){ .vm = vm, .idle_uj = gi->groups[i].idle_uj,
							 .active_uj = gi->groups[i].active_uj };
		if (vm >= 0)
			w->vms[vm].has_gpu = true;
	}
	for (size_t c = 0; c < w->n_conts; c++)
		g->cont_pod[c] = w->conts[c].pod;
	for (size_t i = 0; i < w->n_pods; i++)
		g->pod_gpus[i] = w->pods[i].live ? w->pods[i].info.gpu_request : 0;
	g->in = (struct vw_gpu_attr_in){
		.devices = gi->devices, .n_devices = gi->n_devices,
		.vgpus = g->vgpus, .n_vgpus = gi->n_groups,
		.uses = g->uses, .n_uses = gi->n_pids,
		.cont_pod = g->cont_pod, .n_conts = w->n_conts,
		.pod_gpus = g->pod_gpus, .n_pods = w->n_pods, .n_vms = w->n_vms };
	return 0;
}

/* uj more to a's mode m, cumulative and this interval's. */
static void add_gpu(struct acc *a, int m, uint64_t uj)
{
	a->uj[m] = vw_energy_add(a->uj[m], uj);
	a->interval[m] = uj;
}

static void clear_gpu_intervals(struct vw_workloads *w)
{
	for (size_t i = 0; i < w->n_procs; i++)
		if (w->procs[i].gpu)
			w->procs[i].gpu->interval[M_ACTIVE] = 0;
	for (size_t i = 0; i < w->n_conts; i++)
		w->conts[i].gpu.interval[M_ACTIVE] = 0;
	for (size_t i = 0; i < w->n_pods; i++)
		w->pods[i].gpu.interval[M_ACTIVE] = w->pods[i].gpu.interval[M_IDLE] = 0;
	for (size_t k = 0; k < w->n_vms; k++)
		w->vms[k].gpu.interval[M_IDLE] = w->vms[k].gpu.interval[M_ACTIVE] = 0;
}

/* The shares to the registry's counters. */
static void add_shares(struct vw_workloads *w, const struct gpu_input *g,
		       const struct vw_gpu_attribution *a)
{
	for (size_t i = 0; i < g->in.n_uses; i++)
		if (a->uses[i]) {
			struct acc *gpu = g->owners[i]->gpu; /* gpu_input() made it */

			gpu->uj[M_ACTIVE] = vw_energy_add(gpu->uj[M_ACTIVE], a->uses[i]);
			gpu->interval[M_ACTIVE] += a->uses[i];
		}
	for (size_t c = 0; c < w->n_conts; c++)
		add_gpu(&w->conts[c].gpu, M_ACTIVE, a->cont_active[c]);
	for (size_t i = 0; i < w->n_pods; i++) {
		add_gpu(&w->pods[i].gpu, M_ACTIVE, a->pod_active[i]);
		add_gpu(&w->pods[i].gpu, M_IDLE, a->pod_idle[i]);
	}
	for (size_t k = 0; k < w->n_vms; k++) {
		add_gpu(&w->vms[k].gpu, M_ACTIVE, a->vm_active[k]);
		add_gpu(&w->vms[k].gpu, M_IDLE, a->vm_idle[k]);
	}
	w->gpu_uncontained_uj = vw_energy_add(w->gpu_uncontained_uj, a->uncontained);
	w->gpu_unattributed_uj = vw_energy_add(w->gpu_unattributed_uj, a->unattributed);
	w->gpu_idle_unreserved_uj = vw_energy_add(w->gpu_idle_unreserved_uj, a->unreserved);
}

int vw_workloads_gpu(struct vw_workloads *w, const struct vw_workloads_gpu_in *gi)
{
	_cleanup_(vw_gpu_attribution_release) struct vw_gpu_attribution a = { 0 };
	struct gpu_input g = { 0 };
	int r;

	if (!w || !gi || (gi->n_pids && !gi->pids) || (gi->n_groups && !gi->groups) ||
	    (gi->n_devices && !gi->devices))
		return -EINVAL;
	clear_gpu_intervals(w);
	w->gpu_present = true;
	r = gpu_input(w, gi, &g);
	if (r == 0)
		r = vw_attribute_gpu(&a, &g.in);
	if (r == 0) {
		add_shares(w, &g, &a);
	} else { /* no memory: the node's */
		uint64_t idle = 0, active = 0;

		for (size_t i = 0; i < gi->n_devices; i++) {
			idle = vw_energy_add(idle, gi->devices[i].idle_uj);
			active = vw_energy_add(active, gi->devices[i].active_uj);
		}
		w->gpu_unattributed_uj = vw_energy_add(w->gpu_unattributed_uj, active);
		w->gpu_idle_unreserved_uj = vw_energy_add(w->gpu_idle_unreserved_uj, idle);
	}
	gpu_input_free(&g);
	return r;
}

/* ---- rendering ---- */

/* A one-sample counter family of exact joules. */
static int single_micro(struct vw_prom_writer *pw, int fam, const char *const *v, uint64_t uj)
{
	int r = vw_prom_family(pw, &gpu_families[fam]);

	if (r == 0)
		r = vw_prom_counter_micro(pw, v, uj);
	return r < 0 ? r : vw_prom_family_end(pw);
}

static uint64_t gpu_energy(const struct wl_proc *p)
{
	return p->gpu ? p->gpu->uj[M_ACTIVE] : 0;
}

/* The levels' items, each giving its GPU accumulator (z is -1: no zone). */
static const struct acc *proc_item(const struct vw_workloads *w, const void *ctx, size_t i,
				   int z, const char *node, struct wl_labels *l)
{
	static const struct acc no_gpu;
	struct wl_proc *p = &w->procs[((const size_t *)ctx)[i]];

	(void)z;
	vw_wl_proc_labels(w, p, node, NULL, l);
	return p->gpu ? p->gpu : &no_gpu;
}

static const struct acc *cont_item(const struct vw_workloads *w, const void *ctx, size_t i,
				   int z, const char *node, struct wl_labels *l)
{
	const struct wl_container *c = &w->conts[i];

	(void)ctx, (void)z;
	VW_WL_LABELS(l, c->id, c->name, vw_runtime_name(c->runtime),
		     vw_wl_state_name(c->terminated), vw_wl_cont_pod(w, c), node);
	return c->gpu.uj[M_ACTIVE] && c->final_gen != UINT64_MAX ? &c->gpu : NULL;
}

static const struct acc *pod_item(const struct vw_workloads *w, const void *ctx, size_t i,
				  int z, const char *node, struct wl_labels *l)
{
	const struct wl_pod *p = &w->pods[i];

	(void)ctx, (void)z;
	VW_WL_LABELS(l, p->info.uid, p->info.name, p->info.namespace_,
		     vw_wl_state_name(p->terminated), node);
	return p->gpu.uj[M_ACTIVE] && p->final_gen != UINT64_MAX ? &p->gpu : NULL;
}

static const struct acc *vm_item(const struct vw_workloads *w, const void *ctx, size_t i,
				 int z, const char *node, struct wl_labels *l)
{
	const struct wl_vm *vm = &w->vms[i];

	(void)ctx, (void)z;
	VW_WL_LABELS(l, vm->uuid, vm->name, vm->hypervisor, vw_wl_state_name(vm->terminated),
		     node);
	for (size_t k = 0; k < w->n_group_labels; k++) /* --vm.info-labels, after node_name */
		l->v[5 + k] = vm->labels ? vm->labels[k] : "";
	l->v[5 + w->n_group_labels] = NULL;
	return vm->has_gpu && !vm->hidden ? &vm->gpu : NULL;
}

const struct vw_metric_family *vw_wl_gpu_vm_families(void)
{
	return &gpu_families[F_VM_J];
}

/* The processes that used a GPU, the most energetic --metrics.process-top-n of them. */
static int render_procs(const struct vw_workloads *w, struct vw_prom_writer *pw, const char *node)
{
	_cleanup_free_ size_t *order = calloc(w->n_procs + 1, sizeof(size_t));
	size_t n = 0;
	int r = order ? vw_wl_top_procs(w, gpu_energy, true, order, &n) : -ENOMEM;

	return r < 0 ? r : vw_wl_render_level(w, pw, node, &gpu_families[F_PROC_J],
					      VW_WL_ACTIVE_W + 1, false, n, proc_item, order);
}

static int render_pod_idle(const struct vw_workloads *w, struct vw_prom_writer *pw,
			   const char *node)
{
	int r = vw_prom_family(pw, &gpu_families[F_POD_IDLE]);

	for (size_t i = 0; r == 0 && i < w->n_pods; i++) {
		const struct wl_pod *p = &w->pods[i];
		const char *v[] = { p->info.uid, p->info.name, p->info.namespace_,
				    vw_wl_state_name(p->terminated), node, NULL };

		if (p->gpu.uj[M_IDLE] && p->final_gen != UINT64_MAX)
			r = vw_prom_counter_micro(pw, v, p->gpu.uj[M_IDLE]);
	}
	return r < 0 ? r : vw_prom_family_end(pw);
}

_Static_assert(F_PROC_W == F_PROC_J + VW_WL_ACTIVE_W && F_CONT_W == F_CONT_J + VW_WL_ACTIVE_W &&
		       F_POD_W == F_POD_J + VW_WL_ACTIVE_W &&
		       F_VM_IDLE_W == F_VM_J + VW_WL_IDLE_W,
	       "a level's families in order");

int vw_workloads_render_gpu(const struct vw_workloads *w, struct vw_prom_writer *pw,
			    const char *node_name)
{
	const char *node[] = { node_name, NULL };
	int r;

	(void)vw_prom_table_trust(&vw_workload_gpu_family_table); /* checked once */
	if (!w || !w->gpu_present)
		return 0;
	/* The node's remainders first, as for the CPU: never the ones left out for size. */
	r = single_micro(pw, F_UNATTR, node, w->gpu_unattributed_uj);
	if (r == 0)
		r = single_micro(pw, F_UNCONT, node, w->gpu_uncontained_uj);
	if (r == 0)
		r = single_micro(pw, F_UNRESERVED, node, w->gpu_idle_unreserved_uj);
	if (r == 0 && w->o.containers)
		r = single_micro(pw, F_ENDED, node, w->gpu_ended_containers_uj);
	if (r == 0 && w->o.processes)
		r = render_procs(w, pw, node_name);
	if (r == 0 && w->o.containers)
		r = vw_wl_render_level(w, pw, node_name, &gpu_families[F_CONT_J],
				       VW_WL_ACTIVE_W + 1, false, w->n_conts, cont_item, NULL);
	if (r == 0 && w->o.pods)
		r = vw_wl_render_level(w, pw, node_name, &gpu_families[F_POD_J],
				       VW_WL_ACTIVE_W + 1, false, w->n_pods, pod_item, NULL);
	if (r == 0 && w->o.pods)
		r = render_pod_idle(w, pw, node_name);
	if (r == 0 && w->o.vms && !w->o.vms_unexported)
		r = vw_wl_render_level(w, pw, node_name,
				       w->n_group_labels ? w->vm_gpu_fams : &gpu_families[F_VM_J],
				       VW_WL_IDLE_W + 1, false, w->n_vms, vm_item, NULL);
	return r;
}

/* SPDX-License-Identifier: Apache-2.0 */
#include "attribute.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "perf_counters.h"
#include "ratio.h"

/* Items grouped by a key (a counting sort): group g is items[start[g] .. start[g + 1]). */
struct vw_attr_bucket {
	size_t *start, *items;
	size_t cap_start, cap_items;
};

struct vw_attr_scratch {
	uint64_t *weights, *out, *share; /* a split's weights and parts */
	uint64_t *reserve, *grp_idle;    /* pods' then VMs' reservations and idle */
	size_t cap_weights, cap_groups;
	/* Processes by container, containers by pod, VM processes in no pod by VM. */
	struct vw_attr_bucket by_cont, by_pod, by_vm;
	size_t cap_conts, cap_pods, cap_vms; /* of the results */
	/* The processes in no container whose usage under key busy_key is not 0, in order, for
	 * this call's splits of the node (busy_key -1: not gathered yet): at 10,000 mostly idle
	 * processes, each split of a zone went over all of them five times. */
	size_t *busy, n_busy, cap_busy;
	int busy_key;
};

_Static_assert(sizeof(struct vw_attr_proc) == 24 || sizeof(void *) != 8,
	       "a process's record is 24 bytes");

/* One call's input and results, and the zone being split by which key. */
struct split {
	struct vw_attribution *a;
	const struct vw_attr_in *in;
	vw_attr_proc_fn proc;
	void *ctx;
	enum vw_zone z;
	enum vw_split_key key;
};

/* The k arrays in arrs (elements of elem bytes) hold at least n each (contents not kept);
 * *cap is what all of them hold, so one that failed to grow leaves it as it was. */
static int fit_arrays(size_t *cap, size_t n, size_t elem, void **arrs[], size_t k)
{
	if (*cap && n <= *cap) /* allocated once even for nothing: no NULL to memset */
		return 0;
	n = VW_MAX(n, VW_MAX(*cap * 2, (size_t)16));
	for (size_t i = 0; i < k; i++) {
		void *p = reallocarray(*arrs[i], n, elem);

		if (!p)
			return -ENOMEM;
		*arrs[i] = p;
	}
	*cap = n;
	return 0;
}

#define FIT(cap, n, ...)                                                                           \
	fit_arrays(&(cap), (n), sizeof(*(__VA_ARGS__)), (void **[]){ (void **)&(__VA_ARGS__) }, 1)

/* Every index names an entry of the input. */
static int validate(const struct vw_attr_in *in)
{
	if ((in->n_procs && !in->procs) || (in->n_conts && !in->conts) ||
	    (in->n_pods && !in->pod_millis) || (in->n_vms && !in->vm_millis))
		return -EINVAL;
	for (size_t i = 0; i < in->n_procs; i++) {
		const struct vw_attr_proc *p = &in->procs[i];

		if (p->container < -1 || p->vm < -1 ||
		    (p->container >= 0 && (size_t)p->container >= in->n_conts) ||
		    (p->vm >= 0 && (size_t)p->vm >= in->n_vms))
			return -EINVAL;
	}
	for (size_t c = 0; c < in->n_conts; c++) {
		int32_t pod = in->conts[c].pod;

		if (pod < -1 || (pod >= 0 && (size_t)pod >= in->n_pods))
			return -EINVAL;
	}
	return 0;
}

/* Counting sort: item i of n goes to bucket key(i) (or none when < 0); afterwards bucket g's
 * items are b->items[b->start[g] .. b->start[g + 1]). */
static int bucket_fill(struct vw_attr_bucket *b, size_t n, size_t ng, const struct vw_attr_in *in,
		       int (*key)(const struct vw_attr_in *, size_t))
{
	if (FIT(b->cap_start, ng + 2, b->start) < 0 || FIT(b->cap_items, n + 1, b->items) < 0)
		return -ENOMEM;
	memset(b->start, 0, (ng + 2) * sizeof(size_t));
	if (ng == 0)
		return 0; /* no group: every key is -1 (validate()), every bucket empty */
	for (size_t i = 0; i < n; i++) {
		int g = key(in, i);

		if (g >= 0)
			b->start[g + 2]++;
	}
	for (size_t g = 0; g < ng; g++)
		b->start[g + 2] += b->start[g + 1];
	for (size_t i = 0; i < n; i++) {
		int g = key(in, i);

		if (g >= 0)
			b->items[b->start[g + 1]++] = i;
	}
	return 0;
}

static size_t bucket_len(const struct vw_attr_bucket *b, size_t g)
{
	return b->start[g + 1] - b->start[g];
}

static int container_of(const struct vw_attr_in *in, size_t i)
{
	return in->procs[i].container;
}

static int pod_of(const struct vw_attr_in *in, size_t c)
{
	return in->conts[c].pod;
}

/* A VM's reservation group takes the processes of the VM that are in no pod (a KubeVirt VM's
 * QEMU is in a pod: the pod's requests are the VM's reservation, counted once, through it). */
static int vm_of(const struct vw_attr_in *in, size_t i)
{
	const struct vw_attr_proc *p = &in->procs[i];

	if (p->container >= 0 && in->conts[p->container].pod >= 0)
		return -1;
	return p->vm;
}

/* Scratch sized for the input, processes grouped, results zeroed. */
static int prepare(struct vw_attribution *a, const struct vw_attr_in *in)
{
	struct vw_attr_scratch *s = a->s ? a->s : (a->s = calloc(1, sizeof(*a->s)));

	if (!s)
		return -ENOMEM;
	if (fit_arrays(&s->cap_weights, in->n_procs + in->n_conts + 1, sizeof(uint64_t),
		       (void **[]){ (void **)&s->weights, (void **)&s->out, (void **)&s->share },
		       3) < 0 ||
	    fit_arrays(&s->cap_groups, in->n_pods + in->n_vms + 1, sizeof(uint64_t),
		       (void **[]){ (void **)&s->reserve, (void **)&s->grp_idle }, 2) < 0 ||
	    FIT(s->cap_conts, in->n_conts, a->conts) < 0 ||
	    FIT(s->cap_pods, in->n_pods, a->pods) < 0 || FIT(s->cap_vms, in->n_vms, a->vms) < 0 ||
	    bucket_fill(&s->by_cont, in->n_procs, in->n_conts, in, container_of) < 0 ||
	    bucket_fill(&s->by_pod, in->n_conts, in->n_pods, in, pod_of) < 0 ||
	    bucket_fill(&s->by_vm, in->n_procs, in->n_vms, in, vm_of) < 0)
		return -ENOMEM;
	if (FIT(s->cap_busy, in->n_procs + 1, s->busy) < 0)
		return -ENOMEM;
	s->busy_key = -1;
	memset(a->conts, 0, in->n_conts * sizeof(*a->conts));
	memset(a->pods, 0, in->n_pods * sizeof(*a->pods));
	memset(a->vms, 0, in->n_vms * sizeof(*a->vms));
	memset(a->uncontained, 0, sizeof(a->uncontained));
	memset(a->unattributed, 0, sizeof(a->unattributed));
	return 0;
}

/* ---- Giving ---- */

/* Energy of a container that no process of it can take (CPU time of its tasks never seen
 * alive, or of processes that moved in or out): the container's and its pod's. */
static void give_container(const struct split *sp, size_t c, int m, uint64_t uj)
{
	int32_t pod = sp->in->conts[c].pod;

	sp->a->conts[c].uj[sp->z][m] += uj;
	if (pod >= 0)
		sp->a->pods[pod].uj[sp->z][m] += uj;
}

/* To process i, and through it its VM, its container and its pod (or the uncontained). */
static void give(const struct split *sp, size_t i, int m, uint64_t uj)
{
	const struct vw_attr_proc *p = &sp->in->procs[i];

	if (sp->proc)
		sp->proc(sp->ctx, i, sp->z, (enum vw_attr_mode)m, uj);
	if (p->vm >= 0)
		sp->a->vms[p->vm].uj[sp->z][m] += uj;
	if (p->container < 0 || p->sole) /* in none, or a sole group's (KubeVirt's QEMU) */
		sp->a->uncontained[sp->z][m] += uj;
	else
		give_container(sp, (size_t)p->container, m, uj);
}

/* ---- Weights ---- */

/* The usage that divides zone z: CPU time, or a hardware counter where it fits (Kepler v0.7:
 * instructions for package and core, cache misses for dram) and the snapshot has it. */
static uint64_t key_delta(const struct split *sp, size_t i)
{
	switch (sp->key) {
	case VW_SPLIT_INSTRUCTIONS:
		return sp->in->counters[i].instructions;
	case VW_SPLIT_CACHE_MISSES:
		return sp->in->counters[i].cache_misses;
	case VW_SPLIT_CPU_TIME:
	default:
		return sp->in->procs[i].cpu_ns;
	}
}

/* Whether container c's kernel total says what ran in it this interval (CPU-time keys only:
 * a cgroup counts no instructions). */
static bool by_cgroup(const struct split *sp, size_t c)
{
	return sp->in->conts[c].cg_valid && sp->key == VW_SPLIT_CPU_TIME;
}

/* The weight of container c at the top level: its cgroup's CPU time, else its processes'. */
static uint64_t container_weight(const struct split *sp, size_t c)
{
	const struct vw_attr_bucket *b = &sp->a->s->by_cont;
	uint64_t sum = 0;

	if (by_cgroup(sp, c))
		return sp->in->conts[c].cg_ns;
	for (size_t k = b->start[c]; k < b->start[c + 1]; k++)
		sum += key_delta(sp, b->items[k]);
	return sum;
}

/* Split uj over the first n scratch weights into the scratch parts. Returns what nobody could
 * take (all weights 0). */
static uint64_t split_weights(const struct split *sp, size_t n, uint64_t uj)
{
	uint64_t rest = 0;

	(void)vw_ratio_split(uj, sp->a->s->weights, n, sp->a->s->out, &rest);
	return rest;
}

/* ---- Splits ---- */

/*
 * Container c's share: to its processes by their own usage and, where its cgroup ran more than
 * they did (tasks never seen alive, processes that moved), that rest to the container itself.
 * equal: when nothing ran, equally among its live processes (an idle share it must take).
 */
static void split_container(const struct split *sp, size_t c, int m, uint64_t uj, bool equal)
{
	const struct vw_attr_bucket *b = &sp->a->s->by_cont;
	const size_t *idx = b->items + b->start[c];
	size_t n = bucket_len(b, c);
	uint64_t *wt = sp->a->s->weights, *out = sp->a->s->out;
	uint64_t sum = 0, any = 0, cg, rest;

	for (size_t k = 0; k < n; k++) {
		wt[k] = key_delta(sp, idx[k]);
		sum += wt[k];
	}
	cg = by_cgroup(sp, c) ? sp->in->conts[c].cg_ns : 0;
	wt[n] = cg > sum ? cg - sum : 0;
	for (size_t k = 0; k <= n; k++)
		any |= wt[k];
	if (!any && equal)
		for (size_t k = 0; k < n; k++)
			wt[k] = sp->in->procs[idx[k]].live;
	rest = split_weights(sp, n + 1, uj);
	for (size_t k = 0; k < n; k++)
		if (out[k])
			give(sp, idx[k], m, out[k]);
	give_container(sp, c, m, out[n] + rest);
}

/*
 * The kernel's totals are exact, a process scan is not: its per-process readings spread over
 * the scan's own duration (long on a busy machine), so they can add up to more than the root
 * cgroup ran in the interval. When they do, the scanned weights (processes in no container,
 * containers known only by their processes) shrink to what the root total leaves beside the
 * containers' cgroups, which keep their exact share of it.
 */
static void fit_to_root(const struct split *sp, size_t n, uint64_t *seen)
{
	const struct vw_attr_in *in = sp->in;
	uint64_t exact = 0, scanned, room, *wt = sp->a->s->weights;

	if (!in->root_valid || sp->key != VW_SPLIT_CPU_TIME || *seen <= in->root_ns)
		return;
	for (size_t c = 0; c < in->n_conts; c++)
		if (by_cgroup(sp, c))
			exact += wt[c];
	if (exact >= in->root_ns)
		return; /* the containers alone ran more than the root saw: nothing to fit */
	scanned = *seen - exact;
	room = in->root_ns - exact;
	for (size_t k = 0; k < n; k++)
		if (k >= in->n_conts || !by_cgroup(sp, k))
			wt[k] = (uint64_t)((unsigned __int128)wt[k] * room / scanned);
	*seen = in->root_ns;
}

/*
 * The node's share of a zone (active energy, or idle when nothing is reserved): by CPU time
 * (or the zone's counter) between containers (their cgroups' totals), processes in no
 * container, and what ran outside every container without being seen (the root cgroup's total
 * beyond both: an uncontained remainder). Returns what nobody took (nothing ran).
 */
static uint64_t split_node(const struct split *sp, int m, uint64_t uj)
{
	const struct vw_attr_in *in = sp->in;
	struct vw_attr_scratch *s = sp->a->s;
	uint64_t *wt = s->weights, *out = s->out, *share = s->share;
	size_t nc = in->n_conts, n = 0;
	uint64_t seen = 0, rest;

	/* The processes in no container with a usage: those of usage 0 would take nothing (a
	 * part of weight 0 is 0 and no tie goes to it), so the split is the same without them. */
	if (s->busy_key != (int)sp->key) {
		s->n_busy = 0;
		for (size_t i = 0; i < in->n_procs; i++)
			if (in->procs[i].container < 0 && key_delta(sp, i))
				s->busy[s->n_busy++] = i;
		s->busy_key = (int)sp->key;
	}
	for (size_t c = 0; c < nc; c++) {
		wt[n] = container_weight(sp, c);
		seen += wt[n++];
	}
	for (size_t k = 0; k < s->n_busy; k++) {
		wt[n] = key_delta(sp, s->busy[k]);
		seen += wt[n++];
	}
	fit_to_root(sp, n, &seen);
	wt[n++] = in->root_valid && sp->key == VW_SPLIT_CPU_TIME && in->root_ns > seen
			  ? in->root_ns - seen
			  : 0;
	rest = split_weights(sp, n, uj);
	/* out is overwritten by the container splits: take the shares first. */
	memcpy(share, out, nc * sizeof(uint64_t));
	for (size_t k = 0; k < s->n_busy; k++)
		if (out[nc + k])
			give(sp, s->busy[k], m, out[nc + k]);
	sp->a->uncontained[sp->z][m] += out[nc + s->n_busy];
	for (size_t c = 0; c < nc; c++)
		if (share[c])
			split_container(sp, c, m, share[c], false);
	return rest;
}

/* A pod's idle share: to its containers by CPU time (equally among live ones when none ran). */
static void split_pod(const struct split *sp, size_t pod, uint64_t uj)
{
	const struct vw_attr_bucket *b = &sp->a->s->by_pod;
	const size_t *idx = b->items + b->start[pod];
	size_t n = bucket_len(b, pod);
	uint64_t *wt = sp->a->s->weights, *share = sp->a->s->share;
	uint64_t any = 0, rest;

	if (n == 0) {
		sp->a->unattributed[sp->z][VW_ATTR_IDLE] += uj;
		return;
	}
	for (size_t k = 0; k < n; k++)
		any |= wt[k] = container_weight(sp, idx[k]);
	if (!any)
		for (size_t k = 0; k < n; k++)
			wt[k] = sp->in->conts[idx[k]].live;
	rest = split_weights(sp, n, uj);
	memcpy(share, sp->a->s->out, n * sizeof(uint64_t));
	sp->a->unattributed[sp->z][VW_ATTR_IDLE] += rest;
	for (size_t k = 0; k < n; k++)
		if (share[k])
			split_container(sp, idx[k], VW_ATTR_IDLE, share[k], true);
}

/* A VM's idle share: to its processes by CPU time (equally among live ones when none ran). */
static void split_vm(const struct split *sp, size_t vm, uint64_t uj)
{
	const struct vw_attr_bucket *b = &sp->a->s->by_vm;
	const size_t *idx = b->items + b->start[vm];
	size_t n = bucket_len(b, vm);
	uint64_t *wt = sp->a->s->weights, *out = sp->a->s->out;
	uint64_t any = 0;

	for (size_t k = 0; k < n; k++)
		any |= wt[k] = key_delta(sp, idx[k]);
	if (!any)
		for (size_t k = 0; k < n; k++)
			wt[k] = sp->in->procs[idx[k]].live;
	sp->a->unattributed[sp->z][VW_ATTR_IDLE] += split_weights(sp, n, uj);
	for (size_t k = 0; k < n; k++)
		if (out[k])
			give(sp, idx[k], VW_ATTR_IDLE, out[k]);
}

/* Idle: to pods and VMs by what they reserve of the host, the unreserved rest the node's;
 * with nothing reserved, by usage as active is. */
static void split_idle(const struct split *sp, uint64_t idle)
{
	const struct vw_attr_in *in = sp->in;
	struct vw_attribution *a = sp->a;
	size_t np = in->n_pods, ng = np + in->n_vms;
	uint64_t *reserve = a->s->reserve, *grp_idle = a->s->grp_idle;
	uint64_t rest = 0, any = 0;

	for (size_t i = 0; i < ng; i++)
		/* A VM whose processes are all in pods reserves through them (vm_of): not twice. */
		any |= reserve[i] = i < np				   ? in->pod_millis[i]
				    : bucket_len(&a->s->by_vm, i - np) ? in->vm_millis[i - np]
								       : 0;
	if (!any) {
		a->unattributed[sp->z][VW_ATTR_IDLE] += split_node(sp, VW_ATTR_IDLE, idle);
		return;
	}
	(void)vw_ratio_split_idle(idle, reserve, NULL, ng, in->capacity_millis, grp_idle, &rest);
	a->unattributed[sp->z][VW_ATTR_IDLE] += rest;
	for (size_t i = 0; i < np; i++)
		if (grp_idle[i])
			split_pod(sp, i, grp_idle[i]);
	for (size_t k = 0; k < in->n_vms; k++)
		if (grp_idle[np + k])
			split_vm(sp, k, grp_idle[np + k]);
}

int vw_attribute(struct vw_attribution *a, const struct vw_attr_in *in, vw_attr_proc_fn proc,
		 void *ctx)
{
	int r = validate(in);

	if (r == 0)
		r = prepare(a, in);
	if (r < 0)
		return r;
	for (int z = 0; z < VW_ZONE__COUNT; z++) {
		const struct vw_zone_energy *e = &in->zones[z];
		enum vw_split_key key = vw_split_key_for_zone((enum vw_zone)z,
							      in->counters ? in->hw_available : 0);
		struct split sp = { .a = a, .in = in, .proc = proc, .ctx = ctx,
				    .z = (enum vw_zone)z, .key = key };

		if (!e->present)
			continue;
		a->unattributed[z][VW_ATTR_ACTIVE] += split_node(&sp, VW_ATTR_ACTIVE, e->active_uj);
		if (e->idle_to_node)
			a->unattributed[z][VW_ATTR_IDLE] += e->idle_uj;
		else
			split_idle(&sp, e->idle_uj);
	}
	return 0;
}

void vw_attribution_release(struct vw_attribution *a)
{
	struct vw_attr_scratch *s = a->s;

	free(a->conts);
	free(a->pods);
	free(a->vms);
	if (s) {
		free(s->weights);
		free(s->out);
		free(s->share);
		free(s->reserve);
		free(s->grp_idle);
		free(s->by_cont.start);
		free(s->by_cont.items);
		free(s->by_pod.start);
		free(s->by_pod.items);
		free(s->by_vm.start);
		free(s->by_vm.items);
		free(s->busy);
		free(s);
	}
	*a = (struct vw_attribution){ 0 };
}

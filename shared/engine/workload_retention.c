/* SPDX-License-Identifier: Apache-2.0 */
/*
 * How long the workload registry remembers what has ended (docs/configuration.md "Bounds").
 * A terminated process, container or pod stays until a scrape has served a snapshot holding its
 * final value; a gone VM stays hidden a grace period so one re-created with its UUID carries on.
 * Whatever the scrape pattern, each level keeps at most max_terminated terminated entries: past
 * that the oldest are evicted unserved (counted), and with them what only they held (the
 * terminated processes of an evicted container, the containers of an evicted pod). Nothing
 * live is ever evicted, and no energy leaves a total: an evicted container's energy stays in
 * its pod's counters and in the node's, an evicted process's in its container's or the
 * uncontained total. A container that goes (served or evicted) adds what it held to the
 * node's ended-containers total, so that containers + ended + uncontained + unattributed is
 * the node's energy in every snapshot, not only while no container has gone.
 */
#include <errno.h>
#include <stdlib.h>

#include "energy.h"
#include "macro.h"
#include "workloads_priv.h"

/* Stamp the generation holding a new terminated entry's final value; true once it was served. */
static bool served(bool terminated, uint64_t *final_gen, uint64_t gen, uint64_t served_gen)
{
	if (!terminated)
		return false;
	if (*final_gen == 0) {
		*final_gen = gen;
		return false;
	}
	return served_gen >= *final_gen;
}

struct cand {
	uint64_t age; /* larger: newer */
	size_t idx;
};

static int cmp_cand(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->age != y->age)
		return x->age < y->age ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* The n candidates beyond cap, oldest first, are marked in leave[]. Returns how many. */
static size_t evict_oldest(struct cand *c, size_t n, size_t cap, bool *leave)
{
	if (n <= cap)
		return 0;
	qsort(c, n, sizeof(*c), cmp_cand);
	for (size_t k = 0; k < n - cap; k++)
		leave[c[k].idx] = true;
	return n - cap;
}

/* Per-level scratch for one pass: what leaves, and what must stay (something live uses it). */
struct pass {
	bool *leave_p, *leave_c, *leave_pod, *leave_vm;
	bool *pinned_c, *pinned_pod, *pinned_vm; /* used by something live: never evicted */
	bool *ref_c, *ref_pod, *ref_vm;          /* used by something that stays */
	struct cand *cand;
};

static void pass_free(struct pass *p)
{
	free(p->leave_p);
	free(p->leave_c);
	free(p->leave_pod);
	free(p->leave_vm);
	free(p->pinned_c);
	free(p->pinned_pod);
	free(p->pinned_vm);
	free(p->ref_c);
	free(p->ref_pod);
	free(p->ref_vm);
	free(p->cand);
}

static int pass_init(struct pass *p, const struct vw_workloads *w)
{
	size_t most = VW_MAX(VW_MAX(w->n_procs, w->n_conts), VW_MAX(w->n_pods, w->n_vms)) + 1;

	*p = (struct pass){
		.leave_p = calloc(w->n_procs + 1, sizeof(bool)),
		.leave_c = calloc(w->n_conts + 1, sizeof(bool)),
		.leave_pod = calloc(w->n_pods + 1, sizeof(bool)),
		.leave_vm = calloc(w->n_vms + 1, sizeof(bool)),
		.pinned_c = calloc(w->n_conts + 1, sizeof(bool)),
		.pinned_pod = calloc(w->n_pods + 1, sizeof(bool)),
		.pinned_vm = calloc(w->n_vms + 1, sizeof(bool)),
		.ref_c = calloc(w->n_conts + 1, sizeof(bool)),
		.ref_pod = calloc(w->n_pods + 1, sizeof(bool)),
		.ref_vm = calloc(w->n_vms + 1, sizeof(bool)),
		.cand = calloc(most, sizeof(struct cand)),
	};
	if (!p->leave_p || !p->leave_c || !p->leave_pod || !p->leave_vm || !p->pinned_c ||
	    !p->pinned_pod || !p->pinned_vm || !p->ref_c || !p->ref_pod || !p->ref_vm || !p->cand) {
		pass_free(p);
		return -ENOMEM;
	}
	/* Live processes pin their container and VM, live containers their pod. */
	for (size_t i = 0; i < w->n_procs; i++) {
		const struct wl_proc *pr = &w->procs[i];

		if (pr->terminated)
			continue;
		if (pr->container >= 0)
			p->pinned_c[pr->container] = true;
		if (pr->vm >= 0)
			p->pinned_vm[pr->vm] = true;
	}
	for (size_t i = 0; i < w->n_conts; i++)
		if ((!w->conts[i].terminated || p->pinned_c[i]) && w->conts[i].pod >= 0)
			p->pinned_pod[w->conts[i].pod] = true;
	return 0;
}

/* A container leaves, and the (terminated) processes that ran in it with it. */
static void drop_container(struct vw_workloads *w, struct pass *p, size_t c)
{
	p->leave_c[c] = true;
	for (size_t i = 0; i < w->n_procs; i++)
		if (w->procs[i].container == (int)c)
			p->leave_p[i] = true;
}

static void plan_procs(struct vw_workloads *w, struct pass *p, uint64_t gen, uint64_t served_gen)
{
	size_t n = 0;

	for (size_t i = 0; i < w->n_procs; i++) {
		struct wl_proc *pr = &w->procs[i];

		p->leave_p[i] = served(pr->terminated, &pr->final_gen, gen, served_gen);
		if (pr->terminated && !p->leave_p[i])
			p->cand[n++] = (struct cand){ pr->final_gen, i };
	}
	(void)evict_oldest(p->cand, n, w->o.max_terminated, p->leave_p);
}

static void plan_containers(struct vw_workloads *w, struct pass *p, uint64_t gen,
			    uint64_t served_gen)
{
	size_t n = 0;

	for (size_t i = 0; i < w->n_procs; i++)
		if (!p->leave_p[i] && w->procs[i].container >= 0)
			p->ref_c[w->procs[i].container] = true;
	for (size_t i = 0; i < w->n_conts; i++) {
		struct wl_container *c = &w->conts[i];

		p->leave_c[i] = served(c->terminated, &c->final_gen, gen, served_gen) && !p->ref_c[i];
		if (c->terminated && !p->leave_c[i] && !p->pinned_c[i])
			p->cand[n++] = (struct cand){ c->final_gen, i };
	}
	if (evict_oldest(p->cand, n, w->o.max_terminated, p->leave_c))
		for (size_t i = 0; i < w->n_conts; i++)
			if (p->leave_c[i])
				drop_container(w, p, i);
}

static void plan_pods(struct vw_workloads *w, struct pass *p, uint64_t gen, uint64_t served_gen)
{
	size_t n = 0;

	for (size_t i = 0; i < w->n_conts; i++)
		if (!p->leave_c[i] && w->conts[i].pod >= 0)
			p->ref_pod[w->conts[i].pod] = true;
	for (size_t i = 0; i < w->n_pods; i++) {
		struct wl_pod *pod = &w->pods[i];

		p->leave_pod[i] = served(pod->terminated, &pod->final_gen, gen, served_gen) &&
				  !p->ref_pod[i];
		if (pod->terminated && !p->leave_pod[i] && !p->pinned_pod[i])
			p->cand[n++] = (struct cand){ pod->final_gen, i };
	}
	if (evict_oldest(p->cand, n, w->o.max_terminated, p->leave_pod))
		for (size_t i = 0; i < w->n_conts; i++)
			if (w->conts[i].pod >= 0 && p->leave_pod[w->conts[i].pod])
				drop_container(w, p, i);
}

/* Gone VMs stop being exported once served, and are forgotten after a grace period when no
 * remaining process refers to them; beyond the cap, the longest gone first. */
static void plan_vms(struct vw_workloads *w, struct pass *p, uint64_t gen, uint64_t served_gen)
{
	size_t n = 0;

	for (size_t i = 0; i < w->n_procs; i++)
		if (!p->leave_p[i] && w->procs[i].vm >= 0)
			p->ref_vm[w->procs[i].vm] = true;
	for (size_t k = 0; k < w->n_vms; k++) {
		struct wl_vm *v = &w->vms[k];

		if (served(v->terminated, &v->final_gen, gen, served_gen))
			v->hidden = true;
		if (v->terminated)
			v->publications_gone++;
		p->leave_vm[k] = v->terminated && !p->ref_vm[k] &&
				 v->publications_gone > VW_VM_GRACE_PUBLICATIONS;
		if (v->terminated && !p->leave_vm[k] && !p->pinned_vm[k])
			p->cand[n++] = (struct cand){ UINT64_MAX - v->publications_gone, k };
	}
	w->evictions[VW_TABLE_VM] += evict_oldest(p->cand, n, w->o.max_terminated, p->leave_vm);
	for (size_t i = 0; i < w->n_procs; i++)
		if (w->procs[i].vm >= 0 && p->leave_vm[w->procs[i].vm] && w->procs[i].terminated)
			p->leave_p[i] = true;
}

/* Indices of kept parents after compaction; children's indices are remapped through it. */
static void remap(const bool *leave, size_t n_parents, int *child_idx, size_t n_children,
		  size_t child_stride, int *map)
{
	int j = 0;

	for (size_t i = 0; i < n_parents; i++)
		map[i] = leave[i] ? -1 : j++;
	if ((size_t)j == n_parents)
		return; /* none leaves: every index stays (most publications) */
	for (size_t i = 0; i < n_children; i++) {
		int *idx = (int *)((char *)child_idx + i * child_stride);

		if (*idx >= 0)
			*idx = map[*idx];
	}
}

/* An entry leaving before a scrape served its final value is an eviction. */
static bool unserved(bool terminated, uint64_t final_gen, uint64_t served_gen)
{
	return !terminated || !final_gen || served_gen < final_gen;
}

static void compact_procs(struct vw_workloads *w, const struct pass *p, uint64_t served_gen)
{
	size_t j = 0;

	for (size_t i = 0; i < w->n_procs; i++) {
		const struct wl_proc *pr = &w->procs[i];

		if (!p->leave_p[i]) {
			if (j != i) /* no copy onto itself before the first that leaves */
				w->procs[j] = *pr;
			j++;
			continue;
		}
		if (unserved(pr->terminated, pr->final_gen, served_gen))
			w->evictions[VW_TABLE_PROCESS]++;
		vw_intern_put(w->exes, pr->exe);
		free(pr->z);
		free(pr->hw);
		free(pr->gpu);
	}
	w->n_procs = j;
}

static void compact_containers(struct vw_workloads *w, const struct pass *p, int *map,
			       uint64_t served_gen)
{
	size_t j = 0;

	remap(p->leave_c, w->n_conts, w->n_procs ? &w->procs[0].container : NULL, w->n_procs,
	      sizeof(*w->procs), map);
	for (size_t i = 0; i < w->n_conts; i++) {
		struct wl_container *c = &w->conts[i];

		if (!p->leave_c[i]) {
			w->conts[j++] = *c;
			continue;
		}
		w->evictions[VW_TABLE_CONTAINER] += unserved(c->terminated, c->final_gen, served_gen);
		/* Its series go: what they held stays exported in the node's ended total. */
		for (int z = 0; z < VW_ZONE__COUNT; z++)
			for (int m = 0; m < M__COUNT; m++)
				w->totals.ended_containers[z][m] += c->z[z].uj[m];
		w->gpu_ended_containers_uj = vw_energy_add(w->gpu_ended_containers_uj,
							   c->gpu.uj[M_ACTIVE]);
		free(c->cg_path);
	}
	w->n_conts = j;
}

static void compact_pods(struct vw_workloads *w, const struct pass *p, int *map,
			 uint64_t served_gen)
{
	size_t j = 0;

	remap(p->leave_pod, w->n_pods, w->n_conts ? &w->conts[0].pod : NULL, w->n_conts,
	      sizeof(*w->conts), map);
	for (size_t i = 0; i < w->n_pods; i++) {
		const struct wl_pod *pod = &w->pods[i];

		if (!p->leave_pod[i])
			w->pods[j++] = *pod;
		else
			w->evictions[VW_TABLE_POD] += unserved(pod->terminated, pod->final_gen,
							       served_gen);
	}
	w->n_pods = j;
}

static void compact_vms(struct vw_workloads *w, const struct pass *p, int *map)
{
	size_t j = 0;

	remap(p->leave_vm, w->n_vms, w->n_procs ? &w->procs[0].vm : NULL, w->n_procs,
	      sizeof(*w->procs), map);
	for (size_t k = 0; k < w->n_vms; k++)
		if (!p->leave_vm[k])
			w->vms[j++] = w->vms[k];
		else
			free(w->vms[k].labels);
	w->n_vms = j;
}

void vw_workloads_published(struct vw_workloads *w, uint64_t gen, uint64_t served_gen)
{
	struct pass p;
	_cleanup_free_ int *map = NULL;
	size_t most = VW_MAX(VW_MAX(w->n_procs, w->n_conts), VW_MAX(w->n_pods, w->n_vms)) + 1;

	/* On ENOMEM nothing is dropped this time; the next publication tries again. */
	map = calloc(most, sizeof(int));
	if (!map || pass_init(&p, w) < 0)
		return;
	plan_procs(w, &p, gen, served_gen);
	plan_containers(w, &p, gen, served_gen);
	plan_pods(w, &p, gen, served_gen);
	plan_vms(w, &p, gen, served_gen);
	compact_procs(w, &p, served_gen);
	compact_containers(w, &p, map, served_gen);
	compact_pods(w, &p, map, served_gen);
	compact_vms(w, &p, map);
	pass_free(&p);
}

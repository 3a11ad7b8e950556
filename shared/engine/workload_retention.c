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
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

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

/*
 * Per-level scratch for one pass: what leaves, and what must stay (something live uses it).
 * Kept in the registry between publications and grown as the tables grow: eleven callocs a
 * publication, a table-sized candidate list among them, were a tenth of an interval's work.
 */
struct vw_wl_retention {
	bool *leave_p, *leave_c, *leave_pod, *leave_vm;
	bool *pinned_c, *pinned_pod, *pinned_vm; /* used by something live: never evicted */
	bool *ref_c, *ref_pod, *ref_vm;          /* used by something that stays */
	struct cand *cand;
	int *map;
	size_t cap_p, cap_c, cap_pod, cap_vm, cap_cand, cap_map;
	/* Of this pass: the levels with terminated entries (the others need no planning) and
	 * whether any process leaves. */
	bool term_c, term_pod, term_vm, any_leave_p;
};

void vw_wl_retention_free(struct vw_workloads *w)
{
	struct vw_wl_retention *p = w->retention;

	if (!p)
		return;
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
	free(p->map);
	free(p);
	w->retention = NULL;
}

/* The k arrays hold n elements of elem bytes each (contents not kept); *cap unchanged unless
 * all grew. */
static int grow(size_t *cap, size_t n, size_t elem, void **arrs[], size_t k)
{
	if (n <= *cap)
		return 0;
	n = VW_MAX(n, *cap * 2);
	for (size_t i = 0; i < k; i++) {
		void *np = reallocarray(*arrs[i], n, elem);

		if (!np)
			return -ENOMEM;
		*arrs[i] = np;
	}
	*cap = n;
	return 0;
}

#define GROW(cap, n, ...)                                                                          \
	grow(&(cap), (n), sizeof(bool), (void **[]){ __VA_ARGS__ },                                \
	     sizeof((void **[]){ __VA_ARGS__ }) / sizeof(void **))

static bool any_terminated(const void *base, size_t n, size_t stride, size_t off)
{
	for (size_t i = 0; i < n; i++)
		if (*(const bool *)((const char *)base + i * stride + off))
			return true;
	return false;
}

static int pass_init(struct vw_wl_retention **ret, const struct vw_workloads *w)
{
	size_t most = VW_MAX(VW_MAX(w->n_procs, w->n_conts), VW_MAX(w->n_pods, w->n_vms)) + 1;
	struct vw_wl_retention *p = *ret ? *ret : (*ret = calloc(1, sizeof(**ret)));

	if (!p)
		return -ENOMEM;
	if (GROW(p->cap_p, w->n_procs + 1, (void **)&p->leave_p) < 0 ||
	    GROW(p->cap_c, w->n_conts + 1, (void **)&p->leave_c, (void **)&p->pinned_c,
		 (void **)&p->ref_c) < 0 ||
	    GROW(p->cap_pod, w->n_pods + 1, (void **)&p->leave_pod, (void **)&p->pinned_pod,
		 (void **)&p->ref_pod) < 0 ||
	    GROW(p->cap_vm, w->n_vms + 1, (void **)&p->leave_vm, (void **)&p->pinned_vm,
		 (void **)&p->ref_vm) < 0 ||
	    grow(&p->cap_cand, most, sizeof(*p->cand), (void **[]){ (void **)&p->cand }, 1) < 0 ||
	    grow(&p->cap_map, most, sizeof(*p->map), (void **[]){ (void **)&p->map }, 1) < 0)
		return -ENOMEM;
	memset(p->leave_c, 0, w->n_conts + 1);
	memset(p->leave_pod, 0, w->n_pods + 1);
	memset(p->leave_vm, 0, w->n_vms + 1);
	memset(p->pinned_c, 0, w->n_conts + 1);
	memset(p->pinned_pod, 0, w->n_pods + 1);
	memset(p->pinned_vm, 0, w->n_vms + 1);
	memset(p->ref_c, 0, w->n_conts + 1);
	memset(p->ref_pod, 0, w->n_pods + 1);
	memset(p->ref_vm, 0, w->n_vms + 1);
	p->term_c = any_terminated(w->conts, w->n_conts, sizeof(*w->conts),
				   offsetof(struct wl_container, terminated));
	p->term_pod = any_terminated(w->pods, w->n_pods, sizeof(*w->pods),
				     offsetof(struct wl_pod, terminated));
	p->term_vm = any_terminated(w->vms, w->n_vms, sizeof(*w->vms),
				    offsetof(struct wl_vm, terminated));
	/* Live processes pin their container and VM, live containers their pod: what only
	 * terminated containers, pods and VMs need (eviction candidates), so only with some. */
	if (!p->term_c && !p->term_pod && !p->term_vm)
		return 0;
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
static void drop_container(struct vw_workloads *w, struct vw_wl_retention *p, size_t c)
{
	p->leave_c[c] = true;
	for (size_t i = 0; i < w->n_procs; i++)
		if (w->procs[i].container == (int)c)
			p->leave_p[i] = p->any_leave_p = true;
}

static void plan_procs(struct vw_workloads *w, struct vw_wl_retention *p, uint64_t gen, uint64_t served_gen)
{
	size_t n = 0;

	for (size_t i = 0; i < w->n_procs; i++) {
		struct wl_proc *pr = &w->procs[i];

		p->leave_p[i] = false;
		if (!pr->terminated)
			continue;
		if (pr->superseded) { /* its PID ended again: an eviction if never served */
			p->leave_p[i] = p->any_leave_p = true;
			continue;
		}
		p->leave_p[i] = served(true, &pr->final_gen, gen, served_gen);
		if (!p->leave_p[i])
			p->cand[n++] = (struct cand){ pr->final_gen, i };
		else
			p->any_leave_p = true;
	}
	if (evict_oldest(p->cand, n, w->o.max_terminated, p->leave_p))
		p->any_leave_p = true;
}

static void plan_containers(struct vw_workloads *w, struct vw_wl_retention *p, uint64_t gen,
			    uint64_t served_gen)
{
	size_t n = 0;

	if (!p->term_c)
		return; /* none terminated: none leaves, none evicted */
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

static void plan_pods(struct vw_workloads *w, struct vw_wl_retention *p, uint64_t gen, uint64_t served_gen)
{
	size_t n = 0;

	if (!p->term_pod)
		return;
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
static void plan_vms(struct vw_workloads *w, struct vw_wl_retention *p, uint64_t gen, uint64_t served_gen)
{
	size_t n = 0, left;

	if (!p->term_vm)
		return;
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
	left = 0;
	for (size_t k = 0; k < w->n_vms; k++)
		left += p->leave_vm[k];
	for (size_t i = 0; left && i < w->n_procs; i++)
		if (w->procs[i].vm >= 0 && p->leave_vm[w->procs[i].vm] && w->procs[i].terminated)
			p->leave_p[i] = p->any_leave_p = true;
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

static void compact_procs(struct vw_workloads *w, const struct vw_wl_retention *p, uint64_t served_gen)
{
	size_t j = 0;

	if (!p->any_leave_p)
		return;
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

static void compact_containers(struct vw_workloads *w, const struct vw_wl_retention *p, int *map,
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
		vw_wl_cont_unkeep(c);
	}
	w->n_conts = j;
}

static void compact_pods(struct vw_workloads *w, const struct vw_wl_retention *p, int *map,
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

static void compact_vms(struct vw_workloads *w, const struct vw_wl_retention *p, int *map)
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
	struct vw_wl_retention *p;

	/* On ENOMEM nothing is dropped this time; the next publication tries again. */
	if (pass_init(&w->retention, w) < 0)
		return;
	p = w->retention;
	p->any_leave_p = false;
	plan_procs(w, p, gen, served_gen);
	plan_containers(w, p, gen, served_gen);
	plan_pods(w, p, gen, served_gen);
	plan_vms(w, p, gen, served_gen);
	compact_procs(w, p, served_gen);
	compact_containers(w, p, p->map, served_gen);
	compact_pods(w, p, p->map, served_gen);
	compact_vms(w, p, p->map);
}

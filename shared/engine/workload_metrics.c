/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload series with Kepler's names and labels (process, container, pod: active energy, as
 * Kepler counts it) plus virtwatt's attributed idle and the node-level remainders. Const label
 * node_name on every series, as Kepler has it. The family table and the render: the node's
 * remainders, the container, pod and VM levels here; the process level (top N, label cache) in
 * workload_metrics_proc.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "energy.h"
#include "macro.h"
#include "workloads_priv.h"

const char *const vw_wl_l_proc[] = { "pid", "comm", "exe", "type", "state", "container_id",
				     "vm_id", "zone", "node_name", NULL };
const char *const vw_wl_l_proc_sec[] = { "pid", "comm", "exe", "type", "container_id", "vm_id",
					 "node_name", NULL };
static const char *const l_cont[] = { "container_id", "container_name", "runtime", "state",
				      "zone", "pod_id", "node_name", NULL };
static const char *const l_cont_sec[] = { "container_id", "container_name", "runtime", "state",
					  "pod_id", "node_name", NULL };
static const char *const l_pod[] = { "pod_id", "pod_name", "pod_namespace", "state", "zone",
				     "node_name", NULL };
static const char *const l_vm[] = { "vm_id", "vm_name", "hypervisor", "state", "zone",
				    "node_name", NULL };
static const char *const l_rest[] = { "zone", "mode", "node_name", NULL };
static const char *const l_method[] = { "method", "node_name", NULL };
static const char *const l_fallback[] = { "reason", "node_name", NULL };
static const char *const l_untracked[] = { "reason", "method", "node_name", NULL };
static const char *const l_irq_map[] = { "map", "method", "node_name", NULL };
static const char *const l_node[] = { "node_name", NULL };

enum {
	F_PROC_J, F_PROC_W, F_PROC_IDLE_J, F_PROC_SEC,
	F_CONT_J, F_CONT_W, F_CONT_IDLE_J, F_CONT_SEC,
	F_POD_J, F_POD_W, F_POD_IDLE_J,
	F_VM_J, F_VM_W, F_VM_IDLE_J, F_VM_IDLE_W,
	F_UNATTR, F_UNCONT, F_METHOD, F_FALLBACK, F_GHOSTS, F_STALE_SLOTS, F_ENDED, F_RANWALK,
	F_EXITS_LOST, F_UNTRACKED, F_IRQ_SPANS, F_IRQ_SECONDS, F_ID_CONFLICTS,
};

/* Kepler's per-level families: the same three, their help naming the level. */
#define KEPLER_ENERGY(f, level, labels)                                                            \
	[f##_J] = { "kepler_" level "_cpu_joules_total", VW_METRIC_COUNTER,                        \
		    "Energy consumption of cpu at " level " level in joules", "joules", labels },  \
	[f##_W] = { "kepler_" level "_cpu_watts", VW_METRIC_GAUGE,                                 \
		    "Power consumption of cpu at " level " level in watts", "watts", labels }
#define KEPLER_SECONDS(f, level, labels)                                                           \
	[f##_SEC] = { "kepler_" level "_cpu_seconds_total", VW_METRIC_COUNTER,                     \
		      "Total user and system time of cpu at " level " level in seconds",           \
		      "seconds", labels }

const struct vw_metric_family vw_workload_families[] = {
	KEPLER_ENERGY(F_PROC, "process", vw_wl_l_proc),
	[F_PROC_IDLE_J] = { "virtwatt_process_cpu_idle_joules_total", VW_METRIC_COUNTER,
			    "Idle energy of cpu attributed to a process in joules", "joules",
			    vw_wl_l_proc },
	KEPLER_SECONDS(F_PROC, "process", vw_wl_l_proc_sec),
	KEPLER_ENERGY(F_CONT, "container", l_cont),
	[F_CONT_IDLE_J] = { "virtwatt_container_cpu_idle_joules_total", VW_METRIC_COUNTER,
			    "Idle energy of cpu attributed to a container in joules", "joules",
			    l_cont },
	KEPLER_SECONDS(F_CONT, "container", l_cont_sec),
	KEPLER_ENERGY(F_POD, "pod", l_pod),
	[F_POD_IDLE_J] = { "virtwatt_pod_cpu_idle_joules_total", VW_METRIC_COUNTER,
			   "Idle energy of cpu attributed to a pod (by its CPU requests) in joules",
			   "joules", l_pod },
	KEPLER_ENERGY(F_VM, "vm", l_vm),
	[F_VM_IDLE_J] = { "virtwatt_vm_cpu_idle_joules_total", VW_METRIC_COUNTER,
			  "Idle energy of cpu attributed to a VM (by its vCPUs' share of host CPUs) "
			  "in joules",
			  "joules", l_vm },
	[F_VM_IDLE_W] = { "virtwatt_vm_cpu_idle_watts", VW_METRIC_GAUGE,
			  "Idle power of cpu attributed to a VM in watts", "watts", l_vm },
	[F_UNATTR] = { "virtwatt_node_cpu_unattributed_joules_total", VW_METRIC_COUNTER,
		       "Node energy no workload took: active energy of intervals with no CPU time "
		       "seen, idle energy of unreserved capacity",
		       "joules", l_rest },
	[F_UNCONT] = { "virtwatt_node_cpu_uncontained_joules_total", VW_METRIC_COUNTER,
		       "Node energy attributed to processes counted in no container: those in none "
		       "(system and kernel) and KubeVirt VMs' QEMUs (their VM's, not their pod's), "
		       "including those that have exited",
		       "joules", l_rest },
	[F_METHOD] = { "virtwatt_cpu_accounting_info", VW_METRIC_GAUGE,
		       "How per-process CPU time is measured: bpf (sum_exec_runtime, exact) or procfs",
		       NULL, l_method },
	[F_FALLBACK] = { "virtwatt_cpu_accounting_fallback", VW_METRIC_GAUGE,
			 "1 when procfs accounts CPU time because bpf, expected, could not open; "
			 "reason: capability, seccomp, btf, permission or kernel (absent when bpf runs "
			 "or procfs was asked for)",
			 NULL, l_fallback },
	[F_GHOSTS] = { "virtwatt_cpu_accounting_ghosts_total", VW_METRIC_COUNTER,
		       "Processes the CPU accountant kept reporting alive after they had gone, found "
		       "gone from /proc by its check and reported exited then (bpf; 0 for procfs)",
		       NULL, l_method },
	[F_STALE_SLOTS] = { "virtwatt_cpu_accounting_stale_slots_removed_total", VW_METRIC_COUNTER,
			    "Per-thread slots the bpf CPU accountant removed from its fallback hash "
			    "(threads without task storage) because their thread was gone from /proc "
			    "and its free never came; left, they would fill the hash and later threads "
			    "would lose their time (bpf with tp_btf; 0 for procfs)",
			    NULL, l_method },
	[F_ENDED] = { "virtwatt_node_cpu_ended_containers_joules_total", VW_METRIC_COUNTER,
		      "Node energy of containers no longer exported (ended and dropped once a scrape "
		      "served their final value, or evicted): node = containers + this + "
		      "uncontained + unattributed in every scrape",
		      "joules", l_rest },
	[F_RANWALK] = { "virtwatt_cpu_accounting_ran_walk_active", VW_METRIC_GAUGE,
			"1 while the bpf accountant's switch program marks the tasks that ran and "
			"most reads walk only those (--cpu.ran-walk: auto attaches it while tasks "
			"clearly outnumber context switches), 0 while every read walks every task "
			"(and for procfs)",
			NULL, l_method },

	[F_EXITS_LOST] = { "virtwatt_cpu_accounting_exit_events_lost_total", VW_METRIC_COUNTER,
			   "Exit events the bpf CPU accountant's ring had no room for; each time "
			   "the next read took its whole per-process map instead, so no CPU time "
			   "was lost (bpf; 0 for procfs)",
			   NULL, l_method },
	[F_UNTRACKED] = { "virtwatt_cpu_accounting_untracked_exits_total", VW_METRIC_COUNTER,
			  "Exited threads whose CPU time the bpf CPU accountant could not keep, by "
			  "reason: process_map_full (no room for their process), no_thread_slot "
			  "(no per-thread state), pid_reused (the PID reused before collection); "
			  "their time is in no process's figure (bpf; 0 for procfs)",
			  NULL, l_untracked },
	[F_IRQ_SPANS] = { "virtwatt_cpu_accounting_irq_untracked_spans_total", VW_METRIC_COUNTER,
			  "Interrupt spans the bpf CPU accountant could not take out of the "
			  "interrupted workload's weight, its map (4,096 entries) full of others "
			  "interrupted between two reads, by map: cgroup (containers) or process; "
			  "their time stays with the interrupted one (bpf; 0 for procfs, and where "
			  "interrupt accounting is off)",
			  NULL, l_irq_map },
	[F_IRQ_SECONDS] = { "virtwatt_cpu_accounting_irq_untracked_seconds_total",
			    VW_METRIC_COUNTER,
			    "Time of the interrupt spans counted in "
			    "virtwatt_cpu_accounting_irq_untracked_spans_total, in seconds, by map; it "
			    "stays in the interrupted workload's weight (bpf; 0 for procfs)",
			    "seconds", l_irq_map },
	[F_ID_CONFLICTS] = { "virtwatt_container_cgroup_conflicts_total", VW_METRIC_COUNTER,
			     "Processes whose cgroup named a container ID another cgroup has, one of "
			     "the two under a user's own service manager (user@UID.service, where any "
			     "local user names its cgroups): that cgroup's claim refused (its "
			     "processes not the container's) or overruled by the one outside "
			     "(the container's CPU time read from that one)",
			     NULL, l_node },
};
const struct vw_family_table vw_workload_family_table = {
	"shared/engine/workload_metrics.c: vw_workloads_render()", "virtwatt-host, virtwatt-guest",
	"per --metrics level: processes, containers, pods, VMs (the host only), and the node's "
	"unattributed and uncontained parts", vw_workload_families, ARRAY_SIZE(vw_workload_families),
};

const char *vw_wl_state_name(bool terminated)
{
	return terminated ? "terminated" : "running";
}

static double interval_watts(const struct vw_workloads *w, const struct acc *a)
{
	return vw_energy_watts(a->interval[M_ACTIVE], w->dt_ns);
}

/* ---- Each level: containers, pods, VMs (processes: workload_metrics_proc.c) ---- */

_Static_assert(VW_WL_IDLE_W + 1 == 4, "the vm level's four families (vm_fams)");
_Static_assert(F_PROC_IDLE_J == F_PROC_J + VW_WL_IDLE_J &&
		       F_CONT_IDLE_J == F_CONT_J + VW_WL_IDLE_J &&
		       F_POD_IDLE_J == F_POD_J + VW_WL_IDLE_J &&
		       F_VM_IDLE_W == F_VM_J + VW_WL_IDLE_W,
	       "a level's families in order");

static int level_sample(const struct vw_workloads *w, struct vw_prom_writer *pw, int f,
			const struct wl_labels *l, const struct acc *a)
{
	switch (f) {
	case VW_WL_ACTIVE_J:
		return vw_prom_counter_micro_pieces(pw, l->piece, l->tail, l->v, a->uj[M_ACTIVE]);
	case VW_WL_ACTIVE_W:
		return vw_prom_gauge_pieces(pw, l->piece, l->tail, l->v, interval_watts(w, a));
	case VW_WL_IDLE_J:
		return vw_prom_counter_micro_pieces(pw, l->piece, l->tail, l->v, a->uj[M_IDLE]);
	default:
		return vw_prom_gauge_pieces(pw, l->piece, l->tail, l->v,
					    vw_energy_watts(a->interval[M_IDLE], w->dt_ns));
	}
}

int vw_wl_render_level(const struct vw_workloads *w, struct vw_prom_writer *pw, const char *node,
		       const struct vw_metric_family *fams, int n, bool zones, size_t n_items,
		       vw_wl_item_fn item, const void *ctx)
{
	int r = 0;

	for (int f = 0; r == 0 && f < n; f++) {
		r = vw_prom_family(pw, &fams[f]);
		for (size_t i = 0; r == 0 && i < n_items; i++)
			for (int k = 0; r == 0 && k < (zones ? VW_ZONE__COUNT : 1); k++) {
				int z = zones ? k : -1;
				struct wl_labels l;
				const struct acc *a;

				if (z >= 0 && !w->present[z])
					continue;
				l.piece = l.tail = NULL;
				a = item(w, ctx, i, z, node, &l);
				if (a)
					r = level_sample(w, pw, f, &l, a);
			}
		if (r == 0)
			r = vw_prom_family_end(pw);
	}
	return r;
}

const char *vw_wl_cont_pod(const struct vw_workloads *w, const struct wl_container *c)
{
	return c->pod >= 0 ? w->pods[c->pod].info.uid : "";
}

/* A level's items' first labels (those before zone) escaped once a render, the same in its
 * three families and every zone, as a process's and a VM's are (containers' and pods' were
 * escaped again in every sample: on a node of 50 containers, 2/5 of a render). */
struct piece_items {
	const char *const *labels;    /* the level's label array */
	size_t n;                     /* labels before zone */
	struct vw_prom_piece *pieces; /* one per item, NULL: none (no memory, or too many) */
	const struct vw_prom_piece *tail[VW_ZONE__COUNT]; /* the labels after n, or NULL */
};
#define ITEM_PIECES_MAX 512 /* items beyond which pieces are not kept (1 KiB each) */

/* Pieces for n items, none made yet; NULL (every label escaped in each sample) past the cap
 * or without memory. */
static struct vw_prom_piece *pieces_new(const struct vw_workloads *w, size_t n)
{
	struct vw_prom_piece *p =
		n && n <= ITEM_PIECES_MAX && !w->render_plain ? malloc(n * sizeof(*p)) : NULL;

	for (size_t k = 0; p && k < n; k++)
		p[k].labels = NULL;
	return p;
}

static void item_piece(const void *ctx, size_t i, int z, struct wl_labels *l)
{
	const struct piece_items *it = ctx;
	struct vw_prom_piece *pc = it && it->pieces ? &it->pieces[i] : NULL;

	if (pc && (pc->labels || vw_prom_piece_set(pc, it->labels, it->n, l->v)))
		l->piece = pc;
	if (pc && z >= 0)
		l->tail = it->tail[z];
}

/* Containers: a head piece each (container_id..state) and a tail (pod_id, node_name), made
 * at its first sample of a render: only zone is escaped in each sample, and its cpu-seconds
 * series takes both as they are (nothing escaped). */
struct cont_items {
	struct vw_prom_piece *heads, *tails; /* one each a container; NULL: none */
};

static const struct acc *cont_item(const struct vw_workloads *w, const void *ctx, size_t i,
				   int z, const char *node, struct wl_labels *l)
{
	const struct cont_items *it = ctx;
	const struct wl_container *c = &w->conts[i];

	if (c->final_gen == UINT64_MAX)
		return NULL;
	VW_WL_LABELS(l, c->id, c->name, vw_runtime_name(c->runtime),
		     vw_wl_state_name(c->terminated), vw_wl_zone(z), vw_wl_cont_pod(w, c), node);
	if (it->heads && (it->heads[i].labels || vw_prom_piece_set(&it->heads[i], l_cont, 4, l->v)))
		l->piece = &it->heads[i];
	if (it->tails &&
	    (it->tails[i].labels || vw_prom_piece_set_from(&it->tails[i], l_cont, 5, 2, l->v)))
		l->tail = &it->tails[i];
	return &c->z[z];
}

static int render_containers(const struct vw_workloads *w, struct vw_prom_writer *pw,
			     const char *node)
{
	_cleanup_free_ struct vw_prom_piece *heads = pieces_new(w, w->n_conts);
	_cleanup_free_ struct vw_prom_piece *tails = pieces_new(w, w->n_conts);
	struct cont_items it = { .heads = heads, .tails = tails };
	struct vw_prom_piece hd, tl;
	int r = vw_wl_render_level(w, pw, node, &vw_workload_families[F_CONT_J], VW_WL_IDLE_J + 1,
				   true, w->n_conts, cont_item, &it);

	if (r == 0)
		r = vw_prom_family(pw, &vw_workload_families[F_CONT_SEC]);
	for (size_t i = 0; r == 0 && i < w->n_conts; i++) {
		const struct wl_container *c = &w->conts[i];
		const char *v[] = { c->id, c->name, vw_runtime_name(c->runtime),
				    vw_wl_state_name(c->terminated), vw_wl_cont_pod(w, c), node,
				    NULL };
		/* its energy series' head and tail, for l_cont_sec (no zone between them) */
		bool h = heads && vw_prom_piece_as(&hd, &heads[i], l_cont_sec, 0);
		bool t = tails && vw_prom_piece_as(&tl, &tails[i], l_cont_sec, 4);

		if (c->final_gen != UINT64_MAX)
			r = vw_prom_counter_micro_pieces(pw, h ? &hd : NULL, t ? &tl : NULL, v,
							 c->cpu_ns / 1000);
	}
	return r < 0 ? r : vw_prom_family_end(pw);
}

static const struct acc *pod_item(const struct vw_workloads *w, const void *ctx, size_t i,
				  int z, const char *node, struct wl_labels *l)
{
	const struct wl_pod *p = &w->pods[i];

	if (p->final_gen == UINT64_MAX)
		return NULL;
	VW_WL_LABELS(l, p->info.uid, p->info.name, p->info.namespace_,
		     vw_wl_state_name(p->terminated), vw_wl_zone(z), node);
	item_piece(ctx, i, z, l);
	return &p->z[z];
}

/* Pods: a head piece each (pod_id..state), zone and node_name escaped once a render (a tail
 * per zone present). */
static int render_pods(const struct vw_workloads *w, struct vw_prom_writer *pw, const char *node)
{
	_cleanup_free_ struct vw_prom_piece *pieces = pieces_new(w, w->n_pods);
	struct piece_items it = { .labels = l_pod, .n = 4, .pieces = pieces };
	struct vw_prom_piece tails[VW_ZONE__COUNT];

	for (int z = 0; pieces && z < VW_ZONE__COUNT; z++) {
		/* pod_id..state: unused */
		const char *v[] = { "", "", "", "", vw_wl_zone(z), node, NULL };

		_Static_assert(ARRAY_SIZE(v) == ARRAY_SIZE(l_pod), "l_pod: a tail's values");
		if (w->present[z] && vw_prom_piece_set_from(&tails[z], l_pod, 4, 2, v))
			it.tail[z] = &tails[z];
	}
	return vw_wl_render_level(w, pw, node, &vw_workload_families[F_POD_J], VW_WL_IDLE_J + 1,
				  true, w->n_pods, pod_item, &it);
}

/* Each VM's labels vm_id to state escaped once a render, the same in its four families and
 * every zone (they were escaped again for each, a family and zone at a time). Made afresh
 * each render, so a VM renamed or relabelled shows its new labels at once. Without group
 * labels, zone and node_name end every VM's series: escaped once a render and zone (tails). */
struct vm_items {
	const char *const *labels;    /* the level's label array (with or without group labels) */
	struct vw_prom_piece *pieces; /* one per VM, NULL: none (no memory, or too many VMs) */
	const struct vw_prom_piece *tail[VW_ZONE__COUNT]; /* NULL: escaped in each sample */
};
#define VM_PIECE_LABELS 4 /* vm_id, vm_name, hypervisor, state: zone comes next */
#define VM_PIECES_MAX 512 /* VMs beyond which pieces are not kept (1 KiB each) */
_Static_assert(VM_PIECE_LABELS + 2 == ARRAY_SIZE(l_vm) - 1, "l_vm: the piece, zone, node");

static const struct acc *vm_item(const struct vw_workloads *w, const void *ctx, size_t i,
				 int z, const char *node, struct wl_labels *l)
{
	const struct vm_items *it = ctx;
	const struct wl_vm *vm = &w->vms[i];

	if (vm->hidden)
		return NULL;
	VW_WL_LABELS(l, vm->uuid, vm->name, vm->hypervisor, vw_wl_state_name(vm->terminated),
		     vw_wl_zone(z), node);
	for (size_t k = 0; k < w->n_group_labels; k++) /* after node_name, before the NULL */
		l->v[6 + k] = vm->labels ? vm->labels[k] : "";
	l->v[6 + w->n_group_labels] = NULL;
	if (it && it->pieces) {
		struct vw_prom_piece *pc = &it->pieces[i];

		if (pc->labels || vw_prom_piece_set(pc, it->labels, VM_PIECE_LABELS, l->v))
			l->piece = pc;
		l->tail = it->tail[z];
	}
	return &vm->z[z];
}

static int render_vms(const struct vw_workloads *w, struct vw_prom_writer *pw, const char *node)
{
	const struct vw_metric_family *fams =
		w->n_group_labels ? w->vm_fams : &vw_workload_families[F_VM_J];
	_cleanup_free_ struct vw_prom_piece *pieces = NULL;
	struct vm_items it = { .labels = fams[0].labels };

	if (w->n_vms && w->n_vms <= VM_PIECES_MAX && !w->render_plain) {
		/* a piece per VM, then a tail per zone; none: every label escaped */
		pieces = malloc((w->n_vms + VW_ZONE__COUNT) * sizeof(*pieces));
		for (size_t k = 0; pieces && k < w->n_vms; k++)
			pieces[k].labels = NULL;
		it.pieces = pieces;
	}
	for (int z = 0; pieces && !w->n_group_labels && z < VW_ZONE__COUNT; z++) {
		struct vw_prom_piece *t = &pieces[w->n_vms + (size_t)z];
		/* vm_id.. state: unused */
		const char *v[] = { "", "", "", "", vw_wl_zone(z), node, NULL };

		_Static_assert(ARRAY_SIZE(v) == ARRAY_SIZE(l_vm), "l_vm: a tail's values");
		if (w->present[z] && vw_prom_piece_set_from(t, it.labels, VM_PIECE_LABELS, 2, v))
			it.tail[z] = t;
	}
	return vw_wl_render_level(w, pw, node, fams, VW_WL_IDLE_W + 1, true, w->n_vms, vm_item,
				  &it);
}

/* out[0..4) as src[0..4) with their labels, then the group labels (names: the array, freed by
 * vw_wl_vm_families_free). */
static int extend(const struct vw_workloads *w, const struct vw_metric_family *src, size_t n,
		  struct vw_metric_family *out, const char ***names)
{
	size_t base = 0;

	while (src[0].labels[base])
		base++;
	*names = calloc(base + n + 1, sizeof(char *));
	if (!*names)
		return -ENOMEM;
	memcpy(*names, src[0].labels, base * sizeof(char *));
	memcpy(*names + base, w->o.group_labels, n * sizeof(char *));
	for (int f = 0; f < VW_WL_IDLE_W + 1; f++) {
		out[f] = src[f];
		out[f].labels = *names;
	}
	return 0;
}

int vw_wl_vm_families(struct vw_workloads *w)
{
	const char *const *g = w->o.group_labels;
	size_t n = 0;

	while (g && g[n])
		n++;
	if (n == 0)
		return 0;
	if (n > VW_GROUP_MAX_LABELS)
		return -EINVAL;
	if (extend(w, &vw_workload_families[F_VM_J], n, w->vm_fams, &w->vm_label_names) < 0 ||
	    extend(w, vw_wl_gpu_vm_families(), n, w->vm_gpu_fams, &w->vm_gpu_label_names) < 0) {
		vw_wl_vm_families_free(w);
		return -ENOMEM;
	}
	w->n_group_labels = n;
	return 0;
}

void vw_wl_vm_families_free(struct vw_workloads *w)
{
	free(w->vm_label_names);
	free(w->vm_gpu_label_names);
	w->vm_label_names = w->vm_gpu_label_names = NULL;
	w->n_group_labels = 0;
}

static int render_rest(const struct vw_workloads *w, struct vw_prom_writer *pw, int fam,
		       uint64_t (*t)[2], const char *node)
{
	int r = vw_prom_family(pw, &vw_workload_families[fam]);

	for (int z = 0; r == 0 && z < VW_ZONE__COUNT; z++)
		for (int m = 0; r == 0 && m < M__COUNT; m++) {
			const char *v[] = { vw_zone_name((enum vw_zone)z),
					    m == M_ACTIVE ? "active" : "idle", node, NULL };

			if (w->present[z])
				r = vw_prom_counter_micro(pw, v, t[z][m]);
		}
	return r < 0 ? r : vw_prom_family_end(pw);
}

static int render_untracked(const struct vw_workloads *w, struct vw_prom_writer *pw,
			    const char *method, const char *node)
{
	static const char *const why[VW_CPU_UNTRACKED__COUNT] = {
		[VW_CPU_UNTRACKED_PROCESS_MAP_FULL] = "process_map_full",
		[VW_CPU_UNTRACKED_NO_THREAD_SLOT] = "no_thread_slot",
		[VW_CPU_UNTRACKED_PID_REUSED] = "pid_reused",
	};
	int r = vw_prom_family(pw, &vw_workload_families[F_UNTRACKED]);

	for (int k = 0; r == 0 && k < VW_CPU_UNTRACKED__COUNT; k++) {
		const char *v[] = { why[k], method, node, NULL };

		r = vw_prom_counter(pw, v, (double)w->exits_untracked[k]);
	}
	return r < 0 ? r : vw_prom_family_end(pw);
}

static int render_irq_untracked(const struct vw_workloads *w, struct vw_prom_writer *pw,
				const char *method, const char *node)
{
	static const char *const map[VW_CPU_IRQ__COUNT] = {
		[VW_CPU_IRQ_CGROUP] = "cgroup",
		[VW_CPU_IRQ_PROCESS] = "process",
	};
	int r = vw_prom_family(pw, &vw_workload_families[F_IRQ_SPANS]);

	for (int k = 0; r == 0 && k < VW_CPU_IRQ__COUNT; k++) {
		const char *v[] = { map[k], method, node, NULL };

		r = vw_prom_counter(pw, v, (double)w->irq_untracked_spans[k]);
	}
	if (r == 0)
		r = vw_prom_family_end(pw);
	if (r == 0)
		r = vw_prom_family(pw, &vw_workload_families[F_IRQ_SECONDS]);
	for (int k = 0; r == 0 && k < VW_CPU_IRQ__COUNT; k++) {
		const char *v[] = { map[k], method, node, NULL };

		r = vw_prom_counter(pw, v, (double)w->irq_untracked_ns[k] / 1e9);
	}
	return r < 0 ? r : vw_prom_family_end(pw);
}

static int render(const struct vw_workloads *w, struct vw_prom_writer *pw, const char *node_name,
		  const char *method, const char *fallback)
{
	struct vw_workloads_totals t = w->totals;
	const char *v[] = { method, node_name, NULL }, *fv[] = { fallback, node_name, NULL };
	int r;

	/* The node's remainders first: a workload family that overflows --metrics.max-bytes is
	 * left out, never these few series. */
	r = render_rest(w, pw, F_UNATTR, t.unattributed, node_name);
	if (r == 0)
		r = render_rest(w, pw, F_UNCONT, t.uncontained, node_name);
	if (r == 0 && w->o.containers)
		r = render_rest(w, pw, F_ENDED, t.ended_containers, node_name);
	if (r == 0 && w->o.containers) {
		const char *nv[] = { node_name, NULL };

		r = vw_prom_single(pw, &vw_workload_families[F_ID_CONFLICTS], nv,
				   (double)w->container_id_conflicts);
	}
	if (r == 0)
		r = vw_prom_single(pw, &vw_workload_families[F_METHOD], v, 1);
	if (r == 0 && fallback && *fallback)
		r = vw_prom_single(pw, &vw_workload_families[F_FALLBACK], fv, 1);
	if (r == 0)
		r = vw_prom_single(pw, &vw_workload_families[F_GHOSTS], v, (double)w->ghosts);
	if (r == 0)
		r = vw_prom_single(pw, &vw_workload_families[F_STALE_SLOTS], v,
				   (double)w->stale_slots);
	if (r == 0)
		r = vw_prom_single(pw, &vw_workload_families[F_RANWALK], v, w->ran_walk_on);
	if (r == 0)
		r = vw_prom_single(pw, &vw_workload_families[F_EXITS_LOST], v,
				   (double)w->exits_lost);
	if (r == 0)
		r = render_untracked(w, pw, method, node_name);
	if (r == 0)
		r = render_irq_untracked(w, pw, method, node_name);
	if (r == 0 && w->o.processes)
		r = vw_wl_render_processes(w, pw, node_name, &vw_workload_families[F_PROC_J],
					   &vw_workload_families[F_PROC_SEC]);
	if (r == 0 && w->o.containers)
		r = render_containers(w, pw, node_name);
	if (r == 0 && w->o.pods)
		r = render_pods(w, pw, node_name);
	if (r == 0 && w->o.vms && !w->o.vms_unexported)
		r = render_vms(w, pw, node_name);
	return r;
}

int vw_workloads_render(const struct vw_workloads *w, struct vw_prom_writer *pw,
			const char *node_name, const char *method, const char *fallback)
{
	int r;

	(void)vw_prom_table_trust(&vw_workload_family_table); /* checked once, not each render */
	if (w->render_plain) /* the reference: the cache neither used nor pruned */
		return render(w, pw, node_name, method, fallback);
	vw_wl_label_cache_begin(w->label_cache);
	r = render(w, pw, node_name, method, fallback);
	vw_wl_label_cache_end(w->label_cache);
	return r;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* The workload registry's tables, shared by workloads.c (accounting; the splits are
 * attribute.c's) and workload_metrics.c with workload_metrics_proc.c (rendering). Not for other
 * modules. */
#pragma once

#include "attribute.h"
#include "fileio.h"
#include "intern.h"
#include "workloads.h"

enum { M_ACTIVE, M_IDLE, M__COUNT };

struct acc {
	uint64_t uj[M__COUNT];       /* cumulative */
	uint64_t interval[M__COUNT]; /* the last interval's share */
};

/* A process's hardware counters: the last snapshot's and the interval's. */
struct wl_proc_hw {
	struct vw_proc_counters last, delta;
};

/* Fields ordered for no padding (112 bytes): a table of 10,000 is 1.1 MiB. What only some
 * processes have is allocated on first use: hardware counters (where the PMU's open: not in
 * most VMs) and GPU energy (GPU users); inline, they were 80 of 176 bytes. */
struct wl_proc {
	uint32_t tgid;
	int container; /* index, -1: none */
	uint64_t start_time;
	char comm[VW_COMM_LEN];
	/* In w->exes (truncated to VW_WL_EXE_MAX - 1 bytes), "" for none (a kernel thread, a link
	 * that could not be read, one that exited before it was read); NULL: not read yet
	 * (vw_wl_proc_exe()). */
	const char *exe;
	uint64_t cgroup_id; /* the cgroup it was last seen in (bpf), 0: unknown */
	int vm;        /* index, -1: none (the VM's QEMU process or one of its vhost threads) */
	bool kernel : 1;
	bool terminated : 1;
	bool seen : 1; /* in the current snapshot */
	/* Terminated, and its PID (reused) ended again since: not shown, leaves at the next
	 * publication (mark_superseded() in workloads.c). */
	bool superseded : 1;
	/* A share went into z[*].interval this interval: only those are cleared at the next (most
	 * processes did not run: clearing them chased every process's z, a cache miss each). */
	bool shared : 1;
	bool ended_now : 1; /* terminated in this interval's update (cleared at the next) */
	uint8_t n_z;
	uint64_t last_cpu_ns, delta_ns, cpu_ns;
	/* This interval's interrupts for others' work (the bpf accountant's): left out of
	 * delta_ns, the split's weight, and in cpu_ns, the kernel's figure that is exported. */
	uint64_t irq_ns;
	uint64_t final_gen; /* generation holding the final value; 0 = not yet published */
	/* Per zone present, at index w->zslot[zone]: a node has 1 to 4 of the 6 zones, so a
	 * process keeps only those (vw_wl_proc_acc). n_z slots; NULL before its first energy. */
	struct acc *z;
	struct wl_proc_hw *hw; /* NULL before a snapshot had counters for it */
	struct acc *gpu;       /* active GPU energy (workload_gpu.c); NULL before any came */
};
_Static_assert(sizeof(struct wl_proc) == 120 || sizeof(void *) != 8, "wl_proc without holes");

struct wl_container {
	char id[VW_CONTAINER_ID_LEN];
	char name[254];
	char pod_uid[VW_POD_UID_LEN]; /* from its cgroup path, "" when none */
	enum vw_runtime runtime;
	int pod; /* index, -1: none */
	unsigned live;
	uint64_t cpu_ns, delta_ns;
	uint64_t irq_ns;    /* as wl_proc.irq_ns: its processes', or cg_irq_ns */
	uint64_t cg_irq_ns; /* left out of cg_delta_ns (the interrupts its tasks suffered) */
	/* Its cgroup in the CPU-accounting hierarchy (malloc'd; NULL: not known) and the kernel's
	 * total for it: cg_delta_ns is this interval's when cg_valid. */
	char *cg_path;
	uint64_t cg_last_ns, cg_delta_ns;
	bool cg_have_last, cg_valid;
	bool cg_kept; /* one of the VW_WL_CG_KEPT whose usage file cg_file keeps open */
	struct vw_kept_file cg_file;
	bool terminated;
	bool overruled; /* its cgroup path replaced this update: its processes placed again */
	uint64_t final_gen;
	struct acc z[VW_ZONE__COUNT];
	struct acc gpu;
};

struct wl_pod {
	struct vw_pod_info info;
	unsigned live;
	bool terminated;
	uint64_t final_gen;
	struct acc z[VW_ZONE__COUNT];
	struct acc gpu;
};

struct wl_vm {
	char uuid[VW_UUID_LEN];
	char name[256];
	char hypervisor[16];
	unsigned vcpus;
	uint32_t qemu_pid;
	uint64_t qemu_start_time;
	bool listed;  /* in the VM sources' last list */
	unsigned live; /* processes seen this interval */
	uint64_t cpu_ns;
	bool terminated;
	uint64_t final_gen;
	bool hidden;            /* terminated and its final value served: no longer exported */
	uint64_t publications_gone; /* kept this long so a VM re-created with its UUID carries on */
	struct acc z[VW_ZONE__COUNT];
	bool has_gpu;   /* a vGPU's share came to it (workload_gpu.c): its guest gets zone gpu */
	struct acc gpu; /* its vGPUs' idle and active GPU energy */
	bool sole;      /* vw_group.sole: its processes are not their container's */
	char (*labels)[VW_GROUP_LABEL_MAX]; /* vw_group.labels, n_group_labels of them; NULL: none */
};

/* Publications a gone VM is remembered for (about an hour at the default 5 s interval). */
#define VW_VM_GRACE_PUBLICATIONS 720

/* Containers whose cgroup's CPU usage file stays open between intervals (a pread each, not an
 * open, two reads and a close): a bound on the descriptors; the others are read afresh. */
#define VW_WL_CG_KEPT 16

/* An executable's path as kept: /proc/PID/exe's first 159 bytes. */
#define VW_WL_EXE_MAX 160

struct vw_workloads {
	struct vw_workloads_opts o;
	bool baseline_taken;
	bool listed; /* the last update merged a snapshot: procs lists every live process */
	bool present[VW_ZONE__COUNT];
	uint64_t dt_ns;
	struct wl_proc *procs;
	size_t n_procs, cap_procs;
	struct vw_intern *exes; /* the processes' executables, one copy each */
	int8_t zslot[VW_ZONE__COUNT]; /* a zone's index in a process's z[], -1 before it is present */
	uint8_t n_zslots;
	bool zslots_short; /* some process may have fewer than n_zslots slots (zone_slots()) */
	bool vms_unmapped; /* the last map_vms() found no VM: every process it saw has vm -1 */
	/* map_vms(): bit (PID % 4,096) set for each QEMU PID it indexed, so that a process whose
	 * PID and adopter are none of them skips the two searches (10,000 processes x 100 VMs:
	 * ~1 M instructions an interval otherwise). */
	uint64_t vm_pid_bits[64];
	struct wl_container *conts;
	size_t n_conts, cap_conts;
	struct wl_pod *pods;
	size_t n_pods, cap_pods;
	struct wl_vm *vms;
	size_t n_vms, cap_vms;
	/* map_vms' index of the listed VMs by QEMU PID, (pid << 32 | VM index) ascending. */
	uint64_t *vm_by_pid;
	size_t cap_vm_by_pid;
	struct vw_workloads_totals totals;
	/* The vm level's families with the group labels after Kepler's (workload_metrics.c);
	 * n_group_labels 0: Kepler's own. */
	size_t n_group_labels;
	const char **vm_label_names, **vm_gpu_label_names;
	struct vw_metric_family vm_fams[4], vm_gpu_fams[4]; /* CPU (zone), GPU (no zone) */
	/* The root cgroup's total: what ran anywhere this interval, for the uncontained rest. */
	struct vw_kept_file root_cg_file; /* the root cgroup's usage file */
	uint64_t root_last_ns, root_delta_ns;
	bool root_have_last, root_valid;
	uint64_t cgroup_rescans; /* walks of the hierarchy for ids not known yet */
	/* A container ID claimed by a second cgroup path, one under a user's own service manager
	 * (user@UID.service: a local user names its cgroups as it likes): those claims refused
	 * or overruled (find_container), said rate-limited. */
	uint64_t container_id_conflicts;
	struct vw_complaint conflict_complaint;
	bool overruled; /* some container's (wl_container.overruled) this update */
	bool rescanned;          /* in this update */
	/* Attribution (attribute.c): its input, filled from the tables each interval, and its
	 * results, reused. */
	struct vw_attr_proc *attr_procs;
	struct vw_attr_counters *attr_counters; /* while snapshots have counters */
	struct vw_attr_container *attr_conts;
	uint64_t *attr_reserve; /* pods' then VMs' */
	size_t cap_attr_procs, cap_attr_counters, cap_attr_conts, cap_attr_reserve;
	struct vw_attribution attr;
	unsigned hw_available; /* of the last snapshot */
	uint64_t ghosts;       /* the accountant's ghost check's count (vw_cpu_snapshot.ghosts) */
	uint64_t stale_slots;  /* vw_cpu_snapshot.stale_slots */
	bool ran_walk_on;      /* the last snapshot's vw_cpu_snapshot.ran_walk_on */

	uint64_t exits_lost;   /* vw_cpu_snapshot.exits_lost */
	uint64_t exits_untracked[VW_CPU_UNTRACKED__COUNT]; /* vw_cpu_snapshot.exits_untracked */
	uint64_t irq_untracked_spans[VW_CPU_IRQ__COUNT]; /* vw_cpu_snapshot.irq_untracked_* */
	uint64_t irq_untracked_ns[VW_CPU_IRQ__COUNT];
	uint64_t evictions[VW_TABLE__COUNT]; /* process, container, pod, vm (workload_retention.c) */
	struct vw_wl_retention *retention;   /* its scratch, kept between publications */
	/* GPU energy (workload_gpu.c): whether any came, where it went (cumulative µJ). */
	bool gpu_present;
	uint64_t gpu_uncontained_uj, gpu_unattributed_uj;
	uint64_t gpu_ended_containers_uj; /* active GPU energy of containers no longer exported */
	uint64_t gpu_idle_unreserved_uj; /* idle GPU energy no pod's nvidia.com/gpu reserved */
	/* The shown processes' escaped labels, kept between renders (workload_labels.c; NULL: no
	 * memory, each render escapes them). */
	struct vw_wl_label_cache *label_cache;
	/* Tests: render every sample's labels escaped anew, no piece, tail or cache (the
	 * straightforward rendering the others must match byte for byte). */
	bool render_plain;
};

/* A workload series' label values, NULL-terminated (a process's pid's text kept in pid). */
struct wl_labels {
	char pid[16];
	const char *v[10 + VW_GROUP_MAX_LABELS];
	/* The first labels escaped already (prom.h), or NULL: vw_wl_render_level() sets it NULL
	 * before each item. */
	const struct vw_prom_piece *piece;
	const struct vw_prom_piece *tail; /* the last ones (prom.h), or NULL, as piece */
};
#define VW_WL_LABELS(l, ...)                                                                       \
	memcpy((l)->v, (const char *[]){ __VA_ARGS__, NULL },                                      \
	       sizeof((const char *[]){ __VA_ARGS__, NULL }))
/* The process level's Kepler label names (workload_metrics.c's family table), NULL-terminated:
 * pid, comm, exe, type, state, container_id, vm_id, zone, node_name; and its cpu-seconds family's,
 * those less state and zone. workload_metrics_proc.c escapes its pieces with them. */
extern const char *const vw_wl_l_proc[10];
extern const char *const vw_wl_l_proc_sec[8];
/* A process's Kepler label values: pid, comm, exe, type, state, container_id, vm_id, zone (none
 * where zone is NULL), node_name (workload_metrics_proc.c). */
void vw_wl_proc_labels(const struct vw_workloads *w, struct wl_proc *p, const char *node,
		       const char *zone, struct wl_labels *l);
/* A process's executable, /proc/PID/exe read at the first call since it started or exec'd
 * (vw_wl_proc_exe_read(), workloads.c; inline: a render asks for it in every sample). */
const char *vw_wl_proc_exe_read(const struct vw_workloads *w, struct wl_proc *p);
static inline const char *vw_wl_proc_exe(const struct vw_workloads *w, struct wl_proc *p)
{
	return p->exe ? p->exe : vw_wl_proc_exe_read(w, p);
}
const char *vw_wl_state_name(bool terminated);
/* The retention pass's scratch (workload_retention.c), freed with the registry. */
void vw_wl_retention_free(struct vw_workloads *w); /* "terminated" or "running" */
/* The vm level's families (labels: Kepler's, then opts.group_labels): 0, -ENOMEM, -EINVAL (too
 * many group labels). */
int vw_wl_vm_families(struct vw_workloads *w);
/* The vm level's four GPU families, Kepler-style labels (workload_gpu.c). */
const struct vw_metric_family *vw_wl_gpu_vm_families(void);
void vw_wl_vm_families_free(struct vw_workloads *w);
/* Whether process p's energy is its container's: it has one, and no sole group owns p. */
static inline bool vw_wl_in_container(const struct vw_workloads *w, const struct wl_proc *p)
{
	return p->container >= 0 && !(p->vm >= 0 && w->vms[p->vm].sole);
}
/* A process's accumulator for zone z: all zeros where it has had no energy there. */
const struct acc *vw_wl_proc_acc(const struct vw_workloads *w, const struct wl_proc *p, int z);
/* A container's pod_id label: its pod's UID, "" for none. */
const char *vw_wl_cont_pod(const struct vw_workloads *w, const struct wl_container *c);
/* Close a container's kept cgroup usage file (sample_cgroups() counts the slots again). */
void vw_wl_cont_unkeep(struct wl_container *c);

/* A level's families, in this order from its first: active joules and watts, idle joules and
 * watts (the ones it has). */
enum { VW_WL_ACTIVE_J, VW_WL_ACTIVE_W, VW_WL_IDLE_J, VW_WL_IDLE_W };
/* Item i of a level: its label values for zone z (-1: the level's families have no zone) into l,
 * and the accumulator shown, or NULL where the item is not shown. */
typedef const struct acc *(*vw_wl_item_fn)(const struct vw_workloads *w, const void *ctx,
					    size_t i, int z, const char *node,
					    struct wl_labels *l);
/* A CPU level's zone label for zone z (its items give their zone z's accumulator). */
static inline const char *vw_wl_zone(int z)
{
	return vw_zone_name((enum vw_zone)z);
}
/* The level's families fams[0..n), each a sample per item shown (and, with zones, per zone
 * present). */
int vw_wl_render_level(const struct vw_workloads *w, struct vw_prom_writer *pw, const char *node,
		       const struct vw_metric_family *fams, int n, bool zones, size_t n_items,
		       vw_wl_item_fn item, const void *ctx);
/* The processes to export into order[0..*ret_n) (indices into w->procs): all of them, or the
 * --metrics.process-top-n with the most energy(p); with skip_zero, none with energy(p) == 0.
 * All of them come in index order, a top N cut from more best first. order has room for
 * w->n_procs, or for min(n_procs, process_top_n) where that is set. -ENOMEM. */
int vw_wl_top_procs(const struct vw_workloads *w, uint64_t (*energy)(const struct wl_proc *),
		    bool skip_zero, size_t *order, size_t *ret_n);
/* The process level (workload_metrics_proc.c): the top N processes' series in energy (active
 * joules and watts, idle joules: three families in order) and in seconds (cpu seconds), their
 * labels escaped once a render (the label cache's pieces) unless w->render_plain. 0, -ENOMEM or
 * the writer's error. */
int vw_wl_render_processes(const struct vw_workloads *w, struct vw_prom_writer *pw,
			   const char *node, const struct vw_metric_family *energy,
			   const struct vw_metric_family *seconds);
/* The label cache (workload_labels.c): processes' first labels escaped, kept between renders
 * for the processes shown again, by PID and start time. */
#define VW_WL_LABEL_CACHE_SLOTS 128
struct vw_wl_label_cache *vw_wl_label_cache_new(void);
void vw_wl_label_cache_free(struct vw_wl_label_cache *c);
/* A render begins: every entry unused in it so far. */
void vw_wl_label_cache_begin(struct vw_wl_label_cache *c);
/* The head piece (labels[0..n) escaped, vw_prom_piece_set()) for process p's values: the kept
 * one where it was made from these very values, else made again; NULL (c NULL, no memory, too
 * many processes or too long) where the caller escapes them itself. Valid until _end(). */
const struct vw_prom_piece *vw_wl_label_cache_piece(struct vw_wl_label_cache *c,
						    const struct wl_proc *p,
						    const char *const *labels, size_t n,
						    const char *const *values);
/* The render is over: the entries it did not use are dropped. */
void vw_wl_label_cache_end(struct vw_wl_label_cache *c);

/* The live entry for tgid in the table's sorted first `sorted` entries, NULL when none. */
struct wl_proc *vw_wl_lookup_live(struct vw_workloads *w, uint32_t tgid, size_t sorted);


/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The workload registry: processes, containers and pods, their CPU time and their share of each
 * interval's node energy per zone (active by CPU-time share, idle by reservation: computed by
 * attribute.h's vw_attribute() from what the registry knows; see docs/attribution.md).
 * Parents are exact sums of their children; what no workload takes is kept as an explicit
 * unattributed remainder, so for every zone and mode:
 *   node = sum(containers) + uncontained processes + unattributed
 * (a sole group's processes, vw_group.sole, count as uncontained: their container has them not).
 * Terminated workloads stay until one scrape has seen their final value.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "attribute.h" /* struct vw_zone_energy */
#include "cpu_account.h"
#include "ctrmeta.h"
#include "log.h"
#include "macro.h"
#include "prom.h"
#include "selfstats.h"
#include "cgroup_path.h"
#include "zone.h"

struct vw_workloads;

struct vw_workloads_opts {
	int procfs_fd;            /* for /proc/PID/{cgroup,stat,exe} */
	struct vw_podmeta *podmeta; /* NULL: no pod metadata */
	/* The CPU-accounting cgroup hierarchy: processes are placed by the cgroup they ran in
	 * (ids from the bpf accountant, else /proc/PID/cgroup) and containers' CPU time is the
	 * kernel's total for their cgroup, exited tasks included. NULL: containers are the sums
	 * of the processes seen alive. Owned by the caller. */
	struct vw_cgroupfs *cgroupfs;
	struct vw_ctrmeta *ctrmeta; /* names outside Kubernetes (NULL: none) */
	unsigned host_cpus;       /* idle capacity = host_cpus x 1000 millicores */
	bool processes;           /* export process series */
	unsigned process_top_n;   /* at most this many process series (0: no limit) */
	bool containers, pods;    /* export container / pod series */
	bool vms;                 /* account VMs (reservation groups, below) and export them */
	bool vms_unexported;      /* ... but without their series (VMs accounted for passthrough
				   * while --metrics lacks vm) */
	/* A process that works for a group's leader without being its child or thread, named by
	 * its comm (a host's vhost-<QEMU PID> kernel threads): the leader's PID, 0 for none.
	 * NULL: no such processes. */
	uint32_t (*adopted_by)(const char *comm);
	/* Labels the vm level's families carry after Kepler's (NULL-terminated names, valid
	 * Prometheus label names none of Kepler's; each group gives its values, vw_group.labels):
	 * NULL or empty for Kepler's label sets alone. At most VW_GROUP_MAX_LABELS; owned by the
	 * caller, kept for the registry's life. */
	const char *const *group_labels;
	/* Terminated workloads kept per level (process, container, pod, VM) awaiting a scrape;
	 * beyond it the oldest are evicted unserved (workload_retention.c). 0: the default. */
	unsigned max_terminated;
};

#define VW_WORKLOADS_DEFAULT_MAX_TERMINATED 500

struct vw_workloads *vw_workloads_new(const struct vw_workloads_opts *opts);
/* The CPU-accounting cgroup hierarchy under the sysfs root for vw_workloads_opts.cgroupfs,
 * walked once; NULL (logged once) where there is none. */
struct vw_cgroupfs *vw_workloads_cgroupfs(int sysfs_fd);
void vw_workloads_free(struct vw_workloads *w);

/*
 * One interval: the accountant's cumulative snapshot and the node's energy per zone. The first
 * call only takes the baseline (no energy moves: the CPU time before it is not this interval's).
 * snap NULL: the accountant could not be read; the interval's energy stays unattributed.
 */
int vw_workloads_update(struct vw_workloads *w, const struct vw_cpu_snapshot *snap,
			const struct vw_zone_energy zones[VW_ZONE__COUNT], uint64_t dt_ns);
/*
 * Read the accountant and run one update (a failed read leaves the interval unattributed);
 * failures are logged through `complaint`.
 */
int vw_workloads_interval(struct vw_workloads *w, const struct vw_cpu_accountant *cpu,
			  const struct vw_zone_energy zones[VW_ZONE__COUNT], uint64_t dt_ns,
			  struct vw_complaint *complaint);

/* After publishing generation `gen`: terminated workloads whose final value it holds are
 * dropped once a scrape has served a generation >= theirs, or evicted (oldest first) when
 * more than max_terminated per level await a scrape (workload_retention.c). */
void vw_workloads_published(struct vw_workloads *w, uint64_t gen, uint64_t served_gen);

/* method: the accountant's name; fallback: why bpf is not it when it was expected (the reason
 * label of virtwatt_cpu_accounting_fallback), NULL or "" for none. */
int vw_workloads_render(const struct vw_workloads *w, struct vw_prom_writer *pw,
			const char *node_name, const char *method, const char *fallback);

/* Totals for checks: node-level sums per zone and mode (0 active, 1 idle). */
/*
 * Reservation groups: processes that together reserve host CPUs and are exported as one owner
 * (the vm level). The caller fills them (virtwatt-host makes one of each VM, its VMM process the
 * leader); the engine knows nothing else of them. Keyed by id, so a group whose leader changes
 * (a VM restarted, a new QEMU PID) keeps its counters; one missing from the list is terminated.
 * Call before each update.
 */
#define VW_GROUP_MAX_LABELS 12
#define VW_GROUP_LABEL_MAX 256
struct vw_group {
	char id[VW_UUID_LEN]; /* unique and stable (a VM's UUID); "" is skipped */
	char name[256];           /* may be "" */
	char kind[16];            /* the vm level's "hypervisor" label */
	unsigned reserved_cpus;   /* its share of idle: this many host CPUs (a VM's vCPUs) */
	uint32_t leader_pid;      /* the process that is the group (TGID); 0: none known */
	uint64_t leader_start_time; /* /proc/PID/stat starttime (PID reuse); 0: not checked */
	/* Its processes are the group's alone: their energy is not also their container's and
	 * pod's (it counts as uncontained there), and their process series name no container
	 * (a KubeVirt VM's QEMU in its virt-launcher pod). Else a group's process in a container
	 * is both the group's and the container's (two views). */
	bool sole;
	/* Values of the vw_workloads_opts.group_labels, in order. */
	char labels[VW_GROUP_MAX_LABELS][VW_GROUP_LABEL_MAX];
};
int vw_workloads_set_groups(struct vw_workloads *w, const struct vw_group *groups, size_t n);

/* Each listed group's idle and active energy per zone over the latest interval (a VM's, for
 * its guest's publisher, which adds them up), its cumulative energy and CPU time (for the
 * host's training). */
struct vw_group_energy {
	char id[VW_UUID_LEN];
	char name[256];
	uint64_t cpu_ns;
	size_t n_zones;
	struct vw_zone_owner_energy zones[VW_ZONE__WIRE_COUNT]; /* zone gpu: its vGPUs' */
	uint64_t total_uj[VW_ZONE__WIRE_COUNT]; /* zones[k]'s idle + active since first seen */
};
/* Fills at most max entries of out; returns how many. */
size_t vw_workloads_group_energy(const struct vw_workloads *w, struct vw_group_energy *out,
				 size_t max);

struct vw_workloads_totals {
	uint64_t containers[VW_ZONE__COUNT][2];
	/* Of containers: what those no longer exported held (ended and dropped once served, or
	 * evicted): exported, so that every scrape adds up to the node. */
	uint64_t ended_containers[VW_ZONE__COUNT][2];
	uint64_t pods[VW_ZONE__COUNT][2];
	uint64_t uncontained[VW_ZONE__COUNT][2];
	uint64_t unattributed[VW_ZONE__COUNT][2];
	uint64_t processes[VW_ZONE__COUNT][2]; /* live and remembered processes */
	uint64_t vms[VW_ZONE__COUNT][2];
};
void vw_workloads_totals(const struct vw_workloads *w, struct vw_workloads_totals *ret);
size_t vw_workloads_n_processes(const struct vw_workloads *w);
/*
 * Every live process as the last update's CPU snapshot listed it, in PID order: its PID, start
 * time (clock ticks since boot, /proc/PID/stat's), current comm and exe(at), its executable
 * (NULL for a kernel thread, "" where /proc/PID/exe could not be read), read at the first ask
 * since it started or exec'd and kept (valid during the call only). -EAGAIN when the last
 * update had no snapshot (none yet, or the accountant failed): the list would be stale.
 */
int vw_workloads_each_process(struct vw_workloads *w,
			      void (*each)(void *ctx, uint32_t tgid, uint64_t start_time,
					   const char *comm, const char *(*exe)(void *at),
					   void *at),
			      void *ctx);
/* How many VMs vw_workloads_group_energy() gives now: those of the latest list, not the gone ones
 * the registry remembers (a buffer sized to those grew with every VM ever destroyed). */
size_t vw_workloads_n_groups(const struct vw_workloads *w);
/* Entries and evictions of the process, container, pod and VM tables (the others untouched). */
void vw_workloads_table_stats(const struct vw_workloads *w,
			      struct vw_table_stat tables[VW_TABLE__COUNT]);

/*
 * One interval's GPU energy (workload_gpu.c; the shares are attribute_gpu.h's): the VMs' vGPU
 * shares (groups; entries for a VM not listed, or "" ids, are not taken; a VM named twice
 * takes both), then each process's active share (pids, shared/gpu/gpu.h's per-PID shares, in
 * their order) to the processes this registry knows, their containers and pods, then the idle
 * to the live pods by their nvidia.com/gpu requests out of the devices; what no one took of
 * the devices' energy is the node's. Call after each update, while GPUs are read.
 */
struct vw_gpu_pid_energy;
struct vw_gpu_attr_device;
struct vw_group_gpu {
	char id[VW_UUID_LEN];
	uint64_t idle_uj, active_uj;
};
struct vw_workloads_gpu_in {
	const struct vw_gpu_pid_energy *pids;
	size_t n_pids;
	const struct vw_group_gpu *groups;
	size_t n_groups;
	const struct vw_gpu_attr_device *devices; /* each GPU's idle and active energy */
	size_t n_devices;
};
int vw_workloads_gpu(struct vw_workloads *w, const struct vw_workloads_gpu_in *in);
/* kepler_{process,container,pod}_gpu_* and the node's GPU remainders; nothing before the first
 * vw_workloads_gpu(). */
int vw_workloads_render_gpu(const struct vw_workloads *w, struct vw_prom_writer *pw,
			    const char *node_name);
extern const struct vw_family_table vw_workload_gpu_family_table;

extern const struct vw_metric_family vw_workload_families[];
extern const struct vw_family_table vw_workload_family_table;

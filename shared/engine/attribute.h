/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Attribution: one interval's node energy, per zone, shared among processes, containers, pods
 * and VMs (docs/attribution.md). A pure function of its input: per-process usage (the keys),
 * memberships (process -> container -> pod, process -> VM), reservations and the zones'
 * energies in; every owner's share (the processes' through a callback) and the node's
 * remainders out. No I/O, no globals, no registry: the workload registry (workloads.c) fills
 * the input from its tables and adds the shares to its counters. Exact to the µJ, for every
 * zone and mode:
 *   node = sum(containers) + uncontained + unattributed (a sole process is uncontained),
 *   container = its processes + its own part, pod = its containers, VM = its processes.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zone.h"

enum vw_attr_mode { VW_ATTR_ACTIVE, VW_ATTR_IDLE, VW_ATTR__MODES };

/* Per zone kind, the interval's node energy split (sockets summed). */
struct vw_zone_energy {
	bool present;
	uint64_t active_uj, idle_uj;
	bool idle_to_node; /* the idle is not the workloads' to share (a guest's estimate of a host
			    * idle share it cannot know): it all stays unattributed */
};

/* A process's usage in the interval and where it belongs (24 bytes: one for each of 10,000). */
struct vw_attr_proc {
	uint64_t cpu_ns;   /* CPU time: the key of every zone without a counter */
	int32_t container; /* index into conts, -1: in none */
	int32_t vm;        /* index into the VMs, -1: in none */
	bool live;         /* not terminated: shares its group's idle equally when none ran */
	bool sole;         /* its VM's alone: weighed in its container, but its shares count as
			    * uncontained, not its container's (a KubeVirt VM's QEMU) */
};

/* A process's hardware counts in the interval, where the snapshot has them. */
struct vw_attr_counters {
	uint64_t instructions; /* package and core's key where hw_available has them */
	uint64_t cache_misses; /* dram's key where hw_available has them */
};

struct vw_attr_container {
	int32_t pod;     /* index into the pods, -1: in none */
	bool live;       /* a process of it lives or ran, or its cgroup ran: shares its pod's idle
			  * equally when none of the pod's containers ran */
	bool cg_valid;   /* cg_ns is the kernel's total for its cgroup in the interval */
	uint64_t cg_ns;  /* (CPU-time keys only: a cgroup counts no instructions) */
};

struct vw_attr_in {
	const struct vw_attr_proc *procs; /* in a stable order (by PID): it breaks rounding ties */
	size_t n_procs;
	const struct vw_attr_container *conts;
	size_t n_conts;
	/* What each pod and VM reserves of the host this interval, in millicores (a live pod's
	 * CPU requests, a live VM's vCPUs x 1000; 0: nothing), of capacity_millis (host CPUs x
	 * 1000). A VM's reservation takes its processes in no pod (a KubeVirt VM's QEMU is in a
	 * pod: it reserves through the pod, once); a VM with none there reserves nothing. */
	const uint64_t *pod_millis;
	size_t n_pods;
	const uint64_t *vm_millis;
	size_t n_vms;
	uint64_t capacity_millis;
	/* The root cgroup's total in the interval (what ran anywhere), when root_valid. */
	bool root_valid;
	uint64_t root_ns;
	/* Each process's counters ([n_procs]) and which of them count (VW_HW_BIT()s,
	 * perf_counters.h); NULL: none, every zone by CPU time. */
	const struct vw_attr_counters *counters;
	unsigned hw_available;
	struct vw_zone_energy zones[VW_ZONE__COUNT];
};

/* An owner's share of the interval, per zone and mode, in µJ. */
struct vw_attr_share {
	uint64_t uj[VW_ZONE__COUNT][VW_ATTR__MODES];
};

/* A process's share of zone z in mode m, as it is made (several for one process, zone and mode
 * add up). */
typedef void (*vw_attr_proc_fn)(void *ctx, size_t proc, enum vw_zone z, enum vw_attr_mode m,
				uint64_t uj);

/* The last vw_attribute()'s group shares, and the memory it reuses. Zero-initialise it. */
struct vw_attribution {
	struct vw_attr_share *conts, *pods, *vms; /* [n] of the input */
	/* Processes in no container and what the root cgroup ran beyond everything seen. */
	uint64_t uncontained[VW_ZONE__COUNT][VW_ATTR__MODES];
	/* What no one took: nothing ran, idle no one reserved, idle kept by the node. */
	uint64_t unattributed[VW_ZONE__COUNT][VW_ATTR__MODES];
	struct vw_attr_scratch *s; /* reused memory (attribute.c) */
};

/*
 * Share the interval's energy of every zone present: active by usage (containers by their
 * cgroups' totals where valid, then their processes), idle by reservation (pods and VMs, then
 * their containers and processes by usage), or by usage when nothing is reserved. The groups'
 * shares replace the last call's in *a; the processes' (there may be 10,000: none is kept) go to
 * proc(ctx, ...) as they are made. -EINVAL for an index out of range, -ENOMEM; on an error
 * nothing was given.
 */
int vw_attribute(struct vw_attribution *a, const struct vw_attr_in *in, vw_attr_proc_fn proc,
		 void *ctx);
void vw_attribution_release(struct vw_attribution *a); /* its memory; zeroed again after */

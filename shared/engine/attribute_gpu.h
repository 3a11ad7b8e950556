/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GPU attribution: one interval's GPU energy, every device's, shared among VMs (their vGPUs),
 * processes, containers and pods (docs/gpu.md). A pure function of its input, beside the CPU's
 * (attribute.h): each device's idle and active energy, the VMs' vGPU shares, the processes'
 * per-PID active shares with their memberships (process -> container -> pod) and the pods'
 * nvidia.com/gpu requests in; every owner's share and the node's remainders out. No I/O, no
 * globals, no registry: the workload registry (workload_gpu.c) resolves PIDs and VM ids to its
 * entries, fills the input and adds the shares to its counters. Exact to the µJ:
 *   node active = sum(uses) + sum(VMs' active) + unattributed,
 *   sum(uses) = sum(containers) + uncontained, pod = its containers,
 *   node idle = sum(pods' idle) + sum(VMs' idle) + unreserved,
 * as long as the vGPUs' shares are within the devices' energy (they are their split of it).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

/* A device's energy in the interval. */
struct vw_gpu_attr_device {
	uint64_t idle_uj, active_uj;
};

/* A VM's vGPUs' shares of the devices' idle and active energy (the devices' own split). */
struct vw_gpu_attr_vgpu {
	int32_t vm; /* index into the VMs, -1: a VM not known (its share stays the node's) */
	uint64_t idle_uj, active_uj;
};

/* A process's active GPU energy in the interval (the driver's per-PID share, every device's
 * summed), in the driver's order: it is taken in that order while the node's active lasts. */
struct vw_gpu_attr_use {
	uint64_t active_uj;
	bool known;        /* a process the registry knows; false: the node's (unattributed) */
	int32_t container; /* index into the containers, -1: in none, or its VM's alone (a KubeVirt
			    * VM's QEMU): uncontained */
};

struct vw_gpu_attr_in {
	const struct vw_gpu_attr_device *devices; /* their number: the node's GPUs */
	size_t n_devices;
	const struct vw_gpu_attr_vgpu *vgpus;
	size_t n_vgpus;
	const struct vw_gpu_attr_use *uses;
	size_t n_uses;
	const int32_t *cont_pod; /* [n_conts]: each container's pod, -1: in none */
	size_t n_conts;
	const uint64_t *pod_gpus; /* [n_pods]: GPUs each pod reserves (a live pod's nvidia.com/gpu
				   * requests, 0: none) of n_devices */
	size_t n_pods;
	size_t n_vms;
};

/* The last vw_attribute_gpu()'s shares in µJ, and the memory it reuses. Zero-initialise it. */
struct vw_gpu_attribution {
	uint64_t *uses;                  /* [n_uses]: each use's active share (its process's) */
	uint64_t *cont_active;           /* [n_conts] */
	uint64_t *pod_active, *pod_idle; /* [n_pods] */
	uint64_t *vm_active, *vm_idle;   /* [n_vms] */
	uint64_t uncontained;  /* active of known processes in no container */
	uint64_t unattributed; /* active no one took: unknown PIDs, what no share listed */
	uint64_t unreserved;   /* idle no pod's request or VM's vGPU reserved */
	size_t cap_uses, cap_conts, cap_pods, cap_vms;
};

/*
 * Share the interval's GPU energy: first the VMs known take their vGPUs' idle and active
 * shares; of the active left, each known process its share in order (cut to what is left), to
 * its container and pod, or the uncontained; the rest unattributed. Of the idle left, the pods
 * by their requests out of n_devices GPUs (vw_ratio_split_idle: over-commit normalised by the
 * requests); the rest unreserved. The shares replace the last call's in *a. -EINVAL for an
 * index out of range, -ENOMEM; on an error nothing was given.
 */
int vw_attribute_gpu(struct vw_gpu_attribution *a, const struct vw_gpu_attr_in *in);
void vw_gpu_attribution_release(struct vw_gpu_attribution *a); /* zeroed again after */

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One GPU's processes and vGPUs over an interval (gpu.c's, not for other modules): what each
 * sample tick saw of them is summed, and at the interval's close the device's active energy is
 * shared out among them all by SM utilization (gpu_share.h: a vGPU is one more consumer, its
 * VM's work as a whole), and its idle energy among the vGPUs by reservation (each holds the
 * share of the device its type reserves, for the ticks it was listed; the unreserved rest is
 * the node's). The shares stay until the next close.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "gpu.h"
#include "gpu_share.h"
#include "gpu_source.h"


struct vw_gpu_vgpu_use {
	struct vw_gpu_vgpu_sample id; /* as last listed (sm_util, sampled: that tick's) */
	uint64_t sm_sum;              /* SM utilization (percent) summed over the samples */
	uint64_t ticks;               /* ticks it was listed in */
};

/* Intervals a process's last sampled SM rate stands in for samples the driver did not give. */
#define VW_GPU_CARRY_INTERVALS 4

struct vw_gpu_sm_rate {
	uint32_t pid;
	uint64_t milli_per_tick; /* SM percent summed over its samples, per tick listed, x 1000 */
};

struct vw_gpu_procs {
	struct vw_gpu_proc_use use[VW_GPU_MAX_TRACKED]; /* this interval's */
	size_t n_use;
	/* The processes' SM rates in the last interval that had samples, and how many intervals
	 * since have had none (kept across vw_gpu_procs_reset). */
	struct vw_gpu_sm_rate rate[VW_GPU_MAX_TRACKED];
	size_t n_rate;
	unsigned rate_age;
	uint64_t ticks;        /* processes() calls this interval */
	uint64_t prev_ticks;   /* ... in the last closed one */
	uint64_t since_sample; /* calls since the last that brought a sample (kept across closes) */
	struct vw_gpu_pid_energy last[VW_GPU_MAX_TRACKED]; /* the last closed interval's shares */
	size_t n_last;
	uint64_t dropped;
	struct vw_gpu_vgpu_use vuse[VW_GPU_MAX_VGPUS]; /* this interval's vGPUs */
	size_t n_vuse;
	uint64_t vticks; /* vgpus() calls this interval */
	struct vw_gpu_vgpu_energy vlast[VW_GPU_MAX_VGPUS]; /* the last closed interval's */
	size_t n_vlast;
};

/*
 * One tick's processes (a processes() call's). NVML gives each process its utilization
 * averaged since the newest sample the previous call returned: where the driver samples less
 * often than the ticks, a value that comes after calls that brought none stands for them too.
 * So each sample counts for the ticks since the last call that brought one (as far back as
 * the last interval's first): the samples' sums are then SM percent times ticks, on the scale
 * of the device's utilization summed over the ticks (busy_sum), whatever the driver's period.
 */
void vw_gpu_procs_add(struct vw_gpu_procs *p, const struct vw_gpu_proc_sample *s, size_t n);
/* One tick's vGPUs (a vgpus() call's). */
void vw_gpu_procs_add_vgpus(struct vw_gpu_procs *p, const struct vw_gpu_vgpu_sample *s,
			    size_t n);
/* Forget this interval's ticks (the baseline sample: what it saw was before the interval). */
void vw_gpu_procs_reset(struct vw_gpu_procs *p);
/*
 * Close the interval: share active_uj (busy_sum: the device's utilization percent summed over
 * the ticks, 0 unknown) among processes and vGPUs, idle_uj among the vGPUs' reservations, and
 * start the next. Returns what no process or vGPU took of active_uj.
 *
 * An interval in which the driver gave no utilization sample at all, for any process or vGPU,
 * while processes were listed (a driver that samples less often than the interval, or whose
 * sample fell just after it) takes, for each listed process sampled in the last interval that
 * had samples, that interval's SM rate times the ticks it is listed now as its samples, for at
 * most VW_GPU_CARRY_INTERVALS such intervals in a row; others are unsampled as ever. Without
 * this, such an interval split by listing time: evenly between two processes that run the
 * whole interval whatever their SM use.
 */
uint64_t vw_gpu_procs_close(struct vw_gpu_procs *p, uint64_t active_uj, uint64_t idle_uj,
			    uint64_t busy_sum);

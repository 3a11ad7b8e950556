/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One GPU's processes over an interval (gpu.c's, not for other modules): what each sample tick
 * saw of them is summed, and at the interval's close the device's active energy is shared out
 * (gpu_share.h); the shares stay until the next close.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "gpu.h"
#include "gpu_share.h"
#include "gpu_source.h"


struct vw_gpu_procs {
	struct vw_gpu_proc_use use[VW_GPU_MAX_TRACKED]; /* this interval's */
	size_t n_use;
	struct vw_gpu_pid_energy last[VW_GPU_MAX_TRACKED]; /* the last closed interval's shares */
	size_t n_last;
	uint64_t dropped;
};

/* One tick's processes (a processes() call's). */
void vw_gpu_procs_add(struct vw_gpu_procs *p, const struct vw_gpu_proc_sample *s, size_t n);
/* Close the interval: share active_uj (busy_sum: the device's utilization percent summed over
 * the ticks, 0 unknown) and start the next. Returns what no process took. */
uint64_t vw_gpu_procs_close(struct vw_gpu_procs *p, uint64_t active_uj, uint64_t busy_sum);

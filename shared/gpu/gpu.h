/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The node's GPUs: every GPU source that finds devices (gpu_source.h), each device's energy as
 * a monotonic µJ counter, and each interval's split into idle and active energy.
 *
 *   energy    the device's own counter where it has one (NVML: mJ since the driver loaded),
 *             under the same rules as RAPL's (energy.h): a counter that goes back (a driver
 *             reload, a GPU reset) or cannot be read with certainty is a gap, counted, never
 *             negative or invented energy; else its power integrated (integrator.h: exact
 *             µW x ns), read on a timeline of its own: a thread of the set's own (ticker.h)
 *             reads every such device's power every VW_GAUGE_TICK_NS (one library call each),
 *             stamped vw_now_ns(), and each sample reads it once more at its own time, each
 *             reading counted from its time to the next's, so a late sample does not spread
 *             its reading over its whole wait; a failed reading's span is not made up, and is
 *             a gap (counted in the view's gaps when a good reading ends it);
 *   idle      --gpu.idle-watts where set, else the lowest power the device sustained at low
 *             utilization over a sliding window of intervals (idle_floor.h), else (before the
 *             first sustained run) the residual (1 - utilization) x energy, which is all idle
 *             for a device that reports no utilization;
 *   interval  from one close to the next, ending at the last sample: idle + active == energy,
 *             and each device's idle and active totals add up to its energy total exactly;
 *   processes where the source lists them (NVML: running compute processes, utilization
 *             samples), each tick's are summed and at the close the device's active energy is
 *             shared out by SM utilization (gpu_share.h) for the workload registry.
 *
 * No source, no device: -ENODEV from vw_gpus_open, said once; a daemon then has no GPU series
 * and nothing else changes (with opts.retry, the daemons': an empty set that looks again).
 * Devices come and go (keyed by UUID, looked at each close: VW_GPU_RETRY_*): a new one is read
 * from its first reading as a baseline, a gone one is not read and keeps its series, one back
 * (or read again after -ENODEV: a GPU lost, the driver gone) is read from a new baseline, the
 * span between one gap. Sampling and closing run on the daemon's sampling thread only; the
 * reading thread touches only the power-only devices' integrals, under its lock, and is stopped
 * while the devices change.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpu_source.h"
#include "idle.h"

#include "prom.h"

/* An idle interval's utilization is at most this, and `sustain` of them make a level. */
#define VW_GPU_IDLE_MAX_UTIL 0.10
#define VW_GPU_IDLE_SUSTAIN 3
/*
 * The most power one device is believed to draw (the largest boards draw ~1.2 kW; 8x that): a
 * counter that gains more than this over the time since its last reading (a jump of 1e15 mJ, a
 * bit flip) and a power reading above it (NVML's unsigned mW reaches 4.3 MW) are not energy
 * but a gap, counted in virtwatt_node_gpu_energy_gaps_total and said at warn.
 */
#define VW_GPU_MAX_POWER_UW (10000ULL * 1000 * 1000)
/*
 * A counter that stays still this long while every power reading of the device says at least
 * VW_GPU_STILL_MIN_UW (50 J it should have counted) is stuck: one gap per such stretch,
 * counted in virtwatt_node_gpu_energy_gaps_total and said at warn, so energy it fails to count
 * is not lost silently (should it catch up later, that gain is counted as any other).
 */
#define VW_GPU_STILL_NS (5ULL * 1000 * 1000 * 1000)
#define VW_GPU_STILL_MIN_UW (10ULL * 1000 * 1000)

struct vw_gpu_opts {
	const char *nvml_library; /* NULL or "": libnvidia-ml.so.1 from the loader's path */
	double idle_w;            /* > 0: every device's idle power; 0: found (idle_floor.h) */
	size_t idle_window;       /* intervals the baseline is sought over */
	/* the sources to probe, NULL-terminated (NULL: vw_gpu_sources); tests pass their own */
	const struct vw_gpu_source_ops *const *sources;
	/* Tests only: no reading thread; the test calls vw_gpus_tick() where it would, on its own
	 * clock. */
	bool manual_ticks;
	/* No source found at open: an empty set (0, said once) that looks again at each close,
	 * with back-off (a driver loaded after the daemon), instead of -ENODEV. */
	bool retry;
};

/*
 * Devices that come and go: at each close the sources' lists are looked at (NVML: the count
 * and a handle per index) and listed again where they changed; a session that broke (a read
 * said -ENODEV: a GPU lost, the driver gone; or the list could not be read), or a start that
 * found nothing (retry), is tried again after VW_GPU_RETRY_MIN_NS, doubling up to
 * VW_GPU_RETRY_MAX_NS while it stays so.
 */
#define VW_GPU_RETRY_MIN_NS (10ULL * 1000 * 1000 * 1000)
#define VW_GPU_RETRY_MAX_NS (300ULL * 1000 * 1000 * 1000)

struct vw_gpus;

/* Open every source that finds devices. -ENODEV (said once, at info) when none does (with
 * o->retry: 0 and an empty set that looks again); other -errno (EINVAL for bad opts, ENOMEM)
 * on failure. Devices found later (gpu.c: look_again) are appended: an index into the set
 * names the same device for the set's life. */
int vw_gpus_open(const struct vw_gpu_opts *o, struct vw_gpus **ret);
void vw_gpus_free(struct vw_gpus *g);
/*
 * Open one more source (ctx: its own context) and add its devices, creating *g when NULL: a
 * device that appears later (the guest's host-measured vGPU share, once its host sends one).
 * -errno (said) when the source does not open; *g is then unchanged.
 */
int vw_gpus_attach(struct vw_gpus **g, const struct vw_gpu_opts *o,
		   const struct vw_gpu_source_ops *ops, void *ctx);

/* Read every device at now_ns (CLOCK_MONOTONIC; the first call only sets baselines). */
void vw_gpus_sample(struct vw_gpus *g, uint64_t now_ns);
/* What the reading thread does every VW_GAUGE_TICK_NS: every device without an energy counter
 * read for power once, at now_ns (the thread: vw_now_ns()). For tests with manual_ticks. */
void vw_gpus_tick(struct vw_gpus *g, uint64_t now_ns);
/* Close the interval since the last close, ending at the last sample: split, accumulate, learn. */
void vw_gpus_close_interval(struct vw_gpus *g);

/* One device as the metrics show it, as of the last close. */
struct vw_gpu_view {
	const struct vw_gpu_info *info;
	const char *vendor;                   /* "nvidia" */
	const char *source;                   /* "nvml" */
	uint64_t total_uj, idle_uj, active_uj; /* cumulative; idle + active == total */
	double watts, idle_watts, active_watts; /* over the last interval */
	uint64_t int_idle_uj, int_active_uj;  /* the last interval's split */
	double idle_baseline_w;               /* idle power the split used (residual: as given) */
	enum vw_idle_method idle_method;      /* configured, floor or residual */
	double util;                          /* the last interval's mean utilization; NaN unknown */
	uint64_t gaps;                        /* counter readings skipped (resets, junk), and
					       * power spans a failed reading left uncounted */
	uint64_t read_errors;
	bool gone;                            /* not listed by its source in that interval: not
					       * read, its energy nothing (its series kept) */
};

size_t vw_gpus_count(const struct vw_gpus *g);
/* Device i (0..count) as of the last close. */
void vw_gpus_view(const struct vw_gpus *g, size_t i, struct vw_gpu_view *ret);

/* Processes tracked per device per interval; more get nothing (their share is the node's). */
#define VW_GPU_MAX_TRACKED 512

/* A process's active GPU energy of the last closed interval, every device's summed. */
struct vw_gpu_pid_energy {
	uint32_t pid; /* in the driver's PID namespace (the host's) */
	uint64_t active_uj;
};

/*
 * The last closed interval's active GPU energy per process (at most max entries, merged by
 * pid; returns how many) and, in *ret_active_uj, every GPU's active energy of that interval:
 * what the processes did not take of it is the node's. Without a per-process reading (an old
 * driver) there are none.
 */
size_t vw_gpus_process_energy(const struct vw_gpus *g, struct vw_gpu_pid_energy *out, size_t max,
			      uint64_t *ret_active_uj);

/* A VM's GPU energy of the last closed interval, as its vGPUs' (every device's, summed). */
struct vw_gpu_vgpu_energy {
	char vm_id[VW_GPU_VM_ID_MAX]; /* as the library names the VM */
	enum vw_gpu_vm_id_type vm_id_type;
	char mdev_uuid[VW_GPU_VM_ID_MAX]; /* one of its vGPUs' mediated devices, or "" */
	uint64_t idle_uj;   /* its vGPUs' reservations of the devices' idle energy */
	uint64_t active_uj; /* its vGPUs' shares of the devices' active energy */
};

/*
 * The last closed interval's GPU energy per VM with a vGPU (at most max entries, merged by
 * VM; returns how many). The shares come out of the devices' idle and active energy: what the
 * VMs and processes did not take is the node's.
 */
size_t vw_gpus_vgpu_energy(const struct vw_gpus *g, struct vw_gpu_vgpu_energy *out, size_t max);

/* The node GPU families (gpu_metrics.c) for every device. */
int vw_gpus_render(const struct vw_gpus *g, struct vw_prom_writer *w, const char *node_name);
extern const struct vw_family_table vw_gpu_family_table;

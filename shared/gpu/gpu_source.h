/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GPU sources: one static const ops table per vendor library (NVML now; AMD's amdsmi and
 * Intel's Level Zero can follow), probed in preference order at start-up. Unlike the CPU
 * zones' power sources, every source that finds devices is kept: a node may hold GPUs of two
 * vendors. A source gives devices and, on each read, one device's raw readings; gpu.c turns
 * those into energy counters, idle/active splits and metrics.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VW_GPU_MAX_DEVICES 64
#define VW_GPU_UUID_MAX 96 /* NVML_DEVICE_UUID_V2_BUFFER_SIZE */
#define VW_GPU_NAME_MAX 96

enum vw_gpu_mig {
	VW_GPU_MIG_UNSUPPORTED, /* the device (or the library) has no MIG */
	VW_GPU_MIG_DISABLED,
	VW_GPU_MIG_ENABLED,
};

/* "unsupported", "disabled", "enabled" */
const char *vw_gpu_mig_name(enum vw_gpu_mig m);

/* One device as its source found it (at start-up, or at a rescan since). */
struct vw_gpu_info {
	unsigned index;              /* the library's device index when first found: Kepler's
				      * `gpu` label, kept for the device's life */
	char uuid[VW_GPU_UUID_MAX];  /* "GPU-8f6c..." */
	char name[VW_GPU_NAME_MAX];  /* "NVIDIA A100-SXM4-40GB" */
	bool has_energy;             /* a cumulative energy counter (else power is integrated) */
	bool has_power;              /* a power reading */
	bool has_utilization;        /* a device utilization reading */
	bool counts_from_zero;       /* its counter began at 0 when the source opened: the first
				      * reading is energy to count, not a baseline */
	enum vw_gpu_mig mig;
	char label[16];              /* Kepler's `gpu` label: the index ("0"), or a source's name */
	/* Set by rescan() only (the reading thread stopped): */
	bool gone;                   /* no longer listed by its source (removed, unbound, the
				      * driver gone): not read until listed again */
	unsigned returns;            /* times it was listed again after being gone: its counter
				      * may have been reset meanwhile */
};

/* One read of one device; each part 0 or -errno on its own (-EOPNOTSUPP: not offered). */
struct vw_gpu_reading {
	uint64_t energy_uj; /* raw cumulative counter (since the driver loaded, say) */
	int energy_err;
	/* The idle part of energy_uj, for a source that splits its energy itself (the guest's
	 * passthrough: its host's split); -EOPNOTSUPP for the others, which gpu.c splits. */
	uint64_t idle_uj;
	int idle_err;
	uint64_t power_uw;
	int power_err;
	double util;        /* 0..1 over the library's last sample period */
	int util_err;
};

/*
 * A process on a device as one processes() call saw it: in the running-process list, and/or
 * with a utilization sample newer than the previous call's (its SM share of the library's last
 * sample period, percent).
 */
struct vw_gpu_proc_sample {
	uint32_t pid;      /* in the driver's PID namespace (the host's) */
	unsigned sm_util;  /* 0..100; 0 without a sample */
	bool sampled;      /* a utilization sample came */
	bool running;      /* listed as a compute process */
};

#define VW_GPU_MAX_PROCS 256 /* per device per call */

/* How a vGPU names the VM it serves (NVML's nvmlVgpuVmIdType_t). */
enum vw_gpu_vm_id_type {
	VW_GPU_VM_ID_DOMAIN, /* a hypervisor's domain id (Xen) */
	VW_GPU_VM_ID_UUID,   /* the VM's UUID (KVM: QEMU's -uuid, libvirt's domain UUID) */
};

#define VW_GPU_VM_ID_MAX 80 /* NVML_DEVICE_UUID_BUFFER_SIZE */
#define VW_GPU_MAX_VGPUS 64  /* per device per call */

/*
 * A vGPU on a device (NVIDIA vGPU hosts) as one vgpus() call saw it: the VM it serves, its
 * reservation of the device, and its utilization sample newer than the previous call's.
 */
struct vw_gpu_vgpu_sample {
	unsigned instance;               /* the library's vGPU instance id */
	char vm_id[VW_GPU_VM_ID_MAX];    /* as the library gives it */
	enum vw_gpu_vm_id_type vm_id_type;
	char mdev_uuid[VW_GPU_VM_ID_MAX]; /* its mediated device's UUID (KVM), or "" */
	/* Its share of the device in millionths: one instance of a type the device holds at most
	 * N of reserves 1/N (a time-sliced A100-4C: 1/10); 0 unknown. */
	uint32_t reserved_ppm;
	unsigned sm_util; /* 0..100; 0 without a sample */
	bool sampled;     /* a utilization sample came */
};

struct vw_gpu_env {
	const char *nvml_library; /* NULL: "libnvidia-ml.so.1" from the loader's search path */
	void *ctx;                /* a source's own context (the guest's passthrough reader) */
};

struct vw_gpu_source_ops {
	const char *name;   /* "nvml": logs */
	const char *vendor; /* Kepler's `vendor` label: "nvidia" */
	/*
	 * -ENODEV when there is no library, driver or device (why says which, for the one log
	 * line the caller writes); other -errno on failure.
	 */
	int (*open)(const struct vw_gpu_env *env, void **ret_state, char *why, size_t why_len);
	/* The devices found at open and at rescans since (appended; each stays where it is);
	 * valid until close. */
	size_t (*devices)(void *state, const struct vw_gpu_info **ret);
	/* Read device i (an index into devices()): every part it has, each with its own result. */
	void (*read)(void *state, size_t i, struct vw_gpu_reading *ret);
	/*
	 * Optional: device i's power alone (µW), one library call: what gpu.c's reading thread
	 * reads every VW_GAUGE_TICK_NS of a device without an energy counter. Called on that
	 * thread, concurrently with the other ops (NVML is thread-safe), so it touches no state
	 * they change. 0 or -errno.
	 */
	int (*power)(void *state, size_t i, uint64_t *ret_uw);
	/*
	 * Optional: the processes on device i since the previous call (at most max, merged by
	 * pid). -EOPNOTSUPP when the library offers neither a process list nor samples; else
	 * what it has (either part may be missing), or -errno when the device cannot be read.
	 */
	int (*processes)(void *state, size_t i, struct vw_gpu_proc_sample *out, size_t max,
			 size_t *ret_n);
	/*
	 * Optional: the active vGPUs on device i (at most max). -EOPNOTSUPP when the library or
	 * the device has no vGPUs to list (not a vGPU host), else 0 or -errno.
	 */
	int (*vgpus)(void *state, size_t i, struct vw_gpu_vgpu_sample *out, size_t max,
		     size_t *ret_n);
	/*
	 * Optional: has the list of devices changed since devices() was last set (a GPU added,
	 * removed or re-enumerated)? A look that writes nothing (the reading thread may be in
	 * power() meanwhile) at a cost of little (NVML: the count and a handle per index). 1 yes,
	 * 0 no, -errno when it cannot tell (the library's session is broken: the driver gone).
	 */
	int (*changed)(void *state);
	/*
	 * Optional, with changed(): list the devices again (reinit: the library's session opened
	 * anew first). devices() keeps every device it gave, at the same place: one no longer
	 * listed gets `gone`, one listed again after that `returns` + 1, a new one (by UUID) is
	 * appended. Called with the reading thread stopped. -errno (why says what) when the
	 * session cannot be opened or the list read: every device is then gone.
	 */
	int (*rescan)(void *state, bool reinit, char *why, size_t why_len);
	void (*close)(void *state);
};

extern const struct vw_gpu_source_ops vw_gpu_src_nvml;

/* Every GPU source in preference order, NULL-terminated. */
extern const struct vw_gpu_source_ops *const vw_gpu_sources[];

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NVIDIA GPUs through NVML (nvml.h: the subset, from NVIDIA's documented API). The library is
 * opened with dlopen() at start-up ("libnvidia-ml.so.1", the driver's, or --gpu.nvml-library)
 * and each entry point is looked up on its own: the handful without which no device can be
 * named (init, count, handle, UUID, name) are required; every other one only turns a feature
 * off when an older driver lacks it (the energy counter: power is integrated instead; power;
 * utilization; MIG mode; the running processes and their utilization samples). No library, no
 * driver or no device: -ENODEV and one line saying which.
 *
 * Per device the energy counter is probed once at open (mJ since the driver loaded, Volta and
 * newer): NOT_SUPPORTED there means the device is read for power only, for good, by gpu.c's
 * reading thread too (power(): one nvmlDeviceGetPowerUsage, NVML being thread-safe). Reads map
 * NVML's results to errno values; a GPU that fell off the bus reads -ENODEV until it is back.
 *
 * Devices are kept by UUID in slots that never move: changed() compares NVML's count and each
 * index's handle with the last list's (no write: the reading thread may be in power()), and
 * rescan() (the reading thread stopped) names each index again, a known UUID taking its new
 * handle, a new one probed as at open and appended, one no longer listed marked gone; with
 * reinit the session is opened anew first (nvmlShutdown, nvmlInit_v2).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_source.h"
#include "log.h"
#include "macro.h"
#include "nvml.h"

#define NVML_DEFAULT_LIBRARY "libnvidia-ml.so.1"
#define MIG_UNAVAILABLE 0xFFFFFFFFu

struct nvml_api {
	nvml_init_fn init;
	nvml_shutdown_fn shutdown;
	nvml_error_string_fn error_string;
	nvml_get_count_fn get_count;
	nvml_get_handle_fn get_handle;
	nvml_get_string_fn get_uuid;
	nvml_get_string_fn get_name;
	/* optional */
	nvml_get_energy_fn get_energy;
	nvml_get_power_fn get_power;
	nvml_get_utilization_fn get_utilization;
	nvml_get_mig_mode_fn get_mig_mode;
	nvml_get_processes_fn get_processes;
	nvml_get_process_util_fn get_process_util;
	/* optional, vGPU hosts */
	nvml_get_active_vgpus_fn get_active_vgpus;
	nvml_vgpu_vm_id_fn vgpu_vm_id;
	nvml_vgpu_string_fn vgpu_mdev_uuid;
	nvml_vgpu_type_fn vgpu_type;
	nvml_vgpu_max_instances_fn vgpu_max_instances;
	nvml_get_vgpu_util_fn get_vgpu_util;
};

struct nvml {
	void *dl;
	bool initialized;
	struct nvml_api api;
	size_t n;
	nvmlDevice_t handle[VW_GPU_MAX_DEVICES];
	/* The last scan: how many devices NVML listed, and each index's handle (a device left
	 * out too), which changed() compares with. */
	unsigned listed;
	nvmlDevice_t listed_handle[VW_GPU_MAX_DEVICES];
	bool full_said; /* a new device found with every slot taken: said once */
	struct vw_gpu_info info[VW_GPU_MAX_DEVICES];
	unsigned long long last_seen_us[VW_GPU_MAX_DEVICES]; /* newest process sample taken */
	unsigned long long vgpu_seen_us[VW_GPU_MAX_DEVICES];  /* newest vGPU sample taken */
	bool procs_listed[VW_GPU_MAX_DEVICES]; /* its processes were listed once */
	/* scratch for processes() and vgpus() */
	nvmlProcessInfo_t infos[VW_GPU_MAX_PROCS];
	nvmlProcessUtilizationSample_t samples[VW_GPU_MAX_PROCS];
	nvmlVgpuInstance_t vgpus[VW_GPU_MAX_VGPUS];
	nvmlVgpuInstanceUtilizationSample_t vsamples[VW_GPU_MAX_VGPUS];
};

/* An entry point's name and where its address goes; required ones make open fail. */
struct symbol {
	const char *name;
	size_t off;
	bool required;
};

#define SYM(n, f, req) { n, offsetof(struct nvml_api, f), req }
static const struct symbol symbols[] = {
	SYM("nvmlInit_v2", init, true),
	SYM("nvmlShutdown", shutdown, true),
	SYM("nvmlErrorString", error_string, true),
	SYM("nvmlDeviceGetCount_v2", get_count, true),
	SYM("nvmlDeviceGetHandleByIndex_v2", get_handle, true),
	SYM("nvmlDeviceGetUUID", get_uuid, true),
	SYM("nvmlDeviceGetName", get_name, true),
	SYM("nvmlDeviceGetTotalEnergyConsumption", get_energy, false),
	SYM("nvmlDeviceGetPowerUsage", get_power, false),
	SYM("nvmlDeviceGetUtilizationRates", get_utilization, false),
	SYM("nvmlDeviceGetMigMode", get_mig_mode, false),
	SYM("nvmlDeviceGetComputeRunningProcesses_v3", get_processes, false),
	SYM("nvmlDeviceGetProcessUtilization", get_process_util, false),
	SYM("nvmlDeviceGetActiveVgpus", get_active_vgpus, false),
	SYM("nvmlVgpuInstanceGetVmID", vgpu_vm_id, false),
	SYM("nvmlVgpuInstanceGetMdevUUID", vgpu_mdev_uuid, false),
	SYM("nvmlVgpuInstanceGetType", vgpu_type, false),
	SYM("nvmlVgpuTypeGetMaxInstances", vgpu_max_instances, false),
	SYM("nvmlDeviceGetVgpuUtilization", get_vgpu_util, false),
};

/* NVML's results as errno values (the caller's logs name them with strerror). */
static int nvml_errno(nvmlReturn_t r)
{
	switch (r) {
	case NVML_SUCCESS:
		return 0;
	case NVML_ERROR_NOT_SUPPORTED:
	case NVML_ERROR_FUNCTION_NOT_FOUND:
		return -EOPNOTSUPP;
	case NVML_ERROR_NO_PERMISSION:
		return -EACCES;
	case NVML_ERROR_NOT_FOUND:
		return -ENOENT;
	case NVML_ERROR_INSUFFICIENT_SIZE:
		return -ENOBUFS;
	case NVML_ERROR_TIMEOUT:
		return -ETIMEDOUT;
	case NVML_ERROR_MEMORY:
		return -ENOMEM;
	case NVML_ERROR_NO_DATA:
		return -ENODATA;
	case NVML_ERROR_UNINITIALIZED:
	case NVML_ERROR_DRIVER_NOT_LOADED:
	case NVML_ERROR_LIBRARY_NOT_FOUND:
	case NVML_ERROR_GPU_IS_LOST:
	case NVML_ERROR_RESET_REQUIRED:
		return -ENODEV;
	case NVML_ERROR_INVALID_ARGUMENT:
		return -EINVAL;
	default:
		return -EIO;
	}
}

static const char *nvml_strerror(const struct nvml *nv, nvmlReturn_t r)
{
	const char *s = nv->api.error_string ? nv->api.error_string(r) : NULL;

	return s ? s : "unknown NVML error";
}

static void nvml_close(void *state)
{
	struct nvml *nv = state;

	if (!nv)
		return;
	if (nv->initialized)
		(void)nv->api.shutdown();
	if (nv->dl)
		dlclose(nv->dl);
	free(nv);
}

static void nvml_freep(struct nvml **nv)
{
	nvml_close(*nv);
}

/* Every entry point on its own; -ENODEV naming the first required one missing. */
static int resolve(struct nvml *nv, char *why, size_t len)
{
	for (size_t i = 0; i < ARRAY_SIZE(symbols); i++) {
		void *p = dlsym(nv->dl, symbols[i].name);

		if (!p && symbols[i].required) {
			snprintf(why, len, "the library has no %s", symbols[i].name);
			return -ENODEV;
		}
		/* a vGPU host's calls: absent from other drivers' libraries, said by vgpus() */
		if (!p && symbols[i].off < offsetof(struct nvml_api, get_active_vgpus))
			vw_info("gpu: nvml: this driver's library has no %s: %s", symbols[i].name,
				symbols[i].off == offsetof(struct nvml_api, get_energy)
					? "energy is integrated from power"
					: "that reading is left out");
		/* dlsym hands out data pointers; the entry points are functions (POSIX). */
		memcpy((char *)&nv->api + symbols[i].off, &p, sizeof(p));
	}
	return 0;
}

static enum vw_gpu_mig probe_mig(const struct nvml *nv, nvmlDevice_t h)
{
	unsigned int cur = MIG_UNAVAILABLE, pending = MIG_UNAVAILABLE;

	if (!nv->api.get_mig_mode || nv->api.get_mig_mode(h, &cur, &pending) != NVML_SUCCESS)
		return VW_GPU_MIG_UNSUPPORTED;
	return cur == NVML_DEVICE_MIG_ENABLE ? VW_GPU_MIG_ENABLED : VW_GPU_MIG_DISABLED;
}

/* What device i has: a counter, power, utilization (each tried once now). */
static void probe_features(const struct nvml *nv, nvmlDevice_t h, struct vw_gpu_info *gi)
{
	unsigned long long mj;
	unsigned int mw;
	nvmlUtilization_t u;

	gi->has_energy = nv->api.get_energy && nv->api.get_energy(h, &mj) == NVML_SUCCESS;
	gi->has_power = nv->api.get_power && nv->api.get_power(h, &mw) == NVML_SUCCESS;
	gi->has_utilization =
		nv->api.get_utilization && nv->api.get_utilization(h, &u) == NVML_SUCCESS;
	gi->mig = probe_mig(nv, h);
}

/* The device at index i (handle h) named into gi: 0, or NVML's error. */
static nvmlReturn_t name_device(const struct nvml *nv, unsigned i, nvmlDevice_t h,
				struct vw_gpu_info *gi)
{
	nvmlReturn_t r;

	*gi = (struct vw_gpu_info){ .index = i };
	r = nv->api.get_uuid(h, gi->uuid, sizeof(gi->uuid));
	if (r == NVML_SUCCESS)
		r = nv->api.get_name(h, gi->name, sizeof(gi->name));
	gi->uuid[sizeof(gi->uuid) - 1] = gi->name[sizeof(gi->name) - 1] = '\0';
	return r;
}

/*
 * The device at index i (handle h, named in nv->info[nv->n]) into the table when it can be
 * measured: said at info unless quiet (a rescan: gpu.c says it), else at warn and left out.
 */
static void take_device(struct nvml *nv, unsigned i, nvmlDevice_t h, bool quiet)
{
	struct vw_gpu_info *gi = &nv->info[nv->n];

	probe_features(nv, h, gi);
	if (!gi->has_energy && !gi->has_power) {
		vw_warn("gpu: nvml: device %u (%s) reports neither energy nor power; left out", i,
			gi->uuid);
		return;
	}
	nv->handle[nv->n++] = h;
	if (!quiet)
		vw_info("gpu: nvml: device %u %s \"%s\": %s, utilization %s, MIG %s", i, gi->uuid,
			gi->name, gi->has_energy ? "energy counter" : "power integrated",
			gi->has_utilization ? "read" : "not reported", vw_gpu_mig_name(gi->mig));
}

/* The slot of the device named uuid; nv->n when none. */
static size_t find_uuid(const struct nvml *nv, const char *uuid)
{
	size_t k = 0;

	while (k < nv->n && strcmp(nv->info[k].uuid, uuid) != 0)
		k++;
	return k;
}

/* Device i into the table when it can be named and measured; else said and left out. */
static void add_device(struct nvml *nv, unsigned i)
{
	nvmlDevice_t h = NULL;
	nvmlReturn_t r = nv->api.get_handle(i, &h);

	nv->listed_handle[i] = r == NVML_SUCCESS ? h : NULL;
	if (r == NVML_SUCCESS)
		r = name_device(nv, i, h, &nv->info[nv->n]);
	if (r != NVML_SUCCESS) {
		nv->listed_handle[i] = NULL; /* named again at the next look (a change) */
		vw_warn("gpu: nvml: device %u: %s; left out, looked at again at the interval's "
			"close", i, nvml_strerror(nv, r));
		return;
	}
	/* Keyed by UUID: one listed twice (a driver's or a handle's garbage) would be two devices
	 * read through one handle at a rescan, its energy counted twice meanwhile. */
	if (find_uuid(nv, nv->info[nv->n].uuid) < nv->n) {
		vw_warn("gpu: nvml: device %u: UUID \"%s\" listed twice (as an earlier index); left "
			"out", i, nv->info[nv->n].uuid);
		return;
	}
	take_device(nv, i, h, false);
}

static int nvml_open(const struct vw_gpu_env *env, void **ret_state, char *why, size_t len)
{
	_cleanup_(nvml_freep) struct nvml *nv = calloc(1, sizeof(*nv));
	const char *lib = env && env->nvml_library && *env->nvml_library ? env->nvml_library
									  : NVML_DEFAULT_LIBRARY;
	unsigned count = 0;
	nvmlReturn_t r;

	if (!nv)
		return -ENOMEM;
	nv->dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!nv->dl) {
		const char *e = dlerror();

		snprintf(why, len, "cannot load %s: %s", lib, e ? e : "unknown error");
		return -ENODEV;
	}
	if (resolve(nv, why, len) < 0)
		return -ENODEV;
	r = nv->api.init();
	if (r != NVML_SUCCESS) {
		snprintf(why, len, "nvmlInit: %s", nvml_strerror(nv, r));
		return nvml_errno(r); /* no driver: -ENODEV */
	}
	nv->initialized = true;
	r = nv->api.get_count(&count);
	if (r != NVML_SUCCESS) {
		snprintf(why, len, "nvmlDeviceGetCount: %s", nvml_strerror(nv, r));
		return nvml_errno(r);
	}
	if (count > VW_GPU_MAX_DEVICES)
		vw_warn("gpu: nvml: %u devices; the first %d are read", count, VW_GPU_MAX_DEVICES);
	for (unsigned i = 0; i < count && i < VW_GPU_MAX_DEVICES; i++)
		add_device(nv, i);
	nv->listed = VW_MIN(count, (unsigned)VW_GPU_MAX_DEVICES);
	if (nv->n == 0) {
		snprintf(why, len, "%s: no device that can be measured (%u found)", lib, count);
		return -ENODEV;
	}
	*ret_state = VW_TAKE_PTR(nv);
	return 0;
}

static size_t nvml_devices(void *state, const struct vw_gpu_info **ret)
{
	struct nvml *nv = state;

	*ret = nv->info;
	return nv->n;
}

static void nvml_read(void *state, size_t i, struct vw_gpu_reading *ret)
{
	struct nvml *nv = state;
	const struct vw_gpu_info *gi = &nv->info[i];
	nvmlDevice_t h = nv->handle[i];
	unsigned long long mj = 0;
	unsigned int mw = 0;
	nvmlUtilization_t u = { 0 };

	*ret = (struct vw_gpu_reading){ .energy_err = -EOPNOTSUPP,
					.idle_err = -EOPNOTSUPP,
					.power_err = -EOPNOTSUPP,
					.util_err = -EOPNOTSUPP };
	if (gi->has_energy) {
		ret->energy_err = nvml_errno(nv->api.get_energy(h, &mj));
		/* mJ to µJ: 2^64 µJ is 584 years at 1 kW, far beyond a driver's uptime */
		ret->energy_uj = mj > UINT64_MAX / 1000 ? UINT64_MAX : (uint64_t)mj * 1000;
	}
	if (gi->has_power) {
		ret->power_err = nvml_errno(nv->api.get_power(h, &mw));
		ret->power_uw = (uint64_t)mw * 1000;
	}
	if (gi->has_utilization) {
		ret->util_err = nvml_errno(nv->api.get_utilization(h, &u));
		ret->util = u.gpu > 100 ? 1.0 : (double)u.gpu / 100.0;
	}
}

/* The reading thread's: one nvmlDeviceGetPowerUsage, nothing of the state written. */
static int nvml_power(void *state, size_t i, uint64_t *ret_uw)
{
	const struct nvml *nv = state;
	unsigned int mw = 0;
	int r;

	if (!nv->info[i].has_power)
		return -EOPNOTSUPP;
	r = nvml_errno(nv->api.get_power(nv->handle[i], &mw));
	*ret_uw = (uint64_t)mw * 1000;
	return r;
}

/*
 * The reading thread may be in nvml_power() meanwhile: nothing written. One
 * nvmlDeviceGetCount_v2 and one nvmlDeviceGetHandleByIndex_v2 per index: NVML's enumeration
 * changes in a long-running process as GPUs are removed or discovered (its reference on
 * nvmlDeviceRemoveGpu_v2 and nvmlDeviceDiscoverGpus: "the enumeration will change", "device
 * handles ... must be re-established").
 */
static int nvml_changed(void *state)
{
	const struct nvml *nv = state;
	unsigned count = 0;
	nvmlReturn_t r;

	if (!nv->initialized)
		return -ENODEV;
	r = nv->api.get_count(&count);
	if (r != NVML_SUCCESS)
		return nvml_errno(r);
	if (VW_MIN(count, (unsigned)VW_GPU_MAX_DEVICES) != nv->listed)
		return 1;
	for (unsigned i = 0; i < nv->listed; i++) {
		nvmlDevice_t h = NULL;

		if (nv->api.get_handle(i, &h) != NVML_SUCCESS)
			h = NULL; /* as the last list has it where it failed (no permission, say) */
		if (h != nv->listed_handle[i])
			return 1;
	}
	return 0;
}

/* Every device gone (the session or its list lost). */
static void all_gone(struct nvml *nv)
{
	for (size_t k = 0; k < nv->n; k++)
		nv->info[k].gone = true;
	nv->listed = 0;
}

/* The device at index i (handle h) of a rescan: a known one (by UUID) takes its new handle, a
 * new one is probed as at open; seen[] marks the slots listed. False when it cannot be named
 * now: not listed, and named again at the next look. */
static bool rescan_device(struct nvml *nv, unsigned i, nvmlDevice_t h, bool *seen)
{
	struct vw_gpu_info found;
	size_t k;

	if (name_device(nv, i, h, &found) != NVML_SUCCESS)
		return false;
	k = find_uuid(nv, found.uuid);
	if (k < nv->n) {
		nv->handle[k] = h;
		seen[k] = true;
		if (nv->info[k].gone) { /* back: a reset (MIG switched on or off) may be why */
			nv->info[k].gone = false;
			nv->info[k].returns++;
			nv->info[k].mig = probe_mig(nv, h);
		}
		return true;
	}
	if (nv->n == VW_GPU_MAX_DEVICES) { /* slots never move nor are reused: said once */
		if (!nv->full_said)
			vw_warn("gpu: nvml: device %u (%s): %d devices known already (gone ones "
				"included); left out", i, found.uuid, VW_GPU_MAX_DEVICES);
		nv->full_said = true;
		return true;
	}
	nv->info[nv->n] = found;
	take_device(nv, i, h, true);
	if (k < nv->n) /* taken */
		seen[k] = true;
	return true;
}

static int nvml_rescan(void *state, bool reinit, char *why, size_t len)
{
	struct nvml *nv = state;
	bool seen[VW_GPU_MAX_DEVICES] = { false };
	unsigned count = 0;
	nvmlReturn_t r;

	if (reinit && nv->initialized) {
		(void)nv->api.shutdown();
		nv->initialized = false;
	}
	if (!nv->initialized) {
		r = nv->api.init();
		if (r != NVML_SUCCESS) {
			all_gone(nv);
			snprintf(why, len, "nvmlInit: %s", nvml_strerror(nv, r));
			return nvml_errno(r);
		}
		nv->initialized = true;
	}
	r = nv->api.get_count(&count);
	if (r != NVML_SUCCESS) {
		all_gone(nv);
		snprintf(why, len, "nvmlDeviceGetCount: %s", nvml_strerror(nv, r));
		return nvml_errno(r);
	}
	nv->listed = VW_MIN(count, (unsigned)VW_GPU_MAX_DEVICES);
	for (unsigned i = 0; i < nv->listed; i++) {
		nvmlDevice_t h = NULL;

		nv->listed_handle[i] = nv->api.get_handle(i, &h) == NVML_SUCCESS ? h : NULL;
		/* One that cannot be named (its UUID call failed) was gone for good: its handle
		 * unchanged, no look saw a change. A handle unlike the last list's is one. */
		if (nv->listed_handle[i] && !rescan_device(nv, i, h, seen))
			nv->listed_handle[i] = NULL;
	}
	for (size_t k = 0; k < nv->n; k++)
		nv->info[k].gone = !seen[k];
	return 0;
}

/* out[0..*n) holds pid, or gets it (zeroed) when there is room; NULL when full. */
static struct vw_gpu_proc_sample *proc_slot(struct vw_gpu_proc_sample *out, size_t max, size_t *n,
					    uint32_t pid)
{
	for (size_t k = 0; k < *n; k++)
		if (out[k].pid == pid)
			return &out[k];
	if (*n == max)
		return NULL;
	out[*n] = (struct vw_gpu_proc_sample){ .pid = pid };
	return &out[(*n)++];
}

/* The compute processes listed now. */
static int running_processes(struct nvml *nv, size_t i, struct vw_gpu_proc_sample *out,
			     size_t max, size_t *n)
{
	unsigned count = VW_GPU_MAX_PROCS;
	nvmlReturn_t r = nv->api.get_processes(nv->handle[i], &count, nv->infos);

	if (r != NVML_SUCCESS)
		return nvml_errno(r); /* INSUFFICIENT_SIZE: more than we take, none given */
	for (unsigned k = 0; k < count && k < VW_GPU_MAX_PROCS; k++) {
		struct vw_gpu_proc_sample *s = proc_slot(out, max, n, nv->infos[k].pid);

		if (s)
			s->running = true;
	}
	return 0;
}

/* The utilization samples newer than the last call's (NOT_FOUND: none, no error). */
static int sampled_processes(struct nvml *nv, size_t i, struct vw_gpu_proc_sample *out,
			     size_t max, size_t *n)
{
	unsigned count = VW_GPU_MAX_PROCS;
	unsigned long long newest = nv->last_seen_us[i];
	nvmlReturn_t r = nv->api.get_process_util(nv->handle[i], nv->samples, &count, newest);

	if (r == NVML_ERROR_NOT_FOUND)
		return 0;
	if (r != NVML_SUCCESS)
		return nvml_errno(r);
	for (unsigned k = 0; k < count && k < VW_GPU_MAX_PROCS; k++) {
		const nvmlProcessUtilizationSample_t *u = &nv->samples[k];
		struct vw_gpu_proc_sample *s;

		if (u->timeStamp <= nv->last_seen_us[i])
			continue; /* already counted */
		newest = VW_MAX(newest, u->timeStamp);
		s = proc_slot(out, max, n, u->pid);
		if (s) {
			s->sampled = true;
			s->sm_util = VW_MIN(s->sm_util + u->smUtil, 100u);
		}
	}
	nv->last_seen_us[i] = newest;
	return 0;
}

static int nvml_processes(void *state, size_t i, struct vw_gpu_proc_sample *out, size_t max,
			  size_t *ret_n)
{
	struct nvml *nv = state;
	int r1 = 0, r2 = 0;

	*ret_n = 0;
	if (!nv->api.get_processes && !nv->api.get_process_util)
		return -EOPNOTSUPP;
	if (nv->api.get_processes)
		r1 = running_processes(nv, i, out, max, ret_n);
	if (nv->api.get_process_util)
		r2 = sampled_processes(nv, i, out, max, ret_n);
	/* One part failing leaves the other's; both failing is the device's error. */
	r1 = (r1 < 0 || !nv->api.get_processes) && (r2 < 0 || !nv->api.get_process_util)
		     ? (r1 < 0 ? r1 : r2)
		     : 0;
	if (r1 == 0)
		nv->procs_listed[i] = true;
	/* NOT_SUPPORTED from a device that listed before (MIG enabled mid-run: the parent device
	 * lists nothing) is not "never" (-EOPNOTSUPP turns the list off for good): it may list
	 * again once MIG is off. */
	return r1 == -EOPNOTSUPP && nv->procs_listed[i] ? -EAGAIN : r1;
}

/* A utilization value of the type the library gave, as a percent 0..100. */
static unsigned value_percent(nvmlValueType_t type, nvmlValue_t v)
{
	long double x;

	switch (type) {
	case NVML_VALUE_TYPE_DOUBLE:
		x = v.dVal;
		break;
	case NVML_VALUE_TYPE_UNSIGNED_INT:
		x = v.uiVal;
		break;
	case NVML_VALUE_TYPE_UNSIGNED_LONG:
		x = v.ulVal;
		break;
	case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
		x = v.ullVal;
		break;
	case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
		x = v.sllVal;
		break;
	case NVML_VALUE_TYPE_SIGNED_INT:
		x = v.siVal;
		break;
	default:
		return 0; /* a type this header does not know: no sample */
	}
	return !(x > 0) ? 0 : x >= 100 ? 100 : (unsigned)x; /* NaN: 0 */
}

/* The share of device h one instance of vGPU v's type reserves, in millionths; 0 unknown. */
static uint32_t reserved_ppm(const struct nvml *nv, nvmlDevice_t h, nvmlVgpuInstance_t v)
{
	nvmlVgpuTypeId_t type;
	unsigned max = 0;

	if (!nv->api.vgpu_type || !nv->api.vgpu_max_instances ||
	    nv->api.vgpu_type(v, &type) != NVML_SUCCESS ||
	    nv->api.vgpu_max_instances(h, type, &max) != NVML_SUCCESS || max == 0)
		return 0;
	return 1000000u / max;
}

/* The vGPU utilization samples newer than the last call's, onto out[0..n) by instance. */
static void vgpu_samples(struct nvml *nv, size_t i, struct vw_gpu_vgpu_sample *out, size_t n)
{
	unsigned count = VW_GPU_MAX_VGPUS;
	unsigned long long newest = nv->vgpu_seen_us[i];
	nvmlValueType_t type = NVML_VALUE_TYPE_UNSIGNED_INT;

	if (!nv->api.get_vgpu_util ||
	    nv->api.get_vgpu_util(nv->handle[i], newest, &type, &count, nv->vsamples) !=
		    NVML_SUCCESS)
		return; /* NOT_FOUND: no sample since; else none this tick */
	for (unsigned k = 0; k < count && k < VW_GPU_MAX_VGPUS; k++) {
		const nvmlVgpuInstanceUtilizationSample_t *u = &nv->vsamples[k];

		if (u->timeStamp <= nv->vgpu_seen_us[i])
			continue; /* already counted */
		newest = VW_MAX(newest, u->timeStamp);
		for (size_t j = 0; j < n; j++)
			if (out[j].instance == u->vgpuInstance) {
				out[j].sampled = true;
				out[j].sm_util =
					VW_MIN(out[j].sm_util + value_percent(type, u->smUtil), 100u);
			}
	}
	nv->vgpu_seen_us[i] = newest;
}

static int nvml_vgpus(void *state, size_t i, struct vw_gpu_vgpu_sample *out, size_t max,
		      size_t *ret_n)
{
	struct nvml *nv = state;
	unsigned count = VW_GPU_MAX_VGPUS;
	nvmlReturn_t r;

	*ret_n = 0;
	if (!nv->api.get_active_vgpus || !nv->api.vgpu_vm_id)
		return -EOPNOTSUPP;
	r = nv->api.get_active_vgpus(nv->handle[i], &count, nv->vgpus);
	if (r != NVML_SUCCESS)
		return nvml_errno(r); /* NOT_SUPPORTED: not a vGPU host */
	for (unsigned k = 0; k < count && k < VW_GPU_MAX_VGPUS && *ret_n < max; k++) {
		struct vw_gpu_vgpu_sample *s = &out[*ret_n];
		nvmlVgpuVmIdType_t type = NVML_VGPU_VM_ID_DOMAIN_ID;

		*s = (struct vw_gpu_vgpu_sample){ .instance = nv->vgpus[k] };
		if (nv->api.vgpu_vm_id(nv->vgpus[k], s->vm_id, sizeof(s->vm_id), &type) !=
		    NVML_SUCCESS)
			continue; /* a VM it cannot name: its share stays the node's */
		s->vm_id[sizeof(s->vm_id) - 1] = '\0';
		s->vm_id_type = type == NVML_VGPU_VM_ID_UUID ? VW_GPU_VM_ID_UUID
							     : VW_GPU_VM_ID_DOMAIN;
		if (!nv->api.vgpu_mdev_uuid ||
		    nv->api.vgpu_mdev_uuid(nv->vgpus[k], s->mdev_uuid, sizeof(s->mdev_uuid)) !=
			    NVML_SUCCESS)
			s->mdev_uuid[0] = '\0';
		s->mdev_uuid[sizeof(s->mdev_uuid) - 1] = '\0';
		s->reserved_ppm = reserved_ppm(nv, nv->handle[i], nv->vgpus[k]);
		(*ret_n)++;
	}
	vgpu_samples(nv, i, out, *ret_n);
	return 0;
}

const struct vw_gpu_source_ops vw_gpu_src_nvml = {
	.name = "nvml",
	.vendor = "nvidia",
	.open = nvml_open,
	.devices = nvml_devices,
	.read = nvml_read,
	.power = nvml_power,
	.processes = nvml_processes,
	.vgpus = nvml_vgpus,
	.changed = nvml_changed,
	.rescan = nvml_rescan,
	.close = nvml_close,
};

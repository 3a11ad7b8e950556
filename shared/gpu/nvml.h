/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The subset of NVIDIA's NVML that src_nvml.c calls, declared here from NVIDIA's documented API
 * (Debian main ships no nvml.h): the NVML API Reference Guide, docs.nvidia.com/deploy/nvml-api/
 * (nvml-api-reference.html; groups "Initialization and Cleanup", "Device Queries", "Error
 * reporting"; struct references structnvmlProcessInfo__t.html, structnvmlUtilization__t.html,
 * structnvmlProcessUtilizationSample__t.html). Only types and function-pointer types: the
 * library is opened with dlopen() and every entry point looked up on its own, so nothing here
 * links against it. Versioned entry points (_v2, _v3) are the ones the current header maps the
 * plain names to.
 *
 *   nvmlReturn_t nvmlInit_v2(void);
 *   nvmlReturn_t nvmlShutdown(void);
 *   const char  *nvmlErrorString(nvmlReturn_t result);
 *   nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount);
 *   nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device);
 *   nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length);
 *   nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length);
 *   nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device,
 *                                                    unsigned long long *energy);
 *       mJ since the driver was last reloaded; Volta and newer (else NOT_SUPPORTED)
 *   nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power);
 *       mW, the board's draw (on many boards a one-second average)
 *   nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *util);
 *       percent of the last sample period (1/6 s to 1 s) a kernel ran, and memory busy
 *   nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode,
 *                                     unsigned int *pendingMode);
 *   nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
 *                                                        unsigned int *infoCount,
 *                                                        nvmlProcessInfo_t *infos);
 *       INSUFFICIENT_SIZE with *infoCount set to what is needed when the array is too small
 *   nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device,
 *                                                nvmlProcessUtilizationSample_t *utilization,
 *                                                unsigned int *processSamplesCount,
 *                                                unsigned long long lastSeenTimeStamp);
 *       one sample per process with non-zero utilization since lastSeenTimeStamp (µs, CPU
 *       time); NOT_FOUND when there is none; utilization NULL asks for the count
 *
 * vGPU hosts (group "vGPU Management" / "vGPU Queries"; struct reference
 * structnvmlVgpuInstanceUtilizationSample__t.html, union nvmlValue_t):
 *
 *   nvmlReturn_t nvmlDeviceGetActiveVgpus(nvmlDevice_t device, unsigned int *vgpuCount,
 *                                         nvmlVgpuInstance_t *vgpuInstances);
 *       INSUFFICIENT_SIZE with *vgpuCount set when the array is too small
 *   nvmlReturn_t nvmlVgpuInstanceGetVmID(nvmlVgpuInstance_t vgpuInstance, char *vmId,
 *                                        unsigned int size, nvmlVgpuVmIdType_t *vmIdType);
 *       at most 80 bytes with the NUL; the VM's UUID on KVM, a domain id on Xen
 *   nvmlReturn_t nvmlVgpuInstanceGetMdevUUID(nvmlVgpuInstance_t vgpuInstance, char *mdevUuid,
 *                                            unsigned int size);     KVM only
 *   nvmlReturn_t nvmlVgpuInstanceGetType(nvmlVgpuInstance_t vgpuInstance,
 *                                        nvmlVgpuTypeId_t *vgpuTypeId);
 *   nvmlReturn_t nvmlVgpuTypeGetMaxInstances(nvmlDevice_t device, nvmlVgpuTypeId_t vgpuTypeId,
 *                                            unsigned int *vgpuInstanceCount);
 *   nvmlReturn_t nvmlDeviceGetVgpuUtilization(nvmlDevice_t device,
 *                                             unsigned long long lastSeenTimeStamp,
 *                                             nvmlValueType_t *sampleValType,
 *                                             unsigned int *vgpuInstanceSamplesCount,
 *                                             nvmlVgpuInstanceUtilizationSample_t *samples);
 *       samples newer than lastSeenTimeStamp (µs); NOT_FOUND when there is none
 */
#pragma once

#include <stdint.h>

typedef int nvmlReturn_t; /* an enum in nvml.h; values as documented */
enum {
	NVML_SUCCESS = 0,
	NVML_ERROR_UNINITIALIZED = 1,
	NVML_ERROR_INVALID_ARGUMENT = 2,
	NVML_ERROR_NOT_SUPPORTED = 3,
	NVML_ERROR_NO_PERMISSION = 4,
	NVML_ERROR_ALREADY_INITIALIZED = 5,
	NVML_ERROR_NOT_FOUND = 6,
	NVML_ERROR_INSUFFICIENT_SIZE = 7,
	NVML_ERROR_INSUFFICIENT_POWER = 8,
	NVML_ERROR_DRIVER_NOT_LOADED = 9,
	NVML_ERROR_TIMEOUT = 10,
	NVML_ERROR_IRQ_ISSUE = 11,
	NVML_ERROR_LIBRARY_NOT_FOUND = 12,
	NVML_ERROR_FUNCTION_NOT_FOUND = 13,
	NVML_ERROR_CORRUPTED_INFOROM = 14,
	NVML_ERROR_GPU_IS_LOST = 15,
	NVML_ERROR_RESET_REQUIRED = 16,
	NVML_ERROR_OPERATING_SYSTEM = 17,
	NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
	NVML_ERROR_IN_USE = 19,
	NVML_ERROR_MEMORY = 20,
	NVML_ERROR_NO_DATA = 21,
	NVML_ERROR_UNKNOWN = 999,
};

/* nvmlDeviceGetMigMode's modes. */
enum {
	NVML_DEVICE_MIG_DISABLE = 0,
	NVML_DEVICE_MIG_ENABLE = 1,
};

#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96

typedef struct nvmlDevice_st *nvmlDevice_t; /* opaque */

typedef struct {
	unsigned int gpu;    /* percent of time a kernel ran over the past sample period */
	unsigned int memory; /* percent of time device memory was read or written */
} nvmlUtilization_t;

/* nvmlProcessInfo_t as the _v3 call fills it (the v2 layout). */
typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory; /* bytes */
	unsigned int gpuInstanceId;       /* MIG only; else 0xFFFFFFFF */
	unsigned int computeInstanceId;   /* MIG only; else 0xFFFFFFFF */
} nvmlProcessInfo_t;

typedef struct {
	unsigned int pid;
	unsigned long long timeStamp; /* CPU timestamp, µs */
	unsigned int smUtil;          /* SM (3D/compute) utilization, percent */
	unsigned int memUtil;         /* frame buffer memory utilization, percent */
	unsigned int encUtil;         /* video encoder */
	unsigned int decUtil;         /* video decoder */
} nvmlProcessUtilizationSample_t;

typedef unsigned int nvmlVgpuInstance_t;
typedef unsigned int nvmlVgpuTypeId_t;
typedef int nvmlVgpuVmIdType_t;
enum {
	NVML_VGPU_VM_ID_DOMAIN_ID = 0,
	NVML_VGPU_VM_ID_UUID = 1,
};

typedef int nvmlValueType_t;
enum {
	NVML_VALUE_TYPE_DOUBLE = 0,
	NVML_VALUE_TYPE_UNSIGNED_INT = 1,
	NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
	NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
	NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
	NVML_VALUE_TYPE_SIGNED_INT = 5,
};

typedef union {
	double dVal;
	int siVal;
	unsigned int uiVal;
	unsigned long ulVal;
	unsigned long long ullVal;
	signed long long sllVal;
} nvmlValue_t;

typedef struct {
	nvmlVgpuInstance_t vgpuInstance;
	unsigned long long timeStamp; /* CPU timestamp, µs */
	nvmlValue_t smUtil;           /* SM (3D/compute) utilization, percent */
	nvmlValue_t memUtil;
	nvmlValue_t encUtil;
	nvmlValue_t decUtil;
} nvmlVgpuInstanceUtilizationSample_t;

#define NVML_VGPU_VM_ID_BUFFER_SIZE 80

/* The pointer types src_nvml.c looks the entry points up as. */
typedef nvmlReturn_t (*nvml_init_fn)(void);
typedef nvmlReturn_t (*nvml_shutdown_fn)(void);
typedef const char *(*nvml_error_string_fn)(nvmlReturn_t result);
typedef nvmlReturn_t (*nvml_get_count_fn)(unsigned int *count);
typedef nvmlReturn_t (*nvml_get_handle_fn)(unsigned int index, nvmlDevice_t *device);
typedef nvmlReturn_t (*nvml_get_string_fn)(nvmlDevice_t device, char *buf, unsigned int length);
typedef nvmlReturn_t (*nvml_get_energy_fn)(nvmlDevice_t device, unsigned long long *energy_mj);
typedef nvmlReturn_t (*nvml_get_power_fn)(nvmlDevice_t device, unsigned int *power_mw);
typedef nvmlReturn_t (*nvml_get_utilization_fn)(nvmlDevice_t device, nvmlUtilization_t *util);
typedef nvmlReturn_t (*nvml_get_mig_mode_fn)(nvmlDevice_t device, unsigned int *current,
					     unsigned int *pending);
typedef nvmlReturn_t (*nvml_get_processes_fn)(nvmlDevice_t device, unsigned int *count,
					      nvmlProcessInfo_t *infos);
typedef nvmlReturn_t (*nvml_get_process_util_fn)(nvmlDevice_t device,
						 nvmlProcessUtilizationSample_t *samples,
						 unsigned int *count,
						 unsigned long long last_seen_us);
typedef nvmlReturn_t (*nvml_get_active_vgpus_fn)(nvmlDevice_t device, unsigned int *count,
						 nvmlVgpuInstance_t *instances);
typedef nvmlReturn_t (*nvml_vgpu_vm_id_fn)(nvmlVgpuInstance_t vgpu, char *vm_id,
					   unsigned int size, nvmlVgpuVmIdType_t *type);
typedef nvmlReturn_t (*nvml_vgpu_string_fn)(nvmlVgpuInstance_t vgpu, char *buf,
					    unsigned int size);
typedef nvmlReturn_t (*nvml_vgpu_type_fn)(nvmlVgpuInstance_t vgpu, nvmlVgpuTypeId_t *type);
typedef nvmlReturn_t (*nvml_vgpu_max_instances_fn)(nvmlDevice_t device, nvmlVgpuTypeId_t type,
						   unsigned int *count);
typedef nvmlReturn_t (*nvml_get_vgpu_util_fn)(nvmlDevice_t device,
					      unsigned long long last_seen_us,
					      nvmlValueType_t *type, unsigned int *count,
					      nvmlVgpuInstanceUtilizationSample_t *samples);

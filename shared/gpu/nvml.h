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

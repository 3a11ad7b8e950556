/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A fake libnvidia-ml.so.1 for the GPU tests: the NVML entry points virtwatt calls (the
 * subset in shared/gpu/nvml.h), answering from a state file the test writes and rewrites
 * while it runs. It is loaded through the product's own dlopen() path (--gpu.nvml-library).
 * Built twice: as a current driver's library, and with FAKE_NVML_OLD_DRIVER as an old one
 * that lacks the energy counter, utilization, MIG and per-process calls altogether.
 *
 * The file named by $FAKE_NVML_STATE is read on every call (a few lines); absent, the library
 * acts as if the driver were not loaded. Its lines are KEY=VALUE; device keys start with the
 * device index:
 *
 *   init=N             nvmlInit_v2's result (default 0; 9: driver not loaded)
 *   count=N            devices
 *   I.uuid=TEXT        I.name=TEXT
 *   I.energy_mj=N      the energy counter     I.energy_ret=N  its result (3: not supported)
 *   I.power_mw=N       the power reading      I.power_ret=N
 *   I.util=N           utilization, percent   I.util_ret=N
 *   I.mig=0|1          MIG mode               I.mig_ret=N
 *   I.procs=P:S,...    compute processes running (pid P), each with a utilization sample of
 *                      S % SM (none when S is 0), stamped with the time of the call
 *   I.procs_ret=N      I.putil_ret=N     the two process calls' results
 *   I.lost=1           every call on the device fails with GPU_IS_LOST (15)
 *
 * Calls are counted in $FAKE_NVML_STATE.calls (one line per nvmlInit_v2/nvmlShutdown) so a
 * test can see the library was shut down.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "nvml.h"

#define FAKE_MAX_DEVICES 16

struct nvmlDevice_st {
	unsigned index;
};

static struct nvmlDevice_st devices[FAKE_MAX_DEVICES];

/* The value of key in the state file into buf; 0 when found, -1 when not (or no file). */
static int lookup(const char *key, char *buf, size_t len)
{
	const char *path = getenv("FAKE_NVML_STATE");
	size_t klen = strlen(key);
	char line[512];
	int found = -1;
	FILE *f;

	if (!path || !(f = fopen(path, "re")))
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, klen) != 0 || line[klen] != '=')
			continue;
		line[strcspn(line, "\n")] = '\0';
		snprintf(buf, len, "%s", line + klen + 1);
		found = 0; /* the last one wins */
	}
	fclose(f);
	return found;
}

static unsigned long long number(const char *key, unsigned long long def)
{
	char buf[64];

	return lookup(key, buf, sizeof(buf)) == 0 ? strtoull(buf, NULL, 0) : def;
}

static unsigned long long dev_number(const struct nvmlDevice_st *d, const char *key,
				     unsigned long long def)
{
	char k[64];

	snprintf(k, sizeof(k), "%u.%s", d->index, key);
	return number(k, def);
}

static int have_state(void)
{
	const char *path = getenv("FAKE_NVML_STATE");
	FILE *f = path ? fopen(path, "re") : NULL;

	if (f)
		fclose(f);
	return f != NULL;
}

static void count_call(const char *what)
{
	const char *path = getenv("FAKE_NVML_STATE");
	char p[1024];
	FILE *f;

	if (!path)
		return;
	snprintf(p, sizeof(p), "%s.calls", path);
	f = fopen(p, "ae");
	if (f) {
		fprintf(f, "%s\n", what);
		fclose(f);
	}
}

/* A device call's result before it answers: the device's own *_ret, or lost. */
static nvmlReturn_t dev_result(const struct nvmlDevice_st *d, const char *ret_key)
{
	if (!d)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (dev_number(d, "lost", 0))
		return NVML_ERROR_GPU_IS_LOST;
	return (nvmlReturn_t)dev_number(d, ret_key, NVML_SUCCESS);
}

nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlShutdown(void);
const char *nvmlErrorString(nvmlReturn_t r);
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *buf, unsigned int length);
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *buf, unsigned int length);
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *mw);

nvmlReturn_t nvmlInit_v2(void)
{
	count_call("init");
	if (!have_state())
		return NVML_ERROR_DRIVER_NOT_LOADED;
	return (nvmlReturn_t)number("init", NVML_SUCCESS);
}

nvmlReturn_t nvmlShutdown(void)
{
	count_call("shutdown");
	return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t r)
{
	switch (r) {
	case NVML_SUCCESS:
		return "Success";
	case NVML_ERROR_NOT_SUPPORTED:
		return "Not Supported";
	case NVML_ERROR_DRIVER_NOT_LOADED:
		return "Driver Not Loaded";
	case NVML_ERROR_GPU_IS_LOST:
		return "GPU is lost";
	default:
		return "Unknown Error";
	}
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count)
{
	unsigned long long n = number("count", 0);

	*count = (unsigned)(n > FAKE_MAX_DEVICES ? FAKE_MAX_DEVICES : n);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
	if (index >= number("count", 0) || index >= FAKE_MAX_DEVICES)
		return NVML_ERROR_INVALID_ARGUMENT;
	devices[index].index = index;
	*device = &devices[index];
	return NVML_SUCCESS;
}

static nvmlReturn_t dev_string(nvmlDevice_t d, const char *key, char *buf, unsigned int length)
{
	nvmlReturn_t r = dev_result(d, "none_ret");
	char k[64], v[256];

	if (r != NVML_SUCCESS)
		return r;
	snprintf(k, sizeof(k), "%u.%s", d->index, key);
	if (lookup(k, v, sizeof(v)) < 0)
		snprintf(v, sizeof(v), "GPU-fake-%u", d->index);
	if (strlen(v) >= length)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(buf, v, strlen(v) + 1);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *buf, unsigned int length)
{
	return dev_string(device, "uuid", buf, length);
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *buf, unsigned int length)
{
	return dev_string(device, "name", buf, length);
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *mw)
{
	nvmlReturn_t r = dev_result(device, "power_ret");

	if (r == NVML_SUCCESS)
		*mw = (unsigned)dev_number(device, "power_mw", 0);
	return r;
}

#ifndef FAKE_NVML_OLD_DRIVER
nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long *mj);
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *u);
nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *cur, unsigned int *pending);

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long *mj)
{
	nvmlReturn_t r = dev_result(device, "energy_ret");

	if (r == NVML_SUCCESS)
		*mj = dev_number(device, "energy_mj", 0);
	return r;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *u)
{
	nvmlReturn_t r = dev_result(device, "util_ret");

	if (r == NVML_SUCCESS)
		*u = (nvmlUtilization_t){ .gpu = (unsigned)dev_number(device, "util", 0) };
	return r;
}

/* Device d's procs list: pids and SM percents, at most max; how many. */
static unsigned dev_procs(const struct nvmlDevice_st *d, unsigned *pid, unsigned *sm, unsigned max)
{
	char k[64], v[512], *save = NULL;
	unsigned n = 0;

	snprintf(k, sizeof(k), "%u.procs", d->index);
	if (lookup(k, v, sizeof(v)) < 0)
		return 0;
	for (char *t = strtok_r(v, ",", &save); t && n < max; t = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(t, ':');

		pid[n] = (unsigned)strtoul(t, NULL, 10);
		sm[n] = colon ? (unsigned)strtoul(colon + 1, NULL, 10) : 0;
		n++;
	}
	return n;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *count,
						     nvmlProcessInfo_t *infos);
nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device,
					     nvmlProcessUtilizationSample_t *samples,
					     unsigned int *count, unsigned long long last_seen_us);

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *count,
						     nvmlProcessInfo_t *infos)
{
	unsigned pid[64], sm[64], n;
	nvmlReturn_t r = dev_result(device, "procs_ret");

	if (r != NVML_SUCCESS)
		return r;
	n = dev_procs(device, pid, sm, 64);
	if (n > *count) {
		*count = n;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	for (unsigned i = 0; i < n; i++)
		infos[i] = (nvmlProcessInfo_t){ .pid = pid[i], .usedGpuMemory = 1 << 30,
						.gpuInstanceId = 0xFFFFFFFFu,
						.computeInstanceId = 0xFFFFFFFFu };
	*count = n;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device,
					     nvmlProcessUtilizationSample_t *samples,
					     unsigned int *count, unsigned long long last_seen_us)
{
	unsigned pid[64], sm[64], n, k = 0;
	nvmlReturn_t r = dev_result(device, "putil_ret");
	struct timeval tv;
	unsigned long long now;

	if (r != NVML_SUCCESS)
		return r;
	gettimeofday(&tv, NULL);
	now = (unsigned long long)tv.tv_sec * 1000000ULL + (unsigned long long)tv.tv_usec;
	if (now <= last_seen_us)
		now = last_seen_us + 1; /* a driver samples on its own clock: always a new one here */
	n = dev_procs(device, pid, sm, 64);
	for (unsigned i = 0; i < n; i++) {
		if (!sm[i])
			continue;
		if (samples && k < *count)
			samples[k] = (nvmlProcessUtilizationSample_t){ .pid = pid[i],
								       .timeStamp = now,
								       .smUtil = sm[i] };
		k++;
	}
	if (!k)
		return NVML_ERROR_NOT_FOUND;
	if (!samples || k > *count) {
		*count = k;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	*count = k;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *cur, unsigned int *pending)
{
	nvmlReturn_t r = dev_result(device, "mig_ret");

	if (r == NVML_SUCCESS)
		*cur = *pending = (unsigned)dev_number(device, "mig", 0);
	return r;
}
#endif

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
 *   init=N             nvmlInit_v2's result (default 0; 9: driver not loaded): rewritten
 *                      from 9 to 0, a driver loaded after the daemon started
 *   count=N            devices listed now (rewritten: GPUs added or removed while the
 *                      daemon runs)       count_ret=N   nvmlDeviceGetCount_v2's result
 *   I.uuid=TEXT        I.name=TEXT        I.handle_ret=N  nvmlDeviceGetHandleByIndex_v2's
 *   I.energy_mj=N      the energy counter     I.energy_ret=N  its result (3: not supported)
 *   I.energy_run=E:P:T the counter was E mJ at CLOCK_MONOTONIC time T (ns) and runs on by
 *                      itself at P mW, read at the call (instead of energy_mj): a meter whose
 *                      truth does not hang on how often or how late the file is rewritten
 *   I.power_mw=N       the power reading      I.power_ret=N
 *   I.util=N           utilization, percent   I.util_ret=N
 *   I.mig=0|1          MIG mode               I.mig_ret=N
 *   I.procs=P:S,...    compute processes running (pid P), each with a utilization sample of
 *                      S % SM (none when S is 0), stamped with the time of the call
 *   I.procs_ret=N      I.putil_ret=N     the two process calls' results
 *   I.putil_period_ms=N  the driver samples process utilization every N ms (NVML: 1/6 s to
 *                      1 s by product): a call gets a sample stamped at the last period's end,
 *                      none (NOT_FOUND) when that one was seen already; without it, every
 *                      call gets a new sample stamped at the call
 *   I.lost=1           every call on the device fails with GPU_IS_LOST (15)
 *   I.vgpus=V:VM:N:S,...  a vGPU host: active vGPU instances V (unique across devices),
 *                      each serving VM (a UUID, or a domain id with I.vgpu_idtype=0), of a
 *                      type the device holds at most N of, with a utilization sample of S %
 *                      SM (none when S is 0). No key: not a vGPU host (NOT_SUPPORTED)
 *   vgpu.V.mdev=UUID   vGPU V's mediated device    I.vutil_ret=N  the samples call's result
 *
 * A handle names a device by its UUID, as NVML's do (a GPU, not a place in the list): the
 * handle of index I is the one of I.uuid (default GPU-fake-I), and a call on it answers for
 * the index that UUID is listed at now, GPU_IS_LOST when it is listed nowhere (removed, the
 * list rewritten without it). So a test removes a GPU by rewriting count and the uuids, and
 * hands one back by listing its UUID again.
 *
 * Calls are counted in $FAKE_NVML_STATE.calls (one line per nvmlInit_v2/nvmlShutdown) so a
 * test can see the library was shut down, and nvmlDeviceGetPowerUsage calls per device in
 * fake_nvml_power_calls[] (a test finds it with dlsym()), so a test can count what reading a
 * device costs; fake_nvml_calls[] counts every call by kind (FAKE_CALL_*).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "nvml.h"

#define FAKE_MAX_DEVICES 80 /* past VW_GPU_MAX_DEVICES (64) */

struct nvmlDevice_st {
	unsigned index;  /* where its UUID was listed when last looked up */
	char uuid[96];   /* "" a free slot */
};

/* A handle's index now: the reading thread's power() and the sampling thread's calls both
 * relocate it (NVML itself is thread-safe). */
#define IDX(d) __atomic_load_n(&(d)->index, __ATOMIC_RELAXED)

/* Handles, one per UUID ever listed (at most FAKE_MAX_DEVICES). */
static struct nvmlDevice_st devices[FAKE_MAX_DEVICES];
static pthread_mutex_t devices_lock = PTHREAD_MUTEX_INITIALIZER;

/* nvmlDeviceGetPowerUsage calls per device index, from any thread. */
extern unsigned long fake_nvml_power_calls[FAKE_MAX_DEVICES];
unsigned long fake_nvml_power_calls[FAKE_MAX_DEVICES];

/* Every call by kind, from any thread: what a test reads to count what a reading costs. */
enum {
	FAKE_CALL_COUNT,  /* nvmlDeviceGetCount_v2 */
	FAKE_CALL_HANDLE, /* nvmlDeviceGetHandleByIndex_v2 */
	FAKE_CALL_NAME,   /* nvmlDeviceGetUUID, nvmlDeviceGetName */
	FAKE_CALL_DEVICE, /* every other call on a device (energy, power, processes, ...) */
	FAKE_CALL_INIT,   /* nvmlInit_v2 */
	FAKE_CALL__N
};
extern unsigned long fake_nvml_calls[FAKE_CALL__N];
unsigned long fake_nvml_calls[FAKE_CALL__N];

static void counted(unsigned kind)
{
	__atomic_fetch_add(&fake_nvml_calls[kind], 1, __ATOMIC_RELAXED);
}

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

	snprintf(k, sizeof(k), "%u.%s", IDX(d), key);
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

/* The UUID listed at index i now. */
static void uuid_at(unsigned i, char *buf, size_t len)
{
	char k[64];

	snprintf(k, sizeof(k), "%u.uuid", i);
	if (lookup(k, buf, len) < 0)
		snprintf(buf, len, "GPU-fake-%u", i);
}

/* Where d's UUID is listed now (d->index set); -1 when nowhere. */
static int relocate(struct nvmlDevice_st *d)
{
	unsigned long long n = number("count", 0);
	char u[96];

	for (unsigned k = 0; k < n && k < FAKE_MAX_DEVICES; k++) {
		unsigned i = (IDX(d) + k) % (unsigned)(n < FAKE_MAX_DEVICES ? n : FAKE_MAX_DEVICES);

		uuid_at(i, u, sizeof(u));
		if (strcmp(u, d->uuid) == 0) {
			__atomic_store_n(&d->index, i, __ATOMIC_RELAXED);
			return 0;
		}
	}
	return -1;
}

/* A device call's result before it answers: the device's own *_ret, or lost (its UUID listed
 * nowhere, or I.lost). */
static nvmlReturn_t dev_check(struct nvmlDevice_st *d, const char *ret_key)
{
	if (!d)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (relocate(d) < 0 || dev_number(d, "lost", 0))
		return NVML_ERROR_GPU_IS_LOST;
	return (nvmlReturn_t)dev_number(d, ret_key, NVML_SUCCESS);
}

/* dev_check() for a call counted as FAKE_CALL_DEVICE. */
static nvmlReturn_t dev_result(struct nvmlDevice_st *d, const char *ret_key)
{
	counted(FAKE_CALL_DEVICE);
	return dev_check(d, ret_key);
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
	counted(FAKE_CALL_INIT);
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
	nvmlReturn_t r = (nvmlReturn_t)number("count_ret", NVML_SUCCESS);

	counted(FAKE_CALL_COUNT);
	if (r == NVML_SUCCESS)
		*count = (unsigned)(n > FAKE_MAX_DEVICES ? FAKE_MAX_DEVICES : n);
	return r;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
	struct nvmlDevice_st *d = NULL;
	char u[96];

	counted(FAKE_CALL_HANDLE);
	if (index >= number("count", 0) || index >= FAKE_MAX_DEVICES)
		return NVML_ERROR_INVALID_ARGUMENT;
	snprintf(u, sizeof(u), "%u.handle_ret", index);
	if (number(u, NVML_SUCCESS) != NVML_SUCCESS)
		return (nvmlReturn_t)number(u, NVML_SUCCESS);
	uuid_at(index, u, sizeof(u));
	pthread_mutex_lock(&devices_lock);
	for (unsigned k = 0; k < FAKE_MAX_DEVICES && !d; k++)
		if (strcmp(devices[k].uuid, u) == 0 || !devices[k].uuid[0])
			d = &devices[k];
	if (d && !d->uuid[0])
		snprintf(d->uuid, sizeof(d->uuid), "%s", u);
	pthread_mutex_unlock(&devices_lock);
	if (!d)
		return NVML_ERROR_MEMORY;
	__atomic_store_n(&d->index, index, __ATOMIC_RELAXED);
	*device = d;
	return NVML_SUCCESS;
}

static nvmlReturn_t dev_string(nvmlDevice_t d, const char *key, char *buf, unsigned int length)
{
	nvmlReturn_t r = dev_check(d, "none_ret");
	char k[64], v[256];

	counted(FAKE_CALL_NAME);
	if (r != NVML_SUCCESS)
		return r;
	snprintf(k, sizeof(k), "%u.%s", IDX(d), key);
	if (lookup(k, v, sizeof(v)) < 0)
		snprintf(v, sizeof(v), "GPU-fake-%u", IDX(d));
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

	if (device)
		__atomic_fetch_add(&fake_nvml_power_calls[IDX(device)], 1, __ATOMIC_RELAXED);

	if (r == NVML_SUCCESS)
		*mw = (unsigned)dev_number(device, "power_mw", 0);
	return r;
}

#ifndef FAKE_NVML_OLD_DRIVER
nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long *mj);
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *u);
nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *cur, unsigned int *pending);

/* Device d's energy_run counter now, in mJ; def when it has none. One key, read at once, so a
 * rewrite of the file between reads cannot pair one state's energy with another's time. */
static unsigned long long dev_running_energy(const struct nvmlDevice_st *d,
					     unsigned long long def)
{
	unsigned long long e, mw, at, now;
	char k[64], v[128];
	struct timespec ts;

	snprintf(k, sizeof(k), "%u.energy_run", IDX(d));
	if (lookup(k, v, sizeof(v)) < 0 || sscanf(v, "%llu:%llu:%llu", &e, &mw, &at) != 3)
		return def;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
	if (now > at) /* mW x ns = 1e-12 J, so mJ: / 1e9 */
		e += (unsigned long long)((long double)mw * (long double)(now - at) / 1e9L);
	return e;
}

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long *mj)
{
	nvmlReturn_t r = dev_result(device, "energy_ret");

	if (r == NVML_SUCCESS)
		*mj = dev_running_energy(device, dev_number(device, "energy_mj", 0));
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

	snprintf(k, sizeof(k), "%u.procs", IDX(d));
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
	unsigned long long now, period;

	if (r != NVML_SUCCESS)
		return r;
	gettimeofday(&tv, NULL);
	now = (unsigned long long)tv.tv_sec * 1000000ULL + (unsigned long long)tv.tv_usec;
	period = dev_number(device, "putil_period_ms", 0) * 1000ULL;
	if (period) {
		now -= now % period;
		if (now <= last_seen_us)
			return NVML_ERROR_NOT_FOUND;
	} else if (now <= last_seen_us) {
		now = last_seen_us + 1; /* a driver samples on its own clock: always a new one here */
	}
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

/* ---- vGPU hosts ---- */

struct fake_vgpu {
	unsigned inst, max, sm;
	char vm[96];
};

/* Device d's vGPUs, at most max; -1 when it is no vGPU host. */
static int dev_vgpus(const struct nvmlDevice_st *d, struct fake_vgpu *out, unsigned max)
{
	char k[64], v[1024], *save = NULL;
	int n = 0;

	snprintf(k, sizeof(k), "%u.vgpus", IDX(d));
	if (lookup(k, v, sizeof(v)) < 0)
		return -1;
	for (char *t = strtok_r(v, ",", &save); t && (unsigned)n < max;
	     t = strtok_r(NULL, ",", &save)) {
		struct fake_vgpu *g = &out[n];

		*g = (struct fake_vgpu){ 0 };
		if (sscanf(t, "%u:%95[^:]:%u:%u", &g->inst, g->vm, &g->max, &g->sm) == 4)
			n++;
	}
	return n;
}

/* The device and entry of vGPU instance inst; NULL when none has it. */
static const struct nvmlDevice_st *find_vgpu(unsigned inst, struct fake_vgpu *ret)
{
	struct fake_vgpu g[64];

	for (unsigned i = 0; i < number("count", 0) && i < FAKE_MAX_DEVICES; i++) {
		struct nvmlDevice_st at = { .index = i };
		int n = dev_vgpus(&at, g, 64);

		for (int k = 0; k < n; k++)
			if (g[k].inst == inst) {
				char u[96];

				*ret = g[k];
				uuid_at(i, u, sizeof(u));
				for (unsigned j = 0; j < FAKE_MAX_DEVICES; j++)
					if (strcmp(devices[j].uuid, u) == 0) {
						__atomic_store_n(&devices[j].index, i, __ATOMIC_RELAXED);
						return &devices[j];
					}
				return NULL;
			}
	}
	return NULL;
}

nvmlReturn_t nvmlDeviceGetActiveVgpus(nvmlDevice_t device, unsigned int *count,
				      nvmlVgpuInstance_t *instances);
nvmlReturn_t nvmlVgpuInstanceGetVmID(nvmlVgpuInstance_t vgpu, char *vm_id, unsigned int size,
				     nvmlVgpuVmIdType_t *type);
nvmlReturn_t nvmlVgpuInstanceGetMdevUUID(nvmlVgpuInstance_t vgpu, char *buf, unsigned int size);
nvmlReturn_t nvmlVgpuInstanceGetType(nvmlVgpuInstance_t vgpu, nvmlVgpuTypeId_t *type);
nvmlReturn_t nvmlVgpuTypeGetMaxInstances(nvmlDevice_t device, nvmlVgpuTypeId_t type,
					 unsigned int *count);
nvmlReturn_t nvmlDeviceGetVgpuUtilization(nvmlDevice_t device, unsigned long long last_seen_us,
					  nvmlValueType_t *type, unsigned int *count,
					  nvmlVgpuInstanceUtilizationSample_t *samples);

nvmlReturn_t nvmlDeviceGetActiveVgpus(nvmlDevice_t device, unsigned int *count,
				      nvmlVgpuInstance_t *instances)
{
	struct fake_vgpu g[64];
	nvmlReturn_t r = dev_result(device, "vgpus_ret");
	int n;

	if (r != NVML_SUCCESS)
		return r;
	n = dev_vgpus(device, g, 64);
	if (n < 0)
		return NVML_ERROR_NOT_SUPPORTED;
	if ((unsigned)n > *count) {
		*count = (unsigned)n;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	for (int k = 0; k < n; k++)
		instances[k] = g[k].inst;
	*count = (unsigned)n;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlVgpuInstanceGetVmID(nvmlVgpuInstance_t vgpu, char *vm_id, unsigned int size,
				     nvmlVgpuVmIdType_t *type)
{
	struct fake_vgpu g;
	const struct nvmlDevice_st *d = find_vgpu(vgpu, &g);

	if (!d)
		return NVML_ERROR_NOT_FOUND;
	if (strlen(g.vm) >= size)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(vm_id, g.vm, strlen(g.vm) + 1);
	*type = (nvmlVgpuVmIdType_t)dev_number(d, "vgpu_idtype", NVML_VGPU_VM_ID_UUID);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlVgpuInstanceGetMdevUUID(nvmlVgpuInstance_t vgpu, char *buf, unsigned int size)
{
	char k[64], v[128];
	struct fake_vgpu g;

	if (!find_vgpu(vgpu, &g))
		return NVML_ERROR_NOT_FOUND;
	snprintf(k, sizeof(k), "vgpu.%u.mdev", vgpu);
	if (lookup(k, v, sizeof(v)) < 0)
		return NVML_ERROR_NOT_SUPPORTED;
	if (strlen(v) >= size)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(buf, v, strlen(v) + 1);
	return NVML_SUCCESS;
}

/* The fake's vGPU type ids are the most instances a device holds of them. */
nvmlReturn_t nvmlVgpuInstanceGetType(nvmlVgpuInstance_t vgpu, nvmlVgpuTypeId_t *type)
{
	struct fake_vgpu g;

	if (!find_vgpu(vgpu, &g))
		return NVML_ERROR_NOT_FOUND;
	*type = g.max;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlVgpuTypeGetMaxInstances(nvmlDevice_t device, nvmlVgpuTypeId_t type,
					 unsigned int *count)
{
	nvmlReturn_t r = dev_result(device, "none_ret");

	if (r == NVML_SUCCESS)
		*count = type;
	return r;
}

/* Samples as a driver gives them: unsigned int values, stamped now. */
nvmlReturn_t nvmlDeviceGetVgpuUtilization(nvmlDevice_t device, unsigned long long last_seen_us,
					  nvmlValueType_t *type, unsigned int *count,
					  nvmlVgpuInstanceUtilizationSample_t *samples)
{
	struct fake_vgpu g[64];
	nvmlReturn_t r = dev_result(device, "vutil_ret");
	unsigned k = 0;
	struct timeval tv;
	unsigned long long now;
	int n;

	if (r != NVML_SUCCESS)
		return r;
	gettimeofday(&tv, NULL);
	now = (unsigned long long)tv.tv_sec * 1000000ULL + (unsigned long long)tv.tv_usec;
	if (now <= last_seen_us)
		now = last_seen_us + 1;
	n = dev_vgpus(device, g, 64);
	for (int i = 0; i < n; i++) {
		if (!g[i].sm)
			continue;
		if (k < *count)
			samples[k] = (nvmlVgpuInstanceUtilizationSample_t){
				.vgpuInstance = g[i].inst, .timeStamp = now,
				.smUtil = { .uiVal = g[i].sm } };
		k++;
	}
	if (!k)
		return NVML_ERROR_NOT_FOUND;
	if (k > *count) {
		*count = k;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	*type = NVML_VALUE_TYPE_UNSIGNED_INT;
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

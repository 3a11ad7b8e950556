/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GPUs that come and go while the daemon runs (shared/gpu/gpu.c: look_again), over the fake
 * libnvidia-ml.so.1 (fake_nvml.c) on a clock driven by hand: a GPU added after start (a reset
 * that re-enumerates, a GPU handed back by vfio), read from its first interval with its first
 * reading a baseline, said once; one removed (the others moving up the list), said once, not
 * read, its series kept, and read again from a new baseline when back, even at another index
 * and with its counter reset past its last reading (one gap); the driver not loaded at start
 * and loaded later (the GPU Operator's driver container), or its library appearing later,
 * looked for again with back-off; the driver unloaded and reloaded under a running daemon.
 * And what the looking costs: NVML calls per interval, counted in the fake.
 */
#include "vw_test.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_nvml.h"
#include "fixture.h"
#include "gpu.h"
#include "log.h"
#include "macro.h"
#include "prom.h"

#define SEC VW_NSEC_PER_SEC
#define UUID_A "GPU-aaaaaaaa-0000-1111-2222-333344445555"
#define UUID_B "GPU-bbbbbbbb-aaaa-bbbb-cccc-ddddeeeeffff"
#define UUID_C "GPU-cccccccc-1234-5678-9abc-def012345678"

/* The fake's call kinds (fake_nvml.c's FAKE_CALL_*). */
enum { CALL_COUNT, CALL_HANDLE, CALL_NAME, CALL_DEVICE, CALL_INIT, CALL__N };

/* One GPU of the fake's list: a counter (mJ), or power-only when energy_mj is -1. */
struct fgpu {
	const char *uuid;
	long long energy_mj;
	unsigned power_mw;
};

/* The fake listing gpus[0..n) in that order (index = place), then extra lines. */
static void write_gpus(const struct fgpu *gpus, size_t n, const char *extra)
{
	char text[16384];
	int len = snprintf(text, sizeof(text), "count=%zu\n", n);

	for (size_t i = 0; i < n; i++) {
		const struct fgpu *x = &gpus[i];

		len += snprintf(text + len, sizeof(text) - (size_t)len,
				"%zu.uuid=%s\n%zu.name=fake %s\n%zu.power_mw=%u\n", i, x->uuid, i,
				x->uuid + 4, i, x->power_mw);
		if (x->energy_mj < 0)
			len += snprintf(text + len, sizeof(text) - (size_t)len,
					"%zu.energy_ret=3\n", i);
		else
			len += snprintf(text + len, sizeof(text) - (size_t)len,
					"%zu.energy_mj=%lld\n", i, x->energy_mj);
	}
	snprintf(text + len, sizeof(text) - (size_t)len, "%s", extra ? extra : "");
	fake_nvml_write(vw_fixture_tmpdir, text);
}

static int setup(void **state)
{
	(void)state;
	fake_nvml_use(vw_fixture_tmpdir, NULL, 0);
	return 0;
}

/* Log lines while a test runs: how many at warn and above, at info, and all of them. */
static unsigned n_warn, n_info;
static char said[16384];

static void sink(enum vw_log_level level, const char *msg, void *ud)
{
	size_t len = strlen(said);

	(void)ud;
	n_warn += level <= VW_LOG_WARN;
	n_info += level == VW_LOG_INFO;
	snprintf(said + len, sizeof(said) - len, "%s\n", msg);
}

static void listen(void)
{
	n_warn = n_info = 0;
	said[0] = '\0';
	vw_log_set_sink(sink, NULL);
}

/* How many lines said hold s. */
static unsigned lines_with(const char *s)
{
	unsigned n = 0;

	for (const char *p = said; (p = strstr(p, s)); p += strlen(s))
		n++;
	return n;
}

static struct vw_gpus *open_gpus(const char *lib, bool retry)
{
	struct vw_gpu_opts o = { .nvml_library = lib, .idle_window = 720, .manual_ticks = true,
				 .retry = retry };
	struct vw_gpus *g = NULL;

	assert_int_equal(vw_gpus_open(&o, &g), 0);
	assert_non_null(g);
	return g;
}

/* The device of the set named uuid, as of the last close (fails when there is none). */
static struct vw_gpu_view by_uuid(const struct vw_gpus *g, const char *uuid)
{
	struct vw_gpu_view v;

	for (size_t i = 0; i < vw_gpus_count(g); i++) {
		vw_gpus_view(g, i, &v);
		if (strcmp(v.info->uuid, uuid) == 0) {
			assert_int_equal(v.idle_uj + v.active_uj, v.total_uj);
			return v;
		}
	}
	fail_msg("no device %s", uuid);
	return v;
}

/* The fake's calls of one kind so far (any thread's). The test holds the library loaded (the
 * product's dlopen() then shares it), so its counts outlive the product's dlclose(). */
static unsigned long calls(unsigned kind)
{
	static void *dl;
	unsigned long *c;

	if (!dl)
		dl = dlopen(VW_FAKE_NVML, RTLD_NOW);
	assert_non_null(dl);
	c = dlsym(dl, "fake_nvml_calls");
	assert_non_null(c);
	return __atomic_load_n(&c[kind], __ATOMIC_RELAXED);
}

/* One interval of 1 s at t: each counter GPU of gpus[0..n) + mj, sampled, closed. */
static void second(struct vw_gpus *g, struct fgpu *gpus, size_t n, const char *extra,
		   long long mj, uint64_t *t)
{
	for (size_t i = 0; i < n; i++)
		if (gpus[i].energy_mj >= 0)
			gpus[i].energy_mj += mj;
	write_gpus(gpus, n, extra);
	vw_gpus_sample(g, *t += SEC);
	vw_gpus_close_interval(g);
}

/*
 * A third GPU appears while the set runs (a reset that re-enumerates, vfio handing one back):
 * at the next close it is said once at info and read at once, that reading its baseline (its
 * counter's 9e8 mJ since the driver loaded is not energy); from the next interval on its
 * energy is counted to the µJ, beside the others', whose counting goes on unbroken. The
 * looking costs, per interval, one count call and one handle call per listed GPU; names and
 * UUIDs only when the list changed; the devices' own calls as before.
 */
static void test_gpu_added(void **state)
{
	struct fgpu gpus[3] = { { UUID_A, 1000, 60000 }, { UUID_B, -1, 70000 },
				{ UUID_C, 900000000, 80000 } };
	unsigned long c0[CALL__N], c1[CALL__N];
	struct vw_gpu_view va, vc;
	struct vw_gpus *g;
	uint64_t t = 0;

	(void)state;
	write_gpus(gpus, 2, NULL);
	g = open_gpus(VW_FAKE_NVML, false);
	assert_int_equal(vw_gpus_count(g), 2);
	vw_gpus_sample(g, t);
	vw_gpus_close_interval(g);
	for (unsigned k = 0; k < CALL__N; k++)
		c0[k] = calls(k);
	second(g, gpus, 2, NULL, 100000, &t); /* an interval of one sample, as steady */
	for (unsigned k = 0; k < CALL__N; k++)
		c1[k] = calls(k) - c0[k];
	print_message("# steady interval, 2 GPUs, 1 sample: count %lu, handle %lu, name %lu, "
		      "device %lu, init %lu\n", c1[CALL_COUNT], c1[CALL_HANDLE], c1[CALL_NAME],
		      c1[CALL_DEVICE], c1[CALL_INIT]);
	assert_int_equal(c1[CALL_COUNT], 1);
	assert_int_equal(c1[CALL_HANDLE], 2);
	assert_int_equal(c1[CALL_NAME], 0);
	assert_int_equal(c1[CALL_INIT], 0);

	listen();
	second(g, gpus, 3, NULL, 100000, &t); /* listed: found at this close */
	vw_log_set_sink(NULL, NULL);
	assert_int_equal(vw_gpus_count(g), 3);
	assert_int_equal(n_warn, 0);
	assert_int_equal(lines_with("new device"), 1);
	assert_int_equal(lines_with(UUID_C), 1);
	assert_int_equal(by_uuid(g, UUID_C).total_uj, 0); /* nothing yet: its baseline */
	second(g, gpus, 3, NULL, 250000, &t);
	va = by_uuid(g, UUID_A);
	vc = by_uuid(g, UUID_C);
	assert_int_equal(vc.total_uj, 250000000ULL); /* 250 J, to the µJ */
	assert_double_near(vc.watts, 250, 1e-9);
	assert_int_equal(vc.info->index, 2);
	assert_int_equal(vc.gaps + vc.read_errors, 0);
	assert_int_equal(va.total_uj, 450000000ULL); /* 100 + 100 + 250 J, unbroken */
	assert_int_equal(va.gaps, 0);
	assert_double_near((double)by_uuid(g, UUID_B).total_uj, 70e6 * 3, 70e6 * 3 * 0.01);
	vw_gpus_free(g);
}

/*
 * A GPU listed whose handle is refused (NO_PERMISSION: a device node the container may not
 * open) is left out at open and stays a refused handle: not a change each interval, so the
 * looking costs the same 1 count + 1 handle per index, no name calls.
 */
static void test_handle_refused(void **state)
{
	struct fgpu ab[2] = { { UUID_A, 1000, 60000 }, { UUID_B, 1000, 70000 } };
	unsigned long c0[CALL__N];
	struct vw_gpus *g;
	uint64_t t = 0;

	(void)state;
	write_gpus(ab, 2, "1.handle_ret=4\n");
	g = open_gpus(VW_FAKE_NVML, false);
	assert_int_equal(vw_gpus_count(g), 1);
	vw_gpus_sample(g, t);
	for (unsigned k = 0; k < CALL__N; k++)
		c0[k] = calls(k);
	for (int i = 0; i < 3; i++)
		second(g, ab, 2, "1.handle_ret=4\n", 1000, &t);
	assert_int_equal(calls(CALL_COUNT) - c0[CALL_COUNT], 3);
	assert_int_equal(calls(CALL_HANDLE) - c0[CALL_HANDLE], 6);
	assert_int_equal(calls(CALL_NAME) - c0[CALL_NAME], 0);
	assert_int_equal(vw_gpus_count(g), 1);
	assert_int_equal(by_uuid(g, UUID_A).total_uj, 3000000ULL);
	vw_gpus_free(g);
}

/*
 * GPU A, first in the list, is removed (the others move up: B is now index 0): said once at
 * warn, not read from the next interval on (no read errors piling up), its series kept as they
 * were; B, read through its own handle, goes on unbroken. A comes back at index 1 after a
 * reset that switched MIG on, its counter restarted and past its last reading: said once at
 * info, read from a new baseline, the time away one gap, its MIG mode probed again; its `gpu`
 * label still the index it was found at.
 */
static void test_gpu_removed_and_back(void **state)
{
	struct fgpu ab[2] = { { UUID_A, 5000, 60000 }, { UUID_B, 2000, 70000 } };
	struct fgpu b[1] = { { UUID_B, 0, 70000 } };
	struct fgpu ba[2] = { { UUID_B, 0, 70000 }, { UUID_A, 0, 60000 } };
	struct vw_gpu_view va;
	struct vw_gpus *g;
	uint64_t t = 0, errors;
	struct vw_prom_writer *w;
	char *text = NULL;
	size_t len;

	(void)state;
	write_gpus(ab, 2, NULL);
	g = open_gpus(VW_FAKE_NVML, false);
	vw_gpus_sample(g, t);
	second(g, ab, 2, NULL, 50000, &t); /* A 50 J */
	listen();
	b[0].energy_mj = ab[1].energy_mj;
	second(g, b, 1, NULL, 50000, &t); /* A gone: its read fails, the close finds it gone */
	errors = by_uuid(g, UUID_A).read_errors;
	for (int i = 0; i < 3; i++)
		second(g, b, 1, NULL, 50000, &t);
	va = by_uuid(g, UUID_A);
	assert_int_equal(vw_gpus_count(g), 2); /* its series kept */
	assert_int_equal(va.total_uj, 50000000ULL);
	assert_int_equal(va.read_errors, errors); /* not read while gone */
	assert_true(va.gone);
	assert_false(by_uuid(g, UUID_B).gone);
	assert_true(errors <= 1);
	assert_int_equal(lines_with("is gone"), 1);
	/* its energy and process reads failing at the sample it went, then gone: nothing more */
	assert_int_equal(lines_with(UUID_A), 3);
	assert_int_equal(by_uuid(g, UUID_B).total_uj, 250000000ULL); /* 5 x 50 J, unbroken */
	assert_int_equal(by_uuid(g, UUID_B).gaps, 0);

	ba[0].energy_mj = b[0].energy_mj;
	ba[1].energy_mj = 500000; /* reset meanwhile (MIG switched on): 500 J since, past 55 J */
	second(g, ba, 2, "1.mig=1\n", 0, &t); /* listed again: back at this close, its baseline */
	second(g, ba, 2, "1.mig=1\n", 30000, &t);
	vw_log_set_sink(NULL, NULL);
	va = by_uuid(g, UUID_A);
	assert_int_equal(va.total_uj, 80000000ULL); /* 50 J before, 30 J after; nothing between */
	assert_int_equal(va.gaps, 1);
	assert_false(va.gone);
	assert_int_equal(va.info->index, 0); /* found at 0, now listed at 1: the label stays */
	assert_int_equal(lines_with("is back"), 1);
	assert_int_equal(vw_gpus_count(g), 2); /* the same device, not a new one */
	assert_int_equal(lines_with("new device"), 0);

	w = vw_prom_writer_new(VW_PROM_TEXT_0_0_4, 0);
	assert_int_equal(vw_gpus_render(g, w, "n"), 0);
	assert_int_equal(vw_prom_finish(w, &text, &len), 0);
	assert_non_null(strstr(text, "kepler_node_gpu_joules_total{gpu=\"0\",gpu_uuid=\"" UUID_A
				     "\",gpu_name=\"fake aaaaaaaa-0000-1111-2222-333344445555\","
				     "vendor=\"nvidia\",node_name=\"n\"} 80\n"));
	assert_non_null(strstr(text, "virtwatt_node_gpu_energy_gaps_total{gpu=\"0\",gpu_uuid=\""
				     UUID_A "\",node_name=\"n\"} 1\n"));
	assert_non_null(strstr(text, "virtwatt_node_gpu_meter_info{gpu=\"0\",gpu_uuid=\"" UUID_A
				     "\",source=\"nvml\",energy=\"counter\",mig_mode=\"enabled\""));
	free(text);
	vw_prom_writer_free(w);
	vw_gpus_free(g);
}

/*
 * The driver is not loaded at start (libnvidia-ml.so.1 there, nvmlInit: DRIVER_NOT_LOADED):
 * an empty set, said once at info with the fix (the driver root, --gpu.nvml-library); looked
 * for again at the closes with back-off (10 s, 20 s, 40 s ...: 3 tries in the first 60 s, not
 * 60); once the driver is loaded, its GPUs are found at the next try, said, and read from
 * their first reading on as a baseline. Without retry the start is -ENODEV as ever.
 */
static void test_driver_loaded_later(void **state)
{
	struct fgpu ab[2] = { { UUID_A, 123456789, 60000 }, { UUID_B, -1, 100000 } };
	struct vw_gpu_opts o = { .nvml_library = VW_FAKE_NVML, .idle_window = 720,
				 .manual_ticks = true };
	struct vw_gpus *g = NULL;
	unsigned long inits;
	uint64_t t = 0;

	(void)state;
	write_gpus(ab, 2, "init=9\n");
	assert_int_equal(vw_gpus_open(&o, &g), -ENODEV);
	assert_null(g);
	listen();
	g = open_gpus(VW_FAKE_NVML, true);
	assert_int_equal(vw_gpus_count(g), 0);
	assert_int_equal(n_warn, 0);
	assert_int_equal(n_info, 1);
	assert_non_null(strstr(said, "Driver Not Loaded"));
	assert_non_null(strstr(said, "/run/nvidia/driver"));
	assert_non_null(strstr(said, "--gpu.nvml-library"));
	inits = calls(CALL_INIT);
	vw_gpus_sample(g, t);
	for (int i = 0; i < 60; i++)
		second(g, ab, 2, "init=9\n", 1000, &t);
	assert_int_equal(calls(CALL_INIT) - inits, 3); /* at 1 s, 11 s, 31 s */
	assert_int_equal(vw_gpus_count(g), 0);
	assert_int_equal(n_warn, 0);
	assert_int_equal(n_info, 1); /* quiet meanwhile */

	for (int i = 0; i < 80 && vw_gpus_count(g) == 0; i++) /* loaded: found at the next try */
		second(g, ab, 2, NULL, 1000, &t);
	vw_log_set_sink(NULL, NULL);
	assert_int_equal(t, 71 * SEC); /* the try at 71 s */
	assert_int_equal(vw_gpus_count(g), 2);
	assert_non_null(strstr(said, "found after start"));
	assert_int_equal(lines_with(UUID_A), 1);
	assert_int_equal(by_uuid(g, UUID_A).total_uj, 0); /* its baseline */
	vw_gpus_tick(g, t + SEC / 2);
	second(g, ab, 2, NULL, 40000, &t);
	assert_int_equal(by_uuid(g, UUID_A).total_uj, 40000000ULL);
	assert_int_equal(by_uuid(g, UUID_B).total_uj, 100000000ULL); /* 100 W x 1 s */
	assert_int_equal(by_uuid(g, UUID_A).gaps + by_uuid(g, UUID_B).gaps, 0);
	vw_gpus_free(g);
}

/* The library itself appears later (the driver container mounts its root): found then. */
static void test_library_appears_later(void **state)
{
	struct fgpu a[1] = { { UUID_A, 1000, 60000 } };
	char lib[1100];
	struct vw_gpus *g;
	uint64_t t = 0;

	(void)state;
	snprintf(lib, sizeof(lib), "%s/driver-root-libnvidia-ml.so.1", vw_fixture_tmpdir);
	unlink(lib);
	write_gpus(a, 1, NULL);
	listen();
	g = open_gpus(lib, true);
	assert_int_equal(n_info, 1);
	assert_non_null(strstr(said, "cannot load"));
	vw_gpus_sample(g, t);
	second(g, a, 1, NULL, 1000, &t);
	assert_int_equal(vw_gpus_count(g), 0);
	assert_int_equal(symlink(VW_FAKE_NVML, lib), 0);
	for (int i = 0; i < 20 && vw_gpus_count(g) == 0; i++)
		second(g, a, 1, NULL, 1000, &t);
	vw_log_set_sink(NULL, NULL);
	assert_int_equal(vw_gpus_count(g), 1);
	second(g, a, 1, NULL, 7000, &t);
	assert_int_equal(by_uuid(g, UUID_A).total_uj, 7000000ULL);
	vw_gpus_free(g);
	unlink(lib);
}

/*
 * The driver is unloaded under a running set (the driver container restarted for an upgrade):
 * every call fails, the library is opened anew at the close and cannot be (said once at
 * warn), every GPU is gone (each said once), tried again with back-off; reloaded, the GPUs are
 * back, each counter (restarted from 0 by the reload) read from a new baseline, one gap each.
 */
static void test_driver_reloaded(void **state)
{
	struct fgpu a[1] = { { UUID_A, 700000000, 60000 } };
	struct vw_gpus *g;
	unsigned long inits;
	uint64_t t = 0;

	(void)state;
	write_gpus(a, 1, NULL);
	g = open_gpus(VW_FAKE_NVML, false);
	vw_gpus_sample(g, t);
	second(g, a, 1, NULL, 20000, &t);
	listen();
	inits = calls(CALL_INIT);
	for (int i = 0; i < 31; i++) /* unloaded for 31 s */
		second(g, a, 1, "init=9\ncount_ret=9\n0.lost=1\n", 0, &t);
	assert_int_equal(calls(CALL_INIT) - inits, 3); /* at 2 s, 12 s, 32 s: back-off */
	assert_int_equal(lines_with("cannot list the devices"), 1);
	assert_int_equal(lines_with("is gone"), 1);
	a[0].energy_mj = 3000; /* reloaded: its counter from 0 */
	for (int i = 0; i < 60 && lines_with("is back") == 0; i++)
		second(g, a, 1, NULL, 1000, &t);
	assert_int_equal(lines_with("is back"), 1);
	assert_int_equal(lines_with("devices listed again"), 1);
	second(g, a, 1, NULL, 5000, &t);
	vw_log_set_sink(NULL, NULL);
	assert_int_equal(by_uuid(g, UUID_A).total_uj, 25000000ULL); /* 20 J + 5 J */
	assert_int_equal(by_uuid(g, UUID_A).gaps, 1);
	vw_gpus_free(g);
}

/*
 * Adversarial: the same UUID listed at two indexes (a driver answering index 1 with index 0's
 * device, a garbage UUID twice): one device, its energy counted once (the set keyed by UUID
 * had two devices read through one handle, the node's GPU energy doubled).
 */
static void test_uuid_twice(void **state)
{
	struct fgpu aa[2] = { { UUID_A, 1000, 60000 }, { UUID_A, 1000, 60000 } };
	struct vw_gpus *g;
	uint64_t t = 0, total = 0;
	struct vw_gpu_view v;

	(void)state;
	write_gpus(aa, 2, NULL);
	listen();
	g = open_gpus(VW_FAKE_NVML, false);
	vw_gpus_sample(g, t);
	vw_gpus_close_interval(g);
	for (int i = 0; i < 3; i++)
		second(g, aa, 2, NULL, 10000, &t);
	vw_log_set_sink(NULL, NULL);
	for (size_t i = 0; i < vw_gpus_count(g); i++) {
		vw_gpus_view(g, i, &v);
		total += v.total_uj;
	}
	assert_int_equal(vw_gpus_count(g), 1);
	assert_int_equal(total, 30000000ULL); /* 3 x 10 J, once */
	assert_int_equal(lines_with("listed twice"), 1);
	vw_gpus_free(g);
}

/*
 * Adversarial: GPU B's listing flaps (gone, back, gone ... at every close: a device falling off
 * the bus and coming back, a flaky enumeration). Each return is a new baseline and one gap, no
 * energy made up; the lines are rate-limited per device (1 s doubling), not two per flap.
 */
static void test_gpu_flaps(void **state)
{
	struct fgpu ab[2] = { { UUID_A, 1000, 60000 }, { UUID_B, 1000, 70000 } };
	struct vw_gpus *g;
	uint64_t t = 0;

	(void)state;
	write_gpus(ab, 2, NULL);
	g = open_gpus(VW_FAKE_NVML, false);
	vw_gpus_sample(g, t);
	second(g, ab, 2, NULL, 1000, &t);
	listen();
	for (int i = 0; i < 20; i++) {
		ab[1].energy_mj += 1000; /* counts on while unlisted: not energy of a listed span */
		second(g, ab, 1, NULL, 1000, &t);
		second(g, ab, 2, NULL, 1000, &t);
	}
	second(g, ab, 2, NULL, 1000, &t);
	vw_log_set_sink(NULL, NULL);
	assert_true(lines_with("is gone") <= 2);
	assert_true(lines_with("is back") <= 2);
	assert_int_equal(lines_with("is gone"), lines_with("is back"));
	assert_int_equal(by_uuid(g, UUID_A).total_uj, 42000000ULL);
	assert_int_equal(by_uuid(g, UUID_A).gaps, 0);
	/* B: 1 J before, then each flap's listed second a baseline (the one after the last, 1 J) */
	assert_true(by_uuid(g, UUID_B).total_uj <= 2000000ULL);
	assert_int_equal(by_uuid(g, UUID_B).gaps, 20);
	assert_false(by_uuid(g, UUID_B).gone);
	vw_gpus_free(g);
}

/*
 * Adversarial, the reading thread for real (no manual ticks; run under ASan and TSan): power-
 * only GPU B at 100 W flaps gone and back at every close, then the driver goes away, while the
 * thread reads B every 250 ms. The thread is stopped while the devices change and reads no
 * gone device; B's energy never more than 100 W over the time it was listed, one gap a return.
 */
static void test_flap_while_ticking(void **state)
{
	struct fgpu ab[2] = { { UUID_A, 1000, 60000 }, { UUID_B, -1, 100000 } };
	struct vw_gpu_opts o = { .nvml_library = VW_FAKE_NVML, .idle_window = 720 };
	uint64_t t, t0, listed_ns = 0;
	struct vw_gpus *g = NULL;
	bool b_listed = true;
	struct vw_gpu_view vb;

	(void)state;
	write_gpus(ab, 2, NULL);
	assert_int_equal(vw_gpus_open(&o, &g), 0);
	t0 = t = vw_now_ns();
	vw_gpus_sample(g, t);
	vw_gpus_close_interval(g);
	listen();
	for (int i = 0; i < 8; i++) {
		uint64_t now;

		usleep(300000);
		now = vw_now_ns();
		if (b_listed)
			listed_ns += now - t;
		t = now;
		b_listed = i % 2 == 1;
		write_gpus(ab, b_listed ? 2 : 1, NULL);
		vw_gpus_sample(g, t);
		vw_gpus_close_interval(g);
	}
	write_gpus(ab, 2, "init=9\ncount_ret=9\n0.lost=1\n1.lost=1\n"); /* the driver goes */
	for (int i = 0; i < 3; i++) {
		usleep(300000);
		t = vw_now_ns();
		vw_gpus_sample(g, t);
		vw_gpus_close_interval(g);
	}
	vw_log_set_sink(NULL, NULL);
	vb = by_uuid(g, UUID_B);
	assert_true(vb.gone);
	assert_true(vb.total_uj <= listed_ns / 10 + 100000); /* 100 W: 0.1 uJ a ns */
	assert_true(vb.gaps >= 3);
	assert_true(t > t0);
	vw_gpus_free(g);
}

/*
 * Adversarial: GPU A's UUID call fails once, at the look that lists a new GPU C (a transient
 * error while C's arrival re-enumerates). A was gone for good: its handle unchanged, no look
 * saw a change again, its energy lost with no gap counted. It is named again at the next look:
 * back, the span it was unnamed one gap. A GPU whose UUID call fails at start is found so too.
 */
static void test_name_fails_once(void **state)
{
	struct fgpu a[1] = { { UUID_A, 1000, 60000 } };
	struct fgpu ac[2] = { { UUID_A, 1000, 60000 }, { UUID_C, 1000, 60000 } };
	struct vw_gpus *g;
	uint64_t t = 0;

	(void)state;
	write_gpus(a, 1, NULL);
	g = open_gpus(VW_FAKE_NVML, false);
	vw_gpus_sample(g, t);
	second(g, a, 1, NULL, 1000, &t);
	ac[0].energy_mj = a[0].energy_mj;
	second(g, ac, 2, "0.none_ret=15\n", 1000, &t); /* read, then not named at the close */
	second(g, ac, 2, NULL, 1000, &t);
	assert_true(by_uuid(g, UUID_A).gone); /* in that interval */
	for (int i = 0; i < 4; i++)
		second(g, ac, 2, NULL, 1000, &t);
	assert_false(by_uuid(g, UUID_A).gone);
	assert_int_equal(by_uuid(g, UUID_A).total_uj, 6000000ULL); /* 2 J, 1 J a gap, 4 J */
	assert_int_equal(by_uuid(g, UUID_A).gaps, 1);
	vw_gpus_free(g);

	write_gpus(ac, 2, "1.none_ret=15\n"); /* C not named at start */
	g = open_gpus(VW_FAKE_NVML, false);
	assert_int_equal(vw_gpus_count(g), 1);
	t = 0;
	vw_gpus_sample(g, t);
	second(g, ac, 2, NULL, 1000, &t);
	second(g, ac, 2, NULL, 1000, &t);
	assert_int_equal(vw_gpus_count(g), 2);
	assert_int_equal(by_uuid(g, UUID_C).total_uj, 1000000ULL);
	vw_gpus_free(g);
}

/*
 * Adversarial: 70 GPUs listed, then the first removed (the others moving up, the 65th now within
 * the first 64 indexes): the first 64 are read, said once; the 65th, new, finds every slot taken
 * (slots never move nor are reused: 64 for the set's life), said once and left out; the looks
 * cost 1 count + 64 handles an interval, no name calls while nothing changes.
 */
static void test_past_64(void **state)
{
	static struct fgpu gpus[70];
	static char uuids[70][48];
	unsigned long c0;
	struct vw_gpus *g;
	uint64_t t = 0;

	(void)state;
	for (int i = 0; i < 70; i++) {
		snprintf(uuids[i], sizeof(uuids[i]), "GPU-%08d-0000-0000-0000-000000000000", i);
		gpus[i] = (struct fgpu){ uuids[i], 1000, 50000 };
	}
	write_gpus(gpus, 70, NULL);
	listen();
	g = open_gpus(VW_FAKE_NVML, false);
	assert_int_equal(vw_gpus_count(g), 64);
	assert_int_equal(lines_with("the first 64 are read"), 1);
	vw_gpus_sample(g, t);
	second(g, gpus, 70, NULL, 1000, &t);
	c0 = calls(CALL_NAME);
	second(g, gpus, 70, NULL, 1000, &t);
	assert_int_equal(calls(CALL_NAME) - c0, 0);
	for (int i = 0; i < 3; i++)
		second(g, gpus + 1, 69, NULL, 1000, &t);
	vw_log_set_sink(NULL, NULL);
	assert_int_equal(vw_gpus_count(g), 64);
	assert_int_equal(lines_with("devices known already"), 1);
	assert_true(by_uuid(g, uuids[0]).gone);
	assert_false(by_uuid(g, uuids[63]).gone);
	assert_int_equal(by_uuid(g, uuids[63]).total_uj, 5000000ULL);
	assert_int_equal(by_uuid(g, uuids[63]).gaps, 0);
	vw_gpus_free(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_gpu_added, setup),
		cmocka_unit_test_setup(test_handle_refused, setup),
		cmocka_unit_test_setup(test_gpu_removed_and_back, setup),
		cmocka_unit_test_setup(test_driver_loaded_later, setup),
		cmocka_unit_test_setup(test_library_appears_later, setup),
		cmocka_unit_test_setup(test_driver_reloaded, setup),
		cmocka_unit_test_setup(test_uuid_twice, setup),
		cmocka_unit_test_setup(test_gpu_flaps, setup),
		cmocka_unit_test_setup(test_flap_while_ticking, setup),
		cmocka_unit_test_setup(test_name_fails_once, setup),
		cmocka_unit_test_setup(test_past_64, setup),
	};

	return cmocka_run_group_tests(tests, vw_fixture_tmpdir_setup, vw_fixture_tmpdir_teardown);
}

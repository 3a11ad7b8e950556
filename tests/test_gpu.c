/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The GPU set (shared/gpu/gpu.h) over the fake libnvidia-ml.so.1 (fake_nvml.c), loaded through
 * the product's dlopen() path, on a clock driven by hand. Two GPUs: GPU 0 with the energy
 * counter, GPU 1 power-only (its energy call says NOT_SUPPORTED). Known energy comes back to
 * the µJ, known power within 1 %; a counter that goes back (a driver reload) counts nothing
 * negative and nothing invented; no library or no driver is -ENODEV with one info line; an old
 * driver without the energy call still gives power; a GPU that falls off the bus costs only
 * its own span; idle and active add up to the total exactly, at a configured idle power or at
 * the floor the device sustains. A power-only GPU is read on a thread of its own as well (left
 * to the test here: manual_ticks, vw_gpus_tick()) but in test_thread: a late sample does not
 * spread its reading over its whole wait, a failed reading's span is a gap, and the fake counts
 * the power calls that costs (fake_nvml_power_calls[], found with dlsym()).
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
#include "ticker.h"

#define SEC VW_NSEC_PER_SEC
#define UUID0 "GPU-0a1b2c3d-0000-1111-2222-333344445555"
#define UUID1 "GPU-9f8e7d6c-aaaa-bbbb-cccc-ddddeeeeffff"

static char state_path[1024];

/* The fake's state: GPU 0's counter (mJ) and GPU 1's power (mW), utilization, extra lines. */
struct fake {
	unsigned long long energy0_mj;
	unsigned power0_mw, power1_mw;
	unsigned util0, util1;
	const char *extra;
};

static void write_state(const struct fake *f)
{
	char text[2048];

	snprintf(text, sizeof(text),
		 "count=2\n"
		 "0.uuid=" UUID0 "\n0.name=NVIDIA A100-SXM4-40GB\n0.energy_mj=%llu\n"
		 "0.power_mw=%u\n0.util=%u\n0.mig=1\n"
		 "1.uuid=" UUID1 "\n1.name=Tesla T4\n1.energy_ret=3\n1.power_mw=%u\n"
		 "1.util=%u\n1.mig_ret=3\n%s",
		 f->energy0_mj, f->power0_mw, f->util0, f->power1_mw, f->util1,
		 f->extra ? f->extra : "");
	fake_nvml_write(vw_fixture_tmpdir, text);
}

static int setup(void **state)
{
	(void)state;
	fake_nvml_use(vw_fixture_tmpdir, state_path, sizeof(state_path));
	return 0;
}

/* Log lines at warn or above, and all lines, while a test runs. */
static unsigned n_warn, n_lines;
static char last_line[1024];

static void sink(enum vw_log_level level, const char *msg, void *ud)
{
	(void)ud;
	n_lines++;
	n_warn += level <= VW_LOG_WARN;
	snprintf(last_line, sizeof(last_line), "%s", msg);
}

static struct vw_gpus *open_gpus(const char *lib, double idle_w, size_t window)
{
	/* The reading thread's ticks left to the test (vw_gpus_tick()), on its own clock. */
	struct vw_gpu_opts o = { .nvml_library = lib, .idle_w = idle_w, .idle_window = window,
				 .manual_ticks = true };
	struct vw_gpus *g = NULL;

	assert_int_equal(vw_gpus_open(&o, &g), 0);
	assert_non_null(g);
	return g;
}

/* The fake in state f, then the GPUs opened over lib. */
static struct vw_gpus *start(const struct fake *f, const char *lib, double idle_w, size_t window)
{
	write_state(f);
	return open_gpus(lib, idle_w, window);
}

static struct vw_gpu_view view(const struct vw_gpus *g, size_t i)
{
	struct vw_gpu_view v;

	vw_gpus_view(g, i, &v);
	assert_int_equal(v.idle_uj + v.active_uj, v.total_uj); /* always exact */
	return v;
}

static void test_two_gpus_energy_and_power(void **state)
{
	struct fake f = { .energy0_mj = 123456789, .power0_mw = 61000, .power1_mw = 70000 };
	struct vw_gpus *g;
	struct vw_gpu_view v0, v1;
	double expect1_j = 0;
	uint64_t t = 10 * SEC;

	(void)state;
	g = start(&f, VW_FAKE_NVML, 0, 720);
	assert_int_equal(vw_gpus_count(g), 2);
	v0 = view(g, 0);
	v1 = view(g, 1);
	assert_int_equal(v0.info->index, 0);
	assert_string_equal(v0.info->uuid, UUID0);
	assert_string_equal(v0.info->name, "NVIDIA A100-SXM4-40GB");
	assert_true(v0.info->has_energy);
	assert_int_equal(v0.info->mig, VW_GPU_MIG_ENABLED);
	assert_string_equal(v0.vendor, "nvidia");
	assert_string_equal(v1.info->uuid, UUID1);
	assert_false(v1.info->has_energy);
	assert_true(v1.info->has_power);
	assert_int_equal(v1.info->mig, VW_GPU_MIG_UNSUPPORTED);

	vw_gpus_sample(g, t); /* baselines */
	/* Five seconds, sampled every 250 ms: GPU 0's counter +250.5 J per second, GPU 1's power
	 * stepping between 70 and 130 W. */
	for (int i = 1; i <= 20; i++) {
		f.energy0_mj += 62625;
		f.power1_mw = 70000 + (unsigned)(i % 4) * 20000;
		write_state(&f);
		t += SEC / 4;
		expect1_j += f.power1_mw / 1000.0 * 0.25;
		vw_gpus_sample(g, t);
	}
	vw_gpus_close_interval(g);
	v0 = view(g, 0);
	v1 = view(g, 1);
	assert_int_equal(v0.total_uj, 1252500000ULL); /* exact: 20 x 62.625 J */
	assert_double_near(v0.watts, 250.5, 1e-9);
	assert_double_near((double)v1.total_uj / 1e6, expect1_j, expect1_j * 0.01);
	assert_double_near(v1.watts, expect1_j / 5.0, expect1_j / 5.0 * 0.01);
	assert_int_equal(v0.gaps + v1.gaps + v0.read_errors + v1.read_errors, 0);
	vw_gpus_free(g);
}

/* A driver reload (or a GPU reset) sets the counter back: no negative energy, none invented;
 * counting goes on from the new value. */
static void test_counter_reset(void **state)
{
	struct fake f = { .energy0_mj = 900000000, .power0_mw = 61000, .power1_mw = 70000 };
	struct vw_gpus *g;
	struct vw_gpu_view v0;
	uint64_t t = 0;

	(void)state;
	g = start(&f, VW_FAKE_NVML, 0, 720);
	vw_gpus_sample(g, t);
	f.energy0_mj += 100000; /* +100 J */
	write_state(&f);
	vw_gpus_sample(g, t += SEC);
	f.energy0_mj = 40000; /* reloaded: 40 J since, unknowable how much before */
	write_state(&f);
	vw_gpus_sample(g, t += SEC);
	f.energy0_mj += 100000;
	write_state(&f);
	vw_gpus_sample(g, t += SEC);
	vw_gpus_close_interval(g);
	v0 = view(g, 0);
	assert_int_equal(v0.total_uj, 200000000ULL); /* 100 J + 100 J, the reload's span skipped */
	assert_int_equal(v0.gaps, 1);
	assert_true(v0.watts >= 0);
	vw_gpus_free(g);
}

/*
 * A counter that leaps (1e15 mJ in a second: a bit flip, a hostile or broken driver) is junk,
 * not energy: a gap, said once at warn, counting goes on from the new value; and a power-only
 * device reading 4.29 MW (NVML's largest mW) or 20 kW counts nothing for that span (a gap).
 */
static void test_counter_jump(void **state)
{
	struct fake f = { .energy0_mj = 1000000, .power0_mw = 61000, .power1_mw = 100000 };
	struct vw_gpu_view v0, v1;
	struct vw_gpus *g;
	uint64_t t = 0;

	(void)state;
	g = start(&f, VW_FAKE_NVML, 0, 720);
	n_warn = 0;
	vw_log_set_sink(sink, NULL);
	vw_gpus_sample(g, t);
	f.energy0_mj += 100000; /* +100 J */
	write_state(&f);
	vw_gpus_sample(g, t += SEC);
	f.energy0_mj += 1000000000000000ULL; /* +1e12 J in 1 s */
	f.power1_mw = 4294967295u;
	write_state(&f);
	vw_gpus_sample(g, t += SEC);
	assert_int_equal(n_warn, 2);
	assert_non_null(strstr(last_line, "power"));
	f.energy0_mj += 100000;
	f.power1_mw = 100000;
	write_state(&f);
	vw_gpus_sample(g, t += SEC);
	f.power1_mw = 20000000; /* 20 kW: over the ceiling too */
	write_state(&f);
	vw_gpus_tick(g, t + SEC / 2);
	f.power1_mw = 100000;
	write_state(&f);
	vw_gpus_sample(g, t += SEC);
	vw_gpus_close_interval(g);
	vw_log_set_sink(NULL, NULL);
	v0 = view(g, 0);
	v1 = view(g, 1);
	assert_int_equal(v0.total_uj, 200000000ULL); /* the leap's second skipped */
	assert_int_equal(v0.gaps, 1);
	assert_true(v0.watts < 1000);
	/* 0-1 s at 100 W; 1-2 s broken; 2-3 s only sets the time; 3-3.5 s broken; 3.5-4 s none
	 * read until the last sample (100 W from 3.5 s on would be 50 J): at most 150 J */
	assert_true(v1.total_uj <= 150000000ULL);
	assert_true(v1.gaps >= 2);
	vw_gpus_free(g);
}

/*
 * GPU 0's counter stops while its power reads 300 W: not lost silently. Still for 3 s (a slow
 * counter) or at 5 W (an idle one) is nothing; still for 5 s at 300 W is one gap for the whole
 * stretch, said once at warn; moving again, it counts as before.
 */
static void test_counter_stuck(void **state)
{
	struct fake f = { .energy0_mj = 1000000, .power0_mw = 300000, .power1_mw = 100000 };
	struct vw_gpu_view v0;
	struct vw_gpus *g;
	uint64_t t = 0;

	(void)state;
	g = start(&f, VW_FAKE_NVML, 0, 720);
	n_warn = 0;
	vw_log_set_sink(sink, NULL);
	vw_gpus_sample(g, t);
	for (int i = 0; i < 3; i++) /* still for 3 s at 300 W */
		vw_gpus_sample(g, t += SEC);
	f.energy0_mj += 900000;
	write_state(&f);
	vw_gpus_sample(g, t += SEC); /* caught up: 900 J */
	f.power0_mw = 5000;
	write_state(&f);
	for (int i = 0; i < 8; i++) /* still for 8 s at 5 W */
		vw_gpus_sample(g, t += SEC);
	vw_gpus_close_interval(g);
	v0 = view(g, 0);
	assert_int_equal(v0.gaps, 0);
	assert_int_equal(n_warn, 0);
	f.energy0_mj += 40000;
	f.power0_mw = 300000;
	write_state(&f);
	vw_gpus_sample(g, t += SEC);
	for (int i = 0; i < 10; i++) /* stuck for 10 s at 300 W */
		vw_gpus_sample(g, t += SEC);
	assert_int_equal(n_warn, 1);
	assert_non_null(strstr(last_line, "stuck"));
	f.energy0_mj += 300000;
	write_state(&f);
	vw_gpus_sample(g, t += SEC);
	vw_gpus_close_interval(g);
	vw_log_set_sink(NULL, NULL);
	v0 = view(g, 0);
	assert_int_equal(v0.gaps, 1);
	assert_int_equal(v0.total_uj, (900000ULL + 40000 + 300000) * 1000);
	vw_gpus_free(g);
}

static void test_library_missing(void **state)
{
	struct vw_gpu_opts o = { .nvml_library = "/nonexistent/libnvidia-ml.so.1",
				 .idle_window = 720 };
	struct vw_gpus *g = NULL;

	(void)state;
	n_warn = n_lines = 0;
	vw_log_set_sink(sink, NULL);
	assert_int_equal(vw_gpus_open(&o, &g), -ENODEV);
	vw_log_set_sink(NULL, NULL);
	assert_null(g);
	assert_int_equal(n_warn, 0); /* quietly: one info line */
	assert_int_equal(n_lines, 1);
	assert_non_null(strstr(last_line, "cannot load /nonexistent/libnvidia-ml.so.1"));
	/* No state file: the fake acts as a library whose driver is not loaded. */
	n_warn = n_lines = 0;
	o.nvml_library = VW_FAKE_NVML;
	vw_log_set_sink(sink, NULL);
	assert_int_equal(vw_gpus_open(&o, &g), -ENODEV);
	vw_log_set_sink(NULL, NULL);
	assert_int_equal(n_warn, 0);
	assert_int_equal(n_lines, 1);
	assert_non_null(strstr(last_line, "Driver Not Loaded"));
	/* A driver with no device. */
	fake_nvml_write(vw_fixture_tmpdir, "count=0\n");
	assert_int_equal(vw_gpus_open(&o, &g), -ENODEV);
	assert_int_equal(vw_gpus_render(NULL, NULL, "n"), 0); /* nothing to render */
	vw_gpus_sample(NULL, 1);
	vw_gpus_close_interval(NULL);
}

/* An old driver's library without nvmlDeviceGetTotalEnergyConsumption (nor utilization, nor
 * MIG): the GPUs are still there, read for power. */
static void test_old_driver_symbols_missing(void **state)
{
	struct fake f = { .energy0_mj = 1000, .power0_mw = 61000, .power1_mw = 70000 };
	struct vw_gpus *g;
	struct vw_gpu_view v0;

	(void)state;
	g = start(&f, VW_FAKE_NVML_OLD, 0, 720);
	assert_int_equal(vw_gpus_count(g), 2);
	v0 = view(g, 0);
	assert_false(v0.info->has_energy);
	assert_true(v0.info->has_power);
	assert_false(v0.info->has_utilization);
	assert_int_equal(v0.info->mig, VW_GPU_MIG_UNSUPPORTED);
	vw_gpus_sample(g, 0);
	vw_gpus_sample(g, 2 * SEC);
	vw_gpus_close_interval(g);
	v0 = view(g, 0);
	assert_int_equal(v0.total_uj, 122000000ULL); /* 61 W x 2 s */
	assert_true(isnan(v0.util));
	vw_gpus_free(g);
}

/*
 * Both GPUs fall off the bus for two seconds (GPU_IS_LOST): GPU 1's span is lost (power cannot
 * be known); GPU 0 comes back reset, its counter restarted and past its last reading (155 J
 * since the reset against 55 J before): its first reading is a new baseline and the time lost
 * one gap, where the counter's rule alone counted the 100 J difference as energy, silently.
 * Then GPU 0's reads fail otherwise (an unknown error) for a second: its counter covers that
 * span in full.
 */
static void test_gpu_lost(void **state)
{
	struct fake f = { .energy0_mj = 5000, .power0_mw = 61000, .power1_mw = 100000 };
	struct vw_gpus *g;
	struct vw_gpu_view v0, v1;
	uint64_t t = 0;

	(void)state;
	g = start(&f, VW_FAKE_NVML, 0, 720);
	vw_gpus_sample(g, t);
	f.energy0_mj += 50000;
	write_state(&f);
	vw_gpus_sample(g, t += SEC);
	f.extra = "0.lost=1\n1.lost=1\n";
	write_state(&f);
	vw_gpus_sample(g, t += SEC);
	vw_gpus_sample(g, t += SEC);
	f.energy0_mj = 155000; /* reset while lost: 155 J since, higher than the 55 J before */
	f.extra = NULL;
	write_state(&f);
	vw_gpus_sample(g, t += SEC); /* back: each only sets its baseline again */
	f.energy0_mj += 30000;
	write_state(&f);
	vw_gpus_sample(g, t += SEC);
	vw_gpus_close_interval(g);
	v0 = view(g, 0);
	v1 = view(g, 1);
	assert_int_equal(v0.total_uj, 80000000ULL); /* 50 J before, 30 J after */
	assert_int_equal(v0.read_errors, 2);
	assert_int_equal(v0.gaps, 1); /* the span lost, once */
	assert_int_equal(v1.total_uj, 200000000ULL); /* 100 W x (1 s before + 1 s after) */
	assert_int_equal(v1.read_errors, 2);
	assert_int_equal(v1.gaps, 1); /* the span the failures broke, once */

	f.extra = "0.energy_ret=999\n"; /* not a lost GPU: the counter keeps counting */
	f.energy0_mj += 40000;
	write_state(&f);
	vw_gpus_sample(g, t += SEC);
	f.extra = NULL;
	f.energy0_mj += 10000;
	write_state(&f);
	vw_gpus_sample(g, t += SEC);
	vw_gpus_close_interval(g);
	v0 = view(g, 0);
	assert_int_equal(v0.total_uj, 130000000ULL); /* + 50 J: the span covered */
	assert_int_equal(v0.read_errors, 3);
	assert_int_equal(v0.gaps, 1);
	vw_gpus_free(g);
}

/* Configured idle power: idle = W x time, active the rest, exactly. */
static void test_configured_idle(void **state)
{
	struct fake f = { .energy0_mj = 0, .power0_mw = 0, .power1_mw = 90000, .util1 = 50 };
	struct vw_gpus *g;
	struct vw_gpu_view v0, v1;

	(void)state;
	g = start(&f, VW_FAKE_NVML, 50, 720);
	vw_gpus_sample(g, 0);
	f.energy0_mj = 300000; /* 300 J in 2 s: 150 W */
	write_state(&f);
	vw_gpus_sample(g, 2 * SEC);
	vw_gpus_close_interval(g);
	v0 = view(g, 0);
	v1 = view(g, 1);
	assert_int_equal(v0.idle_method, VW_IDLE_CONFIGURED);
	assert_int_equal(v0.idle_uj, 100000000ULL);
	assert_int_equal(v0.active_uj, 200000000ULL);
	assert_double_near(v0.idle_baseline_w, 50, 0);
	assert_int_equal(v1.idle_uj, 100000000ULL);
	assert_int_equal(v1.active_uj, 80000000ULL); /* 90 W - 50 W, 2 s */
	assert_double_near(v1.util, 0.5, 1e-12);
	vw_gpus_free(g);
}

/* One 5 s interval of GPU 1 at power_w and utilization util. */
static void interval(struct vw_gpus *g, struct fake *f, uint64_t *t, unsigned power_w,
		     unsigned util)
{
	f->power1_mw = power_w * 1000;
	f->util1 = util;
	write_state(f);
	for (int i = 0; i < 5; i++)
		vw_gpus_sample(g, *t += SEC);
	vw_gpus_close_interval(g);
}

/* No configured idle: residual until the device has sustained a low level, then the floor,
 * which follows a drop of the idle power. */
static void test_idle_floor_tracks(void **state)
{
	struct fake f = { .energy0_mj = 0, .power0_mw = 0, .power1_mw = 250000, .util1 = 90 };
	struct vw_gpus *g;
	struct vw_gpu_view v1;
	uint64_t t = 0;

	(void)state;
	g = start(&f, VW_FAKE_NVML, 0, 60);
	vw_gpus_sample(g, t);
	interval(g, &f, &t, 250, 90);
	v1 = view(g, 1);
	assert_int_equal(v1.idle_method, VW_IDLE_RESIDUAL);
	assert_int_equal(v1.int_idle_uj, 125000000ULL); /* (1 - 0.9) x 1250 J */
	for (int i = 0; i < 3; i++)
		interval(g, &f, &t, 60, 0);
	interval(g, &f, &t, 250, 90);
	v1 = view(g, 1);
	assert_int_equal(v1.idle_method, VW_IDLE_FLOOR);
	assert_double_near(v1.idle_baseline_w, 60, 1e-9);
	assert_int_equal(v1.int_idle_uj, 300000000ULL);  /* 60 W x 5 s */
	assert_int_equal(v1.int_active_uj, 950000000ULL); /* 190 W x 5 s */
	for (int i = 0; i < 3; i++)
		interval(g, &f, &t, 42, 1);
	v1 = view(g, 1);
	interval(g, &f, &t, 250, 90);
	v1 = view(g, 1);
	assert_double_near(v1.idle_baseline_w, 42, 1e-9);
	vw_gpus_free(g);
}

/* The families as Prometheus text, with Kepler's names and labels. */
static void test_render(void **state)
{
	struct fake f = { .energy0_mj = 0, .power0_mw = 0, .power1_mw = 90000, .util1 = 50 };
	struct vw_prom_writer *w = vw_prom_writer_new(VW_PROM_TEXT_0_0_4, 0);
	struct vw_gpus *g;
	char *text = NULL;
	size_t len;

	(void)state;
	g = start(&f, VW_FAKE_NVML, 30, 720);
	vw_gpus_sample(g, 0);
	f.energy0_mj = 200000;
	write_state(&f);
	vw_gpus_sample(g, 2 * SEC);
	vw_gpus_close_interval(g);
	assert_int_equal(vw_gpus_render(g, w, "node-a"), 0);
	assert_int_equal(vw_prom_finish(w, &text, &len), 0);
	assert_non_null(strstr(text, "kepler_node_gpu_joules_total{gpu=\"0\",gpu_uuid=\"" UUID0
				     "\",gpu_name=\"NVIDIA A100-SXM4-40GB\",vendor=\"nvidia\","
				     "node_name=\"node-a\"} 200\n"));
	assert_non_null(strstr(text, "kepler_node_gpu_idle_joules_total{gpu=\"1\",gpu_uuid=\"" UUID1
				     "\",gpu_name=\"Tesla T4\",vendor=\"nvidia\",node_name=\"node-a\"} "
				     "60\n"));
	assert_non_null(strstr(text, "kepler_node_gpu_active_watts{gpu=\"0\""));
	assert_non_null(strstr(text, "kepler_node_gpu_info{gpu=\"1\",gpu_uuid=\"" UUID1
				     "\",gpu_name=\"Tesla T4\",vendor=\"nvidia\",node_name=\"node-a\"} 1\n"));
	assert_non_null(strstr(text, "virtwatt_node_gpu_meter_info{gpu=\"0\",gpu_uuid=\"" UUID0
				     "\",source=\"nvml\",energy=\"counter\",mig_mode=\"enabled\","
				     "node_name=\"node-a\"} 1\n"));
	assert_non_null(strstr(text, "energy=\"power\",mig_mode=\"unsupported\""));
	assert_non_null(strstr(text, "virtwatt_node_gpu_idle_baseline_watts{gpu=\"1\",gpu_uuid=\""
				     UUID1 "\",method=\"configured\",node_name=\"node-a\"} 30\n"));
	assert_non_null(strstr(text, "virtwatt_node_gpu_usage_ratio{gpu=\"1\""));
	free(text);
	vw_prom_writer_free(w);
	vw_gpus_free(g);
}

/* The active energy of the last interval for pid (0 when it got none). */
static uint64_t pid_uj(const struct vw_gpus *g, uint32_t pid, uint64_t *ret_active)
{
	struct vw_gpu_pid_energy e[16];
	size_t n = vw_gpus_process_energy(g, e, ARRAY_SIZE(e), ret_active);

	for (size_t i = 0; i < n; i++)
		if (e[i].pid == pid)
			return e[i].active_uj;
	return 0;
}

/* GPU 0: two processes sampled at 60 % and 20 % SM share its active energy 3 : 1; GPU 1: one
 * process listed without samples takes all of its active energy; the same PID on both GPUs
 * gets both shares. Nothing is left over. */
static void test_process_shares(void **state)
{
	struct fake f = { .energy0_mj = 0, .power1_mw = 90000, .util0 = 80, .util1 = 50,
			  .extra = "0.procs=4242:60,5151:20\n1.procs=4242:0\n" };
	struct vw_gpus *g;
	uint64_t active = 0, a0, a1;

	(void)state;
	g = start(&f, VW_FAKE_NVML, 50, 720);
	vw_gpus_sample(g, 0);
	f.energy0_mj = 500000; /* 500 J in 2 s: 250 W, 150 W above the configured 50 W */
	write_state(&f);
	vw_gpus_sample(g, SEC);
	vw_gpus_sample(g, 2 * SEC);
	vw_gpus_close_interval(g);
	a0 = view(g, 0).int_active_uj;
	a1 = view(g, 1).int_active_uj;
	assert_int_equal(a0, 400000000ULL);
	assert_int_equal(a1, 80000000ULL); /* 90 - 50 W, 2 s */
	assert_int_equal(pid_uj(g, 5151, &active), a0 / 4);
	assert_int_equal(pid_uj(g, 4242, &active), a0 * 3 / 4 + a1);
	assert_int_equal(active, a0 + a1);
	assert_int_equal(pid_uj(g, 9999, &active), 0);
	/* The next interval without processes: nobody gets anything, it is the node's. */
	f.extra = NULL;
	write_state(&f);
	vw_gpus_sample(g, 3 * SEC);
	vw_gpus_close_interval(g);
	assert_int_equal(pid_uj(g, 4242, &active), 0);
	vw_gpus_free(g);
}

/* GPU 0's process calls start saying NOT_SUPPORTED mid-run (MIG enabled: the parent device
 * lists nothing), then list again (MIG off): its processes get their shares again, not the
 * node's for good. The stretch is complained about at warn, its end said. */
static void test_process_list_returns(void **state)
{
	struct fake f = { .energy0_mj = 0, .power1_mw = 90000, .util0 = 80,
			  .extra = "0.procs=4242:60\n" };
	struct vw_gpus *g;
	uint64_t active = 0, t = 0;

	(void)state;
	g = start(&f, VW_FAKE_NVML, 50, 720);
	n_warn = 0;
	vw_log_set_sink(sink, NULL);
	vw_gpus_sample(g, t);
	f.energy0_mj += 250000;
	write_state(&f);
	vw_gpus_sample(g, t += SEC);
	vw_gpus_close_interval(g);
	assert_true(pid_uj(g, 4242, &active) > 0);
	f.extra = "0.procs=4242:60\n0.procs_ret=3\n0.putil_ret=3\n";
	for (int i = 0; i < 3; i++) {
		f.energy0_mj += 250000;
		write_state(&f);
		vw_gpus_sample(g, t += SEC);
	}
	vw_gpus_close_interval(g);
	assert_int_equal(pid_uj(g, 4242, &active), 0);
	assert_int_equal(n_warn, 1);
	f.extra = "0.procs=4242:60\n";
	f.energy0_mj += 250000;
	write_state(&f);
	vw_gpus_sample(g, t += SEC);
	vw_gpus_close_interval(g);
	vw_log_set_sink(NULL, NULL);
	assert_int_equal(pid_uj(g, 4242, &active), 200000000ULL); /* 250 - 50 W, 1 s */
	assert_non_null(strstr(last_line, "listed again"));
	vw_gpus_free(g);
}

#define VM_A "6f1c2a9e-3b4d-4e5f-8a7b-0c1d2e3f4a5b"
#define VM_B "0b6cbd1e-7a55-4f0e-9b8a-58a0b4c3d2e1"
#define VM_C "c3a0f6de-1111-4222-8333-944455556666"

/* VM vm's entry of the last interval (zeroed when it got none). */
static struct vw_gpu_vgpu_energy vm_energy(const struct vw_gpus *g, const char *vm)
{
	struct vw_gpu_vgpu_energy e[8];
	size_t n = vw_gpus_vgpu_energy(g, e, ARRAY_SIZE(e));

	for (size_t i = 0; i < n; i++)
		if (strcmp(e[i].vm_id, vm) == 0)
			return e[i];
	return (struct vw_gpu_vgpu_energy){ 0 };
}

/*
 * A vGPU host. GPU 0 (400 J active, 100 J idle over 2 s) holds VM A's vGPU at 60 % SM and
 * VM B's at 20 %, both of a type it holds 4 of, beside a host process at 20 %, and VM C's
 * vGPU (a type it holds 2 of), listed for the second tick only, without samples. GPU 1
 * (80 J active, 100 J idle) holds another vGPU of VM A (a type it holds 2 of), alone at 50 %.
 * Active energy by SM share (A 240 + 80 J, B 80 J, the process 80 J); idle by reservation
 * for the ticks listed (A 25 + 50 J, B 25 J, C 1/2 x 1/2 = 25 J), the rest the node's. An
 * interval after the vGPUs went: nothing for them.
 */
static void test_vgpu_shares(void **state)
{
	struct fake f = { .energy0_mj = 0, .power1_mw = 100000, .util0 = 100, .util1 = 50,
			  .extra = "0.procs=4242:20\n0.vgpus=7:" VM_A ":4:60,8:" VM_B ":4:20\n"
				   "1.vgpus=10:" VM_A ":2:50\nvgpu.7.mdev=" VM_C "\n" };
	struct vw_gpus *g;
	struct vw_gpu_vgpu_energy a, b, c;
	uint64_t active = 0;

	(void)state;
	g = start(&f, VW_FAKE_NVML, 50, 720);
	vw_gpus_sample(g, 0);
	vw_gpus_sample(g, SEC);
	f.energy0_mj = 500000; /* 500 J in 2 s: 400 J above the configured 50 W */
	f.extra = "0.procs=4242:20\n0.vgpus=7:" VM_A ":4:60,8:" VM_B ":4:20,9:" VM_C ":2:0\n"
		  "1.vgpus=10:" VM_A ":2:50\nvgpu.7.mdev=" VM_C "\n";
	write_state(&f);
	vw_gpus_sample(g, 2 * SEC);
	vw_gpus_close_interval(g);
	assert_int_equal(view(g, 0).int_active_uj, 400000000ULL);
	assert_int_equal(view(g, 1).int_active_uj, 100000000ULL); /* 100 - 50 W, 2 s */
	a = vm_energy(g, VM_A);
	b = vm_energy(g, VM_B);
	c = vm_energy(g, VM_C);
	assert_int_equal(a.vm_id_type, VW_GPU_VM_ID_UUID);
	assert_string_equal(a.mdev_uuid, VM_C); /* vGPU 7's mediated device */
	assert_int_equal(a.active_uj, 240000000ULL + 100000000ULL);
	assert_int_equal(b.active_uj, 80000000ULL);
	assert_int_equal(c.active_uj, 0);
	assert_int_equal(pid_uj(g, 4242, &active), 80000000ULL);
	assert_int_equal(a.idle_uj, 25000000ULL + 50000000ULL);
	assert_int_equal(b.idle_uj, 25000000ULL);
	assert_int_equal(c.idle_uj, 25000000ULL);
	/* Gone: the next interval's energy is nobody's. */
	f.extra = NULL;
	write_state(&f);
	vw_gpus_sample(g, 3 * SEC);
	vw_gpus_close_interval(g);
	assert_int_equal(vm_energy(g, VM_A).active_uj + vm_energy(g, VM_A).idle_uj, 0);
	assert_string_equal(vm_energy(g, VM_A).vm_id, "");
	vw_gpus_free(g);
}

/* A driver without vGPU calls, or a device that is no vGPU host: no VM shares, no noise. */
static void test_vgpu_not_a_host(void **state)
{
	/* The old driver's library (no vGPU calls) with a vGPU scripted; the current one on a
	 * device with no vGPUs listed (NOT_SUPPORTED). */
	static const struct {
		const char *lib, *extra;
	} cases[] = { { VW_FAKE_NVML_OLD, "0.vgpus=7:" VM_A ":4:60\n" },
		      { VW_FAKE_NVML, "0.vgpus_ret=3\n" } };

	(void)state;
	n_warn = 0;
	vw_log_set_sink(sink, NULL);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct fake f = { .energy0_mj = 0, .power1_mw = 90000, .extra = cases[i].extra };
		struct vw_gpus *g = start(&f, cases[i].lib, 50, 720);

		vw_gpus_sample(g, 0);
		vw_gpus_sample(g, SEC);
		vw_gpus_close_interval(g);
		assert_string_equal(vm_energy(g, VM_A).vm_id, "");
		assert_int_equal(n_warn, 0);
		vw_gpus_free(g);
	}
	vw_log_set_sink(NULL, NULL);
}

/* The old driver has no process calls: no shares, the energy is the node's. */
static void test_process_calls_missing(void **state)
{
	struct fake f = { .energy0_mj = 0, .power0_mw = 100000, .power1_mw = 90000,
			  .extra = "0.procs=4242:60\n" };
	struct vw_gpus *g;
	uint64_t active = 0;

	(void)state;
	g = start(&f, VW_FAKE_NVML_OLD, 50, 720);
	vw_gpus_sample(g, 0);
	vw_gpus_sample(g, SEC);
	vw_gpus_close_interval(g);
	assert_int_equal(pid_uj(g, 4242, &active), 0);
	assert_int_equal(active, 90000000ULL); /* (100 - 50) + (90 - 50) W for 1 s */
	vw_gpus_free(g);
}

/* The library is shut down when the set is freed. */
static void test_shutdown_called(void **state)
{
	struct fake f = { .energy0_mj = 1, .power1_mw = 1 };
	char calls[1100], *text;

	(void)state;
	snprintf(calls, sizeof(calls), "%s.calls", state_path);
	unlink(calls);
	vw_gpus_free(start(&f, VW_FAKE_NVML, 0, 720));
	text = vw_fixture_slurp(calls, NULL);
	assert_non_null(text);
	assert_string_equal(text, "init\nshutdown\n");
	free(text);
}

/* The fake's nvmlDeviceGetPowerUsage calls on device i so far (any thread's). */
static unsigned long power_calls(unsigned i)
{
	void *dl = dlopen(VW_FAKE_NVML, RTLD_NOW | RTLD_NOLOAD); /* the product's handle */
	unsigned long *calls, n;

	assert_non_null(dl);
	calls = dlsym(dl, "fake_nvml_power_calls");
	assert_non_null(calls);
	n = __atomic_load_n(&calls[i], __ATOMIC_RELAXED);
	dlclose(dl);
	return n;
}

/*
 * GPU 1 (power-only) at 100 W for 10 s, then 0 W, read by the thread every 250 ms and sampled
 * every 250 ms but for a late sample: none from 9.5 s to 11.5 s (an interval close that took
 * 2 s on a loaded machine). Its energy is 100 W x 10 s to the µJ: the late sample's 0 W
 * reading counts only the time since the thread's last reading, not its whole wait (the newest
 * reading over the wait once counted 0 W from 9.5 s: 950 J). GPU 0 keeps its counter, exact,
 * and the thread never reads it: one power call per tick for GPU 1, none for GPU 0.
 */
static void test_late_sample(void **state)
{
	struct fake f = { .energy0_mj = 5000, .power0_mw = 100000, .power1_mw = 100000 };
	const uint64_t step = SEC / 4, t0 = 1000 * SEC;
	unsigned long calls0, calls1, ticks = 0, samples = 0;
	struct vw_gpu_view v0, v1;
	struct vw_gpus *g;

	(void)state;
	g = start(&f, VW_FAKE_NVML, 0, 720);
	calls0 = power_calls(0);
	calls1 = power_calls(1);
	for (uint64_t s = 0; s <= 13 * SEC; s += step) {
		bool late = s > 19 * SEC / 2 && s < 23 * SEC / 2;

		f.power1_mw = s <= 10 * SEC ? 100000 : 0;
		f.energy0_mj += s > 0 ? 25000 : 0; /* 100 W on GPU 0's counter */
		write_state(&f);
		vw_gpus_tick(g, t0 + s);
		ticks++;
		if (late)
			continue;
		vw_gpus_sample(g, t0 + s);
		samples++;
	}
	vw_gpus_close_interval(g);
	v0 = view(g, 0);
	v1 = view(g, 1);
	assert_int_equal(v1.total_uj, 1000000000ULL); /* 100 W x 10 s, no more, no less */
	assert_int_equal(v0.total_uj, 1300000000ULL); /* the counter's 13 s at 100 W */
	assert_int_equal(v0.gaps + v1.gaps + v0.read_errors + v1.read_errors, 0);
	assert_int_equal(power_calls(1) - calls1, ticks + samples);
	assert_int_equal(power_calls(0) - calls0, samples); /* read() only */

	/* A sample stamped before the thread's last reading (its time is taken before it reads)
	 * counts nothing, and the span is not counted twice: 100 W from 13 s to 15 s, 200 J. */
	f.power1_mw = 100000;
	write_state(&f);
	vw_gpus_tick(g, t0 + 14 * SEC);
	vw_gpus_sample(g, t0 + 14 * SEC - SEC / 10);
	vw_gpus_tick(g, t0 + 15 * SEC);
	vw_gpus_sample(g, t0 + 15 * SEC);
	vw_gpus_close_interval(g);
	assert_int_equal(view(g, 1).total_uj, 1200000000ULL);
	vw_gpus_free(g);
}

/*
 * GPU 1's power fails at a reading of the thread's that no sample sees (2 s), then at a
 * sample's own (5 s): each span from the last good reading to the next good one counts
 * nothing and is a gap (virtwatt_node_gpu_energy_gaps_total), said once at warn; only the
 * sample's failure is a read error. Nothing invented: 100 W over the spans read, no more.
 */
static void test_power_gap(void **state)
{
	struct fake f = { .energy0_mj = 0, .power1_mw = 100000 };
	const uint64_t t0 = 1000 * SEC;
	struct vw_gpu_view v1;
	struct vw_gpus *g;

	(void)state;
	g = start(&f, VW_FAKE_NVML, 0, 720);
	n_warn = 0;
	vw_log_set_sink(sink, NULL);
	vw_gpus_sample(g, t0); /* the baseline */
	vw_gpus_tick(g, t0 + SEC); /* 0 - 1 s counted */
	f.extra = "1.power_ret=999\n";
	write_state(&f);
	vw_gpus_tick(g, t0 + 2 * SEC); /* fails: from 1 s on, a gap */
	f.extra = NULL;
	write_state(&f);
	vw_gpus_tick(g, t0 + 3 * SEC); /* only sets the time: the gap ends */
	vw_gpus_sample(g, t0 + 4 * SEC); /* 3 - 4 s counted */
	vw_gpus_close_interval(g);
	v1 = view(g, 1);
	assert_int_equal(v1.total_uj, 200000000ULL);
	assert_int_equal(v1.gaps, 1);
	assert_int_equal(v1.read_errors, 0); /* no sample saw it fail */
	assert_int_equal(n_warn, 1);
	assert_non_null(strstr(last_line, "power readable again"));

	f.extra = "1.power_ret=999\n";
	write_state(&f);
	vw_gpus_sample(g, t0 + 5 * SEC); /* the sample's own reading fails */
	f.extra = NULL;
	write_state(&f);
	vw_gpus_tick(g, t0 + 6 * SEC);
	vw_gpus_sample(g, t0 + 7 * SEC); /* 6 - 7 s counted */
	vw_gpus_close_interval(g);
	vw_log_set_sink(NULL, NULL);
	v1 = view(g, 1);
	assert_int_equal(v1.total_uj, 300000000ULL);
	assert_int_equal(v1.gaps, 2);
	assert_int_equal(v1.read_errors, 1);
	assert_int_equal(n_warn, 2);
	vw_gpus_free(g);
}

/*
 * The thread for real, on the daemon's clock: it reads GPU 1 on its own, once every 250 ms
 * (one NVML power call a tick, no burst after a wait), never GPU 0 (its counter); and after
 * GPU 1 fell from 100 W to 0 W, the sample's 0 W reading takes nothing of what the thread
 * counted at 100 W (the sample's reading over its whole wait once counted 0 J here).
 */
static void test_thread(void **state)
{
	struct fake f = { .energy0_mj = 0, .power1_mw = 100000 };
	struct vw_gpu_opts o = { .nvml_library = VW_FAKE_NVML, .idle_window = 720 };
	unsigned long calls0, calls1, ticks = 0;
	uint64_t counted_from, t0, t1, e;
	struct vw_gpus *g = NULL;

	(void)state;
	write_state(&f);
	assert_int_equal(vw_gpus_open(&o, &g), 0);
	counted_from = vw_now_ns(); /* the calls counted from here on */
	calls0 = power_calls(0);
	calls1 = power_calls(1);
	t0 = vw_now_ns();
	vw_gpus_sample(g, t0);
	for (int i = 0; i < 200 && ticks < 4; i++) { /* 10 s at most on a loaded machine */
		usleep(50000);
		ticks = power_calls(1) - calls1 - 1; /* less the sample's own */
	}
	t1 = vw_now_ns();
	assert_true(ticks >= 4);
	assert_true(ticks <= (t1 - counted_from) / VW_GAUGE_TICK_NS + 1); /* no burst */
	f.power1_mw = 0;
	write_state(&f);
	usleep(600000);
	t1 = vw_now_ns();
	vw_gpus_sample(g, t1);
	vw_gpus_close_interval(g);
	e = view(g, 1).total_uj;
	/* 100 W is 0.1 µJ a ns: at least the 3 periods between the thread's 4 readings at 100 W,
	 * at most the whole span */
	assert_true(e >= 3 * VW_GAUGE_TICK_NS / 10);
	assert_true(e <= (t1 - t0) / 10);
	assert_int_equal(power_calls(0) - calls0, 2); /* the two samples' read() */
	vw_gpus_free(g);
}

/* A source attached later (as the guest attaches its host's share): one power-only device at
 * 50 W, its power() calls counted. */
static unsigned long later_calls;

static int later_open(const struct vw_gpu_env *env, void **ret_state, char *why, size_t len)
{
	static const struct vw_gpu_info info = { .index = 7, .uuid = "GPU-later", .name = "later",
						 .has_power = true, .label = "later" };

	(void)env;
	(void)why;
	(void)len;
	*ret_state = (void *)&info;
	return 0;
}

static size_t later_devices(void *state, const struct vw_gpu_info **ret)
{
	*ret = state;
	return 1;
}

static void later_read(void *state, size_t i, struct vw_gpu_reading *ret)
{
	(void)state;
	(void)i;
	*ret = (struct vw_gpu_reading){ .energy_err = -EOPNOTSUPP, .idle_err = -EOPNOTSUPP,
					.power_uw = 50000000, .util_err = -EOPNOTSUPP };
}

static int later_power(void *state, size_t i, uint64_t *ret_uw)
{
	(void)state;
	(void)i;
	__atomic_fetch_add(&later_calls, 1, __ATOMIC_RELAXED);
	*ret_uw = 50000000;
	return 0;
}

static void later_close(void *state)
{
	(void)state;
}

static const struct vw_gpu_source_ops later_src = {
	.name = "later", .vendor = "test", .open = later_open, .devices = later_devices,
	.read = later_read, .power = later_power, .close = later_close,
};

/*
 * A device attached while the thread runs (the devices move): the thread stops, and reads the
 * old devices and the new one once it is back; the new one's energy is its 50 W from its
 * first sample on.
 */
static void test_attach_while_ticking(void **state)
{
	struct fake f = { .energy0_mj = 0, .power1_mw = 100000 };
	struct vw_gpu_opts o = { .nvml_library = VW_FAKE_NVML, .idle_window = 720 };
	unsigned long calls1;
	struct vw_gpus *g = NULL;
	uint64_t t0, t1, e;

	(void)state;
	write_state(&f);
	assert_int_equal(vw_gpus_open(&o, &g), 0);
	usleep(300000); /* the thread has read GPU 1 by now, or is about to */
	later_calls = 0;
	assert_int_equal(vw_gpus_attach(&g, &o, &later_src, NULL), 0);
	assert_int_equal(vw_gpus_count(g), 3);
	calls1 = power_calls(1);
	t0 = vw_now_ns();
	vw_gpus_sample(g, t0);
	for (int i = 0; i < 200 && __atomic_load_n(&later_calls, __ATOMIC_RELAXED) < 3; i++)
		usleep(50000); /* 10 s at most on a loaded machine */
	assert_true(__atomic_load_n(&later_calls, __ATOMIC_RELAXED) >= 3);
	assert_true(power_calls(1) - calls1 >= 3); /* the sample's and the thread's */
	t1 = vw_now_ns();
	vw_gpus_sample(g, t1);
	vw_gpus_close_interval(g);
	e = view(g, 2).total_uj;
	assert_string_equal(view(g, 2).info->uuid, "GPU-later");
	assert_true(e >= VW_GAUGE_TICK_NS / 20); /* 50 W is 0.05 µJ a ns */
	assert_true(e <= (vw_now_ns() - t0) / 20);
	vw_gpus_free(g);
}

static void test_bad_options(void **state)
{
	struct vw_gpu_opts o = { .nvml_library = VW_FAKE_NVML, .idle_window = 2 };
	struct vw_gpus *g = NULL;

	(void)state;
	assert_int_equal(vw_gpus_open(&o, &g), -EINVAL);
	o.idle_window = 720;
	o.idle_w = -1;
	assert_int_equal(vw_gpus_open(&o, &g), -EINVAL);
	o.idle_w = NAN;
	assert_int_equal(vw_gpus_open(&o, &g), -EINVAL);
	assert_string_equal(vw_gpu_mig_name((enum vw_gpu_mig)9), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_two_gpus_energy_and_power, setup),
		cmocka_unit_test_setup(test_counter_reset, setup),
		cmocka_unit_test_setup(test_counter_jump, setup),
		cmocka_unit_test_setup(test_counter_stuck, setup),
		cmocka_unit_test_setup(test_library_missing, setup),
		cmocka_unit_test_setup(test_old_driver_symbols_missing, setup),
		cmocka_unit_test_setup(test_gpu_lost, setup),
		cmocka_unit_test_setup(test_configured_idle, setup),
		cmocka_unit_test_setup(test_idle_floor_tracks, setup),
		cmocka_unit_test_setup(test_render, setup),
		cmocka_unit_test_setup(test_process_shares, setup),
		cmocka_unit_test_setup(test_process_calls_missing, setup),
		cmocka_unit_test_setup(test_process_list_returns, setup),
		cmocka_unit_test_setup(test_vgpu_shares, setup),
		cmocka_unit_test_setup(test_vgpu_not_a_host, setup),
		cmocka_unit_test_setup(test_shutdown_called, setup),
		cmocka_unit_test_setup(test_bad_options, setup),
		cmocka_unit_test_setup(test_late_sample, setup),
		cmocka_unit_test_setup(test_power_gap, setup),
		cmocka_unit_test_setup(test_thread, setup),
		cmocka_unit_test_setup(test_attach_while_ticking, setup),
	};

	return cmocka_run_group_tests(tests, vw_fixture_tmpdir_setup, vw_fixture_tmpdir_teardown);
}

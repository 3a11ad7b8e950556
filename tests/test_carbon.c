/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Carbon (shared/carbon): the intensity table's parser and its integral on fixed numbers; the
 * tracker fed by a real prom writer's counter observer over simulated intervals: exact grams
 * for a changing intensity, a workload that changes state keeps its carbon, a counter reset, a
 * series gone, a second (OpenMetrics) rendering that changes nothing, a span with no intensity
 * counted; and the real virtwatt-host with a static intensity and with an intensity file.
 */
#include "vw_test.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "carbon.h"
#include "fixture.h"
#include "host_fixture.h"
#include "macro.h"

#define S (int64_t)VW_NSEC_PER_SEC
#define T0 1764244800 /* 2025-11-27T12:00:00Z */

/* ---- the intensity table ---- */

static void test_parse(void **state)
{
	static const char text[] = "# grid feed\n"
				   "1764244800 120\n"
				   "2025-11-27T12:30:00Z, 300.5\n"
				   "\n"
				   "2025-11-27T14:00:00+01:00\t80\r\n";
	struct vw_intensity_point *t;
	char why[256];
	size_t n;

	(void)state;
	assert_int_equal(vw_intensity_parse(text, strlen(text), &t, &n, why, sizeof(why)), 0);
	assert_int_equal(n, 3);
	assert_int_equal(t[0].unix_s, T0);
	assert_true(t[0].g_per_kwh == 120);
	assert_int_equal(t[1].unix_s, T0 + 1800);
	assert_true(t[1].g_per_kwh == 300.5);
	assert_int_equal(t[2].unix_s, T0 + 3600); /* 14:00 at +01:00 is 13:00Z */
	free(t);
#define BAD(s, what)                                                                                \
	do {                                                                                       \
		assert_int_equal(vw_intensity_parse(s, strlen(s), &t, &n, why, sizeof(why)), -EINVAL); \
		assert_non_null(strstr(why, what));                                                \
	} while (0)
	BAD("", "no entry");
	BAD("1764244800\n", "line 1: not");
	BAD("1764244800 1\nnoon 3\n", "line 2: not");
	BAD("1764244800 -1\n", "line 1: intensity");
	BAD("1764244800 nan\n", "line 1: intensity");
	BAD("1764244800 10001\n", "line 1: intensity");
	BAD("1764244800 1\n1764244800 2\n", "line 2: times must increase");
	BAD("2025-11-27T12:00:00 5\n", "line 1: not"); /* no zone: refused, never guessed */
#undef BAD
}

static void test_integral(void **state)
{
	static const struct vw_intensity_point t[] = { { T0, 100 }, { T0 + 10, 400 }, { T0 + 20, 50 } };
	double missing;

	(void)state;
	/* Inside one step, across two, after the last (it holds). */
	assert_true(vw_intensity_integral(t, 3, (T0 + 2) * S, (T0 + 4) * S, &missing) == 200);
	assert_true(missing == 0);
	assert_true(vw_intensity_integral(t, 3, (T0 + 5) * S, (T0 + 15) * S, &missing) ==
		    5 * 100 + 5 * 400);
	assert_true(vw_intensity_integral(t, 3, (T0 + 15) * S, (T0 + 100) * S, &missing) ==
		    5 * 400 + 80 * 50);
	/* Before the first entry: missing, not guessed. */
	assert_true(vw_intensity_integral(t, 3, (T0 - 3) * S, (T0 + 1) * S, &missing) == 100);
	assert_true(missing == 3);
	assert_true(vw_intensity_integral(t, 3, (T0 - 3) * S, (T0 - 1) * S, &missing) == 0);
	assert_true(missing == 2);
	/* Half seconds. */
	assert_true(vw_intensity_integral(t, 3, (T0 + 9) * S + S / 2, (T0 + 10) * S + S / 2,
					  &missing) == 0.5 * 100 + 0.5 * 400);
	assert_true(vw_intensity_integral(t, 3, (T0 + 1) * S, (T0 + 1) * S, &missing) == 0);
}

/* ---- the tracker, through a real writer ---- */

static const char *const l_node[] = { "zone", "path", "node_name", NULL };
static const char *const l_ctr[] = { "container_id", "container_name", "runtime", "state",
				     "zone", "pod_id", "node_name", NULL };
static const struct vw_metric_family f_node = { "kepler_node_cpu_joules_total", VW_METRIC_COUNTER,
						"node", NULL, l_node };
static const struct vw_metric_family f_ctr = { "kepler_container_cpu_joules_total",
					       VW_METRIC_COUNTER, "ctr", NULL, l_ctr };
static const struct vw_metric_family f_other = { "kepler_process_cpu_joules_total",
						 VW_METRIC_COUNTER, "proc", NULL, l_node };

struct snap {
	uint64_t node_uj, a_uj, b_uj;
	const char *a_state;
	bool with_b;
};

/* One snapshot at now (s), text (commit) and then OpenMetrics: the text one's output. */
static char *snapshot(struct vw_carbon *c, int64_t now_s, const struct snap *s)
{
	struct vw_prom_writer *w = vw_prom_writer_new(VW_PROM_TEXT_0_0_4, 0);
	const char *node[] = { "package", "/sys/class/powercap/intel-rapl:0", "n1", NULL };
	const char *a[] = { "aaaa", "web", "podman", s->a_state, "package", "", "n1", NULL };
	const char *b[] = { "bbbb", "db", "podman", "running", "package", "", "n1", NULL };
	char *text = NULL, *om = NULL;
	size_t len;

	assert_non_null(w);
	vw_carbon_begin(c, now_s * S);
	vw_prom_writer_observe_counters(w, vw_carbon_observe, c);
	assert_int_equal(vw_prom_single(w, &f_node, node, (double)s->node_uj / 1e6), 0);
	assert_int_equal(vw_prom_family(w, &f_ctr), 0);
	assert_int_equal(vw_prom_counter_micro(w, a, s->a_uj), 0);
	if (s->with_b)
		assert_int_equal(vw_prom_counter_micro(w, b, s->b_uj), 0);
	assert_int_equal(vw_prom_family_end(w), 0);
	/* a family carbon does not follow */
	assert_int_equal(vw_prom_single(w, &f_other, node, 99), 0);
	assert_int_equal(vw_carbon_render(c, w, "n1", true), 0);
	assert_int_equal(vw_prom_finish(w, &text, &len), 0);
	vw_prom_writer_free(w);

	/* The OpenMetrics rendering of the same snapshot shows the same carbon, changes nothing. */
	w = vw_prom_writer_new(VW_PROM_OPENMETRICS_1_0_0, 0);
	assert_int_equal(vw_carbon_render(c, w, "n1", false), 0);
	assert_int_equal(vw_prom_finish(w, &om, &len), 0);
	vw_prom_writer_free(w);
	free(om);
	return text;
}

static double grams(const char *text, const char *family, const char *match)
{
	return vw_fixture_sample_sum(text, family, match);
}

static void on_alarm(int sig)
{
	(void)sig; /* only interrupts a blocked open (no SA_RESTART) */
}

/* The intensity file a FIFO (at start, or replaced by one later): refused at once, never waited
 * on (the old code blocked in open() until a writer came: at start, or in the loop at a reload). */
static void test_file_fifo(void **state)
{
	struct sigaction sa = { .sa_handler = on_alarm }, old_sa;
	char *dir = vw_fixture_mkdtemp("carbon"), path[600], why[256] = "";
	struct vw_carbon_opts o = { .file = path, .start_ns = (T0 - 5) * S };
	struct timespec t0, t1;

	(void)state;
	snprintf(path, sizeof(path), "%s/grid.txt", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(sigaction(SIGALRM, &sa, &old_sa), 0);
	alarm(2);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_null(vw_carbon_new(&o, why, sizeof(why)));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	alarm(0);
	assert_int_equal(sigaction(SIGALRM, &old_sa, NULL), 0);
	assert_non_null(strstr(why, "grid.txt: not a regular file"));
	assert_true((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 < 1000);
	vw_fixture_rm(dir);
}

static void test_tracker_file(void **state)
{
	char *dir = vw_fixture_mkdtemp("carbon"), path[600], why[256] = "";
	struct vw_carbon_opts o = { .file = path, .start_ns = (T0 - 5) * S };
	struct vw_carbon *c;
	struct snap s = { .a_state = "running", .with_b = true };
	double want_node, want_a, want_b;
	char *text;

	(void)state;
	/* 100 g/kWh from T0, 400 from T0+10, 50 from T0+20. */
	assert_int_equal(vw_fixture_write(dir, "grid.txt",
					  "1764244800 100\n1764244810 400\n1764244820 50\n", 0),
			 0);
	snprintf(path, sizeof(path), "%s/grid.txt", dir);
	c = vw_carbon_new(&o, why, sizeof(why));
	assert_non_null(c);

	/* [T0-5, T0+5): 10 s, the first 5 with no intensity. Node 36 kJ at a steady rate over
	 * it: 18 kJ converted at 100 g/kWh -> 0.5 g. Container a 7.2 kJ -> 0.1 g, b 3.6 kJ -> 0.05 g. */
	s.node_uj = 36000000000ULL;
	s.a_uj = 7200000000ULL;
	s.b_uj = 3600000000ULL;
	text = snapshot(c, T0 + 5, &s);
	assert_double_near(grams(text, "virtwatt_node_co2e_grams_total",
				 "intensity_source=\"file:grid.txt\""), 0.5, 1e-12);
	assert_double_near(grams(text, "virtwatt_container_co2e_grams_total", "container_id=\"aaaa\""),
			   0.1, 1e-12);
	assert_double_near(grams(text, "virtwatt_container_co2e_grams_total", "container_id=\"bbbb\""),
			   0.05, 1e-12);
	assert_double_near(grams(text, "virtwatt_carbon_intensity_missing_seconds_total", NULL), 5,
			   1e-12);
	assert_double_near(grams(text, "virtwatt_carbon_intensity_grams_per_kwh",
				 "intensity_source=\"file:grid.txt\""), 100, 0);
	assert_null(strstr(text, "co2e_grams_total{pid")); /* processes are not followed */
	free(text);

	/* [T0+5, T0+25): 20 s: 5 at 100, 10 at 400, 5 at 50 -> mean 237.5 g/kWh. Node +72 kJ
	 * (0.02 kWh) -> 4.75 g; a +14.4 kJ and now terminated (its state changes, the workload is
	 * the same) -> 0.95 g more; b's counter reset to 1.8 kJ (counted as such). */
	s.node_uj += 72000000000ULL;
	s.a_uj += 14400000000ULL;
	s.a_state = "terminated";
	s.b_uj = 3600000000ULL / 2;
	text = snapshot(c, T0 + 25, &s);
	want_node = 0.5 + 72000.0 / 3.6e6 * 237.5;
	want_a = 0.1 + 14400.0 / 3.6e6 * 237.5;
	want_b = 0.05 + 1800.0 / 3.6e6 * 237.5;
	assert_double_near(grams(text, "virtwatt_node_co2e_grams_total", NULL), want_node, 1e-9);
	assert_double_near(grams(text, "virtwatt_container_co2e_grams_total",
				 "container_id=\"aaaa\",container_name=\"web\",runtime=\"podman\","
				 "state=\"terminated\""),
			   want_a, 1e-9);
	assert_null(strstr(text, "container_id=\"aaaa\",container_name=\"web\",runtime=\"podman\","
				 "state=\"running\""));
	assert_double_near(grams(text, "virtwatt_container_co2e_grams_total", "container_id=\"bbbb\""),
			   want_b, 1e-9);
	assert_double_near(grams(text, "virtwatt_carbon_intensity_grams_per_kwh", NULL), 50, 0);
	free(text);

	/* b is gone: its carbon goes with its energy series. The table is rewritten badly: the
	 * previous one is kept (and later a good one is taken). */
	s.with_b = false;
	assert_int_equal(vw_fixture_replace(dir, "grid.txt", "1764244800 100\nnot a line\n"), 0);
	text = snapshot(c, T0 + 25, &s); /* an empty interval */
	assert_null(strstr(text, "bbbb"));
	assert_double_near(grams(text, "virtwatt_node_co2e_grams_total", NULL), want_node, 1e-9);
	assert_double_near(grams(text, "virtwatt_carbon_intensity_grams_per_kwh", NULL), 50, 0);
	free(text);
	sleep(1); /* a new mtime */
	assert_int_equal(vw_fixture_replace(dir, "grid.txt", "1764244800 1000\n"), 0);
	s.node_uj += 3600000000ULL; /* 3.6 kJ over [T0+25, T0+35) at 1000 -> 1 g */
	text = snapshot(c, T0 + 35, &s);
	assert_double_near(grams(text, "virtwatt_node_co2e_grams_total", NULL), want_node + 1, 1e-9);
	free(text);
	vw_carbon_free(c);
	vw_fixture_rm(dir);
}

static void test_tracker_static_and_baseline(void **state)
{
	struct vw_carbon_opts o = { .static_g_per_kwh = 360, .baseline_first = true,
				    .start_ns = T0 * S };
	struct snap s = { .a_state = "running", .node_uj = 5000000000ULL, .a_uj = 1000000 };
	char why[128] = "";
	struct vw_carbon *c;
	char *text;

	(void)state;
	c = vw_carbon_new(&o, why, sizeof(why));
	assert_non_null(c);
	/* The guest's first snapshot: counters carried over a restart are baselines. */
	text = snapshot(c, T0 + 1, &s);
	assert_double_near(grams(text, "virtwatt_node_co2e_grams_total", "intensity_source=\"static\""),
			   0, 0);
	free(text);
	/* Then 10 kJ at 360 g/kWh: 1 g, whatever the interval. A container new now counts from 0. */
	s.node_uj += 10000000000ULL;
	s.with_b = true;
	s.b_uj = 10000000000ULL;
	text = snapshot(c, T0 + 7, &s);
	assert_double_near(grams(text, "virtwatt_node_co2e_grams_total", NULL), 1, 1e-12);
	assert_double_near(grams(text, "virtwatt_container_co2e_grams_total", "container_id=\"bbbb\""),
			   1, 1e-12);
	free(text);
	vw_carbon_free(c);

	/* Bad settings say why. */
	o = (struct vw_carbon_opts){ .static_g_per_kwh = 0 };
	assert_null(vw_carbon_new(&o, why, sizeof(why)));
	assert_non_null(strstr(why, "above 0"));
	o = (struct vw_carbon_opts){ .file = "/nonexistent/grid.txt" };
	assert_null(vw_carbon_new(&o, why, sizeof(why)));
	assert_non_null(strstr(why, "/nonexistent/grid.txt"));
}

/* ---- the real daemon ---- */

static const struct host_fixture_zone zones[] = {
	{ "intel-rapl:0", "package-0", 262143328850ULL, 0, 50 },
};

static struct host_fixture_clock clk;
static struct host_fixture fx;
static uint64_t done_ms, t0_ms;

static uint64_t mono_ms(void)
{
	return (uint64_t)(vw_fixture_monotonic_s() * 1000);
}

static void step(void *ud)
{
	uint64_t ms = (mono_ms() - done_ms) / 10 * 10;

	(void)ud;
	if (ms) {
		(void)host_fixture_advance_ms(&fx, 0.25, ms);
		done_ms += ms;
	}
}

static void test_daemon(void **state)
{
	char sys[600], proc[600], file[700], *body = NULL;
	char *argv[] = { VW_HOST_BIN, sys, proc, "--web.listen-address=127.0.0.1:0",
			 "--monitor.interval=1s", "--passthrough.enable=false", "--gpu.enable=false",
			 "--metrics=node", "--kube.node-name=c1", "--carbon.intensity=400", NULL };
	unsigned port = 0;
	pid_t pid;
	double j, g;

	(void)state;
	assert_int_equal(host_fixture_init(&fx, zones, 1, 4), 0);
	fx.atomic = true;
	snprintf(sys, sizeof(sys), "--host.sysfs=%s", fx.sys);
	snprintf(proc, sizeof(proc), "--host.procfs=%s", fx.proc);
	t0_ms = done_ms = mono_ms();
	assert_int_equal(host_fixture_clock_start(&clk, 50, step, NULL), 0);

	/* Static: grams = joules x 400 / 3.6e6 in every snapshot, to the digit printed. */
	assert_int_equal(vw_fixture_start_daemon(argv, &pid, &port), 0);
	body = vw_fixture_await_sample(port, "kepler_node_cpu_joules_total", "zone=\"package\"", 100,
				       true, 20);
	assert_non_null(body);
	j = vw_fixture_sample_sum(body, "kepler_node_cpu_joules_total", "zone=\"package\"");
	g = vw_fixture_sample_sum(body, "virtwatt_node_co2e_grams_total",
				  "zone=\"package\",path=\"/sys/class/powercap/intel-rapl:0\","
				  "node_name=\"c1\",intensity_source=\"static\"");
	print_message("# static: %.6f J -> %.9f g\n", j, g);
	assert_double_near(g, j * 400 / 3.6e6, 1e-6 * g + 1e-9);
	assert_double_near(vw_fixture_sample_sum(body, "virtwatt_carbon_intensity_grams_per_kwh",
						 "intensity_source=\"static\""), 400, 0);
	free(body);
	assert_int_equal(vw_fixture_stop_daemon(pid), 0);

	/* A file whose intensity is 100 until 3 s from now, then 700: the grams per joule go from
	 * 100/3.6e6 to above it, and stay between the two intensities' figures. */
	{
		char *dir = vw_fixture_mkdtemp("carbond"), text[128], flag[800];
		time_t now = time(NULL);
		double ratio1, ratio2;

		snprintf(text, sizeof(text), "%lld 100\n%lld 700\n", (long long)now - 60,
			 (long long)now + 3);
		assert_int_equal(vw_fixture_write(dir, "grid.txt", text, 0), 0);
		snprintf(file, sizeof(file), "%s/grid.txt", dir);
		snprintf(flag, sizeof(flag), "--carbon.intensity-file=%s", file);
		argv[9] = flag;
		assert_int_equal(vw_fixture_start_daemon(argv, &pid, &port), 0);
		body = vw_fixture_await_sample(port, "kepler_node_cpu_joules_total",
					       "zone=\"package\"", 30, true, 20);
		assert_non_null(body);
		j = vw_fixture_sample_sum(body, "kepler_node_cpu_joules_total", "zone=\"package\"");
		g = vw_fixture_sample_sum(body, "virtwatt_node_co2e_grams_total",
					  "intensity_source=\"file:grid.txt\"");
		ratio1 = g / j * 3.6e6;
		free(body);
		while (time(NULL) < now + 7)
			usleep(200 * 1000);
		body = vw_fixture_try_scrape(port);
		assert_non_null(body);
		j = vw_fixture_sample_sum(body, "kepler_node_cpu_joules_total", "zone=\"package\"");
		g = vw_fixture_sample_sum(body, "virtwatt_node_co2e_grams_total",
					  "intensity_source=\"file:grid.txt\"");
		ratio2 = g / j * 3.6e6;
		print_message("# file: %.3f then %.3f g/kWh on average\n", ratio1, ratio2);
		assert_double_near(ratio1, 100, 1e-6);
		assert_true(ratio2 > 200 && ratio2 < 700);
		assert_double_near(vw_fixture_sample_sum(body, "virtwatt_carbon_intensity_grams_per_kwh",
							 NULL), 700, 0);
		free(body);
		assert_int_equal(vw_fixture_stop_daemon(pid), 0);
		vw_fixture_rm(dir);
	}
	host_fixture_clock_stop(&clk);
	host_fixture_fini(&fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_integral),
		cmocka_unit_test(test_file_fifo),
		cmocka_unit_test(test_tracker_file),
		cmocka_unit_test(test_tracker_static_and_baseline),
		cmocka_unit_test(test_daemon),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

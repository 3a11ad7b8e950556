/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtwatt-host end to end below the HTTP layer: a fixture host (powercap zones advancing at
 * known wattages, /proc/stat at a known usage) goes through sampling, the idle/active split
 * and rendering; the exposition is checked value by value, against a golden file, and by
 * promtool.
 */
#include "vw_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "daemon.h"
#include "fixture.h"
#include "host_fixture.h"
#include "http.h"
#include "log.h"
#include "options.h"
#include "exposition_fixture.h"

#define T0 (1000 * VW_NSEC_PER_SEC)
#define MAXR 262143328850ULL

static const struct host_fixture_zone rapl_zones[] = {
	{ "intel-rapl:0", "package-0", MAXR, 1000, 50 },
	{ "intel-rapl:0:0", "dram", MAXR, 5000, 10 },
	/* Starts 20 J below its wrap: the first second crosses it. */
	{ "intel-rapl:1", "package-1", MAXR, MAXR - 20000000ULL, 40 },
	{ "intel-rapl:2", "psys", MAXR, 0, 120 },
};

struct ctx {
	struct host_fixture fx;
	struct vw_host_config cfg;
	struct vw_host *host;
	char *cache;
};

static int load_cfg(struct ctx *c, const char *extra)
{
	char sys[600], proc[600], cache[600];
	/* Node level only: workload attribution has its own tests. */
	char *argv[] = { "virtwatt-host", sys, proc, cache, "--kube.node-name=test-node",
			 "--monitor.interval=5s", "--metrics=node", "--passthrough.enable=false",
			 (char *)extra, NULL };
	int argc = extra ? 9 : 8;
	char err[512] = "";
	int r;

	snprintf(sys, sizeof(sys), "--host.sysfs=%s", c->fx.sys);
	snprintf(proc, sizeof(proc), "--host.procfs=%s", c->fx.proc);
	snprintf(cache, sizeof(cache), "--model.cache-dir=%s", c->cache);
	r = vw_config_load(vw_host_program(), &c->cfg, argc, argv, stdout, err, sizeof(err));
	if (r != 0)
		fail_msg("config: %d %s", r, err);
	return r;
}

static void setup_host(struct ctx *c, const struct host_fixture_zone *zones, unsigned n,
		       const char *extra)
{
	assert_int_equal(host_fixture_init(&c->fx, zones, n, 2), 0);
	c->cache = vw_fixture_mkdtemp("cache");
	assert_non_null(c->cache);
	assert_int_equal(load_cfg(c, extra), 0);
	assert_int_equal(vw_host_new(&c->cfg, &c->host), 0);
}

static void teardown_host(struct ctx *c)
{
	vw_host_free(c->host);
	vw_config_free(vw_host_program(), &c->cfg);
	host_fixture_fini(&c->fx);
	vw_fixture_rm(c->cache);
}

/* Run `seconds` simulated seconds at `usage`, then publish. */
static void run_interval(struct ctx *c, unsigned seconds, double usage)
{
	for (unsigned s = 0; s < seconds; s++) {
		assert_int_equal(host_fixture_advance(&c->fx, usage), 0);
		vw_host_sample(c->host, T0 + c->fx.seconds * VW_NSEC_PER_SEC);
	}
	assert_int_equal(vw_host_publish(c->host, T0 + c->fx.seconds * VW_NSEC_PER_SEC), 0);
}

/* What the HTTP server does for a request that negotiates OpenMetrics. */
static void scraper_asks_openmetrics(struct ctx *c)
{
	vw_exposition_openmetrics_asked(vw_host_exposition(c->host), vw_now_ns());
}

static char *scrape(struct ctx *c, int om)
{
	char *text = NULL;
	size_t len = 0;

	assert_int_equal(vw_exposition_copy(vw_host_exposition(c->host), om, &text, &len), 0);
	assert_int_equal(strlen(text), len);
	return text;
}

/* The value of the sample `series` (name and labels), or NAN. */
static double sample_value(const char *text, const char *series)
{
	return vw_expo_value(text, series);
}

#define ZL(zone, path) "{zone=\"" zone "\",path=\"/sys/class/powercap/" path "\",node_name=\"test-node\"}"

static void strip_build_info(char *text)
{
	char *l = strstr(text, "\nkepler_build_info{");

	if (l) {
		char *end = strchr(l + 1, '\n');

		memmove(l, end, strlen(end) + 1);
	}
}

static void compare_golden(const char *text, const char *name)
{
	char path[1024];
	char *golden;

	snprintf(path, sizeof(path), "%s/golden/%s", VW_TEST_DATA, name);
	if (getenv("VW_UPDATE_GOLDEN")) {
		FILE *f = fopen(path, "w");

		assert_non_null(f);
		fputs(text, f);
		fclose(f);
	}
	golden = vw_fixture_slurp(path, NULL);
	assert_non_null(golden);
	assert_string_equal(text, golden);
	free(golden);
}

static int promtool_check(const char *text)
{
	char *dir = vw_fixture_mkdtemp("promtool");
	char cmd[1200];
	int st;

	assert_int_equal(vw_fixture_write(dir, "m.prom", text, 0), 0);
	snprintf(cmd, sizeof(cmd), "promtool check metrics < %s/m.prom", dir);
	st = system(cmd);
	vw_fixture_rm(dir);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_rapl_zones(void **state)
{
	struct ctx c = { 0 };
	char *text, *om;

	(void)state;
	setup_host(&c, rapl_zones, ARRAY_SIZE(rapl_zones), NULL);
	scraper_asks_openmetrics(&c);
	vw_host_sample(c.host, T0);
	run_interval(&c, 5, 0.5);
	text = scrape(&c, 0);

	/* 5 s at 50 W, 10 W, 40 W (across a wrap) and 120 W. */
	assert_double_near(sample_value(text, "kepler_node_cpu_joules_total" ZL("package", "intel-rapl:0")), 250, 1e-9);
	assert_double_near(sample_value(text, "kepler_node_cpu_watts" ZL("package", "intel-rapl:0")), 50, 1e-9);
	assert_double_near(sample_value(text, "kepler_node_cpu_joules_total" ZL("dram", "intel-rapl:0:0")), 50, 1e-9);
	assert_double_near(sample_value(text, "kepler_node_cpu_joules_total" ZL("package", "intel-rapl:1")), 200, 1e-9);
	assert_double_near(sample_value(text, "kepler_node_cpu_watts" ZL("package", "intel-rapl:1")), 40, 1e-9);
	assert_double_near(sample_value(text, "kepler_node_cpu_watts" ZL("psys", "intel-rapl:2")), 120, 1e-9);
	/* No fit yet: the residual split at usage 0.5; idle + active == total. */
	assert_double_near(sample_value(text, "kepler_node_cpu_usage_ratio{node_name=\"test-node\"}"), 0.5, 1e-9);
	assert_double_near(sample_value(text, "kepler_node_cpu_idle_joules_total" ZL("package", "intel-rapl:0")), 125, 1e-9);
	assert_double_near(sample_value(text, "kepler_node_cpu_active_joules_total" ZL("package", "intel-rapl:0")), 125, 1e-9);
	assert_double_near(sample_value(text, "kepler_node_cpu_idle_watts" ZL("package", "intel-rapl:1")), 20, 1e-9);
	assert_double_near(sample_value(text, "virtwatt_node_energy_gaps_total" ZL("package", "intel-rapl:1")), 0, 0);
	/* intel-rapl:1 wrapped once in the interval and was unwrapped; intel-rapl:0 did not. */
	assert_double_near(sample_value(text, "virtwatt_node_energy_wraps_total" ZL("package", "intel-rapl:1")), 1, 0);
	assert_double_near(sample_value(text, "virtwatt_node_energy_wraps_total" ZL("package", "intel-rapl:0")), 0, 0);
	assert_non_null(strstr(text, "virtwatt_node_power_source_info{source=\"rapl\",kind=\"measured\""));
	assert_non_null(strstr(text, "kepler_node_cpu_info{processor=\"1\",vendor_id=\"GenuineIntel\""));
	assert_non_null(strstr(text, "\nkepler_build_info{arch=\""));
	assert_int_equal(promtool_check(text), 0);

	om = scrape(&c, 1);
	assert_non_null(strstr(om, "# TYPE kepler_node_cpu_joules counter\n"));
	assert_true(strlen(om) > 6 && strcmp(om + strlen(om) - 6, "# EOF\n") == 0);
	free(om);

	strip_build_info(text);
	compare_golden(text, "host_rapl.prom");
	free(text);
	teardown_host(&c);
}

static void test_idle_fit_takes_over(void **state)
{
	/* A meter whose power follows 30 W + 100 W x usage: after intervals at varied load the
	 * fitted idle baseline is 30 W, and at full load idle stays 30 W (Kepler #2465 sinks it
	 * to 0). */
	static const struct host_fixture_zone z[] = { { "intel-rapl:0", "package-0", MAXR, 0, 30 } };
	static const double loads[] = { 0.1, 0.9, 0.3, 0.7, 0.5, 0.2, 0.8, 1.0 };
	struct ctx c = { 0 };
	char *text;

	(void)state;
	setup_host(&c, z, 1, "--power.idle-window=8");
	vw_host_sample(c.host, T0);
	for (size_t i = 0; i < ARRAY_SIZE(loads); i++) {
		c.fx.watts[0] = 30 + (uint64_t)(100 * loads[i] + 0.5);
		run_interval(&c, 5, loads[i]);
	}
	text = scrape(&c, 0);
	assert_non_null(strstr(text, "virtwatt_node_cpu_idle_baseline_watts{zone=\"package\",path=\"/sys/class/powercap/intel-rapl:0\",method=\"fitted\""));
	assert_double_near(sample_value(text, "kepler_node_cpu_idle_watts" ZL("package", "intel-rapl:0")), 30, 0.5);
	assert_double_near(sample_value(text, "kepler_node_cpu_active_watts" ZL("package", "intel-rapl:0")), 100, 0.5);
	free(text);
	teardown_host(&c);
}

static void test_configured_idle(void **state)
{
	struct ctx c = { 0 };
	char *text;

	(void)state;
	setup_host(&c, rapl_zones, 1, "--power.idle-watts=package=20");
	vw_host_sample(c.host, T0);
	run_interval(&c, 5, 0.9);
	text = scrape(&c, 0);
	/* 50 W at 90 % load: the configured 20 W is idle whatever the load; 30 W active. */
	assert_double_near(sample_value(text, "kepler_node_cpu_idle_watts" ZL("package", "intel-rapl:0")), 20, 1e-9);
	assert_double_near(sample_value(text, "kepler_node_cpu_active_watts" ZL("package", "intel-rapl:0")), 30, 1e-9);
	assert_non_null(strstr(text, "method=\"configured\""));
	free(text);
	teardown_host(&c);
	/* A bad override is refused at start. */
	memset(&c, 0, sizeof(c));
	assert_int_equal(host_fixture_init(&c.fx, rapl_zones, 1, 2), 0);
	c.cache = vw_fixture_mkdtemp("cache");
	assert_int_equal(load_cfg(&c, "--power.idle-watts=gpu=5"), 0);
	assert_int_equal(vw_host_new(&c.cfg, &c.host), -EINVAL);
	vw_config_free(vw_host_program(), &c.cfg);
	host_fixture_fini(&c.fx);
	vw_fixture_rm(c.cache);
}

static void test_estimator_without_meter(void **state)
{
	struct ctx c = { 0 };
	char *text;
	/* Independent computation of the built-in model (Kepler v0.7.12 intel_rapl AbsPower SGD,
	 * m5.metal with 96 logical CPUs) on this 2-CPU node at full load: x = 2000 ms/s. */
	const double ratio = 2.0 / 96.0;
	const double pkg_idle = 143.81206324506658 * ratio;
	const double pkg_dyn = 305.148172889668 * 2000.0 / 95877.00000000001;
	const double dram_idle = 18.616285480502686 * ratio;
	const double dram_dyn = 8.434209551249596 * 2000.0 / 95877.00000000001;

	(void)state;
	setup_host(&c, NULL, 0, NULL);
	vw_host_sample(c.host, T0);
	run_interval(&c, 5, 1.0);
	text = scrape(&c, 0);
#define EL(zone) "{zone=\"" zone "\",path=\"estimator\",node_name=\"test-node\"}"
	assert_double_near(sample_value(text, "kepler_node_cpu_watts" EL("package")), pkg_idle + pkg_dyn, 1e-3);
	assert_double_near(sample_value(text, "kepler_node_cpu_idle_watts" EL("package")), pkg_idle, 1e-3);
	assert_double_near(sample_value(text, "kepler_node_cpu_active_watts" EL("package")), pkg_dyn, 1e-3);
	assert_double_near(sample_value(text, "kepler_node_cpu_watts" EL("dram")), dram_idle + dram_dyn, 1e-3);
	assert_double_near(sample_value(text, "kepler_node_cpu_joules_total" EL("package")), 5 * (pkg_idle + pkg_dyn), 1e-3);
	/* Core and uncore are all-zero in that model: not exported. */
	assert_null(strstr(text, "zone=\"core\""));
	assert_non_null(strstr(text, "virtwatt_node_power_source_info{source=\"estimator\",kind=\"estimated\","
				     "model=\"builtin:kepler-v0.7.12-intel_rapl-AbsPower-SGD-m5.metal\""));
	/* 2000 ms/s is well inside the model's training range (up to 95877 ms/s). */
	assert_non_null(strstr(text, "virtwatt_model_extrapolated_total{node_name=\"test-node\"} 0\n"));
	assert_int_equal(promtool_check(text), 0);
	free(text);
	teardown_host(&c);
}

static void test_vanished_zone_counts_errors(void **state)
{
	struct ctx c = { 0 };
	char path[700];
	char *text;

	(void)state;
	setup_host(&c, rapl_zones, 2, NULL);
	vw_host_sample(c.host, T0);
	run_interval(&c, 5, 0.5);
	snprintf(path, sizeof(path), "%s/class/powercap/intel-rapl:0:0/energy_uj", c.fx.sys);
	/* The dram zone vanishes: the fixture cannot rewrite it, reads fail and are counted. */
	c.fx.n_zones = 1;
	assert_int_equal(unlink(path), 0);
	run_interval(&c, 5, 0.5);
	text = scrape(&c, 0);
	assert_double_near(sample_value(text, "virtwatt_node_meter_read_errors_total" ZL("dram", "intel-rapl:0:0")), 5, 0);
	/* Its counter holds; the package zone goes on. */
	assert_double_near(sample_value(text, "kepler_node_cpu_joules_total" ZL("dram", "intel-rapl:0:0")), 50, 1e-9);
	assert_double_near(sample_value(text, "kepler_node_cpu_joules_total" ZL("package", "intel-rapl:0")), 500, 1e-9);
	free(text);
	teardown_host(&c);
}

static bool has_openmetrics(struct ctx *c)
{
	_cleanup_free_ char *text = scrape(c, 0), *om = scrape(c, 1);
	size_t n = strlen(om);

	assert_null(strstr(text, "# EOF"));
	if (strcmp(om, text) == 0)
		return false; /* an OpenMetrics reader is given the text */
	assert_true(n > 6 && strcmp(om + n - 6, "# EOF\n") == 0);
	assert_non_null(strstr(om, "# TYPE kepler_node_cpu_joules counter\n"));
	return true;
}

/*
 * The daemon renders OpenMetrics only for snapshots published while a scraper wants it: none
 * until the first request, from the next snapshot on, and none again once the window passed.
 */
static void test_openmetrics_on_demand(void **state)
{
	static uint64_t now = 5000 * VW_NSEC_PER_SEC;
	struct ctx c = { 0 };

	(void)state;
	vw_clock_set_fake(&now);
	setup_host(&c, rapl_zones, 1, NULL);
	vw_host_sample(c.host, T0);
	run_interval(&c, 5, 0.5);
	assert_false(has_openmetrics(&c));
	now += 5 * VW_NSEC_PER_SEC;
	run_interval(&c, 5, 0.5);
	assert_false(has_openmetrics(&c));

	/* A scraper asks: the snapshot it found stays text only, the next one has both. */
	scraper_asks_openmetrics(&c);
	assert_false(has_openmetrics(&c));
	now += 5 * VW_NSEC_PER_SEC;
	run_interval(&c, 5, 0.5);
	assert_true(has_openmetrics(&c));

	/* Up to the window after the request, then text only again. */
	now += VW_EXPOSITION_OM_WINDOW_NS - 5 * VW_NSEC_PER_SEC;
	run_interval(&c, 5, 0.5);
	assert_true(has_openmetrics(&c));
	now += 1;
	run_interval(&c, 5, 0.5);
	assert_false(has_openmetrics(&c));
	teardown_host(&c);
	vw_clock_set_fake(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rapl_zones),
		cmocka_unit_test(test_idle_fit_takes_over),
		cmocka_unit_test(test_configured_idle),
		cmocka_unit_test(test_estimator_without_meter),
		cmocka_unit_test(test_vanished_zone_counts_errors),
		cmocka_unit_test(test_openmetrics_on_demand),
	};

	vw_log_set_level(VW_LOG_WARN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The IPMI meter (host/power/src_ipmi.c) against a real BMC implementation: OpenIPMI's ipmi_sim
 * over IPMI 2.0 (RMCP+) on 127.0.0.1, with tests/ipmi/'s configuration, SDRs (compiled here
 * with sdrcomp) and DCMI module (dcmi_mod.c, built by meson). The test writes the DCMI control
 * file and the sensors' reading files; the meter's poller reads them through the BMC.
 *
 * Energy is checked on the real clock (the poller's readings carry vw_now_ns(), as
 * act->now_ns does): known watts over a measured span within 1 %. One ipmi_sim for the group,
 * killed and restarted by the outage case; it is tied to this process (SIGKILL when it dies)
 * and killed in the group teardown, so none outlives the test.
 */
#include "vw_test.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"
#include "ipmi_fixture.h"
#include "log.h"
#include "macro.h"
#include "power.h"

#define SEC VW_NSEC_PER_SEC
#define MS VW_NSEC_PER_MSEC
#define INTERVAL_NS (200 * MS)
#define STALE_NS (600 * MS)
#define TIMEOUT_MS 500
#define USER VW_TEST_IPMI_USER
#define PASSWORD VW_TEST_IPMI_PASSWORD

static struct vw_test_ipmi bmc;

static const char *const workarounds[] = { "opensesspriv", NULL };

static void ctl(const char *name, const char *text)
{
	vw_test_ipmi_ctl(&bmc, name, text);
}

static int bmc_start(void)
{
	return vw_test_ipmi_restart(&bmc);
}

static int bmc_setup(void **state)
{
	(void)state;
	return vw_test_ipmi_start(&bmc);
}

static int bmc_teardown(void **state)
{
	(void)state;
	vw_test_ipmi_stop(&bmc);
	return 0;
}

/* ---- the meter -------------------------------------------------------------------------- */

static struct vw_ipmi_config cfg_lan(void)
{
	return (struct vw_ipmi_config){ .driver = VW_IPMI_DRIVER_LAN, .host = "127.0.0.1",
					.port = bmc.port, .username = USER,
					.password = PASSWORD,
					/* ipmi_sim wants admin for commands outside its own table
					 * (DCMI) and the privilege sent at Open Session */
					.privilege = VW_IPMI_PRIV_ADMIN, .workarounds = workarounds,
					.timeout_ms = TIMEOUT_MS, .interval_ns = INTERVAL_NS,
					.stale_ns = STALE_NS };
}

static int open_with(const struct vw_ipmi_config *cfg, void **ret)
{
	struct vw_source_config c = { .ops = &vw_src_ipmi, .config = cfg };
	struct vw_power_env env = { .sysfs_fd = -1, .configs = &c, .n_configs = 1 };

	return vw_src_ipmi.open(&env, ret);
}

static void *open_lan(const char *want_path)
{
	struct vw_ipmi_config cfg = cfg_lan();
	const struct vw_zone_info *z;
	void *st = NULL;

	assert_int_equal(open_with(&cfg, &st), 0);
	assert_int_equal(vw_src_ipmi.zones(st, &z), 1);
	assert_int_equal(z->zone, VW_ZONE_PLATFORM);
	assert_int_equal(z->max_range_uj, 0);
	assert_string_equal(z->path, want_path);
	return st;
}

static int read_now(void *st, uint64_t *now, uint64_t *raw, int *err)
{
	struct vw_node_activity act = { .now_ns = vw_now_ns() };

	*now = act.now_ns;
	return vw_src_ipmi.read(st, &act, raw, err);
}

/* Read every 100 ms until read() gives `want`, up to `tries` reads: the last result. */
static int read_until(void *st, int want, int tries, uint64_t *raw)
{
	uint64_t t;
	int err = 1;

	for (int i = 0; i < tries && err != want; i++) {
		usleep(100000);
		read_now(st, &t, raw, &err);
	}
	return err;
}

/*
 * Read until the meter integrates `watts` (two good reads dt_ns apart within 1 %), up to
 * `within_ns`: the BMC's sensors and our poller each take their time to follow a change.
 */
static void wait_watts(void *st, double watts, uint64_t within_ns)
{
	uint64_t t0, t1, r0, r1, end = vw_now_ns() + within_ns;
	int e0, e1;

	read_now(st, &t0, &r0, &e0);
	while (vw_now_ns() < end) {
		usleep(100000);
		read_now(st, &t1, &r1, &e1);
		if (e0 == 0 && e1 == 0 && r1 > r0 &&
		    fabs((double)(r1 - r0) / ((double)(t1 - t0) / 1e9) / 1e6 - watts) < watts / 100)
			return;
		t0 = t1, r0 = r1, e0 = e1;
	}
	fail_msg("the meter never integrated %.0f W", watts);
}

/* The energy integrated over a measured span of about span_ns, as watts; both reads good. */
static double measure_watts(void *st, uint64_t span_ns)
{
	uint64_t t0, t1, r0, r1;
	int e;

	assert_int_equal(read_now(st, &t0, &r0, &e), 0);
	assert_int_equal(e, 0);
	usleep((useconds_t)(span_ns / 1000));
	assert_int_equal(read_now(st, &t1, &r1, &e), 0);
	assert_int_equal(e, 0);
	return (double)(r1 - r0) / ((double)(t1 - t0) / 1e9) / 1e6;
}

/* The meter on DCMI, 250 W, once it integrates them. */
static void *open_dcmi_250(void)
{
	void *st;

	ctl("dcmi", "250\n");
	st = open_lan("dcmi");
	wait_watts(st, 250, 3 * SEC);
	return st;
}

/*
 * Without ipmi_sim or the module: a skip here, a failure in CI (CI=true). With them: the BMC up
 * (a case that failed half-way through an outage may have left it down).
 */
#define SKIP_WITHOUT_BMC()                                                                         \
	do {                                                                                       \
		if (bmc.can_run && bmc.pid <= 0)                                                   \
			assert_int_equal(bmc_start(), 0);                                          \
		if (!bmc.can_run && vw_test_in_ci())                                               \
			fail_msg("ipmi_sim or the DCMI module is missing in CI");                  \
		if (!bmc.can_run) {                                                                \
			print_message("# ipmi_sim or the DCMI module is missing "                  \
				      "(deploy/install-deps.sh --test: openipmi, "                 \
				      "libopenipmi-dev)\n");                                       \
			skip();                                                                    \
		}                                                                                  \
	} while (0)

/* ---- the cases -------------------------------------------------------------------------- */

static void test_not_configured(void **state)
{
	struct vw_power_env env = { .sysfs_fd = -1 };
	struct vw_ipmi_config cfg = { .driver = VW_IPMI_DRIVER_INBAND };
	char missing[300];
	void *st = NULL;

	(void)state;
	assert_string_equal(vw_src_ipmi.name, "ipmi");
	assert_true(vw_src_ipmi.measured);
	assert_non_null(vw_src_ipmi.fresh);
	assert_int_equal(vw_src_ipmi.open(&env, &st), -ENODEV); /* no ipmi member */
	assert_int_equal(open_with(&cfg, &st), -ENODEV);        /* in band, no device named */
	snprintf(missing, sizeof(missing), "%s/ipmi0", vw_fixture_tmpdir);
	cfg.device = missing;
	assert_int_equal(open_with(&cfg, &st), -ENODEV); /* in band, no such device */
	cfg = (struct vw_ipmi_config){ .driver = VW_IPMI_DRIVER_LAN };
	assert_int_equal(open_with(&cfg, &st), -EINVAL); /* LAN without a host */
	cfg = cfg_lan();
	cfg.workarounds = (const char *const[]){ "nosuch", NULL };
	assert_int_equal(open_with(&cfg, &st), -EINVAL);
}

/* The lines logged while a case runs that name an in-band device. */
static char inband_lines[2048];

static void keep_inband(enum vw_log_level level, const char *msg, void *ud)
{
	size_t n = strlen(inband_lines);

	(void)level;
	(void)ud;
	if (strstr(msg, "in-band") || strstr(msg, "/ipmi0"))
		snprintf(inband_lines + n, sizeof(inband_lines) - n, "%s\n", msg);
}

/* Open in band on device (relative to devfs unless absolute); the lines it logged. */
static int open_inband(const char *device, const char *devfs, void **ret)
{
	struct vw_ipmi_config cfg = { .driver = VW_IPMI_DRIVER_INBAND, .device = device };
	struct vw_source_config c = { .ops = &vw_src_ipmi, .config = &cfg };
	struct vw_power_env env = { .sysfs_fd = -1, .devfs = devfs, .configs = &c,
				    .n_configs = 1 };
	int r;

	inband_lines[0] = '\0';
	vw_log_set_level(VW_LOG_DEBUG);
	vw_log_set_sink(keep_inband, NULL);
	r = vw_src_ipmi.open(&env, ret);
	vw_log_set_sink(NULL, NULL);
	vw_log_set_level(VW_LOG_INFO);
	return r;
}

/*
 * The in-band device is looked for below the injected devfs root (--host.devfs), never in the
 * machine's /dev unless that is the root: the default "ipmi0" under a root without it is
 * -ENODEV naming <root>/ipmi0; no root, no device looked for; an absolute path as given. A
 * device there is opened (a plain file here: FreeIPMI's driver refuses it, not -ENODEV).
 */
static void test_inband_device_root(void **state)
{
	char *dir = vw_fixture_mkdtemp("ipmidev");
	char devfs[300], want[400];
	void *st = NULL;

	(void)state;
	assert_non_null(dir);
	assert_int_equal(vw_fixture_mkdir(dir, "dev"), 0);
	snprintf(devfs, sizeof(devfs), "%s/dev", dir);
	snprintf(want, sizeof(want), "no in-band IPMI device %s/ipmi0: No such file or directory",
		 devfs);
	assert_int_equal(open_inband("ipmi0", devfs, &st), -ENODEV);
	assert_non_null(strstr(inband_lines, want));
	assert_int_equal(open_inband("ipmi0", NULL, &st), -ENODEV);
	assert_non_null(strstr(inband_lines, "no devfs root to find ipmi0 below"));
	assert_int_equal(open_inband("/nonexistent/ipmi0", devfs, &st), -ENODEV);
	assert_non_null(strstr(inband_lines, "no in-band IPMI device /nonexistent/ipmi0:"));

	assert_int_equal(vw_fixture_write(dir, "dev/ipmi0", "", 0600), 0);
	snprintf(want, sizeof(want), "ipmi: %s/ipmi0: no IPMI session:", devfs);
	assert_true(open_inband("ipmi0", devfs, &st) < 0);
	assert_null(st);
	assert_non_null(strstr(inband_lines, want));
	vw_fixture_rm(dir);
}

/* DCMI's watts (not the sensors'), integrated over a measured span; a change is followed. */
static void test_dcmi_watts(void **state)
{
	struct vw_platform_reading rows[4];
	void *st;

	(void)state;
	SKIP_WITHOUT_BMC();
	ctl("dcmi", "250\n");
	ctl("total", "180\n");
	st = open_lan("dcmi");
	wait_watts(st, 250, 3 * SEC);
	assert_true(vw_src_ipmi.fresh(st));
	assert_float_equal(measure_watts(st, SEC), 250, 2.5);
	assert_int_equal(vw_src_ipmi.readings(st, rows, ARRAY_SIZE(rows)), 1);
	assert_int_equal(rows[0].uw, 250000000);
	assert_string_equal(rows[0].source_type, "DCMI");
	assert_string_equal(rows[0].source_id, "dcmi");
	ctl("dcmi", "400\n");
	wait_watts(st, 400, 3 * SEC);
	assert_float_equal(measure_watts(st, SEC), 400, 4);
	vw_src_ipmi.close(st);
}

/* A BMC without DCMI: the SDR's total sensor, not the CPU's or a supply's listed first. */
static void test_sdr_fallback(void **state)
{
	void *st;

	(void)state;
	SKIP_WITHOUT_BMC();
	ctl("dcmi", "invalid\n");
	ctl("total", "250\n");
	st = open_lan("sdr:Pwr Consumption");
	wait_watts(st, 250, 4 * SEC); /* ipmi_sim reads the file once a second */
	assert_float_equal(measure_watts(st, SEC), 250, 2.5);
	ctl("total", "310\n");
	wait_watts(st, 310, 4 * SEC);
	assert_float_equal(measure_watts(st, SEC), 310, 3.1);
	vw_src_ipmi.close(st);
	ctl("dcmi", "250\n");
}

static uint64_t stats_gaps(void *st)
{
	struct vw_power_source_stats ps = { 0 };

	vw_src_ipmi.stats(st, &ps);
	return ps.gaps;
}

/* "Power measurement active" clear: -ENODATA and no energy; set again: counted from then on. */
static void test_measurement_inactive(void **state)
{
	uint64_t t, raw, held;
	int err = 0;
	void *st;

	(void)state;
	SKIP_WITHOUT_BMC();
	st = open_dcmi_250();
	ctl("dcmi", "inactive\n");
	assert_int_equal(read_until(st, -ENODATA, 30, &raw), -ENODATA);
	assert_false(vw_src_ipmi.fresh(st));
	held = raw;
	usleep(500000);
	assert_int_equal(read_now(st, &t, &raw, &err), -ENODATA);
	assert_int_equal(raw, held); /* nothing counted while the BMC measures nothing */
	ctl("dcmi", "250\n");
	assert_int_equal(read_until(st, 0, 30, &raw), 0);
	/* Counted from the first good reading's own time: at most an interval and a poll's
	 * wait at the read; the span measuring nothing is a counted gap. */
	assert_true(raw >= held && raw - held <= 250ULL * (INTERVAL_NS + 100 * MS) / 1000);
	assert_true(stats_gaps(st) >= 1);
	assert_float_equal(measure_watts(st, SEC), 250, 2.5);
	vw_src_ipmi.close(st);
}

/*
 * ipmi_sim killed: read() never waits for the BMC (the poller does), the reading goes stale
 * within the bound and nothing is counted, the zone reporting the request's timeout; after a
 * restart the poller opens a new session and energy resumes from the first fresh read on, the
 * outage not made up.
 */
static void test_bmc_killed(void **state)
{
	uint64_t t, raw, at_kill, stale_raw = 0, worst_ns = 0, t_close;
	struct vw_platform_reading rows[4];
	int err = 0;
	void *st;

	(void)state;
	SKIP_WITHOUT_BMC();
	st = open_dcmi_250();
	read_now(st, &t, &at_kill, &err);
	vw_fixture_kill(&bmc.pid);
	for (uint64_t end = vw_now_ns() + 2 * SEC; vw_now_ns() < end;) {
		uint64_t t0 = vw_now_ns();

		read_now(st, &t, &raw, &err);
		worst_ns = VW_MAX(worst_ns, vw_now_ns() - t0);
		if (err < 0 && !stale_raw)
			stale_raw = raw;
		usleep(20000);
	}
	/* The zone says why: -ESTALE while a request was still out, then the BMC's silence. */
	assert_int_equal(err, -ETIMEDOUT);
	assert_false(vw_src_ipmi.fresh(st));
	assert_int_equal(vw_src_ipmi.readings(st, rows, ARRAY_SIZE(rows)), 0);
	assert_true(worst_ns < 50 * MS); /* a request times out after 500 ms: never waited for */
	assert_int_equal(raw, stale_raw); /* nothing counted once stale */
	/* At most the staleness bound (and a read's slack) after the last reading. */
	assert_true(raw - at_kill <= 250ULL * (STALE_NS + 100 * MS) / 1000);

	assert_int_equal(bmc_start(), 0);
	/* the back-off is at most two intervals (0.4 s) here */
	assert_int_equal(read_until(st, 0, 150, &raw), 0);
	/* The gap is not invented but counted; counting resumes from the first fresh reading. */
	assert_true(raw >= stale_raw && raw - stale_raw <= 250ULL * (INTERVAL_NS + 100 * MS) / 1000);
	assert_true(stats_gaps(st) >= 1);
	assert_float_equal(measure_watts(st, SEC), 250, 2.5);

	vw_fixture_kill(&bmc.pid); /* close() with the poller waiting on a dead BMC */
	usleep(300000);
	t_close = vw_now_ns();
	vw_src_ipmi.close(st);
	assert_true(vw_now_ns() - t_close < TIMEOUT_MS * MS + 500 * MS);
	assert_int_equal(bmc_start(), 0);
}

/* A wrong password or an unknown user: -EACCES at open. */
static void test_refused(void **state)
{
	struct vw_ipmi_config cfg = cfg_lan();
	void *st = NULL;

	(void)state;
	SKIP_WITHOUT_BMC();
	cfg.password = "wrong";
	assert_int_equal(open_with(&cfg, &st), -EACCES);
	cfg = cfg_lan();
	cfg.username = "nobody";
	assert_int_equal(open_with(&cfg, &st), -EACCES);
	cfg = cfg_lan();
	cfg.privilege = VW_IPMI_PRIV_USER; /* ipmi_sim answers DCMI to admins only */
	assert_int_equal(open_with(&cfg, &st), -EACCES);
	cfg = cfg_lan();
	cfg.port = vw_fixture_free_port(SOCK_DGRAM); /* nobody there */
	assert_int_equal(open_with(&cfg, &st), -ETIMEDOUT);
}

static int group_setup(void **state)
{
	return vw_fixture_tmpdir_setup(state) ?: bmc_setup(state);
}

static int group_teardown(void **state)
{
	bmc_teardown(state);
	return vw_fixture_tmpdir_teardown(state);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_not_configured),
		cmocka_unit_test(test_inband_device_root),
		cmocka_unit_test(test_dcmi_watts),
		cmocka_unit_test(test_sdr_fallback),
		cmocka_unit_test(test_measurement_inactive),
		cmocka_unit_test(test_bmc_killed),
		cmocka_unit_test(test_refused),
	};

	vw_log_set_level(VW_LOG_WARN);
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

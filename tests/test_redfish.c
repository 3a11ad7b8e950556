/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Redfish meter (host/power/src_redfish.c) against the test BMC (tests/redfish/bmc.py, DMTF's
 * public-rackmount1 mockup over HTTPS with a CA of its own): discovery, the known watts
 * integrated exactly on a clock driven by hand, auth and TLS refusals, and the BMC's faults
 * counting no energy. One BMC for the whole group; each case sets its watts and mode.
 */
#include "vw_test.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "bmc_fixture.h"
#include "fixture.h"
#include "log.h"
#include "macro.h"
#include "power.h"

#define SEC VW_NSEC_PER_SEC
#define T0 (1000 * SEC)
#define ENV_PATH "/redfish/v1/Chassis/1U/EnvironmentMetrics"

static struct vw_test_bmc bmc;
/* The daemon's clock (vw_now_ns()), fake: the poller stamps its readings with it and read()
 * integrates them on it (poller.h), so each test moves it as its reads go. */
static uint64_t clk = T0;


static void ctl(const char *name, const char *text)
{
	vw_test_bmc_ctl(&bmc, name, text);
}

/* The BMC answering as it should, its chassis drawing watts (text, as bmc.py takes it). */
static void bmc_ok(const char *watts)
{
	ctl("mode", "ok\n");
	ctl("watts", watts);
}

static int bmc_start(void **state)
{
	(void)state;
	vw_clock_set_fake(&clk);
	return vw_test_bmc_start(&bmc, "admin", "pw");
}

static int bmc_stop(void **state)
{
	(void)state;
	vw_test_bmc_stop(&bmc);
	vw_clock_set_fake(NULL);
	return 0;
}

static struct vw_redfish_config cfg_good(void)
{
	return (struct vw_redfish_config){ .id = "bmc-1", .endpoint = bmc.endpoint,
					   .username = "admin", .password = "pw",
					   .ca_file = bmc.ca, .timeout_ms = 3000,
					   .interval_ms = 50 };
}

static int open_with(const struct vw_redfish_config *cfg, void **ret)
{
	struct vw_source_config c = { .ops = &vw_src_redfish, .config = cfg };
	struct vw_power_env env = { .sysfs_fd = -1, .configs = &c, .n_configs = 1 };

	return vw_src_redfish.open(&env, ret);
}

/* A read at now_ns: the clock set there first, and (300 ms at most) a reading taken at it where
 * the BMC answers, as the poller makes one every interval (50 ms) on a real clock. */
static int read_at(void *st, uint64_t now_ns, uint64_t *raw, int *err)
{
	struct vw_node_activity act = { .now_ns = now_ns };

	clk = now_ns;
	for (int i = 0; i < 30 && !vw_src_redfish.fresh(st); i++)
		usleep(10000);
	return vw_src_redfish.read(st, &act, raw, err);
}

static uint64_t monotonic_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The poller's reading, as its kepler_platform_watts rows: their µW summed (0: none). */
static uint64_t rows_uw(void *st, struct vw_platform_reading *rows, size_t *ret_n)
{
	uint64_t sum = 0;
	size_t n = vw_src_redfish.readings(st, rows, VW_PLATFORM_MAX_READINGS);

	for (size_t i = 0; i < n; i++)
		sum += rows[i].uw;
	if (ret_n)
		*ret_n = n;
	return sum;
}

/* Wait (10 s at most) until the poller has read uw from the BMC. */
static void await_uw(void *st, uint64_t uw)
{
	struct vw_platform_reading rows[VW_PLATFORM_MAX_READINGS];

	for (int i = 0; i < 1000 && rows_uw(st, rows, NULL) != uw; i++)
		usleep(10000);
	assert_int_equal(rows_uw(st, rows, NULL), uw);
}

/*
 * Opened on the mockup with the BMC's watts at uw: one zone, at path, whose poller reads uw as
 * one row (in rows).
 */
static const struct vw_zone_info *open_one(const struct vw_redfish_config *cfg, void **st,
					   const char *path, uint64_t uw,
					   struct vw_platform_reading *rows)
{
	const struct vw_zone_info *z;
	size_t n;

	assert_int_equal(open_with(cfg, st), 0);
	assert_int_equal(vw_src_redfish.zones(*st, &z), 1);
	assert_string_equal(z->path, path);
	await_uw(*st, uw);
	assert_int_equal(rows_uw(*st, rows, &n), uw);
	assert_int_equal(n, 1);
	return z;
}

/* Read at now_ns (the same clock value each time, so nothing is integrated meanwhile) until
 * the zone says err (10 s at most). */
static void await_err(void *st, uint64_t now_ns, int want, uint64_t *raw)
{
	int err = 1;

	for (int i = 0; i < 1000; i++) {
		(void)read_at(st, now_ns, raw, &err);
		if (err == want)
			return;
		usleep(10000);
	}
	assert_int_equal(err, want);
}

static void test_not_configured(void **state)
{
	struct vw_power_env env = { .sysfs_fd = -1 };
	struct vw_redfish_config none = { 0 };
	void *st = NULL;

	(void)state;
	assert_int_equal(vw_src_redfish.open(&env, &st), -ENODEV);
	assert_int_equal(open_with(&none, &st), -ENODEV);
	none.endpoint = "http://127.0.0.1:1";
	assert_int_equal(open_with(&none, &st), -EINVAL); /* https only */
	assert_string_equal(vw_src_redfish.name, "redfish");
	assert_true(vw_src_redfish.measured);
}

/* The mockup's chassis 1U: EnvironmentMetrics first; the known watts integrated exactly. */
static void test_known_watts(void **state)
{
	struct vw_platform_reading rows[VW_PLATFORM_MAX_READINGS];
	struct vw_redfish_config cfg = cfg_good();
	const struct vw_zone_info *z;
	uint64_t raw;
	int err;
	void *st = NULL;

	(void)state;
	bmc_ok("123.5\n");
	clk = T0;
	z = open_one(&cfg, &st, ENV_PATH, 123500000, rows);
	assert_int_equal(z->zone, VW_ZONE_PLATFORM);
	assert_int_equal(z->max_range_uj, 0);
	assert_true(vw_src_redfish.fresh(st));
	assert_string_equal(rows[0].bmc_id, "bmc-1");
	assert_string_equal(rows[0].chassis_id, "1U");
	assert_string_equal(rows[0].source_type, "EnvironmentMetrics");
	assert_string_equal(rows[0].source_id, "EnvironmentMetrics");
	assert_string_equal(rows[0].source_name, "Chassis Environment Metrics");

	assert_int_equal(read_at(st, T0, &raw, &err), 0); /* sets the time only */
	assert_int_equal(err, 0);
	assert_int_equal(raw, 0);
	assert_int_equal(read_at(st, T0 + SEC, &raw, &err), 0);
	assert_int_equal(raw, 123500000); /* 123.5 W x 1 s */
	ctl("watts", "200\n");
	await_uw(st, 200000000);
	assert_int_equal(read_at(st, T0 + 3 * SEC, &raw, &err), 0);
	assert_int_equal(raw, 123500000 + 400000000); /* + 200 W x 2 s */
	ctl("watts", "0.000001\n");                  /* 1 µW: carried below the µJ */
	await_uw(st, 1);
	assert_int_equal(read_at(st, T0 + 3 * SEC + SEC / 2, &raw, &err), 0);
	assert_int_equal(raw, 523500000);
	assert_int_equal(read_at(st, T0 + 4 * SEC + SEC / 2, &raw, &err), 0);
	assert_int_equal(raw, 523500001); /* 0.5 µJ + 1 µJ */
	vw_src_redfish.close(st);
}

/* Without EnvironmentMetrics: the chassis's power sensor; then the deprecated Power; then the
 * PSUs' sum. Each names what it read as Kepler does (PowerControl, PowerSupply) or Sensor. */
static void test_fallbacks(void **state)
{
	static const struct {
		const char *hide;
		const char *path;
		const char *type, *id, *name;
	} cases[] = {
		{ "EnvironmentMetrics\n", "/redfish/v1/Chassis/1U/Sensors/TotalPower", "Sensor",
		  "TotalPower", "Power reading for the Chassis" },
		{ "EnvironmentMetrics Sensors\n", "/redfish/v1/Chassis/1U/Power", "PowerControl", "0",
		  "System Input Power" },
		{ "EnvironmentMetrics Sensors Power\n", "/redfish/v1/Chassis/1U/PowerSubsystem",
		  "PowerSupply", "Bay1", "Power Supply Bay 1" },
	};
	struct vw_platform_reading rows[VW_PLATFORM_MAX_READINGS];
	struct vw_redfish_config cfg = cfg_good();
	uint64_t raw;
	int err;
	void *st = NULL;

	(void)state;
	bmc_ok("250\n");
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		ctl("hide", cases[i].hide);
		clk = T0; /* a new meter: its readings from T0 */
		open_one(&cfg, &st, cases[i].path, 250000000, rows);
		assert_string_equal(rows[0].source_type, cases[i].type);
		assert_string_equal(rows[0].source_id, cases[i].id);
		assert_string_equal(rows[0].source_name, cases[i].name);
		assert_int_equal(read_at(st, T0, &raw, &err), 0);
		assert_int_equal(read_at(st, T0 + 2 * SEC, &raw, &err), 0);
		assert_int_equal(raw, 500000000); /* 250 W x 2 s */
		vw_src_redfish.close(st);
	}
	ctl("hide", "EnvironmentMetrics Sensors Power PowerSubsystem\n");
	assert_int_equal(open_with(&cfg, &st), -ENODEV);
	ctl("hide", "\n");
}

static int live_sessions(void)
{
	char path[300];
	_cleanup_free_ char *text = NULL;

	snprintf(path, sizeof(path), "%s/sessions", bmc.dir);
	text = vw_fixture_slurp(path, NULL);
	return text ? atoi(text) : 0;
}

/* A session while open, deleted at close; a new login when the BMC forgets it; the BMC's
 * session cap (the meter waits for a free one); basic auth leaves none. */
static void test_sessions(void **state)
{
	struct vw_redfish_config cfg = cfg_good();
	uint64_t raw;
	int err;
	void *st = NULL;

	(void)state;
	bmc_ok("100\n");
	assert_int_equal(live_sessions(), 0);
	assert_int_equal(open_with(&cfg, &st), 0);
	assert_int_equal(live_sessions(), 1);
	await_uw(st, 100000000);
	ctl("expire", "\n"); /* the BMC times every session out */
	ctl("watts", "101\n");
	await_uw(st, 101000000); /* read again: logged in again */
	assert_int_equal(live_sessions(), 1);
	vw_src_redfish.close(st);
	assert_int_equal(live_sessions(), 0);

	/* The BMC allows 4 (bmc.py --max-sessions): the fifth opens without a reading (-EUSERS)
	 * and logs in once one of the four ends. */
	void *four[4];

	for (size_t i = 0; i < ARRAY_SIZE(four); i++)
		assert_int_equal(open_with(&cfg, &four[i]), 0);
	assert_int_equal(live_sessions(), 4);
	assert_int_equal(open_with(&cfg, &st), 0);
	await_err(st, T0, -EUSERS, &raw);
	assert_false(vw_src_redfish.fresh(st));
	vw_src_redfish.close(four[0]);
	await_uw(st, 101000000);
	assert_int_equal(live_sessions(), 4);
	vw_src_redfish.close(st);
	for (size_t i = 1; i < ARRAY_SIZE(four); i++)
		vw_src_redfish.close(four[i]);
	assert_int_equal(live_sessions(), 0);

	cfg.auth = VW_REDFISH_AUTH_BASIC;
	assert_int_equal(open_with(&cfg, &st), 0);
	await_uw(st, 101000000);
	assert_int_equal(read_at(st, T0, &raw, &err), 0);
	assert_int_equal(live_sessions(), 0);
	vw_src_redfish.close(st);
}

/* What the BMC will keep refusing fails open() (said at start); a BMC not up yet does not. */
static void test_refused(void **state)
{
	struct vw_redfish_config cfg = cfg_good();
	uint64_t raw;
	void *st = NULL;

	(void)state;
	ctl("mode", "ok\n");
	cfg.password = "wrong";
	assert_int_equal(open_with(&cfg, &st), -EACCES);
	cfg = cfg_good();
	cfg.ca_file = VW_SOURCE_ROOT "/tests/data/redfish-mockup/README.md"; /* no CA in it */
	assert_int_equal(open_with(&cfg, &st), -EPROTO);
	cfg.ca_file = NULL; /* the system's CAs do not know the test CA */
	assert_int_equal(open_with(&cfg, &st), -EPROTO);
	cfg.insecure = true;
	assert_int_equal(open_with(&cfg, &st), 0);
	vw_src_redfish.close(st);

	cfg = cfg_good();
	ctl("mode", "reset\n"); /* rebooting */
	assert_int_equal(open_with(&cfg, &st), 0);
	await_err(st, T0, -ECONNRESET, &raw);
	assert_int_equal(raw, 0);
	ctl("watts", "77\n");
	ctl("mode", "ok\n");
	await_uw(st, 77000000);
	vw_src_redfish.close(st);
}

/* A reading older than the staleness bound counts nothing, with the poller's -errno: the span
 * from the last read that counted to the next fresh reading is a gap (counted), not made up. */
static void test_faults(void **state)
{
	static const struct {
		const char *mode;
		int err;
	} faults[] = {
		{ "401\n", -EACCES },	  { "503\n", -EAGAIN },	   { "garbage\n", -EBADMSG },
		{ "truncated\n", -EBADMSG }, { "reset\n", -ECONNRESET }, { "slow 2\n", -ETIMEDOUT },
	};
	struct vw_redfish_config cfg = cfg_good();
	struct vw_power_source_stats stats = { 0 };
	uint64_t raw, now = T0, before;
	int err;
	void *st = NULL;

	(void)state;
	bmc_ok("100\n");
	cfg.timeout_ms = 1000;
	cfg.staleness_ms = 1500; /* the reads below are 1 s apart */
	clk = T0;
	assert_int_equal(open_with(&cfg, &st), 0);
	await_uw(st, 100000000);
	assert_int_equal(read_at(st, now, &raw, &err), 0);
	for (size_t i = 0; i < ARRAY_SIZE(faults); i++) {
		assert_int_equal(read_at(st, now += SEC, &raw, &err), 0);
		assert_int_equal(raw, 100000000 * (i + 1)); /* 100 W x 1 s per fresh second */
		before = raw;
		ctl("mode", faults[i].mode);
		usleep(300000); /* no good answer still on its way when the clock moves on */
		await_err(st, now += 2 * SEC, faults[i].err, &raw);
		assert_int_equal(raw, before); /* stale: nothing counted from the last fresh read */
		assert_false(vw_src_redfish.fresh(st));
		assert_int_equal(rows_uw(st, (struct vw_platform_reading[16]){ 0 }, NULL), 0);
		ctl("mode", "ok\n");
		await_err(st, now += 10 * SEC, 0, &raw);
		assert_int_equal(raw, before); /* the stale span is not made up */
		vw_src_redfish.stats(st, &stats);
		assert_int_equal(stats.gaps, i + 1); /* but counted as a gap */
	}
	assert_int_equal(read_at(st, now + SEC, &raw, &err), 0);
	assert_int_equal(raw, before + 100000000);
	vw_src_redfish.close(st);
}

/* Watts no node draws, or no number at all: refused (-ERANGE), nothing counted from them, the
 * span a gap; the next sane reading counts again. */
static void test_hostile_watts(void **state)
{
	static const char *const watts[] = { "nan\n", "inf\n", "-5\n", "1e308\n", "2e7\n" };
	struct vw_redfish_config cfg = cfg_good();
	struct vw_power_source_stats stats = { 0 };
	uint64_t raw, now = T0, before;
	int err;
	void *st = NULL;

	(void)state;
	bmc_ok("100\n");
	cfg.timeout_ms = 1000;
	cfg.staleness_ms = 1500;
	clk = T0;
	assert_int_equal(open_with(&cfg, &st), 0);
	await_uw(st, 100000000);
	assert_int_equal(read_at(st, now, &raw, &err), 0);
	for (size_t i = 0; i < ARRAY_SIZE(watts); i++) {
		assert_int_equal(read_at(st, now += SEC, &raw, &err), 0);
		before = raw;
		ctl("watts", watts[i]);
		usleep(300000);
		await_err(st, now += 2 * SEC, -ERANGE, &raw);
		if (raw != before)
			fail_msg("watts %s: counted %" PRIu64 " uJ", watts[i], raw - before);
		bmc_ok("100\n");
		await_err(st, now += 10 * SEC, 0, &raw);
		assert_int_equal(raw, before);
		vw_src_redfish.stats(st, &stats);
		assert_int_equal(stats.gaps, i + 1);
	}
	vw_src_redfish.close(st);
}

/* A BMC that hangs never holds up read(), and close() cancels the request in flight. */
static void test_never_stalls(void **state)
{
	struct vw_redfish_config cfg = cfg_good();
	uint64_t raw, t, worst = 0;
	int err;
	void *st = NULL;

	(void)state;
	bmc_ok("100\n");
	cfg.timeout_ms = 8000;
	assert_int_equal(open_with(&cfg, &st), 0);
	await_uw(st, 100000000);
	ctl("mode", "slow 6\n"); /* each request takes 6 s */
	for (int i = 0; i < 20; i++) {                 /* 2 s of reads while a poll hangs */
		t = monotonic_ms();
		(void)read_at(st, T0 + (uint64_t)i * SEC, &raw, &err);
		worst = VW_MAX(worst, monotonic_ms() - t);
		usleep(100000);
	}
	assert_true(worst < 500);
	t = monotonic_ms();
	vw_src_redfish.close(st);
	assert_true(monotonic_ms() - t < 4500); /* cancelled (~1 s), logout bounded (2 s) */
	ctl("mode", "ok\n");
}

static unsigned bmc_requests(void)
{
	char path[512], *text;
	unsigned n;

	snprintf(path, sizeof(path), "%s/requests", bmc.dir);
	text = vw_fixture_slurp(path, NULL);
	n = text ? (unsigned)strtoul(text, NULL, 10) : 0;
	free(text);
	return n;
}

/*
 * A BMC whose Chassis collection lists 2,000 chassis that do not exist before its real one:
 * discovery (on the daemon's start thread, at open) gives up after 512 requests, with a warning,
 * and the source is absent. Before, it asked for every one: 2,000 requests, each up to the
 * timeout (3 s here), before the daemon could start.
 */
static void test_chassis_flood(void **state)
{
	struct vw_redfish_config cfg = cfg_good();
	unsigned before, asked;
	uint64_t t;
	void *st = NULL;
	int r;

	(void)state;
	bmc_ok("100\n");
	ctl("chassis", "2000\n");
	before = bmc_requests();
	t = monotonic_ms();
	r = open_with(&cfg, &st);
	t = monotonic_ms() - t;
	asked = bmc_requests() - before;
	print_message("# 2000 chassis listed: open %d after %u requests, %" PRIu64 " ms\n", r, asked,
		      t);
	ctl("chassis", "0\n");
	if (r == 0)
		vw_src_redfish.close(st);
	assert_int_equal(r, -ENODEV);
	assert_true(asked <= 512 + 4); /* the service root, a login, the session's end */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_not_configured),
		cmocka_unit_test(test_known_watts),
		cmocka_unit_test(test_fallbacks),
		cmocka_unit_test(test_sessions),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_faults),
		cmocka_unit_test(test_never_stalls),
		cmocka_unit_test(test_chassis_flood),
		cmocka_unit_test(test_hostile_watts),
	};

	vw_log_set_level(VW_LOG_WARN);
	/* The simulated BMC needs python3 and the openssl CLI: skip without them, except in CI. */
	if (!vw_test_bmc_available() && !vw_test_in_ci()) {
		printf("1..0 # SKIP python3 or openssl missing\n");
		return 0;
	}
	return cmocka_run_group_tests(tests, bmc_start, bmc_stop);
}

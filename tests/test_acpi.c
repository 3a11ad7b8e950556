/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ACPI power meter source (host/power/src_acpi.c) on fixture sysfs trees shaped like a
 * real server's: class/hwmon/hwmonN are symlinks into devices/; a CPU temperature chip keeps
 * its attributes on the hwmon device, while acpi_power_meter (still on hwmon_device_register())
 * keeps `name`, power1_average and the rest on the ACPI device, hwmonN/device. The daemon's
 * clock is driven by hand (act.now_ns), and so are the source's own readings (its thread's
 * ticks: vw_acpi_config.manual_ticks, vw_acpi_tick()) but in test_thread; openat refuses a
 * meter with EACCES even as root and catches any open for writing (tests/hwmon_fixture.h).
 */
#include "vw_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "energy.h"
#include "fileio.h"
#include "fixture.h"
#include "hwmon_fixture.h"
#include "log.h"
#include "power.h"
#include "power_fixture.h"

#define SRC vw_src_acpi_power_meter
#define MS HW_MS
#define T0 HW_T0
#define ACPI_DEV "devices/LNXSYSTM:00/LNXSYBUS:00/ACPI000D:%02u"
#define PMM_NONE "4294967295000\n" /* _PMM's "no reading" (0xFFFFFFFF mW) as the driver shows it */

typedef unsigned __int128 u128;

/* Every tree here is opened with the thread's ticks left to the test (vw_acpi_tick()). */
static const struct vw_acpi_config manual = { .manual_ticks = true };

static void acpi_machine_new(struct machine *m, const struct vw_power_source_ops *src)
{
	machine_new(m, src);
	m->config = &manual;
}
#define machine_new acpi_machine_new

/* A CPU temperature chip (a modern driver: its attributes on hwmonN itself). */
static void add_temp_chip(struct machine *m, unsigned n, const char *name, const char *pci)
{
	char dev[128], rel[256], text[64];

	snprintf(dev, sizeof(dev), "devices/pci0000:00/%s", pci);
	link_hwmon(m, dev, n);
	snprintf(rel, sizeof(rel), "%s/hwmon/hwmon%u/name", dev, n);
	snprintf(text, sizeof(text), "%s\n", name);
	put(m, rel, text);
	snprintf(rel, sizeof(rel), "%s/hwmon/hwmon%u/temp1_input", dev, n);
	put(m, rel, "45250\n");
}

/* A file of ACPI power meter number acpi (on the ACPI device); NULL text removes it. */
static void meter_file(struct machine *m, unsigned acpi, const char *file, const char *text)
{
	char rel[256];

	snprintf(rel, sizeof(rel), ACPI_DEV "/%s", acpi, file);
	put(m, rel, text);
}

static void set_power(struct machine *m, unsigned acpi, uint64_t uw)
{
	char rel[256];

	snprintf(rel, sizeof(rel), ACPI_DEV "/power1_average", acpi);
	put_u64(m, rel, uw);
}

/* acpi_power_meter as a server has it: measuring, a writable cap, trip points not set. */
static void add_meter(struct machine *m, unsigned n, unsigned acpi, uint64_t uw)
{
	char dev[128];

	snprintf(dev, sizeof(dev), ACPI_DEV, acpi);
	link_hwmon(m, dev, n);
	meter_file(m, acpi, "name", "power_meter\n");
	set_power(m, acpi, uw);
	meter_file(m, acpi, "power1_average_interval", "1000\n");
	meter_file(m, acpi, "power1_average_interval_min", "1000\n");
	meter_file(m, acpi, "power1_average_interval_max", "60000\n");
	meter_file(m, acpi, "power1_cap", "450000000\n");
	meter_file(m, acpi, "power1_average_max", "unknown\n");
	meter_file(m, acpi, "power1_average_min", "unknown\n");
	meter_file(m, acpi, "power1_accuracy", "95.0%\n");
	meter_file(m, acpi, "power1_is_battery", "0\n");
}

/* A Supermicro-like box: k10temp at hwmon0, the ACPI meter at hwmon1, an NVMe at hwmon2. */
static void add_server(struct machine *m, uint64_t uw)
{
	add_temp_chip(m, 0, "k10temp", "0000:00:18.3");
	add_meter(m, 1, 0, uw);
	add_temp_chip(m, 2, "nvme", "0000:00:01.1/0000:01:00.0");
}

/*
 * That server metering uw, opened with the log left at warn (what opening says at info is
 * test_server's); the caller sets it back to info.
 */
static void open_server(struct machine *m, uint64_t uw)
{
	machine_new(m, &SRC);
	add_server(m, uw);
	vw_log_set_level(VW_LOG_WARN);
	assert_int_equal(machine_open(m), 0);
}

static void assert_zone(const struct machine *m, size_t i, unsigned socket, const char *path)
{
	assert_true(i < m->n);
	if (m->zones[i].zone != VW_ZONE_PLATFORM || m->zones[i].socket != socket ||
	    strcmp(m->zones[i].path, path) != 0)
		fail_msg("zone %zu: %s socket %u %s, expected platform socket %u %s", i,
			 vw_zone_name(m->zones[i].zone), m->zones[i].socket, m->zones[i].path,
			 socket, path);
	assert_int_equal(m->zones[i].max_range_uj, 0);
	assert_double_near(m->zones[i].idle_w, -1, 0);
}

/* ---- tests -------------------------------------------------------------------------------- */

static void test_ops_table(void **state)
{
	(void)state;
	vw_fixture_assert_source_ops(&SRC, "acpi");
}

/* No meter is the usual case: -ENODEV, and nothing said above debug. */
static void test_no_meter(void **state)
{
	struct vw_power_env env = { .sysfs_fd = -1 };
	struct machine m;
	struct logged l;

	(void)state;
	assert_int_equal(SRC.open(&env, &m.state), -EBADF);
	machine_new(&m, &SRC);
	log_to(&l);
	assert_int_equal(machine_open(&m), -ENODEV); /* no class/hwmon */
	assert_int_equal(vw_fixture_mkdir(m.root, "class/hwmon"), 0);
	assert_int_equal(machine_open(&m), -ENODEV); /* empty */
	add_temp_chip(&m, 0, "k10temp", "0000:00:18.3");
	add_temp_chip(&m, 1, "coretemp", "0000:00:18.4");
	/* Entries that are no hwmon device, a dangling link, a chip without a name. */
	assert_int_equal(vw_fixture_symlink(m.root, "../../nowhere", "class/hwmon/hwmon7"), 0);
	assert_int_equal(vw_fixture_mkdir(m.root, "class/hwmon/hwmon8"), 0);
	put(&m, "class/hwmon/hwmon01/name", "power_meter\n");
	put(&m, "class/hwmon/hwmonx/name", "power_meter\n");
	put(&m, "class/hwmon/power_meter/name", "power_meter\n");
	assert_int_equal(machine_open(&m), -ENODEV);
	assert_null(m.state);
	assert_int_equal(l.at[VW_LOG_ERROR] + l.at[VW_LOG_WARN] + l.at[VW_LOG_INFO], 0);

	/* A power_meter that only caps (no power1_average): not a meter; said at info. */
	add_meter(&m, 3, 0, 0);
	meter_file(&m, 0, "power1_average", NULL);
	assert_int_equal(machine_open(&m), -ENODEV);
	assert_int_equal(l.at[VW_LOG_ERROR] + l.at[VW_LOG_WARN], 0);
	assert_logged(&l, "info: acpi: /sys/class/hwmon/hwmon3: power_meter without "
			  "power1_average");
	log_restore();
	machine_free(&m);
}

static void test_server(void **state)
{
	struct machine m;
	struct logged l;

	(void)state;
	machine_new(&m, &SRC);
	add_server(&m, 123456000);
	log_to(&l);
	assert_int_equal(machine_open(&m), 0);
	log_restore();
	assert_int_equal(m.n, 1);
	assert_zone(&m, 0, 0, "/sys/class/hwmon/hwmon1");
	/* Trip point not set ("unknown"): no ceiling. The averaging window is logged. */
	assert_int_equal(m.zones[0].max_power_uw, 0);
	assert_logged(&l, "info: acpi: /sys/class/hwmon/hwmon1: ACPI power meter, power1_average "
			  "averaged over 1000 ms");
	assert_int_equal(l.at[VW_LOG_ERROR] + l.at[VW_LOG_WARN], 0);
	/* The first read only sets the time. */
	assert_int_equal(machine_read(&m, T0), 0);
	assert_int_equal(m.errs[0], 0);
	assert_int_equal(m.raw[0], 0);
	machine_free(&m);

	/* A trip point set: the ceiling is 4 x power1_average_max. No interval: said so. */
	machine_new(&m, &SRC);
	add_server(&m, 123456000);
	meter_file(&m, 0, "power1_average_max", "500000000\n");
	meter_file(&m, 0, "power1_average_interval", NULL);
	log_to(&l);
	assert_int_equal(machine_open(&m), 0);
	log_restore();
	assert_int_equal(m.zones[0].max_power_uw, 2000000000);
	assert_logged(&l, "/sys/class/hwmon/hwmon1: ACPI power meter, averaging window unknown");
	machine_free(&m);
}

/* The path label is /sys/class/hwmon/hwmonN whatever the injected root is called. */
static void test_path_label_independent_of_root(void **state)
{
	struct machine m;
	char *sys;
	int fd;
	void *st = NULL;
	const struct vw_zone_info *z;

	(void)state;
	machine_new(&m, &SRC);
	assert_true(asprintf(&sys, "%s/host/sys", m.root) > 0);
	assert_int_equal(vw_fixture_mkdir(m.root, "host/sys"), 0);
	fd = vw_root_open(sys);
	assert_true(fd >= 0);
	{
		struct machine inner = { .root = sys, .sysfs_fd = fd };
		struct vw_power_env env = { .sysfs_fd = fd };

		add_meter(&inner, 4, 2, 1000000);
		vw_log_set_level(VW_LOG_WARN);
		assert_int_equal(SRC.open(&env, &st), 0);
		vw_log_set_level(VW_LOG_INFO);
	}
	assert_int_equal(SRC.zones(st, &z), 1);
	assert_string_equal(z[0].path, "/sys/class/hwmon/hwmon4");
	SRC.close(st);
	close(fd);
	free(sys);
	machine_free(&m);
}

/* 123.456 W read every 250 ms: 30.864 J a read, to the µJ, and so says the energy module. */
static void test_exact_power(void **state)
{
	struct machine m;
	struct vw_energy_counter c;

	(void)state;
	open_server(&m, 123456000);
	vw_log_set_level(VW_LOG_INFO);
	vw_energy_counter_init(&c, m.zones[0].max_range_uj, m.zones[0].max_power_uw);
	for (uint64_t k = 0; k < 10; k++) {
		assert_int_equal(machine_read(&m, T0 + k * 250 * MS), 0);
		assert_int_equal(m.errs[0], 0);
		assert_int_equal(m.raw[0], k * 30864000);
		vw_energy_counter_update(&c, m.raw[0], T0 + k * 250 * MS, NULL);
	}
	assert_int_equal(c.total_uj, 277776000);
	assert_int_equal(c.gaps, 0);
	assert_double_near(vw_energy_watts(c.total_uj, 9 * 250 * MS), 123.456, 1e-9);
	machine_free(&m);
}

/*
 * 123.456789 W every 250 ms is 30864197.25 µJ a read: the quarter microjoules add up (exactly
 * 123456789 µJ every 4 reads), and a microwatt read every millisecond reaches 1 µJ after 1000.
 */
static void test_fraction_carried(void **state)
{
	struct machine m;

	(void)state;
	open_server(&m, 123456789);
	for (uint64_t k = 0; k <= 40; k++) {
		assert_int_equal(machine_read(&m, T0 + k * 250 * MS), 0);
		assert_int_equal(m.raw[0], k * 30864197 + k / 4);
	}
	assert_int_equal(m.raw[0], 10 * 123456789ULL);

	set_power(&m, 0, 1);
	for (uint64_t k = 1; k <= 1000; k++) {
		assert_int_equal(machine_read(&m, T0 + 10 * VW_NSEC_PER_SEC + k * MS), 0);
		assert_int_equal(m.raw[0], 10 * 123456789ULL + (k == 1000));
	}
	vw_log_set_level(VW_LOG_INFO);
	machine_free(&m);
}

/* Power changing at every read, uneven intervals: the counter is the exact integral, floored. */
static void test_integral_of_changing_power(void **state)
{
	static const uint64_t uw[] = { 87000000, 312500001, 1, 0, 999999999, 450000000, 12345,
				       250000000, 3, 777777777 };
	static const uint64_t dt_ns[] = { 250000000, 1, 333333333, 1000000000, 7,
					  60000000000, 999, 100000000, 123456789, 3 };
	struct machine m;
	uint64_t now = T0;
	u128 exact = 0; /* in 1e-9 µJ */

	(void)state;
	open_server(&m, 1);
	assert_int_equal(machine_read(&m, now), 0);
	for (size_t i = 0; i < ARRAY_SIZE(uw); i++) {
		set_power(&m, 0, uw[i]);
		now += dt_ns[i];
		exact += (u128)uw[i] * dt_ns[i];
		assert_int_equal(machine_read(&m, now), 0);
		assert_true(m.raw[0] == (uint64_t)(exact / 1000000000u));
	}
	vw_log_set_level(VW_LOG_INFO);
	machine_free(&m);
}

/* Meters at hwmon2 and hwmon10 (one with its attributes on the class device): numeric order. */
static void test_two_meters(void **state)
{
	struct machine m;

	(void)state;
	machine_new(&m, &SRC);
	add_temp_chip(&m, 11, "coretemp", "0000:00:18.3");
	add_meter(&m, 10, 1, 200000000);
	add_temp_chip(&m, 0, "k10temp", "0000:00:18.4");
	add_meter(&m, 2, 0, 100000000);
	/* A driver on hwmon_device_register_with_info() keeps its attributes on hwmonN. */
	meter_file(&m, 1, "name", NULL);
	meter_file(&m, 1, "power1_average", NULL);
	put(&m, "devices/LNXSYSTM:00/LNXSYBUS:00/ACPI000D:01/hwmon/hwmon10/name", "power_meter\n");
	put(&m, "devices/LNXSYSTM:00/LNXSYBUS:00/ACPI000D:01/hwmon/hwmon10/power1_average",
	    "200000000\n");
	assert_int_equal(machine_open_quiet(&m), 0);
	assert_int_equal(m.n, 2);
	assert_zone(&m, 0, 0, "/sys/class/hwmon/hwmon2");
	assert_zone(&m, 1, 1, "/sys/class/hwmon/hwmon10");
	assert_int_equal(machine_read(&m, T0), 0);
	assert_int_equal(machine_read(&m, T0 + 500 * MS), 0);
	assert_int_equal(m.raw[0], 50000000);
	assert_int_equal(m.raw[1], 100000000);
	machine_free(&m);
}

/*
 * A reading that fails (junk, gone, the firmware's "no reading", empty) counts nothing, and
 * neither does the time until the next good read, which only sets the time: energy is counted
 * from the recovery on, with no jump. Logged once while it lasts, and once when it is over.
 */
static void test_failed_reads_invent_nothing(void **state)
{
	static const char *const bad[] = { "12abc\n", NULL, PMM_NONE, "18446744073709550616\n",
					   "", "-5\n" };
	static const int err[] = { -EINVAL, -ENOENT, -ENODATA, -ENODATA, -ENODATA, -EINVAL };
	struct machine m;
	struct logged l;
	struct vw_energy_counter c;
	uint64_t now = T0;

	(void)state;
	open_server(&m, 100000000); /* 100 W */
	vw_energy_counter_init(&c, m.zones[0].max_range_uj, m.zones[0].max_power_uw);
	assert_int_equal(machine_read(&m, now), 0);
	vw_energy_counter_update(&c, m.raw[0], now, NULL);
	now += VW_NSEC_PER_SEC;
	assert_int_equal(machine_read(&m, now), 0);
	vw_energy_counter_update(&c, m.raw[0], now, NULL);
	assert_int_equal(m.raw[0], 100000000);

	log_to(&l);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		meter_file(&m, 0, "power1_average", bad[i]);
		now += 10 * VW_NSEC_PER_SEC;
		/* The only zone fails: so does the read. */
		assert_int_equal(machine_read(&m, now), err[i]);
		assert_int_equal(m.errs[0], err[i]);
		assert_int_equal(m.raw[0], 100000000); /* standing still, not back */
	}
	assert_int_equal(l.at[VW_LOG_WARN], 1);
	assert_logged(&l, "warn: acpi: /sys/class/hwmon/hwmon1: cannot read power1_average: "
			  "Invalid argument; no energy counted until it reads again");

	/* Back at 300 W, 60 s after the last good read: nothing for those 60 s. */
	set_power(&m, 0, 300000000);
	now += 10 * VW_NSEC_PER_SEC;
	assert_int_equal(machine_read(&m, now), 0);
	assert_int_equal(m.errs[0], 0);
	assert_int_equal(m.raw[0], 100000000);
	vw_energy_counter_update(&c, m.raw[0], now, NULL);
	assert_int_equal(l.at[VW_LOG_INFO], 1);
	assert_logged(&l, "info: acpi: /sys/class/hwmon/hwmon1: power1_average readable again; "
			  "energy counted from this reading on");
	log_restore();
	/* From the recovery on, at the power read. */
	now += 500 * MS;
	assert_int_equal(machine_read(&m, now), 0);
	assert_int_equal(m.raw[0], 100000000 + 150000000);
	vw_energy_counter_update(&c, m.raw[0], now, NULL);
	assert_int_equal(c.total_uj, 250000000);
	assert_int_equal(c.gaps, 0);
	machine_free(&m);
}

/* One meter failing leaves the other counting; the read succeeds while one zone reads. */
static void test_one_of_two_fails(void **state)
{
	struct machine m;

	(void)state;
	machine_new(&m, &SRC);
	add_meter(&m, 1, 0, 100000000);
	add_meter(&m, 3, 1, 200000000);
	vw_log_set_level(VW_LOG_ERROR);
	assert_int_equal(machine_open(&m), 0);
	assert_int_equal(machine_read(&m, T0), 0);
	meter_file(&m, 0, "power1_average", "junk\n");
	assert_int_equal(machine_read(&m, T0 + VW_NSEC_PER_SEC), 0);
	assert_int_equal(m.errs[0], -EINVAL);
	assert_int_equal(m.errs[1], 0);
	assert_int_equal(m.raw[0], 0);
	assert_int_equal(m.raw[1], 200000000);
	/* No time to integrate over: every zone says so, and no counter moves. */
	assert_int_equal(SRC.read(m.state, NULL, m.raw, m.errs), -EINVAL);
	assert_int_equal(m.errs[1], -EINVAL);
	assert_int_equal(m.raw[1], 200000000);
	vw_log_set_level(VW_LOG_INFO);
	machine_free(&m);
}

/*
 * A reading stamped before the counter's last (a clock that steps back, or the sampling
 * thread's time taken before the reading thread's last tick) counts nothing: the span since
 * the last reading is counted once, from it, and the counter never goes back.
 */
static void test_clock_back(void **state)
{
	struct machine m;

	(void)state;
	open_server(&m, 100000000);
	assert_int_equal(machine_read(&m, T0), 0);
	assert_int_equal(machine_read(&m, T0 + VW_NSEC_PER_SEC), 0);
	assert_int_equal(machine_read(&m, T0 + VW_NSEC_PER_SEC), 0); /* no time: nothing */
	assert_int_equal(m.raw[0], 100000000);
	assert_int_equal(machine_read(&m, T0), 0);
	assert_int_equal(m.raw[0], 100000000);
	assert_int_equal(machine_read(&m, T0 + 2 * VW_NSEC_PER_SEC), 0);
	assert_int_equal(m.raw[0], 200000000);
	vw_log_set_level(VW_LOG_INFO);
	machine_free(&m);
}

/*
 * A late sample at a step of power: the meter's own readings every 250 ms (the thread's ticks),
 * 100 W up to 10 s then 0 W; the sampling thread (every 250 ms too) misses 2 s across the step,
 * as when an interval close takes 2 s on a loaded machine. Each reading counts over the time
 * since the one before it: exactly 100 W x 10 s. (Before, the sampling thread's reading was the
 * only one and covered its whole wait: 0 W from 9.5 s to 11.5 s, 950 J, no gap counted.) Then
 * a failure only the thread sees: the span it breaks is counted as a gap, not made up.
 */
static void test_late_sample(void **state)
{
	const uint64_t step = 250 * MS, sec = VW_NSEC_PER_SEC, w100 = 100000000;
	struct vw_power_source_stats st = { 0 };
	struct machine m;

	(void)state;
	open_server(&m, w100);
	for (uint64_t s = 0; s <= 13 * sec; s += step) {
		bool late = s > 19 * sec / 2 && s < 23 * sec / 2;

		set_power(&m, 0, s <= 10 * sec ? w100 : 0);
		vw_acpi_tick(m.state, T0 + s);
		if (late)
			continue;
		assert_int_equal(machine_read(&m, T0 + s), 0);
		assert_int_equal(m.errs[0], 0);
		if (s == 23 * sec / 2)
			assert_int_equal(m.raw[0], 1000000000); /* 100 W x 10 s, no more, no less */
	}
	assert_int_equal(m.raw[0], 1000000000);
	SRC.stats(m.state, &st);
	assert_int_equal(st.gaps, 0);

	/* Junk at the 14 s tick, 100 W again at 15 s: from the last good reading (13 s) to 15 s
	 * a gap, counted; from 15 s on counted; the sampling thread never saw the failure. */
	vw_log_set_level(VW_LOG_ERROR);
	meter_file(&m, 0, "power1_average", "junk\n");
	vw_acpi_tick(m.state, T0 + 14 * sec);
	set_power(&m, 0, w100);
	vw_acpi_tick(m.state, T0 + 15 * sec);
	assert_int_equal(machine_read(&m, T0 + 16 * sec), 0);
	assert_int_equal(m.errs[0], 0);
	assert_int_equal(m.raw[0], 1000000000 + 100000000);
	st = (struct vw_power_source_stats){ 0 };
	SRC.stats(m.state, &st);
	assert_int_equal(st.gaps, 1);
	vw_log_set_level(VW_LOG_INFO);
	machine_free(&m);
}

/*
 * The thread for real, on the daemon's clock: it reads the meter on its own (a read without a
 * time shows its counter growing at 100 W while the sampling thread does nothing), and the
 * sampling thread's 0 W reading after the meter fell takes nothing of what it counted.
 */
static void test_thread(void **state)
{
	const uint64_t w100 = 100000000;
	struct machine m;
	uint64_t t0, seen = 0, t1;

	(void)state;
	machine_new(&m, &SRC);
	add_server(&m, w100);
	m.config = NULL; /* the daemon's: the source's own thread reads the meter */
	assert_int_equal(machine_open_quiet(&m), 0);
	t0 = vw_now_ns();
	assert_int_equal(machine_read(&m, t0), 0);
	for (int i = 0; i < 200 && seen == 0; i++) { /* 10 s at most on a loaded machine */
		usleep(50000);
		assert_int_equal(SRC.read(m.state, NULL, m.raw, m.errs), -EINVAL);
		seen = m.raw[0];
	}
	t1 = vw_now_ns();
	assert_true(seen > 0);
	assert_true(seen <= (t1 - t0) / 10); /* 100 W: 1e8 µJ a second, 0.1 µJ a ns */
	set_power(&m, 0, 0);
	usleep(300000);
	assert_int_equal(machine_read(&m, vw_now_ns()), 0);
	assert_true(m.raw[0] >= seen);
	assert_true(m.raw[0] <= (vw_now_ns() - t0) / 10);
	machine_free(&m);
}

static ino_t meter_ino(const struct machine *m, unsigned acpi)
{
	char rel[128];

	snprintf(rel, sizeof(rel), ACPI_DEV, acpi);
	return machine_ino(m, rel);
}

static void test_eacces(void **state)
{
	struct machine m;
	struct logged l;

	(void)state;
	/* Every meter refused: -EACCES, one error line. */
	machine_new(&m, &SRC);
	add_meter(&m, 1, 0, 100000000);
	add_meter(&m, 2, 1, 100000000);
	hw_io.deny_file = "power1_average";
	hw_io.deny_all = true;
	log_to(&l);
	assert_int_equal(machine_open(&m), -EACCES);
	log_restore();
	assert_null(m.state);
	assert_int_equal(l.at[VW_LOG_ERROR], 1);
	assert_int_equal(l.at[VW_LOG_WARN], 0);
	assert_logged(&l, "error: acpi: permission denied reading power1_average of 2 ACPI power "
			  "meter(s)");
	machine_free(&m);

	/* One of two refused: the other is socket 0, with a warning. */
	machine_new(&m, &SRC);
	add_meter(&m, 1, 0, 100000000);
	add_meter(&m, 2, 1, 100000000);
	hw_io.deny_file = "power1_average";
	hw_io.deny_ino = meter_ino(&m, 0);
	log_to(&l);
	assert_int_equal(machine_open(&m), 0);
	log_restore();
	assert_int_equal(m.n, 1);
	assert_zone(&m, 0, 0, "/sys/class/hwmon/hwmon2");
	assert_int_equal(l.at[VW_LOG_ERROR], 0);
	assert_logged(&l, "warn: acpi: 1 ACPI power meter(s) refused reading power1_average");

	/* Refused after open: a failed read like any other. */
	hw_io.deny_ino = meter_ino(&m, 1);
	vw_log_set_level(VW_LOG_ERROR);
	assert_int_equal(machine_read(&m, T0), -EACCES);
	assert_int_equal(m.errs[0], -EACCES);
	vw_log_set_level(VW_LOG_INFO);
	machine_free(&m);
}

/* ---- nothing written ---------------------------------------------------------------------- */

/*
 * Open, reads, failures and close leave every file as it was (power1_cap, the interval and the
 * trip points are writable on real meters), and nothing is even opened for writing.
 */
static void test_nothing_written(void **state)
{
	struct machine m;

	(void)state;
	machine_new(&m, &SRC);
	add_server(&m, 123456000);
	meter_file(&m, 0, "power1_average_max", "500000000\n");
	assert_int_equal(assert_nothing_written(&m, 5, "/power1_cap "), 1);
	machine_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ops_table),
		cmocka_unit_test(test_no_meter),
		cmocka_unit_test(test_server),
		cmocka_unit_test(test_path_label_independent_of_root),
		cmocka_unit_test(test_exact_power),
		cmocka_unit_test(test_fraction_carried),
		cmocka_unit_test(test_integral_of_changing_power),
		cmocka_unit_test(test_two_meters),
		cmocka_unit_test(test_failed_reads_invent_nothing),
		cmocka_unit_test(test_one_of_two_fails),
		cmocka_unit_test(test_clock_back),
		cmocka_unit_test(test_eacces),
		cmocka_unit_test(test_nothing_written),
		cmocka_unit_test(test_late_sample),
		cmocka_unit_test(test_thread),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

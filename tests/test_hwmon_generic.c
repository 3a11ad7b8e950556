/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The generic hwmon meter (host/power/src_hwmon_generic.c) on fixture trees shaped like real
 * machines': a 2-socket EPYC with amd_energy (Ecore000.. then Esocket0/1, attributes on the
 * hwmon device itself) beside k10temp and an amdgpu; an ARM board whose ina3221 rails read as
 * inN x currN with device-tree labels (a Jetson's); a board of single-rail ina226 chips whose
 * power1_input carries the chip's own `label`; a chip with both an energy counter and a power
 * reading; zenpower on two sockets. The daemon's clock is driven by hand (act.now_ns), and so
 * are the power sensors' own readings (their thread's ticks: vw_hwmon_config.manual_ticks,
 * vw_hwmon_tick()) but in test_thread; the energy module (shared/energy) turns the raw counters
 * into what the daemon would count.
 */
#include "vw_test.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "energy.h"
#include "fixture.h"
#include "hwmon_fixture.h"
#include "hwmon_rules.h"
#include "meter_fixture.h"
#include "power.h"

#define SRC vw_src_hwmon
#define SEC VW_NSEC_PER_SEC
#define AMD_DEV "devices/platform/amd_energy.0"
#define JETSON_I2C "devices/platform/bus@0/3160000.i2c/i2c-0/0-00%x"
#define INA226_I2C "devices/platform/soc/ff0a0000.i2c/i2c-1/1-00%x"

typedef unsigned __int128 u128;

/* ---- chips ----------------------------------------------------------------------------- */

struct chip {
	char dir[256]; /* devices/.../hwmon/hwmonN, where its attributes are */
};

static void cput(struct machine *m, const struct chip *c, const char *file, const char *text)
{
	char rel[384];

	snprintf(rel, sizeof(rel), "%s/%s", c->dir, file);
	put(m, rel, text);
}

static void cput_u64(struct machine *m, const struct chip *c, const char *file, uint64_t v)
{
	char rel[384];

	snprintf(rel, sizeof(rel), "%s/%s", c->dir, file);
	put_u64(m, rel, v);
}

/* A chip with its attributes on hwmonN itself (hwmon_device_register_with_info). */
static void add_chip(struct machine *m, struct chip *c, const char *devdir, unsigned n,
		     const char *name)
{
	char text[64];

	link_hwmon(m, devdir, n);
	snprintf(c->dir, sizeof(c->dir), "%s/hwmon/hwmon%u", devdir, n);
	snprintf(text, sizeof(text), "%s\n", name);
	cput(m, c, "name", text);
}

/* Sensor `kind``n`'s file `attr` (energy3_input) as a value; its label. */
static void sensor_u64(struct machine *m, const struct chip *c, const char *kind, unsigned n,
		       const char *attr, uint64_t v)
{
	char file[64];

	snprintf(file, sizeof(file), "%s%u_%s", kind, n, attr);
	cput_u64(m, c, file, v);
}

static void sensor_label(struct machine *m, const struct chip *c, const char *kind, unsigned n,
			 const char *label)
{
	char file[64], text[96];

	snprintf(file, sizeof(file), "%s%u_label", kind, n);
	snprintf(text, sizeof(text), "%s\n", label);
	cput(m, c, file, text);
}

/* A chip no built-in rule maps: a temperature, and an amdgpu with its PPT power reading. */
static void add_neighbours(struct machine *m)
{
	struct chip k10, gpu;

	add_chip(m, &k10, "devices/pci0000:00/0000:00:18.3", 0, "k10temp");
	cput(m, &k10, "temp1_input", "45250\n");
	cput(m, &k10, "temp1_label", "Tctl\n");
	add_chip(m, &gpu, "devices/pci0000:00/0000:00:08.1/0000:c1:00.0", 1, "amdgpu");
	sensor_u64(m, &gpu, "power", 1, "average", 35000000);
	sensor_label(m, &gpu, "power", 1, "PPT");
	cput(m, &gpu, "power1_cap", "200000000\n");
}

/*
 * amd_energy on a 2-socket EPYC with `cores` cores (SMT siblings left out): energy1.. are the
 * cores (Ecore000..), then one per socket (Esocket0, Esocket1), µJ counters from start_uj.
 */
static void fill_amd_energy(struct machine *m, const struct chip *c, unsigned cores,
			    uint64_t start_uj)
{
	char label[32];

	cput(m, c, "name", "amd_energy\n");
	for (unsigned i = 0; i < cores + 2; i++) {
		if (i < cores)
			snprintf(label, sizeof(label), "Ecore%03u", i);
		else
			snprintf(label, sizeof(label), "Esocket%u", i - cores);
		sensor_label(m, c, "energy", i + 1, label);
		sensor_u64(m, c, "energy", i + 1, "input", start_uj + i);
	}
}

static void add_amd_energy(struct machine *m, struct chip *c, unsigned n, unsigned cores,
			   uint64_t start_uj)
{
	add_chip(m, c, AMD_DEV, n, "amd_energy");
	fill_amd_energy(m, c, cores, start_uj);
}

/* A Jetson's ina3221: three rails, each in N (mV) and curr N (mA), labelled in the device tree;
 * in4..6 are the shunt voltages, in7 their sum. */
static void add_ina3221(struct machine *m, struct chip *c, unsigned n, unsigned addr,
			const char *const labels[3])
{
	char dev[128];

	snprintf(dev, sizeof(dev), JETSON_I2C, addr);
	add_chip(m, c, dev, n, "ina3221");
	for (unsigned i = 1; i <= 3; i++) {
		sensor_label(m, c, "in", i, labels[i - 1]);
		sensor_u64(m, c, "in", i, "enable", 1);
		sensor_u64(m, c, "in", i, "input", 5000);
		sensor_u64(m, c, "curr", i, "input", 0);
		sensor_u64(m, c, "curr", i, "crit", 32760);
		sensor_u64(m, c, "in", i + 3, "input", 12);
	}
	sensor_u64(m, c, "in", 7, "input", 36);
}

/* Rail `rail`'s bus voltage (mV) and current (mA, signed: it may flow back). */
static void set_vi(struct machine *m, const struct chip *c, unsigned rail, uint64_t mv,
		   const char *ma)
{
	char file[32], text[32];

	sensor_u64(m, c, "in", rail, "input", mv);
	snprintf(file, sizeof(file), "curr%u_input", rail);
	snprintf(text, sizeof(text), "%s\n", ma);
	cput(m, c, file, text);
}

/* A single-rail ina226 whose device-tree label is the chip's own `label`. */
static void add_ina226(struct machine *m, struct chip *c, unsigned n, unsigned addr,
		       const char *label, uint64_t uw)
{
	char dev[128], text[64];

	snprintf(dev, sizeof(dev), INA226_I2C, addr);
	add_chip(m, c, dev, n, "ina226");
	snprintf(text, sizeof(text), "%s\n", label);
	cput(m, c, "label", text);
	sensor_u64(m, c, "in", 0, "input", 2);
	sensor_u64(m, c, "in", 1, "input", 12000);
	sensor_u64(m, c, "curr", 1, "input", uw / 12000);
	sensor_u64(m, c, "power", 1, "input", uw);
	cput(m, c, "update_interval", "2\n");
}

/* Remove a chip's directory as a driver unload does: whatever holds it open reads nothing. */
static void remove_dir(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;

	assert_non_null(d);
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			assert_int_equal(unlinkat(dirfd(d), de->d_name, 0), 0);
	closedir(d);
	assert_int_equal(rmdir(path), 0);
}

/* ---- rules through the meter's configuration, as the host hands them ------------------ */

/* Every tree here is opened with the power sensors' thread left to the test (vw_hwmon_tick()). */
static const struct vw_hwmon_config manual = { .manual_ticks = true };

static void hg_machine_new(struct machine *m, const struct vw_power_source_ops *src)
{
	machine_new(m, src);
	m->config = &manual;
}
#define machine_new hg_machine_new

struct hwctx {
	struct vw_hwmon_rules *rules;
	struct vw_hwmon_config cfg;
};

static void use_rules(struct machine *m, struct hwctx *x, const char *const *specs, size_t n)
{
	char err[256] = "";

	*x = (struct hwctx){ 0 };
	if (vw_hwmon_rules_parse(specs, n, &x->rules, err, sizeof(err)) < 0)
		fail_msg("rules: %s", err);
	x->cfg.rules = x->rules;
	x->cfg.manual_ticks = true;
	m->config = &x->cfg;
}

static void drop_rules(struct machine *m, struct hwctx *x)
{
	vw_hwmon_rules_free(x->rules);
	*x = (struct hwctx){ 0 };
	m->config = &manual;
}

/* ---- zones ----------------------------------------------------------------------------- */

static void assert_zone(const struct machine *m, size_t i, enum vw_zone zone, unsigned socket,
			const char *path)
{
	assert_true(i < m->n);
	if (m->zones[i].zone != zone || m->zones[i].socket != socket ||
	    strcmp(m->zones[i].path, path) != 0)
		fail_msg("zone %zu: %s socket %u %s, expected %s socket %u %s", i,
			 vw_zone_name(m->zones[i].zone), m->zones[i].socket, m->zones[i].path,
			 vw_zone_name(zone), socket, path);
	/* A counter of unknown width: a decrease is the energy module's gap, never a wrap. */
	assert_int_equal(m->zones[i].max_range_uj, 0);
	assert_int_equal(m->zones[i].max_power_uw, 0);
	assert_double_near(m->zones[i].idle_w, -1, 0);
}

/* One read, every zone read; the energy module fed with it. */
static void read_all(struct machine *m, uint64_t now, struct vw_energy_counter *c)
{
	assert_int_equal(machine_read(m, now), 0);
	for (size_t i = 0; i < m->n; i++) {
		if (m->errs[i] != 0)
			fail_msg("zone %zu (%s): read error %d", i, m->zones[i].path, m->errs[i]);
		if (c)
			vw_energy_counter_update(&c[i], m->raw[i], now, NULL);
	}
}

static void counters_init(const struct machine *m, struct vw_energy_counter *c)
{
	for (size_t i = 0; i < m->n; i++)
		vw_energy_counter_init(&c[i], m->zones[i].max_range_uj, m->zones[i].max_power_uw);
}

/* ---- tests ----------------------------------------------------------------------------- */

static void test_ops_table(void **state)
{
	size_t i = 0;

	(void)state;
	/* Every op is there: test_selfcheck walks the chain. */
	assert_string_equal(SRC.name, "hwmon");
	assert_true(SRC.measured);
	SRC.close(NULL);
	/* In the CPU zones' chain after RAPL and before the model, as Kepler falls back. */
	while (vw_host_power_sources[i] && vw_host_power_sources[i] != &SRC)
		i++;
	assert_non_null(vw_host_power_sources[i]);
	assert_true(i > 0);
	assert_ptr_equal(vw_host_power_sources[i - 1], &vw_src_powercap);
	assert_ptr_equal(vw_host_power_sources[i + 1], &vw_src_estimator);
	for (i = 0; vw_host_platform_sources[i]; i++)
		assert_ptr_not_equal(vw_host_platform_sources[i], &SRC);
}

/* Nothing a rule maps: -ENODEV, nothing said above debug; the ACPI meter is never taken. */
static void test_nothing_to_use(void **state)
{
	static const char *const everything[] = { "*=package" };
	struct vw_power_env env = { .sysfs_fd = -1 };
	struct machine m;
	struct hwctx x;
	struct logged l;
	struct chip acpi;
	void *st = NULL;

	(void)state;
	assert_int_equal(SRC.open(&env, &st), -EBADF);
	machine_new(&m, &SRC);
	log_to(&l);
	assert_int_equal(machine_open(&m), -ENODEV); /* no class/hwmon */
	add_neighbours(&m);
	/* An ACPI power meter (attributes on the ACPI device): the acpi source's. */
	link_hwmon(&m, "devices/LNXSYSTM:00/LNXSYBUS:00/ACPI000D:00", 2);
	snprintf(acpi.dir, sizeof(acpi.dir), "devices/LNXSYSTM:00/LNXSYBUS:00/ACPI000D:00");
	cput(&m, &acpi, "name", "power_meter\n");
	cput(&m, &acpi, "power1_average", "250000000\n");
	assert_int_equal(machine_open(&m), -ENODEV);
	assert_null(m.state);
	assert_int_equal(l.at[VW_LOG_ERROR] + l.at[VW_LOG_WARN] + l.at[VW_LOG_INFO], 0);
	assert_logged(&l, "debug: hwmon: /sys/class/hwmon/hwmon1/power1_average (amdgpu 'PPT'): "
			  "no chip rule maps it; unused");
	assert_null(strstr(l.text, "hwmon2"));

	/* A rule for every chip takes the amdgpu, still not the meter. */
	use_rules(&m, &x, everything, 1);
	assert_int_equal(machine_open(&m), 0);
	log_restore();
	assert_int_equal(m.n, 1);
	assert_zone(&m, 0, VW_ZONE_PACKAGE, 0, "/sys/class/hwmon/hwmon1/power1_average");
	assert_null(strstr(l.text, "hwmon2/"));
	SRC.close(m.state);
	m.state = NULL;
	drop_rules(&m, &x);
	machine_free(&m);
}

/*
 * The 2-socket EPYC: each socket's package from its Esocket counter (the built-in rule), the
 * cores left out; the raw counters come back as they read, and the energy module counts them
 * to the µJ: 1 s at 180.5 W and 95.25 W, then 0.25 s at 3 W and 0 W.
 */
static void test_amd_energy_two_sockets(void **state)
{
	static const uint64_t s0[] = { 987654321000, 987834821000, 987835571000 };
	static const uint64_t s1[] = { 5000000, 100250000, 100250000 };
	static const uint64_t at[] = { HW_T0, HW_T0 + SEC, HW_T0 + SEC + 250 * HW_MS };
	struct vw_energy_counter c[2];
	struct machine m;
	struct logged l;
	struct chip amd;

	(void)state;
	machine_new(&m, &SRC);
	add_neighbours(&m);
	add_amd_energy(&m, &amd, 3, 8, 1000000);
	log_to(&l);
	assert_int_equal(machine_open(&m), 0);
	log_restore();
	assert_int_equal(m.n, 2);
	assert_zone(&m, 0, VW_ZONE_PACKAGE, 0, "/sys/class/hwmon/hwmon3/energy9_input");
	assert_zone(&m, 1, VW_ZONE_PACKAGE, 1, "/sys/class/hwmon/hwmon3/energy10_input");
	assert_int_equal(l.at[VW_LOG_ERROR] + l.at[VW_LOG_WARN], 0);
	assert_logged(&l, "info: hwmon: zone package socket 1: 1 energy counter summed, the first "
			  "/sys/class/hwmon/hwmon3/energy10_input");
	assert_logged(&l, "(amd_energy 'Ecore007'): no chip rule maps it");
	assert_logged(&l, "(amd_energy 'Esocket0'): energy counter, zone package socket 0 by rule "
			  "amd_energy:Esocket*=package@label");
	counters_init(&m, c);
	for (size_t k = 0; k < ARRAY_SIZE(at); k++) {
		sensor_u64(&m, &amd, "energy", 9, "input", s0[k]);
		sensor_u64(&m, &amd, "energy", 10, "input", s1[k]);
		read_all(&m, at[k], c);
		assert_int_equal(m.raw[0], s0[k]);
		assert_int_equal(m.raw[1], s1[k]);
	}
	assert_int_equal(c[0].total_uj, s0[2] - s0[0]);
	assert_int_equal(c[1].total_uj, s1[2] - s1[0]);
	assert_int_equal(c[0].gaps + c[1].gaps, 0);
	assert_double_near(vw_energy_watts(s0[1] - s0[0], SEC), 180.5, 1e-9);
	assert_double_near(vw_energy_watts(s1[1] - s1[0], SEC), 95.25, 1e-9);
	assert_double_near(vw_energy_watts(s0[2] - s0[1], 250 * HW_MS), 3.0, 1e-9);
	machine_free(&m);
}

/* The cores by an operator's rule: summed per socket, the socket given by the rule. */
static void test_amd_energy_cores_by_rule(void **state)
{
	static const char *const rules[] = { "amd_energy:Ecore00[0-3]=core@0",
					     "amd_energy:Ecore*=core@1" };
	struct machine m;
	struct hwctx x;
	struct chip amd;
	uint64_t sum0 = 0, sum1 = 0;

	(void)state;
	machine_new(&m, &SRC);
	add_amd_energy(&m, &amd, 2, 8, 0);
	for (unsigned i = 0; i < 8; i++) {
		uint64_t v = 1000000ULL * (i + 1) + i;

		sensor_u64(&m, &amd, "energy", i + 1, "input", v);
		*(i < 4 ? &sum0 : &sum1) += v;
	}
	use_rules(&m, &x, rules, ARRAY_SIZE(rules));
	assert_int_equal(machine_open_quiet(&m), 0);
	/* package, then core: zones in zone order, then socket. */
	assert_int_equal(m.n, 4);
	assert_zone(&m, 0, VW_ZONE_PACKAGE, 0, "/sys/class/hwmon/hwmon2/energy9_input");
	assert_zone(&m, 1, VW_ZONE_PACKAGE, 1, "/sys/class/hwmon/hwmon2/energy10_input");
	assert_zone(&m, 2, VW_ZONE_CORE, 0, "/sys/class/hwmon/hwmon2/energy1_input");
	assert_zone(&m, 3, VW_ZONE_CORE, 1, "/sys/class/hwmon/hwmon2/energy5_input");
	read_all(&m, HW_T0, NULL);
	assert_int_equal(m.raw[2], sum0);
	assert_int_equal(m.raw[3], sum1);
	/* Core 6 counts 7 µJ more: its socket's sum follows, the other's does not. */
	sensor_u64(&m, &amd, "energy", 7, "input", 1000000ULL * 7 + 6 + 7);
	read_all(&m, HW_T0 + SEC, NULL);
	assert_int_equal(m.raw[2], sum0);
	assert_int_equal(m.raw[3], sum1 + 7);
	drop_rules(&m, &x);
	machine_free(&m);
}

/*
 * A counter that goes back (a reset, or a wrap at a width hwmon does not say) is handed on as
 * read; the energy module takes it as a gap, never a wrap over 2^64: that interval counts
 * nothing and counting goes on from the new value. A driver reloaded (the chip's directory
 * re-created, its counters from zero) is found again at its hwmonN.
 */
static void test_energy_counter_goes_back(void **state)
{
	struct vw_energy_counter c[2];
	struct machine m;
	struct chip amd;
	uint64_t now = HW_T0;
	char path[512];

	(void)state;
	machine_new(&m, &SRC);
	add_amd_energy(&m, &amd, 0, 2, 4294000000ULL);
	assert_int_equal(machine_open_quiet(&m), 0);
	counters_init(&m, c);
	read_all(&m, now, c);
	sensor_u64(&m, &amd, "energy", 3, "input", 4294967295ULL);
	read_all(&m, now += SEC, c);
	assert_int_equal(c[0].total_uj, 4294967295ULL - 4294000002ULL);
	/* Wrapped at 32 bits: no energy for that second, and no 2^64 either. */
	sensor_u64(&m, &amd, "energy", 3, "input", 500000);
	read_all(&m, now += SEC, c);
	assert_int_equal(m.raw[0], 500000);
	assert_int_equal(c[0].gaps, 1);
	assert_int_equal(c[0].total_uj, 4294967295ULL - 4294000002ULL);
	sensor_u64(&m, &amd, "energy", 3, "input", 80500000);
	read_all(&m, now += SEC, c);
	assert_int_equal(c[0].total_uj, 4294967295ULL - 4294000002ULL + 80000000);

	/* The driver reloaded: hwmon0 is a new directory, counters from zero. */
	snprintf(path, sizeof(path), "%s/%s", m.root, amd.dir);
	remove_dir(path);
	fill_amd_energy(&m, &amd, 2, 0);
	sensor_u64(&m, &amd, "energy", 3, "input", 1000);
	read_all(&m, now += SEC, c);
	assert_int_equal(m.raw[0], 1000);
	assert_int_equal(c[0].gaps, 2);
	sensor_u64(&m, &amd, "energy", 3, "input", 1000 + 42000000);
	read_all(&m, now += SEC, c);
	assert_int_equal(c[0].total_uj, 4294967295ULL - 4294000002ULL + 80000000 + 42000000);
	machine_free(&m);
}

/* The exact integral, floored, of power_uw over dt_ns: what a power zone's counter must read. */
static uint64_t integral_uj(uint64_t power_uw, uint64_t dt_ns)
{
	return (uint64_t)((u128)power_uw * dt_ns / 1000000000u);
}

static const char *const orin_rails[3] = { "VDD_IN", "VDD_CPU_GPU_CV", "VDD_SOC" };
static const char *const nano_rails[3] = { "POM_5V_IN", "POM_5V_GPU", "POM_5V_CPU" };

/*
 * Jetson boards: ina3221 rails read as mV x mA = µW. On an Orin Nano only the module input has a
 * built-in meaning: a platform zone alone is no CPU zone, so hwmon leaves the CPU zones to the
 * model (said once at info). On a Nano the CPU rail is the package.
 */
static void test_jetson_builtin(void **state)
{
	struct machine m;
	struct logged l;
	struct chip ina;

	(void)state;
	machine_new(&m, &SRC);
	add_ina3221(&m, &ina, 1, 0x40, orin_rails);
	log_to(&l);
	assert_int_equal(machine_open(&m), -ENODEV);
	log_restore();
	assert_logged(&l, "info: hwmon: only platform sensors are mapped (the first "
			  "/sys/class/hwmon/hwmon1/in1_input)");
	assert_logged(&l, "(ina3221 'VDD_CPU_GPU_CV'): no chip rule maps it");
	machine_free(&m);

	machine_new(&m, &SRC);
	add_ina3221(&m, &ina, 1, 0x40, nano_rails);
	set_vi(&m, &ina, 1, 5096, "1232");
	set_vi(&m, &ina, 3, 5088, "408");
	assert_int_equal(machine_open_quiet(&m), 0);
	assert_int_equal(m.n, 2);
	assert_zone(&m, 0, VW_ZONE_PACKAGE, 0, "/sys/class/hwmon/hwmon1/in3_input");
	assert_zone(&m, 1, VW_ZONE_PLATFORM, 0, "/sys/class/hwmon/hwmon1/in1_input");
	read_all(&m, HW_T0, NULL);
	read_all(&m, HW_T0 + 500 * HW_MS, NULL);
	assert_int_equal(m.raw[0], integral_uj(5088ULL * 408, 500 * HW_MS));
	assert_int_equal(m.raw[1], integral_uj(5096ULL * 1232, 500 * HW_MS));
	machine_free(&m);
}

/*
 * An Orin Nano with the operator's rules for the other rails: three zones, each the exact
 * integral of V x I over uneven intervals, its power within 1 % of V x I by the energy module. A
 * current that flows back is no power; a rail the driver turned off is not read.
 */
static void test_jetson_rails_by_rule(void **state)
{
	static const char *const rules[] = { "ina3221:VDD_CPU_GPU_CV=package",
					     "ina3221:VDD_SOC=uncore" };
	static const uint64_t mv[3] = { 5080, 5072, 5064 }, ma[3] = { 1530, 392, 712 };
	static const uint64_t dt_ms[] = { 250, 250, 1000, 3, 250, 740 };
	static const size_t zone_of[3] = { 2, 0, 1 }; /* rail -> zone: platform last */
	struct vw_energy_counter c[3];
	uint64_t expect[3] = { 0 }, now = HW_T0, elapsed = 0;
	struct machine m;
	struct hwctx x;
	struct chip ina;
	char text[32];

	(void)state;
	machine_new(&m, &SRC);
	add_ina3221(&m, &ina, 1, 0x40, orin_rails);
	for (unsigned r = 0; r < 3; r++) {
		snprintf(text, sizeof(text), "%llu", (unsigned long long)ma[r]);
		set_vi(&m, &ina, r + 1, mv[r], text);
	}
	use_rules(&m, &x, rules, ARRAY_SIZE(rules));
	assert_int_equal(machine_open_quiet(&m), 0);
	assert_int_equal(m.n, 3);
	assert_zone(&m, 0, VW_ZONE_PACKAGE, 0, "/sys/class/hwmon/hwmon1/in2_input");
	assert_zone(&m, 1, VW_ZONE_UNCORE, 0, "/sys/class/hwmon/hwmon1/in3_input");
	assert_zone(&m, 2, VW_ZONE_PLATFORM, 0, "/sys/class/hwmon/hwmon1/in1_input");
	counters_init(&m, c);
	read_all(&m, now, c);
	for (size_t k = 0; k < ARRAY_SIZE(dt_ms); k++) {
		now += dt_ms[k] * HW_MS;
		elapsed += dt_ms[k] * HW_MS;
		read_all(&m, now, c);
		for (unsigned r = 0; r < 3; r++) {
			expect[r] = integral_uj(mv[r] * ma[r], elapsed);
			assert_int_equal(m.raw[zone_of[r]], expect[r]);
		}
	}
	for (unsigned r = 0; r < 3; r++) {
		double w = (double)(mv[r] * ma[r]) / 1e6;

		assert_double_near(vw_energy_watts(c[zone_of[r]].total_uj, elapsed), w, w / 100);
	}
	/* The SoC's current flows back a little at idle: no power, not a failure. */
	set_vi(&m, &ina, 3, 5064, "-8");
	read_all(&m, now += SEC, c);
	assert_int_equal(m.raw[1], expect[2]);

	/* The SoC rail off in the device tree (in3_enable 0): two zones. */
	SRC.close(m.state);
	sensor_u64(&m, &ina, "in", 3, "enable", 0);
	assert_int_equal(machine_open_quiet(&m), 0);
	assert_int_equal(m.n, 2);
	assert_zone(&m, 1, VW_ZONE_PLATFORM, 0, "/sys/class/hwmon/hwmon1/in1_input");
	drop_rules(&m, &x);
	machine_free(&m);
}

/*
 * A board of three single-rail ina226 (a ZynqMP's): power1_input in µW, the rail named by the
 * chip's own label. The rules map each: three zones in socket 0, exact integrals, and the
 * power the energy module sees within 1 %.
 */
static void test_ina226_rails(void **state)
{
	static const char *const rules[] = { "ina226:vdd_cpu=package", "ina226:vdd_ddr=dram",
					     "ina226:vdd_in=platform" };
	static const uint64_t uw[3] = { 12000000, 4321987, 987654 }; /* in, cpu, ddr */
	static const size_t zone_of[3] = { 2, 0, 1 };
	struct vw_energy_counter c[3];
	struct machine m;
	struct hwctx x;
	struct chip ina[3];
	uint64_t now = HW_T0;

	(void)state;
	machine_new(&m, &SRC);
	add_ina226(&m, &ina[0], 2, 0x40, "vdd_in", uw[0]);
	add_ina226(&m, &ina[1], 3, 0x41, "vdd_cpu", uw[1]);
	add_ina226(&m, &ina[2], 4, 0x44, "vdd_ddr", uw[2]);
	use_rules(&m, &x, rules, ARRAY_SIZE(rules));
	assert_int_equal(machine_open_quiet(&m), 0);
	assert_int_equal(m.n, 3);
	assert_zone(&m, 0, VW_ZONE_PACKAGE, 0, "/sys/class/hwmon/hwmon3/power1_input");
	assert_zone(&m, 1, VW_ZONE_DRAM, 0, "/sys/class/hwmon/hwmon4/power1_input");
	assert_zone(&m, 2, VW_ZONE_PLATFORM, 0, "/sys/class/hwmon/hwmon2/power1_input");
	counters_init(&m, c);
	for (uint64_t k = 0; k <= 9; k++) {
		read_all(&m, now, c);
		for (unsigned r = 0; r < 3; r++)
			assert_int_equal(m.raw[zone_of[r]], integral_uj(uw[r], k * 250 * HW_MS));
		now += 250 * HW_MS;
	}
	for (unsigned r = 0; r < 3; r++) {
		double w = (double)uw[r] / 1e6;

		assert_double_near(vw_energy_watts(c[zone_of[r]].total_uj, 9 * 250 * HW_MS), w,
				   w / 100);
	}
	drop_rules(&m, &x);
	machine_free(&m);
}

/*
 * A late sample at a step of power (as src_acpi.c's test_late_sample): the sensor's own
 * readings every 250 ms (the thread's ticks), 100 W up to 10 s then 0 W, the sampling thread
 * 2 s late across the step: exactly 100 W x 10 s (the sample's reading alone over its wait
 * gave 950 J). Then a failure only the thread sees: a gap, counted, not made up.
 */
static void test_late_sample(void **state)
{
	static const char *const rules[] = { "ina226:vdd_cpu=package" };
	const uint64_t step = 250 * HW_MS, w100 = 100000000;
	struct vw_power_source_stats st = { 0 };
	struct machine m;
	struct hwctx x;
	struct chip ina;

	(void)state;
	machine_new(&m, &SRC);
	add_ina226(&m, &ina, 3, 0x41, "vdd_cpu", w100);
	use_rules(&m, &x, rules, ARRAY_SIZE(rules));
	assert_int_equal(machine_open_quiet(&m), 0);
	assert_int_equal(m.n, 1);
	for (uint64_t s = 0; s <= 13 * SEC; s += step) {
		bool late = s > 19 * SEC / 2 && s < 23 * SEC / 2;

		cput_u64(&m, &ina, "power1_input", s <= 10 * SEC ? w100 : 0);
		vw_hwmon_tick(m.state, HW_T0 + s);
		if (!late)
			read_all(&m, HW_T0 + s, NULL);
	}
	assert_int_equal(m.raw[0], 1000000000); /* 100 W x 10 s, no more, no less */
	SRC.stats(m.state, &st);
	assert_int_equal(st.gaps, 0);

	vw_log_set_level(VW_LOG_ERROR);
	cput(&m, &ina, "power1_input", "junk\n");
	vw_hwmon_tick(m.state, HW_T0 + 14 * SEC);
	cput_u64(&m, &ina, "power1_input", w100);
	vw_hwmon_tick(m.state, HW_T0 + 15 * SEC);
	read_all(&m, HW_T0 + 16 * SEC, NULL);
	assert_int_equal(m.raw[0], 1000000000 + 100000000);
	st = (struct vw_power_source_stats){ 0 };
	SRC.stats(m.state, &st);
	assert_int_equal(st.gaps, 1);
	vw_log_set_level(VW_LOG_INFO);
	drop_rules(&m, &x);
	machine_free(&m);
}

/*
 * The power sensors' thread for real, on the daemon's clock: it reads the sensor on its own (a
 * read without a time shows the counter growing at 100 W while the sampling thread does
 * nothing), and the sampling thread's 0 W reading after the fall takes nothing of it.
 */
static void test_thread(void **state)
{
	static const char *const rules[] = { "ina226:vdd_cpu=package" };
	const uint64_t w100 = 100000000;
	struct machine m;
	struct hwctx x;
	struct chip ina;
	uint64_t t0, seen = 0;

	(void)state;
	machine_new(&m, &SRC);
	add_ina226(&m, &ina, 3, 0x41, "vdd_cpu", w100);
	use_rules(&m, &x, rules, ARRAY_SIZE(rules));
	x.cfg.manual_ticks = false; /* the daemon's: the source's own thread reads the sensor */
	assert_int_equal(machine_open_quiet(&m), 0);
	t0 = vw_now_ns();
	read_all(&m, t0, NULL);
	for (int i = 0; i < 200 && seen == 0; i++) { /* 10 s at most on a loaded machine */
		usleep(50000);
		assert_int_equal(SRC.read(m.state, NULL, m.raw, m.errs), -EINVAL);
		seen = m.raw[0];
	}
	assert_true(seen > 0);
	assert_true(seen <= (vw_now_ns() - t0) / 10); /* 100 W: 0.1 µJ a ns */
	cput_u64(&m, &ina, "power1_input", 0);
	usleep(300000);
	read_all(&m, vw_now_ns(), NULL);
	assert_true(m.raw[0] >= seen);
	assert_true(m.raw[0] <= (vw_now_ns() - t0) / 10);
	drop_rules(&m, &x);
	machine_free(&m);
}

/*
 * A chip with both an energy counter and a power reading for the same rail (an SQ52206 on the
 * ina238 driver): the counter is the package, the power reading is left out (said at info);
 * a power sensor of another zone is still used.
 */
static void test_energy_beats_power(void **state)
{
	static const char *const rules[] = { "sq52206=package", "ina226=platform" };
	struct machine m;
	struct hwctx x;
	struct logged l;
	struct chip sq, ina;

	(void)state;
	machine_new(&m, &SRC);
	add_chip(&m, &sq, "devices/platform/soc/ff030000.i2c/i2c-0/0-0045", 5, "sq52206");
	cput(&m, &sq, "label", "vdd_cpu\n");
	sensor_u64(&m, &sq, "power", 1, "input", 900000000); /* not this one's 9 W */
	sensor_u64(&m, &sq, "energy", 1, "input", 7000000);
	add_ina226(&m, &ina, 6, 0x40, "vdd_in", 20000000);
	use_rules(&m, &x, rules, ARRAY_SIZE(rules));
	log_to(&l);
	assert_int_equal(machine_open(&m), 0);
	log_restore();
	assert_int_equal(m.n, 2);
	assert_zone(&m, 0, VW_ZONE_PACKAGE, 0, "/sys/class/hwmon/hwmon5/energy1_input");
	assert_zone(&m, 1, VW_ZONE_PLATFORM, 0, "/sys/class/hwmon/hwmon6/power1_input");
	assert_logged(&l, "info: hwmon: /sys/class/hwmon/hwmon5/power1_input ('vdd_cpu'): zone "
			  "package socket 0 has an energy counter; this power reading is left out");
	read_all(&m, HW_T0, NULL);
	sensor_u64(&m, &sq, "energy", 1, "input", 7000000 + 9000000);
	read_all(&m, HW_T0 + SEC, NULL);
	assert_int_equal(m.raw[0], 16000000);
	assert_int_equal(m.raw[1], 20000000);
	drop_rules(&m, &x);
	machine_free(&m);
}

/* zenpower on two sockets, one chip each: Core and SoC rails summed per chip (@chip). */
static void test_summed_per_socket(void **state)
{
	static const char *const rules[] = { "zenpower:SVI2_P_*=package@chip" };
	static const uint64_t core[2] = { 61234000, 70000000 }, soc[2] = { 18250000, 21000000 };
	static const char *const pci[2] = { "devices/pci0000:00/0000:00:18.3",
					    "devices/pci0000:40/0000:40:18.3" };
	struct machine m;
	struct hwctx x;
	struct chip zen[2];

	(void)state;
	machine_new(&m, &SRC);
	for (unsigned k = 0; k < 2; k++) {
		add_chip(&m, &zen[k], pci[k], 4 + 3 * k, "zenpower");
		sensor_u64(&m, &zen[k], "power", 1, "input", core[k]);
		sensor_label(&m, &zen[k], "power", 1, "SVI2_P_Core");
		sensor_u64(&m, &zen[k], "power", 2, "input", soc[k]);
		sensor_label(&m, &zen[k], "power", 2, "SVI2_P_SoC");
		sensor_label(&m, &zen[k], "in", 1, "SVI2_Core");
		sensor_u64(&m, &zen[k], "in", 1, "input", 1100);
	}
	use_rules(&m, &x, rules, 1);
	assert_int_equal(machine_open_quiet(&m), 0);
	assert_int_equal(m.n, 2);
	assert_zone(&m, 0, VW_ZONE_PACKAGE, 0, "/sys/class/hwmon/hwmon4/power1_input");
	assert_zone(&m, 1, VW_ZONE_PACKAGE, 1, "/sys/class/hwmon/hwmon7/power1_input");
	read_all(&m, HW_T0, NULL);
	read_all(&m, HW_T0 + 250 * HW_MS, NULL);
	for (unsigned k = 0; k < 2; k++)
		assert_int_equal(m.raw[k], integral_uj(core[k] + soc[k], 250 * HW_MS));
	drop_rules(&m, &x);
	machine_free(&m);
}

/*
 * A power reading that fails (junk, gone) counts nothing, and neither does the time until the
 * next good read, which only sets the time; said once while it lasts and once when it is over.
 * In a zone of two sensors the other one goes on counting and the zone still reads.
 */
static void test_power_read_fails(void **state)
{
	static const char *const rules[] = { "ina226=platform", "zenpower:SVI2_P_*=package" };
	struct machine m;
	struct hwctx x;
	struct logged l;
	struct chip ina, zen;
	uint64_t now = HW_T0;

	(void)state;
	machine_new(&m, &SRC);
	add_chip(&m, &zen, "devices/pci0000:00/0000:00:18.3", 0, "zenpower");
	sensor_u64(&m, &zen, "power", 1, "input", 50000000);
	sensor_label(&m, &zen, "power", 1, "SVI2_P_Core");
	sensor_u64(&m, &zen, "power", 2, "input", 10000000);
	sensor_label(&m, &zen, "power", 2, "SVI2_P_SoC");
	add_ina226(&m, &ina, 1, 0x40, "vdd_in", 100000000);
	use_rules(&m, &x, rules, ARRAY_SIZE(rules));
	assert_int_equal(machine_open_quiet(&m), 0);
	assert_int_equal(m.n, 2);
	assert_zone(&m, 0, VW_ZONE_PACKAGE, 0, "/sys/class/hwmon/hwmon0/power1_input");
	assert_zone(&m, 1, VW_ZONE_PLATFORM, 0, "/sys/class/hwmon/hwmon1/power1_input");
	read_all(&m, now, NULL);
	read_all(&m, now += SEC, NULL);
	assert_int_equal(m.raw[0], 60000000);
	assert_int_equal(m.raw[1], 100000000);

	log_to(&l);
	cput(&m, &ina, "power1_input", "12abc\n");
	cput(&m, &zen, "power2_input", NULL);
	for (int k = 0; k < 3; k++) {
		assert_int_equal(machine_read(&m, now += 10 * SEC), 0);
		/* The platform zone's only sensor fails: so does the zone, standing still. */
		assert_int_equal(m.errs[1], -EINVAL);
		assert_int_equal(m.raw[1], 100000000);
		/* The package's Core rail counts on without its SoC rail. */
		assert_int_equal(m.errs[0], 0);
		assert_int_equal(m.raw[0], 60000000 + (uint64_t)(k + 1) * 500000000);
	}
	assert_int_equal(l.at[VW_LOG_WARN], 2);
	assert_logged(&l, "warn: hwmon: /sys/class/hwmon/hwmon1/power1_input ('vdd_in'): cannot "
			  "read: Invalid argument; no energy counted until it reads again");
	assert_logged(&l, "warn: hwmon: /sys/class/hwmon/hwmon0/power2_input ('SVI2_P_SoC'): "
			  "cannot read: No such file or directory");
	/* Back: the first good read only sets the time; counted from there on. */
	sensor_u64(&m, &ina, "power", 1, "input", 300000000);
	sensor_u64(&m, &zen, "power", 2, "input", 10000000);
	read_all(&m, now += 10 * SEC, NULL);
	assert_int_equal(m.raw[1], 100000000);
	assert_int_equal(m.raw[0], 60000000 + 4 * 500000000ULL);
	assert_int_equal(l.at[VW_LOG_INFO], 2);
	assert_logged(&l, "info: hwmon: /sys/class/hwmon/hwmon1/power1_input ('vdd_in'): readable "
			  "again");
	log_restore();
	read_all(&m, now += 500 * HW_MS, NULL);
	assert_int_equal(m.raw[1], 100000000 + 150000000);
	assert_int_equal(m.raw[0], 60000000 + 4 * 500000000ULL + 30000000);
	/* No time (no activity handed in): power cannot be integrated, nothing moves. */
	assert_int_equal(SRC.read(m.state, NULL, m.raw, m.errs), -EINVAL);
	assert_int_equal(m.errs[0], -EINVAL);
	assert_int_equal(m.raw[1], 100000000 + 150000000);
	drop_rules(&m, &x);
	machine_free(&m);
}

/*
 * An energy counter that fails stands still and the zone says so; its next good reading holds
 * the energy of the whole time (a counter loses nothing), which the energy module counts. It
 * needs no time to be read.
 */
static void test_energy_read_fails(void **state)
{
	struct vw_energy_counter c[2];
	struct machine m;
	struct chip amd;
	uint64_t now = HW_T0;

	(void)state;
	machine_new(&m, &SRC);
	add_amd_energy(&m, &amd, 0, 4, 1000);
	vw_log_set_level(VW_LOG_ERROR);
	assert_int_equal(machine_open(&m), 0);
	counters_init(&m, c);
	read_all(&m, now, c); /* 1004 and 1005 */
	cput(&m, &amd, "energy5_input", "junk\n");
	sensor_u64(&m, &amd, "energy", 6, "input", 2001005);
	assert_int_equal(machine_read(&m, now += SEC), 0);
	assert_int_equal(m.errs[0], -EINVAL);
	assert_int_equal(m.raw[0], 1004);
	assert_int_equal(m.errs[1], 0);
	assert_int_equal(m.raw[1], 2001005);
	vw_energy_counter_update(&c[1], m.raw[1], now, NULL);
	sensor_u64(&m, &amd, "energy", 5, "input", 3001004);
	read_all(&m, now += SEC, c);
	assert_int_equal(c[0].total_uj, 3000000);
	assert_int_equal(c[0].gaps, 0);
	assert_int_equal(c[1].total_uj, 2000000);
	/* Without time: counters read all the same. */
	sensor_u64(&m, &amd, "energy", 5, "input", 3001005);
	assert_int_equal(SRC.read(m.state, NULL, m.raw, m.errs), 0);
	assert_int_equal(m.errs[0], 0);
	assert_int_equal(m.raw[0], 3001005);
	vw_log_set_level(VW_LOG_INFO);
	machine_free(&m);
}

/* Kepler's experimental.hwmon keys: zones picks sensors by label; enabled=false is no hwmon. */
static void test_kepler_keys(void **state)
{
	static const char *const zones[] = { "esocket1" };
	struct machine m;
	struct hwctx x;
	struct logged l;
	struct chip amd;

	(void)state;
	machine_new(&m, &SRC);
	add_amd_energy(&m, &amd, 0, 4, 1000);
	use_rules(&m, &x, NULL, 0);
	x.cfg.zones = zones;
	x.cfg.n_zones = 1;
	assert_int_equal(machine_open_quiet(&m), 0);
	assert_int_equal(m.n, 1);
	assert_zone(&m, 0, VW_ZONE_PACKAGE, 1, "/sys/class/hwmon/hwmon0/energy6_input");
	SRC.close(m.state);
	x.cfg.disabled = true;
	log_to(&l);
	assert_int_equal(machine_open(&m), -ENODEV);
	log_restore();
	assert_logged(&l, "debug: hwmon: off (experimental.hwmon.enabled is false)");
	drop_rules(&m, &x);
	machine_free(&m);
}

/* Sensors refused for permission: the others are used (a warning); none left, -EACCES. */
static void test_eacces(void **state)
{
	static const char *const rules[] = { "ina226:vdd_cpu=package" };
	struct machine m;
	struct hwctx x;
	struct logged l;
	struct chip amd, ina;

	(void)state;
	machine_new(&m, &SRC);
	add_amd_energy(&m, &amd, 0, 4, 1000);
	hw_io.deny_file = "energy5_input";
	hw_io.deny_all = true;
	log_to(&l);
	assert_int_equal(machine_open(&m), 0);
	log_restore();
	assert_int_equal(m.n, 1);
	assert_zone(&m, 0, VW_ZONE_PACKAGE, 1, "/sys/class/hwmon/hwmon0/energy6_input");
	assert_int_equal(l.at[VW_LOG_ERROR], 0);
	assert_logged(&l, "warn: hwmon: 1 mapped hwmon sensor(s) refused reading; skipped");
	machine_free(&m);

	machine_new(&m, &SRC);
	add_ina226(&m, &ina, 0, 0x40, "vdd_cpu", 5000000);
	use_rules(&m, &x, rules, 1);
	hw_io.deny_file = "power1_input";
	hw_io.deny_all = true;
	log_to(&l);
	assert_int_equal(machine_open(&m), -EACCES);
	log_restore();
	assert_int_equal(l.at[VW_LOG_ERROR], 1);
	assert_logged(&l, "error: hwmon: permission denied reading 1 hwmon sensor(s) a chip rule "
			  "maps");
	drop_rules(&m, &x);
	machine_free(&m);
}

/* Open, reads, failures and close leave every file as it was; nothing is opened for writing. */
static void test_nothing_written(void **state)
{
	static const char *const rules[] = { "ina3221:VDD_SOC=uncore", "ina226=dram" };
	struct machine m;
	struct hwctx x;
	struct chip amd, jet, ina;

	(void)state;
	machine_new(&m, &SRC);
	add_neighbours(&m);
	add_amd_energy(&m, &amd, 2, 4, 1000);
	add_ina3221(&m, &jet, 3, 0x40, orin_rails);
	add_ina226(&m, &ina, 4, 0x41, "vdd_ddr", 1000000);
	use_rules(&m, &x, rules, ARRAY_SIZE(rules));
	assert_int_equal(assert_nothing_written(&m, 5, "/power1_cap "), 5);
	drop_rules(&m, &x);
	machine_free(&m);
}

/* The host's options into the meter's configuration: a bad rule is refused naming the flag. */
static void test_meters_setup(void **state)
{
	struct vw_host_config cfg;
	struct vw_host_meters hm;
	const struct vw_hwmon_config *hc;
	struct vw_hwmon_target t;
	struct logged l;

	(void)state;
	METER_FIXTURE_LOAD(&cfg, "--log.level=error");
	assert_int_equal(vw_host_meters_setup(&hm, &cfg, "node"), 0);
	hc = meter_fixture_config(&hm, &vw_src_hwmon);
	assert_non_null(hc);
	assert_false(hc->disabled);
	assert_int_equal(hc->n_zones, 0);
	assert_int_equal(vw_hwmon_rules_match(hc->rules, "amd_energy", "Ecore000", &t), -ENOENT);
	vw_host_meters_fini(&hm);

	meter_fixture_free(&cfg);
	METER_FIXTURE_LOAD(&cfg, "--power.hwmon.chip-rules=amd_energy:Ecore*=core,ina226=none",
			   "--experimental.hwmon.zones=vdd_in", "--experimental.hwmon.enabled=false");
	assert_int_equal(vw_host_meters_setup(&hm, &cfg, "node"), 0);
	hc = meter_fixture_config(&hm, &vw_src_hwmon);
	assert_true(hc->disabled);
	assert_int_equal(hc->n_zones, 1);
	assert_string_equal(hc->zones[0], "vdd_in");
	assert_int_equal(vw_hwmon_rules_match(hc->rules, "amd_energy", "Ecore000", &t), 0);
	assert_int_equal(t.zone, VW_ZONE_CORE);
	assert_int_equal(vw_hwmon_rules_match(hc->rules, "ina226", "power1", &t), 0);
	assert_true(t.ignore);
	vw_host_meters_fini(&hm);

	meter_fixture_free(&cfg);
	METER_FIXTURE_LOAD(&cfg, "--power.hwmon.chip-rules=amd_energy:Ecore*=core,ina226=pkg");
	log_to(&l);
	assert_int_equal(vw_host_meters_setup(&hm, &cfg, "node"), -EINVAL);
	log_restore();
	assert_int_equal(l.at[VW_LOG_ERROR], 1);
	assert_logged(&l, "error: config: --power.hwmon.chip-rules (power.hwmon.chipRules): "
			  "'ina226=pkg': unknown zone");
	vw_host_meters_fini(&hm);
	meter_fixture_free(&cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ops_table),
		cmocka_unit_test(test_nothing_to_use),
		cmocka_unit_test(test_amd_energy_two_sockets),
		cmocka_unit_test(test_amd_energy_cores_by_rule),
		cmocka_unit_test(test_energy_counter_goes_back),
		cmocka_unit_test(test_jetson_builtin),
		cmocka_unit_test(test_jetson_rails_by_rule),
		cmocka_unit_test(test_ina226_rails),
		cmocka_unit_test(test_energy_beats_power),
		cmocka_unit_test(test_summed_per_socket),
		cmocka_unit_test(test_power_read_fails),
		cmocka_unit_test(test_energy_read_fails),
		cmocka_unit_test(test_kepler_keys),
		cmocka_unit_test(test_eacces),
		cmocka_unit_test(test_nothing_written),
		cmocka_unit_test(test_meters_setup),
		cmocka_unit_test(test_late_sample),
		cmocka_unit_test(test_thread),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

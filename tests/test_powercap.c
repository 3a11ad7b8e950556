/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The powercap source on fixture sysfs trees laid out like the real one: zone directories under
 * devices/virtual/powercap/, reached through class/powercap/ symlinks. openat and read are
 * wrapped (-Wl,--wrap, see tests/meson.build) so that EACCES and EIO can be injected even when
 * the tests run as root, where chmod 000 stops nobody.
 */
#include "vw_test.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "energy.h"
#include "fileio.h"
#include "fixture.h"
#include "log.h"
#include "openat_fixture.h"
#include "power.h"
#include "power_fixture.h"

#define MAX_RANGE 262143328850ULL
#define MAX_RANGE_S "262143328850"
#define SEC VW_NSEC_PER_SEC

/* ---- fault injection ---------------------------------------------------------------------- */

struct fault {
	bool deny_all;     /* every open of an energy_uj fails with EACCES */
	dev_t deny_dev;    /* ... or only the one in this zone directory */
	ino_t deny_ino;
	dev_t eio_dev;     /* reads of this file fail with EIO */
	ino_t eio_ino;
};

static struct fault fault;

ssize_t __real_read(int fd, void *buf, size_t n);
ssize_t __wrap_read(int fd, void *buf, size_t n);

static bool is_file(int fd, dev_t dev, ino_t ino)
{
	struct stat st;

	return ino && fstat(fd, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
}

/* An energy_uj as fault says (tests/openat_fixture.c asks). */
bool vw_fixture_openat_refused(int dirfd, const char *path, int flags)
{
	(void)flags;
	if (strcmp(path, "energy_uj") != 0)
		return false;
	return fault.deny_all || is_file(dirfd, fault.deny_dev, fault.deny_ino);
}

ssize_t __wrap_read(int fd, void *buf, size_t n)
{
	if (is_file(fd, fault.eio_dev, fault.eio_ino)) {
		errno = EIO;
		return -1;
	}
	return __real_read(fd, buf, n);
}

/* ---- fixture trees ------------------------------------------------------------------------ */

struct tree {
	char *root;
	int sysfs_fd;
	void *state;
	const struct vw_zone_info *zones;
	size_t n;
};

/* devices/virtual/powercap/intel-rapl/intel-rapl:0[/intel-rapl:0:1] for an entry name. */
static void device_dir(const char *entry, char *buf, size_t size)
{
	const char *colon = strchr(entry, ':');
	const char *sub = strchr(colon + 1, ':');
	int r;

	if (sub)
		r = snprintf(buf, size, "devices/virtual/powercap/%.*s/%.*s/%s",
			     (int)(colon - entry), entry, (int)(sub - entry), entry, entry);
	else
		r = snprintf(buf, size, "devices/virtual/powercap/%.*s/%s", (int)(colon - entry),
			     entry, entry);
	assert_true(r > 0 && (size_t)r < size);
}

static void zone_file(struct tree *t, const char *entry, const char *file, const char *text)
{
	char dev[256], rel[320];

	if (!text)
		return;
	device_dir(entry, dev, sizeof(dev));
	snprintf(rel, sizeof(rel), "%s/%s", dev, file);
	assert_int_equal(vw_fixture_write(t->root, rel, text, strcmp(file, "energy_uj") ? 0444 : 0400),
			 0);
}

/* A zone directory with its files and the class/powercap symlink to it. NULL = no such file. */
static void add_zone(struct tree *t, const char *entry, const char *name, const char *energy,
		     const char *max_range, const char *max_power)
{
	char dev[256], target[300], link[128];

	zone_file(t, entry, "name", name);
	zone_file(t, entry, "energy_uj", energy);
	zone_file(t, entry, "max_energy_range_uj", max_range);
	zone_file(t, entry, "constraint_0_max_power_uw", max_power);
	zone_file(t, entry, "enabled", "1\n");
	device_dir(entry, dev, sizeof(dev));
	snprintf(target, sizeof(target), "../../%s", dev);
	snprintf(link, sizeof(link), "class/powercap/%s", entry);
	assert_int_equal(vw_fixture_mkdir(t->root, "class/powercap"), 0);
	assert_int_equal(vw_fixture_symlink(t->root, target, link), 0);
}

static void set_energy(struct tree *t, const char *entry, uint64_t uj)
{
	char text[32];

	snprintf(text, sizeof(text), "%llu\n", (unsigned long long)uj);
	zone_file(t, entry, "energy_uj", text);
}

static void entry_path(struct tree *t, const char *entry, const char *file, char *buf,
		       size_t size)
{
	snprintf(buf, size, "%s/class/powercap/%s/%s", t->root, entry, file);
}

static void tree_new(struct tree *t)
{
	*t = (struct tree){ .root = vw_fixture_mkdtemp("powercap"), .sysfs_fd = -1 };
	assert_non_null(t->root);
	t->sysfs_fd = vw_root_open(t->root);
	assert_true(t->sysfs_fd >= 0);
	fault = (struct fault){ 0 };
}

static void tree_free(struct tree *t)
{
	if (t->state)
		vw_src_powercap.close(t->state);
	if (t->sysfs_fd >= 0)
		close(t->sysfs_fd);
	vw_fixture_rm(t->root);
	fault = (struct fault){ 0 };
	*t = (struct tree){ .sysfs_fd = -1 };
}

static int tree_open(struct tree *t)
{
	struct vw_power_env env = { .sysfs_fd = t->sysfs_fd };
	int r = vw_src_powercap.open(&env, &t->state);

	if (r == 0)
		t->n = vw_src_powercap.zones(t->state, &t->zones);
	return r;
}

static void expect_zone(const struct tree *t, size_t i, enum vw_zone zone, unsigned socket,
			const char *entry)
{
	char path[128];

	assert_true(i < t->n);
	snprintf(path, sizeof(path), "/sys/class/powercap/%s", entry);
	if (t->zones[i].zone != zone || t->zones[i].socket != socket ||
	    strcmp(t->zones[i].path, path) != 0)
		fail_msg("zone %zu: %s socket %u %s, expected %s socket %u %s", i,
			 vw_zone_name(t->zones[i].zone), t->zones[i].socket, t->zones[i].path,
			 vw_zone_name(zone), socket, path);
}

struct want {
	enum vw_zone zone;
	unsigned socket;
	const char *entry;
};

static void expect_zones_(const struct tree *t, const struct want *w, size_t n)
{
	assert_int_equal(t->n, n);
	for (size_t i = 0; i < n; i++)
		expect_zone(t, i, w[i].zone, w[i].socket, w[i].entry);
}

#define expect_zones(t, ...)                                                                       \
	do {                                                                                       \
		const struct want _w[] = { __VA_ARGS__ };                                          \
		expect_zones_((t), _w, ARRAY_SIZE(_w));                                            \
	} while (0)

/* Zone index by entry name. */
static size_t zone_index(const struct tree *t, const char *entry)
{
	for (size_t i = 0; i < t->n; i++) {
		const char *slash = strrchr(t->zones[i].path, '/');

		if (strcmp(slash + 1, entry) == 0)
			return i;
	}
	fail_msg("no zone %s", entry);
	return 0;
}

/* The usual single-socket client: package-0 with core and uncore, psys. */
static void add_client(struct tree *t)
{
	add_zone(t, "intel-rapl:0", "package-0\n", "1000000\n", MAX_RANGE_S "\n", "15000000\n");
	add_zone(t, "intel-rapl:0:0", "core\n", "400000\n", MAX_RANGE_S "\n", "0\n");
	add_zone(t, "intel-rapl:0:1", "uncore\n", "20000\n", MAX_RANGE_S "\n", NULL);
	add_zone(t, "intel-rapl:1", "psys\n", "3000000\n", MAX_RANGE_S "\n", "28000000\n");
	/* The control type directory is no zone. */
	assert_int_equal(vw_fixture_write(t->root, "devices/virtual/powercap/intel-rapl/enabled",
					  "1\n", 0),
			 0);
	assert_int_equal(vw_fixture_symlink(t->root, "../../devices/virtual/powercap/intel-rapl",
					    "class/powercap/intel-rapl"),
			 0);
}

/* ---- log capture -------------------------------------------------------------------------- */

struct capture {
	int count;
	char all[8192];
};

static void capture_sink(enum vw_log_level level, const char *msg, void *ud)
{
	struct capture *c = ud;
	size_t len = strlen(c->all);

	c->count++;
	snprintf(c->all + len, sizeof(c->all) - len, "%s: %s\n", vw_log_level_name(level), msg);
}

static void capture_start(struct capture *c)
{
	*c = (struct capture){ 0 };
	vw_log_set_sink(capture_sink, c);
	vw_log_set_level(VW_LOG_DEBUG);
}

static void capture_stop(void)
{
	vw_log_set_sink(NULL, NULL);
	vw_log_set_level(VW_LOG_INFO);
}

/* ---- tests -------------------------------------------------------------------------------- */

static void test_ops_table(void **state)
{
	(void)state;
	vw_fixture_assert_source_ops(&vw_src_powercap, "rapl");
}

static void test_no_powercap(void **state)
{
	struct vw_power_env env = { .sysfs_fd = -1 };
	struct tree t;
	void *st = NULL;

	(void)state;
	assert_int_equal(vw_src_powercap.open(&env, &st), -EBADF);
	tree_new(&t);
	assert_int_equal(tree_open(&t), -ENODEV); /* no class/powercap at all */
	assert_int_equal(vw_fixture_mkdir(t.root, "class/powercap"), 0);
	assert_int_equal(tree_open(&t), -ENODEV); /* empty */
	/* Other powercap drivers, a dangling link and a zone with an unknown name: still none. */
	assert_int_equal(vw_fixture_mkdir(t.root, "class/powercap/dtpm"), 0);
	assert_int_equal(vw_fixture_symlink(t.root, "../../nowhere", "class/powercap/intel-rapl:7"),
			 0);
	add_zone(&t, "intel-rapl:3", "gpu\n", "1\n", MAX_RANGE_S, NULL);
	assert_int_equal(tree_open(&t), -ENODEV);
	assert_null(t.state);
	tree_free(&t);
}

static void test_one_socket(void **state)
{
	struct tree t;
	uint64_t raw[VW_POWER_MAX_ZONES];
	int errs[VW_POWER_MAX_ZONES];

	(void)state;
	tree_new(&t);
	add_client(&t);
	assert_int_equal(tree_open(&t), 0);
	expect_zones(&t,
		     { VW_ZONE_PACKAGE, 0, "intel-rapl:0" },
		     { VW_ZONE_CORE, 0, "intel-rapl:0:0" },
		     { VW_ZONE_UNCORE, 0, "intel-rapl:0:1" },
		     { VW_ZONE_PSYS, 0, "intel-rapl:1" });
	for (size_t i = 0; i < t.n; i++) {
		assert_true(t.zones[i].max_range_uj == MAX_RANGE);
		assert_double_near(t.zones[i].idle_w, -1, 0);
	}
	/* The ceiling: 4 x constraint_0_max_power_uw; 0 or missing is none. */
	assert_int_equal(t.zones[0].max_power_uw, 60000000);
	assert_int_equal(t.zones[1].max_power_uw, 0);
	assert_int_equal(t.zones[2].max_power_uw, 0);
	assert_int_equal(t.zones[3].max_power_uw, 112000000);
	assert_int_equal(vw_src_powercap.read(t.state, NULL, raw, errs), 0);
	assert_int_equal(raw[0], 1000000);
	assert_int_equal(raw[1], 400000);
	assert_int_equal(raw[2], 20000);
	assert_int_equal(raw[3], 3000000);
	for (size_t i = 0; i < t.n; i++)
		assert_int_equal(errs[i], 0);
	tree_free(&t);
}

static void test_two_sockets(void **state)
{
	struct tree t;

	(void)state;
	tree_new(&t);
	/* Made in scrambled order; psys sits between the packages, so package-1 is :2. */
	add_zone(&t, "intel-rapl:2:1", "dram\n", "5\n", "65532610987\n", NULL);
	add_zone(&t, "intel-rapl:0", "package-0\n", "1\n", MAX_RANGE_S, "165000000\n");
	add_zone(&t, "intel-rapl:2", "package-1\n", "2\n", MAX_RANGE_S, "165000000\n");
	add_zone(&t, "intel-rapl:0:1", "dram\n", "3\n", "65532610987\n", NULL);
	add_zone(&t, "intel-rapl:1", "psys\n", "4\n", MAX_RANGE_S, NULL);
	add_zone(&t, "intel-rapl:2:0", "core\n", "6\n", MAX_RANGE_S, NULL);
	add_zone(&t, "intel-rapl:0:0", "core\n", "7\n", MAX_RANGE_S, NULL);
	assert_int_equal(tree_open(&t), 0);
	expect_zones(&t,
		     { VW_ZONE_PACKAGE, 0, "intel-rapl:0" },
		     { VW_ZONE_CORE, 0, "intel-rapl:0:0" },
		     { VW_ZONE_DRAM, 0, "intel-rapl:0:1" },
		     { VW_ZONE_PSYS, 0, "intel-rapl:1" },
		     { VW_ZONE_PACKAGE, 1, "intel-rapl:2" },
		     { VW_ZONE_CORE, 1, "intel-rapl:2:0" },
		     { VW_ZONE_DRAM, 1, "intel-rapl:2:1" });
	assert_true(t.zones[6].max_range_uj == 65532610987ULL);
	tree_free(&t);
}

static void test_mmio(void **state)
{
	struct tree t;

	(void)state;
	tree_new(&t);
	add_client(&t);
	/* The MMIO interface repeats package-0 on client parts: skipped. */
	add_zone(&t, "intel-rapl-mmio:0", "package-0\n", "999\n", MAX_RANGE_S, "15000000\n");
	assert_int_equal(tree_open(&t), 0);
	assert_int_equal(t.n, 4);
	for (size_t i = 0; i < t.n; i++)
		assert_null(strstr(t.zones[i].path, "mmio"));
	tree_free(&t);

	/* Where it is the only interface, it is used. */
	tree_new(&t);
	add_zone(&t, "intel-rapl-mmio:0", "package-0\n", "999\n", MAX_RANGE_S, "15000000\n");
	assert_int_equal(tree_open(&t), 0);
	expect_zones(&t,
		     { VW_ZONE_PACKAGE, 0, "intel-rapl-mmio:0" });
	tree_free(&t);
}

static void test_skipped_zones(void **state)
{
	struct tree t;
	struct capture log;

	(void)state;
	tree_new(&t);
	add_client(&t);
	zone_file(&t, "intel-rapl:0:1", "enabled", "0\n"); /* uncore disabled */
	add_zone(&t, "intel-rapl:2", "gpu\n", "1\n", MAX_RANGE_S, NULL);     /* unknown name */
	add_zone(&t, "intel-rapl:3", NULL, "1\n", MAX_RANGE_S, NULL);        /* no name */
	add_zone(&t, "intel-rapl:x", "package-5\n", "1\n", MAX_RANGE_S, NULL); /* bad entry */
	capture_start(&log);
	assert_int_equal(tree_open(&t), 0);
	capture_stop();
	expect_zones(&t,
		     { VW_ZONE_PACKAGE, 0, "intel-rapl:0" },
		     { VW_ZONE_CORE, 0, "intel-rapl:0:0" },
		     { VW_ZONE_PSYS, 0, "intel-rapl:1" });
	assert_non_null(strstr(log.all, "debug: powercap: intel-rapl:2: unknown zone name 'gpu'"));
	assert_non_null(strstr(log.all, "debug: powercap: intel-rapl:0:1: disabled"));
	tree_free(&t);
}

static void test_multi_die(void **state)
{
	/* Same zone kind on the same socket: the path decides, whatever readdir says. */
	static const char *const made[][2] = { /* entry, name */
		{ "intel-rapl:1", "package-0-die-1\n" },
		{ "intel-rapl:4", "package-0-die-4\n" },
		{ "intel-rapl:0", "package-0-die-0\n" },
		{ "intel-rapl:3", "package-0-die-3\n" },
		{ "intel-rapl:1:0", "dram\n" },
		{ "intel-rapl:2", "package-0-die-2\n" },
		{ "intel-rapl:5", "package-1-die-0\n" },
		{ "intel-rapl:6", "package-1-die-x\n" },
	};
	struct tree t;

	(void)state;
	tree_new(&t);
	for (size_t i = 0; i < ARRAY_SIZE(made); i++)
		add_zone(&t, made[i][0], made[i][1], "1\n", MAX_RANGE_S, NULL);
	assert_int_equal(tree_open(&t), 0);
	expect_zones(&t,
		     { VW_ZONE_PACKAGE, 0, "intel-rapl:0" },
		     { VW_ZONE_PACKAGE, 0, "intel-rapl:1" },
		     { VW_ZONE_PACKAGE, 0, "intel-rapl:2" },
		     { VW_ZONE_PACKAGE, 0, "intel-rapl:3" },
		     { VW_ZONE_PACKAGE, 0, "intel-rapl:4" },
		     { VW_ZONE_DRAM, 0, "intel-rapl:1:0" },
		     { VW_ZONE_PACKAGE, 1, "intel-rapl:5" });
	tree_free(&t);
}

static void test_wrap_between_reads(void **state)
{
	struct tree t;
	struct vw_energy_counter c;
	uint64_t raw[VW_POWER_MAX_ZONES], d;
	int errs[VW_POWER_MAX_ZONES];

	(void)state;
	tree_new(&t);
	add_client(&t);
	set_energy(&t, "intel-rapl:0", MAX_RANGE - 1000);
	assert_int_equal(tree_open(&t), 0);
	vw_energy_counter_init(&c, t.zones[0].max_range_uj, t.zones[0].max_power_uw);
	assert_int_equal(vw_src_powercap.read(t.state, NULL, raw, errs), 0);
	assert_int_equal(vw_energy_counter_update(&c, raw[0], 1 * SEC, NULL), VW_ENERGY_BASELINE);
	set_energy(&t, "intel-rapl:0", 500);
	assert_int_equal(vw_src_powercap.read(t.state, NULL, raw, errs), 0);
	assert_int_equal(errs[0], 0);
	assert_int_equal(vw_energy_counter_update(&c, raw[0], 2 * SEC, &d), VW_ENERGY_WRAPPED);
	assert_int_equal(d, 1500);
	assert_int_equal(c.total_uj, 1500);
	tree_free(&t);
}

static void test_missing_max_range(void **state)
{
	struct tree t;
	struct vw_energy_counter c;
	uint64_t raw[VW_POWER_MAX_ZONES];
	int errs[VW_POWER_MAX_ZONES];
	struct capture log;

	(void)state;
	tree_new(&t);
	add_zone(&t, "intel-rapl:0", "package-0\n", "5000000\n", NULL, "125000000\n");
	add_zone(&t, "intel-rapl:0:0", "core\n", "1\n", "junk\n", NULL);
	capture_start(&log);
	assert_int_equal(tree_open(&t), 0);
	capture_stop();
	assert_int_equal(t.n, 2);
	assert_int_equal(t.zones[0].max_range_uj, 0);
	assert_int_equal(t.zones[1].max_range_uj, 0);
	/* One warning for both. */
	assert_non_null(strstr(log.all, "warn: powercap: max_energy_range_uj missing or "
					"unreadable for 2 zone(s), first /sys/class/powercap/"
					"intel-rapl:0"));
	vw_energy_counter_init(&c, t.zones[0].max_range_uj, t.zones[0].max_power_uw);
	assert_int_equal(vw_src_powercap.read(t.state, NULL, raw, errs), 0);
	vw_energy_counter_update(&c, raw[0], 1 * SEC, NULL);
	set_energy(&t, "intel-rapl:0", 1000);
	assert_int_equal(vw_src_powercap.read(t.state, NULL, raw, errs), 0);
	assert_int_equal(vw_energy_counter_update(&c, raw[0], 2 * SEC, NULL), VW_ENERGY_GAP);
	assert_int_equal(c.total_uj, 0);
	assert_int_equal(c.gaps, 1);
	tree_free(&t);
}

static void deny_zone(struct tree *t, const char *entry)
{
	char path[512];
	struct stat st;

	entry_path(t, entry, ".", path, sizeof(path));
	assert_int_equal(stat(path, &st), 0);
	fault.deny_dev = st.st_dev;
	fault.deny_ino = st.st_ino;
}

static void test_eacces(void **state)
{
	struct tree t;
	uint64_t raw[VW_POWER_MAX_ZONES];
	int errs[VW_POWER_MAX_ZONES];
	struct capture log;

	(void)state;
	/* Every energy_uj refused at open: -EACCES, and a log that says what to do. */
	tree_new(&t);
	add_client(&t);
	fault.deny_all = true;
	capture_start(&log);
	assert_int_equal(tree_open(&t), -EACCES);
	capture_stop();
	assert_null(t.state);
	assert_non_null(strstr(log.all, "error: powercap: permission denied"));
	assert_non_null(strstr(log.all, "CAP_DAC_READ_SEARCH"));
	assert_non_null(strstr(log.all, "949dd0104c49"));
	assert_null(strstr(log.all, "warn:")); /* one line, not one per zone */
	tree_free(&t);

	/* One zone refused at open: skipped, the rest work. */
	tree_new(&t);
	add_client(&t);
	deny_zone(&t, "intel-rapl:0:1");
	capture_start(&log);
	assert_int_equal(tree_open(&t), 0);
	capture_stop();
	assert_non_null(strstr(log.all, "debug: powercap: /sys/class/powercap/intel-rapl:0:1: "
					"cannot read energy_uj: Permission denied; zone skipped"));
	assert_non_null(strstr(log.all, "warn: powercap: energy_uj of 1 of 4 zones is root-only"));
	assert_null(strstr(log.all, "error:"));
	assert_int_equal(t.n, 3);
	tree_free(&t);

	/* Refused after open: per zone, and the read still succeeds while one zone reads. */
	tree_new(&t);
	add_client(&t);
	assert_int_equal(tree_open(&t), 0);
	deny_zone(&t, "intel-rapl:0:0");
	capture_start(&log);
	assert_int_equal(vw_src_powercap.read(t.state, NULL, raw, errs), 0);
	assert_int_equal(errs[zone_index(&t, "intel-rapl:0")], 0);
	assert_int_equal(errs[zone_index(&t, "intel-rapl:0:0")], -EACCES);
	assert_int_equal(errs[zone_index(&t, "intel-rapl:1")], 0);
	assert_int_equal(raw[zone_index(&t, "intel-rapl:1")], 3000000);
	/* Repeats are rate-limited: one warning for three failing reads. */
	vw_src_powercap.read(t.state, NULL, raw, errs);
	vw_src_powercap.read(t.state, NULL, raw, errs);
	assert_int_equal(log.count, 1);
	assert_non_null(strstr(log.all, "intel-rapl:0:0: cannot read energy_uj: Permission"));
	/* Recovery is logged once. */
	fault = (struct fault){ 0 };
	assert_int_equal(vw_src_powercap.read(t.state, NULL, raw, errs), 0);
	assert_int_equal(errs[zone_index(&t, "intel-rapl:0:0")], 0);
	assert_int_equal(log.count, 2);
	assert_non_null(strstr(log.all, "info: powercap: /sys/class/powercap/intel-rapl:0:0: "
					"energy_uj readable again"));
	/* Everything refused: the read fails with the error. */
	fault.deny_all = true;
	capture_stop();
	vw_log_set_level(VW_LOG_ERROR);
	assert_int_equal(vw_src_powercap.read(t.state, NULL, raw, errs), -EACCES);
	vw_log_set_level(VW_LOG_INFO);
	for (size_t i = 0; i < t.n; i++)
		assert_int_equal(errs[i], -EACCES);
	tree_free(&t);
}

static void replace_with_dir(struct tree *t, const char *entry)
{
	char path[512];

	entry_path(t, entry, "energy_uj", path, sizeof(path));
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkdir(path, 0755), 0);
}

static void test_read_errors(void **state)
{
	struct tree t;
	uint64_t raw[VW_POWER_MAX_ZONES];
	int errs[VW_POWER_MAX_ZONES];
	char path[512];
	struct stat st;

	(void)state;
	tree_new(&t);
	add_client(&t);
	add_zone(&t, "intel-rapl:0:2", "dram\n", "77\n", MAX_RANGE_S, NULL);
	assert_int_equal(tree_open(&t), 0);
	assert_int_equal(t.n, 5);
	vw_log_set_level(VW_LOG_ERROR);
	zone_file(&t, "intel-rapl:0", "energy_uj", "12abc\n");
	zone_file(&t, "intel-rapl:0:0", "energy_uj", "");
	replace_with_dir(&t, "intel-rapl:0:1");
	zone_file(&t, "intel-rapl:0:2", "energy_uj", "18446744073709551616\n");
	set_energy(&t, "intel-rapl:1", 3500000);
	entry_path(&t, "intel-rapl:1", "energy_uj", path, sizeof(path));
	assert_int_equal(vw_src_powercap.read(t.state, NULL, raw, errs), 0);
	assert_int_equal(errs[zone_index(&t, "intel-rapl:0")], -EINVAL);
	assert_int_equal(errs[zone_index(&t, "intel-rapl:0:0")], -ENODATA);
	assert_int_equal(errs[zone_index(&t, "intel-rapl:0:1")], -EISDIR);
	assert_int_equal(errs[zone_index(&t, "intel-rapl:0:2")], -ERANGE);
	assert_int_equal(errs[zone_index(&t, "intel-rapl:1")], 0);
	assert_int_equal(raw[zone_index(&t, "intel-rapl:1")], 3500000);
	assert_int_equal(raw[zone_index(&t, "intel-rapl:0")], 0);
	/* EIO from the driver on the last readable one: now nothing reads, the first error. */
	assert_int_equal(stat(path, &st), 0);
	fault.eio_dev = st.st_dev;
	fault.eio_ino = st.st_ino;
	assert_int_equal(vw_src_powercap.read(t.state, NULL, raw, errs), -EINVAL);
	assert_int_equal(errs[zone_index(&t, "intel-rapl:1")], -EIO);
	/* Negative and max-valued raw readings: junk, or left to the energy module. */
	fault = (struct fault){ 0 };
	zone_file(&t, "intel-rapl:0", "energy_uj", "-5\n");
	zone_file(&t, "intel-rapl:0:0", "energy_uj", "18446744073709551615\n");
	assert_int_equal(vw_src_powercap.read(t.state, NULL, raw, errs), 0);
	assert_int_equal(errs[zone_index(&t, "intel-rapl:0")], -EINVAL);
	assert_int_equal(errs[zone_index(&t, "intel-rapl:0:0")], 0);
	assert_true(raw[zone_index(&t, "intel-rapl:0:0")] == UINT64_MAX);
	vw_log_set_level(VW_LOG_INFO);
	tree_free(&t);
}

static void test_unreadable_at_open(void **state)
{
	struct tree t;
	struct capture log;

	(void)state;
	tree_new(&t);
	add_client(&t);
	replace_with_dir(&t, "intel-rapl:0:1");
	zone_file(&t, "intel-rapl:1", "energy_uj", "junk\n");
	capture_start(&log);
	assert_int_equal(tree_open(&t), 0);
	capture_stop();
	expect_zones(&t,
		     { VW_ZONE_PACKAGE, 0, "intel-rapl:0" },
		     { VW_ZONE_CORE, 0, "intel-rapl:0:0" });
	assert_non_null(strstr(log.all, "intel-rapl:0:1: cannot read energy_uj: Is a directory"));
	tree_free(&t);

	/* No zone readable, not for lack of permission: no device. */
	tree_new(&t);
	add_zone(&t, "intel-rapl:0", "package-0\n", "\n", MAX_RANGE_S, NULL);
	vw_log_set_level(VW_LOG_ERROR);
	assert_int_equal(tree_open(&t), -ENODEV);
	vw_log_set_level(VW_LOG_INFO);
	tree_free(&t);
}

static void test_zone_vanishes(void **state)
{
	struct tree t;
	uint64_t raw[VW_POWER_MAX_ZONES];
	int errs[VW_POWER_MAX_ZONES];
	char *dev;

	(void)state;
	tree_new(&t);
	add_client(&t);
	assert_int_equal(tree_open(&t), 0);
	assert_int_equal(vw_src_powercap.read(t.state, NULL, raw, errs), 0);
	/* The driver goes away under the uncore zone. */
	assert_true(asprintf(&dev, "%s/devices/virtual/powercap/intel-rapl/intel-rapl:0/"
				   "intel-rapl:0:1",
			     t.root) > 0);
	vw_fixture_rm(dev);
	vw_log_set_level(VW_LOG_ERROR);
	assert_int_equal(vw_src_powercap.read(t.state, NULL, raw, errs), 0);
	vw_log_set_level(VW_LOG_INFO);
	assert_int_equal(errs[zone_index(&t, "intel-rapl:0:1")], -ENOENT);
	assert_int_equal(errs[zone_index(&t, "intel-rapl:0")], 0);
	assert_int_equal(errs[zone_index(&t, "intel-rapl:0:0")], 0);
	assert_int_equal(t.n, 4); /* zones are fixed at open */

	/* The driver comes back: a new directory, the hardware counter further on. */
	zone_file(&t, "intel-rapl:0:1", "name", "uncore\n");
	zone_file(&t, "intel-rapl:0:1", "energy_uj", "90000\n");
	assert_int_equal(vw_src_powercap.read(t.state, NULL, raw, errs), 0);
	assert_int_equal(errs[zone_index(&t, "intel-rapl:0:1")], 0);
	assert_int_equal(raw[zone_index(&t, "intel-rapl:0:1")], 90000);
	set_energy(&t, "intel-rapl:0:1", 95000);
	assert_int_equal(vw_src_powercap.read(t.state, NULL, raw, errs), 0);
	assert_int_equal(raw[zone_index(&t, "intel-rapl:0:1")], 95000);

	/* Another zone under the same entry name is not taken for it. */
	assert_true(asprintf(&dev, "%s/devices/virtual/powercap/intel-rapl/intel-rapl:0/"
				   "intel-rapl:0:1",
			     t.root) > 0);
	vw_fixture_rm(dev);
	zone_file(&t, "intel-rapl:0:1", "name", "dram\n");
	zone_file(&t, "intel-rapl:0:1", "energy_uj", "5\n");
	vw_log_set_level(VW_LOG_ERROR);
	assert_int_equal(vw_src_powercap.read(t.state, NULL, raw, errs), 0);
	vw_log_set_level(VW_LOG_INFO);
	assert_int_equal(errs[zone_index(&t, "intel-rapl:0:1")], -ENOENT);
	tree_free(&t);
}

static void test_watts_over_reads(void **state)
{
	static const struct {
		const char *entry;
		uint64_t uw;
	} load[] = {
		{ "intel-rapl:0", 12500000 }, /* package 12.5 W, near its wrap */
		{ "intel-rapl:0:0", 7000000 },
		{ "intel-rapl:0:1", 250000 },
		{ "intel-rapl:1", 21000000 },
	};
	struct vw_energy_counter c[ARRAY_SIZE(load)];
	uint64_t energy[ARRAY_SIZE(load)] = { MAX_RANGE - 30000000, 400000, 20000, 3000000 };
	uint64_t raw[VW_POWER_MAX_ZONES];
	int errs[VW_POWER_MAX_ZONES];
	struct tree t;

	(void)state;
	tree_new(&t);
	add_client(&t);
	set_energy(&t, "intel-rapl:0", energy[0]);
	assert_int_equal(tree_open(&t), 0);
	assert_int_equal(t.n, ARRAY_SIZE(load));
	for (size_t i = 0; i < t.n; i++) {
		assert_string_equal(strrchr(t.zones[i].path, '/') + 1, load[i].entry);
		vw_energy_counter_init(&c[i], t.zones[i].max_range_uj, t.zones[i].max_power_uw);
	}
	for (uint64_t k = 0; k < 6; k++) {
		/* Readings 2 s apart; the package wraps between the 2nd and 3rd. */
		uint64_t now = 100 * SEC + k * 2 * SEC;

		assert_int_equal(vw_src_powercap.read(t.state, NULL, raw, errs), 0);
		for (size_t i = 0; i < t.n; i++) {
			uint64_t d, elapsed = now - c[i].last_ns;
			enum vw_energy_result r = vw_energy_counter_update(&c[i], raw[i], now, &d);

			assert_int_equal(errs[i], 0);
			if (k == 0) {
				assert_int_equal(r, VW_ENERGY_BASELINE);
				continue;
			}
			assert_true(r == VW_ENERGY_OK || r == VW_ENERGY_WRAPPED);
			assert_double_near(vw_energy_watts(d, elapsed), load[i].uw / 1e6, 1e-9);
		}
		for (size_t i = 0; i < t.n; i++) {
			energy[i] = (energy[i] + load[i].uw * 2) % MAX_RANGE;
			set_energy(&t, load[i].entry, energy[i]);
		}
	}
	assert_int_equal(c[0].wraps, 1);
	assert_int_equal(c[0].gaps, 0);
	assert_int_equal(c[0].total_uj, 5 * 2 * 12500000);
	assert_int_equal(c[3].total_uj, 5 * 2 * 21000000);
	tree_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ops_table),
		cmocka_unit_test(test_no_powercap),
		cmocka_unit_test(test_one_socket),
		cmocka_unit_test(test_two_sockets),
		cmocka_unit_test(test_mmio),
		cmocka_unit_test(test_skipped_zones),
		cmocka_unit_test(test_multi_die),
		cmocka_unit_test(test_wrap_between_reads),
		cmocka_unit_test(test_missing_max_range),
		cmocka_unit_test(test_eacces),
		cmocka_unit_test(test_read_errors),
		cmocka_unit_test(test_unreadable_at_open),
		cmocka_unit_test(test_zone_vanishes),
		cmocka_unit_test(test_watts_over_reads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

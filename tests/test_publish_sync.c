/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which files of a VM's shared folder are fsync'ed (host/publish/publish_share.c): on a disk
 * file system the zones' files (energy_uj is read back by the next process), never frame.json
 * or model.json (made again every round: an fsync per VM a round was milliseconds each); on
 * tmpfs none. fsync and fstatfs (fstatfs64 under _FILE_OFFSET_BITS=64) are wrapped (-Wl,--wrap):
 * the file system type the writer sees is the test's choice, whatever TMPDIR is, and each fsync
 * is recorded by the file's name.
 */
#include "vw_test.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "fileio.h"
#include "fixture.h"
#include "publish_priv.h"

#define UUID "5a0c9e0e-7f3b-4c61-9d1e-2b7a4f6c8d90"
#define MAX_RANGE (1ULL << 48)

int __real_fsync(int fd);
int __wrap_fsync(int fd);
/* fstatfs is fstatfs64 with _FILE_OFFSET_BITS=64 (the same struct on 64-bit). */
int __real_fstatfs64(int fd, struct statfs *buf);
int __wrap_fstatfs64(int fd, struct statfs *buf);

static long fake_type; /* 0: the real file system's */
static char synced[64][128];
static size_t n_synced;

int __wrap_fstatfs64(int fd, struct statfs *buf)
{
	int r = __real_fstatfs64(fd, buf);

	if (r == 0 && fake_type)
		buf->f_type = fake_type;
	return r;
}

/* Records the base name of what fd refers to ("energy_uj.tmp.PID"). */
int __wrap_fsync(int fd)
{
	char link[64], path[128];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n > 0 && n_synced < 64) {
		const char *base;

		path[n] = '\0';
		base = strrchr(path, '/');
		snprintf(synced[n_synced++], sizeof(synced[0]), "%s", base ? base + 1 : path);
	}
	return __real_fsync(fd);
}

/* How many fsyncs went to files whose name starts with prefix. */
static size_t synced_count(const char *prefix)
{
	size_t k = 0;

	for (size_t i = 0; i < n_synced; i++)
		k += strncmp(synced[i], prefix, strlen(prefix)) == 0;
	return k;
}

/* Three rounds of a VM whose package energy grows, a model line after the first. */
static void three_rounds(const struct vw_fixture_root *root)
{
	struct vw_pub_share s;
	const bool have[VW_PUB_RAPL__COUNT] = { true, false };
	uint64_t uj[VW_PUB_RAPL__COUNT] = { 0 };
	const char frame[] = "{\"v\":1}\n";
	uint64_t v;

	n_synced = 0;
	vw_pub_share_init(&s, -1); /* unwatched: frame.json every round */
	for (int round = 0; round < 3; round++) {
		uj[0] += 1000000;
		assert_int_equal(vw_pub_share_write(&s, root->fd, UUID, frame, sizeof(frame) - 1,
						    have, uj, MAX_RANGE, 1, 0, 0, NULL),
				 0);
		if (round == 0)
			assert_int_equal(vw_pub_share_write_model(&s, "{}\n", 3), 0);
	}
	/* Written whole all the same. */
	assert_int_equal(vw_read_u64_at(root->fd, UUID "/intel-rapl:0/energy_uj", &v), 0);
	assert_int_equal(v, 3000000);
	assert_int_equal(faccessat(root->fd, UUID "/frame.json", F_OK, 0), 0);
	assert_int_equal(faccessat(root->fd, UUID "/model.json", F_OK, 0), 0);
	vw_pub_share_done(&s);
}

static void test_disk_syncs_zones_only(void **state)
{
	fake_type = EXT4_SUPER_MAGIC;
	three_rounds(*state);
	assert_int_equal(synced_count("energy_uj.tmp."), 3);
	assert_int_equal(synced_count("name.tmp."), 1);
	assert_int_equal(synced_count("max_energy_range_uj.tmp."), 1);
	assert_int_equal(synced_count("frame.json"), 0);
	assert_int_equal(synced_count("model.json"), 0);
	assert_int_equal(n_synced, 5);
}

static void test_tmpfs_syncs_nothing(void **state)
{
	fake_type = TMPFS_MAGIC;
	three_rounds(*state);
	assert_int_equal(n_synced, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_disk_syncs_zones_only, vw_fixture_root_setup,
						vw_fixture_root_teardown),
		cmocka_unit_test_setup_teardown(test_tmpfs_syncs_nothing, vw_fixture_root_setup,
						vw_fixture_root_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
#include "vw_test.h"

#include "hwmon_fixture.h"

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "fixture.h"
#include "openat_fixture.h"

struct hw_io hw_io;

/* ---- openat --------------------------------------------------------------------------- */

/* hw_io's file refused; every open for writing counted (tests/openat_fixture.c asks). */
bool vw_fixture_openat_refused(int dirfd, const char *path, int flags)
{
	struct stat st;

	if (flags & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND))
		hw_io.writes++;
	if (!hw_io.deny_file || strcmp(path, hw_io.deny_file) != 0)
		return false;
	return hw_io.deny_all ||
	       (hw_io.deny_ino && fstat(dirfd, &st) == 0 && st.st_ino == hw_io.deny_ino);
}

/* ---- the log -------------------------------------------------------------------------- */

static void logged_sink(enum vw_log_level level, const char *msg, void *ud)
{
	struct logged *l = ud;
	size_t used = strlen(l->text);

	l->at[level]++;
	snprintf(l->text + used, sizeof(l->text) - used, "%s: %s\n", vw_log_level_name(level), msg);
}

void log_to(struct logged *l)
{
	memset(l, 0, sizeof(*l));
	vw_log_set_sink(logged_sink, l);
	vw_log_set_level(VW_LOG_DEBUG);
}

void log_restore(void)
{
	vw_log_set_sink(NULL, NULL);
	vw_log_set_level(VW_LOG_INFO);
}

/* ---- machines ------------------------------------------------------------------------- */

void put(struct machine *m, const char *rel, const char *text)
{
	char path[1024];

	if (text) {
		assert_int_equal(vw_fixture_write(m->root, rel, text, 0), 0);
		return;
	}
	snprintf(path, sizeof(path), "%s/%s", m->root, rel);
	assert_int_equal(unlink(path), 0);
}

void put_u64(struct machine *m, const char *rel, uint64_t v)
{
	char text[32];

	snprintf(text, sizeof(text), "%llu\n", (unsigned long long)v);
	put(m, rel, text);
}

void link_hwmon(struct machine *m, const char *devdir, unsigned n)
{
	char hw[256], target[300], rel[300];

	snprintf(hw, sizeof(hw), "%s/hwmon/hwmon%u", devdir, n);
	assert_int_equal(vw_fixture_mkdir(m->root, hw), 0);
	snprintf(target, sizeof(target), "../../../%s", strrchr(devdir, '/') + 1);
	snprintf(rel, sizeof(rel), "%s/device", hw);
	assert_int_equal(vw_fixture_symlink(m->root, target, rel), 0);
	assert_int_equal(vw_fixture_mkdir(m->root, "class/hwmon"), 0);
	snprintf(target, sizeof(target), "../../%s", hw);
	snprintf(rel, sizeof(rel), "class/hwmon/hwmon%u", n);
	assert_int_equal(vw_fixture_symlink(m->root, target, rel), 0);
}

ino_t machine_ino(const struct machine *m, const char *rel)
{
	char path[1024];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", m->root, rel);
	assert_int_equal(stat(path, &st), 0);
	return st.st_ino;
}

void machine_new(struct machine *m, const struct vw_power_source_ops *src)
{
	*m = (struct machine){ .root = vw_fixture_mkdtemp("hwmon"), .sysfs_fd = -1, .src = src };
	assert_non_null(m->root);
	m->sysfs_fd = vw_root_open(m->root);
	assert_true(m->sysfs_fd >= 0);
	memset(&hw_io, 0, sizeof(hw_io));
}

void machine_free(struct machine *m)
{
	m->src->close(m->state);
	if (m->sysfs_fd >= 0)
		close(m->sysfs_fd);
	vw_fixture_rm(m->root);
	memset(&hw_io, 0, sizeof(hw_io));
	*m = (struct machine){ .sysfs_fd = -1 };
}

int machine_open(struct machine *m)
{
	struct vw_source_config c = { .ops = m->src, .config = m->config };
	struct vw_power_env env = { .sysfs_fd = m->sysfs_fd, .configs = &c, .n_configs = 1 };
	int r;

	m->state = NULL;
	r = m->src->open(&env, &m->state);
	m->n = r == 0 ? m->src->zones(m->state, &m->zones) : 0;
	return r;
}

int machine_open_quiet(struct machine *m)
{
	int r;

	vw_log_set_level(VW_LOG_WARN);
	r = machine_open(m);
	vw_log_set_level(VW_LOG_INFO);
	return r;
}

int machine_read(struct machine *m, uint64_t now_ns)
{
	struct vw_node_activity act = { .now_ns = now_ns };

	for (size_t i = 0; i < VW_POWER_MAX_ZONES; i++) {
		m->raw[i] = 0xdeadbeef;
		m->errs[i] = 1;
	}
	return m->src->read(m->state, &act, m->raw, m->errs);
}

/* ---- snapshots ------------------------------------------------------------------------ */

static struct snapshot *snap_into;
static size_t snap_root_len;

static int snap_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	char *content;
	size_t used = strlen(snap_into->text);

	(void)ftw;
	if (flag != FTW_F)
		return 0;
	content = vw_fixture_slurp(path, NULL);
	snprintf(snap_into->text + used, sizeof(snap_into->text) - used, "%s %lld.%09ld %lld %s|",
		 path + snap_root_len, (long long)st->st_mtim.tv_sec, st->st_mtim.tv_nsec,
		 (long long)st->st_size, content ? content : "?");
	free(content);
	return 0;
}

void snapshot(const struct machine *m, struct snapshot *s)
{
	memset(s, 0, sizeof(*s));
	snap_into = s;
	snap_root_len = strlen(m->root);
	assert_int_equal(nftw(m->root, snap_one, 16, FTW_PHYS), 0);
	assert_true(strlen(s->text) < sizeof(s->text) - 1);
}

size_t assert_nothing_written(struct machine *m, unsigned reads, const char *must_have)
{
	_cleanup_free_ struct snapshot *before = calloc(1, sizeof(*before));
	_cleanup_free_ struct snapshot *after = calloc(1, sizeof(*after));
	size_t n;

	assert_non_null(before);
	assert_non_null(after);
	snapshot(m, before);
	usleep(20000); /* a write now would show in the mtimes */
	vw_log_set_level(VW_LOG_ERROR);
	hw_io.writes = 0;
	assert_int_equal(machine_open(m), 0);
	n = m->n;
	for (uint64_t k = 0; k < reads; k++)
		machine_read(m, HW_T0 + k * 250 * HW_MS);
	m->src->close(m->state);
	m->state = NULL;
	vw_log_set_level(VW_LOG_INFO);
	snapshot(m, after);
	assert_string_equal(after->text, before->text);
	assert_non_null(strstr(before->text, must_have));
	assert_int_equal(hw_io.writes, 0);
	return n;
}

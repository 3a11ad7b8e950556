/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One VM's shared folder, <share_root>/<uuid>/, laid out like /sys/class/powercap so RAPL
 * readers in the guest work on it unchanged:
 *
 *   frame.json                        the same JSON line the channel carries
 *   intel-rapl:0/name                 "package-0"
 *   intel-rapl:0/max_energy_range_uj  the synthetic wrap (never the host's)
 *   intel-rapl:0/energy_uj            the VM's package energy, idle + active, in microjoules
 *   intel-rapl:0:0/...                "dram", when the VM has dram energy
 *
 * Every file is replaced with temp + renameat in a directory fd opened O_NOFOLLOW, so a reader
 * sees the old or the new file, never a torn one, and a planted symlink is never followed. The
 * zones' files are fsync'ed first on a disk file system (not on tmpfs, where it does nothing):
 * energy_uj is read back by the next process. frame.json and model.json never are: they are
 * made again every round (the first after a restart), nothing reads them back, and the guests
 * reading them do not outlive a host crash; on a disk, an fsync per VM a round was milliseconds
 * of the daemon's time each. energy_uj continues from whatever value the folder held when this process first
 * wrote it (a host restart does not reset it), never decreases, and wraps at
 * max_energy_range_uj like RAPL: the value is the unwrapped count modulo the range, so the
 * usual reader formula (max - prev) + cur is exact.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "fileio.h"
#include "macro.h"
#include "proto.h"
#include "publish_priv.h"

static const struct {
	const char *dir, *name;
} rapl_zones[VW_PUB_RAPL__COUNT] = {
	[VW_PUB_RAPL_PACKAGE] = { "intel-rapl:0", "package-0" },
	[VW_PUB_RAPL_DRAM] = { "intel-rapl:0:0", "dram" },
};

void vw_pub_share_init(struct vw_pub_share *s)
{
	*s = (struct vw_pub_share){ .dirfd = -1, .pid = (long)getpid() };
	for (size_t z = 0; z < VW_PUB_RAPL__COUNT; z++)
		s->zone_fd[z] = -1;
}

/* Close the folder; the offsets stay, so a VM that comes back continues without counting twice. */
void vw_pub_share_done(struct vw_pub_share *s)
{
	vw_closep(&s->dirfd);
	s->dirfd = -1;
	for (size_t z = 0; z < VW_PUB_RAPL__COUNT; z++) {
		vw_closep(&s->zone_fd[z]);
		s->zone_fd[z] = -1;
	}
}

/* mkdir (0755) and open a directory below dirfd without following a symlink. */
static int open_subdir(int dirfd, const char *name)
{
	int fd;

	if (mkdirat(dirfd, name, 0755) < 0 && errno != EEXIST)
		return -errno;
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno; /* a symlink: -ENOTDIR (or -ELOOP), never followed */
	(void)fchmod(fd, 0755); /* whatever the umask: the guest reads it */
	return fd;
}

/* A file of the folder replaced whole: a reader sees the old or the new file whole. durable:
 * fsync'ed before the rename, except on tmpfs or ramfs (fsync does nothing there). */
static int write_file(const struct vw_pub_share *s, int dirfd, const char *rel, const void *data,
		      size_t len, bool durable)
{
	return vw_write_file_replace_pid_at(dirfd, rel, data, len, 0644, durable && !s->no_fsync,
					    s->pid);
}

/* A zone's file (read back by the next process: durable). */
static int write_text(const struct vw_pub_share *s, int dirfd, const char *rel, const char *text)
{
	return write_file(s, dirfd, rel, text, strlen(text), true);
}

static int write_u64(const struct vw_pub_share *s, int dirfd, const char *rel, uint64_t v)
{
	char text[32];

	snprintf(text, sizeof(text), "%" PRIu64 "\n", v);
	return write_text(s, dirfd, rel, text);
}

/*
 * Open a zone's folder. The first time in this process, continue from the energy_uj it holds (a
 * previous run's), taken modulo the range; junk is logged and restarts the zone from 0.
 */
static int open_zone(struct vw_pub_share *s, enum vw_pub_rapl z, uint64_t max_range_uj)
{
	int fd, r;
	uint64_t old;

	fd = open_subdir(s->dirfd, rapl_zones[z].dir);
	if (fd < 0)
		return fd;
	s->zone_fd[z] = fd;
	s->written[z] = false;
	if (s->primed[z])
		return 0;
	s->primed[z] = true;
	r = vw_read_u64_at(fd, "energy_uj", &old);
	if (r == 0) {
		s->offset_uj[z] = old % max_range_uj;
	} else {
		if (r != -ENOENT)
			vw_warn("publish: %s/energy_uj unreadable (%s), restarting from 0",
				rapl_zones[z].dir, strerror(-r));
		s->offset_uj[z] = 0;
	}
	s->last_uj[z] = 0;
	r = write_text(s, fd, "name", z == VW_PUB_RAPL_PACKAGE ? "package-0\n" : "dram\n");
	if (r == 0)
		r = write_u64(s, fd, "max_energy_range_uj", max_range_uj);
	return r;
}

static int write_zone(struct vw_pub_share *s, enum vw_pub_rapl z, uint64_t energy_uj,
		      uint64_t max_range_uj)
{
	uint64_t v;
	int r;

	if (s->zone_fd[z] < 0) {
		r = open_zone(s, z, max_range_uj);
		if (r < 0)
			return r;
	}
	v = s->offset_uj[z] + energy_uj;
	if (v < s->offset_uj[z])
		v = UINT64_MAX; /* saturate rather than wrap the unwrapped count */
	if (v < s->last_uj[z])
		v = s->last_uj[z];
	if (s->written[z] && v == s->last_uj[z])
		return 0; /* the file holds it: four system calls saved */
	r = write_u64(s, s->zone_fd[z], "energy_uj", v % max_range_uj);
	if (r == 0) {
		s->last_uj[z] = v;
		s->written[z] = true;
	}
	return r;
}

int vw_pub_share_write(struct vw_pub_share *s, int root_fd, const char *uuid, const char *frame,
		       size_t len, const bool have[VW_PUB_RAPL__COUNT],
		       const uint64_t energy_uj[VW_PUB_RAPL__COUNT], uint64_t max_range_uj)
{
	int r;

	if (!vw_proto_uuid_valid(uuid) || max_range_uj == 0)
		return -EINVAL;
	if (s->dirfd < 0) {
		struct statfs fs;

		r = open_subdir(root_fd, uuid);
		if (r < 0)
			return r;
		s->dirfd = r;
		s->no_fsync = fstatfs(r, &fs) == 0 &&
			      (fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC);
	}
	for (size_t z = 0; z < VW_PUB_RAPL__COUNT; z++) {
		if (!have[z])
			continue;
		r = write_zone(s, (enum vw_pub_rapl)z, energy_uj[z], max_range_uj);
		if (r < 0)
			return r;
	}
	return write_file(s, s->dirfd, "frame.json", frame, len, false);
}

int vw_pub_share_write_model(struct vw_pub_share *s, const char *line, size_t len)
{
	if (s->dirfd < 0)
		return -EAGAIN; /* the folder comes with the first frame */
	return write_file(s, s->dirfd, "model.json", line, len, false);
}

/* ---- removal ---- */

/* The files this writer makes in a folder of the share (and their temps, NAME.tmp.PID). */
static const char *const made_files[] = { "frame.json", "model.json", "name",
					  "max_energy_range_uj", "energy_uj" };

static bool made_name(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(made_files); i++) {
		size_t n = strlen(made_files[i]);

		if (strncmp(name, made_files[i], n) != 0)
			continue;
		if (!name[n])
			return true;
		if (strncmp(name + n, ".tmp.", 5) == 0 && name[n + 5] &&
		    strspn(name + n + 5, "0123456789") == strlen(name + n + 5))
			return true;
	}
	return false;
}

/*
 * Unlink what this writer makes in the directory fd refers to (never a directory, never
 * following anything: unlinkat removes a planted link itself, not its target). 0 when none of
 * ours is left.
 */
static int remove_made(int fd)
{
	_cleanup_close_ int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	struct dirent *de;
	DIR *d;
	int r = 0;

	if (dup_fd < 0)
		return -errno;
	d = fdopendir(dup_fd);
	if (!d)
		return -errno;
	dup_fd = -1; /* d owns it */
	while ((de = readdir(d)))
		if (made_name(de->d_name) && unlinkat(fd, de->d_name, 0) < 0 && errno != ENOENT)
			r = -errno;
	closedir(d);
	return r;
}

int vw_pub_share_remove(int root_fd, const char *uuid)
{
	_cleanup_close_ int dirfd = -1;
	int r;

	if (!vw_proto_uuid_valid(uuid))
		return -EINVAL;
	dirfd = openat(root_fd, uuid, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dirfd < 0)
		return errno == ENOENT ? 0 : -errno; /* a link in its place: not ours, kept */
	for (size_t z = 0; z < VW_PUB_RAPL__COUNT; z++) {
		_cleanup_close_ int zfd = openat(dirfd, rapl_zones[z].dir,
						 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

		if (zfd < 0)
			continue; /* absent, or a link (then the folder stays: not ours) */
		r = remove_made(zfd);
		if (r < 0)
			return r;
		if (unlinkat(dirfd, rapl_zones[z].dir, AT_REMOVEDIR) < 0 && errno != ENOENT)
			return -errno; /* something else in it: kept */
	}
	r = remove_made(dirfd);
	if (r < 0)
		return r;
	if (unlinkat(root_fd, uuid, AT_REMOVEDIR) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

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
 * made again (the first after a restart), nothing reads them back, and the guests
 * reading them do not outlive a host crash; on a disk, an fsync per VM a round was milliseconds
 * of the daemon's time each. energy_uj continues from whatever value the folder held when this process first
 * wrote it (a host restart does not reset it), never decreases, and wraps at
 * max_energy_range_uj like RAPL: the value is the unwrapped count modulo the range, so the
 * usual reader formula (max - prev) + cur is exact.
 *
 * frame.json is replaced only when vw_pub_frame_decide() says so: every round while someone
 * opens it (the folder is watched for IN_OPEN), else at least every VW_PUB_FRAME_KEEPALIVE_NS.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <limits.h>
#include <linux/magic.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "fileio.h"
#include "log.h"
#include "macro.h"
#include "proto.h"
#include "publish_priv.h"

static const struct {
	const char *dir, *name;
} rapl_zones[VW_PUB_RAPL__COUNT] = {
	[VW_PUB_RAPL_PACKAGE] = { "intel-rapl:0", "package-0" },
	[VW_PUB_RAPL_DRAM] = { "intel-rapl:0:0", "dram" },
};

void vw_pub_share_init(struct vw_pub_share *s, int ifd)
{
	*s = (struct vw_pub_share){ .dirfd = -1, .ifd = ifd, .wd = -1, .pid = (long)getpid() };
	for (size_t z = 0; z < VW_PUB_RAPL__COUNT; z++)
		s->zone_fd[z] = -1;
}

/* The folder as this writer leaves it: a later change of its time is another hand's (the libvirt
 * hook preparing a start), which vw_pub_share_remove() then keeps. */
void vw_pub_share_leave(struct vw_pub_share *s)
{
	struct stat st;

	s->kept.left_known = s->dirfd >= 0 && fstat(s->dirfd, &st) == 0;
	if (s->kept.left_known)
		s->kept.left_mtime = st.st_mtim;
}

/* Close the folder; the offsets stay, so a VM that comes back continues without counting twice.
 * Its frame is written again when it does (the folder may have been rewritten meanwhile). */
void vw_pub_share_done(struct vw_pub_share *s)
{
	if (s->wd >= 0 && s->ifd >= 0)
		(void)inotify_rm_watch(s->ifd, s->wd);
	s->wd = -1;
	s->frame = (struct vw_pub_frame_state){ 0 };
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
	if (s->kept.primed[z])
		return 0;
	s->kept.primed[z] = true;
	r = vw_read_u64_plain_at(fd, "energy_uj", &old); /* a planted link or FIFO: junk */
	if (r == 0) {
		s->kept.offset_uj[z] = old % max_range_uj;
	} else {
		if (r != -ENOENT)
			vw_warn("publish: %s/energy_uj unreadable (%s), restarting from 0",
				rapl_zones[z].dir, strerror(-r));
		s->kept.offset_uj[z] = 0;
	}
	s->kept.last_uj[z] = 0;
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
	v = s->kept.offset_uj[z] + energy_uj;
	if (v < s->kept.offset_uj[z])
		v = UINT64_MAX; /* saturate rather than wrap the unwrapped count */
	if (v < s->kept.last_uj[z])
		v = s->kept.last_uj[z];
	if (s->written[z] && v == s->kept.last_uj[z])
		return 0; /* the file holds it: four system calls saved */
	r = write_u64(s, s->zone_fd[z], "energy_uj", v % max_range_uj);
	if (r == 0) {
		s->kept.last_uj[z] = v;
		s->written[z] = true;
	}
	return r;
}

/*
 * Watch the folder just opened for opens of its files (IN_OPEN: whoever opens frame.json, through
 * whatever mount). The watch is added by path: kept only when the path still names the folder
 * the fd holds (else its frames are written every round, as without a watch).
 */
static void watch_folder(struct vw_pub_share *s, const char *root_path, const char *uuid)
{
	char path[PATH_MAX];
	struct stat a, b;
	int wd;

	if (s->ifd < 0 || !root_path ||
	    snprintf(path, sizeof(path), "%s/%s", root_path, uuid) >= (int)sizeof(path))
		return;
	wd = inotify_add_watch(s->ifd, path, IN_OPEN | IN_ONLYDIR | IN_DONT_FOLLOW);
	if (wd < 0) {
		vw_complain(&s->complaint, VW_LOG_WARN,
			    "publish: shared folder %s: cannot watch it (%s): its frame.json is "
			    "written every round (raise fs.inotify.max_user_watches)",
			    path, strerror(errno));
		return;
	}
	if (fstat(s->dirfd, &a) < 0 || stat(path, &b) < 0 || a.st_dev != b.st_dev ||
	    a.st_ino != b.st_ino) {
		(void)inotify_rm_watch(s->ifd, wd);
		return;
	}
	s->wd = wd;
	s->frame.watched = true;
}

int vw_pub_share_open(struct vw_pub_share *s, int root_fd, const char *root_path,
		      const char *uuid)
{
	struct statfs fs;
	int r;

	if (!vw_proto_uuid_valid(uuid))
		return -EINVAL;
	if (s->dirfd >= 0)
		return 0;
	r = open_subdir(root_fd, uuid);
	if (r < 0)
		return r;
	s->dirfd = r;
	s->no_fsync = fstatfs(r, &fs) == 0 && (fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC);
	s->frame = (struct vw_pub_frame_state){ 0 };
	watch_folder(s, root_path, uuid);
	return 0;
}

void vw_pub_share_opened(struct vw_pub_share *s, uint64_t now_ns)
{
	s->frame.opened = true;
	s->frame.last_open_ns = now_ns;
}

void vw_pub_share_unwatched(struct vw_pub_share *s)
{
	s->wd = -1;
	s->frame.watched = false;
}

int vw_pub_share_write(struct vw_pub_share *s, int root_fd, const char *uuid, const char *frame,
		       size_t len, const bool have[VW_PUB_RAPL__COUNT],
		       const uint64_t energy_uj[VW_PUB_RAPL__COUNT], uint64_t max_range_uj,
		       unsigned zones, uint64_t now_ns, uint64_t max_gap_ns,
		       enum vw_pub_frame_why *ret_why)
{
	enum vw_pub_frame_why why;
	int r;

	if (!vw_proto_uuid_valid(uuid) || max_range_uj == 0)
		return -EINVAL;
	r = vw_pub_share_open(s, root_fd, NULL, uuid);
	if (r < 0)
		return r;
	for (size_t z = 0; z < VW_PUB_RAPL__COUNT; z++) {
		if (!have[z])
			continue;
		r = write_zone(s, (enum vw_pub_rapl)z, energy_uj[z], max_range_uj);
		if (r < 0) {
			s->frame.written = false; /* the folder failed: its frame is written again */
			return r;
		}
	}
	why = vw_pub_frame_decide(&s->frame, zones, now_ns, max_gap_ns);
	if (ret_why)
		*ret_why = why;
	if (why == VW_PUB_FRAME_UNREAD)
		return 0;
	r = write_file(s, s->dirfd, "frame.json", frame, len, false);
	s->frame.written = r == 0; /* a failed replace: written again next round */
	if (r == 0) {
		s->frame.zones = zones;
		s->frame.last_write_ns = now_ns;
	}
	return r;
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

/* Remove the folder <root_fd>/<name> holds for uuid: ours in it, then it (when nothing else is). */
static int remove_folder(int root_fd, const char *name)
{
	_cleanup_close_ int dirfd = -1;
	int r;

	dirfd = openat(root_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
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
	if (unlinkat(root_fd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

/*
 * The folder is first renamed out of QEMU's way (<root>/.<uuid>.gone), then its time compared
 * with the one this writer left: a VM starting now has its folder touched by the libvirt hook
 * ("prepare"), and QEMU opens it tens of milliseconds later, so a folder touched since is put
 * back at once and kept (-EBUSY). Removed in place, a start at that moment lost its folder: QEMU
 * refused to start, or exported a directory the host no longer wrote. A hook run after the
 * rename makes a new folder, which stays. Where renameat2 is not supported (NFS), in place.
 */
int vw_pub_share_remove(int root_fd, const char *uuid, const struct timespec *left)
{
	char tomb[VW_UUID_LEN + 8];
	struct stat st;
	int r;

	if (!vw_proto_uuid_valid(uuid))
		return -EINVAL;
	snprintf(tomb, sizeof(tomb), ".%s.gone", uuid);
	if (renameat2(root_fd, uuid, root_fd, tomb, RENAME_NOREPLACE) < 0) {
		if (errno == ENOENT)
			return 0;
		if (errno != EINVAL)
			return -errno; /* EEXIST: an earlier removal's, with another's file in it */
		return remove_folder(root_fd, uuid);
	}
	if (fstatat(root_fd, tomb, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (S_ISDIR(st.st_mode) && left &&
	    (st.st_mtim.tv_sec != left->tv_sec || st.st_mtim.tv_nsec != left->tv_nsec)) {
		if (renameat2(root_fd, tomb, root_fd, uuid, RENAME_NOREPLACE) == 0)
			return -EBUSY; /* prepared for a start since we left it: kept */
		if (errno != EEXIST)
			return -errno;
		/* a folder made meanwhile (the hook, after our rename) is the VM's: ours goes */
	}
	r = remove_folder(root_fd, tomb);
	if (r < 0 && renameat2(root_fd, tomb, root_fd, uuid, RENAME_NOREPLACE) < 0 &&
	    errno != EEXIST)
		vw_debug("publish: %s left as %s: %s", uuid, tomb, strerror(errno));
	return r;
}

int vw_pub_share_export_writable(int procfs_fd, pid_t qemu_pid, const char *dir,
				 bool xml_readonly)
{
	_cleanup_close_ int root = -1;
	_cleanup_close_ int fd = -1;
	const char *rel = dir + strspn(dir, "/");
	char path[32];
	struct statvfs sv;

	if (xml_readonly)
		return 0;
	if (dir[0] != '/')
		return -EINVAL;
	if (procfs_fd >= 0 && qemu_pid > 0) {
		/* QEMU's mount namespace (libvirt's gives it a /dev of its own only): what it
		 * exports. Its root, and dir below it with every symlink resolved there, as QEMU's
		 * own lookup does: walked on from <procfs>/PID/root, an absolute one (/var/run ->
		 * /run) would go on in this process's namespace, which may differ (the shipped
		 * unit's ProtectSystem=strict shows every other mount read-only). Not to be had
		 * there: not known, rather than this process's view. */
		snprintf(path, sizeof(path), "%d/root", (int)qemu_pid);
		root = openat(procfs_fd, path, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (root < 0)
			return -errno;
		fd = vw_open_in_root(root, rel[0] ? rel : ".", O_PATH | O_DIRECTORY);
	} else { /* no QEMU known: this process's view */
		fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		fd = fd < 0 ? -errno : fd;
	}
	if (fd < 0)
		return fd;
	if (fstatvfs(fd, &sv) < 0)
		return -errno;
	return (sv.f_flag & ST_RDONLY) ? 0 : 1;
}

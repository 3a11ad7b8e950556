/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One VM's publication lock: <lock_dir>/<uuid>.lock, held with flock(LOCK_EX) for as long as
 * this process publishes the VM, so that two virtwatt-host processes (a systemd unit and a
 * DaemonSet side by side, or an old one draining while a new one starts) never publish one VM.
 *
 * flock rather than fcntl record locks: it needs only a read-only descriptor (an instance running
 * as another user can lock a file it may read but not write, with CAP_DAC_READ_SEARCH), it
 * belongs to the open file (two publishers in one process exclude each other too, and closing
 * some other descriptor of the file never drops it), and the kernel drops it when the process
 * dies, however it dies. Files are 0600 (nobody without that capability can lock them and hold
 * a VM hostage). They live on tmpfs (/run): a VM gone for good has its file removed by the
 * process that held it, under the lock (vw_pub_lock_remove), so a hypervisor's lock directory
 * holds the VMs of the last hour, not every VM since boot. That unlink is safe because a lock is
 * only taken once the name still names the file locked (vw_pub_lock_take checks it after flock):
 * a process that opened the file before it was unlinked, and locks it after, finds the name gone
 * or another file's and opens the name again.
 *
 * The holder writes "pid=N epoch=E host=H" into the file when it can write it; a refused process
 * names the holder from <procfs>/locks, the kernel's record (whose PIDs are those of the procfs
 * mount's namespace: the host's, for a container given the host's /proc), else from the file.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fileio.h"
#include "publish_priv.h"

void vw_pub_lock_init(struct vw_pub_lock *l)
{
	*l = (struct vw_pub_lock){ .fd = -1 };
}

bool vw_pub_lock_held(const struct vw_pub_lock *l)
{
	return l->fd >= 0;
}

void vw_pub_lock_drop(struct vw_pub_lock *l)
{
	vw_closep(&l->fd); /* the lock goes with the open file */
	l->fd = -1;
}

static void write_note(int fd, uint64_t epoch)
{
	char note[VW_PUB_LOCK_NOTE_MAX], host[64] = "";
	int n;

	(void)gethostname(host, sizeof(host) - 1);
	n = snprintf(note, sizeof(note), "pid=%d epoch=%" PRIu64 " host=%s\n", (int)getpid(), epoch,
		     host);
	/* Best effort: the lock is what counts, the note only names its holder. */
	if (n > 0 && ftruncate(fd, 0) == 0 && pwrite(fd, note, (size_t)n, 0) == n)
		(void)fdatasync(fd);
}

/* The PID holding a flock on the file fd refers to, from <procfs>/locks; 0 when not found. */
static int holder_pid(int procfs_fd, int fd)
{
	_cleanup_free_ char *line = NULL;
	size_t size = 0;
	struct stat st;
	FILE *f;
	int pid = 0, lfd;

	if (procfs_fd < 0 || fstat(fd, &st) < 0)
		return 0;
	/* A proc file has no size: read it as a stream, a line at a time. */
	lfd = vw_open_in_root(procfs_fd, "locks", O_RDONLY | O_NOCTTY);
	if (lfd < 0 || !(f = fdopen(lfd, "re"))) {
		if (lfd >= 0)
			close(lfd);
		return 0;
	}
	while (pid == 0 && getline(&line, &size, f) > 0) {
		char type[16], mode[16];
		unsigned maj, min;
		unsigned long ino;
		int p;

		/* "1: FLOCK  ADVISORY  WRITE 1234 fe:00:5678 0 EOF"; waiters read " -> ..." */
		if (sscanf(line, "%*d: %15s %*s %15s %d %x:%x:%lu", type, mode, &p, &maj, &min,
			   &ino) == 6 &&
		    strcmp(type, "FLOCK") == 0 && strcmp(mode, "WRITE") == 0 &&
		    maj == major(st.st_dev) && min == minor(st.st_dev) && ino == st.st_ino)
			pid = p;
	}
	fclose(f);
	return pid;
}

static void describe_holder(int fd, int procfs_fd, struct vw_pub_lock_holder *ret)
{
	ssize_t n = pread(fd, ret->note, sizeof(ret->note) - 1, 0);
	char *nl;

	ret->pid = holder_pid(procfs_fd, fd);
	ret->note[n > 0 ? n : 0] = '\0';
	if ((nl = strchr(ret->note, '\n')))
		*nl = '\0';
}

/* Does <dir_fd>/<name> still name the file dev:ino (not unlinked, not replaced)? */
static bool names_file(int dir_fd, const char *name, dev_t dev, ino_t ino)
{
	struct stat there;

	return fstatat(dir_fd, name, &there, AT_SYMLINK_NOFOLLOW) == 0 && there.st_dev == dev &&
	       there.st_ino == ino;
}

bool vw_pub_lock_still_ours(const struct vw_pub_lock *l, int dir_fd, const char *uuid)
{
	char name[64];

	snprintf(name, sizeof(name), "%s.lock", uuid);
	return l->fd >= 0 && names_file(dir_fd, name, l->dev, l->ino);
}

/* Open <dir_fd>/<name> and flock it without waiting: the fd, -EBUSY (ret_holder filled), -errno. */
static int open_locked(int dir_fd, const char *name, int procfs_fd,
		       struct vw_pub_lock_holder *ret_holder)
{
	int fd = openat(dir_fd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0600);

	if (fd < 0 && errno == EACCES) /* another user's file: reading is enough to lock it */
		fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int r = errno == EWOULDBLOCK ? -EBUSY : -errno;

		if (r == -EBUSY && ret_holder)
			describe_holder(fd, procfs_fd, ret_holder);
		close(fd);
		return r;
	}
	return fd;
}

int vw_pub_lock_take(struct vw_pub_lock *l, int dir_fd, const char *uuid, uint64_t epoch,
		     int procfs_fd, struct vw_pub_lock_holder *ret_holder)
{
	struct stat st;
	char name[64];
	int fd = -EAGAIN;

	if (l->fd >= 0)
		return 0;
	snprintf(name, sizeof(name), "%s.lock", uuid); /* a checked canonical UUID: no '/' */
	/*
	 * The file locked must still be the one the name names: its holder may have unlinked it
	 * (a VM gone for good) between our open and our flock, and a lock on an unlinked file
	 * excludes nobody. Then the name is opened again (created anew); a few times at most.
	 */
	for (int tries = 0; tries < VW_PUB_LOCK_TRIES; tries++) {
		fd = open_locked(dir_fd, name, procfs_fd, ret_holder);
		if (fd < 0)
			return fd;
		if (fstat(fd, &st) < 0) {
			int r = -errno;

			close(fd);
			return r;
		}
		if (names_file(dir_fd, name, st.st_dev, st.st_ino))
			break;
		close(fd);
		fd = -EAGAIN;
	}
	if (fd < 0)
		return fd;
	write_note(fd, epoch);
	l->fd = fd;
	l->dev = st.st_dev;
	l->ino = st.st_ino;
	return 0;
}

int vw_pub_lock_remove(struct vw_pub_lock *l, int dir_fd, const char *uuid)
{
	char name[64];
	int r = 0;

	if (l->fd < 0)
		return -ENOLCK;
	snprintf(name, sizeof(name), "%s.lock", uuid);
	/* Only the file held: one that replaced it is another process's. */
	if (!vw_pub_lock_still_ours(l, dir_fd, uuid))
		r = -ESTALE;
	else if (unlinkat(dir_fd, name, 0) < 0)
		r = -errno;
	vw_pub_lock_drop(l); /* after the unlink: nobody could lock the name meanwhile */
	return r;
}

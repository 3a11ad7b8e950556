/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The publisher's side of the VMs' locks (publish_lock.c: one VM's lock file): the lock
 * directory opened and watched, each VM's lock taken (a refusal said and counted, retried
 * every VW_PUBLISH_LOCK_RETRY_NS), and the watches' events read before a round: anything that
 * happened in a watched directory (or a lost event) makes the round check every lock file's
 * and socket's identity; a watch dropped (its directory went) leaves what it watched checked
 * each round.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "publish_priv.h"

/* Watch the lock directory just opened, when the path still names it. */
static void watch_lock_dir(struct vw_publisher *p)
{
	struct stat a, b;
	int wd;

	p->watch_dirty = true;
	if (p->ifd < 0)
		return;
	wd = inotify_add_watch(p->ifd, p->lock_dir, VW_PUB_WATCH_MASK);
	if (wd < 0)
		return;
	if (fstat(p->lock_fd, &a) < 0 || stat(p->lock_dir, &b) < 0 || a.st_dev != b.st_dev ||
	    a.st_ino != b.st_ino) {
		(void)inotify_rm_watch(p->ifd, wd);
		return; /* replaced meanwhile: checked each round */
	}
	p->lock_wd = wd;
}

int vw_pub_inotify_drain(int fd,
			 void (*on)(struct vw_publisher *p, const struct inotify_event *ev,
				    uint64_t now_ns, size_t *hint),
			 struct vw_publisher *p, uint64_t now_ns)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	size_t hint = 0;

	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
		if (n == 0)
			return -EIO;
		for (ssize_t off = 0; off + (ssize_t)sizeof(struct inotify_event) <= n;) {
			const struct inotify_event *ev = (const void *)(buf + off);

			off += (ssize_t)sizeof(*ev) + ev->len;
			on(p, ev, now_ns, &hint);
		}
	}
}

/* Any event: the next round checks identities; a dropped watch is forgotten. */
static void watch_event(struct vw_publisher *p, const struct inotify_event *ev, uint64_t now_ns,
			size_t *hint)
{
	(void)now_ns;
	(void)hint;
	p->watch_dirty = true;
	if (ev->mask & IN_IGNORED) {
		if (ev->wd == p->lock_wd)
			p->lock_wd = -1;
		for (size_t i = 0; i < p->n_vms; i++)
			vw_pub_chan_unwatched(&p->vms[i]->chan, ev->wd);
	}
}

void vw_pub_watch_drain(struct vw_publisher *p)
{
	if (p->ifd >= 0 && vw_pub_inotify_drain(p->ifd, watch_event, p, 0) < 0)
		p->watch_dirty = true;
}

int vw_pub_lock_dir_open(struct vw_publisher *p)
{
	int fd;

	if (p->lock_fd >= 0)
		return 0;
	fd = vw_dir_create_open(p->lock_dir); /* creating what is missing of it */
	if (fd < 0) {
		vw_complain(&p->lock_dir_complaint, VW_LOG_ERROR,
			    "passthrough: cannot open the lock directory %s: %s; publishing no VM "
			    "(each needs its lock): create it writable by virtwatt-host, or set "
			    "--passthrough.lock-dir to a directory every virtwatt-host on this "
			    "machine shares",
			    p->lock_dir, strerror(-fd));
		return fd;
	}
	vw_release(&p->lock_dir_complaint, VW_LOG_INFO, "passthrough: lock directory %s open",
		   p->lock_dir);
	p->lock_fd = fd;
	watch_lock_dir(p);
	return 0;
}

static void lock_refused(struct vw_publisher *p, struct vw_pub_vm *vm,
			 const struct vw_pub_lock_holder *h)
{
	char pid[32] = "pid unknown";

	vm->lock_refused++;
	p->lock_refused++;
	vm->lock_holder_pid = h->pid;
	if (h->pid > 0)
		snprintf(pid, sizeof(pid), "pid %d", h->pid);
	vw_complain(&vm->lock_complaint, VW_LOG_WARN,
		    "passthrough: VM %s is published by another process (%s; its lock file says "
		    "\"%s\") holding %s/%s.lock: not publishing it here, as two publishers make "
		    "its guest count its energy twice. Stop the other virtwatt-host (a systemd unit "
		    "and a DaemonSet side by side?); this one takes over within a second of it "
		    "exiting",
		    vm->uuid, pid, h->note, p->lock_dir, vm->uuid);
}

bool vw_pub_vm_lock(struct vw_publisher *p, struct vw_pub_vm *vm)
{
	struct vw_pub_lock_holder h = { 0 };
	int r;

	if (!p->lock_dir || vw_pub_lock_held(&vm->lock))
		return true;
	if (vm->lock_err && p->now_ns < vm->lock_retry_ns)
		return false;
	vm->lock_retry_ns = p->now_ns + VW_PUBLISH_LOCK_RETRY_NS;
	r = vw_pub_lock_dir_open(p);
	if (r == 0)
		r = vw_pub_lock_take(&vm->lock, p->lock_fd, vm->uuid, p->epoch, p->procfs_fd, &h);
	if (r == -EBUSY)
		lock_refused(p, vm, &h);
	else if (r < 0 && p->lock_fd >= 0)
		vw_complain(&vm->lock_complaint, VW_LOG_ERROR,
			    "passthrough: not publishing VM %s: cannot take its lock %s/%s.lock: "
			    "%s; let every virtwatt-host on this machine write "
			    "--passthrough.lock-dir",
			    vm->uuid, p->lock_dir, vm->uuid, strerror(-r));
	if (r < 0) {
		vm->lock_err = r;
		return false;
	}
	if (vm->lock_err)
		vw_release(&vm->lock_complaint, VW_LOG_INFO,
			   "passthrough: VM %s: its lock is ours now, publishing it", vm->uuid);
	vm->lock_err = 0;
	vm->lock_ours_once = true;
	vm->lock_holder_pid = 0;
	for (size_t z = 0; z < VW_ZONE__WIRE_COUNT && !vm->published; z++)
		vm->z[z].acc_idle = vm->z[z].acc_active = 0;
	return true;
}

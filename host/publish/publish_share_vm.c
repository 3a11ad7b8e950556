/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The publisher's side of each VM's shared folder (publish_priv.h): the folder's work handed to
 * the pool (publish_share_io.c) and collected, its stall, the watch's news of opens of
 * frame.json, the check of the folder's export to the guest, the folder's close and removal;
 * and the share root's own open, tried until its file system answers. On the publisher's
 * thread; nothing here touches the folders' file system.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "energy.h"
#include "publish_priv.h"

/*
 * Can the VM's guest write the folder it is given? Asked when its export changes (a new
 * <filesystem> source or <readonly/>, a new QEMU: the VM started again, perhaps with another
 * mount), or again while not known, with the folder's next work (off this thread: the folder's
 * file system may not answer); a guest that can is said (rate-limited over all VMs) and
 * counted while listed (virtwatt_passthrough_share_writable_vms).
 */
void vw_pub_vm_check_export(struct vw_pub_vm *vm, const struct vw_vm_energy *in)
{
	bool same = strcmp(vm->share_export ? vm->share_export : "", in->share_dir) == 0 &&
		    vm->share_export_ro == in->share_readonly;
	char *dir = NULL;

	if (same && vm->share_writable >= 0 && vm->share_export_pid == vm->qemu_pid &&
	    vm->share_export_start == vm->qemu_start)
		return;
	vm->share_export_pid = vm->qemu_pid;
	vm->share_export_start = vm->qemu_start;
	if (!same) {
		if (in->share_dir[0] && !(dir = strndup(in->share_dir, sizeof(in->share_dir))))
			return; /* (asked again at the next update) */
		free(vm->share_export);
		vm->share_export = in->share_dir[0] ? dir : NULL;
		vm->share_export_ro = in->share_readonly;
	}
	vm->share_export_due = vm->share_export != NULL;
	if (!vm->share_export)
		vm->share_writable = 0;
}

/* The answer, back from the folder's work. */
static void export_checked(struct vw_publisher *p, struct vw_pub_vm *vm, int writable)
{
	vm->share_writable = writable;
	if (vm->share_writable < 0)
		vw_debug("publish: VM %s: whether its guest may write %s is not known: %s", vm->uuid,
			 vm->share_export, strerror(-vm->share_writable));
	else if (vm->share_writable)
		vw_complain(&p->share_writable_complaint, VW_LOG_WARN,
			    "publish: VM %s: its guest may write its shared folder %s (no "
			    "<readonly/> in its <filesystem> and not a read-only mount): a guest that "
			    "writes there can fill the file system of every VM's folder, whose frames "
			    "then fail. Add <readonly/> (9p; virtiofs from libvirt 11) or export a "
			    "read-only bind mount of it (deploy/libvirt/README.md, \"virtiofs instead "
			    "of 9p\")",
			    vm->uuid, vm->share_export);
}

/* The longest time to the next round (next_interval()'s upper bound). */
static uint64_t max_gap_ns(const struct vw_publisher *p)
{
	double ns = (double)p->period_ns * (1.0 + p->jitter);

	return ns < (double)VW_PUBLISH_MIN_PERIOD_NS ? VW_PUBLISH_MIN_PERIOD_NS : (uint64_t)ns + 1;
}

static struct vw_pub_vm *vm_by_wd(const struct vw_publisher *p, int wd, size_t *hint)
{
	for (size_t k = 0; k < p->n_vms; k++) {
		size_t i = (*hint + k) % p->n_vms;

		if (p->vms[i]->live && p->vms[i]->share_wd == wd) {
			*hint = i + 1;
			return p->vms[i];
		}
	}
	return NULL;
}

/* One event of the folders' watches: an open of frame.json, a lost event (the queue
 * overflowed: an open of every folder), a watch gone (its folder removed or unmounted: that VM's
 * frames written every round). */
static void share_event(struct vw_publisher *p, const struct inotify_event *ev, uint64_t now_ns,
			size_t *hint)
{
	struct vw_pub_vm *vm;

	if (ev->mask & IN_Q_OVERFLOW) {
		for (size_t i = 0; i < p->n_vms; i++) {
			p->vms[i]->share_opened = true;
			p->vms[i]->share_opened_ns = now_ns;
		}
		return;
	}
	if (!(ev->mask & (IN_IGNORED | IN_OPEN)) || !(vm = vm_by_wd(p, ev->wd, hint)))
		return;
	if (ev->mask & IN_IGNORED) {
		vm->share_ignored_wd = ev->wd;
		vm->share_wd = -1;
	} else if (ev->len && strcmp(ev->name, VW_PUB_FRAME_FILE) == 0) {
		vm->share_opened = true;
		vm->share_opened_ns = now_ns;
	}
}

/* Before a round: who opened a folder's frame.json since the last one (one read() for all the
 * VMs, nothing when nobody did). */
void vw_pub_vm_share_drain(struct vw_publisher *p, uint64_t now_ns)
{
	if (p->share_ifd >= 0)
		(void)vw_pub_inotify_drain(p->share_ifd, share_event, p, now_ns);
}

/* A round the VM's folder was not written in time: its work not back within
 * VW_PUB_SHARE_WAIT_NS (given up on), or still out from an earlier round. Said once a stall. */
static void share_stall(struct vw_publisher *p, struct vw_pub_vm *vm)
{
	vm->share_timeouts++;
	if (vm->share_stalled)
		return;
	vm->share_stalled = true;
	vw_complain(&vm->stall_complaint, VW_LOG_WARN,
		    "publish: shared folder %s/%s of VM %s: its file system does not answer (no "
		    "write back within %llu ms): given up; the VM's channel and the other VMs' "
		    "folders go on, and this folder is written again, with the VM's totals, once "
		    "its file system answers (a dead NFS mount? a stuck virtiofsd?)",
		    p->share_root, vm->uuid, vm->uuid,
		    (unsigned long long)(VW_PUB_SHARE_WAIT_NS / VW_NSEC_PER_MSEC));
}

/* The VM's folder closed: its watch dropped, and its work freed (a frame and perhaps a model
 * line, KiBs, and 600 bytes more), what the folder's next open needs kept in the VM: a gone VM is
 * remembered for the retain period, its folder's work is made again by its next frame. Not while
 * its work is out. */
static void share_closed(struct vw_pub_vm *vm)
{
	struct vw_pub_share_job *j = vm->share_job;

	vw_pub_share_done(&j->share);
	vm->share_kept = j->share.kept;
	vm->share_wd = -1;
	vw_pub_share_job_free(j);
	vm->share_job = NULL;
}

/* The VM's folder work, made with what its folder kept where it has none: NULL when the share
 * root is not open, or out of memory. */
static struct vw_pub_share_job *share_job(struct vw_publisher *p, struct vw_pub_vm *vm)
{
	if (!vm->share_job && p->share_pool &&
	    (vm->share_job = vw_pub_share_job_new(p->share_pool, vm->uuid, p->share_ifd)))
		vm->share_job->share.kept = vm->share_kept;
	return vm->share_job;
}

/* What the folder's work did, once back: counted and said here, on the publisher's thread. */
void vw_pub_vm_share_collect(struct vw_publisher *p, struct vw_pub_vm *vm)
{
	struct vw_pub_share_work *w;
	int r;

	if (!vm->share_job || !vw_pub_share_collect(vm->share_job))
		return;
	w = &vm->share_job->work;
	vm->share_wd = vm->share_job->share.wd;
	if (vm->share_stalled) {
		vm->share_stalled = false;
		vw_release(&vm->stall_complaint, VW_LOG_INFO,
			   "publish: shared folder %s/%s of VM %s: its file system answers again",
			   p->share_root, vm->uuid, vm->uuid);
	}
	if (w->check_export && !vm->share_export_due && vm->share_export)
		export_checked(p, vm, w->export_r);
	r = w->r;
	if (w->write && w->why < VW_PUB_FRAME__COUNT)
		p->share_frames[w->why]++;
	if (w->model_len && w->model_r == 0 && w->model_len == vm->model_len &&
	    memcmp(w->buf + w->frame_len, vm->model_line, vm->model_len) == 0)
		vm->model_share_due = false; /* (not when a newer model came meanwhile) */
	else if (w->model_len && w->model_r != -EAGAIN)
		vw_complain(&vm->share_complaint, VW_LOG_WARN,
			    "publish: shared folder of %s: model.json: %s", vm->uuid,
			    strerror(-w->model_r));
	if (w->write && r < 0) {
		vm->share_errors++;
		vw_complain(&vm->share_complaint, VW_LOG_WARN, "publish: shared folder of %s: %s",
			    vm->uuid, strerror(-r));
	} else if (w->write && w->why != VW_PUB_FRAME_UNREAD) {
		vm->share_writes++;
		vm->share_ok_unix_ns = vw_pub_unix_ns();
		vw_release(&vm->share_complaint, VW_LOG_INFO,
			   "publish: shared folder of %s written again", vm->uuid);
	}
	*w = (struct vw_pub_share_work){ .buf = w->buf, .cap = w->cap };
	if (vm->share_close_due) {
		share_closed(vm);
		vm->share_close_due = false;
	}
}

/* Hand the work over (the folder's watch's news first; the last work collected): 0, -EBUSY
 * (the last is still out), -errno. queue: a round's, its worker woken by the round's end. */
static int share_submit(struct vw_pub_vm *vm, bool queue)
{
	struct vw_pub_share_job *j = vm->share_job;
	struct vw_pub_share_work *w = &j->work;

	if (vm->share_ignored_wd >= 0 && vm->share_ignored_wd == j->share.wd)
		vw_pub_share_unwatched(&j->share);
	vm->share_ignored_wd = -1;
	if (vm->share_opened)
		vw_pub_share_opened(&j->share, vm->share_opened_ns);
	vm->share_opened = false;
	if (vm->share_export_due) {
		w->check_export = true;
		snprintf(w->export_dir, sizeof(w->export_dir), "%s", vm->share_export);
		w->export_ro = vm->share_export_ro;
		w->export_pid = vm->share_export_pid;
		vm->share_export_due = false;
	}
	return queue ? vw_pub_share_queue(j) : vw_pub_share_submit(j);
}

/* The round's frame, its energy_uj files, and model.json when due, handed to the folder's work;
 * a folder whose last work is still out is not written this round (counted: share_stall). */
void vw_pub_vm_share_frame(struct vw_publisher *p, struct vw_pub_vm *vm,
			   const struct vw_host_frame *f, const char *buf, size_t len,
			   uint64_t now_ns)
{
	struct vw_pub_share_work *w;
	size_t need = len + (vm->model_share_due ? vm->model_len : 0);
	int r;

	vw_pub_vm_share_collect(p, vm);
	if (!share_job(p, vm)) {
		vm->share_errors++;
		vw_complain(&vm->share_complaint, VW_LOG_WARN,
			    "publish: shared folder of %s: out of memory", vm->uuid);
		return;
	}
	w = &vm->share_job->work;
	if (vw_pub_share_out(vm->share_job)) {
		share_stall(p, vm);
		return;
	}
	if (need > w->cap) {
		char *b = realloc(w->buf, need);

		if (!b) {
			vm->share_errors++;
			return;
		}
		w->buf = b;
		w->cap = need;
	}
	memcpy(w->buf, buf, len);
	w->frame_len = len;
	w->model_len = vm->model_share_due ? vm->model_len : 0;
	if (w->model_len)
		memcpy(w->buf + len, vm->model_line, vm->model_len);
	memset(w->have, 0, sizeof(w->have));
	w->zones = 0;
	for (size_t i = 0; i < f->n_zones; i++) {
		const struct vw_proto_zone *z = &f->zones[i];
		int k = z->zone == VW_ZONE_PACKAGE ? VW_PUB_RAPL_PACKAGE
			: z->zone == VW_ZONE_DRAM  ? VW_PUB_RAPL_DRAM
						   : -1;

		w->zones |= 1u << z->zone;
		if (k < 0)
			continue;
		w->have[k] = true;
		w->energy_uj[k] = vw_energy_add(z->idle_uj, z->active_uj);
	}
	w->now_ns = now_ns;
	w->max_gap_ns = max_gap_ns(p);
	w->max_range_uj = p->max_range_uj;
	w->write = true;
	r = share_submit(vm, true); /* (every publish_vm() is followed by the round's end) */
	if (r < 0) {
		w->write = false;
		vm->share_errors++;
		vw_complain(&vm->share_complaint, VW_LOG_WARN, "publish: shared folder of %s: %s",
			    vm->uuid, strerror(-r));
	}
}

/*
 * The VM goes: its folder closed once the work notes the folder's time as left
 * (vw_pub_share_leave(); waited for with the round's or the update's other work:
 * vw_pub_vm_share_round_end()), or, while earlier work is out, when that is back
 * (vw_pub_vm_share_collect()).
 */
void vw_pub_vm_share_close(struct vw_publisher *p, struct vw_pub_vm *vm)
{
	int r;

	if (!vm->share_job)
		return;
	vw_pub_vm_share_collect(p, vm);
	if (!vm->share_job)
		return; /* closed by that (an earlier close waited for its work) */
	vm->share_close_due = true;
	vm->share_job->work.leave = true;
	if (vw_pub_share_out(vm->share_job) || vm->share_job->share.dirfd >= 0)
		r = share_submit(vm, false);
	else
		r = -ENOENT;
	if (r < 0) {
		vm->share_job->work.leave = false;
		if (r != -EBUSY) { /* never opened, or no worker: closed now */
			if (vm->share_job->share.dirfd < 0)
				vw_pub_share_leave(&vm->share_job->share); /* (not known) */
			share_closed(vm);
			vm->share_close_due = false;
		}
	}
}

/*
 * A gone VM's folder removed by its work, waited for VW_PUB_SHARE_WAIT_NS at most: -EBUSY when
 * earlier work is still out, -ETIMEDOUT when this is not back by then (its file system does not
 * answer: the removal goes on, or not, without us), else vw_pub_share_remove()'s answer.
 */
int vw_pub_vm_share_remove(struct vw_publisher *p, struct vw_pub_vm *vm)
{
	struct vw_pub_share_work *w;
	int r;

	vw_pub_vm_share_collect(p, vm);
	if (!share_job(p, vm))
		return -ENOMEM;
	w = &vm->share_job->work;
	w->remove = true;
	r = share_submit(vm, false);
	if (r < 0) {
		w->remove = false;
		return r;
	}
	vw_pub_share_wait(p->share_pool, VW_PUB_SHARE_WAIT_NS);
	if (vw_pub_share_give_up(vm->share_job) || !vw_pub_share_collect(vm->share_job))
		return -ETIMEDOUT;
	r = w->r;
	*w = (struct vw_pub_share_work){ .buf = w->buf, .cap = w->cap };
	return r;
}

/* After a round (or an update that closed folders): the work handed over waited for,
 * VW_PUB_SHARE_WAIT_NS at most; what is not back by then is given up on (its VM's folder
 * stalled, counted), the rest collected. */
void vw_pub_vm_share_round_end(struct vw_publisher *p)
{
	if (!p->share_pool)
		return;
	vw_pub_share_wait(p->share_pool, VW_PUB_SHARE_WAIT_NS);
	for (size_t i = 0; i < p->n_vms; i++) {
		struct vw_pub_vm *vm = p->vms[i];

		if (vm->share_job && vw_pub_share_give_up(vm->share_job))
			share_stall(p, vm);
		else
			vw_pub_vm_share_collect(p, vm);
	}
}

/* The root open: the folders' pool working in it (each VM's folder work made by its next
 * frame). */
static int share_root_up(struct vw_publisher *p, int fd)
{
	struct vw_pub_share_pool *pool = vw_pub_share_pool_new(fd, p->share_root, p->procfs_fd);
	int r = -errno;

	if (!pool) {
		close(fd);
		return r;
	}
	p->share_fd = fd;
	p->share_pool = pool;
	return 0;
}

int vw_pub_share_root_open(struct vw_publisher *p, uint64_t timeout_ns, bool say_errors)
{
	bool fresh = !p->share_root_open;
	int r;

	if (!p->share_root || p->share_fd >= 0)
		return 0;
	if (fresh && !(p->share_root_open = vw_pub_root_open_start(p->share_root)))
		return -errno;
	r = vw_pub_root_open_wait(p->share_root_open, fresh ? timeout_ns : 0);
	if (r == -EINPROGRESS) {
		if (!p->share_root_stalled)
			vw_complain(&p->share_root_complaint, VW_LOG_WARN,
				    "publish: share root %s: its file system does not answer (no "
				    "open within %llu ms): the VMs' shared folders are off, their "
				    "channels go on; it is opened again each round, and the folders "
				    "written, with the VMs' totals, once it answers. A dead NFS mount? "
				    "A stuck virtiofsd or FUSE daemon? Mend or unmount it (umount -l), "
				    "or set --passthrough.share-root to a folder that answers",
				    p->share_root,
				    (unsigned long long)(VW_PUB_SHARE_WAIT_NS / VW_NSEC_PER_MSEC));
		p->share_root_stalled = true;
		return r;
	}
	vw_pub_root_open_free(p->share_root_open);
	p->share_root_open = NULL;
	r = r >= 0 ? share_root_up(p, r) : r;
	if (r < 0) {
		if (say_errors)
			vw_complain(&p->share_root_complaint, VW_LOG_WARN,
				    "publish: open share root %s: %s: the VMs' shared folders stay "
				    "off, tried again each round",
				    p->share_root, strerror(-r));
		return r;
	}
	p->share_root_stalled = false;
	vw_release(&p->share_root_complaint, VW_LOG_INFO,
		   "publish: share root %s answers: the VMs' shared folders are written", p->share_root);
	return 0;
}

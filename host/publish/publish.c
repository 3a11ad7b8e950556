/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The publisher: per-VM accumulation, the jittered host-driven schedule, rounding, and the
 * frame each VM gets (its own numbers only), handed to the VM's channel and shared folder while
 * this process holds the VM's lock.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/random.h>
#include <unistd.h>

#include "energy.h"
#include "fileio.h"
#include "proto.h"
#include "publish_priv.h"
#include "selfstats.h"

#define PUB_DEFAULT_RETAIN_NS (3600 * VW_NSEC_PER_SEC)
#define PUB_MAX_RETAINED 4096 /* vanished VMs remembered at most */
#define PUB_EPOLL_BATCH 64

_Static_assert(VW_PUBLISH_SHARE_REASONS == VW_PUB_FRAME__COUNT, "one count per reason");

const char *vw_publisher_share_reason(size_t i, bool *ret_skipped)
{
	if (ret_skipped)
		*ret_skipped = i == VW_PUB_FRAME_UNREAD;
	return vw_pub_frame_why_name((enum vw_pub_frame_why)i);
}

static uint64_t random_u64(void)
{
	uint64_t v = 0;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v))
		v = vw_now_ns() ^ ((uint64_t)getpid() << 32);
	return v ? v : 1;
}

/* splitmix64 */
static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static int check_opts(const struct vw_publish_opts *o)
{
	if (o->period_ns && (o->period_ns < VW_PUBLISH_MIN_PERIOD_NS ||
			     o->period_ns / VW_NSEC_PER_MSEC > VW_PROTO_MAX_INTERVAL_MS))
		return -EINVAL;
	if (!isfinite(o->jitter) || o->jitter < 0 || o->jitter > VW_PUBLISH_MAX_JITTER)
		return -EINVAL;
	if (!isfinite(o->power_step_w) || o->power_step_w < 0 ||
	    (o->power_step_w > 0 && o->power_step_w < 0.001))
		return -EINVAL;
	return 0;
}

static bool build_frame(const struct vw_publisher *p, const struct vw_pub_vm *vm,
			struct vw_host_frame *f);

/* The encoder refuses what a guest would reject (epoch, source, model): try a dummy frame. */
static bool opts_encodable(const struct vw_publisher *p)
{
	struct vw_pub_vm vm = { .uuid = "00000000-0000-0000-0000-000000000000" };
	struct vw_host_frame f;
	char buf[VW_PROTO_MAX_FRAME];
	size_t len;

	vm.z[VW_ZONE_PACKAGE].listed = true;
	return build_frame(p, &vm, &f) && vw_proto_encode_host(&f, buf, sizeof(buf), &len) == 0;
}

struct vw_publisher *vw_publisher_new(const struct vw_publish_opts *o)
{
	struct vw_publisher *p;
	int r = check_opts(o);

	if (r < 0) {
		errno = -r;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->epfd = p->share_fd = p->lock_fd = p->procfs_fd = p->lock_wd = p->share_ifd = -1;
	p->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC); /* -1: identities checked each round */
	p->watch_dirty = true;
	p->period_ns = o->period_ns ? o->period_ns : VW_PUBLISH_DEFAULT_PERIOD_NS;
	p->jitter = o->jitter > 0 ? o->jitter : VW_PUBLISH_DEFAULT_JITTER;
	p->energy_step_uj = o->energy_step_uj ? o->energy_step_uj : VW_PUBLISH_DEFAULT_ENERGY_STEP_UJ;
	p->power_step_w = o->power_step_w > 0 ? o->power_step_w : VW_PUBLISH_DEFAULT_POWER_STEP_W;
	p->max_range_uj = o->max_energy_range_uj ? o->max_energy_range_uj
						 : VW_PUBLISH_DEFAULT_MAX_RANGE_UJ;
	p->epoch = o->epoch ? o->epoch : random_u64() >> 1; /* the wire takes int64 */
	p->rng = o->seed ? o->seed : random_u64();
	p->retain_ns = o->retain_ns ? o->retain_ns : PUB_DEFAULT_RETAIN_NS;
	if (snprintf(p->source, sizeof(p->source), "%s", o->source ? o->source : "rapl") >=
		    (int)sizeof(p->source) ||
	    snprintf(p->model, sizeof(p->model), "%s", o->model ? o->model : "") >=
		    (int)sizeof(p->model) ||
	    !opts_encodable(p)) {
		errno = EINVAL;
		goto fail;
	}
	p->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (p->epfd < 0)
		goto fail;
	if (o->share_root) {
		if (!(p->share_root = strdup(o->share_root)))
			goto fail;
		/* -1: no folder is watched, every frame.json is written every round */
		p->share_ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
		if (p->share_ifd < 0)
			vw_warn("publish: no inotify for the shared folders (%m): each VM's frame.json "
				"is written every round, read or not");
	}
	if (o->lock_dir && !(p->lock_dir = strdup(o->lock_dir)))
		goto fail;
	if (o->procfs_root) {
		p->procfs_fd = vw_root_open(o->procfs_root); /* else the lock file names holders */
		if (!(p->procfs_root = strdup(o->procfs_root)))
			goto fail;
	}
	r = vw_pub_share_root_open(p, VW_PUB_SHARE_WAIT_NS, false); /* its file system may hang */
	if (r < 0 && r != -EINPROGRESS) {
		errno = -r;
		vw_error("publish: open share root %s: %m", o->share_root);
		goto fail;
	}
	return p;
fail:
	r = errno;
	vw_publisher_free(p);
	errno = r;
	return NULL;
}

#define CHANNEL_PATH_MAX 255 /* bytes of a channel's path kept (struct vw_vm_energy's) */

static const char *chan_path(const struct vw_pub_vm *vm)
{
	return vm->channel_path ? vm->channel_path : "";
}

static void vm_close(struct vw_publisher *p, struct vw_pub_vm *vm)
{
	if (!vm->live)
		return;
	vw_pub_chan_done(&vm->chan, p->epfd);
	vw_pub_vm_share_close(p, vm);
	vw_pub_lock_drop(&vm->lock); /* last: nothing of ours reaches the VM any more */
	vm->live = false;
	vm->model_share_due = vm->model_line != NULL; /* the folder is written again when back */
}

static void vm_free(struct vw_publisher *p, struct vw_pub_vm *vm)
{
	vm_close(p, vm);
	vw_pub_share_job_free(vm->share_job); /* one out: freed by its worker when back */
	free(vm->model_line);
	free(vm->channel_path);
	free(vm->share_export);
	free(vm);
}

void vw_publisher_free(struct vw_publisher *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n_vms; i++)
		vm_free(p, p->vms[i]);
	free(p->vms);
	vw_pub_share_pool_free(p->share_pool);
	vw_pub_root_open_free(p->share_root_open);
	vw_closep(&p->epfd);
	vw_closep(&p->share_fd);
	vw_closep(&p->lock_fd);
	vw_closep(&p->procfs_fd);
	vw_closep(&p->ifd);
	vw_closep(&p->share_ifd);
	free(p->share_root);
	free(p->lock_dir);
	free(p->procfs_root);
	free(p);
}

static struct vw_pub_vm *vm_find(const struct vw_publisher *p, const char *uuid)
{
	for (size_t i = 0; i < p->n_vms; i++)
		if (strcmp(p->vms[i]->uuid, uuid) == 0)
			return p->vms[i];
	return NULL;
}

static struct vw_pub_vm *vm_add(struct vw_publisher *p, const char *uuid)
{
	struct vw_pub_vm *vm;

	if (vw_array_grow((void **)&p->vms, sizeof(*p->vms), p->n_vms, &p->cap_vms) < 0)
		return NULL;
	vm = calloc(1, sizeof(*vm));
	if (!vm)
		return NULL;
	memcpy(vm->uuid, uuid, sizeof(vm->uuid));
	vm->share_wd = vm->share_ignored_wd = -1;
	vw_pub_lock_init(&vm->lock);
	p->vms[p->n_vms++] = vm;
	return vm;
}

/* Open the VM's channel and folder once its lock is ours: 0 (open or waiting), -errno. */
static int vm_open(struct vw_publisher *p, struct vw_pub_vm *vm)
{
	struct vw_publish_vm_stats was;
	int r;

	if (vm->live || !vw_pub_vm_lock(p, vm))
		return 0;
	was = vm->chan.st;
	r = vw_pub_chan_init(&vm->chan, p->ifd);
	if (r < 0) {
		vw_pub_lock_drop(&vm->lock);
		return r;
	}
	/* A VM back under its UUID (restarted, or its lock ours again) keeps its delivery
	 * counters: they are counters, never going back (virtwatt_vm_passthrough_*). */
	vm->chan.st = (struct vw_publish_vm_stats){
		.published = was.published, .sent = was.sent, .replaced = was.replaced,
		.connects = was.connects, .disconnects = was.disconnects,
		.connect_errors = was.connect_errors, .send_errors = was.send_errors,
		.peer_rejected = was.peer_rejected,
		.sends_refused = was.sends_refused,
		.rx_bytes = was.rx_bytes, .rx_bad = was.rx_bad, .hellos = was.hellos,
		.last_ok_unix_ns = was.last_ok_unix_ns,
	};
	vm->chan.procfs_root = p->procfs_root;
	vm->chan.peer_rejected_total = &p->peer_rejected;
	vw_pub_chan_set_qemu(&vm->chan, vm->qemu_pid, vm->qemu_start, p->now_ns);
	vm->live = true;
	vm->early = true;
	vw_pub_chan_set_path(&vm->chan, p->epfd, chan_path(vm), p->now_ns);
	return 0;
}

/*
 * A listed VM's channel and QEMU as its source lists them (path "": none), and the VM opened when
 * it is not live (its lock taken). A live VM whose channel is new (another path, or a new QEMU
 * behind it: started, restored) is connected at once (publish_chan.c: its eager retries) and
 * gets its frame at the next tick, as a VM just live does (publish_early): a restored VM's path
 * comes a listing after its QEMU (libvirt's answer), when the round may be a period away.
 */
static int vm_channel(struct vw_publisher *p, struct vw_pub_vm *vm, const char *path,
		      uint32_t qemu_pid, uint64_t qemu_start)
{
	bool new_path = strncmp(chan_path(vm), path, CHANNEL_PATH_MAX) != 0;
	bool new_qemu = vm->qemu_pid != (pid_t)qemu_pid || vm->qemu_start != qemu_start;

	if (new_path) {
		/* Sized to it: most VMs' are ~80 bytes, or none. */
		char *copy = path[0] ? strndup(path, CHANNEL_PATH_MAX) : NULL;

		/* (Out of memory: the old one, until the next round.) */
		if (copy || !path[0]) {
			free(vm->channel_path);
			vm->channel_path = copy;
		}
	}
	vm->qemu_pid = (pid_t)qemu_pid;
	vm->qemu_start = qemu_start;
	if (!vm->live)
		return vm_open(p, vm); /* (early: its frame at the next tick) */
	vw_pub_chan_set_qemu(&vm->chan, vm->qemu_pid, vm->qemu_start, p->now_ns);
	vw_pub_chan_set_path(&vm->chan, p->epfd, chan_path(vm), p->now_ns);
	if ((new_path || new_qemu) && vm->chan.path[0]) {
		vm->early = true;
		vw_pub_chan_drop_unsent(&vm->chan); /* the early frame is newer */
	}
	return 0;
}

/* Add the caller's interval to the VM's accumulators: the only place on the VM's path where
 * intervals become the counters its guest reads (one per epoch, restarted at the lock). */
static void vm_take_zones(struct vw_pub_vm *vm, const struct vw_vm_energy *in)
{
	for (size_t z = 0; z < VW_ZONE__WIRE_COUNT; z++)
		vm->z[z].listed = false;
	for (size_t i = 0; i < in->n_zones && i < VW_ZONE__WIRE_COUNT; i++) {
		const struct vw_zone_owner_energy *iz = &in->zones[i];
		struct vw_pub_zone *z;

		if ((unsigned)iz->zone >= VW_ZONE__WIRE_COUNT || vm->z[iz->zone].listed)
			continue;
		z = &vm->z[iz->zone];
		z->acc_idle = vw_energy_add(z->acc_idle, iz->idle_uj);
		z->acc_active = vw_energy_add(z->acc_active, iz->active_uj);
		z->idle_w = iz->idle_w;
		z->active_w = iz->active_w;
		z->present = z->listed = true;
	}
}

/* update_one(p, &vms[i], i): the VMs come in the same order round after round, so entry i is
 * looked at first. */
static int update_one(struct vw_publisher *p, const struct vw_vm_energy *in, size_t hint)
{
	struct vw_pub_vm *vm;
	int r;

	if (!vw_proto_uuid_valid(in->uuid)) {
		vw_complain(&p->bad_uuid, VW_LOG_WARN, "publish: refusing a VM with an invalid UUID");
		return -EINVAL;
	}
	vm = hint < p->n_vms && strcmp(p->vms[hint]->uuid, in->uuid) == 0 ? p->vms[hint]
									  : vm_find(p, in->uuid);
	if (vm && vm->listed)
		return 0; /* listed twice: the first entry wins */
	if (!vm) {
		vm = vm_add(p, in->uuid);
		if (!vm)
			return -ENOMEM;
	}
	vm->listed = true;
	vm->gone_ns = 0;
	r = vm_channel(p, vm, in->channel_path, in->qemu_pid, in->qemu_start_time);
	if (vm->live && p->share_fd >= 0)
		vw_pub_vm_check_export(vm, in);
	vm_take_zones(vm, in);
	return r;
}

int vw_publisher_set_channel(struct vw_publisher *p, const char *uuid, const char *path,
			     uint32_t qemu_pid, uint64_t qemu_start)
{
	struct vw_pub_vm *vm = uuid ? vm_find(p, uuid) : NULL;

	if (!vm || !vm->listed)
		return -ENOENT;
	return vm_channel(p, vm, path ? path : "", qemu_pid, qemu_start);
}

/*
 * A VM forgotten: its shared folder, when this process wrote it, is removed (its last frame went
 * out when it was last listed, retain_ns ago or more), and its lock file, when this process held
 * it, both under its lock taken again: a process that took the VM over since keeps both. So a
 * hypervisor's folders and lock files are those of its VMs of the last retain_ns, not of every
 * VM since boot (tmpfs: memory).
 */
static void vm_remove_files(struct vw_publisher *p, struct vw_pub_vm *vm)
{
	struct vw_pub_lock_holder h = { 0 };
	bool share = p->share_fd >= 0 && vm->share_writes > 0;
	int r;

	if (vm->live || (!share && !vm->lock_ours_once))
		return;
	if (p->lock_dir && (vw_pub_lock_dir_open(p) < 0 ||
			    vw_pub_lock_take(&vm->lock, p->lock_fd, vm->uuid, p->epoch, -1, &h) < 0))
		return; /* published elsewhere now, or no lock: folder and lock file are kept */
	r = share ? vw_pub_vm_share_remove(p, vm) : 0;
	if (r < 0)
		vw_debug("publish: shared folder of %s, gone: not removed: %s", vm->uuid,
			 strerror(-r));
	if (!p->lock_dir)
		return;
	if (r == -EBUSY || r == -ETIMEDOUT) { /* its file system does not answer: kept */
		vw_pub_lock_drop(&vm->lock);
		return;
	}
	r = vw_pub_lock_remove(&vm->lock, p->lock_fd, vm->uuid);
	if (r < 0) /* -EACCES: a directory another user owns; the file stays until boot */
		vw_debug("publish: lock file of %s, gone: not removed: %s", vm->uuid, strerror(-r));
}

/* Forget vanished VMs after retain_ns, and the first listed beyond PUB_MAX_RETAINED. */
static void prune(struct vw_publisher *p)
{
	size_t gone = 0, j = 0;

	for (size_t i = 0; i < p->n_vms; i++)
		gone += !p->vms[i]->listed;
	for (size_t i = 0; i < p->n_vms; i++) {
		struct vw_pub_vm *vm = p->vms[i];
		bool timely = p->now_ns - vm->gone_ns >= p->retain_ns;
		bool expired = !vm->listed && (timely || gone > PUB_MAX_RETAINED);

		if (expired) {
			p->evictions += !timely;
			gone--;
			vm_remove_files(p, vm);
			vm_free(p, vm);
		} else {
			p->vms[j++] = vm;
		}
	}
	p->n_vms = j;
}

int vw_publisher_update(struct vw_publisher *p, const struct vw_vm_energy *vms, size_t n)
{
	int ret = 0;

	for (size_t i = 0; i < p->n_vms; i++)
		p->vms[i]->listed = false;
	for (size_t i = 0; i < n; i++) {
		int r = update_one(p, &vms[i], i);

		if (r < 0 && ret == 0)
			ret = r;
	}
	for (size_t i = 0; i < p->n_vms; i++) {
		struct vw_pub_vm *vm = p->vms[i];

		if (!vm->listed && vm->live) {
			vm_close(p, vm);
			vm->gone_ns = p->now_ns;
		}
	}
	/* the folders of the VMs gone: closed (1 s at most for them all) */
	vw_pub_vm_share_round_end(p);
	prune(p);
	return ret;
}

/* Down to the step: a floor is monotonic, so rounded counters never fall. */
static uint64_t round_energy(const struct vw_publisher *p, uint64_t uj)
{
	uj = VW_MIN(uj, VW_PROTO_MAX_ENERGY_UJ); /* saturate where the wire stops */
	return uj - uj % p->energy_step_uj;
}

static double round_power(const struct vw_publisher *p, double w)
{
	double inv = 1.0 / p->power_step_w;

	if (!isfinite(w) || w <= 0)
		return 0;
	w = VW_MIN(w, VW_PROTO_MAX_WATTS);
	/* 0.1 W steps: k / 10 is the double nearest k tenths; k * 0.1 is not always. */
	if (fabs(inv - nearbyint(inv)) < 1e-9)
		return nearbyint(w * inv) / nearbyint(inv);
	return nearbyint(w / p->power_step_w) * p->power_step_w;
}

/* The VM's frame: its own zones only, rounded. False when it has nothing to say. */
static bool build_frame(const struct vw_publisher *p, const struct vw_pub_vm *vm,
			struct vw_host_frame *f)
{
	*f = (struct vw_host_frame){
		.version = VW_PROTO_VERSION,
		.epoch = p->epoch,
		.seq = p->seq,
		.interval_ms = p->period_ns / VW_NSEC_PER_MSEC,
	};
	memcpy(f->vm_uuid, vm->uuid, sizeof(f->vm_uuid));
	memcpy(f->source, p->source, sizeof(f->source));
	memcpy(f->model, p->model, sizeof(f->model));
	for (size_t z = 0; z < VW_ZONE__WIRE_COUNT; z++) {
		const struct vw_pub_zone *pz = &vm->z[z];

		if (!pz->listed)
			continue;
		f->zones[f->n_zones++] = (struct vw_proto_zone){
			.zone = (enum vw_zone)z,
			.idle_uj = round_energy(p, pz->acc_idle),
			.active_uj = round_energy(p, pz->acc_active),
			.idle_w = round_power(p, pz->idle_w),
			.active_w = round_power(p, pz->active_w),
		};
	}
	return f->n_zones > 0;
}

/* Our lock file removed or replaced (someone cleaned the directory): another process may hold
 * the new one, so stop, and take it again (or be refused) on the next tick. */
static bool lock_lost(struct vw_publisher *p, struct vw_pub_vm *vm)
{
	if (!p->lock_dir || (p->lock_wd >= 0 && !p->watch_dirty))
		return false;
	p->identity_checks++;
	if (vw_pub_lock_still_ours(&vm->lock, p->lock_fd, vm->uuid))
		return false;
	vw_warn("passthrough: VM %s: its lock file %s/%s.lock was removed or replaced; not "
		"publishing it until the lock is ours again (never delete a running instance's "
		"lock files)",
		vm->uuid, p->lock_dir, vm->uuid);
	vm_close(p, vm);
	vm->lock_err = 0; /* try again at once */
	return true;
}

/* The frame, and the VM's model line after it when due: new, a reconnected guest's (nothing
 * delivered on this connection yet), or every VW_PUBLISH_MODEL_RESEND rounds. */
static void offer_with_model(struct vw_publisher *p, struct vw_pub_vm *vm, const char *frame,
			     size_t len, uint64_t now_ns)
{
	char buf[VW_PUB_CHAN_MAX_OFFER];
	bool due = vm->model_line && (++vm->model_rounds >= VW_PUBLISH_MODEL_RESEND ||
				      !vm->chan.delivered);

	if (!due) {
		(void)vw_pub_chan_offer(&vm->chan, p->epfd, frame, len, now_ns);
		return;
	}
	memcpy(buf, frame, len);
	memcpy(buf + len, vm->model_line, vm->model_len);
	if (vw_pub_chan_offer(&vm->chan, p->epfd, buf, len + vm->model_len, now_ns) == 0)
		vm->model_rounds = 0;
}

static void publish_vm(struct vw_publisher *p, struct vw_pub_vm *vm, uint64_t now_ns)
{
	struct vw_host_frame f;
	char buf[VW_PROTO_MAX_FRAME];
	size_t len;
	int r;

	if (lock_lost(p, vm) || !build_frame(p, vm, &f))
		return;
	r = vw_proto_encode_host(&f, buf, sizeof(buf), &len);
	if (r < 0) {
		vw_complain(&vm->chan.complaint, VW_LOG_WARN, "publish: encode frame for %s: %s",
			    vm->uuid, strerror(-r));
		return;
	}
	if (vm->chan.path[0]) {
		if (vm->chan.wd < 0 || p->watch_dirty) {
			p->identity_checks += vm->chan.fd >= 0 && !vm->chan.connecting;
			vw_pub_chan_check_identity(&vm->chan, p->epfd, now_ns);
		}
		vw_pub_chan_poll(&vm->chan, p->epfd, now_ns);
		offer_with_model(p, vm, buf, len, now_ns);
	}
	if (p->share_pool)
		vw_pub_vm_share_frame(p, vm, &f, buf, len, now_ns);
	vm->published = true;
}

/*
 * The VMs live since the last round (started, restored from a save, migrated in, their lock
 * ours again) get their frame at this tick rather than at the next round, up to a period
 * later: a restored guest's clock runs on from its last frame, and its staleness window
 * (3 intervals) was spent by the time the round came (virsh restore: the first frame 3.3 s
 * after, the guest on its model meanwhile; tests/e2e/lifecycle.py). The frame takes a seq of
 * its own (the round's + 1), so it is newer than any the guest saw; the other VMs' next frame
 * skips it, a gap PROTOCOL.md §3 allows.
 */
static void publish_early(struct vw_publisher *p, uint64_t now_ns)
{
	bool any = false;

	for (size_t i = 0; i < p->n_vms; i++) {
		struct vw_pub_vm *vm = p->vms[i];

		if (!vm->early || !vm->listed || !vm->live)
			continue;
		if (!any) {
			p->seq++;
			vw_pub_watch_drain(p);
			any = true;
		}
		publish_vm(p, vm, now_ns);
		vm->early = false;
	}
	if (any)
		vw_pub_vm_share_round_end(p);
}

/* period +- jitter x period, uniformly; never under the 1 s floor. */
static uint64_t next_interval(struct vw_publisher *p)
{
	double u = (double)(rng_next(&p->rng) >> 11) / (double)(1ULL << 53); /* [0, 1) */
	double ns = (double)p->period_ns * (1.0 + p->jitter * (2.0 * u - 1.0));

	return ns < (double)VW_PUBLISH_MIN_PERIOD_NS ? VW_PUBLISH_MIN_PERIOD_NS : (uint64_t)ns;
}

static int service_sockets(struct vw_publisher *p, uint64_t now_ns)
{
	struct epoll_event ev[PUB_EPOLL_BATCH];

	/* Level-triggered: what is left over is reported again on the next tick. */
	for (size_t batch = 0; batch <= p->n_vms / PUB_EPOLL_BATCH; batch++) {
		int n = epoll_wait(p->epfd, ev, PUB_EPOLL_BATCH, 0);

		if (n < 0)
			return errno == EINTR ? 0 : -errno;
		for (int i = 0; i < n; i++)
			vw_pub_chan_event(ev[i].data.ptr, p->epfd, ev[i].events, now_ns);
		if (n < PUB_EPOLL_BATCH)
			break;
	}
	return 0;
}

int vw_publisher_tick(struct vw_publisher *p, uint64_t now_ns, bool *ret_published)
{
	bool due = !p->started || now_ns >= p->next_due_ns;
	int r;

	if (ret_published)
		*ret_published = false;
	p->now_ns = now_ns;
	r = service_sockets(p, now_ns);
	for (size_t i = 0; i < p->n_vms; i++) {
		struct vw_pub_vm *vm = p->vms[i];
		int e = vm->listed && !vm->live ? vm_open(p, vm) : 0; /* a lock refused before */

		vw_pub_vm_share_collect(p, vm);
		if (e < 0 && r == 0)
			r = e;
		if (vm->listed && vm->live)
			vw_pub_chan_poll(&vm->chan, p->epfd, now_ns);
	}
	if (!due) {
		if (p->started)
			publish_early(p, now_ns);
		return r;
	}
	/* Rounds missed while no VM asked for a wake-up (vw_publisher_next_wake()) are counted
	 * on the schedule they had, so seq keeps the pace it always had; a VM's own rounds are
	 * never skipped (a late tick with VMs is one round, as before). */
	while (p->started && p->published_none &&
	       now_ns - p->next_due_ns >= VW_PUBLISH_MIN_PERIOD_NS) {
		uint64_t gap = next_interval(p); /* never under the floor */

		if (now_ns - p->next_due_ns < gap)
			break;
		p->seq++;
		p->next_due_ns += gap;
	}
	p->seq++;
	vw_pub_watch_drain(p);
	(void)vw_pub_share_root_open(p, VW_PUB_SHARE_WAIT_NS, true); /* while it is not */
	vw_pub_vm_share_drain(p, now_ns);
	p->published_none = true;
	for (size_t i = 0; i < p->n_vms; i++)
		if (p->vms[i]->listed && p->vms[i]->live) {
			publish_vm(p, p->vms[i], now_ns);
			p->vms[i]->early = false;
			p->published_none = false;
		}
	vw_pub_vm_share_round_end(p);
	p->watch_dirty = p->ifd < 0;
	p->next_due_ns = now_ns + next_interval(p);
	p->started = true;
	if (ret_published)
		*ret_published = true;
	return r;
}

uint64_t vw_publisher_next_due(const struct vw_publisher *p)
{
	uint64_t t = p->started ? p->next_due_ns : 0;

	for (size_t i = 0; i < p->n_vms; i++) {
		const struct vw_pub_vm *vm = p->vms[i];

		if (vm->listed && vm->live)
			t = VW_MIN(t, vm->early && p->started ? p->now_ns
							      : vw_pub_chan_next_ns(&vm->chan));
		else if (vm->listed)
			t = VW_MIN(t, vm->lock_retry_ns); /* a refused lock, tried again */
	}
	return t;
}

uint64_t vw_publisher_next_wake(const struct vw_publisher *p)
{
	uint64_t t = UINT64_MAX; /* a round would publish to nobody */

	for (size_t i = 0; i < p->n_vms; i++) {
		const struct vw_pub_vm *vm = p->vms[i];
		uint64_t expiry = vm->gone_ns + p->retain_ns;

		if (vm->listed)
			return vw_publisher_next_due(p);
		/* a vanished VM's retention ends: a tick brings the clock there, for the next
		 * update() to forget it and remove its folder (prune() reads tick()'s clock) */
		if (expiry > p->now_ns)
			t = VW_MIN(t, expiry);
	}
	return t;
}

int vw_publisher_fd(const struct vw_publisher *p)
{
	return p->epfd;
}

uint64_t vw_publisher_seq(const struct vw_publisher *p)
{
	return p->seq;
}

int vw_publisher_set_model(struct vw_publisher *p, const char *uuid, const char *name,
			   const char *body, size_t len)
{
	_cleanup_free_ struct vw_model_frame *m = calloc(1, sizeof(*m));
	struct vw_pub_vm *vm = uuid ? vm_find(p, uuid) : NULL;
	char line[VW_PROTO_MAX_FRAME], *copy;
	size_t n;
	int r;

	if (!vm || !vm->listed)
		return -ENOENT;
	if (!m)
		return -ENOMEM;
	if (!name || !body || len > VW_PROTO_MAX_MODEL)
		return -EINVAL;
	*m = (struct vw_model_frame){ .epoch = p->epoch, .mseq = p->mseq + 1, .body_len = len };
	memcpy(m->vm_uuid, vm->uuid, sizeof(m->vm_uuid));
	if (snprintf(m->name, sizeof(m->name), "%s", name) >= (int)sizeof(m->name))
		return -EINVAL;
	memcpy(m->body, body, len);
	r = vw_proto_encode_model(m, line, sizeof(line), &n);
	if (r < 0)
		return r;
	if (vm->model_line && strcmp(m->sha256, vm->model_sha) == 0)
		return 0; /* the same model: nothing new to say */
	copy = malloc(n);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, line, n);
	free(vm->model_line);
	vm->model_line = copy;
	vm->model_len = n;
	memcpy(vm->model_sha, m->sha256, sizeof(vm->model_sha));
	vm->model_rounds = VW_PUBLISH_MODEL_RESEND; /* with the next frame */
	vm->model_share_due = true;
	p->mseq++;
	return 0;
}

static void vm_stats(const struct vw_publisher *p, const struct vw_pub_vm *vm,
		     struct vw_publish_vm_stats *ret)
{
	*ret = vm->chan.st;
	ret->share_writes = vm->share_writes;
	ret->share_errors = vm->share_errors;
	ret->share_timeouts = vm->share_timeouts;
	ret->share_stalled = vm->share_stalled;
	ret->bytes_held = vw_pub_chan_bytes_held(&vm->chan);
	ret->locked = !p->lock_dir || vw_pub_lock_held(&vm->lock);
	ret->lock_refused = vm->lock_refused;
	ret->lock_holder_pid = vm->lock_holder_pid;
	ret->last_ok_unix_ns = VW_MAX(vm->chan.st.last_ok_unix_ns, vm->share_ok_unix_ns);
	ret->has_channel = vm->channel_path != NULL;
	ret->has_share = p->share_fd >= 0;
	ret->lock_failed = !ret->locked && vm->lock_err && vm->lock_err != -EBUSY;
}

int vw_publisher_vm_stats(const struct vw_publisher *p, const char *uuid,
			  struct vw_publish_vm_stats *ret)
{
	const struct vw_pub_vm *vm = uuid ? vm_find(p, uuid) : NULL;

	if (!vm)
		return -ENOENT;
	vm_stats(p, vm, ret);
	return 0;
}

void vw_publisher_each_vm(const struct vw_publisher *p,
			  void (*fn)(void *ud, const char *uuid,
				     const struct vw_publish_vm_stats *st),
			  void *ud)
{
	for (size_t i = 0; p && i < p->n_vms; i++) {
		struct vw_publish_vm_stats st;

		if (!p->vms[i]->listed)
			continue;
		vm_stats(p, p->vms[i], &st); /* (no lookup by UUID: 100 VMs made it 5,000 strcmp) */
		fn(ud, p->vms[i]->uuid, &st);
	}
}

void vw_publisher_stats(const struct vw_publisher *p, struct vw_publish_stats *ret)
{
	*ret = (struct vw_publish_stats){ .lock_refused = p->lock_refused,
					  .identity_checks = p->identity_checks,
					  .peer_rejected = p->peer_rejected };
	memcpy(ret->share_frames, p->share_frames, sizeof(ret->share_frames));
	ret->share_root = p->share_root != NULL;
	ret->share_root_stalled = p->share_root_stalled;
	for (size_t i = 0; i < p->n_vms; i++) {
		const struct vw_pub_vm *vm = p->vms[i];

		if (vm->listed && vm->live && vm->share_writable > 0)
			ret->share_writable_vms++;
		if (vm->listed && vm->share_stalled)
			ret->share_stalled_vms++;
		if (!vm->listed || vm->live || !vm->lock_err)
			continue;
		if (vm->lock_err == -EBUSY)
			ret->vms_held_elsewhere++;
		else
			ret->vms_lock_failed++;
	}
}

size_t vw_publisher_bytes_held(const struct vw_publisher *p)
{
	size_t n = 0;

	for (size_t i = 0; i < p->n_vms; i++)
		n += vw_pub_chan_bytes_held(&p->vms[i]->chan);
	return n;
}

void vw_publisher_table_stat(const struct vw_publisher *p, struct vw_table_stat *ret)
{
	*ret = (struct vw_table_stat){ .present = true, .entries = p->n_vms,
				       .evictions = p->evictions };
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * VMs from QEMU processes, whoever started them: plain qemu-system-*, OpenStack's and RHEL's
 * /usr/libexec/qemu-kvm, Debian's kvm wrapper, Proxmox, and KubeVirt, whose qemu-kvm runs in a
 * virt-launcher pod with a libvirt of its own that the host cannot reach. Each list() is one scan
 * of <procfs>: command lines (argv[0] decides) and start times.
 *
 * Trust: a command line is its writer's to choose. Only a QEMU of a trusted user (root,
 * --vm.qemu-users: vm_trust.h) names a VM; another user's is an ordinary process, counted, and
 * never takes a UUID from a VM. A trusted user's QEMU in a Kubernetes pod's cgroup and in a PID
 * namespace below the procfs's (a container without hostPID) names a VM only when the pod's
 * metadata says it is KubeVirt's virt-launcher (env->kubevirt_pod): root in any pod can start a
 * process under a QEMU's name, and such a "VM" took its energy out of its pod's. Refused ones
 * are ordinary processes of their pod, counted; one taken stays a VM while it runs.
 *
 * Identity: -uuid when given (libvirt, KubeVirt, Proxmox and OpenStack always pass it); else a
 * stable ID (vw_qemu_stable_id) over the binary, -name, PID, start time and boot ID, so two
 * anonymous VMs of one binary never collide the way Kepler's cmdline-prefix hex IDs do. A VM
 * seen by the previous list() and missing now is reported once as VW_VM_SHUTOFF.
 *
 * Cost. A full scan is at most one per env->procscan_interval_ns (the last list, its QEMUs
 * re-checked by start time, in between). Given the host's process list (env->processes), a full
 * scan reads the command line only of processes it has not classified before under the same
 * PID, start time and comm: new ones, and those that exec'd or renamed themselves (exec sets the
 * comm to the new binary's name; libvirt's QEMU is a fork of libvirtd that exec'd). Without it,
 * every process's.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "log.h"
#include "macro.h"
#include "procfs.h"
#include "vm_index.h"
#include "vm_priv.h"
#include "vm_trust.h"
#include "cgroup_path.h"

/* A process as the last full scan classified it, under the identity it had then. */
struct seen {
	uint32_t pid;
	uint32_t qemu; /* 1 + its index in procscan.qemus; 0: not a QEMU */
	uint64_t start_time;
	char comm[VW_COMM_LEN];
};

/*
 * A VM of the previous list, kept between rounds: what describe() filled in, without the
 * ~2.3 KiB of a struct vw_vm_info's fixed fields that a process scan never fills (channel,
 * share, host devices, owner's names; 231 KiB at 100 VMs). kept_unpack() gives back the very
 * bytes describe() wrote: the tracker compares lists whole (memcmp).
 */
struct kept {
	char uuid[VW_UUID_LEN];
	char pod_uid[VW_UUID_LEN];
	char vmid[sizeof(((struct vw_vm_owner *)0)->vmid)];
	bool xen;
	unsigned vcpus;
	uint32_t qemu_pid;
	uint64_t qemu_start_time;
	bool root_ns; /* its QEMU in the procfs's own PID namespace (not unpacked: the scan's) */
	char *name; /* NULL for "" */
};

struct procscan {
	int procfd;
	struct vw_qemu_starts *starts; /* this round's start times, shared with libvirt's check */
	struct vw_qemu_trust *trust;   /* whose QEMUs name VMs; the others' counted there */
	int (*kubevirt_pod)(void *ud, const char *pod_uid); /* env's: a pod's QEMU is a VM */
	void *kubevirt_pod_ud;
	char boot_id[64];
	struct kept *prev; /* the previous list(), running ones, packed */
	size_t n_prev;
	uint64_t interval_ns;  /* between full scans; 0: every list() */
	uint64_t last_scan_ns;
	int (*processes)(void *ud,
			 void (*each)(void *ctx, uint32_t pid, uint64_t start_time, const char *comm,
				      const char *(*exe)(void *at), void *at),
			 void *ctx);
	void *processes_ud;
	struct seen *seen; /* PID order; empty after a scan without the process list */
	size_t n_seen;
	/* QEMU-named processes new since the last full scan, read one by one and found to be no
	 * VM (an untrusted user's, or not a QEMU by its command line): no full scan for them */
	struct seen *probed;
	size_t n_probed, cap_probed;
	struct vw_qemu_scan qemus; /* the QEMUs of the last scan */
};

static int procscan_open(const struct vw_vm_env *env, void **ret_state)
{
	struct procscan *ps;

	if (env->procfs_fd < 0)
		return -EINVAL;
	ps = calloc(1, sizeof(*ps));
	if (!ps)
		return -ENOMEM;
	ps->procfd = env->procfs_fd;
	ps->starts = env->qemu_starts;
	ps->trust = env->qemu_trust;
	ps->kubevirt_pod = env->kubevirt_pod;
	ps->kubevirt_pod_ud = env->kubevirt_pod_ud;
	ps->interval_ns = env->procscan_interval_ns;
	ps->processes = env->processes;
	ps->processes_ud = env->processes_ud;
	if (vw_read_str_at(ps->procfd, "sys/kernel/random/boot_id", ps->boot_id,
			   sizeof(ps->boot_id)) < 0)
		ps->boot_id[0] = '\0';
	*ret_state = ps;
	return 0;
}

static void kept_free(struct kept *k, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(k[i].name);
	free(k);
}

/* vm, as describe() filled it, packed into k: 0 or -ENOMEM. */
static int kept_pack(const struct vw_vm_info *vm, struct kept *k)
{
	*k = (struct kept){ .xen = strcmp(vm->hypervisor, "xen") == 0,
			    .vcpus = vm->vcpus,
			    .qemu_pid = vm->qemu_pid,
			    .qemu_start_time = vm->qemu_start_time };
	memcpy(k->uuid, vm->uuid, sizeof(k->uuid));
	memcpy(k->pod_uid, vm->pod_uid, sizeof(k->pod_uid));
	memcpy(k->vmid, vm->owner.vmid, sizeof(k->vmid));
	if (vm->name[0]) {
		k->name = strndup(vm->name, sizeof(vm->name) - 1);
		if (!k->name)
			return -ENOMEM;
	}
	return 0;
}

/* k back into the struct describe() filled, byte for byte. */
static void kept_unpack(const struct kept *k, struct vw_vm_info *vm)
{
	memset(vm, 0, sizeof(*vm));
	memcpy(vm->uuid, k->uuid, sizeof(vm->uuid));
	if (k->name)
		memcpy(vm->name, k->name, strlen(k->name)); /* NUL-padded, as describe() does */
	/* (copied, not printed: the list is unpacked every interval between full scans) */
	memcpy(vm->hypervisor, k->xen ? "xen" : "kvm", 4);
	memcpy(vm->source, "procscan", sizeof("procscan"));
	vm->state = VW_VM_RUNNING;
	vm->vcpus = k->vcpus;
	vm->qemu_pid = k->qemu_pid;
	vm->qemu_start_time = k->qemu_start_time;
	if (k->vmid[0]) {
		memcpy(vm->owner.platform, "proxmox", sizeof("proxmox"));
		memcpy(vm->owner.vmid, k->vmid, sizeof(vm->owner.vmid));
	}
	memcpy(vm->pod_uid, k->pod_uid, sizeof(vm->pod_uid));
}

static void procscan_close(void *state)
{
	struct procscan *ps = state;

	if (!ps)
		return;
	kept_free(ps->prev, ps->n_prev);
	free(ps->seen);
	free(ps->probed);
	vw_qemu_scan_free(&ps->qemus);
	free(ps);
}

/* The previous list's VM of this very process (same PID and start time), or NULL. */
static const struct kept *kept_of(const struct procscan *ps, const struct vw_qemu_proc *p)
{
	for (size_t i = 0; i < ps->n_prev; i++)
		if (ps->prev[i].qemu_pid == p->pid && ps->prev[i].qemu_start_time == p->start_time)
			return &ps->prev[i];
	return NULL;
}

/*
 * Whether a trusted user's QEMU p may name a VM where it runs, its pod's UID into pod_uid ("" for
 * none). A QEMU in a Kubernetes pod (KubeVirt's virt-launcher): the pod, for vm_kubevirt.c,
 * read once per process: virt-launcher forks it inside the pod's cgroup, which it never leaves;
 * reading PID/cgroup again at each full scan was four system calls per VM. 1: it may (a VM of
 * the last list, this very process, stays one; one in the procfs's PID namespace or in no pod
 * may). In a pod and a PID namespace below the procfs's (a container without hostPID), only
 * when env->kubevirt_pod says 1; else what it said (0, -ENOENT, -ENODEV without it). -ESRCH:
 * gone, or its cgroup unreadable, below that namespace: no VM, not counted.
 */
static int pod_verdict(const struct procscan *ps, const struct vw_qemu_proc *p,
		       char pod_uid[VW_UUID_LEN])
{
	struct vw_cgroup_match m = { 0 };
	const struct kept *k = kept_of(ps, p);
	uint64_t start;
	int r;

	memset(pod_uid, 0, VW_UUID_LEN);
	if (k) {
		memcpy(pod_uid, k->pod_uid, VW_UUID_LEN);
		return 1;
	}
	r = vw_workload_read_pid(ps->procfd, p->pid, &m);
	if (r < 0 && r != -ENOENT)
		return p->root_ns ? 1 : -ESRCH;
	/* The start time read after the cgroup: still the QEMU's, the cgroup was its (a QEMU that
	 * exited since the scan, its PID taken by another pod's process, was that pod's VM). */
	if (vw_qemu_read_start_time(ps->procfd, p->pid, &start) < 0 || start != p->start_time)
		return p->root_ns ? 1 : -ESRCH;
	if (m.kubepods && m.pod_uid[0])
		memcpy(pod_uid, m.pod_uid, VW_UUID_LEN);
	if (p->root_ns || !m.kubepods)
		return 1;
	return ps->kubevirt_pod ? ps->kubevirt_pod(ps->kubevirt_pod_ud, pod_uid) : -ENODEV;
}

/* One QEMU process, in the pod pod_uid (pod_verdict's), into vm. */
static void describe(const struct procscan *ps, const struct vw_qemu_proc *p,
		     const char pod_uid[VW_UUID_LEN], struct vw_vm_info *vm)
{
	memset(vm, 0, sizeof(*vm));
	if (p->cmd.uuid[0])
		memcpy(vm->uuid, p->cmd.uuid, VW_UUID_LEN);
	else
		vw_qemu_stable_id(&p->cmd, p->pid, p->start_time, ps->boot_id, vm->uuid);
	/* The name NUL-padded (not whatever followed its NUL): kept_unpack() gives the same bytes. */
	memcpy(vm->name, p->cmd.name, strnlen(p->cmd.name, sizeof(vm->name) - 1));
	snprintf(vm->hypervisor, sizeof(vm->hypervisor), "%s", p->cmd.xen ? "xen" : "kvm");
	snprintf(vm->source, sizeof(vm->source), "procscan");
	vm->state = VW_VM_RUNNING;
	vm->vcpus = p->cmd.vcpus;
	vm->qemu_pid = p->pid;
	vm->qemu_start_time = p->start_time;
	if (p->cmd.vmid[0]) {
		snprintf(vm->owner.platform, sizeof(vm->owner.platform), "proxmox");
		memcpy(vm->owner.vmid, p->cmd.vmid, sizeof(vm->owner.vmid));
	}
	memcpy(vm->pod_uid, pod_uid, sizeof(vm->pod_uid));
}

static const struct seen *seen_find(const struct procscan *ps, uint32_t pid);

#define PROBED_MAX 4096 /* beyond: a new one cuts the interval short as before (a full scan) */

struct new_qemu {
	struct procscan *ps;
	bool found;
};

/* Where pid is, or would go, in ps->probed (PID order). */
static size_t probed_at(const struct procscan *ps, uint32_t pid)
{
	return VW_LOWER_BOUND(ps->probed, 0, ps->n_probed, pid, pid);
}

/* e remembered as no VM, in PID order (an older identity of its PID replaced). */
static void probed_add(struct procscan *ps, const struct seen *e)
{
	size_t at = probed_at(ps, e->pid);

	if (at < ps->n_probed && ps->probed[at].pid == e->pid) {
		ps->probed[at] = *e;
		return;
	}
	if (vw_array_grow((void **)&ps->probed, sizeof(*ps->probed), ps->n_probed,
			  &ps->cap_probed) < 0)
		return; /* read again next round */
	memmove(&ps->probed[at + 1], &ps->probed[at], (ps->n_probed - at) * sizeof(*ps->probed));
	ps->probed[at] = *e;
	ps->n_probed++;
}

static bool probed_has(const struct procscan *ps, const struct seen *e)
{
	size_t at = probed_at(ps, e->pid);

	return at < ps->n_probed && ps->probed[at].start_time == e->start_time &&
	       ps->probed[at].pid == e->pid && strcmp(ps->probed[at].comm, e->comm) == 0;
}

/* Whether p, in a PID namespace below the procfs's, claims the UUID of a VM of the last list
 * whose QEMU is in the procfs's own: refused at a full scan (scan_live), so no reason for one. */
static bool claims_host_vm(const struct procscan *ps, const struct vw_qemu_proc *p)
{
	if (p->root_ns || !p->cmd.uuid[0])
		return false;
	for (size_t i = 0; i < ps->n_prev; i++)
		if (ps->prev[i].root_ns && strcmp(ps->prev[i].uuid, p->cmd.uuid) == 0)
			return true;
	return false;
}

/*
 * Whether a process under a QEMU's name, new since the last full scan, is a VM: its command line
 * and owner read (what the full scan would read of it), a trusted user's QEMU found (not one in
 * a container claiming a host VM's UUID, nor one in a pod that is not KubeVirt's, which the full
 * scan would refuse). No VM:
 * remembered until the next full scan, so that it is read once. Gone: no VM.
 */
static bool probe_is_vm(struct procscan *ps, const struct seen *e)
{
	struct vw_qemu_scan one = { 0 };
	char pod_uid[VW_UUID_LEN];
	size_t cap = 0;
	bool vm;
	int r;

	if (probed_has(ps, e))
		return false;
	if (ps->n_probed >= PROBED_MAX)
		return true;
	r = vw_qemu_scan_one(ps->procfd, e->pid, &one, &cap);
	if (r == -ESRCH)
		return false;
	vm = r < 0 || (one.n && vw_qemu_trusted(ps->trust, &one.procs[0]) &&
		       one.procs[0].start_time == e->start_time &&
		       !claims_host_vm(ps, &one.procs[0]) &&
		       pod_verdict(ps, &one.procs[0], pod_uid) == 1);
	vw_qemu_scan_free(&one);
	if (!vm)
		probed_add(ps, e);
	return vm;
}

static void new_qemu_one(void *ctx, uint32_t pid, uint64_t start_time, const char *comm,
			 const char *(*exe)(void *at), void *at)
{
	struct new_qemu *n = ctx;
	const struct seen *old;
	struct seen e = { .pid = pid, .start_time = start_time };
	size_t len;

	(void)exe;
	(void)at;
	/* every QEMU name begins with q or k (qemu-system-*, qemu-kvm, kvm): most comms stop at
	 * their first byte */
	if (n->found || (comm[0] != 'q' && comm[0] != 'k') || !vw_qemu_binary_name(comm))
		return;
	old = seen_find(n->ps, pid);
	/* the identity hinted_one() keeps: the comm's first 15 bytes */
	if (old && old->start_time == start_time &&
	    strncmp(old->comm, comm, sizeof(old->comm) - 1) == 0)
		return;
	len = strnlen(comm, sizeof(e.comm) - 1);
	memcpy(e.comm, comm, len);
	n->found = probe_is_vm(n->ps, &e);
}

/*
 * Whether the host's process list names a process under a QEMU's name (its comm) that the last
 * full scan did not classify under that identity and that is a VM: a VM started, restored
 * (virsh restore: a new QEMU, the same UUID) or migrated in. It is scanned at once, not at the
 * interval: until then its energy was an ordinary process's and its guest got no frames (a
 * restored VM waited 7.5 s, its guest on its model from 3 s: tests/e2e/lifecycle.py). One pass
 * over the list, a comm compared; such a new process's command line and owner are read, once:
 * a fake (an untrusted user's `qemu-system-x86_64`, a new one each round) cut every interval
 * short before, a full scan each round (2.5 ms a round, where the list standing costs 0.09 ms,
 * at 10,000 processes in the ASan build), and now costs its own three reads (0.21-0.24 ms).
 */
static bool new_qemu_listed(struct procscan *ps)
{
	struct new_qemu n = { .ps = ps };

	return ps->processes && ps->processes(ps->processes_ud, new_qemu_one, &n) >= 0 && n.found;
}

/*
 * Between full scans: whether the last list stands, as long as each of its QEMUs still runs
 * (same PID, same start time) and the host's process list names no new QEMU. false when a full
 * scan is due, a QEMU went away (the scan reports it) or a new one is there.
 */
static bool cached_list(struct procscan *ps)
{
	uint64_t now = vw_now_ns();

	if (!ps->interval_ns || !ps->last_scan_ns || now - ps->last_scan_ns >= ps->interval_ns)
		return false;
	for (size_t i = 0; i < ps->n_prev; i++) {
		uint64_t start;

		if (vw_qemu_start_time(ps->starts, ps->procfd, ps->prev[i].qemu_pid, &start) < 0 ||
		    start != ps->prev[i].qemu_start_time)
			return false;
	}
	return !new_qemu_listed(ps);
}

/* ---- A full scan given the host's process list ---- */

struct hinted {
	const struct procscan *ps;
	struct seen *seen; /* this scan's classification */
	size_t n, cap;
	struct vw_qemu_scan out;
	size_t out_cap;
	int err;
};

static int cmp_seen(const void *a, const void *b)
{
	const struct seen *x = a, *y = b;

	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static const struct seen *seen_find(const struct procscan *ps, uint32_t pid)
{
	struct seen key = { .pid = pid };

	return ps->n_seen ? bsearch(&key, ps->seen, ps->n_seen, sizeof(key), cmp_seen) : NULL;
}

static int keep_qemu(struct hinted *h, const struct vw_qemu_proc *q)
{
	if (vw_array_grow((void **)&h->out.procs, sizeof(*h->out.procs), h->out.n, &h->out_cap) < 0)
		return -ENOMEM;
	h->out.procs[h->out.n++] = *q;
	return 0;
}

/*
 * Whether a process can be a QEMU, before its command line is read (~25 us each on a VM: a
 * read of another process's memory): its comm (a -name process= rename) or executable is a
 * QEMU's name, or its executable is unknown. Not a kernel thread (exe NULL). A QEMU started
 * under another binary name and comm both (exec -a, a copied binary) is not found this way.
 */
static bool might_be_qemu(const char *comm, const char *exe)
{
	static const char deleted[] = " (deleted)"; /* the binary was replaced (an upgrade) */
	size_t n = exe ? strlen(exe) : 0, d = sizeof(deleted) - 1;
	char path[PATH_MAX];

	if (!exe)
		return false;
	if (!n || vw_qemu_binary_name(comm))
		return true;
	if (n > d && n - d < sizeof(path) && strcmp(exe + n - d, deleted) == 0) {
		memcpy(path, exe, n - d);
		path[n - d] = '\0';
		return vw_qemu_binary_name(path);
	}
	return vw_qemu_binary_name(exe);
}

static void hinted_one(void *ctx, uint32_t pid, uint64_t start_time, const char *comm,
		       const char *(*exe)(void *at), void *at)
{
	struct hinted *h = ctx;
	const struct seen *old;
	struct seen e = { .pid = pid, .start_time = start_time };
	size_t before = h->out.n, n;
	int r;

	if (h->err)
		return;
	/* a bounded copy, as snprintf("%s") gave without its format parsing (96 K instructions an
	 * interval at 1,000 processes, bench/README "2026-11-28 (2): cpu1k") */
	n = strnlen(comm, sizeof(e.comm) - 1);
	memcpy(e.comm, comm, n);
	e.comm[n] = '\0';
	old = seen_find(h->ps, pid);
	if (old && old->start_time == start_time && strcmp(old->comm, e.comm) == 0)
		r = old->qemu ? keep_qemu(h, &h->ps->qemus.procs[old->qemu - 1]) : 0;
	else if (!might_be_qemu(comm, exe(at))) /* its executable read only here */
		r = 0;
	else
		r = vw_qemu_scan_one(h->ps->procfd, pid, &h->out, &h->out_cap);
	if (r == -ESRCH)
		return; /* gone, or unreadable now: not classified, tried again next scan */
	if (r >= 0)
		r = vw_array_grow((void **)&h->seen, sizeof(*h->seen), h->n, &h->cap);
	if (r < 0) {
		h->err = r;
		return;
	}
	if (h->out.n > before)
		e.qemu = (uint32_t)h->out.n;
	h->seen[h->n++] = e;
}

static bool has_pid(const struct vw_qemu_scan *s, uint32_t pid)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->procs[i].pid == pid)
			return true;
	return false;
}

/*
 * The QEMUs among the host's processes into h->out, command lines read only where the
 * classification is new. A QEMU of the last scan that the list lacks (it lags /proc by up to
 * an interval) is kept while it runs under the same start time. -EAGAIN: no list now.
 */
static int hinted_scan(struct procscan *ps, struct hinted *h)
{
	int r = ps->processes(ps->processes_ud, hinted_one, h);

	if (r >= 0)
		r = h->err;
	for (size_t i = 0; r >= 0 && i < ps->qemus.n; i++) {
		const struct vw_qemu_proc *q = &ps->qemus.procs[i];
		uint64_t start;

		if (!has_pid(&h->out, q->pid) &&
		    vw_qemu_start_time(ps->starts, ps->procfd, q->pid, &start) == 0 &&
		    start == q->start_time)
			r = keep_qemu(h, q);
	}
	for (size_t i = 1; r >= 0 && i < h->n; i++)
		if (h->seen[i - 1].pid > h->seen[i].pid) {
			qsort(h->seen, h->n, sizeof(*h->seen), cmp_seen);
			break;
		}
	return r;
}

/*
 * One full scan into *ret: given the host's process list, command lines read only where the
 * classification is new; without it, every process's. Its classification and QEMUs are kept
 * for the next one.
 */
static int full_scan(struct procscan *ps, struct vw_qemu_scan *ret)
{
	struct hinted h = { .ps = ps };
	struct vw_qemu_proc *copy = NULL;
	int r = ps->processes ? hinted_scan(ps, &h) : -EAGAIN;

	if (r == -EAGAIN) {
		free(h.seen);
		vw_qemu_scan_free(&h.out);
		h = (struct hinted){ .ps = ps };
		r = vw_qemu_scan(ps->procfd, &h.out); /* no classification kept */
	}
	if (r >= 0 && h.out.n && !(copy = malloc(h.out.n * sizeof(*copy))))
		r = -ENOMEM;
	if (r < 0) {
		free(h.seen);
		vw_qemu_scan_free(&h.out);
		return r;
	}
	if (h.out.n)
		memcpy(copy, h.out.procs, h.out.n * sizeof(*copy));
	free(ps->seen);
	ps->seen = h.seen;
	ps->n_seen = h.n;
	ps->n_probed = 0; /* classified in seen now */
	vw_qemu_scan_free(&ps->qemus);
	ps->qemus = (struct vw_qemu_scan){ .procs = copy, .n = h.out.n };
	*ret = h.out;
	return 0;
}

/*
 * One full scan's running VMs packed into *ret (n_ret), one per UUID, in the scan's order (of
 * two QEMUs claiming one UUID, one in the procfs's own PID namespace over one in a namespace
 * below it, a container's: counted; else, a VM started again while the old QEMU exits, the
 * younger one; a QEMU of an untrusted user, or one in a pod below the procfs's PID namespace that
 * is not KubeVirt's, is no VM and claims nothing, however young: counted);
 * index: their UUIDs. Each VM is described into one scratch struct and packed at once: no list
 * of whole struct vw_vm_info is built (231 KiB at 100 VMs).
 */
static int scan_live(struct procscan *ps, struct vw_vm_index *index, struct kept **ret,
		     size_t *n_ret)
{
	struct vw_vm_info *vm = malloc(sizeof(*vm));
	struct vw_qemu_scan scan;
	struct kept *live = NULL;
	const struct vw_qemu_proc *untrusted = NULL;
	size_t n = 0, cap = 0, n_untrusted = 0, n_claims = 0, n_pods = 0;
	uint32_t claim_pid = 0, pod_pid = 0;
	char claim_uuid[VW_UUID_LEN] = "", pod_uid[VW_UUID_LEN], pod_first[VW_UUID_LEN] = "";
	int pod_why = 0;
	int r = vm ? full_scan(ps, &scan) : -ENOMEM;

	if (r < 0) {
		free(vm);
		return r;
	}
	for (size_t i = 0; i < scan.n; i++) {
		ptrdiff_t at;
		int why;

		if (!vw_qemu_trusted(ps->trust, &scan.procs[i])) {
			if (!n_untrusted++)
				untrusted = &scan.procs[i];
			continue; /* an ordinary process: its energy stays a process's */
		}
		why = pod_verdict(ps, &scan.procs[i], pod_uid);
		if (why != 1) {
			if (why != -ESRCH && !n_pods++) {
				pod_pid = scan.procs[i].pid;
				pod_why = why;
				memcpy(pod_first, pod_uid, sizeof(pod_first));
			}
			continue; /* an ordinary process of its pod: its energy stays the pod's */
		}
		describe(ps, &scan.procs[i], pod_uid, vm);
		at = live ? vw_vm_index_find_in(index, live->uuid, sizeof(*live), vm->uuid) : -1;
		if (at >= 0) {
			struct kept *dup = &live[at], k;
			bool root_ns = scan.procs[i].root_ns;

			if (root_ns != dup->root_ns) {
				/* One in the host's PID namespace, one in a container's below it: a
				 * container cannot start a process above it, so the former is the
				 * VM's, however young the other (a loop of fakes is always younger). */
				if (!n_claims++) {
					claim_pid = root_ns ? dup->qemu_pid : vm->qemu_pid;
					memcpy(claim_uuid, vm->uuid, sizeof(claim_uuid));
				}
				if (!root_ns)
					continue;
			} else {
				/* Two QEMUs, one UUID: a VM started again while the old QEMU exits. */
				vw_debug("vm: procscan: QEMUs %u and %u both claim %s; the younger one is the VM",
					 dup->qemu_pid, vm->qemu_pid, vm->uuid);
				if (vm->qemu_start_time <= dup->qemu_start_time)
					continue;
			}
			r = kept_pack(vm, &k);
			if (r < 0)
				break;
			k.root_ns = root_ns;
			free(dup->name);
			*dup = k;
			continue;
		}
		r = vw_array_grow((void **)&live, sizeof(*live), n, &cap);
		if (r < 0)
			break;
		r = kept_pack(vm, &live[n]);
		if (r < 0)
			break;
		live[n].root_ns = scan.procs[i].root_ns;
		r = vw_vm_index_add_in(index, live->uuid, sizeof(*live), n);
		if (r < 0) {
			free(live[n].name);
			break;
		}
		n++;
	}
	if (r >= 0) {
		vw_qemu_trust_scanned(ps->trust, n_untrusted, untrusted);
		vw_qemu_trust_claims(ps->trust, n_claims, claim_pid, claim_uuid);
		vw_qemu_trust_pods(ps->trust, n_pods, pod_pid, pod_first, pod_why);
	}
	vw_qemu_scan_free(&scan);
	free(vm);
	if (r < 0) {
		kept_free(live, n);
		return r;
	}
	*ret = live;
	*n_ret = n;
	return 0;
}

/* kept[0..n) unpacked one by one into vm and handed to each (state: gone ones VW_VM_SHUTOFF). */
static int hand_over(const struct kept *kept, size_t n, bool gone, struct vw_vm_info *vm,
		     int (*each)(void *ctx, const struct vw_vm_info *vm), void *ctx)
{
	for (size_t i = 0; i < n; i++) {
		int r;

		kept_unpack(&kept[i], vm);
		if (gone)
			vm->state = VW_VM_SHUTOFF;
		r = each(ctx, vm);
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * The running VMs (the last full scan's between scans), then once each VM of the previous list
 * that is gone now, as VW_VM_SHUTOFF.
 */
static int procscan_each(void *state, int (*each)(void *ctx, const struct vw_vm_info *vm),
			 void *ctx)
{
	struct procscan *ps = state;
	_cleanup_(vw_vm_index_free) struct vw_vm_index index = { 0 }; /* live's UUIDs */
	_cleanup_free_ struct vw_vm_info *vm = malloc(sizeof(*vm)); /* the one handed over */
	struct kept *live = NULL, *old;
	size_t n_live = 0, n_old;
	int r;

	if (!vm)
		return -ENOMEM;
	if (cached_list(ps))
		return hand_over(ps->prev, ps->n_prev, false, vm, each, ctx);
	ps->last_scan_ns = vw_now_ns();
	r = scan_live(ps, &index, &live, &n_live);
	if (r < 0)
		return r;
	/* The new list is kept before it is handed over (a consumer's failure loses no VM's
	 * stop: the round fails whole and the next reports from this list). */
	old = ps->prev;
	n_old = ps->n_prev;
	ps->prev = live;
	ps->n_prev = n_live;
	r = hand_over(live, n_live, false, vm, each, ctx);
	for (size_t i = 0; r >= 0 && i < n_old; i++)
		if (!live || vw_vm_index_find_in(&index, live->uuid, sizeof(*live), old[i].uuid) < 0)
			r = hand_over(&old[i], 1, true, vm, each, ctx);
	kept_free(old, n_old);
	return r;
}

struct collect {
	struct vw_vm_info *out;
	size_t n, cap;
};

static int collect_one(void *ctx, const struct vw_vm_info *vm)
{
	struct collect *c = ctx;

	if (vw_array_grow((void **)&c->out, sizeof(*c->out), c->n, &c->cap) < 0)
		return -ENOMEM;
	c->out[c->n++] = *vm;
	return 0;
}

/* procscan_each's VMs as one list (never NULL when it lists). */
static int procscan_list(void *state, struct vw_vm_info **ret, size_t *ret_n)
{
	struct collect c = { 0 };
	int r = procscan_each(state, collect_one, &c);

	if (r == 0 && !c.out && !(c.out = malloc(sizeof(*c.out))))
		r = -ENOMEM;
	if (r < 0) {
		free(c.out);
		return r;
	}
	*ret = c.out;
	*ret_n = c.n;
	return 0;
}

const struct vw_vm_source_ops vw_vm_procscan = {
	.name = "procscan",
	.open = procscan_open,
	.list = procscan_list,
	.list_each = procscan_each,
	.close = procscan_close,
};

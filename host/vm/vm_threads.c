/* SPDX-License-Identifier: Apache-2.0 */
/*
 * QEMU processes and their threads, read through the injected procfs directory.
 *
 * Threads. QEMU names its threads when started with -name ...,debug-threads=on (libvirt always
 * passes it; KubeVirt goes through libvirt): "CPU 0/KVM", "CPU 1/TCG" for vCPUs, "IO iothread1",
 * "IO mon_iothread", "worker", "vnc_worker", "call_rcu", the main loop under the binary's name.
 * vCPUs are the "CPU N/..." threads; every other thread of the process is I/O or emulator work.
 * vhost workers are "vhost-<QEMU PID>": threads of QEMU since Linux 6.4, kernel threads of
 * their own before, which only a scan of every process finds.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "log.h"
#include "macro.h"
#include "procfs.h"
#include "vm_priv.h"
#include "workload.h"

#define CMDLINE_PEEK 4096u        /* enough for argv[0] and most command lines */
#define CMDLINE_MAX (256u << 10) /* libvirt's are a few KiB; QEMU's ARG_MAX is far above */

/* The numeric entries of dirfd/rel. -errno when the directory cannot be read. */
static int list_ids(int dirfd, const char *rel, uint32_t **ret, size_t *ret_n)
{
	_cleanup_(vw_closedirp) DIR *d = vw_opendir_at(dirfd, rel);
	_cleanup_free_ uint32_t *ids = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		uint32_t id;

		if (vw_parse_pid(de->d_name, &id) < 0)
			continue;
		if (vw_array_grow((void **)&ids, sizeof(*ids), n, &cap) < 0)
			return -ENOMEM;
		ids[n++] = id;
	}
	*ret = VW_TAKE_PTR(ids);
	*ret_n = n;
	return 0;
}

int vw_qemu_read_start_time(int procfd, uint32_t pid, uint64_t *ret)
{
	char rel[32], buf[1024], comm[VW_COMM_LEN];
	uint64_t ticks;
	int r;

	snprintf(rel, sizeof(rel), "%" PRIu32 "/stat", pid);
	r = vw_read_file_at(procfd, rel, buf, sizeof(buf), NULL);
	if (r == -ENOENT)
		return -ESRCH;
	if (r < 0)
		return r;
	return vw_procfs_parse_pid_stat(buf, comm, &ticks, ret);
}

uint32_t vw_vm_vhost_owner(const char *comm)
{
	uint32_t owner;

	return strncmp(comm, "vhost-", 6) == 0 && vw_parse_pid(comm + 6, &owner) == 0 ? owner : 0;
}

/* A kernel thread named vhost-<owner>. */
static bool vhost_owner(int procfd, uint32_t pid, uint32_t *owner)
{
	char rel[32], comm[64];

	snprintf(rel, sizeof(rel), "%" PRIu32 "/comm", pid);
	if (vw_read_str_at(procfd, rel, comm, sizeof(comm)) < 0)
		return false;
	*owner = vw_vm_vhost_owner(comm);
	return *owner != 0;
}

/* One process: appended to s when it is a QEMU or a vhost kernel thread. */
static int scan_one(int procfd, uint32_t pid, struct vw_qemu_scan *s, size_t *cap_p, size_t *cap_v)
{
	_cleanup_free_ char *big = NULL;
	char rel[32], peek[CMDLINE_PEEK];
	struct vw_qemu_cmdline c;
	size_t len;
	uint32_t owner;
	uint64_t start;

	snprintf(rel, sizeof(rel), "%" PRIu32 "/cmdline", pid);
	if (vw_read_prefix_at(procfd, rel, peek, sizeof(peek), &len) < 0)
		return 0; /* exited meanwhile */
	if (len == 0) {
		if (!vhost_owner(procfd, pid, &owner))
			return 0;
		if (vw_array_grow((void **)&s->vhost, sizeof(*s->vhost), s->n_vhost, cap_v) < 0)
			return -ENOMEM;
		s->vhost[s->n_vhost++] = (struct vw_vhost_thread){ .tid = pid, .owner = owner };
		return 0;
	}
	if (vw_qemu_cmdline_parse(peek, len, &c) < 0)
		return 0;
	if (len == sizeof(peek) - 1) {
		big = malloc(CMDLINE_MAX);
		if (!big)
			return -ENOMEM;
		if (vw_read_prefix_at(procfd, rel, big, CMDLINE_MAX, &len) < 0 ||
		    vw_qemu_cmdline_parse(big, len, &c) < 0)
			return 0;
	}
	if (vw_qemu_read_start_time(procfd, pid, &start) < 0)
		return 0;
	if (vw_array_grow((void **)&s->procs, sizeof(*s->procs), s->n, cap_p) < 0)
		return -ENOMEM;
	s->procs[s->n++] = (struct vw_qemu_proc){ .pid = pid, .start_time = start, .cmd = c };
	return 0;
}

int vw_qemu_scan(int procfd, struct vw_qemu_scan *ret)
{
	_cleanup_free_ uint32_t *pids = NULL;
	size_t n_pids = 0, cap_p = 0, cap_v = 0;
	struct vw_qemu_scan s = { 0 };
	int r;

	r = list_ids(procfd, ".", &pids, &n_pids);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n_pids; i++) {
		r = scan_one(procfd, pids[i], &s, &cap_p, &cap_v);
		if (r < 0) {
			vw_qemu_scan_free(&s);
			return r;
		}
	}
	*ret = s;
	return 0;
}

void vw_qemu_scan_free(struct vw_qemu_scan *s)
{
	free(s->procs);
	free(s->vhost);
	*s = (struct vw_qemu_scan){ 0 };
}

const struct vw_qemu_proc *vw_qemu_scan_find(const struct vw_qemu_scan *s, const char *uuid,
					     const char *name)
{
	const struct vw_qemu_proc *best = NULL;
	bool best_named = false;

	for (size_t i = 0; i < s->n; i++) {
		const struct vw_qemu_proc *p = &s->procs[i];
		bool named = name && name[0] && strcmp(p->cmd.name, name) == 0;

		if (strcmp(p->cmd.uuid, uuid) != 0)
			continue;
		if (!best || (named && !best_named) ||
		    (named == best_named && p->start_time > best->start_time)) {
			best = p;
			best_named = named;
		}
	}
	return best;
}

/* ---- The QEMU of a known VM ---- */

static bool need_scan(const struct vw_qemu_cache *c, const struct vw_vm_info *vms, size_t n,
		      uint64_t now)
{
	if (!c->last_scan_ns || now - c->last_scan_ns >= c->rescan_ns)
		return true;
	for (size_t i = 0; i < n; i++)
		if (vms[i].state != VW_VM_SHUTOFF && !vms[i].qemu_pid)
			return true;
	return false;
}

/* Forget a QEMU whose PID now belongs to another process, or to nobody. */
static void recheck(int procfd, struct vw_vm_info *vm)
{
	uint64_t start;

	if (vm->state == VW_VM_SHUTOFF || !vm->qemu_pid)
		return;
	if (vw_qemu_read_start_time(procfd, vm->qemu_pid, &start) == 0 &&
	    start == vm->qemu_start_time)
		return;
	vw_debug("vm: QEMU %" PRIu32 " of %s is gone", vm->qemu_pid, vm->uuid);
	vm->qemu_pid = 0;
	vm->qemu_start_time = 0;
}

static void find_missing(int procfd, struct vw_qemu_cache *c, struct vw_vm_info *vms, size_t n)
{
	struct vw_qemu_scan scan;
	int r;

	r = vw_qemu_scan(procfd, &scan);
	if (r < 0) {
		vw_debug("vm: scan for QEMU processes: %s", strerror(-r));
		return;
	}
	c->last_scan_ns = VW_MAX(vw_now_ns(), (uint64_t)1);
	for (size_t i = 0; i < n; i++) {
		const struct vw_qemu_proc *p;

		if (vms[i].state == VW_VM_SHUTOFF || vms[i].qemu_pid)
			continue;
		p = vw_qemu_scan_find(&scan, vms[i].uuid, vms[i].name);
		if (p) {
			vms[i].qemu_pid = p->pid;
			vms[i].qemu_start_time = p->start_time;
		}
	}
	free(c->vhost);
	c->vhost = VW_TAKE_PTR(scan.vhost);
	c->n_vhost = scan.n_vhost;
	vw_qemu_scan_free(&scan);
}

void vw_qemu_resolve(int procfd, struct vw_qemu_cache *c, struct vw_vm_info *vms, size_t n)
{
	for (size_t i = 0; i < n; i++)
		recheck(procfd, &vms[i]);
	if (need_scan(c, vms, n, vw_now_ns()))
		find_missing(procfd, c, vms, n);
	for (size_t i = 0; i < n; i++) {
		struct vw_vm_info *vm = &vms[i];

		if (vm->state == VW_VM_SHUTOFF)
			continue;
		if (!vm->qemu_pid ||
		    vw_qemu_fill_threads(procfd, vm->qemu_pid, c->vhost, c->n_vhost, vm) < 0) {
			vm->qemu_pid = 0;
			vm->qemu_start_time = 0;
			vm->n_vcpu_tids = vm->n_other_tids = 0;
		}
		if (!vm->vcpus)
			vm->vcpus = (unsigned)vm->n_vcpu_tids;
	}
}

void vw_qemu_cache_free(struct vw_qemu_cache *c)
{
	free(c->vhost);
	*c = (struct vw_qemu_cache){ 0 };
}

/* ---- Threads ---- */

struct vcpu_tid {
	unsigned index;
	uint32_t tid;
};

static int cmp_vcpu(const void *a, const void *b)
{
	const struct vcpu_tid *x = a, *y = b;

	return x->index < y->index ? -1 : x->index > y->index;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* "CPU <N>/<accelerator>" -> N. */
static bool vcpu_index(const char *comm, unsigned *ret)
{
	const char *slash;
	uint64_t v;
	char num[12];

	if (strncmp(comm, "CPU ", 4) != 0 || !(slash = strchr(comm + 4, '/')) ||
	    slash == comm + 4 || (size_t)(slash - comm - 4) >= sizeof(num))
		return false;
	memcpy(num, comm + 4, (size_t)(slash - comm - 4));
	num[slash - comm - 4] = '\0';
	if (vw_parse_u64(num, &v) < 0 || v > UINT32_MAX)
		return false;
	*ret = (unsigned)v;
	return true;
}

static void add_other(struct vw_vm_info *vm, uint32_t tid)
{
	for (size_t i = 0; i < vm->n_other_tids; i++)
		if (vm->other_tids[i] == tid)
			return;
	if (vm->n_other_tids < VW_VM_MAX_THREADS)
		vm->other_tids[vm->n_other_tids++] = tid;
}

static int read_cgroup(int procfd, uint32_t pid, struct vw_vm_info *vm)
{
	_cleanup_free_ char *text = NULL;
	struct vw_cgroup_match m;
	int r = vw_workload_read_cgroup_file(procfd, pid, &text, NULL);

	if (r < 0)
		return r;
	if (vw_qemu_cgroup_from_text(text, vm->cgroup, sizeof(vm->cgroup)) < 0)
		vm->cgroup[0] = '\0';
	(void)vw_workload_parse_proc_cgroup(text, &m);
	memcpy(vm->pod_uid, m.pod_uid, sizeof(vm->pod_uid));
	return 0;
}

int vw_qemu_fill_threads(int procfd, uint32_t pid, const struct vw_vhost_thread *vhost,
			 size_t n_vhost, struct vw_vm_info *vm)
{
	_cleanup_free_ uint32_t *tids = NULL;
	_cleanup_free_ struct vcpu_tid *vcpus = NULL;
	size_t n_tids = 0, n_vcpus = 0;
	char rel[64];
	int r;

	vm->n_vcpu_tids = vm->n_other_tids = 0;
	snprintf(rel, sizeof(rel), "%" PRIu32 "/task", pid);
	r = list_ids(procfd, rel, &tids, &n_tids);
	if (r < 0)
		return r == -ENOENT ? -ESRCH : r;
	qsort(tids, n_tids, sizeof(*tids), cmp_u32);
	vcpus = calloc(n_tids ? n_tids : 1, sizeof(*vcpus));
	if (!vcpus)
		return -ENOMEM;
	for (size_t i = 0; i < n_tids; i++) {
		char comm[64];
		unsigned idx;

		snprintf(rel, sizeof(rel), "%" PRIu32 "/task/%" PRIu32 "/comm", pid, tids[i]);
		if (vw_read_str_at(procfd, rel, comm, sizeof(comm)) < 0)
			continue; /* the thread exited */
		if (vcpu_index(comm, &idx))
			vcpus[n_vcpus++] = (struct vcpu_tid){ idx, tids[i] };
		else
			add_other(vm, tids[i]);
	}
	qsort(vcpus, n_vcpus, sizeof(*vcpus), cmp_vcpu);
	for (size_t i = 0; i < n_vcpus && vm->n_vcpu_tids < VW_VM_MAX_THREADS; i++)
		vm->vcpu_tids[vm->n_vcpu_tids++] = vcpus[i].tid;
	for (size_t i = 0; i < n_vhost; i++)
		if (vhost[i].owner == pid)
			add_other(vm, vhost[i].tid);
	if (n_tids > 2 * VW_VM_MAX_THREADS)
		vw_debug("vm: QEMU %" PRIu32 " has %zu threads, only %d of each kind are listed", pid,
			 n_tids, VW_VM_MAX_THREADS);
	return read_cgroup(procfd, pid, vm);
}

/* ---- cgroups ---- */

static bool has_controller(const char *list, size_t n, const char *want)
{
	size_t wn = strlen(want);

	for (const char *p = list, *end = list + n; p < end;) {
		const char *c = memchr(p, ',', (size_t)(end - p));
		size_t len = c ? (size_t)(c - p) : (size_t)(end - p);

		if (len == wn && memcmp(p, want, wn) == 0)
			return true;
		p += len + 1;
	}
	return false;
}

/*
 * libvirt puts each QEMU thread kind in a child of the VM's cgroup: emulator, vcpuN, iothreadN;
 * under systemd in a "libvirt" child of the machine scope first.
 */
static bool libvirt_leaf(const char *leaf)
{
	static const char *const kinds[] = { "vcpu", "iothread" };

	if (strcmp(leaf, "emulator") == 0)
		return true;
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
		size_t n = strlen(kinds[i]);
		uint64_t v;

		if (strncmp(leaf, kinds[i], n) == 0 && vw_parse_u64(leaf + n, &v) == 0)
			return true;
	}
	return false;
}

int vw_qemu_cgroup_from_text(const char *text, char *out, size_t size)
{
	const char *v1 = NULL, *v2 = NULL;
	size_t v1n = 0, v2n = 0, n;
	const char *path, *slash;

	for (const char *line = text; *line;) {
		const char *eol = strchrnul(line, '\n');
		const char *c1 = memchr(line, ':', (size_t)(eol - line));
		const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(eol - c1 - 1)) : NULL;

		if (c2 && c1 - line == 1 && line[0] == '0' && c2 == c1 + 1) {
			v2 = c2 + 1;
			v2n = (size_t)(eol - v2);
		} else if (c2 && has_controller(c1 + 1, (size_t)(c2 - c1 - 1), "cpu")) {
			v1 = c2 + 1;
			v1n = (size_t)(eol - v1);
		}
		line = *eol ? eol + 1 : eol;
	}
	path = v1 ? v1 : v2;
	n = v1 ? v1n : v2n;
	if (!path || n == 0 || n >= size)
		return -ENOENT;
	memcpy(out, path, n);
	out[n] = '\0';
	slash = strrchr(out, '/');
	if (slash && slash != out && libvirt_leaf(slash + 1)) {
		char *parent = memrchr(out, '/', (size_t)(slash - out));
		size_t pn = parent ? (size_t)(slash - parent - 1) : 0;

		if (!parent)
			return 0;
		if (pn == 7 && memcmp(parent + 1, "libvirt", 7) == 0)
			*parent = '\0'; /* <scope>/libvirt/emulator -> <scope> */
		else if (memmem(parent + 1, pn, "qemu", 4))
			out[slash - out] = '\0';
	}
	return 0;
}

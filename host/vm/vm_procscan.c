/* SPDX-License-Identifier: Apache-2.0 */
/*
 * VMs from QEMU processes, whoever started them: plain qemu-system-*, OpenStack's and RHEL's
 * /usr/libexec/qemu-kvm, Debian's kvm wrapper, Proxmox, and KubeVirt, whose qemu-kvm runs in a
 * virt-launcher pod with a libvirt of its own that the host cannot reach. Each list() is one scan
 * of <procfs>: command lines (argv[0] decides) and start times.
 *
 * Identity: -uuid when given (libvirt, KubeVirt, Proxmox and OpenStack always pass it); else a
 * stable ID (vw_qemu_stable_id) over the binary, -name, PID, start time and boot ID, so two
 * anonymous VMs of one binary never collide the way Kepler's cmdline-prefix hex IDs do. A VM
 * seen by the previous list() and missing now is reported once as VW_VM_SHUTOFF.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "log.h"
#include "macro.h"
#include "vm_priv.h"

struct procscan {
	int procfd;
	char boot_id[64];
	struct vw_vm_info *prev; /* the previous list(), running ones */
	size_t n_prev;
	uint64_t interval_ns;  /* between full scans; 0: every list() */
	uint64_t last_scan_ns;
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
	ps->interval_ns = env->procscan_interval_ns;
	if (vw_read_str_at(ps->procfd, "sys/kernel/random/boot_id", ps->boot_id,
			   sizeof(ps->boot_id)) < 0)
		ps->boot_id[0] = '\0';
	*ret_state = ps;
	return 0;
}

static void procscan_close(void *state)
{
	struct procscan *ps = state;

	if (!ps)
		return;
	free(ps->prev);
	free(ps);
}

/* One QEMU process into vm. */
static void describe(const struct procscan *ps, const struct vw_qemu_proc *p,
		     struct vw_vm_info *vm)
{
	memset(vm, 0, sizeof(*vm));
	if (p->cmd.uuid[0])
		memcpy(vm->uuid, p->cmd.uuid, VW_UUID_LEN);
	else
		vw_qemu_stable_id(&p->cmd, p->pid, p->start_time, ps->boot_id, vm->uuid);
	memcpy(vm->name, p->cmd.name, sizeof(vm->name));
	snprintf(vm->hypervisor, sizeof(vm->hypervisor), "%s", p->cmd.xen ? "xen" : "kvm");
	snprintf(vm->source, sizeof(vm->source), "procscan");
	vm->state = VW_VM_RUNNING;
	vm->vcpus = p->cmd.vcpus;
	vm->qemu_pid = p->pid;
	vm->qemu_start_time = p->start_time;
}

/*
 * Between full scans: the last list again, as long as each of its QEMUs still runs (same PID,
 * same start time). false when a full scan is due or a QEMU went away (the scan reports it).
 */
static bool cached_list(struct procscan *ps, struct vw_vm_info **ret, size_t *ret_n)
{
	uint64_t now = vw_now_ns();
	struct vw_vm_info *copy;

	if (!ps->interval_ns || !ps->last_scan_ns || now - ps->last_scan_ns >= ps->interval_ns)
		return false;
	for (size_t i = 0; i < ps->n_prev; i++) {
		uint64_t start;

		if (vw_qemu_read_start_time(ps->procfd, ps->prev[i].qemu_pid, &start) < 0 ||
		    start != ps->prev[i].qemu_start_time)
			return false;
	}
	copy = malloc((ps->n_prev + 1) * sizeof(*copy));
	if (!copy)
		return false;
	if (ps->n_prev)
		memcpy(copy, ps->prev, ps->n_prev * sizeof(*copy));
	*ret = copy;
	*ret_n = ps->n_prev;
	return true;
}

static int procscan_list(void *state, struct vw_vm_info **ret, size_t *ret_n)
{
	struct procscan *ps = state;
	_cleanup_free_ struct vw_vm_info *out = NULL;
	struct vw_qemu_scan scan;
	size_t n = 0, cap = 0, n_live;
	int r;

	if (cached_list(ps, ret, ret_n))
		return 0;
	ps->last_scan_ns = vw_now_ns();
	r = vw_qemu_scan(ps->procfd, &scan);
	if (r < 0)
		return r;
	for (size_t i = 0; i < scan.n; i++) {
		struct vw_vm_info *dup;

		r = vw_array_grow((void **)&out, sizeof(*out), n, &cap);
		if (r < 0)
			goto out;
		describe(ps, &scan.procs[i], &out[n]);
		dup = vw_vm_find(out, n, out[n].uuid);
		if (!dup) {
			n++;
			continue;
		}
		/* Two QEMUs, one UUID: a VM started again while the old QEMU exits. */
		vw_debug("vm: procscan: QEMUs %u and %u both claim %s; the younger one is the VM",
			 dup->qemu_pid, out[n].qemu_pid, out[n].uuid);
		if (out[n].qemu_start_time > dup->qemu_start_time)
			*dup = out[n];
	}
	n_live = n;
	for (size_t i = 0; i < ps->n_prev; i++) {
		if (vw_vm_find(out, n_live, ps->prev[i].uuid))
			continue;
		r = vw_array_grow((void **)&out, sizeof(*out), n, &cap);
		if (r < 0)
			goto out;
		out[n] = ps->prev[i];
		out[n++].state = VW_VM_SHUTOFF;
	}
	free(ps->prev);
	ps->prev = NULL;
	ps->n_prev = 0;
	if (n_live) {
		ps->prev = malloc(n_live * sizeof(*ps->prev));
		if (!ps->prev) {
			r = -ENOMEM;
			goto out;
		}
		memcpy(ps->prev, out, n_live * sizeof(*ps->prev));
		ps->n_prev = n_live;
	}
	*ret = VW_TAKE_PTR(out);
	*ret_n = n;
	r = 0;
out:
	vw_qemu_scan_free(&scan);
	return r;
}

const struct vw_vm_source_ops vw_vm_procscan = {
	.name = "procscan",
	.open = procscan_open,
	.list = procscan_list,
	.close = procscan_close,
};

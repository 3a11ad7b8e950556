/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Whose QEMU processes name VMs (--vm.qemu-users). A process's command line is its own to
 * write: any local user can start a process whose argv[0] is qemu-system-x86_64 with another
 * VM's -uuid and -name. A QEMU-looking process names a VM only when both its real and
 * effective UIDs (<procfs>/PID/status, not the owner of /proc/PID: a non-dumpable process
 * shows its /proc files as root's) are trusted: root always, and the users listed, by name
 * (the host's etc/passwd below --host.rootfs, read at start) or by UID. Any other is an
 * ordinary process: counted (virtwatt_vm_untrusted_qemu_processes) and said, rate-limited.
 * A trusted user's QEMU in a Kubernetes pod below the host's PID namespace is one only as
 * KubeVirt's (vm_procscan.c; counted in virtwatt_vm_refused_pod_qemu_processes otherwise).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "prom.h"

struct vw_qemu_trust;
struct vw_qemu_proc;

/*
 * The trusted users: root and users[0..n) (names looked up in <root_fd>/etc/passwd, which is
 * duplicated and kept for the names said in the log; root_fd < 0: UIDs only). A name that is
 * not there is left out (said at debug level: a Debian host has no qemu user, a RHEL host no
 * libvirt-qemu). NULL with errno on failure.
 */
struct vw_qemu_trust *vw_qemu_trust_new(int root_fd, const char *const *users, size_t n);
void vw_qemu_trust_free(struct vw_qemu_trust *t);

/* Whether uid is trusted; t NULL: root only. */
bool vw_qemu_trust_uid(const struct vw_qemu_trust *t, uint32_t uid);
/* Whether the QEMU process p may name a VM: its real and effective UIDs both trusted. */
bool vw_qemu_trusted(const struct vw_qemu_trust *t, const struct vw_qemu_proc *p);

/*
 * A full process scan found n QEMU-looking processes of untrusted users, first one of them
 * (NULL when n is 0): kept for the gauge, and said (rate-limited, vw_complain) while any is
 * there, its end said once. t NULL: nothing.
 */
void vw_qemu_trust_scanned(struct vw_qemu_trust *t, size_t n, const struct vw_qemu_proc *first);
/* The count of the last full scan. */
size_t vw_qemu_trust_untrusted(const struct vw_qemu_trust *t);

/*
 * A full process scan found n QEMUs in a PID namespace below the procfs's (a container's)
 * claiming the UUID of a QEMU in its own, and refused them (pid and uuid: the first): kept for
 * the gauge, said as vw_qemu_trust_scanned says its own. t NULL: nothing.
 */
void vw_qemu_trust_claims(struct vw_qemu_trust *t, size_t n, uint32_t pid, const char *uuid);
/* The count of the last full scan. */
size_t vw_qemu_trust_claims_refused(const struct vw_qemu_trust *t);

/*
 * A full process scan found n QEMUs of trusted users in a Kubernetes pod and in a PID namespace
 * below the procfs's whose pod is not KubeVirt's as its metadata says (why: 0 listed without
 * KubeVirt's labels, -EPERM labelled so without a VirtualMachineInstance for controller,
 * -EBADMSG owned by a VMI other than its labels name, -ENOENT not listed (yet), -ENODEV no pod
 * metadata; pid, pod_uid and why: the first's) and left them ordinary processes of their pod:
 * kept for the gauge, said as vw_qemu_trust_scanned says its own. t NULL: nothing.
 */
void vw_qemu_trust_pods(struct vw_qemu_trust *t, size_t n, uint32_t pid, const char *pod_uid,
			int why);
/* The count of the last full scan. */
size_t vw_qemu_trust_pods_refused(const struct vw_qemu_trust *t);

/* virtwatt_vm_untrusted_qemu_processes, virtwatt_vm_refused_qemu_claims,
 * virtwatt_vm_refused_pod_qemu_processes; t NULL: nothing. */
int vw_qemu_trust_render(const struct vw_qemu_trust *t, struct vw_prom_writer *w,
			 const char *node_name);
extern const struct vw_family_table vw_qemu_trust_family_table;

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * KubeVirt's VMs (vm_source.h: vw_vm_kubevirt_resolve). A VirtualMachineInstance runs in a
 * virt-launcher pod whose compute container holds a libvirt of its own and the QEMU, started as
 * domain <namespace>_<vmi>; the host's process scan finds that QEMU and the pod its cgroup names.
 * The pod's labels say what it is (kubevirt.io=virt-launcher) and which VMI it runs
 * (kubevirt.io/domain), and its controller ownerReference must be that VMI (labels are the pod's
 * creator's to write: any tenant can label its pod KubeVirt's; a pod whose owner does not exist
 * in its namespace is garbage-collected, so a forged owner takes a real VMI there); without the
 * pod's metadata the domain name says it, as long as it splits into a valid namespace (a DNS-1123
 * label) and a valid VMI name (a DNS-1123 subdomain): neither may contain '_', so the split is
 * unambiguous. That fallback names only what the process scan
 * took as a VM: a QEMU in a pod and in a PID namespace below the host's (every KubeVirt QEMU;
 * also any tenant's fake) is one only when the pod's metadata says virt-launcher
 * (vw_vm_kubevirt_pod, vm_procscan.c), since a fake writes whatever domain name it likes.
 */
#include <errno.h>
#include <string.h>

#include "vm_priv.h"
#include "cgroup_path.h"

#define KUBEVIRT "kubevirt"

/* [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most max bytes; dots too where dots is set (a subdomain:
 * each dot-separated part such a label). */
static bool dns_name(const char *s, size_t n, size_t max, bool dots)
{
	if (n == 0 || n > max)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
		bool edge = i == 0 || i == n - 1 || (dots && (s[i - 1] == '.' || s[i + 1] == '.'));

		if (alnum)
			continue;
		if (edge || (c != '-' && !(dots && c == '.')))
			return false;
	}
	return true;
}

bool vw_vm_kubevirt_split(const char *domain, char ns[64], char vmi[254])
{
	const char *us = strchr(domain, '_');
	size_t n_ns, n_vmi;

	if (!us)
		return false;
	n_ns = (size_t)(us - domain);
	n_vmi = strlen(us + 1);
	if (!dns_name(domain, n_ns, 63, false) || !dns_name(us + 1, n_vmi, 253, true))
		return false;
	memcpy(ns, domain, n_ns);
	ns[n_ns] = '\0';
	memcpy(vmi, us + 1, n_vmi + 1);
	return true;
}

bool vw_vm_is_kubevirt(const struct vw_vm_info *vm)
{
	return strcmp(vm->owner.platform, KUBEVIRT) == 0;
}

static void name_as(struct vw_vm_info *vm, const char *ns, const char *vmi)
{
	struct vw_vm_owner *o = &vm->owner;

	memset(o, 0, sizeof(*o));
	memcpy(o->platform, KUBEVIRT, sizeof(KUBEVIRT));
	vw_vm_name_sanitize(o->namespace_, sizeof(o->namespace_), ns, strlen(ns));
	vw_vm_name_sanitize(vm->name, sizeof(vm->name), vmi, strlen(vmi));
}

/* What a listed pod's metadata says of it (vw_vm_kubevirt_pod's answers): 1 KubeVirt's
 * virt-launcher, its labels and its controller, the VirtualMachineInstance they name; 0 no
 * KubeVirt labels; -EPERM the labels without a VMI for controller (a tenant's own labels);
 * -EBADMSG a VMI controller other than kubevirt.io/domain names. */
static int launcher_verdict(const struct vw_pod_info *pod)
{
	if (!pod->kubevirt_vmi[0])
		return 0;
	if (!pod->kubevirt_owned)
		return -EPERM;
	if (strcmp(pod->kubevirt_owner, pod->kubevirt_vmi) != 0)
		return -EBADMSG;
	return 1;
}

void vw_vm_kubevirt_resolve(struct vw_vm_info *vms, size_t n, struct vw_podmeta *pm)
{
	for (size_t i = 0; i < n; i++) {
		struct vw_vm_info *vm = &vms[i];
		struct vw_pod_info pod;
		char ns[64], vmi[254];

		if (!vm->pod_uid[0] || vw_vm_is_kubevirt(vm))
			continue;
		if (pm && vw_podmeta_by_uid(pm, vm->pod_uid, &pod) == 0) {
			if (launcher_verdict(&pod) != 1)
				continue; /* a pod, but no virt-launcher: its QEMU is no KubeVirt VM */
			name_as(vm, pod.namespace_, pod.kubevirt_vmi);
			vw_vm_name_sanitize(vm->owner.pod_name, sizeof(vm->owner.pod_name), pod.name,
					    strlen(pod.name));
			vw_vm_name_sanitize(vm->owner.instance_name, sizeof(vm->owner.instance_name),
					    pod.kubevirt_vm, strlen(pod.kubevirt_vm));
		} else if (vw_vm_kubevirt_split(vm->name, ns, vmi)) {
			name_as(vm, ns, vmi);
		}
	}
}

int vw_vm_kubevirt_pod(void *pm, const char *pod_uid)
{
	struct vw_pod_info pod;

	if (!pm)
		return -ENODEV;
	if (!pod_uid[0] || vw_podmeta_by_uid(pm, pod_uid, &pod) < 0)
		return -ENOENT;
	return launcher_verdict(&pod);
}

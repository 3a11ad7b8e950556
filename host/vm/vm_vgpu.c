/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which listed VM a vGPU serves. NVIDIA's host driver names a vGPU's VM by the VM's UUID on KVM
 * (QEMU's -uuid: libvirt's domain UUID, the id every VM source keys VMs by) and by a domain id
 * on Xen; on KVM a vGPU is also a mediated device whose UUID the domain's XML lists. A VM that
 * is not listed, or a domain id (not kept by the VM sources), names none: that share stays the
 * node's, explicitly.
 */
#include <string.h>

#include "vm_priv.h"

static const struct vw_vm_info *find_vm(const struct vw_vm_info *vms, size_t n, const char *uuid)
{
	for (size_t i = 0; i < n; i++)
		if (vms[i].state != VW_VM_SHUTOFF && strcmp(vms[i].uuid, uuid) == 0)
			return &vms[i];
	return NULL;
}

bool vw_vm_vgpu_owner(const struct vw_vm_info *vms, size_t n, const char *vm_id, bool is_uuid,
		      char out[VW_UUID_LEN])
{
	char uuid[VW_UUID_LEN];
	const struct vw_vm_info *vm;

	if (!is_uuid || vw_vm_uuid_canon(vm_id, strlen(vm_id), uuid) < 0)
		return false;
	vm = find_vm(vms, n, uuid);
	if (!vm)
		return false;
	memcpy(out, vm->uuid, VW_UUID_LEN);
	return true;
}

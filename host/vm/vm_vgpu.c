/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which listed VM a vGPU serves. NVIDIA's host driver names a vGPU's VM by the VM's UUID on KVM
 * (QEMU's -uuid: libvirt's domain UUID, the id every VM source keys VMs by) and by a domain id
 * on Xen; on KVM a vGPU is also a mediated device whose UUID the domain's XML lists (found when
 * the VM id is not a listed VM's UUID). A VM that is not listed, or a domain id with no listed
 * mediated device, names none: that share stays the node's, explicitly.
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

/* The running VM whose domain lists the mediated device mdev. */
static const struct vw_vm_info *find_mdev(const struct vw_vm_info *vms, size_t n,
					  const uint8_t mdev[16])
{
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; vms[i].state != VW_VM_SHUTOFF && k < vms[i].n_mdev; k++)
			if (memcmp(vms[i].mdev[k], mdev, 16) == 0)
				return &vms[i];
	return NULL;
}

bool vw_vm_vgpu_owner(const struct vw_vm_info *vms, size_t n, const char *vm_id, bool is_uuid,
		      const char *mdev, char out[VW_UUID_LEN])
{
	char uuid[VW_UUID_LEN];
	uint8_t packed[16];
	const struct vw_vm_info *vm = NULL;

	if (is_uuid && vw_vm_uuid_canon(vm_id, strlen(vm_id), uuid) == 0)
		vm = find_vm(vms, n, uuid);
	if (!vm && mdev && vw_vm_mdev_pack(mdev, packed) == 0)
		vm = find_mdev(vms, n, packed);
	if (!vm)
		return false;
	memcpy(out, vm->uuid, VW_UUID_LEN);
	return true;
}

bool vw_vm_vgpu_owner_packed(const struct vw_vm_packed *vms, size_t n, const char *vm_id,
			     bool is_uuid, const char *mdev, char out[VW_UUID_LEN])
{
	char uuid[VW_UUID_LEN];
	uint8_t packed[16];

	if (is_uuid && vw_vm_uuid_canon(vm_id, strlen(vm_id), uuid) == 0)
		for (size_t i = 0; i < n; i++)
			if (vms[i].state != VW_VM_SHUTOFF && strcmp(vms[i].uuid, uuid) == 0) {
				memcpy(out, vms[i].uuid, VW_UUID_LEN);
				return true;
			}
	if (!mdev || vw_vm_mdev_pack(mdev, packed) < 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		struct vw_vm_info vm;

		if (vms[i].state == VW_VM_SHUTOFF || !vms[i].n_mdev)
			continue;
		vw_vm_unpack(&vms[i], &vm);
		if (find_mdev(&vm, 1, packed)) {
			memcpy(out, vm.uuid, VW_UUID_LEN);
			return true;
		}
	}
	return false;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GPUs passed through to VMs (VFIO): the host names each VM a whole GPU was given to, from the
 * PCI host devices in its domain XML (vw_vm_info.pci_hostdev) that sysfs says are GPUs. The
 * host cannot meter such a GPU (its driver is vfio-pci, not the vendor's; NVML on the host does
 * not see it); the guest's own virtwatt-guest reads it through the guest's driver. So this is
 * an info family, virtwatt_vm_gpu_passthrough_info, that joins the guest's GPU series to the VM
 * that owns the device.
 */
#pragma once

#include <stddef.h>

#include "prom.h"
#include "vm_source.h"

#define VW_VM_VFIO_MAX_ROWS 256 /* GPUs held by VMs at one time; more are left out (said) */

struct vw_vm_vfio;

/* NULL with errno ENOMEM. sysfs_fd (not owned) is where the PCI devices are looked up. */
struct vw_vm_vfio *vw_vm_vfio_new(int sysfs_fd);
void vw_vm_vfio_free(struct vw_vm_vfio *v);

/*
 * The GPUs among the PCI host devices of vms[0..n) that are running or paused, read from sysfs
 * now (a device rebound meanwhile shows its new driver). A device sysfs does not have is left
 * out, said at a falling rate; one that is not a GPU (a NIC, an NVSwitch, a GPU's audio
 * function) silently. The previous rows are replaced. 0, or -ENOMEM (the rows are then empty).
 */
int vw_vm_vfio_update(struct vw_vm_vfio *v, const struct vw_vm_info *vms, size_t n);
size_t vw_vm_vfio_count(const struct vw_vm_vfio *v);

/* virtwatt_vm_gpu_passthrough_info, one sample per row; nothing at all without rows. */
int vw_vm_vfio_render(const struct vw_vm_vfio *v, struct vw_prom_writer *w, const char *node_name);

extern const struct vw_family_table vw_vm_vfio_family_table;

/* SPDX-License-Identifier: Apache-2.0 */
/* GPUs passed through to VMs, named as their VMs' (vm_vfio.h). */
#include "vm_vfio.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "macro.h"
#include "vm_pci.h"

static const char *const l_vfio[] = { "vm_id", "vm_name", "pci_address", "vendor", "pci_id",
				      "driver", "node_name", NULL };

static const struct vw_metric_family vfio_families[] = {
	{ "virtwatt_vm_gpu_passthrough_info", VW_METRIC_GAUGE,
	  "A whole GPU passed through to a VM (a PCI host device of its domain XML that sysfs "
	  "says is a display controller, or an AMD processing accelerator): its PCI address, "
	  "vendor, vendor:device ID and the host driver bound to it (vfio-pci while the VM "
	  "holds it). The host cannot meter a GPU it passed through; virtwatt-guest in the VM "
	  "reads it with the guest's own NVML, and this names the VM that owns it",
	  NULL, l_vfio },
};

const struct vw_family_table vw_vm_vfio_family_table = {
	"host/vm/vm_vfio.c: vw_vm_vfio_render()", "virtwatt-host",
	"with --metrics including vm and a libvirt VM source: one row per GPU a running or paused "
	"domain was given whole (<hostdev type='pci'>); none otherwise",
	vfio_families, ARRAY_SIZE(vfio_families),
};

struct row {
	char vm_id[VW_UUID_LEN];
	char vm_name[sizeof(((struct vw_vm_info *)0)->name)];
	struct vw_pci_dev dev;
};

struct vw_vm_vfio {
	int sysfs_fd;
	struct row *rows;
	size_t n, cap;
	struct vw_complaint unreadable, full;
};

struct vw_vm_vfio *vw_vm_vfio_new(int sysfs_fd)
{
	struct vw_vm_vfio *v = calloc(1, sizeof(*v));

	if (v)
		v->sysfs_fd = sysfs_fd;
	return v;
}

void vw_vm_vfio_free(struct vw_vm_vfio *v)
{
	if (!v)
		return;
	free(v->rows);
	free(v);
}

size_t vw_vm_vfio_count(const struct vw_vm_vfio *v)
{
	return v ? v->n : 0;
}

/* Tallies of one update, for its log lines. */
struct tally {
	size_t unreadable, dropped;
};

/* The row for one PCI host device of vm: 1 added, 0 not a GPU or unreadable, -ENOMEM. */
static int add_device(struct vw_vm_vfio *v, const struct vw_vm_info *vm, const char *addr,
		      struct tally *t)
{
	struct vw_pci_dev dev;
	struct row *row;
	int r = vw_pci_read(v->sysfs_fd, addr, &dev);

	if (r < 0) {
		t->unreadable++;
		vw_complain(&v->unreadable, VW_LOG_WARN,
			    "vm: GPU passthrough: reading PCI device %s of VM %s in sysfs: %s",
			    addr, vm->uuid, strerror(-r));
		return 0;
	}
	if (!vw_pci_is_gpu(&dev))
		return 0;
	if (v->n >= VW_VM_VFIO_MAX_ROWS) {
		t->dropped++;
		return 0;
	}
	if (vw_array_grow((void **)&v->rows, sizeof(*v->rows), v->n, &v->cap) < 0)
		return -ENOMEM;
	row = &v->rows[v->n++];
	memcpy(row->vm_id, vm->uuid, sizeof(row->vm_id));
	memcpy(row->vm_name, vm->name, sizeof(row->vm_name));
	row->dev = dev;
	return 1;
}

int vw_vm_vfio_update(struct vw_vm_vfio *v, const struct vw_vm_info *vms, size_t n)
{
	struct tally t = { 0 };

	v->n = 0;
	for (size_t i = 0; i < n; i++) {
		if (vms[i].state == VW_VM_SHUTOFF)
			continue;
		for (size_t j = 0; j < VW_MIN(vms[i].n_pci_hostdev, VW_VM_MAX_HOSTDEVS); j++) {
			char addr[VW_PCI_ADDR_SIZE];

			vw_vm_pci_format(vms[i].pci_hostdev[j], addr);
			if (add_device(v, &vms[i], addr, &t) < 0) {
				v->n = 0;
				return -ENOMEM;
			}
		}
	}
	if (!t.unreadable)
		vw_release(&v->unreadable, VW_LOG_INFO,
			   "vm: GPU passthrough: every PCI host device readable again");
	if (t.dropped)
		vw_complain(&v->full, VW_LOG_WARN,
			    "vm: GPU passthrough: %zu GPUs held by VMs beyond the %d shown",
			    t.dropped, VW_VM_VFIO_MAX_ROWS);
	else
		vw_release(&v->full, VW_LOG_INFO, "vm: GPU passthrough: every GPU held is shown");
	return 0;
}

int vw_vm_vfio_render(const struct vw_vm_vfio *v, struct vw_prom_writer *w, const char *node_name)
{
	int r;

	(void)vw_prom_table_trust(&vw_vm_vfio_family_table); /* checked once, not each render */
	if (!v || !v->n)
		return 0;
	r = vw_prom_family(w, &vfio_families[0]);
	for (size_t i = 0; r == 0 && i < v->n; i++) {
		const struct row *row = &v->rows[i];
		char vendor[8], pci_id[16];
		const char *labels[] = { row->vm_id,
					 row->vm_name,
					 row->dev.address,
					 vw_pci_vendor_name(row->dev.vendor_id, vendor),
					 pci_id,
					 row->dev.driver,
					 node_name,
					 NULL };

		snprintf(pci_id, sizeof(pci_id), "%04x:%04x", row->dev.vendor_id,
			 row->dev.device_id);
		r = vw_prom_gauge(w, labels, 1);
	}
	return r < 0 ? r : vw_prom_family_end(w);
}

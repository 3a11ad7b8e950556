/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A PCI device as sysfs describes it, below an injected sysfs root: what a VM was given by a
 * <hostdev type='pci'> (vendor, device, class, the driver bound to it). Pure reads, no cache.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "vm_source.h"

#define VW_PCI_VENDOR_NVIDIA 0x10de
#define VW_PCI_VENDOR_AMD 0x1002 /* ATI's ID, AMD's GPUs */
#define VW_PCI_VENDOR_INTEL 0x8086

struct vw_pci_dev {
	char address[VW_PCI_ADDR_SIZE]; /* canonical "dddd:bb:ss.f" */
	uint16_t vendor_id, device_id;
	uint32_t class_code; /* 24 bits: base class, subclass, programming interface */
	char driver[64];     /* the bound driver's name ("vfio-pci", "nvidia"), "" when none */
};

/* A canonical PCI address: "dddd:bb:ss.f" in lower-case hex, slot <= 0x1f, function <= 7. */
bool vw_pci_addr_valid(const char *s);

/*
 * bus/pci/devices/<address>/{vendor,device,class} and the basename of its driver link, below
 * sysfs_fd. -EINVAL: the address is not canonical, or an attribute is not sysfs's hex
 * ("0x10de", "0x030200"); -ENOENT: no such device; other -errno from reading.
 */
int vw_pci_read(int sysfs_fd, const char *address, struct vw_pci_dev *ret);

/*
 * A GPU: a display controller (base class 0x03: VGA 0x0300, XGA 0x0301, 3D 0x0302, other
 * 0x0380), as GPUs present themselves, NVIDIA's datacenter ones included (an H100 is 0x030200);
 * or an AMD processing accelerator (0x1200 from vendor 0x1002: Instinct MI200 and MI300 present
 * so, apache/cloudstack#11701 missed an MI325X by looking for display controllers only). A GPU's
 * HDMI audio function (0x0403) and the NVSwitches beside it (0x0680) are not GPUs.
 */
bool vw_pci_is_gpu(const struct vw_pci_dev *d);

/* "nvidia" (0x10de), "amd" (0x1002), "intel" (0x8086), else the ID in four hex digits. */
const char *vw_pci_vendor_name(uint16_t vendor_id, char buf[8]);

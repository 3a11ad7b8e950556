/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A VM's host devices packed (struct vw_vm_info): a PCI address in 32 bits, a mediated device's
 * UUID in its 16 bytes; and the domain XML's text lists into them.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "vm_pci.h"
#include "vm_priv.h"

int vw_vm_pci_pack(const char *addr, uint32_t *ret)
{
	unsigned dom, bus, slot, fn;
	int end = 0;

	if (!addr || !vw_pci_addr_valid(addr) ||
	    sscanf(addr, "%4x:%2x:%2x.%1x%n", &dom, &bus, &slot, &fn, &end) != 4 || addr[end])
		return -EINVAL;
	*ret = dom << 16 | bus << 8 | slot << 3 | fn;
	return 0;
}

void vw_vm_pci_format(uint32_t p, char out[VW_PCI_ADDR_SIZE])
{
	snprintf(out, VW_PCI_ADDR_SIZE, "%04x:%02x:%02x.%x", p >> 16, (p >> 8) & 0xff,
		 (p >> 3) & 0x1f, p & 7);
}

int vw_vm_mdev_pack(const char *uuid, uint8_t out[16])
{
	char canon[VW_UUID_LEN];
	size_t o = 0;

	if (!uuid || vw_vm_uuid_canon(uuid, strlen(uuid), canon) < 0)
		return -EINVAL;
	for (size_t i = 0; canon[i]; i++) {
		if (canon[i] == '-')
			continue;
		if (i + 1 >= VW_UUID_LEN - 1 || canon[i + 1] == '-' || o >= 16)
			return -EINVAL; /* cannot be: canonical groups are even */
		out[o++] = (uint8_t)(vw_vm_hexval(canon[i]) << 4 | vw_vm_hexval(canon[i + 1]));
		i++;
	}
	return o == 16 ? 0 : -EINVAL;
}

void vw_vm_mdev_format(const uint8_t in[16], char out[VW_UUID_LEN])
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;

	for (size_t i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[o++] = '-';
		out[o++] = hex[in[i] >> 4];
		out[o++] = hex[in[i] & 15];
	}
	out[o] = '\0';
}

void vw_vm_hostdevs_from_xml(struct vw_vm_info *vm, const struct vw_domxml *x)
{
	vm->n_pci_hostdev = 0;
	vm->n_mdev = 0;
	for (size_t i = 0; i < x->n_pci_hostdev && i < VW_VM_MAX_HOSTDEVS; i++)
		if (vw_vm_pci_pack(x->pci_hostdev[i], &vm->pci_hostdev[vm->n_pci_hostdev]) == 0)
			vm->n_pci_hostdev++;
	for (size_t i = 0; i < x->n_mdev && i < VW_VM_MAX_HOSTDEVS; i++)
		if (vw_vm_mdev_pack(x->mdev_uuid[i], vm->mdev[vm->n_mdev]) == 0)
			vm->n_mdev++;
}

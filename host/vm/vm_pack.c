/* SPDX-License-Identifier: Apache-2.0 */
/* A VM kept long, packed (vm_priv.h, struct vw_vm_packed). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "vm_priv.h"

/* The strings out of line, in this order (each its bytes up to its first NUL, then a NUL). */
#define PACKED_STRINGS(vm)                                                                    \
	{ (vm)->name, sizeof((vm)->name) },                                                   \
	{ (vm)->channel_path, sizeof((vm)->channel_path) },                                   \
	{ (vm)->share_dir, sizeof((vm)->share_dir) },                                         \
	{ (vm)->owner.platform, sizeof((vm)->owner.platform) },                               \
	{ (vm)->owner.instance_name, sizeof((vm)->owner.instance_name) },                     \
	{ (vm)->owner.flavor, sizeof((vm)->owner.flavor) },                                   \
	{ (vm)->owner.user_id, sizeof((vm)->owner.user_id) },                                 \
	{ (vm)->owner.user_name, sizeof((vm)->owner.user_name) },                             \
	{ (vm)->owner.project_id, sizeof((vm)->owner.project_id) },                           \
	{ (vm)->owner.project_name, sizeof((vm)->owner.project_name) },                       \
	{ (vm)->owner.vmid, sizeof((vm)->owner.vmid) },                                       \
	{ (vm)->owner.namespace_, sizeof((vm)->owner.namespace_) },                           \
	{ (vm)->owner.pod_name, sizeof((vm)->owner.pod_name) },                               \
	{ (vm)->pod_uid, sizeof((vm)->pod_uid) }

struct field {
	char *s;
	size_t size;
};

struct cfield {
	const char *s;
	size_t size;
};

static size_t n_pci(const struct vw_vm_info *vm)
{
	return vm->n_pci_hostdev < VW_VM_MAX_HOSTDEVS ? vm->n_pci_hostdev : VW_VM_MAX_HOSTDEVS;
}

static size_t n_mdev(const struct vw_vm_info *vm)
{
	return vm->n_mdev < VW_VM_MAX_HOSTDEVS ? vm->n_mdev : VW_VM_MAX_HOSTDEVS;
}

int vw_vm_pack(const struct vw_vm_info *vm, struct vw_vm_packed *ret)
{
	const struct cfield f[] = { PACKED_STRINGS(vm) };
	size_t np = n_pci(vm), nm = n_mdev(vm), len = 0, o = 0;
	bool empty = np == 0 && nm == 0;
	char *ext = NULL;

	for (size_t i = 0; i < ARRAY_SIZE(f); i++) {
		len += strnlen(f[i].s, f[i].size) + 1;
		empty &= f[i].s[0] == '\0';
	}
	if (!empty) {
		ext = malloc(len + np * sizeof(vm->pci_hostdev[0]) + nm * sizeof(vm->mdev[0]));
		if (!ext)
			return -ENOMEM;
		for (size_t i = 0; i < ARRAY_SIZE(f); i++) {
			size_t k = strnlen(f[i].s, f[i].size);

			memcpy(ext + o, f[i].s, k);
			ext[o + k] = '\0';
			o += k + 1;
		}
		memcpy(ext + o, vm->pci_hostdev, np * sizeof(vm->pci_hostdev[0]));
		o += np * sizeof(vm->pci_hostdev[0]);
		memcpy(ext + o, vm->mdev, nm * sizeof(vm->mdev[0]));
	}
	free(ret->ext);
	*ret = (struct vw_vm_packed){ .n_pci_hostdev = (uint8_t)np,
				      .n_mdev = (uint8_t)nm,
				      .share_readonly = vm->share_readonly,
				      .state = vm->state,
				      .vcpus = vm->vcpus,
				      .qemu_pid = vm->qemu_pid,
				      .qemu_start_time = vm->qemu_start_time,
				      .ext = ext };
	memcpy(ret->uuid, vm->uuid, sizeof(ret->uuid));
	memcpy(ret->hypervisor, vm->hypervisor, sizeof(ret->hypervisor));
	memcpy(ret->source, vm->source, sizeof(ret->source));
	return 0;
}

void vw_vm_unpack(const struct vw_vm_packed *p, struct vw_vm_info *ret)
{
	memset(ret, 0, sizeof(*ret));
	memcpy(ret->uuid, p->uuid, sizeof(ret->uuid));
	memcpy(ret->hypervisor, p->hypervisor, sizeof(ret->hypervisor));
	memcpy(ret->source, p->source, sizeof(ret->source));
	ret->state = p->state;
	ret->share_readonly = p->share_readonly;
	ret->vcpus = p->vcpus;
	ret->qemu_pid = p->qemu_pid;
	ret->qemu_start_time = p->qemu_start_time;
	if (p->ext) {
		const struct field f[] = { PACKED_STRINGS(ret) };
		const char *s = p->ext;

		for (size_t i = 0; i < ARRAY_SIZE(f); i++) {
			size_t k;

			if (!*s) { /* most are empty (a VM of no platform): ret's bytes are 0 */
				s++;
				continue;
			}
			k = strnlen(s, f[i].size); /* (packed within size: its NUL follows) */
			memcpy(f[i].s, s, k);
			s += k + 1;
		}
		ret->n_pci_hostdev = p->n_pci_hostdev;
		ret->n_mdev = p->n_mdev;
		memcpy(ret->pci_hostdev, s, p->n_pci_hostdev * sizeof(ret->pci_hostdev[0]));
		s += p->n_pci_hostdev * sizeof(ret->pci_hostdev[0]);
		memcpy(ret->mdev, s, p->n_mdev * sizeof(ret->mdev[0]));
	}
}

void vw_vm_packed_free(struct vw_vm_packed *p)
{
	free(p->ext);
	p->ext = NULL;
}

bool vw_vm_packed_same(const struct vw_vm_packed *p, const struct vw_vm_info *vm)
{
	const struct cfield f[] = { PACKED_STRINGS(vm) };
	size_t np = n_pci(vm), nm = n_mdev(vm);
	const char *s = p->ext;

	if (strncmp(p->uuid, vm->uuid, sizeof(p->uuid)) != 0 ||
	    strncmp(p->hypervisor, vm->hypervisor, sizeof(p->hypervisor)) != 0 ||
	    strncmp(p->source, vm->source, sizeof(p->source)) != 0 || p->state != vm->state ||
	    p->vcpus != vm->vcpus || p->qemu_pid != vm->qemu_pid ||
	    p->qemu_start_time != vm->qemu_start_time || p->n_pci_hostdev != np ||
	    p->n_mdev != nm || p->share_readonly != vm->share_readonly)
		return false;
	if (!s) { /* packed empty: so must vm be */
		for (size_t i = 0; i < ARRAY_SIZE(f); i++)
			if (f[i].s[0])
				return false;
		return true;
	}
	for (size_t i = 0; i < ARRAY_SIZE(f); i++) {
		size_t k;

		if (!f[i].s[0] || !*s) { /* an empty one (most are): both must be */
			if (f[i].s[0] != *s)
				return false;
			s++;
			continue;
		}
		k = strnlen(f[i].s, f[i].size);
		if (strnlen(s, f[i].size) != k || memcmp(s, f[i].s, k) != 0)
			return false;
		s += k + 1;
	}
	if (memcmp(s, vm->pci_hostdev, np * sizeof(vm->pci_hostdev[0])) != 0)
		return false;
	s += np * sizeof(vm->pci_hostdev[0]);
	return memcmp(s, vm->mdev, nm * sizeof(vm->mdev[0])) == 0;
}

void vw_vm_packed_strings(const struct vw_vm_packed *p, const char *ret[VW_PK__COUNT])
{
	const char *s = p->ext;

	_Static_assert(sizeof((struct cfield[]){ PACKED_STRINGS((const struct vw_vm_info *)0) }) ==
			       VW_PK__COUNT * sizeof(struct cfield),
		       "VW_PK_*: the packed strings, in PACKED_STRINGS' order");
	for (size_t i = 0; i < VW_PK__COUNT; i++) {
		ret[i] = s ? s : "";
		if (s)
			s += strlen(s) + 1;
	}
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A VM packed and back (host/vm/vm_pack.c): every field of struct vw_vm_info comes back byte
 * for byte (libvirt's domain table and the tracker keep their VMs packed), full and empty
 * strings, all 64 host-device slots or none; and the tracker's comparison of a list with the
 * one it keeps, field by field.
 */
#include "vw_test.h"

#include <stdlib.h>
#include <string.h>

#include "vm_priv.h"

/* Every string field full (size - 1 bytes of c, then c + 1 ...), so that one dropped, cut or
 * shifted shows. */
static void fill(char *s, size_t size, char c)
{
	memset(s, c, size - 1);
	s[size - 1] = '\0';
}

static void full_vm(struct vw_vm_info *vm)
{
	memset(vm, 0, sizeof(*vm));
	snprintf(vm->uuid, sizeof(vm->uuid), "11111111-2222-4333-8444-555555555555");
	fill(vm->name, sizeof(vm->name), 'a');
	fill(vm->hypervisor, sizeof(vm->hypervisor), 'b');
	fill(vm->source, sizeof(vm->source), 'c');
	vm->state = VW_VM_PAUSED;
	vm->vcpus = 7;
	vm->qemu_pid = 4242;
	vm->qemu_start_time = 0x123456789abcULL;
	fill(vm->channel_path, sizeof(vm->channel_path), 'd');
	fill(vm->share_dir, sizeof(vm->share_dir), 'e');
	vm->share_readonly = true;
	vm->n_pci_hostdev = VW_VM_MAX_HOSTDEVS;
	vm->n_mdev = VW_VM_MAX_HOSTDEVS;
	for (size_t i = 0; i < VW_VM_MAX_HOSTDEVS; i++) {
		vm->pci_hostdev[i] = 0x10000u * (uint32_t)i + 0x3b00u + (uint32_t)i;
		for (size_t k = 0; k < 16; k++)
			vm->mdev[i][k] = (uint8_t)(i * 16 + k + 1);
	}
	fill(vm->owner.platform, sizeof(vm->owner.platform), 'f');
	fill(vm->owner.instance_name, sizeof(vm->owner.instance_name), 'g');
	fill(vm->owner.flavor, sizeof(vm->owner.flavor), 'h');
	fill(vm->owner.user_id, sizeof(vm->owner.user_id), 'i');
	fill(vm->owner.user_name, sizeof(vm->owner.user_name), 'j');
	fill(vm->owner.project_id, sizeof(vm->owner.project_id), 'k');
	fill(vm->owner.project_name, sizeof(vm->owner.project_name), 'l');
	fill(vm->owner.vmid, sizeof(vm->owner.vmid), 'm');
	fill(vm->owner.namespace_, sizeof(vm->owner.namespace_), 'n');
	fill(vm->owner.pod_name, sizeof(vm->owner.pod_name), 'o');
	fill(vm->pod_uid, sizeof(vm->pod_uid), 'p');
}

static void round_trip(const struct vw_vm_info *vm, struct vw_vm_packed *p)
{
	struct vw_vm_info back;

	memset(&back, 0x5a, sizeof(back));
	assert_int_equal(vw_vm_pack(vm, p), 0);
	vw_vm_unpack(p, &back);
	assert_memory_equal(&back, vm, sizeof(back));
}

static void test_full(void **state)
{
	struct vw_vm_info vm;
	struct vw_vm_packed p = { 0 };

	(void)state;
	full_vm(&vm);
	round_trip(&vm, &p);
	assert_non_null(p.ext);
	/* A field the length of its array, with no NUL: still the same bytes. */
	memset(vm.name, 'q', sizeof(vm.name));
	memset(vm.owner.vmid, 'r', sizeof(vm.owner.vmid));
	round_trip(&vm, &p);
	vw_vm_packed_free(&p);
	assert_null(p.ext);
}

/* Each field alone: the others empty around it, none taken for another. */
static void test_each_alone(void **state)
{
	struct vw_vm_info full, vm;
	struct vw_vm_packed p = { 0 };

	(void)state;
	full_vm(&full);
#define ALONE(field)                                                                          \
	do {                                                                                  \
		memset(&vm, 0, sizeof(vm));                                                   \
		memcpy(&vm.field, &full.field, sizeof(vm.field));                             \
		round_trip(&vm, &p);                                                          \
		assert_non_null(p.ext);                                                       \
	} while (0)
	ALONE(name);
	ALONE(channel_path);
	ALONE(share_dir);
	ALONE(owner.platform);
	ALONE(owner.instance_name);
	ALONE(owner.flavor);
	ALONE(owner.user_id);
	ALONE(owner.user_name);
	ALONE(owner.project_id);
	ALONE(owner.project_name);
	ALONE(owner.vmid);
	ALONE(owner.namespace_);
	ALONE(owner.pod_name);
	ALONE(pod_uid);
#undef ALONE
	memset(&vm, 0, sizeof(vm));
	vm.n_pci_hostdev = 1;
	vm.pci_hostdev[0] = 0x3b0000;
	round_trip(&vm, &p);
	memset(&vm, 0, sizeof(vm));
	vm.n_mdev = 2;
	memcpy(vm.mdev[0], full.mdev[3], 16);
	memcpy(vm.mdev[1], full.mdev[4], 16);
	round_trip(&vm, &p);
	vw_vm_packed_free(&p);
}

/* A VM with nothing out of line: no allocation; repacking one that had some frees it. */
static void test_empty(void **state)
{
	struct vw_vm_info vm;
	struct vw_vm_packed p = { 0 };

	(void)state;
	full_vm(&vm);
	round_trip(&vm, &p);
	memset(&vm, 0, sizeof(vm));
	snprintf(vm.uuid, sizeof(vm.uuid), "22222222-2222-4333-8444-555555555555");
	snprintf(vm.source, sizeof(vm.source), "libvirt");
	snprintf(vm.hypervisor, sizeof(vm.hypervisor), "kvm");
	vm.state = VW_VM_SHUTOFF;
	vm.qemu_pid = 7;
	round_trip(&vm, &p); /* (ASan: the old ext freed) */
	assert_null(p.ext);
	assert_true(sizeof(p) < sizeof(vm) / 16);
	vw_vm_packed_free(&p);
}

/* The tracker's comparison: any one field changed is another VM; bytes past a string's NUL or
 * past the host devices' counts are not. */
static void test_same(void **state)
{
	struct vw_vm_info vm, other;
	struct vw_vm_packed p = { 0 };

	(void)state;
	full_vm(&vm);
	assert_int_equal(vw_vm_pack(&vm, &p), 0);
	assert_true(vw_vm_packed_same(&p, &vm));
#define CHANGED(field)                                                                        \
	do {                                                                                  \
		other = vm;                                                                   \
		((unsigned char *)&other.field)[0] ^= 1;                                      \
		assert_false(vw_vm_packed_same(&p, &other));                                  \
	} while (0)
	CHANGED(uuid);
	CHANGED(name);
	CHANGED(hypervisor);
	CHANGED(source);
	CHANGED(state);
	CHANGED(vcpus);
	CHANGED(qemu_pid);
	CHANGED(qemu_start_time);
	CHANGED(channel_path);
	CHANGED(share_dir);
	CHANGED(share_readonly);
	other = vm;
	other.n_pci_hostdev--;
	assert_false(vw_vm_packed_same(&p, &other));
	other = vm;
	other.n_mdev--;
	assert_false(vw_vm_packed_same(&p, &other));
	CHANGED(pci_hostdev[VW_VM_MAX_HOSTDEVS - 1]);
	CHANGED(mdev[VW_VM_MAX_HOSTDEVS - 1]);
	CHANGED(owner.platform);
	CHANGED(owner.instance_name);
	CHANGED(owner.flavor);
	CHANGED(owner.user_id);
	CHANGED(owner.user_name);
	CHANGED(owner.project_id);
	CHANGED(owner.project_name);
	CHANGED(owner.vmid);
	CHANGED(owner.namespace_);
	CHANGED(owner.pod_name);
	CHANGED(pod_uid);
#undef CHANGED
	other = vm;
	other.name[10] = '\0'; /* shorter */
	assert_false(vw_vm_packed_same(&p, &other));
	assert_int_equal(vw_vm_pack(&other, &p), 0);
	other.name[11] ^= 1; /* past its NUL */
	other.n_mdev = 3;
	assert_int_equal(vw_vm_pack(&other, &p), 0);
	other.mdev[5][0] ^= 1; /* past the count */
	assert_true(vw_vm_packed_same(&p, &other));

	/* A string empty on one side only, either side, among others set: not the same. */
	full_vm(&vm);
	vm.owner.flavor[0] = '\0';
	assert_int_equal(vw_vm_pack(&vm, &p), 0);
	assert_true(vw_vm_packed_same(&p, &vm));
	other = vm;
	memcpy(other.owner.flavor, "m1", 3);
	assert_false(vw_vm_packed_same(&p, &other));
	assert_int_equal(vw_vm_pack(&other, &p), 0);
	assert_false(vw_vm_packed_same(&p, &vm));

	/* Empty against empty, and against one string set. */
	memset(&vm, 0, sizeof(vm));
	assert_int_equal(vw_vm_pack(&vm, &p), 0);
	assert_null(p.ext);
	assert_true(vw_vm_packed_same(&p, &vm));
	vm.owner.pod_name[0] = 'x';
	assert_false(vw_vm_packed_same(&p, &vm));
	vw_vm_packed_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full),
		cmocka_unit_test(test_each_alone),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_same),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Which listed VM a vGPU serves (host/vm/vm_vgpu.c): by its VM's UUID, else its mdev; in a list
 * and in a packed list (the tracker's). */
#include "vw_test.h"

#include <string.h>

#include "vm_priv.h"
#include "vm_source.h"

#define VM_A "6f1c2a9e-3b4d-4e5f-8a7b-0c1d2e3f4a5b"
#define VM_B "0b6cbd1e-7a55-4f0e-9b8a-58a0b4c3d2e1"
#define MDEV "c2177883-f1bb-47f0-914d-32a22e3a8804"

static bool packed_mode;

static bool owner(const struct vw_vm_info *vms, size_t n, const char *vm_id, bool is_uuid,
		  const char *mdev, char out[VW_UUID_LEN])
{
	struct vw_vm_packed p[3] = { 0 };
	bool r;

	if (!packed_mode)
		return vw_vm_vgpu_owner(vms, n, vm_id, is_uuid, mdev, out);
	assert_true(n <= 3);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(vw_vm_pack(&vms[i], &p[i]), 0);
	r = vw_vm_vgpu_owner_packed(p, n, vm_id, is_uuid, mdev, out);
	for (size_t i = 0; i < n; i++)
		vw_vm_packed_free(&p[i]);
	return r;
}

static void test_owner(void **state)
{
	struct vw_vm_info vms[3] = { { .uuid = VM_A, .state = VW_VM_RUNNING },
				     { .uuid = VM_B, .state = VW_VM_RUNNING, .n_mdev = 1 },
				     { .uuid = "11111111-2222-4333-8444-555555555555",
				       .state = VW_VM_SHUTOFF, .n_mdev = 1 } };
	char out[VW_UUID_LEN];

	(void)state;
	assert_int_equal(vw_vm_mdev_pack(MDEV, vms[1].mdev[0]), 0);
	assert_int_equal(vw_vm_mdev_pack("99999999-2222-4333-8444-555555555555", vms[2].mdev[0]), 0);
	/* KVM: the VM's UUID, in either case. */
	assert_true(owner(vms, 3, "6F1C2A9E-3B4D-4E5F-8A7B-0C1D2E3F4A5B", true, "", out));
	assert_string_equal(out, VM_A);
	/* A domain id, or a UUID the host does not run: its mediated device names the VM. */
	assert_true(owner(vms, 3, "7", false, "C2177883-F1BB-47F0-914D-32A22E3A8804",
				     out));
	assert_string_equal(out, VM_B);
	assert_true(owner(vms, 3, "77777777-8888-4999-aaaa-bbbbbbbbbbbb", true, MDEV,
				     out));
	assert_string_equal(out, VM_B);
	/* Nobody's: no VM, a shut-off VM's device, junk. */
	assert_false(owner(vms, 3, "7", false, "", out));
	assert_false(owner(vms, 3, "7", false, "99999999-2222-4333-8444-555555555555",
				      out));
	assert_false(owner(vms, 3, "../etc", true, "not-a-uuid", out));
	assert_false(owner(vms, 3, "77777777-8888-4999-aaaa-bbbbbbbbbbbb", true, NULL,
				      out));
}

static void test_owner_packed(void **state)
{
	packed_mode = true;
	test_owner(state);
	packed_mode = false;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_owner),
		cmocka_unit_test(test_owner_packed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

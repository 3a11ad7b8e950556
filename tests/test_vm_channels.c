/* SPDX-License-Identifier: Apache-2.0 */
/* The host's VM channel map: each VM's own channel and shared folder by UUID, in any listing
 * order. */
#include "vw_test.h"

#include <stdio.h>
#include <string.h>

#include "vm_channels.h"

static void test_each_vm_its_channel(void **state)
{
	struct vw_vm_channels *c = vw_vm_channels_new();
	struct vw_vm_info vms[300];

	(void)state;
	assert_non_null(c);
	assert_string_equal(vw_vm_channels_get(c, "00000000-0000-4000-8000-000000000001"), "");
	memset(vms, 0, sizeof(vms));
	/* Listed in descending UUID order; every third VM has no channel. */
	for (int i = 0; i < 300; i++) {
		snprintf(vms[i].uuid, sizeof(vms[i].uuid), "00000000-0000-4000-8000-%012d", 299 - i);
		if (i % 3)
			snprintf(vms[i].channel_path, sizeof(vms[i].channel_path), "/run/vm-%d.sock",
				 299 - i);
		vms[i].qemu_pid = (uint32_t)(1000 + 299 - i); /* the channel's listener */
		vms[i].qemu_start_time = 5000000 + 299 - (uint64_t)i; /* ... started then */
		if (i % 5) /* every fifth no shared folder; of the rest, odd ones <readonly/> */
			snprintf(vms[i].share_dir, sizeof(vms[i].share_dir), "/srv/vw/%d", 299 - i);
		vms[i].share_readonly = i % 5 && (299 - i) % 2;
	}
	assert_int_equal(vw_vm_channels_set(c, vms, 300), 0);
	for (int k = 0; k < 300; k++) {
		char uuid[64], path[64];
		int i = 299 - k; /* the listing index of VM k */
		uint32_t pid = 0;
		uint64_t start = 0;

		snprintf(uuid, sizeof(uuid), "00000000-0000-4000-8000-%012d", k);
		snprintf(path, sizeof(path), "/run/vm-%d.sock", k);
		assert_string_equal(vw_vm_channels_get(c, uuid), i % 3 ? path : "");
		assert_string_equal(vw_vm_channels_find(c, uuid, &pid, &start), i % 3 ? path : "");
		assert_int_equal(pid, 1000 + k);
		assert_int_equal(start, 5000000 + k);
		{
			char dir[64];
			bool ro = !(i % 5 && k % 2);

			snprintf(dir, sizeof(dir), "/srv/vw/%d", k);
			assert_string_equal(vw_vm_channels_share(c, uuid, &ro), i % 5 ? dir : "");
			assert_int_equal(ro, i % 5 && k % 2);
		}
	}
	assert_string_equal(vw_vm_channels_get(c, "00000000-0000-4000-8000-000000000300"), "");
	{
		uint32_t pid = 7;
		uint64_t start = 7;

		assert_string_equal(vw_vm_channels_find(c, "00000000-0000-4000-8000-000000000300",
							&pid, &start), "");
		assert_int_equal(pid, 0);
		assert_int_equal(start, 0);
		{
			bool ro = true;

			assert_string_equal(vw_vm_channels_share(c, "00000000-0000-4000-8000-000000000300",
								 &ro), "");
			assert_false(ro);
		}
	}
	/* A new listing replaces the old one whole. */
	assert_int_equal(vw_vm_channels_set(c, vms + 1, 1), 0);
	assert_string_equal(vw_vm_channels_get(c, vms[1].uuid), vms[1].channel_path);
	assert_string_equal(vw_vm_channels_get(c, vms[2].uuid), "");
	vw_vm_channels_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_each_vm_its_channel),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtwatt_vm_info: one row per running or paused VM with its owner's labels, none for a VM that
 * stopped, no family at all without a VM. (tests/test_vm_vfio.c's test_host reads it from the
 * real host over libvirt's test driver with Nova's metadata.)
 */
#include "vw_test.h"

#include <stdlib.h>
#include <string.h>

#include "vm_meta.h"

#define U1 "11111111-2222-4333-8444-555555555555"
#define U2 "22222222-2222-4333-8444-555555555555"
#define U3 "33333333-2222-4333-8444-555555555555"

static char *render(const struct vw_vm_info *vms, size_t n)
{
	struct vw_prom_writer *w = vw_prom_writer_new(VW_PROM_TEXT_0_0_4, 0);
	char *text = NULL;
	size_t len;

	assert_non_null(w);
	assert_int_equal(vw_vm_meta_render(vms, n, w, "node-a"), 0);
	assert_int_equal(vw_prom_finish(w, &text, &len), 0);
	vw_prom_writer_free(w);
	return text;
}

static void test_rows(void **state)
{
	struct vw_vm_info vms[3] = { 0 };
	char *text;

	(void)state;
	strcpy(vms[0].uuid, U1);
	strcpy(vms[0].name, "pve \"simple\"");
	strcpy(vms[0].hypervisor, "kvm");
	strcpy(vms[0].source, "procscan");
	strcpy(vms[0].owner.platform, "proxmox");
	strcpy(vms[0].owner.vmid, "8006");
	strcpy(vms[1].uuid, U2);
	strcpy(vms[1].source, "libvirt");
	vms[1].state = VW_VM_PAUSED;
	strcpy(vms[1].owner.platform, "openstack");
	strcpy(vms[1].owner.project_name, "demo");
	strcpy(vms[1].owner.flavor, "m1.small");
	strcpy(vms[2].uuid, U3);
	vms[2].state = VW_VM_SHUTOFF;

	text = render(vms, 3);
	assert_non_null(strstr(text, "# TYPE virtwatt_vm_info gauge\n"));
	assert_non_null(strstr(text, "virtwatt_vm_info{vm_id=\"" U1 "\",vm_name=\"pve \\\"simple\\\"\","
				     "hypervisor=\"kvm\",source=\"procscan\",platform=\"proxmox\","
				     "instance_name=\"\",flavor=\"\",user_id=\"\",user_name=\"\","
				     "project_id=\"\",project_name=\"\",proxmox_vmid=\"8006\","
				     "namespace=\"\",pod_name=\"\",node_name=\"node-a\"} 1\n"));
	assert_non_null(strstr(text, "virtwatt_vm_info{vm_id=\"" U2 "\",vm_name=\"\",hypervisor=\"\","
				     "source=\"libvirt\",platform=\"openstack\",instance_name=\"\","
				     "flavor=\"m1.small\",user_id=\"\",user_name=\"\",project_id=\"\","
				     "project_name=\"demo\",proxmox_vmid=\"\",namespace=\"\",pod_name=\"\",node_name=\"node-a\"} 1\n"));
	assert_null(strstr(text, U3)); /* stopped: no row */
	free(text);

	/* Only a stopped VM, or none: not even the family's header. */
	text = render(&vms[2], 1);
	assert_string_equal(text, "");
	free(text);
	text = render(NULL, 0);
	assert_string_equal(text, "");
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

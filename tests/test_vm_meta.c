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
#include "vm_priv.h"

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

/* Rows of VMs no platform claims, of three sources, among one that is claimed: each row as
 * escaping every label gives it (the owner's and node_name shared by a source's rows). */
static void test_rows_unclaimed(void **state)
{
#define ROW(u, name, src, owner_platform, vmid)                                                    \
	"virtwatt_vm_info{vm_id=\"" u "\",vm_name=\"" name "\",hypervisor=\"kvm\",source=\"" src   \
	"\",platform=\"" owner_platform "\",instance_name=\"\",flavor=\"\",user_id=\"\","         \
	"user_name=\"\",project_id=\"\",project_name=\"\",proxmox_vmid=\"" vmid "\","            \
	"namespace=\"\",pod_name=\"\",node_name=\"n\\\"1\"} 1\n"
	static const char *const src[] = { "libvirt", "procscan", "libvirt", "procscan", "o\"ther",
					   "libvirt" };
	static const char want[] = "# HELP virtwatt_vm_info";
	static const char rows[] = ROW("00000000-0000-4000-8000-000000000000", "vm0", "libvirt", "", "")
		ROW("00000000-0000-4000-8000-000000000001", "vm1", "procscan", "", "")
		ROW("00000000-0000-4000-8000-000000000002", "vm\\\\2", "libvirt", "proxmox", "7")
		ROW("00000000-0000-4000-8000-000000000003", "vm3", "procscan", "", "")
		ROW("00000000-0000-4000-8000-000000000004", "vm4", "o\\\"ther", "", "")
		ROW("00000000-0000-4000-8000-000000000005", "vm5", "libvirt", "", "");
	struct vw_vm_info vms[6] = { 0 };
	struct vw_prom_writer *w = vw_prom_writer_new(VW_PROM_TEXT_0_0_4, 0);
	char *text = NULL;
	size_t len;

	(void)state;
	for (size_t i = 0; i < 6; i++) {
		snprintf(vms[i].uuid, sizeof(vms[i].uuid), "00000000-0000-4000-8000-%012zu", i);
		snprintf(vms[i].name, sizeof(vms[i].name), "vm%zu", i);
		strcpy(vms[i].hypervisor, "kvm");
		strcpy(vms[i].source, src[i]);
	}
	strcpy(vms[2].name, "vm\\2");
	strcpy(vms[2].owner.platform, "proxmox");
	strcpy(vms[2].owner.vmid, "7");
	assert_non_null(w);
	assert_int_equal(vw_vm_meta_render(vms, 6, w, "n\"1"), 0);
	assert_int_equal(vw_prom_finish(w, &text, &len), 0);
	vw_prom_writer_free(w);
	assert_memory_equal(text, want, strlen(want));
	assert_non_null(strstr(text, "# TYPE virtwatt_vm_info gauge\nvirtwatt_vm_info{"));
	assert_string_equal(strstr(text, "virtwatt_vm_info{"), rows);
	free(text);

	/* The tracker's packed list: each row unpacked into the same struct in turn, so a tail
	 * must not be matched through a pointer into the row before. */
	struct vw_vm_packed packed[6] = { 0 };

	for (size_t i = 0; i < 6; i++)
		assert_int_equal(vw_vm_pack(&vms[i], &packed[i]), 0);
	w = vw_prom_writer_new(VW_PROM_TEXT_0_0_4, 0);
	assert_non_null(w);
	assert_int_equal(vw_vm_meta_render_packed(packed, 6, w, "n\"1"), 0);
	assert_int_equal(vw_prom_finish(w, &text, &len), 0);
	vw_prom_writer_free(w);
	assert_string_equal(strstr(text, "virtwatt_vm_info{"), rows);
	free(text);
	for (size_t i = 0; i < 6; i++)
		vw_vm_packed_free(&packed[i]);
#undef ROW
}

/* The text of vw_vm_meta_render over vms[0..n) or, packed, of vw_vm_meta_render_packed. */
static char *render_meta(const struct vw_vm_info *vms, size_t n, bool packed)
{
	struct vw_prom_writer *w = vw_prom_writer_new(VW_PROM_TEXT_0_0_4, 0);
	struct vw_vm_packed p[4] = { 0 };
	char *text = NULL;
	size_t len;

	assert_non_null(w);
	assert_true(n <= ARRAY_SIZE(p));
	for (size_t i = 0; packed && i < n; i++)
		assert_int_equal(vw_vm_pack(&vms[i], &p[i]), 0);
	if (packed)
		assert_int_equal(vw_vm_meta_render_packed(p, n, w, "node"), 0);
	else
		assert_int_equal(vw_vm_meta_render(vms, n, w, "node"), 0);
	assert_int_equal(vw_prom_finish(w, &text, &len), 0);
	vw_prom_writer_free(w);
	for (size_t i = 0; i < n; i++)
		vw_vm_packed_free(&p[i]);
	return text;
}

/*
 * The packed list's rows read each label where the packed VM holds it (no struct unpacked a
 * row): every owner label distinct, beside a VM of no platform and a stopped one, the very
 * text of the rows rendered from the structs.
 */
static void test_render_packed_every_label(void **state)
{
	struct vw_vm_info vms[3] = { 0 };
	struct vw_vm_owner *o = &vms[0].owner;
	char *a, *b;

	(void)state;
	for (size_t i = 0; i < 3; i++) {
		snprintf(vms[i].uuid, sizeof(vms[i].uuid), "00000000-0000-4000-8000-%012zu", i);
		snprintf(vms[i].name, sizeof(vms[i].name), "vm%zu", i);
		strcpy(vms[i].hypervisor, "kvm");
		strcpy(vms[i].source, "libvirt");
	}
	strcpy(vms[0].channel_path, "/run/ch");
	strcpy(vms[0].share_dir, "/run/share");
	strcpy(o->platform, "openstack");
	strcpy(o->instance_name, "inst");
	strcpy(o->flavor, "m1.small");
	strcpy(o->user_id, "uid");
	strcpy(o->user_name, "uname");
	strcpy(o->project_id, "pid");
	strcpy(o->project_name, "pname");
	strcpy(o->vmid, "101");
	strcpy(o->namespace_, "ns");
	strcpy(o->pod_name, "pod");
	strcpy(vms[0].pod_uid, "11111111-2222-4333-8444-555555555555");
	vms[2].state = VW_VM_SHUTOFF;
	a = render_meta(vms, 3, false);
	b = render_meta(vms, 3, true);
	assert_non_null(strstr(a, "instance_name=\"inst\",flavor=\"m1.small\",user_id=\"uid\","
				  "user_name=\"uname\",project_id=\"pid\",project_name=\"pname\","
				  "proxmox_vmid=\"101\",namespace=\"ns\",pod_name=\"pod\""));
	assert_null(strstr(a, "vm2"));
	assert_string_equal(b, a);
	free(a);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows),
		cmocka_unit_test(test_rows_unclaimed),
		cmocka_unit_test(test_render_packed_every_label),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

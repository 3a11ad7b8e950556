/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GPUs passed through to VMs: PCI devices read from a sysfs fixture laid out as the kernel lays
 * it out (bus/pci/devices/<addr> a link into devices/, driver a link into bus/pci/drivers/),
 * which of them are GPUs, the rows of virtwatt_vm_gpu_passthrough_info for a list of VMs and
 * their rendering; then the real virtwatt-host over libvirt's test driver (a node file whose
 * running domains hold <hostdev> devices: the test driver starts them without the hardware)
 * and that fixture sysfs, scraped; and the daemon's own maps, which never hold libvirt (its
 * helper, a short-lived child, loads it).
 */
#include "vw_test.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"
#include "log.h"
#include "prom.h"
#include "vm_pci.h"
#include "vm_vfio.h"

#define U1 "4dea22b3-1d52-d8f3-2516-782e98ab3fa0"
#define U2 "5eeb33c4-2e63-49a4-8627-893fa9bc4fb1"
#define U3 "6ffc44d5-3f74-4ab5-9738-9a40bacd50c2"

/* Bind the device at addr to driver: its driver link, replaced. */
static void bind(const char *root, const char *addr, const char *driver)
{
	char rel[256], target[256], path[900];

	snprintf(rel, sizeof(rel), "sys/bus/pci/drivers/%s", driver);
	assert_int_equal(vw_fixture_mkdir(root, rel), 0);
	snprintf(rel, sizeof(rel), "sys/devices/pci0000:00/%s/driver", addr);
	snprintf(target, sizeof(target), "../../../bus/pci/drivers/%s", driver);
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	(void)unlink(path);
	assert_int_equal(vw_fixture_symlink(root, target, rel), 0);
}

/* A PCI device in the fixture: its attributes under devices/pci0000:00/, the bus's link to it
 * and, with a driver, its driver link. */
static void pci_dev(const char *root, const char *addr, const char *vendor, const char *device,
		    const char *class_code, const char *driver)
{
	char rel[256], target[256], text[32];
	static const char *const names[] = { "vendor", "device", "class" };
	const char *values[] = { vendor, device, class_code };

	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		snprintf(rel, sizeof(rel), "sys/devices/pci0000:00/%s/%s", addr, names[i]);
		snprintf(text, sizeof(text), "%s\n", values[i]);
		assert_int_equal(vw_fixture_write(root, rel, text, 0), 0);
	}
	assert_int_equal(vw_fixture_mkdir(root, "sys/bus/pci/devices"), 0);
	snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s", addr);
	snprintf(target, sizeof(target), "../../../devices/pci0000:00/%s", addr);
	assert_int_equal(vw_fixture_symlink(root, target, rel), 0);
	if (driver)
		bind(root, addr, driver);
}

/* The machine every test uses: an H100 with its audio function and a NIC beside it, all on
 * vfio-pci; an MI300X (a processing accelerator) and an old Radeon (VGA) on amdgpu; an
 * unbound Intel GPU; a virtio device's vendor; attributes that are not sysfs's hex. */
static void machine(const char *root)
{
	pci_dev(root, "0000:3b:00.0", "0x10de", "0x2330", "0x030200", "vfio-pci");
	pci_dev(root, "0000:3b:00.1", "0x10de", "0x22a3", "0x040300", "vfio-pci");
	pci_dev(root, "0000:5e:00.0", "0x15b3", "0x1021", "0x020000", "vfio-pci");
	pci_dev(root, "0000:c1:00.0", "0x1002", "0x74a1", "0x120000", "amdgpu");
	pci_dev(root, "0000:c2:00.0", "0x1002", "0x67df", "0x030000", "amdgpu");
	pci_dev(root, "0000:00:02.0", "0x8086", "0x56C0", "0x038000", NULL);
	pci_dev(root, "0000:00:03.0", "0x1af4", "0x1050", "0x030000", "virtio-pci");
	pci_dev(root, "0000:00:04.0", "0x8086", "0x1234", "0x120000", NULL); /* an NPU */
	pci_dev(root, "0000:00:05.0", "nvidia", "0x2330", "0x030200", NULL);
	pci_dev(root, "0000:00:06.0", "0x10de", "0x2330", "0x0302", NULL);
	pci_dev(root, "0000:00:07.0", "0x10de", "0x2330", "0x03020000", NULL);
	pci_dev(root, "0000:00:08.0", "0x10de", "0x2330", "030200", NULL);
}

struct sysfs {
	char *root;
	int fd;
};

static int sysfs_setup(void **state)
{
	struct sysfs *s = calloc(1, sizeof(*s));
	char path[600];

	s->root = vw_fixture_mkdtemp("vfio");
	assert_non_null(s->root);
	machine(s->root);
	snprintf(path, sizeof(path), "%s/sys", s->root);
	s->fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(s->fd >= 0);
	*state = s;
	return 0;
}

static pid_t daemon_pid;

static int sysfs_teardown(void **state)
{
	struct sysfs *s = *state;

	vw_fixture_kill(&daemon_pid); /* test_host's, when it failed */
	close(s->fd);
	vw_fixture_rm(s->root);
	free(s);
	return 0;
}

static void test_addr_valid(void **state)
{
	static const char *const good[] = { "0000:3b:00.0", "ffff:ff:1f.7", "0001:00:10.3" };
	static const char *const bad[] = { "",
					   "0000:3b:00",
					   "0000:3B:00.0",
					   "0000:3b:20.0",
					   "0000:3b:00.8",
					   "000:3b:00.0.",
					   "0000-3b:00.0",
					   "0000:3b:00.0 ",
					   "../../../../x",
					   "0000:3b/00.0",
					   "0000:3b:00.00",
					   "g000:3b:00.0" };

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(good); i++)
		assert_true(vw_pci_addr_valid(good[i]));
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		if (vw_pci_addr_valid(bad[i]))
			fail_msg("\"%s\" taken as a PCI address", bad[i]);
	assert_false(vw_pci_addr_valid(NULL));
}

static void test_pci_read(void **state)
{
	/* vendor "nvidia", class "0x0302", "0x03020000", "030200" */
	static const char *const junk[] = { "0000:00:05.0", "0000:00:06.0", "0000:00:07.0",
					    "0000:00:08.0" };
	struct sysfs *s = *state;
	struct vw_pci_dev d;
	char buf[8];

	assert_int_equal(vw_pci_read(s->fd, "0000:3b:00.0", &d), 0);
	assert_string_equal(d.address, "0000:3b:00.0");
	assert_int_equal(d.vendor_id, 0x10de);
	assert_int_equal(d.device_id, 0x2330);
	assert_int_equal(d.class_code, 0x030200);
	assert_string_equal(d.driver, "vfio-pci");
	assert_true(vw_pci_is_gpu(&d));
	assert_string_equal(vw_pci_vendor_name(d.vendor_id, buf), "nvidia");

	/* The GPU's audio function and the NIC: readable, not GPUs. */
	assert_int_equal(vw_pci_read(s->fd, "0000:3b:00.1", &d), 0);
	assert_int_equal(d.class_code, 0x040300);
	assert_false(vw_pci_is_gpu(&d));
	assert_int_equal(vw_pci_read(s->fd, "0000:5e:00.0", &d), 0);
	assert_false(vw_pci_is_gpu(&d));
	assert_string_equal(vw_pci_vendor_name(d.vendor_id, buf), "15b3");

	/* AMD's accelerator class is a GPU; Intel's is not. */
	assert_int_equal(vw_pci_read(s->fd, "0000:c1:00.0", &d), 0);
	assert_true(vw_pci_is_gpu(&d));
	assert_string_equal(vw_pci_vendor_name(d.vendor_id, buf), "amd");
	assert_string_equal(d.driver, "amdgpu");
	assert_int_equal(vw_pci_read(s->fd, "0000:00:04.0", &d), 0);
	assert_false(vw_pci_is_gpu(&d));

	/* No driver bound; upper-case hex as some kernels never write but a fixture may. */
	assert_int_equal(vw_pci_read(s->fd, "0000:00:02.0", &d), 0);
	assert_string_equal(d.driver, "");
	assert_int_equal(d.device_id, 0x56c0);
	assert_true(vw_pci_is_gpu(&d));
	assert_string_equal(vw_pci_vendor_name(d.vendor_id, buf), "intel");
	assert_int_equal(vw_pci_read(s->fd, "0000:00:03.0", &d), 0);
	assert_string_equal(vw_pci_vendor_name(d.vendor_id, buf), "1af4");

	/* Missing, not canonical, not sysfs's hex: errors, and nothing left in *ret. */
	assert_int_equal(vw_pci_read(s->fd, "0000:86:00.0", &d), -ENOENT);
	assert_int_equal(vw_pci_read(s->fd, "0000:3B:00.0", &d), -EINVAL);
	assert_int_equal(vw_pci_read(s->fd, "../../../etc", &d), -EINVAL);
	for (size_t i = 0; i < ARRAY_SIZE(junk); i++) {
		d.vendor_id = 1;
		assert_int_equal(vw_pci_read(s->fd, junk[i], &d), -EINVAL);
		assert_int_equal(d.vendor_id, 0);
		assert_string_equal(d.address, "");
	}
}

static struct vw_vm_info vm(const char *uuid, const char *name, enum vw_vm_state st,
			    const char *const *addrs)
{
	struct vw_vm_info v = { .state = st };

	snprintf(v.uuid, sizeof(v.uuid), "%s", uuid);
	snprintf(v.name, sizeof(v.name), "%s", name);
	for (; addrs && *addrs; addrs++)
		assert_int_equal(vw_vm_pci_pack(*addrs, &v.pci_hostdev[v.n_pci_hostdev++]), 0);
	return v;
}

static char *render(const struct vw_vm_vfio *v)
{
	struct vw_prom_writer *w = vw_prom_writer_new(VW_PROM_TEXT_0_0_4, 0);
	char *text = NULL;
	size_t len;

	assert_non_null(w);
	assert_int_equal(vw_vm_vfio_render(v, w, "node-a"), 0);
	assert_int_equal(vw_prom_finish(w, &text, &len), 0);
	vw_prom_writer_free(w);
	return text;
}

static unsigned warnings;

static void count_warnings(enum vw_log_level level, const char *msg, void *ud)
{
	(void)ud;
	if (level == VW_LOG_WARN && strstr(msg, "0000:86:00.0") && strstr(msg, U1))
		warnings++;
}

#define ROW(uuid, name, addr, vendor, id, drv)                                                     \
	"virtwatt_vm_gpu_passthrough_info{vm_id=\"" uuid "\",vm_name=\"" name                      \
	"\",pci_address=\"" addr "\",vendor=\"" vendor "\",pci_id=\"" id "\",driver=\"" drv       \
	"\",node_name=\"node-a\"} 1\n"

static void test_rows(void **state)
{
	struct sysfs *s = *state;
	static const char *const a1[] = { "0000:3b:00.0", "0000:3b:00.1", "0000:5e:00.0",
					  "0000:86:00.0", NULL };
	static const char *const a2[] = { "0000:c1:00.0", "0000:00:02.0", NULL };
	static const char *const a3[] = { "0000:c2:00.0", NULL };
	struct vw_vm_info vms[3] = { vm(U1, "h100 \"vm\"", VW_VM_RUNNING, a1),
				     vm(U2, "", VW_VM_PAUSED, a2),
				     vm(U3, "gone", VW_VM_SHUTOFF, a3) };
	struct vw_vm_vfio *v = vw_vm_vfio_new(s->fd);
	char *text;

	assert_non_null(v);
	/* Nothing yet: not even the family's header. */
	text = render(v);
	assert_string_equal(text, "");
	free(text);

	warnings = 0;
	vw_log_set_sink(count_warnings, NULL);
	assert_int_equal(vw_vm_vfio_update(v, vms, 3), 0);
	assert_int_equal(vw_vm_vfio_update(v, vms, 3), 0); /* rate-limited: said once */
	vw_log_set_sink(NULL, NULL);
	assert_int_equal(warnings, 1);
	assert_int_equal(vw_vm_vfio_count(v), 3);
	text = render(v);
	assert_string_equal(
		text,
		"# HELP virtwatt_vm_gpu_passthrough_info A whole GPU passed through to a VM (a PCI "
		"host device of its domain XML that sysfs says is a display controller, or an AMD "
		"processing accelerator): its PCI address, vendor, vendor:device ID and the host "
		"driver bound to it (vfio-pci while the VM holds it). The host cannot meter a GPU "
		"it passed through; virtwatt-guest in the VM reads it with the guest's own NVML, "
		"and this names the VM that owns it\n"
		"# TYPE virtwatt_vm_gpu_passthrough_info gauge\n"
		ROW(U1, "h100 \\\"vm\\\"", "0000:3b:00.0", "nvidia", "10de:2330", "vfio-pci")
		ROW(U2, "", "0000:c1:00.0", "amd", "1002:74a1", "amdgpu")
		ROW(U2, "", "0000:00:02.0", "intel", "8086:56c0", ""));
	free(text);

	/* The driver is read each time: rebound to nvidia after the VM let go of it. */
	bind(s->root, "0000:3b:00.0", "nvidia");
	vms[1].state = VW_VM_SHUTOFF;
	assert_int_equal(vw_vm_vfio_update(v, vms, 2), 0);
	text = render(v);
	assert_non_null(strstr(text, ROW(U1, "h100 \\\"vm\\\"", "0000:3b:00.0", "nvidia",
					 "10de:2330", "nvidia")));
	assert_null(strstr(text, U2));
	free(text);

	/* No VM: no rows, no family. */
	assert_int_equal(vw_vm_vfio_update(v, NULL, 0), 0);
	assert_int_equal(vw_vm_vfio_count(v), 0);
	text = render(v);
	assert_string_equal(text, "");
	free(text);
	vw_vm_vfio_free(v);
	vw_vm_vfio_free(NULL);
}

/* More GPUs held than the table keeps: the first VW_VM_VFIO_MAX_ROWS, and a warning. */
static void test_rows_capped(void **state)
{
	struct sysfs *s = *state;
	static const char *const one[] = { "0000:3b:00.0", NULL };
	size_t n = VW_VM_VFIO_MAX_ROWS + 10;
	struct vw_vm_info *vms = calloc(n, sizeof(*vms));
	struct vw_vm_vfio *v = vw_vm_vfio_new(s->fd);

	for (size_t i = 0; i < n; i++) {
		char uuid[VW_UUID_LEN];

		snprintf(uuid, sizeof(uuid), "00000000-0000-4000-8000-%012zx", i);
		vms[i] = vm(uuid, "", VW_VM_RUNNING, one);
	}
	assert_int_equal(vw_vm_vfio_update(v, vms, n), 0);
	assert_int_equal(vw_vm_vfio_count(v), VW_VM_VFIO_MAX_ROWS);
	assert_int_equal(vw_vm_vfio_update(v, vms, 1), 0);
	assert_int_equal(vw_vm_vfio_count(v), 1);
	vw_vm_vfio_free(v);
	free(vms);
}

/* ---- The real host ---- */

#define NODE_DOMAIN(name, uuid, devices)                                                           \
	"<domain type='test'><name>" name "</name><uuid>" uuid "</uuid>"                           \
	"<memory>1048576</memory><vcpu>2</vcpu><os><type>hvm</type></os><devices>" devices        \
	"</devices></domain>"
/* A domain as an OpenStack compute node defines it: Nova's owner in <metadata>. */
#define NOVA_DOMAIN(name, uuid, devices)                                                           \
	"<domain type='test'><name>" name "</name><uuid>" uuid "</uuid>"                           \
	"<metadata><nova:instance xmlns:nova='http://openstack.org/xmlns/libvirt/nova/1.1'>"       \
	"<nova:name>web-01</nova:name><nova:flavor name='m1.small'><nova:vcpus>2</nova:vcpus>"     \
	"</nova:flavor><nova:owner><nova:user uuid='85bd8e9aba8a4d5d8b6a3a7a5c2e1f00'>admin"       \
	"</nova:user><nova:project uuid='2fa3b6c8d1e04b5f9a7c6d5e4f3a2b10'>demo</nova:project>"    \
	"</nova:owner></nova:instance></metadata>"                                                 \
	"<memory>1048576</memory><vcpu>2</vcpu><os><type>hvm</type></os><devices>" devices        \
	"</devices></domain>"
#define HOSTDEV_MDEV(uuid)                                                                         \
	"<hostdev mode='subsystem' type='mdev' model='vfio-pci'><source><address uuid='" uuid    \
	"'/></source></hostdev>"
#define HOSTDEV_PCI(bus, fn)                                                                       \
	"<hostdev mode='subsystem' type='pci' managed='yes'><source><address domain='0x0000' "     \
	"bus='" bus "' slot='0x00' function='" fn "'/></source></hostdev>"

static void test_host(void **state)
{
	struct sysfs *s = *state;
	char sys[600], uri[600], log[640], *body;
	char *argv[] = { VW_HOST_BIN, sys, "--host.procfs=/proc", uri,
			 "--passthrough.enable=false", "--web.listen-address=127.0.0.1:0",
			 "--monitor.interval=1s", "--metrics=node,vm", "--cpu.accounting=procfs",
			 "--gpu.enable=false", "--kube.node-name=node-a",
			 "--vm.info-labels=project_name,flavor", NULL };
	unsigned port = 0;

	/* gpuvm holds the H100 and its audio function, mdevvm a vGPU (an mdev: not this
	 * family). */
	static const char node[] =
		"<node>"
		NODE_DOMAIN("gpuvm", U1, HOSTDEV_PCI("0x3b", "0x0") HOSTDEV_PCI("0x3b", "0x1"))
		NOVA_DOMAIN("mdevvm", U2, HOSTDEV_MDEV("c2177883-f1bb-47f0-914d-32a22e3a8804"))
		"</node>\n";

	assert_int_equal(vw_fixture_write(s->root, "node.xml", node, 0), 0);
	snprintf(sys, sizeof(sys), "--host.sysfs=%s/sys", s->root);
	snprintf(uri, sizeof(uri), "--libvirt.uri=test://%s/node.xml", s->root);
	snprintf(log, sizeof(log), "%s/host.log", s->root);
	assert_int_equal(vw_fixture_start_daemon_logged(argv, log, &daemon_pid, &port), 0);

	body = vw_fixture_scrape_when(port, "virtwatt_vm_gpu_passthrough_info{");
	if (!body) {
		char *text = vw_fixture_slurp(log, NULL);

		fail_msg("no virtwatt_vm_gpu_passthrough_info; the host said:\n%s",
			 text ? text : "(no log)");
	}
	assert_non_null(strstr(body, ROW(U1, "gpuvm", "0000:3b:00.0", "nvidia", "10de:2330",
					 "vfio-pci")));
	/* One row: the audio function and the mdev VM have none. */
	assert_double_near(vw_fixture_sample_sum(body, "virtwatt_vm_gpu_passthrough_info", NULL),
			   1, 0);
	/* Both VMs are VMs all the same. */
	assert_non_null(strstr(body, "vm_id=\"" U2 "\""));
	/* Who each belongs to: the Nova instance's owner and flavor, through the real libvirt
	 * driver and the host's render; the other VM has no platform. */
	assert_non_null(strstr(
		body, "virtwatt_vm_info{vm_id=\"" U2 "\",vm_name=\"mdevvm\",hypervisor=\"test\","
		      "source=\"libvirt\",platform=\"openstack\",instance_name=\"web-01\","
		      "flavor=\"m1.small\",user_id=\"85bd8e9aba8a4d5d8b6a3a7a5c2e1f00\","
		      "user_name=\"admin\",project_id=\"2fa3b6c8d1e04b5f9a7c6d5e4f3a2b10\","
		      "project_name=\"demo\",proxmox_vmid=\"\",namespace=\"\",pod_name=\"\","
		      "node_name=\"node-a\"} 1\n"));
	assert_non_null(strstr(
		body, "virtwatt_vm_info{vm_id=\"" U1 "\",vm_name=\"gpuvm\",hypervisor=\"test\","
		      "source=\"libvirt\",platform=\"\",instance_name=\"\",flavor=\"\","
		      "user_id=\"\",user_name=\"\",project_id=\"\",project_name=\"\","
		      "proxmox_vmid=\"\",namespace=\"\",pod_name=\"\",node_name=\"node-a\"} 1\n"));
	/* (a QEMU running elsewhere on this machine is the process scan's, not counted here) */
	assert_double_near(vw_fixture_sample_sum(body, "virtwatt_vm_info", "source=\"libvirt\""), 2,
			   0);
	free(body);
	/* --vm.info-labels: the owner's project and flavor on the VM's own energy series, after
	 * Kepler's labels. */
	body = vw_fixture_scrape_when(port, "kepler_vm_cpu_joules_total{");
	assert_non_null(body);
	assert_non_null(strstr(body, "kepler_vm_cpu_joules_total{vm_id=\"" U2 "\",vm_name=\"mdevvm\","
				     "hypervisor=\"test\",state=\"running\",zone=\""));
	assert_non_null(strstr(body, "\",node_name=\"node-a\",project_name=\"demo\","
				     "flavor=\"m1.small\"} "));
	assert_non_null(strstr(body, "virtwatt_vm_cpu_idle_watts{vm_id=\"" U1 "\",vm_name=\"gpuvm\""));
	assert_non_null(strstr(body, "\",node_name=\"node-a\",project_name=\"\",flavor=\"\"} "));
	free(body);
	/* All of that came through libvirt, yet the daemon never mapped it: its helper, a child
	 * run for each question, did (issue #33: libvirt is ~14 MiB of RSS in a process). */
	{
		char maps_path[64], *maps;

		snprintf(maps_path, sizeof(maps_path), "/proc/%d/maps", (int)daemon_pid);
		maps = vw_fixture_slurp(maps_path, NULL);
		assert_non_null(maps);
		if (strstr(maps, "libvirt"))
			fail_msg("the daemon maps libvirt: %.300s", strstr(maps, "libvirt"));
		free(maps);
	}
	assert_int_equal(vw_fixture_stop_daemon(daemon_pid), 0);
	daemon_pid = 0;
}

/* libvirt's helper hangs (its test driver reads a node file that is a FIFO no one writes): the
 * daemon serves /metrics all the while, kills the helper after its 10 s and says so, keeps no
 * child behind, and stops at once though the next helper hangs too. */
static void test_host_hung_helper(void **state)
{
	struct sysfs *s = *state;
	char sys[600], uri[700], log[640], fifo[600], *body, *text = NULL;
	char *argv[] = { VW_HOST_BIN, sys, "--host.procfs=/proc", uri,
			 "--passthrough.enable=false", "--web.listen-address=127.0.0.1:0",
			 "--monitor.interval=1s", "--metrics=node,vm", "--cpu.accounting=procfs",
			 "--gpu.enable=false", "--kube.node-name=node-a", NULL };
	unsigned port = 0;
	uint64_t t0;

	snprintf(fifo, sizeof(fifo), "%s/node.xml", s->root);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	snprintf(sys, sizeof(sys), "--host.sysfs=%s/sys", s->root);
	snprintf(uri, sizeof(uri), "--libvirt.uri=test://%s", fifo);
	snprintf(log, sizeof(log), "%s/host.log", s->root);
	assert_int_equal(vw_fixture_start_daemon_logged(argv, log, &daemon_pid, &port), 0);
	body = vw_fixture_scrape_when(port, "kepler_node_cpu_joules_total{");
	assert_non_null(body);
	free(body);
	for (int i = 0; i < 300; i++) { /* 30 s at most */
		free(text);
		text = vw_fixture_slurp(log, NULL);
		if (text && strstr(text, "gave no answer within 10000 ms: killed"))
			break;
		usleep(100 * 1000);
	}
	if (!text || !strstr(text, "gave no answer within 10000 ms: killed"))
		fail_msg("no kill of the hung helper; the host said:\n%s", text ? text : "(no log)");
	free(text);
	body = vw_fixture_scrape_when(port, "kepler_node_cpu_joules_total{");
	assert_non_null(body);
	free(body);
	t0 = (uint64_t)time(NULL);
	assert_int_equal(vw_fixture_stop_daemon(daemon_pid), 0);
	assert_true((uint64_t)time(NULL) - t0 <= 3); /* not held up by the hung helper */
	daemon_pid = 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_addr_valid),
		cmocka_unit_test_setup_teardown(test_pci_read, sysfs_setup, sysfs_teardown),
		cmocka_unit_test_setup_teardown(test_rows, sysfs_setup, sysfs_teardown),
		cmocka_unit_test_setup_teardown(test_rows_capped, sysfs_setup, sysfs_teardown),
#if VW_HAVE_LIBVIRT
		cmocka_unit_test_setup_teardown(test_host, sysfs_setup, sysfs_teardown),
		cmocka_unit_test_setup_teardown(test_host_hung_helper, sysfs_setup, sysfs_teardown),
#endif
	};

	vw_log_set_level(VW_LOG_WARN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

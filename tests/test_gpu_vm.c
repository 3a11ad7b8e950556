/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A vGPU host end to end: the real virtwatt-host over a fixture host (a QEMU process running
 * one VM) and the fake libnvidia-ml.so.1 as a vGPU host's driver: GPU 0 holds that VM's vGPU
 * (named by its UUID in upper case, 60 % SM, a type the GPU holds 4 of) and a vGPU of a VM the
 * host does not run (20 % SM). Of each interval's GPU energy the VM owns 60/80 of the active
 * energy and 1/4 of the idle energy, to the µJ; the stranger's share stays the node's
 * (unattributed, unreserved), never given to the VM. The VM's frame carries zone gpu, and the
 * real virtwatt-guest reading the VM's shared folder exports it as gpu="vm" in Kepler's node
 * GPU families, split as the host split it.
 */
#include "vw_test.h"

#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_nvml.h"
#include "fixture.h"
#include "host_fixture.h"
#include "macro.h"
#include "proto.h"
#include "vm_fixture.h"

#define UUID "3c1d5e7f-9a0b-4c2d-8e4f-5a6b7c8d9e0f"
#define UUID_UPPER "3C1D5E7F-9A0B-4C2D-8E4F-5A6B7C8D9E0F"
#define STRANGER "77777777-8888-4999-aaaa-bbbbbbbbbbbb"
#define QEMU_PID 4321
#define THE_VM "vm_id=\"" UUID "\""
#define GPU0 "gpu=\"0\""
#define GUEST_GPU "gpu=\"vm\""

static pid_t host_pid, guest_pid;
static struct host_fixture fx;
static char *dir;

static int teardown(void **state)
{
	(void)state;
	vw_fixture_kill(&guest_pid);
	vw_fixture_kill(&host_pid);
	host_fixture_fini(&fx);
	if (dir)
		vw_fixture_rm(dir);
	dir = NULL;
	return 0;
}

static void write_nvml(unsigned long long energy_mj)
{
	char text[1024];

	snprintf(text, sizeof(text),
		 "count=1\n0.uuid=GPU-5d1c7a3e-0f42-4b1a-9c3d-1e2f3a4b5c6d\n"
		 "0.name=NVIDIA A100-SXM4-40GB\n0.energy_mj=%llu\n0.power_mw=200000\n0.util=80\n"
		 "0.vgpus=7:" UUID_UPPER ":4:60,8:" STRANGER ":4:20\n",
		 energy_mj);
	fake_nvml_write(dir, text);
}

static double val(const char *body, const char *family, const char *labels)
{
	return vw_fixture_sample_sum(body, family, labels);
}

/* A scrape of port whose family{labels} is at least want (20 s at most). */
static char *await_at_least(unsigned port, const char *family, const char *labels, double want)
{
	char *body = vw_fixture_await_sample(port, family, labels, want, true, 20);

	if (!body)
		fail_msg("%s{%s} never reached %g", family, labels, want);
	return body;
}

/* The VM's frame in the shared folder, once its gpu zone holds at least want_uj. */
static struct vw_proto_zone await_frame_gpu(const char *share, uint64_t want_uj)
{
	char path[700];

	snprintf(path, sizeof(path), "%s/" UUID "/frame.json", share);
	for (int i = 0; i < 400; i++) {
		_cleanup_free_ char *text = NULL;
		struct vw_host_frame f;
		size_t len;

		text = vw_fixture_slurp(path, &len);
		if (text && len > 1 && vw_proto_decode_host(text, len - 1, &f) == VW_PROTO_OK)
			for (size_t z = 0; z < f.n_zones; z++)
				if (f.zones[z].zone == VW_ZONE_GPU &&
				    f.zones[z].idle_uj + f.zones[z].active_uj >= want_uj)
					return f.zones[z];
		usleep(50 * 1000);
	}
	fail_msg("the VM's frame never carried %" PRIu64 " µJ in zone gpu", want_uj);
	return (struct vw_proto_zone){ 0 };
}

/* The host over the fixture (one VM, its QEMU) and the fake NVML: its port. */
static unsigned start_host(const char *share)
{
	static const char *const threads[] = { "qemu-system-x86", "CPU 0/TCG", NULL };
	char sys[600], proc[600], sh[700], lib[600], log[640];
	char *argv[] = { VW_HOST_BIN, sys, proc, sh, lib, "--libvirt.uri=",
			 "--web.listen-address=127.0.0.1:0", "--monitor.interval=1s",
			 "--monitor.sample-interval=200ms", "--passthrough.interval=1s",
			 "--cpu.accounting=procfs", "--gpu.idle-watts=30",
			 "--kube.node-name=gpu-vm", NULL };
	static const struct host_fixture_zone zones[] = {
		{ "intel-rapl:0", "package-0", 262143328850ULL, 0, 20 },
	};
	unsigned port = 0;

	assert_int_equal(host_fixture_init(&fx, zones, 1, 4), 0);
	assert_int_equal(vm_fixture_proc(fx.proc, QEMU_PID, 5000,
					 "/usr/bin/qemu-system-x86_64|-name|guest=tenant|-uuid|" UUID
					 "|-smp|2",
					 threads, NULL),
			 0);
	snprintf(sys, sizeof(sys), "--host.sysfs=%s", fx.sys);
	snprintf(proc, sizeof(proc), "--host.procfs=%s", fx.proc);
	snprintf(sh, sizeof(sh), "--passthrough.share-root=%s", share);
	snprintf(lib, sizeof(lib), "--gpu.nvml-library=%s", VW_FAKE_NVML);
	snprintf(log, sizeof(log), "%s/host.log", dir);
	assert_int_equal(vw_fixture_start_daemon_logged(argv, log, &host_pid, &port), 0);
	return port;
}

static void test_vgpu_vm(void **state)
{
	char share[600], pt[700], log[640], sys[600], proc[600];
	char *gargv[] = { VW_GUEST_BIN, "--web.listen-address=127.0.0.1:0", pt, sys, proc,
			  "--monitor.interval=1s", "--cpu.accounting=procfs", "--model.cache-dir=",
			  "--state.file=", "--gpu.nvml-library=/nonexistent/libnvidia-ml.so.1",
			  NULL };
	_cleanup_free_ char *body = NULL, *gbody = NULL;
	double active, idle, vm_active, vm_idle, g_total, g_idle, g_active;
	struct vw_proto_zone z;
	unsigned port, gport = 0;

	(void)state;
	dir = vw_fixture_mkdtemp("gpu_vm");
	assert_non_null(dir);
	assert_int_equal(vw_fixture_mkdir(dir, "share"), 0);
	snprintf(share, sizeof(share), "%s/share", dir);
	fake_nvml_use(dir, NULL, 0); /* the daemons inherit it */
	write_nvml(1000000);
	port = start_host(share);

	/* The VM is listed and its vGPU found: its series appear. */
	free(await_at_least(port, "virtwatt_vm_gpu_idle_joules_total", THE_VM, 0));
	/* 600 J more on GPU 0; wait until the host has counted all of it. */
	write_nvml(1000000 + 600000);
	body = await_at_least(port, "kepler_node_gpu_joules_total", GPU0, 600);
	active = val(body, "kepler_node_gpu_active_joules_total", GPU0);
	idle = val(body, "kepler_node_gpu_idle_joules_total", GPU0);
	vm_active = val(body, "virtwatt_vm_gpu_joules_total", THE_VM);
	vm_idle = val(body, "virtwatt_vm_gpu_idle_joules_total", THE_VM);
	print_message("# GPU 0: %.6f J active, %.6f J idle; the VM: %.6f J active, %.6f J idle\n",
		      active, idle, vm_active, vm_idle);
	assert_double_near(active + idle, 600, 1e-6);
	assert_true(active > 100 && idle > 1); /* 30 W configured idle over the span */
	/* The VM's vGPU: 60 of the 80 % SM sampled, 1 of 4 instances' idle reservation. */
	assert_double_near(vm_active, active * 60 / 80, 1e-5);
	assert_double_near(vm_idle, idle / 4, 1e-5);
	/* The stranger's shares are the node's, explicitly: the sums are exact. */
	assert_double_near(val(body, "virtwatt_node_gpu_unattributed_joules_total", NULL),
			   active - vm_active, 1e-5);
	assert_double_near(val(body, "virtwatt_node_gpu_idle_unreserved_joules_total", NULL),
			   idle - vm_idle, 1e-5);
	assert_null(strstr(body, STRANGER));
	assert_non_null(strstr(body, "virtwatt_vm_gpu_joules_total{" THE_VM
				     ",vm_name=\"tenant\",hypervisor=\"kvm\",state=\"running\","
				     "node_name=\"gpu-vm\"}"));

	/* The VM's frame carries zone gpu: its cumulative figures, rounded down to 0.1 J. */
	z = await_frame_gpu(share, (uint64_t)((vm_active + vm_idle - 0.2) * 1e6));
	assert_true(z.active_uj <= (uint64_t)llround(vm_active * 1e6) &&
		    z.active_uj + 100000 >= (uint64_t)llround(vm_active * 1e6));
	assert_true(z.idle_uj <= (uint64_t)llround(vm_idle * 1e6) &&
		    z.idle_uj + 100000 >= (uint64_t)llround(vm_idle * 1e6));

	/* The guest reading the VM's folder exports it as its GPU, split as the host split it. */
	snprintf(pt, sizeof(pt), "--passthrough.path=%s/" UUID, share);
	snprintf(sys, sizeof(sys), "--host.sysfs=%s", fx.sys);
	snprintf(proc, sizeof(proc), "--host.procfs=%s", fx.proc);
	snprintf(log, sizeof(log), "%s/guest.log", dir);
	assert_int_equal(vw_fixture_start_daemon_logged(gargv, log, &guest_pid, &gport), 0);
	gbody = await_at_least(gport, "kepler_node_gpu_joules_total", GUEST_GPU,
			       (double)(z.idle_uj + z.active_uj) / 1e6);
	g_total = val(gbody, "kepler_node_gpu_joules_total", GUEST_GPU);
	g_idle = val(gbody, "kepler_node_gpu_idle_joules_total", GUEST_GPU);
	g_active = val(gbody, "kepler_node_gpu_active_joules_total", GUEST_GPU);
	print_message("# the guest: %.6f J (%.6f idle, %.6f active); the frame %.6f J\n", g_total,
		      g_idle, g_active, (double)(z.idle_uj + z.active_uj) / 1e6);
	assert_double_near(g_idle + g_active, g_total, 1e-6);
	/* The host's figures for the VM (to the publication's 0.1 J rounding). */
	assert_double_near(g_active, vm_active, 0.1 + 1e-6);
	assert_double_near(g_idle, vm_idle, 0.1 + 1e-6);
	assert_non_null(strstr(gbody, "kepler_node_gpu_info{" GUEST_GPU));
	assert_int_equal(vw_fixture_stop_daemon(guest_pid), 0);
	guest_pid = 0;
	assert_int_equal(vw_fixture_stop_daemon(host_pid), 0);
	host_pid = 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_vgpu_vm, teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

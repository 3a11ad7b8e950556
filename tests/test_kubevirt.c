/* SPDX-License-Identifier: Apache-2.0 */
/*
 * KubeVirt's VMs, counted once: a procfs fixture with a virt-launcher pod (virt-launcher, its
 * virtqemud and the QEMU in the pod's compute container) and a fake kubelet serving that pod with
 * KubeVirt's labels. The process scan finds the QEMU and its pod; the pod's labels name the VM by
 * its VirtualMachineInstance and namespace (virtwatt_vm_info; kepler_vm_* keep Kepler's labels);
 * the QEMU's energy is the VM's and no longer its pod's, container's or process's container_id,
 * every joule once (node = containers + uncontained + unattributed, and = pods + VMs + the rest).
 * Then --vm.info-labels: the chosen virtwatt_vm_info labels on the VM series when asked, Kepler's
 * label sets when not, unknown or repeated keys refused naming the valid ones. A QEMU in a pod
 * below the host's PID namespace is a VM only once the pod's metadata says virt-launcher: a
 * tenant's fake stays its pod's, and KubeVirt's QEMU is its pod's until the metadata comes, the
 * VM's from then on (nothing counted twice, no series going back). Last, the real virtwatt-host
 * in process over that procfs (no pod metadata: the QEMU stays its pod's process, counted).
 */
#include "vw_test.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attribute_gpu.h"
#include "carbon.h"
#include "config.h"
#include "daemon.h"
#include "fileio.h"
#include "fixture.h"
#include "host_fixture.h"
#include "log.h"
#include "options.h"
#include "prom.h"
#include "vm_fixture.h"
#include "vm_groups.h"
#include "vm_meta.h"
#include "vm_priv.h"
#include "vm_trust.h"
#include "cgroup_path.h"
#include "workloads.h"
#include "workloads_fixture.h"

#define VM_UUID "5d307ca9-b3ef-428c-8861-06e72d69f223"
#define POD_UID "8d1f3b3d-d488-4963-a1b2-0123456789ab"
#define CID "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
#define POD_NAME "virt-launcher-web-vm-x7k2p"
/* The compute container's cgroup (systemd driver, containerd), as the kubelet makes it. */
#define COMPUTE_CG                                                                                 \
	"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod8d1f3b3d_d488_4963_"   \
	"a1b2_0123456789ab.slice/cri-containerd-" CID ".scope\n"

/* A kubelet /pods list of one pod, POD_UID in namespace shop: name, then its labels and owners
 * (metadata keys), the compute container requesting one CPU. */
#define POD_LIST(name, meta)                                                                       \
	"{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"items\":[{\"metadata\":{"                       \
	"\"name\":\"" name "\",\"namespace\":\"shop\",\"uid\":\"" POD_UID "\"," meta "},"             \
	"\"spec\":{\"nodeName\":\"n1\",\"containers\":[{\"name\":\"compute\","                        \
	"\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]},"                                            \
	"\"status\":{\"phase\":\"Running\",\"containerStatuses\":[{\"name\":\"compute\","              \
	"\"containerID\":\"containerd://" CID "\"}]}}]}"

/* KubeVirt's labels on a virt-launcher pod of VMI web-vm (of VirtualMachine web). */
#define KUBEVIRT_LABELS                                                                            \
	"\"labels\":{\"kubevirt.io\":\"virt-launcher\",\"kubevirt.io/domain\":\"web-vm\","            \
	"\"kubevirt.io/created-by\":\"3cbb32a1-f11c-4065-99e6-62ce670bff12\","                       \
	"\"vm.kubevirt.io/name\":\"web\"}"

/* Its controller, VMI vmi, as virt-controller writes it (a real pod's: `oc get pod
 * virt-launcher-fedora06-wwtvw -o yaml`, github.com/akaliwod/ocp-virtualization,
 * doc/ocp-kubevirt-fedora-disk/OcPod.md). */
#define VMI_OWNER(vmi)                                                                             \
	"\"ownerReferences\":[{\"apiVersion\":\"kubevirt.io/v1\",\"kind\":\"VirtualMachineInstance\","  \
	"\"name\":\"" vmi "\",\"uid\":\"3cbb32a1-f11c-4065-99e6-62ce670bff12\",\"controller\":true,"    \
	"\"blockOwnerDeletion\":true}]"

/* The virt-launcher pod as the kubelet's /pods lists it: KubeVirt's labels, its VMI its
 * controller. */
static const char kubelet_pods[] = POD_LIST(POD_NAME, KUBEVIRT_LABELS "," VMI_OWNER("web-vm"));

/* The kubelet before it lists the virt-launcher pod. */
static const char no_pods[] = "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"items\":[]}";

/* A pod running a QEMU that is no virt-launcher (a Kata sandbox): its labels say nothing. */
static const char kata_pods[] = POD_LIST("kata-pod", "\"labels\":{\"app\":\"web\"}");

/* A tenant's pod labelled as KubeVirt's by its creator: no VMI owns it (a Deployment's
 * ReplicaSet does), or a VMI owns it but not the one its labels name. */
static const char forged_pods[] =
	POD_LIST("kata-pod", KUBEVIRT_LABELS ",\"ownerReferences\":[{\"apiVersion\":\"apps/v1\","
			     "\"kind\":\"ReplicaSet\",\"name\":\"web-5d8f\",\"uid\":"
			     "\"0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9\",\"controller\":true}]");
static const char other_vmi_pods[] = POD_LIST("kata-pod", KUBEVIRT_LABELS "," VMI_OWNER("db-vm"));

enum { P_INIT, P_LAUNCHER, P_VIRTQEMUD, P_QEMU, P_SSHD, P__COUNT };

struct ctx {
	char *root;
	int procfd;
	struct kubelet_fixture k;
	struct vw_podmeta *scan_pm; /* the pod metadata the VM scan asks (k.pm unless changed) */
	struct vw_qemu_trust *trust; /* root's QEMUs: counts the refused ones in pods */
	struct vw_vms *vms;
	struct vw_vm_info *list;
	size_t n_list;
	struct vw_workloads *w;
	struct vw_proc_cpu cpu[P__COUNT];
	struct vw_cpu_snapshot snap;
	uint64_t node[2]; /* package: active, idle */
};

static const struct {
	uint32_t pid;
	const char *argv, *comm, *cgroup;
} procs[P__COUNT] = {
	[P_INIT] = { 1, "/sbin/init", "systemd", "0::/init.scope\n" },
	[P_LAUNCHER] = { 700,
			 "/usr/bin/virt-launcher|--qemu-timeout|240s|--name|web-vm|--uid|" POD_UID
			 "|--namespace|shop",
			 "virt-launcher", COMPUTE_CG },
	[P_VIRTQEMUD] = { 710, "/usr/sbin/virtqemud|-f|/var/run/libvirt/virtqemud.conf",
			  "virtqemud", COMPUTE_CG },
	[P_QEMU] = { 720,
		     "/usr/libexec/qemu-kvm|-name|guest=shop_web-vm,debug-threads=on|-S|-uuid|" VM_UUID
		     "|-smp|2,sockets=1,dies=1,cores=2,threads=1|-m|2048",
		     "qemu-kvm", COMPUTE_CG },
	[P_SSHD] = { 800, "/usr/sbin/sshd|-D", "sshd", "0::/system.slice/ssh.service\n" },
};

static double value(const char *text, const char *prefix)
{
	const char *l = strstr(text, prefix);

	return l ? strtod(l + strlen(prefix) + 1, NULL) : NAN;
}

/* env->kubevirt_pod as the daemon's (vw_vm_kubevirt_pod), over c->scan_pm. */
static int scan_pod(void *ud, const char *pod_uid)
{
	const struct ctx *c = ud;

	return vw_vm_kubevirt_pod(c->scan_pm, pod_uid);
}

static void setup(struct ctx *c, const char *pods, const char *const *info_labels)
{
	static const struct vw_vm_source_ops *const scan_only[] = { &vw_vm_procscan, NULL };
	struct vw_vm_env env = { 0 };
	struct vw_workloads_opts o = { .host_cpus = 2, .processes = true, .containers = true,
				       .pods = true, .vms = true, .max_terminated = 100,
				       .adopted_by = vw_vm_vhost_owner,
				       .group_labels = info_labels };

	memset(c, 0, sizeof(*c));
	c->root = vw_fixture_mkdtemp("kubevirt");
	assert_non_null(c->root);
	assert_int_equal(vm_fixture_boot_id(c->root, "0a1b2c3d-boot\n"), 0);
	for (size_t i = 0; i < P__COUNT; i++) {
		const char *threads[] = { procs[i].comm, i == P_QEMU ? "CPU 0/KVM" : NULL,
					  i == P_QEMU ? "CPU 1/KVM" : NULL, NULL };

		assert_int_equal(vm_fixture_proc(c->root, procs[i].pid, 1000 + procs[i].pid,
						 procs[i].argv, threads, procs[i].cgroup),
				 0);
		c->cpu[i] = (struct vw_proc_cpu){ .tgid = procs[i].pid,
						  .start_time = 1000 + procs[i].pid };
		snprintf(c->cpu[i].comm, sizeof(c->cpu[i].comm), "%s", procs[i].comm);
	}
	c->procfd = vw_root_open(c->root);
	assert_true(c->procfd >= 0);
	kubelet_fixture_start(&c->k, pods);
	c->scan_pm = c->k.pm;
	env.procfs_fd = c->procfd;
	c->trust = vw_qemu_trust_new(-1, NULL, 0);
	assert_non_null(c->trust);
	env.qemu_trust = c->trust;
	env.kubevirt_pod = scan_pod;
	env.kubevirt_pod_ud = c;
	c->vms = vw_vms_open_with(&env, scan_only);
	assert_non_null(c->vms);
	o.procfs_fd = c->procfd;
	o.podmeta = c->k.pm;
	c->w = vw_workloads_new(&o);
	assert_non_null(c->w);
	c->snap.procs = c->cpu;
	c->snap.n_procs = P__COUNT;
}

static void teardown(struct ctx *c)
{
	vw_workloads_free(c->w);
	free(c->list);
	vw_vms_close(c->vms);
	vw_qemu_trust_free(c->trust);
	kubelet_fixture_stop(&c->k);
	close(c->procfd);
	vw_fixture_rm(c->root);
}

/* What the host does each interval (host/daemon.c refresh_vms): list, name, make groups. */
static void refresh(struct ctx *c, const char *const *info_labels)
{
	struct vw_group *g = NULL;
	size_t n = 0;

	free(c->list);
	c->list = NULL;
	assert_int_equal(vw_vms_list(c->vms, &c->list, &c->n_list), 0);
	vw_vm_kubevirt_resolve(c->list, c->n_list, c->k.pm);
	assert_int_equal(vw_vm_groups(c->list, c->n_list, info_labels, &g, &n), 0);
	assert_int_equal(vw_workloads_set_groups(c->w, g, n), 0);
	free(g);
}

/* One interval: CPU ms per process, active and idle µJ of package. */
static void interval(struct ctx *c, const uint64_t ms[P__COUNT], uint64_t active, uint64_t idle)
{
	struct vw_zone_energy ze[VW_ZONE__COUNT] = { 0 };

	for (size_t i = 0; i < P__COUNT; i++)
		c->cpu[i].cpu_ns += ms[i] * 1000000ULL;
	ze[VW_ZONE_PACKAGE] = (struct vw_zone_energy){ true, active, idle };
	c->node[0] += active;
	c->node[1] += idle;
	assert_int_equal(vw_workloads_update(c->w, &c->snap, ze, 5 * VW_NSEC_PER_SEC), 0);
}

/* Every joule once: node = containers + uncontained + unattributed, and = pods + VMs + the
 * processes in neither + unattributed (no VM joule is a pod's too). */
static void assert_once(struct ctx *c, uint64_t rest_active, uint64_t rest_idle)
{
	struct vw_workloads_totals t;

	vw_workloads_totals(c->w, &t);
	for (int m = 0; m < 2; m++) {
		assert_int_equal(t.containers[VW_ZONE_PACKAGE][m] + t.uncontained[VW_ZONE_PACKAGE][m] +
					 t.unattributed[VW_ZONE_PACKAGE][m],
				 c->node[m]);
		assert_int_equal(t.pods[VW_ZONE_PACKAGE][m] + t.vms[VW_ZONE_PACKAGE][m] +
					 (m ? rest_idle : rest_active) + t.unattributed[VW_ZONE_PACKAGE][m],
				 c->node[m]);
	}
}

static const uint64_t zero[P__COUNT];
/* 3 s of CPU: the QEMU 1.5 s, virt-launcher and virtqemud 0.25 s each, sshd 1 s. */
static const uint64_t ran[P__COUNT] = { 0, 250, 250, 1500, 1000 };

#define VM_LABELS "vm_id=\"" VM_UUID "\",vm_name=\"web-vm\",hypervisor=\"kvm\",state=\"running\","
#define POD_LABELS                                                                                 \
	"{pod_id=\"" POD_UID "\",pod_name=\"" POD_NAME "\",pod_namespace=\"shop\",state=\"running\","  \
	"zone=\"package\",node_name=\"n1\"}"

static void test_named_by_vmi(void **state)
{
	struct vw_prom_writer *pw = vw_prom_writer_new(VW_PROM_TEXT_0_0_4, 0);
	const struct vw_vm_info *vm;
	char *text = NULL;
	struct ctx c;

	(void)state;
	assert_non_null(pw);
	setup(&c, kubelet_pods, NULL);
	assert_int_equal(vw_vms_list(c.vms, &c.list, &c.n_list), 0);
	assert_int_equal(c.n_list, 1);
	vm = &c.list[0];
	/* The scan: QEMU's domain name, and the pod its cgroup names. */
	assert_string_equal(vm->uuid, VM_UUID);
	assert_string_equal(vm->name, "shop_web-vm");
	assert_string_equal(vm->pod_uid, POD_UID);
	assert_int_equal(vm->vcpus, 2);
	assert_false(vw_vm_is_kubevirt(vm));
	/* The pod's labels: the VMI, its namespace, pod and VirtualMachine. */
	vw_vm_kubevirt_resolve(c.list, c.n_list, c.k.pm);
	assert_true(vw_vm_is_kubevirt(vm));
	assert_string_equal(vm->name, "web-vm");
	assert_string_equal(vm->owner.namespace_, "shop");
	assert_string_equal(vm->owner.pod_name, POD_NAME);
	assert_string_equal(vm->owner.instance_name, "web");
	assert_int_equal(vw_vm_meta_render(c.list, c.n_list, pw, "n1"), 0);
	assert_int_equal(vw_prom_finish(pw, &text, NULL), 0);
	assert_non_null(strstr(text, "virtwatt_vm_info{vm_id=\"" VM_UUID "\",vm_name=\"web-vm\","
				     "hypervisor=\"kvm\",source=\"procscan\",platform=\"kubevirt\","
				     "instance_name=\"web\",flavor=\"\",user_id=\"\",user_name=\"\","
				     "project_id=\"\",project_name=\"\",proxmox_vmid=\"\","
				     "namespace=\"shop\",pod_name=\"" POD_NAME "\",node_name=\"n1\"} 1"));
	free(text);
	vw_prom_writer_free(pw);
	teardown(&c);
}

/* The QEMU's energy is the VM's once: not its pod's, container's or process's container. */
static void test_counted_once(void **state)
{
	char *text;
	struct ctx c;

	(void)state;
	setup(&c, kubelet_pods, NULL);
	refresh(&c, NULL);
	interval(&c, zero, 0, 0);
	refresh(&c, NULL);
	/* 12 J active by CPU time: QEMU 6, virt-launcher 1, virtqemud 1, sshd 4. 8 J idle: the pod
	 * reserves 1000m of 2000m (4 J; the VM reserves through it, not again by its vCPUs), to
	 * its processes by CPU time: QEMU 3, virt-launcher 0.5, virtqemud 0.5; 4 J unreserved. */
	interval(&c, ran, 12000000, 8000000);
	text = workloads_fixture_render(c.w);
	assert_double_near(value(text, "kepler_vm_cpu_joules_total{" VM_LABELS
				       "zone=\"package\",node_name=\"n1\"}"),
			   6.0, 1e-9);
	assert_double_near(value(text, "virtwatt_vm_cpu_idle_joules_total{" VM_LABELS
				       "zone=\"package\",node_name=\"n1\"}"),
			   3.0, 1e-9);
	/* The pod and its compute container: virt-launcher's and virtqemud's, not the QEMU's. */
	assert_double_near(value(text, "kepler_pod_cpu_joules_total" POD_LABELS), 2.0, 1e-9);
	assert_double_near(value(text, "virtwatt_pod_cpu_idle_joules_total" POD_LABELS), 1.0, 1e-9);
	assert_double_near(value(text, "kepler_container_cpu_joules_total{container_id=\"" CID
				       "\",container_name=\"compute\",runtime=\"containerd\","
				       "state=\"running\",zone=\"package\",pod_id=\"" POD_UID
				       "\",node_name=\"n1\"}"),
			   2.0, 1e-9);
	/* The QEMU process: a VM's, in no container's sums. */
	assert_double_near(value(text, "kepler_process_cpu_joules_total{pid=\"720\",comm=\"qemu-kvm\","
				       "exe=\"\",type=\"vm\",state=\"running\",container_id=\"\","
				       "vm_id=\"" VM_UUID "\",zone=\"package\",node_name=\"n1\"}"),
			   6.0, 1e-9);
	assert_double_near(value(text, "kepler_process_cpu_joules_total{pid=\"700\","
				       "comm=\"virt-launcher\",exe=\"\",type=\"container\","
				       "state=\"running\",container_id=\"" CID "\",vm_id=\"\","
				       "zone=\"package\",node_name=\"n1\"}"),
			   1.0, 1e-9);
	/* Counted where no container counts it: sshd's 4 J and the QEMU's 6 J (active), 3 J. */
	assert_double_near(value(text, "virtwatt_node_cpu_uncontained_joules_total{zone=\"package\","
				       "mode=\"active\",node_name=\"n1\"}"),
			   10.0, 1e-9);
	assert_double_near(value(text, "virtwatt_node_cpu_uncontained_joules_total{zone=\"package\","
				       "mode=\"idle\",node_name=\"n1\"}"),
			   3.0, 1e-9);
	assert_double_near(value(text, "virtwatt_node_cpu_unattributed_joules_total{zone=\"package\","
				       "mode=\"idle\",node_name=\"n1\"}"),
			   4.0, 1e-9);
	assert_once(&c, 4000000, 0);
	free(text);
	teardown(&c);
}

#define KATA_POD_LABELS                                                                            \
	"{pod_id=\"" POD_UID "\",pod_name=\"kata-pod\",pod_namespace=\"shop\",state=\"running\","   \
	"zone=\"package\",node_name=\"n1\"}"

/* The QEMU in pod "kata-pod" as pods lists it, its status' NSpid: line nspid, listed as n VMs;
 * two intervals, the second's rendered (free() it). */
static char *run_in_pod(struct ctx *c, const char *pods, const char *nspid, size_t n)
{
	setup(c, pods, NULL);
	assert_int_equal(vm_fixture_status(c->root, 720, "qemu-kvm", 0, 0, nspid), 0);
	refresh(c, NULL);
	assert_int_equal(c->n_list, n);
	interval(c, zero, 0, 0);
	refresh(c, NULL);
	interval(c, ran, 12000000, 8000000);
	return workloads_fixture_render(c->w);
}

/* A QEMU in a pod that is no virt-launcher (a Kata sandbox's): not KubeVirt's, both views as
 * before (the pod's energy is its QEMU's). */
static void test_other_pod_keeps_both(void **state)
{
	char *text;
	struct ctx c;

	(void)state;
	/* Kata's QEMU is started by its runtime on the host: the host's PID namespace */
	text = run_in_pod(&c, kata_pods, "0\nNStgid:\t720\nNSpid:\t720", 1);
	assert_false(vw_vm_is_kubevirt(&c.list[0]));
	assert_string_equal(c.list[0].name, "shop_web-vm");
	assert_double_near(value(text, "kepler_pod_cpu_joules_total" KATA_POD_LABELS), 8.0, 1e-9);
	assert_double_near(value(text, "kepler_vm_cpu_joules_total{vm_id=\"" VM_UUID
				       "\",vm_name=\"shop_web-vm\",hypervisor=\"kvm\","
				       "state=\"running\",zone=\"package\",node_name=\"n1\"}"),
			   6.0, 1e-9);
	free(text);
	teardown(&c);
}

/* The fake's 6 J stay its pod's (text: run_in_pod's, freed), every joule once. 12 J active by CPU
 * time: the pod's processes 8 (the fake's 6 among them), sshd 4; 8 J idle: the pod reserves half
 * (4 J), the rest unattributed. */
static void assert_stays_pods(struct ctx *c, char *text)
{
	assert_double_near(value(text, "kepler_pod_cpu_joules_total" KATA_POD_LABELS), 8.0, 1e-9);
	assert_double_near(value(text, "kepler_container_cpu_joules_total{container_id=\"" CID
				       "\",container_name=\"compute\",runtime=\"containerd\","
				       "state=\"running\",zone=\"package\",pod_id=\"" POD_UID
				       "\",node_name=\"n1\"}"),
			   8.0, 1e-9);
	assert_double_near(value(text, "kepler_process_cpu_joules_total{pid=\"720\",comm=\"qemu-kvm\","
				       "exe=\"\",type=\"container\",state=\"running\",container_id=\""
				       CID "\",vm_id=\"\",zone=\"package\",node_name=\"n1\"}"),
			   6.0, 1e-9);
	assert_null(strstr(text, "kepler_vm_cpu_joules_total{"));
	assert_once(c, 4000000, 0);
	free(text);
}

/*
 * A tenant's fake: root in a pod that is no virt-launcher, in the pod's PID namespace (no
 * hostPID), runs `exec -a /usr/libexec/qemu-kvm` with KubeVirt's domain name. No VM: its energy
 * stays its pod's and container's (before, a VM series; named <ns>_<vmi> without the pod's
 * metadata, KubeVirt's: its energy taken out of the pod's).
 */
static void test_pod_fake_stays_pods(void **state)
{
	struct ctx c;

	(void)state;
	assert_stays_pods(&c, run_in_pod(&c, kata_pods, "0\nNStgid:\t720\t9\nNSpid:\t720\t9", 0));
	assert_int_equal(vw_qemu_trust_pods_refused(c.trust), 1);
	teardown(&c);
}

/* The warnings logged, one after another. */
static void keep_warnings(enum vw_log_level level, const char *msg, void *ud)
{
	char *all = ud;

	if (level == VW_LOG_WARN)
		snprintf(all + strlen(all), 4096 - strlen(all), "%s\n", msg);
}

/*
 * A tenant's fake in a pod its creator labelled as KubeVirt's (kubevirt.io=virt-launcher,
 * kubevirt.io/domain: web-vm): the labels are the creator's to write, the controller
 * ownerReference is not (a pod owned by a VMI that does not exist is garbage-collected). Owned by
 * a ReplicaSet, or by VMI db-vm while its labels say web-vm: no VM, refused and counted, the
 * warning naming why; its energy its pod's (before, a VirtualMachineInstance's: taken out of the
 * pod's). In the host's PID namespace (a hostPID pod) its QEMU is a VM, but not KubeVirt's.
 */
static void test_pod_forged_labels_stays_pods(void **state)
{
	static const struct {
		const char *pods, *why;
	} cases[] = {
		{ forged_pods, "labelled as KubeVirt's but not owned by a VirtualMachineInstance" },
		{ other_vmi_pods, "owned by a VirtualMachineInstance other than its kubevirt.io/domain" },
	};
	static char warnings[4096]; /* static: a failed assertion leaves the sink set */
	struct ctx c;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		warnings[0] = '\0';
		vw_log_set_level(VW_LOG_WARN);
		vw_log_set_sink(keep_warnings, warnings);
		assert_stays_pods(&c, run_in_pod(&c, cases[i].pods,
						 "0\nNStgid:\t720\t9\nNSpid:\t720\t9", 0));
		vw_log_set_sink(NULL, NULL);
		vw_log_set_level(VW_LOG_ERROR);
		assert_int_equal(vw_qemu_trust_pods_refused(c.trust), 1);
		if (!strstr(warnings, cases[i].why) || !strstr(warnings, "pod " POD_UID))
			fail_msg("case %zu: warnings \"%s\"", i, warnings);
		teardown(&c);

		free(run_in_pod(&c, cases[i].pods, "0\nNStgid:\t720\nNSpid:\t720", 1));
		assert_false(vw_vm_is_kubevirt(&c.list[0]));
		assert_string_equal(c.list[0].name, "shop_web-vm");
		teardown(&c);
	}
}

/*
 * KubeVirt's QEMU before the pod metadata lists its pod (the watch late, or restarted): its
 * pod's process, no VM; once listed, the VM's. The VM's series start then (no energy going
 * back: the pod kept what the QEMU used before), the pod's carry on, every joule once.
 */
static void test_metadata_late(void **state)
{
	struct kubelet_fixture early;
	char *text;
	struct ctx c;

	(void)state;
	setup(&c, kubelet_pods, NULL);
	kubelet_fixture_start(&early, no_pods);
	c.scan_pm = early.pm;
	refresh(&c, NULL);
	assert_int_equal(c.n_list, 0);
	interval(&c, zero, 0, 0);
	refresh(&c, NULL);
	assert_int_equal(c.n_list, 0);
	interval(&c, ran, 12000000, 8000000);
	text = workloads_fixture_render(c.w);
	assert_double_near(value(text, "kepler_pod_cpu_joules_total" POD_LABELS), 8.0, 1e-9);
	assert_null(strstr(text, "kepler_vm_cpu_joules_total{"));
	free(text);
	assert_once(&c, 4000000, 0);

	c.scan_pm = c.k.pm; /* listed now */
	refresh(&c, NULL);
	assert_int_equal(c.n_list, 1);
	assert_true(vw_vm_is_kubevirt(&c.list[0]));
	interval(&c, ran, 12000000, 8000000);
	text = workloads_fixture_render(c.w);
	/* this interval's 6 J active and 3 J idle only; the pod 8 + 2 J active, 4 + 1 J idle */
	assert_double_near(value(text, "kepler_vm_cpu_joules_total{" VM_LABELS
				       "zone=\"package\",node_name=\"n1\"}"),
			   6.0, 1e-9);
	assert_double_near(value(text, "virtwatt_vm_cpu_idle_joules_total{" VM_LABELS
				       "zone=\"package\",node_name=\"n1\"}"),
			   3.0, 1e-9);
	assert_double_near(value(text, "kepler_pod_cpu_joules_total" POD_LABELS), 10.0, 1e-9);
	assert_double_near(value(text, "virtwatt_pod_cpu_idle_joules_total" POD_LABELS), 5.0, 1e-9);
	assert_once(&c, 8000000, 0);
	free(text);
	kubelet_fixture_stop(&early);
	teardown(&c);
}

/* Without the pod's metadata (no podmeta, or not listed yet): the domain name decides. */
static void test_split(void **state)
{
	char ns[64], vmi[254];
	struct vw_vm_info vm = { .name = "default_fedora.v2", .pod_uid = POD_UID };

	(void)state;
	assert_true(vw_vm_kubevirt_split("shop_web-vm", ns, vmi));
	assert_string_equal(ns, "shop");
	assert_string_equal(vmi, "web-vm");
	assert_false(vw_vm_kubevirt_split("sandbox-0123abcd", ns, vmi)); /* Kata's */
	assert_false(vw_vm_kubevirt_split("Shop_web", ns, vmi));         /* upper case */
	assert_false(vw_vm_kubevirt_split("_web", ns, vmi));
	assert_false(vw_vm_kubevirt_split("shop_", ns, vmi));
	assert_false(vw_vm_kubevirt_split("shop_web_x", ns, vmi));
	assert_false(vw_vm_kubevirt_split("shop-_web", ns, vmi));
	assert_false(vw_vm_kubevirt_split("shop_web..x", ns, vmi));
	assert_false(vw_vm_kubevirt_split("shop_-web", ns, vmi));
	vw_vm_kubevirt_resolve(&vm, 1, NULL);
	assert_true(vw_vm_is_kubevirt(&vm));
	assert_string_equal(vm.name, "fedora.v2");
	assert_string_equal(vm.owner.namespace_, "default");
	assert_string_equal(vm.owner.pod_name, "");
	/* Not in a pod: never KubeVirt's, whatever its name. */
	vm = (struct vw_vm_info){ .name = "default_fedora" };
	vw_vm_kubevirt_resolve(&vm, 1, NULL);
	assert_false(vw_vm_is_kubevirt(&vm));
	assert_string_equal(vm.name, "default_fedora");
}

/* The registry rendered with carbon (a static 360 g/kWh) observing its counters. */
static char *render_with_carbon(struct vw_workloads *w)
{
	struct vw_carbon_opts co = { .static_g_per_kwh = 360, .start_ns = VW_NSEC_PER_SEC };
	struct vw_prom_writer *pw = vw_prom_writer_new(VW_PROM_TEXT_0_0_4, 0);
	struct vw_carbon *carbon;
	char why[256], *out = NULL;

	assert_non_null(pw);
	carbon = vw_carbon_new(&co, why, sizeof(why));
	assert_non_null(carbon);
	vw_carbon_begin(carbon, 5 * (int64_t)VW_NSEC_PER_SEC);
	vw_prom_writer_observe_counters(pw, vw_carbon_observe, carbon);
	assert_int_equal(vw_workloads_render(w, pw, "n1", "procfs", NULL), 0);
	assert_int_equal(vw_carbon_render(carbon, pw, "n1", true), 0);
	assert_int_equal(vw_prom_finish(pw, &out, NULL), 0);
	vw_prom_writer_free(pw);
	vw_carbon_free(carbon);
	return out;
}

/* --vm.info-labels: the chosen labels after Kepler's on the VM series, CPU and vGPU. */
static void test_info_labels(void **state)
{
	static const char *const keys[] = { "namespace", "pod_name", "project_name", NULL };
	static const struct vw_group_gpu vgpu = { .id = VM_UUID, .idle_uj = 1000000,
						  .active_uj = 2000000 };
	static const struct vw_gpu_attr_device gpu = { .idle_uj = 3000000, .active_uj = 5000000 };
	char *text;
	struct ctx c;

	(void)state;
	setup(&c, kubelet_pods, keys);
	refresh(&c, keys);
	interval(&c, zero, 0, 0);
	refresh(&c, keys);
	interval(&c, ran, 12000000, 8000000);
	/* A vGPU of the VM's: 2 J active and 1 J idle of the GPUs' 5 J and 3 J. */
	assert_int_equal(vw_workloads_gpu(c.w, &(struct vw_workloads_gpu_in){
						       .groups = &vgpu, .n_groups = 1,
						       .devices = &gpu, .n_devices = 1 }),
			 0);
	text = workloads_fixture_render(c.w);
	assert_double_near(value(text, "virtwatt_vm_gpu_joules_total{" VM_LABELS "node_name=\"n1\","
				       "namespace=\"shop\",pod_name=\"" POD_NAME "\",project_name=\"\"}"),
			   2.0, 1e-9);
	assert_double_near(value(text, "virtwatt_vm_gpu_idle_joules_total{" VM_LABELS
				       "node_name=\"n1\",namespace=\"shop\",pod_name=\"" POD_NAME
				       "\",project_name=\"\"}"),
			   1.0, 1e-9);
	assert_double_near(value(text, "kepler_vm_cpu_joules_total{" VM_LABELS
				       "zone=\"package\",node_name=\"n1\",namespace=\"shop\","
				       "pod_name=\"" POD_NAME "\",project_name=\"\"}"),
			   6.0, 1e-9);
	assert_double_near(value(text, "virtwatt_vm_cpu_idle_joules_total{" VM_LABELS
				       "zone=\"package\",node_name=\"n1\",namespace=\"shop\","
				       "pod_name=\"" POD_NAME "\",project_name=\"\"}"),
			   3.0, 1e-9);
	assert_non_null(strstr(text, "kepler_vm_cpu_watts{" VM_LABELS "zone=\"package\","
				     "node_name=\"n1\",namespace=\"shop\","));
	assert_null(strstr(text, "kepler_vm_cpu_joules_total{" VM_LABELS
				 "zone=\"package\",node_name=\"n1\"}"));
	/* The other levels keep Kepler's labels. */
	assert_non_null(strstr(text, "kepler_pod_cpu_joules_total" POD_LABELS));
	free(text);
	/* Carbon follows the VM's energy series all the same (its own labels: Kepler's). */
	text = render_with_carbon(c.w);
	assert_double_near(value(text, "virtwatt_vm_co2e_grams_total{" VM_LABELS
				       "zone=\"package\",node_name=\"n1\",intensity_source=\"static\"}"),
			   6.0 * 360 / 3.6e6, 1e-12);
	free(text);
	teardown(&c);

	/* Not asked: exactly Kepler's label set. */
	setup(&c, kubelet_pods, NULL);
	refresh(&c, NULL);
	interval(&c, zero, 0, 0);
	refresh(&c, NULL);
	interval(&c, ran, 12000000, 8000000);
	text = workloads_fixture_render(c.w);
	assert_non_null(strstr(text, "kepler_vm_cpu_joules_total{" VM_LABELS
				     "zone=\"package\",node_name=\"n1\"} 6\n"));
	assert_null(strstr(text, "namespace=\"shop\",pod_name"));
	free(text);
	teardown(&c);
}

/* Unknown or repeated keys are refused, on the command line and in YAML, naming the valid. */
static void test_info_labels_config(void **state)
{
	struct vw_host_config cfg;
	char err[1024], *dir, path[512];
	char *bad[] = { "virtwatt-host", "--vm.info-labels=project_name,flavour", NULL };
	char *good[] = { "virtwatt-host", "--vm.info-labels=project_name,flavor", NULL };
	char *yaml[] = { "virtwatt-host", path, NULL };
	static const char *const twice[] = { "flavor", "flavor", NULL };
	static const char *const vm_id[] = { "vm_id", NULL };

	(void)state;
	memset(&cfg, 0, sizeof(cfg));
	assert_int_not_equal(vw_config_load(vw_host_program(), &cfg, 2, bad, stdout, err,
					    sizeof(err)),
			     0);
	assert_non_null(strstr(err, "flavour"));
	assert_non_null(strstr(err, "project_name"));
	assert_non_null(strstr(err, "namespace"));
	vw_config_free(vw_host_program(), &cfg);
	memset(&cfg, 0, sizeof(cfg));
	assert_int_equal(vw_config_load(vw_host_program(), &cfg, 2, good, stdout, err, sizeof(err)),
			 0);
	assert_int_equal(cfg.vm_info_labels.n, 2);
	assert_string_equal(cfg.vm_info_labels.v[1], "flavor");
	vw_config_free(vw_host_program(), &cfg);

	dir = vw_fixture_mkdtemp("kvcfg");
	assert_int_equal(vw_fixture_write(dir, "c.yaml", "vm:\n  infoLabels: [namespace, pod_name]\n",
					  0),
			 0);
	snprintf(path, sizeof(path), "--config.file=%s/c.yaml", dir);
	memset(&cfg, 0, sizeof(cfg));
	assert_int_equal(vw_config_load(vw_host_program(), &cfg, 2, yaml, stdout, err, sizeof(err)),
			 0);
	assert_int_equal(cfg.vm_info_labels.n, 2);
	assert_string_equal(cfg.vm_info_labels.v[0], "namespace");
	vw_config_free(vw_host_program(), &cfg);
	vw_fixture_rm(dir);

	/* The daemon's own check: a key twice, or one the VM series have already. */
	assert_int_equal(vw_vm_groups_check(twice), -EINVAL);
	assert_int_equal(vw_vm_groups_check(vm_id), -EINVAL);
	assert_int_equal(vw_vm_groups_check(NULL), 0);
}

/* ---- The real virtwatt-host, in process on simulated time ---- */

#define T0 (1000 * VW_NSEC_PER_SEC)

struct host_ctx {
	struct host_fixture fx;
	struct vw_host_config cfg;
	struct vw_host *host;
	uint64_t ns[P__COUNT]; /* each process's CPU time so far */
};

/* One simulated second: each process runs ms[i] (its schedstat), the meter advances, the
 * interval closes. */
static void host_second(struct host_ctx *c, const uint64_t ms[P__COUNT])
{
	uint64_t busy = 0;

	for (size_t i = 0; i < P__COUNT; i++) {
		char rel[64], text[64];

		c->ns[i] += ms[i] * 1000000ULL;
		busy += ms[i];
		snprintf(rel, sizeof(rel), "%u/task/%u/schedstat", procs[i].pid, procs[i].pid);
		snprintf(text, sizeof(text), "%" PRIu64 " 0 0\n", c->ns[i]);
		assert_int_equal(vw_fixture_write(c->fx.proc, rel, text, 0), 0);
	}
	assert_int_equal(host_fixture_advance(&c->fx, (double)busy / 2000), 0);
	vw_host_sample(c->host, T0 + c->fx.seconds * VW_NSEC_PER_SEC);
	assert_int_equal(vw_host_publish(c->host, T0 + c->fx.seconds * VW_NSEC_PER_SEC), 0);
}

static double sum_of(const char *text, const char *family, const char *match)
{
	return vw_fixture_sample_sum(text, family, match);
}

/*
 * The daemon's own wiring (host/daemon.c): the process scan over --host.procfs finds the QEMU
 * (KubeVirt's UID 107, trusted by default; a local user's impostor claiming its UUID is not)
 * in its pod's cgroup and below the host's PID namespace, no pod metadata here: nothing says it
 * is KubeVirt's rather than a tenant's fake under KubeVirt's domain name, so it is no VM (before,
 * the domain name made it KubeVirt's, its energy taken out of the compute container's): counted
 * in virtwatt_vm_refused_pod_qemu_processes, its energy the compute container's, and the node's
 * sums stay exact.
 */
static void test_host(void **state)
{
	static const struct host_fixture_zone zone[] = {
		{ "intel-rapl:0", "package-0", 262143328850ULL, 0, 20 },
	};
	/* The QEMU runs three times what virt-launcher does. */
	static const uint64_t ms[P__COUNT] = { 0, 100, 0, 300, 200 };
	struct host_ctx c = { 0 };
	char sys[600], proc[600], uri[600], err[512] = "", *dir, *text = NULL;
	char *argv[] = { "virtwatt-host", sys, proc, uri, "--kube.node-name=n1",
			 "--monitor.interval=1s", "--metrics=node,process,container,pod,vm",
			 "--cpu.accounting=procfs", "--passthrough.enable=false",
			 "--gpu.enable=false", "--vm.info-labels=namespace", NULL };
	double vm_w, cont_w, qemu_w;
	size_t len = 0;

	(void)state;
	assert_int_equal(host_fixture_init(&c.fx, zone, ARRAY_SIZE(zone), 2), 0);
	for (size_t i = 0; i < P__COUNT; i++) {
		const char *threads[] = { procs[i].comm, NULL };

		assert_int_equal(vm_fixture_proc(c.fx.proc, procs[i].pid, 1000 + procs[i].pid,
						 procs[i].argv, threads, procs[i].cgroup),
				 0);
	}
	/* KubeVirt's QEMU runs as UID 107 (trusted by default); PID 800 is a local user's
	 * impostor: `exec -a /usr/bin/qemu-system-x86_64` claiming the VM's UUID and a name,
	 * younger than the real QEMU, run as nobody. */
	assert_int_equal(vm_fixture_owner(c.fx.proc, 720, "qemu-kvm", 107, 107), 0);
	assert_int_equal(vm_fixture_proc(c.fx.proc, 800, 1800,
					 "/usr/bin/qemu-system-x86_64|-uuid|" VM_UUID
					 "|-name|guest=victim-vm",
					 (const char *const[]){ "sshd", NULL }, procs[P_SSHD].cgroup),
			 0);
	assert_int_equal(vm_fixture_owner(c.fx.proc, 800, "sshd", 65534, 65534), 0);
	dir = vw_fixture_mkdtemp("kvhost");
	assert_int_equal(vw_fixture_write(dir, "node.xml", "<node></node>\n", 0), 0);
	snprintf(sys, sizeof(sys), "--host.sysfs=%s", c.fx.sys);
	snprintf(proc, sizeof(proc), "--host.procfs=%s", c.fx.proc);
	snprintf(uri, sizeof(uri), "--libvirt.uri=test://%s/node.xml", dir);
	if (vw_config_load(vw_host_program(), &c.cfg, ARRAY_SIZE(argv) - 1, argv, stdout, err,
			   sizeof(err)) != 0)
		fail_msg("config: %s", err);
	assert_int_equal(vw_host_new(&c.cfg, &c.host), 0);
	vw_host_sample(c.host, T0);
	for (int i = 0; i < 6; i++)
		host_second(&c, ms);
	assert_int_equal(vw_exposition_copy(vw_host_exposition(c.host), 0, &text, &len), 0);
	assert_null(strstr(text, "virtwatt_vm_info{vm_id=\"" VM_UUID "\""));
	assert_null(strstr(text, "kepler_vm_cpu_joules_total{"));
	assert_non_null(strstr(text, "virtwatt_vm_refused_pod_qemu_processes{node_name=\"n1\"} 1\n"));
	/* The last second's watts: the compute container has the QEMU's and virt-launcher's (a
	 * third of the QEMU's), the QEMU's process series names the container. */
	vm_w = sum_of(text, "kepler_vm_cpu_watts", "vm_name=\"web-vm\"");
	cont_w = sum_of(text, "kepler_container_cpu_watts", "container_id=\"" CID "\"");
	qemu_w = sum_of(text, "kepler_process_cpu_watts", "pid=\"720\"");
	print_message("# VM %.6f W, compute container %.6f W, QEMU process %.6f W\n", vm_w, cont_w,
		      qemu_w);
	assert_true(qemu_w > 1);
	assert_double_near(vm_w, 0, 1e-9);
	assert_double_near(cont_w * 3, qemu_w * 4, 1e-5);
	assert_non_null(strstr(text, "pid=\"720\",comm=\"qemu-kvm\",exe=\"\",type=\"container\","
				     "state=\"running\",container_id=\"" CID "\",vm_id=\"\""));
	/* The impostor is an ordinary process, counted; it named no VM and took no UUID. */
	assert_null(strstr(text, "victim-vm"));
	assert_non_null(strstr(text, "pid=\"800\",comm=\"sshd\",exe=\"\",type=\"regular\","));
	assert_non_null(strstr(text, "virtwatt_vm_untrusted_qemu_processes{node_name=\"n1\"} 1\n"));
	/* Every joule once: node = containers + uncontained + unattributed, per mode. */
	for (int m = 0; m < 2; m++) {
		const char *mode = m ? "idle" : "active";
		char sel[64];
		double node, parts;

		snprintf(sel, sizeof(sel), "zone=\"package\",mode=\"%s\"", mode);
		node = sum_of(text, m ? "kepler_node_cpu_idle_joules_total"
				      : "kepler_node_cpu_active_joules_total",
			      "zone=\"package\"");
		parts = sum_of(text, m ? "virtwatt_container_cpu_idle_joules_total"
				       : "kepler_container_cpu_joules_total",
			       "zone=\"package\"") +
			sum_of(text, "virtwatt_node_cpu_uncontained_joules_total", sel) +
			sum_of(text, "virtwatt_node_cpu_unattributed_joules_total", sel);
		print_message("# %s: node %.6f J, containers + uncontained + unattributed %.6f J\n",
			      mode, node, parts);
		assert_true(node > 0);
		assert_double_near(parts, node, 1e-5);
	}
	free(text);
	vw_host_free(c.host);
	vw_config_free(vw_host_program(), &c.cfg);
	host_fixture_fini(&c.fx);
	vw_fixture_rm(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_named_by_vmi),
		cmocka_unit_test(test_counted_once),
		cmocka_unit_test(test_other_pod_keeps_both),
		cmocka_unit_test(test_pod_fake_stays_pods),
		cmocka_unit_test(test_pod_forged_labels_stays_pods),
		cmocka_unit_test(test_metadata_late),
		cmocka_unit_test(test_info_labels),
		cmocka_unit_test(test_info_labels_config),
		cmocka_unit_test(test_host),
	};

	vw_log_set_level(VW_LOG_ERROR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

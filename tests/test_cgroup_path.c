/* SPDX-License-Identifier: Apache-2.0 */
/* cgroup path -> container/pod: every runtime and driver, v1 and v2 files, procfs fixture. */
#include "vw_test.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "fixture.h"
#include "macro.h"
#include "cgroup_path.h"

/* Container IDs and pod UIDs as seen on real nodes (docker, containerd, cri-o, podman, kind). */
#define ID_DOCKER "2fa3e04b676df750842faf017052dd37ea0cc5bc7259a3487a1718c7fe100c94"
#define ID_DOCKER2 "ce82d94d69e1fbbc7feeb66930c69e9b96d9f151f594773e5d0e342741d15437"
#define ID_CTRD "2b180104511194aab36fd295d3e217439f3ddb5bc88277f37b4952abee85c40e"
#define ID_CTRD2 "01fd96f7ad292b02a8317cde4ecb8c7ef3cc06ffdd113f13410e0837eb2b2a20"
#define ID_KUBE "35b97177dada20362ab90d90ac63cd54e8a41cf87bea34f270631b6da17f4a93"
#define ID_CRIO "f93ee491b8ed2680d5a909eb098b14a9430173b57ca1c4efedd8768566d67e8e"
#define ID_PODMAN "06dc5f321aad8726aa26559f16ec203bc099245bc44894b14a89fc02b022d1d5"
#define ID_ROOTLESS "3f05ee050f82c0145f1d88c94269c39dff0f07dbf8bba20aafd54b3a75dcaecc"
#define ID_KIND_NODE "fd9d0ea06257a9780827cbc7fd92e3812a54fca26d63e191b73610d5d48b9cbd"
#define ID_KIND_CTR "99f3a16ea25b7724cb56a4f0c0df1113ad9474fbf5545bead97fd5c7f61c13f4"

#define UID_A "3cae2e45-052c-4b11-80d3-4d7b2d2d3464"
#define UID_A_ "3cae2e45_052c_4b11_80d3_4d7b2d2d3464"
#define UID_B "f6adb0af-0855-4bab-b25b-c853f18d0ce2"
#define UID_C "d0511cd2-29d2-4215-be0f-f77bc0609d99"
#define UID_C_ "d0511cd2_29d2_4215_be0f_f77bc0609d99"
#define UID_KIND "eab5a334-93fe-48a8-b139-9e8079c1f163"
#define UID_KIND_ "eab5a334_93fe_48a8_b139_9e8079c1f163"
#define UID_STATIC "7d5a7e9b7c1b3a8f9e2c4d6b8a0f1e3c" /* static pod: kubelet config hash */

#define SLICE_BURST_A "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_A_ ".slice"
#define SLICE_BEST_C "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_C_ ".slice"

struct path_case {
	const char *what;
	const char *path;
	int ret;
	enum vw_runtime runtime;
	const char *id;
	bool kubepods;
	const char *uid;
};

static void check_case(const struct path_case *c, int r, const struct vw_cgroup_match *m)
{
	if (r != c->ret)
		fail_msg("%s: ret %d, expected %d (%s)", c->what, r, c->ret, c->path);
	if (m->container != (c->ret == 0))
		fail_msg("%s: container flag %d", c->what, m->container);
	if (c->ret == 0) {
		if (m->runtime != c->runtime)
			fail_msg("%s: runtime %s, expected %s", c->what, vw_runtime_name(m->runtime),
				 vw_runtime_name(c->runtime));
		if (strcmp(m->container_id, c->id) != 0)
			fail_msg("%s: id %s", c->what, m->container_id);
		assert_int_equal(strlen(m->container_id), 64);
	} else {
		assert_string_equal(m->container_id, "");
	}
	if (m->kubepods != c->kubepods)
		fail_msg("%s: kubepods %d", c->what, m->kubepods);
	if (strcmp(m->pod_uid, c->uid ? c->uid : "") != 0)
		fail_msg("%s: pod uid '%s', expected '%s'", c->what, m->pod_uid, c->uid ? c->uid : "");
}

static const struct path_case containers[] = {
	/* Docker: cgroupfs driver, systemd driver, Kepler's own hyphen sample. */
	{ "docker cgroupfs", "/docker/" ID_DOCKER, 0, VW_RUNTIME_DOCKER, ID_DOCKER, false, NULL },
	{ "docker systemd", "/system.slice/docker-" ID_DOCKER ".scope", 0, VW_RUNTIME_DOCKER,
	  ID_DOCKER, false, NULL },
	{ "docker hyphen, no scope", "/docker-" ID_DOCKER2, 0, VW_RUNTIME_DOCKER, ID_DOCKER2, false,
	  NULL },
	{ "rootless docker", "/user.slice/user-1000.slice/user@1000.service/docker-" ID_DOCKER ".scope",
	  0, VW_RUNTIME_DOCKER, ID_DOCKER, false, NULL },
	/* containerd outside Kubernetes. */
	{ "containerd dir", "/containerd/" ID_CTRD, 0, VW_RUNTIME_CONTAINERD, ID_CTRD, false, NULL },
	{ "nerdctl systemd", "/system.slice/nerdctl-" ID_CTRD ".scope", 0, VW_RUNTIME_CONTAINERD,
	  ID_CTRD, false, NULL },
	{ "containerd namespace dir", "/default/" ID_CTRD, 0, VW_RUNTIME_UNKNOWN, ID_CTRD, false,
	  NULL },
	/* Kubernetes, cgroupfs driver: guaranteed pods sit right under kubepods. */
	{ "kubepods guaranteed", "/kubepods/pod" UID_B "/" ID_KUBE, 0, VW_RUNTIME_KUBERNETES, ID_KUBE,
	  true, UID_B },
	{ "kubepods burstable", "/kubepods/burstable/pod" UID_B "/" ID_KUBE, 0, VW_RUNTIME_KUBERNETES,
	  ID_KUBE, true, UID_B },
	{ "kubepods besteffort kind", "/kubelet/kubepods/besteffort/pod" UID_C "/" ID_KUBE, 0,
	  VW_RUNTIME_KUBERNETES, ID_KUBE, true, UID_C },
	{ "cri-o cgroupfs", "/kubepods/burstable/pod" UID_B "/crio-" ID_CRIO, 0, VW_RUNTIME_CRIO,
	  ID_CRIO, true, UID_B },
	/* Kubernetes, systemd driver: UIDs with underscores. */
	{ "containerd systemd burstable", SLICE_BURST_A "/cri-containerd-" ID_CTRD ".scope", 0,
	  VW_RUNTIME_CONTAINERD, ID_CTRD, true, UID_A },
	{ "containerd systemd guaranteed",
	  "/kubepods.slice/kubepods-pod" UID_A_ ".slice/cri-containerd-" ID_CTRD ".scope", 0,
	  VW_RUNTIME_CONTAINERD, ID_CTRD, true, UID_A },
	{ "cri-o systemd besteffort", SLICE_BEST_C "/crio-" ID_CRIO ".scope", 0, VW_RUNTIME_CRIO,
	  ID_CRIO, true, UID_C },
	{ "cri-o v2 payload subgroup", SLICE_BEST_C "/crio-" ID_CRIO ".scope/container", 0,
	  VW_RUNTIME_CRIO, ID_CRIO, true, UID_C },
	{ "cri-dockerd systemd", SLICE_BURST_A "/docker-" ID_DOCKER ".scope", 0, VW_RUNTIME_DOCKER,
	  ID_DOCKER, true, UID_A },
	{ "static pod config hash",
	  "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_STATIC
	  ".slice/cri-containerd-" ID_CTRD ".scope",
	  0, VW_RUNTIME_CONTAINERD, ID_CTRD, true, UID_STATIC },
	/* cgroup v1 with containerd's own systemd spelling "slice:prefix:id". */
	{ "containerd v1 colon form",
	  "/system.slice/containerd.service/kubepods-besteffort-pod0043435f_1854_4327_b76b_730f681a781d"
	  ".slice:cri-containerd:" ID_CTRD2,
	  0, VW_RUNTIME_CONTAINERD, ID_CTRD2, true, "0043435f-1854-4327-b76b-730f681a781d" },
	/* Podman: rootful systemd, rootless user slice, cgroupfs, quadlet payload, pods. */
	{ "podman rootful", "/machine.slice/libpod-" ID_PODMAN ".scope", 0, VW_RUNTIME_PODMAN,
	  ID_PODMAN, false, NULL },
	{ "podman rootful v2 subgroup", "/machine.slice/libpod-" ID_PODMAN ".scope/container", 0,
	  VW_RUNTIME_PODMAN, ID_PODMAN, false, NULL },
	{ "podman rootless",
	  "/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID_ROOTLESS
	  ".scope/container",
	  0, VW_RUNTIME_PODMAN, ID_ROOTLESS, false, NULL },
	{ "podman cgroupfs", "/libpod_parent/libpod-" ID_PODMAN, 0, VW_RUNTIME_PODMAN, ID_PODMAN,
	  false, NULL },
	{ "podman quadlet payload", "/system.slice/app.service/libpod-payload-" ID_PODMAN, 0,
	  VW_RUNTIME_PODMAN, ID_PODMAN, false, NULL },
	{ "podman pod", "/machine.slice/machine-libpod_pod_" ID_DOCKER ".slice/libpod-" ID_PODMAN
	  ".scope", 0, VW_RUNTIME_PODMAN, ID_PODMAN, false, NULL },
	/* Nesting: the deepest container wins. */
	{ "kind node in docker",
	  "/system.slice/docker-" ID_KIND_NODE ".scope/kubelet.slice/kubelet-kubepods.slice/"
	  "kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod" UID_KIND_
	  ".slice/cri-containerd-" ID_KIND_CTR ".scope",
	  0, VW_RUNTIME_CONTAINERD, ID_KIND_CTR, true, UID_KIND },
	{ "docker in docker cgroupfs", "/docker/" ID_DOCKER "/docker/" ID_DOCKER2, 0,
	  VW_RUNTIME_DOCKER, ID_DOCKER2, false, NULL },
	{ "docker in docker systemd", "/system.slice/docker-" ID_DOCKER ".scope/docker/" ID_DOCKER2,
	  0, VW_RUNTIME_DOCKER, ID_DOCKER2, false, NULL },
	{ "docker in a pod", "/kubepods/burstable/pod" UID_B "/" ID_KUBE "/docker/" ID_DOCKER, 0,
	  VW_RUNTIME_DOCKER, ID_DOCKER, true, UID_B },
	/* Seen from a private cgroup namespace, and a removed cgroup. */
	{ "cgroupns relative", "/../../kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
	  UID_A_ ".slice/cri-containerd-" ID_CTRD ".scope", 0, VW_RUNTIME_CONTAINERD, ID_CTRD, true,
	  UID_A },
	{ "deleted cgroup", SLICE_BURST_A "/cri-containerd-" ID_CTRD ".scope (deleted)", 0,
	  VW_RUNTIME_CONTAINERD, ID_CTRD, true, UID_A },
};

static const struct path_case non_containers[] = {
	{ "root", "/", -ENOENT, 0, NULL, false, NULL },
	{ "empty", "", -ENOENT, 0, NULL, false, NULL },
	{ "init", "/init.scope", -ENOENT, 0, NULL, false, NULL },
	{ "service", "/system.slice/sshd.service", -ENOENT, 0, NULL, false, NULL },
	{ "docker daemon", "/system.slice/docker.service", -ENOENT, 0, NULL, false, NULL },
	{ "containerd daemon", "/system.slice/containerd.service", -ENOENT, 0, NULL, false, NULL },
	{ "user session", "/user.slice/user-1000.slice/session-3.scope", -ENOENT, 0, NULL, false,
	  NULL },
	{ "desktop app",
	  "/user.slice/user-1000.slice/user@1000.service/app.slice/app-gnome-firefox-4242.scope",
	  -ENOENT, 0, NULL, false, NULL },
	{ "libvirt VM", "/machine.slice/machine-qemu\\x2d1\\x2dvm1.scope/libvirt/vcpu0", -ENOENT, 0,
	  NULL, false, NULL },
	{ "kubelet", "/system.slice/kubelet.service", -ENOENT, 0, NULL, false, NULL },
	{ "kubepods QoS level", "/kubepods/burstable", -ENOENT, 0, NULL, true, NULL },
	{ "pod level, systemd", SLICE_BURST_A, -ENOENT, 0, NULL, true, UID_A },
	{ "pod level, cgroupfs", "/kubepods/besteffort/pod" UID_C, -ENOENT, 0, NULL, true, UID_C },
	/* conmon runs in the pod but is no container. */
	{ "cri-o conmon systemd", SLICE_BEST_C "/crio-conmon-" ID_CRIO ".scope", -ENOENT, 0, NULL,
	  true, UID_C },
	{ "cri-o conmon cgroupfs", "/kubepods/burstable/pod" UID_B "/crio-conmon-" ID_CRIO, -ENOENT,
	  0, NULL, true, UID_B },
	{ "podman conmon", "/machine.slice/libpod-conmon-" ID_PODMAN ".scope", -ENOENT, 0, NULL,
	  false, NULL },
	/* Malformed IDs: 63 and 65 hex, non-hex, upper case, wrong suffix. */
	{ "63 hex", "/system.slice/docker-" "2fa3e04b676df750842faf017052dd37ea0cc5bc7259a3487a1718c7fe100c9"
	  ".scope", -ENOENT, 0, NULL, false, NULL },
	{ "65 hex", "/system.slice/docker-" ID_DOCKER "4.scope", -ENOENT, 0, NULL, false, NULL },
	{ "65 hex bare", "/docker/" ID_DOCKER "4", -ENOENT, 0, NULL, false, NULL },
	{ "65 hex payload", "/libpod_parent/libpod-payload-" ID_PODMAN "0", -ENOENT, 0, NULL, false,
	  NULL },
	{ "short payload", "/libpod_parent/libpod-payload-06dc5f", -ENOENT, 0, NULL, false, NULL },
	{ "non-hex", "/docker/" "2fa3e04b676df750842faf017052dd37ea0cc5bc7259a3487a1718c7fe100c9g",
	  -ENOENT, 0, NULL, false, NULL },
	{ "upper case", "/docker/" "2FA3E04B676DF750842FAF017052DD37EA0CC5BC7259A3487A1718C7FE100C94",
	  -ENOENT, 0, NULL, false, NULL },
	{ "other suffix", "/system.slice/docker-" ID_DOCKER ".service", -ENOENT, 0, NULL, false,
	  NULL },
	{ "scope plus junk", "/system.slice/docker-" ID_DOCKER ".scopex", -ENOENT, 0, NULL, false,
	  NULL },
};

/* Containers found, pod UIDs that are not UIDs rejected. */
static const struct path_case bad_uids[] = {
	{ "short uid", "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod3cae2e45_052c"
	  ".slice/cri-containerd-" ID_CTRD ".scope", 0, VW_RUNTIME_CONTAINERD, ID_CTRD, true, NULL },
	{ "uid with junk", "/kubepods/burstable/podf6adb0af-0855-4bab-b25b-c853f18d0cez/" ID_KUBE, 0,
	  VW_RUNTIME_UNKNOWN, ID_KUBE, true, NULL },
	{ "separators misplaced", "/kubepods/burstable/podf6adb0af0-855-4bab-b25b-c853f18d0ce2/" ID_KUBE,
	  0, VW_RUNTIME_UNKNOWN, ID_KUBE, true, NULL },
	{ "pod outside kubepods", "/foo/pod" UID_B "/" ID_KUBE, 0, VW_RUNTIME_UNKNOWN, ID_KUBE, false,
	  NULL },
	{ "slice without kubepods", "/machine.slice/machine-pod" UID_A_ ".slice/libpod-" ID_PODMAN
	  ".scope", 0, VW_RUNTIME_PODMAN, ID_PODMAN, false, NULL },
};

static void run_cases(const struct path_case *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct vw_cgroup_match m;
		int r;

		memset(&m, 0xa5, sizeof(m)); /* nothing may leak from a previous call */
		r = vw_workload_parse_cgroup_path(cases[i].path, &m);
		check_case(&cases[i], r, &m);
	}
}

static void test_containers(void **state)
{
	(void)state;
	run_cases(containers, ARRAY_SIZE(containers));
}

static void test_non_containers(void **state)
{
	(void)state;
	run_cases(non_containers, ARRAY_SIZE(non_containers));
}

static void test_bad_uids(void **state)
{
	(void)state;
	run_cases(bad_uids, ARRAY_SIZE(bad_uids));
}

/* Whole /proc/PID/cgroup files. */
static const char v1_docker[] = "12:pids:/docker/" ID_DOCKER "\n"
				"11:hugetlb:/docker/" ID_DOCKER "\n"
				"10:net_cls,net_prio:/docker/" ID_DOCKER "\n"
				"9:perf_event:/docker/" ID_DOCKER "\n"
				"8:cpuset:/docker/" ID_DOCKER "\n"
				"7:memory:/docker/" ID_DOCKER "\n"
				"6:freezer:/docker/" ID_DOCKER "\n"
				"5:blkio:/docker/" ID_DOCKER "\n"
				"4:devices:/docker/" ID_DOCKER "\n"
				"3:cpu,cpuacct:/docker/" ID_DOCKER "\n"
				"2:rdma:/\n"
				"1:name=systemd:/docker/" ID_DOCKER "\n"
				"0::/system.slice/containerd.service\n";

#define CRIO_SCOPE SLICE_BURST_A "/crio-" ID_CRIO ".scope"
static const char v1_crio_systemd[] = "11:cpuset:" CRIO_SCOPE "\n"
				      "10:memory:" CRIO_SCOPE "\n"
				      "9:devices:" CRIO_SCOPE "\n"
				      "8:hugetlb:" CRIO_SCOPE "\n"
				      "7:pids:" CRIO_SCOPE "\n"
				      "6:cpu,cpuacct:" CRIO_SCOPE "\n"
				      "5:blkio:" CRIO_SCOPE "\n"
				      "4:net_cls,net_prio:" CRIO_SCOPE "\n"
				      "3:freezer:" CRIO_SCOPE "\n"
				      "2:perf_event:" CRIO_SCOPE "\n"
				      "1:name=systemd:" CRIO_SCOPE "\n";

static const char v1_service[] = "12:pids:/system.slice/sshd.service\n"
				 "7:memory:/system.slice/sshd.service\n"
				 "3:cpu,cpuacct:/system.slice/sshd.service\n"
				 "2:rdma:/\n"
				 "1:name=systemd:/system.slice/sshd.service\n"
				 "0::/system.slice/sshd.service\n";

static void test_proc_files(void **state)
{
	struct vw_cgroup_match m;

	(void)state;
	assert_int_equal(vw_workload_parse_proc_cgroup(v1_docker, &m), 0);
	assert_int_equal(m.runtime, VW_RUNTIME_DOCKER);
	assert_string_equal(m.container_id, ID_DOCKER);
	assert_false(m.kubepods);

	assert_int_equal(vw_workload_parse_proc_cgroup(v1_crio_systemd, &m), 0);
	assert_int_equal(m.runtime, VW_RUNTIME_CRIO);
	assert_string_equal(m.container_id, ID_CRIO);
	assert_string_equal(m.pod_uid, UID_A);

	/* cgroup v2: one line. */
	assert_int_equal(vw_workload_parse_proc_cgroup(
				 "0::" SLICE_BEST_C "/cri-containerd-" ID_CTRD ".scope\n", &m),
			 0);
	assert_int_equal(m.runtime, VW_RUNTIME_CONTAINERD);
	assert_string_equal(m.pod_uid, UID_C);
	/* No trailing newline. */
	assert_int_equal(vw_workload_parse_proc_cgroup("0::/machine.slice/libpod-" ID_PODMAN ".scope",
						       &m),
			 0);
	assert_int_equal(m.runtime, VW_RUNTIME_PODMAN);

	/* Host processes, kernel threads (empty or "0::/"), systemd. */
	assert_int_equal(vw_workload_parse_proc_cgroup(v1_service, &m), -ENOENT);
	assert_false(m.container);
	assert_false(m.kubepods);
	assert_int_equal(vw_workload_parse_proc_cgroup("", &m), -ENOENT);
	assert_int_equal(vw_workload_parse_proc_cgroup("0::/\n", &m), -ENOENT);
	assert_int_equal(vw_workload_parse_proc_cgroup("0::/init.scope\n", &m), -ENOENT);

	/* conmon: no container, but the pod is known. */
	assert_int_equal(vw_workload_parse_proc_cgroup(
				 "0::" SLICE_BEST_C "/crio-conmon-" ID_CRIO ".scope\n", &m),
			 -ENOENT);
	assert_true(m.kubepods);
	assert_string_equal(m.pod_uid, UID_C);
}

static void test_proc_files_mixed(void **state)
{
	struct vw_cgroup_match m;

	(void)state;
	/* The deepest match across lines wins, whatever the line order. */
	assert_int_equal(vw_workload_parse_proc_cgroup(
				 "4:memory:/docker/" ID_DOCKER "\n"
				 "1:name=systemd:/docker/" ID_DOCKER "/docker/" ID_DOCKER2 "\n",
				 &m),
			 0);
	assert_string_equal(m.container_id, ID_DOCKER2);
	assert_int_equal(vw_workload_parse_proc_cgroup(
				 "1:name=systemd:/docker/" ID_DOCKER "/docker/" ID_DOCKER2 "\n"
				 "4:memory:/docker/" ID_DOCKER "\n",
				 &m),
			 0);
	assert_string_equal(m.container_id, ID_DOCKER2);
	/* A container line beats a pod-only line, a pod line beats a plain one. */
	assert_int_equal(vw_workload_parse_proc_cgroup("2:rdma:/\n"
						       "1:name=systemd:" SLICE_BURST_A "\n"
						       "0::/docker/" ID_DOCKER "\n",
						       &m),
			 0);
	assert_string_equal(m.container_id, ID_DOCKER);
	assert_int_equal(vw_workload_parse_proc_cgroup("2:rdma:/\n1:name=systemd:" SLICE_BURST_A "\n",
						       &m),
			 -ENOENT);
	assert_string_equal(m.pod_uid, UID_A);
	/* Lines without two colons are skipped; the path may itself contain ':'. */
	assert_int_equal(vw_workload_parse_proc_cgroup("garbage\n\n:\n0::/docker/" ID_DOCKER "\n", &m),
			 0);
	assert_string_equal(m.container_id, ID_DOCKER);
	assert_int_equal(vw_workload_parse_proc_cgroup("3:memory:/system.slice/containerd.service/"
						       "kubepods-burstable-pod" UID_A_
						       ".slice:cri-containerd:" ID_CTRD "\n",
						       &m),
			 0);
	assert_string_equal(m.container_id, ID_CTRD);
	assert_string_equal(m.pod_uid, UID_A);
	/* Malformed IDs in a whole file. */
	assert_int_equal(vw_workload_parse_proc_cgroup("0::/docker/" ID_DOCKER "ff\n", &m), -ENOENT);
	assert_int_equal(vw_workload_parse_proc_cgroup(NULL, &m), -EINVAL);
	assert_int_equal(vw_workload_parse_cgroup_path(NULL, &m), -EINVAL);
}

static void test_read_pid(void **state)
{
	char *root = vw_fixture_mkdtemp("procfs");
	struct vw_cgroup_match m;
	int fd;

	(void)state;
	assert_non_null(root);
	assert_int_equal(vw_fixture_write(root, "1/cgroup", "0::/init.scope\n", 0), 0);
	assert_int_equal(vw_fixture_write(root, "2/cgroup", "", 0), 0); /* kthreadd */
	assert_int_equal(vw_fixture_write(root, "4242/cgroup", v1_crio_systemd, 0), 0);
	assert_int_equal(vw_fixture_write(root, "4243/cgroup",
					  "0::/user.slice/user-1000.slice/user@1000.service/user.slice/"
					  "libpod-" ID_ROOTLESS ".scope/container\n",
					  0),
			 0);
	assert_int_equal(vw_fixture_mkdir(root, "4244"), 0); /* exiting: cgroup already gone */
	assert_int_equal(vw_fixture_write(root, "4245/cgroup", "0::/docker/\x01", 0), 0);
	fd = vw_root_open(root);
	assert_true(fd >= 0);

	assert_int_equal(vw_workload_read_pid(fd, 1, &m), -ENOENT);
	assert_int_equal(vw_workload_read_pid(fd, 2, &m), -ENOENT);
	assert_int_equal(vw_workload_read_pid(fd, 4242, &m), 0);
	assert_int_equal(m.runtime, VW_RUNTIME_CRIO);
	assert_string_equal(m.container_id, ID_CRIO);
	assert_string_equal(m.pod_uid, UID_A);
	assert_int_equal(vw_workload_read_pid(fd, 4243, &m), 0);
	assert_int_equal(m.runtime, VW_RUNTIME_PODMAN);
	assert_string_equal(m.container_id, ID_ROOTLESS);
	assert_int_equal(vw_workload_read_pid(fd, 4244, &m), -ESRCH);
	assert_int_equal(vw_workload_read_pid(fd, 99999, &m), -ESRCH);
	assert_false(m.container);
	assert_int_equal(vw_workload_read_pid(fd, 4245, &m), -ENOENT);
	assert_int_equal(vw_workload_read_pid(fd, 0, &m), -EINVAL);
	close(fd);
	vw_fixture_rm(root);
}

static void test_runtime_names(void **state)
{
	(void)state;
	assert_string_equal(vw_runtime_name(VW_RUNTIME_UNKNOWN), "unknown");
	assert_string_equal(vw_runtime_name(VW_RUNTIME_DOCKER), "docker");
	assert_string_equal(vw_runtime_name(VW_RUNTIME_CONTAINERD), "containerd");
	assert_string_equal(vw_runtime_name(VW_RUNTIME_CRIO), "crio");
	assert_string_equal(vw_runtime_name(VW_RUNTIME_PODMAN), "podman");
	assert_string_equal(vw_runtime_name(VW_RUNTIME_KUBERNETES), "kubernetes");
	assert_string_equal(vw_runtime_name(VW_RUNTIME__COUNT), "unknown");
	assert_string_equal(vw_runtime_name((enum vw_runtime)-1), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_containers),
		cmocka_unit_test(test_non_containers),
		cmocka_unit_test(test_bad_uids),
		cmocka_unit_test(test_proc_files),
		cmocka_unit_test(test_proc_files_mixed),
		cmocka_unit_test(test_read_pid),
		cmocka_unit_test(test_runtime_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The process-scan VM source on procfs fixture trees: QEMU command line variants, KubeVirt's
 * virt-launcher pod, processes that only mention qemu, kernel threads (vhost workers), vhost
 * owners by name, stable IDs, and a VM reported stopped exactly once.
 */
#include "vw_test.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "fileio.h"
#include "fixture.h"
#include "log.h"
#include "macro.h"
#include "vm_fixture.h"
#include "vm_priv.h"
#include "vm_tracker.h"
#include "vm_trust.h"
#include "cgroup_path.h"

#define U1 "6f0d3c2a-1b2c-4d5e-8f90-0123456789ab"
#define U2 "a1b2c3d4-0000-4000-8000-00000000c0de"
#define POD "1234abcd-5678-90ab-cdef-1234567890ab"

static int parse(const char *argv, struct vw_qemu_cmdline *c)
{
	char buf[4096];
	size_t len = strlen(argv);

	for (size_t i = 0; i <= len; i++)
		buf[i] = argv[i] == '|' ? '\0' : argv[i];
	return vw_qemu_cmdline_parse(buf, len + 1, c);
}

static void test_cmdline(void **state)
{
	struct vw_qemu_cmdline c;

	(void)state;
	assert_int_equal(parse("/usr/bin/qemu-system-x86_64|-name|guest=vm1,debug-threads=on|-S|"
			       "-uuid|6F0D3C2A-1B2C-4D5E-8F90-0123456789AB|-smp|"
			       "2,sockets=2,cores=1,threads=1|-m|64", &c), 0);
	assert_string_equal(c.binary, "/usr/bin/qemu-system-x86_64");
	assert_string_equal(c.uuid, U1);
	assert_string_equal(c.name, "vm1");
	assert_int_equal(c.vcpus, 2);
	assert_false(c.xen);

	assert_int_equal(parse("qemu-system-aarch64|-name|plain|-smp|cpus=4,maxcpus=8", &c), 0);
	assert_string_equal(c.name, "plain");
	assert_int_equal(c.vcpus, 4);
	assert_string_equal(c.uuid, "");
	assert_int_equal(parse("/usr/libexec/qemu-kvm|--name|a,,b,process=x|-smp|sockets=2,cores=3",
			       &c), 0);
	assert_string_equal(c.name, "a,b");
	assert_int_equal(c.vcpus, 6);
	assert_int_equal(parse("kvm|-m|512", &c), 0);
	assert_int_equal(c.vcpus, 1);
	assert_int_equal(parse("qemu-system-x86_64|-smp|junk|-uuid|not-a-uuid|-xen-domid|3", &c), 0);
	assert_int_equal(c.vcpus, 1);
	assert_string_equal(c.uuid, "");
	assert_true(c.xen);
	/* The last -name wins, as in QEMU. */
	assert_int_equal(parse("qemu-system-x86_64|-name|first|-name|guest=second", &c), 0);
	assert_string_equal(c.name, "second");
	/* Untrusted bytes: invalid UTF-8 and control characters become '?'. */
	assert_int_equal(parse("qemu-system-x86_64|-name|guest=caf\xc3\xa9\xff\x01x", &c), 0);
	assert_string_equal(c.name, "caf\xc3\xa9??x");

	/* Processes that mention QEMU are not QEMU (Kepler's regex takes these). */
	assert_int_equal(parse("/usr/bin/vim|/usr/bin/qemu-system-x86_64", &c), -ENOENT);
	assert_int_equal(parse("bash|-c|/usr/bin/qemu-system-x86_64 -uuid " U1, &c), -ENOENT);
	assert_int_equal(parse("/usr/bin/qemu-img|convert|a|b", &c), -ENOENT);
	assert_int_equal(parse("/usr/bin/qemu-system-|-name|x", &c), -ENOENT);
	assert_int_equal(parse("/usr/bin/python3|/usr/libexec/qemu-kvm", &c), -ENOENT);
	assert_int_equal(vw_qemu_cmdline_parse("", 0, &c), -EINVAL);

	/* A read cut short: the last argument has no NUL. */
	{
		static const char cut[] = "qemu-system-x86_64\0-name\0guest=abc";

		assert_int_equal(vw_qemu_cmdline_parse(cut, sizeof(cut) - 1, &c), 0);
		assert_string_equal(c.name, "abc");
	}
	/* A value that is missing at the end. */
	assert_int_equal(parse("qemu-system-x86_64|-uuid", &c), 0);
	assert_string_equal(c.uuid, "");
}

static void test_smp_and_names(void **state)
{
	char out[8];

	(void)state;
	assert_int_equal(vw_qemu_parse_smp("8"), 8);
	assert_int_equal(vw_qemu_parse_smp("cpus=3"), 3);
	assert_int_equal(vw_qemu_parse_smp("sockets=2,dies=2,cores=2,threads=2"), 16);
	assert_int_equal(vw_qemu_parse_smp("maxcpus=8"), 1);
	assert_int_equal(vw_qemu_parse_smp("0"), 1);
	assert_int_equal(vw_qemu_parse_smp("99999999999999999999"), 1);
	assert_int_equal(vw_qemu_parse_smp("sockets=1000,cores=1000"), 16384);

	/* Cut at a character boundary, never inside a UTF-8 sequence. */
	vw_vm_name_sanitize(out, sizeof(out), "ab\xe2\x82\xac\xe2\x82\xac", 8);
	assert_string_equal(out, "ab\xe2\x82\xac");
	/* Overlong, surrogate, and beyond U+10FFFF. */
	vw_vm_name_sanitize(out, sizeof(out), "\xc0\xaf\xed\xa0\x80", 5);
	assert_string_equal(out, "?????");
	vw_vm_name_sanitize(out, sizeof(out), "\xf4\x90\x80\x80", 4);
	assert_string_equal(out, "????");
	vw_vm_name_sanitize(out, sizeof(out), "a\x7f" "b", 3);
	assert_string_equal(out, "a?b");
}

static void test_stable_id(void **state)
{
	struct vw_qemu_cmdline c;
	char a[VW_UUID_LEN], b[VW_UUID_LEN], d[VW_UUID_LEN], canon[VW_UUID_LEN];

	(void)state;
	assert_int_equal(parse("/usr/bin/qemu-system-x86_64|-name|anon", &c), 0);
	vw_qemu_stable_id(&c, 1000, 55, "boot-1", a);
	vw_qemu_stable_id(&c, 1000, 55, "boot-1", b);
	assert_string_equal(a, b);
	assert_int_equal(vw_vm_uuid_canon(a, strlen(a), canon), 0);
	assert_string_equal(a, canon);
	assert_int_equal(a[14], '8'); /* version 8 */
	assert_non_null(strchr("89ab", a[19])); /* RFC variant */
	/* Same binary and name (Kepler's colliding prefix), another process: another ID. */
	vw_qemu_stable_id(&c, 1001, 55, "boot-1", d);
	assert_string_not_equal(a, d);
	vw_qemu_stable_id(&c, 1000, 56, "boot-1", d);
	assert_string_not_equal(a, d);
	vw_qemu_stable_id(&c, 1000, 55, "boot-2", d);
	assert_string_not_equal(a, d);
}

/* The procscan source over the tree at root (env->procfs_fd opened on it, for close()). */
static void *scan_open(const char *root, struct vw_vm_env *env)
{
	void *src = NULL;

	env->procfs_fd = vw_root_open(root);
	assert_true(env->procfs_fd >= 0);
	assert_int_equal(vw_vm_procscan.open(env, &src), 0);
	return src;
}

/* One list of src, which must hold n VMs (free() it). */
static struct vw_vm_info *list_n(void *src, size_t n)
{
	struct vw_vm_info *v = NULL;
	size_t got = 0;

	assert_int_equal(vw_vm_procscan.list(src, &v, &got), 0);
	assert_int_equal(got, n);
	return v;
}

/* env->kubevirt_pod standing in for pod metadata: answer for the pod uid (every pod when uid is
 * NULL), 0 (listed, no virt-launcher) for the others. */
struct pods_say {
	int answer;
	const char *uid;
};

static int pods_say(void *ud, const char *pod_uid)
{
	const struct pods_say *p = ud;

	return !p->uid || strcmp(pod_uid, p->uid) == 0 ? p->answer : 0;
}

struct fx {
	char *root;
	int procfd;
	void *src;
};

static int setup(void **state)
{
	static const char *const web[] = { "qemu-system-x86", "IO mon_iothread", "CPU 1/TCG",
					   "CPU 0/TCG", "worker", NULL };
	static const char *const kv[] = { "qemu-kvm", "CPU 0/KVM", "CPU 1/KVM", "vhost-200", NULL };
	static const char *const anon[] = { "qemu-system-aar", NULL };
	struct fx *f = calloc(1, sizeof(*f));
	struct vw_vm_env env = { 0 };
	int r = 0;

	f->root = vw_fixture_mkdtemp("vmscan");
	r |= vm_fixture_boot_id(f->root, "0a1b2c3d-boot\n");
	r |= vm_fixture_proc(f->root, 1, 1, "/sbin/init", NULL, NULL);
	r |= vm_fixture_proc(f->root, 100, 5000,
			     "/usr/bin/qemu-system-x86_64|-name|guest=web,debug-threads=on|-uuid|" U1
			     "|-smp|2,sockets=2,cores=1,threads=1",
			     web, NULL);
	/* KubeVirt's virt-launcher pod: virt-launcher, its own virtqemud, and the QEMU. */
	r |= vm_fixture_proc(f->root, 190, 6000,
			     "/usr/bin/virt-launcher|--qemu-timeout|240s|--name|vmi-fedora|--uid|" POD,
			     NULL, NULL);
	r |= vm_fixture_proc(f->root, 195, 6001,
			     "/usr/sbin/virtqemud|-f|/var/run/libvirt/virtqemud.conf", NULL, NULL);
	r |= vm_fixture_proc(f->root, 200, 6100,
			     "/usr/libexec/qemu-kvm|-name|guest=default_vmi-fedora,debug-threads=on|"
			     "-uuid|" U2 "|-smp|sockets=1,cores=2,threads=1",
			     kv, NULL);
	/* Mentions QEMU, is not one. */
	r |= vm_fixture_proc(f->root, 300, 7000, "/usr/bin/vim|/tmp/qemu-system-x86_64 -uuid " U1,
			     NULL, NULL);
	r |= vm_fixture_proc(f->root, 310, 7001,
			     "/usr/bin/python3|run.py|--qemu|/usr/bin/qemu-system-x86_64|-uuid|" U2,
			     NULL, NULL);
	/* Two anonymous VMs of one binary and name: Kepler gives both the same ID. */
	r |= vm_fixture_proc(f->root, 400, 8000, "/usr/bin/qemu-system-aarch64|-name|anon", anon,
			     NULL);
	r |= vm_fixture_proc(f->root, 410, 8000, "/usr/bin/qemu-system-aarch64|-name|anon", anon,
			     NULL);
	/* Kernel threads (no command line): a vhost worker (kernels before 6.4) and another. */
	r |= vm_fixture_proc(f->root, 500, 5001, "", (const char *const[]){ "vhost-100", NULL },
			     NULL);
	r |= vm_fixture_proc(f->root, 501, 2, "", (const char *const[]){ "kworker/0:1", NULL }, NULL);
	if (r)
		return -1;
	f->src = scan_open(f->root, &env);
	f->procfd = env.procfs_fd;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	vw_vm_procscan.close(f->src);
	close(f->procfd);
	vw_fixture_rm(f->root);
	free(f);
	return 0;
}

static const struct vw_vm_info *by_pid(const struct vw_vm_info *v, size_t n, uint32_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].qemu_pid == pid)
			return &v[i];
	return NULL;
}

static void test_scan(void **state)
{
	struct fx *f = *state;
	struct vw_vm_info *v = list_n(f->src, 4), *v2;
	const struct vw_vm_info *web, *kv, *a, *b;
	size_t n = 4;

	web = by_pid(v, n, 100);
	assert_non_null(web);
	assert_string_equal(web->uuid, U1);
	assert_string_equal(web->name, "web");
	assert_string_equal(web->source, "procscan");
	assert_string_equal(web->hypervisor, "kvm");
	assert_int_equal(web->state, VW_VM_RUNNING);
	assert_int_equal(web->vcpus, 2);
	assert_int_equal(web->qemu_start_time, 5000);
	assert_int_equal(vw_vm_vhost_owner("vhost-100"), 100);
	assert_int_equal(vw_vm_vhost_owner("vhost-"), 0);
	assert_int_equal(vw_vm_vhost_owner("vhost-0100"), 0);
	assert_int_equal(vw_vm_vhost_owner("vhost-1x"), 0);
	assert_int_equal(vw_vm_vhost_owner("kvm-nx-lpage-re"), 0);
	assert_null(by_pid(v, n, 500)); /* the kernel threads are no VMs */
	assert_null(by_pid(v, n, 501));

	kv = by_pid(v, n, 200);
	assert_non_null(kv);
	assert_string_equal(kv->uuid, U2);
	assert_string_equal(kv->name, "default_vmi-fedora");
	assert_int_equal(kv->vcpus, 2); /* cores=2 x sockets=1 x threads=1 */

	a = by_pid(v, n, 400);
	b = by_pid(v, n, 410);
	assert_non_null(a);
	assert_non_null(b);
	assert_string_not_equal(a->uuid, b->uuid);
	assert_int_equal(a->uuid[14], '8');
	assert_int_equal(a->vcpus, 1);
	assert_null(by_pid(v, n, 300));
	assert_null(by_pid(v, n, 310));

	/* The stable ID is stable. */
	v2 = list_n(f->src, 4);
	assert_string_equal(by_pid(v2, 4, 400)->uuid, a->uuid);
	free(v2);

	/* QEMU 100 exits: reported stopped once, with what was known, then forgotten. */
	assert_int_equal(vm_fixture_kill(f->root, 100), 0);
	v2 = list_n(f->src, 4);
	web = by_pid(v2, 4, 100);
	assert_non_null(web);
	assert_int_equal(web->state, VW_VM_SHUTOFF);
	assert_string_equal(web->uuid, U1);
	free(v2);
	v2 = list_n(f->src, 3);
	assert_null(by_pid(v2, 3, 100));
	free(v2);
	free(v);
}

static void test_duplicate_uuid(void **state)
{
	char *root = vw_fixture_mkdtemp("vmscan2");
	struct vw_vm_env env = { 0 };
	struct vw_vm_info *v;
	void *src;

	(void)state;
	assert_int_equal(vm_fixture_proc(root, 10, 1, "qemu-system-x86_64|-uuid|" U1 "|-smp|599",
					 NULL, NULL), 0);
	/* An older QEMU claiming the same UUID (exiting after a restart): one VM, the young one. */
	assert_int_equal(vm_fixture_proc(root, 20, 0, "qemu-system-x86_64|-uuid|" U1, NULL, NULL), 0);
	src = scan_open(root, &env);
	v = list_n(src, 1);
	assert_int_equal(v[0].vcpus, 599);
	assert_int_equal(v[0].qemu_pid, 10);
	assert_int_equal(v[0].qemu_start_time, 1);
	free(v);
	vw_vm_procscan.close(src);
	close(env.procfs_fd);
	vw_fixture_rm(root);
}

/*
 * Proxmox VE: /usr/bin/kvm with its own -id VMID, the name before ",debug-threads=on" and the
 * VM's identity as its SMBIOS UUID (no -uuid); the command line as qemu-server's own tests
 * (the .conf.cmd files of test/cfg2cmd) expect it, shortened.
 */
#define PVE_UUID "7b10d7af-b932-4c66-b2c3-3996152ec465"
#define PVE_CMD                                                                                   \
	"/usr/bin/kvm|-id|8006|-name|simple,debug-threads=on|-no-shutdown|-chardev|"              \
	"socket,id=qmp,path=/var/run/qemu-server/8006.qmp,server=on,wait=off|-mon|"              \
	"chardev=qmp,mode=control|-pidfile|/var/run/qemu-server/8006.pid|-daemonize|-smbios|"    \
	"type=1,uuid=" PVE_UUID "|-smp|3,sockets=1,cores=3,maxcpus=3|-nodefaults|-m|512"

static void test_proxmox(void **state)
{
	char *root = vw_fixture_mkdtemp("vmscanpve");
	struct vw_vm_env env = { 0 };
	struct vw_qemu_cmdline c;
	struct vw_vm_info *v;
	void *src;

	(void)state;
	assert_int_equal(parse(PVE_CMD, &c), 0);
	assert_string_equal(c.vmid, "8006");
	assert_string_equal(c.name, "simple");
	assert_string_equal(c.uuid, PVE_UUID);
	assert_int_equal(c.vcpus, 3);
	/* -uuid wins over the SMBIOS one; an SMBIOS table other than type 1 is not the VM's. */
	assert_int_equal(parse("/usr/bin/kvm|-smbios|type=1,uuid=" PVE_UUID "|-uuid|" U1, &c), 0);
	assert_string_equal(c.uuid, U1);
	assert_int_equal(parse("/usr/bin/kvm|-smbios|type=2,uuid=" PVE_UUID, &c), 0);
	assert_string_equal(c.uuid, "");
	/* A VMID is digits (else absent); plain QEMU has no -id. */
	assert_int_equal(parse("/usr/bin/kvm|-id|80x6", &c), 0);
	assert_string_equal(c.vmid, "");
	assert_int_equal(parse("/usr/bin/kvm|-id|123456789012345678", &c), 0);
	assert_string_equal(c.vmid, "");
	assert_int_equal(parse("qemu-system-x86_64|-name|x", &c), 0);
	assert_string_equal(c.vmid, "");

	/* Listed by the scan: platform proxmox with its VMID; a plain QEMU beside it has none. */
	assert_int_equal(vm_fixture_proc(root, 10, 100, PVE_CMD, NULL, NULL), 0);
	assert_int_equal(vm_fixture_proc(root, 20, 200, "qemu-system-x86_64|-uuid|" U1, NULL, NULL),
			 0);
	src = scan_open(root, &env);
	v = list_n(src, 2);
	for (size_t i = 0; i < 2; i++) {
		if (v[i].qemu_pid == 10) {
			assert_string_equal(v[i].uuid, PVE_UUID);
			assert_string_equal(v[i].name, "simple");
			assert_string_equal(v[i].owner.platform, "proxmox");
			assert_string_equal(v[i].owner.vmid, "8006");
		} else {
			assert_string_equal(v[i].uuid, U1);
			assert_string_equal(v[i].owner.platform, "");
			assert_string_equal(v[i].owner.vmid, "");
		}
	}
	free(v);
	vw_vm_procscan.close(src);
	close(env.procfs_fd);
	vw_fixture_rm(root);
}

/* With an interval, full scans are rate-limited: a new QEMU waits for the next scan, a gone
 * one is noticed at once (its start time no longer matches) and reported stopped. */
static void test_scan_interval(void **state)
{
	char *root = vw_fixture_mkdtemp("vmscan");
	struct vw_vm_env env = { .procscan_interval_ns = 10 * VW_NSEC_PER_SEC };
	uint64_t now = 1000 * VW_NSEC_PER_SEC;
	struct vw_vm_info *v;
	void *src;

	(void)state;
	vw_clock_set_fake(&now);
	assert_int_equal(vm_fixture_proc(root, 10, 100, "qemu-system-x86_64|-uuid|" U1, NULL, NULL), 0);
	src = scan_open(root, &env);
	free(list_n(src, 1));
	/* A second QEMU starts: not seen until the interval has passed. */
	assert_int_equal(vm_fixture_proc(root, 20, 200, "qemu-kvm|-name|guest=b", NULL, NULL), 0);
	now += 5 * VW_NSEC_PER_SEC;
	free(list_n(src, 1));
	now += 6 * VW_NSEC_PER_SEC;
	free(list_n(src, 2));
	/* The first exits: the very next list scans and reports it stopped. */
	assert_int_equal(vm_fixture_kill(root, 10), 0);
	now += VW_NSEC_PER_SEC;
	v = list_n(src, 2);
	assert_int_equal(by_pid(v, 2, 10)->state, VW_VM_SHUTOFF);
	free(v);
	vw_vm_procscan.close(src);
	close(env.procfs_fd);
	vw_clock_set_fake(NULL);
	vw_fixture_rm(root);
}

/*
 * One listing round reads each QEMU's <pid>/stat once: the process scan's check of its last
 * list takes the start time libvirt's check read this round (env->qemu_starts), and the next
 * round reads afresh, so a PID reused by another process between two rounds is still caught.
 */
static void test_start_time_shared(void **state)
{
	char *root = vw_fixture_mkdtemp("vmscan");
	struct vw_qemu_starts starts = { 0 };
	struct vw_vm_env env = { .procscan_interval_ns = 10 * VW_NSEC_PER_SEC,
				 .qemu_starts = &starts };
	uint64_t now = 1000 * VW_NSEC_PER_SEC, start = 0;
	struct vw_vm_info *v;
	char path[512];
	void *src;

	(void)state;
	vw_clock_set_fake(&now);
	assert_int_equal(vm_fixture_proc(root, 10, 100, "qemu-system-x86_64|-uuid|" U1, NULL, NULL), 0);
	src = scan_open(root, &env);
	free(list_n(src, 1)); /* the full scan */

	/* The next round: libvirt's check reads QEMU 10's start time first. */
	vw_qemu_starts_clear(&starts);
	now += VW_NSEC_PER_SEC;
	assert_int_equal(vw_qemu_start_time(&starts, env.procfs_fd, 10, &start), 0);
	assert_int_equal(start, 100);
	assert_int_equal(starts.reads, 1);
	/* The scan takes it: <pid>/stat is not read again (gone from the fixture now, a read
	 * would fail and the VM be reported stopped). */
	snprintf(path, sizeof(path), "%s/10/stat", root);
	assert_int_equal(unlink(path), 0);
	v = list_n(src, 1);
	assert_int_equal(v[0].state, VW_VM_RUNNING);
	assert_int_equal(v[0].qemu_pid, 10);
	assert_int_equal(starts.reads, 1);
	free(v);

	/* The round after: PID 10 is now an unrelated process (another start time). Read
	 * afresh, not taken from the last round: the VM stopped. */
	vw_qemu_starts_clear(&starts);
	assert_int_equal(vm_fixture_kill(root, 10), 0);
	assert_int_equal(vm_fixture_proc(root, 10, 900, "/bin/sleep|100",
					 (const char *const[]){ "sleep", NULL }, NULL), 0);
	now += VW_NSEC_PER_SEC;
	v = list_n(src, 1);
	assert_int_equal(v[0].state, VW_VM_SHUTOFF);
	assert_int_equal(starts.reads, 2);
	free(v);
	/* Asked twice in one round: read once. */
	vw_qemu_starts_clear(&starts);
	assert_int_equal(vw_qemu_start_time(&starts, env.procfs_fd, 10, &start), 0);
	assert_int_equal(vw_qemu_start_time(&starts, env.procfs_fd, 10, &start), 0);
	assert_int_equal(start, 900);
	assert_int_equal(vw_qemu_start_time(&starts, env.procfs_fd, 11, &start), -ESRCH);
	assert_int_equal(vw_qemu_start_time(&starts, env.procfs_fd, 11, &start), -ESRCH);
	assert_int_equal(starts.reads, 4);
	vw_qemu_starts_free(&starts);
	vw_vm_procscan.close(src);
	close(env.procfs_fd);
	vw_clock_set_fake(NULL);
	vw_fixture_rm(root);
}

/* What the tracker handed over: each listed() call's VM and group counts. */
struct handed {
	unsigned calls;
	size_t n, n_groups;
	int fail; /* what listed() returns */
};

static int on_listed(void *ud, const struct vw_vm_info *vms, size_t n,
		     const struct vw_group *groups, size_t n_groups)
{
	struct handed *h = ud;

	(void)vms;
	(void)groups;
	h->calls++;
	h->n = n;
	h->n_groups = n_groups;
	return h->fail;
}

/*
 * The tracker hands a list to the groups and the publisher (listed) only when it changed: the
 * same VMs as last interval are not handed over again, a VM more or a changed one is, and a
 * list whose hand-over failed is handed again.
 */
static void test_tracker_unchanged(void **state)
{
	char *root = vw_fixture_mkdtemp("vmscan");
	char uri[600];
	struct vw_vm_env env = { .libvirt_uri = uri };
	struct vw_vm_tracker *t = NULL;
	struct handed h = { 0 };
	const char *const no_labels[] = { NULL };

	(void)state;
	/* No libvirtd behind this URI: the VMs are the process scan's. */
	snprintf(uri, sizeof(uri), "qemu:///system?socket=%s/no-libvirtd.sock", root);
	assert_int_equal(vm_fixture_proc(root, 10, 100, "qemu-system-x86_64|-uuid|" U1, NULL, NULL), 0);
	env.procfs_fd = vw_root_open(root);
	assert_true(env.procfs_fd >= 0);
	assert_int_equal(vw_vm_tracker_open(&env, -1, &t), 0);
	vw_vm_tracker_refresh(t, NULL, no_labels, on_listed, &h);
	assert_int_equal(h.calls, 1);
	assert_int_equal(h.n, 1);
	assert_int_equal(h.n_groups, 1);
	vw_vm_tracker_refresh(t, NULL, no_labels, on_listed, &h); /* the same VM */
	assert_int_equal(h.calls, 1);

	/* A second QEMU: handed over. */
	assert_int_equal(vm_fixture_proc(root, 20, 200, "qemu-kvm|-name|guest=b", NULL, NULL), 0);
	h.fail = -ENOMEM; /* and that hand-over fails: the same list again next time */
	vw_vm_tracker_refresh(t, NULL, no_labels, on_listed, &h);
	assert_int_equal(h.calls, 2);
	assert_int_equal(h.n, 2);
	h.fail = 0;
	vw_vm_tracker_refresh(t, NULL, no_labels, on_listed, &h);
	assert_int_equal(h.calls, 3);
	assert_int_equal(h.n, 2);
	vw_vm_tracker_refresh(t, NULL, no_labels, on_listed, &h);
	assert_int_equal(h.calls, 3);

	/* The same PID under another start time (a new QEMU of the same command line): a new
	 * VM, handed over. */
	assert_int_equal(vm_fixture_kill(root, 20), 0);
	assert_int_equal(vm_fixture_proc(root, 20, 300, "qemu-kvm|-name|guest=b", NULL, NULL), 0);
	vw_vm_tracker_refresh(t, NULL, no_labels, on_listed, &h);
	assert_int_equal(h.calls, 4);
	vw_vm_tracker_free(t);
	close(env.procfs_fd);
	vw_fixture_rm(root);
}

/* The host's process list, as the workload registry gives it (vw_vm_env.processes). */
struct hint {
	uint32_t pid;
	uint64_t start_time;
	const char *comm;
	const char *exe; /* NULL: a kernel thread */
};

struct hints {
	struct hint h[8];
	size_t n;
	bool absent; /* -EAGAIN: no list now */
	unsigned calls;
	unsigned exe_asks; /* executables asked for */
};

struct hint_at {
	struct hints *hs;
	const struct hint *h;
};

static const char *hint_exe(void *at)
{
	struct hint_at *a = at;

	a->hs->exe_asks++;
	return a->h->exe;
}

static int give_hints(void *ud,
		      void (*each)(void *ctx, uint32_t pid, uint64_t start_time, const char *comm,
				   const char *(*exe)(void *at), void *at),
		      void *ctx)
{
	struct hints *hs = ud;

	hs->calls++;
	if (hs->absent)
		return -EAGAIN;
	for (size_t i = 0; i < hs->n; i++)
		each(ctx, hs->h[i].pid, hs->h[i].start_time, hs->h[i].comm, hint_exe,
		     &(struct hint_at){ hs, &hs->h[i] });
	return 0;
}

/*
 * Given the host's process list, a full scan reads a command line only under an identity (PID,
 * start time, comm) it has not classified before: a process whose command line changed under
 * the same identity keeps its verdict, one that exec'd (new comm) or is new is read, one the
 * list lacks is not looked at, and without a list every process is read.
 */
static void test_scan_hinted(void **state)
{
	char *root = vw_fixture_mkdtemp("vmscan");
	struct hints hs = { .h = { { 1, 1, "init", "" },
				   { 10, 100, "qemu-system-x86", "" },
				   { 20, 200, "bash", "" } },
			    .n = 3,
			    .absent = true };
	struct vw_vm_env env = { .processes = give_hints, .processes_ud = &hs };
	struct vw_vm_info *v;
	void *src;

	(void)state;
	assert_int_equal(vm_fixture_proc(root, 1, 1, "/sbin/init", NULL, NULL), 0);
	assert_int_equal(vm_fixture_proc(root, 10, 100, "qemu-system-x86_64|-uuid|" U1 "|-name|a",
					 NULL, NULL), 0);
	assert_int_equal(vm_fixture_proc(root, 20, 200, "bash", NULL, NULL), 0);
	/* Not in the host's list (it lags /proc): found by the scan without the list, kept while
	 * it runs. */
	assert_int_equal(vm_fixture_proc(root, 30, 300, "qemu-kvm|-uuid|" U2, NULL, NULL), 0);
	src = scan_open(root, &env);
	free(list_n(src, 2)); /* no list: every process read */
	hs.absent = false;
	free(list_n(src, 2));
	assert_int_equal(hs.calls, 2);
	assert_int_equal(vm_fixture_kill(root, 30), 0);
	v = list_n(src, 2);
	assert_int_equal(by_pid(v, 2, 30)->state, VW_VM_SHUTOFF);
	free(v);
	free(list_n(src, 1));
	/* A QEMU the list does not name yet is not looked for. */
	assert_int_equal(vm_fixture_proc(root, 50, 500, "qemu-kvm|-uuid|" U2, NULL, NULL), 0);
	free(list_n(src, 1));
	assert_int_equal(vm_fixture_kill(root, 50), 0);

	/* 20's command line now reads as a QEMU, its identity unchanged: not read again. */
	assert_int_equal(vm_fixture_proc(root, 20, 200, "qemu-kvm|-uuid|" U2, NULL, NULL), 0);
	free(list_n(src, 1));
	/* It exec'd: a new comm, read, a VM. */
	hs.h[2].comm = "qemu-kvm";
	v = list_n(src, 2);
	assert_int_equal(by_pid(v, 2, 20)->state, VW_VM_RUNNING);
	assert_string_equal(by_pid(v, 2, 20)->uuid, U2);
	free(v);

	/* 10's command line reads empty now: its verdict (and name) kept under the same identity. */
	assert_int_equal(vm_fixture_proc(root, 10, 100, "", NULL, NULL), 0);
	v = list_n(src, 2);
	assert_string_equal(by_pid(v, 2, 10)->name, "a");
	free(v);
	/* A list that gives the name untruncated: the identity is its first 15 bytes (the
	 * kernel's comm), the same: still not read again. */
	hs.h[1].comm = "qemu-system-x86_64";
	v = list_n(src, 2);
	assert_string_equal(by_pid(v, 2, 10)->name, "a");
	free(v);
	/* PID 10 reused (another start time): read again, no QEMU now; the VM stopped. */
	assert_int_equal(vm_fixture_proc(root, 10, 101, "", NULL, NULL), 0);
	hs.h[1].start_time = 101;
	v = list_n(src, 2);
	assert_int_equal(by_pid(v, 2, 10)->state, VW_VM_SHUTOFF);
	free(v);
	free(list_n(src, 1));

	/* A process the list names but /proc no longer has is classified once it is there. */
	hs.h[3] = (struct hint){ 40, 400, "qemu-system-x86", "" };
	hs.n = 4;
	free(list_n(src, 1));
	assert_int_equal(vm_fixture_proc(root, 40, 400, "qemu-system-x86_64|-uuid|" U1, NULL,
					 NULL), 0);
	v = list_n(src, 2);
	assert_int_equal(by_pid(v, 2, 40)->state, VW_VM_RUNNING);
	free(v);
	vw_vm_procscan.close(src);
	close(env.procfs_fd);
	vw_fixture_rm(root);
}

/*
 * With the executables in the host's list, a command line is read only where the comm or the
 * executable names a QEMU (or the executable is unknown): a QEMU renamed by -name process= is
 * found by its binary, a deleted (upgraded) binary by its name, one whose binary is unknown is
 * read; a shell and a kernel thread are not, so a QEMU-like command line of theirs is no VM.
 */
static void test_scan_hinted_names(void **state)
{
	char *root = vw_fixture_mkdtemp("vmscan");
	struct hints hs = { .h = { { 60, 600, "worker", "/usr/bin/qemu-system-x86_64" },
				   { 61, 610, "bash", "/usr/bin/bash" },
				   { 62, 620, "vhost-60", NULL },
				   { 63, 630, "x", "/usr/libexec/qemu-kvm (deleted)" },
				   { 64, 640, "sleep", "" } },
			    .n = 5 };
	struct vw_vm_env env = { .processes = give_hints, .processes_ud = &hs };
	struct vw_vm_info *v;
	void *src;

	(void)state;
	assert_int_equal(vm_fixture_proc(root, 60, 600, "qemu-system-x86_64|-uuid|" U1, NULL,
					 NULL), 0);
	assert_int_equal(vm_fixture_proc(root, 61, 610, "qemu-kvm|-uuid|" U2, NULL, NULL), 0);
	assert_int_equal(vm_fixture_proc(root, 62, 620, "qemu-kvm|-name|k", NULL, NULL), 0);
	assert_int_equal(vm_fixture_proc(root, 63, 630, "/usr/libexec/qemu-kvm|-name|b", NULL,
					 NULL), 0);
	assert_int_equal(vm_fixture_proc(root, 64, 640, "qemu-kvm|-name|c", NULL, NULL), 0);
	src = scan_open(root, &env);
	v = list_n(src, 3);
	assert_int_equal(hs.exe_asks, 5); /* each unclassified process's, once */
	assert_string_equal(by_pid(v, 3, 60)->uuid, U1);
	assert_string_equal(by_pid(v, 3, 63)->name, "b");
	assert_string_equal(by_pid(v, 3, 64)->name, "c"); /* its binary unknown: read */
	assert_null(by_pid(v, 3, 61));
	assert_null(by_pid(v, 3, 62));
	free(v);
	free(list_n(src, 3));
	assert_int_equal(hs.exe_asks, 5); /* classified: not asked again */
	vw_vm_procscan.close(src);
	close(env.procfs_fd);
	vw_fixture_rm(root);
}

/*
 * A VM saved and restored (virsh save, virsh restore): its QEMU exits, a new one with the same
 * UUID starts within the scan interval. The host's process list names it (a QEMU's comm, an
 * identity the last full scan did not classify): it is listed at once, not at the interval
 * (7.5 s of the VM's energy an ordinary process's, and its guest on its model, before). A new
 * process of another name does not cut the interval short (no full scan: no executable asked).
 */
static void test_restored_qemu_at_once(void **state)
{
	char *root = vw_fixture_mkdtemp("vmscan");
	struct hints hs = { .h = { { 1, 1, "init", "/sbin/init" },
				   { 10, 100, "qemu-system-x86", "" } },
			    .n = 2 };
	struct vw_vm_env env = { .procscan_interval_ns = 10 * VW_NSEC_PER_SEC,
				 .processes = give_hints,
				 .processes_ud = &hs };
	uint64_t now = 1000 * VW_NSEC_PER_SEC;
	struct vw_vm_info *v;
	unsigned asks;
	void *src;

	(void)state;
	vw_clock_set_fake(&now);
	assert_int_equal(vm_fixture_proc(root, 1, 1, "/sbin/init", NULL, NULL), 0);
	assert_int_equal(vm_fixture_proc(root, 10, 100, "qemu-system-x86_64|-uuid|" U1, NULL, NULL),
			 0);
	src = scan_open(root, &env);
	free(list_n(src, 1));
	asks = hs.exe_asks;
	/* A shell starts: the last list stands. */
	assert_int_equal(vm_fixture_proc(root, 30, 300, "bash", NULL, NULL), 0);
	hs.h[2] = (struct hint){ 30, 300, "bash", "/usr/bin/bash" };
	hs.n = 3;
	now += VW_NSEC_PER_SEC;
	free(list_n(src, 1));
	assert_int_equal(hs.exe_asks, asks);
	/* virsh save: the QEMU exits (reported stopped at once, then gone). */
	assert_int_equal(vm_fixture_kill(root, 10), 0);
	hs.h[1] = hs.h[2];
	hs.n = 2;
	now += VW_NSEC_PER_SEC;
	v = list_n(src, 1);
	assert_int_equal(v[0].state, VW_VM_SHUTOFF);
	free(v);
	now += VW_NSEC_PER_SEC;
	free(list_n(src, 0));
	/* virsh restore, 2 s later: a new QEMU, the same UUID, listed at the next round. */
	assert_int_equal(vm_fixture_proc(root, 20, 200, "qemu-system-x86_64|-uuid|" U1, NULL, NULL),
			 0);
	hs.h[2] = (struct hint){ 20, 200, "qemu-system-x86", "" };
	hs.n = 3;
	now += VW_NSEC_PER_SEC;
	v = list_n(src, 1);
	assert_int_equal(v[0].qemu_pid, 20);
	assert_string_equal(v[0].uuid, U1);
	assert_int_equal(v[0].state, VW_VM_RUNNING);
	free(v);
	/* Classified now: the rounds after keep the list (no full scan: no executable asked). */
	asks = hs.exe_asks;
	now += VW_NSEC_PER_SEC;
	free(list_n(src, 1));
	assert_int_equal(hs.exe_asks, asks);
	vw_vm_procscan.close(src);
	close(env.procfs_fd);
	vw_clock_set_fake(NULL);
	vw_fixture_rm(root);
}

/*
 * A local user starts a process named qemu-system-x86_64 (a copied binary: comm and argv[0]) in
 * every round, each a new PID: before, each cut the scan interval short, a full scan (a second
 * pass over the host's list, 2.5 ms a round at 10,000 processes in the ASan build where the
 * list standing costs 0.09 ms). Now such a process's command line and owner are read, once: not
 * a trusted user's QEMU (or root's in a container, claiming a host VM's UUID: refused anyway),
 * no full scan (the list is walked once a round); it is counted at the next full scan. A
 * trusted user's new QEMU still cuts the interval short.
 */
/* Two rounds of src (one VM) a second apart within its interval, each one pass over the host's
 * list: no full scan. */
static void rounds_without_scan(void *src, struct hints *hs, uint64_t *now)
{
	for (int round = 0; round < 2; round++) {
		unsigned calls = hs->calls;

		*now += VW_NSEC_PER_SEC;
		free(list_n(src, 1));
		assert_int_equal(hs->calls, calls + 1);
	}
}

static void test_fake_qemu_no_early_scan(void **state)
{
	char *root = vw_fixture_mkdtemp("vmscan");
	struct hints hs = { .h = { { 1, 1, "init", "/sbin/init" },
				   { 10, 100, "qemu-system-x86", "" } },
			    .n = 2 };
	struct vw_qemu_trust *trust = vw_qemu_trust_new(-1, NULL, 0);
	struct vw_vm_env env = { .procscan_interval_ns = 10 * VW_NSEC_PER_SEC,
				 .processes = give_hints,
				 .processes_ud = &hs,
				 .qemu_trust = trust };
	uint64_t now = 1000 * VW_NSEC_PER_SEC;
	struct vw_vm_info *v;
	unsigned calls;
	void *src;

	(void)state;
	vw_clock_set_fake(&now);
	assert_int_equal(vm_fixture_proc(root, 1, 1, "/sbin/init", NULL, NULL), 0);
	assert_int_equal(vm_fixture_proc(root, 10, 100, "qemu-system-x86_64|-uuid|" U1, NULL, NULL),
			 0);
	assert_int_equal(vm_fixture_status(root, 10, "qemu-system-x86", 0, 0,
					   "0\nNStgid:\t10\nNSpid:\t10"), 0);
	src = scan_open(root, &env);
	free(list_n(src, 1));
	for (uint32_t pid = 30; pid < 36; pid++) {
		assert_int_equal(vm_fixture_proc(root, pid, pid * 10, "qemu-system-x86_64|-uuid|" U1,
						 NULL, NULL), 0);
		/* 30-33 nobody's; 34, 35 root's in a container, claiming the host VM's UUID */
		if (pid < 34)
			assert_int_equal(vm_fixture_owner(root, pid, "qemu-system-x86", 65534, 65534),
					 0);
		else
			assert_int_equal(vm_fixture_status(root, pid, "qemu-system-x86", 0, 0,
							   "0\nNSpid:\t35\t1"), 0);
		hs.h[2] = (struct hint){ pid, pid * 10, "qemu-system-x86", "" };
		hs.n = 3;
		calls = hs.calls;
		now += VW_NSEC_PER_SEC;
		v = list_n(src, 1);
		assert_int_equal(v[0].qemu_pid, 10);
		free(v);
		assert_int_equal(hs.calls, calls + 1); /* one pass: no full scan */
		calls = hs.calls;
		now += VW_NSEC_PER_SEC;
		free(list_n(src, 1)); /* still there: not read again */
		assert_int_equal(hs.calls, calls + 1);
		assert_int_equal(vm_fixture_kill(root, pid), 0);
	}
	/* Root's anonymous fake in a pod, below the host's PID namespace, no pod metadata: no VM,
	 * so no full scan for it either. */
	assert_int_equal(vm_fixture_proc(root, 36, 360, "qemu-system-x86_64|-name|guest=shop_x", NULL,
					 "0::/kubepods/besteffort/pod" POD "/0123456789abcdef\n"), 0);
	assert_int_equal(vm_fixture_status(root, 36, "qemu-system-x86", 0, 0,
					   "0\nNStgid:\t36\t1\nNSpid:\t36\t1"), 0);
	hs.h[2] = (struct hint){ 36, 360, "qemu-system-x86", "" };
	rounds_without_scan(src, &hs, &now);
	assert_int_equal(vm_fixture_kill(root, 36), 0);
	/* Two at once, the list not in PID order: neither cuts the interval short, either round. */
	for (uint32_t pid = 70; pid < 72; pid++) {
		assert_int_equal(vm_fixture_proc(root, pid, pid * 10, "qemu-system-x86_64", NULL,
						 NULL), 0);
		assert_int_equal(vm_fixture_owner(root, pid, "qemu-system-x86", 65534, 65534), 0);
	}
	hs.h[2] = (struct hint){ 71, 710, "qemu-system-x86", "" };
	hs.h[3] = (struct hint){ 70, 700, "qemu-system-x86", "" };
	hs.n = 4;
	rounds_without_scan(src, &hs, &now);
	assert_int_equal(vm_fixture_kill(root, 70), 0);
	assert_int_equal(vm_fixture_kill(root, 71), 0);
	hs.n = 3;
	/* The interval's full scan counts the one there. */
	assert_int_equal(vm_fixture_proc(root, 40, 400, "qemu-system-x86_64|-uuid|" U1, NULL, NULL),
			 0);
	assert_int_equal(vm_fixture_owner(root, 40, "qemu-system-x86", 65534, 65534), 0);
	hs.h[2] = (struct hint){ 40, 400, "qemu-system-x86", "" };
	now += 10 * VW_NSEC_PER_SEC;
	free(list_n(src, 1));
	assert_int_equal(vw_qemu_trust_untrusted(trust), 1);
	/* A root's QEMU starts: listed at once, as before. */
	assert_int_equal(vm_fixture_proc(root, 50, 500, "qemu-kvm|-uuid|" U2, NULL, NULL), 0);
	hs.h[3] = (struct hint){ 50, 500, "qemu-kvm", "" };
	hs.n = 4;
	now += VW_NSEC_PER_SEC;
	v = list_n(src, 2);
	assert_non_null(by_pid(v, 2, 50));
	free(v);
	vw_vm_procscan.close(src);
	close(env.procfs_fd);
	vw_qemu_trust_free(trust);
	vw_clock_set_fake(NULL);
	vw_fixture_rm(root);
}

static void test_unreadable_procfs(void **state)
{
	struct vw_vm_env env = { .procfs_fd = -1 };
	void *src = NULL;

	(void)state;
	assert_int_equal(vw_vm_procscan.open(&env, &src), -EINVAL);
}

/*
 * On this process's own procfs, a QEMU's start time is read once and its pidfd watched: later
 * rounds read no <pid>/stat while it runs, and its exit is seen at the next round's first
 * lookup (then the PID is read afresh: gone, or another process's start time).
 */
static void test_start_time_watched(void **state)
{
	struct vw_qemu_starts starts = { 0 };
	int procfd = vw_dir_open_at(AT_FDCWD, "/proc");
	uint64_t start, again;
	pid_t child;
	int st;

	(void)state;
	assert_true(procfd >= 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* gone with the test, even a failed one */
		pause();
		_exit(0);
	}
	assert_int_equal(vw_qemu_start_time(&starts, procfd, (uint32_t)child, &start), 0);
	assert_int_equal(starts.reads, 1);
	if (starts.watch < 0) {
		kill(child, SIGKILL);
		waitpid(child, &st, 0);
		vw_qemu_starts_free(&starts);
		close(procfd);
		skip(); /* no pidfd_open (Linux < 5.3) or /proc is not ours */
	}
	for (int round = 0; round < 3; round++) {
		vw_qemu_starts_clear(&starts);
		assert_int_equal(vw_qemu_start_time(&starts, procfd, (uint32_t)child, &again), 0);
		assert_int_equal(again, start);
	}
	assert_int_equal(starts.reads, 1); /* watched: not read again */
	assert_int_equal(starts.n_w, 1);
	/* It exits: the next round knows, and reads the PID afresh. */
	assert_int_equal(kill(child, SIGKILL), 0);
	assert_int_equal(waitpid(child, &st, 0), child);
	vw_qemu_starts_clear(&starts);
	assert_int_equal(vw_qemu_start_time(&starts, procfd, (uint32_t)child, &again), -ESRCH);
	assert_int_equal(starts.exits, 1);
	assert_int_equal(starts.reads, 2);
	assert_int_equal(starts.n_w, 0);
	/* A PID nobody asks about in a round is no longer watched. */
	assert_int_equal(vw_qemu_start_time(&starts, procfd, (uint32_t)getpid(), &again), 0);
	assert_int_equal(starts.n_w, 1);
	vw_qemu_starts_clear(&starts);
	vw_qemu_starts_clear(&starts);
	assert_int_equal(starts.n_w, 0);
	vw_qemu_starts_free(&starts);

	/* Past half the open-file limit no pidfd is kept: read each round, as before. */
	{
		struct rlimit was, low;
		int fill[16], probe;

		for (size_t i = 0; i < ARRAY_SIZE(fill); i++)
			fill[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
		probe = dup(0);
		assert_true(probe >= 16);
		close(probe);
		assert_int_equal(getrlimit(RLIMIT_NOFILE, &was), 0);
		low = was;
		low.rlim_cur = (rlim_t)probe + 8; /* half of it is below the next fd's number */
		assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
		starts = (struct vw_qemu_starts){ 0 };
		for (int round = 0; round < 3; round++) {
			vw_qemu_starts_clear(&starts);
			assert_int_equal(vw_qemu_start_time(&starts, procfd, (uint32_t)getpid(),
							    &again), 0);
		}
		assert_int_equal(starts.n_w, 0);
		assert_int_equal(starts.reads, 3);
		vw_qemu_starts_free(&starts);
		assert_int_equal(setrlimit(RLIMIT_NOFILE, &was), 0);
		for (size_t i = 0; i < ARRAY_SIZE(fill); i++)
			close(fill[i]);
	}
	close(procfd);
}

/*
 * Between full scans the process scan keeps its last list packed (no struct vw_vm_info a VM)
 * and unpacks it each round: the same bytes as the scan gave (the tracker compares lists with
 * memcmp), for a VM with a -name (one given twice, a longer then a shorter: nothing of the
 * first left after the NUL), a Proxmox -id and Xen, and one with none of them; and a VM that
 * exits is reported stopped with the same fields.
 */
static void test_cached_list_same_bytes(void **state)
{
	char *root = vw_fixture_mkdtemp("vmscan");
	struct vw_vm_env env = { .procscan_interval_ns = 10 * VW_NSEC_PER_SEC };
	uint64_t now = 1000 * VW_NSEC_PER_SEC;
	struct vw_vm_info *full, *cached, want;
	void *src;

	(void)state;
	vw_clock_set_fake(&now);
	assert_int_equal(vm_fixture_proc(root, 10, 100,
					 "qemu-system-x86_64|-uuid|" U1
					 "|-name|guest=a-rather-long-name,guest=b|-id|104|-smp|3|-accel|xen",
					 NULL, NULL), 0);
	assert_int_equal(vm_fixture_proc(root, 20, 200, "qemu-kvm|-uuid|" U2, NULL, NULL), 0);
	src = scan_open(root, &env);
	full = list_n(src, 2); /* the full scan */
	assert_string_equal(by_pid(full, 2, 10)->name, "b");
	assert_string_equal(by_pid(full, 2, 10)->owner.vmid, "104");
	assert_string_equal(by_pid(full, 2, 10)->hypervisor, "xen");
	for (size_t i = 0; i < sizeof(full->name); i++)
		if (i >= strlen(by_pid(full, 2, 10)->name))
			assert_int_equal(by_pid(full, 2, 10)->name[i], 0);
	now += VW_NSEC_PER_SEC;
	cached = list_n(src, 2); /* from the kept list */
	assert_memory_equal(cached, full, 2 * sizeof(*full));
	free(cached);
	/* The first exits: reported stopped, everything else as it was. */
	want = *by_pid(full, 2, 10);
	want.state = VW_VM_SHUTOFF;
	assert_int_equal(vm_fixture_kill(root, 10), 0);
	now += VW_NSEC_PER_SEC;
	cached = list_n(src, 2);
	assert_memory_equal(by_pid(cached, 2, 10), &want, sizeof(want));
	assert_memory_equal(by_pid(cached, 2, 20), by_pid(full, 2, 20), sizeof(want));
	free(cached);
	free(full);
	vw_vm_procscan.close(src);
	close(env.procfs_fd);
	vw_clock_set_fake(NULL);
	vw_fixture_rm(root);
}

/* ---- list_each: the VMs handed one by one, as list() gives them ---- */

struct each_got {
	struct vw_vm_info vm[8];
	size_t n;
	size_t fail_at; /* the call (1-based) that fails with -ENOMEM; 0: none */
};

static int hand(void *ctx, const struct vw_vm_info *vm)
{
	struct each_got *h = ctx;

	if (h->fail_at && h->n + 1 == h->fail_at)
		return -ENOMEM;
	assert_true(h->n < ARRAY_SIZE(h->vm));
	h->vm[h->n++] = *vm;
	return 0;
}

/* A round of a (list()) and of b (list_each) over one tree: the same VMs, byte for byte. */
static struct each_got got; /* the last same_round()'s */

static size_t same_round(void *a, void *b)
{
	struct each_got h = { .n = 0 };
	struct vw_vm_info *v = NULL;
	size_t n = 0;

	assert_int_equal(vw_vm_procscan.list(a, &v, &n), 0);
	assert_int_equal(vw_vm_procscan.list_each(b, hand, &h), 0);
	assert_int_equal(h.n, n);
	assert_memory_equal(h.vm, v, n * sizeof(*v));
	free(v);
	got = h;
	return n;
}

/*
 * The registry merges the process scan's VMs one by one (list_each), with no list of whole
 * struct vw_vm_info built: over full scans, kept lists between them, a duplicate UUID, a QEMU
 * that exits (stopped once, then forgotten), they are list()'s, in its order, to the byte. A
 * consumer's failure stops the handing at once and is returned.
 */
static void test_list_each_same(void **state)
{
	char *root = vw_fixture_mkdtemp("vmeach");
	struct vw_vm_env env = { .procscan_interval_ns = 10 * VW_NSEC_PER_SEC };
	uint64_t now = 1000 * VW_NSEC_PER_SEC;
	struct each_got h = { .fail_at = 2 };
	void *a, *b;

	(void)state;
	vw_clock_set_fake(&now);
	assert_int_equal(vm_fixture_proc(root, 10, 100,
					 "qemu-system-x86_64|-uuid|" U1 "|-name|guest=web|-id|104|-smp|3",
					 NULL, NULL), 0);
	assert_int_equal(vm_fixture_proc(root, 20, 200, "qemu-kvm|-uuid|" U2 "|-accel|xen", NULL,
					 NULL), 0);
	assert_int_equal(vm_fixture_proc(root, 25, 150, "qemu-kvm|-uuid|" U2 "|-smp|7", NULL, NULL),
			 0); /* older: not the VM */
	assert_int_equal(vm_fixture_proc(root, 30, 300, "qemu-system-aarch64|-name|anon", NULL,
					 NULL), 0);
	a = scan_open(root, &env);
	b = scan_open(root, &env);
	assert_int_equal(same_round(a, b), 3); /* full scans */
	assert_int_equal(got.vm[0].qemu_pid, 10);
	assert_string_equal(got.vm[0].name, "web");
	assert_string_equal(got.vm[0].owner.vmid, "104");
	assert_int_equal(got.vm[1].qemu_pid, 20); /* the younger of U2's two */
	assert_string_equal(got.vm[1].hypervisor, "xen");
	assert_int_equal(got.vm[2].qemu_pid, 30);
	now += VW_NSEC_PER_SEC;
	assert_int_equal(same_round(a, b), 3); /* the kept lists */
	assert_int_equal(got.vm[0].vcpus, 3);
	assert_int_equal(vm_fixture_kill(root, 10), 0);
	now += VW_NSEC_PER_SEC;
	assert_int_equal(same_round(a, b), 3); /* QEMU 10 stopped: SHUTOFF, last */
	assert_int_equal(got.vm[0].qemu_pid, 20);
	assert_string_equal(got.vm[2].uuid, U1);
	assert_int_equal(got.vm[2].state, VW_VM_SHUTOFF);
	assert_string_equal(got.vm[2].name, "web");
	now += VW_NSEC_PER_SEC;
	assert_int_equal(same_round(a, b), 2);
	assert_int_equal(got.vm[0].state, VW_VM_RUNNING);
	assert_int_equal(got.vm[1].state, VW_VM_RUNNING);
	assert_int_equal(vm_fixture_kill(root, 30), 0);
	now += 20 * VW_NSEC_PER_SEC;
	assert_int_equal(same_round(a, b), 2); /* a full scan when due */
	/* A consumer that fails: handed no more, its error returned. */
	assert_int_equal(vm_fixture_proc(root, 30, 400, "qemu-system-aarch64|-name|anon", NULL,
					 NULL), 0);
	now += 20 * VW_NSEC_PER_SEC;
	assert_int_equal(vw_vm_procscan.list_each(b, hand, &h), -ENOMEM);
	assert_int_equal(h.n, 1);
	vw_vm_procscan.close(a);
	vw_vm_procscan.close(b);
	close(env.procfs_fd);
	vw_clock_set_fake(NULL);
	vw_fixture_rm(root);
}

/* A preferred source for the registry's merge: U1 running without its QEMU or name (the
 * process scan's fill them), U2 stopped while its QEMU still runs (the scan's report of it
 * dropped), and a third VM of its own. */
static int first_open(const struct vw_vm_env *env, void **ret)
{
	(void)env;
	*ret = NULL;
	return 0;
}

static int first_list(void *state, struct vw_vm_info **ret, size_t *ret_n)
{
	struct vw_vm_info *v = calloc(3, sizeof(*v));

	(void)state;
	assert_non_null(v);
	memcpy(v[0].uuid, U1, sizeof(U1));
	memcpy(v[0].source, "first", 6);
	memcpy(v[1].uuid, U2, sizeof(U2));
	memcpy(v[1].source, "first", 6);
	v[1].state = VW_VM_SHUTOFF;
	v[1].qemu_pid = 20;
	memcpy(v[2].uuid, POD, sizeof(POD));
	memcpy(v[2].name, "own", 4);
	*ret = v;
	*ret_n = 3;
	return 0;
}

static void first_close(void *state)
{
	(void)state;
}

/* The registry over a preferred source and the process scan: merged from list_each as from
 * list(), the same list to the byte, round after round. */
static void test_merge_each_same(void **state)
{
	static const struct vw_vm_source_ops first = { "first", first_open, first_list, first_close };
	char *root = vw_fixture_mkdtemp("vmeach");
	struct vw_vm_env env = { 0 };
	struct vw_vm_source_ops whole = vw_vm_procscan; /* list() only */
	const struct vw_vm_source_ops *const by_each[] = { &first, &vw_vm_procscan, NULL };
	const struct vw_vm_source_ops *const by_list[] = { &first, &whole, NULL };
	struct vw_vms *x, *y;

	(void)state;
	whole.list_each = NULL;
	assert_int_equal(vm_fixture_proc(root, 10, 100, "qemu-system-x86_64|-uuid|" U1 "|-name|guest=web",
					 NULL, NULL), 0);
	assert_int_equal(vm_fixture_proc(root, 20, 200, "qemu-kvm|-uuid|" U2, NULL, NULL), 0);
	assert_int_equal(vm_fixture_proc(root, 30, 300, "qemu-system-aarch64|-name|anon", NULL,
					 NULL), 0);
	env.procfs_fd = vw_root_open(root);
	assert_true(env.procfs_fd >= 0);
	assert_non_null(x = vw_vms_open_with(&env, by_each));
	assert_non_null(y = vw_vms_open_with(&env, by_list));
	for (int round = 0; round < 4; round++) {
		struct vw_vm_info *vx, *vy;
		size_t nx, ny;

		if (round == 2)
			assert_int_equal(vm_fixture_kill(root, 30), 0);
		assert_int_equal(vw_vms_list(x, &vx, &nx), 0);
		assert_int_equal(vw_vms_list(y, &vy, &ny), 0);
		assert_int_equal(nx, round < 3 ? 4 : 3);
		assert_int_equal(nx, ny);
		assert_memory_equal(vx, vy, nx * sizeof(*vx));
		assert_int_equal(vx[0].qemu_pid, 10); /* filled from the scan */
		assert_string_equal(vx[0].name, "web");
		free(vx);
		free(vy);
	}
	vw_vms_close(x);
	vw_vms_close(y);
	close(env.procfs_fd);
	vw_fixture_rm(root);
}

/*
 * A QEMU's pod is read from its cgroup file once per process, not at each full scan: a pod's
 * QEMU is forked inside the pod's cgroup and never leaves it (reading it again was four
 * system calls per VM a scan). The file rewritten under the same process changes nothing; a
 * new process under the same PID (another start time) is read again.
 */
static void test_pod_read_once(void **state)
{
#define POD_CG(uid) "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" uid \
		    ".slice/cri-containerd-0123456789abcdef.scope\n"
	char *root = vw_fixture_mkdtemp("vmscanpod");
	struct pods_say say = { .answer = 1 }; /* every pod a virt-launcher */
	struct vw_vm_env env = { .kubevirt_pod = pods_say, .kubevirt_pod_ud = &say };
	struct vw_vm_info *v;
	void *src;

	(void)state;
	assert_int_equal(vm_fixture_proc(root, 10, 1, "qemu-system-x86_64|-uuid|" U1, NULL,
					 POD_CG("1111aaaa_2222_3333_4444_555566667777")), 0);
	src = scan_open(root, &env); /* procscan_interval_ns 0: every list a full scan */
	v = list_n(src, 1);
	assert_string_equal(v[0].pod_uid, "1111aaaa-2222-3333-4444-555566667777");
	free(v);
	assert_int_equal(vw_fixture_write(root, "10/cgroup",
					  POD_CG("9999bbbb_2222_3333_4444_555566667777"), 0), 0);
	v = list_n(src, 1);
	assert_string_equal(v[0].pod_uid, "1111aaaa-2222-3333-4444-555566667777");
	free(v);
	/* PID 10 again, another process: its own pod. */
	assert_int_equal(vm_fixture_proc(root, 10, 2, "qemu-system-x86_64|-uuid|" U1, NULL,
					 POD_CG("9999bbbb_2222_3333_4444_555566667777")), 0);
	v = list_n(src, 1);
	assert_int_equal(v[0].qemu_start_time, 2);
	assert_string_equal(v[0].pod_uid, "9999bbbb-2222-3333-4444-555566667777");
	free(v);
	vw_vm_procscan.close(src);
	close(env.procfs_fd);
	vw_fixture_rm(root);
}

#define POD_A "aaaa1111-2222-3333-4444-555566667777"
#define POD_B "bbbb1111-2222-3333-4444-555566667777"
#define BELOW "0\nNStgid:\t%u\t1\nNSpid:\t%u\t1" /* a PID namespace below the procfs's */

/* vm_fixture_status with NSpid: pid in the procfs's namespace (below: PID 1 of one below). */
static void fixture_ns(const char *root, uint32_t pid, const char *comm, uint32_t uid, bool below)
{
	char nspid[64];

	snprintf(nspid, sizeof(nspid), below ? BELOW : "0\nNStgid:\t%u\nNSpid:\t%u", pid, pid);
	assert_int_equal(vm_fixture_status(root, pid, comm, uid, uid, nspid), 0);
}

/*
 * A QEMU in a pod and a PID namespace below the procfs's is a VM only when the pod's metadata
 * says KubeVirt's: root in any pod can `exec -a qemu-system-x86_64` a loop of anonymous fakes,
 * each a VM series before (and one named <ns>_<vmi> counted as KubeVirt's, its energy taken out
 * of the pod's). Here a root fake in pod A (no virt-launcher) and KubeVirt's QEMU (UID 107) in
 * pod B before the metadata lists B: both ordinary processes, counted. The metadata lists B:
 * the QEMU is a VM, and stays one when B drops out of it. A QEMU in the procfs's own namespace
 * in a pod's cgroup (a Kata sandbox's, started by the runtime on the host) and one below it in no
 * pod (a Docker container's, started by the host's administrator) are VMs as before.
 */
static void test_pod_fake(void **state)
{
	static const char *const kubevirt[] = { "107" };
	struct vw_qemu_trust *trust = vw_qemu_trust_new(-1, kubevirt, 1);
	char *root = vw_fixture_mkdtemp("vmpodfake");
	struct pods_say say = { .answer = -ENOENT, .uid = POD_B };
	struct vw_vm_env env = { .qemu_trust = trust, .kubevirt_pod = pods_say,
				 .kubevirt_pod_ud = &say };
	struct vw_vm_info *v;
	void *src;

	(void)state;
	assert_non_null(trust);
	assert_int_equal(vm_fixture_proc(root, 10, 100, "qemu-system-x86_64|-name|sandbox-1234", NULL,
					 POD_CG("aaaa1111_2222_3333_4444_555566667777")), 0);
	fixture_ns(root, 10, "qemu-system-x86", 0, false);
	assert_int_equal(vm_fixture_proc(root, 20, 200, "qemu-system-x86_64|-name|guest=shop_web",
					 NULL, POD_CG("aaaa1111_2222_3333_4444_555566667777")), 0);
	fixture_ns(root, 20, "qemu-system-x86", 0, true);
	assert_int_equal(vm_fixture_proc(root, 30, 300, "/usr/libexec/qemu-kvm|-name|"
					 "guest=shop_vm1|-uuid|" U2, NULL,
					 POD_CG("bbbb1111_2222_3333_4444_555566667777")), 0);
	fixture_ns(root, 30, "qemu-kvm", 107, true);
	assert_int_equal(vm_fixture_proc(root, 40, 400, "qemu-system-x86_64|-uuid|" U1, NULL,
					 "0::/system.slice/docker-0123456789abcdef.scope\n"), 0);
	fixture_ns(root, 40, "qemu-system-x86", 0, true);

	src = scan_open(root, &env);
	v = list_n(src, 2);
	assert_non_null(by_pid(v, 2, 10));
	assert_string_equal(by_pid(v, 2, 10)->pod_uid, POD_A);
	assert_non_null(by_pid(v, 2, 40));
	free(v);
	assert_int_equal(vw_qemu_trust_pods_refused(trust), 2);
	assert_int_equal(vw_qemu_trust_untrusted(trust), 0);
	assert_int_equal(vw_qemu_trust_claims_refused(trust), 0);

	/* The metadata lists pod B as a virt-launcher: its QEMU is a VM from this scan on. */
	say.answer = 1;
	v = list_n(src, 3);
	assert_non_null(by_pid(v, 3, 30));
	assert_string_equal(by_pid(v, 3, 30)->uuid, U2);
	assert_string_equal(by_pid(v, 3, 30)->pod_uid, POD_B);
	free(v);
	assert_int_equal(vw_qemu_trust_pods_refused(trust), 1);
	/* B gone from the metadata (a relist, a restart): the running VM stays one. */
	say.answer = -ENOENT;
	free(list_n(src, 3));
	/* The fake gone: none counted. */
	assert_int_equal(vm_fixture_kill(root, 20), 0);
	free(list_n(src, 3));
	assert_int_equal(vw_qemu_trust_pods_refused(trust), 0);
	vw_vm_procscan.close(src);
	close(env.procfs_fd);

	/* No pod metadata at all: a pod's QEMU below the host's namespace is never a VM. */
	env = (struct vw_vm_env){ .qemu_trust = trust };
	src = scan_open(root, &env);
	v = list_n(src, 2);
	assert_null(by_pid(v, 2, 30));
	free(v);
	assert_int_equal(vw_qemu_trust_pods_refused(trust), 1);
	vw_vm_procscan.close(src);
	close(env.procfs_fd);
	vw_qemu_trust_free(trust);
	vw_fixture_rm(root);
}

/* The PID the fixture swaps for another process's in the wrapped reads below. */
static uint32_t swap_pid;

/* Before the next read of <swap_pid>/cgroup (vw_read_file_at, wrapped): swap_pid exits and a
 * process of pod 9999bbbb… (started at 2, no QEMU) takes its PID, in swap_cg_proc. */
static const char *swap_cg_proc;

int __real_vw_read_file_at(int dirfd, const char *rel, char *buf, size_t size, size_t *ret_len);
int __wrap_vw_read_file_at(int dirfd, const char *rel, char *buf, size_t size, size_t *ret_len);
int __wrap_vw_read_file_at(int dirfd, const char *rel, char *buf, size_t size, size_t *ret_len)
{
	char want[32];

	snprintf(want, sizeof(want), "%" PRIu32 "/cgroup", swap_pid);
	if (swap_cg_proc && strcmp(rel, want) == 0) {
		assert_int_equal(vm_fixture_kill(swap_cg_proc, swap_pid), 0);
		assert_int_equal(vm_fixture_proc(swap_cg_proc, swap_pid, 2, "sleep|1d", NULL,
						 "0::/kubepods.slice/kubepods-besteffort.slice/"
						 "kubepods-besteffort-pod9999bbbb_2222_3333_4444_"
						 "555566667777.slice/cri-containerd-0123.scope\n"), 0);
		swap_cg_proc = NULL;
	}
	return __real_vw_read_file_at(dirfd, rel, buf, size, ret_len);
}

/*
 * A KubeVirt QEMU (pod 1111aaaa…) exits after the scan found it and before its cgroup is read;
 * another pod's process takes its PID. The VM was that pod's (its namespace and VMI name, its
 * energy under them, for the lists that kept it). The start time is read after the cgroup:
 * another process's, no pod.
 */
static void test_pod_pid_reused(void **state)
{
	char *root = vw_fixture_mkdtemp("vmscanpodreuse");
	struct vw_vm_env env = { 0 };
	struct vw_vm_info *v;
	void *src;

	(void)state;
	assert_int_equal(vm_fixture_proc(root, 10, 1, "qemu-system-x86_64|-uuid|" U1, NULL,
					 "0::/kubepods.slice/kubepods-besteffort.slice/"
					 "kubepods-besteffort-pod1111aaaa_2222_3333_4444_555566667777"
					 ".slice/cri-containerd-0123.scope\n"), 0);
	/* in the host's PID namespace (a Kata-like pod's QEMU): a VM whatever its pod's metadata
	 * (one below it would need its pod listed as KubeVirt's, "A pod's QEMU") */
	assert_int_equal(vm_fixture_status(root, 10, "qemu-system-x86", 0, 0, "0\nNSpid:\t10"), 0);
	src = scan_open(root, &env);
	swap_pid = 10;
	swap_cg_proc = root;
	v = list_n(src, 1);
	assert_null(swap_cg_proc); /* the swap happened */
	assert_string_equal(v[0].pod_uid, "");
	free(v);
	vw_vm_procscan.close(src);
	close(env.procfs_fd);
	vw_fixture_rm(root);
}

/* The host's passwd as Debian writes it: libvirt-qemu 64055, no qemu user. */
#define PASSWD_DEBIAN                                                                             \
	"root:x:0:0:root:/root:/bin/bash\n"                                                       \
	"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"                            \
	"libvirt-qemu:x:64055:108:Libvirt Qemu,,,:/var/lib/libvirt:/usr/sbin/nologin\n"
#define U3 "11111111-2222-3333-4444-555555555555"
#define U4 "22222222-2222-3333-4444-555555555555"

/*
 * Whose QEMU names a VM. root's and libvirt-qemu's (a trusted user, by name from the host's
 * passwd) do. A local user's does not, whatever -uuid and -name it gives: nobody's `exec -a
 * /usr/bin/qemu-system-x86_64 ... -uuid U1 -name guest=victim-vm`, younger than the real VM's
 * QEMU, neither replaces it (the younger won) nor is a VM; nor one whose /proc directory is
 * root's (here all are: a non-dumpable process's look so) while status says nobody; nor a
 * setuid one (real nobody, effective root). They are counted, and a libvirt VM missing its QEMU
 * never gets one of theirs either.
 */
static void test_untrusted_owner(void **state)
{
	static const char *const users[] = { "libvirt-qemu", "qemu" };
	char *proc = vw_fixture_mkdtemp("vmtrust"), *host = vw_fixture_mkdtemp("vmtrusthost");
	struct vw_vm_env env = { 0 };
	struct vw_qemu_trust *trust;
	struct vw_vm_info *v, lv[3] = { 0 };
	char dir40[4096];
	struct stat st;
	int rootfd;
	void *src;

	(void)state;
	assert_int_equal(vw_fixture_write(host, "etc/passwd", PASSWD_DEBIAN, 0), 0);
	rootfd = vw_root_open(host);
	assert_true(rootfd >= 0);
	trust = vw_qemu_trust_new(rootfd, users, 2);
	close(rootfd);
	assert_non_null(trust);
	assert_true(vw_qemu_trust_uid(trust, 0));
	assert_true(vw_qemu_trust_uid(trust, 64055));
	assert_false(vw_qemu_trust_uid(trust, 65534));
	assert_false(vw_qemu_trust_uid(trust, 107)); /* no qemu user in this passwd */

	assert_int_equal(vm_fixture_proc(proc, 10, 100, "/usr/bin/qemu-system-x86_64|-uuid|" U1
					 "|-name|guest=real", NULL, NULL), 0);
	assert_int_equal(vm_fixture_proc(proc, 20, 200, "/usr/bin/qemu-system-x86_64|-uuid|" U2
					 "|-name|guest=tenant", NULL, NULL), 0);
	assert_int_equal(vm_fixture_owner(proc, 20, "qemu-system-x86", 64055, 64055), 0);
	assert_int_equal(vm_fixture_proc(proc, 30, 300, "/usr/bin/qemu-system-x86_64|-uuid|" U1
					 "|-name|guest=victim-vm", NULL, NULL), 0);
	assert_int_equal(vm_fixture_owner(proc, 30, "qemu-system-x86", 65534, 65534), 0);
	assert_int_equal(vm_fixture_proc(proc, 40, 400, "qemu-system-x86_64|-uuid|" U3
					 "|-name|guest=fake", NULL, NULL), 0);
	assert_int_equal(vm_fixture_owner(proc, 40, "qemu-system-x86", 65534, 65534), 0);
	snprintf(dir40, sizeof(dir40), "%s/40", proc);
	assert_int_equal(stat(dir40, &st), 0);
	assert_int_equal(st.st_uid, 0); /* its directory root's, as a non-dumpable process's */
	assert_int_equal(vm_fixture_proc(proc, 50, 500, "qemu-system-x86_64|-uuid|" U4, NULL,
					 NULL), 0);
	assert_int_equal(vm_fixture_owner(proc, 50, "qemu-system-x86", 65534, 0), 0);

	env.qemu_trust = trust;
	src = scan_open(proc, &env);
	v = list_n(src, 2);
	assert_int_equal(v[0].qemu_pid, 10);
	assert_string_equal(v[0].uuid, U1);
	assert_string_equal(v[0].name, "real");
	assert_int_equal(v[1].qemu_pid, 20);
	assert_string_equal(v[1].uuid, U2);
	free(v);
	assert_int_equal(vw_qemu_trust_untrusted(trust), 3);

	/* libvirt's VMs lacking their QEMU: U1 gets root's, U3 none (only nobody's claims it). */
	memcpy(lv[0].uuid, U1, sizeof(U1));
	memcpy(lv[1].uuid, U3, sizeof(U3));
	memcpy(lv[2].uuid, U2, sizeof(U2));
	lv[0].vcpus = lv[1].vcpus = lv[2].vcpus = 1;
	vw_qemu_resolve(env.procfs_fd, NULL, trust, lv, 3);
	assert_int_equal(lv[0].qemu_pid, 10);
	assert_int_equal(lv[1].qemu_pid, 0);
	assert_int_equal(lv[2].qemu_pid, 20);

	/* The impostors gone: none counted. */
	assert_int_equal(vm_fixture_kill(proc, 30), 0);
	assert_int_equal(vm_fixture_kill(proc, 40), 0);
	assert_int_equal(vm_fixture_kill(proc, 50), 0);
	v = list_n(src, 2);
	free(v);
	assert_int_equal(vw_qemu_trust_untrusted(trust), 0);
	vw_vm_procscan.close(src);
	close(env.procfs_fd);
	vw_qemu_trust_free(trust);
	vw_fixture_rm(proc);
	vw_fixture_rm(host);
}

/* After the next read of <swap_pid>/cmdline (vw_read_prefix_at, wrapped): swap_pid exits and
 * a root process that is no QEMU (cron) takes its PID, in swap_proc. */
static const char *swap_proc;

int __real_vw_read_prefix_at(int dirfd, const char *rel, char *buf, size_t size, size_t *ret_len);
int __wrap_vw_read_prefix_at(int dirfd, const char *rel, char *buf, size_t size, size_t *ret_len);
int __wrap_vw_read_prefix_at(int dirfd, const char *rel, char *buf, size_t size, size_t *ret_len)
{
	int r = __real_vw_read_prefix_at(dirfd, rel, buf, size, ret_len);
	char want[32];

	snprintf(want, sizeof(want), "%" PRIu32 "/cmdline", swap_pid);
	if (swap_proc && strcmp(rel, want) == 0) {
		assert_int_equal(vm_fixture_kill(swap_proc, swap_pid), 0);
		assert_int_equal(vm_fixture_proc(swap_proc, swap_pid, 3000, "/usr/sbin/cron|-f", NULL,
						 NULL), 0);
		swap_proc = NULL;
	}
	return r;
}

/* Before the next listing of <swap_pid>/task (vw_dir_numbers, wrapped): swap_pid exits and a
 * process of the qemu user naming 8 threads as vCPUs takes its PID, in swap_task_proc. */
static const char *swap_task_proc;

int __real_vw_dir_numbers(int dirfd, const char *rel, int (*parse_name)(const char *, uint32_t *),
			  uint32_t **ret, size_t *ret_n);
int __wrap_vw_dir_numbers(int dirfd, const char *rel, int (*parse_name)(const char *, uint32_t *),
			  uint32_t **ret, size_t *ret_n);
int __wrap_vw_dir_numbers(int dirfd, const char *rel, int (*parse_name)(const char *, uint32_t *),
			  uint32_t **ret, size_t *ret_n)
{
	static const char *const cpus[] = { "fake", "CPU 0/KVM", "CPU 1/KVM", "CPU 2/KVM",
					    "CPU 3/KVM", "CPU 4/KVM", "CPU 5/KVM", "CPU 6/KVM",
					    "CPU 7/KVM", NULL };
	char want[32];

	snprintf(want, sizeof(want), "%" PRIu32 "/task", swap_pid);
	if (swap_task_proc && strcmp(rel, want) == 0) {
		assert_int_equal(vm_fixture_kill(swap_task_proc, swap_pid), 0);
		assert_int_equal(vm_fixture_proc(swap_task_proc, swap_pid, 3000, "fake", cpus, NULL),
				 0);
		swap_task_proc = NULL;
	}
	return __real_vw_dir_numbers(dirfd, rel, parse_name, ret, ret_n);
}

/*
 * Adversarial: a libvirt domain whose vCPUs libvirt did not give (counted from its QEMU's
 * threads named "CPU N/KVM"); its QEMU exits after this round's check of its start time and a
 * process of the qemu user takes the PID, its threads named as 8 vCPUs. They were counted as
 * the VM's (a count libvirt's source keeps: the VM's reserved share of idle power), the PID
 * kept. The start time is read again after the count: another process's, the QEMU is gone.
 */
static void test_vcpus_pid_reused(void **state)
{
	static const char *const one[] = { "qemu", "CPU 0/KVM", NULL };
	char *proc = vw_fixture_mkdtemp("vmvcpu");
	struct vw_vm_info lv[1] = { 0 };
	int procfd;

	(void)state;
	assert_int_equal(vm_fixture_proc(proc, 40, 400, "/usr/bin/qemu-system-x86_64|-uuid|" U1,
					 one, NULL), 0);
	procfd = vw_root_open(proc);
	assert_true(procfd >= 0);
	memcpy(lv[0].uuid, U1, sizeof(U1));
	lv[0].qemu_pid = 40;
	lv[0].qemu_start_time = 400;
	vw_qemu_resolve(procfd, NULL, NULL, lv, 1);
	assert_int_equal(lv[0].vcpus, 1); /* its own, the swap not armed */

	lv[0].vcpus = 0;
	swap_pid = 40;
	swap_task_proc = proc;
	vw_qemu_resolve(procfd, NULL, NULL, lv, 1);
	assert_null(swap_task_proc); /* the swap happened */
	assert_int_equal(lv[0].vcpus, 0);
	assert_int_equal(lv[0].qemu_pid, 0);

	close(procfd);
	vw_fixture_rm(proc);
}

/*
 * Adversarial: a local user's process claims VM U1 (`-uuid U1`, untrusted: nobody's) and exits
 * right after its command line was read; a root process (cron) takes its PID. Its start time
 * and owner were read after the command line: the root process's, so a trusted QEMU of U1 it
 * was, and libvirt's U1 (its QEMU being looked for) took cron's PID: cron's CPU time became
 * U1's energy. The start time is read before and after: changed, the process is not taken
 * (tried again by the next scan, where cron is no QEMU).
 */
static void test_scan_pid_reused_midway(void **state)
{
	static const char *const users[] = { "107" };
	struct vw_qemu_trust *trust = vw_qemu_trust_new(-1, users, 1);
	char *proc = vw_fixture_mkdtemp("vmreuse");
	struct vw_vm_info lv[1] = { 0 };
	int procfd;

	(void)state;
	assert_non_null(trust);
	assert_int_equal(vm_fixture_proc(proc, 30, 300, "/usr/bin/qemu-system-x86_64|-uuid|" U1
					 "|-name|guest=victim-vm", NULL, NULL), 0);
	assert_int_equal(vm_fixture_owner(proc, 30, "qemu-system-x86", 65534, 65534), 0);
	procfd = vw_root_open(proc);
	assert_true(procfd >= 0);
	memcpy(lv[0].uuid, U1, sizeof(U1));
	lv[0].vcpus = 1;
	swap_pid = 30;
	swap_proc = proc;
	vw_qemu_resolve(procfd, NULL, trust, lv, 1);
	assert_null(swap_proc); /* the swap happened */
	assert_int_equal(lv[0].qemu_pid, 0);
	vw_qemu_resolve(procfd, NULL, trust, lv, 1); /* the next round: cron is no QEMU */
	assert_int_equal(lv[0].qemu_pid, 0);

	close(procfd);
	vw_qemu_trust_free(trust);
	vw_fixture_rm(proc);
}

/*
 * A root process in a container (a PID namespace below the host's: its status NSpid: names two
 * PIDs) runs fakes claiming a host VM's -uuid and -name, each younger than the VM's QEMU (a
 * loop of them always has one younger): root's, so trusted, and before this the youngest took
 * the UUID, in the scan's list and in libvirt's lookup of a restarted domain's QEMU (the VM's
 * energy and channel then the fake's). The QEMU in the host's namespace keeps it; the fakes
 * are counted. Two claimants both below it (KubeVirt's, restarted) still go to the younger.
 */
static void test_container_claim(void **state)
{
	static const char *const kubevirt[] = { "107" };
	struct vw_qemu_trust *trust = vw_qemu_trust_new(-1, kubevirt, 1);
	char *proc = vw_fixture_mkdtemp("vmclaim"), groups[6000];
	struct vw_vm_env env = { .qemu_trust = trust };
	struct vw_vm_info *v, lv[2] = { 0 };
	void *src;

	(void)state;
	assert_non_null(trust);
	assert_int_equal(vm_fixture_proc(proc, 10, 100, "/usr/bin/qemu-system-x86_64|-uuid|" U1
					 "|-name|guest=real", NULL, NULL), 0);
	assert_int_equal(vm_fixture_status(proc, 10, "qemu-system-x86", 0, 0,
					   "0\nNStgid:\t10\nNSpid:\t10"), 0);
	assert_int_equal(vm_fixture_proc(proc, 20, 900, "/usr/bin/qemu-system-x86_64|-uuid|" U1
					 "|-name|guest=real", NULL, NULL), 0);
	assert_int_equal(vm_fixture_status(proc, 20, "qemu-system-x86", 0, 0,
					   "0\nNStgid:\t20\t7\nNSpid:\t20\t7"), 0);
	/* its NSpid: pushed past what is read by a long Groups: line, a single PID there */
	memset(groups, '0', sizeof(groups) - 32);
	snprintf(groups + sizeof(groups) - 32, 32, "\nNSpid:\t30");
	assert_int_equal(vm_fixture_proc(proc, 30, 950, "/usr/bin/qemu-system-x86_64|-uuid|" U1
					 "|-name|guest=real", NULL, NULL), 0);
	assert_int_equal(vm_fixture_status(proc, 30, "qemu-system-x86", 0, 0, groups), 0);
	assert_int_equal(vm_fixture_proc(proc, 40, 400, "qemu-kvm|-uuid|" U2, NULL, NULL), 0);
	assert_int_equal(vm_fixture_status(proc, 40, "qemu-kvm", 107, 107,
					   "0\nNStgid:\t40\t1\nNSpid:\t40\t1"), 0);
	assert_int_equal(vm_fixture_proc(proc, 50, 500, "qemu-kvm|-uuid|" U2, NULL, NULL), 0);
	assert_int_equal(vm_fixture_status(proc, 50, "qemu-kvm", 0, 0,
					   "0\nNStgid:\t50\t1\nNSpid:\t50\t1"), 0);

	src = scan_open(proc, &env);
	v = list_n(src, 2);
	assert_non_null(by_pid(v, 2, 10));
	assert_string_equal(by_pid(v, 2, 10)->uuid, U1);
	assert_non_null(by_pid(v, 2, 50)); /* both below the host's: the younger */
	free(v);
	assert_int_equal(vw_qemu_trust_claims_refused(trust), 2);
	assert_int_equal(vw_qemu_trust_untrusted(trust), 0);

	/* libvirt's domain U1 restarted (its QEMU to be found again): the host's, named or not */
	memcpy(lv[0].uuid, U1, sizeof(U1));
	memcpy(lv[0].name, "real", sizeof("real"));
	memcpy(lv[1].uuid, U1, sizeof(U1));
	lv[0].vcpus = lv[1].vcpus = 1;
	vw_qemu_resolve(env.procfs_fd, NULL, trust, lv, 2);
	assert_int_equal(lv[0].qemu_pid, 10);
	assert_int_equal(lv[1].qemu_pid, 10);

	/* The fakes gone: none counted. */
	assert_int_equal(vm_fixture_kill(proc, 20), 0);
	assert_int_equal(vm_fixture_kill(proc, 30), 0);
	v = list_n(src, 2);
	free(v);
	assert_int_equal(vw_qemu_trust_claims_refused(trust), 0);
	vw_vm_procscan.close(src);
	close(env.procfs_fd);
	vw_qemu_trust_free(trust);
	vw_fixture_rm(proc);
}

/* A child running a shell under argv[0] qemu-system-x86_64 (... -uuid U1), in a PID namespace
 * of its own when nested (its PID here read back through a pipe); 0 where that cannot be done. */
static pid_t real_fake(bool nested, pid_t *ret_mid)
{
	int fds[2];
	pid_t mid, pid = 0;

	assert_int_equal(pipe(fds), 0);
	mid = fork();
	assert_true(mid >= 0);
	if (mid == 0) {
		pid_t c;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (nested && unshare(CLONE_NEWPID) < 0)
			_exit(3);
		c = nested ? fork() : 0;
		if (c == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (!nested)
				c = getpid();
			else
				c = 0;
			if (!nested && write(fds[1], &c, sizeof(c)) != sizeof(c))
				_exit(4);
			/* a shell (sleep would refuse -uuid), its sleep in its process group */
			setpgid(0, 0);
			execl("/bin/sh", "qemu-system-x86_64", "-c", "sleep 30; :", "-uuid", U1,
			      (char *)NULL);
			_exit(5);
		}
		if (c < 0 || write(fds[1], &c, sizeof(c)) != sizeof(c))
			_exit(4);
		pause();
		_exit(0);
	}
	close(fds[1]);
	if (read(fds[0], &pid, sizeof(pid)) != sizeof(pid))
		pid = 0;
	close(fds[0]);
	*ret_mid = mid;
	return pid;
}

/* Until pid's command line begins with qemu (its exec done), at most 2 s. */
static void await_exec(int procfd, pid_t pid)
{
	char rel[32], buf[64];

	snprintf(rel, sizeof(rel), "%d/cmdline", (int)pid);
	for (int i = 0; i < 200; i++) {
		if (vw_read_prefix_at(procfd, rel, buf, sizeof(buf), NULL) >= 0 &&
		    strncmp(buf, "qemu", 4) == 0)
			return;
		usleep(10000);
	}
	fail_msg("process %d did not exec", (int)pid);
}

/* The same on real processes (root): one here, a younger one in a PID namespace of its own. */
static void test_container_claim_real(void **state)
{
	int procfd = vw_dir_open_at(AT_FDCWD, "/proc");
	struct vw_qemu_scan s = { 0 };
	pid_t host, nested, mid_h, mid_n;
	size_t cap = 0;
	int st;

	(void)state;
	REQUIRE(geteuid() == 0, "a PID namespace needs root");
	assert_true(procfd >= 0);
	host = real_fake(false, &mid_h);
	assert_true(host > 0);
	await_exec(procfd, host);
	usleep(20000); /* a later start time (clock ticks) for the nested one */
	nested = real_fake(true, &mid_n);
	if (nested <= 0) {
		kill(-host, SIGKILL);
		waitpid(mid_h, &st, 0);
		close(procfd);
		skip();
	}
	await_exec(procfd, nested);
	assert_int_equal(vw_qemu_scan_one(procfd, (uint32_t)host, &s, &cap), 0);
	assert_int_equal(vw_qemu_scan_one(procfd, (uint32_t)nested, &s, &cap), 0);
	assert_int_equal(s.n, 2);
	assert_true(s.procs[0].root_ns);
	assert_false(s.procs[1].root_ns);
	assert_true(s.procs[1].start_time >= s.procs[0].start_time);
	assert_int_equal(vw_qemu_scan_find(&s, U1, NULL)->pid, (uint32_t)host);
	vw_qemu_scan_free(&s);
	kill(mid_n, SIGKILL);
	kill(mid_h, SIGKILL);
	waitpid(mid_n, &st, 0);
	waitpid(mid_h, &st, 0);
	kill(-host, SIGKILL); /* its sleep */
	close(procfd);
}

#define REAL_POD "5eadbeef-0000-4000-8000-00000000fa4e"
#define REAL_CID "f00df00df00df00df00df00df00df00df00df00df00df00df00df00df00df00d"

/*
 * A cgroup of pod REAL_POD (cgroupfs driver: kubepods/besteffort/pod<uid>/<container>) below a
 * writable hierarchy, its path into dir; false where none can be made (not root, no cgroupfs).
 */
static bool real_pod_cgroup(char *dir, size_t size)
{
	static const char *const bases[] = { "/sys/fs/cgroup/unified", "/sys/fs/cgroup/pids",
					     "/sys/fs/cgroup" };

	for (size_t i = 0; i < ARRAY_SIZE(bases); i++) {
		char path[256];
		int r = 0;

		snprintf(path, sizeof(path), "%s/cgroup.procs", bases[i]);
		if (access(path, W_OK) < 0)
			continue;
		snprintf(path, sizeof(path), "%s/kubepods", bases[i]);
		r |= mkdir(path, 0755) < 0 && errno != EEXIST;
		snprintf(path, sizeof(path), "%s/kubepods/besteffort", bases[i]);
		r |= mkdir(path, 0755) < 0 && errno != EEXIST;
		snprintf(path, sizeof(path), "%s/kubepods/besteffort/pod" REAL_POD, bases[i]);
		r |= mkdir(path, 0755) < 0 && errno != EEXIST;
		snprintf(dir, size, "%s/kubepods/besteffort/pod" REAL_POD "/" REAL_CID, bases[i]);
		r |= mkdir(dir, 0755) < 0 && errno != EEXIST;
		if (!r)
			return true;
	}
	return false;
}

/* dir and the parents real_pod_cgroup made, once empty (at most 2 s); parents others use stay. */
static void real_pod_cgroup_rm(const char *dir)
{
	char path[256];

	snprintf(path, sizeof(path), "%s", dir);
	for (int i = 0; i < 200 && rmdir(path) < 0 && errno == EBUSY; i++)
		usleep(10000);
	for (int up = 0; up < 3; up++) {
		char *slash = strrchr(path, '/');

		if (!slash)
			break;
		*slash = '\0';
		(void)rmdir(path);
	}
}

/* The running VMs of src, whatever their number (free() them). */
static struct vw_vm_info *list_any(void *src, size_t *n)
{
	struct vw_vm_info *v = NULL;

	assert_int_equal(vw_vm_procscan.list(src, &v, n), 0);
	return v;
}

/*
 * The same on a real process (root): a shell exec'd as qemu-system-x86_64 in a PID namespace of
 * its own, moved into a pod's cgroup, as a tenant's root in a pod without hostPID runs it. The
 * scan over /proc finds it below the host's namespace in that pod: no VM while the pod is not
 * known as KubeVirt's (counted), a VM once it is.
 */
static void test_pod_fake_real(void **state)
{
	struct pods_say say = { .answer = -ENOENT, .uid = REAL_POD };
	struct vw_vm_env env = { .kubevirt_pod = pods_say, .kubevirt_pod_ud = &say };
	struct vw_qemu_trust *trust = vw_qemu_trust_new(-1, NULL, 0);
	struct vw_cgroup_match m;
	char dir[256], procs[300], num[16];
	struct vw_vm_info *v;
	pid_t nested, mid;
	size_t n;
	void *src;
	int st, fd;

	(void)state;
	REQUIRE(geteuid() == 0, "a PID namespace and a cgroup need root");
	assert_non_null(trust);
	if (!real_pod_cgroup(dir, sizeof(dir))) {
		vw_qemu_trust_free(trust);
		skip();
	}
	env.qemu_trust = trust;
	src = scan_open("/proc", &env);
	nested = real_fake(true, &mid);
	if (nested <= 0) {
		kill(mid, SIGKILL);
		waitpid(mid, &st, 0);
		real_pod_cgroup_rm(dir);
		vw_vm_procscan.close(src);
		close(env.procfs_fd);
		vw_qemu_trust_free(trust);
		skip();
	}
	await_exec(env.procfs_fd, nested);
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
	snprintf(num, sizeof(num), "%d\n", (int)nested);
	fd = open(procs, O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, num, strlen(num)), (ssize_t)strlen(num));
	close(fd);
	assert_true(vw_workload_read_pid(env.procfs_fd, (uint32_t)nested, &m) >= -ENOENT);
	assert_true(m.kubepods);
	assert_string_equal(m.pod_uid, REAL_POD);

	v = list_any(src, &n);
	assert_null(by_pid(v, n, (uint32_t)nested));
	free(v);
	assert_true(vw_qemu_trust_pods_refused(trust) >= 1);
	say.answer = 1; /* the pod metadata lists it as a virt-launcher */
	v = list_any(src, &n);
	assert_non_null(by_pid(v, n, (uint32_t)nested));
	assert_string_equal(by_pid(v, n, (uint32_t)nested)->pod_uid, REAL_POD);
	assert_string_equal(by_pid(v, n, (uint32_t)nested)->uuid, U1);
	free(v);

	kill(mid, SIGKILL);
	waitpid(mid, &st, 0);
	kill(-nested, SIGKILL); /* and its sleep */
	real_pod_cgroup_rm(dir);
	vw_vm_procscan.close(src);
	close(env.procfs_fd);
	vw_qemu_trust_free(trust);
}

/* --vm.qemu-users' entries: names from the host's passwd, UIDs as they are; no trust: root. */
static void test_trust_users(void **state)
{
	static const char *const users[] = { "qemu", "1234", "nosuchuser", "libvirt-qemu" };
	char *host = vw_fixture_mkdtemp("vmtrustusers");
	struct vw_qemu_trust *t;
	int rootfd;

	(void)state;
	assert_int_equal(vw_fixture_write(host, "etc/passwd",
					  "root:x:0:0::/root:/bin/sh\n# a comment\n\nbroken\n"
					  "qemu:x:107:107:qemu user:/:/sbin/nologin\n",
					  0),
			 0);
	rootfd = vw_root_open(host);
	assert_true(rootfd >= 0);
	t = vw_qemu_trust_new(rootfd, users, 4);
	close(rootfd);
	assert_non_null(t);
	assert_true(vw_qemu_trust_uid(t, 0));
	assert_true(vw_qemu_trust_uid(t, 107));
	assert_true(vw_qemu_trust_uid(t, 1234));
	assert_false(vw_qemu_trust_uid(t, 64055)); /* libvirt-qemu: not in this passwd */
	assert_false(vw_qemu_trust_uid(t, 65534));
	vw_qemu_trust_free(t);
	/* No host root: UIDs only. */
	t = vw_qemu_trust_new(-1, users, 4);
	assert_non_null(t);
	assert_false(vw_qemu_trust_uid(t, 107));
	assert_true(vw_qemu_trust_uid(t, 1234));
	vw_qemu_trust_free(t);
	assert_true(vw_qemu_trust_uid(NULL, 0));
	assert_false(vw_qemu_trust_uid(NULL, 107));
	vw_fixture_rm(host);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cmdline),
		cmocka_unit_test(test_proxmox),
		cmocka_unit_test(test_smp_and_names),
		cmocka_unit_test(test_stable_id),
		cmocka_unit_test_setup_teardown(test_scan, setup, teardown),
		cmocka_unit_test(test_duplicate_uuid),
		cmocka_unit_test(test_scan_interval),
		cmocka_unit_test(test_scan_hinted),
		cmocka_unit_test(test_scan_hinted_names),
		cmocka_unit_test(test_restored_qemu_at_once),
		cmocka_unit_test(test_unreadable_procfs),
		cmocka_unit_test(test_start_time_shared),
		cmocka_unit_test(test_tracker_unchanged),
		cmocka_unit_test(test_start_time_watched),
		cmocka_unit_test(test_cached_list_same_bytes),
		cmocka_unit_test(test_pod_read_once),
		cmocka_unit_test(test_list_each_same),
		cmocka_unit_test(test_merge_each_same),
		cmocka_unit_test(test_untrusted_owner),
		cmocka_unit_test(test_container_claim),
		cmocka_unit_test(test_scan_pid_reused_midway),
		cmocka_unit_test(test_vcpus_pid_reused),
		cmocka_unit_test(test_pod_pid_reused),
		cmocka_unit_test(test_container_claim_real),
		cmocka_unit_test(test_pod_fake),
		cmocka_unit_test(test_pod_fake_real),
		cmocka_unit_test(test_fake_qemu_no_early_scan),
		cmocka_unit_test(test_trust_users),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

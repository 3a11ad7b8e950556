/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The VM sources against a real libvirtd and a real QEMU (TCG): the VM appears via vw_vms_list()
 * with its UUID, name, vCPUs, QEMU PID (checked against libvirt's own pid file), channel and
 * share; libvirtd is killed and restarted under it (a pause after the restart shows); and the VM
 * disappears when destroyed (its QEMU gone: no lifecycle events, the daemon's libvirt helper is
 * a short-lived child). The real daemon over it never maps libvirt.
 *
 * Private state. virtlogd and libvirtd run in a mount namespace of their own where /etc/libvirt,
 * /run/libvirt, /var/{lib,cache,log}/libvirt are bind mounts of directories under a temporary
 * work directory, and libvirtd's sockets live in that directory (unix_sock_dir): a libvirtd of
 * the host, if any, is neither seen nor disturbed, and nothing is left behind. The private
 * qemu.conf runs QEMU as root: this machine's /dev/kvm exists but is unusable, and with the
 * default libvirt-qemu user libvirt finds its cached QEMU capabilities invalid on every lookup
 * and probes QEMU again and again (over a minute per domain start).
 *
 * The guest is a 1 MiB disk whose boot sector is "jmp $": SeaBIOS boots it in about a second and
 * vCPU 0 then spins, so there is CPU time to compare without a kernel.
 *
 * Needs root, libvirtd, virtlogd and qemu-system-x86_64 (installed here with
 * deploy/install-deps.sh --test when missing) and mount namespaces. Without them the program
 * prints a TAP skip with the reason; tests/run.sh fails a skip under CI=true.
 */
#include "vw_test.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"
#include "log.h"
#include "vm_source.h"
#include "exposition_fixture.h"

#define DEADLINE_S 30

static const char *const libvirt_dirs[] = { "/etc/libvirt", "/run/libvirt", "/var/lib/libvirt",
					    "/var/cache/libvirt", "/var/log/libvirt" };
static const char *const private_dirs[] = { "etc", "run", "lib", "cache", "log" };

static char work[256], uri_rw[512], uri_ro[512];
static char dom_name[64], dom_uuid[VW_UUID_LEN];
static char libvirtd_bin[64], virtlogd_bin[64];
static volatile pid_t qemu_pid;
static int procfd = -1;
static struct vw_vms *vms;

/* ---- Helpers ---- */

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static bool find_bin(const char *name, char *out, size_t size)
{
	static const char *const dirs[] = { "/usr/sbin", "/usr/bin", "/sbin", "/bin" };

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(out, size, "%s/%s", dirs[i], name);
		if (access(out, X_OK) == 0)
			return true;
	}
	return false;
}

static bool have_tools(void)
{
	char q[64];

	return find_bin("libvirtd", libvirtd_bin, sizeof(libvirtd_bin)) &&
	       find_bin("virtlogd", virtlogd_bin, sizeof(virtlogd_bin)) &&
	       find_bin("qemu-system-x86_64", q, sizeof(q));
}

static int run(char *const argv[])
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		execv(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) < 0)
		return -errno;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static pid_t read_pid(const char *file)
{
	char path[512], buf[32] = "";
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", work, file);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	return (pid_t)atoi(buf);
}

/* Alive and not a zombie (our daemons are not our children: nobody here reaps them). */
static bool running(pid_t pid)
{
	char path[64], buf[512];
	FILE *f;
	char *p;
	bool r = false;

	if (pid <= 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return false;
	if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')))
		r = p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
	fclose(f);
	return r;
}

static void stop_pid(pid_t pid)
{
	if (!running(pid))
		return;
	kill(pid, SIGTERM);
	for (int i = 0; i < 150 && running(pid); i++)
		sleep_ms(100);
	if (running(pid))
		kill(pid, SIGKILL);
	for (int i = 0; i < 50 && running(pid); i++)
		sleep_ms(100);
}

/* Start the daemons named by which ("virtlogd", "libvirtd") in a fresh mount namespace whose
 * libvirt directories are the private ones. 0, or why not in msg. */
static int start_in_namespace(const char *const *which, size_t n, char *msg, size_t size)
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		char src[512], pidfile[512], conf[512];

		if (unshare(CLONE_NEWNS) < 0)
			_exit(10);
		if (mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
			_exit(11);
		for (size_t i = 0; i < sizeof(libvirt_dirs) / sizeof(libvirt_dirs[0]); i++) {
			snprintf(src, sizeof(src), "%s/%s", work, private_dirs[i]);
			if (mount(src, libvirt_dirs[i], NULL, MS_BIND, NULL) < 0)
				_exit(12);
		}
		for (size_t i = 0; i < n; i++) {
			bool lv = strcmp(which[i], "libvirtd") == 0;
			char *argv[] = { lv ? libvirtd_bin : virtlogd_bin, "-d", "-p", pidfile,
					 lv ? "-f" : NULL, conf, NULL };

			snprintf(pidfile, sizeof(pidfile), "%s/%s.pid", work, which[i]);
			snprintf(conf, sizeof(conf), "%s/libvirtd.conf", work);
			if (run(argv) != 0)
				_exit(20 + (int)i);
		}
		_exit(0);
	}
	if (waitpid(pid, &st, 0) < 0)
		return -errno;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	snprintf(msg, size, "%s (status %d)",
		 !WIFEXITED(st)		       ? "namespace helper crashed"
		 : WEXITSTATUS(st) == 10       ? "cannot create a mount namespace (unshare)"
		 : WEXITSTATUS(st) <= 12       ? "cannot bind-mount the private libvirt directories"
					       : "a daemon failed to start (see libvirtd.log)",
		 st);
	return -EIO;
}

static virConnectPtr connect_rw(int timeout_s)
{
	uint64_t end = mono_ms() + (uint64_t)timeout_s * 1000;

	do {
		virConnectPtr c = virConnectOpen(uri_rw);

		if (c)
			return c;
		sleep_ms(100);
	} while (mono_ms() < end);
	return NULL;
}

static int start_libvirtd(char *msg, size_t size)
{
	static const char *const d[] = { "libvirtd" };
	virConnectPtr c;
	int r = start_in_namespace(d, 1, msg, size);

	if (r < 0)
		return r;
	c = connect_rw(DEADLINE_S);
	if (!c) {
		snprintf(msg, size, "libvirtd does not answer on %s", uri_rw);
		return -ETIMEDOUT;
	}
	virConnectClose(c);
	return 0;
}

static void cleanup(void)
{
	virConnectPtr c;

	if (vms) {
		vw_vms_close(vms);
		vms = NULL;
	}
	if (running(read_pid("libvirtd.pid")) && dom_uuid[0] && (c = virConnectOpen(uri_rw))) {
		virDomainPtr d = virDomainLookupByUUIDString(c, dom_uuid);

		if (d) {
			virDomainDestroy(d);
			virDomainFree(d);
		}
		virConnectClose(c);
	}
	stop_pid(read_pid("libvirtd.pid"));
	stop_pid(read_pid("virtlogd.pid"));
	if (running(qemu_pid))
		kill(qemu_pid, SIGKILL);
	if (procfd >= 0)
		close(procfd);
	if (work[0] && !getenv("VW_KEEP_WORK"))
		vw_fixture_rm(strdup(work));
}

/* meson's timeout sends SIGTERM: leave no daemon or QEMU behind. */
static void on_signal(int sig)
{
	pid_t p[3] = { qemu_pid, read_pid("libvirtd.pid"), read_pid("virtlogd.pid") };

	for (int i = 0; i < 3; i++)
		if (p[i] > 0)
			kill(p[i], SIGKILL);
	signal(sig, SIG_DFL);
	raise(sig);
}

static int write_file(const char *rel, const void *data, size_t len)
{
	char path[512];
	FILE *f;
	int r = 0;

	snprintf(path, sizeof(path), "%s/%s", work, rel);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	if (fwrite(data, 1, len, f) != len)
		r = -EIO;
	if (fclose(f) != 0)
		r = -errno;
	return r;
}

/* The work directory: private libvirt dirs, configs, the boot disk, the share. */
static int prepare(void)
{
	static char disk[1 << 20];
	char conf[1024];
	char *dir = vw_fixture_mkdtemp("vmit");
	int r = 0;

	if (!dir)
		return -errno;
	snprintf(work, sizeof(work), "%s", dir);
	free(dir);
	chmod(work, 0755);
	for (size_t i = 0; i < sizeof(private_dirs) / sizeof(private_dirs[0]); i++)
		r |= vw_fixture_mkdir(work, private_dirs[i]);
	r |= vw_fixture_mkdir(work, "lib/qemu") | vw_fixture_mkdir(work, "cache/qemu") |
	     vw_fixture_mkdir(work, "log/qemu") | vw_fixture_mkdir(work, "sock") |
	     vw_fixture_mkdir(work, "share");
	for (size_t i = 0; i < sizeof(libvirt_dirs) / sizeof(libvirt_dirs[0]); i++)
		r |= vw_fixture_mkdir("/", libvirt_dirs[i] + 1); /* the mount points */
	r |= write_file("etc/qemu.conf", "user = \"root\"\ngroup = \"root\"\n", 29);
	snprintf(conf, sizeof(conf),
		 "unix_sock_dir = \"%s/sock\"\nlog_outputs = \"3:file:%s/libvirtd.log\"\n", work,
		 work);
	r |= write_file("libvirtd.conf", conf, strlen(conf));
	disk[0] = (char)0xeb; /* jmp $ */
	disk[1] = (char)0xfe;
	disk[510] = 0x55;
	disk[511] = (char)0xaa;
	r |= write_file("boot.img", disk, sizeof(disk));
	snprintf(uri_rw, sizeof(uri_rw), "qemu:///system?socket=%s/sock/libvirt-sock", work);
	snprintf(uri_ro, sizeof(uri_ro), "qemu:///system?socket=%s/sock/libvirt-sock-ro", work);
	return r ? -EIO : 0;
}

static int ensure_user(void)
{
	char *argv[] = { "/usr/sbin/useradd", "-r", "-U", "-M", "-d", "/var/lib/libvirt", "-s",
			 "/usr/sbin/nologin", "libvirt-qemu", NULL };

	if (getpwnam("libvirt-qemu"))
		return 0;
	return run(argv) == 0 ? 0 : -EIO;
}

static int create_domain(char *msg, size_t size)
{
	virConnectPtr c = connect_rw(5);
	virDomainPtr d;
	char xml[4096], raw[VIR_UUID_STRING_BUFLEN];
	FILE *f = fopen("/proc/sys/kernel/random/uuid", "r");

	if (!f || !fgets(dom_uuid, sizeof(dom_uuid), f)) {
		if (f)
			fclose(f);
		snprintf(msg, size, "no random UUID");
		return -EIO;
	}
	fclose(f);
	snprintf(dom_name, sizeof(dom_name), "vw-it-%d", (int)getpid());
	snprintf(xml, sizeof(xml),
		 "<domain type='qemu'><name>%s</name><uuid>%s</uuid>"
		 "<memory unit='MiB'>64</memory><vcpu>2</vcpu>"
		 "<os><type arch='x86_64' machine='q35'>hvm</type><boot dev='hd'/></os>"
		 "<cpu mode='custom' match='exact'><model fallback='allow'>qemu64</model></cpu>"
		 "<devices>"
		 "<disk type='file' device='disk'><driver name='qemu' type='raw'/>"
		 "<source file='%s/boot.img'/><target dev='sda' bus='sata'/></disk>"
		 "<channel type='unix'><source mode='bind' path='%s/power.sock'/>"
		 "<target type='virtio' name='org.virtwatt.power.0'/></channel>"
		 "<filesystem type='mount' accessmode='passthrough'><source dir='%s/share'/>"
		 "<target dir='virtwatt'/><readonly/></filesystem>"
		 "<memballoon model='none'/></devices></domain>",
		 dom_name, dom_uuid, work, work, work);
	if (!c) {
		snprintf(msg, size, "no connection to libvirtd");
		return -EIO;
	}
	d = virDomainCreateXML(c, xml, 0);
	if (!d) {
		snprintf(msg, size, "virDomainCreateXML: %s", virGetLastErrorMessage());
		virConnectClose(c);
		return -EIO;
	}
	if (virDomainGetUUIDString(d, raw) == 0)
		snprintf(dom_uuid, sizeof(dom_uuid), "%s", raw);
	virDomainFree(d);
	virConnectClose(c);
	return 0;
}

/* ---- What the tests look at ---- */

/* The VM in a fresh list (copied to out), or false. */
static bool list_vm(struct vw_vm_info *out)
{
	struct vw_vm_info *v = NULL;
	bool found = false;
	size_t n = 0;

	assert_int_equal(vw_vms_list(vms, &v, &n), 0);
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].uuid, dom_uuid) == 0) {
			*out = v[i];
			found = true;
		}
	free(v);
	return found;
}

/* A file of libvirtd's private /run, read through its root (the daemon's mount namespace). */
static char *libvirt_run_file(const char *name, const char *ext)
{
	char path[512];

	snprintf(path, sizeof(path), "/proc/%d/root/run/libvirt/qemu/%s.%s",
		 (int)read_pid("libvirtd.pid"), name, ext);
	return vw_fixture_slurp(path, NULL);
}

/* ---- Tests, in order ---- */

static void test_vm_listed(void **state)
{
	struct vw_vm_info vm;
	uint64_t end = mono_ms() + DEADLINE_S * 1000ULL;
	char *pidfile, path[512];
	struct stat st;
	bool ok = false;

	(void)state;
	while (!ok && mono_ms() < end) {
		ok = list_vm(&vm) && vm.qemu_pid;
		if (!ok)
			sleep_ms(200);
	}
	assert_true(ok);
	qemu_pid = (pid_t)vm.qemu_pid;
	assert_string_equal(vm.name, dom_name);
	assert_string_equal(vm.source, "libvirt");
	assert_string_equal(vm.hypervisor, "kvm");
	assert_int_equal(vm.state, VW_VM_RUNNING);
	assert_int_equal(vm.vcpus, 2);

	/* The QEMU PID that libvirt itself recorded. */
	pidfile = libvirt_run_file(dom_name, "pid");
	assert_non_null(pidfile);
	assert_int_equal(atoi(pidfile), (int)vm.qemu_pid);
	free(pidfile);

	snprintf(path, sizeof(path), "%s/power.sock", work);
	assert_string_equal(vm.channel_path, path);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	snprintf(path, sizeof(path), "%s/share", work);
	assert_string_equal(vm.share_dir, path);
	assert_true(vm.share_readonly); /* <readonly/> as libvirt gives it back in the live XML */
	printf("# QEMU %u\n", vm.qemu_pid);
}

/* One line of what a file is: owner, group, mode, kind. */
static void print_stat(const char *what, const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0) {
		printf("# %s %s: %s\n", what, path, strerror(errno));
		return;
	}
	printf("# %s %s: uid %u gid %u mode %04o%s\n", what, path, (unsigned)st.st_uid,
	       (unsigned)st.st_gid, (unsigned)(st.st_mode & 07777),
	       S_ISSOCK(st.st_mode) ? " socket" : S_ISDIR(st.st_mode) ? " dir" : "");
}

/*
 * Who listens on the VM's channel socket (docs/publish.md, "Whose socket"): what a client's
 * SO_PEERCRED and getpeername() say, the file's and its directories' owners and modes, and how
 * QEMU was handed the chardev. The publisher's peer check relies on two of these: the peer is
 * the VM's QEMU or a root process (libvirt's daemon, which listens for QEMU and passes it the
 * descriptor), and the name the listener was bound with is the domain XML's path.
 */
static void test_channel_peer(void **state)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX }, peer;
	socklen_t l = sizeof(struct ucred), pl = sizeof(peer);
	char path[512], dir[512], cmdpath[64], *cmd;
	pid_t libvirtd = read_pid("libvirtd.pid");
	struct ucred cred = { 0 };
	size_t n = 0;
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "%s/power.sock", work);
	print_stat("channel socket", path);
	snprintf(dir, sizeof(dir), "%s", path);
	for (char *s = strrchr(dir, '/'); s && s != dir; s = strrchr(dir, '/')) {
		*s = '\0';
		print_stat("directory", dir);
	}
	snprintf(cmdpath, sizeof(cmdpath), "/proc/%d/cmdline", (int)qemu_pid);
	cmd = vw_fixture_slurp(cmdpath, &n);
	assert_non_null(cmd);
	for (size_t i = 0; i < n; i += strlen(cmd + i) + 1)
		if (strstr(cmd + i, "charchannel") && strncmp(cmd + i, "-", 1) != 0)
			printf("# QEMU's chardev: %s\n", cmd + i);
	free(cmd);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	memcpy(sa.sun_path, path, strlen(path));
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &l), 0);
	assert_int_equal(getpeername(fd, (struct sockaddr *)&peer, &pl), 0);
	close(fd);
	printf("# SO_PEERCRED pid %d uid %u gid %u; QEMU pid %d, libvirtd pid %d; "
	       "getpeername \"%.*s\"\n",
	       (int)cred.pid, (unsigned)cred.uid, (unsigned)cred.gid, (int)qemu_pid,
	       (int)libvirtd, (int)(pl - offsetof(struct sockaddr_un, sun_path)), peer.sun_path);
	assert_int_equal(cred.pid, qemu_pid); /* libvirt 9, QEMU 7.2: QEMU listens on libvirt's fd */
	assert_string_equal(peer.sun_path, path);
}

/* Pause or resume the domain through a read-write connection (a libvirtd just started may
 * still be reattaching to its QEMU: retried until the deadline). */
static void set_paused(bool paused)
{
	uint64_t end = mono_ms() + DEADLINE_S * 1000ULL;
	virConnectPtr c = connect_rw(5);
	virDomainPtr d;
	int r;

	assert_non_null(c);
	d = virDomainLookupByUUIDString(c, dom_uuid);
	assert_non_null(d);
	while ((r = paused ? virDomainSuspend(d) : virDomainResume(d)) < 0 && mono_ms() < end)
		sleep_ms(200);
	if (r < 0)
		fail_msg("%s: %s", paused ? "suspend" : "resume", virGetLastErrorMessage());
	virDomainFree(d);
	virConnectClose(c);
}

/* Lists until the VM is in state st (copied to vm); false at the deadline. */
static bool wait_state(enum vw_vm_state st, struct vw_vm_info *vm)
{
	uint64_t end = mono_ms() + DEADLINE_S * 1000ULL;

	while (mono_ms() < end) {
		if (list_vm(vm) && vm->state == st)
			return true;
		sleep_ms(250);
	}
	return false;
}

static void test_libvirtd_restart(void **state)
{
	struct vw_vm_info vm;
	char msg[256] = "";
	uint64_t t0;

	(void)state;
	assert_true(list_vm(&vm));
	stop_pid(read_pid("libvirtd.pid"));
	assert_false(running(read_pid("libvirtd.pid")));
	assert_true(running(qemu_pid)); /* QEMU outlives libvirtd */

	/* Meanwhile the last list stays, and list() does not wait for a dead daemon. */
	t0 = mono_ms();
	assert_true(list_vm(&vm));
	assert_true(mono_ms() - t0 < 1000);
	assert_int_equal(vm.qemu_pid, (uint32_t)qemu_pid);
	assert_int_equal(vm.state, VW_VM_RUNNING);

	if (start_libvirtd(msg, sizeof(msg)) < 0)
		fail_msg("restart libvirtd: %s", msg);
	/* Reconnected when a pause made after the restart shows (only libvirt knows of it). */
	set_paused(true);
	assert_true(wait_state(VW_VM_PAUSED, &vm));
	set_paused(false);
	assert_true(wait_state(VW_VM_RUNNING, &vm));
	assert_string_equal(vm.uuid, dom_uuid);
	assert_string_equal(vm.name, dom_name);
	assert_int_equal(vm.qemu_pid, (uint32_t)qemu_pid);
	assert_int_equal(vm.vcpus, 2);
}

static double sum_lines(const char *text, const char *family, const char *must1,
			const char *must2)
{
	return vw_expo_sum(text, family, (const char *const[]){ must1, must2, NULL });
}

/* Every process of the machine (--metrics.process-top-n=0): megabytes where a benchmark's
 * thousands of processes run beside it (8 MB took over 5 s under load), so 60 s at most. */
static char *scrape(unsigned port)
{
	char url[64];
	long code;
	char *body;

	snprintf(url, sizeof(url), "http://127.0.0.1:%u/metrics", port);
	body = vw_fixture_http_within(url, "GET", &code, 60000);
	if (code != 200)
		fail_msg("GET %s: %ld (0: no answer within 60 s)", url, code);
	return body;
}

/* Per zone and mode, the VM, the other workloads and the remainders add up to the node. */
static void assert_adds_up(const char *m)
{
	static const char *const modes[][4] = {
		{ "kepler_node_cpu_active_joules_total", "kepler_container_cpu_joules_total",
		  "mode=\"active\"", NULL },
		{ "kepler_node_cpu_idle_joules_total", "virtwatt_container_cpu_idle_joules_total",
		  "mode=\"idle\"", NULL },
	};

	for (size_t i = 0; i < 2; i++) {
		double node = sum_lines(m, modes[i][0], "zone=\"package\"", NULL);
		double parts = sum_lines(m, modes[i][1], "zone=\"package\"", NULL) +
			       sum_lines(m, "virtwatt_node_cpu_ended_containers_joules_total",
					 "zone=\"package\"", modes[i][2]) +
			       sum_lines(m, "virtwatt_node_cpu_uncontained_joules_total",
					 "zone=\"package\"", modes[i][2]) +
			       sum_lines(m, "virtwatt_node_cpu_unattributed_joules_total",
					 "zone=\"package\"", modes[i][2]);

		assert_true(node > 0);
		assert_double_near(parts, node, 2e-6);
	}
}

/*
 * virtwatt-host itself against this libvirtd: the VM's active and idle energy series, its QEMU
 * process tagged with its UUID, the whole adding up to the node, its shared folder published,
 * and a libvirtd restart losing nothing.
 */
static void test_daemon_vm_energy(void **state)
{
	char uri[600], share[512], shdir[400], vm_sel[128], rel[512], lock[512];
	char *argv[] = { VW_HOST_BIN, uri, share, lock, "--web.listen-address=127.0.0.1:0",
			 "--monitor.interval=1s", "--monitor.sample-interval=250ms",
			 "--passthrough.interval=1s", "--kube.node-name=vm-it",
			 "--metrics.process-top-n=0", NULL };
	double a1, i1, a2, a3;
	char msg[256] = "";
	unsigned port = 0;
	uint64_t t0;
	pid_t daemon;
	char *m;

	(void)state;
	snprintf(uri, sizeof(uri), "--libvirt.uri=%s", uri_ro);
	snprintf(shdir, sizeof(shdir), "%s/share", work);
	assert_int_equal(vw_fixture_mkdir(work, "share"), 0);
	snprintf(share, sizeof(share), "--passthrough.share-root=%s", shdir);
	snprintf(lock, sizeof(lock), "--passthrough.lock-dir=%s/lock", work); /* this test's own */
	snprintf(vm_sel, sizeof(vm_sel), "vm_id=\"%s\"", dom_uuid);
	assert_int_equal(vw_fixture_start_daemon(argv, &daemon, &port), 0);
	/* ~5 s, and until the VM has both energies (its intervals come late on a loaded
	 * machine: 60 s at most). */
	t0 = mono_ms();
	for (m = NULL;; free(m)) {
		sleep_ms(m ? 1000 : 5000);
		m = scrape(port);
		a1 = sum_lines(m, "kepler_vm_cpu_joules_total", vm_sel, "zone=\"package\"");
		i1 = sum_lines(m, "virtwatt_vm_cpu_idle_joules_total", vm_sel, "zone=\"package\"");
		if ((a1 > 0 && i1 > 0) || mono_ms() - t0 > 60000)
			break;
	}
	printf("# VM %s: active %.6f J, idle %.6f J after %.1f s\n", dom_uuid, a1, i1,
	       (double)(mono_ms() - t0) / 1000);
	/* Found through libvirt, which the daemon never mapped (its helper did). */
	{
		char maps_path[64], *maps;

		snprintf(maps_path, sizeof(maps_path), "/proc/%d/maps", (int)daemon);
		maps = vw_fixture_slurp(maps_path, NULL);
		assert_non_null(maps);
		if (strstr(maps, "libvirt"))
			fail_msg("the daemon maps libvirt: %.300s", strstr(maps, "libvirt"));
		free(maps);
	}
	assert_true(a1 > 0); /* vCPU 0 spins */
	assert_true(i1 > 0); /* 2 vCPUs reserved of the host's CPUs */
	assert_non_null(strstr(m, "type=\"vm\""));
	assert_true(sum_lines(m, "kepler_process_cpu_joules_total", vm_sel, "zone=\"package\"") > 0);
	assert_adds_up(m);
	free(m);

	/* Its shared folder: a powercap tree whose counter is µJ of idle + active. */
	{
		char *e;
		uint64_t uj;

		snprintf(rel, sizeof(rel), "%s/%s/intel-rapl:0/energy_uj", shdir, dom_uuid);
		e = vw_fixture_slurp(rel, NULL);
		assert_non_null(e);
		uj = strtoull(e, NULL, 10);
		free(e);
		assert_true(uj > 0);
		printf("# shared folder energy_uj %" PRIu64 "\n", uj);
	}

	/* Its channel: the daemon connected to libvirt's socket (its peer checked) and wrote
	 * frames there (QEMU holds them for a guest that never opens the port). */
	{
		double frames;

		m = scrape(port);
		frames = sum_lines(m, "virtwatt_vm_passthrough_frames_total", vm_sel,
				   "transport=\"channel\"");
		printf("# channel frames %.0f, connected %.0f\n", frames,
		       sum_lines(m, "virtwatt_vm_passthrough_channel_state", vm_sel,
				 "state=\"connected\""));
		assert_true(frames > 0);
		free(m);
	}

	/* libvirtd goes away: the VM and its counters stay. */
	stop_pid(read_pid("libvirtd.pid"));
	sleep_ms(2500);
	m = scrape(port);
	a2 = sum_lines(m, "kepler_vm_cpu_joules_total", vm_sel, "zone=\"package\"");
	assert_true(a2 >= a1);
	assert_true(sum_lines(m, "kepler_vm_cpu_joules_total", vm_sel, "state=\"running\"") > 0);
	assert_adds_up(m);
	free(m);
	if (start_libvirtd(msg, sizeof(msg)) < 0)
		fail_msg("restart libvirtd: %s", msg);
	/* ~4 s, and until the VM's energy has moved on (60 s at most) */
	t0 = mono_ms();
	for (m = NULL;; free(m)) {
		sleep_ms(m ? 1000 : 4000);
		m = scrape(port);
		a3 = sum_lines(m, "kepler_vm_cpu_joules_total", vm_sel, "state=\"running\"");
		if (a3 > a2 || mono_ms() - t0 > 60000)
			break;
	}
	printf("# VM active energy: %.6f, %.6f (libvirtd down), %.6f J (back)\n", a1, a2, a3);
	assert_true(a3 > a2);
	assert_adds_up(m);
	free(m);
	assert_int_equal(vw_fixture_stop_daemon(daemon), 0);
}

static void test_destroyed(void **state)
{
	virConnectPtr c = connect_rw(5);
	virDomainPtr d;
	struct vw_vm_info vm;
	uint64_t end = mono_ms() + DEADLINE_S * 1000ULL;
	bool off = false;

	(void)state;
	assert_non_null(c);
	d = virDomainLookupByUUIDString(c, dom_uuid);
	assert_non_null(d);
	assert_int_equal(virDomainDestroy(d), 0);
	virDomainFree(d);
	virConnectClose(c);
	while (!off && mono_ms() < end) {
		if (!list_vm(&vm))
			fail_msg("the VM vanished without a shutoff report");
		off = vm.state == VW_VM_SHUTOFF;
		if (!off)
			sleep_ms(100);
	}
	assert_true(off);
	assert_false(list_vm(&vm)); /* reported once, then gone */
	for (int i = 0; i < 50 && running(qemu_pid); i++)
		sleep_ms(100);
	assert_false(running(qemu_pid));
	assert_false(list_vm(&vm));
}

static int skip_all(const char *why)
{
	printf("1..0 # SKIP %s\n", why);
	cleanup();
	return 0;
}

int main(void)
{
	static const char *const both[] = { "virtlogd", "libvirtd" };
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vm_listed),
		cmocka_unit_test(test_channel_peer),
		cmocka_unit_test(test_daemon_vm_energy),
		cmocka_unit_test(test_libvirtd_restart),
		cmocka_unit_test(test_destroyed),
	};
	struct vw_vm_env env = { 0 };
	char msg[1024] = "";
	int r;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (geteuid() != 0)
		return skip_all("needs root (libvirtd with the qemu driver, mount namespaces)");
	if (!have_tools()) {
		char *argv[] = { VW_SOURCE_ROOT "/deploy/install-deps.sh", "--test", NULL };

		(void)run(argv);
		if (!have_tools())
			return skip_all("libvirtd, virtlogd or qemu-system-x86_64 missing and "
				    "deploy/install-deps.sh --test could not install them");
	}
	if (ensure_user() < 0)
		return skip_all("cannot create the libvirt-qemu user its qemu driver needs");
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	if (prepare() < 0)
		return skip_all("cannot prepare a private libvirt state directory");
	if (start_in_namespace(both, 2, msg, sizeof(msg)) < 0 || !connect_rw(DEADLINE_S)) {
		if (!msg[0])
			snprintf(msg, sizeof(msg), "libvirtd does not answer on %s", uri_rw);
		return skip_all(msg);
	}
	if (create_domain(msg, sizeof(msg)) < 0)
		return skip_all(msg);

	vw_log_set_level(VW_LOG_WARN);
	procfd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
	env.procfs_fd = procfd;
	env.libvirt_uri = uri_ro;
	env.libvirt_helper = VW_HOST_BIN;
	env.reconcile_ns = 5 * VW_NSEC_PER_SEC;
	env.reconcile_covered_ns = 5 * VW_NSEC_PER_SEC; /* a pause shows within 5 s */
	env.backoff_min_ns = 200 * VW_NSEC_PER_MSEC;
	env.backoff_max_ns = VW_NSEC_PER_SEC;
	env.list_timeout_ns = 2 * VW_NSEC_PER_SEC;
	vms = vw_vms_open(&env);
	if (!vms)
		return skip_all("vw_vms_open failed");
	r = cmocka_run_group_tests(tests, NULL, NULL);
	cleanup();
	return r;
}

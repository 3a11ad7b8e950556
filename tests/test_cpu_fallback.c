/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Why bpf CPU accounting is not running (cpu_fallback.c): the classification over every
 * combination that tells the causes apart, then the probe for real in this process and in
 * children that lose what bpf needs the way containers do: one under a seccomp filter that
 * answers bpf() with EPERM (as containers/common's default profile does without
 * CAP_SYS_ADMIN), one without CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN. Root only for the real
 * probes (skipped otherwise, a failure under CI=true). Last, the real virtwatt-host on a sysfs
 * root without BTF: procfs accounts, the warning names btf, and
 * virtwatt_cpu_accounting_fallback{reason="btf"} says so; with --cpu.accounting=procfs asked
 * for, no fallback is reported; and the real virtwatt-host in a PID namespace of its own with its
 * own /proc (a pod without hostPID) warns that its per-process figures are wrong there.
 * (tests/deploy/check_image.py shows reason=seccomp in Podman.)
 */
#include "vw_test.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cpu_fallback.h"
#include "fixture.h"
#include "macro.h"

static void test_classify(void **state)
{
	const struct {
		struct vw_cpu_probe p;
		enum vw_cpu_fallback want;
	} cases[] = {
		/* bpf opened: nothing to say */
		{ { .err = 0, .btf = true, .cap_bpf = true, .cap_perfmon = true, .bpf_errno = EINVAL },
		  VW_CPU_FALLBACK_NONE },
		/* Podman/CRI-O default profile: caps held, bpf() EPERM, filter mode */
		{ { .err = -EPERM, .btf = true, .cap_bpf = true, .cap_perfmon = true, .seccomp = true,
		    .bpf_errno = EPERM },
		  VW_CPU_FALLBACK_SECCOMP },
		/* a filter whose default answer is ENOSYS */
		{ { .err = -ENOSYS, .btf = true, .cap_sys_admin = true, .seccomp = true,
		    .bpf_errno = ENOSYS },
		  VW_CPU_FALLBACK_SECCOMP },
		/* a seccomp filter that lets bpf() through: not the cause */
		{ { .err = -EINVAL, .btf = true, .cap_bpf = true, .cap_perfmon = true, .seccomp = true,
		    .bpf_errno = EINVAL },
		  VW_CPU_FALLBACK_KERNEL },
		/* no capability (non-root, or dropped), filter or not */
		{ { .err = -EPERM, .btf = true, .bpf_errno = EPERM }, VW_CPU_FALLBACK_CAPABILITY },
		{ { .err = -EPERM, .btf = true, .seccomp = true, .bpf_errno = EPERM },
		  VW_CPU_FALLBACK_CAPABILITY },
		/* CAP_BPF without CAP_PERFMON cannot attach tracing programs */
		{ { .err = -EPERM, .btf = true, .cap_bpf = true, .bpf_errno = EINVAL },
		  VW_CPU_FALLBACK_CAPABILITY },
		/* CAP_SYS_ADMIN alone is enough (kernels before 5.8) */
		{ { .err = -ENODEV, .btf = false, .cap_sys_admin = true, .bpf_errno = EINVAL },
		  VW_CPU_FALLBACK_BTF },
		{ { .err = -ENODEV, .btf = false, .cap_bpf = true, .cap_perfmon = true,
		    .bpf_errno = EINVAL },
		  VW_CPU_FALLBACK_BTF },
		/* caps, no filter, bpf() denied: an LSM or lockdown */
		{ { .err = -EPERM, .btf = true, .cap_bpf = true, .cap_perfmon = true,
		    .bpf_errno = EPERM },
		  VW_CPU_FALLBACK_PERMISSION },
		{ { .err = -EACCES, .btf = true, .cap_bpf = true, .cap_perfmon = true,
		    .bpf_errno = EACCES },
		  VW_CPU_FALLBACK_PERMISSION },
		/* everything allowed, the load failed (verifier, old kernel) */
		{ { .err = -EINVAL, .btf = true, .cap_bpf = true, .cap_perfmon = true,
		    .bpf_errno = EINVAL },
		  VW_CPU_FALLBACK_KERNEL },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum vw_cpu_fallback got = vw_cpu_fallback_classify(&cases[i].p);

		if (got != cases[i].want)
			fail_msg("case %zu: %s, want %s", i, vw_cpu_fallback_name(got),
				 vw_cpu_fallback_name(cases[i].want));
	}
	/* every cause has a label and a fix naming something to do */
	assert_string_equal(vw_cpu_fallback_name(VW_CPU_FALLBACK_NONE), "");
	for (int f = VW_CPU_FALLBACK_NONE + 1; f < VW_CPU_FALLBACK__COUNT; f++) {
		assert_true(strlen(vw_cpu_fallback_name(f)) > 0);
		assert_true(strlen(vw_cpu_fallback_fix(f)) > 20);
	}
	assert_non_null(strstr(vw_cpu_fallback_fix(VW_CPU_FALLBACK_SECCOMP), "Localhost"));
	assert_string_equal(vw_cpu_fallback_name(VW_CPU_FALLBACK__COUNT), "");
}

/* In a child: take away what `how` says, probe, exit with the classification of an EPERM. */
static int probe_in_child(int how)
{
	pid_t pid = fork();
	int st;

	assert_true(pid >= 0);
	if (pid == 0) {
		struct vw_cpu_probe p = { .err = -EPERM, .btf = true };

		if (how == 1) {
			struct sock_filter f[] = {
				BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
				BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_bpf, 0, 1),
				BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
				BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
			};
			struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

			if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
			    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0))
				_exit(100);
		} else if (how == 2) {
			struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
			struct __user_cap_data_struct d[2];

			if (syscall(SYS_capget, &h, d))
				_exit(101);
			d[0].effective &= ~(1u << CAP_SYS_ADMIN);
			d[1].effective &= ~((1u << (38 - 32)) | (1u << (39 - 32)));
			if (syscall(SYS_capset, &h, d))
				_exit(102);
		}
		vw_cpu_probe(&p);
		_exit(vw_cpu_fallback_classify(&p));
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static void test_probe_real(void **state)
{
	struct vw_cpu_probe p = { .err = -EPERM, .btf = true };

	(void)state;
	REQUIRE(geteuid() == 0, "needs root (CAP_BPF) for the real probe");
	vw_cpu_probe(&p);
	print_message("# here: bpf %d perfmon %d sys_admin %d seccomp %d bpf() errno %d\n",
		      p.cap_bpf, p.cap_perfmon, p.cap_sys_admin, p.seccomp, p.bpf_errno);
	assert_true(p.cap_sys_admin || (p.cap_bpf && p.cap_perfmon));
	/* root, no filter: bpf() itself answers the invalid command */
	assert_false(p.seccomp);
	assert_int_equal(p.bpf_errno, EINVAL);
	/* nothing taken away: bpf() works, so the failure was the load itself */
	assert_int_equal(probe_in_child(0), VW_CPU_FALLBACK_KERNEL);
	assert_int_equal(probe_in_child(1), VW_CPU_FALLBACK_SECCOMP);
	assert_int_equal(probe_in_child(2), VW_CPU_FALLBACK_CAPABILITY);
}

/* /metrics of the daemon at port once it holds want (5 s at most; the last body in any case). */
static char *scrape_until(unsigned port, const char *want)
{
	char url[64], *body = NULL;
	long code = 0;

	snprintf(url, sizeof(url), "http://127.0.0.1:%u/metrics", port);
	for (int i = 0; i < 50; i++) {
		free(body);
		body = vw_fixture_http_get(url, &code);
		if (body && code == 200 && strstr(body, want))
			break;
		usleep(100 * 1000);
	}
	return body;
}

/* The daemon's /metrics once it has an accountant; its log in *log. */
static char *scrape_daemon(const char *sys, const char *accounting, char **log)
{
	char sysarg[600], logpath[600];
	char *argv[] = { VW_HOST_BIN, sysarg, "--web.listen-address=127.0.0.1:0",
			 "--monitor.interval=1s", "--kube.node-name=fallback",
			 "--metrics=node,process", "--passthrough.enable=false", (char *)accounting,
			 NULL };
	char *body;
	unsigned port = 0;
	pid_t pid = 0;

	snprintf(sysarg, sizeof(sysarg), "--host.sysfs=%s", sys);
	snprintf(logpath, sizeof(logpath), "%s/daemon.log", sys);
	assert_int_equal(vw_fixture_start_daemon_logged(argv, logpath, &pid, &port), 0);
	body = scrape_until(port, "virtwatt_cpu_accounting_info{");
	assert_int_equal(vw_fixture_stop_daemon(pid), 0);
	*log = vw_fixture_slurp(logpath, NULL);
	unlink(logpath);
	assert_non_null(body);
	return body;
}

static void test_daemon_without_btf(void **state)
{
	char *sys, *log = NULL, *body;

	(void)state;
	REQUIRE(VW_HAVE_BPF, "built without BPF");
	sys = vw_fixture_mkdtemp("cpu-fallback-sys");
	assert_non_null(sys);
	/* auto: bpf expected, no kernel/btf/vmlinux under this sysfs root */
	body = scrape_daemon(sys, NULL, &log);
	assert_non_null(strstr(body, "virtwatt_cpu_accounting_info{method=\"procfs\""));
	assert_non_null(strstr(body, "virtwatt_cpu_accounting_fallback{reason=\"btf\","
				     "node_name=\"fallback\"} 1"));
	assert_non_null(log);
	assert_non_null(strstr(log, "level=warn msg=\"cpu: procfs accounts CPU time (coarser), "
				    "not bpf: reason=btf"));
	free(body);
	free(log);
	/* procfs asked for: nothing fell back */
	body = scrape_daemon(sys, "--cpu.accounting=procfs", &log);
	assert_non_null(strstr(body, "virtwatt_cpu_accounting_info{method=\"procfs\""));
	assert_null(strstr(body, "virtwatt_cpu_accounting_fallback"));
	assert_null(strstr(log, "reason="));
	assert_null(strstr(log, "child PID namespace"));
	free(body);
	free(log);
	vw_fixture_rm(sys); /* frees it */
}

/*
 * The real virtwatt-host in a PID namespace of its own with its own /proc, as in a pod without
 * hostPID: it still serves, bpf accounting the host's processes, and says once, as a warning,
 * that the per-process figures are wrong there and what fixes it; in the host's namespace (the
 * test above) it says nothing of the kind.
 */
static void test_daemon_child_pid_namespace(void **state)
{
	char dir_tmpl[] = "/tmp/vw-pidns-XXXXXX", logpath[600];
	char *argv[] = { "unshare", "--pid", "--fork", "--mount-proc", "--kill-child", VW_HOST_BIN,
			 "--web.listen-address=127.0.0.1:0", "--monitor.interval=1s",
			 "--kube.node-name=pidns", "--metrics=node,process",
			 "--passthrough.enable=false", NULL };
	char *dir, *log, *body;
	unsigned port = 0;
	pid_t pid = 0;
	int st;

	(void)state;
	REQUIRE(VW_HAVE_BPF, "built without BPF");
	REQUIRE(geteuid() == 0, "a PID namespace and a /proc mount need root");
	dir = mkdtemp(dir_tmpl);
	assert_non_null(dir);
	snprintf(logpath, sizeof(logpath), "%s/daemon.log", dir);
	assert_int_equal(vw_fixture_start_daemon_logged(argv, logpath, &pid, &port), 0);
	body = scrape_until(port, "kepler_process_cpu_joules_total{");
	kill(pid, SIGKILL); /* unshare ignores SIGTERM; --kill-child takes the daemon with it */
	assert_int_equal(waitpid(pid, &st, 0), pid);
	log = vw_fixture_slurp(logpath, NULL);
	unlink(logpath);
	rmdir(dir);
	assert_non_null(log);
	assert_non_null(body);
	assert_non_null(strstr(body, "virtwatt_cpu_accounting_info{method=\"bpf\""));
	assert_non_null(strstr(log, "level=warn msg=\"cpu: /proc shows a child PID namespace, "
				    "not the host's"));
	assert_non_null(strstr(log, "bpf accounts the host's processes by the host's PIDs"));
	assert_non_null(strstr(log, "hostPID: true"));
	free(body);
	free(log);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_classify),
		cmocka_unit_test(test_probe_real),
		cmocka_unit_test(test_daemon_without_btf),
		cmocka_unit_test(test_daemon_child_pid_namespace),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A real Podman container named from Podman's own files: `podman run` (runc, cgroupfs, an image
 * imported from the local static busybox: no registry is reachable), the ID read back from its
 * process's /proc/PID/cgroup, vw_ctrmeta_name() on the real root, then the real virtwatt-host
 * exporting kepler_container_cpu_joules_total{container_name="vw-test-web-<pid>"}.
 * Root only (Podman's root storage): skipped otherwise, which tests/run.sh fails under CI=true.
 * The container is removed by the teardown, and, should this process die first, by Podman
 * itself (--rm --timeout).
 */
#include "vw_test.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ctrmeta.h"
#include "fileio.h"
#include "fixture.h"
#include "macro.h"
#include "cgroup_path.h"
#include "exposition_fixture.h"

#define IMAGE "localhost/vw-names-test:busybox"
#define PODMAN "podman --runtime runc --cgroup-manager cgroupfs"
#define LIFETIME_S 180 /* --timeout: Podman kills (and --rm removes) it even if we cannot */

static char name[64], id[VW_CONTAINER_ID_LEN];
static char *tmp;
static pid_t daemon_pid;

/* Run a shell command; its last non-empty output line (stripped) in out. The exit status. */
static int sh(const char *cmd, char *out, size_t size)
{
	char line[512], last[512] = "";
	FILE *p = popen(cmd, "r");
	int st;

	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p)) {
		line[strcspn(line, "\r\n")] = '\0';
		if (line[0])
			memcpy(last, line, sizeof(last));
	}
	st = pclose(p);
	if (out)
		snprintf(out, size, "%s", last);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static bool have(const char *prog)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", prog);
	return sh(cmd, NULL, 0) == 0;
}

/* containers.conf within this sandbox's ulimits; an image from /bin/busybox (busybox-static). */
static int prepare(void)
{
	char cmd[1024], path[600];

	tmp = vw_fixture_mkdtemp("ctrmeta-podman");
	if (!tmp)
		return -1;
	if (vw_fixture_write(tmp, "containers.conf",
			     "[containers]\n"
			     "default_ulimits = [\"nofile=1024:1024\", \"nproc=4096:4096\"]\n",
			     0644) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/containers.conf", tmp);
	setenv("CONTAINERS_CONF", path, 1);
	if (sh(PODMAN " image exists " IMAGE, NULL, 0) == 0)
		return 0;
	snprintf(cmd, sizeof(cmd),
		 "set -e; mkdir -p %1$s/rootfs/bin; cp /bin/busybox %1$s/rootfs/bin/busybox; "
		 "ln -s busybox %1$s/rootfs/bin/sh; "
		 "tar -C %1$s/rootfs -c . | " PODMAN " import - " IMAGE " >/dev/null 2>&1",
		 tmp);
	return sh(cmd, NULL, 0);
}

static int setup(void **state)
{
	(void)state;
	if (geteuid() != 0 || !have("podman") || !have("runc") || access("/bin/busybox", X_OK))
		return 0; /* the test says why and skips */
	snprintf(name, sizeof(name), "vw-test-web-%d", (int)getpid());
	return prepare() == 0 ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[256];

	(void)state;
	if (daemon_pid > 0) {
		kill(daemon_pid, SIGKILL);
		waitpid(daemon_pid, NULL, 0);
		daemon_pid = 0;
	}
	if (name[0]) {
		snprintf(cmd, sizeof(cmd), PODMAN " rm -f -t 0 %s >/dev/null 2>&1", name);
		(void)sh(cmd, NULL, 0);
	}
	if (tmp)
		vw_fixture_rm(tmp);
	tmp = NULL;
	return 0;
}

/* The sample of `family` whose labels hold `labels`; its value in *ret. */
static bool find_sample(const char *text, const char *family, const char *labels, double *ret)
{
	return vw_expo_find(text, family, labels, ret);
}

static void test_real_podman(void **state)
{
	char cmd[512], pidtxt[32], got[VW_CTRMETA_NAME_MAX + 1], labels[256], url[128];
	char *argv[] = { VW_HOST_BIN, "--web.listen-address=127.0.0.1:0", "--monitor.interval=1s",
			 "--kube.node-name=ctrmeta", "--metrics=node,container",
			 "--passthrough.enable=false", "--cpu.accounting=procfs", NULL };
	_cleanup_close_ int procfd = -1, rootfd = -1;
	struct vw_cgroup_match match;
	struct vw_ctrmeta *m;
	unsigned port = 0;
	double joules = -1;
	bool found = false;
	int pid;

	(void)state;
	if (geteuid() != 0 || !have("podman") || !have("runc") || access("/bin/busybox", X_OK)) {
		print_message("# SKIP needs root, podman, runc and /bin/busybox "
			      "(deploy/install-deps.sh --test installs them)\n");
		skip();
	}
	snprintf(cmd, sizeof(cmd),
		 PODMAN " run -d --rm --timeout %d --name %s --network none " IMAGE
			" sh -c 'while :; do :; done' 2>&1",
		 LIFETIME_S, name);
	if (sh(cmd, id, sizeof(id)) != 0)
		fail_msg("podman run: %s", id);
	assert_int_equal(strlen(id), 64);
	snprintf(cmd, sizeof(cmd), PODMAN " inspect -f '{{.State.Pid}}' %s", name);
	assert_int_equal(sh(cmd, pidtxt, sizeof(pidtxt)), 0);
	pid = atoi(pidtxt);
	assert_true(pid > 1);

	/* The container as the exporter sees it: the ID from the cgroup path ... */
	procfd = vw_root_open("/proc");
	assert_true(procfd >= 0);
	assert_int_equal(vw_workload_read_pid(procfd, (uint32_t)pid, &match), 0);
	assert_true(match.container);
	assert_int_equal(match.runtime, VW_RUNTIME_PODMAN);
	assert_string_equal(match.container_id, id);
	/* ... named from Podman's files below the real root. */
	rootfd = vw_root_open("/");
	assert_true(rootfd >= 0);
	m = vw_ctrmeta_new(&(struct vw_ctrmeta_opts){ .root_fd = rootfd });
	assert_non_null(m);
	assert_int_equal(vw_ctrmeta_name(m, match.runtime, match.container_id, got, sizeof(got)), 0);
	assert_string_equal(got, name);
	print_message("# podman %s: pid %d, cgroup id %.12s, name \"%s\"\n", name, pid, id, got);
	vw_ctrmeta_free(m);

	/* The real exporter, real /proc and /sys (the estimator where there is no RAPL). */
	assert_int_equal(vw_fixture_start_daemon(argv, &daemon_pid, &port), 0);
	snprintf(labels, sizeof(labels), "container_id=\"%s\",container_name=\"%s\",runtime=\"podman\"",
		 id, name);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/metrics", port);
	for (int i = 0; i < 40 && !(found && joules > 0); i++) {
		struct timespec ts = { 0, 250 * 1000 * 1000 };
		_cleanup_free_ char *body = NULL;
		long code = 0;

		nanosleep(&ts, NULL);
		body = vw_fixture_http_get(url, &code);
		if (body && code == 200)
			found = find_sample(body, "kepler_container_cpu_joules_total", labels, &joules);
	}
	if (!found)
		fail_msg("no kepler_container_cpu_joules_total{%s}", labels);
	print_message("# kepler_container_cpu_joules_total{%s,...} %g\n", labels, joules);
	assert_true(joules > 0);
	assert_int_equal(vw_fixture_stop_daemon(daemon_pid), 0);
	daemon_pid = 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_real_podman, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * promtool check metrics (parser and lint) on a larger exposition with hostile label values.
 * Its own executable because cmocka 1.1.5 prints a skip as "not ok N # SKIP", which meson
 * counts as a failure: without promtool this prints "ok 1 # SKIP" itself (or fails under
 * CI=true).
 */
#include "vw_test.h"

#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture.h"
#include "macro.h"
#include "prom.h"

extern char **environ;

static const char *const vm_labels[] = {"uuid", "name", NULL};

static char *find_promtool(void)
{
	const char *path = getenv("PATH");
	_cleanup_free_ char *dirs = strdup(path ? path : "");
	char *save = NULL, *cand;

	for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		if (asprintf(&cand, "%s/promtool", d) < 0)
			return NULL;
		if (access(cand, X_OK) == 0)
			return cand;
		free(cand);
	}
	return access("/usr/bin/promtool", X_OK) == 0 ? strdup("/usr/bin/promtool") : NULL;
}

static const char *const hostile_values[] = {
	"back\\slash", "quote\"d", "new\nline", "carriage\rreturn", "ctl\x01\x02\x1b[31m\x7f",
	"\xff\xfe", "over\xc0\xaflong", "sur\xed\xa0\x80rogate", "Zo\xc3\xab \xf0\x9f\x94\x8b",
	"{brace}=\",", "# HELP fake", "tab\there", "\\n",
};

static const char *const proc_labels[] = {"pid", "comm", "zone", NULL};
static const struct vw_metric_family big_families[] = {
	{"virtwatt_process_energy_joules_total", VW_METRIC_COUNTER, "Energy by process.", "joules",
	 proc_labels},
	{"virtwatt_process_power_watts", VW_METRIC_GAUGE, "Power by process.", "watts", proc_labels},
	{"virtwatt_vm_energy_joules_total", VW_METRIC_COUNTER, "Energy by VM.\nPer zone.", "joules",
	 vm_labels},
	{"virtwatt_up", VW_METRIC_GAUGE, "Whether \\ the \"source\" works.", NULL, NULL},
};

static void write_big_family(struct vw_prom_writer *w, size_t fi)
{
	const size_t nv = ARRAY_SIZE(hostile_values);

	assert_int_equal(vw_prom_family(w, &big_families[fi]), 0);
	for (size_t i = 0; fi < 3 && i < 200; i++) {
		char pid[16], zone[32], junk[64];
		const char *comm = hostile_values[i % nv];

		snprintf(pid, sizeof(pid), "%zu", 1000 + i);
		snprintf(zone, sizeof(zone), "%s", i % 2 ? "package-0" : "dram");
		snprintf(junk, sizeof(junk), "%s%zu", hostile_values[(i / nv) % nv], i);
		const char *labels[] = {pid, i < nv ? comm : junk, zone, NULL};
		if (fi == 0)
			assert_int_equal(vw_prom_counter_micro(w, labels, i * 1234567ULL), 0);
		else if (fi == 1)
			assert_int_equal(vw_prom_gauge(w, labels, i % 7 ? i / 3.0 : NAN), 0);
		else
			assert_int_equal(vw_prom_counter(w, (const char *[]){pid, comm, NULL}, i), 0);
	}
	if (fi == 3)
		assert_int_equal(vw_prom_gauge(w, NULL, 1), 0);
	assert_int_equal(vw_prom_family_end(w), 0);
}

static int run_promtool(const char *promtool, const char *in, const char *log)
{
	char *argv[] = {(char *)promtool, "check", "metrics", NULL};
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int status, r;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, in, O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	r = posix_spawn(&pid, promtool, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (r != 0)
		return -r;
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void test_promtool(void **state)
{
	_cleanup_free_ char *out = NULL, *root = NULL, *in = NULL, *log = NULL, *log_text = NULL;
	const char *promtool = *state;
	struct vw_prom_writer *w;
	size_t len;
	int rc;

	w = vw_prom_writer_new(VW_PROM_TEXT_0_0_4, 0);
	for (size_t fi = 0; fi < ARRAY_SIZE(big_families); fi++)
		write_big_family(w, fi);
	assert_int_equal(vw_prom_finish(w, &out, &len), 0);
	vw_prom_writer_free(w);
	root = vw_fixture_mkdtemp("prom");
	assert_non_null(root);
	assert_int_equal(vw_fixture_write(root, "metrics.txt", out, 0), 0);
	assert_true(asprintf(&in, "%s/metrics.txt", root) > 0);
	assert_true(asprintf(&log, "%s/promtool.log", root) > 0);
	rc = run_promtool(promtool, in, log);
	log_text = vw_fixture_slurp(log, NULL);
	if (rc != 0)
		fail_msg("%s check metrics exited %d:\n%s", promtool, rc, log_text ? log_text : "");
	vw_fixture_rm(VW_TAKE_PTR(root));
}

int main(void)
{
	_cleanup_free_ char *promtool = find_promtool();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate(test_promtool, promtool),
	};
	const char *ci = getenv("CI");

	if (!promtool) {
		bool strict = ci && strcmp(ci, "true") == 0;

		printf("1..1\n%s 1 - test_promtool # %spromtool not found in PATH or /usr/bin%s\n",
		       strict ? "not ok" : "ok", strict ? "" : "SKIP ",
		       strict ? " (CI=true: a skip is a failure)" : "");
		return strict ? 1 : 0;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}

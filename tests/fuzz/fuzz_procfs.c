/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: the /proc and cgroup files the daemons parse, each reading the input's text:
 * /proc/stat and /proc/cpuinfo (procfs.c), cpuinfo + meminfo as the model server's machine spec
 * (model_server.c), /proc/PID/stat (procfs.c: by hand, for cpu_procfs.c and the registry), /proc/PID/cgroup for containers and
 * pods (cgroup_path.c) and for the accounting hierarchy, v1 and v2 (cgroupfs.c), cpu.stat
 * (cgroupfs.c), and the decimal counters of cpuacct.usage and schedstat (fileio.c). Properties:
 * CPU usage between two samples lies in [0, 1]; names are within their buffers and the machine
 * spec's labels in Kepler's [a-z0-9_]; a container ID is 64 lower-case hex and a pod UID 32 or
 * 36 characters; a cgroup path comes from the file; and a counter reads back as printed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroupfs.h"
#include "cpu_account_priv.h"
#include "fileio.h"
#include "fuzz_common.h"
#include "model_server.h"
#include "procfs.h"
#include "cgroup_path.h"

static void check_stat(const char *text)
{
	struct vw_cpu_stat zero = { 0 }, s;
	double u;

	if (vw_procfs_parse_stat(text, &s) < 0)
		return;
	vw_fuzz_assert(s.ncpus >= 1, "%u CPUs", s.ncpus);
	u = vw_cpu_stat_usage(&zero, &s);
	vw_fuzz_assert(u >= 0 && u <= 1, "usage since boot %g", u);
	u = vw_cpu_stat_usage(&s, &zero);
	vw_fuzz_assert(u == 0, "usage backwards %g", u);
}

static void check_cpuinfo(const char *text)
{
	_cleanup_free_ struct vw_cpu_info *cpus = NULL;
	struct vw_machine_spec spec;
	size_t n = 0;
	const char *label = "abcdefghijklmnopqrstuvwxyz0123456789_";

	if (vw_procfs_parse_cpuinfo(text, &cpus, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++)
		vw_fuzz_assert(vw_fuzz_terminated(cpus[i].vendor_id, sizeof(cpus[i].vendor_id)) &&
				       vw_fuzz_terminated(cpus[i].model_name,
							  sizeof(cpus[i].model_name)) &&
				       vw_fuzz_terminated(cpus[i].physical_id,
							  sizeof(cpus[i].physical_id)) &&
				       vw_fuzz_terminated(cpus[i].core_id, sizeof(cpus[i].core_id)),
			       "CPU %zu: a field overruns", i);
	if (vw_machine_spec_parse(text, text, &spec) < 0)
		return;
	vw_fuzz_assert(spec.cores == n && spec.chips >= 1 && spec.threads_per_core >= 1,
		       "%u cores (of %zu), %u chips, %u threads per core", spec.cores, n, spec.chips,
		       spec.threads_per_core);
	vw_fuzz_assert(vw_fuzz_charset(spec.vendor, label) && vw_fuzz_charset(spec.processor, label),
		       "vendor \"%s\", processor \"%s\"", spec.vendor, spec.processor);
}

static void check_pid_stat(const char *text)
{
	char comm[VW_COMM_LEN];
	uint64_t ticks, start;

	struct vw_pid_stat s;
	int r = vw_procfs_parse_pid_stat_fields(text, &s);

	vw_fuzz_assert(r == 0 || r == -EINVAL || r == -ERANGE, "error %d", r);
	vw_fuzz_assert((vw_procfs_parse_pid_stat(text, comm, &ticks, &start) == 0) == (r == 0),
		       "the two parsers disagree");
	if (r < 0)
		return;
	vw_fuzz_assert(vw_fuzz_terminated(comm, sizeof(comm)) && strcmp(comm, s.comm) == 0,
		       "comm overruns");
	vw_fuzz_assert(ticks < UINT64_MAX && ticks == s.utime + s.stime && start == s.start,
		       "%" PRIu64 " ticks", ticks);
	/* the state is one visible byte after ") ", the comm all before the last ')' */
	vw_fuzz_assert(s.state != ' ' && s.state != '\n' && s.state != '\0' &&
			       strrchr(text, ')')[2] == s.state && strncmp(strchr(text, '(') + 1, s.comm,
								    strlen(s.comm)) == 0,
		       "state '%c', comm \"%s\"", s.state, s.comm);
}

static void check_match(const struct vw_cgroup_match *m, const char *what)
{
	size_t n = strlen(m->pod_uid);

	vw_fuzz_assert(m->runtime < VW_RUNTIME__COUNT, "%s: runtime %d", what, (int)m->runtime);
	vw_fuzz_assert(!m->container || (strlen(m->container_id) == 64 &&
					  vw_fuzz_charset(m->container_id, "0123456789abcdef")),
		       "%s: container \"%s\"", what, m->container_id);
	vw_fuzz_assert((n == 0 || n == 32 || n == 36) &&
			       vw_fuzz_charset(m->pod_uid, "0123456789abcdef-"),
		       "%s: pod \"%s\"", what, m->pod_uid);
}

static void check_cgroup(const char *text)
{
	struct vw_cgroup_match m, again;
	char path[4096];
	size_t len;
	uint64_t ns;

	if (vw_workload_parse_proc_cgroup(text, &m) == 0)
		vw_fuzz_assert(m.container, "a match without a container");
	check_match(&m, "/proc/PID/cgroup");
	/* The text as one cgroup directory's path: its container's own cgroup is a prefix. */
	if (vw_workload_container_cgroup(text, &m, &len) == 0) {
		_cleanup_free_ char *prefix = strndup(text, len);

		check_match(&m, "cgroup path");
		vw_fuzz_assert(prefix && vw_workload_parse_cgroup_path(prefix, &again) == 0 &&
				       strcmp(again.container_id, m.container_id) == 0,
			       "the container's cgroup \"%s\" names another container", prefix);
	}
	for (int v1 = 0; v1 <= 1; v1++)
		if (vw_cgroupfs_parse_pid_path(v1, text, path, sizeof(path)) == 0)
			vw_fuzz_assert(path[0] != '/' && !strchr(path, '\n') && strstr(text, path),
				       "v%d path \"%s\"", 2 - v1, path);
	if (vw_cgroupfs_parse_cpu_stat(text, &ns) == 0)
		vw_fuzz_assert(ns % 1000 == 0, "cpu.stat: %" PRIu64 " ns", ns);
}

static void check_counter(const char *text)
{
	char back[32];
	uint64_t v, again;

	if (vw_parse_u64(text, &v) < 0)
		return;
	snprintf(back, sizeof(back), "%" PRIu64, v);
	vw_fuzz_assert(vw_parse_u64(back, &again) == 0 && again == v, "%s: %" PRIu64, text, v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	_cleanup_free_ char *text = NULL;

	if (size > (1u << 20))
		return 0;
	text = vw_fuzz_strdup(data, size);
	check_stat(text);
	check_cpuinfo(text);
	check_pid_stat(text);
	check_cgroup(text);
	check_counter(text);
	return 0;
}

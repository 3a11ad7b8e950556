/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fallback CPU accountant: scans <procfs>/ where BPF cannot load.
 *
 * Precision. Two readings of a process's CPU time exist and each misses something:
 *  - the sum of <pid>/task/<tid>/schedstat field 1 over its threads is exact to the ns
 *    (se.sum_exec_runtime, what the BPF accountant measures) but only covers live threads;
 *    <pid>/schedstat alone is the main thread;
 *  - <pid>/stat utime + stime covers every thread, exited ones included, but each is truncated
 *    to a clock tick (10 ms at USER_HZ 100), so the sum is up to 2 ticks low.
 * Both are lower bounds of the truth, so the larger one is the tighter: a process whose threads
 * all live (the usual case) is exact to the ns, one that lost threads is within 2 ticks.
 * The history layer keeps the series monotonic when the two readings take turns.
 *
 * Values count from open (a baseline taken then is subtracted), like the bpf accountant's.
 * A (pid, starttime) seen by the previous read and missing now exited: its last value is
 * reported once, flagged exited; a pid back with another starttime is a new process. CPU time a
 * process used after the previous read and before it exited is not seen (bpf sees it). No
 * per-cgroup totals and cgroup_id 0: the daemon maps processes to containers by path.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_account.h"
#include "cpu_account_priv.h"
#include "fileio.h"
#include "log.h"

struct procfs_state {
	int procfd;
	uint64_t ns_per_tick;
	struct vw_cpu_table baseline; /* at open, sorted */
	struct vw_cpu_history hist;
};

/* Sum field 1 of <pid>/task/<tid>/schedstat over the threads. -errno when none was readable. */
static int sum_task_schedstat(int procfd, uint32_t pid, uint64_t *ret)
{
	_cleanup_(vw_closedirp) DIR *d = NULL;
	char path[64];
	uint64_t sum = 0;
	bool any = false;
	struct dirent *de;

	snprintf(path, sizeof(path), "%u/task", pid);
	d = vw_opendir_at(procfd, path);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char buf[128];
		uint32_t tid;
		uint64_t ns;

		if (vw_parse_pid(de->d_name, &tid) < 0)
			continue;
		snprintf(path, sizeof(path), "%u/task/%u/schedstat", pid, tid);
		if (vw_read_file_at(procfd, path, buf, sizeof(buf), NULL) < 0)
			continue; /* thread exited meanwhile */
		buf[strcspn(buf, " \n")] = '\0';
		if (vw_parse_u64(buf, &ns) < 0 || ns > UINT64_MAX - sum)
			continue;
		sum += ns;
		any = true;
	}
	if (!any)
		return -ENODATA;
	*ret = sum;
	return 0;
}

/* One process: 0, or -errno when it vanished or its files make no sense (then skipped). */
static int read_proc(struct procfs_state *s, uint32_t pid, struct vw_proc_cpu *ret)
{
	char path[64], buf[4096];
	uint64_t ticks, start, sched_ns = 0;
	int r;

	snprintf(path, sizeof(path), "%u/stat", pid);
	r = vw_read_file_at(s->procfd, path, buf, sizeof(buf), NULL);
	if (r < 0)
		return r;
	r = vw_procfs_parse_pid_stat(buf, ret->comm, &ticks, &start);
	if (r < 0)
		return r;
	(void)sum_task_schedstat(s->procfd, pid, &sched_ns);
	ret->tgid = pid;
	ret->start_time = start;
	ret->cpu_ns = VW_MAX(sched_ns, ticks > UINT64_MAX / s->ns_per_tick ? UINT64_MAX
									 : ticks * s->ns_per_tick);
	return 0;
}

/* Every process under procfs into t (unsorted, raw values). */
static int scan(struct procfs_state *s, struct vw_cpu_table *t)
{
	_cleanup_(vw_closedirp) DIR *d = vw_opendir_at(s->procfd, ".");
	struct dirent *de;
	unsigned skipped = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		struct vw_proc_cpu *p;
		uint32_t pid;
		int r;

		if (vw_parse_pid(de->d_name, &pid) < 0)
			continue;
		p = vw_cpu_table_new_proc(t);
		if (!p)
			return -ENOMEM;
		r = read_proc(s, pid, p);
		if (r < 0) {
			t->n_procs--;
			if (r != -ENOENT && r != -ESRCH)
				skipped++;
		}
	}
	if (skipped)
		vw_debug("cpu: procfs: skipped %u unreadable or malformed processes", skipped);
	return 0;
}

static int procfs_read(void *state, struct vw_cpu_snapshot *ret)
{
	struct procfs_state *s = state;
	const struct vw_cpu_table *prev = &s->hist.last; /* whole: keep_last */
	struct vw_cpu_table *cur;
	size_t n_live;
	int r;

	r = vw_cpu_history_begin(&s->hist, &cur);
	if (r < 0)
		return r;
	r = scan(s, cur);
	if (r < 0) {
		vw_cpu_history_abort(&s->hist);
		return r;
	}
	vw_cpu_table_sort(cur);
	for (size_t i = 0; i < cur->n_procs; i++) {
		struct vw_proc_cpu *p = &cur->procs[i];
		const struct vw_proc_cpu *b = vw_cpu_table_find(&s->baseline, p->tgid, p->start_time);

		if (b)
			p->cpu_ns -= VW_MIN(p->cpu_ns, b->cpu_ns);
	}
	/* Gone since the previous read: report its last value once. */
	n_live = cur->n_procs;
	for (size_t i = 0; i < prev->n_procs; i++) {
		const struct vw_proc_cpu *was = &prev->procs[i];
		struct vw_proc_cpu *p;

		if (was->exited || vw_cpu_table_find_n(cur, n_live, was->tgid, was->start_time))
			continue;
		p = vw_cpu_table_new_proc(cur);
		if (!p) {
			vw_cpu_history_abort(&s->hist);
			return -ENOMEM;
		}
		*p = *was;
		p->exited = true;
	}
	vw_cpu_history_finish(&s->hist, ret);
	return 0;
}

static void procfs_close(void *state)
{
	struct procfs_state *s = state;

	if (!s)
		return;
	vw_cpu_history_free(&s->hist);
	vw_cpu_table_free(&s->baseline);
	vw_closep(&s->procfd);
	free(s);
}

static int procfs_open(const struct vw_cpu_env *env, void **ret_state)
{
	struct procfs_state *s;
	int r;

	if (!env || env->procfs_fd < 0)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (s)
		s->hist.keep_last = true; /* a process gone is reported with its last values */
	if (!s)
		return -ENOMEM;
	s->ns_per_tick = vw_cpu_ns_per_tick();
	s->procfd = fcntl(env->procfs_fd, F_DUPFD_CLOEXEC, 3);
	if (s->procfd < 0) {
		r = -errno;
		goto fail;
	}
	r = scan(s, &s->baseline);
	if (r < 0)
		goto fail;
	if (s->baseline.n_procs == 0) {
		vw_warn("cpu: procfs: no process found under the procfs root");
		r = -ENODEV;
		goto fail;
	}
	vw_cpu_table_sort(&s->baseline);
	*ret_state = s;
	return 0;
fail:
	procfs_close(s);
	return r;
}

const struct vw_cpu_account_ops vw_cpu_procfs = {
	.name = "procfs",
	.open = procfs_open,
	.read = procfs_read,
	.close = procfs_close,
};

/* SPDX-License-Identifier: Apache-2.0 */
#include "workloads.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroupfs.h"
#include "digits.h"
#include "energy.h"
#include "fileio.h"
#include "log.h"
#include "macro.h"
#include "perf_counters.h"
#include "procfs.h"
#include "sort.h"
#include "workloads_priv.h"

struct vw_workloads *vw_workloads_new(const struct vw_workloads_opts *opts)
{
	struct vw_workloads *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->o = *opts;
	w->root_cg_file = (struct vw_kept_file)VW_KEPT_FILE_INIT;
	w->exes = vw_intern_new();
	if (!w->exes) {
		free(w);
		return NULL;
	}
	memset(w->zslot, -1, sizeof(w->zslot));
	w->label_cache = vw_wl_label_cache_new(); /* none: labels escaped each render */
	if (vw_wl_vm_families(w) < 0) {
		vw_wl_label_cache_free(w->label_cache);
		vw_intern_free(w->exes);
		free(w);
		return NULL;
	}
	if (w->o.max_terminated == 0)
		w->o.max_terminated = VW_WORKLOADS_DEFAULT_MAX_TERMINATED;
	return w;
}

struct vw_cgroupfs *vw_workloads_cgroupfs(int sysfs_fd)
{
	struct vw_cgroupfs *cg = vw_cgroupfs_open(sysfs_fd);
	int r;

	if (!cg) {
		vw_warn("cgroup: no cgroup hierarchy accounting CPU time under the sysfs root "
			"(fs/cgroup/cpuacct or a cgroup2 mount): a container's energy is what its "
			"processes seen alive ran; mount the host's /sys/fs/cgroup to count every task");
		return NULL;
	}
	r = vw_cgroupfs_scan(cg);
	if (r < 0)
		vw_warn("cgroup: walk %s: %s", vw_cgroupfs_mount(cg), strerror(-r));
	vw_info("cgroup: containers' CPU time from %s (%s), %zu cgroups", vw_cgroupfs_mount(cg),
		vw_cgroupfs_is_v1(cg) ? "cgroup v1 cpuacct" : "cgroup v2", vw_cgroupfs_count(cg));
	return cg;
}

void vw_workloads_free(struct vw_workloads *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->n_procs; i++) {
		vw_intern_put(w->exes, w->procs[i].exe);
		free(w->procs[i].z);
		free(w->procs[i].hw);
		free(w->procs[i].gpu);
	}
	free(w->procs);
	vw_intern_free(w->exes);
	for (size_t i = 0; i < w->n_conts; i++) {
		free(w->conts[i].cg_path);
		vw_kept_file_close(&w->conts[i].cg_file);
	}
	vw_kept_file_close(&w->root_cg_file);
	free(w->conts);
	free(w->pods);
	for (size_t k = 0; k < w->n_vms; k++)
		free(w->vms[k].labels);
	free(w->vms);
	vw_wl_vm_families_free(w);
	free(w->attr_procs);
	free(w->attr_counters);
	free(w->attr_conts);
	free(w->attr_reserve);
	vw_attribution_release(&w->attr);
	vw_wl_retention_free(w);
	free(w->vm_by_pid);
	vw_wl_label_cache_free(w->label_cache);
	free(w);
}

/* ---- Discovery ---- */

/* "PID/leaf" into rel (32 bytes; leaf at most 10): snprintf took ~550 instructions, twice for
 * each new process. */
static const char *pid_rel(char rel[32], uint32_t tgid, const char *leaf)
{
	size_t n = vw_u64_digits(tgid, rel, 0), len = strlen(leaf);

	rel[n++] = '/';
	memcpy(rel + n, leaf, VW_MIN(len, 32 - n - 1));
	rel[n + VW_MIN(len, 32 - n - 1)] = '\0';
	return rel;
}

/* /proc/PID/stat: ppid (field 4) and starttime (field 22), after the parenthesised comm. */
static int read_stat(int procfd, uint32_t tgid, uint32_t *ret_ppid, uint64_t *ret_start)
{
	char rel[32], buf[1024];
	struct vw_pid_stat st;
	int r;

	r = vw_read_file_at(procfd, pid_rel(rel, tgid, "stat"), buf, sizeof(buf), NULL);
	if (r < 0)
		return r;
	r = vw_procfs_parse_pid_stat_fields(buf, &st);
	if (r < 0)
		return r;
	*ret_ppid = st.ppid;
	*ret_start = st.start;
	return 0;
}

static void read_exe(int procfd, uint32_t tgid, char *buf, size_t size)
{
	char rel[32];
	ssize_t n;

	n = readlinkat(procfd, pid_rel(rel, tgid, "exe"), buf, size - 1);
	buf[n > 0 ? (size_t)n : 0] = '\0';
}

static int find_pod(struct vw_workloads *w, const struct vw_pod_info *pi)
{
	for (size_t i = 0; i < w->n_pods; i++)
		if (strcmp(w->pods[i].info.uid, pi->uid) == 0) {
			w->pods[i].terminated = false; /* a new process of a known pod */
			return (int)i;
		}
	if (vw_array_grow((void **)&w->pods, sizeof(*w->pods), w->n_pods, &w->cap_pods) < 0)
		return -1;
	w->pods[w->n_pods] = (struct wl_pod){ .info = *pi };
	return (int)w->n_pods++;
}

/* The pod of a container: by its ID in the pod list, else by the pod UID its cgroup names. */
static int resolve_pod(struct vw_workloads *w, struct wl_container *c)
{
	struct vw_pod_info pi;
	char name[254] = "";

	if (!w->o.podmeta)
		return -1;
	if (vw_podmeta_by_container(w->o.podmeta, c->id, &pi, name, sizeof(name)) == 0) {
		if (name[0])
			snprintf(c->name, sizeof(c->name), "%s", name);
		return find_pod(w, &pi);
	}
	if (c->pod_uid[0] && vw_podmeta_by_uid(w->o.podmeta, c->pod_uid, &pi) == 0)
		return find_pod(w, &pi);
	return -1;
}

/*
 * The "user@UID.service" component of a cgroup path (path[0 .. len)): a user's own service
 * manager, below which any local user makes cgroups of any name (systemd-run --user --scope),
 * "docker-<another container's ID>.scope" included. Its length in *ret_len; NULL when none.
 */
static const char *user_manager(const char *path, size_t len, size_t *ret_len)
{
	const char *u = memmem(path, len, "/user@", 6), *end;

	if (!u)
		return NULL;
	u++;
	end = memchr(u, '/', len - (size_t)(u - path));
	*ret_len = end ? (size_t)(end - u) : len - (size_t)(u - path);
	return u;
}

enum claim { CLAIM_SAME, CLAIM_REFUSED, CLAIM_OVERRULES };

/*
 * A container ID seen under the cgroup path[0 .. len) when c (that ID) has another. A container
 * lives in one cgroup; the ID is read from the path, which the cgroup's maker names. A cgroup
 * under a user's service manager does not take an ID from one outside it (or under another
 * user's): its processes are not the container's (refused); one outside overrules such a path
 * seen first (the container's CPU time is read from it from now on; the processes placed before
 * stay, until they end). Rootless containers (podman) live under their user's manager: the
 * first path stands between two of one user's, and between two outside any.
 */
static enum claim claim_container(const struct wl_container *c, const char *path, size_t len)
{
	size_t have_len = strlen(c->cg_path), hu_len = 0, nu_len = 0;
	const char *hu, *nu;

	if (have_len == len && memcmp(c->cg_path, path, len) == 0)
		return CLAIM_SAME;
	hu = user_manager(c->cg_path, have_len, &hu_len);
	nu = user_manager(path, len, &nu_len);
	if (!nu)
		return hu ? CLAIM_OVERRULES : CLAIM_SAME;
	if (hu && hu_len == nu_len && memcmp(hu, nu, nu_len) == 0)
		return CLAIM_SAME;
	return CLAIM_REFUSED;
}

/* claim_container's verdict applied: -1 when the process is not the container's. */
static int settle_claim(struct vw_workloads *w, struct wl_container *c, const char *path,
			size_t len)
{
	enum claim k = claim_container(c, path, len);
	char *taken;

	if (k == CLAIM_SAME)
		return 0;
	w->container_id_conflicts++;
	vw_complain(&w->conflict_complaint, VW_LOG_WARN,
		    "containers: cgroups %.*s and %s both name container %.12s; the one under a "
		    "user's own service manager (user@UID.service) is not the container's: %s",
		    (int)VW_MIN(len, (size_t)512), path, c->cg_path, c->id,
		    k == CLAIM_REFUSED ? "its processes are not counted in it"
				       : "its CPU time is read from the other from now on");
	if (k == CLAIM_REFUSED)
		return -1;
	taken = strndup(path, len);
	if (!taken)
		return 0; /* kept as it was; tried again at the next process */
	free(c->cg_path);
	c->cg_path = taken;
	vw_wl_cont_unkeep(c);
	c->cg_have_last = false; /* its first reading a baseline: not the other's total */
	c->overruled = w->overruled = true; /* the processes placed before: again (place_again) */
	return 0;
}

/* cg_path: the container's cgroup (path[0 .. cg_len)), NULL when not known. */
static int find_container(struct vw_workloads *w, const struct vw_cgroup_match *m,
			  const char *cg_path, size_t cg_len)
{
	struct wl_container *c;

	for (size_t i = 0; i < w->n_conts; i++)
		if (strcmp(w->conts[i].id, m->container_id) == 0) {
			c = &w->conts[i];
			if (c->cg_path && cg_path && settle_claim(w, c, cg_path, cg_len) < 0)
				return -1;
			if (c->terminated && c->pod < 0) /* back: its pod may be known by now */
				c->pod = resolve_pod(w, c);
			c->terminated = false; /* a new process of a known container */
			if (c->pod >= 0)
				w->pods[c->pod].terminated = false;
			if (!c->cg_path && cg_path)
				c->cg_path = strndup(cg_path, cg_len);
			return (int)i;
		}
	if (vw_array_grow((void **)&w->conts, sizeof(*w->conts), w->n_conts, &w->cap_conts) < 0)
		return -1;
	c = &w->conts[w->n_conts];
	*c = (struct wl_container){ .runtime = m->runtime, .pod = -1,
				    .cg_file = VW_KEPT_FILE_INIT };
	snprintf(c->id, sizeof(c->id), "%s", m->container_id);
	snprintf(c->pod_uid, sizeof(c->pod_uid), "%s", m->pod_uid);
	c->cg_path = cg_path ? strndup(cg_path, cg_len) : NULL;
	/* Created after the baseline: all its cgroup ever ran is new (a first reading counts from
	 * zero); before it, the first reading is only the baseline. */
	c->cg_have_last = w->baseline_taken;
	c->pod = resolve_pod(w, c);
	if (!c->name[0]) /* outside Kubernetes: the runtime's own metadata */
		(void)vw_ctrmeta_name(w->o.ctrmeta, m->runtime, m->container_id, c->name,
				      sizeof(c->name));
	return (int)w->n_conts++;
}

/*
 * Where a process ran: its cgroup path in the CPU-accounting hierarchy, from the id the bpf
 * accountant saw (exited processes too; a walk of the hierarchy, at most one per update, learns
 * new ids), else from /proc/PID/cgroup. -ENOENT when neither says.
 */
static int proc_cgroup_path(struct vw_workloads *w, uint32_t tgid, uint64_t cgroup_id,
			    char *buf, size_t size)
{
	const char *path;

	if (cgroup_id) {
		if (vw_cgroupfs_path(w->o.cgroupfs, cgroup_id, &path) < 0 && !w->rescanned) {
			w->rescanned = true;
			w->cgroup_rescans++;
			(void)vw_cgroupfs_scan(w->o.cgroupfs);
		}
		if (vw_cgroupfs_path(w->o.cgroupfs, cgroup_id, &path) == 0) {
			snprintf(buf, size, "%s", path);
			return 0;
		}
		return -ENOENT; /* a cgroup gone before the walk: no name to give it */
	}
	return vw_cgroupfs_pid_path(w->o.cgroupfs, w->o.procfs_fd, tgid, buf, size);
}

/* Is tgid still the process that started at start (0: not known, taken as yes)? */
static bool still_started(const struct vw_workloads *w, uint32_t tgid, uint64_t start)
{
	uint64_t now = 0;
	uint32_t ppid;

	return !start || (read_stat(w->o.procfs_fd, tgid, &ppid, &now) == 0 && now == start);
}

/*
 * The container a process belongs to (index), or -1. Where /proc/PID/cgroup tells (no cgroup
 * id from the accountant), the PID must still be the process that started at start after the
 * read: one that exited since the snapshot, its PID taken by another container's process, was
 * placed in that container, which then took its CPU energy.
 */
static int place_proc(struct vw_workloads *w, uint32_t tgid, uint64_t start, uint64_t cgroup_id)
{
	_cleanup_free_ char *path = NULL;
	struct vw_cgroup_match m;
	size_t len;

	if (w->o.cgroupfs && (path = malloc(PATH_MAX)) &&
	    proc_cgroup_path(w, tgid, cgroup_id, path, PATH_MAX) == 0) {
		if (vw_workload_container_cgroup(path, &m, &len) == 0)
			return cgroup_id || still_started(w, tgid, start)
				       ? find_container(w, &m, path, len)
				       : -1;
		if (cgroup_id)
			return -1; /* the bpf accountant saw it run outside every container */
	}
	/* No hierarchy (or a path it could not place): every line of /proc/PID/cgroup. */
	if (vw_workload_read_pid(w->o.procfs_fd, tgid, &m) == 0 && m.container &&
	    still_started(w, tgid, start))
		return find_container(w, &m, NULL, 0);
	return -1;
}

/*
 * The live processes of the containers whose cgroup another overruled this update
 * (settle_claim) placed again: those of the refused cgroup are the container's no more.
 */
static void place_again(struct vw_workloads *w)
{
	size_t n = w->n_conts;

	w->overruled = false;
	for (size_t i = 0; i < w->n_procs; i++) {
		struct wl_proc *p = &w->procs[i];

		if (p->container >= 0 && (size_t)p->container < n &&
		    w->conts[p->container].overruled && !p->kernel && !p->terminated)
			p->container = place_proc(w, p->tgid, p->start_time, p->cgroup_id);
	}
	for (size_t k = 0; k < n; k++)
		w->conts[k].overruled = false;
}

/*
 * The process's executable path, read at its first need and kept (interned): a process never
 * shown and never asked about by a VM scan never pays the readlink (~5-9 % of the daemon's CPU
 * at 10,000 processes with 1 % of them new each second, read for each new one). A process gone
 * by then shows "", as one whose link could not be read always did. Rendering calls it on a
 * const registry: the memo (p->exe and w->exes, reached through pointers) is the one thing a
 * render changes, and renders and updates run on the same thread.
 */
const char *vw_wl_proc_exe_read(const struct vw_workloads *w, struct wl_proc *p)
{
	char exe[VW_WL_EXE_MAX];
	const char *e;

	/* One that exited before its first need has no link left to read (the read failed, a
	 * system call each render it was shown), or its PID's next owner's: none. */
	if (p->terminated)
		return p->exe = "";
	read_exe(w->o.procfs_fd, p->tgid, exe, sizeof(exe));
	/* Read at a render, perhaps seconds after the snapshot: a process that exited since, its
	 * PID another's, would be shown with that one's binary. */
	if (exe[0] && !still_started(w, p->tgid, p->start_time))
		exe[0] = '\0';
	e = vw_intern_get(w->exes, exe);
	if (!e)
		return ""; /* out of memory: shown without it, read again at the next need */
	p->exe = e;
	return e;
}

/* Forget the executable read (it exec'd): the next need reads the new one. */
static void drop_exe(struct vw_workloads *w, struct wl_proc *p)
{
	if (p->kernel)
		return;
	vw_intern_put(w->exes, p->exe);
	p->exe = NULL;
}

static int add_proc(struct vw_workloads *w, const struct vw_proc_cpu *p)
{
	struct wl_proc *np;
	uint32_t ppid = 0;
	uint64_t start = p->start_time, stat_start = 0;

	if (vw_array_grow((void **)&w->procs, sizeof(*w->procs), w->n_procs, &w->cap_procs) < 0)
		return -ENOMEM;
	np = &w->procs[w->n_procs];
	*np = (struct wl_proc){ .tgid = p->tgid, .container = -1, .vm = -1 };
	memcpy(np->comm, p->comm, sizeof(np->comm));
	np->comm[VW_COMM_LEN - 1] = '\0';
	/* The accountant may have told both (bpf); else /proc/PID/stat does (a read of it costs
	 * ~15 us: with 1 % of 10,000 processes new each interval, 1.5 ms). */
	if ((p->kind == VW_PROC_KIND_UNKNOWN || !start) &&
	    read_stat(w->o.procfs_fd, p->tgid, &ppid, &stat_start) == 0 && !start)
		start = stat_start;
	np->start_time = start;
	np->kernel = p->kind == VW_PROC_KIND_KTHREAD || p->tgid == 2 || ppid == 2 || p->tgid == 0;
	np->exe = np->kernel ? "" : NULL; /* read at its first need (vw_wl_proc_exe) */
	np->cgroup_id = p->cgroup_id;
	if (!np->kernel)
		np->container = place_proc(w, p->tgid, start, p->cgroup_id);
	/* Before the baseline, CPU time already spent is not this interval's. */
	np->last_cpu_ns = w->baseline_taken ? 0 : p->cpu_ns;
	/* Its zone slots now, zeroed (as zone_slots() would give them); without memory,
	 * zone_slots() tries again. */
	if (w->n_zslots && (np->z = calloc(w->n_zslots, sizeof(*np->z))))
		np->n_z = w->n_zslots;
	else if (w->n_zslots)
		w->zslots_short = true;
	w->n_procs++;
	return 0;
}

static int cmp_proc(const void *a, const void *b)
{
	const struct wl_proc *x = a, *y = b;

	if (x->tgid != y->tgid)
		return x->tgid < y->tgid ? -1 : 1;
	/* A terminated entry sorts before the live one with the same (reused) PID. */
	return (int)y->terminated - (int)x->terminated;
}

/* The first of procs[lo .. hi) whose PID is not below tgid (hi if none). */
static size_t lower_bound(const struct vw_workloads *w, uint32_t tgid, size_t lo, size_t hi)
{
	return VW_LOWER_BOUND(w->procs, lo, hi, tgid, tgid);
}

static struct wl_proc *live_at(struct vw_workloads *w, uint32_t tgid, size_t i, size_t sorted)
{
	for (; i < sorted && w->procs[i].tgid == tgid; i++)
		if (!w->procs[i].terminated)
			return &w->procs[i];
	return NULL;
}

struct wl_proc *vw_wl_lookup_live(struct vw_workloads *w, uint32_t tgid, size_t sorted)
{
	return live_at(w, tgid, lower_bound(w, tgid, 0, sorted), sorted);
}

/*
 * The same for lookups in PID order (a snapshot's): from *at, where the last one ended, a few
 * steps forward instead of a search of the whole table (a search per process was 4 % of the
 * daemon's CPU at 10,000). A lookup out of order searches it all.
 */
static struct wl_proc *lookup_live_next(struct vw_workloads *w, uint32_t tgid, size_t sorted,
					size_t *at)
{
	size_t i = *at;

	if (i > sorted || (i > 0 && w->procs[i - 1].tgid >= tgid)) {
		i = lower_bound(w, tgid, 0, sorted);
	} else {
		for (int steps = 0; steps < 8 && i < sorted && w->procs[i].tgid < tgid; steps++)
			i++;
		if (i < sorted && w->procs[i].tgid < tgid)
			i = lower_bound(w, tgid, i, sorted);
	}
	*at = i;
	return live_at(w, tgid, i, sorted);
}

static void terminate_proc(struct wl_proc *p)
{
	p->terminated = true;
	p->ended_now = true;
	p->final_gen = 0;
}

static uint64_t fwd(uint64_t prev, uint64_t cur)
{
	return cur >= prev ? cur - prev : 0;
}

static int take_counters(struct wl_proc *p, const struct vw_proc_counters *c)
{
	if (!p->hw && !(p->hw = calloc(1, sizeof(*p->hw))))
		return -ENOMEM;
	p->hw->delta = (struct vw_proc_counters){
		.cycles = fwd(p->hw->last.cycles, c->cycles),
		.instructions = fwd(p->hw->last.instructions, c->instructions),
		.cache_misses = fwd(p->hw->last.cache_misses, c->cache_misses),
	};
	p->hw->last = *c;
	return 0;
}

static void clear_counters(struct wl_proc *p)
{
	if (p->hw)
		p->hw->delta = (struct vw_proc_counters){ 0 };
}

/*
 * The table back in PID order after processes were appended behind its sorted first `sorted`:
 * the few new ones sorted, then merged in place (vw_merge_sorted): only the entries above the
 * smallest new PID move, and only the new ones are copied aside (a table-sized buffer every
 * interval cost its page faults; PIDs wrap, so new ones often sort below old ones).
 * Nothing to do when none was appended: terminating one changes no order (a terminated entry
 * and a live one share a PID only when the live one is new).
 */
static int sort_added(struct vw_workloads *w, size_t sorted)
{
	size_t n = w->n_procs;

	if (n == sorted)
		return 0;
	qsort(w->procs + sorted, n - sorted, sizeof(*w->procs), cmp_proc);
	if (vw_merge_sorted(w->procs, sorted, n, sizeof(*w->procs), cmp_proc) < 0)
		qsort(w->procs, n, sizeof(*w->procs), cmp_proc); /* slower, no memory needed */
	return 0;
}

/* Whether the snapshot's comm b (not empty) is not the process's a: the 16 bytes compared as
 * two words first (a strncmp a process was 2 % of an interval at 10,000), the same answer. */
static bool comm_changed(const char a[VW_COMM_LEN], const char b[VW_COMM_LEN])
{
	uint64_t x[2], y[2];

	_Static_assert(VW_COMM_LEN == sizeof(x), "comm is two words");
	memcpy(x, a, sizeof(x));
	memcpy(y, b, sizeof(y));
	if (x[0] == y[0] && x[1] == y[1])
		return false;
	return strncmp(a, b, VW_COMM_LEN - 1) != 0;
}

/* The interrupt time the kernel counted in tgid's runtime in the interval for others' work
 * (cpu_account.h: vw_cpu_snapshot.irq_procs, in tgid order), 0 when none. */
static uint64_t proc_irq_ns(const struct vw_cpu_snapshot *snap, uint32_t tgid)
{
	size_t lo = 0, hi = snap->n_irq_procs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (snap->irq_procs[mid].tgid < tgid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < snap->n_irq_procs && snap->irq_procs[lo].tgid == tgid ? snap->irq_procs[lo].ns
									   : 0;
}

/* Merge the snapshot into the process table; sets each process's delta_ns. */
static int merge_snapshot(struct vw_workloads *w, const struct vw_cpu_snapshot *snap)
{
	size_t sorted = w->n_procs, at = 0;
	int hw_err = 0, sorted_err;

	/* Deltas and seen were reset by clear_intervals(). */
	w->hw_available = snap->counters ? snap->hw_available : 0;
	w->ghosts = VW_MAX(w->ghosts, snap->ghosts);
	w->stale_slots = VW_MAX(w->stale_slots, snap->stale_slots);
	w->ran_walk_on = snap->ran_walk_on;

	w->exits_lost = VW_MAX(w->exits_lost, snap->exits_lost);
	for (int k = 0; k < VW_CPU_UNTRACKED__COUNT; k++)
		w->exits_untracked[k] = VW_MAX(w->exits_untracked[k], snap->exits_untracked[k]);
	for (int k = 0; k < VW_CPU_IRQ__COUNT; k++) {
		w->irq_untracked_spans[k] = VW_MAX(w->irq_untracked_spans[k],
						   snap->irq_untracked_spans[k]);
		w->irq_untracked_ns[k] = VW_MAX(w->irq_untracked_ns[k], snap->irq_untracked_ns[k]);
	}
	for (size_t i = 0; i < snap->n_procs; i++) {
		const struct vw_proc_cpu *s = &snap->procs[i];
		struct wl_proc *p = lookup_live_next(w, s->tgid, sorted, &at);

		if (p && s->start_time && p->start_time && s->start_time != p->start_time) {
			terminate_proc(p); /* the PID was reused */
			p = NULL;
		}
		if (!p) {
			int r = add_proc(w, s);

			if (r < 0)
				return r;
			p = &w->procs[w->n_procs - 1];
		}
		p->seen = true;
		if (s->comm[0] && !p->kernel && comm_changed(p->comm, s->comm)) {
			/* It exec'd (or renamed itself): shown under its new name and binary (read
			 * at its next need). */
			memcpy(p->comm, s->comm, VW_COMM_LEN - 1);
			drop_exe(w, p);
		}
		p->delta_ns = fwd(p->last_cpu_ns, s->cpu_ns);
		/* Not its work: others' interrupts it was running under (the bpf accountant's). */
		if (snap->n_irq_procs && p->delta_ns) {
			p->irq_ns = VW_MIN(proc_irq_ns(snap, s->tgid), p->delta_ns);
			p->delta_ns -= p->irq_ns;
		}
		if (s->cgroup_id && s->cgroup_id != p->cgroup_id && !p->kernel) {
			p->cgroup_id = s->cgroup_id; /* it moved (docker exec, a scope move) */
			p->container = place_proc(w, s->tgid, p->start_time, s->cgroup_id);
		} else if (!s->cgroup_id && w->o.cgroupfs && p->container < 0 && p->delta_ns &&
			   !p->kernel && !s->exited) {
			/* No ids (procfs): a process outside every container that ran may have
			 * moved into one; a container it went to is found this way. */
			p->container = place_proc(w, s->tgid, p->start_time, 0);
		}
		p->last_cpu_ns = s->cpu_ns;
		p->cpu_ns += p->delta_ns + p->irq_ns;
		if (snap->counters && take_counters(p, &snap->counters[i]) < 0)
			hw_err = -ENOMEM; /* the rest merged all the same: the table stays whole */
		if (s->exited)
			terminate_proc(p);
	}
	if (w->overruled)
		place_again(w);
	sorted_err = sort_added(w, sorted); /* whatever hw_err: the table stays in order */
	return hw_err < 0 ? hw_err : sorted_err;
}

/* Every snapshot lists every live process (cpu_account.h): one missing from it has gone. */
static void reap_vanished(struct vw_workloads *w)
{
	for (size_t i = 0; i < w->n_procs; i++)
		if (!w->procs[i].seen && !w->procs[i].terminated)
			terminate_proc(&w->procs[i]);
}

/*
 * PIDs wrap (pid_max 32768 in 20 s at 1,700 forks a second): a process may start under the PID
 * of one that ended and was not yet scraped. Where the two have the same comm they may show as
 * one series twice (kepler_process_cpu_seconds_total has no state label; two ends are both
 * state="terminated"), a scrape promtool and OpenMetrics parsers refuse. So a terminated entry
 * is superseded by a later process of its PID with its comm: not shown, and evicted at the next
 * publication (counted; its energy stays in its parents' and the node's totals, as any
 * eviction's). A PID's entries are next to each other: the table is in PID order.
 */
static void mark_superseded(struct vw_workloads *w)
{
	for (size_t i = 0, end; i < w->n_procs; i = end) {
		for (end = i + 1; end < w->n_procs && w->procs[end].tgid == w->procs[i].tgid; end++)
			;
		for (size_t k = i; end - i > 1 && k < end; k++) {
			struct wl_proc *p = &w->procs[k];

			for (size_t m = i; p->terminated && !p->superseded && m < end; m++)
				if (w->procs[m].start_time > p->start_time &&
				    strncmp(w->procs[m].comm, p->comm, VW_COMM_LEN) == 0)
					p->superseded = true;
		}
	}
}

/* ---- VMs ---- */

static int find_vm(struct vw_workloads *w, const char *uuid)
{
	for (size_t i = 0; i < w->n_vms; i++)
		if (strcmp(w->vms[i].uuid, uuid) == 0)
			return (int)i;
	return -1;
}

int vw_workloads_set_groups(struct vw_workloads *w, const struct vw_group *groups, size_t n)
{
	for (size_t i = 0; i < w->n_vms; i++)
		w->vms[i].listed = false;
	for (size_t i = 0; i < n; i++) {
		const struct vw_group *g = &groups[i];
		int k;

		if (!g->id[0])
			continue;
		k = find_vm(w, g->id);
		if (k < 0) {
			if (vw_array_grow((void **)&w->vms, sizeof(*w->vms), w->n_vms, &w->cap_vms) < 0)
				return -ENOMEM;
			k = (int)w->n_vms++;
			w->vms[k] = (struct wl_vm){ 0 };
			snprintf(w->vms[k].uuid, sizeof(w->vms[k].uuid), "%s", g->id);
		}
		if (w->n_group_labels && !w->vms[k].labels &&
		    !(w->vms[k].labels = calloc(w->n_group_labels, sizeof(*w->vms[k].labels))))
			return -ENOMEM;
		for (size_t l = 0; l < w->n_group_labels; l++)
			snprintf(w->vms[k].labels[l], sizeof(w->vms[k].labels[l]), "%s", g->labels[l]);
		w->vms[k].sole = g->sole;
		/* Same id, maybe a new leader: the counters carry on. */
		snprintf(w->vms[k].name, sizeof(w->vms[k].name), "%s", g->name);
		snprintf(w->vms[k].hypervisor, sizeof(w->vms[k].hypervisor), "%s", g->kind);
		w->vms[k].vcpus = g->reserved_cpus;
		w->vms[k].qemu_pid = g->leader_pid;
		w->vms[k].qemu_start_time = g->leader_start_time;
		w->vms[k].listed = true;
		w->vms[k].terminated = false;
		w->vms[k].hidden = false;
		w->vms[k].publications_gone = 0;
	}
	return 0;
}

size_t vw_workloads_group_energy(const struct vw_workloads *w, struct vw_group_energy *out,
				 size_t max)
{
	size_t n = 0;

	for (size_t k = 0; k < w->n_vms && n < max; k++) {
		const struct wl_vm *v = &w->vms[k];
		struct vw_group_energy *e = &out[n];

		if (!v->listed)
			continue;
		*e = (struct vw_group_energy){ 0 };
		/* Copied, not printed: two snprintf a VM an interval were a tenth of what the
		 * VMs add to the registry's work (e is zeroed: the NULs are there). */
		_Static_assert(sizeof(e->id) == sizeof(v->uuid) && sizeof(e->name) == sizeof(v->name),
			       "vw_group_energy: a VM's id and name as the registry holds them");
		memcpy(e->id, v->uuid, strnlen(v->uuid, sizeof(e->id) - 1));
		memcpy(e->name, v->name, strnlen(v->name, sizeof(e->name) - 1));
		e->cpu_ns = v->cpu_ns;
		for (int z = 0; z < VW_ZONE__COUNT; z++) {
			if (!w->present[z])
				continue;
			e->total_uj[e->n_zones] = vw_energy_add(v->z[z].uj[M_IDLE],
								v->z[z].uj[M_ACTIVE]);
			e->zones[e->n_zones++] = (struct vw_zone_owner_energy){
				.zone = (enum vw_zone)z,
				.idle_uj = v->z[z].interval[M_IDLE],
				.active_uj = v->z[z].interval[M_ACTIVE],
				.idle_w = vw_energy_watts(v->z[z].interval[M_IDLE], w->dt_ns),
				.active_w = vw_energy_watts(v->z[z].interval[M_ACTIVE], w->dt_ns),
			};
		}
		if (v->has_gpu) {
			e->total_uj[e->n_zones] = vw_energy_add(v->gpu.uj[M_IDLE],
								v->gpu.uj[M_ACTIVE]);
			e->zones[e->n_zones++] = (struct vw_zone_owner_energy){
				.zone = VW_ZONE_GPU,
				.idle_uj = v->gpu.interval[M_IDLE],
				.active_uj = v->gpu.interval[M_ACTIVE],
				.idle_w = vw_energy_watts(v->gpu.interval[M_IDLE], w->dt_ns),
				.active_w = vw_energy_watts(v->gpu.interval[M_ACTIVE], w->dt_ns),
			};
		}
		n++;
	}
	return n;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* A bit a QEMU PID (PID % 4,096) in map_vms()'s filter: a PID whose bit is clear is none. */
static void vm_pid_mark(uint64_t bits[64], uint32_t pid)
{
	bits[(pid >> 6) & 63] |= UINT64_C(1) << (pid & 63);
}

static bool vm_pid_maybe(const uint64_t bits[64], uint32_t pid)
{
	return bits[(pid >> 6) & 63] >> (pid & 63) & 1;
}

/* The first entry of the sorted index at or after (pid << 32). */
static size_t vm_pid_lower(const uint64_t *ix, size_t n, uint32_t pid)
{
	uint64_t key = (uint64_t)pid << 32;
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ix[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Each process's VM: the first listed VM (lowest index) whose QEMU it is (same PID, and start
 * time where both are known) or whose QEMU adopted it (a vhost worker). Through an index of the
 * listed VMs by QEMU PID: a lookup per process, not a pass over the VMs (10,000 processes x 100
 * VMs was a million comparisons an interval).
 */
static void map_vms(struct vw_workloads *w)
{
	size_t n = 0;

	if (w->n_vms > w->cap_vm_by_pid) {
		uint64_t *ix = realloc(w->vm_by_pid, w->n_vms * sizeof(*ix));

		if (ix) {
			w->vm_by_pid = ix;
			w->cap_vm_by_pid = w->n_vms;
		}
	}
	if (w->n_vms > w->cap_vm_by_pid) { /* no memory: the plain pass */
		w->vms_unmapped = false;
		for (size_t i = 0; i < w->n_procs; i++) {
			struct wl_proc *p = &w->procs[i];
			uint32_t owner;

			if (p->terminated && !p->delta_ns)
				continue;
			owner = w->o.adopted_by ? w->o.adopted_by(p->comm) : 0;
			p->vm = -1;
			for (size_t k = 0; k < w->n_vms; k++) {
				const struct wl_vm *v = &w->vms[k];
				bool same = v->qemu_pid == p->tgid &&
					    (!v->qemu_start_time || !p->start_time ||
					     v->qemu_start_time == p->start_time);

				if (v->listed && v->qemu_pid && (same || owner == v->qemu_pid)) {
					p->vm = (int)k;
					break;
				}
			}
		}
		return;
	}
	memset(w->vm_pid_bits, 0, sizeof(w->vm_pid_bits));
	for (size_t k = 0; k < w->n_vms; k++)
		if (w->vms[k].listed && w->vms[k].qemu_pid) {
			w->vm_by_pid[n++] = (uint64_t)w->vms[k].qemu_pid << 32 | (uint32_t)k;
			vm_pid_mark(w->vm_pid_bits, w->vms[k].qemu_pid);
		}
	/* No VM now and none at the last mapping: every process it would look at has none
	 * already (new ones start with none; one it skips, ended and idle, never runs again). */
	if (n == 0 && w->vms_unmapped)
		return;
	w->vms_unmapped = n == 0;
	if (n > 1)
		qsort(w->vm_by_pid, n, sizeof(*w->vm_by_pid), cmp_u64);
	for (size_t i = 0; i < w->n_procs; i++) {
		struct wl_proc *p = &w->procs[i];
		uint32_t owner;
		int vm = -1;

		if (p->terminated && !p->delta_ns)
			continue;
		p->vm = -1;
		if (!n)
			continue;
		/* Its own QEMU: the first with a start time that does not contradict it. */
		for (size_t j = vm_pid_maybe(w->vm_pid_bits, p->tgid)
					? vm_pid_lower(w->vm_by_pid, n, p->tgid)
					: n;
		     j < n && (uint32_t)(w->vm_by_pid[j] >> 32) == p->tgid; j++) {
			const struct wl_vm *v = &w->vms[(uint32_t)w->vm_by_pid[j]];

			if (!v->qemu_start_time || !p->start_time ||
			    v->qemu_start_time == p->start_time) {
				vm = (int)(uint32_t)w->vm_by_pid[j];
				break;
			}
		}
		owner = w->o.adopted_by ? w->o.adopted_by(p->comm) : 0;
		if (owner && vm_pid_maybe(w->vm_pid_bits, owner)) { /* or the QEMU that adopted it,
								     * if listed first */
			size_t j = vm_pid_lower(w->vm_by_pid, n, owner);

			if (j < n && (uint32_t)(w->vm_by_pid[j] >> 32) == owner &&
			    (vm < 0 || (int)(uint32_t)w->vm_by_pid[j] < vm))
				vm = (int)(uint32_t)w->vm_by_pid[j];
		}
		p->vm = vm;
	}
}

/* ---- Attribution (attribute.c) ---- */

_Static_assert((int)M_ACTIVE == (int)VW_ATTR_ACTIVE && (int)M_IDLE == (int)VW_ATTR_IDLE &&
		       (int)M__COUNT == (int)VW_ATTR__MODES,
	       "the registry's modes are attribution's");

static void add_acc(struct acc *a, int m, uint64_t uj)
{
	a->uj[m] = vw_energy_add(a->uj[m], uj);
	a->interval[m] += uj;
}

const struct acc *vw_wl_proc_acc(const struct vw_workloads *w, const struct wl_proc *p, int z)
{
	static const struct acc none;
	int k = w->zslot[z];

	return k >= 0 && k < p->n_z ? &p->z[k] : &none;
}

/* Slots for the zones present from now on, in every process (before splitting them). */
static int zone_slots(struct vw_workloads *w, const struct vw_zone_energy zones[VW_ZONE__COUNT])
{
	for (int z = 0; z < VW_ZONE__COUNT; z++)
		if (zones[z].present && w->zslot[z] < 0) {
			w->zslot[z] = (int8_t)w->n_zslots++;
			w->zslots_short = true;
		}
	if (!w->zslots_short)
		return 0; /* no new zone, no new process since every process had its slots */
	for (size_t i = 0; i < w->n_procs; i++) {
		struct wl_proc *p = &w->procs[i];
		struct acc *a;

		if (p->n_z == w->n_zslots)
			continue;
		a = reallocarray(p->z, w->n_zslots, sizeof(*a));
		if (!a)
			return -ENOMEM;
		memset(&a[p->n_z], 0, (w->n_zslots - p->n_z) * sizeof(*a));
		p->z = a;
		p->n_z = w->n_zslots;
	}
	w->zslots_short = false;
	return 0;
}

/* *p holds at least n elements of elem bytes (contents kept). */
static int fit(void **p, size_t *cap, size_t n, size_t elem)
{
	void *np;

	if (n <= *cap)
		return 0;
	n = VW_MAX(n, *cap * 2);
	np = reallocarray(*p, n, elem);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = n;
	return 0;
}

/* The interval's attribution input from the tables: usage, memberships, reservations. */
static int attr_input(struct vw_workloads *w, const struct vw_zone_energy zones[VW_ZONE__COUNT],
		      struct vw_attr_in *in)
{
	size_t ng = w->n_pods + w->n_vms;

	if (fit((void **)&w->attr_procs, &w->cap_attr_procs, w->n_procs + 1,
		sizeof(*w->attr_procs)) < 0 ||
	    fit((void **)&w->attr_conts, &w->cap_attr_conts, w->n_conts + 1,
		sizeof(*w->attr_conts)) < 0 ||
	    fit((void **)&w->attr_reserve, &w->cap_attr_reserve, ng + 1,
		sizeof(*w->attr_reserve)) < 0 ||
	    (w->hw_available && fit((void **)&w->attr_counters, &w->cap_attr_counters,
				    w->n_procs + 1, sizeof(*w->attr_counters)) < 0))
		return -ENOMEM;
	for (size_t i = 0; i < w->n_procs; i++) {
		const struct wl_proc *p = &w->procs[i];

		w->attr_procs[i] = (struct vw_attr_proc){ .cpu_ns = p->delta_ns,
							  .container = p->container, .vm = p->vm,
							  .live = !p->terminated,
							  .sole = p->container >= 0 &&
								  !vw_wl_in_container(w, p) };
		if (w->hw_available)
			w->attr_counters[i] = (struct vw_attr_counters){
				.instructions = p->hw ? p->hw->delta.instructions : 0,
				.cache_misses = p->hw ? p->hw->delta.cache_misses : 0 };
	}
	for (size_t i = 0; i < w->n_conts; i++) {
		const struct wl_container *c = &w->conts[i];

		w->attr_conts[i] = (struct vw_attr_container){
			.pod = c->pod, .live = c->live > 0, .cg_valid = c->cg_valid,
			.cg_ns = c->cg_delta_ns };
	}
	/* Pods reserve their CPU requests, VMs their vCPUs, of host CPUs x 1000, while live. */
	for (size_t i = 0; i < w->n_pods; i++)
		w->attr_reserve[i] = w->pods[i].live ? w->pods[i].info.cpu_request_millis : 0;
	for (size_t k = 0; k < w->n_vms; k++)
		w->attr_reserve[w->n_pods + k] =
			w->vms[k].live ? (uint64_t)w->vms[k].vcpus * 1000 : 0;
	*in = (struct vw_attr_in){
		.procs = w->attr_procs, .n_procs = w->n_procs,
		.conts = w->attr_conts, .n_conts = w->n_conts,
		.pod_millis = w->attr_reserve, .n_pods = w->n_pods,
		.vm_millis = w->attr_reserve + w->n_pods, .n_vms = w->n_vms,
		.capacity_millis = (uint64_t)w->o.host_cpus * 1000,
		.root_valid = w->root_valid, .root_ns = w->root_delta_ns,
		.counters = w->hw_available ? w->attr_counters : NULL,
		.hw_available = w->hw_available };
	memcpy(in->zones, zones, sizeof(in->zones));
	return 0;
}

/* A group's shares of the zones present (zs[0..nz)) into its counters and its level's totals. */
static void take(struct acc *z_acc, const struct vw_attr_share *sh, const int *zs, int nz,
		 uint64_t totals[VW_ZONE__COUNT][M__COUNT])
{
	for (int k = 0; k < nz; k++)
		for (int m = 0; m < M__COUNT; m++) {
			uint64_t uj = sh->uj[zs[k]][m];

			if (!uj)
				continue;
			add_acc(&z_acc[zs[k]], m, uj);
			totals[zs[k]][m] += uj;
		}
}

/* A process's share, into its counter (at its slot for zone z, present: zone_slots() gave every
 * process one). */
static void take_proc(void *ctx, size_t i, enum vw_zone z, enum vw_attr_mode m, uint64_t uj)
{
	struct vw_workloads *w = ctx;

	w->procs[i].shared = true;
	add_acc(&w->procs[i].z[w->zslot[z]], (int)m, uj);
	w->totals.processes[z][m] += uj;
}

/* The groups' shares into their counters and the node's totals. */
static void take_shares(struct vw_workloads *w, const struct vw_attribution *a,
			const struct vw_zone_energy zones[VW_ZONE__COUNT])
{
	int zs[VW_ZONE__COUNT], nz = 0;

	for (int z = 0; z < VW_ZONE__COUNT; z++)
		if (zones[z].present)
			zs[nz++] = z;
	for (int k = 0; k < nz; k++)
		for (int m = 0; m < M__COUNT; m++) {
			w->totals.uncontained[zs[k]][m] += a->uncontained[zs[k]][m];
			w->totals.unattributed[zs[k]][m] += a->unattributed[zs[k]][m];
		}
	for (size_t i = 0; i < w->n_conts; i++)
		take(w->conts[i].z, &a->conts[i], zs, nz, w->totals.containers);
	for (size_t i = 0; i < w->n_pods; i++)
		take(w->pods[i].z, &a->pods[i], zs, nz, w->totals.pods);
	for (size_t k = 0; k < w->n_vms; k++)
		take(w->vms[k].z, &a->vms[k], zs, nz, w->totals.vms);
}

/*
 * The interval's energy to its owners. Attribution failing (out of memory) leaves all of it
 * unattributed: the node's totals stay whole.
 */
static int attribute(struct vw_workloads *w, const struct vw_zone_energy zones[VW_ZONE__COUNT])
{
	struct vw_attr_in in;
	int r = attr_input(w, zones, &in);

	if (r == 0)
		r = vw_attribute(&w->attr, &in, take_proc, w);
	if (r == 0)
		take_shares(w, &w->attr, zones);
	for (int z = 0; z < VW_ZONE__COUNT; z++) {
		if (!zones[z].present)
			continue;
		w->present[z] = true;
		if (r < 0) {
			w->totals.unattributed[z][M_ACTIVE] += zones[z].active_uj;
			w->totals.unattributed[z][M_IDLE] += zones[z].idle_uj;
		}
	}
	return r;
}

static void count_live(struct vw_workloads *w)
{
	for (size_t i = 0; i < w->n_conts; i++)
		w->conts[i].live = 0, w->conts[i].delta_ns = 0, w->conts[i].irq_ns = 0;
	for (size_t i = 0; i < w->n_pods; i++)
		w->pods[i].live = 0;
	for (size_t k = 0; k < w->n_vms; k++)
		w->vms[k].live = 0;
	for (size_t i = 0; i < w->n_procs; i++) {
		struct wl_proc *p = &w->procs[i];

		if (p->vm >= 0 && (!p->terminated || p->delta_ns)) {
			w->vms[p->vm].live++;
			w->vms[p->vm].cpu_ns += p->delta_ns + p->irq_ns;
		}

		if (p->container < 0)
			continue;
		w->conts[p->container].delta_ns += p->delta_ns;
		w->conts[p->container].irq_ns += p->irq_ns;
		/* A process that ran this interval counts, even if it has just exited. */
		if (!p->terminated || p->delta_ns)
			w->conts[p->container].live++;
	}
	for (size_t i = 0; i < w->n_conts; i++) {
		struct wl_container *c = &w->conts[i];

		/* The kernel's total where it has one: tasks never seen alive ran in it too. */
		if (c->cg_valid) {
			c->delta_ns = c->cg_delta_ns;
			c->irq_ns = c->cg_irq_ns;
			c->live += c->cg_delta_ns + c->cg_irq_ns > 0;
		}
		c->cpu_ns += c->delta_ns + c->irq_ns; /* the kernel's figure, exported */
		if (c->live && c->pod >= 0)
			w->pods[c->pod].live++;
	}
}

static void clear_acc(struct acc *z, size_t n)
{
	for (size_t i = 0; i < n; i++)
		z[i].interval[M_ACTIVE] = z[i].interval[M_IDLE] = 0;
}

/* The last interval's shares cleared; each process's deltas too, and not seen yet (one pass
 * over the table for what merge_snapshot() and the path without a snapshot reset). */
static void clear_intervals(struct vw_workloads *w)
{
	for (size_t i = 0; i < w->n_procs; i++) {
		struct wl_proc *p = &w->procs[i];

		if (p->shared)
			clear_acc(p->z, p->n_z);
		p->shared = false;
		p->ended_now = false;
		p->delta_ns = 0;
		p->irq_ns = 0;
		clear_counters(p);
		p->seen = false;
	}
	for (size_t i = 0; i < w->n_conts; i++)
		clear_acc(w->conts[i].z, VW_ZONE__COUNT);
	for (size_t i = 0; i < w->n_pods; i++)
		clear_acc(w->pods[i].z, VW_ZONE__COUNT);
	for (size_t k = 0; k < w->n_vms; k++)
		clear_acc(w->vms[k].z, VW_ZONE__COUNT);
}

/* Containers with no live process, and pods with no live container, are terminated. */
static void settle_states(struct vw_workloads *w)
{
	for (size_t i = 0; i < w->n_conts; i++)
		if (!w->conts[i].terminated && w->conts[i].live == 0) {
			w->conts[i].terminated = true;
			w->conts[i].final_gen = 0;
		}
	for (size_t i = 0; i < w->n_pods; i++)
		if (!w->pods[i].terminated && w->pods[i].live == 0) {
			w->pods[i].terminated = true;
			w->pods[i].final_gen = 0;
		}
	for (size_t k = 0; k < w->n_vms; k++)
		if (!w->vms[k].terminated && !w->vms[k].listed) {
			w->vms[k].terminated = true;
			w->vms[k].final_gen = 0;
		}
}

/* A cumulative kernel total's step since the last reading, no more than every CPU can run in
 * dt plus a second of slack for late readings (a cgroup re-created under a known path starts
 * again from zero: its first value). */
static uint64_t cg_step(uint64_t *last, bool *have, uint64_t now, uint64_t cap)
{
	uint64_t d = !*have ? 0 : now >= *last ? now - *last : now;

	*last = now;
	*have = true;
	return VW_MIN(d, cap);
}

/* A container's usage file closed: its slot among the VW_WL_CG_KEPT free for another. */
void vw_wl_cont_unkeep(struct wl_container *c)
{
	vw_kept_file_close(&c->cg_file);
	c->cg_kept = false;
}

/*
 * The interrupt time the kernel counted in a container's cgroup, or below it, because its
 * tasks were the ones interrupted (the bpf accountant's, cpu_time.bpf.c): not its work, taken
 * out of its usage, so it stays in the root's total beyond the containers (the uncontained
 * rest). paths[i]: snap->irq[i]'s cgroup, NULL where unknown (looked up once an interval:
 * the entries are the cgroups interrupted in it, a compare per container and entry).
 */
static uint64_t cont_irq_ns(const struct wl_container *c, const struct vw_cpu_snapshot *snap,
			    const char *const *paths)
{
	size_t len = strlen(c->cg_path);
	uint64_t ns = 0;

	for (size_t i = 0; i < snap->n_irq; i++)
		if (paths[i] && strncmp(paths[i], c->cg_path, len) == 0 &&
		    (paths[i][len] == '\0' || paths[i][len] == '/'))
			ns += snap->irq[i].ns;
	return ns;
}

/* snap's interrupt entries' cgroup paths (cont_irq_ns()), or NULL: none, or no memory (then
 * no container's usage is reduced this interval). */
static const char **irq_paths(const struct vw_workloads *w, const struct vw_cpu_snapshot *snap)
{
	const char **paths;

	if (!snap || !snap->n_irq || !(paths = calloc(snap->n_irq, sizeof(*paths))))
		return NULL;
	for (size_t i = 0; i < snap->n_irq; i++)
		if (vw_cgroupfs_path(w->o.cgroupfs, snap->irq[i].cgroup_id, &paths[i]) < 0)
			paths[i] = NULL;
	return paths;
}

/*
 * Read the kernel's CPU-time totals: each live container's cgroup and the root. The first
 * VW_WL_CG_KEPT live containers to come keep their file open; one that ends or whose cgroup
 * goes gives its slot back (taken by another at the next interval).
 */
static void sample_cgroups(struct vw_workloads *w, const struct vw_cpu_snapshot *snap,
			   uint64_t dt_ns)
{
	uint64_t cap = dt_ns ? (dt_ns + VW_NSEC_PER_SEC) * VW_MAX(w->o.host_cpus, 1u) : UINT64_MAX, ns;
	_cleanup_free_ const char **paths = NULL;
	size_t kept = 0;

	w->root_valid = false;
	if (!w->o.cgroupfs)
		return;
	paths = irq_paths(w, snap);
	if (vw_cgroupfs_usage_kept(w->o.cgroupfs, &w->root_cg_file, "", &ns) == 0) {
		w->root_delta_ns = cg_step(&w->root_last_ns, &w->root_have_last, ns, cap);
		w->root_valid = w->baseline_taken;
	}
	for (size_t i = 0; i < w->n_conts; i++)
		kept += w->conts[i].cg_kept;
	for (size_t i = 0; i < w->n_conts; i++) {
		struct wl_container *c = &w->conts[i];
		bool had;

		c->cg_valid = false;
		c->cg_delta_ns = 0;
		c->cg_irq_ns = 0;
		if (!c->cg_path || c->terminated) {
			kept -= c->cg_kept;
			vw_wl_cont_unkeep(c);
			continue;
		}
		if (!c->cg_kept && kept < VW_WL_CG_KEPT) {
			c->cg_kept = true;
			kept++;
		}
		if (vw_cgroupfs_usage_kept(w->o.cgroupfs, c->cg_kept ? &c->cg_file : NULL, c->cg_path,
					   &ns) < 0) {
			free(c->cg_path); /* gone: its processes' own time is all there is now */
			c->cg_path = NULL;
			kept -= c->cg_kept;
			vw_wl_cont_unkeep(c);
			continue;
		}
		had = c->cg_have_last;
		c->cg_delta_ns = cg_step(&c->cg_last_ns, &c->cg_have_last, ns, cap);
		/* A first reading of a cgroup that took over a container (settle_claim) is its
		 * baseline: not valid, the container's processes count for it this once. */
		c->cg_valid = w->baseline_taken && had;
		if (c->cg_valid && paths) {
			c->cg_irq_ns = VW_MIN(cont_irq_ns(c, snap, paths), c->cg_delta_ns);
			c->cg_delta_ns -= c->cg_irq_ns;
		}
	}
}

/* Metadata that arrives late is applied: containers without a pod look again each interval
 * (a pod list that arrived after the container was first seen, a pod created later). */
static void resolve_late_pods(struct vw_workloads *w)
{
	if (!w->o.podmeta)
		return;
	for (size_t i = 0; i < w->n_conts; i++)
		if (!w->conts[i].terminated && w->conts[i].pod < 0)
			w->conts[i].pod = resolve_pod(w, &w->conts[i]);
}

int vw_workloads_update(struct vw_workloads *w, const struct vw_cpu_snapshot *snap,
			const struct vw_zone_energy zones[VW_ZONE__COUNT], uint64_t dt_ns)
{
	int r = 0;

	w->rescanned = false;
	/* First: an update that stops early leaves no earlier interval to be given again (the
	 * groups' intervals go to their guests' publisher, which adds them up). */
	clear_intervals(w);
	if (w->o.cgroupfs && !w->baseline_taken && vw_cgroupfs_scans(w->o.cgroupfs) == 0)
		(void)vw_cgroupfs_scan(w->o.cgroupfs);
	w->listed = false;
	if (snap) {
		r = merge_snapshot(w, snap);
		if (r < 0)
			return r;
		reap_vanished(w);
		mark_superseded(w);
		w->listed = true;
	} else {
		/* No CPU snapshot this interval: nobody ran, as far as we know (clear_intervals()
		 * reset every delta); nobody ended. */
	}
	resolve_late_pods(w);
	sample_cgroups(w, snap, dt_ns);
	if (!w->baseline_taken) {
		w->baseline_taken = true;
		return 0;
	}
	map_vms(w);
	count_live(w);
	w->dt_ns = dt_ns;
	r = zone_slots(w, zones);
	if (r < 0)
		return r;
	r = attribute(w, zones);
	settle_states(w);
	return r;
}

int vw_workloads_interval(struct vw_workloads *w, const struct vw_cpu_accountant *cpu,
			  const struct vw_zone_energy zones[VW_ZONE__COUNT], uint64_t dt_ns,
			  struct vw_complaint *complaint)
{
	struct vw_cpu_snapshot snap = { 0 };
	int r = cpu->ops->read(cpu->state, &snap);

	if (r < 0)
		vw_complain(complaint, VW_LOG_WARN, "cpu: %s snapshot failed: %s", cpu->ops->name,
			    strerror(-r));
	else
		vw_release(complaint, VW_LOG_INFO, "cpu: %s snapshots work again", cpu->ops->name);
	r = vw_workloads_update(w, r < 0 ? NULL : &snap, zones, dt_ns);
	if (r < 0)
		vw_complain(complaint, VW_LOG_WARN, "workloads: update failed: %s", strerror(-r));
	return r;
}

void vw_workloads_totals(const struct vw_workloads *w, struct vw_workloads_totals *ret)
{
	*ret = w->totals;
}

struct exe_at {
	const struct vw_workloads *w;
	struct wl_proc *p;
};

static const char *exe_of(void *at)
{
	struct exe_at *a = at;

	return a->p->kernel ? NULL : vw_wl_proc_exe(a->w, a->p);
}

int vw_workloads_each_process(struct vw_workloads *w,
			      void (*each)(void *ctx, uint32_t tgid, uint64_t start_time,
					   const char *comm, const char *(*exe)(void *at),
					   void *at),
			      void *ctx)
{
	if (!w->listed)
		return -EAGAIN;
	for (size_t i = 0; i < w->n_procs; i++) {
		struct exe_at a = { w, &w->procs[i] };

		if (!a.p->terminated)
			each(ctx, a.p->tgid, a.p->start_time, a.p->comm, exe_of, &a);
	}
	return 0;
}

size_t vw_workloads_n_processes(const struct vw_workloads *w)
{
	return w->n_procs;
}

size_t vw_workloads_n_groups(const struct vw_workloads *w)
{
	size_t n = 0;

	for (size_t k = 0; k < w->n_vms; k++)
		n += w->vms[k].listed;
	return n;
}

void vw_workloads_table_stats(const struct vw_workloads *w,
			      struct vw_table_stat tables[VW_TABLE__COUNT])
{
	const size_t n[] = { [VW_TABLE_PROCESS] = w->n_procs,
			     [VW_TABLE_CONTAINER] = w->n_conts,
			     [VW_TABLE_POD] = w->n_pods,
			     [VW_TABLE_VM] = w->n_vms };
	const bool on[] = { [VW_TABLE_PROCESS] = true,
			    [VW_TABLE_CONTAINER] = true,
			    [VW_TABLE_POD] = w->o.pods && w->o.podmeta,
			    [VW_TABLE_VM] = w->o.vms };

	for (size_t t = 0; t < ARRAY_SIZE(n); t++)
		tables[t] = (struct vw_table_stat){ .present = on[t], .entries = n[t],
						    .evictions = w->evictions[t] };
}

/* SPDX-License-Identifier: Apache-2.0 */
/* GPU process IDs across PID namespaces (pidns.h). */
#include "pidns.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "log.h"
#include "macro.h"

#define PF_KTHREAD 0x00200000u /* include/linux/sched.h */
#define MAX_NS_LEVELS 33       /* MAX_PID_NS_LEVEL (32) below the initial one, and it */
#define STATUS_PREFIX 4096     /* NSpid comes before the long lines (after Groups) */

/* A pid namespace link, "pid:[N]", at rel: its inode. -errno, -EINVAL when not that form. */
static int read_ns(int procfs_fd, const char *rel, uint64_t *ret)
{
	char buf[64], *end;
	ssize_t n = readlinkat(procfs_fd, rel, buf, sizeof(buf) - 1);
	unsigned long long ino;

	if (n < 0)
		return -errno;
	buf[n] = '\0';
	if (strncmp(buf, "pid:[", 5) != 0 || buf[5] < '0' || buf[5] > '9')
		return -EINVAL;
	errno = 0;
	ino = strtoull(buf + 5, &end, 10);
	if (errno || strcmp(end, "]") != 0 || ino == 0)
		return -EINVAL;
	*ret = ino;
	return 0;
}

/*
 * The NSpid line of <rel> (a status file): its first and last entries and their count.
 * -ENODATA without one (a kernel before 4.1), -EINVAL when malformed, -errno from reading.
 */
static int read_nspid(int procfs_fd, const char *rel, uint32_t *ret_first, uint32_t *ret_last,
		      unsigned *ret_count)
{
	char buf[STATUS_PREFIX];
	const char *p;
	unsigned count = 0;
	int r = vw_read_prefix_at(procfs_fd, rel, buf, sizeof(buf), NULL);

	if (r < 0)
		return r;
	p = strncmp(buf, "NSpid:", 6) == 0 ? buf : strstr(buf, "\nNSpid:");
	if (!p)
		return -ENODATA;
	p = strchr(p + 1, ':') + 1;
	for (;;) {
		char *end;
		unsigned long v;

		while (*p == '\t' || *p == ' ')
			p++;
		if (*p == '\n' || *p == '\0')
			break;
		if (*p < '0' || *p > '9' || ++count > MAX_NS_LEVELS)
			return -EINVAL;
		errno = 0;
		v = strtoul(p, &end, 10);
		if (errno || v > INT32_MAX || (*end != '\t' && *end != ' ' && *end != '\n'))
			return -EINVAL;
		if (count == 1)
			*ret_first = (uint32_t)v;
		*ret_last = (uint32_t)v;
		p = end;
	}
	if (!count || *p != '\n') /* cut off by the prefix: not trusted */
		return -EINVAL;
	*ret_count = count;
	return 0;
}

/* Whether PID 2 of the procfs is a kernel thread: 1, 0, or -errno. */
static int kthreadd_seen(int procfs_fd)
{
	char buf[1024];
	const char *p;
	unsigned long flags = 0;
	int r = vw_read_prefix_at(procfs_fd, "2/stat", buf, sizeof(buf), NULL);

	if (r < 0)
		return r;
	p = strrchr(buf, ')');
	/* state, ppid, pgrp, session, tty_nr, tpgid, then flags */
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %lu", &flags) != 1)
		return -EINVAL;
	return (flags & PF_KTHREAD) != 0;
}

/* Whether the procfs's namespace is the initial one: 1, 0, or -errno (cannot tell). */
static int procfs_is_initial(struct vw_pidns *ns, int procfs_fd, bool self_nspid)
{
	int r = read_ns(procfs_fd, "1/ns/pid", &ns->procfs_ino), k;

	if (r == 0) {
		snprintf(ns->how, sizeof(ns->how), "1/ns/pid is pid:[%llu]",
			 (unsigned long long)ns->procfs_ino);
		return ns->procfs_ino == VW_PIDNS_INIT_INO;
	}
	ns->procfs_ino = 0;
	if (self_nspid && ns->daemon_level == 0 && ns->daemon_ino) {
		ns->procfs_ino = ns->daemon_ino;
		snprintf(ns->how, sizeof(ns->how),
			 "1/ns/pid unreadable (%s); the daemon lives in it, pid:[%llu]",
			 strerror(-r), (unsigned long long)ns->daemon_ino);
		return ns->daemon_ino == VW_PIDNS_INIT_INO;
	}
	k = kthreadd_seen(procfs_fd);
	if (k >= 0)
		snprintf(ns->how, sizeof(ns->how),
			 "1/ns/pid unreadable (%s); PID 2 is %sa kernel thread", strerror(-r),
			 k ? "" : "not ");
	else
		snprintf(ns->how, sizeof(ns->how), "1/ns/pid and 2/stat unreadable (%s, %s)",
			 strerror(-r), strerror(-k));
	return k;
}

int vw_pidns_probe(int procfs_fd, struct vw_pidns *ret)
{
	uint32_t pid = 0, last = 0;
	unsigned count = 0;
	int self_r, initial;

	if (!ret)
		return -EINVAL;
	memset(ret, 0, sizeof(*ret));
	ret->mode = VW_PIDNS_UNKNOWN;
	if (procfs_fd < 0)
		return -EINVAL;
	self_r = read_nspid(procfs_fd, "self/status", &pid, &last, &count);
	if (self_r == -ENOENT) {
		/* The initial namespace's procfs shows every process; a procfs always shows its
		 * namespace's init. */
		if (faccessat(procfs_fd, "1/status", F_OK, 0) == 0) {
			ret->mode = VW_PIDNS_CHILD_PROCFS;
			snprintf(ret->how, sizeof(ret->how),
				 "the daemon is not among its processes");
			(void)read_ns(procfs_fd, "1/ns/pid", &ret->procfs_ino);
		} else {
			snprintf(ret->how, sizeof(ret->how), "neither self nor 1 in it");
		}
		return 0;
	}
	if (self_r == 0) {
		ret->daemon_pid = pid;
		ret->daemon_level = count - 1;
	}
	(void)read_ns(procfs_fd, "self/ns/pid", &ret->daemon_ino);
	initial = procfs_is_initial(ret, procfs_fd, self_r == 0);
	if (self_r < 0 && initial == 1) { /* no NSpid: the two links, if both were read */
		if (!ret->daemon_ino || !ret->procfs_ino) {
			snprintf(ret->how + strlen(ret->how), sizeof(ret->how) - strlen(ret->how),
				 "; the daemon's own namespace unknown");
			return 0;
		}
		ret->daemon_level = ret->daemon_ino != ret->procfs_ino;
	}
	if (initial < 0)
		ret->mode = VW_PIDNS_UNKNOWN;
	else if (!initial)
		ret->mode = VW_PIDNS_CHILD_PROCFS;
	else
		ret->mode = ret->daemon_level ? VW_PIDNS_DAEMON_IN_CHILD : VW_PIDNS_SAME;
	return 0;
}

void vw_pidns_fini(struct vw_pidns *ns)
{
	if (!ns)
		return;
	free(ns->cache);
	ns->cache = NULL;
	ns->n_cache = 0;
}

const char *vw_pidns_mode_name(enum vw_pidns_mode mode)
{
	static const char *const names[] = {
		[VW_PIDNS_SAME] = "same",
		[VW_PIDNS_CHILD_PROCFS] = "child-procfs",
		[VW_PIDNS_DAEMON_IN_CHILD] = "daemon-in-child",
		[VW_PIDNS_UNKNOWN] = "unknown",
	};

	return (size_t)mode < ARRAY_SIZE(names) ? names[mode] : "?";
}

void vw_pidns_log_gpu(const struct vw_pidns *ns, const char *procfs)
{
	switch (ns->mode) {
	case VW_PIDNS_SAME:
		vw_debug("gpu: %s is the host's PID namespace, as is virtwatt's (%s): GPU process "
			 "IDs are used as given", procfs, ns->how);
		break;
	case VW_PIDNS_CHILD_PROCFS:
		vw_warn("gpu: %s shows a child PID namespace, not the host's (%s): the GPU driver "
			"gives the host's process IDs, which name no process there or the wrong "
			"one, so GPU energy may stay the node's; run with hostPID: true, or mount "
			"the host's /proc and pass it as --host.procfs",
			procfs, ns->how);
		break;
	case VW_PIDNS_DAEMON_IN_CHILD:
		vw_info("gpu: %s is the host's PID namespace and virtwatt runs in a child one, %u "
			"level%s down (%s): GPU process IDs given in virtwatt's namespace are "
			"translated to the host's (NSpid), others taken as the host's", procfs,
			ns->daemon_level, ns->daemon_level == 1 ? "" : "s", ns->how);
		break;
	default:
		vw_info("gpu: cannot tell %s's PID namespace (%s): GPU process IDs are taken to be "
			"its own", procfs, ns->how);
	}
}

void vw_pidns_next_interval(struct vw_pidns *ns)
{
	ns->scanned = false;
}

/* ---- The map ---- */

static int cmp_entry(const void *a, const void *b)
{
	const struct vw_pidns_entry *x = a, *y = b;

	return x->ns_pid < y->ns_pid ? -1 : x->ns_pid > y->ns_pid;
}

static const struct vw_pidns_entry *lookup(const struct vw_pidns *ns, uint32_t pid)
{
	struct vw_pidns_entry key = { .ns_pid = pid };

	return ns->n_cache ? bsearch(&key, ns->cache, ns->n_cache, sizeof(key), cmp_entry) : NULL;
}

/*
 * Procfs process pid as a process of the daemon's namespace: 1 with *ret_ns_pid, 0 not one
 * (another level, another namespace, gone), 2 one whose namespace could not be checked.
 */
static int in_daemon_ns(const struct vw_pidns *ns, int procfs_fd, uint32_t pid,
			uint32_t *ret_ns_pid)
{
	char rel[48];
	uint32_t first, last;
	unsigned count;
	uint64_t ino;
	int r;

	snprintf(rel, sizeof(rel), "%u/status", pid);
	if (read_nspid(procfs_fd, rel, &first, &last, &count) < 0 ||
	    count != ns->daemon_level + 1 || first != pid)
		return 0;
	*ret_ns_pid = last;
	snprintf(rel, sizeof(rel), "%u/ns/pid", pid);
	r = read_ns(procfs_fd, rel, &ino);
	if (r == 0 && ns->daemon_ino)
		return ino == ns->daemon_ino;
	return r == -ENOENT ? 0 : 2;
}

/* A cache entry still names the same process: its NSpid ends in ns_pid at the daemon's level. */
static bool still_valid(const struct vw_pidns *ns, int procfs_fd,
			const struct vw_pidns_entry *e)
{
	char rel[32];
	uint32_t first, last;
	unsigned count;

	snprintf(rel, sizeof(rel), "%u/status", e->procfs_pid);
	return read_nspid(procfs_fd, rel, &first, &last, &count) == 0 &&
	       count == ns->daemon_level + 1 && last == e->ns_pid && first == e->procfs_pid;
}

/*
 * Sorted entries, one per ns_pid: of several processes claiming one (the same PID in sibling
 * namespaces at the daemon's level), the one whose link matched the daemon's; none if that is
 * not exactly one.
 */
static size_t drop_ambiguous(struct vw_pidns_entry *v, size_t n)
{
	size_t o = 0;

	for (size_t i = 0; i < n;) {
		size_t j = i, verified = 0, pick = i;

		for (; j < n && v[j].ns_pid == v[i].ns_pid; j++)
			if (v[j].verified) {
				verified++;
				pick = j;
			}
		if (j == i + 1 || verified == 1)
			v[o++] = v[pick];
		i = j;
	}
	return o;
}

/* Every process of the daemon's namespace, into the cache. */
static int scan(struct vw_pidns *ns, int procfs_fd)
{
	_cleanup_free_ uint32_t *pids = NULL;
	struct vw_pidns_entry *v;
	size_t n = 0, k = 0;
	int r = vw_dir_numbers(procfs_fd, ".", vw_parse_pid, &pids, &n);

	if (r < 0)
		return r;
	v = malloc(VW_MAX(VW_MIN(n, (size_t)VW_PIDNS_MAX_PROCS), (size_t)1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n && k < VW_PIDNS_MAX_PROCS; i++) {
		uint32_t ns_pid;
		int in = in_daemon_ns(ns, procfs_fd, pids[i], &ns_pid);

		if (in > 0)
			v[k++] = (struct vw_pidns_entry){ .ns_pid = ns_pid,
							      .procfs_pid = pids[i],
							      .verified = in == 1 };
	}
	qsort(v, k, sizeof(*v), cmp_entry);
	free(ns->cache);
	ns->cache = v;
	ns->n_cache = drop_ambiguous(v, k);
	ns->scans++;
	return 0;
}

static bool missed(const struct vw_pidns *ns, uint32_t pid)
{
	for (size_t i = 0; i < ns->n_misses; i++)
		if (ns->misses[i] == pid)
			return true;
	return false;
}

/* A PID a scan made after it was listed did not find: remembered, the oldest forgotten. */
static void remember_miss(struct vw_pidns *ns, uint32_t pid)
{
	if (missed(ns, pid))
		return;
	ns->misses[ns->next_miss] = pid;
	ns->next_miss = (ns->next_miss + 1) % VW_PIDNS_MAX_MISSES;
	if (ns->n_misses < VW_PIDNS_MAX_MISSES)
		ns->n_misses++;
}

/* The cache's translation of pid, checked against the procfs now: 0 when none. */
static uint32_t cached(const struct vw_pidns *ns, int procfs_fd, uint32_t pid)
{
	const struct vw_pidns_entry *e = lookup(ns, pid);

	return e && still_valid(ns, procfs_fd, e) ? e->procfs_pid : 0;
}

int vw_pidns_map(struct vw_pidns *ns, int procfs_fd, uint32_t *pids, size_t n)
{
	bool fresh = false; /* scanned in this call: after the PIDs were listed */
	int mapped = 0;

	if (!ns || (n && !pids))
		return -EINVAL;
	if (ns->mode != VW_PIDNS_DAEMON_IN_CHILD)
		return 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t to = pids[i] ? cached(ns, procfs_fd, pids[i]) : 0;

		if (!pids[i])
			continue;
		if (!to && !ns->scanned && !missed(ns, pids[i])) {
			int r = scan(ns, procfs_fd);

			if (r < 0)
				return r;
			ns->scanned = fresh = true;
			to = cached(ns, procfs_fd, pids[i]);
		}
		if (to) {
			pids[i] = to;
			mapped++;
		} else if (fresh) {
			remember_miss(ns, pids[i]);
		}
	}
	return mapped;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PID namespaces: the procfs's and the daemon's. The workload registry knows processes by the
 * PIDs of the procfs it reads (--host.procfs, an injected root); the bpf accountant by the
 * initial namespace's (the host's); NVML lists a GPU's processes by PID as the driver sees
 * them, the host's too, though newer drivers may give them in the caller's namespace. This
 * module says whether they agree (the daemon warns when its procfs is a child namespace's,
 * where every per-process figure would be wrong, and says what that means for GPU process IDs)
 * and, where the daemon runs in a child namespace of the procfs's (a pod without hostPID that
 * mounts the host's /proc), translates PIDs given in the daemon's namespace into the procfs's.
 *
 * Pure reads below the procfs root, never /proc itself: <procfs>/1/ns/pid (the procfs's
 * namespace: PID 1 of a procfs is its namespace's init), <procfs>/self/ns/pid and self/status
 * (the daemon's: self names the reader as that procfs numbers it, and does not resolve when the
 * reader is outside its namespace), <procfs>/2/stat (kthreadd: kernel threads live in the
 * initial namespace only), and for the map <procfs>/<pid>/status and <pid>/ns/pid.
 *
 * /proc/PID/status's NSpid lists a process's PID in each namespace from the procfs's down to
 * its own: the first entry is its PID in the procfs, the last its PID in its own namespace, and
 * the count tells how many levels below the procfs's namespace it lives.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* PROC_PID_INIT_INO (include/linux/proc_ns.h): the initial PID namespace's inode, "pid:[N]",
 * a fixed kernel constant since Linux 3.8. */
#define VW_PIDNS_INIT_INO 0xEFFFFFFCu
/* Processes of the daemon's namespace the map remembers; more are not translated. */
#define VW_PIDNS_MAX_PROCS 4096
/* PIDs a scan made after they were listed did not find (the host's own, from a driver that
 * does not translate): they do not make the map scan again; the oldest are forgotten. */
#define VW_PIDNS_MAX_MISSES 64

enum vw_pidns_mode {
	/* The procfs is the initial namespace's, and the daemon runs in it: PIDs are the same. */
	VW_PIDNS_SAME,
	/* The procfs shows a child namespace (a container's own /proc): the driver's PIDs are the
	 * host's and name no process there, or the wrong one. Identity is kept (a driver that gives
	 * PIDs in the caller's namespace still matches where the daemon shares it); the fix is
	 * hostPID, or the host's /proc mounted and passed as --host.procfs. */
	VW_PIDNS_CHILD_PROCFS,
	/* The procfs is the initial namespace's, the daemon runs in a child namespace: a PID that
	 * names a process of the daemon's namespace there is translated to its PID in the procfs;
	 * any other is taken to be the host's already (drivers that do not translate). */
	VW_PIDNS_DAEMON_IN_CHILD,
	/* Neither namespace could be told (links and status unreadable): identity assumed. */
	VW_PIDNS_UNKNOWN,
};

struct vw_pidns_entry {
	uint32_t ns_pid;     /* in the daemon's namespace */
	uint32_t procfs_pid; /* in the procfs's */
	bool verified;       /* its ns/pid link read equal to the daemon's */
};

struct vw_pidns {
	enum vw_pidns_mode mode;
	uint64_t procfs_ino; /* the procfs's namespace inode; 0 unknown */
	uint64_t daemon_ino; /* the daemon's; 0 unknown */
	uint32_t daemon_pid; /* the daemon's PID in the procfs; 0: not in it */
	unsigned daemon_level; /* levels below the procfs's namespace the daemon's lies */
	char how[160];       /* what decided the mode, for the log line */
	/* The map's state (DAEMON_IN_CHILD), private: the daemon namespace's processes sorted by
	 * ns_pid, the last scan's misses, and whether this interval has scanned. */
	struct vw_pidns_entry *cache;
	size_t n_cache;
	uint32_t misses[VW_PIDNS_MAX_MISSES];
	size_t n_misses, next_miss;
	bool scanned;
	uint64_t scans; /* so far, for tests */
};

/*
 * Decide *ret's mode from the procfs at procfs_fd. The procfs's namespace is the initial one
 * when <procfs>/1/ns/pid reads pid:[VW_PIDNS_INIT_INO]; where that link cannot be read
 * (ptrace rules: an unprivileged reader, or a PID 1 with capabilities the reader lacks), by
 * <procfs>/self/ns/pid when the daemon lives in it, else by kthreadd (PID 2 a kernel thread).
 * The daemon is in a child namespace when its NSpid has more than one entry (or, without NSpid,
 * when its link differs from PID 1's). 0, or -EINVAL for bad arguments; unreadable files give
 * VW_PIDNS_UNKNOWN, not an error. Call vw_pidns_fini() when done.
 */
int vw_pidns_probe(int procfs_fd, struct vw_pidns *ret);
void vw_pidns_fini(struct vw_pidns *ns);

/* "same", "child-procfs", "daemon-in-child", "unknown". */
const char *vw_pidns_mode_name(enum vw_pidns_mode mode);
/* One line for the start-up log on what the mode means for GPU process IDs, at the level the
 * mode deserves; CHILD_PROCFS names the fix. procfs: how the operator named it (--host.procfs).
 * (The CPU accountant's own warning is daemon_base.c's.) */
void vw_pidns_log_gpu(const struct vw_pidns *ns, const char *procfs);

/*
 * A new interval: the map may scan again (once) if a PID misses.
 */
void vw_pidns_next_interval(struct vw_pidns *ns);

/*
 * DAEMON_IN_CHILD: translate pids[0..n) in place from the daemon's namespace to the procfs's.
 * A PID found in the cache is checked first (its process's NSpid must still end in it at the
 * daemon's level); one that is not, or no longer, is looked up by a scan of the whole procfs
 * (every <pid>/status; <pid>/ns/pid must equal the daemon's where it can be read, and a PID
 * two unverifiable processes share is translated to neither), at most once per interval and
 * not for a PID a scan already missed (until a later scan, for another PID, finds it). What is
 * not found stays as given: the host's PID, from a driver that does not translate. 0 is left
 * alone. Other modes change nothing, and neither does a kernel without NSpid (before 4.1).
 * Returns how many were translated, or -errno (-ENOMEM; the procfs unlistable).
 */
int vw_pidns_map(struct vw_pidns *ns, int procfs_fd, uint32_t *pids, size_t n);

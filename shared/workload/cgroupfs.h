/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cgroup hierarchy that accounts CPU time: cgroup v1's cpuacct controller where it is mounted
 * (legacy and hybrid hosts), else the unified v2 hierarchy. Found below an injected sysfs root
 * (fs/cgroup/...), never at a fixed path. It gives:
 *   - a cgroup id's path: an id is the cgroup directory's inode number, which is the kernel's
 *     kernfs node id, what the BPF programs report for a task (see bpf/cpu_time.bpf.c);
 *   - a process's path in this hierarchy, from /proc/PID/cgroup;
 *   - a cgroup's cumulative CPU time (v1 cpuacct.usage in ns, v2 cpu.stat usage_usec), which
 *     counts every task that ever ran in it or below it, exited ones included.
 * Paths are relative to the hierarchy's root, without a leading '/': "" is the root.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fileio.h"
#include "selfstats.h"

struct vw_cgroupfs;

/* NULL with errno ENOENT when no usable hierarchy is mounted under the sysfs root. */
struct vw_cgroupfs *vw_cgroupfs_open(int sysfs_fd);
void vw_cgroupfs_free(struct vw_cgroupfs *cg);

/* true: the v1 cpuacct hierarchy (BPF must report that hierarchy's ids); false: v2. */
bool vw_cgroupfs_is_v1(const struct vw_cgroupfs *cg);
/* Where it is, relative to the sysfs root ("fs/cgroup/cpuacct", "fs/cgroup/unified", ...). */
const char *vw_cgroupfs_mount(const struct vw_cgroupfs *cg);

/*
 * Walk the hierarchy and learn every cgroup's id and path. Ids the previous walk saw but this
 * one does not (a cgroup removed in between) are kept until the next walk, so the processes
 * that ran in a just-removed cgroup can still be placed. At most VW_CGROUPFS_MAX cgroups: the
 * rest of a walk is counted as refused (their processes are placed from /proc/PID/cgroup).
 */
#define VW_CGROUPFS_MAX 65536u
int vw_cgroupfs_scan(struct vw_cgroupfs *cg);
/* The path of a cgroup id from the last walk: 0, or -ENOENT when unknown (walk again). The
 * string stays valid until the next walk. */
int vw_cgroupfs_path(const struct vw_cgroupfs *cg, uint64_t id, const char **ret_path);
/* A process's path in this hierarchy from <procfs>/PID/cgroup: 0, -ESRCH (gone), -ENOENT. */
int vw_cgroupfs_pid_path(const struct vw_cgroupfs *cg, int procfd, uint32_t pid, char *buf,
			 size_t size);
/* Cumulative CPU time of a cgroup and its descendants, in ns. -ENOENT: the cgroup is gone. */
int vw_cgroupfs_usage(const struct vw_cgroupfs *cg, const char *path, uint64_t *ret_ns);
/* The same through kf (fileio.h: its file kept open on a cgroup filesystem, one pread a read;
 * the same cgroup each call; NULL: opened, read and closed). */
int vw_cgroupfs_usage_kept(const struct vw_cgroupfs *cg, struct vw_kept_file *kf, const char *path,
			   uint64_t *ret_ns);

/* The parsers of the two (tests and fuzzing): the path in /proc/PID/cgroup text for the v1
 * cpuacct or the v2 hierarchy, and a v2 cpu.stat's usage_usec in ns. */
int vw_cgroupfs_parse_pid_path(bool v1, const char *text, char *buf, size_t size);
int vw_cgroupfs_parse_cpu_stat(const char *text, uint64_t *ret_ns);
/* For tests and logs: cgroups known, walks done. */
size_t vw_cgroupfs_count(const struct vw_cgroupfs *cg);
uint64_t vw_cgroupfs_scans(const struct vw_cgroupfs *cg);
/* Entries now, and cgroups refused at the cap over all walks (virtwatt_table_*{table="cgroup"}). */
void vw_cgroupfs_table_stat(const struct vw_cgroupfs *cg, struct vw_table_stat *ret);

/* SPDX-License-Identifier: Apache-2.0 */
/* /proc parsers with an injected root (--host.procfs): node CPU time and CPU inventory. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "fileio.h"

/* The aggregate "cpu" line of /proc/stat, in USER_HZ ticks. */
struct vw_cpu_stat {
	uint64_t user, nice, system, idle, iowait, irq, softirq, steal;
	unsigned ncpus; /* "cpuN" lines */
};

int vw_procfs_read_stat(int procfd, struct vw_cpu_stat *ret);
/* The same through a file kept open each interval (vw_kept_file: one pread on procfs). */
int vw_procfs_read_stat_kept(struct vw_kept_file *kf, int procfd, struct vw_cpu_stat *ret);
/* Parse the text of /proc/stat (for tests and fuzzing). */
int vw_procfs_parse_stat(const char *text, struct vw_cpu_stat *ret);

/*
 * Busy ticks between two samples: user + nice + system + irq + softirq. Steal is time the
 * hypervisor ran someone else, so it is neither busy nor idle here; iowait is idle. A counter
 * that went back (CPU hot-unplug) yields 0 for that field.
 */
uint64_t vw_cpu_stat_busy_delta(const struct vw_cpu_stat *prev, const struct vw_cpu_stat *cur);
uint64_t vw_cpu_stat_total_delta(const struct vw_cpu_stat *prev, const struct vw_cpu_stat *cur);
/* busy / (busy + idle + iowait) in [0, 1]; 0 when nothing elapsed. */
double vw_cpu_stat_usage(const struct vw_cpu_stat *prev, const struct vw_cpu_stat *cur);

/* One logical CPU from /proc/cpuinfo, as kepler_node_cpu_info labels it. */
struct vw_cpu_info {
	unsigned processor;
	char vendor_id[64];
	char model_name[128];
	char physical_id[16];
	char core_id[16];
	int family, model, stepping; /* x86's "cpu family", "model", "stepping"; -1 absent */
	long implementer, part;      /* Arm's "CPU implementer", "CPU part"; -1 absent */
};

/* malloc'd array in *ret (caller frees), count in *ret_n. */
int vw_procfs_read_cpuinfo(int procfd, struct vw_cpu_info **ret, size_t *ret_n);
int vw_procfs_parse_cpuinfo(const char *text, struct vw_cpu_info **ret, size_t *ret_n);

#define VW_COMM_LEN 16 /* TASK_COMM_LEN */

/* The fields of /proc/PID/stat the daemons use. */
struct vw_pid_stat {
	char comm[VW_COMM_LEN]; /* truncated to VW_COMM_LEN - 1 bytes, NUL-terminated */
	char state;             /* field 3 */
	uint32_t ppid;          /* field 4 */
	uint64_t utime, stime;  /* fields 14 and 15, ticks */
	uint64_t start;         /* field 22, ticks since boot */
};

/*
 * Parse the text of /proc/PID/stat as the kernel writes it (fs/proc/array.c): comm between the
 * first '(' and the last ')' (it may itself hold spaces, parentheses and newlines), then fields
 * each after one space; those read are unsigned decimals. By hand: sscanf took ~7,800
 * instructions a line. -ERANGE where a number read overflows (or utime, stime exceed
 * UINT64_MAX / 2), -EINVAL on anything else (cut short, a stray character or separator).
 */
int vw_procfs_parse_pid_stat_fields(const char *text, struct vw_pid_stat *ret);

/*
 * The number on the line "KEY:" of a /proc key-value file (PID/status, meminfo): the key matched
 * at a line's start only (a process's Name line holds its comm, escaped, and never matches
 * another key), then an unsigned decimal after blanks; *ret_end (optional) just past it.
 * -ENODATA: no such line, or no number there; -ERANGE: it overflows.
 */
int vw_procfs_field_u64(const char *text, const char *key, uint64_t *ret, const char **ret_end);
/* An unsigned decimal after blanks (spaces, tabs) at *p, *p moved past it; errors as above. */
int vw_procfs_parse_u64(const char **p, uint64_t *ret);

/* The same: comm, utime + stime and starttime. */
int vw_procfs_parse_pid_stat(const char *text, char comm[VW_COMM_LEN], uint64_t *ret_ticks,
			     uint64_t *ret_start);

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internals shared by the CPU accountants (cpu_bpf.c, cpu_procfs.c) and their tests: a growable
 * snapshot table and the double buffer that keeps each read's values monotonic and every exit
 * reported once. Not for the daemon.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpu_account.h"

/* Default map and table sizes when vw_cpu_env.max_procs is 0. */
#define VW_CPU_DEFAULT_MAX_PROCS 32768u

struct vw_cpu_table {
	struct vw_proc_cpu *procs;
	size_t n_procs, cap_procs;
	bool in_order; /* known sorted (set by a sort or by a builder that writes in order; an
			* append clears it): the next sort is skipped */
};

/* Append a zeroed process; NULL on ENOMEM. */
struct vw_proc_cpu *vw_cpu_table_new_proc(struct vw_cpu_table *t);
/* Room for n processes in all (n_procs unchanged); -ENOMEM. */
int vw_cpu_table_reserve(struct vw_cpu_table *t, size_t n);
/* Sort processes by (tgid, start_time); nothing to do where in_order says so. */
void vw_cpu_table_sort(struct vw_cpu_table *t);
/* In a sorted table (or its sorted first n entries). NULL when absent. */
const struct vw_proc_cpu *vw_cpu_table_find(const struct vw_cpu_table *t, uint32_t tgid,
					    uint64_t start_time);
const struct vw_proc_cpu *vw_cpu_table_find_n(const struct vw_cpu_table *t, size_t n,
					      uint32_t tgid, uint64_t start_time);
void vw_cpu_table_clear(struct vw_cpu_table *t);
void vw_cpu_table_free(struct vw_cpu_table *t);

/* This read's table and the previous one. */
struct vw_cpu_history {
	struct vw_cpu_table t[2];
	unsigned cur;
};

/* Start a read: the previous table becomes `prev`, the returned one is empty. */
struct vw_cpu_table *vw_cpu_history_begin(struct vw_cpu_history *h);
const struct vw_cpu_table *vw_cpu_history_prev(const struct vw_cpu_history *h);
/* A read failed: forget it, the previous table is `prev` again for the next one. */
void vw_cpu_history_abort(struct vw_cpu_history *h);
/*
 * End a read: sort, keep every process value >= what the previous read reported
 * for it (a racing in-flight slice can only make a read a little low, never let the daemon see
 * a counter go back), drop processes the previous read already reported exited, and point
 * *ret at the result.
 */
void vw_cpu_history_finish(struct vw_cpu_history *h, struct vw_cpu_snapshot *ret);
void vw_cpu_history_free(struct vw_cpu_history *h);

/* /proc/PID/stat starttime is in clock ticks; BPF sees ns. */
uint64_t vw_cpu_ns_per_tick(void);

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internals shared by the CPU accountants (cpu_bpf.c, cpu_procfs.c) and their tests: a growable
 * snapshot table and the history that keeps each read's values monotonic and every exit
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

/* What the next read needs of a process the previous read reported: enough to keep its CPU
 * time monotonic, its exit reported once, and the ghost check's clocks (cpu_ghost.c); 24 bytes
 * where a whole entry is 48. */
struct vw_proc_seen {
	uint32_t tgid;
	bool exited;
	uint8_t kind, quiet, unchecked;
	uint64_t start_time;
	uint64_t cpu_ns;
};
_Static_assert(sizeof(struct vw_proc_seen) == 24, "vw_proc_seen: half a vw_proc_cpu");

/* The previous read's processes, sorted by (tgid, start_time), in the order (and at the index)
 * of the snapshot it returned. */
struct vw_cpu_seen {
	const struct vw_proc_seen *procs;
	size_t n_procs;
};

const struct vw_proc_seen *vw_cpu_seen_find(struct vw_cpu_seen seen, uint32_t tgid,
					    uint64_t start_time);

/*
 * This read's table (after a finish, the snapshot returned: valid until the next begin) and
 * what the previous read reported, kept compact: one whole table, not two. keep_last (the
 * procfs accountant, which reports a process gone with its last values whole) keeps the
 * previous read's whole table too, in `last`.
 */
struct vw_cpu_history {
	struct vw_cpu_table cur;
	struct vw_cpu_table last; /* keep_last only */
	struct vw_proc_seen *seen;
	size_t n_seen, cap_seen;
	bool finished; /* cur holds a finished read: the next begin makes it the previous one */
	bool keep_last;
};

/* Start a read: the last finished one becomes the previous; the returned table is empty.
 * -ENOMEM (the history unchanged) where the compact copy cannot grow. */
int vw_cpu_history_begin(struct vw_cpu_history *h, struct vw_cpu_table **ret);
struct vw_cpu_seen vw_cpu_history_prev(const struct vw_cpu_history *h);
/* A read failed: forget it, the previous read stays the previous one for the next. */
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

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * --cpu.ran-walk=auto: whether the ran walk (bpf/cpu_walk.bpf.c) pays here, now. Its switch
 * marker runs on every context switch of every task; the full walk it saves costs the daemon
 * per task at every read. So the marker is attached while tasks clearly outnumber switches:
 * over a window of VW_RANWALK_EVERY reads, the full walks' cost (tasks x task_ns per read) is
 * set against the marker's (the window's context switches, /proc/stat's ctxt, x switch_ns).
 * On when the walks would cost at least twice the marker, off when they cost less than it:
 * between the two the mode stays as it is, so it does not flap. The decision is pure (here);
 * cpu_bpf.c reads the counts through the procfs root and attaches or detaches the marker.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Reads per decision. */
#define VW_RANWALK_EVERY 5u
/* What a read saves per task (thread) when it walks only what ran: the full walk ran 1.0-1.24 ms
 * for ~11,000 tasks (10,000 idle processes) in the kernel, and the daemon was 1.3-1.5 ms an
 * interval lighter with the ran walk (bench/README.md "walk only what ran", "2026-11-28:
 * autowalk"); the records' user-space work is per process in both. */
#define VW_RANWALK_TASK_NS 150u
/* The marker, per context switch: 45 ns with bpf_stats in a switch storm (hot caches: ~9-13 ns
 * its own, the rest the empty program's floor and bpf_stats' clock reads), 167-458 ns with
 * bpf_stats on a loaded 2-vCPU VM (bench/README.md "2026-11-28: autowalk"). 200: a loaded
 * machine's, so that auto errs towards leaving the switch path alone. */
#define VW_RANWALK_SWITCH_NS 200u

struct vw_ranwalk_costs {
	uint32_t task_ns;   /* a full walk's cost per task */
	uint32_t switch_ns; /* the marker's per context switch */
};

/* One window's evidence. */
struct vw_ranwalk_window {
	uint64_t task_reads; /* tasks each read would walk, summed over the window's reads */
	uint64_t switches;   /* context switches in the window (every CPU) */
};

/*
 * The mode after a window, given the mode during it (on: the marker attached): on when the
 * full walks cost at least twice the marker, off when less than it, else unchanged.
 */
bool vw_ranwalk_decide(const struct vw_ranwalk_costs *c, bool on,
		       const struct vw_ranwalk_window *w);

/* The auto mode's state across reads. */
struct vw_ranwalk_auto {
	struct vw_ranwalk_costs cost;
	bool on;          /* the marker is (to be) attached */
	bool primed;      /* ctxt0 holds the window's first count */
	uint32_t reads;   /* reads in this window */
	uint64_t ctxt0;   /* /proc/stat's ctxt at the window's start */
	uint64_t windows; /* decisions taken */
	uint64_t last_switches; /* the last window's context switches per read */
};

/* Off, with the default costs, waiting for its first count. */
void vw_ranwalk_auto_init(struct vw_ranwalk_auto *a);

/* One read done: true when the window is over and vw_ranwalk_auto_end() is due. */
bool vw_ranwalk_auto_tick(struct vw_ranwalk_auto *a);

/*
 * The window's end (or the first count, which only primes): ctxt is /proc/stat's count now,
 * tasks the tasks a read walks now. A count that went back (a counter reset) primes again.
 * Returns the mode from now on (a->on).
 */
bool vw_ranwalk_auto_end(struct vw_ranwalk_auto *a, uint64_t ctxt, uint64_t tasks);

/* /proc/stat's "ctxt N" line, or -ENOENT; /proc/loadavg's tasks (its fourth field's total,
 * "R/T"), or -EINVAL. */
int vw_ranwalk_parse_ctxt(const char *stat, size_t len, uint64_t *ret);
int vw_ranwalk_parse_tasks(const char *loadavg, uint64_t *ret);

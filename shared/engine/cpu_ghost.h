/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The bpf accountant's ghost check (cpu_bpf.c): which processes known only from their exited
 * threads are looked up in /proc this read, and what a lookup that finds them gone does to the
 * snapshot. Kept apart from the maps so that its cadence can be tested without BPF. Not for
 * the daemon.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "cpu_account.h"
#include "cpu_account_priv.h"
#include "macro.h"

/* A process known only from its exited threads for this many reads in a row, and for
 * VW_GHOST_QUIET_NS since the first of them (its frees' RCU grace period is long past), is
 * looked up, then again VW_GHOST_RECHECK reads after each lookup (a zombie whose parent has
 * not reaped it yet); at most the budget's lookups a read, those that waited longest first.
 * One found gone is not reported at once: a zombie reaped just before its recheck is gone
 * from /proc while its frees are still on their way (an RCU grace period after the reap, long
 * on a loaded machine). It is looked up again VW_GHOST_CONFIRM_READS reads and
 * VW_GHOST_CONFIRM_NS after (or VW_GHOST_UNCHECKED_MAX reads after, where reads come faster
 * than that can be counted), and reported exited only if still gone and still not freed. */
#define VW_GHOST_QUIET_READS 2u
#define VW_GHOST_QUIET_NS (500 * VW_NSEC_PER_MSEC)
#define VW_GHOST_RECHECK 4u
#define VW_GHOST_CONFIRM_READS 1u
#define VW_GHOST_CONFIRM_NS (1000 * VW_NSEC_PER_MSEC)
/* A mass kill's lost frees are all caught in one read (a lookup is one small /proc read:
 * ~10 us, 40 ms at the most, then nothing); beyond it, those left over come first next read. */
#define VW_GHOST_BUDGET 4096u
#define VW_GHOST_RING 256u /* read times kept: quiet counts up to 255 */
/* vw_proc_cpu.unchecked: the reads since the last lookup in its low bits (up to
 * VW_GHOST_UNCHECKED_MAX), and this bit where that lookup found the process gone. */
#define VW_GHOST_FOUND_GONE 0x80u
#define VW_GHOST_UNCHECKED_MAX 0x7fu

/*
 * Is the process p there? 1: gone, or its PID now another process's; 0: there (a zombie,
 * threads the read missed); -errno: cannot tell now (EMFILE, EACCES): a later round will.
 * Looks only: what is kept of a process goes in drop, once the check reports it exited.
 */
typedef int (*vw_ghost_gone_fn)(void *ctx, const struct vw_proc_cpu *p);
typedef void (*vw_ghost_drop_fn)(void *ctx, const struct vw_proc_cpu *p);

struct vw_ghost_check {
	unsigned budget; /* lookups a read: VW_GHOST_BUDGET (tests set fewer) */
	vw_ghost_gone_fn gone;
	vw_ghost_drop_fn drop; /* may be NULL */
	void *ctx;
	uint64_t n_reads;                 /* reads finished */
	uint64_t read_ns[VW_GHOST_RING]; /* the `now` of read k at [k % VW_GHOST_RING] */
	uint64_t ghosts;                  /* processes reported exited, since open */
};

/*
 * One read's check over its finished snapshot (prev: what the previous read reported, where each
 * process's clocks were left): sets each candidate's quiet and unchecked counts, looks up
 * those due, marks those found gone twice exited (and drops them). Returns how many it
 * marked (also added to g->ghosts).
 */
size_t vw_ghost_check_run(struct vw_ghost_check *g, struct vw_cpu_snapshot *snap,
			  struct vw_cpu_seen prev, uint64_t now_ns);

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The bpf accountant's sweep of its fallback hash (cpu_bpf.c; bpf/cpu_time.bpf.c, task_hash
 * under tp_btf): a thread's slot there lives from its exit (or the seed) to its free, whose
 * program deletes it. A free that never reaches the program (a 6.18 kernel drops some under
 * load) would keep the slot taken for good, and a hash full of them loses every later thread
 * that needs one (VW_BPF_STAT_TASK_FULL). So at each read the map's entries are given here:
 * each one whose thread /proc no longer has (looked up by its PID under the procfs root, which
 * cpu_bpf.c sweeps only where it is the host's PID namespace's and shows PID 1) is
 * looked up again at a later read, at least VW_SLOTS_CONFIRM_NS after, and only if its thread
 * is still gone and the entry still the same (its start time) is it deleted and counted. A slot
 * whose PID /proc shows is kept, whoever holds the PID now: a thread that reused it takes the
 * slot over at its own exit (hash_slot(): another start time), and its free deletes it. At most
 * the budget's lookups a read, in PID order from where the last read stopped, so that every
 * entry is looked up within ceil(n / budget) reads. Kept apart from the maps so that it can
 * be tested without BPF. Not for the daemon.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "macro.h"

/* A free late by this much has never been seen (4.2 s at the most, docs/attribution.md):
 * waiting costs nothing but a slot for that long. */
#define VW_SLOTS_CONFIRM_NS (30 * VW_NSEC_PER_SEC)
/* Lookups a read: a full hash (2,048) in 4 reads, ~1 us each; a full hash's whole sweep
 * 1.7-3.9 ms a read in the ASan build on 2 shared CPUs (test_slots_full_recovers, timed). */
#define VW_SLOTS_BUDGET 512u

/* One entry of the hash as a read found it. */
struct vw_slot {
	uint32_t pid;
	uint64_t start_ns; /* vw_bpf_task.start_ns: the thread's identity with the PID */
};

/*
 * Is thread pid there? 1: gone (no such PID); 0: there (that thread, or another one that
 * reused the PID); -errno: cannot tell now. Looks only.
 */
typedef int (*vw_slot_gone_fn)(void *ctx, uint32_t pid);
/* Delete the entry if it is still s (the same start time): 0 deleted, -errno not. */
typedef int (*vw_slot_delete_fn)(void *ctx, const struct vw_slot *s);

struct vw_slot_cand; /* cpu_slots.c: an entry found gone, waiting to be confirmed */

struct vw_slot_sweep {
	unsigned budget;     /* lookups a read: VW_SLOTS_BUDGET (tests set others) */
	uint64_t confirm_ns; /* VW_SLOTS_CONFIRM_NS (tests set less) */
	vw_slot_gone_fn gone;
	vw_slot_delete_fn del;
	void *ctx;
	uint32_t cursor;     /* the PID looked up last: the next read starts after it */
	struct vw_slot_cand *cand, *next; /* found gone, in PID order; the next read's */
	size_t n_cand, cap_cand, n_next, cap_next;
	uint64_t removed;    /* entries deleted, since open */
};

/*
 * One read's sweep over the hash's n entries (sorted here by PID): looks up at most the budget's,
 * deletes those found gone twice, confirm_ns apart. Returns how many it deleted (also added to
 * w->removed), or -ENOMEM (nothing deleted is lost: the count is already in w->removed).
 */
int vw_slot_sweep_run(struct vw_slot_sweep *w, struct vw_slot *slots, size_t n, uint64_t now_ns);

void vw_slot_sweep_free(struct vw_slot_sweep *w);

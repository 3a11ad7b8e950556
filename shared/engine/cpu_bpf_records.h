/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The bpf accountant's record reader: what its maps and iterators hand over (bpf/cpu_time.h's
 * records, as bytes) made into a read's process table. Pure functions over buffers, kept apart
 * from the bpf(2) calls (cpu_bpf.c) so that they are fuzzed (tests/fuzz/fuzz_bpfrec.c) and
 * built where BPF is not. Not for the daemon.
 *
 * A read: each per-process map entry (vw_bpf_exits_emit(): as the exits ring told it) through
 * vw_bpf_rec_add_proc(), then the live records
 * through vw_bpf_rec_finish(): the table is then sorted by (tgid, start time), one entry a
 * process, every value counted from open (the bases subtracted).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpu_account_priv.h"

/* A process that was running at open: its threads' runtime then, left out of every read. */
struct vw_bpf_base {
	uint32_t tgid;
	uint64_t start_time; /* ticks, as vw_proc_cpu */
	uint64_t ns;         /* VW_BPF_BASE_GONE once its exit was reported */
};

#define VW_BPF_BASE_GONE UINT64_MAX

struct vw_bpf_bases {
	struct vw_bpf_base *v; /* sorted by tgid, start_time */
	size_t n, n_gone;
};

/*
 * The seed iterator's output, len bytes of struct vw_bpf_task_rec (one a live thread; sorted
 * here, in place), as bases: each process's runtime summed. -EBADMSG when len is not whole
 * records, -ENOMEM.
 */
int vw_bpf_bases_parse(void *recs, size_t len, uint64_t ns_per_tick, struct vw_bpf_bases *ret);
void vw_bpf_bases_free(struct vw_bpf_bases *b);

/* One per-process map entry (key: the tgid, 4 bytes; val: a struct vw_bpf_proc) appended to t;
 * -ENOMEM. An entry with the exit mark is an exited process (its final value). */
int vw_bpf_rec_add_proc(struct vw_cpu_table *t, const void *key, const void *val,
			uint64_t ns_per_tick);

/*
 * The live records, len bytes of struct vw_bpf_task_rec (one a thread, or one a process from
 * the walk; put in order here, in place or through an index): each process's runtime added to
 * its entry (made when no thread of it has exited yet), its kind, cgroup and comm the group
 * leader's, and the bases subtracted (a value below its base reads 0; an exited process's base
 * goes), all in one merge of the map's entries with the records: t is then sorted (in_order
 * set, so the history layer's finish does not sort it again). -EBADMSG when len is not whole
 * records, -ENOMEM.
 */
int vw_bpf_rec_finish(struct vw_cpu_table *t, void *live, size_t len, struct vw_bpf_bases *bases,
		      uint64_t ns_per_tick);

/*
 * The live processes as the walks last saw them, one struct vw_bpf_task_rec each, sorted by
 * tgid (a record's pid is its tgid): a full walk's records replace the set, a ran walk's update
 * it (cpu_walk.bpf.c), so that every read still lists every live process, those that did not
 * run with the record their last walk left (their runtime has not moved since).
 */
struct vw_bpf_live {
	struct vw_bpf_task_rec *v;
	size_t n, cap;
};

/* A full walk's records, len bytes (one a process, in any order; sorted here, in place): the
 * whole set from now on. -EBADMSG when len is not whole records, -ENOMEM (the set unchanged). */
int vw_bpf_live_set(struct vw_bpf_live *c, void *recs, size_t len);

/*
 * A ran walk's records, len bytes (sorted here, in place, and flagged as taken): each replaces
 * the set's record of its tgid or joins the set; a VW_BPF_REC_GONE one drops it. Of two records
 * of one tgid (a process gone, its pid taken in the same walk) the live one wins.
 * -EBADMSG, -ENOMEM (the set unchanged).
 */
int vw_bpf_live_update(struct vw_bpf_live *c, void *recs, size_t len);
void vw_bpf_live_free(struct vw_bpf_live *c);

/*
 * The per-process map as the exits ring told it (bpf/cpu_time.h, struct vw_bpf_exit_ev): one
 * entry a tgid, sorted, each the map's entry as its newest event left it (the largest dead_ns
 * of its events, its flags or'ed). Events of a process reported exited (forgotten here) that
 * come after it, from the last two drains, are dropped by a note of it (tombstones): a second
 * free that saw the group done, a free racing the ghost check's delete.
 */
struct vw_bpf_exit_ent;
struct vw_bpf_exit_tomb;

struct vw_bpf_exits {
	struct vw_bpf_exit_ent *v;
	size_t n, cap, n_gone;
	bool unsorted; /* puts since the last sort */
	struct vw_bpf_exit_ent *tmp; /* the merge's */
	size_t cap_tmp;
	struct vw_bpf_exit_tomb *tomb;
	size_t n_tomb, cap_tomb;
	bool tomb_unsorted;
	uint32_t gen; /* drains so far */
};

/* A drain's events, len bytes of struct vw_bpf_exit_ev in ring order (sorted here, in place).
 * -EBADMSG when len is not whole events, -ENOMEM (the set unchanged). */
int vw_bpf_exits_apply(struct vw_bpf_exits *x, void *evs, size_t len);

/* The whole map read instead (a lost event): every entry (key: the tgid, 4 bytes; val: a
 * struct vw_bpf_proc) through vw_bpf_exits_put() after a vw_bpf_exits_reset(). */
void vw_bpf_exits_reset(struct vw_bpf_exits *x);
int vw_bpf_exits_put(struct vw_bpf_exits *x, const void *key, const void *val);

/* Every entry through vw_bpf_rec_add_proc(), in tgid order; -ENOMEM. */
int vw_bpf_exits_emit(struct vw_bpf_exits *x, struct vw_cpu_table *t, uint64_t ns_per_tick);

/* A process reported exited (or found gone): its entry goes if it is the one of that start
 * time (ticks), and its later events are dropped. */
void vw_bpf_exits_forget(struct vw_bpf_exits *x, uint32_t tgid, uint64_t start_time,
			 uint64_t ns_per_tick);
void vw_bpf_exits_free(struct vw_bpf_exits *x);

/* Test only: the entry of tgid (key and struct vw_bpf_proc) or NULL; the i-th entry's tgid in
 * order, or 0 past the end. */
const void *vw_bpf_exits_find(struct vw_bpf_exits *x, uint32_t tgid);
uint32_t vw_bpf_exits_tgid_at(struct vw_bpf_exits *x, size_t i);

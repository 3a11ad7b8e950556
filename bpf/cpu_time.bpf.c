// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * On-CPU time per process and per cgroup from task->se.sum_exec_runtime deltas.
 *
 * At every switch-out the runtime the previous task gathered since it was last folded is added
 * to its thread group's accumulator (procs) and to its cgroup's (cgroups). Deltas of the
 * scheduler's own counter, not switch timestamps: a lost event only delays a slice to the next
 * switch-out, it never drops or misattributes it. sched_process_exit folds the exiting
 * thread and marks the group exited when it was the last one, so an exited process's time
 * stays in its entry until user space has reported it. Two iter/task programs complete the
 * picture: vw_iter_seed (before attach) records every existing thread's runtime as already
 * folded, so values count from open; vw_iter_read (at every read) emits the part of each live
 * thread not folded yet: the slice of threads on a CPU right now.
 *
 * Each tracepoint has a tp_btf program (per-thread state in task storage, direct loads) and a
 * raw_tp twin (LRU hash keyed by pid, CO-RE probe reads); user space loads one of the pair.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "core_fixes.bpf.h"
#include "cpu_time.h"

#define PF_EXITING 0x00000004 /* include/linux/sched.h: set in exit_signals(), never cleared */

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by user space between open and load. */
const volatile __u64 open_ns = 0;     /* CLOCK_MONOTONIC at open: later tasks count from 0 */
const volatile __u32 use_pid_hash = 0; /* per-thread state in task_hash (raw_tp) */

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct vw_bpf_task);
} task_store SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1); /* sized by user space */
	__type(key, __u32);
	__type(value, struct vw_bpf_task);
} task_hash SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* sized by user space */
	__type(key, __u32);
	__type(value, struct vw_bpf_proc);
} procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1); /* sized by user space */
	__type(key, __u64);
	__type(value, struct vw_bpf_cgroup);
} cgroups SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, VW_BPF_STAT__COUNT);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

static __always_inline void stat_inc(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &which);

	if (v)
		__sync_fetch_and_add(v, 1);
}

/* A slot seen for the first time: a task started after open counts from 0, an older one
 * (only if the seed iterator missed it) from now. */
static __always_inline void slot_init(struct vw_bpf_task *t, __u64 start, __u64 sre)
{
	t->last_ns = start >= open_ns ? 0 : sre;
	t->start_ns = start;
	t->init = 1;
}

static __always_inline void cgroup_add(__u64 cgid, __u64 delta)
{
	struct vw_bpf_cgroup *c = bpf_map_lookup_elem(&cgroups, &cgid);
	struct vw_bpf_cgroup v = { .runtime_ns = delta };

	if (c) {
		/* Per-CPU, but an exit program preempted here lets a switch program in. */
		__sync_fetch_and_add(&c->runtime_ns, delta);
		return;
	}
	if (bpf_map_update_elem(&cgroups, &cgid, &v, BPF_NOEXIST) == 0)
		return;
	c = bpf_map_lookup_elem(&cgroups, &cgid);
	if (c)
		__sync_fetch_and_add(&c->runtime_ns, delta);
	else
		stat_inc(VW_BPF_STAT_CGROUP_FULL);
}

/* Slow path: the first slice of a thread group since open. */
static __always_inline struct vw_bpf_proc *proc_create(struct task_struct *task, __u32 tgid,
						       __u64 cgid)
{
	struct task_struct *leader = BPF_CORE_READ(task, group_leader);
	struct vw_bpf_proc v = { .cgroup_id = cgid };

	v.start_ns = vw_task_start_boottime(leader);
	BPF_CORE_READ_STR_INTO(&v.comm, leader, comm);
	if (bpf_map_update_elem(&procs, &tgid, &v, BPF_NOEXIST) != 0)
		stat_inc(VW_BPF_STAT_PROC_FULL); /* or lost a race: the lookup tells */
	return bpf_map_lookup_elem(&procs, &tgid);
}

/*
 * Fold sre - t->last_ns into the thread group and cgroup. A slice that cannot go to the group
 * (map full, tgid reused before user space collected the old exit) stays unfolded: the read
 * iterator reports it and a later switch-out folds it. Only an exiting thread whose group
 * entry user space already collected adds to its cgroup alone. in_exit: called from
 * sched_process_exit, which can be preempted by the switch of the same task, so the claim
 * on last_ns is a compare-and-swap there (the switch path runs with preemption off).
 */
static __always_inline void fold(struct vw_bpf_task *t, struct task_struct *task, __u32 tgid,
				 __u64 sre, __u64 cgid, bool in_exit)
{
	__u64 old = t->last_ns, delta = sre - old;
	struct vw_bpf_proc *p;
	bool exiting;

	if ((__s64)delta <= 0 && !in_exit)
		return;
	if ((__s64)delta < 0)
		delta = 0;
	p = bpf_map_lookup_elem(&procs, &tgid);
	if (!p || p->exited) {
		exiting = in_exit || (BPF_CORE_READ(task, flags) & PF_EXITING);
		if (!p && (in_exit || !exiting))
			p = proc_create(task, tgid, cgid);
		else if (p && !exiting) {
			stat_inc(VW_BPF_STAT_REUSED);
			return;
		}
		if (!p && !exiting)
			return;
	}
	if (in_exit) {
		if (__sync_val_compare_and_swap(&t->last_ns, old, sre) != old)
			return; /* a switch-out in between folded it */
	} else {
		t->last_ns = sre;
	}
	if (!delta)
		return;
	if (p) {
		__sync_fetch_and_add(&p->runtime_ns, delta);
		p->cgroup_id = cgid;
	}
	cgroup_add(cgid, delta);
}

/* Per-thread slot in the LRU hash (raw_tp): created on first sight, reset on PID reuse. */
static __always_inline struct vw_bpf_task *hash_slot(__u32 pid, __u64 start, __u64 sre)
{
	struct vw_bpf_task *t = bpf_map_lookup_elem(&task_hash, &pid);
	struct vw_bpf_task v;

	if (t) {
		if (t->start_ns != start)
			slot_init(t, start, sre);
		return t;
	}
	slot_init(&v, start, sre);
	if (bpf_map_update_elem(&task_hash, &pid, &v, BPF_NOEXIST) != 0)
		stat_inc(VW_BPF_STAT_TASK_FULL);
	return bpf_map_lookup_elem(&task_hash, &pid);
}

static __always_inline struct vw_bpf_task *storage_slot(struct task_struct *task, __u64 sre)
{
	struct vw_bpf_task *t;

	t = bpf_task_storage_get(&task_store, task, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t) {
		stat_inc(VW_BPF_STAT_TASK_FULL);
		return NULL;
	}
	if (!t->init)
		slot_init(t, task->start_time, sre);
	return t;
}

/* In sched_switch and sched_process_exit `current` is the task in question, so the helper
 * gives its cgroup v2 id (the default hierarchy's, also on hybrid v1/v2 hosts). */
SEC("tp_btf/sched_switch")
int BPF_PROG(vw_switch_btf, bool preempt, struct task_struct *prev)
{
	struct vw_bpf_task *t;
	__u64 sre;

	if (!prev->pid)
		return 0; /* idle */
	sre = prev->se.sum_exec_runtime;
	t = storage_slot(prev, sre);
	if (t)
		fold(t, prev, prev->tgid, sre, bpf_get_current_cgroup_id(), false);
	return 0;
}

SEC("raw_tp/sched_switch")
int BPF_PROG(vw_switch_raw, bool preempt, struct task_struct *prev)
{
	__u32 pid = BPF_CORE_READ(prev, pid);
	struct vw_bpf_task *t;
	__u64 sre;

	if (!pid)
		return 0;
	sre = BPF_CORE_READ(prev, se.sum_exec_runtime);
	t = hash_slot(pid, BPF_CORE_READ(prev, start_time), sre);
	if (!t)
		return 0;
	fold(t, prev, BPF_CORE_READ(prev, tgid), sre, bpf_get_current_cgroup_id(), false);
	/* A task with an exit_state never runs again: free its slot now. */
	if (BPF_CORE_READ(prev, exit_state))
		bpf_map_delete_elem(&task_hash, &pid);
	return 0;
}

static __always_inline void on_exit(struct task_struct *p, struct vw_bpf_task *t)
{
	__u32 tgid = BPF_CORE_READ(p, tgid);
	struct task_struct *leader;
	struct vw_bpf_proc *proc;

	fold(t, p, tgid, BPF_CORE_READ(p, se.sum_exec_runtime), bpf_get_current_cgroup_id(),
	     true);
	/* do_exit() decrements signal->live before this tracepoint: 0 = the group is gone. */
	if (BPF_CORE_READ(p, signal, live.counter) != 0)
		return;
	proc = bpf_map_lookup_elem(&procs, &tgid);
	if (!proc)
		return;
	leader = BPF_CORE_READ(p, group_leader);
	BPF_CORE_READ_STR_INTO(&proc->comm, leader, comm); /* after any exec */
	proc->exited = 1;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(vw_exit_btf, struct task_struct *p)
{
	struct vw_bpf_task *t;

	if (!p->pid)
		return 0;
	t = storage_slot(p, p->se.sum_exec_runtime);
	if (t)
		on_exit(p, t);
	return 0;
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(vw_exit_raw, struct task_struct *p)
{
	__u32 pid = BPF_CORE_READ(p, pid);
	struct vw_bpf_task *t;

	if (!pid)
		return 0;
	t = hash_slot(pid, BPF_CORE_READ(p, start_time), BPF_CORE_READ(p, se.sum_exec_runtime));
	if (t)
		on_exit(p, t);
	return 0;
}

static __always_inline struct vw_bpf_task *lookup_slot(struct task_struct *task)
{
	__u32 pid = task->pid;
	struct vw_bpf_task *t;

	if (!use_pid_hash)
		return bpf_task_storage_get(&task_store, task, NULL, 0);
	t = bpf_map_lookup_elem(&task_hash, &pid);
	return t && t->start_ns == task->start_time ? t : NULL;
}

/* Before the switch programs attach: every existing thread's runtime so far is "before open". */
SEC("iter/task")
int vw_iter_seed(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	__u64 sre;

	if (!task || !task->pid || task->start_time >= open_ns)
		return 0;
	sre = task->se.sum_exec_runtime;
	if (use_pid_hash)
		hash_slot(task->pid, task->start_time, sre);
	else
		storage_slot(task, sre);
	return 0;
}

/* At read time: one record per live thread with what is not folded yet. */
SEC("iter/task")
int vw_iter_read(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task, *leader;
	struct vw_bpf_task_rec rec = {};
	struct vw_bpf_task *t;
	__u64 sre;

	if (!task || !task->pid || (task->flags & PF_EXITING))
		return 0; /* exiting threads are folded by sched_process_exit */
	sre = task->se.sum_exec_runtime;
	t = lookup_slot(task);
	if (t && t->init)
		rec.pending_ns = sre > t->last_ns ? sre - t->last_ns : 0;
	else
		rec.pending_ns = task->start_time >= open_ns ? sre : 0;
	rec.tgid = task->tgid;
	rec.pid = task->pid;
	rec.cgroup_id = BPF_CORE_READ(task, cgroups, dfl_cgrp, kn, id);
	leader = task->group_leader;
	rec.start_ns = vw_task_start_boottime(leader);
	BPF_CORE_READ_STR_INTO(&rec.comm, leader, comm);
	bpf_seq_write(ctx->meta->seq, &rec, sizeof(rec));
	return 0;
}

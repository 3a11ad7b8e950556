/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Types shared by cpu_time.bpf.c and host/cpu_bpf.c: map keys, map values and the records the
 * read iterator emits. Types only: fixed-width __u64/__u32, explicit padding, no bool, no
 * pointers, sizes pinned by _Static_assert so both compilers agree on every byte.
 */
#ifndef VW_BPF_CPU_TIME_H
#define VW_BPF_CPU_TIME_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define VW_BPF_COMM_LEN 16

/* Value of the per-thread map (task storage under tp_btf, LRU hash keyed by pid under raw_tp). */
struct vw_bpf_task {
	__u64 last_ns;  /* se.sum_exec_runtime already folded into the accumulators */
	__u64 start_ns; /* task->start_time (CLOCK_MONOTONIC): identity against PID reuse */
	__u32 init;     /* 0 in a slot task storage just created */
	__u32 pad;
};

/* Value of the per-process map, keyed by __u32 tgid. */
struct vw_bpf_proc {
	__u64 runtime_ns; /* on-CPU time of all its threads since the accountant opened */
	__u64 cgroup_id;  /* cgroup v2 id of the thread that ran last */
	__u64 start_ns;   /* group leader's start_boottime (ns): tells PID reuse */
	char comm[VW_BPF_COMM_LEN]; /* leader's comm at creation, rewritten at exit */
	__u32 exited;     /* 1: the whole thread group exited; user space reports it once */
	__u32 pad;
};

/* Per-CPU value of the per-cgroup map, keyed by the __u64 cgroup v2 id. */
struct vw_bpf_cgroup {
	__u64 runtime_ns;
};

/*
 * One live thread, written by the read iterator (iter/task): the part of its runtime the
 * switch program has not folded yet (the in-flight slice of a running thread, or everything
 * since open for a thread that has not been switched out since).
 */
struct vw_bpf_task_rec {
	__u32 tgid;
	__u32 pid;
	__u64 pending_ns;
	__u64 cgroup_id;
	__u64 start_ns; /* group leader's start_boottime (ns) */
	char comm[VW_BPF_COMM_LEN]; /* group leader's comm */
};

/* Index into the per-CPU `stats` array: events the programs could not account. */
enum vw_bpf_stat {
	VW_BPF_STAT_PROC_FULL,   /* per-process map full: slice deferred (iterator still sees it) */
	VW_BPF_STAT_CGROUP_FULL, /* per-cgroup map full: slice missing from cgroup totals */
	VW_BPF_STAT_TASK_FULL,   /* no per-thread slot: slice deferred */
	VW_BPF_STAT_REUSED,      /* tgid reused before user space collected the old exit */
	VW_BPF_STAT__COUNT,
};

_Static_assert(sizeof(struct vw_bpf_task) == 24, "vw_bpf_task layout");
_Static_assert(sizeof(struct vw_bpf_proc) == 48, "vw_bpf_proc layout");
_Static_assert(sizeof(struct vw_bpf_cgroup) == 8, "vw_bpf_cgroup layout");
_Static_assert(sizeof(struct vw_bpf_task_rec) == 48, "vw_bpf_task_rec layout");

#endif

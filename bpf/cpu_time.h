/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Types shared by cpu_time.bpf.c and shared/engine/cpu_bpf.c: map keys, map values and the records the
 * read iterator emits. Types only: fixed-width __u64/__u32, explicit padding, no bool, no
 * pointers, sizes pinned by _Static_assert so both compilers agree on every byte.
 */
#ifndef VW_BPF_CPU_TIME_H
#define VW_BPF_CPU_TIME_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define VW_BPF_COMM_LEN 16

/* Per-thread state: task storage under tp_btf, LRU hash keyed by pid under raw_tp. */
struct vw_bpf_task {
	__u64 seed_ns;  /* runtime its exit leaves out: 0 for a thread the seed iterator saw (its
			 * past is in its process's base) or started after open, the runtime at
			 * its exit for an older thread met there first */
	__u64 exit_ns;  /* runtime already added to its process by the exit path */
	__u64 start_ns; /* task->start_time (CLOCK_MONOTONIC): identity against pid reuse */
	__u32 flags;    /* VW_BPF_TASK_* */
	__u32 pad;
};

enum {
	VW_BPF_TASK_INIT = 1u << 0,   /* seed_ns and start_ns are set */
	VW_BPF_TASK_EXITED = 1u << 1, /* sched_process_exit added it to its process */
};

/* Per-process value (key: __u32 tgid): what its exited threads ran, less what they had run
 * before open unless the seed iterator saw them (see vw_bpf_task.seed_ns). */
struct vw_bpf_proc {
	__u64 dead_ns;
	__u64 cgroup_id; /* cgroup id (see task_cgroup_id()) of the thread that exited last */
	__u64 start_ns;  /* group leader's start_boottime (ns): tells pid reuse */
	char comm[VW_BPF_COMM_LEN]; /* leader's comm, rewritten when the group exits */
	__u32 exited;    /* 1: the whole group exited and every thread of it was freed (its
			  * runtime final): user space reports it once, deletes it */
	__u32 group_dead; /* 1: its last thread passed sched_process_exit */
	__u64 pending;   /* threads that passed sched_process_exit, not yet sched_process_free */
	__u32 flags;     /* VW_BPF_PROC_*, set with group_dead */
	__u32 pad;
};

enum {
	VW_BPF_PROC_KTHREAD = 1u << 0, /* a kernel thread's group: with the exit mark, user space
					* knows its kind and start without /proc/PID/stat */
};

/* Threads at once, between exit and free, whose task storage could not be made (tp_btf). */
#define VW_BPF_STORAGE_FALLBACK 2048

/* Counters of the per-CPU value: events not accounted the normal way. */
enum vw_bpf_stat {
	VW_BPF_STAT_PROC_FULL,   /* per-process map full: an exited thread's time is lost */
	VW_BPF_STAT_TASK_FULL,   /* no per-thread slot: an exited thread's time is lost */
	VW_BPF_STAT_REUSED,      /* tgid reused before user space collected the old exit */
	VW_BPF_STAT_RING_LOST,   /* an exit event found the exits ring full: the next read
				  * reads the whole per-process map (nothing of it is lost) */
	VW_BPF_STAT_TASK_HASHED, /* no task storage for a thread: its slot made in the hash
				  * instead (nothing lost) */
	/* An interrupt span whose interrupted cgroup (process) found no entry in irq_cgroups
	 * (irq_procs), full with VW_BPF_IRQ_CGROUPS (_PROCS) others since the last read: its time
	 * stays in that one's weight. Counted in spans, and in ns by the _NS ones. */
	VW_BPF_STAT_IRQ_CGROUP_FULL,
	VW_BPF_STAT_IRQ_PROC_FULL,
	VW_BPF_STAT_IRQ_CGROUP_FULL_NS,
	VW_BPF_STAT_IRQ_PROC_FULL_NS,
	VW_BPF_STAT__COUNT,
};

/* The per-CPU value: counters of the slow paths (exit, iterator); the switch program's common
 * path touches nothing. */
struct vw_bpf_cpu {
	__u64 stats[VW_BPF_STAT__COUNT];
};

/*
 * The exits ring (BPF_MAP_TYPE_RINGBUF): after each change to a per-process entry (a thread's
 * exit or free), the entry as that program left it. Its dead_ns is read after the program's
 * own add, so the largest dead_ns of a process's events holds every add they announced (two
 * CPUs may submit in the other order than they added); the flags only ever get set. An event
 * with VW_BPF_EXIT_EXITED carries the final dead_ns (every other add came before the last
 * free's). The entry itself stays in procs until user space reported it: where an event is
 * lost (ring full, VW_BPF_STAT_RING_LOST) the map still has everything.
 */
struct vw_bpf_exit_ev {
	__u64 dead_ns;
	__u64 cgroup_id;
	__u64 start_ns; /* as vw_bpf_proc.start_ns */
	char comm[VW_BPF_COMM_LEN];
	__u32 tgid;
	__u32 flags; /* VW_BPF_EXIT_* */
};

enum {
	VW_BPF_EXIT_KTHREAD = 1u << 0,    /* vw_bpf_proc.flags' VW_BPF_PROC_KTHREAD */
	VW_BPF_EXIT_GROUP_DEAD = 1u << 1, /* vw_bpf_proc.group_dead */
	VW_BPF_EXIT_EXITED = 1u << 2,     /* vw_bpf_proc.exited */
};

/* The ring's bytes: a power of two of pages; an event takes 56 with its header (4,681 fit). */
#define VW_BPF_EXIT_RING_BYTES (256u * 1024u)

/*
 * irq_cgroups (cpu_time.bpf.c): per cgroup id (as the records carry it), the nanoseconds of
 * hardirq and interrupt-exit softirq that ran while one of its tasks was the interrupted one,
 * since the last read (user space takes and deletes each entry). The kernel (without
 * CONFIG_IRQ_TIME_ACCOUNTING) counts that time in the interrupted task's runtime and its
 * cgroup's usage; user space takes it out of the container's total again. The entries of
 * cgroups that ran nothing interrupted are never made: the map holds the busy ones. A span whose
 * cgroup finds it full is counted instead (VW_BPF_STAT_IRQ_CGROUP_FULL and _NS).
 */
#define VW_BPF_IRQ_CGROUPS 4096u
/* irq_procs: the same per interrupted process (tgid), for the processes' own figures. */
#define VW_BPF_IRQ_PROCS 4096u
/* A softirq that starts within this long after a hardirq's end on the same CPU is taken for
 * the interrupt's exit (irq_exit() runs the pending softirqs): the interrupted task's time
 * too. Later ones ran in task context (local_bh_enable(): the task's own traffic) or in
 * ksoftirqd, whose work is its own. */
#define VW_BPF_IRQ_EXIT_WINDOW_NS 5000u
/* Longer than any span (a softirq run yields to ksoftirqd after 2 ms): one open for longer had
 * its exit missed. */
#define VW_BPF_IRQ_STALE_NS 50000000u

/* One live thread, written by the seed and read iterators (iter/task). */
struct vw_bpf_task_rec {
	__u32 tgid;
	__u32 pid;
	__u64 runtime_ns; /* on-CPU time: se.sum_exec_runtime (what schedstat shows), all of it */
	__u64 cgroup_id;  /* see task_cgroup_id() */
	__u64 start_ns;   /* group leader's start_boottime (ns) */
	char comm[VW_BPF_COMM_LEN]; /* group leader's comm */
	__u32 flags;      /* VW_BPF_REC_* */
	__u32 pad;
};

enum {
	VW_BPF_REC_KTHREAD = 1u << 0, /* a kernel thread (PF_KTHREAD): user space need not read
				       * /proc/PID/stat to tell */
	VW_BPF_REC_GONE = 1u << 1,    /* the ran walk's: no live thread of process tgid is left
				       * (none by that tgid, or every one exiting): forget it */
};

/* What the walks (cpu_walk.bpf.c) write to their seq file: n records in walk_out[0..n), how
 * many processes found no room there, what kind of walk it was, and the marks it took. */
struct vw_bpf_walk_hdr {
	__u32 n;
	__u32 lost;
	__u32 flags; /* VW_BPF_WALK_* */
	__u32 marks; /* the ran walk: ring entries and running tasks it looked at */
};

enum {
	VW_BPF_WALK_FULL = 1u << 0,     /* every live process (vw_walk) */
	VW_BPF_WALK_OVERFLOW = 1u << 1, /* the ran walk found a ring overflowed (or a thread
					 * without a mark): nothing walked, run the full walk */
};

/*
 * The ran walk's per-CPU ring of marks (cpu_walk.bpf.c): the switch program appends the tgid
 * of a thread that ran, once per epoch, at slot[head % cap] then bumps head; the walk takes
 * [tail, head) and moves tail to snap (cpu_walk.bpf.c says why). head - tail never exceeds the ring's capacity (user space may
 * lower it below VW_BPF_RING_CAP, a power of two, for tests).
 */
#define VW_BPF_RING_CAP 4096u

struct vw_bpf_ring {
	__u64 head;     /* the switch program's (this CPU's) */
	__u64 tail;     /* the walk's */
	__u64 snap;     /* head as the walk read it before the epoch moved: the next tail */
	__u32 overflow; /* a mark found no room (or no storage): the next walk is a full one */
	__u32 pad;
	__u32 slot[VW_BPF_RING_CAP];
};

/* Per-thread task storage of the switch program and the ran walk. */
struct vw_bpf_mark {
	__u32 marked; /* the epoch this thread's tgid was last appended in */
	__u32 walked; /* on a group leader: the walk epoch its process was last summed in */
};

/*
 * Optional per-process counters (a sched_switch program, loaded only where counters opened): one BPF_MAP_TYPE_PERF_EVENT_ARRAY per kind, filled by user space with a counting
 * event per CPU. The order is shared/engine/perf_counters.h's enum vw_hw_counter.
 */
enum {
	VW_BPF_HW_CYCLES,
	VW_BPF_HW_INSTRUCTIONS,
	VW_BPF_HW_CACHE_MISSES,
	VW_BPF_HW__COUNT,
};

/* One bpf_perf_event_read_value() result (struct bpf_perf_event_value's layout). */
struct vw_bpf_hw_read {
	__u64 counter;
	__u64 enabled; /* ns the event was enabled */
	__u64 running; /* ns it was on the PMU: less than enabled when multiplexed */
};

enum vw_bpf_hw_stat {
	VW_BPF_HW_STAT_READ_ERR, /* bpf_perf_event_read_value() failed on this CPU */
	VW_BPF_HW_STAT_FULL,     /* per-process counter map full: a slice's counts are lost */
	VW_BPF_HW_STAT_REUSED,   /* tgid reused before user space collected the old counts */
	VW_BPF_HW_STAT__COUNT,
};

/* Per-CPU value of the counter program: each kind's reading at the last switch here. */
struct vw_bpf_hw_cpu {
	struct vw_bpf_hw_read last[VW_BPF_HW__COUNT];
	__u32 seen; /* bit k: last[k] holds a reading (the first one is only a base) */
	__u32 pad;
	__u64 stats[VW_BPF_HW_STAT__COUNT];
};

/* Per-process value (key: __u32 tgid): counts of its threads' slices since open, scaled by
 * enabled/running where the PMU was multiplexed. */
struct vw_bpf_hw_proc {
	__u64 value[VW_BPF_HW__COUNT];
	__u64 start_ns; /* group leader's start_boottime (ns), as in vw_bpf_proc */
};

_Static_assert(sizeof(struct vw_bpf_hw_read) == 24, "vw_bpf_hw_read layout");
_Static_assert(sizeof(struct vw_bpf_hw_cpu) == 24 * VW_BPF_HW__COUNT + 8 + 8 * VW_BPF_HW_STAT__COUNT,
	       "vw_bpf_hw_cpu layout");
_Static_assert(sizeof(struct vw_bpf_hw_proc) == 8 * VW_BPF_HW__COUNT + 8, "vw_bpf_hw_proc layout");
_Static_assert(sizeof(struct vw_bpf_task) == 32, "vw_bpf_task layout");
_Static_assert(sizeof(struct vw_bpf_proc) == 64, "vw_bpf_proc layout");
_Static_assert(sizeof(struct vw_bpf_cpu) == 8 * VW_BPF_STAT__COUNT, "vw_bpf_cpu layout");
_Static_assert(VW_BPF_STAT_IRQ_CGROUP_FULL + 2 == VW_BPF_STAT_IRQ_CGROUP_FULL_NS &&
		       VW_BPF_STAT_IRQ_PROC_FULL + 2 == VW_BPF_STAT_IRQ_PROC_FULL_NS,
	       "irq_add(): a span's count at full, its ns at full + 2");
_Static_assert(sizeof(struct vw_bpf_task_rec) == 56, "vw_bpf_task_rec layout");
_Static_assert(sizeof(struct vw_bpf_exit_ev) == 48, "vw_bpf_exit_ev layout");
_Static_assert(sizeof(struct vw_bpf_walk_hdr) == 16, "vw_bpf_walk_hdr layout");
_Static_assert(sizeof(struct vw_bpf_ring) == 32 + 4 * VW_BPF_RING_CAP, "vw_bpf_ring layout");
_Static_assert(sizeof(struct vw_bpf_mark) == 8, "vw_bpf_mark layout");

#endif

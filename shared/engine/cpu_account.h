/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Per-process CPU time, cumulative since the accountant opened: measured in the kernel by CO-RE
 * eBPF from task->se.sum_exec_runtime deltas (exact, matches /proc/PID/schedstat), or, where
 * BPF cannot load, read from /proc/PID/task/TID/schedstat (else stat). Back-ends are static
 * const ops tables probed in preference order: bpf, then procfs.
 *
 * Both: a process's value never goes down from one read to the next; an exited process is
 * reported once (exited = true, its final value) and then no more. Cgroup ids come from the
 * bpf accountant only (procfs: cgroup_id 0); per-cgroup totals are the kernel's (cgroupfs.h).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "procfs.h"


/* Whether a process is a kernel thread, where the accountant tells (the bpf one does: the
 * workload registry then need not read /proc/PID/stat for each new process). */
enum vw_proc_kind {
	VW_PROC_KIND_UNKNOWN,
	VW_PROC_KIND_USER,
	VW_PROC_KIND_KTHREAD,
};

struct vw_proc_cpu {
	uint32_t tgid;
	bool exited; /* final value: the process is gone (reported once); beside tgid: 48 bytes */
	uint8_t kind; /* enum vw_proc_kind: what the accountant saw of it */
	uint8_t quiet; /* bpf: reads in a row it was known only from its exited threads (no
			* live thread listed): the ghost check's clock (cpu_ghost.c) */
	uint8_t unchecked; /* bpf: reads since the ghost check last looked it up in /proc, and
			    * whether that lookup found it gone (cpu_ghost.h) */
	uint64_t cgroup_id; /* id of the cgroup it ran in last (vw_cpu_env.cgroup_v1 says in which
			     * hierarchy), 0 if unknown (procfs) */
	uint64_t cpu_ns;    /* cumulative on-CPU time of all its threads since open */
	uint64_t start_time; /* /proc/PID/stat starttime (ticks since boot): tells PID reuse */
	char comm[VW_COMM_LEN];
};
_Static_assert(sizeof(struct vw_proc_cpu) == 48, "vw_proc_cpu: a table of 10,000 is 480 KB");

/* Optional hardware counters per process (cumulative); zero when unavailable. */
struct vw_proc_counters {
	uint64_t cycles, instructions, cache_misses;
};

/* Why an exited thread's CPU time was not kept (vw_cpu_snapshot.exits_untracked). */
enum vw_cpu_untracked {
	VW_CPU_UNTRACKED_PROCESS_MAP_FULL, /* the per-process map had no room for its process */
	VW_CPU_UNTRACKED_NO_THREAD_SLOT,   /* no per-thread slot, even in the fallback hash */
	VW_CPU_UNTRACKED_PID_REUSED,       /* its PID reused before its process was collected */
	VW_CPU_UNTRACKED__COUNT,
};

/* The interrupt accounting's two maps (vw_cpu_snapshot.irq_untracked_*). */
enum vw_cpu_irq_map {
	VW_CPU_IRQ_CGROUP,  /* per interrupted cgroup (vw_cpu_snapshot.irq) */
	VW_CPU_IRQ_PROCESS, /* per interrupted process (vw_cpu_snapshot.irq_procs) */
	VW_CPU_IRQ__COUNT,
};

/* Interrupt time counted in a cgroup's usage (vw_cpu_snapshot.irq). */
struct vw_cgroup_irq {
	uint64_t cgroup_id; /* as vw_proc_cpu.cgroup_id */
	uint64_t ns;
};

/* Interrupt time counted in a process's threads' runtime (vw_cpu_snapshot.irq_procs). */
struct vw_proc_irq {
	uint32_t tgid;
	uint64_t ns;
};

struct vw_cpu_snapshot {
	struct vw_proc_cpu *procs; /* owned by the accountant; valid until the next read */
	size_t n_procs;
	/* Per-process hardware counters, parallel to procs, or NULL; hw_available is the
	 * VW_HW_BIT() mask (perf_counters.h) of the counters they hold. The bpf accountant fills
	 * them where the PMU's counters open (NULL, 0 elsewhere: the build machine, most VMs);
	 * the registry uses them as split keys when present. */
	const struct vw_proc_counters *counters;
	unsigned hw_available;
	/* Processes the accountant had kept reporting alive that the kernel says are gone,
	 * reported exited by its check (cumulative since open; bpf only, 0 elsewhere). */
	uint64_t ghosts;
	/* bpf (tp_btf): slots of the fallback hash whose thread the kernel no longer has (its free
	 * never reached the program), deleted by the accountant's sweep (cumulative since open;
	 * 0 elsewhere). */
	uint64_t stale_slots;
	/* bpf: the ran walk's switch program is attached, most reads walk only the processes
	 * that ran (--cpu.ran-walk; false elsewhere). */
	bool ran_walk_on;

	/* Exit events the bpf accountant's ring had no room for (cumulative since open; each
	 * time, the next read read its whole per-process map instead: nothing lost). */
	uint64_t exits_lost;
	/* Exited threads whose CPU time the bpf accountant could not keep, by why (cumulative
	 * since open; 0 for procfs): that time is in no process's figure. */
	uint64_t exits_untracked[VW_CPU_UNTRACKED__COUNT];
	/* bpf (tp_btf): the hardirq and interrupt-exit softirq time since the last read that the
	 * kernel counted in each cgroup's usage because one of its tasks was the one interrupted
	 * (not its own work: another's timers, I/O, IPIs). Owned by the accountant; NULL, 0
	 * elsewhere. The registry takes it out of the containers' totals. */
	const struct vw_cgroup_irq *irq;
	size_t n_irq;
	/* The same per process (the interrupted thread's tgid), in tgid order: the registry takes
	 * it out of the process's time. */
	const struct vw_proc_irq *irq_procs;
	size_t n_irq_procs;
	/* Interrupt spans, and their ns, that found their map full (4,096 other cgroups or
	 * processes interrupted since the last read): not in irq or irq_procs, so their time
	 * stays in the interrupted one's weight (cumulative since open; 0 elsewhere). */
	uint64_t irq_untracked_spans[VW_CPU_IRQ__COUNT];
	uint64_t irq_untracked_ns[VW_CPU_IRQ__COUNT];
};

/* vw_cpu_env.flags: test and debugging knobs of the bpf accountant. */
enum {
	VW_CPU_BPF_RAW_TP = 1u << 0,   /* load the raw_tp twins even where tp_btf works */
	VW_CPU_BPF_NO_BATCH = 1u << 1, /* read maps key by key, as where batch ops are missing */
	/* Per-process counters from software events standing in for the hardware ones
	 * (vw_hw_open_cpu()): CPU time in ns as cycles and instructions, context switches as
	 * cache misses. Tests and benchmarks on machines without a PMU only. */
	VW_CPU_BPF_HW_STANDIN = 1u << 2,
	/* No per-process counters even where a PMU counts (--cpu.hardware-counters=false): no
	 * program on the scheduler's switch path at all. */
	VW_CPU_BPF_NO_HW = 1u << 3,
	/* Read the task/ iterator even where the open-coded walk loads (cpu_walk.bpf.c). */
	VW_CPU_BPF_NO_WALK = 1u << 4,
	/* Walk every process at every read, as where the ran walk's kfuncs are missing (no
	 * sched_switch program, no marks). */
	VW_CPU_BPF_NO_RAN = 1u << 5,
	/* Test only: rings of 16 marks per CPU, so that they overflow. */
	VW_CPU_BPF_SMALL_RING = 1u << 6,
	/* --cpu.ran-walk=auto: the ran walk loads, its switch program is attached only while it
	 * pays (cpu_ranwalk.h); without this (and without NO_RAN) it is attached for good. */
	VW_CPU_BPF_RAN_AUTO = 1u << 7,

	/* Test only: an exits ring of one page (73 events), so that it fills. */
	VW_CPU_BPF_SMALL_EXIT_RING = 1u << 12,
	/* Test only: no task storage is made for threads started after open, as when its allocator
	 * fails: their slots are kept in the fallback hash (sized for every process here, as the
	 * whole machine's new threads go there). */
	VW_CPU_BPF_NO_STORAGE = 1u << 13,
	/* Test only: interrupt maps of one entry each (irq_cgroups, irq_procs), so that they
	 * fill. */
	VW_CPU_BPF_SMALL_IRQ_MAPS = 1u << 14,
	/* No interrupt programs even where the kernel counts interrupts in tasks' runtime
	 * (--cpu.irq-accounting=off). */
	VW_CPU_BPF_NO_IRQ = 1u << 15,
};

struct vw_cpu_env {
	int procfs_fd;       /* --host.procfs root */
	int sysfs_fd;        /* --host.sysfs root (BTF, cgroup mounts) */
	uint32_t max_procs;  /* map sizes (0: 32768 processes) */
	uint32_t flags;      /* VW_CPU_BPF_* */
	bool cgroup_v1;      /* report cgroup ids of the v1 cpuacct hierarchy (cgroupfs.h says
			      * which hierarchy accounts CPU time), else of the v2 one */
};

struct vw_cpu_account_ops {
	const char *name; /* "bpf", "procfs": the `method` label */
	/* -ENODEV / -EPERM / -EOPNOTSUPP when unavailable here: the next one is tried. */
	int (*open)(const struct vw_cpu_env *env, void **ret_state);
	/* Take a snapshot now (in-flight slices of running tasks included). */
	int (*read)(void *state, struct vw_cpu_snapshot *ret);
	void (*close)(void *state);
};

extern const struct vw_cpu_account_ops vw_cpu_bpf;
extern const struct vw_cpu_account_ops vw_cpu_procfs;
extern const struct vw_cpu_account_ops *const vw_cpu_accountants[];

struct vw_cpu_accountant {
	const struct vw_cpu_account_ops *ops;
	void *state;
	int skipped_err; /* -errno of the preferred accountant that did not open (0: none) */
};

/* Open the first that works (or only `name` when non-NULL); logs the choice once. */
int vw_cpu_accountant_open(const struct vw_cpu_env *env, const char *name,
			   struct vw_cpu_accountant *ret);
void vw_cpu_accountant_close(struct vw_cpu_accountant *a);

// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * On-CPU time per process, and the cgroup it ran in, from task->se.sum_exec_runtime, the scheduler's own
 * counter (what /proc/PID/schedstat shows), never from switch timestamps.
 *
 * Per process. The read iterator emits every live thread's se.sum_exec_runtime as it is, with no
 * per-thread state to look up: user space subtracts each process's base, the sum of its threads'
 * runtimes at open (the seed iterator's records), so values count from open. sched_process_exit
 * adds an exiting thread's time to its process's entry (procs): all of it for a thread the seed
 * iterator saw (its runtime at open is in its process's base), all of it for a thread started
 * after open, nothing of the past for an older thread first met at its exit. What it runs after
 * that (closing its files, exit_notify(), up to its last switch-out) is added at
 * sched_process_free, which the kernel fires only once the task has both been released and
 * switched out for the last time (the two references of task->rcu_users), so its
 * sum_exec_runtime is final there. The group is marked exited when its last thread has passed
 * sched_process_exit and every thread that did has been freed: user space reports it once, then
 * deletes it. After each change to an entry, the exit and free programs send the entry as they
 * left it to the exits ring (struct vw_bpf_exit_ev), which user space drains at each read
 * instead of reading the whole map (a cost of what exited, not of the map's 32,768 buckets);
 * the map stays the truth: an event that finds the ring full is counted (VW_BPF_STAT_RING_LOST)
 * and the next read takes the whole map. (A zombie leader is freed when it is reaped: until then its process is reported
 * live, with its time, as /proc still lists it.) The frees are not relied on alone: some never
 * reach this program after a mass kill (see shared/engine/cpu_bpf.c, ghost_check()), so user
 * space confirms a process with no live thread against /proc and ends it there.
 *
 * Per cgroup. Nothing here: the kernel's own cgroup accounting (cpuacct.usage, cpu.stat) holds
 * every cgroup's total, exited tasks included. Each record and exit carries the task's cgroup id
 * in the hierarchy that accounts CPU time (v1 cpuacct where it is mounted, else v2), so user
 * space places every process, exited ones too, in the cgroup it ran in.
 *
 * Cost. Nothing here runs on the scheduler's switch path: the programs run once per thread exit
 * and once per task free, and the iterator at each read, which reads each thread's own fields
 * and its leader's, nothing else (no task storage or hash lookup per thread). The interrupt
 * programs (below) run at each hardirq's and softirq's entry and exit: ~100 ns a run, 29 ms
 * a second under a loopback UDP flood of 150,000 softirqs a second (bench/irq_cost.sh). (The optional
 * counter program below, loaded where a PMU counts, is a sched_switch program: per-slice counts
 * exist nowhere else. cpu_walk.bpf.c's marker is the other: one task storage lookup and a
 * compare per switch, so that a read walks only the processes that ran.)
 *
 * Each tracepoint has a tp_btf program (task storage, direct loads) and a raw_tp twin (LRU
 * hash keyed by pid, CO-RE probe reads); user space loads one of each pair.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "core_fixes.bpf.h"
#include "cpu_time.h"

#define READ_ONCE_U64(x) (*(volatile __u64 *)&(x))

/* GPL-2.0 OR Apache-2.0 (the SPDX line): the kernel is given the GPL-2.0 alternative, the one of
 * its known strings (include/linux/license.h) that this licence offers; "Dual BSD/GPL" named a
 * BSD licence these sources never had. */
char LICENSE[] SEC("license") = "GPL";

/* Set by user space between open and load. */
const volatile __u64 open_ns = 0;      /* CLOCK_MONOTONIC at open: later threads seed at 0 */
const volatile __u32 use_pid_hash = 0; /* per-thread state in task_hash (raw_tp) */
const volatile __u32 cgroup_v1 = 0;    /* report the cpuacct v1 hierarchy's cgroup ids */
const volatile __u32 no_storage = 0;   /* test only: none made for threads started after open */

/* A map of one entry, or of as many as user space sizes it to before load. */
#define VW_MAP(kind, k, v)                                                                         \
	struct {                                                                                   \
		__uint(type, kind);                                                                \
		__uint(max_entries, 1);                                                            \
		__type(key, k);                                                                    \
		__type(value, v);                                                                  \
	}

VW_MAP(BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct vw_bpf_cpu) cpus SEC(".maps");
/* These two sized by user space. task_hash: the raw_tp twins' threads; with task storage, a
 * plain hash for the threads whose storage could not be made (user space sets its type, and
 * sweeps out the slots of threads gone without their free: shared/engine/cpu_slots.h). The
 * raw_tp one is an LRU hash: a slot lives from the seed (or the exit) to the free, which
 * deletes it, and a free that never reaches the program (a mass kill's, a fork storm's) would
 * leak its slot in a plain hash for good; the LRU reclaims those. It may evict a live slot
 * too when a storm overflows it: a seeded thread's is the coldest, and its exit then finds
 * none and counts the loss (VW_BPF_STAT_TASK_FULL); an exit's slot evicted before its free
 * leaves its process to the ghost check, which counts it. */
VW_MAP(BPF_MAP_TYPE_LRU_HASH, __u32, struct vw_bpf_task) task_hash SEC(".maps");
VW_MAP(BPF_MAP_TYPE_HASH, __u32, struct vw_bpf_proc) procs SEC(".maps");

/* Sized by user space (VW_BPF_EXIT_RING_BYTES): one event per change to procs. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, VW_BPF_EXIT_RING_BYTES);
} exits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct vw_bpf_task);
} task_store SEC(".maps");

static __always_inline struct vw_bpf_cpu *this_cpu(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&cpus, &zero);
}

/* Slow paths may be preempted by the switch program on the same CPU: count atomically. */
static __always_inline void stat_inc(struct vw_bpf_cpu *c, __u32 which)
{
	if (c && which < VW_BPF_STAT__COUNT)
		__sync_fetch_and_add(&c->stats[which], 1);
}

/*
 * The cgroup a task is in, as an id user space can match against the hierarchy's directory
 * inodes: the cpuacct controller's cgroup on a v1 (legacy or hybrid) host, where the default
 * hierarchy is often just the root, else the default (v2) cgroup.
 */
static __always_inline __u64 task_cgroup_id(struct task_struct *task)
{
	struct cgroup_subsys_state *css;
	struct css_set *cgs;

	if (cgroup_v1 && bpf_core_enum_value_exists(enum cgroup_subsys_id, cpuacct_cgrp_id)) {
		cgs = BPF_CORE_READ(task, cgroups);
		if (!cgs)
			return 0;
		css = NULL;
		bpf_core_read(&css, sizeof(css),
			      &cgs->subsys[bpf_core_enum_value(enum cgroup_subsys_id, cpuacct_cgrp_id)]);
		return css ? BPF_CORE_READ(css, cgroup, kn, id) : 0;
	}
	return BPF_CORE_READ(task, cgroups, dfl_cgrp, kn, id);
}

/* ---- per thread ---- */

/* A thread first seen: one started after open counts from 0, an older one from `old` (its runtime
 * now at its exit: nothing of its past; 0 from the seed iterator: its base is user space's). */
static __always_inline void task_init(struct vw_bpf_task *t, __u64 start, __u64 old)
{
	t->seed_ns = start >= open_ns ? 0 : old;
	t->exit_ns = 0;
	t->start_ns = start;
	t->flags = VW_BPF_TASK_INIT;
}

static __always_inline struct vw_bpf_task *hash_slot(__u32 pid, __u64 start, __u64 sre,
						     bool create)
{
	struct vw_bpf_task *t = bpf_map_lookup_elem(&task_hash, &pid);
	struct vw_bpf_task v;

	if (t) {
		if (t->start_ns != start) /* pid reused */
			task_init(t, start, sre);
		return t;
	}
	if (!create)
		return NULL;
	task_init(&v, start, sre);
	bpf_map_update_elem(&task_hash, &pid, &v, BPF_NOEXIST);
	return bpf_map_lookup_elem(&task_hash, &pid);
}

/*
 * tp_btf and iterators: task storage, or the hash when the raw_tp twins run. Creating task
 * storage can fail (an allocation failing in an exit storm, or another storage operation
 * holding this CPU's lock): the thread's slot is then made in the hash, counted, and
 * found there until its free deletes it, so its time is not lost.
 */
static __always_inline struct vw_bpf_task *task_slot(struct task_struct *task, __u64 sre,
						     bool create)
{
	struct vw_bpf_task *t;

	if (use_pid_hash)
		return hash_slot(task->pid, task->start_time, sre, create);
	t = bpf_task_storage_get(&task_store, task, NULL, 0);
	if (!t) /* one made in the hash before (the seed iterator's) is the thread's */
		t = hash_slot(task->pid, task->start_time, sre, false);
	if (!t && create && !(no_storage && task->start_time >= open_ns))
		t = bpf_task_storage_get(&task_store, task, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (t) {
		if (!(t->flags & VW_BPF_TASK_INIT))
			task_init(t, task->start_time, sre);
		return t;
	}
	if (!create)
		return NULL;
	stat_inc(this_cpu(), VW_BPF_STAT_TASK_HASHED);
	return hash_slot(task->pid, task->start_time, sre, true);
}

/* ---- per process ---- */

/* The entry of task's thread group, created on demand; NULL when full or taken by an exited
 * group whose tgid was reused before user space collected it. */
static __always_inline struct vw_bpf_proc *proc_get(struct vw_bpf_cpu *c, struct task_struct *task,
						    __u32 tgid, bool create)
{
	struct task_struct *leader = BPF_CORE_READ(task, group_leader);
	__u64 start = vw_task_start_boottime(leader);
	struct vw_bpf_proc *p = bpf_map_lookup_elem(&procs, &tgid), v = {};

	if (p) {
		if (p->start_ns == start)
			return p;
		stat_inc(c, VW_BPF_STAT_REUSED);
		return NULL;
	}
	if (!create)
		return NULL;
	v.start_ns = start;
	BPF_CORE_READ_STR_INTO(&v.comm, leader, comm);
	if (bpf_map_update_elem(&procs, &tgid, &v, BPF_NOEXIST) != 0 &&
	    !bpf_map_lookup_elem(&procs, &tgid)) {
		stat_inc(c, VW_BPF_STAT_PROC_FULL);
		return NULL;
	}
	return bpf_map_lookup_elem(&procs, &tgid);
}

/*
 * The entry of tgid as this program left it, to the exits ring (struct vw_bpf_exit_ev says
 * why a copy read now is enough). No wakeup: user space drains the ring at its reads. A full
 * ring is counted: the next read takes the whole map instead.
 */
static __always_inline void exit_event(struct vw_bpf_cpu *c, __u32 tgid, struct vw_bpf_proc *proc)
{
	struct vw_bpf_exit_ev *e = bpf_ringbuf_reserve(&exits, sizeof(*e), 0);

	if (!e) {
		stat_inc(c, VW_BPF_STAT_RING_LOST);
		return;
	}
	e->dead_ns = READ_ONCE_U64(proc->dead_ns);
	e->cgroup_id = proc->cgroup_id;
	e->start_ns = proc->start_ns;
	__builtin_memcpy(e->comm, proc->comm, sizeof(e->comm));
	e->tgid = tgid;
	e->flags = (proc->flags & VW_BPF_PROC_KTHREAD ? VW_BPF_EXIT_KTHREAD : 0) |
		   (proc->group_dead ? VW_BPF_EXIT_GROUP_DEAD : 0) |
		   (proc->exited ? VW_BPF_EXIT_EXITED : 0);
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
}

/*
 * sched_process_exit: add the thread's time since open to its process and count it pending
 * until it is freed; the last thread of the group marks it dead (do_exit() decremented
 * signal->live before the tracepoint).
 */
static __always_inline void on_exit(struct task_struct *p, struct vw_bpf_task *t, __u64 sre)
{
	__u64 cgid = task_cgroup_id(p);
	__u32 tgid = BPF_CORE_READ(p, tgid);
	struct vw_bpf_cpu *c = this_cpu();
	struct vw_bpf_proc *proc;

	if (!t) {
		stat_inc(c, VW_BPF_STAT_TASK_FULL);
		return;
	}
	if (t->flags & VW_BPF_TASK_EXITED)
		return;
	proc = proc_get(c, p, tgid, true);
	t->exit_ns = sre;
	t->flags |= VW_BPF_TASK_EXITED;
	if (!proc)
		return;
	__sync_fetch_and_add(&proc->dead_ns, sre > t->seed_ns ? sre - t->seed_ns : 0);
	__sync_fetch_and_add(&proc->pending, 1);
	proc->cgroup_id = cgid;
	if (BPF_CORE_READ(p, signal, live.counter) == 0) {
		BPF_CORE_READ_STR_INTO(&proc->comm, p, group_leader, comm); /* after any exec */
		proc->flags = BPF_CORE_READ(p, flags) & PF_KTHREAD ? VW_BPF_PROC_KTHREAD : 0;
		proc->group_dead = 1;
	}
	exit_event(c, tgid, proc);
}

/*
 * sched_process_free: the thread's runtime is final; what it ran since sched_process_exit goes to
 * its process. The free that leaves a dead group with nothing pending marks it exited (two
 * frees on two CPUs may both see that: both write the same 1). A thread whose exit was not seen
 * (it was exiting at open) brings nothing.
 */
static __always_inline void on_free(struct task_struct *p, struct vw_bpf_task *t, __u64 sre)
{
	struct vw_bpf_cpu *c = this_cpu();
	__u32 tgid = BPF_CORE_READ(p, tgid);
	struct vw_bpf_proc *proc;

	if (!t || !(t->flags & VW_BPF_TASK_EXITED))
		return;
	proc = proc_get(c, p, tgid, false);
	if (!proc)
		return;
	if (sre > t->exit_ns)
		__sync_fetch_and_add(&proc->dead_ns, sre - t->exit_ns);
	__sync_fetch_and_add(&proc->pending, -1);
	if (proc->group_dead && READ_ONCE_U64(proc->pending) == 0)
		proc->exited = 1;
	exit_event(c, tgid, proc);
}

/* ---- sched_process_exit ---- */

SEC("tp_btf/sched_process_exit")
int BPF_PROG(vw_exit_btf, struct task_struct *p)
{
	__u64 sre = p->se.sum_exec_runtime;

	if (p->pid)
		on_exit(p, task_slot(p, sre, true), sre);
	return 0;
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(vw_exit_raw, struct task_struct *p)
{
	__u64 sre = BPF_CORE_READ(p, se.sum_exec_runtime), start = BPF_CORE_READ(p, start_time);
	__u32 pid = BPF_CORE_READ(p, pid);
	struct vw_bpf_task *t;

	if (!pid)
		return 0;
	t = hash_slot(pid, start, sre, false);
	/* A thread older than open without its seed slot (evicted, or exiting at open): its
	 * time since open is lost, counted. */
	if (!t && start < open_ns)
		stat_inc(this_cpu(), VW_BPF_STAT_TASK_FULL);
	on_exit(p, t ? t : hash_slot(pid, start, sre, true), sre);
	return 0;
}

/* ---- sched_process_free ---- */

/* A thread's slot in the hash goes with the task (task storage needs no such care). */
static __always_inline void free_hashed(struct task_struct *p, __u32 pid, __u64 start, __u64 sre)
{
	struct vw_bpf_task *t = bpf_map_lookup_elem(&task_hash, &pid);

	if (!t || t->start_ns != start)
		return;
	on_free(p, t, sre);
	bpf_map_delete_elem(&task_hash, &pid);
}

SEC("tp_btf/sched_process_free")
int BPF_PROG(vw_free_btf, struct task_struct *p)
{
	struct vw_bpf_task *t;

	if (!p->pid)
		return 0;
	t = bpf_task_storage_get(&task_store, p, NULL, 0);
	if (t)
		on_free(p, t, p->se.sum_exec_runtime);
	else
		free_hashed(p, p->pid, p->start_time, p->se.sum_exec_runtime);
	return 0;
}

SEC("raw_tp/sched_process_free")
int BPF_PROG(vw_free_raw, struct task_struct *p)
{
	__u32 pid = BPF_CORE_READ(p, pid);

	if (pid)
		free_hashed(p, pid, BPF_CORE_READ(p, start_time), BPF_CORE_READ(p, se.sum_exec_runtime));
	return 0;
}

/* ---- iterators ---- */

/*
 * One live thread's record: its runtime as the scheduler counts it, and its group's identity.
 * The iterator's task is a trusted pointer: plain loads, no probe reads (a probe read per field
 * was a sixth of the daemon's CPU at 10,000 processes). iter/task needs 5.8, where
 * start_boottime and kernfs_node.id both exist.
 */
static __always_inline void emit(struct seq_file *seq, struct task_struct *task, __u64 runtime)
{
	struct task_struct *leader = task->group_leader;
	struct vw_bpf_task_rec rec = {};

	rec.tgid = task->tgid;
	rec.pid = task->pid;
	rec.runtime_ns = runtime;
	rec.cgroup_id = vw_task_cgroup_id_btf(task, cgroup_v1);
	rec.start_ns = leader->start_boottime;
	__builtin_memcpy(rec.comm, leader->comm, sizeof(rec.comm));
	rec.comm[sizeof(rec.comm) - 1] = '\0';
	rec.flags = task->flags & PF_KTHREAD ? VW_BPF_REC_KTHREAD : 0;
	bpf_seq_write(seq, &rec, sizeof(rec));
}

/*
 * Once, after the exit and free programs attached: every live thread started before open gets
 * its state with seed 0 (its exit adds all its runtime) and a record of its runtime now, which
 * user space sums per process into the base it subtracts. A thread that already has state was
 * met by its exit first, and is not emitted: its past is not in its process's dead time either.
 */
SEC("iter/task")
int vw_iter_seed(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	__u64 sre;

	if (!task || !task->pid || (task->flags & PF_EXITING) || task->start_time >= open_ns)
		return 0;
	sre = task->se.sum_exec_runtime;
	if (task_slot(task, 0, false))
		return 0;
	if (!task_slot(task, 0, true)) { /* no room: its time since open is lost, counted now */
		stat_inc(this_cpu(), VW_BPF_STAT_TASK_FULL);
		return 0;
	}
	emit(ctx->meta->seq, task, sre);
	return 0;
}

/* At every read: one record per live thread. Exiting threads are the exit path's. */
SEC("iter/task")
int vw_iter_read(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;

	if (!task || !task->pid || (task->flags & PF_EXITING))
		return 0;
	emit(ctx->meta->seq, task, task->se.sum_exec_runtime);
	return 0;
}

/* ---- interrupt time, out of the interrupted task's cgroup and process ---- */

/*
 * Without CONFIG_IRQ_TIME_ACCOUNTING the kernel adds every hardirq, and the softirqs run at its
 * exit, to the runtime of whichever task it interrupted, and to that task's cgroup: a workload
 * whose timers, I/O completions or IPIs fire on a CPU where another runs makes that one pay
 * (bench/evasion.sh: a 20 us nanosleep loop beside a burner put 9 % of the burner's time in
 * timer interrupts). These programs time each outermost span (nesting is counted per CPU) and
 * add it to the interrupted task's cgroup in irq_cgroups and its process in irq_procs, which
 * user space takes out of the container's usage and the process's time where they weigh its
 * share of energy: the span then falls in the node's uncontained rest, as the root's total
 * still counts it. The CPU's idle task pays nothing. A softirq run in task context (the task's
 * own local_bh_enable(), or ksoftirqd) is its own work and stays with it. User space loads
 * them only with the tp_btf programs, and not where the kernel leaves interrupts out itself.
 */
struct vw_irq_cpu {
	__u64 start_ns;    /* the outermost span's start */
	__u64 hard_end_ns; /* the last counted span's end (a softirq right after is irq_exit's) */
	__u32 depth;       /* spans open on this CPU, the outermost counted */
	__u32 own_soft;    /* a task-context softirq is open: not counted */
};

VW_MAP(BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct vw_irq_cpu) irq_cpus SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, VW_BPF_IRQ_CGROUPS);
	__type(key, __u64);
	__type(value, __u64);
} irq_cgroups SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, VW_BPF_IRQ_PROCS);
	__type(key, __u32);
	__type(value, __u64);
} irq_procs SEC(".maps");

/* d more in *map's entry for key, made if need be (two CPUs may race to make it); where the
 * map is full, the span and its d counted in the per-CPU stats full and full + 2 (the _NS one). */
static __always_inline void irq_add(void *map, const void *key, __u64 d, __u32 full)
{
	__u64 *v = bpf_map_lookup_elem(map, key);
	struct vw_bpf_cpu *c;

	if (v) {
		__sync_fetch_and_add(v, d);
		return;
	}
	if (bpf_map_update_elem(map, key, &d, BPF_NOEXIST) == 0)
		return;
	v = bpf_map_lookup_elem(map, key);
	if (v) {
		__sync_fetch_and_add(v, d);
		return;
	}
	c = this_cpu();
	if (c && full + 2 < VW_BPF_STAT__COUNT) {
		__sync_fetch_and_add(&c->stats[full], 1);
		__sync_fetch_and_add(&c->stats[full + 2], d);
	}
}

static __always_inline void irq_begin(bool soft)
{
	__u32 zero = 0;
	struct vw_irq_cpu *c = bpf_map_lookup_elem(&irq_cpus, &zero);
	__u64 now = bpf_ktime_get_ns();

	if (!c)
		return;
	/* An exit these programs missed (attached between a span's entry and its exit, entries
	 * first) would leave the CPU's state open for good, and no span counted there again:
	 * softirqs never nest, so one still marked open at a softirq's entry has ended; no span
	 * lasts VW_BPF_IRQ_STALE_NS. */
	if (soft)
		c->own_soft = 0;
	if (c->depth && now - c->start_ns > VW_BPF_IRQ_STALE_NS)
		c->depth = 0;
	if (soft && c->depth == 0 && now - c->hard_end_ns > VW_BPF_IRQ_EXIT_WINDOW_NS) {
		c->own_soft = 1;
		return;
	}
	if (c->depth++ == 0)
		c->start_ns = now;
}

static __always_inline void irq_end(bool soft)
{
	__u32 zero = 0;
	struct vw_irq_cpu *c = bpf_map_lookup_elem(&irq_cpus, &zero);
	struct task_struct *task;
	__u64 now, d, cgid;
	__u32 tgid;

	if (!c)
		return;
	if (soft && c->own_soft) { /* softirqs never nest: this is its end */
		c->own_soft = 0;
		return;
	}
	if (c->depth == 0 || --c->depth) /* its start was before attach, or an inner span */
		return;
	now = bpf_ktime_get_ns();
	d = now - c->start_ns;
	c->hard_end_ns = now; /* the next vector of the same irq_exit() follows at once */
	task = bpf_get_current_task_btf();
	if (!task->pid)
		return;
	cgid = vw_task_cgroup_id_btf(task, cgroup_v1);
	tgid = task->tgid;
	irq_add(&irq_cgroups, &cgid, d, VW_BPF_STAT_IRQ_CGROUP_FULL);
	irq_add(&irq_procs, &tgid, d, VW_BPF_STAT_IRQ_PROC_FULL);
}

SEC("tp_btf/irq_handler_entry")
int BPF_PROG(vw_irq_entry)
{
	irq_begin(false);
	return 0;
}

SEC("tp_btf/irq_handler_exit")
int BPF_PROG(vw_irq_exit)
{
	irq_end(false);
	return 0;
}

SEC("tp_btf/softirq_entry")
int BPF_PROG(vw_sirq_entry)
{
	irq_begin(true);
	return 0;
}

SEC("tp_btf/softirq_exit")
int BPF_PROG(vw_sirq_exit)
{
	irq_end(true);
	return 0;
}

/* x86's local APIC timer (hrtimers, the tick) has no irq_handler_* of its own: loaded where
 * the kernel has the tracepoint. */
SEC("tp_btf/local_timer_entry")
int BPF_PROG(vw_timer_entry)
{
	irq_begin(false);
	return 0;
}

SEC("tp_btf/local_timer_exit")
int BPF_PROG(vw_timer_exit)
{
	irq_end(false);
	return 0;
}

/* ---- optional per-process counters ---- */

/*
 * The one sched_switch program, loaded only where user space opened counters (a hardware PMU,
 * or software stand-ins in tests): it reads each kind's per-CPU counting event on this CPU and
 * charges the increase since the previous switch here (the slice that ends now) to prev's
 * thread group. A per-CPU counter says nothing of whose slice it was except at the switch;
 * where no counter opens, nothing of this accountant runs per switch.
 */
const volatile __u32 hw_mask = 0; /* bit k: kind k's map is filled */

/* One counting event per CPU (max_entries: libbpf makes it the number of CPUs). */
#define VW_PERF_ARRAY(name)                                                                        \
	struct {                                                                                   \
		__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);                                       \
		__uint(key_size, sizeof(__u32));                                                   \
		__uint(value_size, sizeof(__u32));                                                 \
	} name SEC(".maps")

VW_PERF_ARRAY(hw_cycles);
VW_PERF_ARRAY(hw_instructions);
VW_PERF_ARRAY(hw_cache_misses);

VW_MAP(BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct vw_bpf_hw_cpu) hw_cpus SEC(".maps");
/* sized by user space */
VW_MAP(BPF_MAP_TYPE_HASH, __u32, struct vw_bpf_hw_proc) hw_procs SEC(".maps");

/* The increase of one kind since the last switch on this CPU, scaled by enabled/running. */
static __always_inline __u64 hw_delta(struct vw_bpf_hw_cpu *c, void *map, __u32 k)
{
	struct bpf_perf_event_value v;
	struct vw_bpf_hw_read *last;
	__u64 dc, de, dr;
	bool had;

	if (!(hw_mask & (1u << k)) || k >= VW_BPF_HW__COUNT)
		return 0;
	if (bpf_perf_event_read_value(map, BPF_F_CURRENT_CPU, &v, sizeof(v)) != 0) {
		c->stats[VW_BPF_HW_STAT_READ_ERR]++;
		return 0;
	}
	last = &c->last[k];
	had = (c->seen & (1u << k)) && v.counter >= last->counter && v.enabled >= last->enabled &&
	      v.running >= last->running;
	dc = v.counter - last->counter;
	de = v.enabled - last->enabled;
	dr = v.running - last->running;
	last->counter = v.counter;
	last->enabled = v.enabled;
	last->running = v.running;
	c->seen |= 1u << k;
	if (!had || dr == 0)
		return 0;
	if (dr >= de)
		return dc;
	return dc / dr * de + dc % dr * de / dr; /* no 128-bit product in BPF */
}

static __always_inline void hw_charge(struct vw_bpf_hw_cpu *c, __u32 tgid, __u64 start,
				      const __u64 d[VW_BPF_HW__COUNT])
{
	struct vw_bpf_hw_proc *p = bpf_map_lookup_elem(&hw_procs, &tgid), v = {};

	if (!p) {
		v.start_ns = start;
		v.value[0] = d[0];
		v.value[1] = d[1];
		v.value[2] = d[2];
		if (bpf_map_update_elem(&hw_procs, &tgid, &v, BPF_NOEXIST) == 0)
			return;
		p = bpf_map_lookup_elem(&hw_procs, &tgid); /* another CPU created it */
		if (!p) {
			c->stats[VW_BPF_HW_STAT_FULL]++;
			return;
		}
	}
	if (p->start_ns != start) { /* the tgid was reused before user space collected it */
		c->stats[VW_BPF_HW_STAT_REUSED]++;
		p->value[0] = p->value[1] = p->value[2] = 0;
		p->start_ns = start;
	}
	__sync_fetch_and_add(&p->value[0], d[0]);
	__sync_fetch_and_add(&p->value[1], d[1]);
	__sync_fetch_and_add(&p->value[2], d[2]);
}

/* Every switch: take this CPU's readings (the idle task's slices too, charged to no one). */
static __always_inline struct vw_bpf_hw_cpu *hw_switch(__u64 d[VW_BPF_HW__COUNT])
{
	__u32 zero = 0;
	struct vw_bpf_hw_cpu *c = bpf_map_lookup_elem(&hw_cpus, &zero);

	if (!c)
		return NULL;
	d[VW_BPF_HW_CYCLES] = hw_delta(c, &hw_cycles, VW_BPF_HW_CYCLES);
	d[VW_BPF_HW_INSTRUCTIONS] = hw_delta(c, &hw_instructions, VW_BPF_HW_INSTRUCTIONS);
	d[VW_BPF_HW_CACHE_MISSES] = hw_delta(c, &hw_cache_misses, VW_BPF_HW_CACHE_MISSES);
	return c;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(vw_hwc_btf, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u64 d[VW_BPF_HW__COUNT];
	struct vw_bpf_hw_cpu *c = hw_switch(d);

	if (c && prev->pid && (d[0] | d[1] | d[2]))
		hw_charge(c, prev->tgid, prev->group_leader->start_boottime, d);
	return 0;
}

SEC("raw_tp/sched_switch")
int BPF_PROG(vw_hwc_raw, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u64 d[VW_BPF_HW__COUNT];
	struct vw_bpf_hw_cpu *c = hw_switch(d);

	if (c && BPF_CORE_READ(prev, pid) && (d[0] | d[1] | d[2]))
		hw_charge(c, BPF_CORE_READ(prev, tgid),
			  vw_task_start_boottime(BPF_CORE_READ(prev, group_leader)), d);
	return 0;
}

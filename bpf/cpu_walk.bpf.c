// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * The read iterator's faster twin, where the kernel has the open-coded task iterator (6.7+,
 * bpf_iter_task_new): one call walks every thread under RCU, with no reference taken and no
 * PID lookup per task (the task/ seq iterator's find_ge_pid + get_pid_task + pid_nr_ns per
 * thread were 35 % of the daemon's CPU at 10,000 processes), and sums each process's threads
 * here, so user space gets one record per process.
 *
 * Two walks, each an iter/task program attached for one task only (the daemon's main thread:
 * link_info task.tid), so each read() of its iterator runs it once. Records go to walk_out, an
 * mmap'able array sized by user space; the seq file gets a struct vw_bpf_walk_hdr. A process
 * whose record found no room is counted in `lost`, and user space reads the task/ iterator
 * instead that time. The records mean what cpu_time.bpf.c's vw_iter_read emits (pid is the
 * tgid).
 *
 * vw_walk, the full walk: every thread of every process (~2.2 ms at 10,000 processes, three
 * quarters of it in bpf_iter_task_next on cold task_structs).
 *
 * vw_walk_ran, the ran walk: only the processes that ran since the last walk. A sched_switch
 * program (vw_mark) marks `prev`, the thread switched out (it ran), once per epoch: its task
 * storage holds the epoch it was last marked in; when that is not the current one it is set and
 * prev's tgid appended to this CPU's ring (struct vw_bpf_ring). The common path, a thread
 * already marked this epoch, is one storage lookup and a compare. The ran walk reads each
 * ring's head, then moves the epoch, then takes each ring's [tail, head) and each CPU's running
 * task (rq->curr, found through a kernel thread bound to that CPU: see `anchors`; a task that
 * never switches out is never marked), and sums each of those
 * processes once (the leader's storage holds the walk it was last summed in) from the task
 * bpf_task_from_pid() gives, over its threads (BPF_TASK_ITER_PROC_THREADS). A process with no
 * live thread left gets a VW_BPF_REC_GONE record.
 *
 * The order of a ran walk: (1) each ring's head, the snapshot; (2) the epoch moved; (3) each
 * CPU's running task summed; (4) each ring's entries from its tail to its head now summed, and
 * the tail moved to the snapshot, not to the head now. A thread that ran and switched out at
 * time s was marked with the epoch current at s, at s or earlier in that epoch, after the walk
 * that started the epoch took its snapshot: so the entry lies at or past that walk's tail, and
 * the next walk, whose step (2) comes after s, reads it in its step (4), after s. An entry
 * made between (1) and (4) is read twice, now and by the next walk: a thread marked there with
 * the new epoch (no further mark this epoch) may run again after this walk summed it. A
 * thread that never switches out is in (3). So a process whose thread exited before the read
 * of the per-process map (cpu_bpf.c reads it first) is summed again by this walk: its exiting
 * thread switched out (marked) or is still running, and a record from before its exit, which
 * would count the thread twice beside the map's time, never outlives the read. Processes not
 * in a ran walk did not run: user space keeps their last record. (One ordering is not fenced:
 * a switch that reads the epoch just before the walk moves it, its slice's runtime store not
 * yet visible to the walk's CPU, is seen a walk later, or at the next full walk.) Where
 * a mark found no room (a ring full, no storage) the ran walk says so and walks nothing; user
 * space runs the full walk, which empties the rings, moves the epoch, and so starts over.
 *
 * vw_mark is loaded, not attached, by the loader: the daemon attaches it (and detaches it by
 * closing its link) as --cpu.ran-walk says, by default only while it pays
 * (shared/engine/cpu_ranwalk.h). While it is detached nothing marks, so every read is a full
 * walk, and so is the first after it is attached: its ring reset and epoch move start the marks
 * over, stale storage epochs and ring entries included.
 */
#include "vmlinux.h"
#include "vmlinux_iter.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "core_fixes.bpf.h"
#include "cpu_time.h"

#define VW_TASK_ITER_ALL_THREADS 1 /* kernel/bpf/task_iter.c: processes, each with its threads */
#define VW_TASK_ITER_PROC_THREADS 2 /* one process's threads */

/* GPL-2.0 OR Apache-2.0 (the SPDX line): the kernel is given the GPL-2.0 alternative, the one of
 * its known strings (include/linux/license.h) that this licence offers; "Dual BSD/GPL" named a
 * BSD licence these sources never had. */
char LICENSE[] SEC("license") = "GPL";

const volatile __u32 cgroup_v1 = 0;
const volatile __u32 nr_cpus = 1;                     /* possible CPUs: the rings to read */
const volatile __u32 ring_mask = VW_BPF_RING_CAP - 1; /* the rings' capacity less one */

/* Moved by each walk; 0 is never current (a new storage's marks read 0). */
__u32 epoch = 1;

extern int bpf_iter_task_new(struct bpf_iter_task *it, struct task_struct *task,
			     unsigned int flags) __ksym;
extern struct task_struct *bpf_iter_task_next(struct bpf_iter_task *it) __ksym;
extern void bpf_iter_task_destroy(struct bpf_iter_task *it) __ksym;
/* The ran walk's (6.2+): weak, so that the full walk loads without them. */
extern int bpf_iter_num_new(struct bpf_iter_num *it, int start, int end) __ksym;
extern int *bpf_iter_num_next(struct bpf_iter_num *it) __ksym;
extern void bpf_iter_num_destroy(struct bpf_iter_num *it) __ksym;
extern struct task_struct *bpf_task_from_pid(s32 pid) __ksym __weak;
extern void bpf_task_release(struct task_struct *p) __ksym __weak;

/* for (i = start; i < end; i++) on the open-coded numbers iterator (6.4+; libbpf's bpf_for,
 * which Debian 12's libbpf 1.1 lacks): verified once, whatever the count. The void reference
 * makes clang emit the BTF of the destructor, which only the cleanup attribute calls. */
#define vw_for(i, start, end)                                                                      \
	for (struct bpf_iter_num ___it __attribute__((aligned(8),                                  \
						      cleanup(bpf_iter_num_destroy))),             \
	     *___p __attribute__((unused)) = (bpf_iter_num_new(&___it, (start), (end)),             \
					      (void)bpf_iter_num_destroy, (void *)0);              \
	     ({                                                                                    \
		     int *___t = bpf_iter_num_next(&___it);                                        \
		     ___t && ((i) = *___t, (i) >= (start) && (i) < (end));                         \
	     });)

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct vw_bpf_ring);
} rings SEC(".maps");

/*
 * Per CPU, the pid of a kernel thread bound to it (ksoftirqd/N, cpuhp/N, migration/N: the
 * lowest pid the full walk met), set by the full walk: the ran walk finds each CPU's run queue,
 * and its running task, through it (task->se.cfs_rq->rq->curr). The run queues' per-CPU ksym
 * (runqueues) would be simpler, but the verifier resolves a variable ksym through kallsyms,
 * which lists no data without CONFIG_KALLSYMS_ALL. se.cfs_rq->rq needs CONFIG_FAIR_GROUP_SCHED
 * (every distribution's): without it the ran walk does not load, and every walk is a full one.
 * An anchor that is gone or moved makes the ran walk give way to a full walk, which picks
 * another. Sized by user space (possible CPUs).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} anchors SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct vw_bpf_mark);
} marks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1); /* sized by user space */
	__type(key, __u32);
	__type(value, struct vw_bpf_task_rec);
} walk_out SEC(".maps");

/* The record of the process being summed, closed: stored, or counted lost. */
static __always_inline void put(struct vw_bpf_walk_hdr *h, struct vw_bpf_task_rec *cur)
{
	__u32 k = h->n;
	struct vw_bpf_task_rec *slot;

	if (!cur->tgid)
		return;
	slot = bpf_map_lookup_elem(&walk_out, &k);
	if (!slot) {
		h->lost++;
		return;
	}
	*slot = *cur;
	h->n++;
}

/* A ring of another CPU (the walks'), or this CPU's (the switch program's). */
static __always_inline struct vw_bpf_ring *ring_of(__u32 cpu)
{
	__u32 zero = 0;

	return bpf_map_lookup_percpu_elem(&rings, &zero, cpu);
}

/* Before a full walk: every mark made so far is covered by it. The overflow flags are
 * taken first, so a mark dropped after this is the next walk's to see. */
static __always_inline void rings_reset(void)
{
	int cpu;

	vw_for(cpu, 0, nr_cpus) {
		struct vw_bpf_ring *r = ring_of(cpu);

		if (!r)
			continue;
		__sync_lock_test_and_set(&r->overflow, 0);
		r->tail = __sync_fetch_and_add(&r->head, 0);
	}
	__sync_fetch_and_add(&epoch, 1);
}

/* A kernel thread bound to one CPU: that CPU's anchor, if it has none or a younger one. */
static __always_inline void anchor(struct task_struct *t)
{
	__u32 cpu = vw_task_cpu(t);
	__u32 *a = bpf_map_lookup_elem(&anchors, &cpu);

	if (a && (!*a || (__u32)t->pid < *a))
		*a = t->pid;
}

SEC("iter/task")
int vw_walk(struct bpf_iter__task *ctx)
{
	struct vw_bpf_walk_hdr h = {};
	struct vw_bpf_task_rec cur = {};
	struct bpf_iter_task it;
	struct task_struct *t, *leader;

	if (!ctx->task)
		return 0;
	h.flags = VW_BPF_WALK_FULL;
	rings_reset();
	bpf_iter_task_new(&it, NULL, VW_TASK_ITER_ALL_THREADS);
	while ((t = bpf_iter_task_next(&it))) {
		__u32 tgid = t->tgid;

		if (!t->pid || (t->flags & PF_EXITING)) /* exiting: the exit path's */
			continue;
		if ((t->flags & PF_KTHREAD) && t->nr_cpus_allowed == 1)
			anchor(t);
		if (tgid != cur.tgid) {
			put(&h, &cur);
			leader = t->group_leader;
			cur.tgid = tgid;
			cur.pid = tgid;
			cur.runtime_ns = 0;
			cur.cgroup_id = vw_task_cgroup_id_btf(t, cgroup_v1);
			cur.start_ns = leader->start_boottime;
			__builtin_memcpy(cur.comm, leader->comm, sizeof(cur.comm));
			cur.comm[sizeof(cur.comm) - 1] = '\0';
			cur.flags = t->flags & PF_KTHREAD ? VW_BPF_REC_KTHREAD : 0;
		}
		cur.runtime_ns += t->se.sum_exec_runtime;
	}
	bpf_iter_task_destroy(&it);
	put(&h, &cur);
	bpf_seq_write(ctx->meta->seq, &h, sizeof(h));
	return 0;
}

/* ---- the ran walk ---- */

/* sched_switch: prev ran. Once per epoch its tgid goes to this CPU's ring. */
SEC("tp_btf/sched_switch")
int BPF_PROG(vw_mark, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u32 e = *(volatile __u32 *)&epoch, zero = 0;
	struct vw_bpf_mark *m;
	struct vw_bpf_ring *r;
	__u64 head;

	if (!prev->pid) /* the idle task, switched out at each wake-up: not a process */
		return 0;
	m = bpf_task_storage_get(&marks, prev, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (m && m->marked == e)
		return 0;
	r = bpf_map_lookup_elem(&rings, &zero);
	if (!r)
		return 0;
	if (!m) { /* no storage: this thread would never be marked */
		r->overflow = 1;
		return 0;
	}
	m->marked = e;
	head = r->head;
	if (head - *(volatile __u64 *)&r->tail > ring_mask) {
		r->overflow = 1;
		return 0;
	}
	r->slot[head & ring_mask & (VW_BPF_RING_CAP - 1)] = prev->tgid;
	__sync_fetch_and_add(&r->head, 1); /* ordered after the slot's write */
	return 0;
}

/* One process the ran walk met (a mark, a running task): summed once per walk. A global
 * function, verified once on its own: inlined in the walk's loops, its own loop's states
 * multiplied past the verifier's limits. */
__noinline int visit(struct vw_bpf_walk_hdr *h, __u32 tgid, __u32 we)
{
	struct vw_bpf_task_rec cur = {};
	struct task_struct *leader, *t;
	struct bpf_iter_task it;
	struct vw_bpf_mark *m;

	if (!h || !tgid)
		return 0;
	h->marks++;
	leader = bpf_task_from_pid(tgid);
	cur.tgid = tgid;
	cur.pid = tgid;
	cur.flags = VW_BPF_REC_GONE;
	if (!leader) {
		put(h, &cur);
		return 0;
	}
	if (leader->tgid != tgid) { /* the pid is now a thread of another process */
		bpf_task_release(leader);
		put(h, &cur);
		return 0;
	}
	m = bpf_task_storage_get(&marks, leader, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (m && m->walked == we) {
		bpf_task_release(leader);
		return 0;
	}
	if (m)
		m->walked = we;
	cur.start_ns = leader->start_boottime;
	__builtin_memcpy(cur.comm, leader->comm, sizeof(cur.comm));
	cur.comm[sizeof(cur.comm) - 1] = '\0';
	bpf_iter_task_new(&it, leader, VW_TASK_ITER_PROC_THREADS);
	while ((t = bpf_iter_task_next(&it))) {
		if (!t->pid || (t->flags & PF_EXITING))
			continue;
		if (cur.flags & VW_BPF_REC_GONE) { /* the first live thread: as the full walk */
			cur.cgroup_id = vw_task_cgroup_id_btf(t, cgroup_v1);
			cur.flags = t->flags & PF_KTHREAD ? VW_BPF_REC_KTHREAD : 0;
		}
		cur.runtime_ns += t->se.sum_exec_runtime;
	}
	bpf_iter_task_destroy(&it);
	bpf_task_release(leader);
	put(h, &cur);
	return 0;
}

SEC("iter/task")
int vw_walk_ran(struct bpf_iter__task *ctx)
{
	struct vw_bpf_walk_hdr h = {};
	__u32 over = 0, we;
	int cpu;

	if (!ctx->task)
		return 0;
	vw_for(cpu, 0, nr_cpus) {
		struct vw_bpf_ring *r = ring_of(cpu);

		if (r && r->overflow) {
			__sync_lock_test_and_set(&r->overflow, 0);
			over = 1;
		}
	}
	if (over) {
		h.flags = VW_BPF_WALK_OVERFLOW;
		bpf_seq_write(ctx->meta->seq, &h, sizeof(h));
		return 0;
	}
	vw_for(cpu, 0, nr_cpus) {
		struct vw_bpf_ring *r = ring_of(cpu);

		if (r)
			r->snap = __sync_fetch_and_add(&r->head, 0);
	}
	we = __sync_fetch_and_add(&epoch, 1) + 1;
	vw_for(cpu, 0, nr_cpus) {
		__u32 c = (__u32)cpu, *a = bpf_map_lookup_elem(&anchors, &c), tgid = 0;
		struct task_struct *t;

		if (!a || !*a)
			continue; /* not possible, or no anchor yet: offline */
		t = bpf_task_from_pid(*a);
		if (t && (t->flags & PF_KTHREAD) && t->nr_cpus_allowed == 1 && vw_task_cpu(t) == c) {
			struct task_struct *run = t->se.cfs_rq->rq->curr;

			tgid = run && run->pid ? run->tgid : 0;
			bpf_task_release(t);
			visit(&h, tgid, we);
			continue;
		}
		if (t)
			bpf_task_release(t);
		*a = 0; /* gone (a CPU unplugged): the full walk finds another */
		h.flags = VW_BPF_WALK_OVERFLOW;
		bpf_seq_write(ctx->meta->seq, &h, sizeof(h));
		return 0;
	}
	vw_for(cpu, 0, nr_cpus) {
		struct vw_bpf_ring *r = ring_of(cpu);
		__u64 tail, head;
		int i;

		if (!r)
			continue;
		tail = r->tail;
		head = __sync_fetch_and_add(&r->head, 0);
		if (head - tail > ring_mask + 1)
			tail = head - ring_mask - 1;
		vw_for(i, 0, (int)(head - tail))
			visit(&h, r->slot[(tail + i) & ring_mask & (VW_BPF_RING_CAP - 1)], we);
		__sync_lock_test_and_set(&r->tail, r->snap);
	}
	bpf_seq_write(ctx->meta->seq, &h, sizeof(h));
	return 0;
}

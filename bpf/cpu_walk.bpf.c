// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * The read iterator's faster twin, where the kernel has the open-coded task iterator (6.7+,
 * bpf_iter_task_new): one call walks every thread under RCU, with no reference taken and no
 * PID lookup per task (the task/ seq iterator's find_ge_pid + get_pid_task + pid_nr_ns per
 * thread were 35 % of the daemon's CPU at 10,000 processes), and sums each process's threads
 * here, so user space gets one record per process.
 *
 * It is an iter/task program attached for one task only (the daemon's main thread: link_info
 * task.tid), so each read() of its iterator runs it once. Records go to walk_out, an mmap'able
 * array sized by user space; the seq file gets a struct vw_bpf_walk_hdr. A process whose
 * record found no room is counted in `lost`, and user space reads the task/ iterator instead
 * that time. The records mean what cpu_time.bpf.c's vw_iter_read emits (pid is the tgid).
 */
#include "vmlinux.h"
#include "vmlinux_iter.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "core_fixes.bpf.h"
#include "cpu_time.h"

#define VW_TASK_ITER_ALL_THREADS 1 /* kernel/bpf/task_iter.c: processes, each with its threads */

/* GPL-2.0 OR Apache-2.0 (the SPDX line): the kernel is given the GPL-2.0 alternative, the one of
 * its known strings (include/linux/license.h) that this licence offers; "Dual BSD/GPL" named a
 * BSD licence these sources never had. */
char LICENSE[] SEC("license") = "GPL";

const volatile __u32 cgroup_v1 = 0;

extern int bpf_iter_task_new(struct bpf_iter_task *it, struct task_struct *task,
			     unsigned int flags) __ksym;
extern struct task_struct *bpf_iter_task_next(struct bpf_iter_task *it) __ksym;
extern void bpf_iter_task_destroy(struct bpf_iter_task *it) __ksym;

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

SEC("iter/task")
int vw_walk(struct bpf_iter__task *ctx)
{
	struct vw_bpf_walk_hdr h = {};
	struct vw_bpf_task_rec cur = {};
	struct bpf_iter_task it;
	struct task_struct *t, *leader;

	if (!ctx->task)
		return 0;
	bpf_iter_task_new(&it, NULL, VW_TASK_ITER_ALL_THREADS);
	while ((t = bpf_iter_task_next(&it))) {
		__u32 tgid = t->tgid;

		if (!t->pid || (t->flags & PF_EXITING)) /* exiting: the exit path's */
			continue;
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

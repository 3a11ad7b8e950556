// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * Benchmark baselines, not used by virtwatt.
 *
 * null_switch: an empty tp_btf/sched_switch program, the floor of what kernel.bpf_stats
 * reports per event on this machine (trampoline and clock reads included).
 *
 * tail_switch: the common path of the sched_switch program virtwatt ran until 2026-11-24 (it
 * only acted when prev was exiting, to add an exiting thread's last slices; sched_process_free
 * does that now): a flags load and a return on every switch.
 *
 * kl_switch: the shape of Kepler v0.7's sched_switch program
 * (timestamp at switch-in per (pid, cpu), lookup + delete at switch-out, per-process hash
 * update with comm and cgroup), minus its three perf-counter reads, which have no hardware
 * behind them on the build machine. A lower bound on what Kepler's program costs.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

/* GPL-2.0 OR Apache-2.0 (the SPDX line): the kernel is given the GPL-2.0 alternative, the one of
 * its known strings (include/linux/license.h) that this licence offers; "Dual BSD/GPL" named a
 * BSD licence these sources never had. */
char LICENSE[] SEC("license") = "GPL";

struct pid_cpu {
	__u32 pid;
	__u32 cpu;
};

struct proc_metrics {
	__u64 cgroup_id;
	__u64 pid;
	__u64 process_run_time;
	__u64 cpu_cycles, cpu_instr, cache_miss; /* Kepler keeps these; zero here */
	char comm[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, struct pid_cpu);
	__type(value, __u64);
} pid_time SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, __u32);
	__type(value, struct proc_metrics);
} processes SEC(".maps");

SEC("tp_btf/sched_switch")
int BPF_PROG(null_switch, bool preempt, struct task_struct *prev)
{
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(tail_switch, bool preempt, struct task_struct *prev)
{
	if (!(prev->flags & 0x00000004 /* PF_EXITING */) || !prev->pid)
		return 0;
	return 1;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(kl_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u32 cpu = bpf_get_smp_processor_id(), tgid = prev->tgid;
	__u64 ts = bpf_ktime_get_ns(), cgid = bpf_get_current_cgroup_id(), delta = 0;
	struct pid_cpu key = { .pid = prev->pid, .cpu = cpu };
	struct proc_metrics *p, v = {};
	__u64 *start;

	start = bpf_map_lookup_elem(&pid_time, &key);
	if (start) {
		delta = (ts - *start) / 1000; /* Kepler accounts in us */
		bpf_map_delete_elem(&pid_time, &key);
	}
	p = bpf_map_lookup_elem(&processes, &tgid);
	if (p) {
		p->process_run_time += delta;
		p->cgroup_id = cgid;
	} else {
		v.cgroup_id = cgid;
		v.pid = tgid;
		v.process_run_time = delta;
		bpf_get_current_comm(v.comm, sizeof(v.comm));
		bpf_map_update_elem(&processes, &tgid, &v, BPF_NOEXIST);
	}
	key.pid = next->pid;
	bpf_map_update_elem(&pid_time, &key, &ts, BPF_ANY);
	return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CO-RE flavors for kernel fields that were renamed: ___o is the old layout, picked at load time
 * with bpf_core_field_exists() so one object runs on old and new kernels.
 */
#pragma once

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>

/* include/linux/sched.h's task flags (macros: not in vmlinux.h). */
#define PF_EXITING 0x00000004 /* set in exit_signals(), never cleared */
#define PF_KTHREAD 0x00200000 /* a kernel thread */

/* v5.5, "time: Rename tsk->real_start_time to ->start_boottime". */
struct task_struct___o {
	u64 real_start_time;
} __attribute__((preserve_access_index));

/* Boot-time start of a task in ns: what /proc/PID/stat field 22 reports (in ticks). */
static __always_inline __u64 vw_task_start_boottime(struct task_struct *t)
{
	if (bpf_core_field_exists(t->start_boottime))
		return BPF_CORE_READ(t, start_boottime);
	return BPF_CORE_READ((struct task_struct___o *)t, real_start_time);
}

/* v5.16, "sched: move CPU field back into thread_info if THREAD_INFO_IN_TASK=y". */
struct task_struct___cpu {
	unsigned int cpu;
} __attribute__((preserve_access_index));

static __always_inline __u32 vw_task_cpu(struct task_struct *t)
{
	if (bpf_core_field_exists(t->thread_info.cpu))
		return BPF_CORE_READ(t, thread_info.cpu);
	return BPF_CORE_READ((struct task_struct___cpu *)t, cpu);
}

/* The cgroup id of a trusted task pointer (iterators): plain loads, which fault to 0 safely.
 * v1: the cpuacct controller's cgroup, where one is mounted; else the default (v2) cgroup. */
static __always_inline __u64 vw_task_cgroup_id_btf(struct task_struct *task, bool v1)
{
	struct cgroup_subsys_state *css;

	if (v1 && bpf_core_enum_value_exists(enum cgroup_subsys_id, cpuacct_cgrp_id)) {
		css = task->cgroups->subsys[bpf_core_enum_value(enum cgroup_subsys_id,
								 cpuacct_cgrp_id)];
		return css ? css->cgroup->kn->id : 0;
	}
	return task->cgroups->dfl_cgrp->kn->id;
}

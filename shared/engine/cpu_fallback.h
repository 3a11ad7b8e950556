/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Why the bpf CPU accountant did not open, when procfs accounting runs in its place: the cause a
 * user can fix (a seccomp profile, a capability, a kernel without BTF, a security module), told
 * once as a warning with the fix, and as virtwatt_cpu_accounting_fallback{reason} for alerts.
 *
 * The cause comes from the process itself, not from /proc: its effective capabilities
 * (capget), its seccomp mode (PR_GET_SECCOMP) and one bpf(2) call with an invalid command,
 * which the kernel answers EINVAL to any caller allowed to use bpf() at all, while a seccomp
 * filter or a missing capability answers EPERM (ENOSYS from some filters).
 */
#pragma once

#include <stdbool.h>

enum vw_cpu_fallback {
	VW_CPU_FALLBACK_NONE,
	VW_CPU_FALLBACK_CAPABILITY, /* neither CAP_BPF + CAP_PERFMON nor CAP_SYS_ADMIN held */
	VW_CPU_FALLBACK_SECCOMP,    /* bpf() denied by this process's seccomp filter */
	VW_CPU_FALLBACK_BTF,        /* no kernel BTF (kernel/btf/vmlinux under --host.sysfs) */
	VW_CPU_FALLBACK_PERMISSION, /* bpf() denied with the capabilities and no seccomp filter:
				     * a security module (SELinux, AppArmor) or lockdown */
	VW_CPU_FALLBACK_KERNEL,     /* bpf() works, the programs did not load or attach */
	VW_CPU_FALLBACK__COUNT,
};

/* What the cause is read from; vw_cpu_probe() fills all but err and btf. */
struct vw_cpu_probe {
	int err;           /* the bpf accountant's open error, -errno */
	bool btf;          /* kernel/btf/vmlinux exists under the sysfs root */
	bool cap_bpf, cap_perfmon, cap_sys_admin; /* effective */
	bool seccomp;      /* in seccomp filter mode */
	int bpf_errno;     /* errno of bpf(invalid command): EINVAL = the kernel answered */
};

/* This process's capabilities, seccomp mode and bpf(2) answer into p (err, btf untouched). */
void vw_cpu_probe(struct vw_cpu_probe *p);
enum vw_cpu_fallback vw_cpu_fallback_classify(const struct vw_cpu_probe *p);
/* The `reason` label: capability, seccomp, btf, permission, kernel ("" for NONE). */
const char *vw_cpu_fallback_name(enum vw_cpu_fallback f);
/* One sentence: what to change so that bpf accounting works. */
const char *vw_cpu_fallback_fix(enum vw_cpu_fallback f);

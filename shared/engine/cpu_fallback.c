/* SPDX-License-Identifier: Apache-2.0 */
/* Why bpf CPU accounting is not running: the probe and its classification (cpu_fallback.h). */
#include "cpu_fallback.h"

#include <errno.h>
#include <linux/capability.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "macro.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif
#define PROBE_CMD 0x7fff /* no bpf(2) command: EINVAL from the kernel itself */

static bool has_cap(const struct __user_cap_data_struct d[2], unsigned cap)
{
	return d[cap / 32].effective & (1u << (cap % 32));
}

void vw_cpu_probe(struct vw_cpu_probe *p)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { 0 };
	uint64_t attr[16] = { 0 };

	if (syscall(SYS_capget, &h, d) == 0) {
		p->cap_bpf = has_cap(d, CAP_BPF);
		p->cap_perfmon = has_cap(d, CAP_PERFMON);
		p->cap_sys_admin = has_cap(d, CAP_SYS_ADMIN);
	}
	p->seccomp = prctl(PR_GET_SECCOMP, 0, 0, 0, 0) == 2;
	p->bpf_errno = syscall(SYS_bpf, PROBE_CMD, attr, sizeof(attr)) < 0 ? errno : 0;
}

enum vw_cpu_fallback vw_cpu_fallback_classify(const struct vw_cpu_probe *p)
{
	bool denied = p->bpf_errno == EPERM || p->bpf_errno == EACCES || p->bpf_errno == ENOSYS;

	if (!p->err)
		return VW_CPU_FALLBACK_NONE;
	if (!p->cap_sys_admin && !(p->cap_bpf && p->cap_perfmon))
		return VW_CPU_FALLBACK_CAPABILITY;
	if (denied && p->seccomp)
		return VW_CPU_FALLBACK_SECCOMP;
	if (!p->btf)
		return VW_CPU_FALLBACK_BTF;
	if (denied)
		return VW_CPU_FALLBACK_PERMISSION;
	return VW_CPU_FALLBACK_KERNEL;
}

static const struct {
	const char *name, *fix;
} causes[VW_CPU_FALLBACK__COUNT] = {
	[VW_CPU_FALLBACK_NONE] = { "", "" },
	[VW_CPU_FALLBACK_CAPABILITY] = {
		"capability",
		"run as root with CAP_BPF and CAP_PERFMON (Kubernetes: securityContext.capabilities.add "
		"[BPF, PERFMON]; systemd: AmbientCapabilities=CAP_BPF CAP_PERFMON)" },
	[VW_CPU_FALLBACK_SECCOMP] = {
		"seccomp",
		"the container's seccomp profile denies bpf() (containers/common's default, used by "
		"Podman and CRI-O, allows it only with CAP_SYS_ADMIN): use the profile "
		"deploy/seccomp/virtwatt-host.json (Kubernetes: seccompProfile type Localhost; Podman: "
		"--security-opt seccomp=virtwatt-host.json), not Unconfined" },
	[VW_CPU_FALLBACK_BTF] = {
		"btf",
		"the kernel has no BTF (/sys/kernel/btf/vmlinux): use a kernel built with "
		"CONFIG_DEBUG_INFO_BTF=y, and mount the host's /sys at --host.sysfs" },
	[VW_CPU_FALLBACK_PERMISSION] = {
		"permission",
		"bpf() is denied with CAP_BPF held and no seccomp filter: a security module (SELinux, "
		"AppArmor) or kernel lockdown forbids it; allow bpf for virtwatt-host there" },
	[VW_CPU_FALLBACK_KERNEL] = {
		"kernel",
		"the programs did not load or attach on this kernel (5.8 or newer with BTF is "
		"needed; on kernels before 5.11 raise RLIMIT_MEMLOCK): see the error above" },
};

const char *vw_cpu_fallback_name(enum vw_cpu_fallback f)
{
	return (unsigned)f < ARRAY_SIZE(causes) ? causes[f].name : "";
}

const char *vw_cpu_fallback_fix(enum vw_cpu_fallback f)
{
	return (unsigned)f < ARRAY_SIZE(causes) ? causes[f].fix : "";
}

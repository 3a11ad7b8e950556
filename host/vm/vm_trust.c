/* SPDX-License-Identifier: Apache-2.0 */
/* Whose QEMU processes name VMs (vm_trust.h). */
#include "vm_trust.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "log.h"
#include "macro.h"
#include "vm_priv.h"

#define PASSWD "etc/passwd"
#define PASSWD_MAX (4u << 20)

struct vw_qemu_trust {
	int root_fd; /* the host's root, for etc/passwd; -1: none */
	uint32_t *uids; /* the listed users' (root is always trusted, not listed) */
	size_t n;
	size_t untrusted; /* QEMU-looking processes of others at the last full scan */
	size_t claims;    /* QEMUs below the host's PID namespace refused a host QEMU's UUID */
	size_t pods;      /* QEMUs in a pod below it refused: the pod is not KubeVirt's */
	struct vw_complaint complaint, claim_complaint, pod_complaint;
};

static const char *const l_node[] = { "node_name", NULL };

static const struct vw_metric_family trust_families[] = {
	{ "virtwatt_vm_untrusted_qemu_processes", VW_METRIC_GAUGE,
	  "Processes that look like QEMU (a QEMU binary's name in argv[0]) but whose real or "
	  "effective user is not trusted (root and --vm.qemu-users), at the last process scan: "
	  "ordinary processes, never VMs, whatever -uuid or -name they give",
	  NULL, l_node },
	{ "virtwatt_vm_refused_qemu_claims", VW_METRIC_GAUGE,
	  "QEMU processes in a PID namespace below the host's (a container's) that claimed the UUID "
	  "of a QEMU in the host's own, at the last process scan: not that VM (a container cannot "
	  "start a process above its namespace), however young",
	  NULL, l_node },
	{ "virtwatt_vm_refused_pod_qemu_processes", VW_METRIC_GAUGE,
	  "Processes of trusted users that look like QEMU in a Kubernetes pod's cgroup and a PID "
	  "namespace below the host's (a container without hostPID) whose pod is not KubeVirt's "
	  "virt-launcher as the pod metadata says (labels kubevirt.io=virt-launcher and "
	  "kubevirt.io/domain, and its controller ownerReference the kubevirt.io "
	  "VirtualMachineInstance that label names; or no pod metadata, or the pod not listed yet), "
	  "at the last process scan: ordinary processes of their pod, not VMs",
	  NULL, l_node },
};

const struct vw_family_table vw_qemu_trust_family_table = {
	"host/vm/vm_trust.c: vw_qemu_trust_render()", "virtwatt-host",
	"with --metrics including vm (or passthrough on): whether a local user runs a process that "
	"would name itself a VM",
	trust_families, ARRAY_SIZE(trust_families),
};

/*
 * The line of passwd text whose name is name (uid ignored) or, name NULL, whose UID is uid:
 * its UID into *ret_uid and its name into ret_name (size bytes, may be 0). -ENOENT.
 */
static int passwd_find(const char *text, const char *name, uint32_t uid, uint32_t *ret_uid,
		       char *ret_name, size_t size)
{
	for (const char *line = text; *line;) {
		const char *end = strchrnul(line, '\n'), *c1, *c2, *c3;
		char num[16];
		uint64_t v;

		c1 = memchr(line, ':', (size_t)(end - line));
		c2 = c1 ? memchr(c1 + 1, ':', (size_t)(end - c1 - 1)) : NULL;
		c3 = c2 ? memchr(c2 + 1, ':', (size_t)(end - c2 - 1)) : NULL;
		if (c3 && c3 - c2 - 1 > 0 && (size_t)(c3 - c2 - 1) < sizeof(num)) {
			memcpy(num, c2 + 1, (size_t)(c3 - c2 - 1));
			num[c3 - c2 - 1] = '\0';
			if (vw_parse_u64(num, &v) == 0 && v < UINT32_MAX &&
			    (name ? strlen(name) == (size_t)(c1 - line) &&
					    memcmp(line, name, (size_t)(c1 - line)) == 0
				  : v == uid)) {
				if (ret_uid)
					*ret_uid = (uint32_t)v;
				if (size)
					snprintf(ret_name, size, "%.*s", (int)(c1 - line), line);
				return 0;
			}
		}
		line = *end ? end + 1 : end;
	}
	return -ENOENT;
}

static int read_passwd(int root_fd, char **ret)
{
	size_t len;

	if (root_fd < 0)
		return -EBADF;
	return vw_read_alloc_in_root(root_fd, PASSWD, PASSWD_MAX, ret, &len, NULL);
}

/* One --vm.qemu-users entry: a UID (decimal), else a user name looked up in passwd. */
static int add_user(struct vw_qemu_trust *t, const char *user, const char *passwd, size_t *cap)
{
	uint64_t v;
	uint32_t uid;

	if (vw_parse_u64(user, &v) == 0 && v < UINT32_MAX) {
		uid = (uint32_t)v;
	} else if (!passwd || passwd_find(passwd, user, 0, &uid, NULL, 0) < 0) {
		vw_debug("vm: --vm.qemu-users: no user %s in the host's %s; left out", user, PASSWD);
		return 0;
	}
	if (vw_array_grow((void **)&t->uids, sizeof(*t->uids), t->n, cap) < 0)
		return -ENOMEM;
	t->uids[t->n++] = uid;
	return 0;
}

struct vw_qemu_trust *vw_qemu_trust_new(int root_fd, const char *const *users, size_t n)
{
	_cleanup_free_ char *passwd = NULL;
	struct vw_qemu_trust *t = calloc(1, sizeof(*t));
	size_t cap = 0;
	int r = 0;

	if (!t)
		return NULL;
	t->root_fd = root_fd >= 0 ? fcntl(root_fd, F_DUPFD_CLOEXEC, 3) : -1;
	if (n) {
		r = read_passwd(t->root_fd, &passwd);
		if (r < 0)
			vw_info("vm: cannot read the host's %s: %s; --vm.qemu-users names no user, "
				"only root's and the UIDs given name VMs", PASSWD, strerror(-r));
	}
	for (size_t i = 0; i < n; i++) {
		r = add_user(t, users[i], passwd, &cap);
		if (r < 0) {
			vw_qemu_trust_free(t);
			errno = -r;
			return NULL;
		}
	}
	return t;
}

void vw_qemu_trust_free(struct vw_qemu_trust *t)
{
	if (!t)
		return;
	if (t->root_fd >= 0)
		close(t->root_fd);
	free(t->uids);
	free(t);
}

bool vw_qemu_trust_uid(const struct vw_qemu_trust *t, uint32_t uid)
{
	if (uid == 0)
		return true;
	for (size_t i = 0; t && i < t->n; i++)
		if (t->uids[i] == uid)
			return true;
	return false;
}

bool vw_qemu_trusted(const struct vw_qemu_trust *t, const struct vw_qemu_proc *p)
{
	return vw_qemu_trust_uid(t, p->uid) && vw_qemu_trust_uid(t, p->euid);
}

void vw_qemu_trust_scanned(struct vw_qemu_trust *t, size_t n, const struct vw_qemu_proc *first)
{
	_cleanup_free_ char *passwd = NULL;
	char name[64] = "?";
	uint32_t uid;

	if (!t)
		return;
	t->untrusted = n;
	if (!n || !first) {
		if (t->complaint.active)
			vw_release(&t->complaint, VW_LOG_INFO,
				   "vm: no QEMU-looking process of an untrusted user any more");
		return;
	}
	uid = vw_qemu_trust_uid(t, first->uid) ? first->euid : first->uid;
	if (read_passwd(t->root_fd, &passwd) == 0)
		(void)passwd_find(passwd, NULL, uid, NULL, name, sizeof(name));
	vw_complain(&t->complaint, VW_LOG_WARN,
		    "vm: process %" PRIu32 " looks like QEMU (-uuid %s) but runs as user %s "
		    "(uid %" PRIu32 "), who is not trusted to run VMs: it is an ordinary process, "
		    "not a VM (%zu such); if that user runs this host's VMs, add it to "
		    "--vm.qemu-users",
		    first->pid, first->cmd.uuid[0] ? first->cmd.uuid : "none",
		    name, uid, n);
}

void vw_qemu_trust_claims(struct vw_qemu_trust *t, size_t n, uint32_t pid, const char *uuid)
{
	if (!t)
		return;
	t->claims = n;
	if (!n) {
		if (t->claim_complaint.active)
			vw_release(&t->claim_complaint, VW_LOG_INFO,
				   "vm: no QEMU in a container claims a host QEMU's UUID any more");
		return;
	}
	vw_complain(&t->claim_complaint, VW_LOG_WARN,
		    "vm: process %" PRIu32 ", a QEMU in a PID namespace below the host's (a "
		    "container), claims -uuid %s, which a QEMU in the host's namespace runs: not "
		    "that VM, an ordinary process (%zu such)",
		    pid, uuid, n);
}

void vw_qemu_trust_pods(struct vw_qemu_trust *t, size_t n, uint32_t pid, const char *pod_uid,
			int why)
{
	if (!t)
		return;
	t->pods = n;
	if (!n) {
		if (t->pod_complaint.active)
			vw_release(&t->pod_complaint, VW_LOG_INFO,
				   "vm: no QEMU-looking process in a pod that is not KubeVirt's any "
				   "more");
		return;
	}
	vw_complain(&t->pod_complaint, VW_LOG_WARN,
		    "vm: process %" PRIu32 " looks like QEMU in pod %s, in a PID namespace below "
		    "the host's, but %s: only a KubeVirt virt-launcher pod's QEMU is a VM there "
		    "(any root in a pod can start a process under a QEMU's name); it is an "
		    "ordinary process of its pod (%zu such)",
		    pid, pod_uid[0] ? pod_uid : "(unknown)",
		    why == -ENODEV ? "there is no pod metadata (--kube.enable)"
		    : why == -ENOENT ? "the pod metadata does not list that pod (yet)"
		    : why == -EPERM ? "it is labelled as KubeVirt's but not owned by a "
				      "VirtualMachineInstance (its controller ownerReference)"
		    : why == -EBADMSG ? "it is labelled as KubeVirt's but owned by a "
					"VirtualMachineInstance other than its kubevirt.io/domain "
					"label names"
				      : "the pod metadata says it is no virt-launcher (labels "
					"kubevirt.io=virt-launcher, kubevirt.io/domain)",
		    n);
}

size_t vw_qemu_trust_pods_refused(const struct vw_qemu_trust *t)
{
	return t ? t->pods : 0;
}

size_t vw_qemu_trust_claims_refused(const struct vw_qemu_trust *t)
{
	return t ? t->claims : 0;
}

size_t vw_qemu_trust_untrusted(const struct vw_qemu_trust *t)
{
	return t ? t->untrusted : 0;
}

int vw_qemu_trust_render(const struct vw_qemu_trust *t, struct vw_prom_writer *w,
			 const char *node_name)
{
	const char *node[] = { node_name, NULL };

	if (!t)
		return 0;
	(void)vw_prom_table_trust(&vw_qemu_trust_family_table); /* checked once, not each render */
	int r = vw_prom_single(w, &trust_families[0], node, (double)t->untrusted);

	if (r >= 0)
		r = vw_prom_single(w, &trust_families[1], node, (double)t->claims);
	return r < 0 ? r : vw_prom_single(w, &trust_families[2], node, (double)t->pods);
}

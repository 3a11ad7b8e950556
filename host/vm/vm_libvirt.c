/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The vw_vm_libvirt source: the core (vm_libvirt_core.c) over the libvirt helper
 * (vm_libvirt_child.c). Built only when libvirt is found (-Dlibvirt=auto).
 *
 * libvirt is never loaded in the daemon: libvirt with GLib, libxml2, ICU and its transports is
 * ~14 MiB resident in any process that maps it, more than the rest of the daemon at 10,000
 * processes. Each question goes to a short-lived run of this same binary
 * (`--internal-libvirt-list=URI`, vm_libvirt_helper.c) that connects read-only, answers on a
 * pipe and exits: at the first VM, when the process scan sees a QEMU start, when one it knew
 * is gone, and at each reconcile (30 s). What libvirt's lifecycle events gave in-process
 * becomes: a start within one process-scan interval, a stop at the next interval (its QEMU is
 * gone), a pause, resume or rename within the reconcile period.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "config.h"
#include "macro.h"
#include "vm_libvirt_child.h"
#include "vm_libvirt_priv.h"
#include "vm_priv.h"

#define HELPER_BACKOFF_MAX_NS (300 * VW_NSEC_PER_SEC)

/* The libvirt source's options (virtwatt-host's --help and YAML: host/options.c collects them). */
struct libvirt_options {
	char *uri;
};

static const struct vw_option libvirt_rows[] = {
	{ "libvirt.uri", "libvirt.uri", VW_OPT_STRING, offsetof(struct libvirt_options, uri),
	  "qemu:///system", "URI",
	  "libvirt connection for VM discovery (read-only); VMs libvirt does not manage are found "
	  "from QEMU processes" },
};

static const struct vw_source_options libvirt_options = {
	.rows = libvirt_rows,
	.n_rows = ARRAY_SIZE(libvirt_rows),
	.size = sizeof(struct libvirt_options),
};

struct source {
	void *core;
	struct vw_virt_child *child;
};

static void libvirt_close(void *state)
{
	struct source *s = state;

	if (!s)
		return;
	vw_virt_child_cancel(s->child); /* a hung helper must not hold the worker up */
	vw_vm_libvirt_close(s->core);   /* joins the worker: no run in flight after it */
	vw_virt_child_free(s->child);
	free(s);
}

static int libvirt_open(const struct vw_vm_env *env, void **ret_state)
{
	const struct libvirt_options *o = vw_vm_source_config(env, &vw_vm_libvirt);
	struct vw_vm_env e = *env;
	struct source *s;
	int r;

	if (o) /* "": the default, as no option */
		e.libvirt_uri = o->uri && *o->uri ? o->uri : NULL;
	/* A helper run costs ~15 ms of CPU where an in-process attempt cost little: without a
	 * libvirtd (Proxmox runs QEMU without one) retry every 5 min, not every minute; a QEMU that
	 * starts meanwhile asks at once (vms_seen). */
	if (!e.backoff_max_ns)
		e.backoff_max_ns = HELPER_BACKOFF_MAX_NS;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	r = vw_virt_child_new(env->procfs_fd, env->libvirt_helper, env->libvirt_helper_timeout_ns,
			      &s->child);
	if (r == 0)
		r = vw_vm_libvirt_open_local(&e, &vw_virt_child_api, s->child, &s->core);
	if (r < 0) {
		libvirt_close(s);
		return r;
	}
	*ret_state = s;
	return 0;
}

static int libvirt_list(void *state, struct vw_vm_info **ret, size_t *ret_n)
{
	return vw_vm_libvirt_list(((struct source *)state)->core, ret, ret_n);
}

static bool libvirt_vms_seen(void *state, size_t n)
{
	return vw_vm_libvirt_vms_seen(((struct source *)state)->core, n);
}

static int libvirt_news_fd(void *state)
{
	return vw_vm_libvirt_news_fd(((struct source *)state)->core);
}

const struct vw_vm_source_ops vw_vm_libvirt = {
	.name = "libvirt",
	.open = libvirt_open,
	.list = libvirt_list,
	.close = libvirt_close,
	.vms_seen = libvirt_vms_seen,
	.news_fd = libvirt_news_fd,
	.options = &libvirt_options,
};

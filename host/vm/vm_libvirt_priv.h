/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The libvirt source is two halves: vm_libvirt_core.c (a worker thread, the domain cache,
 * reconcile, reconnect with backoff, QEMU PIDs from procfs) and the table below. The
 * daemon's table (vm_libvirt_child.c) answers through short-lived runs of a helper, the only
 * process that loads libvirt (vm_libvirt_helper.c); unit tests plug a fake libvirt into the
 * same core through this table.
 *
 * Every api function returns 0 or -errno. A connection that is gone is reported as -ENOTCONN,
 * -ECONNRESET, -EPIPE, -ECONNREFUSED or -ESHUTDOWN; the core then closes it and reconnects.
 * The core never holds its own lock while calling the table. No table delivers lifecycle events
 * or a close callback: a lost connection is a failed call.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vm_source.h"

/* An active domain as virConnectListAllDomains sees it. */
struct vw_virt_dom {
	char uuid[VW_UUID_LEN];
	char name[256]; /* as libvirt gave it: untrusted bytes */
	int id;         /* libvirt's domain ID: new on every start of the domain */
};

/* One record of virConnectGetAllDomainStats. */
struct vw_virt_stat {
	char uuid[VW_UUID_LEN];
	enum vw_vm_state state;
};

struct vw_virt_api {
	/* Process-wide setup, reference counted: started before the first connect. */
	int (*loop_start)(void *data);
	void (*loop_stop)(void *data);
	/* Read-only connection. */
	int (*connect)(void *data, const char *uri, void **ret_conn);
	void (*close)(void *conn);
	/* Optional: a reconcile pass begins; full: it will fetch every domain's XML again. */
	void (*pass)(void *conn, bool full);
	/* Active domains (malloc'd array). */
	int (*list)(void *conn, struct vw_virt_dom **ret, size_t *ret_n);
	/* The live XML of one domain (malloc'd). -ENOENT when it is gone. */
	int (*get_xml)(void *conn, const char *uuid, char **ret);
	/* The state of every active domain (malloc'd array). */
	int (*stats)(void *conn, struct vw_virt_stat **ret, size_t *ret_n);
	/* Text of the calling thread's last failure, for logs; never NULL. */
	const char *(*last_error)(void *data);
};

/* Load libvirt (libvirt_lazy.c): NULL, or why not, naming the package (a static string). */
const char *vw_libvirt_load(void);

int vw_vm_libvirt_open_api(const struct vw_vm_env *env, const struct vw_virt_api *api, void *data,
			   void **ret_state);
/*
 * The same, dormant: nothing starts (the daemon's table: no helper runs) until
 * vw_vm_libvirt_vms_seen reports a VM that the other sources found (a QEMU process); list()
 * reports none meanwhile. A node that runs no VM never runs libvirt at all.
 */
int vw_vm_libvirt_open_dormant(const struct vw_vm_env *env, const struct vw_virt_api *api,
			       void *data, void **ret_state);
/* Dormant for this host's own QEMU driver (qemu:///system, the default, or qemu:///session),
 * which has nothing to say before a VM runs here; any other URI connects at once. */
int vw_vm_libvirt_open_local(const struct vw_vm_env *env, const struct vw_virt_api *api,
			     void *data, void **ret_state);
/* After each round of the registry: n VMs were listed. The first n > 0 wakes a dormant source
 * (its first connection waited for, as at open): true then, if it started. */
bool vw_vm_libvirt_vms_seen(void *state, size_t n);
int vw_vm_libvirt_list(void *state, struct vw_vm_info **ret, size_t *ret_n);
/* An eventfd (non-blocking; the caller reads it, never closes it) readable once a reconcile
 * changed what list() says of a domain's channel: a domain new or started again (a restore), its
 * channel's or share's path changed. -1: none (no eventfd could be made). */
int vw_vm_libvirt_news_fd(void *state);
void vw_vm_libvirt_close(void *state);

/* ---- For tests ---- */

struct vw_vm_libvirt_counters {
	bool connected;
	unsigned connects, connect_failures, reconciles, xml_fetches, stats_fetches;
	unsigned news; /* reconciles that told news_fd */
	uint64_t next_connect_ns; /* when the next attempt is due (vw_now_ns() clock) */
};

void vw_vm_libvirt_get_counters(void *state, struct vw_vm_libvirt_counters *ret);
/* Wake the worker and wait until it is idle with nothing due. 0, or -ETIMEDOUT. */
int vw_vm_libvirt_settle(void *state, uint64_t timeout_ms);

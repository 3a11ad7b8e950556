/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The libvirt calls behind struct vw_virt_api, and the vw_vm_libvirt source. Built only when
 * libvirt is found (-Dlibvirt=auto).
 *
 * Event loop: libvirt's default implementation (virEventRegisterDefaultImpl), registered once
 * per process, run by one thread while any source is open. A disabled timer is the thread's
 * doorbell: setting it to 0 wakes virEventRunDefaultImpl so the thread can see it must stop.
 * Keepalive (5 s, 3 probes) runs in that loop too and turns a hung libvirtd into a closed
 * connection. libvirt's own error printing is routed to vw_log at debug level; the core logs
 * the failures that matter, once, with context.
 *
 * Callbacks and freeing. A lifecycle callback may still be running on the loop thread when
 * deregistering returns, so struct conn is reference counted (ours, plus the event registration's,
 * released by libvirt's free callback once no dispatch uses it), and a callback only calls into
 * the core under the connection's mutex while it is not yet closed.
 */
#include <errno.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <pthread.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "log.h"
#include "macro.h"
#include "thread.h"
#include "vm_libvirt_priv.h"
#include "vm_priv.h"

#define KEEPALIVE_INTERVAL_S 5
#define KEEPALIVE_COUNT 3

struct conn {
	virConnectPtr c;
	int ev_id;
	bool close_registered;
	pthread_mutex_t mu;
	bool closed;
	struct vw_virt_handlers h;
	atomic_uint refs;
};

/* ---- Event loop ---- */

static pthread_mutex_t loop_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned loop_refs;
static bool loop_registered;
static int loop_timer = -1;
static pthread_t loop_thread;
static atomic_bool loop_quit;

static void libvirt_error(void *userdata, virErrorPtr err)
{
	(void)userdata;
	if (err && err->message)
		vw_debug("vm: libvirt says: %s", err->message);
}

static void loop_doorbell(int timer, void *opaque)
{
	(void)opaque;
	virEventUpdateTimeout(timer, -1);
}

static void *loop_main(void *arg)
{
	(void)arg;
	while (!atomic_load(&loop_quit))
		if (virEventRunDefaultImpl() < 0)
			vw_debug("vm: libvirt event loop: %s", virGetLastErrorMessage());
	return NULL;
}

static int api_loop_start(void *data)
{
	const char *why = vw_libvirt_load(); /* the first call loads it (libvirt_lazy.c) */
	sigset_t old_mask;
	int r = 0;

	(void)data;
	if (why) {
		vw_warn("vm: libvirt: %s", why);
		return -ENOPKG;
	}
	pthread_mutex_lock(&loop_mu);
	/* Whatever threads libvirt starts from here on inherit a mask with every signal blocked. */
	vw_signals_block_all(&old_mask);
	if (loop_refs == 0) {
		if (!loop_registered) {
			if (virInitialize() < 0) {
				r = -EIO;
				goto out;
			}
			virSetErrorFunc(NULL, libvirt_error);
			if (virEventRegisterDefaultImpl() < 0) {
				r = -EIO;
				goto out;
			}
			loop_registered = true;
		}
		loop_timer = virEventAddTimeout(-1, loop_doorbell, NULL, NULL);
		if (loop_timer < 0) {
			r = -EIO;
			goto out;
		}
		atomic_store(&loop_quit, false);
		r = vw_thread_create(&loop_thread, loop_main, NULL);
		if (r < 0) {
			virEventRemoveTimeout(loop_timer);
			loop_timer = -1;
			goto out;
		}
	}
	loop_refs++;
out:
	vw_signals_restore(&old_mask);
	pthread_mutex_unlock(&loop_mu);
	return r;
}

static void api_loop_stop(void *data)
{
	(void)data;
	pthread_mutex_lock(&loop_mu);
	if (loop_refs && --loop_refs == 0) {
		atomic_store(&loop_quit, true);
		virEventUpdateTimeout(loop_timer, 0);
		pthread_join(loop_thread, NULL);
		virEventRemoveTimeout(loop_timer);
		loop_timer = -1;
	}
	pthread_mutex_unlock(&loop_mu);
}

/* ---- Connections ---- */

static void conn_unref(void *opaque)
{
	struct conn *c = opaque;

	if (atomic_fetch_sub(&c->refs, 1) != 1)
		return;
	pthread_mutex_destroy(&c->mu);
	free(c);
}

/* A failed call on a connection: gone (-ENOTCONN) or not. */
static int call_error(struct conn *c)
{
	virErrorPtr e = virGetLastError();

	if (e && (e->code == VIR_ERR_NO_DOMAIN || e->code == VIR_ERR_OPERATION_INVALID))
		return -ENOENT;
	return virConnectIsAlive(c->c) == 1 ? -EIO : -ENOTCONN;
}

static int api_connect(void *data, const char *uri, void **ret_conn)
{
	struct conn *c;

	(void)data;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->ev_id = -1;
	atomic_init(&c->refs, 1);
	pthread_mutex_init(&c->mu, NULL);
	c->c = virConnectOpenReadOnly(uri);
	if (!c->c) {
		conn_unref(c);
		return -ECONNREFUSED;
	}
	if (virConnectSetKeepAlive(c->c, KEEPALIVE_INTERVAL_S, KEEPALIVE_COUNT) < 0)
		vw_debug("vm: libvirt: no keepalive on %s: %s", uri, virGetLastErrorMessage());
	*ret_conn = c;
	return 0;
}

static enum vw_virt_event map_event(int event)
{
	switch (event) {
	case VIR_DOMAIN_EVENT_STARTED:
		return VW_VIRT_EV_STARTED;
	case VIR_DOMAIN_EVENT_STOPPED:
		return VW_VIRT_EV_STOPPED;
	case VIR_DOMAIN_EVENT_SUSPENDED:
	case VIR_DOMAIN_EVENT_PMSUSPENDED:
		return VW_VIRT_EV_SUSPENDED;
	case VIR_DOMAIN_EVENT_RESUMED:
		return VW_VIRT_EV_RESUMED;
	case VIR_DOMAIN_EVENT_DEFINED:
		return VW_VIRT_EV_DEFINED;
	case VIR_DOMAIN_EVENT_UNDEFINED:
		return VW_VIRT_EV_UNDEFINED;
	default:
		return VW_VIRT_EV_OTHER;
	}
}

/* A domain's UUID, canonical. 0, or -EINVAL. */
static int dom_uuid(virDomainPtr dom, char out[VW_UUID_LEN])
{
	char raw[VIR_UUID_STRING_BUFLEN];

	if (virDomainGetUUIDString(dom, raw) < 0)
		return -EINVAL;
	return vw_vm_uuid_canon(raw, strlen(raw), out);
}

static int on_lifecycle(virConnectPtr vc, virDomainPtr dom, int event, int detail, void *opaque)
{
	struct conn *c = opaque;
	char uuid[VW_UUID_LEN];

	(void)vc;
	(void)detail;
	if (dom_uuid(dom, uuid) < 0)
		return 0;
	pthread_mutex_lock(&c->mu);
	if (!c->closed)
		c->h.event(c->h.core, uuid, map_event(event));
	pthread_mutex_unlock(&c->mu);
	return 0;
}

static void on_close(virConnectPtr vc, int reason, void *opaque)
{
	struct conn *c = opaque;

	(void)vc;
	vw_debug("vm: libvirt: connection closed (reason %d)", reason);
	pthread_mutex_lock(&c->mu);
	if (!c->closed)
		c->h.closed(c->h.core);
	pthread_mutex_unlock(&c->mu);
}

static int api_register_events(void *conn, const struct vw_virt_handlers *h)
{
	struct conn *c = conn;

	c->h = *h;
	atomic_fetch_add(&c->refs, 1);
	c->ev_id = virConnectDomainEventRegisterAny(c->c, NULL, VIR_DOMAIN_EVENT_ID_LIFECYCLE,
						    VIR_DOMAIN_EVENT_CALLBACK(on_lifecycle), c,
						    conn_unref);
	if (c->ev_id < 0) {
		conn_unref(c);
		return call_error(c);
	}
	/* libvirt calls the close callback under the lock that unregistering takes: no free
	 * callback needed (drivers without close callbacks would never call it anyway). */
	if (virConnectRegisterCloseCallback(c->c, on_close, c, NULL) < 0)
		vw_debug("vm: libvirt: no close callback: %s", virGetLastErrorMessage());
	else
		c->close_registered = true;
	return 0;
}

static void api_close(void *conn)
{
	struct conn *c = conn;

	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	c->closed = true; /* waits for a running callback; none reaches the core after this */
	pthread_mutex_unlock(&c->mu);
	if (c->ev_id >= 0)
		virConnectDomainEventDeregisterAny(c->c, c->ev_id);
	if (c->close_registered)
		virConnectUnregisterCloseCallback(c->c, on_close);
	virConnectClose(c->c);
	conn_unref(c);
}

/* ---- Queries ---- */

static int api_list(void *conn, struct vw_virt_dom **ret, size_t *ret_n)
{
	struct conn *c = conn;
	virDomainPtr *doms = NULL;
	struct vw_virt_dom *out;
	size_t o = 0;
	int n;

	n = virConnectListAllDomains(c->c, &doms, VIR_CONNECT_LIST_DOMAINS_ACTIVE);
	if (n < 0)
		return call_error(c);
	out = calloc(n ? (size_t)n : 1, sizeof(*out));
	for (int i = 0; i < n; i++) {
		const char *name = virDomainGetName(doms[i]);

		if (out && dom_uuid(doms[i], out[o].uuid) == 0) {
			snprintf(out[o].name, sizeof(out[o].name), "%s", name ? name : "");
			out[o].id = (int)virDomainGetID(doms[i]);
			o++;
		}
		virDomainFree(doms[i]);
	}
	free(doms);
	if (!out)
		return -ENOMEM;
	*ret = out;
	*ret_n = o;
	return 0;
}

static int api_get_xml(void *conn, const char *uuid, char **ret)
{
	struct conn *c = conn;
	virDomainPtr dom = virDomainLookupByUUIDString(c->c, uuid);
	char *xml;

	if (!dom)
		return call_error(c);
	xml = virDomainGetXMLDesc(dom, 0);
	if (!xml) {
		int r = call_error(c);

		virDomainFree(dom);
		return r;
	}
	virDomainFree(dom);
	*ret = xml;
	return 0;
}

static enum vw_vm_state map_state(int s)
{
	switch (s) {
	case VIR_DOMAIN_PAUSED:
	case VIR_DOMAIN_PMSUSPENDED:
		return VW_VM_PAUSED;
	case VIR_DOMAIN_SHUTOFF:
	case VIR_DOMAIN_CRASHED:
		return VW_VM_SHUTOFF;
	default: /* running, blocked, shutting down, no state */
		return VW_VM_RUNNING;
	}
}

static void read_record(virDomainStatsRecordPtr rec, struct vw_virt_stat *st)
{
	for (int j = 0; j < rec->nparams; j++) {
		const virTypedParameter *p = &rec->params[j];

		if (strcmp(p->field, "state.state") == 0 && p->type == VIR_TYPED_PARAM_INT)
			st->state = map_state(p->value.i);
	}
}

static int api_stats(void *conn, struct vw_virt_stat **ret, size_t *ret_n)
{
	struct conn *c = conn;
	virDomainStatsRecordPtr *recs = NULL;
	struct vw_virt_stat *out;
	size_t o = 0;
	int n;

	n = virConnectGetAllDomainStats(c->c, VIR_DOMAIN_STATS_STATE, &recs,
					VIR_CONNECT_GET_ALL_DOMAINS_STATS_ACTIVE);
	if (n < 0)
		return call_error(c);
	out = calloc(n ? (size_t)n : 1, sizeof(*out));
	for (int i = 0; out && i < n; i++)
		if (dom_uuid(recs[i]->dom, out[o].uuid) == 0)
			read_record(recs[i], &out[o++]);
	virDomainStatsRecordListFree(recs);
	if (!out)
		return -ENOMEM;
	*ret = out;
	*ret_n = o;
	return 0;
}

static const char *api_last_error(void *data)
{
	(void)data;
	return virGetLastErrorMessage();
}

static const struct vw_virt_api libvirt_api = {
	.loop_start = api_loop_start,
	.loop_stop = api_loop_stop,
	.connect = api_connect,
	.register_events = api_register_events,
	.close = api_close,
	.list = api_list,
	.get_xml = api_get_xml,
	.stats = api_stats,
	.last_error = api_last_error,
};

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

static int libvirt_open(const struct vw_vm_env *env, void **ret_state)
{
	const struct libvirt_options *o = vw_vm_source_config(env, &vw_vm_libvirt);
	struct vw_vm_env e = *env;

	if (o) /* "": the default, as no option */
		e.libvirt_uri = o->uri && *o->uri ? o->uri : NULL;
	return vw_vm_libvirt_open_local(&e, &libvirt_api, NULL, ret_state);
}

const struct vw_vm_source_ops vw_vm_libvirt = {
	.name = "libvirt",
	.open = libvirt_open,
	.list = vw_vm_libvirt_list,
	.close = vw_vm_libvirt_close,
	.vms_seen = vw_vm_libvirt_vms_seen,
	.options = &libvirt_options,
};

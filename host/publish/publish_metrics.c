/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The publisher's own families: what the per-VM locks (passthrough.lock-dir) did, and whether
 * each VM is receiving its power (frames and files written, failures by reason, the last
 * success, the channel's state) so an operator can alert on a VM that gets nothing. Rendered
 * by the host only while it publishes (the engine knows nothing of publication).
 */
#include "publish.h"

#include <string.h>

#include "macro.h"

static const char *const l_node[] = { "node_name", NULL };
static const char *const l_reason[] = { "reason", "node_name", NULL };
static const char *const l_decision_reason[] = { "decision", "reason", "node_name", NULL };
static const char *const l_vm[] = { "vm_id", "node_name", NULL };
static const char *const l_vm_transport[] = { "vm_id", "transport", "node_name", NULL };
static const char *const l_vm_reason[] = { "vm_id", "reason", "node_name", NULL };
static const char *const l_vm_state[] = { "vm_id", "state", "node_name", NULL };

enum {
	F_LOCK_REFUSED,
	F_NOT_PUBLISHED,
	F_SHARE_FRAMES,
	F_SHARE_WRITABLE,
	F_SHARE_STALLED,
	F_SHARE_ROOT_STALLED,
	F_PEER_REJECTED,
	F_VM_FRAMES,
	F_VM_FAILURES,
	F_VM_LAST_OK,
	F_VM_STATE,
	F__COUNT
};

static const struct vw_metric_family families[F__COUNT] = {
	[F_LOCK_REFUSED] = { "virtwatt_passthrough_lock_refused_total", VW_METRIC_COUNTER,
			     "Attempts to take a VM's publication lock (passthrough.lock-dir) that "
			     "another process held",
			     NULL, l_node },
	[F_NOT_PUBLISHED] = { "virtwatt_passthrough_vms_not_published", VW_METRIC_GAUGE,
			      "VMs seen but not published to their guests: another process holds "
			      "their lock (held_elsewhere), or it could not be taken (lock_error)",
			      NULL, l_reason },
	[F_SHARE_FRAMES] = { "virtwatt_passthrough_share_frames_total", VW_METRIC_COUNTER,
			     "Rounds of the VMs' shared folders (passthrough.share-root), all VMs: "
			     "frame.json written (decision=written) because the folder had none of "
			     "this process (reason=first), its opens cannot be seen (unwatched), its "
			     "zones changed (zones), it was opened within a minute (opened) or the "
			     "file would be 30 s old (keepalive); or not written (decision=skipped, "
			     "reason=unread): nobody opened it lately",
			     NULL, l_decision_reason },
	[F_SHARE_WRITABLE] = { "virtwatt_passthrough_share_writable_vms", VW_METRIC_GAUGE,
			       "VMs published to whose guest may write its shared folder: its "
			       "<filesystem> with target virtwatt has no <readonly/> and its source "
			       "is not on a read-only mount (as its QEMU sees it). Such a guest can "
			       "fill the file system of every VM's folder; the log names each VM and "
			       "the fix (deploy/libvirt/README.md)",
			       NULL, l_node },
	[F_SHARE_STALLED] = { "virtwatt_passthrough_share_stalled_vms", VW_METRIC_GAUGE,
			      "VMs whose shared folder's file system does not answer (a dead NFS "
			      "mount, a stuck virtiofsd): a write not back within 1 s and not since. "
			      "Their folders are not written (each round a failure of reason "
			      "share_timeout) until it answers; their channels and the other VMs' "
			      "folders go on. The log names each folder",
			      NULL, l_node },
	[F_SHARE_ROOT_STALLED] = { "virtwatt_passthrough_share_root_stalled", VW_METRIC_GAUGE,
				   "1 while the share root's open (passthrough.share-root) does not "
				   "answer (a folder of a dead NFS mount, a stuck FUSE daemon): not "
				   "back within 1 s and not since, at start or at a later round. No "
				   "VM's folder is written meanwhile (their channels go on); it is "
				   "opened again each round and the folders written, with their "
				   "totals, once it answers. The log names the root",
				   NULL, l_node },
	[F_PEER_REJECTED] = { "virtwatt_passthrough_channel_peer_rejected_total", VW_METRIC_COUNTER,
			      "Connections to VMs' org.virtwatt.power.0 sockets closed unused, all "
			      "VMs: the listener was not the VM's QEMU nor a root process's bound "
			      "under the VM's path (a socket or link put there by another user: the "
			      "log names it); each is also a failure of reason connect",
			      NULL, l_node },
	[F_VM_FRAMES] = { "virtwatt_vm_passthrough_frames_total", VW_METRIC_COUNTER,
			  "Frames of its own energy delivered whole to the VM: written on its "
			  "org.virtwatt.power.0 channel (transport=channel) or to its shared folder "
			  "(transport=share)",
			  NULL, l_vm_transport },
	[F_VM_FAILURES] = { "virtwatt_vm_passthrough_failures_total", VW_METRIC_COUNTER,
			    "Failed deliveries to the VM by reason: connect (its channel's socket), "
			    "send (a write on it), share_write (its shared folder), lock_refused "
			    "(another virtwatt-host holds its lock), share_timeout (a round its "
			    "shared folder was not written: its file system did not answer within "
			    "1 s)",
			    NULL, l_vm_reason },
	[F_VM_LAST_OK] = { "virtwatt_vm_passthrough_last_success_timestamp_seconds",
			   VW_METRIC_GAUGE,
			   "Unix time of the last frame delivered whole to the VM, either way (0: "
			   "none yet); time() minus it is how long the guest has had no power",
			   NULL, l_vm },
	[F_VM_STATE] = { "virtwatt_vm_passthrough_channel_state", VW_METRIC_GAUGE,
			 "The VM's delivery state, 1 for the current one: connected (its channel "
			 "is connected), disconnected (it has one, not connected now), absent (no "
			 "org.virtwatt.power.0 channel: the shared folder only, if any), "
			 "not_published (another process holds its lock, or it could not be taken)",
			 NULL, l_vm_state },
};

static const char *const vm_states[] = { "connected", "disconnected", "absent", "not_published" };
static const char *const reasons[] = { "connect", "send", "share_write", "lock_refused",
				       "share_timeout" };
static const char *const transports[] = { "channel", "share" };

#define MAX_ROWS 5 /* a VM's rows in one family: a reason or a state each */

/*
 * A family's rows for every VM: the labels after vm_id (a transport, reason or state, and
 * node_name) are the same for each VM's row k, escaped once a render (tail[k]); with each VM's
 * vm_id escaped once for its rows (vm_rows), a row escapes nothing.
 */
struct vm_render {
	struct vw_prom_writer *w;
	const char *node_name;
	int family;
	int r;
	const struct vw_prom_piece *tail[MAX_ROWS]; /* NULL: that row's escaped each time */
	struct vw_prom_piece tails[MAX_ROWS];
};

static const char *vm_state(const struct vw_publish_vm_stats *st)
{
	if (!st->locked)
		return "not_published";
	if (!st->has_channel)
		return "absent";
	return st->connected ? "connected" : "disconnected";
}

/* The VM's rows of the family: its vm_id escaped once for them all (the piece), not once a
 * row (up to five: a transport, reason or state each), the rest once a render (the tails). */
static void vm_rows(void *ud, const char *uuid, const struct vw_publish_vm_stats *st)
{
	struct vm_render *v = ud;
	const struct vw_metric_family *f = &families[v->family];
	const char *n = v->node_name;
	struct vw_prom_piece piece, *pc = NULL;
	int r = v->r;

	if (r < 0)
		return;
	if (v->family != F_VM_LAST_OK && /* one row: nothing to share */
	    vw_prom_piece_set(&piece, f->labels, 1, (const char *const[]){ uuid, NULL }))
		pc = &piece; /* else each row escapes it */
	switch (v->family) {
	case F_VM_FRAMES:
		if (st->has_channel)
			r = vw_prom_counter_pieces(
				v->w, pc, v->tail[0],
				(const char *const[]){ uuid, transports[0], n, NULL }, (double)st->sent);
		if (r == 0 && st->has_share)
			r = vw_prom_counter_pieces(
				v->w, pc, v->tail[1],
				(const char *const[]){ uuid, transports[1], n, NULL },
				(double)st->share_writes);
		break;
	case F_VM_FAILURES: {
		const uint64_t counts[] = { st->connect_errors, st->send_errors, st->share_errors,
					    st->lock_refused, st->share_timeouts };

		for (size_t i = 0; i < ARRAY_SIZE(reasons) && r == 0; i++)
			r = vw_prom_counter_pieces(v->w, pc, v->tail[i],
						   (const char *const[]){ uuid, reasons[i], n, NULL },
						   (double)counts[i]);
		break;
	}
	case F_VM_LAST_OK:
		r = vw_prom_gauge_milli_pieces(v->w, NULL, v->tail[0],
					       (const char *const[]){ uuid, n, NULL },
					       st->last_ok_unix_ns / VW_NSEC_PER_MSEC);
		break;
	default: {
		const char *cur = vm_state(st);

		for (size_t i = 0; i < ARRAY_SIZE(vm_states) && r == 0; i++)
			r = vw_prom_gauge_pieces(
				v->w, pc, v->tail[i],
				(const char *const[]){ uuid, vm_states[i], n, NULL },
				vm_states[i] == cur || strcmp(vm_states[i], cur) == 0);
	}
	}
	v->r = r;
}

/* The family's tails: row k's labels after vm_id (its transport, reason or state, then
 * node_name), or node_name alone. */
static void make_tails(struct vm_render *v)
{
	const struct vw_metric_family *f = &families[v->family];
	const char *const *rows = NULL;
	size_t n_rows = 0;

	switch (v->family) {
	case F_VM_FRAMES:
		rows = transports, n_rows = ARRAY_SIZE(transports);
		break;
	case F_VM_FAILURES:
		rows = reasons, n_rows = ARRAY_SIZE(reasons);
		break;
	case F_VM_STATE:
		rows = vm_states, n_rows = ARRAY_SIZE(vm_states);
		break;
	default: /* vm_id, node_name */
		if (vw_prom_piece_set_from(&v->tails[0], f->labels, 1, 1,
					   (const char *const[]){ "", v->node_name, NULL }))
			v->tail[0] = &v->tails[0];
		return;
	}
	for (size_t k = 0; k < n_rows && k < MAX_ROWS; k++)
		if (vw_prom_piece_set_from(&v->tails[k], f->labels, 1, 2,
					   (const char *const[]){ "", rows[k], v->node_name, NULL }))
			v->tail[k] = &v->tails[k];
}

/* One family of rows per listed VM. */
static int render_vms(const struct vw_publisher *p, struct vw_prom_writer *w,
		      const char *node_name, int family)
{
	struct vm_render v = { .w = w, .node_name = node_name, .family = family };
	int r = vw_prom_family(w, &families[family]);

	if (r < 0)
		return r;
	make_tails(&v);
	vw_publisher_each_vm(p, vm_rows, &v);
	return v.r < 0 ? v.r : vw_prom_family_end(w);
}

/* virtwatt_passthrough_share_frames_total: a row per reason. */
static int render_share_frames(struct vw_prom_writer *w, const struct vw_publish_stats *ps,
			       const char *node_name)
{
	int r = vw_prom_family(w, &families[F_SHARE_FRAMES]);

	for (size_t i = 0; i < VW_PUBLISH_SHARE_REASONS && r == 0; i++) {
		bool skipped;
		const char *reason = vw_publisher_share_reason(i, &skipped);

		r = vw_prom_counter(w,
				    (const char *const[]){ skipped ? "skipped" : "written", reason,
							   node_name, NULL },
				    (double)ps->share_frames[i]);
	}
	return r < 0 ? r : vw_prom_family_end(w);
}

const struct vw_family_table vw_publish_family_table = {
	"host/publish/publish_metrics.c: vw_publisher_render()", "virtwatt-host",
	"while the host publishes to its VMs (passthrough.enable)", families, F__COUNT,
};

int vw_publisher_render(const struct vw_publisher *p, struct vw_prom_writer *w,
			const char *node_name)
{
	const char *node[] = { node_name, NULL };
	const char *held[] = { "held_elsewhere", node_name, NULL };
	const char *failed[] = { "lock_error", node_name, NULL };
	struct vw_publish_stats ps;
	int r;

	if (!p)
		return 0;
	(void)vw_prom_table_trust(&vw_publish_family_table); /* checked once, not each render */
	vw_publisher_stats(p, &ps);
	r = vw_prom_single(w, &families[F_LOCK_REFUSED], node, (double)ps.lock_refused);
	if (r == 0)
		r = vw_prom_family(w, &families[F_NOT_PUBLISHED]);
	if (r == 0)
		r = vw_prom_gauge(w, held, (double)ps.vms_held_elsewhere);
	if (r == 0)
		r = vw_prom_gauge(w, failed, (double)ps.vms_lock_failed);
	if (r == 0)
		r = vw_prom_family_end(w);
	if (r == 0 && ps.share_root)
		r = render_share_frames(w, &ps, node_name);
	if (r == 0 && ps.share_root)
		r = vw_prom_single(w, &families[F_SHARE_WRITABLE], node,
				   (double)ps.share_writable_vms);
	if (r == 0 && ps.share_root)
		r = vw_prom_single(w, &families[F_SHARE_STALLED], node,
				   (double)ps.share_stalled_vms);
	if (r == 0 && ps.share_root)
		r = vw_prom_single(w, &families[F_SHARE_ROOT_STALLED], node,
				   ps.share_root_stalled ? 1.0 : 0.0);
	if (r == 0)
		r = vw_prom_single(w, &families[F_PEER_REJECTED], node, (double)ps.peer_rejected);
	for (int f = F_VM_FRAMES; f < F__COUNT && r == 0; f++)
		r = render_vms(p, w, node_name, f);
	return r;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The publisher's own families: what the per-VM locks (passthrough.lock-dir) did. Rendered by
 * the host only while it publishes (the engine knows nothing of publication).
 */
#include "publish.h"

#include "macro.h"

static const char *const l_node[] = { "node_name", NULL };
static const char *const l_reason[] = { "reason", "node_name", NULL };

enum { F_LOCK_REFUSED, F_NOT_PUBLISHED, F__COUNT };

static const struct vw_metric_family families[F__COUNT] = {
	[F_LOCK_REFUSED] = { "virtwatt_passthrough_lock_refused_total", VW_METRIC_COUNTER,
			     "Attempts to take a VM's publication lock (passthrough.lock-dir) that "
			     "another process held",
			     NULL, l_node },
	[F_NOT_PUBLISHED] = { "virtwatt_passthrough_vms_not_published", VW_METRIC_GAUGE,
			      "VMs seen but not published to their guests: another process holds "
			      "their lock (held_elsewhere), or it could not be taken (lock_error)",
			      NULL, l_reason },
};

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
	vw_publisher_stats(p, &ps);
	r = vw_prom_single(w, &families[F_LOCK_REFUSED], node, (double)ps.lock_refused);
	if (r == 0)
		r = vw_prom_family(w, &families[F_NOT_PUBLISHED]);
	if (r == 0)
		r = vw_prom_gauge(w, held, (double)ps.vms_held_elsewhere);
	if (r == 0)
		r = vw_prom_gauge(w, failed, (double)ps.vms_lock_failed);
	return r < 0 ? r : vw_prom_family_end(w);
}

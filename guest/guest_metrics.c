/* SPDX-License-Identifier: Apache-2.0 */
/* The guest's own families: where its energy comes from, and how the passthrough is doing. */
#include "guest_families.h"

#include "proto.h"
#include "reader.h"

static const char *const l_source[] = { "source", "host_source", "kind", "model", "node_name",
					NULL };
static const char *const l_node[] = { "node_name", NULL };
static const char *const l_reason[] = { "reason", "node_name", NULL };

enum { G_SOURCE, G_FRAMES, G_ACCEPTED, G_REJECTED, G_AGE, G_RESTARTS, G_SWITCHES, G__COUNT };

static const struct vw_metric_family guest_families[] = {
	[G_SOURCE] = { "virtwatt_guest_power_source_info", VW_METRIC_GAUGE,
		       "Where this VM's energy comes from: passthrough (the host's figures for this "
		       "VM) or model (estimated; no idle is given to workloads)",
		       NULL, l_source },
	[G_FRAMES] = { "virtwatt_guest_passthrough_frames_total", VW_METRIC_COUNTER,
		       "Passthrough lines or files received from the host", NULL, l_node },
	[G_ACCEPTED] = { "virtwatt_guest_passthrough_accepted_total", VW_METRIC_COUNTER,
			 "Passthrough frames accepted", NULL, l_node },
	[G_REJECTED] = { "virtwatt_guest_passthrough_rejected_total", VW_METRIC_COUNTER,
			 "Passthrough frames rejected, by reason (PROTOCOL.md section 9)", NULL,
			 l_reason },
	[G_AGE] = { "virtwatt_guest_passthrough_last_frame_age_seconds", VW_METRIC_GAUGE,
		    "Seconds since the last accepted passthrough frame", "seconds", l_node },
	[G_RESTARTS] = { "virtwatt_guest_passthrough_host_restarts_total", VW_METRIC_COUNTER,
			 "Host epoch changes accepted (host daemon restarts, migrations, another "
			 "publisher taking over)",
			 NULL,
			 l_node },
	[G_SWITCHES] = { "virtwatt_guest_power_source_switches_total", VW_METRIC_COUNTER,
			 "Switches between passthrough and model", NULL, l_node },
};

const struct vw_family_table vw_guest_family_table = {
	"guest/daemon.c: render_guest()", "virtwatt-guest",
	"where this VM's energy comes from and how the passthrough is doing", guest_families,
	G__COUNT,
};

int vw_guest_families_render(struct vw_prom_writer *w, const struct vw_guest_source_view *s,
			     const struct vw_reader *reader, const char *node_name)
{
	const char *node[] = { node_name, NULL };
	const char *src[] = { s->source, s->host_source, s->measured ? "measured" : "estimated",
			      s->model ? s->model : "none", node_name, NULL };
	struct vw_reader_health h = { 0 };
	int r;

	(void)vw_prom_table_trust(&vw_guest_family_table); /* checked once, not each render */
	if (reader)
		vw_reader_health(reader, &h);
	r = vw_prom_single(w, &guest_families[G_SOURCE], src, 1);
	if (r == 0)
		r = vw_prom_single(w, &guest_families[G_SWITCHES], node, (double)s->switches);
	if (r < 0 || !reader)
		return r;
	r = vw_prom_single(w, &guest_families[G_FRAMES], node, (double)h.frames);
	if (r == 0)
		r = vw_prom_single(w, &guest_families[G_ACCEPTED], node, (double)h.accepted);
	if (r == 0)
		r = vw_prom_single(w, &guest_families[G_RESTARTS], node, (double)h.epochs);
	if (r == 0)
		r = vw_prom_family(w, &guest_families[G_REJECTED]);
	for (int e = VW_PROTO_OK + 1; r == 0 && e < VW_PROTO_E__COUNT; e++) {
		const char *l[] = { vw_proto_error_name((enum vw_proto_error)e), node_name, NULL };

		r = vw_prom_counter(w, l, (double)h.rejected[e]);
	}
	if (r == 0)
		r = vw_prom_family_end(w);
	if (r == 0 && h.have)
		r = vw_prom_single(w, &guest_families[G_AGE], node, (double)h.age_ns / 1e9);
	return r;
}

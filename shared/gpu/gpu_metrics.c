/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The node GPU families: Kepler's kepler_node_gpu_* (names, types, labels {gpu, gpu_uuid,
 * gpu_name, vendor} and the node_name every Kepler family carries) and virtwatt's additions on
 * how each figure came about. Counters are exact joules from integer microjoules.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "gpu.h"
#include "macro.h"
#include "prom.h"
#include "split_families.h"

static const char *const l_gpu[] = { "gpu", "gpu_uuid", "gpu_name", "vendor", "node_name", NULL };
static const char *const l_dev[] = { "gpu", "gpu_uuid", "node_name", NULL };
static const char *const l_baseline[] = { "gpu", "gpu_uuid", "method", "node_name", NULL };
static const char *const l_meter[] = { "gpu", "gpu_uuid", "source", "energy", "mig_mode",
				       "node_name", NULL };

enum {
	F_INFO = VW_SPLIT__COUNT, F_METER, F_BASELINE, F_USAGE, F_GAPS, F_READ_ERRORS, F__COUNT,
};

static const struct vw_metric_family gpu_families[] = {
	VW_SPLIT_FAMILIES("gpu", l_gpu),
	[F_INFO] = { "kepler_node_gpu_info", VW_METRIC_GAUGE,
		     "GPU device information for mapping index to UUID/name", NULL, l_gpu },
	[F_METER] = { "virtwatt_node_gpu_meter_info", VW_METRIC_GAUGE,
		      "How each GPU is read: the library (source), energy from the device's own "
		      "counter or from its power integrated (energy=counter|power), and its MIG "
		      "mode (enabled, disabled, unsupported)",
		      NULL, l_meter },
	[F_BASELINE] = { "virtwatt_node_gpu_idle_baseline_watts", VW_METRIC_GAUGE,
			 "Idle power used to split a GPU's energy into idle and active, and how it "
			 "was obtained (configured; floor: the lowest power sustained at low "
			 "utilization over the window; residual: (1 - utilization) x power until a "
			 "floor exists)",
			 "watts", l_baseline },
	[F_USAGE] = { "virtwatt_node_gpu_usage_ratio", VW_METRIC_GAUGE,
		      "Mean GPU utilization over the last interval (share of time a kernel ran, "
		      "0.0 to 1.0); absent where the device does not report it",
		      NULL, l_dev },
	[F_GAPS] = { "virtwatt_node_gpu_energy_gaps_total", VW_METRIC_COUNTER,
		     "GPU energy readings that could not be counted with certainty (a counter "
		     "that went back: a driver reload or a GPU reset) and were skipped, and for a "
		     "GPU read for power, spans a failed power reading left uncounted (energy not "
		     "invented)",
		     NULL, l_dev },
	[F_READ_ERRORS] = { "virtwatt_node_gpu_read_errors_total", VW_METRIC_COUNTER,
			    "Failed GPU energy or power reads at the samples (no energy counted for "
			    "their span; a power-only GPU's failed readings between samples show in "
			    "its gaps)",
			    NULL, l_dev },
};
const struct vw_family_table vw_gpu_family_table = {
	"shared/gpu/gpu_metrics.c: vw_gpus_render()", "virtwatt-host, virtwatt-guest",
	"each GPU a GPU source found (NVML): its energy and power, split into idle and active; "
	"none where no GPU library, driver or device is found",
	gpu_families, ARRAY_SIZE(gpu_families),
};

/* The per-device families that show one view field each. */
#define GV(f, kind, field) VW_PROM_FIELD_FAMILY(f, kind, struct vw_gpu_view, field)
static const struct vw_prom_field_family value_families[] = {
	VW_SPLIT_FIELDS(struct vw_gpu_view),
	GV(F_GAPS, COUNT, gaps),
	GV(F_READ_ERRORS, COUNT, read_errors),
};

/* A device's label values, in each label set's order. */
struct dev_labels {
	char index[16];
	const char *gpu[6];
	const char *dev[4];
	const char *baseline[5];
	const char *meter[7];
};

static void fill_labels(struct dev_labels *l, const struct vw_gpu_view *v, const char *node)
{
	const struct vw_gpu_info *gi = v->info;

	if (gi->label[0])
		snprintf(l->index, sizeof(l->index), "%s", gi->label);
	else
		snprintf(l->index, sizeof(l->index), "%u", gi->index);
	memcpy(l->gpu, (const char *[]){ l->index, gi->uuid, gi->name, v->vendor, node, NULL },
	       sizeof(l->gpu));
	memcpy(l->dev, (const char *[]){ l->index, gi->uuid, node, NULL }, sizeof(l->dev));
	memcpy(l->baseline,
	       (const char *[]){ l->index, gi->uuid, vw_idle_method_name(v->idle_method), node,
				 NULL },
	       sizeof(l->baseline));
	memcpy(l->meter,
	       (const char *[]){ l->index, gi->uuid, v->source,
				 gi->has_energy ? "counter" : "power", vw_gpu_mig_name(gi->mig),
				 node, NULL },
	       sizeof(l->meter));
}

/* Device i's view and label values. */
struct gpu_item {
	const struct vw_gpus *g;
	const char *node;
	struct vw_gpu_view v;
	struct dev_labels l;
};

static const void *gpu_item(void *ctx, size_t i, const struct vw_metric_family *f,
			    const char *const **ret_labels)
{
	struct gpu_item *it = ctx;

	vw_gpus_view(it->g, i, &it->v);
	fill_labels(&it->l, &it->v, it->node);
	*ret_labels = f->labels == l_gpu ? it->l.gpu : it->l.dev;
	return &it->v;
}

/* The gauges whose labels or presence differ per family. */
static int render_gauges(const struct vw_gpus *g, struct vw_prom_writer *w, const char *node,
			 int family)
{
	int r = vw_prom_family(w, &gpu_families[family]);

	for (size_t i = 0; r == 0 && i < vw_gpus_count(g); i++) {
		struct dev_labels l;
		struct vw_gpu_view v;

		vw_gpus_view(g, i, &v);
		fill_labels(&l, &v, node);
		if (family == F_INFO)
			r = vw_prom_gauge(w, l.gpu, 1);
		else if (family == F_METER)
			r = vw_prom_gauge(w, l.meter, 1);
		else if (family == F_BASELINE)
			r = vw_prom_gauge(w, l.baseline, v.idle_baseline_w);
		else if (isfinite(v.util))
			r = vw_prom_gauge(w, l.dev, v.util);
	}
	return r < 0 ? r : vw_prom_family_end(w);
}

static bool any_usage(const struct vw_gpus *g)
{
	for (size_t i = 0; i < vw_gpus_count(g); i++) {
		struct vw_gpu_view v;

		vw_gpus_view(g, i, &v);
		if (isfinite(v.util))
			return true;
	}
	return false;
}

int vw_gpus_render(const struct vw_gpus *g, struct vw_prom_writer *w, const char *node_name)
{
	static const int gauges[] = { F_INFO, F_METER, F_BASELINE };
	struct gpu_item it = { .g = g, .node = node_name };
	int r;

	(void)vw_prom_table_trust(&vw_gpu_family_table); /* checked once, not each render */
	if (vw_gpus_count(g) == 0)
		return 0;
	r = vw_prom_field_families(w, gpu_families, value_families, ARRAY_SIZE(value_families),
				   vw_gpus_count(g), gpu_item, &it);
	for (size_t k = 0; r == 0 && k < ARRAY_SIZE(gauges); k++)
		r = render_gauges(g, w, node_name, gauges[k]);
	if (r == 0 && any_usage(g))
		r = render_gauges(g, w, node_name, F_USAGE);
	return r;
}

_Static_assert(ARRAY_SIZE(gpu_families) == F__COUNT, "every family in the table");

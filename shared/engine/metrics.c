/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kepler's current node metric contract (names, types, labels, meaning) plus virtwatt's own
 * additions under the virtwatt_ prefix. Counters are exact joules from integer microjoules.
 */
#include "metrics.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>

#include "macro.h"
#include "split_families.h"

static const char *const l_zone[] = { "zone", "path", "node_name", NULL };
static const char *const l_node[] = { "node_name", NULL };
static const char *const l_cpu_info[] = { "processor", "vendor_id", "model_name", "physical_id",
					  "core_id", NULL };
static const char *const l_build[] = { "arch", "branch", "revision", "version", "goversion",
				       NULL };
static const char *const l_source[] = { "source", "kind", "model", "node_name", NULL };
static const char *const l_baseline[] = { "zone", "path", "method", "node_name", NULL };
static const char *const l_platform[] = { "source", "node_name", "bmc_id", "chassis_id",
					  "source_id", "source_name", "source_type", NULL };

enum {
	F_USAGE = VW_SPLIT__COUNT, F_CPU_INFO, F_BUILD_INFO, F_SOURCE, F_BASELINE, F_GAPS, F_FILLED, F_WRAPS,
	F_READ_ERRORS, F_CLAMPED, F_EXTRAPOLATED, F_PLATFORM_WATTS, F_NONCPU_JOULES, F_NONCPU_WATTS,
	F__COUNT,
};

const struct vw_metric_family vw_host_families[] = {
	VW_SPLIT_FAMILIES("cpu", l_zone),
	[F_USAGE] = { "kepler_node_cpu_usage_ratio", VW_METRIC_GAUGE,
		      "CPU usage ratio of a node (value between 0.0 and 1.0)", NULL, l_node },
	[F_CPU_INFO] = { "kepler_node_cpu_info", VW_METRIC_GAUGE,
			 "CPU information from procfs", NULL, l_cpu_info },
	[F_BUILD_INFO] = { "kepler_build_info", VW_METRIC_GAUGE,
			   "A metric with a constant '1' value labeled with version information "
			   "(goversion carries the C compiler)",
			   NULL, l_build },
	[F_SOURCE] = { "virtwatt_node_power_source_info", VW_METRIC_GAUGE,
		       "The power sources in use (the CPU zones', then a platform meter's): kind is "
		       "measured (a meter) or estimated (a model)",
		       NULL, l_source },
	[F_BASELINE] = { "virtwatt_node_cpu_idle_baseline_watts", VW_METRIC_GAUGE,
			 "Idle power used to split energy into idle and active, and how it was "
			 "obtained (configured, source, fitted, residual)",
			 "watts", l_baseline },
	[F_GAPS] = { "virtwatt_node_energy_gaps_total", VW_METRIC_COUNTER,
		     "Spans of a zone's energy not measured, left uncounted (energy not invented): "
		     "readings that could not be unwrapped with certainty, a polled meter's time "
		     "without a fresh reading",
		     NULL, l_zone },
	[F_FILLED] = { "virtwatt_node_energy_filled_seconds_total", VW_METRIC_COUNTER,
		       "Time a zone's energy was counted from a polled meter's last reading, held "
		       "after its requests failed (until the reading is stale), not from a fresh one",
		       "seconds", l_zone },
	[F_WRAPS] = { "virtwatt_node_energy_wraps_total", VW_METRIC_COUNTER,
		      "Meter counter wraps (past max_energy_range_uj) unwrapped into the energy "
		      "counters",
		      NULL, l_zone },
	[F_READ_ERRORS] = { "virtwatt_node_meter_read_errors_total", VW_METRIC_COUNTER,
			    "Failed meter reads", NULL, l_zone },
	[F_CLAMPED] = { "virtwatt_model_clamped_total", VW_METRIC_COUNTER,
			"Model evaluations whose output was clamped: negative to 0 W, over 10 kW to 10 kW", NULL,
			l_node },
	[F_EXTRAPOLATED] = { "virtwatt_model_extrapolated_total", VW_METRIC_COUNTER,
			     "Model evaluations with an input beyond the range the model was trained "
			     "on (its estimate there is least sure)",
			     NULL, l_node },
	[F_PLATFORM_WATTS] = { "kepler_platform_watts", VW_METRIC_GAUGE,
			       "Current platform power from the platform meter's own readings (a "
			       "BMC's PowerControl, power supplies or environment metrics), as it "
			       "reported them",
			       "watts", l_platform },
	[F_NONCPU_JOULES] = { "virtwatt_node_platform_noncpu_joules_total", VW_METRIC_COUNTER,
			      "Platform energy beyond the CPU zones (platform minus package and "
			      "dram, each interval at least 0): fans, disks, NICs, PSU losses",
			      "joules", l_node },
	[F_NONCPU_WATTS] = { "virtwatt_node_platform_noncpu_watts", VW_METRIC_GAUGE,
			     "Platform power beyond the CPU zones over the last interval", "watts",
			     l_node },
};
const struct vw_family_table vw_host_family_table = {
	"shared/engine/metrics.c: vw_host_metrics_write()", "virtwatt-host, virtwatt-guest",
	"the node: its zones' energy and power, split into idle and active, the power source, CPU "
	"usage and the node's info; the passthrough families only where a publisher runs",
	vw_host_families, ARRAY_SIZE(vw_host_families),
};

/* Label values are never empty (empty means absent to Prometheus). */
static const char *or_unknown(const char *s)
{
	return s && *s ? s : "unknown";
}

/* The per-zone families, each row naming the view field it shows and how. */
#define ZV(f, kind, field) VW_PROM_FIELD_FAMILY(f, kind, struct vw_node_zone_view, field)
static const struct vw_prom_field_family zone_families[] = {
	VW_SPLIT_FIELDS(struct vw_node_zone_view),
	ZV(F_GAPS, COUNT, gaps),
	ZV(F_FILLED, MICRO, filled_us),
	ZV(F_WRAPS, COUNT, wraps),
	ZV(F_READ_ERRORS, COUNT, read_errors),
};

/* A zone and its label values (l_zone's). */
struct zone_item {
	const struct vw_node_view *v;
	const char *labels[4];
};

static const void *zone_item(void *ctx, size_t i, const struct vw_metric_family *f,
			     const char *const **ret_labels)
{
	struct zone_item *it = ctx;
	const struct vw_node_zone_view *z = &it->v->zones[i];

	(void)f;
	it->labels[0] = vw_zone_name(z->zone);
	it->labels[1] = z->path;
	it->labels[2] = it->v->node_name;
	*ret_labels = it->labels;
	return z;
}

static int render_baseline(struct vw_prom_writer *w, const struct vw_node_view *v)
{
	int r = vw_prom_family(w, &vw_host_families[F_BASELINE]);

	for (size_t i = 0; r == 0 && i < v->n_zones; i++) {
		const struct vw_node_zone_view *z = &v->zones[i];
		const char *labels[] = { vw_zone_name(z->zone), z->path,
					 vw_idle_method_name(z->idle_method), v->node_name, NULL };

		r = vw_prom_gauge(w, labels, z->idle_baseline_w);
	}
	return r < 0 ? r : vw_prom_family_end(w);
}

static int render_node(struct vw_prom_writer *w, const struct vw_node_view *v)
{
	const char *node[] = { v->node_name, NULL };
	const char *src[] = { v->source, v->measured ? "measured" : "estimated",
			      v->model ? v->model : "none", v->node_name, NULL };
	const char *plat[] = { v->platform_source, "measured", "none", v->node_name, NULL };
	int r;

	r = vw_prom_single(w, &vw_host_families[F_USAGE], node, v->usage_ratio);
	if (r == 0)
		r = vw_prom_family(w, &vw_host_families[F_SOURCE]);
	if (r == 0)
		r = vw_prom_gauge(w, src, 1);
	if (r == 0 && v->platform_source)
		r = vw_prom_gauge(w, plat, 1);
	if (r == 0)
		r = vw_prom_family_end(w);
	if (r == 0 && !v->measured)
		r = vw_prom_single(w, &vw_host_families[F_CLAMPED], node, (double)v->model_clamped);
	if (r == 0 && !v->measured)
		r = vw_prom_single(w, &vw_host_families[F_EXTRAPOLATED], node,
				   (double)v->model_extrapolated);
	return r;
}

static int render_platform(struct vw_prom_writer *w, const struct vw_node_view *v)
{
	const char *node[] = { v->node_name, NULL };
	int r = 0;

	if (v->n_platform_readings)
		r = vw_prom_family(w, &vw_host_families[F_PLATFORM_WATTS]);
	for (size_t i = 0; r == 0 && i < v->n_platform_readings; i++) {
		const struct vw_platform_reading *p = &v->platform_readings[i];
		const char *labels[] = { v->platform_source, v->node_name, p->bmc_id,
					 p->chassis_id, p->source_id, p->source_name,
					 p->source_type, NULL };

		r = vw_prom_gauge(w, labels, (double)p->uw / 1e6);
		if (r == 0 && i + 1 == v->n_platform_readings)
			r = vw_prom_family_end(w);
	}
	if (r < 0 || !v->has_noncpu)
		return r;
	r = vw_prom_family(w, &vw_host_families[F_NONCPU_JOULES]);
	if (r == 0)
		r = vw_prom_counter_micro(w, node, v->noncpu_uj);
	if (r == 0)
		r = vw_prom_family_end(w);
	return r < 0 ? r : vw_prom_single(w, &vw_host_families[F_NONCPU_WATTS], node,
					  v->noncpu_watts);
}

/* The machine's architecture (uname's machine), asked once: it was a system call each render
 * for a value that cannot change. */
static struct utsname machine_uts;
static bool machine_known;

static void machine_ask(void)
{
	machine_known = uname(&machine_uts) == 0;
}

static const char *machine(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, machine_ask);
	return machine_known ? machine_uts.machine : "unknown";
}

static int render_info(struct vw_prom_writer *w, const struct vw_node_view *v)
{
	const char *build[] = { machine(), VW_BRANCH, VW_REVISION, VW_VERSION, VW_COMPILER, NULL };
	int r;

	r = vw_prom_family(w, &vw_host_families[F_CPU_INFO]);
	for (size_t i = 0; r == 0 && i < v->n_cpus; i++) {
		const struct vw_cpu_info *c = &v->cpus[i];
		char proc[16];
		const char *labels[] = { proc, or_unknown(c->vendor_id), or_unknown(c->model_name),
					 or_unknown(c->physical_id), or_unknown(c->core_id), NULL };

		snprintf(proc, sizeof(proc), "%u", c->processor);
		r = vw_prom_gauge(w, labels, 1);
	}
	if (r == 0)
		r = vw_prom_family_end(w);
	return r < 0 ? r : vw_prom_single(w, &vw_host_families[F_BUILD_INFO], build, 1);
}

int vw_host_metrics_write(const struct vw_node_view *v, struct vw_prom_writer *w)
{
	struct zone_item zones = { .v = v };
	int r;

	(void)vw_prom_table_trust(&vw_host_family_table); /* checked once, not each render */
	r = vw_prom_field_families(w, vw_host_families, zone_families, ARRAY_SIZE(zone_families),
				   v->n_zones, zone_item, &zones);
	if (r == 0)
		r = render_baseline(w, v);
	if (r == 0)
		r = render_node(w, v);
	if (r == 0)
		r = render_platform(w, v);
	if (r == 0)
		r = render_info(w, v);
	if (r == 0 && v->self)
		r = vw_processinfo_write(w, v->self);
	return r;
}

_Static_assert(ARRAY_SIZE(vw_host_families) == F__COUNT, "every family in the table");

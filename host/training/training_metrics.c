/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fit quality of the models virtwatt-host trains (host/training/training.c): per target (the node, or
 * a VM with Kepler's vm_id and vm_name) and zone, the held-out R² and MAE, the intervals it was
 * fitted on, when, and the refits that kept an older model.
 */
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "macro.h"
#include "training.h"
#include "training_priv.h"

static const char *const l_fit[] = { "target", "vm_id", "vm_name", "zone", "model_type",
				     "node_name", NULL };
static const char *const l_failures[] = { "target", "vm_id", "vm_name", "zone", "node_name",
					  NULL };

enum { F_R2, F_MAE, F_SAMPLES, F_TIMESTAMP, F_FAILURES, F__COUNT };

static const struct vw_metric_family families[] = {
	[F_R2] = { "virtwatt_model_fit_r2", VW_METRIC_GAUGE,
		   "Held-out R² of the model this host trained for a target (node, or a VM's UUID) "
		   "and zone: 1 - squared error / variance of the measured power, each interval "
		   "predicted by the model fitted without its block of time (5 blocks); NaN where "
		   "the power did not vary",
		   NULL, l_fit },
	[F_MAE] = { "virtwatt_model_fit_mae_watts", VW_METRIC_GAUGE,
		    "Held-out mean absolute error of that model (the same predictions as its R²)",
		    "watts", l_fit },
	[F_SAMPLES] = { "virtwatt_model_fit_samples", VW_METRIC_GAUGE,
			"Intervals with a measured power the model was fitted on", NULL, l_fit },
	[F_TIMESTAMP] = { "virtwatt_model_fit_timestamp_seconds", VW_METRIC_GAUGE,
			  "When the model was fitted (Unix time): older than "
			  "--model.train.interval when its latest refits failed",
			  "seconds", l_fit },
	[F_FAILURES] = { "virtwatt_model_fit_failures_total", VW_METRIC_COUNTER,
			 "Refits of a target's zone that kept its previous model (or none): fewer "
			 "intervals with a measured power than --model.train.min-samples, or a fit "
			 "that failed",
			 NULL, l_failures },
};

const struct vw_family_table vw_host_training_family_table = {
	"host/training/training_metrics.c: vw_host_training_render()", "virtwatt-host",
	"the models the host trains from its meters (--model.train.interval, on by default): the "
	"node's and each VM's, per measured zone, once fitted",
	families, ARRAY_SIZE(families),
};

#define VM_PREFIX "vm-"

static double fit_value(const struct vw_online_fit *f, int family)
{
	switch (family) {
	case F_R2:
		return f->score.r2;
	case F_MAE:
		return f->score.mae_w;
	case F_SAMPLES:
		return (double)f->score.rows;
	default:
		return f->fitted_unix_s;
	}
}

/* Whether target t's zone z has a sample in family: a fit's figures where it has one, the
 * failures counter wherever a refit was tried. */
static bool shown(const struct vw_online *s, size_t t, size_t z, int family)
{
	const struct vw_online_fit *f = vw_online_zone_fit(s, t, z);

	return f->valid || (family == F_FAILURES && f->failures > 0);
}

static bool any_shown(const struct vw_online *s, int family)
{
	for (size_t t = 0; t < vw_online_n_targets(s); t++)
		for (size_t z = 0; z < vw_online_n_zones(s); z++)
			if (shown(s, t, z, family))
				return true;
	return false;
}

/* One family over every target and zone (none before the first refit). */
static int render_family(const struct vw_online *s, struct vw_prom_writer *w, const char *node,
			 int family)
{
	int r;

	if (!any_shown(s, family))
		return 0;
	r = vw_prom_family(w, &families[family]);

	for (size_t t = 0; r == 0 && t < vw_online_n_targets(s); t++) {
		const char *id = vw_online_id(s, t);
		bool vm = strncmp(id, VM_PREFIX, strlen(VM_PREFIX)) == 0;
		const char *target = vm ? id + strlen(VM_PREFIX) : id;

		for (size_t z = 0; r == 0 && z < vw_online_n_zones(s); z++) {
			const struct vw_online_fit *f = vw_online_zone_fit(s, t, z);
			const char *fit[] = { target, vm ? target : "", vm ? vw_online_label(s, t) : "",
					      vw_online_zone_name(s, z), vw_train_trainer(f->fit.kind),
					      node, NULL };
			const char *fail[] = { fit[0], fit[1], fit[2], fit[3], node, NULL };

			if (!shown(s, t, z, family))
				continue;
			if (family == F_FAILURES)
				r = vw_prom_counter(w, fail, (double)f->failures);
			else
				r = vw_prom_gauge(w, fit, fit_value(f, family));
		}
	}
	return r < 0 ? r : vw_prom_family_end(w);
}

int vw_host_training_write_fits(const struct vw_online *s, struct vw_prom_writer *w,
				const char *node_name)
{
	int r = 0;

	(void)vw_prom_table_trust(&vw_host_training_family_table); /* checked once */
	for (int f = 0; r == 0 && f < F__COUNT; f++)
		r = render_family(s, w, node_name, f);
	return r;
}

_Static_assert(ARRAY_SIZE(families) == F__COUNT, "every family in the table");

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What virtwatt-host trains (docs/models.md, "The host trains"): from each interval's measured
 * node energy and CPU time, and each VM's attributed energy and CPU time, samples for the
 * online store (shared/model/model_online.h); every --model.train.interval a refit of every
 * target, its fit quality as virtwatt_model_fit_* and, with --model.train.dir, its model as a
 * Kepler weight file (DIR/node.json, DIR/vm-<uuid>.json). Only measured zones are learnt from:
 * a model's own output teaches nothing.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "metrics.h"
#include "procfs.h"
#include "prom.h"
#include "training_options.h"
#include "workloads.h"

struct vw_host_training;

/* One zone of the node as the host holds it after closing an interval. */
struct vw_host_train_zone {
	const struct vw_node_zone_view *view; /* energy so far, gaps, read errors */
	bool measured;                        /* a meter's, not a model's */
};

/*
 * From the options: *ret NULL when --model.train.interval is 0. A --model.train.dir that cannot
 * be created or opened is an error, as are more min-samples than max-samples (-errno, logged).
 */
int vw_host_training_new(const struct vw_host_train_options *o, struct vw_host_training **ret);
void vw_host_training_free(struct vw_host_training *t);

/*
 * The interval just closed at now_ns (the last sample's time): the node's zones and /proc/stat
 * then, and the VMs' cumulative energy and CPU time from the workloads (NULL: none). Samples,
 * then the refits and files that are due. Nothing when t is NULL.
 */
void vw_host_training_interval(struct vw_host_training *t, uint64_t now_ns,
			       const struct vw_cpu_stat *stat, const struct vw_host_train_zone *zones,
			       size_t n_zones, const struct vw_workloads *w);

/*
 * After a refit round (once per round: false until the next one, and when t is NULL), each
 * VM's model to fn: its UUID, a name for it ("vm-linear-r<round>") and its Kepler weight file.
 * What the host pushes to the VM's guest (vw_publisher_set_model).
 */
typedef void (*vw_host_vm_model_fn)(void *ud, const char *vm_uuid, const char *name,
				    const char *json, size_t len);
bool vw_host_training_vm_models(struct vw_host_training *t, vw_host_vm_model_fn fn, void *ud);

/* virtwatt_model_fit_* for every model fitted (or tried) so far; nothing when t is NULL. */
int vw_host_training_render(const struct vw_host_training *t, struct vw_prom_writer *w,
			    const char *node_name);

/* The families (training_metrics.c), for docs/metrics.md and the selfcheck. */
extern const struct vw_family_table vw_host_training_family_table;

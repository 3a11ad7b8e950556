/* SPDX-License-Identifier: Apache-2.0 */
/* Between host/training/training.c and its families (training_metrics.c). */
#pragma once

#include "model_online.h"
#include "prom.h"

/* virtwatt_model_fit_* of every target and zone of the store that has been refitted. */
int vw_host_training_write_fits(const struct vw_online *s, struct vw_prom_writer *w,
				const char *node_name);

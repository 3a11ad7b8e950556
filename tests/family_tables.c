/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every family table, for selfcheck and metrics_doc. The test family_tables
 * (check_family_tables.py) fails while a table defined under shared/, host/ or guest/ is
 * missing here, or a family array is carried by no table.
 */
#include "family_tables.h"

#include <stddef.h>

#include "gpu.h"
#include "guest_families.h"
#include "host_model.h"
#include "carbon.h"
#include "metrics.h"
#include "otlp.h"
#include "processinfo.h"
#include "publish.h"
#include "selfstats.h"
#include "state_file.h"
#include "vm_meta.h"
#include "vm_trust.h"
#include "vm_vfio.h"
#include "training.h"
#include "workloads.h"

const struct vw_family_table *const vw_all_family_tables[] = {
	&vw_host_family_table,
	&vw_gpu_family_table,
	&vw_host_training_family_table,
	&vw_publish_family_table,
	&vw_workload_family_table,
	&vw_workload_gpu_family_table,
	&vw_vm_vfio_family_table,
	&vw_vm_meta_family_table,
	&vw_qemu_trust_family_table,
	&vw_guest_family_table,
	&vw_guest_host_model_family_table,
	&vw_state_file_family_table,
	&vw_carbon_family_table,
	&vw_otlp_family_table,
	&vw_selfstats_family_table,
	&vw_processinfo_family_table,
	NULL,
};

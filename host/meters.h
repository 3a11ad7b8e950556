/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The host's options -> what its meters are told (struct vw_meter_config, power/power.h): the
 * one place that reads meter flags and the files they name (BMC credentials), so that the
 * meters themselves know nothing of options.
 */
#pragma once

#include "bmc_file.h"
#include "options.h"
#include "power.h"

struct vw_host_meters {
	struct vw_meter_config cfg; /* env->ctx for the host's chains; points into the rest */
	struct vw_hwmon_config hwmon;
	struct vw_hwmon_rules *hwmon_rules; /* --power.hwmon.chip-rules */
	struct vw_bmc_entry bmc;    /* this node's BMC from the BMC file */
	char *bmc_password;         /* read from its passwordFile */
	struct vw_redfish_config redfish;
	struct vw_ipmi_config ipmi; /* --platform.ipmi.*; its strings: the options' or below */
	char *ipmi_password;        /* read from --platform.ipmi.password-file; wiped at fini */
	const char **ipmi_workarounds; /* NULL-ended */
};

/*
 * Fill m from the options; -errno (logged, naming the flag or the file) on a configuration
 * error. A BMC file that does not name this node is not one: said, and Redfish is off.
 */
int vw_host_meters_setup(struct vw_host_meters *m, const struct vw_host_config *cfg,
			 const char *node_name);
void vw_host_meters_fini(struct vw_host_meters *m);

/* SPDX-License-Identifier: Apache-2.0 */
#include "power.h"

#include <stddef.h>

const struct vw_power_source_ops *const vw_host_power_sources[] = {
	&vw_src_powercap,
	&vw_src_estimator,
	NULL,
};

const struct vw_power_source_ops *const vw_host_platform_sources[] = {
	&vw_src_acpi_power_meter,
	NULL,
};

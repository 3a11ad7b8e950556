/* SPDX-License-Identifier: Apache-2.0 */
#include "power.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>

#include "fileio.h"

int vw_power_sysfs_class(const struct vw_power_env *env, const char *rel)
{
	int fd;

	if (!env || env->sysfs_fd < 0)
		return -EBADF;
	fd = vw_dir_open_at(env->sysfs_fd, rel);
	return fd == -ENOENT || fd == -ENOTDIR ? -ENODEV : fd;
}

void vw_power_chain_names(const struct vw_power_source_ops *const *chain, char *buf, size_t len)
{
	size_t at = 0;

	if (len)
		buf[0] = '\0';
	for (size_t i = 0; chain[i] && at < len; i++) {
		int n = snprintf(buf + at, len - at, "%s%s", i ? ", " : "", chain[i]->name);

		if (n < 0)
			break;
		at += (size_t)n;
	}
}

/*
 * The host's chains. A meter is its src_*.c and its line here (its ops declared in power.h, or
 * by an extern line above these lists); its options come with its ops (docs/architecture.md,
 * "Adding a meter").
 */
const struct vw_power_source_ops *const vw_host_power_sources[] = {
	&vw_src_powercap,
	&vw_src_hwmon, /* a RAPL fallback, as in Kepler */
	&vw_src_estimator,
	NULL,
};

const struct vw_power_source_ops *const vw_host_platform_sources[] = {
	&vw_src_acpi_power_meter,
	&vw_src_redfish,
	&vw_src_ipmi,
	NULL,
};

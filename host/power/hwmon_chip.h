/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the hwmon meters share (src_acpi.c, the ACPI power meter; src_hwmon_generic.c, the
 * generic sensors): finding the chips under <sysfs>/class/hwmon, and integrating a power reading
 * into a microjoule counter. Internal to host/power.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#define VW_HWMON_DIR "class/hwmon"
#define VW_HWMON_PREFIX "hwmon"
/* Only the `path` label: independent of --host.sysfs so that output is stable. */
#define VW_HWMON_PATH_PREFIX "/sys/class/hwmon/"
/* The ACPI power meter's chip name: read by the acpi platform source, never by the generic. */
#define VW_HWMON_ACPI_CHIP "power_meter"

/* One hwmonN found by the scan. */
struct vw_hwmon_chip {
	unsigned index; /* N */
	int dirfd;      /* where its attributes are: hwmonN itself, or hwmonN/device */
	char name[64];
};

/* The N of every hwmonN in classfd, in numeric order (hwmon10 after hwmon2), malloc'd. */
int vw_hwmon_chip_numbers(int classfd, uint32_t **ret, size_t *ret_n);
/*
 * Open hwmonN and find its `name`: on hwmonN, or on its parent device (hwmonN/device) for drivers
 * still on hwmon_device_register(), which keep every attribute there. ret->dirfd is where the
 * name was found (-1 on failure); -errno when there is no readable name.
 */
int vw_hwmon_chip_open(int classfd, unsigned index, struct vw_hwmon_chip *ret);


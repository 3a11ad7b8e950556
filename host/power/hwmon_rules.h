/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which hwmon sensor is which zone: chip rules, the built-in ones and --power.hwmon.chip-rules.
 * Pure functions over strings (no sysfs): the generic hwmon meter (src_hwmon_generic.c) asks them
 * about each sensor it finds; the host's options are parsed into them by host/meters.c.
 *
 * A rule is  CHIP[:LABEL]=ZONE[@SOCKET]  or  CHIP[:LABEL]=none
 *
 *   CHIP    a glob (fnmatch: * ? [...]) on the chip's hwmon `name`, case-insensitive
 *   LABEL   a glob on the sensor's label, case-insensitive; without it every sensor of the chip
 *   ZONE    package, core, uncore, dram, psys or platform; none leaves the sensor out
 *   SOCKET  a number (0..4095, 0 without @SOCKET); `label`, the number the label ends with
 *           (Esocket1 -> 1); `chip`, the chip's place among the chips of that name in hwmon
 *           order (0 for the first: one chip per socket, as zenpower)
 *
 * The first rule that matches decides: the configured ones in their order, then the built-in
 * ones (vw_hwmon_builtin_rules). A sensor no rule matches is not used.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "zone.h"

/* Rules in their order (opaque). */
struct vw_hwmon_rules;

enum vw_hwmon_socket_from {
	VW_HWMON_SOCKET_FIXED, /* @N, or no @SOCKET: 0 */
	VW_HWMON_SOCKET_LABEL, /* @label */
	VW_HWMON_SOCKET_CHIP,  /* @chip: the chip's place among the chips of its name */
};

/* What a rule says of a sensor it matches. */
struct vw_hwmon_target {
	bool ignore; /* =none: the sensor is left out */
	enum vw_zone zone;
	enum vw_hwmon_socket_from socket_from;
	unsigned socket;  /* VW_HWMON_SOCKET_FIXED's N */
	const char *rule; /* the rule as written, for the logs; valid while its rules are */
};

/* The built-in rules, NULL-ended: chips whose sensors have one safe meaning (docs/platform.md). */
extern const char *const vw_hwmon_builtin_rules[];

/*
 * Parse specs[0..n) in order into *ret. -EINVAL with err saying which rule and why (its text
 * quoted), -ENOMEM. A rule naming the ACPI power meter's chip (power_meter) is refused: the acpi
 * platform source reads it.
 */
int vw_hwmon_rules_parse(const char *const *specs, size_t n, struct vw_hwmon_rules **ret,
			 char *err, size_t errlen);
void vw_hwmon_rules_free(struct vw_hwmon_rules *r);

/* The first rule of r (NULL: none) matching this chip and label: 0 and *ret, or -ENOENT. */
int vw_hwmon_rules_match(const struct vw_hwmon_rules *r, const char *chip, const char *label,
			 struct vw_hwmon_target *ret);

/*
 * The socket a matched sensor counts in: chip_instance is the chip's place among the chips of
 * its name. -EINVAL for @label when the label does not end in a number (0..4095).
 */
int vw_hwmon_target_socket(const struct vw_hwmon_target *t, unsigned chip_instance,
			   const char *label, unsigned *ret);

/*
 * Kepler's experimental.hwmon.zones filter: whether `name` (a sensor's label, else
 * <chip>_<sensor> such as ina226_power1, where Kepler would use the device path) is among
 * zones[0..n), both compared as Kepler cleans names: lower case, every character but
 * [a-z0-9:_] turned to '_', no '_' at either end. n == 0 wants every sensor.
 */
bool vw_hwmon_zone_wanted(const char *const *zones, size_t n, const char *name);

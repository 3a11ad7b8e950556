/* SPDX-License-Identifier: Apache-2.0 */
/* Power zones as Kepler labels them (zone="package", ...). */
#pragma once

enum vw_zone {
	VW_ZONE_PACKAGE,
	VW_ZONE_CORE,
	VW_ZONE_UNCORE,
	VW_ZONE_DRAM,
	VW_ZONE_PSYS,
	VW_ZONE_PLATFORM, /* whole-node meters and ACPI-trained models */
	VW_ZONE__COUNT,
};

/* "package", "core", ... */
const char *vw_zone_name(enum vw_zone zone);
/*
 * Map a powercap zone name or a model component name to a zone: "package-0"/"package"/"pkg" ->
 * PACKAGE (socket 0), "core", "uncore", "dram", "psys", "platform". ret_socket (optional) gets
 * the "-N" suffix of package names, else 0. -EINVAL for anything else.
 */
int vw_zone_parse(const char *name, enum vw_zone *ret, unsigned *ret_socket);

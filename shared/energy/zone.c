/* SPDX-License-Identifier: Apache-2.0 */
#include "zone.h"

#include <errno.h>
#include <string.h>

#include "fileio.h"
#include "macro.h"

static const char *const zone_names[VW_ZONE__WIRE_COUNT] = {
	[VW_ZONE_PACKAGE] = "package", [VW_ZONE_CORE] = "core", [VW_ZONE_UNCORE] = "uncore",
	[VW_ZONE_DRAM] = "dram",       [VW_ZONE_PSYS] = "psys", [VW_ZONE_PLATFORM] = "platform",
	[VW_ZONE_GPU] = "gpu",
};

const char *vw_zone_name(enum vw_zone zone)
{
	if ((unsigned)zone >= VW_ZONE__WIRE_COUNT)
		return "unknown";
	return zone_names[zone];
}

int vw_zone_parse(const char *name, enum vw_zone *ret, unsigned *ret_socket)
{
	unsigned socket = 0;

	if (strcmp(name, "pkg") == 0) {
		*ret = VW_ZONE_PACKAGE;
	} else if (strncmp(name, "package", 7) == 0) {
		if (name[7] == '-') {
			uint64_t v;

			if (vw_parse_u64(name + 8, &v) < 0 || v > 4096)
				return -EINVAL;
			socket = (unsigned)v;
		} else if (name[7] != '\0') {
			return -EINVAL;
		}
		*ret = VW_ZONE_PACKAGE;
	} else {
		size_t i;

		for (i = 1; i < VW_ZONE__COUNT; i++)
			if (strcmp(name, zone_names[i]) == 0)
				break;
		if (i == VW_ZONE__COUNT)
			return -EINVAL;
		*ret = (enum vw_zone)i;
	}
	if (ret_socket)
		*ret_socket = socket;
	return 0;
}

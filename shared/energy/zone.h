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
	VW_ZONE__COUNT,   /* the zones of power sources and CPU attribution end here */
	/*
	 * A VM's share of the host's GPUs (its vGPUs'): only on the wire, host to guest
	 * (virtio-channel/PROTOCOL.md), never a power source's zone or a CPU family's label.
	 */
	VW_ZONE_GPU = VW_ZONE__COUNT,
	VW_ZONE__WIRE_COUNT,
};

#include <stdint.h>

/* One owner's energy in one zone: cumulative since it was first counted, and the last interval's
 * power (what a VM's guest is handed, say). */
struct vw_zone_owner_energy {
	enum vw_zone zone;
	uint64_t idle_uj, active_uj; /* over the latest interval */
	double idle_w, active_w;     /* the same, as power */
};

/* "package", "core", ... "gpu" */
const char *vw_zone_name(enum vw_zone zone);
/*
 * Map a powercap zone name or a model component name to a zone: "package-0"/"package"/"pkg" ->
 * PACKAGE (socket 0), "core", "uncore", "dram", "psys", "platform". ret_socket (optional) gets
 * the "-N" suffix of package names, else 0. -EINVAL for anything else.
 */
int vw_zone_parse(const char *name, enum vw_zone *ret, unsigned *ret_socket);

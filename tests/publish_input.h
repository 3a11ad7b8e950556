/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The publisher takes each VM's energy over the interval since its previous update: a test adds
 * to its vw_vm_energy between updates, and this hands that on and starts the next interval at 0.
 */
#pragma once

#include "publish.h"

static inline int vw_test_publish_update(struct vw_publisher *p, struct vw_vm_energy *vms,
					 size_t n)
{
	int r = vw_publisher_update(p, vms, n);

	for (size_t i = 0; i < n; i++)
		for (size_t z = 0; z < VW_ZONE__WIRE_COUNT; z++)
			vms[i].zones[z].idle_uj = vms[i].zones[z].active_uj = 0;
	return r;
}

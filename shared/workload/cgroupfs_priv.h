/* SPDX-License-Identifier: Apache-2.0 */
/* cgroupfs.c's test hooks. Not for other modules. */
#pragma once

#include <stddef.h>

#include "cgroupfs.h"

/* Lower the table's cap (VW_CGROUPFS_MAX) to drive it full with a small fixture tree. */
void vw_cgroupfs_set_max(struct vw_cgroupfs *cg, size_t max);

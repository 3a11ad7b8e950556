/* SPDX-License-Identifier: Apache-2.0 */
/* Every family table both daemons serve, in the order docs/metrics.md lists them. */
#pragma once

#include "prom.h"

extern const struct vw_family_table *const vw_all_family_tables[];

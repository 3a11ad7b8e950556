/* SPDX-License-Identifier: Apache-2.0 */
/* The guest's own families (guest/daemon.c), for docs/metrics.md. */
#pragma once

#include "prom.h"

extern const struct vw_family_table vw_guest_family_table;

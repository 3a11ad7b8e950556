/* SPDX-License-Identifier: Apache-2.0 */
/* The series state's test-only calls (tests/test_state.c, test_bounds.c, the fuzz target). */
#pragma once

#include <stdint.h>

#include "series_state.h"

/* Exported value in microunits of a series ("name{labels}"). -ENOENT if unknown. */
int vw_series_state_get(const struct vw_series_state *s, const char *key, uint64_t *ret_micro);

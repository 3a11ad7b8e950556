/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libm is loaded on first use (libm_lazy.c): the daemons' own arithmetic (floor, round, llround,
 * nearbyint, fmin, fmax, sqrt, log10) is done in libm_lazy.c, and exp and log, which only a
 * curve-fit model evaluates, load libm. Code calls them as usual, with <math.h>.
 */
#pragma once
#include <stddef.h>

/* Load libm now: 0, or -ENOPKG with why naming the package to install. */
int vw_libm_load(char *why, size_t len);

/* Tests: the soname to load, before anything loaded it (a missing library's error path). */
void vw_libm_set_soname(const char *soname);

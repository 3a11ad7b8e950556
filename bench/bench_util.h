/* SPDX-License-Identifier: Apache-2.0 */
/* What the benchmarks share: sorted-sample percentiles and the process's own memory. */
#pragma once

#include <stddef.h>

/* Sort n samples ascending in place. */
void vw_bench_sort(double *v, size_t n);
/* Nearest-rank percentile (0-100) of n sorted samples; n > 0. */
double vw_bench_percentile(const double *sorted, size_t n, unsigned pct);
/* Print "<prefix>vmrss_kib N" and "<prefix>vmhwm_kib N" from <proc_root>/self/status. */
int vw_bench_print_memory(const char *proc_root, const char *prefix);

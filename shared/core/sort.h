/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sorting tables that are nearly in order: a process table in PID order with a few entries
 * appended, or records in the kernel's task-list order (creation order: one ascending run of
 * PIDs per wrap of pid_max). Finding the runs and merging them costs a pass and a copy of the
 * smaller run, where qsort costs n log n compares through a pointer and a buffer of n.
 */
#pragma once

#include <stddef.h>

typedef int (*vw_cmp_fn)(const void *a, const void *b);

/* Merge base[0 .. mid) and base[mid .. n), each sorted, in place and stably (equal entries keep
 * their order). 0, or -ENOMEM with nothing changed (no room to copy the smaller part). */
int vw_merge_sorted(void *base, size_t mid, size_t n, size_t size, vw_cmp_fn cmp);

/* Sort base[0 .. n) as qsort would: one pass when already in order, a merge per run after the
 * first when there are a few (stable then), qsort when there are many. */
void vw_sort_runs(void *base, size_t n, size_t size, vw_cmp_fn cmp);

/* SPDX-License-Identifier: Apache-2.0 */
#include "sort.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RUNS 8 /* more runs than this: qsort */

#define AT(b, i) ((char *)(b) + (i) * size) /* entry i; size: the caller's */

int vw_merge_sorted(void *base, size_t mid, size_t n, size_t size, vw_cmp_fn cmp)
{
	size_t nl = mid, nr = n - mid, i, j, k;
	char *tmp;

	if (!nl || !nr || cmp(AT(base, mid - 1), AT(base, mid)) <= 0)
		return 0;
	tmp = malloc((nl < nr ? nl : nr) * size);
	if (!tmp)
		return -ENOMEM;
	if (nl <= nr) {
		/* The left part aside, merged forwards: what is left of the right is in place. */
		memcpy(tmp, base, nl * size);
		for (i = 0, j = mid, k = 0; i < nl && j < n; k++)
			memcpy(AT(base, k), cmp(AT(base, j), AT(tmp, i)) < 0 ? AT(base, j++) : AT(tmp, i++),
			       size);
		memcpy(AT(base, k), AT(tmp, i), (nl - i) * size);
	} else {
		/* The right part aside, merged backwards: what is left of the left is in place. */
		memcpy(tmp, AT(base, mid), nr * size);
		for (i = nl, j = nr, k = n; i > 0 && j > 0;)
			memcpy(AT(base, --k),
			       cmp(AT(tmp, j - 1), AT(base, i - 1)) < 0 ? AT(base, --i) : AT(tmp, --j),
			       size);
		memcpy(base, tmp, j * size);
	}
	free(tmp);
	return 0;
}

void vw_sort_runs(void *base, size_t n, size_t size, vw_cmp_fn cmp)
{
	size_t start[MAX_RUNS], runs = 0;

	for (size_t i = 1; i < n; i++)
		if (cmp(AT(base, i - 1), AT(base, i)) > 0) {
			if (runs == MAX_RUNS) {
				qsort(base, n, size, cmp);
				return;
			}
			start[runs++] = i;
		}
	for (size_t r = 0; r < runs; r++)
		if (vw_merge_sorted(base, start[r], r + 1 < runs ? start[r + 1] : n, size, cmp) < 0) {
			qsort(base, n, size, cmp); /* no memory for a copy: sorted where it lies */
			return;
		}
}

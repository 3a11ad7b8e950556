/* SPDX-License-Identifier: Apache-2.0 */
#include "bench_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "macro.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

void vw_bench_sort(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
}

double vw_bench_percentile(const double *sorted, size_t n, unsigned pct)
{
	size_t rank = (n * pct + 99) / 100;

	return sorted[rank ? rank - 1 : 0];
}

int vw_bench_print_memory(const char *proc_root, const char *prefix)
{
	_cleanup_close_ int fd = vw_root_open(proc_root);
	char buf[8192], *save = NULL;
	int r;

	if (fd < 0)
		return fd;
	r = vw_read_file_at(fd, "self/status", buf, sizeof(buf), NULL);
	if (r < 0)
		return r;
	for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long kib;

		if (sscanf(line, "VmRSS: %lu kB", &kib) == 1)
			printf("%svmrss_kib %lu\n", prefix, kib);
		else if (sscanf(line, "VmHWM: %lu kB", &kib) == 1)
			printf("%svmhwm_kib %lu\n", prefix, kib);
	}
	return 0;
}

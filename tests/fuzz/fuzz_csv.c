/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: the strict CSV reader behind `virtwatt-model train --data` (csv.c). The
 * input is the file: its header, then its rows read as numbers twice over, in every column and
 * in the columns the trainer picks (the features and <zone>_power). Properties: every value
 * read is finite, the row count within the cap; and splitting a line, writing its fields back
 * quoted (RFC 4180) and splitting again gives the same fields.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csv.h"
#include "fuzz_common.h"
#include "model.h"

#define MAX_ROWS 512

/* All columns, or those the trainer reads: a known feature or "<zone>_power". */
static size_t pick(const struct vw_csv *c, bool all, size_t *cols)
{
	size_t n = 0;

	for (size_t i = 0; i < vw_csv_n_columns(c); i++) {
		const char *name = vw_csv_column_name(c, i);
		size_t len = strlen(name);

		if (all || strcmp(vw_model_feature_canonical(name), "bpf_cpu_time_ms") == 0 ||
		    (len > 6 && strcmp(name + len - 6, "_power") == 0))
			cols[n++] = i;
	}
	return n;
}

static void read_numbers(const uint8_t *data, size_t size, bool all)
{
	static size_t cols[VW_CSV_MAX_COLUMNS];
	struct vw_csv *c = NULL;
	_cleanup_free_ double *v = NULL;
	size_t n_cols, rows = 0;
	char err[256];
	int r = vw_csv_open_buf("fuzz.csv", (const char *)data, size, &c, err, sizeof(err));

	if (r < 0) {
		vw_fuzz_assert(strncmp(err, "fuzz.csv", 8) == 0 || r == -ENOMEM, "error: %s", err);
		return;
	}
	vw_fuzz_assert(vw_csv_n_columns(c) >= 1 && vw_csv_n_columns(c) <= VW_CSV_MAX_COLUMNS,
		       "%zu columns", vw_csv_n_columns(c));
	n_cols = pick(c, all, cols);
	r = vw_csv_read_numbers(c, cols, n_cols, MAX_ROWS, &v, &rows, err, sizeof(err));
	vw_csv_free(c);
	if (r < 0)
		return;
	vw_fuzz_assert(n_cols > 0 && rows > 0 && rows <= MAX_ROWS, "%zu rows of %zu", rows, n_cols);
	for (size_t i = 0; i < rows * n_cols; i++)
		vw_fuzz_assert(isfinite(v[i]), "value %zu is %g", i, v[i]);
}

/* The first line split, quoted back, split again. */
static void check_split(const uint8_t *data, size_t size)
{
	static char *f1[64], *f2[64];
	size_t len = VW_MIN(size, (size_t)VW_CSV_MAX_LINE), n1, n2, o = 0;
	_cleanup_free_ char *line = vw_fuzz_strdup(data, len);
	_cleanup_free_ char *copy = NULL, *back = NULL;

	line[strcspn(line, "\n")] = '\0';
	copy = strdup(line);
	back = malloc(2 * strlen(line) + 3 * 64 + 1);
	if (!copy || !back)
		abort();
	n1 = vw_csv_split(copy, f1, ARRAY_SIZE(f1));
	if (n1 == 0)
		return;
	for (size_t i = 0; i < n1; i++) {
		back[o++] = '"';
		for (const char *p = f1[i]; *p; p++) {
			if (*p == '"')
				back[o++] = '"';
			back[o++] = *p;
		}
		back[o++] = '"';
		back[o++] = i + 1 < n1 ? ',' : '\0';
	}
	n2 = vw_csv_split(back, f2, ARRAY_SIZE(f2));
	vw_fuzz_assert(n1 == n2, "%zu fields, %zu once quoted back", n1, n2);
	for (size_t i = 0; i < n1; i++)
		vw_fuzz_assert(strcmp(f1[i], f2[i]) == 0, "field %zu: \"%s\", then \"%s\"", i,
			       f1[i], f2[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	read_numbers(data, size, true);
	read_numbers(data, size, false);
	check_split(data, size);
	return 0;
}

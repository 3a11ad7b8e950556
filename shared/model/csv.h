/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A strict CSV reader for numeric tables (training data, model checks): column names from the
 * header, RFC 4180 quotes, caps on line length, columns and rows, and every error naming the
 * file and line ("data.csv:17: column package_power: bad number 'x'").
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#define VW_CSV_MAX_LINE (64u << 10) /* bytes per line, newline included */
#define VW_CSV_MAX_COLUMNS 4096u
#define VW_CSV_MAX_ROWS 1000000u /* default row cap */

struct vw_csv; /* an open file positioned after its header */

/*
 * Open path and read its header. Names may be empty (a pandas index column) but two non-empty
 * names may not be equal. 0 or -errno with a one-line reason in err.
 */
int vw_csv_open(const char *path, struct vw_csv **ret, char *err, size_t errlen);
/* The same for a file already in memory (buf must outlive *ret); name is used in messages. */
int vw_csv_open_buf(const char *name, const char *buf, size_t len, struct vw_csv **ret, char *err,
		    size_t errlen);
void vw_csv_free(struct vw_csv *c);

size_t vw_csv_n_columns(const struct vw_csv *c);
const char *vw_csv_column_name(const struct vw_csv *c, size_t i);
/* The column called name ((size_t)-1 when none). */
size_t vw_csv_find(const struct vw_csv *c, const char *name);

/*
 * Read every remaining data row (blank lines skipped), parsing the given columns as finite
 * numbers (other columns may hold anything). *ret_values (malloc'd) is row-major, n_rows ×
 * n_cols. More than max_rows rows (0: VW_CSV_MAX_ROWS) is -EFBIG; no row at all is -ENODATA;
 * a short or long row or a bad number is -EINVAL; the reason, with its line, goes to err.
 */
int vw_csv_read_numbers(struct vw_csv *c, const size_t *cols, size_t n_cols, size_t max_rows,
			double **ret_values, size_t *ret_rows, char *err, size_t errlen);

/*
 * Split one line in place (trailing CR/LF dropped; "a,b" and "" inside quotes); fields point
 * into line. The number of fields, or 0 when there are more than max.
 */
size_t vw_csv_split(char *line, char **fields, size_t max);
/* A whole-string finite number (strtod). 0 or -EINVAL. */
int vw_csv_parse_number(const char *s, double *ret);

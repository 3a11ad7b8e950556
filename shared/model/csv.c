/* SPDX-License-Identifier: Apache-2.0 */
/* Strict numeric CSV reading (see csv.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csv.h"
#include "macro.h"

struct vw_csv {
	FILE *in;
	char *path;
	char **names;
	size_t n_cols;
	size_t line_no;
	char *line;
	size_t cap;
};

size_t vw_csv_split(char *line, char **fields, size_t max)
{
	size_t n = 0;
	char *r = line, *w = line;

	line[strcspn(line, "\r\n")] = '\0';
	for (;;) {
		bool quoted = *r == '"';

		if (n == max)
			return 0;
		fields[n++] = w;
		r += quoted;
		while (*r && (quoted || *r != ',')) {
			if (quoted && *r == '"') {
				if (r[1] != '"') {
					quoted = false;
					r++;
					continue;
				}
				r++;
			}
			*w++ = *r++;
		}
		if (*r == '\0') {
			*w = '\0';
			return n;
		}
		*w++ = '\0';
		r++;
	}
}

int vw_csv_parse_number(const char *s, double *ret)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end != '\0' || errno == ERANGE || !isfinite(v))
		return -EINVAL;
	*ret = v;
	return 0;
}

void vw_csv_free(struct vw_csv *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n_cols; i++)
		free(c->names[i]);
	free(c->names);
	free(c->path);
	free(c->line);
	if (c->in)
		fclose(c->in);
	free(c);
}

size_t vw_csv_n_columns(const struct vw_csv *c)
{
	return c->n_cols;
}

const char *vw_csv_column_name(const struct vw_csv *c, size_t i)
{
	return i < c->n_cols ? c->names[i] : NULL;
}

size_t vw_csv_find(const struct vw_csv *c, const char *name)
{
	for (size_t i = 0; i < c->n_cols; i++)
		if (strcmp(c->names[i], name) == 0)
			return i;
	return (size_t)-1;
}

/* The next line into c->line: 1, 0 at end of file, or -errno (reason in err). */
static int next_line(struct vw_csv *c, char *err, size_t errlen)
{
	ssize_t len;

	len = getline(&c->line, &c->cap, c->in);
	if (len < 0) {
		if (ferror(c->in)) {
			snprintf(err, errlen, "%s: read error", c->path);
			return -EIO;
		}
		return 0;
	}
	c->line_no++;
	if ((size_t)len > VW_CSV_MAX_LINE) {
		snprintf(err, errlen, "%s:%zu: line longer than %u bytes", c->path, c->line_no,
			 VW_CSV_MAX_LINE);
		return -EFBIG;
	}
	if (memchr(c->line, '\0', (size_t)len)) {
		snprintf(err, errlen, "%s:%zu: NUL byte", c->path, c->line_no);
		return -EINVAL;
	}
	return 1;
}

static int read_header(struct vw_csv *c, char *err, size_t errlen)
{
	_cleanup_free_ char **fields = calloc(VW_CSV_MAX_COLUMNS, sizeof(*fields));
	size_t n;
	int r;

	if (!fields)
		return -ENOMEM;
	r = next_line(c, err, errlen);
	if (r <= 0) {
		if (r == 0)
			snprintf(err, errlen, "%s: empty, no header", c->path);
		return r < 0 ? r : -ENODATA;
	}
	n = vw_csv_split(c->line, fields, VW_CSV_MAX_COLUMNS);
	if (n == 0) {
		snprintf(err, errlen, "%s:1: more than %u columns", c->path, VW_CSV_MAX_COLUMNS);
		return -EINVAL;
	}
	c->names = calloc(n, sizeof(*c->names));
	if (!c->names)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (fields[i][0] && vw_csv_find(c, fields[i]) != (size_t)-1) {
			snprintf(err, errlen, "%s:1: column '%.64s' twice", c->path, fields[i]);
			return -EINVAL;
		}
		c->names[i] = strdup(fields[i]);
		if (!c->names[i])
			return -ENOMEM;
		c->n_cols = i + 1;
	}
	return 0;
}

/* Read from in (taken, closed on failure too), named path in messages. */
static int csv_start(FILE *in, const char *path, struct vw_csv **ret, char *err, size_t errlen)
{
	struct vw_csv *c = calloc(1, sizeof(*c));
	int r;

	if (!c || !(c->path = strdup(path))) {
		free(c);
		fclose(in);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	c->in = in;
	r = read_header(c, err, errlen);
	if (r < 0) {
		if (r == -ENOMEM)
			snprintf(err, errlen, "out of memory");
		vw_csv_free(c);
		return r;
	}
	*ret = c;
	return 0;
}

int vw_csv_open(const char *path, struct vw_csv **ret, char *err, size_t errlen)
{
	FILE *in = fopen(path, "re");
	int r = -errno;

	if (!in) {
		snprintf(err, errlen, "%s: %s", path, strerror(-r));
		return r;
	}
	return csv_start(in, path, ret, err, errlen);
}

int vw_csv_open_buf(const char *name, const char *buf, size_t len, struct vw_csv **ret, char *err,
		    size_t errlen)
{
	FILE *in = fmemopen((void *)buf, len, "r"); /* only read */
	int r = -errno;

	if (!in) {
		snprintf(err, errlen, "%s: %s", name, strerror(-r));
		return r;
	}
	return csv_start(in, name, ret, err, errlen);
}

/* Parse the wanted columns of the split row into out. */
static int row_numbers(const struct vw_csv *c, char **fields, const size_t *cols, size_t n_cols,
		       double *out, char *err, size_t errlen)
{
	for (size_t j = 0; j < n_cols; j++) {
		if (vw_csv_parse_number(fields[cols[j]], &out[j]) < 0) {
			snprintf(err, errlen, "%s:%zu: column %.64s: bad number '%.32s'", c->path,
				 c->line_no, c->names[cols[j]], fields[cols[j]]);
			return -EINVAL;
		}
	}
	return 0;
}

int vw_csv_read_numbers(struct vw_csv *c, const size_t *cols, size_t n_cols, size_t max_rows,
			double **ret_values, size_t *ret_rows, char *err, size_t errlen)
{
	_cleanup_free_ char **fields = calloc(c->n_cols + 1, sizeof(*fields));
	_cleanup_free_ double *values = NULL;
	size_t rows = 0, cap = 0;
	int r;

	if (!fields)
		return -ENOMEM;
	if (n_cols == 0)
		return -EINVAL;
	for (size_t j = 0; j < n_cols; j++)
		if (cols[j] >= c->n_cols)
			return -EINVAL;
	if (max_rows == 0)
		max_rows = VW_CSV_MAX_ROWS;
	while ((r = next_line(c, err, errlen)) > 0) {
		size_t n;

		if (c->line[strspn(c->line, " \t\r\n")] == '\0')
			continue;
		if (rows == max_rows) {
			snprintf(err, errlen, "%s:%zu: more than %zu data rows", c->path,
				 c->line_no, max_rows);
			return -EFBIG;
		}
		n = vw_csv_split(c->line, fields, c->n_cols + 1);
		if (n != c->n_cols) {
			snprintf(err, errlen, "%s:%zu: %s fields, the header has %zu", c->path,
				 c->line_no, n ? "wrong number of" : "too many", c->n_cols);
			return -EINVAL;
		}
		if (vw_array_grow((void **)&values, n_cols * sizeof(double), rows, &cap) < 0)
			return -ENOMEM;
		r = row_numbers(c, fields, cols, n_cols, values + rows * n_cols, err, errlen);
		if (r < 0)
			return r;
		rows++;
	}
	if (r < 0)
		return r;
	if (rows == 0) {
		snprintf(err, errlen, "%s: no data rows", c->path);
		return -ENODATA;
	}
	*ret_values = VW_TAKE_PTR(values);
	*ret_rows = rows;
	return 0;
}

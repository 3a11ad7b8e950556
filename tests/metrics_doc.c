/* SPDX-License-Identifier: Apache-2.0 */
/*
 * docs/metrics.md from the family tables themselves: every family either daemon can serve, its
 * type, unit, labels and help, under the code that produces it. Built with the tree; the test
 * `metrics_doc` fails when the checked-in file differs from what this prints.
 *   metrics_doc OUTPUT
 */
#include <stdio.h>
#include <string.h>

#include "family_tables.h"

static const char *type_name(enum vw_metric_type t)
{
	return t == VW_METRIC_COUNTER ? "counter" : "gauge";
}

/* Markdown table cells: a pipe would end the cell, a newline the row. */
static void cell(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		if (*s == '|')
			fputs("\\|", f);
		else if (*s == '\n')
			fputc(' ', f);
		else
			fputc(*s, f);
	}
}

static void table(FILE *f, const struct vw_family_table *t)
{
	fprintf(f, "\n## `%s`\n\nServed by %s", t->producer, t->daemons);
	if (t->note) {
		fputs(": ", f);
		cell(f, t->note);
	}
	fputs(".\n\n| family | type | unit | labels | help |\n|---|---|---|---|---|\n", f);
	for (size_t i = 0; i < t->n; i++) {
		const struct vw_metric_family *m = &t->families[i];

		fprintf(f, "| `%s` | %s | %s | ", m->name, type_name(m->type), m->unit ? m->unit : "");
		for (size_t j = 0; m->labels && m->labels[j]; j++)
			fprintf(f, "%s`%s`", j ? ", " : "", m->labels[j]);
		fputs(" | ", f);
		cell(f, m->help);
		fputs(" |\n", f);
	}
}

int main(int argc, char **argv)
{
	size_t n = 0, tables = 0;
	FILE *f;

	if (argc != 2) {
		fprintf(stderr, "usage: %s OUTPUT\n", argv[0]);
		return 2;
	}
	f = fopen(argv[1], "w");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	for (; vw_all_family_tables[tables]; tables++)
		n += vw_all_family_tables[tables]->n;
	fprintf(f, "# Metrics reference\n\n"
		   "Generated from the family tables by `tests/metrics_doc.c`; do not edit. After "
		   "changing a table,\n`ninja -C build tests/metrics.md && cp build/tests/metrics.md "
		   "docs/metrics.md` (the test\n`metrics_doc` fails while they differ). %zu families "
		   "in %zu tables; each section is named\nafter the function that writes its families. "
		   "Kepler's own families keep Kepler's names, types,\nlabels and meaning "
		   "(`kepler_*`); virtwatt's additions are `virtwatt_*`; `process_*` are the\n"
		   "names Prometheus client libraries give the exporter's own process.\n",
		n, tables);
	for (size_t t = 0; vw_all_family_tables[t]; t++)
		table(f, vw_all_family_tables[t]);
	return fclose(f) == 0 ? 0 : 1;
}

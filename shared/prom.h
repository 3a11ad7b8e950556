/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Prometheus exposition: metric families declared once in static tables (name, type, help,
 * label names); a bounded writer producing text 0.0.4 or OpenMetrics 1.0.0; label values
 * sanitised (invalid UTF-8 and control bytes replaced, length capped) and escaped exactly as
 * the text format requires.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum vw_metric_type {
	VW_METRIC_COUNTER, /* name ends in _total */
	VW_METRIC_GAUGE,
};

struct vw_metric_family {
	const char *name;
	enum vw_metric_type type;
	const char *help;
	const char *unit;          /* OpenMetrics # UNIT ("joules", "watts", "seconds"), or NULL */
	const char *const *labels; /* NULL-terminated label names (may be NULL for none) */
};

enum vw_prom_format {
	VW_PROM_TEXT_0_0_4,
	VW_PROM_OPENMETRICS_1_0_0,
};

/* OpenMetrics only when Accept names application/openmetrics-text; else 0.0.4. */
enum vw_prom_format vw_prom_negotiate(const char *accept);
const char *vw_prom_content_type(enum vw_prom_format fmt);

#define VW_PROM_LABEL_MAX 256 /* bytes of a label value after sanitising */

struct vw_prom_writer;

/* max_bytes caps the output: a family that would overflow is rolled back whole (-ENOBUFS). */
struct vw_prom_writer *vw_prom_writer_new(enum vw_prom_format fmt, size_t max_bytes);
void vw_prom_writer_free(struct vw_prom_writer *w);

/* Start a family: HELP, TYPE (and UNIT in OpenMetrics). Families are written once each. */
int vw_prom_family(struct vw_prom_writer *w, const struct vw_metric_family *f);
/* A sample of the current family; one value per declared label, in order. */
int vw_prom_gauge(struct vw_prom_writer *w, const char *const *label_values, double value);
/* A counter sample in joules (or any base unit) from integer micro-units, printed exactly. */
int vw_prom_counter_micro(struct vw_prom_writer *w, const char *const *label_values,
			  uint64_t micro);
int vw_prom_counter(struct vw_prom_writer *w, const char *const *label_values, double value);
/* Close the current family (rolls it back whole if anything in it overflowed). */
int vw_prom_family_end(struct vw_prom_writer *w);
/* Finish (OpenMetrics: "# EOF") and hand out the buffer (caller frees). */
int vw_prom_finish(struct vw_prom_writer *w, char **ret_buf, size_t *ret_len);

/* Sanitise and escape one label value into out (NUL-terminated); returns bytes written. */
size_t vw_prom_escape_label(const char *in, char *out, size_t outlen);

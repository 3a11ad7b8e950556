/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one exposition reader of the C tests (its Python twin is tests/exposition.py). A sample
 * line is "name value" or "name{labels} value" (an OpenMetrics timestamp after the value is
 * ignored); label values may hold spaces, braces and escaped quotes. Comments, blank lines and
 * junk are skipped.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct vw_expo_sample {
	const char *series; /* "name{labels}" as written (not NUL-terminated) */
	size_t series_len;
	size_t name_len;    /* series[0, name_len) is the name */
	const char *labels; /* between the braces (labels_len 0: none) */
	size_t labels_len;
	double value;
	bool counter; /* the family's last # TYPE said counter */
};

struct vw_expo_cursor {
	const char *p;
	bool counter;
};

void vw_expo_begin(struct vw_expo_cursor *c, const char *text);
/* The next sample into *s: false at the end. */
bool vw_expo_next(struct vw_expo_cursor *c, struct vw_expo_sample *s);

/* Whether the sample's name is family. */
bool vw_expo_is(const struct vw_expo_sample *s, const char *family);
/* The value of the sample whose name and labels are exactly series ("name{a=\"x\"}" or
 * "name"), NAN when absent. */
double vw_expo_value(const char *text, const char *series);
/* The sum of family's samples whose series holds every string of must (NULL-terminated; NULL:
 * all); 0 when none does. */
double vw_expo_sum(const char *text, const char *family, const char *const *must);
/* The first sample of family whose labels hold `labels`: true, its value in *ret. */
bool vw_expo_find(const char *text, const char *family, const char *labels, double *ret);

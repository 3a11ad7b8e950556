/* SPDX-License-Identifier: Apache-2.0 */
/* The carbon intensity as a step function of time (carbon.h): the table's parser and its
 * integral. Pure. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "carbon.h"
#include "macro.h"

/* "1764244800" or "2026-11-27T12:00:00Z" (or with a +HH:MM / -HH:MM offset). */
static int parse_time(const char *s, size_t n, int64_t *ret)
{
	char buf[64], *end;
	struct tm tm = { 0 };
	const char *rest;
	long long v;

	if (!n || n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (strspn(buf, "0123456789") == n) {
		errno = 0;
		v = strtoll(buf, &end, 10);
		if (errno || *end)
			return -EINVAL;
		*ret = v;
		return 0;
	}
	rest = strptime(buf, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!rest)
		return -EINVAL;
	if (*rest == '.') /* fractions of a second: dropped */
		rest += 1 + strspn(rest + 1, "0123456789");
	*ret = (int64_t)timegm(&tm);
	if (strcmp(rest, "Z") == 0)
		return 0;
	if ((rest[0] == '+' || rest[0] == '-') && strlen(rest) == 6 && rest[3] == ':') {
		int hh = (rest[1] - '0') * 10 + (rest[2] - '0'), mm = (rest[4] - '0') * 10 + (rest[5] - '0');

		if (strspn(rest + 1, "0123456789") != 2 || strspn(rest + 4, "0123456789") != 2 ||
		    hh > 23 || mm > 59)
			return -EINVAL;
		*ret -= (rest[0] == '+' ? 1 : -1) * (int64_t)(hh * 3600 + mm * 60);
		return 0;
	}
	return -EINVAL;
}

int vw_intensity_parse(const char *text, size_t len, struct vw_intensity_point **ret,
		       size_t *ret_n, char *why, size_t whylen)
{
	struct vw_intensity_point *t = NULL;
	size_t n = 0, cap = 0, lineno = 0;
	const char *p = text, *end = text + len;

	*ret = NULL;
	*ret_n = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *le = nl ? nl : end, *sep, *v;
		char num[64], *num_end;
		double g;
		int64_t ts;

		lineno++;
		while (p < le && (*p == ' ' || *p == '\t' || *p == '\r'))
			p++;
		while (le > p && (le[-1] == ' ' || le[-1] == '\t' || le[-1] == '\r'))
			le--;
		if (p == le || *p == '#') {
			p = nl ? nl + 1 : end;
			continue;
		}
		sep = p;
		while (sep < le && *sep != ' ' && *sep != '\t' && *sep != ',')
			sep++;
		v = sep;
		while (v < le && (*v == ' ' || *v == '\t' || *v == ','))
			v++;
		if (sep == le || v == le || parse_time(p, (size_t)(sep - p), &ts) < 0 ||
		    (size_t)(le - v) >= sizeof(num)) {
			snprintf(why, whylen, "line %zu: not \"TIME INTENSITY\" (TIME in Unix seconds "
					      "or RFC 3339 UTC, e.g. 2026-11-27T12:00:00Z)", lineno);
			goto fail;
		}
		memcpy(num, v, (size_t)(le - v));
		num[le - v] = '\0';
		g = strtod(num, &num_end);
		if (*num_end || !isfinite(g) || g < 0 || g > 10000) {
			snprintf(why, whylen, "line %zu: intensity \"%s\" is not a number of gCO2e/kWh "
					      "from 0 to 10000", lineno, num);
			goto fail;
		}
		if (n && ts <= t[n - 1].unix_s) {
			snprintf(why, whylen, "line %zu: times must increase (the table is a step "
					      "function in time order)", lineno);
			goto fail;
		}
		if (vw_array_grow((void **)&t, sizeof(*t), n, &cap) < 0) {
			free(t);
			return -ENOMEM;
		}
		t[n++] = (struct vw_intensity_point){ ts, g };
		p = nl ? nl + 1 : end;
	}
	if (!n) {
		snprintf(why, whylen, "no entry (lines \"TIME INTENSITY\")");
		return -EINVAL;
	}
	*ret = t;
	*ret_n = n;
	return 0;
fail:
	free(t);
	return -EINVAL;
}

double vw_intensity_integral(const struct vw_intensity_point *t, size_t n, int64_t from_ns,
			     int64_t to_ns, double *missing_s)
{
	double sum = 0;
	size_t lo = 0, hi = n;

	*missing_s = 0;
	if (to_ns <= from_ns)
		return 0;
	if (!n || from_ns < t[0].unix_s * (int64_t)VW_NSEC_PER_SEC) {
		int64_t known = n ? t[0].unix_s * (int64_t)VW_NSEC_PER_SEC : to_ns;

		*missing_s = (double)(VW_MIN(known, to_ns) - from_ns) / 1e9;
		if (!n || known >= to_ns)
			return 0;
		from_ns = known;
	}
	/* the last entry at or before from_ns */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (t[mid].unix_s * (int64_t)VW_NSEC_PER_SEC <= from_ns)
			lo = mid;
		else
			hi = mid;
	}
	for (size_t i = lo; i < n; i++) {
		int64_t a = VW_MAX(from_ns, t[i].unix_s * (int64_t)VW_NSEC_PER_SEC);
		int64_t b = i + 1 < n ? VW_MIN(to_ns, t[i + 1].unix_s * (int64_t)VW_NSEC_PER_SEC)
				      : to_ns;

		if (b > a)
			sum += t[i].g_per_kwh * (double)(b - a) / 1e9;
		if (b >= to_ns)
			break;
	}
	return sum;
}

/* SPDX-License-Identifier: Apache-2.0 */
#include "procfs.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "macro.h"

#define STAT_MAX (1u << 20)
#define CPUINFO_MAX (4u << 20)

/*
 * The aggregate line's fields after "cpu ": at least 4 unsigned decimals, up to 8 kept (newer
 * kernels add guest and guest_nice). sscanf's %llu took "-1" as 2^64 - 1 and skipped newlines.
 */
static int parse_cpu_fields(const char *p, uint64_t v[8])
{
	int n = 0;

	while (n < 8) {
		unsigned long long x;
		char *end;

		while (*p == ' ')
			p++;
		if (*p < '0' || *p > '9')
			break;
		errno = 0;
		x = strtoull(p, &end, 10);
		if (errno == ERANGE)
			return -EINVAL;
		v[n++] = x;
		p = end;
	}
	return n >= 4 ? 0 : -EINVAL;
}

int vw_procfs_parse_stat(const char *text, struct vw_cpu_stat *ret)
{
	struct vw_cpu_stat s = { 0 };
	bool have_total = false;
	const char *line = text;

	while (line && *line) {
		const char *next = strchr(line, '\n');

		if (strncmp(line, "cpu ", 4) == 0) {
			uint64_t v[8] = { 0 };

			if (parse_cpu_fields(line + 4, v) < 0)
				return -EINVAL;
			s.user = v[0], s.nice = v[1], s.system = v[2], s.idle = v[3];
			s.iowait = v[4], s.irq = v[5], s.softirq = v[6], s.steal = v[7];
			have_total = true;
		} else if (strncmp(line, "cpu", 3) == 0 && line[3] >= '0' && line[3] <= '9') {
			s.ncpus++;
		}
		line = next ? next + 1 : NULL;
	}
	if (!have_total)
		return -EINVAL;
	if (s.ncpus == 0)
		s.ncpus = 1;
	*ret = s;
	return 0;
}

/* procfs/rel whole into a malloc'd *ret of max bytes (a procfs file has no size to go by). */
int vw_procfs_read_stat(int procfd, struct vw_cpu_stat *ret)
{
	_cleanup_free_ char *buf = NULL;
	int r = vw_read_whole_at(procfd, "stat", STAT_MAX, &buf, NULL);

	return r < 0 ? r : vw_procfs_parse_stat(buf, ret);
}

int vw_procfs_read_stat_kept(struct vw_kept_file *kf, int procfd, struct vw_cpu_stat *ret)
{
	const char *text;
	int r = vw_kept_file_read_whole(kf, procfd, "stat", STAT_MAX, &text, NULL);

	return r < 0 ? r : vw_procfs_parse_stat(text, ret);
}

static uint64_t fwd(uint64_t a, uint64_t b)
{
	return b >= a ? b - a : 0;
}

/* Sums saturate (vw_add_sat), so busy never exceeds total however absurd the counters. */
uint64_t vw_cpu_stat_busy_delta(const struct vw_cpu_stat *p, const struct vw_cpu_stat *c)
{
	uint64_t sum = fwd(p->user, c->user);

	sum = vw_add_sat(sum, fwd(p->nice, c->nice));
	sum = vw_add_sat(sum, fwd(p->system, c->system));
	sum = vw_add_sat(sum, fwd(p->irq, c->irq));
	return vw_add_sat(sum, fwd(p->softirq, c->softirq));
}

uint64_t vw_cpu_stat_total_delta(const struct vw_cpu_stat *p, const struct vw_cpu_stat *c)
{
	return vw_add_sat(vw_add_sat(vw_cpu_stat_busy_delta(p, c), fwd(p->idle, c->idle)),
		       fwd(p->iowait, c->iowait));
}

double vw_cpu_stat_usage(const struct vw_cpu_stat *p, const struct vw_cpu_stat *c)
{
	uint64_t total = vw_cpu_stat_total_delta(p, c);

	if (total == 0)
		return 0.0;
	return (double)vw_cpu_stat_busy_delta(p, c) / (double)total;
}

static void copy_value(char *dst, size_t size, const char *colon)
{
	const char *v = colon + 1;
	size_t n;

	while (*v == ' ' || *v == '\t')
		v++;
	n = strcspn(v, "\n");
	while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	if (n >= size)
		n = size - 1;
	memcpy(dst, v, n);
	dst[n] = '\0';
}

/* The numbered identity fields (decimal on x86, 0x... on Arm). */
static void cpu_number(struct vw_cpu_info *cur, const char *line, size_t keylen,
		       const char *colon)
{
	static const struct {
		const char *key;
		bool is_long;
		size_t off;
	} keys[] = {
		{ "cpu family", false, offsetof(struct vw_cpu_info, family) },
		{ "model", false, offsetof(struct vw_cpu_info, model) },
		{ "stepping", false, offsetof(struct vw_cpu_info, stepping) },
		{ "CPU implementer", true, offsetof(struct vw_cpu_info, implementer) },
		{ "CPU part", true, offsetof(struct vw_cpu_info, part) },
	};
	char num[24], *end;
	long v;

	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		if (keylen != strlen(keys[i].key) || strncmp(line, keys[i].key, keylen) != 0)
			continue;
		copy_value(num, sizeof(num), colon);
		errno = 0;
		v = strtol(num, &end, 0);
		if (end == num || errno || v < 0 || v > INT_MAX)
			return;
		if (keys[i].is_long)
			*(long *)((char *)cur + keys[i].off) = v;
		else
			*(int *)((char *)cur + keys[i].off) = (int)v;
		return;
	}
}

int vw_procfs_parse_cpuinfo(const char *text, struct vw_cpu_info **ret, size_t *ret_n)
{
	_cleanup_free_ struct vw_cpu_info *arr = NULL;
	struct vw_cpu_info *cur = NULL;
	size_t n = 0, cap = 0;

	for (const char *line = text; line && *line;) {
		const char *next = strchr(line, '\n');
		const char *colon = strchr(line, ':');
		size_t keylen;

		if (colon && (!next || colon < next)) {
			keylen = (size_t)(colon - line);
			while (keylen > 0 && (line[keylen - 1] == ' ' || line[keylen - 1] == '\t'))
				keylen--;
			if (keylen == 9 && strncmp(line, "processor", 9) == 0) {
				char num[16];
				uint64_t v;

				if (vw_array_grow((void **)&arr, sizeof(*arr), n, &cap) < 0)
					return -ENOMEM;
				cur = &arr[n++];
				*cur = (struct vw_cpu_info){ .family = -1, .model = -1, .stepping = -1,
							     .implementer = -1, .part = -1 };
				copy_value(num, sizeof(num), colon);
				cur->processor = vw_parse_u64(num, &v) == 0 ? (unsigned)v : 0;
			} else if (cur && keylen == 9 && strncmp(line, "vendor_id", 9) == 0) {
				copy_value(cur->vendor_id, sizeof(cur->vendor_id), colon);
			} else if (cur && keylen == 10 && strncmp(line, "model name", 10) == 0) {
				copy_value(cur->model_name, sizeof(cur->model_name), colon);
			} else if (cur && keylen == 11 && strncmp(line, "physical id", 11) == 0) {
				copy_value(cur->physical_id, sizeof(cur->physical_id), colon);
			} else if (cur && keylen == 7 && strncmp(line, "core id", 7) == 0) {
				copy_value(cur->core_id, sizeof(cur->core_id), colon);
			} else if (cur) {
				cpu_number(cur, line, keylen, colon);
			}
		}
		line = next ? next + 1 : NULL;
	}
	*ret = VW_TAKE_PTR(arr);
	*ret_n = n;
	return 0;
}

int vw_procfs_read_cpuinfo(int procfd, struct vw_cpu_info **ret, size_t *ret_n)
{
	_cleanup_free_ char *buf = NULL;
	int r = vw_read_whole_at(procfd, "cpuinfo", CPUINFO_MAX, &buf, NULL);

	return r < 0 ? r : vw_procfs_parse_cpuinfo(buf, ret, ret_n);
}

/* An unsigned decimal at *p (one digit at least), up to the first non-digit. */
static int stat_number(const char **p, uint64_t *ret)
{
	const char *s = *p;
	uint64_t v = 0;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	do {
		unsigned d = (unsigned)(*s - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
		s++;
	} while (*s >= '0' && *s <= '9');
	*p = s;
	*ret = v;
	return 0;
}

int vw_procfs_parse_u64(const char **p, uint64_t *ret)
{
	const char *s = *p;

	while (*s == ' ' || *s == '\t')
		s++;
	if (stat_number(&s, ret) < 0)
		return *s >= '0' && *s <= '9' ? -ERANGE : -ENODATA;
	*p = s;
	return 0;
}

int vw_procfs_field_u64(const char *text, const char *key, uint64_t *ret, const char **ret_end)
{
	size_t n = strlen(key);
	const char *line = text;
	int r;

	while (line && (strncmp(line, key, n) != 0 || line[n] != ':')) {
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	if (!line)
		return -ENODATA;
	line += n + 1;
	r = vw_procfs_parse_u64(&line, ret);
	if (r == 0 && ret_end)
		*ret_end = line;
	return r;
}

int vw_procfs_parse_pid_stat_fields(const char *text, struct vw_pid_stat *ret)
{
	const char *open = strchr(text, '('), *close = strrchr(text, ')'), *p;
	struct vw_pid_stat s = { 0 };
	uint64_t ppid = 0;
	size_t len;
	int r;

	if (!open || !close || close < open || close[1] != ' ')
		return -EINVAL;
	p = close + 2;
	if (*p == '\0' || *p == ' ' || *p == '\n')
		return -EINVAL;
	s.state = *p++;
	/* state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime
	 * cutime cstime priority nice num_threads itrealvalue starttime */
	for (int field = 4; field <= 22; field++) {
		uint64_t *num = field == 4 ? &ppid : field == 14 ? &s.utime : field == 15 ? &s.stime
						: field == 22 ? &s.start : NULL;

		if (*p++ != ' ')
			return -EINVAL;
		if (num) {
			r = stat_number(&p, num);
			if (r < 0)
				return r;
			if (*p != ' ' && !(field == 22 && (*p == '\n' || *p == '\0')))
				return -EINVAL;
			continue;
		}
		/* A field not read (some are negative: tty_nr, tpgid, priority, nice) */
		if (*p == '\0' || *p == ' ' || *p == '\n')
			return -EINVAL;
		while (*p != ' ' && *p != '\n' && *p != '\0')
			p++;
	}
	if (ppid > UINT32_MAX || s.utime > UINT64_MAX / 2 || s.stime > UINT64_MAX / 2)
		return -ERANGE;
	s.ppid = (uint32_t)ppid;
	len = VW_MIN((size_t)(close - open - 1), (size_t)VW_COMM_LEN - 1);
	memcpy(s.comm, open + 1, len);
	s.comm[len] = '\0';
	*ret = s;
	return 0;
}

int vw_procfs_parse_pid_stat(const char *text, char comm[VW_COMM_LEN], uint64_t *ret_ticks,
			     uint64_t *ret_start)
{
	struct vw_pid_stat s;
	int r = vw_procfs_parse_pid_stat_fields(text, &s);

	if (r < 0)
		return r;
	memcpy(comm, s.comm, VW_COMM_LEN);
	*ret_ticks = s.utime + s.stime;
	*ret_start = s.start;
	return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CPU-accounting cgroup hierarchy (cgroupfs.h): found under the sysfs root, walked with
 * getdents (a directory entry's d_ino is the cgroup's id, no stat needed), read per cgroup.
 */
#include "cgroupfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroupfs_priv.h"
#include "fileio.h"
#include "macro.h"
#include "cgroup_path.h"

#define MAX_DEPTH 32

struct entry {
	uint64_t id;
	uint64_t gen;     /* the walk that last saw it */
	size_t path;      /* offset in the pool */
};

struct vw_cgroupfs {
	int fd; /* the hierarchy's root directory */
	bool v1;
	char mount[32];
	uint64_t scans;
	size_t max;        /* entries at most (VW_CGROUPFS_MAX) */
	uint64_t refused;  /* cgroups a full table could not record, summed over walks */
	struct entry *e;
	size_t n, cap;
	char *pool;
	size_t pool_len, pool_cap;
};

/* Where each layout mounts it, relative to the sysfs root; a marker file says it is the one. */
static const struct candidate {
	const char *rel, *marker;
	bool v1;
} candidates[] = {
	{ "fs/cgroup/cpuacct", "cpuacct.usage", true },
	{ "fs/cgroup/cpu,cpuacct", "cpuacct.usage", true },
	{ "fs/cgroup/cpuacct,cpu", "cpuacct.usage", true },
	{ "fs/cgroup/unified", "cgroup.controllers", false }, /* hybrid: v2 beside v1 */
	{ "fs/cgroup", "cgroup.controllers", false },         /* unified only */
};

struct vw_cgroupfs *vw_cgroupfs_open(int sysfs_fd)
{
	for (size_t i = 0; i < ARRAY_SIZE(candidates); i++) {
		const struct candidate *c = &candidates[i];
		int fd = openat(sysfs_fd, c->rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		struct vw_cgroupfs *cg;

		if (fd < 0)
			continue;
		if (faccessat(fd, c->marker, F_OK, 0) < 0) {
			close(fd);
			continue;
		}
		cg = calloc(1, sizeof(*cg));
		if (!cg) {
			close(fd);
			return NULL;
		}
		cg->fd = fd;
		cg->v1 = c->v1;
		cg->max = VW_CGROUPFS_MAX;
		snprintf(cg->mount, sizeof(cg->mount), "%s", c->rel);
		return cg;
	}
	errno = ENOENT;
	return NULL;
}

void vw_cgroupfs_free(struct vw_cgroupfs *cg)
{
	if (!cg)
		return;
	close(cg->fd);
	free(cg->e);
	free(cg->pool);
	free(cg);
}

bool vw_cgroupfs_is_v1(const struct vw_cgroupfs *cg)
{
	return cg->v1;
}

const char *vw_cgroupfs_mount(const struct vw_cgroupfs *cg)
{
	return cg->mount;
}

size_t vw_cgroupfs_count(const struct vw_cgroupfs *cg)
{
	return cg->n;
}

uint64_t vw_cgroupfs_scans(const struct vw_cgroupfs *cg)
{
	return cg->scans;
}

void vw_cgroupfs_table_stat(const struct vw_cgroupfs *cg, struct vw_table_stat *ret)
{
	*ret = (struct vw_table_stat){ .present = true, .entries = cg->n, .evictions = cg->refused };
}

void vw_cgroupfs_set_max(struct vw_cgroupfs *cg, size_t max)
{
	cg->max = max;
}

/* ---- the walk ---- */

/* The table being built: entries and a string pool, swapped in when the walk is done. */
struct table {
	struct entry *e;
	size_t n, cap, max;
	uint64_t refused; /* adds past max */
	char *pool;
	size_t len, pool_cap;
};

static void table_free(struct table *t)
{
	free(t->e);
	free(t->pool);
}

static int table_add(struct table *t, uint64_t id, uint64_t gen, const char *path, size_t plen)
{
	if (t->n >= t->max) {
		t->refused++;
		return -ENOSPC;
	}
	if (vw_array_grow((void **)&t->e, sizeof(*t->e), t->n, &t->cap) < 0)
		return -ENOMEM;
	while (t->pool_cap - t->len < plen + 1) {
		size_t cap = t->pool_cap ? t->pool_cap * 2 : 4096;
		char *np = realloc(t->pool, cap);

		if (!np)
			return -ENOMEM;
		t->pool = np;
		t->pool_cap = cap;
	}
	memcpy(t->pool + t->len, path, plen);
	t->pool[t->len + plen] = '\0';
	t->e[t->n++] = (struct entry){ .id = id, .gen = gen, .path = t->len };
	t->len += plen + 1;
	return 0;
}

/* Add the sub-directories of `path` (open as dfd), then walk each. path is a PATH_MAX buffer. */
static int walk(struct table *t, int dfd, char *path, size_t plen, unsigned depth, uint64_t gen)
{
	DIR *d = fdopendir(dfd);
	struct dirent *de;
	int r = 0;

	if (!d) {
		close(dfd);
		return -errno;
	}
	while (r == 0 && (de = readdir(d))) {
		size_t nlen = strlen(de->d_name), len = plen ? plen + 1 + nlen : nlen;
		int sub;

		if (de->d_type != DT_DIR || de->d_name[0] == '.' || len >= PATH_MAX)
			continue;
		if (plen)
			path[plen] = '/';
		memcpy(path + (plen ? plen + 1 : 0), de->d_name, nlen + 1);
		r = table_add(t, de->d_ino, gen, path, len);
		if (r == -ENOSPC)
			r = 0; /* counted; the walk goes on to count the rest */
		if (r < 0 || depth + 1 >= MAX_DEPTH)
			continue;
		sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (sub >= 0)
			r = walk(t, sub, path, len, depth + 1, gen); /* a cgroup gone meanwhile: skipped */
		path[plen] = '\0';
	}
	closedir(d);
	return r;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static const struct entry *find(const struct entry *e, size_t n, uint64_t id)
{
	size_t i = VW_LOWER_BOUND(e, 0, n, id, id);

	return i < n && e[i].id == id ? &e[i] : NULL;
}

int vw_cgroupfs_scan(struct vw_cgroupfs *cg)
{
	_cleanup_free_ char *path = malloc(PATH_MAX);
	struct table t = { .max = cg->max };
	uint64_t gen = cg->scans + 1;
	size_t n_new;
	struct stat st;
	int r, dfd;

	if (!path)
		return -ENOMEM;
	if (fstat(cg->fd, &st) < 0)
		return -errno;
	r = table_add(&t, st.st_ino, gen, "", 0);
	dfd = r == 0 ? openat(cg->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	path[0] = '\0';
	if (r == 0)
		r = dfd < 0 ? -errno : walk(&t, dfd, path, 0, 0, gen);
	n_new = t.n;
	qsort(t.e, n_new, sizeof(*t.e), cmp_entry);
	/* What the previous walk saw and this one did not stays for one more walk. */
	for (size_t i = 0; r == 0 && i < cg->n; i++) {
		const struct entry *old = &cg->e[i];

		if (old->gen + 1 == gen && !find(t.e, n_new, old->id))
			r = table_add(&t, old->id, old->gen, cg->pool + old->path,
				      strlen(cg->pool + old->path));
	}
	if (r < 0 && r != -ENOSPC) {
		table_free(&t);
		return r;
	}
	qsort(t.e, t.n, sizeof(*t.e), cmp_entry);
	cg->refused += t.refused;
	free(cg->e);
	free(cg->pool);
	cg->e = t.e;
	cg->n = t.n;
	cg->cap = t.cap;
	cg->pool = t.pool;
	cg->pool_len = t.len;
	cg->pool_cap = t.pool_cap;
	cg->scans = gen;
	return 0;
}

int vw_cgroupfs_path(const struct vw_cgroupfs *cg, uint64_t id, const char **ret_path)
{
	const struct entry *e = find(cg->e, cg->n, id);

	if (!e)
		return -ENOENT;
	*ret_path = cg->pool + e->path;
	return 0;
}

/* ---- per process, per cgroup ---- */

/* Whether a v1 line's controller list ("cpu,cpuacct") holds cpuacct. */
static bool has_cpuacct(const char *list, size_t n)
{
	for (const char *p = list, *end = list + n; p < end;) {
		const char *c = memchr(p, ',', (size_t)(end - p));
		size_t len = (size_t)((c ? c : end) - p);

		if (len == 7 && memcmp(p, "cpuacct", 7) == 0)
			return true;
		p += len + 1;
	}
	return false;
}

int vw_cgroupfs_parse_pid_path(bool v1, const char *text, char *buf, size_t size)
{
	for (const char *line = text; *line;) {
		const char *eol = strchrnul(line, '\n');
		const char *c1 = memchr(line, ':', (size_t)(eol - line));
		const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(eol - c1 - 1)) : NULL;

		/* "hierarchy-ID:controller-list:path"; v2 is "0::path". */
		if (c2 && (v1 ? has_cpuacct(c1 + 1, (size_t)(c2 - c1 - 1))
			      : c2 == c1 + 1 && c1 - line == 1 && line[0] == '0')) {
			const char *p = c2 + 1;
			size_t n;

			while (p < eol && *p == '/')
				p++;
			n = (size_t)(eol - p);
			if (n >= size)
				return -ENAMETOOLONG;
			memcpy(buf, p, n);
			buf[n] = '\0';
			return 0;
		}
		line = *eol ? eol + 1 : eol;
	}
	return -ENOENT;
}

int vw_cgroupfs_pid_path(const struct vw_cgroupfs *cg, int procfd, uint32_t pid, char *buf,
			 size_t size)
{
	_cleanup_free_ char *text = NULL;
	int r = vw_workload_read_cgroup_file(procfd, pid, &text, NULL);

	if (r < 0)
		return r;
	return vw_cgroupfs_parse_pid_path(cg->v1, text, buf, size);
}

int vw_cgroupfs_parse_cpu_stat(const char *text, uint64_t *ret_ns)
{
	for (const char *line = text; *line;) {
		const char *eol = strchrnul(line, '\n');
		char num[32];
		uint64_t us;
		size_t n;

		if (strncmp(line, "usage_usec ", 11) == 0) {
			n = (size_t)(eol - line - 11);
			if (n == 0 || n >= sizeof(num))
				return -EINVAL;
			memcpy(num, line + 11, n);
			num[n] = '\0';
			if (vw_parse_u64(num, &us) < 0 || us > UINT64_MAX / 1000)
				return -EINVAL;
			*ret_ns = us * 1000;
			return 0;
		}
		line = *eol ? eol + 1 : eol;
	}
	return -ENODATA;
}

int vw_cgroupfs_usage(const struct vw_cgroupfs *cg, const char *path, uint64_t *ret_ns)
{
	return vw_cgroupfs_usage_kept(cg, NULL, path, ret_ns);
}

int vw_cgroupfs_usage_kept(const struct vw_cgroupfs *cg, struct vw_kept_file *kf, const char *path,
			   uint64_t *ret_ns)
{
	char rel[PATH_MAX], buf[1024];
	const char *file = cg->v1 ? "cpuacct.usage" : "cpu.stat";
	size_t plen = strlen(path), flen = strlen(file) + 1, len;
	int r;

	if (path[0] == '/' || strstr(path, ".."))
		return -EINVAL;
	/* PATH/FILE by hand: snprintf took ~1,000 instructions, most of a kept file's read. */
	if (plen + (plen > 0) + flen > sizeof(rel))
		return -ENAMETOOLONG;
	memcpy(rel, path, plen);
	if (plen)
		rel[plen++] = '/';
	memcpy(rel + plen, file, flen);
	if (kf) /* a v1 cpuacct.usage in vw_read_u64_at()'s 64 bytes */
		r = vw_kept_file_read(kf, cg->fd, rel, buf, cg->v1 ? 64 : sizeof(buf), &len);
	else
		r = vw_read_file_at(cg->fd, rel, buf, cg->v1 ? 64 : sizeof(buf), &len);
	if (r == 0 && cg->v1 && memchr(buf, '\0', len))
		r = -EINVAL;
	if (r == 0)
		r = cg->v1 ? vw_parse_u64(buf, ret_ns) : vw_cgroupfs_parse_cpu_stat(buf, ret_ns);
	else if (r == -EFBIG && cg->v1)
		r = -EINVAL;
	return r == -ENODEV ? -ENOENT : r; /* a removed cgroup's open file reads ENODEV */
}

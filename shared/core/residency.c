/* SPDX-License-Identifier: Apache-2.0 */
#include "residency.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "macro.h"

struct vma {
	uintptr_t start, end;
	size_t rss_kib;
	bool candidate; /* private, read-only, file-backed */
	bool dirty;	/* an anonymous, swapped or locked page: left whole */
};

struct vmas {
	struct vma *v;
	size_t n, cap;
};

static int vma_push(struct vmas *s)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		struct vma *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = (struct vma){ 0 };
	return 0;
}

/* "7f..-7f.. r-xp 00001000 08:01 1234   /usr/lib/libc.so.6": a mapping's first line. */
static bool parse_header(const char *line, struct vma *m)
{
	uintptr_t start, end;
	unsigned long long inode;
	char perms[5];
	int path = 0;

	if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %4s %*x %*x:%*x %llu %n", &start, &end, perms,
		   &inode, &path) < 4)
		return false;
	m->start = start;
	m->end = end;
	m->candidate = perms[0] == 'r' && perms[1] == '-' && perms[3] == 'p' && inode != 0 &&
		       path > 0 && line[path] == '/';
	return true;
}

/* One "Key:   N kB" line of the current mapping. */
static void parse_field(const char *line, struct vma *m)
{
	/* A page of ours is anonymous (a copy on write), maybe swapped out; a dirty page of the
	 * page cache is the file's, written back whether we map it or not. */
	static const char *const dirty[] = { "Anonymous:", "Swap:", "Locked:" };
	unsigned long long kib;

	if (strncmp(line, "Rss:", 4) == 0) {
		if (sscanf(line + 4, "%llu", &kib) == 1)
			m->rss_kib = (size_t)kib;
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(dirty); i++) {
		size_t n = strlen(dirty[i]);

		if (strncmp(line, dirty[i], n) == 0 &&
		    (sscanf(line + n, "%llu", &kib) != 1 || kib != 0))
			m->dirty = true;
	}
}

static int read_vmas(int self_fd, struct vmas *s)
{
	_cleanup_close_ int fd = openat(self_fd, "smaps", O_RDONLY | O_CLOEXEC);
	_cleanup_fclose_ FILE *f = NULL;
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;
	struct vma cur;
	int r;

	if (fd < 0)
		return -errno;
	f = fdopen(fd, "re");
	if (!f)
		return -errno;
	fd = -1; /* f owns it */
	while (getline(&line, &cap, f) > 0) {
		if (parse_header(line, &cur)) {
			r = vma_push(s);
			if (r < 0)
				return r;
			s->v[s->n - 1] = (struct vma){ .start = cur.start, .end = cur.end,
						       .candidate = cur.candidate };
		} else if (s->n > 0) {
			parse_field(line, &s->v[s->n - 1]);
		}
	}
	return ferror(f) ? -EIO : 0;
}

int vw_residency_drop_startup(int self_fd, size_t *ret_kib, size_t *ret_n)
{
	struct vmas s = { 0 };
	size_t kib = 0, n = 0;
	int r;

	if (self_fd < 0)
		return -EBADF;
	r = read_vmas(self_fd, &s);
	for (size_t i = 0; r == 0 && i < s.n; i++) {
		const struct vma *m = &s.v[i];

		if (!m->candidate || m->dirty || m->rss_kib == 0)
			continue;
		/* Nothing here is ours to lose: the next touch reads the page cache again. */
		if (madvise((void *)m->start, m->end - m->start, MADV_DONTNEED) < 0)
			continue; /* changed under us (unmapped, locked): left as it is */
		kib += m->rss_kib;
		n++;
	}
	free(s.v);
	if (ret_kib)
		*ret_kib = kib;
	if (ret_n)
		*ret_n = n;
	return r;
}

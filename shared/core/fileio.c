/* SPDX-License-Identifier: Apache-2.0 */
#include "fileio.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>

int vw_root_open(const char *path)
{
	int fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

int vw_dir_create_open(const char *path)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1;; p++) {
		bool end = *p == '\0';

		if (*p != '/' && !end)
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -errno;
		if (end)
			break;
		*p = '/';
	}
	return vw_root_open(path);
}

int vw_dir_open_at(int dirfd, const char *rel)
{
	int fd = openat(dirfd, rel, O_PATH | O_DIRECTORY | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

DIR *vw_opendir_at(int dirfd, const char *rel)
{
	int fd = openat(dirfd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d;

	if (fd < 0)
		return NULL;
	d = fdopendir(fd);
	if (!d) {
		int e = errno;

		close(fd);
		errno = e;
	}
	return d;
}

void vw_closedirp(DIR **d)
{
	if (*d)
		closedir(*d);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

int vw_dir_numbers(int dirfd, const char *rel, int (*parse)(const char *name, uint32_t *ret),
		   uint32_t **ret, size_t *ret_n)
{
	_cleanup_(vw_closedirp) DIR *d = vw_opendir_at(dirfd, rel);
	_cleanup_free_ uint32_t *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		uint32_t x;

		if (parse(de->d_name, &x) < 0)
			continue;
		if (vw_array_grow((void **)&v, sizeof(*v), n, &cap) < 0)
			return -ENOMEM;
		v[n++] = x;
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_u32);
	*ret = VW_TAKE_PTR(v);
	*ret_n = n;
	return 0;
}

int vw_open_in_root(int dirfd, const char *rel, int flags)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	long fd = syscall(SYS_openat2, dirfd, rel, &how, sizeof(how));

	if (fd < 0 && errno == ENOSYS)
		fd = openat(dirfd, rel, flags | O_CLOEXEC);
	return fd < 0 ? -errno : (int)fd;
}

int vw_read_alloc_in_root(int dirfd, const char *rel, size_t max, char **ret, size_t *ret_len,
			  struct stat *ret_st)
{
	_cleanup_close_ int fd = vw_open_in_root(dirfd, rel, O_RDONLY | O_NOCTTY | O_NONBLOCK);
	_cleanup_free_ char *buf = NULL;
	struct stat st;
	size_t len;
	int r;

	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	if (st.st_size < 0 || (uint64_t)st.st_size > max)
		return -EFBIG;
	buf = malloc((size_t)st.st_size + 2);
	if (!buf)
		return -ENOMEM;
	r = vw_read_fd(fd, buf, (size_t)st.st_size + 1, &len);
	if (r < 0)
		return r;
	if (len > (size_t)st.st_size)
		return -EAGAIN; /* it grew while being read: a writer not using rename */
	buf[len] = '\0';
	if (ret_st)
		*ret_st = st;
	*ret_len = len;
	*ret = VW_TAKE_PTR(buf);
	return 0;
}

int vw_read_fd(int fd, void *buf, size_t max, size_t *ret_len)
{
	size_t len = 0;

	while (len < max) {
		ssize_t n = read(fd, (char *)buf + len, max - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	*ret_len = len;
	return 0;
}

/* What open_and_read() accepts: anything (sysfs, procfs), a regular file (a link to one
 * followed), or a regular file that is no link (-ELOOP); the last two opened O_NONBLOCK, so a
 * FIFO is -EINVAL and never waits for a writer. */
enum read_kind { READ_ANY, READ_REGULAR, READ_PLAIN };

/* Open rel for reading as kind accepts it: the fd, or -errno (the fd closed). */
static int open_kind(int dirfd, const char *rel, enum read_kind kind)
{
	int flags = O_RDONLY | O_CLOEXEC | O_NOCTTY;
	_cleanup_close_ int fd = -1;
	struct stat st;

	if (kind != READ_ANY)
		flags |= O_NONBLOCK | (kind == READ_PLAIN ? O_NOFOLLOW : 0);
	fd = openat(dirfd, rel, flags);
	if (fd < 0 || (kind != READ_ANY && fstat(fd, &st) < 0))
		return -errno;
	if (kind != READ_ANY && !S_ISREG(st.st_mode))
		return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	return VW_TAKE_FD(fd);
}

/* Open rel and read up to size - 1 bytes, NUL-terminated; the fd stays open in *ret_fd. */
static int open_and_read(int dirfd, const char *rel, char *buf, size_t size, size_t *ret_len,
			 int *ret_fd, enum read_kind kind)
{
	int r;

	if (size == 0)
		return -EINVAL;
	*ret_fd = open_kind(dirfd, rel, kind);
	if (*ret_fd < 0)
		return *ret_fd;
	r = vw_read_fd(*ret_fd, buf, size - 1, ret_len);
	if (r == 0)
		buf[*ret_len] = '\0';
	return r;
}

/* The rest of fd into a malloc'd NUL-terminated *ret: at most max bytes, else -EFBIG. */
static int read_whole_fd(int fd, size_t max, char **ret, size_t *ret_len)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, cap = 0, n;
	int r;

	for (;;) {
		size_t want;

		if (len + 1 >= cap) {
			size_t ncap = VW_MAX(cap * 2, (size_t)VW_READ_WHOLE_FIRST);
			char *nb, probe;

			if (cap > max) { /* max bytes in hand: refuse one more */
				r = vw_read_fd(fd, &probe, 1, &n);
				if (r < 0)
					return r;
				if (n)
					return -EFBIG;
				break;
			}
			ncap = VW_MIN(ncap, max + 1);
			nb = realloc(buf, ncap);
			if (!nb)
				return -ENOMEM;
			buf = nb;
			cap = ncap;
		}
		want = cap - 1 - len;
		r = vw_read_fd(fd, buf + len, want, &n);
		if (r < 0)
			return r;
		len += n;
		if (n < want)
			break; /* the end of the file */
	}
	buf[len] = '\0';
	if (ret_len)
		*ret_len = len;
	*ret = VW_TAKE_PTR(buf);
	return 0;
}

static int read_whole_at(int dirfd, const char *rel, size_t max, char **ret, size_t *ret_len,
			 enum read_kind kind)
{
	_cleanup_close_ int fd = open_kind(dirfd, rel, kind);

	return fd < 0 ? fd : read_whole_fd(fd, max, ret, ret_len);
}

int vw_read_whole_at(int dirfd, const char *rel, size_t max, char **ret, size_t *ret_len)
{
	return read_whole_at(dirfd, rel, max, ret, ret_len, READ_ANY);
}

int vw_read_regular_at(int dirfd, const char *rel, size_t max, char **ret, size_t *ret_len)
{
	return read_whole_at(dirfd, rel, max, ret, ret_len, READ_REGULAR);
}

int vw_read_prefix_at(int dirfd, const char *rel, char *buf, size_t size, size_t *ret_len)
{
	_cleanup_close_ int fd = -1;
	size_t len = 0;
	int r = open_and_read(dirfd, rel, buf, size, &len, &fd, READ_ANY);

	if (r == 0 && ret_len)
		*ret_len = len;
	return r;
}

static int read_file_at(int dirfd, const char *rel, char *buf, size_t size, size_t *ret_len,
			enum read_kind kind)
{
	_cleanup_close_ int fd = -1;
	size_t len = 0, more = 0;
	char extra;
	int r = open_and_read(dirfd, rel, buf, size, &len, &fd, kind);

	if (r < 0)
		return r;
	if (len == size - 1) {
		r = vw_read_fd(fd, &extra, 1, &more);
		if (r < 0)
			return r;
		if (more)
			return -EFBIG;
	}
	if (ret_len)
		*ret_len = len;
	return 0;
}

int vw_read_file_at(int dirfd, const char *rel, char *buf, size_t size, size_t *ret_len)
{
	return read_file_at(dirfd, rel, buf, size, ret_len, READ_ANY);
}

int vw_read_file_regular_at(int dirfd, const char *rel, char *buf, size_t size, size_t *ret_len)
{
	return read_file_at(dirfd, rel, buf, size, ret_len, READ_REGULAR);
}

/* ---- kept files ---- */

void vw_kept_file_close(struct vw_kept_file *kf)
{
	if (kf->fd >= 0)
		close(kf->fd);
	free(kf->buf);
	*kf = (struct vw_kept_file)VW_KEPT_FILE_INIT;
}

static bool on_kernel_fs(int fd)
{
	struct statfs fs;

	if (fstatfs(fd, &fs) < 0)
		return false;
	switch ((unsigned long)fs.f_type) {
	case PROC_SUPER_MAGIC:
	case SYSFS_MAGIC:
	case CGROUP_SUPER_MAGIC:
	case CGROUP2_SUPER_MAGIC:
		return true;
	default:
		return false;
	}
}

/* pread at off, EINTR retried: the count or -errno. */
static ssize_t pread_at(int fd, char *buf, size_t n, size_t off)
{
	ssize_t got;

	do
		got = pread(fd, buf, n, (off_t)off);
	while (got < 0 && errno == EINTR);
	return got < 0 ? -errno : got;
}

/* kf->buf to hold at least want bytes. */
static int grow(struct vw_kept_file *kf, size_t want)
{
	char *nb;

	if (want <= kf->cap)
		return 0;
	nb = realloc(kf->buf, want);
	if (!nb)
		return -ENOMEM;
	kf->buf = nb;
	kf->cap = want;
	return 0;
}

/*
 * The file from offset 0 until a short read, NUL-terminated: into buf[0 .. size), or where
 * buf is NULL into kf->buf, grown up to max + 1 bytes (kept: the next read starts at the size
 * the file had, one pread where it still fits).
 */
static int read_from_zero(struct vw_kept_file *kf, int fd, char *buf, size_t size, size_t max,
			  size_t *ret_len)
{
	size_t limit = buf ? size : max < SIZE_MAX ? max + 1 : max;
	size_t cap = buf ? size : VW_MIN(kf->cap, limit), len = 0;

	for (;;) {
		ssize_t got;
		char *b;
		int r;

		if (len == cap) { /* full: more than fits (or no buffer yet) */
			if (cap >= limit)
				return -EFBIG;
			cap = VW_MIN(VW_MAX(cap * 2, (size_t)VW_READ_WHOLE_FIRST), limit);
			r = grow(kf, cap);
			if (r < 0)
				return r;
			continue;
		}
		b = buf ? buf : kf->buf;
		got = pread_at(fd, b + len, cap - len, len);
		if (got < 0)
			return (int)got;
		len += (size_t)got;
		if (len < cap) { /* short: the end */
			b[len] = '\0';
			*ret_len = len;
			return 0;
		}
	}
}

/* buf NULL: the whole-file form. */
static int kept_read(struct vw_kept_file *kf, int dirfd, const char *rel, char *buf, size_t size,
		     size_t max, size_t *ret_len)
{
	int fd, r;

	if (buf && size == 0)
		return -EINVAL;
	if (kf->fd >= 0) {
		r = read_from_zero(kf, kf->fd, buf, size, max, ret_len);
		if (r == 0 || r == -EFBIG || r == -ENOMEM)
			return r;
		close(kf->fd); /* failed (a removed cgroup's ENODEV): the path opened anew */
		kf->fd = -1;
	}
	fd = openat(dirfd, rel, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	r = read_from_zero(kf, fd, buf, size, max, ret_len);
	if (r == 0 && on_kernel_fs(fd))
		kf->fd = fd;
	else
		close(fd);
	return r;
}

int vw_kept_file_read(struct vw_kept_file *kf, int dirfd, const char *rel, char *buf,
		      size_t size, size_t *ret_len)
{
	size_t len = 0;
	int r;

	if (!buf)
		return -EINVAL;
	r = kept_read(kf, dirfd, rel, buf, size, 0, &len);
	if (r == 0 && ret_len)
		*ret_len = len;
	return r;
}

int vw_kept_file_read_whole(struct vw_kept_file *kf, int dirfd, const char *rel, size_t max,
			    const char **ret, size_t *ret_len)
{
	size_t len = 0;
	int r = kept_read(kf, dirfd, rel, NULL, 0, max, &len);

	if (r < 0)
		return r;
	*ret = kf->buf;
	if (ret_len)
		*ret_len = len;
	return 0;
}

static int read_str_at(int dirfd, const char *rel, char *buf, size_t size, enum read_kind kind)
{
	size_t len;
	int r = read_file_at(dirfd, rel, buf, size, &len, kind);

	if (r < 0)
		return r;
	if (memchr(buf, '\0', len))
		return -EINVAL;
	while (len > 0 && isspace((unsigned char)buf[len - 1]))
		buf[--len] = '\0';
	return len == 0 ? -ENODATA : 0;
}

int vw_read_str_at(int dirfd, const char *rel, char *buf, size_t size)
{
	return read_str_at(dirfd, rel, buf, size, READ_ANY);
}

int vw_read_str_regular_at(int dirfd, const char *rel, char *buf, size_t size)
{
	return read_str_at(dirfd, rel, buf, size, READ_REGULAR);
}

int vw_parse_u64(const char *s, uint64_t *ret)
{
	uint64_t v = 0;
	bool any = false;

	while (isspace((unsigned char)*s))
		s++;
	if (*s == '\0')
		return -ENODATA;
	for (; *s >= '0' && *s <= '9'; s++) {
		unsigned d = (unsigned)(*s - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
		any = true;
	}
	while (isspace((unsigned char)*s))
		s++;
	if (!any || *s != '\0')
		return -EINVAL;
	*ret = v;
	return 0;
}

static int read_u64_at(int dirfd, const char *rel, uint64_t *ret, enum read_kind kind)
{
	char buf[64];
	size_t len;
	int r = read_file_at(dirfd, rel, buf, sizeof(buf), &len, kind);

	if (r < 0)
		return r == -EFBIG ? -EINVAL : r;
	if (memchr(buf, '\0', len))
		return -EINVAL;
	return vw_parse_u64(buf, ret);
}

int vw_read_u64_at(int dirfd, const char *rel, uint64_t *ret)
{
	return read_u64_at(dirfd, rel, ret, READ_ANY);
}

int vw_read_u64_plain_at(int dirfd, const char *rel, uint64_t *ret)
{
	return read_u64_at(dirfd, rel, ret, READ_PLAIN);
}

static int write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int vw_write_file_replace_at(int dirfd, const char *rel, const void *data, size_t len, int mode,
			     bool sync)
{
	return vw_write_file_replace_pid_at(dirfd, rel, data, len, mode, sync, (long)getpid());
}

int vw_write_file_replace_pid_at(int dirfd, const char *rel, const void *data, size_t len,
				 int mode, bool sync, long pid)
{
	char tmp[4096];
	int fd, r;

	r = snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", rel, pid);
	if (r < 0 || (size_t)r >= sizeof(tmp))
		return -ENAMETOOLONG;
	/* A temp left over (or a symlink in its place) is removed only when O_EXCL refuses it. */
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0 && errno == EEXIST) {
		(void)unlinkat(dirfd, tmp, 0);
		fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	}
	if (fd < 0)
		return -errno;
	r = write_all(fd, data, len);
	if (r == 0 && sync && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && renameat(dirfd, tmp, dirfd, rel) < 0)
		r = -errno;
	if (r < 0)
		(void)unlinkat(dirfd, tmp, 0);
	return r;
}

int vw_write_file_atomic_at(int dirfd, const char *rel, const void *data, size_t len, int mode)
{
	return vw_write_file_replace_at(dirfd, rel, data, len, mode, true);
}

int vw_write_file_durable_at(int dirfd, const char *rel, const void *data, size_t len, int mode)
{
	_cleanup_close_ int dfd = -1;
	const char *slash = strrchr(rel, '/');
	char dir[4096];
	int r = vw_write_file_atomic_at(dirfd, rel, data, len, mode);

	if (r < 0)
		return r;
	if (slash && (size_t)(slash - rel) >= sizeof(dir))
		return -ENAMETOOLONG;
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - rel) : 1, slash ? rel : ".");
	dfd = openat(dirfd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fsync(dfd) < 0)
		return -errno;
	return 0;
}

int vw_parse_pid(const char *s, uint32_t *ret)
{
	uint64_t v;

	if (s[0] < '1' || s[0] > '9' || vw_parse_u64(s, &v) < 0 || v > INT32_MAX)
		return -EINVAL;
	*ret = (uint32_t)v;
	return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Small-file readers relative to an injected root directory; never absolute paths. */
#pragma once

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "macro.h"

/* Open a directory to serve as a root (O_PATH|O_DIRECTORY|O_CLOEXEC). fd or -errno. */
int vw_root_open(const char *path);
/*
 * Create the directory path and each missing parent (mode 0755; existing ones are left as they
 * are), then open it as vw_root_open() does. fd or -errno (-EINVAL for "" or a path longer than
 * PATH_MAX).
 */
int vw_dir_create_open(const char *path);
/* Open a directory below a root. fd or -errno. */
int vw_dir_open_at(int dirfd, const char *rel);
/* Open a directory below dirfd for readdir(): NULL with errno set. Close with closedir(), or
 * declare it _cleanup_(vw_closedirp). */
DIR *vw_opendir_at(int dirfd, const char *rel);
void vw_closedirp(DIR **d);
/*
 * The numbers of the entries of dirfd/rel that parse() accepts (a PID, the N of hwmonN), in
 * ascending order, malloc'd into *ret. -errno when the directory cannot be read.
 */
int vw_dir_numbers(int dirfd, const char *rel, int (*parse)(const char *name, uint32_t *ret),
		   uint32_t **ret, size_t *ret_n);

/*
 * Open rel below dirfd with every symlink (absolute ones too) and ".." resolved inside dirfd as
 * if it were / (openat2 RESOLVE_IN_ROOT, no magic links; plain openat before Linux 5.6), so an
 * injected root such as /host cannot be escaped by /host/var/lib/docker -> /data/docker.
 * O_CLOEXEC is added. fd or -errno.
 */
int vw_open_in_root(int dirfd, const char *rel, int flags);
/*
 * A regular file below dirfd (vw_open_in_root) read whole into a malloc'd NUL-terminated *ret:
 * -EFBIG over max bytes (judged by its size, before reading), -EAGAIN if it grew while being
 * read, -EINVAL when it is not a regular file (a FIFO does not block: O_NONBLOCK), -EISDIR.
 * For files on disk (st_size is their length: not procfs or sysfs). *ret_st (optional) gets
 * its fstat.
 */
int vw_read_alloc_in_root(int dirfd, const char *rel, size_t max, char **ret, size_t *ret_len,
			  struct stat *ret_st);

/*
 * Read a whole small file into buf (NUL-terminated). -EFBIG if it does not fit,
 * -errno on open/read failure. *ret_len (optional) gets the byte count.
 */
int vw_read_file_at(int dirfd, const char *rel, char *buf, size_t size, size_t *ret_len);
/* The same from a file an operator names (a password): a regular file only (a link to one
 * followed: a mounted Kubernetes Secret), opened O_NONBLOCK: a FIFO is -EINVAL, never waited on. */
int vw_read_file_regular_at(int dirfd, const char *rel, char *buf, size_t size, size_t *ret_len);
/*
 * Read from fd until end of file or `max` bytes, whichever comes first (EINTR retried; no NUL
 * added). *ret_len gets the count; a file longer than max shows as *ret_len == max.
 */
int vw_read_fd(int fd, void *buf, size_t max, size_t *ret_len);
/*
 * A whole file of unknown length (procfs, sysfs) into a malloc'd NUL-terminated *ret, the
 * buffer grown from VW_READ_WHOLE_FIRST bytes as the file needs; -EFBIG for a file of more
 * than max bytes. *ret_len (optional) gets the byte count.
 */
#define VW_READ_WHOLE_FIRST 4096u
int vw_read_whole_at(int dirfd, const char *rel, size_t max, char **ret, size_t *ret_len);
/*
 * As vw_read_whole_at(), for a file an operator names (a configuration, a certificate): only a
 * regular file (a link to one is followed), -EINVAL for a FIFO, a device or a socket, -EISDIR
 * for a directory; opened O_NONBLOCK, so a FIFO in its place never blocks the caller.
 */
int vw_read_regular_at(int dirfd, const char *rel, size_t max, char **ret, size_t *ret_len);
/* Up to size - 1 bytes of a file, NUL-terminated: a prefix, never -EFBIG. */
int vw_read_prefix_at(int dirfd, const char *rel, char *buf, size_t size, size_t *ret_len);

/*
 * A small kernel file read again and again (each interval): /proc/stat, a cgroup's
 * cpuacct.usage or cpu.stat. Where the file is on procfs, sysfs or a cgroup filesystem
 * (fstatfs at its opening) its descriptor stays open and each read is a pread from offset 0,
 * which has the kernel write it anew: one system call instead of openat, two reads and close.
 * Anywhere else (a test's fixture on tmpfs or ext4, replaced by rename) it is opened, read
 * and closed each time, so a replaced file is never read stale. A failed read on the kept
 * descriptor closes it and opens the path once more (a removed cgroup's file reads ENODEV;
 * one re-created under the same path is read as a fresh open would). Pass the same dirfd and
 * rel each time.
 *
 * A read shorter than asked is taken as the file's end: true of regular files and of the
 * kernel files written in one piece (single_open seq files such as /proc/stat, sysfs and
 * cgroup attributes), not of multi-record seq files (/proc/PID/maps): not for those.
 */
struct vw_kept_file {
	int fd;                /* the kept descriptor, -1: none (closed, or not a kernel file) */
	char *buf;             /* vw_kept_file_read_whole()'s text, grown as the file needs */
	size_t cap;
};
#define VW_KEPT_FILE_INIT { .fd = -1 }
/* Close its descriptor and free its text; it is as VW_KEPT_FILE_INIT left it (reusable). */
void vw_kept_file_close(struct vw_kept_file *kf);
/* As vw_read_file_at(): the file into buf, NUL-terminated; -EFBIG when size - 1 bytes do not
 * hold it; -errno (-ENOENT, -ENODEV, ...) when it cannot be opened or read. */
int vw_kept_file_read(struct vw_kept_file *kf, int dirfd, const char *rel, char *buf,
		      size_t size, size_t *ret_len);
/* The whole file into kf's own buffer (kept for the next read): *ret points to its
 * NUL-terminated text until the next read or close. -EFBIG over max bytes. */
int vw_kept_file_read_whole(struct vw_kept_file *kf, int dirfd, const char *rel, size_t max,
			    const char **ret, size_t *ret_len);

/* Read one line, trailing whitespace stripped. -ENODATA when empty. */
int vw_read_str_at(int dirfd, const char *rel, char *buf, size_t size);
/* The same from a file an operator names (a token, a password): a regular file only (a link to
 * one followed), opened O_NONBLOCK: a FIFO is -EINVAL, never waited on. */
int vw_read_str_regular_at(int dirfd, const char *rel, char *buf, size_t size);
/*
 * Read an unsigned decimal (surrounding whitespace allowed). -ENODATA empty, -EINVAL junk or a
 * sign, -ERANGE overflow.
 */
int vw_read_u64_at(int dirfd, const char *rel, uint64_t *ret);
/*
 * As vw_read_u64_at(), from a file someone else may have planted (a folder a guest could write):
 * only a regular file that is not a symlink (-ELOOP), opened O_NONBLOCK so that a FIFO never
 * blocks (-EINVAL, as any other non-regular file).
 */
int vw_read_u64_plain_at(int dirfd, const char *rel, uint64_t *ret);
/* Parse the same strict unsigned decimal from a string. */
int vw_parse_u64(const char *s, uint64_t *ret);
/* A PID or TID as /proc names it: decimal, no sign, no leading zero, at most 2^31 - 1. */
int vw_parse_pid(const char *s, uint32_t *ret);

/*
 * Write data to dirfd/rel atomically: a temporary file in the same directory, fsync,
 * renameat. Never follows a symlink at rel.
 */
int vw_write_file_atomic_at(int dirfd, const char *rel, const void *data, size_t len, int mode);
/* vw_write_file_atomic_at() without the fsync where sync is false (a tmpfs, where it does
 * nothing): a reader still sees the old or the new file whole. */
int vw_write_file_replace_at(int dirfd, const char *rel, const void *data, size_t len, int mode,
			     bool sync);
/* The same with the caller's PID for the temp's name, NAME.tmp.PID (one getpid() fewer a file:
 * a caller that writes many files a round asks once). */
int vw_write_file_replace_pid_at(int dirfd, const char *rel, const void *data, size_t len,
				 int mode, bool sync, long pid);
/*
 * The same, durable: the directory is fsync'ed after the rename, so the new name survives a
 * power loss (for state a restart depends on; dirfd may be an O_PATH descriptor).
 */
int vw_write_file_durable_at(int dirfd, const char *rel, const void *data, size_t len, int mode);

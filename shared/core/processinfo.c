/* SPDX-License-Identifier: Apache-2.0 */
#include "processinfo.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "fileio.h"
#include "log.h"
#include "macro.h"
#include "procfs.h"

#if defined(__SANITIZE_ADDRESS__)
#define VW_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define VW_ASAN 1
#endif
#endif
#ifdef VW_ASAN
/* sanitizer/allocator_interface.h (clang's; GCC's libasan has the function, not the header) */
size_t __sanitizer_get_current_allocated_bytes(void);
#else
#define VW_ASAN 0
#include <malloc.h>
#endif

/* "VmRSS:\t  1234 kB" in /proc/PID/status, in bytes (by hand: sscanf took ~1,200
 * instructions, three times an interval). */
static int status_kb(const char *text, const char *key, uint64_t *ret)
{
	uint64_t kb;
	int r = vw_procfs_field_u64(text, key, &kb, NULL);

	if (r < 0)
		return -ENODATA;
	if (kb > UINT64_MAX / 1024)
		return -ENODATA; /* its bytes would not fit */
	*ret = kb * 1024;
	return 0;
}

/* A getdents64 record (linux_dirent64; glibc declares it only from 2.30 on). */
struct dirent64_rec {
	uint64_t ino;
	int64_t off;
	unsigned short reclen;
	unsigned char type;
	char name[];
};

/*
 * The open descriptors. Since Linux 6.2 procfs gives their count as the size of PID/fd (a
 * bitmap's weight, computed at each stat): one fstat of the open directory, whatever the count.
 * Listing it instead costs a dentry per descriptor each scrape, and a hypervisor's daemon holds
 * ~5 per VM (socket, folder, zone, lock, pidfd): with 100 VMs the listing was a tenth of the
 * kernel time the VMs added. Older kernels (size 0) and a directory that is not procfs (a
 * test's fixture) are counted from getdents64, rewound each time.
 */
static int count_fds(struct vw_processinfo_reader *r, uint64_t *ret)
{
	struct statfs fs;
	struct stat st;
	uint64_t n = 0;
	_Alignas(8) char buf[4096];
	long got;

	if (r->fds_fd < 0) {
		r->fds_fd = openat(r->self_fd, "fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (r->fds_fd < 0)
			return -errno;
	}
	if (r->fds_by_size < 0) /* once: a procfs does not turn into something else */
		r->fds_by_size = fstatfs(r->self_fd, &fs) == 0 && fs.f_type == PROC_SUPER_MAGIC;
	if (r->fds_by_size && fstat(r->fds_fd, &st) == 0 && st.st_size > 0) {
		*ret = (uint64_t)st.st_size;
		return 0;
	}
	if (lseek(r->fds_fd, 0, SEEK_SET) < 0)
		return -errno;
	while ((got = syscall(SYS_getdents64, r->fds_fd, buf, sizeof(buf))) > 0)
		for (long off = 0; off < got;) {
			const struct dirent64_rec *de = (const void *)(buf + off);

			n += de->name[0] != '.';
			off += de->reclen;
		}
	if (got < 0)
		return -errno;
	*ret = n; /* fd/'s own descriptor among them (read_all()) */
	return 0;
}

int vw_processinfo_open(int procfs_fd, double *ret_start_time_s)
{
	struct timespec ts;
	int fd = vw_dir_open_at(procfs_fd, "self");

	clock_gettime(CLOCK_REALTIME, &ts);
	*ret_start_time_s = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	return fd < 0 ? -1 : fd;
}

/*
 * The heap in use: what RSS cannot tell from an allocator's slack (freed memory kept for
 * reuse), so a leak shows here first. ASan's allocator replaces malloc (mallinfo2 would say 0).
 */
static uint64_t heap_inuse(void)
{
#if VW_ASAN
	return (uint64_t)__sanitizer_get_current_allocated_bytes();
#else
	struct mallinfo2 mi = mallinfo2(); /* every arena's; mmap'd chunks apart */

	return (uint64_t)mi.uordblks + (uint64_t)mi.hblkhd;
#endif
}

/* self/status through its open descriptor: a pread from 0 has procfs write it anew. */
static int read_status(struct vw_processinfo_reader *r, char *text, size_t size, size_t *ret_len)
{
	size_t len = 0;
	ssize_t got;

	if (r->status_fd < 0) {
		r->status_fd = openat(r->self_fd, "status", O_RDONLY | O_NOCTTY | O_CLOEXEC);
		if (r->status_fd < 0)
			return -errno;
	}
	while (len < size - 1) {
		size_t want = size - 1 - len;

		got = pread(r->status_fd, text + len, want, (off_t)len);
		if (got == 0)
			break;
		if (got < 0) {
			int e = -errno;

			if (e == -EINTR)
				continue;
			close(r->status_fd); /* opened again at the next read */
			r->status_fd = -1;
			return e;
		}
		len += (size_t)got;
		if ((size_t)got < want)
			break; /* short: procfs wrote it whole (no second pread for its end) */
	}
	text[len] = '\0';
	*ret_len = len;
	return 0;
}

void vw_processinfo_reader_init(struct vw_processinfo_reader *r, int self_fd,
				uint64_t heap_period_ns)
{
	*r = (struct vw_processinfo_reader){ .self_fd = self_fd, .status_fd = -1, .fds_fd = -1,
					     .fds_by_size = -1, .heap_period_ns = heap_period_ns };
}

void vw_processinfo_reader_close(struct vw_processinfo_reader *r)
{
	if (r->status_fd >= 0)
		close(r->status_fd);
	if (r->fds_fd >= 0)
		close(r->fds_fd);
	vw_processinfo_reader_init(r, r->self_fd, r->heap_period_ns);
}

/* oneshot: status closed before the count, and the count less fd/'s own descriptor (the
 * caller's descriptors, as a reader that keeps none would see them). */
static int read_all(struct vw_processinfo_reader *r, struct vw_processinfo *ret, bool oneshot)
{
	char text[4096];
	struct rlimit rl;
	size_t len = 0;
	uint64_t now;
	int e, first = 0;

	ret->rss_bytes = ret->peak_rss_bytes = ret->vm_bytes = ret->open_fds = ret->max_fds = 0;
	e = read_status(r, text, sizeof(text), &len);
	if (e == 0) {
		e = status_kb(text, "VmRSS", &ret->rss_bytes);
		if (e == 0)
			e = status_kb(text, "VmHWM", &ret->peak_rss_bytes);
		if (e == 0)
			e = status_kb(text, "VmSize", &ret->vm_bytes);
	}
	first = e;
	if (oneshot && r->status_fd >= 0) {
		close(r->status_fd);
		r->status_fd = -1;
	}
	e = count_fds(r, &ret->open_fds);
	if (e == 0 && oneshot && ret->open_fds > 0)
		ret->open_fds--;
	if (first == 0)
		first = e;
	now = r->heap_period_ns ? vw_now_ns() : 0;
	if (!r->heap_have || now - r->heap_at_ns >= r->heap_period_ns) {
		r->heap_bytes = heap_inuse();
		r->heap_at_ns = now;
		r->heap_have = true;
	}
	ret->heap_bytes = r->heap_bytes;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		ret->max_fds = rl.rlim_cur == RLIM_INFINITY ? 0 : (uint64_t)rl.rlim_cur;
	return first;
}

int vw_processinfo_reader_read(struct vw_processinfo_reader *r, struct vw_processinfo *ret)
{
	return read_all(r, ret, false);
}

int vw_processinfo_read(int self_fd, struct vw_processinfo *ret)
{
	struct vw_processinfo_reader r;
	int e;

	vw_processinfo_reader_init(&r, self_fd, 0);
	e = read_all(&r, ret, true);
	vw_processinfo_reader_close(&r);
	return e;
}

enum { S_RSS, S_PEAK, S_VM, S_HEAP, S_FDS, S_MAX_FDS, S_START, S__COUNT };

static const struct vw_metric_family families[S__COUNT] = {
	[S_RSS] = { "process_resident_memory_bytes", VW_METRIC_GAUGE,
		    "Resident memory size in bytes (VmRSS), at the last interval", "bytes", NULL },
	[S_PEAK] = { "virtwatt_process_peak_resident_memory_bytes", VW_METRIC_GAUGE,
		     "Peak resident memory size in bytes since start (VmHWM)", "bytes", NULL },
	[S_VM] = { "process_virtual_memory_bytes", VW_METRIC_GAUGE,
		   "Virtual memory size in bytes (VmSize)", "bytes", NULL },
	[S_HEAP] = { "virtwatt_process_heap_inuse_bytes", VW_METRIC_GAUGE,
		     "Bytes of heap the daemon holds (malloc'd, not yet freed), taken at most every 5 s",
		     "bytes", NULL },
	[S_FDS] = { "process_open_fds", VW_METRIC_GAUGE, "Number of open file descriptors", NULL, NULL },
	[S_MAX_FDS] = { "process_max_fds", VW_METRIC_GAUGE,
			"Maximum number of open file descriptors (RLIMIT_NOFILE; 0: unlimited)",
			NULL, NULL },
	[S_START] = { "process_start_time_seconds", VW_METRIC_GAUGE,
		      "Start time of the process since the Unix epoch, in seconds", "seconds",
		      NULL },
};

const struct vw_family_table vw_processinfo_family_table = {
	"shared/core/processinfo.c: vw_processinfo_write()", "virtwatt-host, virtwatt-guest",
	"the exporter's own process (the names client libraries use)", families, S__COUNT,
};

int vw_processinfo_write(struct vw_prom_writer *w, const struct vw_processinfo *s)
{
	const double v[S__COUNT] = {
		[S_RSS] = (double)s->rss_bytes,     [S_PEAK] = (double)s->peak_rss_bytes,
		[S_VM] = (double)s->vm_bytes,       [S_HEAP] = (double)s->heap_bytes,
		[S_FDS] = (double)s->open_fds,
		[S_MAX_FDS] = (double)s->max_fds,   [S_START] = s->start_time_s,
	};
	int r = 0;

	(void)vw_prom_table_trust(&vw_processinfo_family_table); /* checked once, not each render */
	for (size_t i = 0; r == 0 && i < S__COUNT; i++)
		r = vw_prom_single(w, &families[i], NULL, v[i]);
	return r;
}

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
#include "macro.h"

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

/* "VmRSS:\t  1234 kB" in /proc/PID/status (by hand: sscanf took ~1,200 instructions, three
 * times an interval). */
static int status_kb(const char *text, const char *key, uint64_t *ret)
{
	const char *p = strstr(text, key);
	uint64_t kb = 0;

	if (!p)
		return -ENODATA;
	p += strlen(key);
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p < '0' || *p > '9')
		return -ENODATA;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (kb > (UINT64_MAX / 1024 - (uint64_t)(*p - '0')) / 10)
			return -ENODATA; /* its bytes would not fit */
		kb = kb * 10 + (uint64_t)(*p - '0');
	}
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
 * bitmap's weight): two calls, whatever the count. Listing it instead costs a dentry per
 * descriptor each scrape, and a hypervisor's daemon holds ~5 per VM (socket, folder, zone,
 * lock, pidfd): with 100 VMs the listing was a tenth of the kernel time the VMs added. Older
 * kernels (size 0) and a directory that is not procfs (a test's fixture) are counted from
 * getdents64 (opendir() and closedir() added a stat and two fcntl calls a render).
 */
static int count_fds(int self_fd, uint64_t *ret)
{
	struct statfs fs;
	struct stat st;
	int fd;
	uint64_t n = 0;
	_Alignas(8) char buf[4096];
	long got;

	if (fstatfs(self_fd, &fs) == 0 && fs.f_type == PROC_SUPER_MAGIC &&
	    fstatat(self_fd, "fd", &st, 0) == 0 && S_ISDIR(st.st_mode) && st.st_size > 0) {
		*ret = (uint64_t)st.st_size;
		return 0;
	}
	fd = openat(self_fd, "fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while ((got = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0)
		for (long off = 0; off < got;) {
			const struct dirent64_rec *de = (const void *)(buf + off);

			n += de->name[0] != '.';
			off += de->reclen;
		}
	if (got < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	close(fd);
	*ret = n > 0 ? n - 1 : 0; /* not the one counting */
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

int vw_processinfo_read(int self_fd, struct vw_processinfo *ret)
{
	char text[4096];
	struct rlimit rl;
	size_t len = 0;
	int r, first = 0;

	ret->rss_bytes = ret->peak_rss_bytes = ret->vm_bytes = ret->open_fds = ret->max_fds = 0;
	r = vw_read_file_at(self_fd, "status", text, sizeof(text), &len);
	if (r == 0) {
		text[len < sizeof(text) ? len : sizeof(text) - 1] = '\0';
		r = status_kb(text, "VmRSS:", &ret->rss_bytes);
		if (r == 0)
			r = status_kb(text, "VmHWM:", &ret->peak_rss_bytes);
		if (r == 0)
			r = status_kb(text, "VmSize:", &ret->vm_bytes);
	}
	first = r;
	r = count_fds(self_fd, &ret->open_fds);
	if (first == 0)
		first = r;
	ret->heap_bytes = heap_inuse();
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		ret->max_fds = rl.rlim_cur == RLIM_INFINITY ? 0 : (uint64_t)rl.rlim_cur;
	return first;
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
		     "Bytes of heap the daemon holds (malloc'd, not yet freed), at the last interval",
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

	for (size_t i = 0; r == 0 && i < S__COUNT; i++)
		r = vw_prom_single(w, &families[i], NULL, v[i]);
	return r;
}

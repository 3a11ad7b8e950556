/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The daemon's own resource use, as every Prometheus exporter reports it (the client
 * libraries' process collector): process_resident_memory_bytes, process_virtual_memory_bytes,
 * process_open_fds, process_max_fds and process_start_time_seconds, plus
 * virtwatt_process_peak_resident_memory_bytes (VmHWM) and virtwatt_process_heap_inuse_bytes
 * (the allocator's live bytes, which RSS hides under its slack). Read once per interval with the
 * snapshot (the heap at most every 5 s), so a scrape costs nothing; all gauges, so the guest's restart-proof counter
 * offsets never touch them.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "prom.h"

struct vw_processinfo {
	uint64_t rss_bytes, peak_rss_bytes, vm_bytes;
	uint64_t heap_bytes; /* malloc'd and not freed (the allocator's own count) */
	uint64_t open_fds, max_fds;
	double start_time_s; /* Unix time */
};

/*
 * This process's directory below a procfs root (<procfs>/self, which the kernel resolves in the
 * procfs mount's own PID namespace, so a containerised daemon reading the host's /proc still
 * finds itself), and the start time. -1 when there is none (a fixture procfs): no process_*.
 */
int vw_processinfo_open(int procfs_fd, double *ret_start_time_s);
/*
 * self_fd: a directory fd of this process's /proc/<pid> (main() opens "/proc/self"; tests a
 * fixture). Fields that cannot be read stay 0 and the first error is returned; start_time_s is
 * the caller's (the daemon's own start, taken once).
 */
int vw_processinfo_read(int self_fd, struct vw_processinfo *ret);

/*
 * The same figures, read each interval by a daemon: status and fd/ stay open (a pread of status
 * and an fstat of fd/ instead of two path walks, an open, a close and an fstatfs an interval),
 * and the heap's figure is taken at most every heap_period_ns (CLOCK_MONOTONIC): glibc's
 * mallinfo2 walks every free chunk of the arena, cache misses included (2.7 % of the daemon's
 * time at 1,000 processes and a 1 s interval); 0 takes it at each read, as
 * vw_processinfo_read() does. The descriptors are opened at the first read (not found then:
 * tried again at the next) and counted in process_open_fds, as they are open.
 */
#define VW_PROCESSINFO_HEAP_PERIOD_NS (5ull * 1000000000ull)

struct vw_processinfo_reader {
	int self_fd;   /* the caller's (not closed here) */
	int status_fd; /* self/status, -1: not open */
	int fds_fd;    /* self/fd, -1: not open */
	int fds_by_size; /* -1: not probed; 1: procfs gives the count as fd/'s size; 0: listed */
	bool heap_have;
	uint64_t heap_period_ns, heap_at_ns, heap_bytes;
};

void vw_processinfo_reader_init(struct vw_processinfo_reader *r, int self_fd,
				uint64_t heap_period_ns);
/* As vw_processinfo_read(), through r's open files. */
int vw_processinfo_reader_read(struct vw_processinfo_reader *r, struct vw_processinfo *ret);
/* Closes what r opened (self_fd stays open); r may be read again (it reopens). */
void vw_processinfo_reader_close(struct vw_processinfo_reader *r);
/* The seven families above, without labels (as the client libraries write them). */
int vw_processinfo_write(struct vw_prom_writer *w, const struct vw_processinfo *s);
extern const struct vw_family_table vw_processinfo_family_table;

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Start-up code let go once start-up is over. A daemon's file-backed pages stay in its resident
 * set once touched: GnuTLS's initialisation (run by libmicrohttpd when it loads), option and
 * config parsing, the model's parse, the meters' probes fault in code and read-only data that
 * the steady state never runs again (measured: ~1.6 MiB of the host's 6.1 MiB of file pages).
 * Dropping this process's page-table entries for its clean, read-only file mappings
 * (MADV_DONTNEED) leaves the pages in the page cache, where other processes mapping them keep
 * them; what the steady state needs faults back in from there (a minor fault, no I/O), what it
 * never touches stays out of VmRSS and PSS, and the kernel can reclaim it under pressure.
 *
 * Only mappings that cannot hold anything of ours are touched: private, not writable, backed by
 * a file, without a single anonymous, swapped or locked page (a relocated RELRO page, a debugger's or a
 * uprobe's breakpoint is an anonymous copy: such a mapping is left whole), not locked.
 */
#pragma once
#include <stddef.h>

/*
 * Drops the clean read-only file mappings of the process whose smaps are at <self_fd>/smaps
 * (self_fd: <procfs>/self, vw_processinfo_open; the caller's own process). 0 or -errno; the KiB
 * that were resident in the dropped mappings in *ret_kib, their number in *ret_n (either may be
 * NULL).
 */
int vw_residency_drop_startup(int self_fd, size_t *ret_kib, size_t *ret_n);

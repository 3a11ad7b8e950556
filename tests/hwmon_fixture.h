/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the hwmon meters' tests share (test_acpi.c, the ACPI meter; test_hwmon_generic.c, the
 * generic sensors): fixture machines whose class/hwmon/hwmonN are symlinks into devices/ as on
 * a real one, a source opened and read over them at a time driven by hand, the log by level,
 * openat wrapped (tests/openat_fixture.h) to refuse a file with EACCES even as root and to
 * count opens for writing, and snapshots of a whole tree.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "log.h"
#include "power.h"

#define HW_MS VW_NSEC_PER_MSEC
#define HW_T0 (1000 * VW_NSEC_PER_SEC) /* the daemon's monotonic clock at the first read */

/* ---- openat: refuse a file, count opens for writing ----------------------------------- */

struct hw_io {
	const char *deny_file; /* the file name refused with EACCES ... */
	bool deny_all;         /* ... everywhere */
	ino_t deny_ino;        /* ... or only in the directory with this inode */
	unsigned writes;       /* opens for writing seen */
};
extern struct hw_io hw_io;

/* ---- log lines by level ------------------------------------------------------------------ */

struct logged {
	unsigned at[VW_LOG_DEBUG + 1]; /* lines per level */
	char text[16384];
};

/* Every line from now on into l (debug and up); log_restore() goes back to stderr at info. */
void log_to(struct logged *l);
void log_restore(void);

#define assert_logged(l, s)                                                                        \
	do {                                                                                       \
		if (!strstr((l)->text, (s)))                                                       \
			fail_msg("log lacks \"%s\"; it has:\n%s", (s), (l)->text);                 \
	} while (0)

/* ---- fixture machines -------------------------------------------------------------------- */

struct machine {
	char *root;
	int sysfs_fd;
	const struct vw_power_source_ops *src;
	const void *config; /* the source's configuration at open (env->configs); NULL: none */
	void *state;
	const struct vw_zone_info *zones;
	size_t n;
	uint64_t raw[VW_POWER_MAX_ZONES];
	int errs[VW_POWER_MAX_ZONES];
};

/* A fresh empty tree for src (hw_io cleared); machine_free() closes the source and removes it. */
void machine_new(struct machine *m, const struct vw_power_source_ops *src);
void machine_free(struct machine *m);
/* src->open over the tree (with m->config): its result; the zones on success. */
int machine_open(struct machine *m);
/* The same with the log at warn (what opening says at info is another test's). */
int machine_open_quiet(struct machine *m);
/* One read at the daemon's time now_ns. */
int machine_read(struct machine *m, uint64_t now_ns);

/* Write root/rel; NULL text removes it. */
void put(struct machine *m, const char *rel, const char *text);
void put_u64(struct machine *m, const char *rel, uint64_t v);
/* class/hwmon/hwmonN -> ../../<devdir>/hwmon/hwmonN, whose `device` links back to devdir. */
void link_hwmon(struct machine *m, const char *devdir, unsigned n);
/* The inode of root/rel (for hw_io.deny_ino). */
ino_t machine_ino(const struct machine *m, const char *rel);

/* ---- nothing written ---------------------------------------------------------------------- */

struct snapshot {
	char text[32768]; /* "path mtime size content" per regular file */
};

/* Every regular file of the tree, with its time, size and content. */
void snapshot(const struct machine *m, struct snapshot *s);
/*
 * Open, `reads` reads 250 ms apart and close leave every file of the tree as it was (the tree
 * has `must_have`, a file a meter could write), and nothing is even opened for writing. The
 * number of zones the source had.
 */
size_t assert_nothing_written(struct machine *m, unsigned reads, const char *must_have);

/* SPDX-License-Identifier: Apache-2.0 */
#include "state_file.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <libgen.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "fileio.h"
#include "log.h"
#include "macro.h"

struct vw_state_file {
	struct vw_series_state *series;
	char *path;
	char name[256]; /* in the directory */
	int dirfd;
	enum vw_state_status status;
	uint64_t interval_ns, last_attempt_ns;
	bool attempted;
	uint64_t writes, errors;
	char problem[384]; /* why state is not being kept, "" when it is; under lock */
	pthread_mutex_t lock; /* /readyz reads problem from the HTTP thread */
	struct vw_complaint complaint;
};

static const char *const status_names[] = {
	[VW_STATE_DISABLED] = "disabled",
	[VW_STATE_NEW] = "new",
	[VW_STATE_LOADED] = "loaded",
	[VW_STATE_LOADED_UNCLEAN] = "loaded_unclean",
	[VW_STATE_SET_ASIDE] = "set_aside",
	[VW_STATE_UNWRITABLE] = "unwritable",
};

const char *vw_state_status_name(enum vw_state_status s)
{
	return (unsigned)s < ARRAY_SIZE(status_names) ? status_names[s] : "unknown";
}

/* Say why state is not kept ("" when it is again), for /readyz; also logged by the caller. */
_printf_(2, 3) static void set_problem(struct vw_state_file *f, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&f->lock);
	va_start(ap, fmt);
	vsnprintf(f->problem, sizeof(f->problem), fmt, ap);
	va_end(ap);
	pthread_mutex_unlock(&f->lock);
}

/* The unloadable file goes aside, never to be overwritten: <name>.bad-<unix time>. */
static void set_aside(struct vw_state_file *f, int err)
{
	char aside[320];
	int r = -EEXIST;

	/* Never over an earlier one: .bad-<time>, else .bad-<time>.1, .2, ... */
	for (unsigned n = 0; r == -EEXIST && n < 100; n++) {
		int len = snprintf(aside, sizeof(aside), "%s.bad-%lld", f->name, (long long)time(NULL));

		if (n)
			snprintf(aside + len, sizeof(aside) - (size_t)len, ".%u", n);
		r = renameat2(f->dirfd, f->name, f->dirfd, aside, RENAME_NOREPLACE) < 0 ? -errno : 0;
	}
	if (r < 0) {
		errno = -r;
		set_problem(f,
			    "state file %s cannot be loaded (%s) nor set aside (%s): no state is "
			    "written this run; move it away and restart",
			    f->path, strerror(-err), strerror(errno));
		vw_error("state: %s", f->problem);
		f->status = VW_STATE_UNWRITABLE;
		return;
	}
	vw_error("state: %s cannot be loaded (%s): kept as %s next to it, and this run's counters "
		 "start from zero (Prometheus sees one counter reset). %s",
		 f->path, strerror(-err), aside,
		 err == -EFBIG ? "It is larger than --state.max-series allows: raise it, or remove "
				 "the kept file once inspected."
			       : "Inspect the kept file (a disk or filesystem fault?) and remove it.");
	f->status = VW_STATE_SET_ASIDE;
}

static void load(struct vw_state_file *f)
{
	bool clean = true;
	int r = vw_series_state_load(f->series, f->dirfd, f->name, &clean);

	if (r == -ENOENT) {
		f->status = VW_STATE_NEW;
		vw_info("state: no %s yet: counters start from zero", f->path);
	} else if (r < 0) {
		set_aside(f, r);
	} else if (!clean) {
		f->status = VW_STATE_LOADED_UNCLEAN;
		vw_warn("state: %zu series continue from %s, written before an unclean stop: counters "
			"may be up to --state.write-interval behind what was served (Prometheus sees "
			"that as a reset)", vw_series_state_size(f->series), f->path);
	} else {
		f->status = VW_STATE_LOADED;
		vw_info("state: %zu series continue from %s", vw_series_state_size(f->series), f->path);
	}
}

struct vw_state_file *vw_state_file_open(const char *path, struct vw_series_state *series,
					 uint64_t write_interval_ns)
{
	struct vw_state_file *f = calloc(1, sizeof(*f));
	_cleanup_free_ char *d = NULL, *b = NULL;

	if (!f)
		return NULL;
	*f = (struct vw_state_file){ .series = series, .dirfd = -1,
				     .interval_ns = write_interval_ns };
	pthread_mutex_init(&f->lock, NULL);
	if (!path || !*path) {
		f->status = VW_STATE_DISABLED;
		return f;
	}
	f->path = strdup(path);
	d = strdup(path);
	b = strdup(path);
	if (!f->path || !d || !b) {
		vw_state_file_free(f);
		return NULL;
	}
	snprintf(f->name, sizeof(f->name), "%s", basename(b));
	(void)mkdir(dirname(d), 0700); /* one level, like StateDirectory= would */
	f->dirfd = vw_root_open(d);
	if (f->dirfd < 0) {
		set_problem(f,
			    "cannot open the state directory %s: %s; counters restart with the daemon "
			    "(fix its permissions or --state.file)",
			    d, strerror(-f->dirfd));
		vw_error("state: %s", f->problem);
		f->status = VW_STATE_UNWRITABLE;
		return f;
	}
	load(f);
	return f;
}

void vw_state_file_free(struct vw_state_file *f)
{
	if (!f)
		return;
	if (f->dirfd >= 0)
		close(f->dirfd);
	pthread_mutex_destroy(&f->lock);
	free(f->path);
	free(f);
}

static bool writable(const struct vw_state_file *f)
{
	return f->status != VW_STATE_DISABLED && f->status != VW_STATE_UNWRITABLE;
}

static void save(struct vw_state_file *f, bool clean, uint64_t now_ns)
{
	int r = vw_series_state_save(f->series, f->dirfd, f->name, clean);

	f->attempted = true;
	f->last_attempt_ns = now_ns;
	if (r < 0) {
		f->errors++;
		set_problem(f, "the state file %s cannot be written: %s (free space or fix "
			       "permissions)", f->path, strerror(-r));
		vw_complain(&f->complaint, VW_LOG_ERROR, "state: %s", f->problem);
		return;
	}
	f->writes++;
	set_problem(f, "%s", "");
	vw_release(&f->complaint, VW_LOG_INFO, "state: %s written again", f->path);
}

void vw_state_file_tick(struct vw_state_file *f, uint64_t now_ns)
{
	if (!f || !writable(f) || !vw_series_state_dirty(f->series))
		return;
	if (f->attempted && now_ns - f->last_attempt_ns < f->interval_ns)
		return;
	save(f, false, now_ns);
}

void vw_state_file_flush(struct vw_state_file *f)
{
	if (!f || !writable(f))
		return;
	save(f, true, vw_now_ns());
	if (vw_state_file_ok(f, NULL, 0))
		vw_info("state: %zu series written to %s", vw_series_state_size(f->series), f->path);
}

enum vw_state_status vw_state_file_status(const struct vw_state_file *f)
{
	return f->status;
}

uint64_t vw_state_file_writes(const struct vw_state_file *f)
{
	return f->writes;
}

uint64_t vw_state_file_write_errors(const struct vw_state_file *f)
{
	return f->errors;
}

bool vw_state_file_ok(struct vw_state_file *f, char *why, size_t len)
{
	bool ok;

	if (!f)
		return true;
	pthread_mutex_lock(&f->lock);
	ok = !f->problem[0];
	if (!ok && why && len)
		snprintf(why, len, "%s", f->problem);
	pthread_mutex_unlock(&f->lock);
	return ok;
}

static const char *const l_info[] = { "status", "file", "node_name", NULL };
static const char *const l_node[] = { "node_name", NULL };

enum { F_INFO, F_WRITES, F_ERRORS };

const struct vw_metric_family vw_state_file_families[] = {
	[F_INFO] = { "virtwatt_guest_state_info", VW_METRIC_GAUGE,
		     "The state file that keeps counters monotonic across restarts: loaded, "
		     "loaded_unclean (written before a crash), new, set_aside (unloadable, kept "
		     "aside; counters restarted), unwritable or disabled",
		     NULL, l_info },
	[F_WRITES] = { "virtwatt_guest_state_writes_total", VW_METRIC_COUNTER,
		       "State file writes (when it changed, at most every --state.write-interval)",
		       NULL, l_node },
	[F_ERRORS] = { "virtwatt_guest_state_write_errors_total", VW_METRIC_COUNTER,
		       "State file writes that failed", NULL, l_node },
};
const struct vw_family_table vw_state_file_family_table = {
	"guest/state_file.c: vw_state_file_render()", "virtwatt-guest",
	"the state file that keeps the guest's counters monotonic across restarts",
	vw_state_file_families, ARRAY_SIZE(vw_state_file_families),
};

int vw_state_file_render(const struct vw_state_file *f, struct vw_prom_writer *w,
			 const char *node_name)
{
	const char *info[] = { vw_state_status_name(f->status), f->path ? f->path : "", node_name,
			       NULL };
	const char *node[] = { node_name, NULL };
	int r;

	(void)vw_prom_table_trust(&vw_state_file_family_table); /* checked once, not each render */
	r = vw_prom_single(w, &vw_state_file_families[F_INFO], info, 1);
	if (r == 0)
		r = vw_prom_single(w, &vw_state_file_families[F_WRITES], node, (double)f->writes);
	if (r == 0)
		r = vw_prom_single(w, &vw_state_file_families[F_ERRORS], node, (double)f->errors);
	return r;
}

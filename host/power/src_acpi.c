/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ACPI 4.0 power meter under <sysfs>/class/hwmon/hwmonN (driver acpi_power_meter, hwmon name
 * "power_meter"): one VW_ZONE_PLATFORM zone per meter. The other hwmon chips' energy and power
 * sensors are src_hwmon_generic.c's; what both use to find chips and integrate is hwmon_chip.c.
 *
 * The meter gives power, not energy: power1_average in µW, the firmware's average over the
 * last power1_average_interval ms. Each reading is integrated into a cumulative µJ counter kept
 * here (it never wraps: max_range_uj 0):
 *
 *     energy += power just read x (its time - time of the previous good reading)
 *
 * in integers: µW x ns is 1e-9 µJ, the part below one µJ carried to the next read, so no
 * energy is lost to rounding however often it is read. The first reading only sets the time.
 *
 * Readings come on their own timeline: a thread of the source's own reads every meter every
 * VW_GAUGE_TICK_NS (250 ms), stamped with the daemon's clock (vw_now_ns()), and each read() of
 * the sampling thread reads it once more at its own time (act->now_ns), both into the same
 * counter under a lock. So a sampling thread that runs late (an interval close that took
 * seconds on a loaded machine) finds the counter already counted reading by reading over its
 * wait, and its own reading counts only the time since the thread's last: a step of power
 * lands within a tick of where the meter showed it, not spread over the whole wait (the newest
 * reading over a late sample's 2 s wait once counted 0 W across a 100 W -> 0 W step). A reading
 * stamped no later than the counter's last one (the sampling thread's time is taken before it
 * reads) counts nothing: the counter never counts a span twice nor goes back.
 *
 * A failed reading (file gone, junk, the firmware's "no reading"), by either thread, counts
 * nothing, and the time it covers is not made up afterwards either: the next good reading only
 * sets the time again, and energy is counted from it on. The counter stands still meanwhile;
 * it never goes back. Each such span is a gap, counted (stats(), the daemon's
 * virtwatt_node_energy_gaps_total) when a good reading ends it, even where the sampling thread
 * never saw the failure.
 *
 * Nothing here writes: power1_cap, power1_average_interval and the trip points are writable on
 * some machines and are only ever read. Every file is read relative to a directory fd opened
 * below the injected sysfs root; nothing here knows where /sys is.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "energy.h"
#include "fileio.h"
#include "hwmon_chip.h"
#include "integrator.h"
#include "log.h"
#include "macro.h"
#include "power.h"
#include "ticker.h"

#define HWMON_PREFIX VW_HWMON_PREFIX
#define PATH_LABEL_PREFIX VW_HWMON_PATH_PREFIX
#define ACPI_POWER_FILE "power1_average"
/*
 * power1_average_max is an upper trip point (the driver's _PTP, set by an operator or the
 * BMC): the meter notifies when the average crosses it, so real readings do run above it. The
 * plausibility ceiling gets the same headroom as powercap's, so that only junk trips it.
 */
#define CEILING_FACTOR 4
/*
 * _PMM returns all bits set when the firmware has no reading; the driver prints it x 1000
 * (mW to µW) without looking: 4294967295000 for a 32-bit ACPI integer (the "4.29 MW" of
 * lm-sensors reports), 2^64 - 1000 for a 64-bit one (the kernel's u64 product wrapped).
 */
#define PMM_NONE_32 (0xFFFFFFFFULL * 1000ULL)
#define PMM_NONE_64 (UINT64_MAX - 999ULL)

struct hw_zone {
	int dirfd;
	const char *file;              /* the reading, relative to dirfd */
	/* Under the source's lock (both threads read the meter). */
	struct vw_power_integrator integ; /* the counter: power1_average integrated */
	struct vw_complaint complaint;
	bool gap_open;                 /* a failed reading broke the counter; no good one since */
	uint64_t gaps;                 /* such spans, each ended by a good reading */
};

struct hwmon {
	size_t n;
	struct vw_zone_info info[VW_POWER_MAX_ZONES]; /* what zones() hands out */
	struct hw_zone zone[VW_POWER_MAX_ZONES];
	size_t eacces; /* meters refused for permission while opening */

	/* The reading thread (none with vw_acpi_config.manual_ticks); its lock is the zones'. */
	struct vw_ticker tk;
};

/* ---- the ACPI power meter --------------------------------------------------------------- */

/* A power reading in µW; -ENODATA for the firmware's "no reading". */
static int read_power_uw(int dirfd, const char *file, uint64_t *ret_uw)
{
	int r = vw_read_u64_at(dirfd, file, ret_uw);

	if (r == 0 && (*ret_uw == PMM_NONE_32 || *ret_uw == PMM_NONE_64))
		return -ENODATA;
	return r;
}

/* 4 x power1_average_max; 0 (none) when missing, "unknown" (not set), 0 or too large. */
static uint64_t read_ceiling(int dirfd)
{
	uint64_t uw;

	if (vw_read_u64_at(dirfd, "power1_average_max", &uw) < 0 ||
	    uw > UINT64_MAX / CEILING_FACTOR)
		return 0;
	return uw * CEILING_FACTOR;
}

/* The meter's averaging window, for the log: the driver evaluates _GAI on every read. */
static void log_meter(const struct vw_zone_info *info, int dirfd)
{
	uint64_t ms;

	if (vw_read_u64_at(dirfd, "power1_average_interval", &ms) == 0)
		vw_info("acpi: %s: ACPI power meter, power1_average averaged over %llu ms, "
			"ceiling %llu uW",
			info->path, (unsigned long long)ms,
			(unsigned long long)info->max_power_uw);
	else
		vw_info("acpi: %s: ACPI power meter, averaging window unknown (no readable "
			"power1_average_interval), ceiling %llu uW",
			info->path, (unsigned long long)info->max_power_uw);
}

/*
 * A power_meter chip becomes a zone when its power1_average reads now. -ENODEV without one (a
 * meter that only caps or trips), -EACCES refused, other -errno unreadable.
 */
static int probe_acpi_meter(struct hwmon *hw, struct vw_hwmon_chip *chip)
{
	struct vw_zone_info *info = &hw->info[hw->n];
	uint64_t uw;
	int r = read_power_uw(chip->dirfd, ACPI_POWER_FILE, &uw);

	if (r == -ENOENT) {
		vw_info("acpi: " PATH_LABEL_PREFIX HWMON_PREFIX "%u: power_meter without "
			ACPI_POWER_FILE " (it does not measure); skipped",
			chip->index);
		return -ENODEV;
	}
	if (r < 0) {
		/* Permission is reported once for all meters, by the caller. */
		vw_log(r == -EACCES ? VW_LOG_DEBUG : VW_LOG_WARN,
		       "acpi: " PATH_LABEL_PREFIX HWMON_PREFIX "%u: cannot read " ACPI_POWER_FILE
		       ": %s; skipped",
		       chip->index, strerror(-r));
		return r;
	}
	*info = (struct vw_zone_info){
		.zone = VW_ZONE_PLATFORM,
		.socket = (unsigned)hw->n,
		.max_range_uj = 0,
		.max_power_uw = read_ceiling(chip->dirfd),
		.idle_w = -1,
	};
	snprintf(info->path, sizeof(info->path), PATH_LABEL_PREFIX HWMON_PREFIX "%u", chip->index);
	hw->zone[hw->n] = (struct hw_zone){
		.dirfd = VW_TAKE_FD(chip->dirfd),
		.file = ACPI_POWER_FILE,
	};
	log_meter(info, hw->zone[hw->n].dirfd);
	hw->n++;
	return 0;
}

/* What to make of a chip, by its name. A generic hwmon source adds its own table. */
struct hw_probe {
	const char *chip;
	int (*probe)(struct hwmon *hw, struct vw_hwmon_chip *chip);
};

static const struct hw_probe acpi_probes[] = {
	{ VW_HWMON_ACPI_CHIP, probe_acpi_meter },
};

static const struct hw_probe *find_probe(const struct hw_probe *p, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(p[i].chip, name) == 0)
			return &p[i];
	return NULL;
}

/* Each chip in hwmon order through its probe; *ret_found counts chips a probe was run on. */
static int scan(int classfd, const struct hw_probe *probes, size_t n_probes, struct hwmon *hw,
		size_t *ret_found)
{
	_cleanup_free_ uint32_t *idx = NULL;
	size_t n = 0, found = 0;
	/* hwmonN in numeric order (hwmon10 after hwmon2) */
	int r = vw_hwmon_chip_numbers(classfd, &idx, &n);

	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		const struct hw_probe *p;
		struct vw_hwmon_chip chip;

		r = vw_hwmon_chip_open(classfd, idx[i], &chip);
		if (r < 0) {
			vw_debug("hwmon: " HWMON_PREFIX "%u: no readable name: %s; skipped", idx[i],
				 strerror(-r));
			continue;
		}
		p = find_probe(probes, n_probes, chip.name);
		if (p && hw->n == VW_POWER_MAX_ZONES) {
			vw_warn("hwmon: more than %d meters, " HWMON_PREFIX "%u and later unused",
				VW_POWER_MAX_ZONES, idx[i]);
			vw_closep(&chip.dirfd);
			break;
		}
		if (p) {
			found++;
			r = p->probe(hw, &chip);
			hw->eacces += r == -EACCES;
		}
		vw_closep(&chip.dirfd);
	}
	*ret_found = found;
	return 0;
}

/* ---- the ops ---------------------------------------------------------------------------- */

static void hwmon_close(void *state)
{
	struct hwmon *hw = state;

	if (!hw)
		return;
	vw_ticker_fini(&hw->tk);
	for (size_t i = 0; i < hw->n; i++)
		vw_closep(&hw->zone[i].dirfd);
	free(hw);
}

static void hwmon_closep(struct hwmon **hw)
{
	hwmon_close(*hw);
}

static int start_ticks(struct hwmon *hw, const struct vw_acpi_config *cfg);

static int acpi_open(const struct vw_power_env *env, void **ret_state)
{
	_cleanup_(hwmon_closep) struct hwmon *hw = NULL;
	_cleanup_close_ int classfd = -1;
	size_t found = 0;
	int r;

	classfd = vw_power_sysfs_class(env, VW_HWMON_DIR);
	if (classfd < 0)
		return classfd;
	hw = calloc(1, sizeof(*hw));
	if (!hw)
		return -ENOMEM;
	r = scan(classfd, acpi_probes, ARRAY_SIZE(acpi_probes), hw, &found);
	if (r < 0)
		return r;
	if (hw->n == 0 && hw->eacces) {
		vw_error("acpi: permission denied reading " ACPI_POWER_FILE " of %zu ACPI power "
			 "meter(s): the driver makes it readable by all, so a security module or "
			 "the container's sysfs mount refuses it",
			 hw->eacces);
		return -EACCES;
	}
	if (hw->n == 0) {
		vw_debug("acpi: %s", found ? "no ACPI power meter reads here"
					   : "no ACPI power meter (hwmon power_meter) here");
		return -ENODEV;
	}
	if (hw->eacces)
		vw_warn("acpi: %zu ACPI power meter(s) refused reading " ACPI_POWER_FILE
			"; skipped",
			hw->eacces);
	r = start_ticks(hw, vw_power_source_config(env, &vw_src_acpi_power_meter));
	if (r < 0)
		return r;
	*ret_state = VW_TAKE_PTR(hw);
	return 0;
}

static size_t hwmon_zones(void *state, const struct vw_zone_info **ret_zones)
{
	struct hwmon *hw = state;

	*ret_zones = hw->info;
	return hw->n;
}

/*
 * Under the lock: a reading of meter z (r, uw) at now_ns counted over the time since the last
 * good one; one stamped no later than that counts nothing. A failure breaks the counter: a gap
 * until the next good reading, which only sets the time again.
 */
static int count_locked(struct hw_zone *z, const char *path, int r, uint64_t uw,
			uint64_t now_ns)
{
	if (r < 0) {
		z->gap_open = z->gap_open || z->integ.primed;
		vw_power_integrator_break(&z->integ);
		vw_complain(&z->complaint, VW_LOG_WARN,
			    "acpi: %s: cannot read %s: %s; no energy counted until it reads again "
			    "(a gap, virtwatt_node_energy_gaps_total)",
			    path, z->file,
			    r == -ENODATA ? "the meter has no reading" : strerror(-r));
		return r;
	}
	vw_release(&z->complaint, VW_LOG_INFO,
		   "acpi: %s: %s readable again; energy counted from this reading on", path,
		   z->file);
	if (z->integ.primed && now_ns <= z->integ.last_ns)
		return 0; /* the counter is past this time already: nothing to add */
	if (!z->integ.primed && z->gap_open) {
		z->gap_open = false;
		z->gaps++;
	}
	vw_power_integrate(&z->integ, uw, now_ns);
	return 0;
}

/*
 * One reading of meter i, by either thread: read outside the lock (the driver may evaluate an
 * ACPI method: neither thread waits on the other's), stamped *at_ns (the sampling thread's
 * time), else vw_now_ns() once read, then counted under the lock over the time since the last
 * good one; a failure breaks the counter (a gap until the next good reading).
 * The attributes of acpi_power_meter live on the ACPI device, whose directory outlives a reload
 * of the driver (only the hwmon class device comes and goes): the handle stays valid, and a
 * reading that went away reads again when it is back. (Drivers with their attributes on the
 * class device need powercap's look-up-again: src_hwmon_generic.c has it.)
 */
static int take_reading(struct hwmon *hw, size_t i, const uint64_t *at_ns)
{
	struct hw_zone *z = &hw->zone[i];
	const char *path = hw->info[i].path;
	uint64_t uw, now_ns;
	int r = read_power_uw(z->dirfd, z->file, &uw);

	now_ns = at_ns ? *at_ns : vw_now_ns();
	pthread_mutex_lock(&hw->tk.lock);
	r = count_locked(z, path, r, uw, now_ns);
	pthread_mutex_unlock(&hw->tk.lock);
	return r;
}

void vw_acpi_tick(void *state, uint64_t now_ns)
{
	struct hwmon *hw = state;

	for (size_t i = 0; i < hw->n; i++)
		(void)take_reading(hw, i, &now_ns);
}

static void tick(void *arg)
{
	struct hwmon *hw = arg;

	for (size_t i = 0; i < hw->n; i++)
		(void)take_reading(hw, i, NULL);
}

/* The lock, and the thread unless cfg says the test ticks by hand. 0 or -errno. */
static int start_ticks(struct hwmon *hw, const struct vw_acpi_config *cfg)
{
	int r = vw_ticker_init(&hw->tk, "acpi");

	if (r < 0 || (cfg && cfg->manual_ticks))
		return r;
	return vw_ticker_start(&hw->tk, VW_GAUGE_TICK_NS, tick, hw, "acpi");
}

static int hwmon_read(void *state, const struct vw_node_activity *act, uint64_t *raw_uj,
		      int *errs)
{
	struct hwmon *hw = state;

	for (size_t i = 0; i < hw->n; i++) {
		errs[i] = act ? take_reading(hw, i, &act->now_ns)
			      : -EINVAL; /* no time: nothing to integrate over */
		pthread_mutex_lock(&hw->tk.lock);
		raw_uj[i] = hw->zone[i].integ.energy_uj;
		pthread_mutex_unlock(&hw->tk.lock);
	}
	return vw_power_read_result(errs, hw->n);
}

/* The gaps of every meter (spans a failed reading left uncounted), summed. */
static void hwmon_stats(void *state, struct vw_power_source_stats *ret)
{
	struct hwmon *hw = state;

	pthread_mutex_lock(&hw->tk.lock);
	for (size_t i = 0; i < hw->n; i++)
		ret->gaps += hw->zone[i].gaps;
	pthread_mutex_unlock(&hw->tk.lock);
}

const struct vw_power_source_ops vw_src_acpi_power_meter = {
	.name = "acpi",
	.about = "an ACPI power meter in hwmon",
	.measured = true,
	.open = acpi_open,
	.zones = hwmon_zones,
	.read = hwmon_read,
	.stats = hwmon_stats,
	.close = hwmon_close,
};

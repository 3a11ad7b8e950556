/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ACPI 4.0 power meter under <sysfs>/class/hwmon/hwmonN (driver acpi_power_meter, hwmon name
 * "power_meter"): one VW_ZONE_PLATFORM zone per meter. The other hwmon chips' energy and power
 * sensors are src_hwmon_generic.c's; what both use to find chips and integrate is hwmon_chip.c.
 *
 * The meter gives power, not energy: power1_average in µW, the firmware's average over the
 * last power1_average_interval ms. Each read integrates it into a cumulative µJ counter kept
 * here (it never wraps: max_range_uj 0):
 *
 *     energy += power just read x (now - time of the previous good read)
 *
 * in integers: µW x ns is 1e-9 µJ, the part below one µJ carried to the next read, so no
 * energy is lost to rounding however often it is read. The first read only sets the time.
 *
 * A failed read (file gone, junk, the firmware's "no reading") counts nothing, and the time it
 * covers is not made up afterwards either: the next good read only sets the time again, and
 * energy is counted from that read on. The counter stands still meanwhile; it never goes back.
 *
 * Nothing here writes: power1_cap, power1_average_interval and the trip points are writable on
 * some machines and are only ever read. Every file is read relative to a directory fd opened
 * below the injected sysfs root; nothing here knows where /sys is.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "energy.h"
#include "fileio.h"
#include "hwmon_chip.h"
#include "integrator.h"
#include "log.h"
#include "macro.h"
#include "power.h"

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
	struct vw_power_integrator integ; /* the counter: power1_average integrated */
	struct vw_complaint complaint;
};

struct hwmon {
	size_t n;
	struct vw_zone_info info[VW_POWER_MAX_ZONES]; /* what zones() hands out */
	struct hw_zone zone[VW_POWER_MAX_ZONES];
	size_t eacces; /* meters refused for permission while opening */
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
	for (size_t i = 0; i < hw->n; i++)
		vw_closep(&hw->zone[i].dirfd);
	free(hw);
}

static void hwmon_closep(struct hwmon **hw)
{
	hwmon_close(*hw);
}

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
 * The attributes of acpi_power_meter live on the ACPI device, whose directory outlives a reload
 * of the driver (only the hwmon class device comes and goes): the handle stays valid, and a
 * reading that went away reads again when it is back. (Drivers with their attributes on the
 * class device need powercap's look-up-again: src_hwmon_generic.c has it.)
 */
static int read_zone(struct hw_zone *z, const char *path, uint64_t now_ns, uint64_t *ret_raw)
{
	uint64_t uw;
	int r = read_power_uw(z->dirfd, z->file, &uw);

	if (r < 0) {
		vw_power_integrator_break(&z->integ);
		*ret_raw = z->integ.energy_uj;
		vw_complain(&z->complaint, VW_LOG_WARN,
			    "acpi: %s: cannot read %s: %s; no energy counted until it reads again",
			    path, z->file,
			    r == -ENODATA ? "the meter has no reading" : strerror(-r));
		return r;
	}
	vw_release(&z->complaint, VW_LOG_INFO,
		   "acpi: %s: %s readable again; energy counted from this reading on", path,
		   z->file);
	vw_power_integrate(&z->integ, uw, now_ns);
	*ret_raw = z->integ.energy_uj;
	return 0;
}

static int hwmon_read(void *state, const struct vw_node_activity *act, uint64_t *raw_uj,
		      int *errs)
{
	struct hwmon *hw = state;

	for (size_t i = 0; i < hw->n; i++) {
		if (!act) {
			errs[i] = -EINVAL; /* no time: nothing to integrate over */
			raw_uj[i] = hw->zone[i].integ.energy_uj;
		} else {
			errs[i] = read_zone(&hw->zone[i], hw->info[i].path, act->now_ns,
					    &raw_uj[i]);
		}
	}
	return vw_power_read_result(errs, hw->n);
}

const struct vw_power_source_ops vw_src_acpi_power_meter = {
	.name = "acpi",
	.about = "an ACPI power meter in hwmon",
	.measured = true,
	.open = acpi_open,
	.zones = hwmon_zones,
	.read = hwmon_read,
	.close = hwmon_close,
};

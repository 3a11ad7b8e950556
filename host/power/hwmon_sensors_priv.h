/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The generic hwmon meter's insides, shared by its two files: hwmon_sensors.c finds and reads
 * the sensors, src_hwmon_generic.c makes zones of them and is the source. Internal to host/power.
 */
#pragma once

#include <pthread.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hwmon_chip.h"
#include "integrator.h"
#include "hwmon_rules.h"
#include "log.h"
#include "power.h"
#include "ticker.h"

#define FILE_LEN 32
#define LABEL_LEN 64

enum hg_kind {
	HG_ENERGY, /* energyN_input, µJ */
	HG_POWER,  /* powerN_average or powerN_input, µW */
	HG_VI,     /* inN_input (mV) x currN_input (mA) */
};

/* "energy counter", "power reading", "voltage x current": for the logs. */
extern const char *const vw_hwmon_kind_names[];

struct hg_chip {
	unsigned index; /* hwmonN */
	int dirfd;
	char name[64];
};

struct hg_sensor {
	enum hg_kind kind;
	size_t chip;          /* into hwmon_generic.chip */
	char file[FILE_LEN];  /* the reading: energyN_input, powerN_average, inN_input */
	char curr[FILE_LEN];  /* HG_VI: currN_input */
	char label[LABEL_LEN];
	char path[128];       /* /sys/class/hwmon/hwmonN/<file>, for the logs and the zone */
	enum vw_zone zone;
	unsigned socket;
	size_t zone_idx;
	uint64_t raw_uj;      /* HG_ENERGY: the last good reading */
	struct vw_power_integrator integ; /* HG_POWER, HG_VI */
	struct vw_complaint complaint;
	bool gap_open;        /* HG_POWER, HG_VI: a failed reading broke integ; no good one since */
	uint64_t gaps;        /* such spans, each ended by a good reading */
};

struct hwmon_generic {
	int classfd; /* to look a chip up again */
	struct hg_chip *chip;
	size_t n_chip, cap_chip;
	struct hg_sensor *s;
	size_t n_s, cap_s;
	size_t n;
	struct vw_zone_info info[VW_POWER_MAX_ZONES];
	bool energy[VW_POWER_MAX_ZONES]; /* counted from energy counters (else integrated) */
	size_t eacces;                   /* sensors refused for permission while opening */

	/* The power sensors' reading thread (none without power sensors, or with
	 * vw_hwmon_config.manual_ticks); lock: the sensors and chips, from open() on. */
	struct vw_ticker tk;
};

/*
 * Every sensor a rule maps on the chips below hg->classfd (but the ACPI power meter), placed in
 * its zone and socket and read once, into hg->s (its chip into hg->chip); cfg may be NULL.
 * Sensors that do not read are left out (hg->eacces counts those refused). 0 or -ENOMEM.
 */
int vw_hwmon_sensors_find(struct hwmon_generic *hg, const struct vw_hwmon_config *cfg,
			  const struct vw_hwmon_rules *builtin);
/* One reading of s on its chip's dirfd: µJ for an energy counter, µW for the others. */
int vw_hwmon_sensor_read(int dirfd, const struct hg_sensor *s, uint64_t *ret);

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Training that goes on while a daemon runs (docs/models.md, "The host trains"): for each target
 * (the node, each VM) a ring of its latest samples, each one interval's CPU time (the feature
 * bpf_cpu_time_ms, CPU ms per wall second) and power per zone (W), and on demand a refit with the
 * offline trainer's own code (model_train.h, vw_train_evaluate: the held-out score over k
 * contiguous blocks of the rows in time order, then the fit on all of them). A zone keeps its last
 * good fit when a refit has too few samples or fails.
 *
 * Memory is bounded: at most max_targets targets, each with max_samples rows of 1 + n_zones
 * doubles, allocated whole when the target is first seen; a refit borrows about 4 doubles per row
 * while it runs. Pure: no I/O, no clock (times come in as arguments).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model_train.h"

#define VW_ONLINE_FEATURE "bpf_cpu_time_ms"
#define VW_ONLINE_MAX_ZONES 8
#define VW_ONLINE_ID_MAX 128 /* a target's id, NUL included */
#define VW_ONLINE_LABEL_MAX 256

struct vw_online_opts {
	const char *const *zones; /* component names ("package", "dram", ...), kept by pointer */
	size_t n_zones;           /* 1..VW_ONLINE_MAX_ZONES */
	size_t max_samples;       /* per target: the ring's rows (>= min_samples) */
	size_t max_targets;       /* >= 1 */
	size_t min_samples;       /* a zone is fitted from at least this many rows (>= folds) */
	unsigned folds;           /* k of the held-out score, 2..VW_TRAIN_MAX_FOLDS */
	struct vw_train_opts train;
};

/* A target's cumulative counters at one time: vw_online_observe() makes a sample of two. */
struct vw_online_counters {
	uint64_t now_ns; /* when they were read (CLOCK_MONOTONIC) */
	uint64_t cpu_ns; /* the target's CPU time */
	uint64_t energy_uj[VW_ONLINE_MAX_ZONES]; /* per zone of the store */
	/* Meter faults so far (energy skipped, failed reads): an interval in which they grew is not
	 * learnt from in that zone. */
	uint64_t faults[VW_ONLINE_MAX_ZONES];
	bool present[VW_ONLINE_MAX_ZONES]; /* false: no measured energy in that zone */
};

/* One zone's current model. */
struct vw_online_fit {
	bool valid;                  /* a fit exists (the latest good one) */
	struct vw_train_fit fit;
	struct vw_train_score score; /* held out: rows, mae_w, r2 */
	double fitted_unix_s;        /* when it was fitted */
	uint64_t failures;           /* refits that kept it (too few samples, a failed fit) */
};

struct vw_online;

/* NULL with errno: EINVAL for options out of range, ENOMEM. */
struct vw_online *vw_online_new(const struct vw_online_opts *o);
void vw_online_free(struct vw_online *s);

/*
 * The index of the target named id in *ret, the target created (empty) when new: -ENOSPC at
 * max_targets, -EINVAL for an empty id or one of VW_ONLINE_ID_MAX bytes or more, -ENOMEM.
 */
int vw_online_target(struct vw_online *s, const char *id, size_t *ret);
/* A name shown with target t (a VM's), at most VW_ONLINE_LABEL_MAX - 1 bytes kept; "" at first. */
void vw_online_set_label(struct vw_online *s, size_t t, const char *label);
const char *vw_online_label(const struct vw_online *s, size_t t);
/* Forget target t, samples and fits: the last target takes its index. */
void vw_online_remove(struct vw_online *s, size_t t);

/*
 * One sample of target t: x the CPU time (ms/s), y[z] each zone's power (W), NAN where it has
 * none. The oldest sample makes room once the ring is full. -EINVAL for a bad index, a feature
 * that is not finite and >= 0, or a row without any finite power.
 */
int vw_online_add(struct vw_online *s, size_t t, double x, const double *y);
/*
 * Target t's counters now: with the previous ones, a sample over the interval between them (1),
 * else (the first, no time elapsed, CPU time that went back: a new baseline) nothing (0). A
 * zone whose energy went back, whose faults grew or that is not present at either end has no
 * power in the sample; with no zone left there is no sample.
 */
int vw_online_observe(struct vw_online *s, size_t t, const struct vw_online_counters *c);

/*
 * Refit target t's zones from its samples: each zone with at least min_samples finite powers
 * gets a new fit and held-out score (fitted at now_unix_s); the others keep theirs and count a
 * failure. The number of zones fitted, or -EINVAL / -ENOMEM.
 */
int vw_online_refit(struct vw_online *s, size_t t, double now_unix_s);

size_t vw_online_n_targets(const struct vw_online *s);
const char *vw_online_id(const struct vw_online *s, size_t t);
size_t vw_online_n_samples(const struct vw_online *s, size_t t);
/* Target t's sample i (0: the oldest held): its CPU time and each zone's power (NAN: none).
 * -ENOENT past the last. */
int vw_online_sample(const struct vw_online *s, size_t t, size_t i, double *ret_x,
		     double *ret_y);
size_t vw_online_n_zones(const struct vw_online *s);
const char *vw_online_zone_name(const struct vw_online *s, size_t z);
const struct vw_online_fit *vw_online_zone_fit(const struct vw_online *s, size_t t, size_t z);

/*
 * Target t's model as a Kepler weight file (vw_train_to_json: the zones with a fit, feature
 * VW_ONLINE_FEATURE) in a malloc'd *ret_json. -ENODATA while no zone has a fit.
 */
int vw_online_to_json(const struct vw_online *s, size_t t, char **ret_json);

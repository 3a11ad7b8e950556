/* SPDX-License-Identifier: Apache-2.0 */
#include "idle_floor.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "idle.h"
#include "macro.h"

/*
 * A ring of the last `window` points, oldest at `next` once full. Every point rescans the
 * window: O(window x sustain), a few thousand operations per interval at the defaults.
 */
struct vw_idle_floor {
	size_t window, sustain;
	size_t count; /* points held, <= window */
	size_t next;  /* slot the next point goes to */
	double max_util;
	double floor_w; /* < 0: none yet */
	double *watts;  /* per point; < 0: does not qualify */
};

void vw_idle_floor_free(struct vw_idle_floor *f)
{
	if (!f)
		return;
	free(f->watts);
	free(f);
}

struct vw_idle_floor *vw_idle_floor_new(size_t window, size_t sustain, double max_util)
{
	struct vw_idle_floor *f;

	if (window < 1 || window > VW_IDLE_MAX_WINDOW || sustain < 1 || sustain > window ||
	    sustain > VW_IDLE_FLOOR_MAX_SUSTAIN || !(max_util >= 0 && max_util <= 1)) {
		errno = EINVAL;
		return NULL;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->watts = calloc(window, sizeof(double));
	if (!f->watts) {
		free(f);
		return NULL;
	}
	f->window = window;
	f->sustain = sustain;
	f->max_util = max_util;
	f->floor_w = -1;
	return f;
}

/* The i-th point held, oldest first. */
static double at(const struct vw_idle_floor *f, size_t i)
{
	size_t oldest = f->count < f->window ? 0 : f->next;

	return f->watts[(oldest + i) % f->window];
}

/* The lowest level of the sustained runs in the window; < 0 when there is none. */
static double lowest_sustained(const struct vw_idle_floor *f)
{
	double lowest = -1;
	size_t run = 0;

	for (size_t i = 0; i < f->count; i++) {
		double level = 0;

		run = at(f, i) >= 0 ? run + 1 : 0;
		if (run < f->sustain)
			continue;
		for (size_t k = i + 1 - f->sustain; k <= i; k++)
			level = fmax(level, at(f, k));
		if (lowest < 0 || level < lowest)
			lowest = level;
	}
	return lowest;
}

void vw_idle_floor_add(struct vw_idle_floor *f, double watts, double util)
{
	double lowest;

	if (!f)
		return;
	/* NaN utilization (unknown) qualifies: !(NaN > x) */
	f->watts[f->next] = isfinite(watts) && watts >= 0 && !(util > f->max_util) ? watts : -1;
	f->next = (f->next + 1) % f->window;
	if (f->count < f->window)
		f->count++;
	lowest = lowest_sustained(f);
	if (lowest >= 0)
		f->floor_w = lowest;
}

int vw_idle_floor_get(const struct vw_idle_floor *f, double *ret_w)
{
	if (!f)
		return -EINVAL;
	if (f->floor_w < 0)
		return -EAGAIN;
	*ret_w = f->floor_w;
	return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
#include "idle.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "macro.h"

/*
 * A ring buffer of the last `window` (usage, watts) points and an ordinary least-squares line
 * through them, refitted on every point. Spread is the population standard deviation of usage:
 * the slope's standard error scales with 1/sqrt(Sxx) = 1/(stddev x sqrt(n)), so the stddev is
 * what decides whether the intercept means anything, and one outlier cannot open the gate the
 * way it would for max - min.
 */
struct vw_idle_fit {
	size_t window;
	size_t count; /* points held, <= window */
	size_t next;  /* slot the next point goes to */
	double min_spread;
	double idle_w; /* last good intercept */
	bool fitted;
	double *usage;
	double *watts;
};

struct line {
	double mean_u, mean_w;
	double sxx, sxy;
	double min_w;
};

static const char *const method_names[] = {
	[VW_IDLE_CONFIGURED] = "configured",
	[VW_IDLE_SOURCE] = "source",
	[VW_IDLE_FITTED] = "fitted",
	[VW_IDLE_RESIDUAL] = "residual",
	[VW_IDLE_FLOOR] = "floor",
};

const char *vw_idle_method_name(enum vw_idle_method m)
{
	if ((size_t)m >= ARRAY_SIZE(method_names))
		return "unknown";
	return method_names[m];
}

void vw_idle_fit_free(struct vw_idle_fit *f)
{
	if (!f)
		return;
	free(f->usage);
	free(f->watts);
	free(f);
}

static void idle_fit_freep(struct vw_idle_fit **f)
{
	vw_idle_fit_free(*f);
}

struct vw_idle_fit *vw_idle_fit_new(size_t window, double min_spread)
{
	_cleanup_(idle_fit_freep) struct vw_idle_fit *f = NULL;

	if (window < VW_IDLE_MIN_POINTS || window > VW_IDLE_MAX_WINDOW || !isfinite(min_spread) ||
	    min_spread < 0) {
		errno = EINVAL;
		return NULL;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->usage = calloc(window, sizeof(double));
	f->watts = calloc(window, sizeof(double));
	if (!f->usage || !f->watts)
		return NULL; /* errno from calloc */
	f->window = window;
	f->min_spread = min_spread;
	f->idle_w = -1;
	return VW_TAKE_PTR(f);
}

/* Two passes (means first) so that large watts with a small spread keep their precision. */
static void line_stats(const struct vw_idle_fit *f, struct line *l)
{
	double su = 0, sw = 0;

	*l = (struct line){ .min_w = INFINITY };
	for (size_t i = 0; i < f->count; i++) {
		su += f->usage[i];
		sw += f->watts[i];
	}
	/*
	 * The lowest power seen is the lowest over two consecutive points, oldest to newest: a
	 * sample taken late (a stalled thread, a meter's counter updated late) moves energy from
	 * one interval into the next, and one low point alone would then hold the intercept down
	 * for the whole window; over two intervals the shift cancels.
	 */
	for (size_t k = 1, start = f->count < f->window ? 0 : f->next; k < f->count; k++)
		l->min_w = fmin(l->min_w, (f->watts[(start + k - 1) % f->window] +
					   f->watts[(start + k) % f->window]) / 2);
	l->mean_u = su / (double)f->count;
	l->mean_w = sw / (double)f->count;
	for (size_t i = 0; i < f->count; i++) {
		double du = f->usage[i] - l->mean_u;

		l->sxx += du * du;
		l->sxy += du * (f->watts[i] - l->mean_w);
	}
}

static void refit(struct vw_idle_fit *f)
{
	struct line l;
	double slope, intercept;

	if (f->count < VW_IDLE_MIN_POINTS)
		return;
	line_stats(f, &l);
	if (l.sxx <= 0 || sqrt(l.sxx / (double)f->count) < f->min_spread)
		return; /* not enough spread: keep the last good intercept */
	slope = l.sxy / l.sxx;
	if (!isfinite(slope) || slope < 0)
		return; /* power falling with load: noise or a changing machine, not a model */
	intercept = l.mean_w - slope * l.mean_u;
	f->idle_w = fmax(0.0, fmin(intercept, l.min_w));
	f->fitted = true;
}

static double clamp_usage(double usage)
{
	if (!(usage >= 0)) /* negative or NaN */
		return 0;
	return usage > 1 ? 1 : usage;
}

void vw_idle_fit_add(struct vw_idle_fit *f, double usage, double watts)
{
	if (!f || !isfinite(usage) || !isfinite(watts) || watts < 0)
		return;
	f->usage[f->next] = clamp_usage(usage);
	f->watts[f->next] = watts;
	f->next = (f->next + 1) % f->window;
	if (f->count < f->window)
		f->count++;
	refit(f);
}

int vw_idle_fit_get(const struct vw_idle_fit *f, double *ret_idle_w)
{
	if (!f)
		return -EINVAL;
	if (!f->fitted)
		return -EAGAIN;
	*ret_idle_w = f->idle_w;
	return 0;
}

/* round(x) as an integer no larger than cap; x >= 0 or NaN (NaN gives 0). */
static uint64_t round_capped(double x, uint64_t cap)
{
	double r;

	if (!(x > 0))
		return 0;
	r = round(x);
	if (r >= 18446744073709551616.0) /* 2^64: does not fit */
		return cap;
	return VW_MIN((uint64_t)r, cap);
}

void vw_idle_split(uint64_t energy_uj, uint64_t elapsed_ns, double idle_w, double usage,
		   uint64_t *ret_idle_uj, uint64_t *ret_active_uj)
{
	uint64_t idle_uj;

	if (idle_w >= 0 && isfinite(idle_w))
		/* W x ns = 1e-9 J = 1e-3 µJ */
		idle_uj = round_capped(idle_w * (double)elapsed_ns / 1e3, energy_uj);
	else
		idle_uj = round_capped((1.0 - clamp_usage(usage)) * (double)energy_uj, energy_uj);
	*ret_idle_uj = idle_uj;
	*ret_active_uj = energy_uj - idle_uj;
}

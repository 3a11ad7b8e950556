/* SPDX-License-Identifier: Apache-2.0 */
/* Per-target sample rings and refits with the offline trainer's functions (model_online.h). */
#include "model_online.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

#define NS_PER_MS 1e6

struct target {
	char id[VW_ONLINE_ID_MAX];
	char label[VW_ONLINE_LABEL_MAX];
	double *x;           /* max_samples CPU times (ms/s) */
	double *y;           /* max_samples rows of n_zones powers (W), NAN for none */
	size_t head, count;  /* the next row written; rows held */
	bool have_last;
	struct vw_online_counters last;
	struct vw_online_fit *fit; /* n_zones */
};

struct vw_online {
	struct vw_online_opts o;
	struct target **t;
	size_t n;
};

static bool opts_ok(const struct vw_online_opts *o)
{
	return o->zones && o->n_zones >= 1 && o->n_zones <= VW_ONLINE_MAX_ZONES &&
	       o->max_targets >= 1 && o->folds >= 2 && o->folds <= VW_TRAIN_MAX_FOLDS &&
	       o->min_samples >= o->folds && o->max_samples >= o->min_samples;
}

struct vw_online *vw_online_new(const struct vw_online_opts *o)
{
	struct vw_online *s;

	if (!opts_ok(o)) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (s)
		s->t = calloc(o->max_targets, sizeof(*s->t));
	if (!s || !s->t) {
		free(s);
		errno = ENOMEM;
		return NULL;
	}
	s->o = *o;
	return s;
}

static void target_free(struct target *t)
{
	if (!t)
		return;
	free(t->x);
	free(t->y);
	free(t->fit);
	free(t);
}

void vw_online_free(struct vw_online *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		target_free(s->t[i]);
	free(s->t);
	free(s);
}

int vw_online_target(struct vw_online *s, const char *id, size_t *ret)
{
	size_t len = strlen(id);
	struct target *t;

	if (len == 0 || len >= VW_ONLINE_ID_MAX)
		return -EINVAL;
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->t[i]->id, id) == 0) {
			*ret = i;
			return 0;
		}
	if (s->n == s->o.max_targets)
		return -ENOSPC;
	t = calloc(1, sizeof(*t));
	if (t) {
		t->x = calloc(s->o.max_samples, sizeof(*t->x));
		t->y = calloc(s->o.max_samples * s->o.n_zones, sizeof(*t->y));
		t->fit = calloc(s->o.n_zones, sizeof(*t->fit));
	}
	if (!t || !t->x || !t->y || !t->fit) {
		target_free(t);
		return -ENOMEM;
	}
	memcpy(t->id, id, len + 1);
	s->t[s->n] = t;
	*ret = s->n++;
	return 0;
}

void vw_online_set_label(struct vw_online *s, size_t t, const char *label)
{
	if (t < s->n)
		snprintf(s->t[t]->label, sizeof(s->t[t]->label), "%s", label);
}

const char *vw_online_label(const struct vw_online *s, size_t t)
{
	return t < s->n ? s->t[t]->label : NULL;
}

void vw_online_remove(struct vw_online *s, size_t t)
{
	if (t >= s->n)
		return;
	target_free(s->t[t]);
	s->t[t] = s->t[--s->n];
	s->t[s->n] = NULL;
}

int vw_online_add(struct vw_online *s, size_t t, double x, const double *y)
{
	const size_t nz = s->o.n_zones;
	struct target *tg;
	bool any = false;

	if (t >= s->n || !isfinite(x) || x < 0)
		return -EINVAL;
	for (size_t z = 0; z < nz; z++)
		any |= isfinite(y[z]);
	if (!any)
		return -EINVAL;
	tg = s->t[t];
	tg->x[tg->head] = x;
	for (size_t z = 0; z < nz; z++)
		tg->y[tg->head * nz + z] = isfinite(y[z]) ? y[z] : NAN;
	tg->head = (tg->head + 1) % s->o.max_samples;
	tg->count = VW_MIN(tg->count + 1, s->o.max_samples);
	return 0;
}

/* Zone z's power between two readings, NAN when it cannot be told. */
static double zone_watts(const struct vw_online_counters *a, const struct vw_online_counters *b,
			 size_t z)
{
	if (!a->present[z] || !b->present[z] || b->energy_uj[z] < a->energy_uj[z] ||
	    b->faults[z] != a->faults[z])
		return NAN;
	/* µJ per ns is kW */
	return (double)(b->energy_uj[z] - a->energy_uj[z]) * 1e3 / (double)(b->now_ns - a->now_ns);
}

int vw_online_observe(struct vw_online *s, size_t t, const struct vw_online_counters *c)
{
	struct vw_online_counters prev;
	double y[VW_ONLINE_MAX_ZONES], x;
	struct target *tg;
	bool any = false;

	if (t >= s->n)
		return -EINVAL;
	tg = s->t[t];
	if (tg->have_last && c->now_ns <= tg->last.now_ns)
		return 0; /* nothing elapsed: keep the older baseline */
	prev = tg->last;
	tg->last = *c;
	if (!tg->have_last || c->cpu_ns < prev.cpu_ns) {
		tg->have_last = true;
		return 0;
	}
	x = (double)(c->cpu_ns - prev.cpu_ns) / NS_PER_MS /
	    ((double)(c->now_ns - prev.now_ns) / 1e9);
	for (size_t z = 0; z < s->o.n_zones; z++) {
		y[z] = zone_watts(&prev, c, z);
		any |= isfinite(y[z]);
	}
	if (!any)
		return 0;
	return vw_online_add(s, t, x, y) < 0 ? 0 : 1;
}

/* The ring's row of a target's i-th oldest sample. */
static size_t ring_row(const struct vw_online *s, const struct target *tg, size_t i)
{
	const size_t max = s->o.max_samples;

	return (tg->head + max - tg->count + i) % max;
}

/* Zone z's samples in time order, those with a power: n rows into xs, ys. */
static size_t gather(const struct vw_online *s, const struct target *tg, size_t z, double *xs,
		     double *ys)
{
	size_t n = 0;

	for (size_t i = 0; i < tg->count; i++) {
		size_t row = ring_row(s, tg, i);
		double v = tg->y[row * s->o.n_zones + z];

		if (isfinite(v)) {
			xs[n] = tg->x[row];
			ys[n++] = v;
		}
	}
	return n;
}

static bool refit_zone(const struct vw_online *s, const struct target *tg, size_t z,
		       double now_unix_s, double *xs, double *ys, unsigned *fold,
		       struct vw_online_fit *f)
{
	size_t n = gather(s, tg, z, xs, ys);
	struct vw_train_score score;
	struct vw_train_fit fit;

	if (n < s->o.min_samples || vw_train_folds(n, s->o.folds, 0, true, fold) < 0 ||
	    vw_train_evaluate(&s->o.train, xs, ys, 1, n, fold, s->o.folds, &score, &fit) < 0) {
		f->failures++;
		return false;
	}
	f->valid = true;
	f->fit = fit;
	f->score = score;
	f->fitted_unix_s = now_unix_s;
	return true;
}

int vw_online_refit(struct vw_online *s, size_t t, double now_unix_s)
{
	_cleanup_free_ double *xs = NULL, *ys = NULL;
	_cleanup_free_ unsigned *fold = NULL;
	struct target *tg;
	int fitted = 0;

	if (t >= s->n)
		return -EINVAL;
	tg = s->t[t];
	xs = calloc(tg->count + 1, sizeof(*xs));
	ys = calloc(tg->count + 1, sizeof(*ys));
	fold = calloc(tg->count + 1, sizeof(*fold));
	if (!xs || !ys || !fold)
		return -ENOMEM;
	for (size_t z = 0; z < s->o.n_zones; z++)
		fitted += refit_zone(s, tg, z, now_unix_s, xs, ys, fold, &tg->fit[z]);
	return fitted;
}

size_t vw_online_n_targets(const struct vw_online *s)
{
	return s->n;
}

const char *vw_online_id(const struct vw_online *s, size_t t)
{
	return t < s->n ? s->t[t]->id : NULL;
}

size_t vw_online_n_samples(const struct vw_online *s, size_t t)
{
	return t < s->n ? s->t[t]->count : 0;
}

int vw_online_sample(const struct vw_online *s, size_t t, size_t i, double *ret_x,
		     double *ret_y)
{
	size_t row;

	if (t >= s->n || i >= s->t[t]->count)
		return -ENOENT;
	row = ring_row(s, s->t[t], i);
	*ret_x = s->t[t]->x[row];
	memcpy(ret_y, s->t[t]->y + row * s->o.n_zones, s->o.n_zones * sizeof(*ret_y));
	return 0;
}

size_t vw_online_n_zones(const struct vw_online *s)
{
	return s->o.n_zones;
}

const char *vw_online_zone_name(const struct vw_online *s, size_t z)
{
	return z < s->o.n_zones ? s->o.zones[z] : NULL;
}

const struct vw_online_fit *vw_online_zone_fit(const struct vw_online *s, size_t t, size_t z)
{
	return t < s->n && z < s->o.n_zones ? &s->t[t]->fit[z] : NULL;
}

int vw_online_to_json(const struct vw_online *s, size_t t, char **ret_json)
{
	static const char *const features[] = { VW_ONLINE_FEATURE };
	struct vw_train_fit fits[VW_ONLINE_MAX_ZONES];
	const char *zones[VW_ONLINE_MAX_ZONES];
	size_t n = 0;

	if (t >= s->n)
		return -EINVAL;
	for (size_t z = 0; z < s->o.n_zones; z++) {
		if (!s->t[t]->fit[z].valid)
			continue;
		fits[n] = s->t[t]->fit[z].fit;
		zones[n++] = s->o.zones[z];
	}
	if (n == 0)
		return -ENODATA;
	return vw_train_to_json(fits, zones, n, features, ret_json);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The snapshot store: each publish replaces the current pair of renderings under a mutex; a
 * scrape takes a reference and sends that pair whole, the last reference frees it. The gzip of a
 * rendering is made once per snapshot, by the first scrape that accepts gzip; so is an
 * OpenMetrics rendering derived from the text (a layout published with it), by the first
 * request for OpenMetrics.
 */
#include "exposition.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gzip.h"
#include "log.h"
#include "macro.h"
#include "prom.h"

/* One published pair of renderings, freed when the last scrape using it is done. */
struct vw_snapshot {
	unsigned refs;
	uint64_t gen;
	char *text;
	size_t text_len;
	char *om;
	size_t om_len;
	/* The text's layout, from which the first request for OpenMetrics derives om (under
	 * om_lock), or NULL; om_failed: it could not. */
	pthread_mutex_t om_lock;
	struct vw_prom_layout *layout;
	bool om_failed;
	/* gzip of each, made by the first scrape that accepts gzip (under gz_lock), then kept:
	 * compressed once per snapshot, not per scrape */
	pthread_mutex_t gz_lock;
	char *gz[2];
	size_t gz_len[2];
	bool gz_failed[2];
};

struct vw_exposition {
	pthread_mutex_t lock;
	struct vw_snapshot *cur;
	uint64_t gen;        /* of the last publish, under lock */
	uint64_t served_gen; /* highest generation a GET /metrics has served; atomic */
	uint64_t published_ns; /* vw_now_ns() of the last publish, 0 before; atomic */
	uint64_t om_asked_ns;  /* latest request for OpenMetrics (at least 1), 0: none; atomic */
	uint64_t compressions; /* gzip renderings made; atomic */
	uint64_t derivations;  /* OpenMetrics renderings derived from a layout; atomic */
};

/* *p = max(*p, v), for values several threads raise. */
static void atomic_raise(uint64_t *p, uint64_t v)
{
	uint64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);

	while (cur < v &&
	       !__atomic_compare_exchange_n(p, &cur, v, true, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
}

void vw_snapshot_unref(struct vw_snapshot *s)
{
	if (!s || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	free(s->text);
	free(s->om);
	free(s->gz[0]);
	free(s->gz[1]);
	vw_prom_layout_free(s->layout);
	pthread_mutex_destroy(&s->gz_lock);
	pthread_mutex_destroy(&s->om_lock);
	free(s);
}

uint64_t vw_exposition_compressions(struct vw_exposition *x)
{
	return __atomic_load_n(&x->compressions, __ATOMIC_ACQUIRE);
}

uint64_t vw_exposition_derivations(struct vw_exposition *x)
{
	return __atomic_load_n(&x->derivations, __ATOMIC_ACQUIRE);
}

/* Whether s has an OpenMetrics rendering: published with it, or derived from its layout now
 * (once, the first request that asks; later ones find it made). */
static bool snapshot_openmetrics(struct vw_exposition *x, struct vw_snapshot *s)
{
	bool has;

	if (!s->layout) /* published whole: set before the snapshot was shared */
		return s->om != NULL;
	pthread_mutex_lock(&s->om_lock);
	if (!s->om && !s->om_failed) {
		int r = vw_prom_openmetrics_derive(s->layout, s->text, s->text_len, &s->om,
						   &s->om_len);

		if (r < 0) {
			s->om_failed = true;
			vw_error("exposition: OpenMetrics from the text: %s; served as text",
				 strerror(-r));
		} else if (x) {
			__atomic_add_fetch(&x->derivations, 1, __ATOMIC_RELEASE);
		}
	}
	has = s->om != NULL;
	pthread_mutex_unlock(&s->om_lock);
	return has;
}

/* The gzip of the snapshot's text (om false) or OpenMetrics rendering, made on first use;
 * NULL when it cannot be made (then the plain body is sent). */
static const char *snapshot_gzip(struct vw_exposition *x, struct vw_snapshot *s, bool om,
				 size_t *ret_len)
{
	const char *gz = NULL;

	pthread_mutex_lock(&s->gz_lock);
	if (!s->gz[om] && !s->gz_failed[om]) {
		int r = vw_gzip_level(om ? s->om : s->text, om ? s->om_len : s->text_len,
				      VW_EXPOSITION_GZIP_LEVEL, &s->gz[om], &s->gz_len[om]);

		s->gz_failed[om] = r < 0;
		if (r == 0)
			__atomic_add_fetch(&x->compressions, 1, __ATOMIC_RELEASE);
	}
	gz = s->gz[om];
	*ret_len = s->gz_len[om];
	pthread_mutex_unlock(&s->gz_lock);
	return gz;
}

struct vw_exposition *vw_exposition_new(void)
{
	struct vw_exposition *x = calloc(1, sizeof(*x));
	int r;

	if (!x)
		return NULL;
	r = pthread_mutex_init(&x->lock, NULL);
	if (r != 0) {
		free(x);
		errno = r;
		return NULL;
	}
	return x;
}

void vw_exposition_free(struct vw_exposition *x)
{
	if (!x)
		return;
	vw_snapshot_unref(x->cur);
	pthread_mutex_destroy(&x->lock);
	free(x);
}

static uint64_t publish(struct vw_exposition *x, char *text, size_t text_len, char *om,
			size_t om_len, struct vw_prom_layout *layout)
{
	struct vw_snapshot *s, *old;
	uint64_t gen;

	if (!x || !text) {
		free(text);
		free(om);
		vw_prom_layout_free(layout);
		return 0;
	}
	s = malloc(sizeof(*s));
	if (!s) {
		vw_error("exposition: publish snapshot: %s", strerror(ENOMEM));
		free(text);
		free(om);
		vw_prom_layout_free(layout);
		return 0;
	}
	*s = (struct vw_snapshot){.refs = 1, .text = text, .text_len = text_len, .om = om,
			       .om_len = om ? om_len : 0, .layout = om ? NULL : layout};
	if (om)
		vw_prom_layout_free(layout);
	pthread_mutex_init(&s->gz_lock, NULL);
	pthread_mutex_init(&s->om_lock, NULL);
	pthread_mutex_lock(&x->lock);
	gen = s->gen = ++x->gen;
	old = x->cur;
	x->cur = s;
	__atomic_store_n(&x->published_ns, vw_now_ns(), __ATOMIC_RELEASE);
	pthread_mutex_unlock(&x->lock);
	vw_snapshot_unref(old);
	return gen;
}

uint64_t vw_exposition_publish(struct vw_exposition *x, char *text, size_t text_len, char *om,
			       size_t om_len)
{
	return publish(x, text, text_len, om, om_len, NULL);
}

uint64_t vw_exposition_publish_layout(struct vw_exposition *x, char *text, size_t text_len,
				      struct vw_prom_layout *layout)
{
	return publish(x, text, text_len, NULL, 0, layout);
}

uint64_t vw_exposition_served(struct vw_exposition *x)
{
	return __atomic_load_n(&x->served_gen, __ATOMIC_ACQUIRE);
}

void vw_exposition_mark_served(struct vw_exposition *x, uint64_t gen)
{
	atomic_raise(&x->served_gen, gen);
}

void vw_exposition_openmetrics_asked(struct vw_exposition *x, uint64_t now_ns)
{
	if (x)
		atomic_raise(&x->om_asked_ns, VW_MAX(now_ns, 1));
}

bool vw_exposition_openmetrics_wanted(struct vw_exposition *x, uint64_t now_ns)
{
	uint64_t at = x ? __atomic_load_n(&x->om_asked_ns, __ATOMIC_ACQUIRE) : 0;

	/* A request noted after the caller read its clock counts as now. */
	return at && (now_ns <= at || now_ns - at <= VW_EXPOSITION_OM_WINDOW_NS);
}

struct vw_snapshot *vw_exposition_take(struct vw_exposition *x)
{
	struct vw_snapshot *s;

	pthread_mutex_lock(&x->lock);
	s = x->cur;
	if (s)
		__atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&x->lock);
	return s;
}

int vw_exposition_copy(struct vw_exposition *x, int om, char **ret, size_t *ret_len)
{
	struct vw_snapshot *s = vw_exposition_take(x);
	const char *src;
	size_t len;
	char *buf;

	if (!s)
		return -EAGAIN;
	om = om && snapshot_openmetrics(x, s);
	src = om ? s->om : s->text;
	len = om ? s->om_len : s->text_len;
	buf = malloc(len + 1);
	if (buf) {
		memcpy(buf, src, len);
		buf[len] = '\0';
		*ret = buf;
		*ret_len = len;
	}
	vw_snapshot_unref(s);
	return buf ? 0 : -ENOMEM;
}

bool vw_exposition_ready(struct vw_exposition *x)
{
	struct vw_snapshot *s = x ? vw_exposition_take(x) : NULL;

	vw_snapshot_unref(s);
	return s != NULL;
}

uint64_t vw_exposition_age_ns(struct vw_exposition *x)
{
	uint64_t at = x ? __atomic_load_n(&x->published_ns, __ATOMIC_ACQUIRE) : 0, now;

	if (!at)
		return UINT64_MAX;
	now = vw_now_ns();
	return now > at ? now - at : 0;
}

bool vw_snapshot_has_openmetrics(struct vw_exposition *x, struct vw_snapshot *s)
{
	return snapshot_openmetrics(x, s);
}

const char *vw_snapshot_serve(struct vw_exposition *x, struct vw_snapshot *s, bool om, bool gzip,
			      size_t *ret_len, bool *ret_gzipped)
{
	const char *gz;

	om = om && snapshot_openmetrics(x, s); /* made already: the caller asked */
	gz = gzip ? snapshot_gzip(x, s, om, ret_len) : NULL;
	*ret_gzipped = gz != NULL;
	if (gz)
		return gz;
	*ret_len = om ? s->om_len : s->text_len;
	return om ? s->om : s->text;
}

uint64_t vw_snapshot_gen(const struct vw_snapshot *s)
{
	return s->gen;
}

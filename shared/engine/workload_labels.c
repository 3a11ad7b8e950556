/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shown processes' first labels (pid to vm_id) escaped, kept from one render to the next: a
 * process in the top N is shown again and again with the same labels, which were escaped anew
 * each render (350 escapes a render for 50 processes). An entry is found by the process (PID
 * and start time) and used only while the raw values it was escaped from are the ones asked
 * for: a new comm, executable, state, container or VM escapes them again, and a PID reused by
 * another process (another start time) has its own entry. Entries a render did not use are
 * dropped at its end.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "workloads_priv.h"

#define SLOTS VW_WL_LABEL_CACHE_SLOTS
#define ENTRIES_MAX (SLOTS * 3 / 4) /* open addressing: a quarter of the slots left empty */
#define RAW_MAX 320 /* a process's raw values pid..vm_id, NULs too: at most 11+16+160+10+11+65+37 */

_Static_assert((SLOTS & (SLOTS - 1)) == 0, "a power of two");

struct wl_label_entry {
	uint32_t tgid;
	uint64_t start_time;
	uint64_t used; /* the render that last used it */
	size_t raw_len;
	char raw[RAW_MAX];           /* the values escaped, each with its NUL, one after another */
	struct vw_prom_piece piece; /* their labels, escaped */
};

struct vw_wl_label_cache {
	struct wl_label_entry *slot[SLOTS]; /* NULL: empty */
	size_t n;                            /* entries */
	size_t used;                         /* of them, used in this render */
	uint64_t render;                     /* renders begun */
};

struct vw_wl_label_cache *vw_wl_label_cache_new(void)
{
	return calloc(1, sizeof(struct vw_wl_label_cache));
}

void vw_wl_label_cache_free(struct vw_wl_label_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < SLOTS; i++)
		free(c->slot[i]);
	free(c);
}

static size_t slot_of(uint32_t tgid, uint64_t start_time)
{
	uint64_t h = (tgid ^ start_time * 0x9e3779b97f4a7c15ull) * 0xff51afd7ed558ccdull;

	return (size_t)(h >> 32) & (SLOTS - 1);
}

/* The slot holding (tgid, start_time), or the empty one where it would go. */
static struct wl_label_entry **find(struct vw_wl_label_cache *c, uint32_t tgid,
				    uint64_t start_time)
{
	for (size_t i = slot_of(tgid, start_time);; i = (i + 1) & (SLOTS - 1)) {
		struct wl_label_entry *e = c->slot[i];

		if (!e || (e->tgid == tgid && e->start_time == start_time))
			return &c->slot[i];
	}
}

void vw_wl_label_cache_begin(struct vw_wl_label_cache *c)
{
	if (c) {
		c->render++;
		c->used = 0;
	}
}

/* values[0..n) one after another with their NULs into raw; 0 when they do not fit. */
static size_t raw_values(const char *const *values, size_t n, char raw[RAW_MAX])
{
	size_t len = 0;

	for (size_t i = 0; i < n; i++) {
		size_t k = strlen(values[i]) + 1;

		if (k > RAW_MAX - len)
			return 0;
		memcpy(raw + len, values[i], k);
		len += k;
	}
	return len;
}

const struct vw_prom_piece *vw_wl_label_cache_piece(struct vw_wl_label_cache *c,
						    const struct wl_proc *p,
						    const char *const *labels, size_t n,
						    const char *const *values)
{
	char raw[RAW_MAX];
	size_t raw_len = raw_values(values, n, raw);
	struct wl_label_entry **at, *e;

	if (!c || !raw_len)
		return NULL;
	at = find(c, p->tgid, p->start_time);
	e = *at;
	if (!e) {
		if (c->n >= ENTRIES_MAX)
			return NULL; /* full: this one's labels are escaped in its render only */
		e = malloc(sizeof(*e));
		if (!e)
			return NULL;
		*at = e;
		c->n++;
		e->tgid = p->tgid;
		e->start_time = p->start_time;
		e->used = 0;
		e->raw_len = 0;
		e->piece.labels = NULL;
	}
	if (e->used != c->render) {
		e->used = c->render;
		c->used++;
	}
	if (e->piece.labels == labels && e->piece.n == n && e->raw_len == raw_len &&
	    memcmp(e->raw, raw, raw_len) == 0)
		return &e->piece; /* the same values: escaped already */
	e->raw_len = 0;
	if (!vw_prom_piece_set(&e->piece, labels, n, values))
		return NULL;
	memcpy(e->raw, raw, raw_len);
	e->raw_len = raw_len;
	return &e->piece;
}

void vw_wl_label_cache_end(struct vw_wl_label_cache *c)
{
	struct wl_label_entry *kept[ENTRIES_MAX];
	size_t n = 0;

	if (!c || c->used == c->n)
		return;
	/* Some entries unused: drop them and place the others again (no tombstones). */
	for (size_t i = 0; i < SLOTS; i++) {
		struct wl_label_entry *e = c->slot[i];

		c->slot[i] = NULL;
		if (e && e->used == c->render)
			kept[n++] = e;
		else
			free(e);
	}
	for (size_t i = 0; i < n; i++)
		*find(c, kept[i]->tgid, kept[i]->start_time) = kept[i];
	c->n = n;
}

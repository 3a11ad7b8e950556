/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fallback hash's sweep (cpu_slots.h). Each read: the entries in PID order, looked up from
 * the first PID after the one the last read stopped at, wrapping round, until the budget is
 * spent; an entry found gone becomes a candidate (its PID, start time and when), one already a
 * candidate (the same start time) and due is looked up once more: still gone, it is deleted.
 * The candidates of entries not looked up this read, or not yet due, carry over; those whose
 * entry went (its free came) or changed (another start time) or whose PID is there again are
 * dropped.
 */
#include "cpu_slots.h"

#include <errno.h>
#include <stdlib.h>

struct vw_slot_cand {
	uint32_t pid;
	uint64_t start_ns;
	uint64_t gone_ns; /* when a lookup first found it gone */
};

static int cmp_slot(const void *a, const void *b)
{
	const struct vw_slot *x = a, *y = b;

	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static int cmp_cand(const void *a, const void *b)
{
	const struct vw_slot_cand *x = a, *y = b;

	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* The candidate of entry s: its PID, with the same start time. */
static const struct vw_slot_cand *cand_find(const struct vw_slot_sweep *w, const struct vw_slot *s)
{
	struct vw_slot_cand key = { .pid = s->pid };
	const struct vw_slot_cand *c =
		w->n_cand ? bsearch(&key, w->cand, w->n_cand, sizeof(key), cmp_cand) : NULL;

	return c && c->start_ns == s->start_ns ? c : NULL;
}

static int carry(struct vw_slot_sweep *w, struct vw_slot_cand c)
{
	if (vw_array_grow((void **)&w->next, sizeof(c), w->n_next, &w->cap_next) < 0)
		return -ENOMEM;
	w->next[w->n_next++] = c;
	return 0;
}

/* The index of the first entry after the cursor's PID (0 past the last one). */
static size_t first_after(const struct vw_slot *slots, size_t n, uint32_t cursor)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (slots[mid].pid <= cursor)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n ? lo : 0;
}

int vw_slot_sweep_run(struct vw_slot_sweep *w, struct vw_slot *slots, size_t n, uint64_t now_ns)
{
	unsigned left = w->budget;
	size_t start, swap;
	struct vw_slot_cand *t;
	int removed = 0, r = 0;

	if (n > 1)
		qsort(slots, n, sizeof(*slots), cmp_slot);
	start = first_after(slots, n, w->cursor);
	w->n_next = 0;
	for (size_t k = 0; k < n; k++) {
		const struct vw_slot *s = &slots[(start + k) % n];
		const struct vw_slot_cand *c = cand_find(w, s);
		int g;

		if (c && (now_ns - c->gone_ns < w->confirm_ns || !left)) { /* not due, or no budget */
			r = carry(w, *c) < 0 ? -ENOMEM : r;
			continue;
		}
		if (!left)
			continue;
		left--;
		w->cursor = s->pid;
		g = w->gone(w->ctx, s->pid);
		if (g > 0 && c) {
			removed += w->del(w->ctx, s) == 0;
			continue;
		}
		if (g > 0)
			r = carry(w, (struct vw_slot_cand){ .pid = s->pid, .start_ns = s->start_ns,
							   .gone_ns = now_ns }) < 0
				    ? -ENOMEM
				    : r;
		else if (g < 0 && c) /* cannot tell: as it was */
			r = carry(w, *c) < 0 ? -ENOMEM : r;
	}
	if (w->n_next > 1)
		qsort(w->next, w->n_next, sizeof(*w->next), cmp_cand);
	t = w->cand, w->cand = w->next, w->next = t;
	swap = w->cap_cand, w->cap_cand = w->cap_next, w->cap_next = swap;
	w->n_cand = w->n_next;
	w->n_next = 0;
	w->removed += (uint64_t)removed;
	return r < 0 ? r : removed;
}

void vw_slot_sweep_free(struct vw_slot_sweep *w)
{
	if (!w)
		return;
	free(w->cand);
	free(w->next);
	w->cand = w->next = NULL;
	w->n_cand = w->n_next = w->cap_cand = w->cap_next = 0;
}

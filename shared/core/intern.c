/* SPDX-License-Identifier: Apache-2.0 */
#include "intern.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

struct ent {
	struct ent *next; /* in its bucket */
	uint32_t hash;
	uint32_t refs;
	char s[];
};

struct vw_intern {
	struct ent **b;
	size_t n_b; /* a power of two, or 0 before the first string */
	size_t n;
};

static const char empty[] = "";

static uint32_t hash_str(const char *s)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

struct vw_intern *vw_intern_new(void)
{
	return calloc(1, sizeof(struct vw_intern));
}

void vw_intern_free(struct vw_intern *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n_b; i++)
		for (struct ent *e = t->b[i], *next; e; e = next) {
			next = e->next;
			free(e);
		}
	free(t->b);
	free(t);
}

/* Twice the buckets once there are more strings than buckets. */
static int grow(struct vw_intern *t)
{
	size_t n_b = t->n_b ? t->n_b * 2 : 16;
	struct ent **b = calloc(n_b, sizeof(*b));

	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < t->n_b; i++)
		for (struct ent *e = t->b[i], *next; e; e = next) {
			next = e->next;
			e->next = b[e->hash & (n_b - 1)];
			b[e->hash & (n_b - 1)] = e;
		}
	free(t->b);
	t->b = b;
	t->n_b = n_b;
	return 0;
}

const char *vw_intern_get(struct vw_intern *t, const char *s)
{
	uint32_t h;
	size_t len;
	struct ent *e;

	if (!*s)
		return empty;
	h = hash_str(s);
	for (e = t->n_b ? t->b[h & (t->n_b - 1)] : NULL; e; e = e->next)
		if (e->hash == h && strcmp(e->s, s) == 0) {
			if (e->refs == UINT32_MAX)
				return NULL;
			e->refs++;
			return e->s;
		}
	if (t->n >= t->n_b && grow(t) < 0)
		return NULL;
	len = strlen(s);
	e = malloc(offsetof(struct ent, s) + len + 1);
	if (!e)
		return NULL;
	e->hash = h;
	e->refs = 1;
	memcpy(e->s, s, len + 1);
	e->next = t->b[h & (t->n_b - 1)];
	t->b[h & (t->n_b - 1)] = e;
	t->n++;
	return e->s;
}

void vw_intern_put(struct vw_intern *t, const char *s)
{
	struct ent *e, **link;

	if (!s || !*s)
		return;
	e = (struct ent *)(void *)(s - offsetof(struct ent, s));
	if (--e->refs)
		return;
	for (link = &t->b[e->hash & (t->n_b - 1)]; *link != e; link = &(*link)->next)
		;
	*link = e->next;
	t->n--;
	free(e);
}

unsigned long vw_intern_count(const struct vw_intern *t)
{
	return t->n;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Connection slots, per-source limits, request-head deadlines and eviction (conntable.h). */
#include "conntable.h"

#include <pthread.h>
#include <stdlib.h>

#include "macro.h"

struct vw_conn {
	bool used, head_done, evicted, served; /* served: a request was answered */
	int fd;
	uint64_t note; /* the request's, vw_conn_set_note() */
	struct vw_src_key src;
	uint64_t head_start_ns;
	const void *owner; /* the server it belongs to */
};

struct vw_conntable {
	pthread_mutex_t lock;
	struct vw_conn *c;
	unsigned cap, max, per_source;
};

struct vw_conntable *vw_conntable_new(unsigned max, unsigned per_source)
{
	struct vw_conntable *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->max = VW_MAX(max, 1u);
	t->per_source = VW_MAX(per_source, 1u);
	t->cap = t->max + VW_CONNTABLE_SLACK;
	t->c = calloc(t->cap, sizeof(*t->c));
	if (!t->c) {
		free(t);
		return NULL;
	}
	pthread_mutex_init(&t->lock, NULL);
	return t;
}

void vw_conntable_free(struct vw_conntable *t)
{
	if (!t)
		return;
	pthread_mutex_destroy(&t->lock);
	free(t->c);
	free(t);
}

bool vw_conntable_admit(struct vw_conntable *t, const struct vw_src_key *src,
			void (*close_fn)(int fd), bool *ret_source_full)
{
	unsigned live = 0, used = 0, same = 0;
	struct vw_conn *oldest = NULL;
	bool ok;

	*ret_source_full = false;
	pthread_mutex_lock(&t->lock);
	for (unsigned i = 0; i < t->cap; i++) {
		struct vw_conn *c = &t->c[i];

		if (!c->used)
			continue;
		used++;
		if (c->evicted)
			continue;
		live++;
		if (vw_src_key_equal(&c->src, src))
			same++;
		if (!c->head_done && (!oldest || c->head_start_ns < oldest->head_start_ns))
			oldest = c;
	}
	if (same >= t->per_source) {
		*ret_source_full = true;
		ok = false;
	} else if (live < t->max) {
		ok = used < t->cap;
	} else {
		ok = oldest && used < t->cap;
		if (ok) {
			oldest->evicted = true;
			close_fn(oldest->fd);
		}
	}
	pthread_mutex_unlock(&t->lock);
	return ok;
}

struct vw_conn *vw_conntable_add(struct vw_conntable *t, const struct vw_src_key *src, int fd,
				 uint64_t now_ns, const void *owner)
{
	struct vw_conn *found = NULL;

	pthread_mutex_lock(&t->lock);
	for (unsigned i = 0; i < t->cap && !found; i++)
		if (!t->c[i].used)
			found = &t->c[i];
	if (found)
		*found = (struct vw_conn){ .used = true, .fd = fd, .src = *src,
					   .head_start_ns = now_ns, .owner = owner };
	pthread_mutex_unlock(&t->lock);
	return found;
}

void vw_conntable_remove(struct vw_conntable *t, struct vw_conn *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&t->lock);
	*c = (struct vw_conn){ .fd = -1 };
	pthread_mutex_unlock(&t->lock);
}

void vw_conn_head_done(struct vw_conntable *t, struct vw_conn *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&t->lock);
	c->head_done = true;
	pthread_mutex_unlock(&t->lock);
}

void vw_conn_set_note(struct vw_conntable *t, struct vw_conn *c, uint64_t note)
{
	if (!c)
		return;
	pthread_mutex_lock(&t->lock);
	c->note = note;
	pthread_mutex_unlock(&t->lock);
}

uint64_t vw_conn_request_done(struct vw_conntable *t, struct vw_conn *c, uint64_t now_ns)
{
	uint64_t note;

	if (!c)
		return 0;
	pthread_mutex_lock(&t->lock);
	c->head_done = false;
	c->served = true;
	c->head_start_ns = now_ns;
	note = c->note;
	c->note = 0;
	pthread_mutex_unlock(&t->lock);
	return note;
}

unsigned vw_conntable_expire(struct vw_conntable *t, uint64_t now_ns, uint64_t deadline_ns,
			     void (*close_fn)(int fd), bool (*peer_gone)(int fd))
{
	unsigned n = 0;

	pthread_mutex_lock(&t->lock);
	for (unsigned i = 0; i < t->cap; i++) {
		struct vw_conn *c = &t->c[i];

		if (!c->used || c->head_done || c->evicted)
			continue;
		if ((now_ns < c->head_start_ns || now_ns - c->head_start_ns < deadline_ns) &&
		    !(c->served && peer_gone && peer_gone(c->fd)))
			continue;
		c->evicted = true;
		close_fn(c->fd);
		n++;
	}
	pthread_mutex_unlock(&t->lock);
	return n;
}

uint64_t vw_conntable_next_deadline(struct vw_conntable *t, uint64_t deadline_ns)
{
	uint64_t first = UINT64_MAX;

	pthread_mutex_lock(&t->lock);
	for (unsigned i = 0; i < t->cap; i++) {
		const struct vw_conn *c = &t->c[i];

		if (c->used && !c->head_done && !c->evicted)
			first = VW_MIN(first, c->head_start_ns);
	}
	pthread_mutex_unlock(&t->lock);
	return first == UINT64_MAX || first > UINT64_MAX - deadline_ns ? UINT64_MAX
									: first + deadline_ns;
}

bool vw_conntable_open(struct vw_conntable *t, int fd)
{
	bool open = false;

	pthread_mutex_lock(&t->lock);
	for (unsigned i = 0; i < t->cap && !open; i++)
		open = t->c[i].used && !t->c[i].evicted && t->c[i].fd == fd;
	pthread_mutex_unlock(&t->lock);
	return open;
}

unsigned vw_conntable_count(struct vw_conntable *t)
{
	unsigned n = 0;

	pthread_mutex_lock(&t->lock);
	for (unsigned i = 0; i < t->cap; i++)
		n += t->c[i].used;
	pthread_mutex_unlock(&t->lock);
	return n;
}

unsigned vw_conntable_close_idle(struct vw_conntable *t, const void *owner,
				 void (*close_fn)(int fd))
{
	unsigned n = 0;

	pthread_mutex_lock(&t->lock);
	for (unsigned i = 0; i < t->cap; i++) {
		struct vw_conn *c = &t->c[i];

		if (!c->used || c->owner != owner)
			continue;
		n++;
		if (c->head_done || c->evicted)
			continue;
		c->evicted = true;
		close_fn(c->fd);
	}
	pthread_mutex_unlock(&t->lock);
	return n;
}

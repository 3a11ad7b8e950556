/* SPDX-License-Identifier: Apache-2.0 */
/* Client addresses counted per IPv4 address or IPv6 /64, and per-source token buckets. */
#include "srcaddr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

void vw_src_key(const struct sockaddr *sa, struct vw_src_key *ret)
{
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	memset(ret, 0, sizeof(*ret));
	if (sa && sa->sa_family == AF_INET) {
		memcpy(ret->b, mapped, sizeof(mapped));
		memcpy(ret->b + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (sa && sa->sa_family == AF_INET6) {
		const uint8_t *a = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;

		if (memcmp(a, mapped, sizeof(mapped)) == 0)
			memcpy(ret->b, a, 16);
		else
			memcpy(ret->b, a, 8);
	}
}

bool vw_src_key_equal(const struct vw_src_key *a, const struct vw_src_key *b)
{
	return memcmp(a->b, b->b, sizeof(a->b)) == 0;
}

void vw_src_key_str(const struct vw_src_key *k, char *buf, size_t len)
{
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	char a[INET6_ADDRSTRLEN] = "?";

	if (memcmp(k->b, mapped, sizeof(mapped)) == 0) {
		inet_ntop(AF_INET, k->b + 12, a, sizeof(a));
		snprintf(buf, len, "%s", a);
	} else {
		inet_ntop(AF_INET6, k->b, a, sizeof(a));
		snprintf(buf, len, "%s/64", a);
	}
}

struct bucket {
	struct vw_src_key key;
	double tokens;
	uint64_t last_ns; /* 0: unused */
};

struct vw_src_limiter {
	pthread_mutex_t lock;
	struct bucket *b;
	size_t n;
	unsigned burst;
	uint64_t interval_ns;
};

struct vw_src_limiter *vw_src_limiter_new(size_t max_sources, unsigned burst,
					  uint64_t interval_ns)
{
	struct vw_src_limiter *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->n = VW_MAX(max_sources, (size_t)1);
	l->b = calloc(l->n, sizeof(*l->b));
	if (!l->b) {
		free(l);
		return NULL;
	}
	l->burst = burst;
	l->interval_ns = VW_MAX(interval_ns, (uint64_t)1);
	pthread_mutex_init(&l->lock, NULL);
	return l;
}

void vw_src_limiter_free(struct vw_src_limiter *l)
{
	if (!l)
		return;
	pthread_mutex_destroy(&l->lock);
	free(l->b);
	free(l);
}

/* k's bucket, refilled to now; a new one (full) in the least recently used slot. Locked. */
static struct bucket *bucket_get(struct vw_src_limiter *l, const struct vw_src_key *k,
				 uint64_t now)
{
	struct bucket *lru = &l->b[0];

	for (size_t i = 0; i < l->n; i++) {
		struct bucket *b = &l->b[i];

		if (b->last_ns && vw_src_key_equal(&b->key, k)) {
			if (now > b->last_ns)
				b->tokens += (double)(now - b->last_ns) / (double)l->interval_ns;
			b->tokens = VW_MIN(b->tokens, (double)l->burst);
			b->last_ns = VW_MAX(now, b->last_ns);
			return b;
		}
		if (b->last_ns < lru->last_ns)
			lru = b;
	}
	*lru = (struct bucket){ .key = *k, .tokens = l->burst, .last_ns = VW_MAX(now, 1) };
	return lru;
}

bool vw_src_limiter_take(struct vw_src_limiter *l, const struct vw_src_key *k, uint64_t now_ns)
{
	struct bucket *b;
	bool ok;

	pthread_mutex_lock(&l->lock);
	b = bucket_get(l, k, now_ns);
	ok = b->tokens >= 1;
	if (ok)
		b->tokens -= 1;
	pthread_mutex_unlock(&l->lock);
	return ok;
}

void vw_src_limiter_refund(struct vw_src_limiter *l, const struct vw_src_key *k)
{
	pthread_mutex_lock(&l->lock);
	for (size_t i = 0; i < l->n; i++)
		if (l->b[i].last_ns && vw_src_key_equal(&l->b[i].key, k))
			l->b[i].tokens = VW_MIN(l->b[i].tokens + 1, (double)l->burst);
	pthread_mutex_unlock(&l->lock);
}

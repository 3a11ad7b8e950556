/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Client addresses as the unit that limits count: an IPv4 address, or an IPv6 /64 (one host
 * usually has a whole /64 to pick addresses from, so counting IPv6 addresses one by one limits
 * nothing). IPv4-mapped IPv6 addresses (a dual-stack socket's IPv4 clients) count as IPv4.
 * And a per-source token bucket table of bounded size for rate limits.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct vw_src_key {
	uint8_t b[16]; /* ::ffff:a.b.c.d for IPv4; the /64 prefix then zeros for IPv6 */
};

/* The key of sa (AF_INET or AF_INET6; anything else: all zeros). */
void vw_src_key(const struct sockaddr *sa, struct vw_src_key *ret);
bool vw_src_key_equal(const struct vw_src_key *a, const struct vw_src_key *b);
/* "192.0.2.1" or "2001:db8::/64", for logs. */
void vw_src_key_str(const struct vw_src_key *k, char *buf, size_t len);

/*
 * Token buckets per source: each holds up to burst tokens, gaining one every interval_ns.
 * Bounded: when the table is full the bucket of the source seen longest ago is reused (it is
 * then full again). Thread-safe.
 */
struct vw_src_limiter;

struct vw_src_limiter *vw_src_limiter_new(size_t max_sources, unsigned burst,
					  uint64_t interval_ns);
void vw_src_limiter_free(struct vw_src_limiter *l);
/* Take one token for k at now_ns: false (nothing taken) when its bucket is empty. */
bool vw_src_limiter_take(struct vw_src_limiter *l, const struct vw_src_key *k, uint64_t now_ns);
/* Give back a token taken for k (the attempt it paid for turned out well). */
void vw_src_limiter_refund(struct vw_src_limiter *l, const struct vw_src_key *k);

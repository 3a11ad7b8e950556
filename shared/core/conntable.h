/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTTP server's open connections, so none can be held: at most max at once and
 * per_source from one source (srcaddr.h: an IPv4 address or an IPv6 /64); a request head
 * (the TLS handshake, the request line and every header) must be complete within a deadline
 * from accept, or from the end of the previous request on a kept-alive connection, as Go's
 * ReadHeaderTimeout has it, so a header line every few seconds cannot keep a connection; and
 * when all max are taken, a new connection takes the slot of the one that has waited longest
 * without sending a whole head, so held-open slots never lock a scraper out.
 *
 * Only bookkeeping: the caller closes what is to be closed (shutdown() of the entry's fd, on
 * which its server notices the end). Thread-safe.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "srcaddr.h"

struct vw_conntable;
struct vw_conn; /* one connection */

/* Entries beyond max kept for connections being evicted (closed, not yet gone). */
#define VW_CONNTABLE_SLACK 8u

struct vw_conntable *vw_conntable_new(unsigned max, unsigned per_source);
void vw_conntable_free(struct vw_conntable *t);

/*
 * May a connection from src be taken now? false when the source already has per_source
 * (*ret_source_full set) or the table is full and no connection can be evicted. When all max
 * slots are taken by connections still in their head, the one that has waited longest is
 * marked evicted and close_fn called with its fd (with the table locked: it must only
 * shutdown() it).
 */
bool vw_conntable_admit(struct vw_conntable *t, const struct vw_src_key *src,
			void (*close_fn)(int fd), bool *ret_source_full);
/* Record an admitted connection (its fd) of owner (its server); NULL when the table is full
 * (close it). */
struct vw_conn *vw_conntable_add(struct vw_conntable *t, const struct vw_src_key *src, int fd,
				 uint64_t now_ns, const void *owner);
void vw_conntable_remove(struct vw_conntable *t, struct vw_conn *c);
/* The request head is complete (the deadline no longer applies)... */
void vw_conn_head_done(struct vw_conntable *t, struct vw_conn *c);
/* A value the server ties to the request being answered (0: none), for its end to take. */
void vw_conn_set_note(struct vw_conntable *t, struct vw_conn *c, uint64_t note);
/* ... and the request ended: the next head's deadline starts now. Returns the request's note
 * (0: none, or no connection), cleared. */
uint64_t vw_conn_request_done(struct vw_conntable *t, struct vw_conn *c, uint64_t now_ns);
/*
 * Connections whose head is not complete after deadline_ns, and kept-alive connections
 * waiting for their next request whose peer_gone(fd) says the peer has closed its side (NULL:
 * not checked): each marked and its fd passed to close_fn (called with the table locked: both
 * callbacks must only look at the socket or shutdown() it). Returns how many.
 */
unsigned vw_conntable_expire(struct vw_conntable *t, uint64_t now_ns, uint64_t deadline_ns,
			     void (*close_fn)(int fd), bool (*peer_gone)(int fd));
/* When the nearest head deadline comes (the earliest head start of a connection still in its
 * head, plus deadline_ns); UINT64_MAX when no connection is in its head. */
uint64_t vw_conntable_next_deadline(struct vw_conntable *t, uint64_t deadline_ns);
/* Whether fd is a connection recorded and not marked for closing. */
bool vw_conntable_open(struct vw_conntable *t, int fd);
/* Connections recorded (tests, logs). */
unsigned vw_conntable_count(struct vw_conntable *t);
/*
 * owner's connections with no request begun (waiting for or reading a request head, not
 * yet marked): each marked and its fd passed to close_fn (table locked: shutdown() only). A
 * server being retired closes them so that it serves no new request. Returns owner's
 * connections still recorded, those just marked included (they are gone once their server
 * removes them).
 */
unsigned vw_conntable_close_idle(struct vw_conntable *t, const void *owner,
				 void (*close_fn)(int fd));

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Basic authentication against the bcrypt hashes of a web config's basic_auth_users, checked
 * with libcrypt (libxcrypt: $2a$, $2b$, $2y$) and compared in constant time. An unknown user
 * costs one bcrypt too (a dummy hash of the users' highest cost), so timing does not tell
 * which users exist. bcrypt runs outside any lock: callers bound how many run at once
 * (authpool.h runs them on a small worker pool, off the HTTP thread).
 *
 * Only successes are remembered, per user: the user is the table entry its exact name
 * selects, and the password an HMAC-SHA-256 under a per-process random key. There is no
 * concatenated key to forge and no negative or unknown-user entry to poison, which is what
 * made exporter-toolkit's CVE-2022-46146 possible. A new config gets a new, empty cache.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "webconfig.h"

struct vw_webauth;

/* users must stay valid for the object's life. NULL with errno set on failure. */
struct vw_webauth *vw_webauth_new(const struct vw_webconfig_pair *users, size_t n_users);
void vw_webauth_free(struct vw_webauth *a);
/* true when user (exact bytes) exists and pass matches its hash. Thread-safe. */
bool vw_webauth_check(struct vw_webauth *a, const char *user, const char *pass);
/* true when this exact login succeeded before (cached): one HMAC, never a bcrypt. */
bool vw_webauth_cached(struct vw_webauth *a, const char *user, const char *pass);
/* bcrypt computations so far (tests: the cache and the unknown-user cost). */
unsigned long vw_webauth_bcrypt_count(struct vw_webauth *a);
/*
 * The Basic credentials of an Authorization header value (RFC 7617): the scheme in any case
 * ("Basic", "basic", as Go's net/http takes it), one or more spaces, the base64 of
 * "user:password" (split at the first ':', the password may hold more), blanks after it
 * ignored. A new buffer holding the user (caller wipes *ret_len bytes and frees it), *ret_pass
 * pointing into it; NULL when the value is not that (another scheme, bad base64, no ':') or
 * the credentials hold a NUL byte (refused whole, never cut short at it), or on ENOMEM.
 */
char *vw_webauth_parse_basic(const char *value, const char **ret_pass, size_t *ret_len);

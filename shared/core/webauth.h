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

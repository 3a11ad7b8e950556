/* SPDX-License-Identifier: Apache-2.0 */
/* Basic authentication with bcrypt and a success-only cache that cannot be poisoned. */
#include "webauth.h"

#include <crypt.h>
#include <errno.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base64.h"
#include "macro.h"

#define DIGEST_LEN 32 /* HMAC-SHA-256 */

struct user_cache {
	bool valid;
	uint8_t digest[DIGEST_LEN]; /* of the last password that verified */
};

struct vw_webauth {
	const struct vw_webconfig_pair *users;
	size_t n_users;
	struct user_cache *cache;
	char dummy[CRYPT_OUTPUT_SIZE]; /* hashed for unknown users */
	uint8_t key[DIGEST_LEN];       /* HMAC key: random per object */
	pthread_mutex_t lock;          /* the cache and the count; never held during bcrypt */
	unsigned long n_bcrypt;
};

static bool ct_equal(const void *a, const void *b, size_t n)
{
	const volatile uint8_t *x = a, *y = b;
	uint8_t d = 0;

	for (size_t i = 0; i < n; i++)
		d |= x[i] ^ y[i];
	return d == 0;
}

/*
 * What an unknown user's password is checked against: a setting at the users' highest cost
 * with a random salt, and 31 random characters where the hash would be. bcrypt computes the
 * same rounds whatever follows the salt, and no password can be known to produce random bytes
 * (its result never counts anyway), so nothing is hashed here: making the object, at start or
 * on a reload, costs no bcrypt however high the cost.
 */
static int make_dummy(struct vw_webauth *a)
{
	static const char b64[] = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	char salt[CRYPT_GENSALT_OUTPUT_SIZE];
	uint8_t rnd[31];
	unsigned cost = 10;
	size_t n;

	for (size_t i = 0; i < a->n_users; i++)
		cost = i ? VW_MAX(cost, vw_bcrypt_hash_cost(a->users[i].value))
			 : vw_bcrypt_hash_cost(a->users[i].value);
	if (gnutls_rnd(GNUTLS_RND_NONCE, rnd, sizeof(rnd)) < 0)
		return -EIO;
	if (!crypt_gensalt_rn("$2b$", cost, NULL, 0, salt, sizeof(salt)))
		return errno ? -errno : -EINVAL;
	n = strlen(salt);
	if (n != 29 || n + sizeof(rnd) >= sizeof(a->dummy))
		return -EINVAL;
	memcpy(a->dummy, salt, n);
	for (size_t i = 0; i < sizeof(rnd); i++)
		a->dummy[n + i] = b64[rnd[i] % 64];
	a->dummy[n + sizeof(rnd)] = '\0';
	return 0;
}

struct vw_webauth *vw_webauth_new(const struct vw_webconfig_pair *users, size_t n_users)
{
	struct vw_webauth *a = calloc(1, sizeof(*a));
	int r;

	if (!a)
		return NULL;
	a->users = users;
	a->n_users = n_users;
	a->cache = calloc(n_users ? n_users : 1, sizeof(*a->cache));
	r = a->cache ? 0 : -ENOMEM;
	if (r == 0 && gnutls_rnd(GNUTLS_RND_KEY, a->key, sizeof(a->key)) < 0)
		r = -EIO;
	if (r == 0)
		r = make_dummy(a);
	if (r == 0)
		r = -pthread_mutex_init(&a->lock, NULL);
	if (r < 0) {
		free(a->cache);
		free(a);
		errno = -r;
		return NULL;
	}
	return a;
}

void vw_webauth_free(struct vw_webauth *a)
{
	if (!a)
		return;
	pthread_mutex_destroy(&a->lock);
	free(a->cache);
	explicit_bzero(a, sizeof(*a)); /* the HMAC key, the last password in crypt's scratch */
	free(a);
}

static const struct vw_webconfig_pair *find_user(struct vw_webauth *a, const char *user,
						 size_t *ret_i)
{
	for (size_t i = 0; i < a->n_users; i++) {
		if (strcmp(a->users[i].name, user) == 0) {
			*ret_i = i;
			return &a->users[i];
		}
	}
	return NULL;
}

/* bcrypt pass against hash (no lock held: callers may run it in parallel); true on a match. */
static bool bcrypt_matches(struct vw_webauth *a, const char *hash, const char *pass)
{
	struct crypt_data *cd = malloc(sizeof(*cd)); /* 32 KiB: not on a worker's stack */
	const char *out;
	size_t n = strlen(hash);
	bool ok;

	pthread_mutex_lock(&a->lock);
	a->n_bcrypt++;
	pthread_mutex_unlock(&a->lock);
	if (!cd)
		return false;
	memset(cd, 0, sizeof(*cd));
	out = crypt_rn(pass, hash, cd, sizeof(*cd));
	ok = out && out[0] != '*' && strlen(out) == n && ct_equal(out, hash, n);
	explicit_bzero(cd, sizeof(*cd)); /* the password in crypt's scratch */
	free(cd);
	return ok;
}

/* The user's table index and the password's HMAC: false when the HMAC fails. */
static bool lookup(struct vw_webauth *a, const char *user, const char *pass,
		   const struct vw_webconfig_pair **u, size_t *i, uint8_t digest[DIGEST_LEN])
{
	if (gnutls_hmac_fast(GNUTLS_MAC_SHA256, a->key, sizeof(a->key), pass, strlen(pass),
			     digest) < 0)
		return false;
	*u = find_user(a, user, i);
	return true;
}

static bool cache_hit(struct vw_webauth *a, const struct vw_webconfig_pair *u, size_t i,
		      const uint8_t digest[DIGEST_LEN])
{
	bool hit;

	pthread_mutex_lock(&a->lock);
	hit = u && a->cache[i].valid && ct_equal(a->cache[i].digest, digest, DIGEST_LEN);
	pthread_mutex_unlock(&a->lock);
	return hit;
}

bool vw_webauth_cached(struct vw_webauth *a, const char *user, const char *pass)
{
	uint8_t digest[DIGEST_LEN];
	const struct vw_webconfig_pair *u = NULL;
	size_t i = 0;
	bool hit;

	if (!a || !user || !pass || !lookup(a, user, pass, &u, &i, digest))
		return false;
	hit = cache_hit(a, u, i, digest);
	explicit_bzero(digest, sizeof(digest));
	return hit;
}

bool vw_webauth_check(struct vw_webauth *a, const char *user, const char *pass)
{
	uint8_t digest[DIGEST_LEN];
	const struct vw_webconfig_pair *u = NULL;
	size_t i = 0;
	bool ok;

	if (!a || !user || !pass || !lookup(a, user, pass, &u, &i, digest))
		return false;
	ok = cache_hit(a, u, i, digest);
	if (!ok) {
		/* An unknown user costs the same bcrypt, and its result never counts. */
		ok = bcrypt_matches(a, u ? u->value : a->dummy, pass) && u;
		if (ok) {
			pthread_mutex_lock(&a->lock);
			a->cache[i].valid = true;
			memcpy(a->cache[i].digest, digest, DIGEST_LEN);
			pthread_mutex_unlock(&a->lock);
		}
	}
	explicit_bzero(digest, sizeof(digest));
	return ok;
}

unsigned long vw_webauth_bcrypt_count(struct vw_webauth *a)
{
	unsigned long n;

	pthread_mutex_lock(&a->lock);
	n = a->n_bcrypt;
	pthread_mutex_unlock(&a->lock);
	return n;
}

char *vw_webauth_parse_basic(const char *value, const char **ret_pass, size_t *ret_len)
{
	size_t n = 0, len;
	char *cred, *colon;

	if (!value || strncasecmp(value, "Basic", 5) != 0 || value[5] != ' ')
		return NULL;
	value += 5;
	while (*value == ' ')
		value++;
	len = strlen(value);
	while (len && (value[len - 1] == ' ' || value[len - 1] == '\t'))
		len--;
	cred = vw_base64_decode(value, len, false, &n);
	if (!cred)
		return NULL;
	colon = memchr(cred, ':', n);
	if (!colon || memchr(cred, '\0', n)) {
		explicit_bzero(cred, n);
		free(cred);
		return NULL;
	}
	*colon = '\0';
	*ret_pass = colon + 1;
	*ret_len = n;
	return cred;
}

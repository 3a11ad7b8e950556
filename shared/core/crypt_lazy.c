/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcrypt (bcrypt), loaded on first use (dynlib.h): only a web config with basic_auth_users
 * checks passwords, so a daemon without one never maps it. These are the calls webauth.c makes.
 */
#include <crypt.h>
#include <errno.h>

#include "crypt_lazy.h"
#include "dynlib.h"

static struct vw_dynlib lib = VW_DYNLIB("libcrypt.so.1");

int vw_crypt_load(char *why, size_t len)
{
	return vw_dynlib_load(&lib, "libcrypt", "libcrypt1", why, len);
}

/* errno is ENOPKG when the library is missing: the callers report -errno. */
char *crypt_rn(const char *phrase, const char *setting, void *data, int size)
{
	static void *slot;
	void *f = vw_dynlib_cached(&lib, &slot, "crypt_rn");

	if (!f) {
		errno = ENOPKG;
		return NULL;
	}
	return ((__typeof__(&crypt_rn))f)(phrase, setting, data, size);
}

char *crypt_gensalt_rn(const char *prefix, unsigned long count, const char *rbytes, int nrbytes,
		       char *output, int output_size)
{
	static void *slot;
	void *f = vw_dynlib_cached(&lib, &slot, "crypt_gensalt_rn");

	if (!f) {
		errno = ENOPKG;
		return NULL;
	}
	return ((__typeof__(&crypt_gensalt_rn))f)(prefix, count, rbytes, nrbytes, output,
						   output_size);
}

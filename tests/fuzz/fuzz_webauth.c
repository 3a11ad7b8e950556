/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: basic authentication (webauth.c) on the user and password libmicrohttpd
 * decodes from an Authorization: Basic header: the input's bytes before the first ':' are the
 * user, the rest the password (each a C string: up to its first NUL, as MHD hands them over).
 * Users: "user" and "ünï" with password "pass", "nobody" with the empty password (bcrypt cost
 * 4). Properties: a check succeeds exactly for a listed user with its password, the same
 * again (the success cache), and never with a user's hash as its password (the
 * CVE-2022-46146 shape). The same bytes as an Authorization header value go through
 * vw_webauth_parse_basic(): what it accepts is a Basic value, whole (user, ':', password: no
 * NUL), and checks like the same user and password given directly.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fuzz_common.h"
#include "webauth.h"

#define HASH_PASS "$2b$04$v9EqN01B0eWuLNwfrOhby.I6G71ReSMbqXARdUFJW2nV6hMABlf9W"
#define HASH_EMPTY "$2b$04$J1NTnXlhdj3D0ojaV9SJn.6CWmxCIYusq.S4Xn9bxmZU/T5xjh1j6"

static struct vw_webconfig_pair users[] = {
	{ "user", HASH_PASS },
	{ "\xc3\xbcn\xc3\xaf", HASH_PASS },
	{ "nobody", HASH_EMPTY },
};
static const char *const passwords[] = { "pass", "pass", "" };

static struct vw_webauth *auth(void)
{
	static struct vw_webauth *a;

	if (!a && !(a = vw_webauth_new(users, ARRAY_SIZE(users))))
		abort();
	return a;
}

static bool expected(const char *user, const char *pass)
{
	for (size_t i = 0; i < ARRAY_SIZE(users); i++)
		if (strcmp(user, users[i].name) == 0)
			return strcmp(pass, passwords[i]) == 0;
	return false;
}

/* The input as a header value (up to a NUL: headers cannot hold one). */
static void parsed(const uint8_t *data, size_t size)
{
	_cleanup_free_ char *value = vw_fuzz_strdup(data, size);
	const char *pass = NULL;
	size_t len = 0;
	char *user = vw_webauth_parse_basic(value, &pass, &len);

	if (!user)
		return;
	vw_fuzz_assert(strncasecmp(value, "basic ", 6) == 0, "\"%s\" parsed: not Basic", value);
	vw_fuzz_assert(pass == user + strlen(user) + 1 && len == strlen(user) + 1 + strlen(pass),
		       "\"%s\" parsed: user and password are not the credentials whole", value);
	vw_fuzz_assert(vw_webauth_check(auth(), user, pass) == expected(user, pass),
		       "\"%s\" parsed: user \"%s\", checked wrongly", value, user);
	explicit_bzero(user, len);
	free(user);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *colon;
	_cleanup_free_ char *user = NULL, *pass = NULL;
	bool ok;

	if (size > 4096)
		return 0;
	colon = memchr(data, ':', size);
	user = vw_fuzz_strdup(data, colon ? (size_t)(colon - data) : size);
	pass = colon ? vw_fuzz_strdup(colon + 1, size - (size_t)(colon + 1 - data)) : strdup("");
	if (!pass)
		abort();
	ok = vw_webauth_check(auth(), user, pass);
	vw_fuzz_assert(ok == expected(user, pass), "user \"%s\", password \"%s\": %s", user, pass,
		       ok ? "accepted" : "refused");
	vw_fuzz_assert(vw_webauth_check(auth(), user, pass) == ok, "user \"%s\": changed its mind",
		       user);
	vw_fuzz_assert(!vw_webauth_check(auth(), user, HASH_PASS), "user \"%s\" let in by a hash",
		       user);
	parsed(data, size);
	return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: a web config reload (webconfig.c, webconfig_diff.c), what the reload
 * watcher in http.c decides on. The input is the running file, a NUL byte, then the file read
 * on a reload (no NUL: the reload is the running file cut short, at a length its last byte
 * picks, as a truncation caught mid-write). When both load, vw_webconfig_diff must call the
 * reload weaker exactly when an independent reading of the two says it drops TLS, lowers the
 * TLS minimum, stops requiring or verifying client certificates, leaves no users or opens a
 * new path; a reload against itself is "no change" and never weaker; the description is a
 * terminated string. The explicit marker is found only on a line of its own.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "webconfig.h"

#define PATH "/nonexistent-fuzz/web.yml"

static bool required(enum vw_client_auth a)
{
	return a == VW_CLIENT_AUTH_REQUIRE_ANY || a == VW_CLIENT_AUTH_REQUIRE_AND_VERIFY;
}

static bool verified(enum vw_client_auth a)
{
	return a == VW_CLIENT_AUTH_VERIFY_IF_GIVEN || a == VW_CLIENT_AUTH_REQUIRE_AND_VERIFY;
}

static bool path_in(const struct vw_webconfig *c, const char *p)
{
	for (size_t i = 0; i < c->n_excluded_paths; i++)
		if (strcmp(c->excluded_paths[i], p) == 0)
			return true;
	return false;
}

/* The oracle: is n weaker than o? */
static bool weaker(const struct vw_webconfig *o, const struct vw_webconfig *n)
{
	enum vw_client_auth oa = o->tls ? o->client_auth : VW_CLIENT_AUTH_NONE;
	enum vw_client_auth na = n->tls ? n->client_auth : VW_CLIENT_AUTH_NONE;

	if (o->tls && !n->tls)
		return true;
	if (o->tls && n->tls && n->min_version < o->min_version)
		return true;
	if ((required(oa) && !required(na)) || (verified(oa) && !verified(na)))
		return true;
	if (o->n_users && !n->n_users)
		return true;
	for (size_t i = 0; o->n_users && i < n->n_excluded_paths; i++)
		if (!path_in(o, n->excluded_paths[i]))
			return true;
	return false;
}

/* The marker on a line of its own, blanks around it allowed, by a plain scan. */
static bool marked(const char *text, size_t len)
{
	static const char m[] = VW_WEBCONFIG_WEAKER_MARKER;
	size_t start = 0;

	for (size_t i = 0; i <= len; i++) {
		size_t a = start, b = i;

		if (i < len && text[i] != '\n')
			continue;
		while (a < b && (text[a] == ' ' || text[a] == '\t'))
			a++;
		while (b > a && (text[b - 1] == ' ' || text[b - 1] == '\t' || text[b - 1] == '\r'))
			b--;
		if (b - a == sizeof(m) - 1 && memcmp(text + a, m, sizeof(m) - 1) == 0)
			return true;
		start = i + 1;
	}
	return false;
}

static struct vw_webconfig *load(const char *text, size_t len)
{
	struct vw_webconfig *c = NULL;
	char err[1024];

	if (vw_webconfig_load_buf(PATH, text, len, &c, err, sizeof(err)) < 0)
		return NULL;
	return c;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data, *nul;
	const char *next;
	size_t old_len, next_len;
	struct vw_webconfig *o, *n;
	char changes[1024];
	bool w;

	if (size > 2 * VW_WEBCONFIG_MAX_BYTES + 1)
		return 0;
	nul = memchr(data, '\0', size);
	if (nul) {
		old_len = (size_t)(nul - text);
		next = nul + 1;
		next_len = size - old_len - 1;
	} else {
		old_len = size;
		next = text;
		next_len = size ? (size_t)data[size - 1] * size / 256 : 0;
	}
	vw_fuzz_assert(vw_webconfig_allows_weaker(next, next_len) == marked(next, next_len),
		       "the marker found where a plain scan does not, or the reverse");
	o = load(text, old_len);
	if (!o)
		return 0;
	w = vw_webconfig_diff(o, o, changes, sizeof(changes));
	vw_fuzz_assert(!w && strcmp(changes, "no change") == 0, "a config against itself: %s",
		       changes);
	n = load(next, next_len);
	if (n) {
		w = vw_webconfig_diff(o, n, changes, sizeof(changes));
		vw_fuzz_assert(vw_fuzz_terminated(changes, sizeof(changes)), "unterminated");
		vw_fuzz_assert(w == weaker(o, n), "diff says %s weaker, the oracle %s: %s",
			       w ? "" : "not", weaker(o, n) ? "weaker" : "not", changes);
		vw_fuzz_assert(w == vw_webconfig_diff(o, n, NULL, 0), "the answer depends on out");
		vw_webconfig_free(n);
	}
	vw_webconfig_free(o);
	return 0;
}

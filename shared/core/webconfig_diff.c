/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a web config reload changes, and whether it weakens security: the reload watcher in
 * http.c refuses a weaker file unless it says so explicitly and has settled.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"
#include "webconfig.h"

struct diff {
	char *out;
	size_t len, used;
	bool weaker;
};

_printf_(2, 3) static void add(struct diff *d, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (d->used + 1 >= d->len)
		return;
	if (d->used) {
		n = snprintf(d->out + d->used, d->len - d->used, "; ");
		d->used = VW_MIN(d->len - 1, d->used + (size_t)VW_MAX(n, 0));
	}
	va_start(ap, fmt);
	n = vsnprintf(d->out + d->used, d->len - d->used, fmt, ap);
	va_end(ap);
	d->used = VW_MIN(d->len - 1, d->used + (size_t)VW_MAX(n, 0));
}

static bool str_differs(const char *a, const char *b)
{
	return (a == NULL) != (b == NULL) || (a && strcmp(a, b) != 0);
}

static bool cert_required(enum vw_client_auth a)
{
	return a == VW_CLIENT_AUTH_REQUIRE_ANY || a == VW_CLIENT_AUTH_REQUIRE_AND_VERIFY;
}

static bool cert_verified(enum vw_client_auth a)
{
	return a == VW_CLIENT_AUTH_VERIFY_IF_GIVEN || a == VW_CLIENT_AUTH_REQUIRE_AND_VERIFY;
}

static bool has_user(const struct vw_webconfig *c, const char *name)
{
	for (size_t i = 0; c && i < c->n_users; i++)
		if (strcmp(c->users[i].name, name) == 0)
			return true;
	return false;
}

static bool has_path(const struct vw_webconfig *c, const char *path)
{
	for (size_t i = 0; c && i < c->n_excluded_paths; i++)
		if (strcmp(c->excluded_paths[i], path) == 0)
			return true;
	return false;
}

static void diff_tls(struct diff *d, const struct vw_webconfig *o, const struct vw_webconfig *n)
{
	bool otls = o && o->tls, ntls = n && n->tls;
	enum vw_client_auth oa = otls ? o->client_auth : VW_CLIENT_AUTH_NONE;
	enum vw_client_auth na = ntls ? n->client_auth : VW_CLIENT_AUTH_NONE;

	if (otls != ntls) {
		add(d, "TLS %s", ntls ? "on" : "OFF (plain HTTP)");
		d->weaker |= otls;
	}
	if (otls && ntls && o->min_version != n->min_version) {
		add(d, "TLS minimum version 1.%u -> 1.%u", o->min_version - 10, n->min_version - 10);
		d->weaker |= n->min_version < o->min_version;
	}
	if (otls && ntls && o->max_version != n->max_version)
		add(d, "TLS maximum version 1.%u -> 1.%u", o->max_version - 10, n->max_version - 10);
	if (oa != na) {
		add(d, "client certificates %s -> %s", vw_client_auth_name(oa),
		    vw_client_auth_name(na));
		d->weaker |= (cert_required(oa) && !cert_required(na)) ||
			     (cert_verified(oa) && !cert_verified(na));
	}
	if (otls && ntls) {
		if (str_differs(o->cert_pem, n->cert_pem))
			add(d, "server certificate replaced");
		if (str_differs(o->key_pem, n->key_pem))
			add(d, "server key replaced");
		if (str_differs(o->client_ca_pem, n->client_ca_pem))
			add(d, "client CA replaced");
		/* cipher_suites, curve_preferences, prefer_server_cipher_suites (and the versions,
		 * said above) all end in the GnuTLS priority string */
		if (str_differs(o->priorities, n->priorities) && o->min_version == n->min_version &&
		    o->max_version == n->max_version)
			add(d, "TLS cipher suites or curves changed");
	}
}

static void diff_auth(struct diff *d, const struct vw_webconfig *o, const struct vw_webconfig *n)
{
	size_t on = o ? o->n_users : 0, nn = n ? n->n_users : 0;

	if (on && !nn) {
		add(d, "basic authentication OFF (no users left)");
		d->weaker = true;
	} else if (!on && nn) {
		add(d, "basic authentication on");
	}
	for (size_t i = 0; i < nn; i++) {
		if (!has_user(o, n->users[i].name))
			add(d, "user %.64s added", n->users[i].name);
		else
			for (size_t j = 0; j < on; j++)
				if (strcmp(o->users[j].name, n->users[i].name) == 0 &&
				    strcmp(o->users[j].value, n->users[i].value) != 0)
					add(d, "user %.64s: password hash changed", n->users[i].name);
	}
	for (size_t i = 0; i < on; i++)
		if (!has_user(n, o->users[i].name))
			add(d, "user %.64s removed", o->users[i].name);
	for (size_t i = 0; nn && n && i < n->n_excluded_paths; i++) {
		if (has_path(o, n->excluded_paths[i]))
			continue;
		add(d, "%.128s excluded from basic authentication", n->excluded_paths[i]);
		d->weaker |= on > 0;
	}
	for (size_t i = 0; o && i < o->n_excluded_paths; i++)
		if (!has_path(n, o->excluded_paths[i]))
			add(d, "%.128s no longer excluded from basic authentication",
			    o->excluded_paths[i]);
}

static bool headers_differ(const struct vw_webconfig *o, const struct vw_webconfig *n)
{
	size_t on = o ? o->n_headers : 0, nn = n ? n->n_headers : 0;

	if (on != nn)
		return true;
	for (size_t i = 0; i < on; i++)
		if (strcmp(o->headers[i].name, n->headers[i].name) != 0 ||
		    strcmp(o->headers[i].value, n->headers[i].value) != 0)
			return true;
	return false;
}

/* What the diff found, into d (its out may be NULL with len 0: then it only counts). */
static void diff_into(struct diff *d, const struct vw_webconfig *old, const struct vw_webconfig *new)
{
	uint64_t oi = old ? old->rate_interval_ns : 0, ni = new ? new->rate_interval_ns : 0;
	uint64_t ob = old ? old->rate_burst : 0, nb = new ? new->rate_burst : 0;

	diff_tls(d, old, new);
	diff_auth(d, old, new);
	if (headers_differ(old, new))
		add(d, "response headers changed");
	if (oi != ni || ob != nb)
		add(d, "rate limit %s", !ni ? "off" : !oi ? "on" : "changed");
}

bool vw_webconfig_same(const struct vw_webconfig *a, const struct vw_webconfig *b)
{
	char out[2];
	struct diff d = { .out = out, .len = sizeof(out) };

	diff_into(&d, a, b);
	return !d.used && !d.weaker;
}

bool vw_webconfig_diff(const struct vw_webconfig *old, const struct vw_webconfig *new,
		       char *out, size_t len)
{
	struct diff d = { .out = out, .len = len };
	if (len)
		out[0] = '\0';
	diff_into(&d, old, new);
	if (!d.used && len)
		snprintf(out, len, "no change");
	return d.weaker;
}

bool vw_webconfig_allows_weaker(const char *text, size_t len)
{
	static const char marker[] = VW_WEBCONFIG_WEAKER_MARKER;
	const char *p = text, *end = text + len;

	while (text && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e = nl ? nl : end;

		while (p < e && (*p == ' ' || *p == '\t'))
			p++;
		while (e > p && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
			e--;
		if ((size_t)(e - p) == sizeof(marker) - 1 && memcmp(p, marker, sizeof(marker) - 1) == 0)
			return true;
		p = nl ? nl + 1 : end;
	}
	return false;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * exporter-toolkit's web config (web/tls_config.go, web/handler.go) read with libyaml: one table
 * of keys per mapping, each with its own reader; then the checks Go does after unmarshalling
 * (a certificate needs a key, CAs need a client_auth_type, headers from a short allowlist) and
 * the certificate material loaded once with GnuTLS so a bad file fails here, not at a handshake.
 */
#include "webconfig.h"

#include <errno.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <libgen.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "fileio.h"
#include "macro.h"
#include "yaml_reader.h"

#define PEM_MAX_BYTES (1024 * 1024)

/* ---- Tables ---- */

static const char *const client_auth_names[] = {
	[VW_CLIENT_AUTH_NONE] = "NoClientCert",
	[VW_CLIENT_AUTH_REQUEST] = "RequestClientCert",
	[VW_CLIENT_AUTH_REQUIRE_ANY] = "RequireAnyClientCert",
	[VW_CLIENT_AUTH_VERIFY_IF_GIVEN] = "VerifyClientCertIfGiven",
	[VW_CLIENT_AUTH_REQUIRE_AND_VERIFY] = "RequireAndVerifyClientCert",
};

const char *vw_client_auth_name(enum vw_client_auth a)
{
	return (size_t)a < ARRAY_SIZE(client_auth_names) ? client_auth_names[a] : "?";
}

/* Go's tls.CipherSuites() (the ones exporter-toolkit accepts) as GnuTLS priority items. */
static const struct cipher {
	const char *go;
	const char *kx; /* NULL: a TLS 1.3 suite */
	const char *cipher;
} ciphers[] = {
	{ "TLS_RSA_WITH_AES_128_CBC_SHA", "RSA", "AES-128-CBC" },
	{ "TLS_RSA_WITH_AES_256_CBC_SHA", "RSA", "AES-256-CBC" },
	{ "TLS_RSA_WITH_AES_128_GCM_SHA256", "RSA", "AES-128-GCM" },
	{ "TLS_RSA_WITH_AES_256_GCM_SHA384", "RSA", "AES-256-GCM" },
	{ "TLS_AES_128_GCM_SHA256", NULL, "AES-128-GCM" },
	{ "TLS_AES_256_GCM_SHA384", NULL, "AES-256-GCM" },
	{ "TLS_CHACHA20_POLY1305_SHA256", NULL, "CHACHA20-POLY1305" },
	{ "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", "ECDHE-ECDSA", "AES-128-CBC" },
	{ "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", "ECDHE-ECDSA", "AES-256-CBC" },
	{ "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "ECDHE-RSA", "AES-128-CBC" },
	{ "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", "ECDHE-RSA", "AES-256-CBC" },
	{ "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "ECDHE-ECDSA", "AES-128-GCM" },
	{ "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "ECDHE-ECDSA", "AES-256-GCM" },
	{ "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "ECDHE-RSA", "AES-128-GCM" },
	{ "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "ECDHE-RSA", "AES-256-GCM" },
	{ "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-RSA", "CHACHA20-POLY1305" },
	{ "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-ECDSA", "CHACHA20-POLY1305" },
};

/* The curves exporter-toolkit knows, as GnuTLS groups. */
static const struct {
	const char *go, *gnutls;
} curves[] = {
	{ "CurveP256", "GROUP-SECP256R1" },
	{ "CurveP384", "GROUP-SECP384R1" },
	{ "CurveP521", "GROUP-SECP521R1" },
	{ "X25519", "GROUP-X25519" },
};

/* web/handler.go extraHTTPHeaders: the only settable headers, some with fixed values. */
static const struct {
	const char *name;
	const char *const values[3]; /* allowed values; none listed: any */
} settable_headers[] = {
	{ "Strict-Transport-Security", { NULL } },
	{ "X-Content-Type-Options", { "nosniff", NULL } },
	{ "X-Frame-Options", { "deny", "sameorigin", NULL } },
	{ "X-XSS-Protection", { NULL } },
	{ "Content-Security-Policy", { NULL } },
};

/* ---- The parsed file before the checks ---- */

struct tls_raw {
	char *cert, *key, *client_ca, *cert_file, *key_file, *client_ca_file, *client_auth;
	yaml_mark_t section, cert_m, key_m, ca_m, auth_m, ciphers_m, curves_m, min_m, max_m;
	char **ciphers, **curves;
	size_t n_ciphers, n_curves;
	unsigned min_version, max_version;
	bool prefer_server; /* prefer_server_cipher_suites */
};

struct parser {
	struct vw_yaml y;
	char *dir; /* of the file, for relative paths */
	struct vw_webconfig *c;
	struct tls_raw t;
	bool http2, http2_set;
};

static void strv_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static void pairs_free(struct vw_webconfig_pair *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].name);
		if (v[i].value)
			explicit_bzero(v[i].value, strlen(v[i].value));
		free(v[i].value);
	}
	free(v);
}

static void secret_free(char *s)
{
	if (s)
		explicit_bzero(s, strlen(s));
	free(s);
}

void vw_webconfig_free(struct vw_webconfig *c)
{
	if (!c)
		return;
	free(c->cert_pem);
	secret_free(c->key_pem);
	free(c->client_ca_pem);
	free(c->cert_file);
	free(c->key_file);
	free(c->client_ca_file);
	free(c->priorities);
	pairs_free(c->headers, c->n_headers);
	pairs_free(c->users, c->n_users);
	strv_free(c->excluded_paths, c->n_excluded_paths);
	strv_free(c->notes, c->n_notes);
	free(c);
}

static void tls_raw_free(struct tls_raw *t)
{
	free(t->cert);
	secret_free(t->key);
	free(t->client_ca);
	free(t->cert_file);
	free(t->key_file);
	free(t->client_ca_file);
	free(t->client_auth);
	strv_free(t->ciphers, t->n_ciphers);
	strv_free(t->curves, t->n_curves);
}

static int strv_push(char ***v, size_t *n, const char *s)
{
	size_t cap = *n; /* arrays grow one at a time: they are short */
	char *d = strdup(s);

	if (!d || vw_array_grow((void **)v, sizeof(**v), *n, &cap) < 0) {
		free(d);
		return -ENOMEM;
	}
	(*v)[(*n)++] = d;
	return 0;
}

static int note(struct parser *ps, const char *fmt, ...) _printf_(2, 3);
static int note(struct parser *ps, const char *fmt, ...)
{
	_cleanup_free_ char *s = NULL;
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (r < 0)
		return -ENOMEM;
	return strv_push(&ps->c->notes, &ps->c->n_notes, s);
}

/* ---- Values ---- */

/* vw_yaml_err() returns -EINVAL: said here too, so that the optimiser knows an error from a
 * reader (read_string()'s) is negative and leaves its output unset only then */
#define ERR(ps, m, ...) (vw_yaml_err(&(ps)->y, m, __VA_ARGS__), -EINVAL)

/* A scalar value (null reads as ""), copied into *ret (replacing it). */
static int read_string(struct parser *ps, const char *key, char **ret, yaml_mark_t *ret_mark)
{
	_cleanup_yaml_event_ yaml_event_t ev = { 0 };
	int r = vw_yaml_next(&ps->y, &ev);
	char *s;

	if (r < 0)
		return r;
	if (ev.type != YAML_SCALAR_EVENT)
		return ERR(ps, &ev.start_mark, "%s: expected a string, got a %s", key,
			   vw_yaml_kind(&ev));
	if (vw_yaml_has_nul(&ev))
		return ERR(ps, &ev.start_mark, "%s: value contains a NUL byte", key);
	s = strdup(vw_yaml_is_null(&ev) ? "" : (const char *)ev.data.scalar.value);
	if (!s)
		return -ENOMEM;
	secret_free(*ret);
	*ret = s;
	if (ret_mark)
		*ret_mark = ev.start_mark;
	return 0;
}

static int read_bool(struct parser *ps, const char *key, bool *ret)
{
	_cleanup_free_ char *s = NULL;
	yaml_mark_t m;
	int r = read_string(ps, key, &s, &m);

	if (r < 0)
		return r;
	if (vw_parse_bool(s, ret) < 0)
		return ERR(ps, &m, "%s: expected true or false, got \"%.64s\"", key, s);
	return 0;
}

/* The value after key: 1 when it starts a collection of type (in ev), 0 for null, or -errno. */
static int collection_start(struct parser *ps, const char *key, yaml_event_type_t type,
			    yaml_event_t *ev)
{
	int r = vw_yaml_next(&ps->y, ev);

	if (r < 0)
		return r;
	if (vw_yaml_is_null(ev))
		return 0;
	if (ev->type != type)
		return ERR(ps, &ev->start_mark, "%s: expected a %s, got a %s", key,
			   type == YAML_SEQUENCE_START_EVENT ? "list" : "mapping", vw_yaml_kind(ev));
	return 1;
}

/* A sequence of non-empty scalars (null: an empty list), appended to *v. */
static int read_list(struct parser *ps, const char *key, char ***v, size_t *n, yaml_mark_t *mark)
{
	_cleanup_yaml_event_ yaml_event_t ev = { 0 };
	int r = collection_start(ps, key, YAML_SEQUENCE_START_EVENT, &ev);

	*mark = ev.start_mark;
	if (r <= 0)
		return r;
	for (;;) {
		r = vw_yaml_next_scalar(&ps->y, &ev, YAML_SEQUENCE_END_EVENT, "a list item");
		if (r <= 0)
			return r;
		if (vw_yaml_has_nul(&ev) || vw_yaml_is_null(&ev))
			return ERR(ps, &ev.start_mark, "%s: empty list item", key);
		r = strv_push(v, n, (const char *)ev.data.scalar.value);
		if (r < 0)
			return r;
	}
}

typedef int (*pair_check_fn)(struct parser *ps, const char *name, const char *value,
			     const yaml_mark_t *m);

/* A mapping of string to string (headers, users); duplicates are refused, as yaml.v2 does. */
static int read_pairs(struct parser *ps, const char *key, struct vw_webconfig_pair **v,
		      size_t *n, pair_check_fn check)
{
	_cleanup_yaml_event_ yaml_event_t ev = { 0 };
	int r = collection_start(ps, key, YAML_MAPPING_START_EVENT, &ev);

	if (r <= 0)
		return r;
	for (;;) {
		_cleanup_free_ char *name = NULL, *value = NULL;
		yaml_mark_t km, vm;
		size_t cap = *n;

		r = vw_yaml_next_scalar(&ps->y, &ev, YAML_MAPPING_END_EVENT, "a key");
		if (r <= 0)
			return r;
		km = ev.start_mark;
		name = strdup((const char *)ev.data.scalar.value);
		if (!name)
			return -ENOMEM;
		if (vw_yaml_has_nul(&ev))
			return ERR(ps, &km, "%s: key contains a NUL byte", key);
		for (size_t i = 0; i < *n; i++)
			if (strcmp((*v)[i].name, name) == 0)
				return ERR(ps, &km, "%s: duplicate key \"%.64s\"", key, name);
		r = read_string(ps, name, &value, &vm);
		if (r == 0)
			r = check(ps, name, value, &vm);
		if (r == 0)
			r = vw_array_grow((void **)v, sizeof(**v), *n, &cap);
		if (r < 0) {
			secret_free(VW_TAKE_PTR(value));
			return r;
		}
		(*v)[(*n)++] = (struct vw_webconfig_pair){ VW_TAKE_PTR(name), VW_TAKE_PTR(value) };
	}
}

unsigned vw_bcrypt_hash_cost(const char *h)
{
	return (unsigned)(h[4] - '0') * 10 + (unsigned)(h[5] - '0');
}

bool vw_bcrypt_hash_valid(const char *h)
{
	static const char b64[] = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	unsigned cost;

	if (strlen(h) != 60 || h[0] != '$' || h[1] != '2' || !strchr("aby", h[2]) || h[3] != '$' ||
	    h[4] < '0' || h[4] > '9' || h[5] < '0' || h[5] > '9' || h[6] != '$')
		return false;
	cost = vw_bcrypt_hash_cost(h);
	if (cost < 4 || cost > 31)
		return false;
	return strspn(h + 7, b64) == 53;
}

static int check_user(struct parser *ps, const char *name, const char *hash, const yaml_mark_t *m)
{
	/* The hash is a secret of sorts: not quoted back. */
	if (!vw_bcrypt_hash_valid(hash))
		return ERR(ps, m,
			   "basic_auth_users: %.64s: not a bcrypt hash ($2y$, $2a$ or $2b$, cost "
			   "04-31, 60 characters; make one with: htpasswd -nBC 10 \"\" | tr -d ':\\n')",
			   name);
	/* Every failed login costs one bcrypt at this cost: 2^cost rounds, about 0.25 s at 12 on
	 * a current core and doubling with each step (31: days). */
	if (vw_bcrypt_hash_cost(hash) > VW_BCRYPT_MAX_COST)
		return ERR(ps, m,
			   "basic_auth_users: %.64s: bcrypt cost %u is above the ceiling of %u (each "
			   "login would cost %u times a cost-12 hash); make a new hash with: "
			   "htpasswd -nB -C 12 %.64s",
			   name, vw_bcrypt_hash_cost(hash), VW_BCRYPT_MAX_COST,
			   1u << (vw_bcrypt_hash_cost(hash) - 12), name);
	return 0;
}

static int check_header(struct parser *ps, const char *name, const char *value,
			const yaml_mark_t *m)
{
	for (size_t i = 0; i < ARRAY_SIZE(settable_headers); i++) {
		const char *const *allowed = settable_headers[i].values;

		if (strcmp(settable_headers[i].name, name) != 0)
			continue;
		if (!allowed[0])
			return strpbrk(value, "\r\n") ? ERR(ps, m, "headers: %s: line break in "
							    "value", name) : 0;
		for (size_t j = 0; allowed[j]; j++)
			if (strcmp(allowed[j], value) == 0)
				return 0;
		return ERR(ps, m, "headers: invalid value for %s: \"%.64s\" (expected %s%s%s)",
			   name, value, allowed[0], allowed[1] ? " or " : "",
			   allowed[1] ? allowed[1] : "");
	}
	return ERR(ps, m,
		   "headers: HTTP header \"%.64s\" can not be configured (only "
		   "Strict-Transport-Security, X-Content-Type-Options, X-Frame-Options, "
		   "X-XSS-Protection and Content-Security-Policy can, as in exporter-toolkit)",
		   name);
}

static int read_version(struct parser *ps, const char *key, unsigned *ret, yaml_mark_t *m)
{
	static const char *const names[] = { "TLS10", "TLS11", "TLS12", "TLS13" };
	_cleanup_free_ char *s = NULL;
	int r = read_string(ps, key, &s, m);

	if (r < 0)
		return r;
	for (unsigned i = 0; i < ARRAY_SIZE(names); i++) {
		if (strcmp(s, names[i]) == 0) {
			*ret = 10 + i;
			return 0;
		}
	}
	return ERR(ps, m, "%s: unknown TLS version \"%.64s\" (expected TLS10, TLS11, TLS12 or "
		   "TLS13)", key, s);
}

static int read_duration(struct parser *ps, const char *key, uint64_t *ret)
{
	_cleanup_free_ char *s = NULL;
	yaml_mark_t m;
	int r = read_string(ps, key, &s, &m);

	if (r < 0)
		return r;
	if (!*s) {
		*ret = 0;
		return 0;
	}
	if (vw_parse_duration(s, ret) < 0)
		return ERR(ps, &m, "%s: invalid duration \"%.64s\" (such as 500ms, 1s, 1m)", key,
			   s);
	return 0;
}

static int read_uint(struct parser *ps, const char *key, uint64_t *ret)
{
	_cleanup_free_ char *s = NULL;
	yaml_mark_t m;
	char *end;
	int r = read_string(ps, key, &s, &m);

	if (r < 0)
		return r;
	errno = 0;
	*ret = strtoull(s, &end, 10);
	if (!*s || *end || errno || s[0] == '-' || *ret > INT32_MAX)
		return ERR(ps, &m, "%s: expected a whole number, got \"%.64s\"", key, s);
	return 0;
}

/* ---- Mappings ---- */

struct key {
	const char *name;
	int (*read)(struct parser *ps, const yaml_event_t *key);
};

/* The value after key must be a mapping (null: empty) of keys from table. */
static int read_mapping(struct parser *ps, const char *section, const struct key *table,
			size_t n_table)
{
	_cleanup_yaml_event_ yaml_event_t ev = { 0 };
	char seen[16] = { 0 };
	int r = collection_start(ps, *section ? section : "the file", YAML_MAPPING_START_EVENT,
				 &ev);

	if (r <= 0)
		return r;
	for (;;) {
		const char *name;
		size_t i;

		r = vw_yaml_next_scalar(&ps->y, &ev, YAML_MAPPING_END_EVENT, "a key");
		if (r <= 0)
			return r;
		name = (const char *)ev.data.scalar.value;
		for (i = 0; i < n_table && strcmp(table[i].name, name) != 0; i++)
			;
		if (i == n_table)
			return ERR(ps, &ev.start_mark, "unknown key \"%.64s\"%s%s", name,
				   *section ? " in " : "", section);
		if (seen[i]++)
			return ERR(ps, &ev.start_mark, "duplicate key \"%s\"%s%s", name,
				   *section ? " in " : "", section);
		r = table[i].read(ps, &ev);
		if (r < 0)
			return r;
	}
}

#define KEYNAME(ev) ((const char *)(ev)->data.scalar.value)
#define TLS_AT(ps, off, type) ((type *)((char *)&(ps)->t + (off)))

/* tls_server_config's keys: what each holds in struct tls_raw. */
static const struct tls_field {
	const char *name;
	enum { F_STRING, F_LIST, F_VERSION, F_BOOL } kind;
	size_t field, mark, count;
} tls_fields[] = {
#define S(n, f, m) { n, F_STRING, offsetof(struct tls_raw, f), offsetof(struct tls_raw, m), 0 }
	S("cert", cert, cert_m),
	S("key", key, key_m),
	S("client_ca", client_ca, ca_m),
	S("cert_file", cert_file, cert_m),
	S("key_file", key_file, key_m),
	S("client_auth_type", client_auth, auth_m),
	S("client_ca_file", client_ca_file, ca_m),
#undef S
	{ "cipher_suites", F_LIST, offsetof(struct tls_raw, ciphers),
	  offsetof(struct tls_raw, ciphers_m), offsetof(struct tls_raw, n_ciphers) },
	{ "curve_preferences", F_LIST, offsetof(struct tls_raw, curves),
	  offsetof(struct tls_raw, curves_m), offsetof(struct tls_raw, n_curves) },
	{ "min_version", F_VERSION, offsetof(struct tls_raw, min_version),
	  offsetof(struct tls_raw, min_m), 0 },
	{ "max_version", F_VERSION, offsetof(struct tls_raw, max_version),
	  offsetof(struct tls_raw, max_m), 0 },
	{ "prefer_server_cipher_suites", F_BOOL, offsetof(struct tls_raw, prefer_server), 0, 0 },
};

static int k_tls_field(struct parser *ps, const yaml_event_t *k)
{
	const char *name = KEYNAME(k);
	const struct tls_field *f = tls_fields;

	while (strcmp(f->name, name) != 0)
		f++; /* read_mapping only calls this for names in tls_keys, all in tls_fields */
	switch (f->kind) {
	case F_STRING:
		return read_string(ps, name, TLS_AT(ps, f->field, char *),
				   TLS_AT(ps, f->mark, yaml_mark_t));
	case F_LIST:
		return read_list(ps, name, TLS_AT(ps, f->field, char **),
				 TLS_AT(ps, f->count, size_t), TLS_AT(ps, f->mark, yaml_mark_t));
	case F_VERSION:
		return read_version(ps, name, TLS_AT(ps, f->field, unsigned),
				    TLS_AT(ps, f->mark, yaml_mark_t));
	default:
		return read_bool(ps, name, TLS_AT(ps, f->field, bool));
	}
}

static int k_allowed_sans(struct parser *ps, const yaml_event_t *k)
{
	return ERR(ps, &k->start_mark,
		   "client_allowed_sans is not supported by virtwatt: remove it (with "
		   "client_auth_type: RequireAndVerifyClientCert, any certificate from "
		   "client_ca_file is accepted)");
}

static const struct key tls_keys[] = {
	{ "cert", k_tls_field },
	{ "key", k_tls_field },
	{ "client_ca", k_tls_field },
	{ "cert_file", k_tls_field },
	{ "key_file", k_tls_field },
	{ "client_auth_type", k_tls_field },
	{ "client_ca_file", k_tls_field },
	{ "cipher_suites", k_tls_field },
	{ "curve_preferences", k_tls_field },
	{ "min_version", k_tls_field },
	{ "max_version", k_tls_field },
	{ "prefer_server_cipher_suites", k_tls_field },
	{ "client_allowed_sans", k_allowed_sans },
};

static int k_http2(struct parser *ps, const yaml_event_t *k)
{
	ps->http2_set = true;
	return read_bool(ps, KEYNAME(k), &ps->http2);
}
static int k_headers(struct parser *ps, const yaml_event_t *k)
{
	return read_pairs(ps, KEYNAME(k), &ps->c->headers, &ps->c->n_headers, check_header);
}

static const struct key http_keys[] = {
	{ "http2", k_http2 },
	{ "headers", k_headers },
};

static int k_interval(struct parser *ps, const yaml_event_t *k)
{
	return read_duration(ps, KEYNAME(k), &ps->c->rate_interval_ns);
}
static int k_burst(struct parser *ps, const yaml_event_t *k)
{
	return read_uint(ps, KEYNAME(k), &ps->c->rate_burst);
}

static const struct key rate_keys[] = {
	{ "interval", k_interval },
	{ "burst", k_burst },
};

static int k_tls(struct parser *ps, const yaml_event_t *k)
{
	ps->t.section = k->start_mark;
	return read_mapping(ps, "tls_server_config", tls_keys, ARRAY_SIZE(tls_keys));
}
static int k_http(struct parser *ps, const yaml_event_t *k)
{
	(void)k;
	return read_mapping(ps, "http_server_config", http_keys, ARRAY_SIZE(http_keys));
}
static int k_rate(struct parser *ps, const yaml_event_t *k)
{
	(void)k;
	return read_mapping(ps, "rate_limit", rate_keys, ARRAY_SIZE(rate_keys));
}
static int k_users(struct parser *ps, const yaml_event_t *k)
{
	return read_pairs(ps, KEYNAME(k), &ps->c->users, &ps->c->n_users, check_user);
}
static int k_excluded(struct parser *ps, const yaml_event_t *k)
{
	yaml_mark_t m;

	return read_list(ps, KEYNAME(k), &ps->c->excluded_paths, &ps->c->n_excluded_paths, &m);
}

static const struct key top_keys[] = {
	{ "tls_server_config", k_tls },
	{ "http_server_config", k_http },
	{ "basic_auth_users", k_users },
	{ "basic_auth_excluded_paths", k_excluded },
	{ "rate_limit", k_rate },
};

/* STREAM_START, at most one document holding the top mapping (or nothing), STREAM_END. */
static int read_stream(struct parser *ps)
{
	_cleanup_yaml_event_ yaml_event_t ev = { 0 };
	int r = vw_yaml_next(&ps->y, &ev); /* STREAM_START */

	if (r == 0)
		r = vw_yaml_next(&ps->y, &ev); /* DOCUMENT_START or STREAM_END */
	if (r < 0 || ev.type == YAML_STREAM_END_EVENT)
		return r;
	r = read_mapping(ps, "", top_keys, ARRAY_SIZE(top_keys));
	if (r == 0)
		r = vw_yaml_next(&ps->y, &ev); /* DOCUMENT_END */
	if (r == 0)
		r = vw_yaml_next(&ps->y, &ev);
	if (r == 0 && ev.type != YAML_STREAM_END_EVENT)
		return ERR(ps, &ev.start_mark, "only one YAML document is allowed");
	return r;
}

/* ---- Checks after parsing ---- */

/* path made absolute against the config file's directory; NULL for "". */
static int resolve(struct parser *ps, const char *path, char **ret)
{
	*ret = NULL;
	if (!path || !*path)
		return 0;
	if (path[0] == '/')
		*ret = strdup(path);
	else if (asprintf(ret, "%s/%s", ps->dir, path) < 0)
		*ret = NULL;
	return *ret ? 0 : -ENOMEM;
}

/* PEM from file (when set) or inline text; *ret_file gets the resolved path. */
static int load_pem(struct parser *ps, const char *key, const char *file, const char *inline_pem,
		    const yaml_mark_t *m, char **ret, char **ret_file)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r = resolve(ps, file, ret_file);

	if (r < 0)
		return r;
	if (!*ret_file) {
		*ret = strdup(inline_pem);
		return *ret ? 0 : -ENOMEM;
	}
	/* A regular file only: a FIFO in its place would block every reload (and the stop) */
	r = vw_read_regular_at(AT_FDCWD, *ret_file, PEM_MAX_BYTES - 1, &buf, &len);
	if (r == -EINVAL)
		return ERR(ps, m, "%s_file: cannot read %s: not a regular file", key, *ret_file);
	if (r < 0)
		return ERR(ps, m, "%s_file: cannot read %s: %s", key, *ret_file, strerror(-r));
	if (strlen(buf) != len)
		return ERR(ps, m, "%s_file: %s contains a NUL byte: not PEM", key, *ret_file);
	*ret = VW_TAKE_PTR(buf);
	return 0;
}

/* How many certificates a PEM holds: >= 0, or a GnuTLS error. */
static int pem_certificates(const char *pem)
{
	gnutls_datum_t d = { (unsigned char *)pem, (unsigned)strlen(pem) };
	gnutls_x509_crt_t *crts = NULL;
	unsigned n = 0;
	int r = gnutls_x509_crt_list_import2(&crts, &n, &d, GNUTLS_X509_FMT_PEM, 0);

	for (unsigned i = 0; r >= 0 && i < n; i++)
		gnutls_x509_crt_deinit(crts[i]);
	gnutls_free(crts);
	return r < 0 ? r : (int)n;
}

/* The certificate chain and key must load, and belong together. */
static int check_keypair(struct parser *ps)
{
	struct vw_webconfig *c = ps->c;
	gnutls_certificate_credentials_t cred;
	gnutls_datum_t cert = { (unsigned char *)c->cert_pem, (unsigned)strlen(c->cert_pem) };
	gnutls_datum_t key = { (unsigned char *)c->key_pem, (unsigned)strlen(c->key_pem) };
	int r;

	/* The chain alone first: GnuTLS 3.7 leaks the certificate it was reading when
	 * gnutls_certificate_set_x509_key_mem() meets a malformed one (bad base64). */
	r = pem_certificates(c->cert_pem);
	if (r < 0)
		goto refused;
	if (gnutls_certificate_allocate_credentials(&cred) < 0)
		return -ENOMEM;
	r = gnutls_certificate_set_x509_key_mem(cred, &cert, &key, GNUTLS_X509_FMT_PEM);
	gnutls_certificate_free_credentials(cred);
refused:
	if (r < 0)
		return ERR(ps, &ps->t.key_m, "cannot use the certificate and key%s%s%s%s: %s",
			   c->cert_file ? " " : "", c->cert_file ? c->cert_file : "",
			   c->key_file ? " and " : "", c->key_file ? c->key_file : "",
			   gnutls_strerror(r));
	return 0;
}

static int check_client_ca(struct parser *ps)
{
	struct vw_webconfig *c = ps->c;
	int r = pem_certificates(c->client_ca_pem);

	if (r <= 0)
		return ERR(ps, &ps->t.ca_m, "client CA%s%s: no certificate could be read%s%s",
			   c->client_ca_file ? " " : "", c->client_ca_file ? c->client_ca_file : "",
			   r < 0 ? ": " : "", r < 0 ? gnutls_strerror(r) : "");
	return 0;
}

static int parse_client_auth(struct parser *ps)
{
	const char *s = ps->t.client_auth;

	ps->c->client_auth = VW_CLIENT_AUTH_NONE;
	if (!s || !*s)
		return 0;
	if (strcmp(s, "RequireClientCert") == 0) { /* exporter-toolkit's old name */
		ps->c->client_auth = VW_CLIENT_AUTH_REQUIRE_ANY;
		return 0;
	}
	for (size_t i = 0; i < ARRAY_SIZE(client_auth_names); i++) {
		if (strcmp(s, client_auth_names[i]) == 0) {
			ps->c->client_auth = (enum vw_client_auth)i;
			return 0;
		}
	}
	return ERR(ps, &ps->t.auth_m,
		   "client_auth_type: invalid \"%.64s\" (expected NoClientCert, RequestClientCert, "
		   "RequireAnyClientCert, VerifyClientCertIfGiven or RequireAndVerifyClientCert)",
		   s);
}

static int check_client_auth(struct parser *ps)
{
	struct vw_webconfig *c = ps->c;
	int r = parse_client_auth(ps);
	bool verify = c->client_auth == VW_CLIENT_AUTH_VERIFY_IF_GIVEN ||
		      c->client_auth == VW_CLIENT_AUTH_REQUIRE_AND_VERIFY;

	if (r < 0)
		return r;
	if (c->client_ca_pem && c->client_auth == VW_CLIENT_AUTH_NONE)
		return ERR(ps, &ps->t.ca_m,
			   "client CAs have been configured without a client_auth_type (use "
			   "RequireAndVerifyClientCert)");
	if (verify && !c->client_ca_pem)
		return ERR(ps, &ps->t.auth_m,
			   "client_auth_type %s needs client_ca_file (or client_ca) to verify "
			   "against; virtwatt does not trust the system's CAs for clients",
			   vw_client_auth_name(c->client_auth));
	if (c->client_auth == VW_CLIENT_AUTH_REQUEST || c->client_auth == VW_CLIENT_AUTH_REQUIRE_ANY)
		return note(ps, "client_auth_type %s: client certificates are not verified; only "
			    "RequireAndVerifyClientCert authenticates clients",
			    vw_client_auth_name(c->client_auth));
	return 0;
}

static int append(char **s, const char *fmt, ...) _printf_(2, 3);
static int append(char **s, const char *fmt, ...)
{
	_cleanup_free_ char *tail = NULL, *old = *s;
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&tail, fmt, ap);
	va_end(ap);
	if (r < 0 || asprintf(s, "%s%s", old ? old : "", tail) < 0) {
		*s = VW_TAKE_PTR(old);
		return -ENOMEM;
	}
	return 0;
}

/* Add "+item" to s unless it is there already. */
static int append_item(char **s, const char *item)
{
	_cleanup_free_ char *needle = NULL;

	if (asprintf(&needle, ":+%s:", item) < 0)
		return -ENOMEM;
	if (*s && strstr(*s, needle))
		return 0;
	return append(s, "+%s:", item);
}

/* "-CIPHER-ALL:+AES-128-GCM:...:-KX-ALL:+ECDHE-RSA:..." for the listed Go suites. */
static int cipher_priorities(struct parser *ps, char **ret)
{
	_cleanup_free_ char *cph = strdup(":"), *kx = strdup(":");
	bool tls13 = ps->c->max_version >= 13;
	int r = cph && kx ? 0 : -ENOMEM;

	for (size_t i = 0; r == 0 && i < ps->t.n_ciphers; i++) {
		const struct cipher *cs = NULL;

		for (size_t j = 0; j < ARRAY_SIZE(ciphers); j++)
			if (strcmp(ciphers[j].go, ps->t.ciphers[i]) == 0)
				cs = &ciphers[j];
		if (!cs)
			return ERR(ps, &ps->t.ciphers_m,
				   "cipher_suites: unknown cipher \"%.80s\" (Go's tls.CipherSuites() "
				   "names are accepted, such as "
				   "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256; insecure suites are not)",
				   ps->t.ciphers[i]);
		r = append_item(&cph, cs->cipher);
		if (r == 0 && cs->kx)
			r = append_item(&kx, cs->kx);
	}
	/* Go never restricts TLS 1.3 suites; GnuTLS has one cipher list for both versions. */
	for (size_t j = 0; r == 0 && tls13 && j < ARRAY_SIZE(ciphers); j++)
		if (!ciphers[j].kx)
			r = append_item(&cph, ciphers[j].cipher);
	if (r == 0)
		r = asprintf(ret, ":-CIPHER-ALL%s-KX-ALL%s", cph, kx) < 0 ? -ENOMEM : 0;
	if (r == 0 && (*ret)[strlen(*ret) - 1] == ':')
		(*ret)[strlen(*ret) - 1] = '\0';
	if (r == 0 && tls13)
		r = note(ps, "cipher_suites: mapped to GnuTLS ciphers and key exchanges; the TLS 1.3 "
			 "AEAD ciphers stay enabled, as Go never restricts TLS 1.3 suites");
	return r;
}

static int curve_priorities(struct parser *ps, char **ret)
{
	_cleanup_free_ char *s = strdup(":-GROUP-ALL:");

	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < ps->t.n_curves; i++) {
		size_t j;

		for (j = 0; j < ARRAY_SIZE(curves) && strcmp(curves[j].go, ps->t.curves[i]); j++)
			;
		if (j == ARRAY_SIZE(curves))
			return ERR(ps, &ps->t.curves_m,
				   "curve_preferences: unknown curve \"%.64s\" (expected CurveP256, "
				   "CurveP384, CurveP521 or X25519)", ps->t.curves[i]);
		if (append_item(&s, curves[j].gnutls) < 0)
			return -ENOMEM;
	}
	s[strlen(s) - 1] = '\0';
	*ret = VW_TAKE_PTR(s);
	return 0;
}

/* The GnuTLS priority string: versions, server precedence, ciphers, groups; then tried. */
static int build_priorities(struct parser *ps)
{
	struct tls_raw *t = &ps->t;
	struct vw_webconfig *c = ps->c;
	_cleanup_free_ char *cph = NULL, *grp = NULL;
	gnutls_priority_t prio;
	const char *errpos = NULL;
	int r;

	if (t->min_version < 12) {
		r = note(ps, "min_version TLS1%u raised to TLS12: virtwatt serves TLS 1.2 and 1.3 only",
			 t->min_version - 10);
		if (r < 0)
			return r;
	}
	c->min_version = VW_MAX(t->min_version, 12u);
	c->max_version = t->max_version;
	if (c->max_version < 12)
		return ERR(ps, &t->max_m, "max_version: virtwatt serves TLS 1.2 and 1.3 only");
	if (c->min_version > c->max_version)
		return ERR(ps, &t->min_m, "min_version TLS%u is above max_version TLS%u",
			   t->min_version, c->max_version);
	r = t->n_ciphers ? cipher_priorities(ps, &cph) : 0;
	if (r == 0 && t->n_curves)
		r = curve_priorities(ps, &grp);
	if (r < 0)
		return r;
	if (asprintf(&c->priorities, "NORMAL%s:-VERS-ALL%s%s%s%s",
		     t->prefer_server ? ":%SERVER_PRECEDENCE" : "",
		     c->min_version <= 12 ? ":+VERS-TLS1.2" : "",
		     c->max_version >= 13 ? ":+VERS-TLS1.3" : "", cph ? cph : "", grp ? grp : "") < 0) {
		c->priorities = NULL;
		return -ENOMEM;
	}
	r = gnutls_priority_init(&prio, c->priorities, &errpos);
	if (r < 0)
		return ERR(ps, t->n_ciphers ? &t->ciphers_m : &t->section,
			   "GnuTLS refuses the resulting priorities \"%s\": %s", c->priorities,
			   gnutls_strerror(r));
	gnutls_priority_deinit(prio);
	return 0;
}

static bool tls_wanted(const struct tls_raw *t)
{
	const char *const v[] = { t->cert, t->key, t->client_ca, t->cert_file, t->key_file,
				  t->client_ca_file, t->client_auth };

	for (size_t i = 0; i < ARRAY_SIZE(v); i++)
		if (v[i] && *v[i])
			return true;
	return false;
}

static bool set(const char *s)
{
	return s && *s;
}

static int check_tls(struct parser *ps)
{
	struct tls_raw *t = &ps->t;
	struct vw_webconfig *c = ps->c;
	int r;

	if (!tls_wanted(t))
		return t->n_ciphers || t->n_curves
			       ? note(ps, "tls_server_config has no certificate: TLS is off, its "
				      "other settings are ignored")
			       : 0;
	c->tls = true;
	if (!set(t->cert) && !set(t->cert_file))
		return ERR(ps, &t->section, "tls_server_config: missing one of cert or cert_file");
	if (!set(t->key) && !set(t->key_file))
		return ERR(ps, &t->section, "tls_server_config: missing one of key or key_file");
	r = load_pem(ps, "cert", t->cert_file, t->cert, &t->cert_m, &c->cert_pem, &c->cert_file);
	if (r == 0)
		r = load_pem(ps, "key", t->key_file, t->key, &t->key_m, &c->key_pem, &c->key_file);
	if (r == 0 && (set(t->client_ca) || set(t->client_ca_file)))
		r = load_pem(ps, "client_ca", t->client_ca_file, t->client_ca, &t->ca_m,
			     &c->client_ca_pem, &c->client_ca_file);
	if (r == 0)
		r = check_keypair(ps);
	if (r == 0 && c->client_ca_pem)
		r = check_client_ca(ps);
	if (r == 0)
		r = check_client_auth(ps);
	if (r == 0)
		r = build_priorities(ps);
	return r;
}

static int check_all(struct parser *ps)
{
	int r = check_tls(ps);

	if (r == 0 && ps->http2_set && ps->http2)
		r = note(ps, "http_server_config.http2: HTTP/2 is not supported; serving HTTP/1.1");
	if (r == 0 && ps->c->rate_interval_ns && !ps->c->rate_burst)
		r = note(ps, "rate_limit: burst 0 refuses every request (429), as in exporter-toolkit");
	if (r == 0 && ps->c->n_excluded_paths && !ps->c->n_users)
		r = note(ps, "basic_auth_excluded_paths has no effect without basic_auth_users");
	return r;
}

/* From the file at path, or from buf (len bytes) when buf is not NULL. */
static int load(const char *path, const char *buf, size_t len, struct vw_webconfig **ret,
		char *err, size_t errlen)
{
	struct parser ps = { .t = { .min_version = 12, .max_version = 13, .prefer_server = true } };
	_cleanup_free_ char *copy = path ? strdup(path) : NULL;
	int r;

	if (!copy)
		return -ENOMEM;
	ps.dir = dirname(copy);
	ps.c = calloc(1, sizeof(*ps.c));
	if (!ps.c)
		return -ENOMEM;
	r = buf ? vw_yaml_open_buf(&ps.y, path, "web config file", buf, len,
				   VW_WEBCONFIG_MAX_BYTES, err, errlen)
		: vw_yaml_open(&ps.y, path, "web config file", VW_WEBCONFIG_MAX_BYTES, err, errlen);
	if (r == 0)
		r = read_stream(&ps);
	if (r == 0)
		r = check_all(&ps);
	vw_yaml_close(&ps.y);
	tls_raw_free(&ps.t);
	if (r < 0) {
		if (r == -ENOMEM && err && errlen)
			snprintf(err, errlen, "%s: out of memory", path);
		vw_webconfig_free(ps.c);
		return r;
	}
	*ret = ps.c;
	return 0;
}

int vw_webconfig_load(const char *path, struct vw_webconfig **ret, char *err, size_t errlen)
{
	return load(path, NULL, 0, ret, err, errlen);
}

int vw_webconfig_load_buf(const char *path, const char *buf, size_t len,
			  struct vw_webconfig **ret, char *err, size_t errlen)
{
	return load(path, buf ? buf : "", len, ret, err, errlen);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: the exporter-toolkit web config reader (webconfig.c over yaml_reader.c),
 * GnuTLS checks included. The input is the file; it lives in a directory that does not exist,
 * so relative certificate paths fail to read. Properties of an accepted file: users carry valid
 * bcrypt hashes under distinct names, headers are settable ones without line breaks, TLS
 * settings are complete and within TLS 1.2..1.3, a verifying client_auth_type has its CAs; and
 * the file written back from the parsed settings reads back to the same settings.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config.h"
#include "fuzz_common.h"
#include "webconfig.h"

#define PATH "/nonexistent-fuzz/web.yml"

static const char *const settable[] = { "Strict-Transport-Security", "X-Content-Type-Options",
					"X-Frame-Options", "X-XSS-Protection",
					"Content-Security-Policy" };

/* s as a YAML double-quoted scalar: escapes for '"', '\', controls and every non-ASCII
 * character (YAML folds NEL, LS and PS inside quotes as line breaks). */
static void quoted(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', f);
	while (*p) {
		unsigned cp = *p, need = 0;

		if (*p >= 0xf0)
			cp = *p & 0x07, need = 3;
		else if (*p >= 0xe0)
			cp = *p & 0x0f, need = 2;
		else if (*p >= 0xc0)
			cp = *p & 0x1f, need = 1;
		p++;
		for (; need && *p; need--, p++)
			cp = (cp << 6) | (*p & 0x3f);
		if (cp == '"' || cp == '\\')
			fprintf(f, "\\%c", cp);
		else if (cp >= 0x20 && cp < 0x7f)
			fputc((int)cp, f);
		else if (cp < 0x100)
			fprintf(f, "\\x%02x", cp);
		else if (cp < 0x10000)
			fprintf(f, "\\u%04x", cp);
		else
			fprintf(f, "\\U%08x", cp);
	}
	fputc('"', f);
}

/* Explicit keys ("? key" then ": value"): an implicit key is limited to 1024 characters. */
static void pairs(FILE *f, const char *indent, const struct vw_webconfig_pair *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "%s? ", indent);
		quoted(f, v[i].name);
		fprintf(f, "\n%s: ", indent);
		quoted(f, v[i].value);
		fputc('\n', f);
	}
}

/* A PEM as its file's path when it came from one, else inline. */
static void tls_pem(FILE *f, const char *key, const char *file, const char *pem)
{
	if (!pem)
		return;
	fprintf(f, "  %s%s: ", key, file ? "_file" : "");
	quoted(f, file ? file : pem);
	fputc('\n', f);
}

/* The parsed settings as a web config file. */
static char *write_back(const struct vw_webconfig *c, size_t *len)
{
	char *text = NULL, dur[VW_DURATION_STRLEN];
	FILE *f = open_memstream(&text, len);

	if (!f)
		abort();
	if (c->tls) {
		fputs("tls_server_config:\n", f);
		tls_pem(f, "cert", c->cert_file, c->cert_pem);
		tls_pem(f, "key", c->key_file, c->key_pem);
		tls_pem(f, "client_ca", c->client_ca_file, c->client_ca_pem);
		fprintf(f, "  client_auth_type: %s\n", vw_client_auth_name(c->client_auth));
		fprintf(f, "  min_version: TLS%u\n  max_version: TLS%u\n", c->min_version,
			c->max_version);
	}
	if (c->n_headers) {
		fputs("http_server_config:\n  headers:\n", f);
		pairs(f, "    ", c->headers, c->n_headers);
	}
	if (c->n_users) {
		fputs("basic_auth_users:\n", f);
		pairs(f, "  ", c->users, c->n_users);
	}
	if (c->n_excluded_paths) {
		fputs("basic_auth_excluded_paths:\n", f);
		for (size_t i = 0; i < c->n_excluded_paths; i++) {
			fputs("  - ", f);
			quoted(f, c->excluded_paths[i]);
			fputc('\n', f);
		}
	}
	if (vw_format_duration(c->rate_interval_ns, dur, sizeof(dur)) < 0)
		abort();
	fprintf(f, "rate_limit:\n  interval: %s\n  burst: %" PRIu64 "\n", dur, c->rate_burst);
	if (fclose(f) != 0)
		abort();
	return text;
}

static bool str_eq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static bool pairs_eq(const struct vw_webconfig_pair *a, const struct vw_webconfig_pair *b,
		     size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(a[i].name, b[i].name) || strcmp(a[i].value, b[i].value))
			return false;
	return true;
}

static void check_same(const struct vw_webconfig *a, const struct vw_webconfig *b,
		       const char *text)
{
	bool same = a->tls == b->tls && str_eq(a->cert_pem, b->cert_pem) &&
		    str_eq(a->key_pem, b->key_pem) && str_eq(a->client_ca_pem, b->client_ca_pem) &&
		    a->client_auth == b->client_auth && a->min_version == b->min_version &&
		    a->max_version == b->max_version && a->n_headers == b->n_headers &&
		    pairs_eq(a->headers, b->headers, a->n_headers) && a->n_users == b->n_users &&
		    pairs_eq(a->users, b->users, a->n_users) &&
		    a->n_excluded_paths == b->n_excluded_paths &&
		    a->rate_interval_ns == b->rate_interval_ns && a->rate_burst == b->rate_burst;

	for (size_t i = 0; same && i < a->n_excluded_paths; i++)
		same = strcmp(a->excluded_paths[i], b->excluded_paths[i]) == 0;
	vw_fuzz_assert(same, "written back, the settings read differently:\n%s", text);
}

static void check_settings(const struct vw_webconfig *c)
{
	for (size_t i = 0; i < c->n_users; i++) {
		vw_fuzz_assert(vw_bcrypt_hash_valid(c->users[i].value), "user %s: bad hash",
			       c->users[i].name);
		for (size_t j = 0; j < i; j++)
			vw_fuzz_assert(strcmp(c->users[i].name, c->users[j].name) != 0,
				       "user %s twice", c->users[i].name);
	}
	for (size_t i = 0; i < c->n_headers; i++) {
		bool known = false;

		for (size_t j = 0; j < ARRAY_SIZE(settable); j++)
			known = known || strcmp(c->headers[i].name, settable[j]) == 0;
		vw_fuzz_assert(known, "header %s is not settable", c->headers[i].name);
		vw_fuzz_assert(!strpbrk(c->headers[i].value, "\r\n"), "header %s: line break",
			       c->headers[i].name);
	}
	vw_fuzz_assert(c->rate_burst <= INT32_MAX, "burst %" PRIu64, c->rate_burst);
	if (!c->tls) {
		vw_fuzz_assert(!c->cert_pem && !c->key_pem && !c->client_ca_pem && !c->priorities,
			       "TLS material without TLS");
		return;
	}
	vw_fuzz_assert(c->cert_pem && c->key_pem && c->priorities, "TLS without its material");
	vw_fuzz_assert(c->min_version >= 12 && c->min_version <= c->max_version &&
			       c->max_version <= 13,
		       "TLS versions %u..%u", c->min_version, c->max_version);
	vw_fuzz_assert(c->client_auth <= VW_CLIENT_AUTH_REQUIRE_AND_VERIFY, "client_auth %d",
		       (int)c->client_auth);
	if (c->client_auth == VW_CLIENT_AUTH_VERIFY_IF_GIVEN ||
	    c->client_auth == VW_CLIENT_AUTH_REQUIRE_AND_VERIFY)
		vw_fuzz_assert(c->client_ca_pem, "client certificates verified against nothing");
	if (c->client_ca_pem)
		vw_fuzz_assert(c->client_auth != VW_CLIENT_AUTH_NONE, "client CAs unused");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vw_webconfig *c = NULL, *again = NULL;
	_cleanup_free_ char *text = NULL;
	char err[1024];
	size_t len;
	int r;

	if (size > VW_WEBCONFIG_MAX_BYTES + 1)
		return 0;
	r = vw_webconfig_load_buf(PATH, (const char *)data, size, &c, err, sizeof(err));
	if (r < 0) {
		vw_fuzz_assert(r == -ENOMEM || strncmp(err, PATH ":", strlen(PATH ":")) == 0 ||
				       strstr(err, PATH),
			       "error %d without the file's name: %s", r, err);
		return 0;
	}
	check_settings(c);
	text = write_back(c, &len);
	r = vw_webconfig_load_buf(PATH, text, len, &again, err, sizeof(err));
	vw_fuzz_assert(r == 0, "written back, the settings do not load: %s\n%s", err, text);
	check_same(c, again, text);
	vw_webconfig_free(again);
	vw_webconfig_free(c);
	return 0;
}

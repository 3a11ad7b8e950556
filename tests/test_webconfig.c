/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The exporter-toolkit web config parser (every key, every refusal with line:column) and basic
 * authentication (bcrypt, the unknown-user cost, the success-only cache, CVE-2022-46146's
 * poisoning inputs). Certificates and hashes are made at test time (tls_fixture.c).
 */
#include "vw_test.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"
#include "macro.h"
#include "tls_fixture.h"
#include "webauth.h"
#include "webconfig.h"
#include "webconfig_watch.h"

static struct tls_fixture tf;

/* Write text as dir/web.yml and load it. */
static int load(const char *text, struct vw_webconfig **ret, char *err, size_t errlen)
{
	char path[512];

	assert_int_equal(vw_fixture_write(tf.dir, "web.yml", text, 0), 0);
	err[0] = '\0';
	return vw_webconfig_load(tls_fixture_path(&tf, "web.yml", path, sizeof(path)), ret, err,
				 errlen);
}

static struct vw_webconfig *load_ok(const char *text)
{
	struct vw_webconfig *wc = NULL;
	char err[1024];

	if (load(text, &wc, err, sizeof(err)) < 0)
		fail_msg("load failed: %s\n---\n%s", err, text);
	return wc;
}

/* The file is refused with "web.yml:LINE:COL: ...needle...". */
static void load_bad(const char *text, int line, int col, const char *needle)
{
	struct vw_webconfig *wc = NULL;
	char err[1024], where[64];

	if (load(text, &wc, err, sizeof(err)) == 0)
		fail_msg("accepted, expected \"%s\":\n%s", needle, text);
	snprintf(where, sizeof(where), "web.yml:%d:%d: ", line, col);
	if (!strstr(err, where) || !strstr(err, needle))
		fail_msg("error \"%s\", expected %s...%s\n---\n%s", err, where, needle, text);
	assert_null(wc);
}

static bool has_note(const struct vw_webconfig *wc, const char *needle)
{
	for (size_t i = 0; i < wc->n_notes; i++)
		if (strstr(wc->notes[i], needle))
			return true;
	return false;
}

/* exporter-toolkit's docs/web-config.yml, as node_exporter users copy it. */
static const char node_exporter_example[] =
	"# TLS and basic authentication configuration example.\n"
	"#\n"
	"# Additionally, a certificate and a key file are needed.\n"
	"tls_server_config:\n"
	"  cert_file: server.crt\n"
	"  key_file: server.key\n"
	"\n"
	"# Usernames and passwords required to connect.\n"
	"# Passwords are hashed with bcrypt: https://github.com/prometheus/exporter-toolkit/blob/"
	"master/docs/web-configuration.md#about-bcrypt.\n"
	"basic_auth_users:\n"
	"  alice: $2y$10$mDwo.lAisC94iLAyP81MCesa29IzH37oigHC/42V2pdJlUprsJPze\n"
	"  bob: $2y$10$hLqFl9jSjoAAy95Z/zw8Ye8wkdMBM8c5Bn1ptYqP/AXyV0.oy0S8m\n"
	"\n"
	"# Exclude /-/healthy and /-/ready from basic authentication\n"
	"basic_auth_excluded_paths:\n"
	"- /-/healthy\n"
	"- /-/ready\n";

static void test_node_exporter_example(void **state)
{
	struct vw_webconfig *wc = load_ok(node_exporter_example);
	char path[512];

	(void)state;
	assert_true(wc->tls);
	assert_string_equal(wc->cert_file, tls_fixture_path(&tf, "server.crt", path, sizeof(path)));
	assert_string_equal(wc->key_file, tls_fixture_path(&tf, "server.key", path, sizeof(path)));
	assert_non_null(strstr(wc->cert_pem, "BEGIN CERTIFICATE"));
	assert_non_null(strstr(wc->key_pem, "PRIVATE KEY"));
	assert_null(wc->client_ca_pem);
	assert_int_equal(wc->client_auth, VW_CLIENT_AUTH_NONE);
	assert_int_equal(wc->min_version, 12);
	assert_int_equal(wc->max_version, 13);
	assert_string_equal(wc->priorities,
			    "NORMAL:%SERVER_PRECEDENCE:-VERS-ALL:+VERS-TLS1.2:+VERS-TLS1.3");
	assert_int_equal(wc->n_users, 2);
	assert_string_equal(wc->users[0].name, "alice");
	assert_string_equal(wc->users[1].name, "bob");
	assert_true(vw_bcrypt_hash_valid(wc->users[1].value));
	assert_int_equal(wc->n_excluded_paths, 2);
	assert_string_equal(wc->excluded_paths[1], "/-/ready");
	assert_int_equal(wc->n_notes, 0);
	vw_webconfig_free(wc);
}

static void test_every_key(void **state)
{
	char hash[128], text[4096];
	struct vw_webconfig *wc;

	(void)state;
	assert_int_equal(tls_fixture_bcrypt("pw", hash, sizeof(hash)), 0);
	snprintf(text, sizeof(text),
		 "tls_server_config:\n"
		 "  cert_file: server.crt\n"
		 "  key_file: server.key\n"
		 "  client_auth_type: RequireAndVerifyClientCert\n"
		 "  client_ca_file: ca.crt\n"
		 "  min_version: TLS12\n"
		 "  max_version: TLS13\n"
		 "  cipher_suites:\n"
		 "    - TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384\n"
		 "    - TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA\n"
		 "    - TLS_AES_128_GCM_SHA256\n"
		 "  prefer_server_cipher_suites: false\n"
		 "  curve_preferences: [X25519, CurveP256]\n"
		 "http_server_config:\n"
		 "  http2: true\n"
		 "  headers:\n"
		 "    Content-Security-Policy: \"default-src 'self'\"\n"
		 "    X-Frame-Options: sameorigin\n"
		 "    X-Content-Type-Options: nosniff\n"
		 "    X-XSS-Protection: \"1; mode=block\"\n"
		 "    Strict-Transport-Security: max-age=31536000\n"
		 "basic_auth_users:\n"
		 "  carol: '%s'\n"
		 "basic_auth_excluded_paths: [/healthz]\n"
		 "rate_limit:\n"
		 "  interval: 1s\n"
		 "  burst: 5\n",
		 hash);
	wc = load_ok(text);
	assert_int_equal(wc->client_auth, VW_CLIENT_AUTH_REQUIRE_AND_VERIFY);
	assert_non_null(strstr(wc->client_ca_pem, "BEGIN CERTIFICATE"));
	assert_string_equal(wc->priorities,
			    "NORMAL:-VERS-ALL:+VERS-TLS1.2:+VERS-TLS1.3:-CIPHER-ALL:+AES-256-GCM:"
			    "+AES-128-CBC:+AES-128-GCM:+CHACHA20-POLY1305:-KX-ALL:+ECDHE-ECDSA:"
			    "+ECDHE-RSA:-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1");
	assert_int_equal(wc->n_headers, 5);
	assert_string_equal(wc->headers[0].value, "default-src 'self'");
	assert_string_equal(wc->users[0].value, hash);
	assert_int_equal(wc->rate_interval_ns, 1000000000ULL);
	assert_int_equal(wc->rate_burst, 5);
	assert_true(has_note(wc, "HTTP/2 is not supported"));
	assert_true(has_note(wc, "TLS 1.3 AEAD"));
	vw_webconfig_free(wc);
}

/* "  key: |" and text indented below it. */
static void yaml_block(FILE *f, const char *key, char *text)
{
	fprintf(f, "  %s: |\n", key);
	for (char *l = strtok(text, "\n"); l; l = strtok(NULL, "\n"))
		fprintf(f, "    %s\n", l);
}

static void test_inline_and_defaults(void **state)
{
	char path[512], text[16384];
	char *cert = vw_fixture_slurp(tls_fixture_path(&tf, "server.crt", path, sizeof(path)), NULL);
	char *key = vw_fixture_slurp(tls_fixture_path(&tf, "server.key", path, sizeof(path)), NULL);
	char *ca = vw_fixture_slurp(tls_fixture_path(&tf, "ca.crt", path, sizeof(path)), NULL);
	struct vw_webconfig *wc;

	(void)state;
	assert_non_null(cert);
	assert_non_null(key);
	assert_non_null(ca);
	/* YAML literal blocks, indented. */
	FILE *f = fmemopen(text, sizeof(text), "w");
	fputs("tls_server_config:\n", f);
	yaml_block(f, "cert", cert);
	yaml_block(f, "key", key);
	yaml_block(f, "client_ca", ca);
	fputs("  client_auth_type: RequireClientCert\n  min_version: TLS10\n", f);
	fputc('\0', f);
	fclose(f);
	wc = load_ok(text);
	assert_true(wc->tls);
	assert_null(wc->cert_file);
	assert_null(wc->key_file);
	assert_int_equal(wc->client_auth, VW_CLIENT_AUTH_REQUIRE_ANY); /* the old name */
	assert_int_equal(wc->min_version, 12);
	assert_true(has_note(wc, "raised to TLS12"));
	assert_true(has_note(wc, "not verified"));
	vw_webconfig_free(wc);

	/* Empty file, empty document, sections left null: nothing on. */
	wc = load_ok("");
	assert_false(wc->tls);
	assert_int_equal(wc->n_users, 0);
	vw_webconfig_free(wc);
	wc = load_ok("---\ntls_server_config:\nbasic_auth_users:\nhttp_server_config: {}\n");
	assert_false(wc->tls);
	vw_webconfig_free(wc);
	/* Only versions: no certificate, no TLS (as exporter-toolkit), said once. */
	wc = load_ok("tls_server_config:\n  max_version: TLS12\n  cipher_suites: "
		     "[TLS_AES_128_GCM_SHA256]\n");
	assert_false(wc->tls);
	assert_true(has_note(wc, "TLS is off"));
	vw_webconfig_free(wc);
	free(cert);
	free(key);
	free(ca);
}

/* A tls_server_config that loads (a certificate and its key): refusals add a line to it. */
#define TLS "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"

static void test_errors(void **state)
{
	/* Each file is refused with "web.yml:LINE:COL: ...NEEDLE...". */
	static const struct {
		const char *text;
		int line, col;
		const char *needle;
	} bad[] = {
		{ "tls_server_config:\n  cert_file: server.crt\n  key_fil: server.key\n",
		  3, 3, "unknown key \"key_fil\" in tls_server_config" },
		{ "basic_auth_user:\n  a: b\n", 1, 1, "unknown key \"basic_auth_user\"" },
		{ TLS "  min_version: TLS14\n", 4, 16, "unknown TLS version \"TLS14\"" },
		{ TLS "  max_version: TLS11\n", 4, 16, "TLS 1.2 and 1.3 only" },
		{ TLS "  min_version: TLS13\n  max_version: TLS12\n", 4, 16, "above max_version" },
		{ "tls_server_config:\n  cert_file: server.crt\n  key_file: missing.key\n",
		  3, 13, "key_file: cannot read" },
		{ "tls_server_config:\n  cert_file: server.crt\n",
		  1, 1, "missing one of key or key_file" },
		{ "tls_server_config:\n  key_file: server.key\n  cert_file: \"\"\n",
		  1, 1, "missing one of cert or cert_file" },
		{ "tls_server_config:\n  cert_file: server.crt\n  key_file: client.key\n",
		  3, 13, "cannot use the certificate and key" },
		{ "basic_auth_users:\n  alice: secret\n", 2, 10, "not a bcrypt hash" },
		/* A valid-looking hash of another scheme. */
		{ "basic_auth_users:\n  alice: $1$abcdefgh$0123456789012345678901\n",
		  2, 10, "not a bcrypt hash" },
		{ TLS "  cipher_suites:\n  - TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256\n"
		  "  - TLS_FOO_WITH_BAR\n",
		  5, 3, "unknown cipher \"TLS_FOO_WITH_BAR\"" },
		{ TLS "  cipher_suites: [TLS_RSA_WITH_RC4_128_SHA]\n", 4, 18, "insecure suites" },
		{ TLS "  curve_preferences: [CurveP256, CurveP1024]\n",
		  4, 22, "unknown curve \"CurveP1024\"" },
		{ "http_server_config:\n  headers:\n    Authorization: x\n",
		  3, 20, "\"Authorization\" can not be configured" },
		{ "http_server_config:\n  headers:\n    Content-Type: text/html\n",
		  3, 19, "\"Content-Type\" can not be configured" },
		{ "http_server_config:\n  headers:\n    X-Frame-Options: allow\n",
		  3, 22, "invalid value for X-Frame-Options" },
		{ "http_server_config:\n  http2: maybe\n", 2, 10, "expected true or false" },
		{ TLS "  client_ca_file: ca.crt\n", 4, 19, "without a client_auth_type" },
		{ TLS "  client_auth_type: RequireAndVerifyClientCert\n",
		  4, 21, "needs client_ca_file" },
		{ TLS "  client_auth_type: Always\n",
		  4, 21, "client_auth_type: invalid \"Always\"" },
		{ TLS "  client_auth_type: RequireAndVerifyClientCert\n"
		  "  client_ca_file: server.key\n",
		  5, 19, "no certificate could be read" },
		{ TLS "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n"
		  "  client_allowed_sans: [a]\n",
		  6, 3, "client_allowed_sans is not supported" },
		{ "rate_limit:\n  interval: 5x\n", 2, 13, "invalid duration" },
		{ "rate_limit:\n  burst: -1\n", 2, 10, "expected a whole number" },
		{ "tls_server_config: &a\n  cert_file: x\n",
		  1, 20, "anchors (&a) are not supported" },
		{ "tls_server_config:\n  cert_file: [a]\n", 2, 14, "expected a string" },
		{ "basic_auth_excluded_paths: /x\n", 1, 28, "expected a list" },
		{ "tls_server_config:\n  cert_file: a\n  cert_file: b\n", 3, 3, "duplicate key" },
		{ "- a\n", 1, 1, "expected a mapping" },
		{ "a: b\n---\nc: d\n", 1, 1, "unknown key \"a\"" },
		{ "tls_server_config:\n  cert_file: \"a\n", 3, 1, "YAML syntax error" },
	};
	char text[1024], hash[128];

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		load_bad(bad[i].text, bad[i].line, bad[i].col, bad[i].needle);
	/* A bcrypt hash whose cost is out of range. */
	assert_int_equal(tls_fixture_bcrypt("x", hash, sizeof(hash)), 0);
	hash[4] = '3', hash[5] = '2';
	snprintf(text, sizeof(text), "basic_auth_users:\n  bob: '%s'\n", hash);
	load_bad(text, 2, 8, "not a bcrypt hash");
	/* Above the ceiling (what htpasswd -B -C 31 makes): refused, saying how to fix it. */
	hash[4] = '3', hash[5] = '1';
	snprintf(text, sizeof(text), "basic_auth_users:\n  bob: '%s'\n", hash);
	load_bad(text, 2, 8, "bob: bcrypt cost 31 is above the ceiling of 14");
	load_bad(text, 2, 8, "make a new hash with: htpasswd -nB -C 12 bob");
	hash[4] = '1', hash[5] = '5';
	snprintf(text, sizeof(text), "basic_auth_users:\n  bob: '%s'\n", hash);
	load_bad(text, 2, 8, "bcrypt cost 15 is above the ceiling of 14");
	hash[5] = '4';
	snprintf(text, sizeof(text), "basic_auth_users:\n  bob: '%s'\n", hash);
	vw_webconfig_free(load_ok(text));
	assert_int_equal(tls_fixture_bcrypt("x", hash, sizeof(hash)), 0);
	snprintf(text, sizeof(text), "basic_auth_users:\n  bob: '%s'\n  bob: '%s'\n", hash, hash);
	load_bad(text, 3, 3, "duplicate key \"bob\"");
}

/*
 * A certificate whose base64 breaks is refused, and nothing leaks (ASan): GnuTLS 3.7 leaks the
 * certificate it was reading when gnutls_certificate_set_x509_key_mem() meets one. Found by
 * tests/fuzz/fuzz_webconfig.
 */
static void test_bad_base64_certificate(void **state)
{
	char path[512], text[16384];
	char *cert = vw_fixture_slurp(tls_fixture_path(&tf, "server.crt", path, sizeof(path)), NULL);
	int lines = 0;
	FILE *f;

	(void)state;
	assert_non_null(cert);
	for (const char *p = cert; *p; p++)
		lines += *p == '\n';
	strchr(cert, '\n')[10] = ','; /* in the first line of base64 */
	f = fmemopen(text, sizeof(text), "w");
	assert_non_null(f);
	fputs("tls_server_config:\n", f);
	yaml_block(f, "cert", cert);
	fputs("  key_file: server.key\n", f);
	fputc('\0', f);
	fclose(f);
	load_bad(text, lines + 3, 13, "cannot use the certificate and key");
	free(cert);
}

static void test_missing_file(void **state)
{
	struct vw_webconfig *wc = NULL;
	char err[512];

	(void)state;
	assert_int_equal(vw_webconfig_load("/nonexistent/web.yml", &wc, err, sizeof(err)),
			 -ENOENT);
	assert_non_null(strstr(err, "cannot read web config file /nonexistent/web.yml"));
}

static void on_alarm(int sig)
{
	(void)sig; /* only interrupts a blocked open (no SA_RESTART) */
}

static uint64_t since_ms(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)((t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000);
}

/*
 * A FIFO where the web config or a file it names should be (a careless deployment, or the file
 * replaced while watched): refused at once, never waited on. The old code blocked in open() for
 * ever: at start, or in the HTTP housekeeping thread at the next reload poll (request-header
 * deadlines no longer enforced, reloads stopped, and the daemon's stop waiting on that thread).
 */
static void test_fifo_refused(void **state)
{
	struct sigaction sa = { .sa_handler = on_alarm }, old_sa;
	char *dir = vw_fixture_mkdtemp("webfifo");
	struct vw_webconfig *wc = NULL, *got = NULL;
	struct vw_webconfig_watch *w;
	char path[512], fifo[512], err[512], changes[256];
	struct timespec t0;
	bool weaker = false;

	(void)state;
	assert_non_null(dir);
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(sigaction(SIGALRM, &sa, &old_sa), 0);
	alarm(3); /* the old code's open returns EINTR then, rather than hang the test */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* the web config itself */
	assert_int_equal(vw_webconfig_load(fifo, &wc, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "not a regular file"));
	/* a certificate it names */
	assert_int_equal(vw_fixture_write(dir, "web.yml",
					  "tls_server_config:\n  cert_file: fifo\n  key_file: fifo\n",
					  0),
			 0);
	snprintf(path, sizeof(path), "%s/web.yml", dir);
	assert_true(vw_webconfig_load(path, &wc, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "not a regular file"));
	/* the watched file replaced by a FIFO: the previous configuration kept */
	assert_int_equal(vw_fixture_write(dir, "web.yml", "basic_auth_users: {}\n", 0), 0);
	w = vw_webconfig_watch_new(path, 0);
	assert_non_null(w);
	assert_int_equal(vw_webconfig_watch_load(w, &wc), 0);
	assert_int_equal(rename(fifo, path), 0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(vw_webconfig_watch_poll(w, wc, &got, changes, sizeof(changes),
							 &weaker),
				 0);
		assert_null(got);
	}
	alarm(0);
	assert_int_equal(sigaction(SIGALRM, &old_sa, NULL), 0);
	assert_true(since_ms(&t0) < 1000);
	vw_webconfig_watch_free(w);
	vw_webconfig_free(wc);
	vw_fixture_rm(dir);
}

/* ---- Basic authentication ---- */

static struct vw_webconfig_pair *users_make(char hashes[][128], const char *const *names,
					    const char *const *pws, size_t n)
{
	struct vw_webconfig_pair *u = calloc(n, sizeof(*u));

	for (size_t i = 0; i < n; i++) {
		assert_int_equal(tls_fixture_bcrypt(pws[i], hashes[i], 128), 0);
		u[i] = (struct vw_webconfig_pair){ (char *)names[i], hashes[i] };
	}
	return u;
}

static void test_auth(void **state)
{
	const char *names[] = { "alice", "bob" }, *pws[] = { "alice-pw", "bob:pw" };
	char hashes[2][128];
	struct vw_webconfig_pair *u = users_make(hashes, names, pws, 2);
	struct vw_webauth *a = vw_webauth_new(u, 2);
	unsigned long n;

	(void)state;
	assert_non_null(a);
	assert_true(vw_webauth_check(a, "alice", "alice-pw"));
	assert_true(vw_webauth_check(a, "bob", "bob:pw"));
	n = vw_webauth_bcrypt_count(a);
	/* The same good login again: cached, no bcrypt. */
	assert_true(vw_webauth_check(a, "alice", "alice-pw"));
	assert_int_equal(vw_webauth_bcrypt_count(a), n);
	/* Wrong password, unknown user, empty and swapped credentials: each costs one bcrypt. */
	assert_false(vw_webauth_check(a, "alice", "alice-pW"));
	assert_int_equal(vw_webauth_bcrypt_count(a), n + 1);
	assert_false(vw_webauth_check(a, "mallory", "alice-pw"));
	assert_int_equal(vw_webauth_bcrypt_count(a), n + 2);
	assert_false(vw_webauth_check(a, "", ""));
	assert_false(vw_webauth_check(a, "alice", ""));
	assert_false(vw_webauth_check(a, "Alice", "alice-pw"));
	assert_false(vw_webauth_check(a, "alice", "bob:pw")); /* another user's password */
	assert_false(vw_webauth_check(a, "bob", "alice-pw"));
	assert_false(vw_webauth_check(a, "alice", "alice-pw\n"));
	assert_false(vw_webauth_check(a, "alice", "alice-p"));
	assert_int_equal(vw_webauth_bcrypt_count(a), n + 9);
	/* The hash itself is not a password. */
	assert_false(vw_webauth_check(a, "alice", hashes[0]));
	vw_webauth_free(a);
	free(u);
}

/*
 * Making the checker costs no bcrypt, whatever the users' cost: the unknown users' dummy hash
 * is not computed (it was, at start and on every reload: cost 13 took seconds). An unknown
 * user still costs one bcrypt, at the users' highest cost.
 */
static void test_new_costs_no_bcrypt(void **state)
{
	struct vw_webconfig_pair u[] = {
		{ "alice", "$2b$13$abcdefghijklmnopqrstuOabcdefghijklmnopqrstuvwxyz01234" },
		{ "bob", "$2y$04$abcdefghijklmnopqrstuOabcdefghijklmnopqrstuvwxyz01234" },
	};
	struct timespec t0, t1;
	struct vw_webauth *a;
	double s;

	(void)state;
	assert_true(vw_bcrypt_hash_valid(u[0].value));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	a = vw_webauth_new(u, 2);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_non_null(a);
	assert_int_equal(vw_webauth_bcrypt_count(a), 0);
	s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	/* One bcrypt at cost 13 is 0.5 s on a fast core; nothing is computed now. */
	if (s > 0.1)
		fail_msg("vw_webauth_new took %.3f s with a cost-13 user", s);
	/* The unknown user's check runs at cost 13: far slower than bob's cost 4. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_false(vw_webauth_check(a, "mallory", "x"));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	assert_int_equal(vw_webauth_bcrypt_count(a), 1);
	if (s < 0.05)
		fail_msg("an unknown user's check took %.3f s: not bcrypt at cost 13", s);
	vw_webauth_free(a);
}

/*
 * exporter-toolkit's TestByPassBasicAuthVuln (CVE-2022-46146) and variations: someone who
 * knows a hash (and a valid login of another user) tries to make a cache entry that a later
 * request of theirs would hit. Every attempt must fail, before and after good logins.
 */
static void test_cache_cannot_be_poisoned(void **state)
{
	const char *names[] = { "alice", "bob" }, *pws[] = { "alice-secret", "bob-pw" };
	char hashes[2][128], user[256], pass[256];
	struct vw_webconfig_pair *u = users_make(hashes, names, pws, 2);
	struct vw_webauth *a = vw_webauth_new(u, 2);
	const char *h = hashes[0];

	(void)state;
	assert_non_null(a);
	for (int round = 0; round < 2; round++) {
		/* The CVE's two steps, with alice's hash. */
		snprintf(user, sizeof(user), "alice%s", h);
		assert_false(vw_webauth_check(a, user, "fakepassword"));
		snprintf(pass, sizeof(pass), "%sfakepassword", h);
		assert_false(vw_webauth_check(a, "alice", pass));
		/* Concatenations of a good login split differently. */
		assert_false(vw_webauth_check(a, "bo", "bbob-pw"));
		assert_false(vw_webauth_check(a, "bobb", "ob-pw"));
		snprintf(user, sizeof(user), "alice:%s:", hashes[1]);
		assert_false(vw_webauth_check(a, user, "bob-pw"));
		snprintf(pass, sizeof(pass), "%s:bob-pw", hashes[1]);
		assert_false(vw_webauth_check(a, "alice", pass));
		assert_false(vw_webauth_check(a, "alice", "bob-pw"));
		assert_false(vw_webauth_check(a, "alice", h));
		/* Now good logins are cached; the next round must still refuse everything. */
		assert_true(vw_webauth_check(a, "bob", "bob-pw"));
		assert_true(vw_webauth_check(a, "alice", "alice-secret"));
	}
	vw_webauth_free(a);
	free(u);
}

static int setup(void **state)
{
	(void)state;
	return tls_fixture_init(&tf);
}

static int teardown(void **state)
{
	(void)state;
	tls_fixture_fini(&tf);
	return 0;
}

/* What makes a reload: the same settings in another file are the same (no reload, the server
 * goes on); any setting that differs, cipher suites included, is not. */
static void test_same_settings(void **state)
{
	struct vw_webconfig *a = load_ok(node_exporter_example), *b = load_ok(node_exporter_example);
	struct vw_webconfig *c = load_ok(TLS "  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]\n");
	struct vw_webconfig *d = load_ok(TLS);
	char why[256];

	(void)state;
	assert_true(vw_webconfig_same(a, b));
	assert_false(vw_webconfig_diff(a, b, why, sizeof(why)));
	assert_string_equal(why, "no change");
	assert_false(vw_webconfig_same(a, d)); /* users gone */
	assert_false(vw_webconfig_same(c, d));
	assert_false(vw_webconfig_diff(d, c, why, sizeof(why)));
	assert_string_equal(why, "TLS cipher suites or curves changed");
	assert_true(vw_webconfig_same(d, d));
	assert_true(vw_webconfig_same(NULL, NULL));
	assert_false(vw_webconfig_same(NULL, d));
	vw_webconfig_free(a);
	vw_webconfig_free(b);
	vw_webconfig_free(c);
	vw_webconfig_free(d);
}

/* The Authorization header's Basic credentials, parsed as Go's net/http does (scheme in any
 * case), never cut at a NUL (libmicrohttpd's C strings passed "p:a:ss\0junk" as "p:a:ss"). */
static void expect_basic(const char *value, const char *user, const char *pass)
{
	const char *p = NULL;
	size_t len = 0;
	char *u = vw_webauth_parse_basic(value, &p, &len);

	if (!user) {
		if (u)
			fail_msg("%s: parsed as user %s, password %s", value, u, p);
		return;
	}
	if (!u)
		fail_msg("%s: refused, want user %s", value, user);
	assert_string_equal(u, user);
	assert_string_equal(p, pass);
	assert_int_equal(len, strlen(user) + 1 + strlen(pass));
	free(u);
}

static void test_basic_credentials(void **state)
{
	(void)state;
	expect_basic("Basic YWxpY2U6YWxpY2UtcHc=", "alice", "alice-pw");  /* alice:alice-pw */
	expect_basic("basic YWxpY2U6YWxpY2UtcHc=", "alice", "alice-pw");  /* any case */
	expect_basic("BASIC   YWxpY2U6YWxpY2UtcHc=  ", "alice", "alice-pw"); /* blanks */
	expect_basic("Basic Ym9iOmI6byBi", "bob", "b:o b");   /* first ':' splits */
	expect_basic("Basic OnB3", "", "pw");                  /* ":pw": an empty user */
	expect_basic("Basic YWxpY2U6", "alice", "");           /* "alice:" */
	expect_basic("Basic cDphOnNzAGp1bms=", NULL, NULL);    /* "p:a:ss\0junk": refused */
	expect_basic("Basic YWxpY2UAOnB3", NULL, NULL);        /* NUL in the user */
	expect_basic("Basic YWxpY2U=", NULL, NULL);            /* no ':' */
	expect_basic("Basic YWxp Y2U6YWxpY2UtcHc=", NULL, NULL); /* a blank inside */
	expect_basic("Basic YWxpY2U6YWxpY2UtcHc=x", NULL, NULL); /* after the padding */
	expect_basic("Basic YWxp*2U6", NULL, NULL);            /* outside the alphabet */
	expect_basic("BasicYWxpY2U6YWxpY2UtcHc=", NULL, NULL); /* no space after the scheme */
	expect_basic("Bearer YWxpY2U6YWxpY2UtcHc=", NULL, NULL);
	expect_basic("Basic ", NULL, NULL);
	expect_basic("", NULL, NULL);
	expect_basic(NULL, NULL, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_node_exporter_example),
		cmocka_unit_test(test_every_key),
		cmocka_unit_test(test_inline_and_defaults),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_bad_base64_certificate),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_fifo_refused),
		cmocka_unit_test(test_auth),
		cmocka_unit_test(test_new_costs_no_bcrypt),
		cmocka_unit_test(test_cache_cannot_be_poisoned),
		cmocka_unit_test(test_basic_credentials),
		cmocka_unit_test(test_same_settings),
	};

	if (system("command -v openssl >/dev/null 2>&1") != 0)
		return tls_fixture_skip("openssl (to make test certificates) is not installed");
	return cmocka_run_group_tests(tests, setup, teardown);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Certificates and bcrypt hashes made at test time: a CA with a server (127.0.0.1, localhost)
 * and a client certificate, a second CA with its own client ("stranger") and server
 * ("server2") certificates, all EC P-256 from the openssl CLI; hashes from htpasswd -B
 * (apache2-utils) where installed, else libcrypt.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct tls_fixture {
	char *dir; /* ca.crt server.crt server.key client.crt client.key other-ca.crt
		    * stranger.crt stranger.key server2.crt server2.key */
};

/* 0, -ENOENT when openssl is missing, or -EIO. */
int tls_fixture_init(struct tls_fixture *f);
void tls_fixture_fini(struct tls_fixture *f);
/* dir/name into buf (static per call site is fine: tests are single-threaded). */
const char *tls_fixture_path(const struct tls_fixture *f, const char *name, char *buf,
			     size_t size);
/* A fresh bcrypt hash of pw (cost 5): 0 or -errno. */
int tls_fixture_bcrypt(const char *pw, char *out, size_t size);
/*
 * A test that cannot run here prints a TAP skip ("1..0 # SKIP why") and returns 0, or under
 * CI=true a failure and returns 1: main() returns the result.
 */
int tls_fixture_skip(const char *why);

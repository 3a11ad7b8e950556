/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The web configuration file of Prometheus' exporter-toolkit (--web.config-file), so a file
 * written for node_exporter or Kepler works unchanged: tls_server_config, http_server_config,
 * basic_auth_users, basic_auth_excluded_paths, rate_limit. Parsed with libyaml into a plain
 * struct; certificate, key and CA files are read (relative paths are relative to the file, as
 * exporter-toolkit has it) and checked here, so a bad file is refused with file:line:column
 * before anything is served. Nothing is logged: what the caller should say is in notes.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum vw_client_auth {
	VW_CLIENT_AUTH_NONE,		   /* NoClientCert */
	VW_CLIENT_AUTH_REQUEST,		   /* RequestClientCert: asked for, not required or verified */
	VW_CLIENT_AUTH_REQUIRE_ANY,	   /* RequireAnyClientCert: required, not verified */
	VW_CLIENT_AUTH_VERIFY_IF_GIVEN,	   /* VerifyClientCertIfGiven */
	VW_CLIENT_AUTH_REQUIRE_AND_VERIFY, /* RequireAndVerifyClientCert: the real client auth */
};

/* An HTTP header or a user (value: the bcrypt hash). */
struct vw_webconfig_pair {
	char *name;
	char *value;
};

struct vw_webconfig {
	/* tls_server_config: TLS is on when any certificate, key, CA or client_auth_type is set. */
	bool tls;
	char *cert_pem, *key_pem, *client_ca_pem; /* NUL-terminated PEM (file or inline) */
	char *cert_file, *key_file, *client_ca_file; /* resolved paths, NULL when inline or unset */
	enum vw_client_auth client_auth;
	unsigned min_version, max_version; /* 12 = TLS 1.2, 13 = TLS 1.3 */
	char *priorities;		   /* GnuTLS priority string for the above */
	/* http_server_config */
	struct vw_webconfig_pair *headers;
	size_t n_headers;
	/* basic_auth_users (no users: no authentication) and basic_auth_excluded_paths */
	struct vw_webconfig_pair *users;
	size_t n_users;
	char **excluded_paths;
	size_t n_excluded_paths;
	/* rate_limit: at most burst requests at once, one more per interval; 0 ns: off */
	uint64_t rate_interval_ns;
	uint64_t rate_burst;
	/* Settings accepted but mapped or ignored, one sentence each, for the caller's log. */
	char **notes;
	size_t n_notes;
};

/* Larger web config files are refused (-EFBIG). */
#define VW_WEBCONFIG_MAX_BYTES (256 * 1024)

/*
 * Parse and check path. 0 with *ret (free with vw_webconfig_free), or -EINVAL, -ENOENT, ...
 * with "path:line:col: message" in err.
 */
int vw_webconfig_load(const char *path, struct vw_webconfig **ret, char *err, size_t errlen);
/* The same for the file's text in memory (tests, fuzzing): path names it in messages and is
 * where relative certificate paths start. */
int vw_webconfig_load_buf(const char *path, const char *buf, size_t len,
			  struct vw_webconfig **ret, char *err, size_t errlen);
void vw_webconfig_free(struct vw_webconfig *c);
/* "RequireAndVerifyClientCert", ... */
const char *vw_client_auth_name(enum vw_client_auth a);
/* $2a$, $2b$ or $2y$, a cost of 04..31 and 53 characters of bcrypt's base64. */
bool vw_bcrypt_hash_valid(const char *h);
/* The cost of a hash vw_bcrypt_hash_valid() accepts. */
unsigned vw_bcrypt_hash_cost(const char *h);
/*
 * basic_auth_users hashes of a higher cost are refused at load: every wrong password costs the
 * server one bcrypt at that cost (cost 12: ~0.25 s of a core; each step doubles it).
 */
#define VW_BCRYPT_MAX_COST 14u

/*
 * Reloads. What changed from old to new (either may be NULL: no web config), one clause per
 * change separated by "; " into out ("no change" when nothing did), and whether new is weaker:
 * TLS dropped or its minimum version lowered, client certificates no longer required or no
 * longer verified, basic authentication dropped (no users left) or a path newly excluded from
 * it. Removing one user of several, rotating certificates or adding users is not weaker.
 */
/* Whether a and b serve alike: no clause of vw_webconfig_diff() between them. */
bool vw_webconfig_same(const struct vw_webconfig *a, const struct vw_webconfig *b);
bool vw_webconfig_diff(const struct vw_webconfig *old, const struct vw_webconfig *new,
		       char *out, size_t len);
/*
 * The line that lets a reload weaken security (with the file unchanged for the settle period
 * too): a YAML comment, so exporter-toolkit and promtool read the file as before.
 */
#define VW_WEBCONFIG_WEAKER_MARKER "# virtwatt: allow-weaker-security"
/* Whether the file's text has VW_WEBCONFIG_WEAKER_MARKER as a line of its own (leading and
 * trailing blanks allowed). */
bool vw_webconfig_allows_weaker(const char *text, size_t len);

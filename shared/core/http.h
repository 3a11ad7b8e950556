/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The metrics endpoint on libmicrohttpd: GET and HEAD only (else 405), /metrics, /healthz,
 * /readyz and an index page at / (else 404); connection limits and timeouts; optionally TLS
 * and basic authentication from an exporter-toolkit web config file. Scrapes are served
 * from the last published snapshot and never trigger a hardware read.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exposition.h"

/* Whether an Accept-Encoding header value takes gzip (q above 0; "*" too unless gzip is
 * refused by name). NULL: no. */
bool vw_http_accepts_gzip(const char *accept_encoding);

struct vw_http_opts {
	const char *listen_address; /* ":28282", "127.0.0.1:0", "[::1]:28282", "localhost:9" */
	unsigned max_connections;   /* 0: 64 */
	unsigned per_ip_connections; /* 0: 16 */
	unsigned timeout_s;          /* idle connection timeout, and how long a server retired by a
				      * web config change may finish what it began; 0: 10 */
	/*
	 * The whole request head (TLS handshake, request line, headers) must arrive within this
	 * from accept (or from the previous answer on a kept-alive connection), whatever trickles
	 * in meanwhile, as Go's ReadHeaderTimeout; 0: 10. When every connection is taken, a new
	 * one takes the slot of the one that has waited longest for its head. per_ip_connections
	 * counts an IPv6 /64 as one address. max_connections is lowered, with a warning, to fit
	 * RLIMIT_NOFILE with descriptors to spare for the meters and /proc.
	 */
	unsigned header_timeout_s;
	const char *program;         /* for the index page ("virtwatt-host") */
	const char *version;
	/*
	 * exporter-toolkit web config (TLS, client certificates, basic auth, headers, rate
	 * limit), or NULL/"": plain HTTP, no authentication. Read at start (a bad file fails
	 * vw_http_start) and re-read when it or a file it names changes.
	 */
	const char *web_config_file;
	/*
	 * Liveness for /healthz: true while the main loop is healthy; when false, why (one line)
	 * into `why`, sent after "unhealthy: " with the 503. NULL: always healthy.
	 */
	bool (*healthy)(void *userdata, char *why, size_t len);
	/*
	 * Readiness for /readyz beyond a fresh snapshot: false with why, as for healthy. NULL:
	 * ready once a fresh snapshot exists.
	 */
	bool (*ready)(void *userdata, char *why, size_t len);
	void *userdata;
	/* /readyz answers 503 while the last snapshot is older than this (0: never stale). */
	uint64_t stale_after_ns;
	/*
	 * Web config reloads: how often the files are checked (0: every 2 s; a change is applied
	 * once the next check sees it unchanged), and how long a file that weakens security
	 * (webconfig.h: vw_webconfig_diff) must stay unchanged, besides carrying
	 * VW_WEBCONFIG_WEAKER_MARKER, before it is applied (0: 30 s).
	 */
	unsigned reload_poll_ms;
	unsigned reload_settle_s;
};

struct vw_http;

/*
 * Bind, listen and start serving on MHD's own thread. NULL with errno set on failure (EINVAL
 * for a bad address, EADDRINUSE, EADDRNOTAVAIL for a name that does not resolve, ...); the
 * reason is already logged with the address, so callers need not log it again.
 * ":PORT" and "[::]:PORT" bind all addresses (IPv6 dual-stack when the kernel has IPv6, else
 * IPv4 for ":PORT"); a name
 * binds the first address getaddrinfo() returns that works.
 */
struct vw_http *vw_http_start(const struct vw_http_opts *opts, struct vw_exposition *x);
void vw_http_stop(struct vw_http *h);
/* The bound port (useful with port 0). */
uint16_t vw_http_port(const struct vw_http *h);

/*
 * Split a listen address into host (may be empty = all) and port. 0 or -EINVAL: no port, a
 * port that is not 1-5 digits or above 65535, an IPv6 literal without brackets, empty
 * brackets, characters that cannot be in a host name or address, a host too long for host.
 */
int vw_http_parse_listen(const char *addr, char *host, size_t hostlen, uint16_t *ret_port);

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

/*
 * The last rendered exposition: text 0.0.4, and OpenMetrics 1.0.0 while a scraper asks for it;
 * thread-safe. Snapshots are reference-counted: a scrape takes a reference under the mutex and
 * sends that snapshot whole, however many publishes happen meanwhile; the old one is freed when
 * its last scrape is done.
 */
struct vw_exposition;

/* NULL with errno set on failure. */
struct vw_exposition *vw_exposition_new(void);
/* Call after vw_http_stop(); snapshots still being sent stay valid until sent. */
void vw_exposition_free(struct vw_exposition *x);
/*
 * Take ownership of two malloc'd buffers and replace the published snapshot. om may be NULL
 * (no scraper wants it, see vw_exposition_openmetrics_wanted()): OpenMetrics requests then get
 * the text format. On allocation failure (logged) the buffers are freed and the previous
 * snapshot stays.
 */
uint64_t vw_exposition_publish(struct vw_exposition *x, char *text, size_t text_len, char *om,
			       size_t om_len);
/* The generation (1, 2, ... as returned by publish) a scrape of /metrics last served; 0 if
 * none yet. Lets terminated workloads be dropped once a scraper has seen their final value. */
uint64_t vw_exposition_served(struct vw_exposition *x);
/*
 * Copy out the current snapshot in one format (caller frees); om of a snapshot published
 * without OpenMetrics gives the text. -EAGAIN before the first.
 */
int vw_exposition_copy(struct vw_exposition *x, int om, char **ret, size_t *ret_len);
/* gzip renderings made so far (each snapshot's text or OpenMetrics is compressed at most once,
 * by the first scrape that accepts gzip). */
uint64_t vw_exposition_compressions(struct vw_exposition *x);
/* Whether an Accept-Encoding header value takes gzip (q above 0; "*" too unless gzip is
 * refused by name). NULL: no. */
bool vw_http_accepts_gzip(const char *accept_encoding);
/* True once a snapshot exists. */
bool vw_exposition_ready(struct vw_exposition *x);
/* Nanoseconds since the last publish (vw_now_ns() clock); UINT64_MAX before the first. */
uint64_t vw_exposition_age_ns(struct vw_exposition *x);

/*
 * OpenMetrics on demand. The HTTP server notes every /metrics request (GET or HEAD) whose
 * Accept header negotiated OpenMetrics, with or without a snapshot to serve; a daemon renders
 * OpenMetrics for a snapshot only while vw_exposition_openmetrics_wanted() is true: from the
 * first such request until VW_EXPOSITION_OM_WINDOW_NS after the last. Meanwhile an OpenMetrics
 * request gets the text rendering with the text Content-Type, as content negotiation allows
 * (Prometheus lists text/plain as its fallback), so the first OpenMetrics scrape after a start
 * or a quiet window is answered in text and the next snapshot carries OpenMetrics.
 * Times are CLOCK_MONOTONIC nanoseconds (vw_now_ns()). The window is longer than any practical
 * scrape interval (past 5 minutes, Prometheus' default query lookback already loses series
 * between scrapes); a scraper asking less often than that always gets text.
 */
#define VW_EXPOSITION_OM_WINDOW_NS (10ULL * 60 * 1000000000ULL)
/* A scraper asked for OpenMetrics at now_ns (the latest time noted is kept). */
void vw_exposition_openmetrics_asked(struct vw_exposition *x, uint64_t now_ns);
/* Whether a snapshot published at now_ns should carry an OpenMetrics rendering. */
bool vw_exposition_openmetrics_wanted(struct vw_exposition *x, uint64_t now_ns);

struct vw_http_opts {
	const char *listen_address; /* ":28282", "127.0.0.1:0", "[::1]:28282", "localhost:9" */
	unsigned max_connections;   /* 0: 64 */
	unsigned per_ip_connections; /* 0: 16 */
	unsigned timeout_s;          /* idle connection timeout, 0: 10 */
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

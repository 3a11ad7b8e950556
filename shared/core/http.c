/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Metrics endpoint on libmicrohttpd. We bind the socket ourselves and hand it over
 * (MHD_OPTION_LISTEN_SOCKET), run MHD's internal thread on epoll (poll where epoll is missing)
 * with connection, per-IP, timeout and memory limits, route MHD's log to vw_log, answer only
 * GET and HEAD, never read a request body (no PostProcessor) and serve /metrics from the last
 * published snapshot (exposition.c): a scrape takes a reference and does no other work. A request
 * that negotiates OpenMetrics is noted, so the daemon renders it for the next snapshots; until
 * one has it, such a request is served the text rendering.
 *
 * With a web config (webconfig.h): TLS through MHD's GnuTLS, client certificates checked per
 * client_auth_type on the connection's GnuTLS session, rate_limit, then basic auth (webauth.h)
 * on every path not excluded, all before routing. A housekeeping thread checks the file and
 * the files it names every few seconds (webconfig_watch.c decides what may be applied); a
 * change starts a new MHD daemon on the same socket and retires the old one (http_retire.h:
 * what it had begun finishes, within web.timeout, and it answers no new request), a broken
 * change keeps the old one.
 */
#include "http.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "authpool.h"
#include "conntable.h"
#include "crypt_lazy.h"
#include "fileio.h"
#include "http_retire.h"
#include "json.h"
#include "log.h"
#include "macro.h"
#include "prom.h"
#include "thread.h"
#include "webauth.h"
#include "webconfig.h"
#include "webconfig_watch.h"

/* enum MHD_Result replaced int in 0.9.71 (collectd write_prometheus.c does the same). */
#if MHD_VERSION >= 0x00097002
#define VW_MHD_RESULT enum MHD_Result
#else
#define VW_MHD_RESULT int
#endif

#ifndef MHD_HTTP_CONTENT_TOO_LARGE /* before 0.9.74 it was MHD_HTTP_PAYLOAD_TOO_LARGE */
#define MHD_HTTP_CONTENT_TOO_LARGE 413
#endif

#define DEFAULT_MAX_CONNECTIONS 64
#define DEFAULT_PER_IP_CONNECTIONS 16
#define DEFAULT_TIMEOUT_S 10
#define DEFAULT_HEADER_TIMEOUT_S 10 /* the whole request head, from accept */
#define HOUSEKEEPING_MS 250	    /* how often a closing connection is checked */
#define FD_RESERVE 48 /* descriptors kept from connections: meters, /proc, BPF, logs, libraries */
#define CONNECTION_MEMORY (32 * 1024) /* request headers and MHD's buffers, per connection */
#define LISTEN_BACKLOG 64
#define ALLOWED_METHODS "GET, HEAD"

/* ---- Listen address ---- */

static bool port_parse(const char *s, uint16_t *ret)
{
	unsigned long v = 0;
	size_t n = strlen(s);

	if (n == 0 || n > 5)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	if (v > UINT16_MAX)
		return false;
	*ret = (uint16_t)v;
	return true;
}

/* Host names and IPv4 literals: letters, digits, '-', '.'; IPv6 literals add ':' and a zone. */
static bool host_chars_valid(const char *s, size_t n, bool bracketed)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (isalnum(c) || c == '-' || c == '.')
			continue;
		if (bracketed && (c == ':' || c == '%' || c == '_'))
			continue;
		return false;
	}
	return true;
}

int vw_http_parse_listen(const char *addr, char *host, size_t hostlen, uint16_t *ret_port)
{
	const char *colon, *h;
	size_t n;
	bool bracketed;

	if (!addr || !host || hostlen == 0 || !ret_port)
		return -EINVAL;
	colon = strrchr(addr, ':');
	if (!colon || !port_parse(colon + 1, ret_port))
		return -EINVAL;
	h = addr;
	n = (size_t)(colon - addr);
	bracketed = n > 0 && h[0] == '[';
	if (bracketed) {
		if (n < 3 || h[n - 1] != ']' || !memchr(h, ':', n))
			return -EINVAL;
		h++, n -= 2;
	} else if (memchr(h, ':', n) || memchr(h, ']', n)) {
		return -EINVAL; /* an IPv6 literal needs brackets */
	}
	if (!host_chars_valid(h, n, bracketed) || n >= hostlen)
		return -EINVAL;
	memcpy(host, h, n);
	host[n] = '\0';
	return 0;
}

/* A listening TCP socket on one address: fd or -errno. */
static int socket_listen(int family, const struct sockaddr *sa, socklen_t salen, bool dual)
{
	_cleanup_close_ int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int on = 1, off = 0;

	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) < 0)
		return -errno;
	if (family == AF_INET6 &&
	    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, dual ? &off : &on, sizeof(int)) < 0)
		return -errno;
	if (bind(fd, sa, salen) < 0 || listen(fd, LISTEN_BACKLOG) < 0)
		return -errno;
	return VW_TAKE_FD(fd);
}

/* All addresses: IPv6 dual-stack where the kernel has IPv6, else IPv4. */
static int listen_any(uint16_t port)
{
	struct sockaddr_in6 in6 = {.sin6_family = AF_INET6, .sin6_port = htons(port),
				   .sin6_addr = IN6ADDR_ANY_INIT};
	struct sockaddr_in in4 = {.sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_ANY)};
	int fd = socket_listen(AF_INET6, (struct sockaddr *)&in6, sizeof(in6), true);

	if (fd == -EAFNOSUPPORT || fd == -EADDRNOTAVAIL)
		fd = socket_listen(AF_INET, (struct sockaddr *)&in4, sizeof(in4), false);
	return fd;
}

/* The first address host resolves to that we can bind. fd or -errno. */
static int listen_host(const char *host, uint16_t port)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_PASSIVE | AI_NUMERICSERV | AI_ADDRCONFIG};
	struct addrinfo *res = NULL;
	char service[8];
	int r, fd = -EADDRNOTAVAIL;

	snprintf(service, sizeof(service), "%u", (unsigned)port);
	r = getaddrinfo(host, service, &hints, &res);
	if (r != 0) {
		vw_error("http: resolve %s: %s", host, gai_strerror(r));
		return r == EAI_SYSTEM ? -errno : -EADDRNOTAVAIL;
	}
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		/* [::] means every address, IPv4 too, as node_exporter (Go) has it. */
		bool any6 = ai->ai_family == AF_INET6 &&
			    IN6_IS_ADDR_UNSPECIFIED(&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr);

		fd = socket_listen(ai->ai_family, ai->ai_addr, ai->ai_addrlen, any6);
		if (fd >= 0)
			break;
	}
	freeaddrinfo(res);
	return fd;
}

static int bound_port(int fd, uint16_t *ret)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return -errno;
	if (ss.ss_family == AF_INET6)
		*ret = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	else
		*ret = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	return 0;
}

/* ---- Server ---- */

#define WEBCONFIG_CHECK_MS 2000 /* how often the web config and its files are checked */
#define WEBCONFIG_SETTLE_S 30	/* a weaker file must stay unchanged this long (and say so) */
/*
 * One running MHD daemon and the web config it was started with. A reload starts a new one on
 * the same listening socket, then retires the old: TLS settings are fixed per MHD daemon.
 */
struct server {
	struct vw_http *h;
	struct MHD_Daemon *mhd;
	bool quiesced; /* gave the listening socket back */
	/* Set (atomically) when it is retired: from then on it answers no new request, and its
	 * connection events wake the retirement. NULL: it is the server. */
	struct vw_retire *retire;
	struct vw_webconfig *wc; /* NULL: no web config (plain HTTP, no authentication) */
	struct vw_webauth *auth; /* NULL: no basic_auth_users */
	struct vw_authpool *pool; /* bcrypt off the HTTP thread, with auth */
	pthread_mutex_t rate_lock;
	double rate_tokens;
	uint64_t rate_last_ns;
};

struct vw_http {
	struct server *srv; /* replaced only by the watcher thread */
	int listen_fd;	    /* ours; every MHD daemon gets a duplicate */
	char *listen_address;
	unsigned max_connections, per_ip_connections, timeout_s, header_timeout_s;
	struct vw_conntable *conns; /* every server's: a retiring one's count against the limits */
	struct vw_retirements *retirements; /* servers of previous web configs, being retired */
	struct vw_complaint conn_complaint; /* under log_lock */
	struct vw_exposition *x;
	bool (*healthy)(void *userdata, char *why, size_t len);
	bool (*ready)(void *userdata, char *why, size_t len);
	void *userdata;
	uint64_t stale_after_ns;
	char *index_html;
	size_t index_len;
	uint16_t port;
	pthread_mutex_t log_lock;
	struct vw_complaint log_complaint;
	/* --web.config-file: re-read when it or a file it names changes */
	char *web_config_file;
	unsigned reload_poll_ms, reload_settle_s;
	struct vw_webconfig_watch *watch; /* with web_config_file; the watcher thread's */
	pthread_t watcher;
	bool watching, stopping; /* stopping: under watch_lock */
	pthread_mutex_t watch_lock;
	/* The watcher sleeps in epoll_wait on watch_ep until the next head deadline: watch_efd (an
	 * eventfd) wakes it for a new connection or a stop, and each connection's socket is there
	 * for its peer's close (EPOLLRDHUP, edge-triggered). -1: none. */
	int watch_ep, watch_efd;
};

/* MHD's error log, one line through vw_log, rate-limited (connection floods repeat it). */
_printf_(2, 0) static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct vw_http *h = cls;
	char msg[512];
	size_t n;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n && isspace((unsigned char)msg[n - 1]))
		msg[--n] = '\0';
	pthread_mutex_lock(&h->log_lock);
	vw_complain(&h->log_complaint, VW_LOG_WARN, "http: libmicrohttpd: %s", msg);
	pthread_mutex_unlock(&h->log_lock);
}

static bool header_configured(const struct server *s, const char *name)
{
	for (size_t i = 0; s->wc && i < s->wc->n_headers; i++)
		if (strcasecmp(s->wc->headers[i].name, name) == 0)
			return true;
	return false;
}

/* Ours, unless the web config sets the same header; then the web config's headers. */
static bool add_headers(const struct server *s, struct MHD_Response *resp,
			const char *content_type)
{
	static const struct {
		const char *name, *value;
	} defaults[] = {
		{ "X-Content-Type-Options", "nosniff" },
		{ "Content-Security-Policy", "default-src 'none'" },
		{ MHD_HTTP_HEADER_CACHE_CONTROL, "no-store" },
	};

	if (MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type) != MHD_YES)
		return false;
	for (size_t i = 0; i < ARRAY_SIZE(defaults); i++)
		if (!header_configured(s, defaults[i].name) &&
		    MHD_add_response_header(resp, defaults[i].name, defaults[i].value) != MHD_YES)
			return false;
	for (size_t i = 0; s->wc && i < s->wc->n_headers; i++)
		if (s->wc->headers[i].value[0] &&
		    MHD_add_response_header(resp, s->wc->headers[i].name,
					    s->wc->headers[i].value) != MHD_YES)
			return false;
	return true;
}

/* The retirement of a server being retired, else NULL (it is the server). */
static struct vw_retire *retiring(const struct server *s)
{
	return __atomic_load_n(&s->retire, __ATOMIC_ACQUIRE);
}

/* Queue resp with the common headers (and one extra, if given); consumes resp. A retiring
 * server's answer closes its connection: the client's next request goes to the new server. */
static VW_MHD_RESULT queue(const struct server *s, struct MHD_Connection *c, unsigned status,
			   struct MHD_Response *resp, const char *content_type,
			   const char *extra_name, const char *extra_value)
{
	VW_MHD_RESULT ret = MHD_NO;

	if (!resp)
		return MHD_NO;
	if (add_headers(s, resp, content_type) &&
	    (!extra_name || MHD_add_response_header(resp, extra_name, extra_value) == MHD_YES) &&
	    (!retiring(s) ||
	     MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close") == MHD_YES))
		ret = MHD_queue_response(c, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* A short static plain-text answer. */
static VW_MHD_RESULT reply_text(const struct server *s, struct MHD_Connection *c,
				unsigned status, const char *text, const char *extra_name,
				const char *extra_value)
{
	struct MHD_Response *resp =
		MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);

	return queue(s, c, status, resp, "text/plain; charset=utf-8", extra_name, extra_value);
}

/* The connection table's entry of a connection (NULL: none). */
static struct vw_conn *conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

static void snapshot_release(void *cls)
{
	vw_snapshot_unref(cls);
}

/*
 * Whether an Accept-Encoding header takes gzip: "gzip" (or "x-gzip") with a q above 0, or "*"
 * with a q above 0 when gzip is not named. Absent: no.
 */
bool vw_http_accepts_gzip(const char *ae)
{
	int gzip_q = -1, any_q = -1;

	for (const char *p = ae; p && *p;) {
		size_t n = strcspn(p, ","), tok;
		const char *q;
		int qv = 1000;

		while (n && (*p == ' ' || *p == '\t'))
			p++, n--;
		tok = strcspn(p, ";, \t");
		tok = VW_MIN(tok, n);
		q = memchr(p, ';', n);
		if (q) {
			const char *v = q + 1;

			while (v < p + n && (*v == ' ' || *v == '\t'))
				v++;
			/* "q=0", "q=0.000": refused; any other weight: taken */
			if (v + 2 <= p + n && (v[0] == 'q' || v[0] == 'Q') && v[1] == '=')
				qv = strtod(v + 2, NULL) > 0 ? 1000 : 0;
		}
		if ((tok == 4 && strncasecmp(p, "gzip", 4) == 0) ||
		    (tok == 6 && strncasecmp(p, "x-gzip", 6) == 0))
			gzip_q = VW_MAX(gzip_q, qv);
		else if (tok == 1 && *p == '*')
			any_q = VW_MAX(any_q, qv);
		p += n;
		if (*p == ',')
			p++;
	}
	return gzip_q > 0 || (gzip_q < 0 && any_q > 0);
}

static VW_MHD_RESULT serve_metrics(struct server *srv, struct MHD_Connection *c, bool head)
{
	struct vw_http *h = srv->h;
	const char *accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
	const char *ae = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						     MHD_HTTP_HEADER_ACCEPT_ENCODING);
	enum vw_prom_format fmt = vw_prom_negotiate(accept);
	struct vw_snapshot *s = vw_exposition_take(h->x);
	struct MHD_Response *resp;
	const char *body;
	size_t len = 0;
	bool gz = false;

	/* Noted first: a scraper that asks before the first snapshot gets OpenMetrics in it. */
	if (vw_prom_is_openmetrics(fmt))
		vw_exposition_openmetrics_asked(h->x, vw_now_ns());
	if (!s)
		return reply_text(srv, c, MHD_HTTP_SERVICE_UNAVAILABLE,
				  "no metrics published yet\n", NULL, NULL);
	/* None (nobody asked before this snapshot; a derivation failed): text, announced as text. */
	if (vw_prom_is_openmetrics(fmt) && !vw_snapshot_has_openmetrics(h->x, s))
		fmt = VW_PROM_TEXT_0_0_4;
	body = vw_snapshot_serve(h->x, s, vw_prom_is_openmetrics(fmt), vw_http_accepts_gzip(ae),
				 &len, &gz);
	/* Served once the whole body went out (on_completed): a HEAD, or a client that left
	 * before the end, has seen no value, and a terminated workload's last must wait for a
	 * scrape that does. */
	if (!head)
		vw_conn_set_note(h->conns, conn_of(c), vw_snapshot_gen(s));
#if MHD_VERSION >= 0x00097302
	/* Zero-copy: the response holds the reference until MHD is done sending. */
	resp = MHD_create_response_from_buffer_with_free_callback_cls(len, (void *)body,
								      snapshot_release, s);
	if (!resp)
		vw_snapshot_unref(s);
#else
	resp = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	snapshot_release(s);
#endif
	if (resp && gz &&
	    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip") != MHD_YES) {
		MHD_destroy_response(resp);
		return MHD_NO;
	}
	return queue(srv, c, MHD_HTTP_OK, resp, vw_prom_content_type(fmt), MHD_HTTP_HEADER_VARY,
		     "Accept, Accept-Encoding");
}

/* A 503 whose text says why: "<what>: <why>\n". */
static VW_MHD_RESULT reply_unavailable(const struct server *s, struct MHD_Connection *c,
				       const char *what, const char *why)
{
	char text[512];
	int n = snprintf(text, sizeof(text), "%s: %s\n", what, why);
	struct MHD_Response *resp = MHD_create_response_from_buffer(
		VW_MIN((size_t)VW_MAX(n, 0), sizeof(text) - 1), text, MHD_RESPMEM_MUST_COPY);

	return queue(s, c, MHD_HTTP_SERVICE_UNAVAILABLE, resp, "text/plain; charset=utf-8", NULL,
		     NULL);
}

static VW_MHD_RESULT serve_healthz(struct server *srv, struct MHD_Connection *c,
				   bool head _unused_)
{
	struct vw_http *h = srv->h;
	char why[400] = "the main loop reports a problem";

	if (h->healthy && !h->healthy(h->userdata, why, sizeof(why)))
		return reply_unavailable(srv, c, "unhealthy", why);
	return reply_text(srv, c, MHD_HTTP_OK, "ok\n", NULL, NULL);
}

/* Ready: a snapshot exists, it is not stale, and the daemon has nothing against it. */
static bool ready_check(struct vw_http *h, char *why, size_t len);

static VW_MHD_RESULT serve_readyz(struct server *srv, struct MHD_Connection *c,
				  bool head _unused_)
{
	char why[400];

	if (!ready_check(srv->h, why, sizeof(why)))
		return reply_unavailable(srv, c, "not ready", why);
	return reply_text(srv, c, MHD_HTTP_OK, "ok\n", NULL, NULL);
}

/*
 * Kepler's probe endpoints (its probe service: /probe/livez, /probe/readyz): JSON, 200 with
 * {"status":"alive"} or {"status":"ok"}, else 503 with {"status":"not alive"} or
 * {"status":"not ready"} and a "reason" naming the failing check. The checks are those of
 * /healthz and /readyz.
 */
static VW_MHD_RESULT reply_json_status(const struct server *s, struct MHD_Connection *c,
				       bool ok, const char *status, const char *reason)
{
	char *body = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&body, &len);
	struct MHD_Response *resp;

	if (!f)
		return MHD_NO;
	fprintf(f, "{\"status\":\"%s\"", status);
	if (!ok) {
		char esc[VW_JSON_ESCAPED_MAX(400)]; /* reason: a why[400] */
		size_t n = strnlen(reason, 400);

		fprintf(f, ",\"reason\":\"%.*s\"", (int)vw_json_escape(reason, n, esc, VW_JSON_INVALID_REPLACE), esc);
	}
	fputs("}\n", f);
	if (fclose(f) != 0) {
		free(body);
		return MHD_NO;
	}
	resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!resp)
		free(body);
	return queue(s, c, ok ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE, resp,
		     "application/json", NULL, NULL);
}

/* Why the daemon is not ready (a sentence into why), or true. */
static bool ready_check(struct vw_http *h, char *why, size_t len)
{
	uint64_t age = vw_exposition_age_ns(h->x);

	if (age == UINT64_MAX) {
		snprintf(why, len, "no metrics published yet");
		return false;
	}
	if (h->stale_after_ns && age > h->stale_after_ns) {
		snprintf(why, len,
			 "the last metrics snapshot is %.1f s old (stale after %.1f s): the sampling "
			 "loop is stuck or rendering fails, see the log",
			 (double)age / 1e9, (double)h->stale_after_ns / 1e9);
		return false;
	}
	snprintf(why, len, "the daemon reports a problem");
	return !h->ready || h->ready(h->userdata, why, len);
}

static VW_MHD_RESULT serve_probe_livez(struct server *srv, struct MHD_Connection *c,
				       bool head _unused_)
{
	struct vw_http *h = srv->h;
	char why[400] = "the main loop reports a problem";
	bool ok = !h->healthy || h->healthy(h->userdata, why, sizeof(why));

	return reply_json_status(srv, c, ok, ok ? "alive" : "not alive", why);
}

static VW_MHD_RESULT serve_probe_readyz(struct server *srv, struct MHD_Connection *c,
					bool head _unused_)
{
	char why[400];
	bool ok = ready_check(srv->h, why, sizeof(why));

	return reply_json_status(srv, c, ok, ok ? "ok" : "not ready", why);
}

static VW_MHD_RESULT serve_index(struct server *srv, struct MHD_Connection *c,
				 bool head _unused_)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(
		srv->h->index_len, srv->h->index_html, MHD_RESPMEM_PERSISTENT);

	return queue(srv, c, MHD_HTTP_OK, resp, "text/html; charset=utf-8", NULL, NULL);
}

static const struct route {
	const char *path;
	/* head: a HEAD request (MHD sends the headers only) */
	VW_MHD_RESULT (*serve)(struct server *srv, struct MHD_Connection *c, bool head);
} routes[] = {
	{"/metrics", serve_metrics},
	{"/healthz", serve_healthz},
	{"/readyz", serve_readyz},
	{"/probe/livez", serve_probe_livez},
	{"/probe/readyz", serve_probe_readyz},
	{"/", serve_index},
};

/* A request announcing a body: any Transfer-Encoding, or a Content-Length other than 0. */
static bool has_body(struct MHD_Connection *c)
{
	const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						     MHD_HTTP_HEADER_CONTENT_LENGTH);

	if (MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING))
		return true;
	return cl && strspn(cl, "0") != strlen(cl);
}

/* ---- Connections: per-source limits, head deadlines, eviction (conntable.h) ---- */

/* Ends a connection MHD owns: it sees the socket fail and closes it (fd stays its own). */
static void conn_shutdown(int fd)
{
	shutdown(fd, SHUT_RDWR);
}

/*
 * A kept-alive connection whose client closed its side (end of file waiting): MHD 0.9.75 would
 * hold it until the idle timeout. Peeking leaves any data to MHD.
 */
static bool conn_peer_gone(int fd)
{
	char b;

	return recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

/* MHD's accept policy: per-source limits and slots, evicting a head-less connection if full. */
static VW_MHD_RESULT on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
	struct vw_http *h = cls;
	struct vw_src_key src;
	bool source_full;
	char who[64];

	(void)addrlen;
	vw_src_key(addr, &src);
	if (vw_conntable_admit(h->conns, &src, conn_shutdown, &source_full))
		return MHD_YES;
	vw_src_key_str(&src, who, sizeof(who));
	pthread_mutex_lock(&h->log_lock);
	if (source_full)
		vw_complain(&h->conn_complaint, VW_LOG_WARN,
			    "http: refused a connection from %s: it has %u open already "
			    "(per address, IPv6 per /64)", who, h->per_ip_connections);
	else
		vw_complain(&h->conn_complaint, VW_LOG_WARN,
			    "http: refused a connection from %s: all %u connections are busy "
			    "serving requests (web.max-connections)", who, h->max_connections);
	pthread_mutex_unlock(&h->log_lock);
	return MHD_NO;
}

/*
 * A new connection for the watcher: its socket's close watched (the registration goes with
 * the socket when MHD closes it) and the watcher woken, its head deadline now the nearest.
 */
static void watch_connection(struct vw_http *h, int fd)
{
	struct epoll_event ev = { .events = EPOLLRDHUP | EPOLLET, .data.fd = fd };

	if (h->watch_ep < 0)
		return;
	(void)epoll_ctl(h->watch_ep, EPOLL_CTL_ADD, fd, &ev);
	(void)eventfd_write(h->watch_efd, 1);
}

/* A new connection of s recorded (s its owner) and watched; NULL: no slot, it is closed. */
static struct vw_conn *conn_record(struct server *s, struct MHD_Connection *c)
{
	struct vw_http *h = s->h;
	const union MHD_ConnectionInfo *fd, *addr;
	struct vw_src_key src;
	struct vw_conn *conn;

	fd = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	addr = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (!fd)
		return NULL;
	vw_src_key(addr ? addr->client_addr : NULL, &src);
	conn = vw_conntable_add(h->conns, &src, fd->connect_fd, vw_now_ns(), s);
	if (!conn)
		shutdown(fd->connect_fd, SHUT_RDWR); /* no slot (two servers during a reload) */
	else
		watch_connection(h, fd->connect_fd);
	return conn;
}

/* A connection opens or closes: recorded, or no longer; a retirement is woken by either. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct server *s = cls;

	if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		vw_conntable_remove(s->h->conns, *socket_context);
		*socket_context = NULL;
	} else {
		*socket_context = conn_record(s, c);
	}
	if (retiring(s))
		vw_retire_kick(retiring(s));
}

/* ---- Web config: client certificates, rate limit, basic authentication ---- */

/* NULL when client_auth_type lets this connection through, else why not (a reply body). */
static const char *client_cert_refusal(const struct server *s, struct MHD_Connection *c)
{
	enum vw_client_auth mode = s->wc && s->wc->tls ? s->wc->client_auth : VW_CLIENT_AUTH_NONE;
	const union MHD_ConnectionInfo *ci;
	unsigned n = 0, status = 0;
	bool verify = mode == VW_CLIENT_AUTH_VERIFY_IF_GIVEN ||
		      mode == VW_CLIENT_AUTH_REQUIRE_AND_VERIFY;
	bool required = mode == VW_CLIENT_AUTH_REQUIRE_ANY ||
			mode == VW_CLIENT_AUTH_REQUIRE_AND_VERIFY;

	if (!verify && !required)
		return NULL;
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	if (!ci || !ci->tls_session)
		return "forbidden\n";
	if (!gnutls_certificate_get_peers(ci->tls_session, &n) || n == 0)
		return required ? "client certificate required\n" : NULL;
	if (!verify)
		return NULL;
	/* Against client_ca_file, which MHD gave GnuTLS as the trust list; dates included. */
	if (gnutls_certificate_verify_peers2(ci->tls_session, &status) < 0 || status != 0)
		return "client certificate not trusted\n";
	return NULL;
}

/* rate_limit as Go's rate.Limiter: a bucket of burst tokens, one more every interval. */
static bool rate_allow(struct server *s)
{
	uint64_t now, interval = s->wc ? s->wc->rate_interval_ns : 0;
	bool ok;

	if (!interval)
		return true;
	pthread_mutex_lock(&s->rate_lock);
	now = vw_now_ns();
	s->rate_tokens += (double)(now - s->rate_last_ns) / (double)interval;
	s->rate_tokens = VW_MIN(s->rate_tokens, (double)s->wc->rate_burst);
	s->rate_last_ns = now;
	ok = s->rate_tokens >= 1;
	if (ok)
		s->rate_tokens -= 1;
	pthread_mutex_unlock(&s->rate_lock);
	return ok;
}

static bool auth_excluded(const struct server *s, const char *url)
{
	for (size_t i = 0; i < s->wc->n_excluded_paths; i++)
		if (strcmp(s->wc->excluded_paths[i], url) == 0)
			return true;
	return false;
}

static void connection_park(void *cls)
{
	MHD_suspend_connection(cls);
}

static void connection_unpark(void *cls)
{
	MHD_resume_connection(cls);
}

/*
 * Basic authentication, never a bcrypt on this thread: a cached login passes at once, others
 * go to the worker pool with the connection suspended (VW_AUTH_QUEUED, *job set); MHD calls
 * on_request again once a worker resumed it, and auth_finish gives the answer.
 */
static enum vw_auth_result auth_start(struct server *s, struct MHD_Connection *c,
				      struct vw_auth_job **job)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const char *value = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
							MHD_HTTP_HEADER_AUTHORIZATION);
	const char *pass = NULL;
	struct vw_src_key src;
	enum vw_auth_result r;
	size_t len = 0;
	char *user;

	vw_src_key(ci ? ci->client_addr : NULL, &src);
	/* Parsed here, not by libmicrohttpd's basic-auth call: its scheme is case-sensitive and
	 * its C strings cut a password at a NUL byte (which a login must not pass). */
	user = vw_webauth_parse_basic(value, &pass, &len);
	r = vw_authpool_submit(s->pool, &src, user, user ? pass : NULL, connection_park,
			       connection_unpark, c, job);
	if (user)
		explicit_bzero(user, len);
	free(user);
	return r;
}

/* The refusal for an authentication result other than VW_AUTH_OK. */
static VW_MHD_RESULT auth_refuse(struct server *s, struct MHD_Connection *c,
				 enum vw_auth_result r)
{
	if (r == VW_AUTH_LIMITED)
		return reply_text(s, c, MHD_HTTP_TOO_MANY_REQUESTS,
				  "too many failed logins from this address\n",
				  MHD_HTTP_HEADER_RETRY_AFTER, "1");
	if (r == VW_AUTH_BUSY)
		return reply_text(s, c, MHD_HTTP_SERVICE_UNAVAILABLE,
				  "too many logins being checked, try again\n",
				  MHD_HTTP_HEADER_RETRY_AFTER, "1");
	if (r == VW_AUTH_CANCELLED)
		return reply_text(s, c, MHD_HTTP_SERVICE_UNAVAILABLE,
				  "login not checked: the server is stopping or reloading its web "
				  "config, try again\n", MHD_HTTP_HEADER_RETRY_AFTER, "1");
	return reply_text(s, c, MHD_HTTP_UNAUTHORIZED, "unauthorized\n",
			  MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Basic");
}

/*
 * The web config's checks before any other work: false with the refusal queued in *ret. The
 * client certificate and the rate limit first; paths excluded from basic auth are then served
 * with no authentication work at all; a login needing a bcrypt parks the request (*job).
 */
static bool gatekeep(struct server *s, struct MHD_Connection *c, const char *url,
		     VW_MHD_RESULT *ret, struct vw_auth_job **job)
{
	const char *refusal = client_cert_refusal(s, c);
	enum vw_auth_result r;

	if (refusal) {
		*ret = reply_text(s, c, MHD_HTTP_FORBIDDEN, refusal, NULL, NULL);
		return false;
	}
	if (!rate_allow(s)) {
		*ret = reply_text(s, c, MHD_HTTP_TOO_MANY_REQUESTS, "too many requests\n", NULL,
				  NULL);
		return false;
	}
	if (!s->auth || auth_excluded(s, url))
		return true;
	r = auth_start(s, c, job);
	if (r == VW_AUTH_OK)
		return true;
	*ret = r == VW_AUTH_QUEUED ? MHD_YES : auth_refuse(s, c, r);
	return false;
}

/* After the login's job is done: 0 when it passed, else the refusal queued in *ret. */
static bool auth_finish(struct server *s, struct MHD_Connection *c, struct vw_auth_job *job,
			VW_MHD_RESULT *ret)
{
	enum vw_auth_result r = vw_auth_job_result(job);

	vw_auth_job_release(job);
	if (r == VW_AUTH_OK)
		return true;
	*ret = auth_refuse(s, c, r);
	return false;
}

/* Everything after the web config's checks: method, body, route. */
static VW_MHD_RESULT route(struct server *s, struct MHD_Connection *c, const char *url,
			   const char *method)
{
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return reply_text(s, c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n",
				  MHD_HTTP_HEADER_ALLOW, ALLOWED_METHODS);
	if (has_body(c))
		return reply_text(s, c, MHD_HTTP_CONTENT_TOO_LARGE, "request body not accepted\n",
				  NULL, NULL);
	for (size_t i = 0; i < ARRAY_SIZE(routes); i++)
		if (strcmp(url, routes[i].path) == 0)
			return routes[i].serve(s, c, strcmp(method, MHD_HTTP_METHOD_HEAD) == 0);
	return reply_text(s, c, MHD_HTTP_NOT_FOUND, "not found\n", NULL, NULL);
}

/* *con_cls of a request whose head is in and that announced no body: answered on the next
 * call, once MHD knows there is nothing more to read (an answer queued before that closes the
 * connection: no keep-alive). */
static char head_seen;

/* The answer, once: the web config's checks first, on every path, as in exporter-toolkit. */
static VW_MHD_RESULT answer(struct server *s, struct MHD_Connection *c, const char *url,
			    const char *method, void **con_cls)
{
	struct vw_auth_job *job = NULL;
	VW_MHD_RESULT ret;

	*con_cls = s;
	if (s->auth && has_body(c) && !auth_excluded(s, url))
		return reply_text(s, c, MHD_HTTP_CONTENT_TOO_LARGE, "request body not accepted\n",
				  NULL, NULL);
	if (s->wc && !gatekeep(s, c, url, &ret, &job)) {
		if (job)
			*con_cls = job;
		return ret;
	}
	return route(s, c, url, method);
}

/*
 * A request without a body is answered on MHD's second call (keep-alive stays possible); one
 * announcing a body is refused on the first call, once the headers are in: MHD then never reads
 * the body and closes the connection. A login parked for a bcrypt has its job in *con_cls, and
 * MHD calls again once a worker resumed the connection. Any other later call (body data) is
 * refused. A request announcing a body is refused before a login is checked.
 *
 * A retiring server begins no request: one whose head comes in after the retirement started
 * (on a kept-alive connection) gets no answer, its connection closed, as Go's server closes
 * an idle connection; a client retries a GET on a reused connection closed before any answer
 * (Go's, Prometheus') and meets the new server. Its head is marked done first, so a retirement
 * that looks at it now either sees it begun (and answered: not retiring yet) or closes it.
 */
static VW_MHD_RESULT on_request(void *cls, struct MHD_Connection *c, const char *url,
				const char *method, const char *version, const char *upload_data,
				size_t *upload_data_size, void **con_cls)
{
	struct server *s = cls;
	struct vw_auth_job *job;
	VW_MHD_RESULT ret;

	(void)version, (void)upload_data;
	if (*con_cls == s)
		return MHD_NO;
	if (!*con_cls) {
		vw_conn_head_done(s->h->conns, conn_of(c));
		if (retiring(s))
			return MHD_NO;
		if (!has_body(c)) {
			*con_cls = &head_seen;
			return MHD_YES;
		}
		return answer(s, c, url, method, con_cls);
	}
	if (*con_cls == &head_seen)
		return *upload_data_size ? MHD_NO : answer(s, c, url, method, con_cls);
	job = *con_cls;
	*con_cls = s;
	if (!auth_finish(s, c, job, &ret))
		return ret;
	return route(s, c, url, method);
}

/* A request ends (answered, or its connection closed): a parked login's job is let go, and
 * a /metrics body sent whole notes its snapshot served. */
static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode why)
{
	struct server *s = cls;
	uint64_t gen = vw_conn_request_done(s->h->conns, conn_of(c), vw_now_ns());

	if (gen && why == MHD_REQUEST_TERMINATED_COMPLETED_OK)
		vw_exposition_mark_served(s->h->x, gen);
	if (con_cls && *con_cls && *con_cls != cls && *con_cls != &head_seen)
		vw_auth_job_release(*con_cls);
	if (con_cls)
		*con_cls = NULL;
	if (retiring(s))
		vw_retire_kick(retiring(s)); /* its connection may now wait for a request */
}

/* Append s to the index page with &, <, >, " and ' escaped. */
static void html_escape(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		const char *entity = *s == '&'	  ? "&amp;"
				     : *s == '<'  ? "&lt;"
				     : *s == '>'  ? "&gt;"
				     : *s == '"'  ? "&quot;"
				     : *s == '\'' ? "&#39;"
						  : NULL;

		if (entity)
			fputs(entity, f);
		else
			fputc(*s, f);
	}
}

static int index_render(struct vw_http *h, const char *program, const char *version)
{
	FILE *f = open_memstream(&h->index_html, &h->index_len);

	if (!f)
		return -errno;
	fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>", f);
	html_escape(f, program);
	fputs("</title></head>\n<body><h1>", f);
	html_escape(f, program);
	fputs(" ", f);
	html_escape(f, version);
	fputs("</h1>\n<ul>\n<li><a href=\"/metrics\">/metrics</a></li>\n"
	      "<li><a href=\"/healthz\">/healthz</a></li>\n"
	      "<li><a href=\"/readyz\">/readyz</a></li>\n</ul>\n</body></html>\n",
	      f);
	return fclose(f) == 0 ? 0 : -ENOMEM;
}

static unsigned mhd_flags(bool tls)
{
	/* ITC: a retired daemon must not shutdown() the listening socket its successor shares. */
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG | MHD_USE_ITC |
			 MHD_ALLOW_SUSPEND_RESUME;

	if (tls)
		flags |= MHD_USE_TLS;
	if (MHD_is_feature_supported(MHD_FEATURE_EPOLL) == MHD_YES)
		return flags | MHD_USE_EPOLL;
	return flags | MHD_USE_POLL;
}

static int http_listen(const char *address, int *ret_fd)
{
	char host[256];
	uint16_t port;
	int fd;

	if (vw_http_parse_listen(address, host, sizeof(host), &port) < 0) {
		vw_error("http: invalid listen address '%s'", address ? address : "(null)");
		return -EINVAL;
	}
	fd = host[0] ? listen_host(host, port) : listen_any(port);
	if (fd < 0) {
		vw_error("http: listen on %s: %s", address, strerror(-fd));
		return fd;
	}
	*ret_fd = fd;
	return 0;
}

/* MHD needs a trust list to ask for client certificates at all: the CAs, or a stand-in. */
static const char *client_trust(const struct vw_webconfig *wc)
{
	if (wc->client_auth == VW_CLIENT_AUTH_NONE)
		return NULL;
	/* RequestClientCert/RequireAnyClientCert without CAs: certificates are never verified,
	 * the server's own certificate only makes GnuTLS send a CertificateRequest. */
	return wc->client_ca_pem ? wc->client_ca_pem : wc->cert_pem;
}

static int server_start_mhd(struct server *s)
{
	struct vw_http *h = s->h;
	const struct vw_webconfig *wc = s->wc;
	struct MHD_OptionItem tls[5];
	sigset_t old_mask;
	size_t n = 0;
	int fd;

	if (wc && wc->tls) {
		tls[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_KEY, 0, wc->key_pem };
		tls[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_CERT, 0, wc->cert_pem };
		tls[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_PRIORITIES, 0, wc->priorities };
		if (client_trust(wc))
			tls[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_TRUST, 0,
							    (void *)client_trust(wc) };
	}
	tls[n] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };
	fd = fcntl(h->listen_fd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		return -errno;
	/* MHD's threads inherit this thread's signal mask: signals stay with the main thread. */
	vw_signals_block_all(&old_mask);
	s->mhd = MHD_start_daemon(mhd_flags(wc && wc->tls), 0, on_accept, h, on_request, s,
				  MHD_OPTION_EXTERNAL_LOGGER, mhd_log, h,
				  MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
				  MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
				  MHD_OPTION_ARRAY, tls,
				  MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
				  MHD_OPTION_CONNECTION_LIMIT, h->max_connections + VW_CONNTABLE_SLACK,
				  MHD_OPTION_PER_IP_CONNECTION_LIMIT, h->per_ip_connections,
				  MHD_OPTION_CONNECTION_TIMEOUT, h->timeout_s,
				  MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONNECTION_MEMORY,
				  MHD_OPTION_END);
	vw_signals_restore(&old_mask);
	if (!s->mhd) {
		close(fd);
		vw_error("http: start libmicrohttpd on %s%s failed", h->listen_address,
			 wc && wc->tls ? " with TLS" : "");
		return -EIO;
	}
	return 0;
}

/* Accept no more: MHD gives the socket back (its duplicate, closed), the successor keeps it. */
static void server_quiesce(struct server *s)
{
	MHD_socket fd;

	if (!s->mhd || s->quiesced)
		return;
	fd = MHD_quiesce_daemon(s->mhd);
	if (fd != MHD_INVALID_SOCKET)
		close(fd);
	s->quiesced = true;
}

/* Stop serving now: what is in flight is cut. */
static void server_free(struct server *s)
{
	if (!s)
		return;
	if (s->mhd) {
		server_quiesce(s);
		/* Every parked login resumed (cancelled or answered) before MHD stops: it must
		 * not find a suspended connection. */
		vw_authpool_stop(s->pool);
		MHD_stop_daemon(s->mhd);
	}
	vw_authpool_free(s->pool);
	vw_webauth_free(s->auth);
	vw_webconfig_free(s->wc);
	pthread_mutex_destroy(&s->rate_lock);
	free(s);
}

static int webconfig_supported(const struct vw_webconfig *wc, const char *path)
{
	if (wc->tls && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
		vw_error("http: %s asks for TLS but this libmicrohttpd was built without it "
			 "(MHD_FEATURE_TLS): install one built with GnuTLS (Debian's libmicrohttpd12 "
			 "is) or remove tls_server_config", path);
		return -EOPNOTSUPP;
	}
	return 0;
}

static void webconfig_log(const struct vw_webconfig *wc, const char *path)
{
	for (size_t i = 0; i < wc->n_notes; i++)
		vw_warn("http: %s: %s", path, wc->notes[i]);
	if (wc->tls)
		vw_info("http: %s: TLS 1.%u-1.%u, client certificates: %s, %zu basic-auth user(s)",
			path, wc->min_version - 10, wc->max_version - 10,
			vw_client_auth_name(wc->client_auth), wc->n_users);
	else
		vw_info("http: %s: no TLS (plain HTTP), %zu basic-auth user(s)", path, wc->n_users);
}

/* A server for wc (taken over, may be NULL), started. NULL on failure, logged; wc freed. */
static struct server *server_new(struct vw_http *h, struct vw_webconfig *wc)
{
	struct server *s = calloc(1, sizeof(*s));
	int r = s ? 0 : -ENOMEM;

	if (!s) {
		vw_webconfig_free(wc);
		vw_error("http: %s", strerror(ENOMEM));
		return NULL;
	}
	*s = (struct server){ .h = h, .wc = wc, .rate_last_ns = vw_now_ns() };
	pthread_mutex_init(&s->rate_lock, NULL);
	if (wc) {
		s->rate_tokens = (double)wc->rate_burst;
		r = webconfig_supported(wc, h->web_config_file);
	}
	if (r == 0 && wc && wc->n_users) {
		char why[512];

		r = vw_crypt_load(why, sizeof(why));
		if (r < 0)
			vw_error("http: basic authentication: %s", why);
	}
	if (r == 0 && wc && wc->n_users) {
		s->auth = vw_webauth_new(wc->users, wc->n_users);
		s->pool = s->auth ? vw_authpool_new(s->auth, 0) : NULL;
		if (!s->pool) {
			r = -errno;
			vw_error("http: basic authentication: %s", strerror(-r));
		}
	}
	if (r == 0)
		r = server_start_mhd(s);
	if (r < 0) {
		server_free(s);
		return NULL;
	}
	return s;
}

/* ---- Web config reloads ---- */

/* A retiring server's connections with no request begun are closed: it begins none. */
static unsigned retire_close_idle(void *cls)
{
	struct server *s = cls;

	return vw_conntable_close_idle(s->h->conns, s, conn_shutdown);
}

/* Its bound passed: queued logins cancelled (answered 503), those under way finish. */
static void retire_cancel(void *cls)
{
	struct server *s = cls;

	vw_authpool_stop(s->pool);
}

static void retire_stop(void *cls, enum vw_retire_end why, unsigned open, uint64_t took_ns)
{
	struct server *s = cls;
	struct vw_http *h = s->h;

	if (why == VW_RETIRE_DRAINED)
		vw_info("http: the previous web config's server stopped after %.1f s, every request "
			"it had begun answered", (double)took_ns / 1e9);
	else if (why == VW_RETIRE_BOUND)
		vw_warn("http: the previous web config's server stopped at its bound (web.timeout, "
			"%u s): %u connection(s) still busy were cut", h->timeout_s, open);
	server_free(s);
}

static const struct vw_retire_ops retire_ops = {
	.close_idle = retire_close_idle,
	.cancel = retire_cancel,
	.stop = retire_stop,
};

/*
 * The successor serves; s answers no new request and accepts no connection from now on, and
 * stops once what it had begun is done, within web.timeout, on a thread of its own. The gate
 * (s->retire) is set before the socket is given back: every request that is not begun by
 * then meets the gate or the successor.
 */
static void server_retire(struct vw_http *h, struct server *s)
{
	uint64_t bound_ns = (uint64_t)h->timeout_s * VW_NSEC_PER_SEC;
	struct vw_retire *r = vw_retire_new(&retire_ops, s, bound_ns);
	int e = r ? 0 : -errno;

	if (r) {
		__atomic_store_n(&s->retire, r, __ATOMIC_RELEASE);
		server_quiesce(s);
		e = vw_retirements_start(h->retirements, r);
	}
	if (e < 0) {
		vw_warn("http: retire the previous web config's server: %s; stopped at once",
			strerror(-e));
		server_free(s);
		vw_retire_free(r);
	}
}

/*
 * The watcher's check (webconfig_watch.h decides what may be applied): a configuration to
 * apply starts a new server, which then replaces the old one, and what changed is logged at
 * warn; one that cannot be served keeps the old one.
 */
static void webconfig_poll(struct vw_http *h)
{
	struct vw_webconfig *wc = NULL;
	char changes[1024];
	struct server *s, *old = h->srv;
	bool weaker = false;

	if (vw_webconfig_watch_poll(h->watch, old->wc, &wc, changes, sizeof(changes), &weaker) <= 0)
		return;
	if (vw_webconfig_same(old->wc, wc)) {
		/* Rewritten with the same settings and the same certificate, key and CA bytes (a
		 * configuration manager's run, a touched file): the server goes on, its connections
		 * too; a new one would cut the requests in flight on the old. */
		vw_webconfig_watch_done(h->watch, true, false);
		vw_webconfig_free(wc);
		vw_info("http: web config %s rewritten with the same settings: served as it was",
			h->web_config_file);
		return;
	}
	s = server_new(h, wc);
	vw_webconfig_watch_done(h->watch, s != NULL, weaker);
	if (!s)
		return;
	webconfig_log(s->wc, h->web_config_file);
	h->srv = s;
	server_retire(h, old);
	vw_warn("http: web config %s reloaded: %s", h->web_config_file, changes);
}

static bool watch_stopping(struct vw_http *h)
{
	bool stop;

	pthread_mutex_lock(&h->watch_lock);
	stop = h->stopping;
	pthread_mutex_unlock(&h->watch_lock);
	return stop;
}

/*
 * The housekeeping thread: request heads past their deadline when the nearest one comes (a
 * new connection wakes it), a kept-alive connection whose peer closed when the close shows,
 * the web config (if any) every reload_poll_ms. It slept HOUSEKEEPING_MS at a time, four
 * wake-ups a second with a scraper connected; now, with a scraper that keeps its connection,
 * about one a header timeout. A close seen while its connection stays open (not yet waiting
 * for its next request: a client that half-closes after its request; or one that closed
 * while its server had not yet noticed) is looked for every HOUSEKEEPING_MS until that
 * connection is gone, at most a header timeout: a scraper that opens a connection a scrape
 * and closes it costs one wake-up more, not four a second (it did: every close started a
 * header timeout of ticks).
 */
static void *watch_main(void *arg)
{
	struct vw_http *h = arg;
	const uint64_t head_ns = (uint64_t)h->header_timeout_s * VW_NSEC_PER_SEC;
	const uint64_t tick_ns = HOUSEKEEPING_MS * 1000000ULL;
	uint64_t next_poll = vw_now_ns() + (uint64_t)h->reload_poll_ms * 1000000ULL;
	uint64_t ticking_until = 0; /* check every tick until then: a peer closed */
	int closing[16];	    /* ... on these connections, while they stay open */
	unsigned n_closing = 0;
	bool closing_lost = false; /* more than closing holds: tick until ticking_until */

	while (!watch_stopping(h)) {
		struct epoll_event ev[16];
		uint64_t now = vw_now_ns(), due = vw_conntable_next_deadline(h->conns, head_ns);
		int n, timeout_ms = -1;

		if (now >= ticking_until) {
			n_closing = 0;
			closing_lost = false;
		}
		if (now < ticking_until)
			due = VW_MIN(due, now + tick_ns);
		if (h->web_config_file)
			due = VW_MIN(due, next_poll);
		if (due != UINT64_MAX)
			timeout_ms = due <= now ? 0 : (int)VW_MIN((due - now + 999999) / 1000000, 60000);
		n = epoll_wait(h->watch_ep, ev, ARRAY_SIZE(ev), timeout_ms);
		if (watch_stopping(h))
			break;
		now = vw_now_ns();
		vw_conntable_expire(h->conns, now, head_ns, conn_shutdown, conn_peer_gone);
		for (int i = 0; i < n; i++) {
			eventfd_t v;

			if (ev[i].data.fd == h->watch_efd)
				(void)eventfd_read(h->watch_efd, &v);
			else if (vw_conntable_open(h->conns, ev[i].data.fd)) {
				/* its peer closed, and it is still open: mid-request */
				ticking_until = now + head_ns + tick_ns;
				if (n_closing < ARRAY_SIZE(closing))
					closing[n_closing++] = ev[i].data.fd;
				else
					closing_lost = true;
			}
		}
		if (n_closing && !closing_lost) {
			/* tick only while one of them is still open */
			unsigned k = 0;

			for (unsigned i = 0; i < n_closing; i++)
				if (vw_conntable_open(h->conns, closing[i]))
					closing[k++] = closing[i];
			n_closing = k;
			if (!k)
				ticking_until = 0;
		}
		if (h->web_config_file && now >= next_poll) {
			vw_retirements_reap(h->retirements);
			webconfig_poll(h);
			next_poll = now + (uint64_t)h->reload_poll_ms * 1000000ULL;
		}
	}
	return NULL;
}

/* The watcher's epoll set and eventfd, before the first server takes connections. */
static int watch_open(struct vw_http *h)
{
	struct epoll_event ev = { .events = EPOLLIN };

	h->watch_ep = epoll_create1(EPOLL_CLOEXEC);
	h->watch_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (h->watch_ep < 0 || h->watch_efd < 0)
		return -errno;
	ev.data.fd = h->watch_efd;
	if (epoll_ctl(h->watch_ep, EPOLL_CTL_ADD, h->watch_efd, &ev) < 0)
		return -errno;
	return 0;
}

static int watch_start(struct vw_http *h)
{
	int r = vw_thread_create(&h->watcher, watch_main, h);

	if (r < 0) {
		vw_error("http: start the housekeeping thread: %s", strerror(-r));
		return r;
	}
	h->watching = true;
	return 0;
}

static void watch_stop(struct vw_http *h)
{
	if (!h->watching)
		return;
	pthread_mutex_lock(&h->watch_lock);
	h->stopping = true;
	pthread_mutex_unlock(&h->watch_lock);
	(void)eventfd_write(h->watch_efd, 1);
	pthread_join(h->watcher, NULL);
	h->watching = false;
}

/* ---- Start and stop ---- */

static void http_free(struct vw_http *h)
{
	if (!h)
		return;
	watch_stop(h);
	vw_retirements_free(h->retirements); /* what they still serve is cut */
	server_free(h->srv);
	if (h->watch_ep >= 0)
		close(h->watch_ep);
	if (h->watch_efd >= 0)
		close(h->watch_efd);
	vw_conntable_free(h->conns);
	if (h->listen_fd >= 0)
		close(h->listen_fd);
	pthread_mutex_destroy(&h->watch_lock);
	pthread_mutex_destroy(&h->log_lock);
	free(h->index_html);
	free(h->listen_address);
	free(h->web_config_file);
	vw_webconfig_watch_free(h->watch);
	free(h);
}

/*
 * Every connection is a descriptor: web.max-connections (plus the slots of connections being
 * evicted) must leave FD_RESERVE of RLIMIT_NOFILE to the meters, /proc and the libraries, or a
 * flood of connections makes every meter read fail with EMFILE.
 */
static void connections_clamp(struct vw_http *h)
{
	struct rlimit rl;
	rlim_t fit;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return;
	fit = rl.rlim_cur > FD_RESERVE + VW_CONNTABLE_SLACK
		      ? rl.rlim_cur - FD_RESERVE - VW_CONNTABLE_SLACK : 1;
	if (h->max_connections <= fit)
		return;
	vw_warn("http: web.max-connections %u does not fit the open-file limit (RLIMIT_NOFILE "
		"%llu, %u kept for meters and /proc): serving at most %llu connections; raise the "
		"limit (systemd LimitNOFILE=, ulimit -n) to serve more",
		h->max_connections, (unsigned long long)rl.rlim_cur, FD_RESERVE,
		(unsigned long long)fit);
	h->max_connections = (unsigned)fit;
	h->per_ip_connections = VW_MIN(h->per_ip_connections, h->max_connections);
}

static int http_init(struct vw_http *h, const struct vw_http_opts *opts, struct vw_exposition *x)
{
	const char *wcf = opts->web_config_file;
	int r;

	*h = (struct vw_http){
		.listen_fd = -1,
		.max_connections = opts->max_connections ? opts->max_connections
							 : DEFAULT_MAX_CONNECTIONS,
		.per_ip_connections = opts->per_ip_connections ? opts->per_ip_connections
							       : DEFAULT_PER_IP_CONNECTIONS,
		.timeout_s = opts->timeout_s ? opts->timeout_s : DEFAULT_TIMEOUT_S,
		.header_timeout_s = opts->header_timeout_s ? opts->header_timeout_s
							   : DEFAULT_HEADER_TIMEOUT_S,
		.x = x,
		.healthy = opts->healthy,
		.ready = opts->ready,
		.userdata = opts->userdata,
		.stale_after_ns = opts->stale_after_ns,
		.reload_poll_ms = opts->reload_poll_ms ? opts->reload_poll_ms : WEBCONFIG_CHECK_MS,
		.reload_settle_s = opts->reload_settle_s ? opts->reload_settle_s : WEBCONFIG_SETTLE_S,
		.watch_ep = -1,
		.watch_efd = -1,
	};
	pthread_mutex_init(&h->log_lock, NULL);
	pthread_mutex_init(&h->watch_lock, NULL);
	h->listen_address = strdup(opts->listen_address);
	h->web_config_file = wcf && *wcf ? strdup(wcf) : NULL;
	h->watch = h->web_config_file
			   ? vw_webconfig_watch_new(h->web_config_file, h->reload_settle_s) : NULL;
	if (!h->listen_address || (wcf && *wcf && (!h->web_config_file || !h->watch)))
		return -ENOMEM;
	connections_clamp(h);
	h->conns = vw_conntable_new(h->max_connections, h->per_ip_connections);
	h->retirements = vw_retirements_new();
	if (!h->conns || !h->retirements)
		return -ENOMEM;
	r = watch_open(h);
	if (r < 0) {
		vw_error("http: the housekeeping thread's epoll: %s", strerror(-r));
		return r;
	}
	return index_render(h, opts->program ? opts->program : "virtwatt",
			    opts->version ? opts->version : "");
}

/* The first server: the web config (if any) is read now, and a bad one is an error. */
static int http_serve(struct vw_http *h)
{
	struct vw_webconfig *wc = NULL;
	int r;

	if (h->web_config_file) {
		r = vw_webconfig_watch_load(h->watch, &wc);
		if (r < 0)
			return r;
		webconfig_log(wc, h->web_config_file);
	}
	h->srv = server_new(h, wc);
	return h->srv ? 0 : -EIO;
}

struct vw_http *vw_http_start(const struct vw_http_opts *opts, struct vw_exposition *x)
{
	struct vw_http *h;
	int r;

	if (!opts || !x || !opts->listen_address) {
		errno = EINVAL;
		return NULL;
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	r = http_init(h, opts, x);
	if (r == 0)
		r = http_listen(opts->listen_address, &h->listen_fd);
	if (r == 0)
		r = bound_port(h->listen_fd, &h->port);
	if (r == 0)
		r = http_serve(h);
	if (r == 0)
		vw_info("http: listening on %s (port %u%s)", opts->listen_address,
			(unsigned)h->port, h->srv->wc && h->srv->wc->tls ? ", TLS" : "");
	if (r == 0)
		r = watch_start(h);
	if (r < 0) {
		http_free(h);
		errno = -r;
		return NULL;
	}
	return h;
}

void vw_http_stop(struct vw_http *h)
{
	http_free(h);
}

uint16_t vw_http_port(const struct vw_http *h)
{
	return h ? h->port : 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Metrics endpoint on libmicrohttpd. We bind the socket ourselves and hand it over
 * (MHD_OPTION_LISTEN_SOCKET), run MHD's internal thread on epoll (poll where epoll is missing)
 * with connection, per-IP, timeout and memory limits, route MHD's log to vw_log, answer only
 * GET and HEAD, never read a request body (no PostProcessor) and serve /metrics from the last
 * published snapshot: a scrape takes a reference under a mutex and does no other work.
 */
#include "http.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "log.h"
#include "macro.h"
#include "prom.h"

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
#define CONNECTION_MEMORY (32 * 1024) /* request headers and MHD's buffers, per connection */
#define LISTEN_BACKLOG 64
#define ALLOWED_METHODS "GET, HEAD"

/* ---- Exposition snapshots ---- */

/* One published pair of renderings, freed when the last scrape using it is done. */
struct snapshot {
	unsigned refs;
	uint64_t gen;
	char *text;
	size_t text_len;
	char *om;
	size_t om_len;
};

struct vw_exposition {
	pthread_mutex_t lock;
	struct snapshot *cur;
	uint64_t gen;        /* of the last publish, under lock */
	uint64_t served_gen; /* highest generation a GET /metrics has served; atomic */
};

static void snapshot_unref(struct snapshot *s)
{
	if (!s || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	free(s->text);
	free(s->om);
	free(s);
}

struct vw_exposition *vw_exposition_new(void)
{
	struct vw_exposition *x = calloc(1, sizeof(*x));
	int r;

	if (!x)
		return NULL;
	r = pthread_mutex_init(&x->lock, NULL);
	if (r != 0) {
		free(x);
		errno = r;
		return NULL;
	}
	return x;
}

void vw_exposition_free(struct vw_exposition *x)
{
	if (!x)
		return;
	snapshot_unref(x->cur);
	pthread_mutex_destroy(&x->lock);
	free(x);
}

uint64_t vw_exposition_publish(struct vw_exposition *x, char *text, size_t text_len, char *om,
			       size_t om_len)
{
	struct snapshot *s, *old;
	uint64_t gen;

	if (!x || !text) {
		free(text);
		free(om);
		return 0;
	}
	s = malloc(sizeof(*s));
	if (!s) {
		vw_error("http: publish snapshot: %s", strerror(ENOMEM));
		free(text);
		free(om);
		return 0;
	}
	*s = (struct snapshot){.refs = 1, .text = text, .text_len = text_len, .om = om,
			       .om_len = om ? om_len : 0};
	pthread_mutex_lock(&x->lock);
	gen = s->gen = ++x->gen;
	old = x->cur;
	x->cur = s;
	pthread_mutex_unlock(&x->lock);
	snapshot_unref(old);
	return gen;
}

uint64_t vw_exposition_served(struct vw_exposition *x)
{
	return __atomic_load_n(&x->served_gen, __ATOMIC_ACQUIRE);
}

static void mark_served(struct vw_exposition *x, uint64_t gen)
{
	uint64_t cur = __atomic_load_n(&x->served_gen, __ATOMIC_RELAXED);

	while (cur < gen && !__atomic_compare_exchange_n(&x->served_gen, &cur, gen, true,
							 __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
}

/* The current snapshot with a reference taken, or NULL before the first publish. */
static struct snapshot *exposition_get(struct vw_exposition *x)
{
	struct snapshot *s;

	pthread_mutex_lock(&x->lock);
	s = x->cur;
	if (s)
		__atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&x->lock);
	return s;
}

int vw_exposition_copy(struct vw_exposition *x, int om, char **ret, size_t *ret_len)
{
	struct snapshot *s = exposition_get(x);
	const char *src;
	size_t len;
	char *buf;

	if (!s)
		return -EAGAIN;
	src = om && s->om ? s->om : s->text;
	len = om && s->om ? s->om_len : s->text_len;
	buf = malloc(len + 1);
	if (buf) {
		memcpy(buf, src, len);
		buf[len] = '\0';
		*ret = buf;
		*ret_len = len;
	}
	snapshot_unref(s);
	return buf ? 0 : -ENOMEM;
}

bool vw_exposition_ready(struct vw_exposition *x)
{
	struct snapshot *s = x ? exposition_get(x) : NULL;

	snapshot_unref(s);
	return s != NULL;
}

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
		fd = socket_listen(ai->ai_family, ai->ai_addr, ai->ai_addrlen, false);
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

struct vw_http {
	struct MHD_Daemon *mhd;
	struct vw_exposition *x;
	bool (*healthy)(void *userdata);
	void *userdata;
	char *index_html;
	size_t index_len;
	uint16_t port;
	pthread_mutex_t log_lock;
	struct vw_complaint log_complaint;
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

static bool add_headers(struct MHD_Response *resp, const char *content_type)
{
	return MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type) == MHD_YES &&
	       MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff") == MHD_YES &&
	       MHD_add_response_header(resp, "Content-Security-Policy", "default-src 'none'") ==
		       MHD_YES &&
	       MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store") == MHD_YES;
}

/* Queue resp with the common headers (and one extra, if given); consumes resp. */
static VW_MHD_RESULT queue(struct MHD_Connection *c, unsigned status, struct MHD_Response *resp,
			   const char *content_type, const char *extra_name, const char *extra_value)
{
	VW_MHD_RESULT ret = MHD_NO;

	if (!resp)
		return MHD_NO;
	if (add_headers(resp, content_type) &&
	    (!extra_name || MHD_add_response_header(resp, extra_name, extra_value) == MHD_YES))
		ret = MHD_queue_response(c, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* A short static plain-text answer. */
static VW_MHD_RESULT reply_text(struct MHD_Connection *c, unsigned status, const char *text,
				const char *extra_name, const char *extra_value)
{
	struct MHD_Response *resp =
		MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);

	return queue(c, status, resp, "text/plain; charset=utf-8", extra_name, extra_value);
}

static void snapshot_release(void *cls)
{
	snapshot_unref(cls);
}

static VW_MHD_RESULT serve_metrics(struct vw_http *h, struct MHD_Connection *c)
{
	const char *accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
	enum vw_prom_format fmt = vw_prom_negotiate(accept);
	struct snapshot *s = exposition_get(h->x);
	struct MHD_Response *resp;
	char *body;
	size_t len;

	if (!s)
		return reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "no metrics published yet\n",
				  NULL, NULL);
	if (fmt == VW_PROM_OPENMETRICS_1_0_0 && !s->om)
		fmt = VW_PROM_TEXT_0_0_4;
	mark_served(h->x, s->gen);
	body = fmt == VW_PROM_OPENMETRICS_1_0_0 ? s->om : s->text;
	len = fmt == VW_PROM_OPENMETRICS_1_0_0 ? s->om_len : s->text_len;
#if MHD_VERSION >= 0x00097302
	/* Zero-copy: the response holds the reference until MHD is done sending. */
	resp = MHD_create_response_from_buffer_with_free_callback_cls(len, body, snapshot_release,
								      s);
	if (!resp)
		snapshot_unref(s);
#else
	resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_COPY);
	snapshot_release(s);
#endif
	return queue(c, MHD_HTTP_OK, resp, vw_prom_content_type(fmt), MHD_HTTP_HEADER_VARY,
		     "Accept");
}

static VW_MHD_RESULT serve_healthz(struct vw_http *h, struct MHD_Connection *c)
{
	if (h->healthy && !h->healthy(h->userdata))
		return reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "unhealthy\n", NULL, NULL);
	return reply_text(c, MHD_HTTP_OK, "ok\n", NULL, NULL);
}

static VW_MHD_RESULT serve_readyz(struct vw_http *h, struct MHD_Connection *c)
{
	if (!vw_exposition_ready(h->x))
		return reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "not ready\n", NULL, NULL);
	return reply_text(c, MHD_HTTP_OK, "ok\n", NULL, NULL);
}

static VW_MHD_RESULT serve_index(struct vw_http *h, struct MHD_Connection *c)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(
		h->index_len, h->index_html, MHD_RESPMEM_PERSISTENT);

	return queue(c, MHD_HTTP_OK, resp, "text/html; charset=utf-8", NULL, NULL);
}

static const struct route {
	const char *path;
	VW_MHD_RESULT (*serve)(struct vw_http *h, struct MHD_Connection *c);
} routes[] = {
	{"/metrics", serve_metrics},
	{"/healthz", serve_healthz},
	{"/readyz", serve_readyz},
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

/*
 * Every answer is queued on the first call, once the headers are in; MHD then never reads a
 * body and closes a connection that still had one coming. A later call (body data) is refused.
 */
static VW_MHD_RESULT on_request(void *cls, struct MHD_Connection *c, const char *url,
				const char *method, const char *version, const char *upload_data,
				size_t *upload_data_size, void **con_cls)
{
	struct vw_http *h = cls;

	(void)version, (void)upload_data, (void)upload_data_size;
	if (*con_cls)
		return MHD_NO;
	*con_cls = h;
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n",
				  MHD_HTTP_HEADER_ALLOW, ALLOWED_METHODS);
	if (has_body(c))
		return reply_text(c, MHD_HTTP_CONTENT_TOO_LARGE, "request body not accepted\n",
				  NULL, NULL);
	for (size_t i = 0; i < ARRAY_SIZE(routes); i++)
		if (strcmp(url, routes[i].path) == 0)
			return routes[i].serve(h, c);
	return reply_text(c, MHD_HTTP_NOT_FOUND, "not found\n", NULL, NULL);
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

static unsigned mhd_flags(void)
{
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;

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

static int http_start_mhd(struct vw_http *h, const struct vw_http_opts *opts, int fd)
{
	unsigned max = opts->max_connections ? opts->max_connections : DEFAULT_MAX_CONNECTIONS;
	unsigned per_ip =
		opts->per_ip_connections ? opts->per_ip_connections : DEFAULT_PER_IP_CONNECTIONS;
	unsigned timeout = opts->timeout_s ? opts->timeout_s : DEFAULT_TIMEOUT_S;

	h->mhd = MHD_start_daemon(mhd_flags(), 0, NULL, NULL, on_request, h,
				  MHD_OPTION_EXTERNAL_LOGGER, mhd_log, h,
				  MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
				  MHD_OPTION_CONNECTION_LIMIT, max,
				  MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip,
				  MHD_OPTION_CONNECTION_TIMEOUT, timeout,
				  MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONNECTION_MEMORY,
				  MHD_OPTION_END);
	if (!h->mhd) {
		vw_error("http: start libmicrohttpd on %s failed", opts->listen_address);
		return -EIO;
	}
	return 0;
}

static void http_free(struct vw_http *h)
{
	if (!h)
		return;
	if (h->mhd)
		MHD_stop_daemon(h->mhd); /* also closes the listening socket */
	pthread_mutex_destroy(&h->log_lock);
	free(h->index_html);
	free(h);
}

struct vw_http *vw_http_start(const struct vw_http_opts *opts, struct vw_exposition *x)
{
	_cleanup_close_ int fd = -1;
	struct vw_http *h;
	int r;

	if (!opts || !x) {
		errno = EINVAL;
		return NULL;
	}
	r = http_listen(opts->listen_address, &fd);
	if (r < 0) {
		errno = -r;
		return NULL;
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	*h = (struct vw_http){.x = x, .healthy = opts->healthy, .userdata = opts->userdata};
	pthread_mutex_init(&h->log_lock, NULL);
	r = bound_port(fd, &h->port);
	if (r >= 0)
		r = index_render(h, opts->program ? opts->program : "virtwatt",
				 opts->version ? opts->version : "");
	if (r >= 0)
		r = http_start_mhd(h, opts, fd);
	if (r < 0) {
		http_free(h);
		errno = -r;
		return NULL;
	}
	fd = -1; /* MHD owns it now */
	vw_info("http: listening on %s (port %u)", opts->listen_address, (unsigned)h->port);
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

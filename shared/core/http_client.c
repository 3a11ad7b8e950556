/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The outbound HTTP client (http_client.h) on libcurl: one easy handle per client, reset and set
 * up afresh for each request (reset keeps the live connection), run on a multi handle of its own
 * so that a request or a sleep waits in curl_multi_poll() and vw_httpc_wake() ends the wait at
 * once; a progress callback cuts a transfer in flight when the user's cancelled() says so.
 */
#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "curl_lazy.h"
#include "http_client.h"
#include "macro.h"

#define POLL_SLICE_MS 1000
#define KEEPIDLE_S 30L
#define KEEPINTVL_S 10L

struct vw_httpc {
	struct vw_httpc_opts o;
	char *what;
	CURLM *multi;
	CURL *easy;
};

/* One request's state, for the callbacks. */
struct xfer {
	struct vw_httpc *c;
	const struct vw_httpc_req *req;
	struct vw_httpc_resp *resp;
	size_t cap; /* of resp->body; 0: discarded */
	int abort;  /* why a callback ended the transfer */
};

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static CURLcode init_rc = CURLE_FAILED_INIT;

static void global_init(void)
{
	init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static bool cancelled(const struct vw_httpc *c)
{
	return c->o.cancelled && c->o.cancelled(c->o.userdata);
}

static void idle(const struct vw_httpc *c)
{
	if (c->o.idle)
		c->o.idle(c->o.userdata);
}

/* Real monotonic time: sleeps must not follow a test's fake clock. */
static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int vw_httpc_new(const struct vw_httpc_opts *opts, struct vw_httpc **ret, char *why,
		 size_t whylen)
{
	struct vw_httpc *c;
	int r;

	*ret = NULL;
	r = vw_curl_load(why, whylen);
	if (r < 0)
		return r;
	pthread_once(&init_once, global_init);
	if (init_rc != CURLE_OK) {
		snprintf(why, whylen, "curl_global_init: %s", curl_easy_strerror(init_rc));
		return -EIO;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	c->o = *opts;
	c->what = strdup(opts->what ? opts->what : "http");
	c->multi = curl_multi_init();
	c->easy = curl_easy_init();
	if (!c->what || !c->multi || !c->easy) {
		vw_httpc_free(c);
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	c->o.what = c->what;
	*ret = c;
	return 0;
}

void vw_httpc_free(struct vw_httpc *c)
{
	if (!c)
		return;
	if (c->easy)
		curl_easy_cleanup(c->easy);
	if (c->multi)
		curl_multi_cleanup(c->multi);
	free(c->what);
	free(c);
}

void vw_httpc_resp_clear(struct vw_httpc_resp *resp)
{
	free(resp->body);
	*resp = (struct vw_httpc_resp){ 0 };
}

void vw_httpc_wake(struct vw_httpc *c)
{
	if (c)
		curl_multi_wakeup(c->multi);
}

void vw_httpc_sleep(struct vw_httpc *c, uint64_t ns)
{
	uint64_t end = mono_ns() + ns;

	while (!cancelled(c)) {
		uint64_t now = mono_ns();

		if (now >= end)
			break;
		(void)curl_multi_poll(c->multi, NULL, 0,
				      (int)VW_MIN((end - now) / 1000000ULL + 1, POLL_SLICE_MS), NULL);
		idle(c);
	}
}

/* ---- callbacks ---- */

static size_t on_write(char *data, size_t size, size_t nmemb, void *userdata)
{
	struct xfer *x = userdata;
	struct vw_httpc_resp *resp = x->resp;
	size_t n = size * nmemb;
	char *d;

	if (resp->status == 0)
		curl_easy_getinfo(x->c->easy, CURLINFO_RESPONSE_CODE, &resp->status);
	if (x->req->on_body) {
		x->abort = x->req->on_body(x->req->userdata, resp->status, data, n);
		return x->abort < 0 ? 0 : n;
	}
	if (!x->cap)
		return n;
	if (n > x->cap - resp->body_len) {
		x->abort = -EFBIG;
		return 0;
	}
	d = realloc(resp->body, resp->body_len + n + 1);
	if (!d) {
		x->abort = -ENOMEM;
		return 0;
	}
	memcpy(d + resp->body_len, data, n);
	resp->body = d;
	resp->body_len += n;
	d[resp->body_len] = '\0';
	return n;
}

static size_t on_header(char *line, size_t size, size_t nmemb, void *userdata)
{
	struct xfer *x = userdata;

	x->req->on_header(x->req->userdata, line, size * nmemb);
	return size * nmemb;
}

/* About once a second in a transfer: non-zero aborts it (CURLE_ABORTED_BY_CALLBACK). */
static int on_progress(void *userdata, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	(void)dt, (void)dn, (void)ut, (void)un;
	return cancelled(userdata) ? 1 : 0;
}

/* ---- one request ---- */

static int curl_errno(CURLcode cc)
{
	switch (cc) {
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_COULDNT_CONNECT:
		return -ECONNREFUSED;
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_GOT_NOTHING:
		return -ECONNRESET;
	case CURLE_PARTIAL_FILE:
		return -EBADMSG;
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CERTPROBLEM:
		return -EPROTO;
	case CURLE_FILESIZE_EXCEEDED:
	case CURLE_WRITE_ERROR:
		return -EFBIG;
	case CURLE_OUT_OF_MEMORY:
		return -ENOMEM;
	case CURLE_ABORTED_BY_CALLBACK:
		return -ECANCELED;
	default:
		return -EIO;
	}
}

/* PEM text handed to curl, copied. */
static void set_blob(CURL *e, CURLoption opt, const char *pem)
{
	struct curl_blob b = { .data = (void *)pem, .len = pem ? strlen(pem) : 0,
			       .flags = CURL_BLOB_COPY };

	if (pem)
		curl_easy_setopt(e, opt, &b);
}

static void setup_tls(CURL *e, const struct vw_httpc_tls *t)
{
	if (t->ca_file)
		curl_easy_setopt(e, CURLOPT_CAINFO, t->ca_file);
	set_blob(e, CURLOPT_CAINFO_BLOB, t->ca_pem);
	if (t->cert_file)
		curl_easy_setopt(e, CURLOPT_SSLCERT, t->cert_file);
	if (t->key_file)
		curl_easy_setopt(e, CURLOPT_SSLKEY, t->key_file);
	set_blob(e, CURLOPT_SSLCERT_BLOB, t->cert_pem);
	set_blob(e, CURLOPT_SSLKEY_BLOB, t->key_pem);
	if (t->insecure) {
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
	}
}

static void setup_transport(struct vw_httpc *c, const struct vw_httpc_req *req)
{
	const struct vw_httpc_opts *o = &c->o;
	const char *protocols = o->allow_http ? "http,https" : "https";
	long timeout_ms = req->timeout_ms ? req->timeout_ms : o->timeout_ms;
	CURL *e = c->easy;

	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, protocols);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_USERAGENT, "virtwatt/" VW_VERSION);
	if (o->max_redirects) {
		curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, protocols);
		curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 1L);
		curl_easy_setopt(e, CURLOPT_MAXREDIRS, (long)o->max_redirects);
	}
	if (timeout_ms)
		curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
	if (o->connect_timeout_ms)
		curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, o->connect_timeout_ms);
	if (o->keepalive) {
		curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
		curl_easy_setopt(e, CURLOPT_TCP_KEEPIDLE, KEEPIDLE_S);
		curl_easy_setopt(e, CURLOPT_TCP_KEEPINTVL, KEEPINTVL_S);
	}
	if (o->accept_encoding)
		curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
	if (o->max_body && !req->on_body)
		curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)o->max_body);
	setup_tls(e, &o->tls);
}

static int setup_request(struct vw_httpc *c, const struct vw_httpc_req *req, struct xfer *x,
			 struct curl_slist **hdrs)
{
	CURL *e = c->easy;

	for (const char *const *h = req->headers; h && *h; h++) {
		struct curl_slist *l = curl_slist_append(*hdrs, *h);

		if (!l)
			return -ENOMEM;
		*hdrs = l;
	}
	curl_easy_setopt(e, CURLOPT_URL, req->url);
	if (*hdrs)
		curl_easy_setopt(e, CURLOPT_HTTPHEADER, *hdrs);
	if (req->method && strcmp(req->method, "POST") == 0) {
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, req->body ? req->body : "");
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
	} else if (req->method && strcmp(req->method, "GET") != 0) {
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, req->method);
	}
	if (req->username) {
		curl_easy_setopt(e, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(e, CURLOPT_USERNAME, req->username);
		curl_easy_setopt(e, CURLOPT_PASSWORD, req->password ? req->password : "");
	}
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
	if (req->on_header) {
		curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
		curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
	}
	curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(e, CURLOPT_XFERINFODATA, c);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->resp->error);
	return 0;
}

/* Run the easy handle to completion on the multi handle: its CURLcode, or -ECANCELED. */
static int run(struct vw_httpc *c, CURLcode *ret)
{
	CURLMsg *msg;
	int running = 1, left;

	*ret = CURLE_OK;
	if (curl_multi_add_handle(c->multi, c->easy) != CURLM_OK)
		return -ENOMEM;
	while (!cancelled(c)) {
		if (curl_multi_perform(c->multi, &running) != CURLM_OK || !running)
			break;
		(void)curl_multi_poll(c->multi, NULL, 0, POLL_SLICE_MS, NULL);
		idle(c);
	}
	while ((msg = curl_multi_info_read(c->multi, &left))) {
		if (msg->msg == CURLMSG_DONE && msg->easy_handle == c->easy)
			*ret = msg->data.result;
	}
	curl_multi_remove_handle(c->multi, c->easy);
	return cancelled(c) ? -ECANCELED : 0;
}

int vw_httpc_do(struct vw_httpc *c, const struct vw_httpc_req *req, struct vw_httpc_resp *resp)
{
	struct xfer x = { .c = c, .req = req, .resp = resp, .cap = c->o.max_body };
	struct curl_slist *hdrs = NULL;
	CURLcode cc = CURLE_OK;
	int r;

	vw_httpc_resp_clear(resp);
	curl_easy_reset(c->easy);
	setup_transport(c, req);
	r = setup_request(c, req, &x, &hdrs);
	if (r == 0)
		r = run(c, &cc);
	/* Nothing of this request's may outlive it in the handle. */
	curl_easy_setopt(c->easy, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(c->easy, CURLOPT_ERRORBUFFER, NULL);
	curl_slist_free_all(hdrs);
	if (resp->status == 0)
		curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &resp->status);
	if (r == 0 && x.abort < 0)
		r = x.abort;
	if (r == 0 && cc != CURLE_OK)
		r = curl_errno(cc);
	if (r < 0 && !resp->error[0])
		snprintf(resp->error, sizeof(resp->error), "%s",
			 cc != CURLE_OK ? curl_easy_strerror(cc) : strerror(-r));
	return r;
}

/* ---- helpers ---- */

char *vw_url_escape(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	char *out = malloc(3 * strlen(s) + 1), *p = out;

	if (!out)
		return NULL;
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		    ch == '-' || ch == '.' || ch == '_' || ch == '~') {
			*p++ = (char)ch;
		} else {
			*p++ = '%';
			*p++ = hex[ch >> 4];
			*p++ = hex[ch & 15];
		}
	}
	*p = '\0';
	return out;
}

void vw_backoff_init(struct vw_backoff *b, uint64_t min_ns, uint64_t max_ns, unsigned jitter_pct,
		     uint64_t seed)
{
	*b = (struct vw_backoff){ .min_ns = min_ns, .max_ns = VW_MAX(max_ns, min_ns),
				  .cur_ns = min_ns, .jitter_pct = jitter_pct,
				  .rng = seed ? seed : 0x9e3779b97f4a7c15ULL };
}

static uint64_t rng_next(struct vw_backoff *b)
{
	uint64_t x = b->rng; /* xorshift64 */

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return b->rng = x;
}

uint64_t vw_backoff_next(struct vw_backoff *b)
{
	uint64_t span = b->cur_ns / 100 * b->jitter_pct, delay = b->cur_ns;

	if (span)
		delay += rng_next(b) % span;
	b->cur_ns = VW_MIN(b->cur_ns * 2, b->max_ns);
	return delay;
}

void vw_backoff_reset(struct vw_backoff *b)
{
	b->cur_ns = b->min_ns;
}

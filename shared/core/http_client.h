/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one outbound HTTP client (libcurl, loaded on first use: curl_lazy.h): the kubelet's or API
 * server's pod metadata, a BMC over Redfish, a model server and the OTLP push all go through it,
 * each keeping only its protocol. It owns the transport: allowed protocols, redirects, TLS (CA,
 * client certificate, files or PEM text), timeouts, a cap on the response body, cancellation
 * from another thread, the mapping of transport failures to -errno, and the back-off between
 * attempts (vw_backoff).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* TLS for the connection. Files or PEM text (a kubeconfig's *-data); each may be NULL. */
struct vw_httpc_tls {
	const char *ca_file, *ca_pem;	  /* NULL both: the system's trust store */
	const char *cert_file, *cert_pem; /* a client certificate */
	const char *key_file, *key_pem;
	bool insecure; /* no verification of the peer's certificate and name */
};

struct vw_httpc_opts {
	const char *what;	 /* for log lines and reasons ("podmeta", "redfish", ...) */
	bool allow_http;	 /* else https:// only */
	unsigned max_redirects;	 /* followed (same protocols); 0: none */
	long timeout_ms;	 /* a whole request (vw_httpc_req.timeout_ms may override); 0: none */
	long connect_timeout_ms; /* 0: libcurl's */
	bool keepalive;		 /* TCP keep-alive probes (long watches) */
	bool accept_encoding;	 /* ask for gzip/deflate and undo it */
	/*
	 * The response body kept in vw_httpc_resp.body, at most this (more, or a Content-Length
	 * over it: -EFBIG); 0: the body is discarded. A request with its own on_body ignores it.
	 */
	size_t max_body;
	struct vw_httpc_tls tls;
	/*
	 * Polled about once a second during a request or a vw_httpc_sleep() (and at once after
	 * vw_httpc_wake()): true ends it with -ECANCELED. NULL: never.
	 */
	bool (*cancelled)(void *userdata);
	/* Called at each such poll, on the requesting thread (housekeeping). NULL: nothing. */
	void (*idle)(void *userdata);
	void *userdata;
};

struct vw_httpc_req {
	const char *method; /* "GET" (NULL too), "POST" or "DELETE" */
	const char *url;
	const char *const *headers; /* "Name: value", NULL-terminated; NULL: none */
	const void *body;	    /* POST: sent as is (not copied: valid until the answer) */
	size_t body_len;
	const char *username, *password; /* HTTP basic authentication; NULL: none */
	long timeout_ms;		 /* 0: the client's */
	/*
	 * Stream the response body here instead (status: the answer's): a negative return ends
	 * the request with that error.
	 */
	int (*on_body)(void *userdata, long status, const char *data, size_t len);
	/* Each response header line as received ("Name: value\r\n"). */
	void (*on_header)(void *userdata, const char *line, size_t len);
	void *userdata;
};

struct vw_httpc_resp {
	long status; /* 0 when no answer came */
	char *body;  /* NUL-terminated (max_body > 0 and no on_body); free with vw_httpc_resp_clear */
	size_t body_len;
	char error[256]; /* a transport failure, in words */
};

struct vw_httpc;

/*
 * A client: libcurl loaded and initialised. 0, -ENOPKG (why names the package to install) or
 * -ENOMEM; why gets the reason. opts is copied, but not the strings of opts->tls: they must
 * outlive the client.
 */
int vw_httpc_new(const struct vw_httpc_opts *opts, struct vw_httpc **ret, char *why,
		 size_t whylen);
void vw_httpc_free(struct vw_httpc *c);

/*
 * One request on the client's connection (kept between requests). 0 for any HTTP answer
 * (resp->status); else -errno, resp->error in words: -ETIMEDOUT, -ECONNREFUSED (no connection),
 * -ECONNRESET (cut or no answer), -EPROTO (TLS: the certificate, the handshake), -EBADMSG (a
 * short body), -EFBIG (over max_body), -ENOMEM, -ECANCELED (cancelled), the error on_body
 * returned, -EIO for the rest. resp is cleared first.
 */
int vw_httpc_do(struct vw_httpc *c, const struct vw_httpc_req *req, struct vw_httpc_resp *resp);
void vw_httpc_resp_clear(struct vw_httpc_resp *resp);

/* Sleep up to ns, polling cancelled and idle as a request does; woken by vw_httpc_wake(). */
void vw_httpc_sleep(struct vw_httpc *c, uint64_t ns);
/* From any thread: a request or sleep in progress polls cancelled now. */
void vw_httpc_wake(struct vw_httpc *c);

/* s percent-encoded for a URL (all but letters, digits, '-', '.', '_', '~'). NULL: no memory. */
char *vw_url_escape(const char *s);

/*
 * Exponential back-off between attempts: min, doubled after each up to max, plus a random
 * jitter of up to jitter_pct percent; reset to min after a success.
 */
struct vw_backoff {
	uint64_t min_ns, max_ns, cur_ns;
	unsigned jitter_pct;
	uint64_t rng;
};

/* max is raised to min if below it; seed: any value (0 is replaced). */
void vw_backoff_init(struct vw_backoff *b, uint64_t min_ns, uint64_t max_ns, unsigned jitter_pct,
		     uint64_t seed);
/* The next delay (with jitter); the one after is doubled. */
uint64_t vw_backoff_next(struct vw_backoff *b);
void vw_backoff_reset(struct vw_backoff *b);

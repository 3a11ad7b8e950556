/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The OTLP pusher (otlp.h): a bounded queue of snapshots, filled by the sampling thread when an
 * export is due, emptied by a thread of its own that converts each to OTLP/JSON, gzips it and
 * POSTs it through the HTTP client (http_client.h: libcurl, loaded on first use). A receiver
 * that is away or answers a retryable status (429, 502, 503, 504, as the OTLP specification
 * lists them) is retried with a delay that doubles from 1 s (vw_backoff); the snapshot waits at
 * the head of the queue meanwhile, and the oldest is dropped (counted) when newer ones fill it.
 * Any other status drops that snapshot (counted, said at a falling rate). Stopping cuts a
 * request in flight at once.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gzip.h"
#include "http_client.h"
#include "log.h"
#include "macro.h"
#include "otlp.h"
#include "thread.h"

struct item {
	char *text;
	size_t len;
	uint64_t unix_ns;
};

struct vw_otlp {
	struct vw_otlp_opts o;
	char url[1024];
	char *ca, *cert, *key;
	struct vw_otlp_resource res;
	char *service_name, *service_version, *host_name, *node;
	uint64_t start_unix_ns;
	char **hdrs; /* NULL-terminated "Name: value" */
	size_t n_hdrs;
	struct vw_httpc *client;
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;             /* under lock; read by the transfer's progress callback */
	struct item *q;        /* ring of queue_max */
	size_t head, n;
	uint64_t next_due_ns;  /* vw_now_ns() when the next snapshot is taken */
	struct vw_otlp_stats st;
	struct vw_complaint complaint;
};

static const char *const l_result[] = { "result", "node_name", NULL };
static const char *const l_node[] = { "node_name", NULL };

static const struct vw_metric_family otlp_families[] = {
	{ "virtwatt_otlp_exports_total", VW_METRIC_COUNTER,
	  "Snapshots pushed over OTLP, by result: sent (the receiver took it), failed (refused "
	  "with a status that is not retryable), dropped (the queue was full while the receiver "
	  "was away)",
	  NULL, l_result },
	{ "virtwatt_otlp_retries_total", VW_METRIC_COUNTER,
	  "OTLP requests retried after a network error or a retryable status (429, 502, 503, 504)",
	  NULL, l_node },
	{ "virtwatt_otlp_queue_length", VW_METRIC_GAUGE,
	  "Snapshots waiting to be pushed over OTLP", NULL, l_node },
	{ "virtwatt_otlp_last_success_timestamp_seconds", VW_METRIC_GAUGE,
	  "When an OTLP export last succeeded (Unix time; 0: never)", "seconds", l_node },
};

const struct vw_family_table vw_otlp_family_table = {
	"shared/export/otlp_push.c: vw_otlp_render()", "virtwatt-host, virtwatt-guest",
	"with --exporter.otlp.endpoint", otlp_families, ARRAY_SIZE(otlp_families),
};

/* ---- set-up ---- */

static char *dup_or_null(const char *s)
{
	return s && *s ? strdup(s) : NULL;
}

static int hdr_add(struct vw_otlp *p, const char *line)
{
	char **h = realloc(p->hdrs, (p->n_hdrs + 2) * sizeof(*h));

	if (!h)
		return -ENOMEM;
	p->hdrs = h;
	h[p->n_hdrs] = strdup(line);
	if (!h[p->n_hdrs])
		return -ENOMEM;
	h[++p->n_hdrs] = NULL;
	return 0;
}

/* "k=v,k2=v2" into "k: v" headers; -EINVAL when malformed. */
static int parse_headers(struct vw_otlp *o, const char *spec, char *why, size_t whylen)
{
	const char *p = spec;

	while (p && *p) {
		const char *comma = strchr(p, ','), *eq;
		size_t n = comma ? (size_t)(comma - p) : strlen(p);
		char line[1024];

		eq = memchr(p, '=', n);
		if (!eq || eq == p || n >= sizeof(line) - 2 || memchr(p, '\r', n) ||
		    memchr(p, '\n', n) || memchr(p, ':', (size_t)(eq - p))) {
			snprintf(why, whylen,
				 "--exporter.otlp.headers: \"%.*s\" is not key=value (a list "
				 "key1=value1,key2=value2 as OTEL_EXPORTER_OTLP_HEADERS has it)",
				 (int)VW_MIN(n, (size_t)80), p);
			return -EINVAL;
		}
		snprintf(line, sizeof(line), "%.*s: %.*s", (int)(eq - p), p, (int)(n - (size_t)(eq - p) - 1),
			 eq + 1);
		if (hdr_add(o, line) < 0)
			return -ENOMEM;
		p = comma ? comma + 1 : NULL;
	}
	return 0;
}

/* Stopping cuts a request in flight (vw_otlp_free wakes the client). */
static bool stopping(void *ud)
{
	struct vw_otlp *p = ud;
	bool stop;

	pthread_mutex_lock(&p->lock);
	stop = p->stop;
	pthread_mutex_unlock(&p->lock);
	return stop;
}

/* The receiver's answer is not kept (max_body 0): partial success is only logged. */
static int client_new(struct vw_otlp *p, char *why, size_t whylen)
{
	const struct vw_httpc_opts o = {
		.what = "otlp", .allow_http = true,
		.timeout_ms = (long)(p->o.timeout_ns / VW_NSEC_PER_MSEC),
		.tls = { .ca_file = p->ca, .cert_file = p->cert, .key_file = p->key },
		.cancelled = stopping, .userdata = p,
	};

	return vw_httpc_new(&o, &p->client, why, whylen);
}

int vw_otlp_new(const struct vw_otlp_opts *o, const struct vw_otlp_resource *res,
		uint64_t start_unix_ns, struct vw_otlp **ret, char *why, size_t whylen)
{
	struct vw_otlp *p;
	size_t elen = o->endpoint ? strlen(o->endpoint) : 0;
	const char *suffix = "/v1/metrics";
	int r;

	*ret = NULL;
	if (!o->endpoint || (strncmp(o->endpoint, "http://", 7) != 0 &&
			     strncmp(o->endpoint, "https://", 8) != 0)) {
		snprintf(why, whylen, "--exporter.otlp.endpoint must be an http:// or https:// URL "
				      "(an OTLP/HTTP receiver: the Collector's is http://HOST:4318)");
		return -EINVAL;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->o = *o;
	p->o.queue_max = o->queue_max ? o->queue_max : 8;
	p->o.backoff_max_ns = o->backoff_max_ns ? o->backoff_max_ns : 60 * VW_NSEC_PER_SEC;
	p->o.timeout_ns = o->timeout_ns ? o->timeout_ns : 10 * VW_NSEC_PER_SEC;
	while (elen && o->endpoint[elen - 1] == '/')
		elen--;
	if (elen >= strlen(suffix) && memcmp(o->endpoint + elen - strlen(suffix), suffix,
					      strlen(suffix)) == 0)
		suffix = "";
	snprintf(p->url, sizeof(p->url), "%.*s%s", (int)elen, o->endpoint, suffix);
	p->ca = dup_or_null(o->ca_file);
	p->cert = dup_or_null(o->cert_file);
	p->key = dup_or_null(o->key_file);
	p->service_name = dup_or_null(res->service_name);
	p->service_version = dup_or_null(res->service_version);
	p->host_name = dup_or_null(res->host_name);
	p->node = dup_or_null(res->k8s_node_name);
	p->res = (struct vw_otlp_resource){ p->service_name, p->service_version, p->host_name,
					    p->node };
	p->o.endpoint = p->url;
	p->o.headers = p->o.ca_file = p->o.cert_file = p->o.key_file = NULL;
	p->start_unix_ns = start_unix_ns;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	p->q = calloc(p->o.queue_max, sizeof(*p->q));
	r = p->q ? hdr_add(p, "Content-Type: application/json") : -ENOMEM;
	if (r == 0 && o->gzip)
		r = hdr_add(p, "Content-Encoding: gzip");
	if (r == -ENOMEM)
		snprintf(why, whylen, "out of memory");
	if (r == 0)
		r = parse_headers(p, o->headers, why, whylen);
	if (r == 0)
		r = client_new(p, why, whylen);
	if (r < 0) {
		vw_otlp_free(p);
		return r;
	}
	*ret = p;
	return 0;
}

/* ---- one export ---- */

enum outcome { SENT, RETRY, REFUSED };

/* POST one snapshot. why gets the reason of anything but SENT. */
static enum outcome post(struct vw_otlp *p, const struct item *it, char *why, size_t whylen)
{
	_cleanup_free_ char *json = NULL, *gz = NULL;
	size_t json_len = 0, gz_len = 0;
	struct vw_httpc_resp resp = { 0 };
	struct vw_httpc_req req;
	long status;
	int r;

	if (vw_otlp_json_from_text(it->text, it->len, &p->res, p->start_unix_ns, it->unix_ns,
				   &json, &json_len) < 0 ||
	    (p->o.gzip && vw_gzip(json, json_len, &gz, &gz_len) < 0)) {
		snprintf(why, whylen, "out of memory encoding the snapshot");
		return REFUSED;
	}
	req = (struct vw_httpc_req){ .method = "POST", .url = p->url,
				     .headers = (const char *const *)p->hdrs, .body = gz ? gz : json,
				     .body_len = gz ? gz_len : json_len };
	r = vw_httpc_do(p->client, &req, &resp);
	status = resp.status;
	if (r < 0)
		snprintf(why, whylen, "%s", resp.error);
	vw_httpc_resp_clear(&resp);
	if (r < 0)
		return RETRY;
	if (status >= 200 && status < 300)
		return SENT;
	snprintf(why, whylen, "the receiver answered HTTP %ld", status);
	return status == 429 || status == 502 || status == 503 || status == 504 ? RETRY : REFUSED;
}

/* ---- the thread ---- */

static void item_free(struct item *it)
{
	free(it->text);
	it->text = NULL;
}

/* Put it back at the head (it goes first), unless newer ones filled the queue: then dropped. */
static void requeue(struct vw_otlp *p, struct item *it)
{
	if (p->n >= p->o.queue_max) {
		p->st.dropped++;
		item_free(it);
		return;
	}
	p->head = (p->head + p->o.queue_max - 1) % p->o.queue_max;
	p->q[p->head] = *it;
	p->n++;
}

static void *run(void *arg)
{
	struct vw_otlp *p = arg;
	uint64_t backoff, retry_at = 0;
	struct vw_backoff bo;

	vw_backoff_init(&bo, VW_NSEC_PER_SEC, p->o.backoff_max_ns, 0, 0);

	pthread_mutex_lock(&p->lock);
	while (!p->stop) {
		struct item it;
		enum outcome out;
		char why[512] = "";
		uint64_t now = vw_now_ns();

		if (!p->n || (retry_at && now < retry_at)) {
			if (!p->n) {
				pthread_cond_wait(&p->cond, &p->lock);
			} else {
				struct timespec ts;
				uint64_t wait = retry_at - now;

				clock_gettime(CLOCK_MONOTONIC, &ts);
				ts.tv_sec += (time_t)(wait / VW_NSEC_PER_SEC);
				ts.tv_nsec += (long)(wait % VW_NSEC_PER_SEC);
				if (ts.tv_nsec >= (long)VW_NSEC_PER_SEC) {
					ts.tv_sec++;
					ts.tv_nsec -= (long)VW_NSEC_PER_SEC;
				}
				pthread_cond_timedwait(&p->cond, &p->lock, &ts);
			}
			continue;
		}
		it = p->q[p->head];
		p->q[p->head].text = NULL;
		p->head = (p->head + 1) % p->o.queue_max;
		p->n--;
		pthread_mutex_unlock(&p->lock);
		out = post(p, &it, why, sizeof(why));
		pthread_mutex_lock(&p->lock);
		if (out == SENT) {
			p->st.sent++;
			p->st.last_success_unix_ns = it.unix_ns;
			retry_at = 0;
			vw_backoff_reset(&bo);
			item_free(&it);
			vw_release(&p->complaint, VW_LOG_INFO, "otlp: exporting to %s works again",
				   p->url);
		} else if (out == RETRY && !p->stop) {
			p->st.retries++;
			backoff = vw_backoff_next(&bo);
			retry_at = vw_now_ns() + backoff;
			requeue(p, &it);
			vw_complain(&p->complaint, VW_LOG_WARN,
				    "otlp: exporting to %s: %s; retrying in %.0f s (snapshots wait, "
				    "at most %zu)",
				    p->url, why, (double)backoff / 1e9, p->o.queue_max);
		} else {
			if (out == REFUSED)
				p->st.failed++;
			item_free(&it);
			if (out == REFUSED)
				vw_complain(&p->complaint, VW_LOG_WARN,
					    "otlp: exporting to %s: %s; that snapshot is dropped "
					    "(counted in virtwatt_otlp_exports_total{result=\"failed\"})",
					    p->url, why);
		}
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

void vw_otlp_offer(struct vw_otlp *p, const char *text, size_t len, uint64_t unix_ns)
{
	uint64_t now = vw_now_ns();
	struct item it;

	if (!p || now < p->next_due_ns)
		return;
	p->next_due_ns = now + p->o.interval_ns;
	it = (struct item){ .text = malloc(len + 1), .len = len, .unix_ns = unix_ns };
	if (!it.text)
		return; /* the next one is tried */
	memcpy(it.text, text, len);
	it.text[len] = '\0';
	pthread_mutex_lock(&p->lock);
	if (!p->started) {
		p->started = vw_thread_create(&p->thread, run, p) == 0;
		if (!p->started)
			vw_complain(&p->complaint, VW_LOG_WARN, "otlp: cannot start the pusher");
	}
	if (p->n >= p->o.queue_max) { /* the oldest goes */
		item_free(&p->q[p->head]);
		p->head = (p->head + 1) % p->o.queue_max;
		p->n--;
		p->st.dropped++;
	}
	p->q[(p->head + p->n) % p->o.queue_max] = it;
	p->n++;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

void vw_otlp_get_stats(struct vw_otlp *p, struct vw_otlp_stats *ret)
{
	pthread_mutex_lock(&p->lock);
	*ret = p->st;
	pthread_mutex_unlock(&p->lock);
}

void vw_otlp_free(struct vw_otlp *p)
{
	if (!p)
		return;
	if (p->started) {
		pthread_mutex_lock(&p->lock);
		p->stop = true;
		pthread_cond_signal(&p->cond);
		pthread_mutex_unlock(&p->lock);
		vw_httpc_wake(p->client);
		pthread_join(p->thread, NULL);
	}
	for (size_t i = 0; p->q && i < p->o.queue_max; i++)
		item_free(&p->q[i]);
	free(p->q);
	vw_httpc_free(p->client);
	for (size_t i = 0; i < p->n_hdrs; i++)
		free(p->hdrs[i]);
	free(p->hdrs);
	free(p->ca);
	free(p->cert);
	free(p->key);
	free(p->service_name);
	free(p->service_version);
	free(p->host_name);
	free(p->node);
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

int vw_otlp_render(struct vw_otlp *p, struct vw_prom_writer *w, const char *node_name)
{
	static const char *const results[] = { "sent", "failed", "dropped" };
	const char *node[] = { node_name, NULL };
	struct vw_otlp_stats st;
	size_t queued;
	int r;

	(void)vw_prom_table_trust(&vw_otlp_family_table); /* checked once, not each render */
	if (!p)
		return 0;
	pthread_mutex_lock(&p->lock);
	st = p->st;
	queued = p->n;
	pthread_mutex_unlock(&p->lock);
	r = vw_prom_family(w, &otlp_families[0]);
	for (size_t i = 0; r == 0 && i < ARRAY_SIZE(results); i++) {
		const char *l[] = { results[i], node_name, NULL };
		uint64_t v = i == 0 ? st.sent : i == 1 ? st.failed : st.dropped;

		r = vw_prom_counter(w, l, (double)v);
	}
	if (r == 0)
		r = vw_prom_family_end(w);
	if (r == 0)
		r = vw_prom_single(w, &otlp_families[1], node, (double)st.retries);
	if (r == 0)
		r = vw_prom_single(w, &otlp_families[2], node, (double)queued);
	if (r == 0)
		r = vw_prom_single(w, &otlp_families[3], node,
				   (double)st.last_success_unix_ns / 1e9);
	return r;
}

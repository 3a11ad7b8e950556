/* SPDX-License-Identifier: Apache-2.0 */
/*
 * OTLP push: every family a daemon serves on /metrics, sent to an OpenTelemetry Collector (or
 * any OTLP/HTTP receiver) as OTLP metrics in OTLP/JSON (opentelemetry-proto's
 * ExportMetricsServiceRequest in its canonical JSON mapping): counters as cumulative monotonic
 * sums (the Prometheus name without _total, as OpenTelemetry's Prometheus compatibility rules
 * map it; unit J, W, s, By from the name), gauges as gauges; each label a point attribute (an
 * empty label is an absent one, as in Prometheus); resource attributes per OpenTelemetry's
 * semantic conventions. What is sent is the very snapshot /metrics serves, converted on the
 * pusher's own thread: sampling never waits for the network.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "prom.h"

/* Resource attributes (NULL or "": left out). */
struct vw_otlp_resource {
	const char *service_name;     /* service.name: "virtwatt-host" */
	const char *service_version;  /* service.version */
	const char *host_name;        /* host.name */
	const char *k8s_node_name;    /* k8s.node.name (on a Kubernetes node) */
};

/*
 * A text exposition 0.0.4, as the daemons render it, as one OTLP/JSON
 * ExportMetricsServiceRequest: one resource, one scope ("virtwatt"), one metric a family, its
 * samples as points stamped time_ns (sums start at start_ns). Lines it does not recognise are
 * skipped. 0 with a malloc'd NUL-terminated *ret, or -ENOMEM.
 */
int vw_otlp_json_from_text(const char *text, size_t len, const struct vw_otlp_resource *res,
			   uint64_t start_ns, uint64_t time_ns, char **ret, size_t *ret_len);

struct vw_otlp_opts {
	const char *endpoint;   /* base URL: POST <endpoint>/v1/metrics (or the URL itself when
				 * it already ends in /v1/metrics) */
	uint64_t interval_ns;   /* between exports (at least the daemon's interval) */
	uint64_t timeout_ns;    /* one request */
	const char *headers;    /* "key=value,key2=value2" (OTEL_EXPORTER_OTLP_HEADERS' format) */
	const char *ca_file, *cert_file, *key_file; /* TLS: the receiver's CA, our client pair */
	bool gzip;              /* Content-Encoding: gzip */
	size_t queue_max;       /* snapshots waiting while the receiver is away; the oldest go */
	uint64_t backoff_max_ns; /* retry delay doubles from 1 s up to this */
};

struct vw_otlp_stats {
	uint64_t sent, failed, dropped, retries;
	uint64_t last_success_unix_ns;
};

struct vw_otlp;

/*
 * Start the pusher's thread (libcurl is loaded then: -ENOPKG naming the package when absent).
 * -EINVAL for an endpoint that is not http(s):// or a malformed header list. 0 or -errno,
 * reason in why.
 */
int vw_otlp_new(const struct vw_otlp_opts *o, const struct vw_otlp_resource *res,
		uint64_t start_unix_ns, struct vw_otlp **ret, char *why, size_t whylen);
/* Stop the thread (a request in flight is cut at its timeout) and free. NULL is fine. */
void vw_otlp_free(struct vw_otlp *p);
/*
 * The snapshot just rendered (text 0.0.4) at unix_ns: queued (copied) when an export is due,
 * else ignored. Never blocks on the network. The oldest queued snapshot is dropped (counted)
 * when the queue is full.
 */
void vw_otlp_offer(struct vw_otlp *p, const char *text, size_t len, uint64_t unix_ns);
void vw_otlp_get_stats(struct vw_otlp *p, struct vw_otlp_stats *ret);

/* virtwatt_otlp_* families (exports by result, retries, the last success). */
int vw_otlp_render(struct vw_otlp *p, struct vw_prom_writer *w, const char *node_name);
extern const struct vw_family_table vw_otlp_family_table;

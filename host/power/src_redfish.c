/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Redfish meter: a BMC's whole-node power, one VW_ZONE_PLATFORM zone (the client that
 * speaks to the BMC is redfish_client.c).
 *
 * The client is polled on a thread of its own (poller.h: every `interval`, backing off while the
 * BMC fails; read() integrates the last fresh reading; one older than `staleness` counts
 * nothing and the zone reports the poll's error), which owns the client once it runs.
 *
 * open() connects once on the caller's thread (bounded by the request timeout): credentials
 * refused, a certificate not trusted or a BMC with no power reading fail it, so that the
 * daemon says so at start; a BMC that does not answer yet (down, rebooting, out of sessions)
 * does not: the zone opens stale and the poller connects when it can.
 *
 * The EnergykWh counters are not used: 0.001 kW.h steps are 3.6 kJ on most BMCs, coarser than
 * a whole interval of a node's energy.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "macro.h"
#include "power.h"
#include "poller.h"
#include "redfish_client.h"

#define INTERVAL_MS_DEFAULT 5000L
#define TIMEOUT_MS_DEFAULT 5000L
#define NS_PER_MS 1000000ULL
#define PATH_UNKNOWN "/redfish/v1/" /* the zone's path while the BMC has not been found yet */

_Static_assert(offsetof(struct vw_rf_reading, uw) == 0, "a poller's reading begins with its uW");

struct redfish {
	struct vw_rf_client *client; /* the poller's alone once it runs */
	atomic_bool cancel;          /* aborts the request in flight at close */
	bool connected;              /* the poller's (open()'s before it runs) */
	struct vw_poller poller;
	struct vw_zone_info info;
};

/* The poller's request: a session first where there is none. */
static int rf_poll(void *ctx, void *ret)
{
	struct redfish *rf = ctx;
	int r = rf->connected ? 0 : vw_rf_client_connect(rf->client);

	if (r < 0)
		return r;
	if (!rf->connected)
		vw_info("redfish: %s: reading %s", vw_rf_client_endpoint(rf->client),
			vw_rf_client_path(rf->client));
	rf->connected = true;
	return vw_rf_client_read(rf->client, ret);
}

static void rf_cancel(void *ctx)
{
	struct redfish *rf = ctx;

	atomic_store(&rf->cancel, true);
}

static const char *rf_failing(void *ctx)
{
	struct redfish *rf = ctx;

	return rf->connected ? "the node's power reading" : "connecting";
}

static const struct vw_poller_ops rf_poller_ops = {
	.poll = rf_poll,
	.cancel = rf_cancel,
	.failing = rf_failing,
};

static void rf_free(struct redfish *rf)
{
	if (!rf)
		return;
	vw_poller_fini(&rf->poller);
	vw_rf_client_free(rf->client);
	free(rf);
}

/* A first session on the caller's thread: only a configuration error fails open(). */
static int rf_connect_at_open(struct redfish *rf, const char *endpoint)
{
	int r = vw_rf_client_connect(rf->client);

	if (r < 0 && !vw_rf_error_is_config(r)) {
		vw_warn("redfish: %s: not answering at start (%s): the platform zone counts nothing "
			"until it does",
			endpoint, strerror(-r));
		return 0;
	}
	if (r == 0) {
		rf->connected = true;
		vw_info("redfish: %s: reading %s", endpoint, vw_rf_client_path(rf->client));
	}
	return r;
}

static int redfish_open(const struct vw_power_env *env, void **ret_state)
{
	const struct vw_meter_config *meters = env ? env->ctx : NULL;
	const struct vw_redfish_config *cfg = meters ? meters->redfish : NULL;
	struct redfish *rf;
	long interval_ms, timeout_ms;
	uint64_t stale_ns;
	char what[160];
	int r;

	if (!cfg || !cfg->endpoint || !*cfg->endpoint)
		return -ENODEV; /* no BMC configured: the usual case */
	rf = calloc(1, sizeof(*rf));
	if (!rf)
		return -ENOMEM;
	interval_ms = cfg->interval_ms > 0 ? cfg->interval_ms : INTERVAL_MS_DEFAULT;
	timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : TIMEOUT_MS_DEFAULT;
	stale_ns = (cfg->staleness_ms > 0 ? (uint64_t)cfg->staleness_ms
					  : (uint64_t)(2 * interval_ms + timeout_ms)) *
		   NS_PER_MS;
	snprintf(what, sizeof(what), "redfish: %s", cfg->endpoint);
	r = vw_poller_init(&rf->poller, &rf_poller_ops, rf, what, (uint64_t)interval_ms * NS_PER_MS,
			   stale_ns, sizeof(struct vw_rf_reading));
	if (r == 0)
		r = vw_rf_client_new(cfg, &rf->cancel, &rf->client);
	if (r == 0)
		r = rf_connect_at_open(rf, cfg->endpoint);
	if (r == 0) {
		/* Before the poller runs: from then on the client and `connected` are its own. */
		rf->info.zone = VW_ZONE_PLATFORM;
		rf->info.idle_w = -1;
		snprintf(rf->info.path, sizeof(rf->info.path), "%s",
			 rf->connected ? vw_rf_client_path(rf->client) : PATH_UNKNOWN);
		r = vw_poller_start(&rf->poller, 0);
	}
	if (r < 0) {
		vw_debug("redfish: %s: no power reading: %s", cfg->endpoint, strerror(-r));
		rf_free(rf);
		return r;
	}
	*ret_state = rf;
	return 0;
}

static size_t redfish_zones(void *state, const struct vw_zone_info **ret_zones)
{
	struct redfish *rf = state;

	*ret_zones = &rf->info;
	return 1;
}

static int redfish_read(void *state, const struct vw_node_activity *act, uint64_t *raw_uj,
			int *errs)
{
	struct redfish *rf = state;

	if (!act)
		return -EINVAL;
	return vw_poller_read(&rf->poller, act->now_ns, raw_uj, errs);
}

static void redfish_stats(void *state, struct vw_power_source_stats *ret)
{
	struct redfish *rf = state;

	vw_poller_stats(&rf->poller, ret);
}

static bool redfish_fresh(void *state)
{
	struct redfish *rf = state;

	return vw_poller_current(&rf->poller, NULL) == 0;
}

static size_t redfish_readings(void *state, struct vw_platform_reading *out, size_t max)
{
	struct redfish *rf = state;
	struct vw_rf_reading rd;
	size_t n;

	if (vw_poller_current(&rf->poller, &rd) < 0)
		return 0;
	n = VW_MIN(rd.n_rows, max);
	memcpy(out, rd.rows, n * sizeof(*out));
	return n;
}

static void redfish_close(void *state)
{
	rf_free(state);
}

const struct vw_power_source_ops vw_src_redfish = {
	.name = "redfish",
	.measured = true,
	.open = redfish_open,
	.zones = redfish_zones,
	.read = redfish_read,
	.stats = redfish_stats,
	.fresh = redfish_fresh,
	.readings = redfish_readings,
	.close = redfish_close,
};

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Redfish meter: a BMC's whole-node power, one VW_ZONE_PLATFORM zone (the client that
 * speaks to the BMC is redfish_client.c).
 *
 * The client is polled on a thread of its own (poller.h: every `interval`, backing off while the
 * BMC fails; read() counts the readings, each from its own time to the next's, the last held
 * while fresh; one older than `staleness` counts
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

#include "bmc_file.h"
#include "config.h"
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
	const struct vw_redfish_config *cfg = vw_power_source_config(env, &vw_src_redfish);
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

/* ---- options: --platform.redfish.* ------------------------------------------------------ */

/* The flags as given; redfish_configure() finds this node's BMC in the file they name. */
struct redfish_options {
	bool enabled;           /* off: no Redfish meter even with a BMC file */
	char *config_file;      /* Kepler's BMC file; "": no Redfish */
	char *node_name;        /* this node in it; "": the node name */
	uint64_t interval_ns;   /* between polls of the BMC */
	uint64_t timeout_ns;    /* per request */
	uint64_t staleness_ns;  /* 0: 2 x interval + timeout */
};

#define OFF(f) offsetof(struct redfish_options, f)
static const struct vw_option redfish_rows[] = {
	{ "platform.redfish.enabled", "platform.redfish.enabled", VW_OPT_BOOL,
	  OFF(enabled), "true", NULL,
	  "read the BMC of platform.redfish.config-file (Kepler's "
	  "experimental.platform.redfish.enabled; false: no Redfish meter even with a file)" },
	{ "platform.redfish.config-file", "platform.redfish.configFile", VW_OPT_STRING,
	  OFF(config_file), NULL, "PATH",
	  "Kepler's BMC file (nodes: node name -> BMC id; bmcs: id -> endpoint, username, password "
	  "or passwordFile, insecure, caFile): this node's BMC gives the platform zone over "
	  "Redfish (default: none)" },
	{ "platform.redfish.node-name", "platform.redfish.nodeName", VW_OPT_STRING,
	  OFF(node_name), NULL, "NAME",
	  "this node's name in the BMC file (default: the node name, kube.node-name)" },
	{ "platform.redfish.interval", "platform.redfish.interval", VW_OPT_DURATION,
	  OFF(interval_ns), "5s", "DURATION",
	  "how often the BMC is polled (off the sampling thread; backs off to 60s while it fails)",
	  0.05, 3600 },
	{ "platform.redfish.timeout", "platform.redfish.httpTimeout", VW_OPT_DURATION,
	  OFF(timeout_ns), "5s", "DURATION", "limit for each request to the BMC", 0.05,
	  300 },
	{ "platform.redfish.staleness", "platform.redfish.staleness", VW_OPT_DURATION,
	  OFF(staleness_ns), "0s", "DURATION",
	  "a BMC reading older than this counts no energy (0: 2 x interval + timeout)", 0, 3600 },
};
#undef OFF

/* Kepler's spellings (config/config.go). */
static const struct vw_option_alias redfish_aliases[] = {
	{ "experimental.platform.redfish.enabled", "experimental.platform.redfish.enabled",
	  "platform.redfish.enabled", NULL, NULL },
	{ "experimental.platform.redfish.config-file", "experimental.platform.redfish.configFile",
	  "platform.redfish.config-file", NULL, NULL },
	{ "experimental.platform.redfish.node-name", "experimental.platform.redfish.nodeName",
	  "platform.redfish.node-name", NULL, NULL },
	{ NULL, "experimental.platform.redfish.httpTimeout", "platform.redfish.timeout", NULL,
	  NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

/* The configuration and what it owns: this node's BMC entry, its password from passwordFile. */
struct redfish_configured {
	struct vw_redfish_config cfg; /* first: what the meter gets */
	struct vw_bmc_entry bmc;
	char *password;
};

static void redfish_release(void *config)
{
	struct redfish_configured *c = config;

	if (!c)
		return;
	vw_free_secret(c->password);
	vw_bmc_entry_clear(&c->bmc);
	free(c);
}

/* This node's BMC from the file: 0 with *found false when the file does not name the node. */
static int find_bmc(struct redfish_configured *c, const char *file, const char *node, bool *found)
{
	char err[512] = "";
	int r = vw_bmc_file_lookup(file, node, &c->bmc, err, sizeof(err));

	*found = r == 0;
	if (r == -ENOENT && err[0]) {
		vw_warn("config: %s; no Redfish platform meter (set platform.redfish.node-name to "
			"this node's name in the file)",
			err);
		return 0;
	}
	if (r < 0)
		vw_error("config: platform.redfish.config-file: %s", err[0] ? err : strerror(-r));
	if (r == 0 && c->bmc.password_file) {
		r = vw_power_read_secret(c->bmc.password_file, &c->password);
		if (r < 0)
			vw_error("config: %s: BMC \"%s\": cannot read passwordFile %s: %s", file,
				 c->bmc.id, c->bmc.password_file, strerror(-r));
	}
	return r;
}

/* This node's BMC, or no configuration (no file, disabled, the node not in it). */
static int redfish_configure(const void *opts, const char *node_name, void **ret)
{
	const struct redfish_options *o = opts;
	const char *file = o->config_file;
	const char *node = o->node_name && *o->node_name ? o->node_name : node_name;
	struct redfish_configured *c;
	bool found = false;
	int r;

	*ret = NULL;
	if (!file || !*file)
		return 0;
	if (!o->enabled) {
		vw_info("redfish: platform.redfish.enabled is false: %s is not read", file);
		return 0;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	r = find_bmc(c, file, node, &found);
	if (r == 0 && found && strncmp(c->bmc.endpoint, "https://", 8) != 0) {
		vw_error("config: %s: BMC \"%s\": endpoint %s is not https:// (credentials are not "
			 "sent in clear)",
			 file, c->bmc.id, c->bmc.endpoint);
		r = -EINVAL;
	}
	if (r < 0 || !found) {
		redfish_release(c);
		return r;
	}
	c->cfg = (struct vw_redfish_config){
		.id = c->bmc.id,
		.endpoint = c->bmc.endpoint,
		.username = c->bmc.username,
		.password = c->password ? c->password : c->bmc.password,
		.ca_file = c->bmc.ca_file,
		.insecure = c->bmc.insecure,
		.timeout_ms = (long)(o->timeout_ns / NS_PER_MS),
		.interval_ms = (long)(o->interval_ns / NS_PER_MS),
		.staleness_ms = (long)(o->staleness_ns / NS_PER_MS),
	};
	if (c->bmc.insecure)
		vw_warn("redfish: BMC \"%s\": insecure: its certificate is not checked", c->bmc.id);
	vw_info("redfish: node \"%s\" -> BMC \"%s\" (%s)", node, c->bmc.id, c->bmc.endpoint);
	*ret = c;
	return 0;
}

static const struct vw_source_options redfish_options = {
	.rows = redfish_rows,
	.n_rows = ARRAY_SIZE(redfish_rows),
	.aliases = redfish_aliases,
	.size = sizeof(struct redfish_options),
	.configure = redfish_configure,
	.release = redfish_release,
};

const struct vw_power_source_ops vw_src_redfish = {
	.name = "redfish",
	.about = "the BMC named by platform.redfish.config-file",
	.measured = true,
	.open = redfish_open,
	.zones = redfish_zones,
	.read = redfish_read,
	.stats = redfish_stats,
	.fresh = redfish_fresh,
	.readings = redfish_readings,
	.close = redfish_close,
	.options = &redfish_options,
};

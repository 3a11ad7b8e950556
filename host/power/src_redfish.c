/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Redfish meter: a BMC's whole-node power, one VW_ZONE_PLATFORM zone (the client that
 * speaks to the BMC is redfish_client.c).
 *
 * A BMC answers in hundreds of ms to seconds, rate-limits and sometimes hangs, so no request
 * runs on the sampling thread: a poller thread of this source's own owns the client, polls
 * every `interval` (backing off, doubling to 60 s, while the BMC fails) and keeps the last good
 * reading with the time it was taken. read() takes that reading and integrates it over the
 * sampling clock (integrator.h: µW x ns in integers, the part below 1 µJ carried, the first
 * read only setting the time). A reading older than `staleness` is stale:
 * it counts nothing (it is never carried forward past that), the zone reports the poller's
 * error (or -ESTALE), and the next fresh read only sets the time again. Within `staleness`
 * a poll that failed (a 503 from a busy BMC) leaves the last reading in use.
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
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "integrator.h"
#include "log.h"
#include "macro.h"
#include "power.h"
#include "redfish_client.h"
#include "thread.h"

#define INTERVAL_MS_DEFAULT 5000L
#define TIMEOUT_MS_DEFAULT 5000L
#define BACKOFF_MS_MAX 60000L
#define NS_PER_MS 1000000ULL
#define PATH_UNKNOWN "/redfish/v1/" /* the zone's path while the BMC has not been found yet */

struct redfish {
	struct vw_rf_client *client; /* the poller's alone once it runs */
	pthread_t thread;
	bool running;
	atomic_bool cancel; /* aborts the request in flight at close */
	long interval_ms;
	uint64_t staleness_ns;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* wakes the poller to stop */
	/* Under mu: */
	bool stop;
	bool connected;
	struct vw_rf_reading last; /* the last good poll */
	uint64_t last_at_ns;       /* vw_now_ns() when it was taken; 0: none yet */
	int poll_err;              /* the last poll's result */
	/* The sampling thread's: */
	struct vw_zone_info info;
	struct vw_power_integrator energy; /* the fresh readings over act->now_ns */
	struct vw_complaint complaint;
	struct vw_complaint poll_complaint; /* the poller's */
};

static long backoff_ms(long interval_ms, unsigned failures)
{
	long d = interval_ms;

	for (unsigned i = 0; i < failures && d < BACKOFF_MS_MAX; i++)
		d *= 2;
	return VW_MIN(d, BACKOFF_MS_MAX);
}

/* Sleep on rf->cv (mu held) until ms from now or stop. */
static void wait_ms(struct redfish *rf, long ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * (long)NS_PER_MS;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	while (!rf->stop && pthread_cond_timedwait(&rf->cv, &rf->mu, &ts) == 0)
		;
}

static int poll_once(struct redfish *rf, bool connected, struct vw_rf_reading *rd)
{
	int r = connected ? 0 : vw_rf_client_connect(rf->client);

	if (r == 0 && !connected)
		vw_info("redfish: %s: reading %s", vw_rf_client_endpoint(rf->client),
			vw_rf_client_path(rf->client));
	return r < 0 ? r : vw_rf_client_read(rf->client, rd);
}

static void *poller(void *arg)
{
	struct redfish *rf = arg;
	unsigned failures = 0;
	struct vw_rf_reading rd;

	pthread_mutex_lock(&rf->mu);
	while (!rf->stop) {
		bool connected = rf->connected;
		int r;

		pthread_mutex_unlock(&rf->mu);
		r = poll_once(rf, connected, &rd);
		if (r < 0 && r != -ECANCELED)
			vw_complain(&rf->poll_complaint, VW_LOG_WARN,
				    "redfish: %s: %s: %s; polling again with back-off",
				    vw_rf_client_endpoint(rf->client),
				    connected ? "cannot read the node's power" : "cannot connect",
				    strerror(-r));
		else if (r == 0)
			vw_release(&rf->poll_complaint, VW_LOG_INFO, "redfish: %s: answering again",
				   vw_rf_client_endpoint(rf->client));
		pthread_mutex_lock(&rf->mu);
		rf->poll_err = r;
		if (r == 0) {
			rf->connected = true;
			rf->last = rd;
			rf->last_at_ns = vw_now_ns();
			failures = 0;
		} else {
			failures++;
		}
		wait_ms(rf, r == 0 ? rf->interval_ms : backoff_ms(rf->interval_ms, failures));
	}
	pthread_mutex_unlock(&rf->mu);
	return NULL;
}

static void rf_free(struct redfish *rf)
{
	if (!rf)
		return;
	if (rf->running) {
		pthread_mutex_lock(&rf->mu);
		rf->stop = true;
		atomic_store(&rf->cancel, true);
		pthread_cond_signal(&rf->cv);
		pthread_mutex_unlock(&rf->mu);
		pthread_join(rf->thread, NULL);
	}
	vw_rf_client_free(rf->client);
	pthread_cond_destroy(&rf->cv);
	pthread_mutex_destroy(&rf->mu);
	free(rf);
}

static int rf_init_sync(struct redfish *rf)
{
	pthread_condattr_t ca;
	int r;

	r = -pthread_condattr_init(&ca);
	if (r == 0)
		r = -pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (r == 0)
		r = -pthread_cond_init(&rf->cv, &ca);
	pthread_condattr_destroy(&ca);
	return r < 0 ? r : -pthread_mutex_init(&rf->mu, NULL);
}

static int redfish_open(const struct vw_power_env *env, void **ret_state)
{
	const struct vw_meter_config *meters = env ? env->ctx : NULL;
	const struct vw_redfish_config *cfg = meters ? meters->redfish : NULL;
	struct redfish *rf;
	long timeout_ms;
	int r;

	if (!cfg || !cfg->endpoint || !*cfg->endpoint)
		return -ENODEV; /* no BMC configured: the usual case */
	rf = calloc(1, sizeof(*rf));
	if (!rf)
		return -ENOMEM;
	r = rf_init_sync(rf);
	if (r < 0) {
		free(rf);
		return r;
	}
	rf->interval_ms = cfg->interval_ms > 0 ? cfg->interval_ms : INTERVAL_MS_DEFAULT;
	timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : TIMEOUT_MS_DEFAULT;
	rf->staleness_ns = (cfg->staleness_ms > 0 ? (uint64_t)cfg->staleness_ms
						  : (uint64_t)(2 * rf->interval_ms + timeout_ms)) *
			   NS_PER_MS;
	r = vw_rf_client_new(cfg, &rf->cancel, &rf->client);
	if (r == 0) {
		r = vw_rf_client_connect(rf->client);
		if (r < 0 && !vw_rf_error_is_config(r)) {
			vw_warn("redfish: %s: not answering at start (%s): the platform zone counts "
				"nothing until it does",
				cfg->endpoint, strerror(-r));
			r = 0;
		} else if (r == 0) {
			rf->connected = true;
			vw_info("redfish: %s: reading %s", cfg->endpoint,
				vw_rf_client_path(rf->client));
		}
	}
	if (r == 0) {
		r = -vw_thread_create(&rf->thread, poller, rf);
		rf->running = r == 0;
	}
	if (r < 0) {
		vw_debug("redfish: %s: no power reading: %s", cfg->endpoint, strerror(-r));
		rf_free(rf);
		return r;
	}
	rf->info.zone = VW_ZONE_PLATFORM;
	rf->info.idle_w = -1;
	snprintf(rf->info.path, sizeof(rf->info.path), "%s",
		 rf->connected ? vw_rf_client_path(rf->client) : PATH_UNKNOWN);
	*ret_state = rf;
	return 0;
}

static size_t redfish_zones(void *state, const struct vw_zone_info **ret_zones)
{
	struct redfish *rf = state;

	*ret_zones = &rf->info;
	return 1;
}

/* The last reading, if fresh: 0 and its µW, else the poller's error or -ESTALE. Takes mu. */
static int current(struct redfish *rf, struct vw_rf_reading *ret)
{
	uint64_t now = vw_now_ns();
	int r;

	pthread_mutex_lock(&rf->mu);
	if (rf->last_at_ns && now - rf->last_at_ns <= rf->staleness_ns) {
		r = 0;
		if (ret)
			*ret = rf->last;
	} else {
		r = rf->poll_err < 0 ? rf->poll_err : rf->last_at_ns ? -ESTALE : -ENODATA;
	}
	pthread_mutex_unlock(&rf->mu);
	return r;
}

static int redfish_read(void *state, const struct vw_node_activity *act, uint64_t *raw_uj,
			int *errs)
{
	struct redfish *rf = state;
	struct vw_rf_reading rd;
	int r = act ? current(rf, &rd) : -EINVAL;

	if (r < 0) {
		vw_power_integrator_break(&rf->energy);
		vw_complain(&rf->complaint, VW_LOG_WARN,
			    "redfish: %s: no fresh reading: %s; no energy counted until there is",
			    rf->info.path, strerror(-r));
	} else {
		vw_release(&rf->complaint, VW_LOG_INFO,
			   "redfish: %s: fresh readings again; energy counted from this one on",
			   rf->info.path);
		vw_power_integrate(&rf->energy, rd.uw, act->now_ns);
	}
	raw_uj[0] = rf->energy.energy_uj;
	errs[0] = r;
	return vw_power_read_result(errs, 1);
}

static bool redfish_fresh(void *state)
{
	return current(state, NULL) == 0;
}

static size_t redfish_readings(void *state, struct vw_platform_reading *out, size_t max)
{
	struct redfish *rf = state;
	struct vw_rf_reading rd;
	size_t n;

	if (current(rf, &rd) < 0)
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
	.fresh = redfish_fresh,
	.readings = redfish_readings,
	.close = redfish_close,
};

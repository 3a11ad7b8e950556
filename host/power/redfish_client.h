/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A Redfish client for one BMC (redfish_client.c): HTTPS through the HTTP client
 * (http_client.h), session or basic auth, discovery of the node's power and its reading.
 * Blocking: each call makes one or more requests bounded by the configured timeout, so only
 * the meter's poller thread calls it (src_redfish.c), never the sampling thread.
 */
#pragma once

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "power.h"

struct vw_rf_client;

/* One poll's result: the node's power and the rows it is made of (kepler_platform_watts). */
struct vw_rf_reading {
	uint64_t uw;
	struct vw_platform_reading rows[VW_PLATFORM_MAX_READINGS];
	size_t n_rows;
};

/*
 * A client for cfg (copied): curl set up, not yet connected. *cancel (optional), once true,
 * aborts a request in flight within about a second (-ECANCELED).
 */
int vw_rf_client_new(const struct vw_redfish_config *cfg, const atomic_bool *cancel,
		     struct vw_rf_client **ret);
/*
 * Log in (a session where the BMC has a session service and cfg asks for one) and find the
 * node's power: -ENODEV when no chassis has a reading, -EACCES refused credentials, -EPROTO a
 * certificate not trusted, -EUSERS no session left on the BMC, transport errors as -errno.
 */
int vw_rf_client_connect(struct vw_rf_client *c);
/* After a successful connect: the node's power now. */
int vw_rf_client_read(struct vw_rf_client *c, struct vw_rf_reading *ret);
/* The resource read (/redfish/v1/Chassis/1U/EnvironmentMetrics), "" before connect. */
const char *vw_rf_client_path(const struct vw_rf_client *c);
const char *vw_rf_client_endpoint(const struct vw_rf_client *c);
/* Whether -r from connect names a configuration the BMC will keep refusing (credentials,
 * certificate, no power reading) rather than a BMC that may answer later. */
bool vw_rf_error_is_config(int r);
/* Ends the session (DELETE) and frees. */
void vw_rf_client_free(struct vw_rf_client *c);

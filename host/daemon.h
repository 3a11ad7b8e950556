/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtwatt-host's core: open roots and the power source, then a loop that samples meters every
 * sample interval and, every monitor interval, splits each zone's energy into idle and active
 * and publishes a rendered snapshot that the HTTP server serves as is.
 */
#pragma once

#include <signal.h>
#include <stdint.h>

#include "http.h"
#include "options.h"

struct vw_host;

/* Open everything the config names. -errno with the reason logged. */
int vw_host_new(const struct vw_host_config *cfg, struct vw_host **ret);
void vw_host_free(struct vw_host *h);

/* Read /proc/stat and the meters at now_ns (CLOCK_MONOTONIC). */
int vw_host_sample(struct vw_host *h, uint64_t now_ns);
/* Close the interval ending at now_ns: split, accumulate, render and publish. */
int vw_host_publish(struct vw_host *h, uint64_t now_ns);

struct vw_exposition *vw_host_exposition(struct vw_host *h);

/* Serve HTTP and loop until *stop is set. 0, or -errno when the server cannot start. */
int vw_host_run(struct vw_host *h, volatile sig_atomic_t *stop);

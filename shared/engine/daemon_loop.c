/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon skeleton's loop: HTTP, sample and publish ticks, a wake descriptor, stop. */
#include "daemon_base.h"

#include <errno.h>
#include <poll.h>
#include <string.h>

#include "residency.h"
#include "sigstop.h"

static bool daemon_healthy(void *userdata, char *why, size_t len)
{
	struct vw_daemon *d = userdata;

	return vw_daemon_loop_alive(__atomic_load_n(&d->last_loop_ns, __ATOMIC_RELAXED),
				    vw_daemon_stuck_after_ns(d->opts->interval_ns), why, len);
}

static bool daemon_ready(void *userdata, char *why, size_t len)
{
	struct vw_daemon *d = userdata;

	return d->hooks->ready(d->ud, why, len);
}

/* Sleep until deadline_ns, until the wake descriptor is readable or the daemon's own wake time
 * comes, or until a stop is asked for (sigstop.h); the caller checks its stop flag. */
static void wait_until(struct vw_daemon *d, uint64_t deadline_ns)
{
	const struct vw_daemon_hooks *k = d->hooks;
	struct pollfd pfd[] = {
		{ .fd = vw_sigstop_fd(), .events = POLLIN },
		{ .fd = k->wake_fd ? k->wake_fd(d->ud) : -1, .events = POLLIN },
	};
	uint64_t now = vw_now_ns(), due = deadline_ns;
	int timeout_ms;

	if (k->wake_due)
		due = VW_MIN(due, k->wake_due(d->ud));
	timeout_ms = due > now ? (int)VW_MIN((due - now + 999999) / 1000000, 60000) : 0;
	pfd[1].revents = 0;
	(void)poll(pfd, ARRAY_SIZE(pfd), timeout_ms); /* negative fds are skipped */
	if (k->woken)
		k->woken(d->ud, vw_now_ns(), pfd[1].fd >= 0 && pfd[1].revents);
}

static void progress(struct vw_daemon *d)
{
	__atomic_store_n(&d->last_loop_ns, vw_now_ns(), __ATOMIC_RELAXED);
}

/* Start-up is over (the servers listen): its code and read-only data leave the resident set
 * (residency.h); what the intervals and scrapes run faults back in from the page cache. */
static void drop_startup(struct vw_daemon *d)
{
	size_t kib = 0, n = 0;
	int r = vw_residency_drop_startup(d->self_fd, &kib, &n);

	if (r < 0 && r != -EBADF)
		vw_debug("%s: start-up pages kept: %s", d->hooks->program, strerror(-r));
	else if (r == 0)
		vw_info("%s: start-up done: %zu KiB of %zu read-only file mappings let go",
			d->hooks->program, kib, n);
}

int vw_daemon_run(struct vw_daemon *d, uint64_t sample_ns, uint64_t first_ns,
		  volatile sig_atomic_t *stop)
{
	const struct vw_daemon_options *o = d->opts;
	const struct vw_daemon_hooks *k = d->hooks;
	struct vw_http_opts ho = {
		.max_connections = (unsigned)o->web_max_connections,
		.timeout_s = (unsigned)(o->web_timeout_ns / VW_NSEC_PER_SEC),
		.web_config_file = o->web_config_file,
		.program = k->program,
		.version = VW_VERSION,
		.healthy = daemon_healthy,
		.ready = k->ready ? daemon_ready : NULL,
		.userdata = d,
		.stale_after_ns = vw_daemon_stale_after_ns(o->interval_ns),
	};
	uint64_t t0 = vw_now_ns(), next_sample, next_publish;
	struct vw_http *http[VW_DAEMON_MAX_LISTEN] = { 0 };
	size_t n_http = VW_MIN(o->listen_address.n, ARRAY_SIZE(http));

	/* The baseline: what came before the loop belongs to no interval. */
	(void)(k->sample ? k->sample(d->ud, t0) : k->publish(d->ud, t0));
	progress(d);
	if (o->listen_address.n > n_http)
		vw_warn("http: %zu listen addresses, only the first %zu are served",
			o->listen_address.n, n_http);
	/* One server per address (Kepler's repeatable --web.listen-address), one exposition. */
	for (size_t i = 0; i < n_http; i++) {
		ho.listen_address = o->listen_address.v[i];
		http[i] = vw_http_start(&ho, d->expo);
		if (!http[i]) {
			int r = -errno; /* vw_http_start logged why */

			while (i > 0)
				vw_http_stop(http[--i]);
			return r;
		}
	}
	drop_startup(d);
	if (!k->sample)
		sample_ns = o->interval_ns;
	next_sample = t0 + sample_ns;
	next_publish = t0 + first_ns;
	while (!*stop) {
		uint64_t deadline = k->sample ? next_sample : next_publish, now;

		wait_until(d, deadline);
		if (*stop)
			break;
		now = vw_now_ns();
		if (now < deadline)
			continue;
		if (!k->sample) {
			(void)k->publish(d->ud, now);
			/* Never fall behind: skip missed ticks rather than bursting. */
			while (next_publish <= now)
				next_publish += o->interval_ns;
			progress(d);
			continue;
		}
		(void)k->sample(d->ud, now);
		while (next_sample <= now)
			next_sample += sample_ns;
		if (now + sample_ns / 2 >= next_publish) {
			(void)k->publish(d->ud, now);
			next_publish = now + o->interval_ns;
		}
		progress(d);
	}
	vw_info("%s: stopping", k->program);
	for (size_t i = 0; i < n_http; i++)
		vw_http_stop(http[i]);
	return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
#include "host_fixture.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"

int host_fixture_stage(struct host_fixture *f, const char *root, const char *rel,
		       const char *text)
{
	char *tmp = NULL, *to = NULL;
	int r = -ENOMEM;

	if (!f->atomic)
		return vw_fixture_write(root, rel, text, 0);
	if (f->n_staged == sizeof(f->staged) / sizeof(f->staged[0]))
		return -E2BIG;
	if (asprintf(&tmp, "%s.new", rel) > 0 && asprintf(&to, "%s/%s", root, rel) > 0) {
		r = vw_fixture_write(root, tmp, text, 0);
		if (r == 0) {
			f->staged[f->n_staged++] = to;
			to = NULL;
		}
	}
	free(tmp);
	free(to);
	return r;
}

int host_fixture_commit(struct host_fixture *f)
{
	char from[4096];
	int r = 0;

	for (unsigned i = 0; i < f->n_staged; i++) {
		snprintf(from, sizeof(from), "%s.new", f->staged[i]);
		if (rename(from, f->staged[i]) < 0 && r == 0)
			r = -errno;
		free(f->staged[i]);
	}
	f->n_staged = 0;
	return r;
}

static int write_u64(struct host_fixture *f, const char *root, const char *rel, uint64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%llu\n", (unsigned long long)v);
	return host_fixture_stage(f, root, rel, buf);
}

static uint64_t zone_value(const struct host_fixture *f, unsigned i)
{
	const struct host_fixture_zone *z = &f->zones[i];
	uint64_t v = z->start_uj + f->energy_uj[i];

	/* energy_uj runs 0 .. max-1 and wraps to 0: delta = (max - prev) + cur. */
	return z->max_range_uj ? v % z->max_range_uj : v;
}

static int write_zones(struct host_fixture *f)
{
	for (unsigned i = 0; i < f->n_zones; i++) {
		char rel[256];
		int r;

		snprintf(rel, sizeof(rel), "class/powercap/%s/energy_uj", f->zones[i].dir);
		r = write_u64(f, f->sys, rel, zone_value(f, i));
		if (r < 0)
			return r;
	}
	return 0;
}

static int write_stat(struct host_fixture *f)
{
	char buf[4096];
	int n;
	/* Busy time spread over user and system, idle time over idle and iowait. */
	uint64_t user = f->busy_ticks * 3 / 4, system = f->busy_ticks - user;
	uint64_t iowait = f->idle_ticks / 10, idle = f->idle_ticks - iowait;

	n = snprintf(buf, sizeof(buf), "cpu  %llu 0 %llu %llu %llu 0 0 0 0 0\n",
		     (unsigned long long)user, (unsigned long long)system,
		     (unsigned long long)idle, (unsigned long long)iowait);
	for (unsigned c = 0; c < f->ncpus; c++)
		n += snprintf(buf + n, sizeof(buf) - (size_t)n, "cpu%u 0 0 0 0 0 0 0 0 0 0\n", c);
	snprintf(buf + n, sizeof(buf) - (size_t)n, "intr 0\nctxt 0\nbtime 1700000000\n");
	return host_fixture_stage(f, f->proc, "stat", buf);
}

static int write_cpuinfo(struct host_fixture *f)
{
	char buf[8192];
	int n = 0;

	for (unsigned c = 0; c < f->ncpus; c++)
		n += snprintf(buf + n, sizeof(buf) - (size_t)n,
			      "processor\t: %u\nvendor_id\t: GenuineIntel\ncpu family\t: 6\n"
			      "model name\t: Intel(R) Xeon(R) Test CPU @ 2.00GHz\n"
			      "physical id\t: %u\ncore id\t\t: %u\n\n",
			      c, c / 2, c % 2);
	return vw_fixture_write(f->proc, "cpuinfo", buf, 0);
}

int host_fixture_init(struct host_fixture *f, const struct host_fixture_zone *zones,
		      unsigned n_zones, unsigned ncpus)
{
	int r;

	*f = (struct host_fixture){ .zones = zones, .n_zones = n_zones, .ncpus = ncpus };
	if (n_zones > 16)
		return -E2BIG;
	for (unsigned i = 0; i < n_zones; i++)
		f->watts[i] = zones[i].watts;
	f->root = vw_fixture_mkdtemp_mem("host");
	if (!f->root)
		return -errno;
	snprintf(f->sys, sizeof(f->sys), "%s/sys", f->root);
	snprintf(f->proc, sizeof(f->proc), "%s/proc", f->root);
	r = vw_fixture_mkdir(f->sys, "class");
	if (r < 0)
		return r;
	for (unsigned i = 0; i < n_zones; i++) {
		char rel[256];

		snprintf(rel, sizeof(rel), "class/powercap/%s/name", zones[i].dir);
		char name[64];
		snprintf(name, sizeof(name), "%s\n", zones[i].name);
		r = vw_fixture_write(f->sys, rel, name, 0);
		if (r == 0 && zones[i].max_range_uj) {
			snprintf(rel, sizeof(rel), "class/powercap/%s/max_energy_range_uj",
				 zones[i].dir);
			r = write_u64(f, f->sys, rel, zones[i].max_range_uj);
		}
		if (r < 0)
			return r;
	}
	r = write_zones(f);
	if (r == 0)
		r = write_stat(f);
	if (r == 0)
		r = write_cpuinfo(f);
	return r;
}

int host_fixture_advance_ms(struct host_fixture *f, double usage, uint64_t ms)
{
	uint64_t ticks = f->ncpus * ms / 10; /* USER_HZ 100 */
	uint64_t busy = (uint64_t)(usage * (double)ticks + 0.5);
	int r;

	for (unsigned i = 0; i < f->n_zones; i++)
		f->energy_uj[i] += f->watts[i] * ms * 1000ULL;
	f->busy_ticks += busy;
	f->idle_ticks += ticks - busy;
	r = write_zones(f);
	if (r == 0)
		r = write_stat(f);
	/* All at once: a reader between two files would see the meter and the CPU time apart. */
	return r < 0 ? r : host_fixture_commit(f);
}

int host_fixture_advance(struct host_fixture *f, double usage)
{
	f->seconds++;
	return host_fixture_advance_ms(f, usage, 1000);
}

void host_fixture_fini(struct host_fixture *f)
{
	for (unsigned i = 0; i < f->n_staged; i++)
		free(f->staged[i]);
	f->n_staged = 0;
	vw_fixture_rm(f->root);
	f->root = NULL;
}

static void *clock_main(void *ud)
{
	struct host_fixture_clock *c = ud;

	for (;;) {
		pthread_mutex_lock(&c->lock);
		if (c->stop) {
			pthread_mutex_unlock(&c->lock);
			return NULL;
		}
		c->step(c->ud);
		pthread_mutex_unlock(&c->lock);
		usleep(c->period_ms * 1000);
	}
}

int host_fixture_clock_start(struct host_fixture_clock *c, unsigned period_ms,
			     void (*step)(void *ud), void *ud)
{
	*c = (struct host_fixture_clock){ .period_ms = period_ms, .step = step, .ud = ud };
	struct sched_param sp = { .sched_priority = 1 };
	int r;

	pthread_mutex_init(&c->lock, NULL);
	r = -pthread_create(&c->thread, NULL, clock_main, c);
	/*
	 * A real meter advances whatever the load; a fixture thread starved by a busy machine
	 * (CI runs tests side by side) would lag and catch up, giving one interval 0.6 s of energy
	 * and the next 1.4 s. As root the clock runs real-time (it sleeps between short steps);
	 * without the privilege it stays as it was.
	 */
	if (r == 0)
		(void)pthread_setschedparam(c->thread, SCHED_FIFO, &sp);
	return r;
}

void host_fixture_clock_stop(struct host_fixture_clock *c)
{
	pthread_mutex_lock(&c->lock);
	c->stop = true;
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->thread, NULL);
	pthread_mutex_destroy(&c->lock);
}

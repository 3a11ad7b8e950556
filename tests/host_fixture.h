/* SPDX-License-Identifier: Apache-2.0 */
/* A fake host for virtwatt-host tests: sysfs powercap zones and procfs stat/cpuinfo. */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct host_fixture_zone {
	const char *dir;  /* "intel-rapl:0", "intel-rapl:0:0" */
	const char *name; /* "package-0", "dram" */
	uint64_t max_range_uj;
	uint64_t start_uj;
	uint64_t watts; /* advance per simulated second */
};

struct host_fixture {
	char *root; /* contains sys/ and proc/ */
	char sys[512], proc[512];
	const struct host_fixture_zone *zones;
	unsigned n_zones;
	unsigned ncpus;
	uint64_t energy_uj[16]; /* unwrapped energy per zone */
	uint64_t watts[16];     /* current power per zone (starts at zones[i].watts) */
	uint64_t seconds;    /* simulated time */
	uint64_t busy_ticks; /* cumulative, all CPUs */
	uint64_t idle_ticks;
	bool atomic; /* advance() replaces files whole (for daemons reading them meanwhile) */
	char *staged[32]; /* atomic: files written as <path>.new, renamed by the commit */
	unsigned n_staged;
};

/* Create the tree (zones may be NULL for a machine with no meter). */
int host_fixture_init(struct host_fixture *f, const struct host_fixture_zone *zones,
		      unsigned n_zones, unsigned ncpus);
/* Advance the simulated clock by one second at the given CPU usage (0..1). */
int host_fixture_advance(struct host_fixture *f, double usage);
/* The same over ms milliseconds (a multiple of 10 for whole ticks; `seconds` is left alone). */
int host_fixture_advance_ms(struct host_fixture *f, double usage, uint64_t ms);
void host_fixture_fini(struct host_fixture *f);
/*
 * root/rel's next text. Atomic: written beside it and renamed by host_fixture_commit() (which
 * advance() calls at its end) with every other file of the step, back to back, so a daemon
 * reading meanwhile does not see the meter moved and the CPU time not (under load a step's
 * writes spread over milliseconds); otherwise written in place at once.
 */
int host_fixture_stage(struct host_fixture *f, const char *root, const char *rel,
		       const char *text);
int host_fixture_commit(struct host_fixture *f);

/*
 * A thread that calls step(ud) every period_ms with `lock` held, until stopped: a fixture that
 * moves in real time while a daemon reads it. Take `lock` to change what step reads.
 */
struct host_fixture_clock {
	pthread_t thread;
	pthread_mutex_t lock;
	bool stop;
	unsigned period_ms;
	void (*step)(void *ud);
	void *ud;
};

int host_fixture_clock_start(struct host_fixture_clock *c, unsigned period_ms,
			     void (*step)(void *ud), void *ud);
/* Stop the thread and wait for it (after its current step). */
void host_fixture_clock_stop(struct host_fixture_clock *c);

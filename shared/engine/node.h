/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The node-energy stage both daemons run: from the opened power sources to each zone's
 * interval, split into idle and active.
 *
 * It takes the daemon's source chains (the host: its CPU zones' source, then a platform meter;
 * the guest: one chain, passthrough, host model, estimator) and owns, once for both daemons:
 *  - the /proc/stat activity of each sample (the estimator's input, the interval's usage);
 *  - one wrap-safe counter per source zone (energy.h), two where the source splits idle and
 *    active itself (the guest's passthrough), with the gaps a polled meter counted;
 *  - the idle choice per zone: configured, the source's, fitted on a meter's clean intervals,
 *    else the residual rule; the split of each interval into idle and active (interval.h);
 *  - the non-CPU remainder (platform minus package and dram) where both are measured;
 *  - within a chain of several sources, the one used (the first fresh one, with hysteresis:
 *    the chosen one stays while fresh, a better one takes over at the next interval), and the
 *    switch: the new source's counters are taken as they stand (a rebase), so no energy from
 *    before its interval is counted.
 * Sample as often as the daemon likes; close once per interval, to the last sample.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "idle.h"
#include "metrics.h"
#include "power_source.h"
#include "procfs.h"
#include "workloads.h"

#define VW_NODE_MAX_CHAINS 2
#define VW_NODE_MAX_CHAIN 3 /* sources in one chain */

/* A chain of opened sources in preference order (a chain of one never switches). */
struct vw_node_chain {
	struct vw_power_source src[VW_NODE_MAX_CHAIN];
	size_t n;
};

struct vw_node_opts {
	int procfs_fd;      /* /proc/stat is read there */
	const char *procfs; /* its name, for messages */
	const char *who;    /* "host", "guest": messages */
	struct vw_cpu_stat stat; /* /proc/stat at start */
	/* Configured idle power per zone kind, < 0 for none (host: power.idle-watts). NULL: none. */
	const double *idle_w;
	/* The idle fit (a meter's clean intervals): window 0 for none. */
	size_t idle_window;
	double idle_min_spread;
	/* Set: one zone per zone kind at this path whatever the source (a chain that switches:
	 * counters continue), each shown once a source has read it. NULL: the sources' zones as
	 * they are (a later chain's zone kind replaces an earlier chain's zones of that kind). */
	const char *zone_path;
	/* The idle of a source that does not split it itself stays with the node (a guest's guess
	 * at a host idle share it cannot know), not the workloads'. */
	bool estimated_idle_to_node;
	bool noncpu; /* show platform minus package and dram (the host) */
};

/*
 * Configured idle power per zone kind from ZONE=WATTS items (power.idle-watts: package, core,
 * uncore, dram, psys, platform; 0 <= WATTS <= 100000) into out (-1 where none). -EINVAL, logged.
 */
int vw_node_parse_idle_watts(const char *const *v, size_t n, double out[VW_ZONE__COUNT]);

struct vw_node;

/*
 * The stage over chains[0..n_chains) (each with at least one source; the stage owns them from
 * here, closed in vw_node_free() whatever the result). -errno.
 */
int vw_node_new(const struct vw_node_opts *o, struct vw_node_chain *chains, size_t n_chains,
		struct vw_node **ret);
void vw_node_free(struct vw_node *n);

/*
 * One sample at now_ns: /proc/stat (the previous sample's kept when it cannot be read: the
 * error is returned, complained about once), then each chain's source in use. 0 or -errno.
 */
int vw_node_sample(struct vw_node *n, uint64_t now_ns);
/*
 * Close the interval at the last sample: each zone's energy since the last close, split; the
 * non-CPU remainder; a chain whose better source came back switches to it (rebased) for the
 * next interval. Returns the interval's length in ns (0 before a second sample).
 */
uint64_t vw_node_close(struct vw_node *n);

/* The last closed interval per zone kind (sockets summed), for the workloads. */
void vw_node_zone_energy(const struct vw_node *n, struct vw_zone_energy ze[VW_ZONE__COUNT]);
/*
 * The node view's energy part: zones (into zones[0..VW_POWER_MAX_ZONES), those shown), usage,
 * the non-CPU remainder. The caller fills the names (source, model, ...).
 */
void vw_node_fill_view(const struct vw_node *n, struct vw_node_view *v,
		       struct vw_node_zone_view zones[VW_POWER_MAX_ZONES]);

/* Zones (all, shown or not) and each one's view and whether a meter measures it. */
size_t vw_node_n_zones(const struct vw_node *n);
const struct vw_node_zone_view *vw_node_zone(const struct vw_node *n, size_t i, bool *ret_measured);

/* Chain c's source the last interval's energy came from, and the one chosen for the next. */
const struct vw_power_source *vw_node_used(const struct vw_node *n, size_t c);
size_t vw_node_used_index(const struct vw_node *n, size_t c);
size_t vw_node_want_index(const struct vw_node *n, size_t c);
const struct vw_power_source *vw_node_source(const struct vw_node *n, size_t c, size_t k);
size_t vw_node_n_chains(const struct vw_node *n);
uint64_t vw_node_switches(const struct vw_node *n); /* all chains' (the first choice is none) */

/* The last sample: its /proc/stat, its time, the interval's usage ratio. */
const struct vw_cpu_stat *vw_node_stat(const struct vw_node *n);
uint64_t vw_node_sample_ns(const struct vw_node *n);
double vw_node_usage(const struct vw_node *n);
bool vw_node_sampled(const struct vw_node *n);

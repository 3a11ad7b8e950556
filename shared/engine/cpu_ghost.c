/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ghost check's cadence (cpu_ghost.h). Two clocks per process, kept in its snapshot entry
 * from read to read: quiet, the reads in a row it was known only from its exited threads, and
 * unchecked, the reads since it was last looked up (VW_GHOST_RECHECK for one never looked up:
 * due as soon as it is quiet long enough), with VW_GHOST_FOUND_GONE where that lookup found it
 * gone. A process is due when it is quiet enough and unchecked >= VW_GHOST_RECHECK, or, found
 * gone, VW_GHOST_CONFIRM_READS reads and VW_GHOST_CONFIRM_NS after that lookup; when more are
 * due than the budget allows, those found gone go first, then those with the highest
 * unchecked count, so one left over is first in line next read: with n due and a budget of b,
 * every one is looked up within ceil(n / b) reads. Only a second lookup in a row that finds
 * it gone reports it exited.
 */
#include "cpu_ghost.h"

#include <stdbool.h>

/* When the read that is `back` reads before this one ran (0: this one). */
static uint64_t read_time(const struct vw_ghost_check *g, unsigned back)
{
	return back < g->n_reads + 1 ? g->read_ns[(g->n_reads - back) % VW_GHOST_RING] : 0;
}

static bool due(const struct vw_ghost_check *g, const struct vw_proc_cpu *p, uint64_t now)
{
	unsigned n = p->unchecked & VW_GHOST_UNCHECKED_MAX;

	if (p->quiet < VW_GHOST_QUIET_READS)
		return false;
	/* Since the lookup that found it gone. The count stops at VW_GHOST_UNCHECKED_MAX: read
	 * n back is then later than that lookup, and with reads closer than CONFIRM_NS / MAX
	 * (7.9 ms: a test's) the window never passed, the process was never reported. As many
	 * reads confirm it too (a daemon's reads are far apart: never the first to come). */
	if (p->unchecked & VW_GHOST_FOUND_GONE)
		return n >= VW_GHOST_CONFIRM_READS &&
		       (n >= VW_GHOST_UNCHECKED_MAX || now - read_time(g, n) >= VW_GHOST_CONFIRM_NS);
	return n >= VW_GHOST_RECHECK && now - read_time(g, p->quiet - 1u) >= VW_GHOST_QUIET_NS;
}

/* The clocks a candidate carries from what the previous read reported of it. */
static void carry(struct vw_proc_cpu *p, const struct vw_proc_seen *was)
{
	unsigned n;

	if (!was || !was->quiet) {
		p->quiet = 1;
		p->unchecked = VW_GHOST_RECHECK;
		return;
	}
	n = (was->unchecked & VW_GHOST_UNCHECKED_MAX) + 1u;
	p->quiet = was->quiet < UINT8_MAX ? was->quiet + 1 : UINT8_MAX;
	p->unchecked = (uint8_t)((was->unchecked & VW_GHOST_FOUND_GONE) |
				 VW_MIN(n, VW_GHOST_UNCHECKED_MAX));
}

/* Looks p up: the second lookup in a row that finds it gone reports it exited (true). */
static bool look_up(struct vw_ghost_check *g, struct vw_proc_cpu *p)
{
	uint8_t found = p->unchecked & VW_GHOST_FOUND_GONE;
	int r = g->gone(g->ctx, p);

	if (r > 0 && found) {
		if (g->drop)
			g->drop(g->ctx, p);
		p->exited = true;
		return true;
	}
	if (r > 0)
		p->unchecked = VW_GHOST_FOUND_GONE;
	else
		p->unchecked = r < 0 ? found : 0; /* cannot tell: as it was; there: not gone */
	return false;
}

size_t vw_ghost_check_run(struct vw_ghost_check *g, struct vw_cpu_snapshot *snap,
			  struct vw_cpu_seen prev, uint64_t now)
{
	size_t at[UINT8_MAX + 1] = { 0 }, n_due = 0, caught = 0, take_at_min = SIZE_MAX;
	unsigned min = 0; /* the lowest rank (unchecked, whole) looked up this read */

	g->read_ns[g->n_reads % VW_GHOST_RING] = now;
	for (size_t i = 0; i < snap->n_procs; i++) {
		struct vw_proc_cpu *p = &snap->procs[i];

		if (p->exited || p->kind != VW_PROC_KIND_UNKNOWN)
			continue;
		carry(p, vw_cpu_seen_find(prev, p->tgid, p->start_time));
		if (due(g, p, now)) {
			at[p->unchecked]++;
			n_due++;
		}
	}
	if (n_due > g->budget) { /* the budget's worth that waited longest */
		size_t above = 0;

		for (min = UINT8_MAX; above + at[min] < g->budget; min--)
			above += at[min];
		take_at_min = g->budget - above;
	}
	for (size_t i = 0; i < snap->n_procs && n_due; i++) {
		struct vw_proc_cpu *p = &snap->procs[i];

		if (p->exited || p->kind != VW_PROC_KIND_UNKNOWN || !due(g, p, now) ||
		    p->unchecked < min)
			continue;
		if (p->unchecked == min && !take_at_min)
			continue;
		if (p->unchecked == min)
			take_at_min--;
		caught += look_up(g, p);
	}
	g->ghosts += caught;
	g->n_reads++;
	return caught;
}

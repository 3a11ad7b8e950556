/* SPDX-License-Identifier: Apache-2.0 */
#include "node.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "energy.h"
#include "interval.h"
#include "log.h"

/*
 * One zone of one source: the energy of the open interval, each raw reading's wrap-safe delta
 * added as it is read (a counter's total_uj here is since the last close, which empties it:
 * no running total to take differences of), and its gap count at the last close.
 */
struct src_zone {
	struct vw_energy_counter ctr;  /* the zone's energy; its active part where the source splits */
	struct vw_energy_counter idle; /* where the source splits: its idle part */
	uint64_t mark_gaps;
	int out; /* the stage's zone it feeds, or -1 (left out) */
};

struct node_src {
	struct vw_power_source ps;
	const struct vw_zone_info *zi; /* the source's, live (a guest source's idle_w moves) */
	size_t n_zones;
	struct src_zone z[VW_POWER_MAX_ZONES];
	uint64_t gaps_seen; /* the source's own gap count (a polled meter's) already added */
};

struct node_chain {
	struct node_src *s[VW_NODE_MAX_CHAIN];
	size_t n;
	size_t want; /* chosen for the next interval (hysteresis) */
	size_t used; /* read at the last sample: the interval's energy comes from it */
	size_t best; /* the first fresh one at the last sample */
};

/* One zone as shown: a source's zone, or (zone_path) one zone kind whatever the source. */
struct node_zone {
	bool present;
	bool measured; /* a meter's: its idle baseline may be fitted */
	enum vw_zone zone;
	char path[128];
	double configured_idle_w; /* < 0: none */
	struct vw_idle_fit *fit;
	uint64_t gaps, wraps, read_errors, filled_ns;
	uint64_t int_idle_uj, int_active_uj, given_idle_uj; /* the last interval */
	struct vw_node_zone_view view;
};

struct vw_node {
	struct vw_node_opts o;
	struct node_chain c[VW_NODE_MAX_CHAINS];
	size_t n_chains;
	struct node_zone z[VW_POWER_MAX_ZONES];
	size_t n_zones;
	struct vw_cpu_stat stat_sample, stat_close;
	uint64_t sample_ns, close_ns; /* the last sample, the last close (the interval's start) */
	bool sampled;
	uint64_t closes, switches;
	double usage;
	struct vw_node_activity act; /* the last sample's */
	struct vw_complaint stat_complaint;
	struct vw_kept_file stat_file; /* procfs/stat, kept open */
	bool has_noncpu;    /* a platform zone and CPU zones: their difference is shown */
	uint64_t noncpu_uj; /* platform minus package and dram, each interval's at least 0 */
	double noncpu_w;
};

/* Counters that start from what the source reports, without a delta. */
static void prime_at(struct src_zone *sz, uint64_t raw_uj, uint64_t idle_uj, uint64_t now_ns)
{
	sz->ctr.primed = sz->idle.primed = true;
	sz->ctr.last_raw_uj = raw_uj;
	sz->idle.last_raw_uj = idle_uj;
	sz->ctr.last_ns = sz->idle.last_ns = now_ns;
	sz->ctr.total_uj = sz->idle.total_uj = 0;
}

/* ---- zones ---------------------------------------------------------------------------------- */

/* A zone kind some chain after c has: chain c's zones of that kind are left out for it (a
 * platform meter's platform zone replaces a model's). */
static bool replaced_later(const struct vw_node *n, size_t c, enum vw_zone zone)
{
	for (size_t l = c + 1; l < n->n_chains; l++)
		for (size_t k = 0; k < n->c[l].n; k++)
			for (size_t j = 0; j < n->c[l].s[k]->n_zones; j++)
				if (n->c[l].s[k]->zi[j].zone == zone)
					return true;
	return false;
}

static int add_zone(struct vw_node *n, const struct vw_zone_info *zi, const char *path,
		    bool measured, bool present)
{
	struct node_zone *z = &n->z[n->n_zones];

	z->zone = zi->zone;
	snprintf(z->path, sizeof(z->path), "%s", path);
	z->measured = measured;
	z->present = present;
	z->configured_idle_w = n->o.idle_w ? n->o.idle_w[zi->zone] : -1;
	if (n->o.idle_window) {
		z->fit = vw_idle_fit_new(n->o.idle_window, n->o.idle_min_spread);
		if (!z->fit)
			return -ENOMEM;
	}
	z->view = (struct vw_node_zone_view){ .zone = z->zone, .path = z->path,
					      .idle_baseline_w = -1 };
	return (int)n->n_zones++;
}

static void log_zone(const struct vw_zone_info *zi)
{
	if (zi->max_range_uj)
		vw_info("power: zone %s socket %u at %s (wraps at %llu uJ)", vw_zone_name(zi->zone),
			zi->socket, zi->path, (unsigned long long)zi->max_range_uj);
	else
		vw_info("power: zone %s socket %u at %s", vw_zone_name(zi->zone), zi->socket,
			zi->path);
}

/* Each source's zones to the stage's: one per zone kind (zone_path), else each as it is. */
static int map_zones(struct vw_node *n)
{
	if (n->o.zone_path)
		for (size_t k = 0; k < VW_ZONE__COUNT; k++) {
			struct vw_zone_info zi = { .zone = (enum vw_zone)k };
			int r = add_zone(n, &zi, n->o.zone_path, false, false);

			if (r < 0)
				return r;
		}
	for (size_t c = 0; c < n->n_chains; c++)
		for (size_t k = 0; k < n->c[c].n; k++) {
			struct node_src *s = n->c[c].s[k];

			for (size_t j = 0; j < s->n_zones; j++) {
				const struct vw_zone_info *zi = &s->zi[j];
				int out = -1;

				vw_energy_counter_init(&s->z[j].ctr, zi->max_range_uj,
						       zi->max_power_uw);
				vw_energy_counter_init(&s->z[j].idle, zi->max_range_uj,
						       zi->max_power_uw);
				/* A chain's sources count from 0 when opened (they integrate
				 * from then): their first reading is energy, not a baseline. */
				if (n->o.zone_path)
					prime_at(&s->z[j], 0, 0, 0);
				if (n->o.zone_path)
					out = zi->zone < VW_ZONE__COUNT ? (int)zi->zone : -1;
				else if (!replaced_later(n, c, zi->zone) &&
					 n->n_zones < VW_POWER_MAX_ZONES) {
					out = add_zone(n, zi, zi->path, s->ps.ops->measured, true);
					if (out >= 0)
						log_zone(zi);
				}
				if (out == -ENOMEM)
					return out;
				s->z[j].out = out;
			}
		}
	return 0;
}

int vw_node_new(const struct vw_node_opts *o, struct vw_node_chain *chains, size_t n_chains,
		struct vw_node **ret)
{
	struct vw_node *n = calloc(1, sizeof(*n));
	int r = n ? 0 : -ENOMEM;

	if (n)
		n->stat_file = (struct vw_kept_file)VW_KEPT_FILE_INIT;
	for (size_t c = 0; c < n_chains; c++)
		if (!chains[c].n || chains[c].n > VW_NODE_MAX_CHAIN || n_chains > VW_NODE_MAX_CHAINS)
			r = -EINVAL; /* every source is still closed below */
	for (size_t c = 0; c < n_chains && c < VW_NODE_MAX_CHAINS; c++) {
		struct node_chain *ch = n ? &n->c[c] : NULL;

		for (size_t k = 0; k < chains[c].n && k < VW_NODE_MAX_CHAIN; k++) {
			struct node_src *s = ch && r == 0 ? calloc(1, sizeof(*s)) : NULL;

			if (!s) { /* the stage owns the sources from here */
				vw_power_source_close(&chains[c].src[k]);
				r = r < 0 ? r : -ENOMEM;
				continue;
			}
			s->ps = chains[c].src[k];
			s->n_zones = VW_MIN(s->ps.ops->zones(s->ps.state, &s->zi),
					    (size_t)VW_POWER_MAX_ZONES);
			ch->s[ch->n++] = s;
		}
		chains[c].n = 0;
		if (ch)
			ch->want = ch->used = ch->best = ch->n ? ch->n - 1 : 0;
	}
	if (r < 0)
		goto fail;
	n->o = *o;
	n->n_chains = VW_MIN(n_chains, (size_t)VW_NODE_MAX_CHAINS);
	n->stat_sample = n->stat_close = o->stat;
	r = map_zones(n);
	if (r < 0)
		goto fail;
	*ret = n;
	return 0;
fail:
	vw_node_free(n);
	return r;
}

void vw_node_free(struct vw_node *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->n_zones; i++)
		vw_idle_fit_free(n->z[i].fit);
	for (size_t c = 0; c < VW_NODE_MAX_CHAINS; c++)
		for (size_t k = 0; k < n->c[c].n; k++) {
			vw_power_source_close(&n->c[c].s[k]->ps);
			free(n->c[c].s[k]);
		}
	vw_kept_file_close(&n->stat_file);
	free(n);
}

int vw_node_parse_idle_watts(const char *const *v, size_t n, double out[VW_ZONE__COUNT])
{
	for (size_t z = 0; z < VW_ZONE__COUNT; z++)
		out[z] = -1;
	for (size_t i = 0; i < n; i++) {
		char zone[32];
		const char *eq = strchr(v[i], '=');
		enum vw_zone zk;
		char *end;
		double w;

		if (!eq || (size_t)(eq - v[i]) >= sizeof(zone))
			goto bad;
		memcpy(zone, v[i], (size_t)(eq - v[i]));
		zone[eq - v[i]] = '\0';
		errno = 0;
		w = strtod(eq + 1, &end);
		if (vw_zone_parse(zone, &zk, NULL) < 0 || errno || *end || end == eq + 1 ||
		    !isfinite(w) || w < 0 || w > 100000)
			goto bad;
		out[zk] = w;
		continue;
	bad:
		vw_error("config: power.idle-watts: \"%s\" is not ZONE=WATTS with a known zone "
			 "(package, core, uncore, dram, psys, platform) and 0 <= WATTS <= 100000",
			 v[i]);
		return -EINVAL;
	}
	return 0;
}

/* ---- sampling ------------------------------------------------------------------------------- */

/* A polled meter's gaps (spans it counted nothing for) since the last read: its zones' too. */
static uint64_t source_gaps(struct node_src *s, uint64_t *filled_ns)
{
	struct vw_power_source_stats st = { 0 };
	uint64_t new_gaps;

	if (!s->ps.ops->stats)
		return 0;
	s->ps.ops->stats(s->ps.state, &st);
	new_gaps = st.gaps > s->gaps_seen ? st.gaps - s->gaps_seen : 0;
	s->gaps_seen = VW_MAX(s->gaps_seen, st.gaps);
	*filled_ns = st.filled_ns;
	return new_gaps;
}

/*
 * Read source s into its counters. A rebase takes the readings as the counters' new baseline
 * and empties them: what came before is not this source's to give.
 */
static void read_source(struct vw_node *n, struct node_src *s, bool rebase)
{
	uint64_t a[VW_POWER_MAX_ZONES] = { 0 }, idle[VW_POWER_MAX_ZONES] = { 0 };
	int errs[VW_POWER_MAX_ZONES] = { 0 };
	bool split = s->ps.ops->read_split;
	uint64_t filled_ns = 0, new_gaps;

	/* The source logs its own failures (rate-limited); they are counted here. */
	if (split)
		(void)s->ps.ops->read_split(s->ps.state, &n->act, idle, a, errs);
	else
		(void)s->ps.ops->read(s->ps.state, &n->act, a, errs);
	new_gaps = source_gaps(s, &filled_ns);
	for (size_t j = 0; j < s->n_zones; j++) {
		struct src_zone *sz = &s->z[j];
		struct node_zone *z = sz->out >= 0 ? &n->z[sz->out] : NULL;
		uint64_t seen;

		if (!z)
			continue;
		if (rebase)
			sz->ctr.primed = sz->idle.primed = false;
		sz->ctr.gaps += new_gaps;
		z->gaps += new_gaps;
		z->filled_ns = VW_MAX(z->filled_ns, filled_ns);
		/* One zone per kind (zone_path): a kind the source lacks now is no error; at a
		 * rebase its counter starts where the source says it stands. */
		if (errs[j] == -ENODATA && n->o.zone_path) {
			if (rebase)
				prime_at(sz, a[j], idle[j], n->act.now_ns);
			continue;
		}
		if (errs[j] < 0) {
			z->read_errors += !rebase;
			continue;
		}
		z->present |= !rebase;
		seen = sz->ctr.gaps + sz->idle.gaps;
		z->wraps -= sz->ctr.wraps + sz->idle.wraps;
		vw_energy_counter_update(&sz->ctr, a[j], n->act.now_ns, NULL);
		if (split)
			vw_energy_counter_update(&sz->idle, idle[j], n->act.now_ns, NULL);
		z->wraps += sz->ctr.wraps + sz->idle.wraps;
		z->gaps += sz->ctr.gaps + sz->idle.gaps - seen;
		if (rebase) {
			sz->ctr.total_uj = sz->idle.total_uj = 0;
			sz->mark_gaps = sz->ctr.gaps;
		}
	}
}

/* The interval's activity from /proc/stat: the estimator's input. */
static void activity(struct vw_node *n, const struct vw_cpu_stat *cur, uint64_t now_ns)
{
	n->act = (struct vw_node_activity){ .now_ns = now_ns, .ncpus = n->stat_sample.ncpus };
	if (n->sampled && now_ns > n->sample_ns) {
		long hz = sysconf(_SC_CLK_TCK);
		double secs = (double)(now_ns - n->sample_ns) / 1e9;
		uint64_t busy = vw_cpu_stat_busy_delta(&n->stat_sample, cur);

		n->act.elapsed_ns = now_ns - n->sample_ns;
		n->act.usage_ratio = vw_cpu_stat_usage(&n->stat_sample, cur);
		n->act.cpu_ms_per_s = (double)busy * 1000.0 / (double)(hz > 0 ? hz : 100) / secs;
	} else {
		n->stat_close = *cur; /* the first interval starts here */
		n->close_ns = now_ns;
	}
}

int vw_node_sample(struct vw_node *n, uint64_t now_ns)
{
	struct vw_cpu_stat cur;
	int r = vw_procfs_read_stat_kept(&n->stat_file, n->o.procfs_fd, &cur);

	if (r < 0) {
		vw_complain(&n->stat_complaint, VW_LOG_WARN, "%s: reading %s/stat: %s", n->o.who,
			    n->o.procfs, strerror(-r));
		cur = n->stat_sample; /* no CPU time seen this tick */
	} else {
		vw_release(&n->stat_complaint, VW_LOG_INFO, "%s: %s/stat readable again", n->o.who,
			   n->o.procfs);
	}
	activity(n, &cur, now_ns);
	/* The source chosen stays while fresh; a stale one hands over to the next fresh one at
	 * once; a better one that comes back takes over at the next interval (hysteresis). */
	for (size_t c = 0; c < n->n_chains; c++) {
		struct node_chain *ch = &n->c[c];
		struct vw_power_source ps[VW_NODE_MAX_CHAIN];

		for (size_t k = 0; k < ch->n; k++)
			ps[k] = ch->s[k]->ps;
		ch->best = vw_power_source_pick(ps, ch->n);
		ch->used = VW_MAX(ch->want, ch->best);
		read_source(n, ch->s[ch->used], false);
	}
	n->stat_sample = cur;
	n->sample_ns = now_ns;
	n->sampled = true;
	return r;
}

/* ---- closing -------------------------------------------------------------------------------- */

static double pick_idle(const struct node_zone *z, const struct vw_zone_info *zi,
			enum vw_idle_method *method)
{
	double w;

	if (z->configured_idle_w >= 0) {
		*method = VW_IDLE_CONFIGURED;
		return z->configured_idle_w;
	}
	if (zi->idle_w >= 0) {
		*method = VW_IDLE_SOURCE;
		return zi->idle_w;
	}
	if (z->fit && vw_idle_fit_get(z->fit, &w) == 0) {
		*method = VW_IDLE_FITTED;
		return w;
	}
	*method = VW_IDLE_RESIDUAL;
	return -1;
}

/* One source zone's interval: its counters' energy since the last close, split (as the source
 * split it); the counters are emptied for the next. */
static void close_zone(struct vw_node *n, struct node_src *s, size_t j, uint64_t dt_ns)
{
	struct src_zone *sz = &s->z[j];
	struct node_zone *z = &n->z[sz->out];
	struct vw_node_zone_view *v = &z->view;
	bool split = s->ps.ops->read_split;
	uint64_t idle_uj = sz->idle.total_uj;
	uint64_t e = vw_energy_add(sz->ctr.total_uj, split ? idle_uj : 0);
	double idle_w = pick_idle(z, &s->zi[j], &v->idle_method);
	bool clean = sz->ctr.gaps == sz->mark_gaps;
	struct vw_interval_split sp;

	vw_interval_split(e, split ? &idle_uj : NULL, dt_ns, idle_w, n->usage, &sp);
	sz->ctr.total_uj = sz->idle.total_uj = 0;
	sz->mark_gaps = sz->ctr.gaps;
	v->idle_baseline_w = sp.idle_baseline_w;
	if (split) { /* the source's own split, and its idle power for this owner */
		v->idle_method = VW_IDLE_SOURCE;
		v->idle_baseline_w = s->zi[j].idle_w;
		z->given_idle_uj = vw_energy_add(z->given_idle_uj, sp.idle_uj);
	}
	/* Learn the baseline only from clean intervals of a real meter. */
	if (z->fit && z->measured && clean && dt_ns > 0)
		vw_idle_fit_add(z->fit, n->usage, sp.watts);
	z->int_idle_uj = vw_energy_add(z->int_idle_uj, sp.idle_uj);
	z->int_active_uj = vw_energy_add(z->int_active_uj, sp.active_uj);
	v->total_uj = vw_energy_add(v->total_uj, sp.energy_uj);
	v->idle_uj = vw_energy_add(v->idle_uj, sp.idle_uj);
	v->active_uj = vw_energy_add(v->active_uj, sp.active_uj);
}

/* Platform energy beyond the CPU zones this interval (both measured to the same sample). */
static void close_noncpu(struct vw_node *n, uint64_t dt_ns)
{
	uint64_t plat = 0, cpu = 0, d;
	bool has_plat = false, has_cpu = false;

	for (size_t i = 0; i < n->n_zones; i++) {
		uint64_t e = n->z[i].int_idle_uj + n->z[i].int_active_uj;

		if (n->z[i].zone == VW_ZONE_PLATFORM) {
			plat += e;
			has_plat = true;
		} else if (n->z[i].zone == VW_ZONE_PACKAGE || n->z[i].zone == VW_ZONE_DRAM) {
			cpu += e;
			has_cpu = true;
		}
	}
	n->has_noncpu = n->o.noncpu && has_plat && has_cpu;
	d = plat > cpu ? plat - cpu : 0;
	n->noncpu_uj = vw_energy_add(n->noncpu_uj, d);
	n->noncpu_w = vw_energy_watts(d, dt_ns);
}

/* From the next interval on, chain ch's energy comes from its best source (rebased now). */
static void switch_chain(struct vw_node *n, struct node_chain *ch)
{
	if (ch->best == ch->want)
		return;
	if (ch->best != ch->used)
		read_source(n, ch->s[ch->best], true);
	n->switches += n->closes > 0; /* the first interval's choice is no switch */
	ch->want = ch->best;
}

uint64_t vw_node_close(struct vw_node *n)
{
	uint64_t dt_ns = n->sample_ns - n->close_ns;

	if (!n->sampled)
		return 0;
	/* The interval ends at the last sample: energy and CPU time are both measured to it. */
	n->usage = vw_cpu_stat_usage(&n->stat_close, &n->stat_sample);
	for (size_t i = 0; i < n->n_zones; i++)
		n->z[i].int_idle_uj = n->z[i].int_active_uj = n->z[i].given_idle_uj = 0;
	for (size_t c = 0; c < n->n_chains; c++) {
		struct node_src *s = n->c[c].s[n->c[c].used];

		for (size_t j = 0; j < s->n_zones; j++)
			if (s->z[j].out >= 0 && n->z[s->z[j].out].present)
				close_zone(n, s, j, dt_ns);
	}
	for (size_t i = 0; i < n->n_zones; i++) {
		struct node_zone *z = &n->z[i];
		struct vw_node_zone_view *v = &z->view;

		v->watts = vw_energy_watts(vw_energy_add(z->int_idle_uj, z->int_active_uj), dt_ns);
		v->idle_watts = vw_energy_watts(z->int_idle_uj, dt_ns);
		v->active_watts = vw_energy_watts(z->int_active_uj, dt_ns);
		v->gaps = z->gaps;
		v->wraps = z->wraps;
		v->read_errors = z->read_errors;
		v->filled_us = z->filled_ns / 1000;
	}
	close_noncpu(n, dt_ns);
	for (size_t c = 0; c < n->n_chains; c++)
		switch_chain(n, &n->c[c]);
	n->closes++;
	n->stat_close = n->stat_sample;
	n->close_ns = n->sample_ns;
	return dt_ns;
}

/* ---- results -------------------------------------------------------------------------------- */

void vw_node_zone_energy(const struct vw_node *n, struct vw_zone_energy ze[VW_ZONE__COUNT])
{
	memset(ze, 0, VW_ZONE__COUNT * sizeof(*ze));
	for (size_t i = 0; i < n->n_zones; i++) {
		const struct node_zone *z = &n->z[i];
		struct vw_zone_energy *e = &ze[z->zone];

		if (!z->present)
			continue;
		e->present = true;
		e->active_uj += z->int_active_uj;
		e->idle_uj += z->int_idle_uj;
		/* Estimated idle is a guess at a share the workloads cannot own: it is not theirs
		 * and stays unattributed, so node = workloads + remainders still holds. */
		e->idle_to_node |= n->o.estimated_idle_to_node && z->given_idle_uj != z->int_idle_uj;
	}
}

void vw_node_fill_view(const struct vw_node *n, struct vw_node_view *v,
		       struct vw_node_zone_view zones[VW_POWER_MAX_ZONES])
{
	size_t k = 0;

	for (size_t i = 0; i < n->n_zones; i++)
		if (n->z[i].present)
			zones[k++] = n->z[i].view;
	v->zones = zones;
	v->n_zones = k;
	v->usage_ratio = n->usage;
	v->has_noncpu = n->has_noncpu;
	v->noncpu_uj = n->noncpu_uj;
	v->noncpu_watts = n->noncpu_w;
}

size_t vw_node_n_zones(const struct vw_node *n)
{
	return n->n_zones;
}

const struct vw_node_zone_view *vw_node_zone(const struct vw_node *n, size_t i, bool *ret_measured)
{
	if (ret_measured)
		*ret_measured = n->z[i].measured;
	return &n->z[i].view;
}

const struct vw_power_source *vw_node_used(const struct vw_node *n, size_t c)
{
	return &n->c[c].s[n->c[c].used]->ps;
}

size_t vw_node_used_index(const struct vw_node *n, size_t c)
{
	return n->c[c].used;
}

size_t vw_node_want_index(const struct vw_node *n, size_t c)
{
	return n->c[c].want;
}

const struct vw_power_source *vw_node_source(const struct vw_node *n, size_t c, size_t k)
{
	return c < n->n_chains && k < n->c[c].n ? &n->c[c].s[k]->ps : NULL;
}

size_t vw_node_n_chains(const struct vw_node *n)
{
	return n->n_chains;
}

uint64_t vw_node_switches(const struct vw_node *n)
{
	return n->switches;
}

const struct vw_cpu_stat *vw_node_stat(const struct vw_node *n)
{
	return &n->stat_sample;
}

uint64_t vw_node_sample_ns(const struct vw_node *n)
{
	return n->sample_ns;
}

double vw_node_usage(const struct vw_node *n)
{
	return n->usage;
}

bool vw_node_sampled(const struct vw_node *n)
{
	return n->sampled;
}

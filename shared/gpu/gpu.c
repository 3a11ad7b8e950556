/* SPDX-License-Identifier: Apache-2.0 */
#include "gpu.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "energy.h"
#include "gpu_procs.h"
#include "idle_floor.h"
#include "integrator.h"
#include "interval.h"
#include "log.h"
#include "macro.h"
#include "ticker.h"

const struct vw_gpu_source_ops *const vw_gpu_sources[] = {
	&vw_gpu_src_nvml,
	NULL,
};

static const char *const mig_names[] = {
	[VW_GPU_MIG_UNSUPPORTED] = "unsupported",
	[VW_GPU_MIG_DISABLED] = "disabled",
	[VW_GPU_MIG_ENABLED] = "enabled",
};

const char *vw_gpu_mig_name(enum vw_gpu_mig m)
{
	return (size_t)m < ARRAY_SIZE(mig_names) ? mig_names[m] : "unknown";
}

/* An open source and the devices it found. */
struct gpu_source {
	const struct vw_gpu_source_ops *ops;
	void *state;
	size_t taken; /* its devices in the set (devices() may list more after a rescan) */
};

struct gpu_dev {
	const struct gpu_source *src;
	size_t idx; /* in its source */
	const struct vw_gpu_info *info;
	struct vw_energy_counter ctr;     /* the device's counter, or the integrator's total */
	bool ticked;                      /* no counter, power read by the thread too */
	/* Devices without a counter, under the set's lock (both threads read the power): */
	struct vw_power_integrator integ;
	bool gap_open;                    /* a failed reading broke the integral; no good one since */
	uint64_t span_gaps;               /* such spans, each ended by a good reading */
	struct vw_complaint power_complaint;
	/* The sampling thread's: span_gaps at the last sample, and at the last close. */
	uint64_t seen_gaps, closed_gaps;
	struct vw_idle_floor *floor;
	struct vw_interval_mark closed;  /* ctr (and idle_ctr) at the last close */
	uint64_t closed_errors;
	double util_sum;                 /* this interval's utilization readings */
	unsigned util_n;
	struct vw_gpu_view view;
	struct vw_complaint complaint;
	struct vw_complaint gap_complaint; /* its counter's gaps (rate-limited, never released) */
	/* Its counter unchanged since still_ns, every power reading since at least
	 * VW_GPU_STILL_MIN_UW (hot); stuck: that stretch was counted a gap. */
	uint64_t still_ns;
	bool still_hot, stuck;
	struct vw_complaint stuck_complaint;
	struct vw_gpu_procs procs;
	bool procs_off;                  /* the source lists no processes */
	struct vw_complaint proc_complaint;
	bool vgpus_off;                  /* the source lists no vGPUs (not a vGPU host) */
	struct vw_complaint vgpu_complaint;
	/* A source that splits its energy itself (idle_err 0): its idle counter. */
	bool source_split;
	struct vw_energy_counter idle_ctr;
	/* Gone from its source's list (as last said), and its info->returns as last seen. */
	bool gone;
	unsigned returns;
	/* Its going said (rate-limited, never released: a device that flaps is said at 1 s
	 * doubling to 1 h, with the flaps between), and so its return said too. */
	struct vw_complaint gone_complaint;
	bool gone_said;
	/* Its counter read -ENODEV (a GPU lost, the driver gone) or it was gone: a reset may have
	 * set the counter back to 0 meanwhile, so its next good reading is a new baseline and the
	 * span since the last good one a gap. */
	bool rebase;
};

struct vw_gpus {
	double idle_w;
	struct gpu_source src[8]; /* the sources that found devices (one per vendor library) */
	size_t n_src;
	struct gpu_dev *dev;
	size_t n_dev;
	uint64_t start_ns, last_ns; /* the open interval's start and the last sample */
	bool sampled;
	/* The power-only devices' reading thread (none with manual_ticks, or without such a
	 * device); its lock covers their integrals. */
	struct vw_ticker tk;
	bool manual_ticks;
	/* Looking again, at each close (the sampling thread's): */
	size_t idle_window;
	const char *nvml_library;
	const struct vw_gpu_source_ops *const *chain; /* for a retried start: none opened */
	bool retry;        /* a start that found nothing is retried (vw_gpus_open) */
	bool chain_opened; /* a source of the chain opened (at start or a retry since) */
	bool trouble;      /* since the last look: a device read -ENODEV, or the look failed */
	uint64_t retry_at_ns, backoff_ns; /* the next reinit (or retried start) and its wait */
	struct vw_complaint rescan_complaint;
};

void vw_gpus_free(struct vw_gpus *g)
{
	if (!g)
		return;
	vw_ticker_fini(&g->tk); /* before the sources it reads close */
	for (size_t i = 0; i < g->n_dev; i++)
		vw_idle_floor_free(g->dev[i].floor);
	free(g->dev);
	for (size_t s = 0; s < g->n_src; s++)
		g->src[s].ops->close(g->src[s].state);
	free(g);
}

static void gpus_freep(struct vw_gpus **g)
{
	vw_gpus_free(*g);
}

/* Every source in the chain that finds devices. Why the others found none goes to `why`, for
 * the one line said when no source finds any; a source that fails otherwise is warned of. */
static size_t open_sources(struct vw_gpus *g, char *why, size_t why_len)
{
	const struct vw_gpu_source_ops *const *chain = g->chain;
	struct vw_gpu_env env = { .nvml_library = g->nvml_library };
	size_t n_dev = 0, used = 0;

	for (size_t i = 0; chain[i] && g->n_src < ARRAY_SIZE(g->src); i++) {
		const struct vw_gpu_info *gi;
		char reason[512] = "";
		void *state = NULL;
		int r = chain[i]->open(&env, &state, reason, sizeof(reason));

		if (r == 0) {
			g->chain_opened = true;
			g->src[g->n_src++] = (struct gpu_source){ .ops = chain[i], .state = state };
			n_dev += chain[i]->devices(state, &gi);
			continue;
		}
		if (!reason[0])
			snprintf(reason, sizeof(reason), "%s", strerror(-r));
		if (r != -ENODEV)
			vw_warn("gpu: %s: cannot open: %s", chain[i]->name, reason);
		if (used < why_len)
			used += (size_t)snprintf(why + used, why_len - used, "%s%s: %s",
						 used ? "; " : "", chain[i]->name, reason);
	}
	return n_dev;
}

static int setup_device(struct vw_gpus *g, struct gpu_dev *d)
{
	/* Counters since a driver load never wrap in practice: a decrease is a reset (a gap), a
	 * gain above VW_GPU_MAX_POWER_UW over its span junk (a gap). Not for a counter from zero
	 * (the guest's host-measured share: its first reading may hold a VM's whole life, checked
	 * by the channel's own spike rule) nor an integral (bounded reading by reading in
	 * count_power). */
	uint64_t ceiling_uw = d->info->has_energy && !d->info->counts_from_zero
				      ? VW_GPU_MAX_POWER_UW
				      : 0;

	vw_energy_counter_init(&d->ctr, 0, ceiling_uw);
	vw_energy_counter_init(&d->idle_ctr, 0, ceiling_uw);
	if (d->info->counts_from_zero) /* its first reading is energy, not a baseline */
		d->ctr.primed = d->idle_ctr.primed = true;
	d->ticked = !d->info->has_energy && d->info->has_power && d->src->ops->power;
	d->floor = vw_idle_floor_new(g->idle_window, VW_GPU_IDLE_SUSTAIN, VW_GPU_IDLE_MAX_UTIL);
	if (!d->floor)
		return -errno;
	d->gone = d->info->gone;
	d->returns = d->info->returns;
	d->view = (struct vw_gpu_view){ .info = d->info,
					.vendor = d->src->ops->vendor,
					.source = d->src->ops->name,
					.idle_baseline_w = g->idle_w > 0 ? g->idle_w : -1,
					.idle_method = g->idle_w > 0 ? VW_IDLE_CONFIGURED
								     : VW_IDLE_RESIDUAL,
					.util = NAN };
	return 0;
}

/* Source s's devices from its from-th on appended to g->dev (the reading thread stopped). */
static int add_devices(struct vw_gpus *g, size_t s, size_t from)
{
	const struct vw_gpu_info *gi;
	size_t k = g->src[s].ops->devices(g->src[s].state, &gi);
	struct gpu_dev *dev = realloc(g->dev, (g->n_dev + k + 1) * sizeof(*dev));

	if (!dev)
		return -ENOMEM;
	g->dev = dev;
	for (size_t j = from; j < k; j++) {
		struct gpu_dev *d = &g->dev[g->n_dev];
		int r;

		*d = (struct gpu_dev){ .src = &g->src[s], .idx = j, .info = &gi[j] };
		r = setup_device(g, d);
		if (r < 0)
			return r;
		g->n_dev++;
		g->src[s].taken = j + 1;
	}
	return 0;
}

/* An empty set: its lock set up. NULL (errno) on failure. */
static struct vw_gpus *gpus_new(const struct vw_gpu_opts *o)
{
	struct vw_gpus *g = calloc(1, sizeof(*g));
	int r;

	if (!g)
		return NULL;
	g->idle_w = o->idle_w;
	g->manual_ticks = o->manual_ticks;
	g->idle_window = o->idle_window;
	g->nvml_library = o->nvml_library;
	g->chain = o->sources ? o->sources : vw_gpu_sources;
	g->retry = o->retry;
	g->backoff_ns = VW_GPU_RETRY_MIN_NS;
	r = vw_ticker_init(&g->tk, "gpu");
	if (r < 0) {
		free(g);
		errno = -r;
		return NULL;
	}
	return g;
}

static void tick(void *arg);

/* The reading thread, where a device is read for power alone and no test ticks by hand. */
static int start_ticks(struct vw_gpus *g)
{
	bool any = false;

	for (size_t i = 0; i < g->n_dev; i++)
		any = any || (g->dev[i].ticked && !g->dev[i].gone);
	if (!any || g->manual_ticks || g->tk.running)
		return 0;
	return vw_ticker_start(&g->tk, VW_GAUGE_TICK_NS, tick, g, "gpu");
}

static int check_opts(const struct vw_gpu_opts *o)
{
	return !(o->idle_w >= 0) || o->idle_window < VW_GPU_IDLE_SUSTAIN ||
			       o->idle_window > VW_IDLE_MAX_WINDOW
		       ? -EINVAL
		       : 0;
}

int vw_gpus_open(const struct vw_gpu_opts *o, struct vw_gpus **ret)
{
	_cleanup_(gpus_freep) struct vw_gpus *g = NULL;
	char why[1024] = "";
	int r = check_opts(o);

	if (r < 0)
		return r;
	g = gpus_new(o);
	if (!g)
		return -errno;
	if (open_sources(g, why, sizeof(why)) == 0 && !o->retry) {
		vw_info("gpu: no GPU found (%s): no GPU series", why[0] ? why : "no GPU source");
		return -ENODEV;
	}
	if (!g->chain_opened) /* o->retry: looked for again at each close */
		vw_info("gpu: no GPU found (%s): no GPU series until one is; looked for again at "
			"the interval closes, %llu s apart doubling up to %llu min. A driver loaded "
			"after start (the NVIDIA GPU Operator's driver container: /run/nvidia/driver) "
			"is found then; in a container its libnvidia-ml.so.1 must be visible: the "
			"NVIDIA container toolkit, or the driver root mounted and --gpu.nvml-library "
			"pointing at the library in it; --gpu.enable=false stops looking",
			why[0] ? why : "no GPU source",
			(unsigned long long)(VW_GPU_RETRY_MIN_NS / VW_NSEC_PER_SEC),
			(unsigned long long)(VW_GPU_RETRY_MAX_NS / VW_NSEC_PER_SEC / 60));
	for (size_t s = 0; s < g->n_src; s++) {
		r = add_devices(g, s, 0);
		if (r < 0)
			return r;
	}
	r = start_ticks(g);
	if (r < 0)
		return r;
	*ret = VW_TAKE_PTR(g);
	return 0;
}

int vw_gpus_attach(struct vw_gpus **gp, const struct vw_gpu_opts *o,
		   const struct vw_gpu_source_ops *ops, void *ctx)
{
	struct vw_gpu_env env = { .nvml_library = o->nvml_library, .ctx = ctx };
	_cleanup_(gpus_freep) struct vw_gpus *fresh = NULL;
	struct vw_gpus *g = *gp;
	char why[512] = "";
	void *state = NULL;
	int r = check_opts(o);

	if (r < 0)
		return r;
	if (!g) {
		g = fresh = gpus_new(o);
		if (!g)
			return -errno;
	}
	if (g->n_src == ARRAY_SIZE(g->src))
		return -ENOSPC;
	r = ops->open(&env, &state, why, sizeof(why));
	if (r < 0) {
		vw_warn("gpu: %s: cannot open: %s", ops->name, why[0] ? why : strerror(-r));
		return r;
	}
	g->src[g->n_src++] = (struct gpu_source){ .ops = ops, .state = state };
	vw_ticker_stop(&g->tk); /* the devices move: the thread reads them again once added */
	r = add_devices(g, g->n_src - 1, 0); /* on failure the source is closed with g */
	if (r == 0)
		r = start_ticks(g);
	if (r < 0 && !fresh)
		(void)start_ticks(g); /* the devices there were read on */
	if (r < 0)
		return r;
	*gp = g;
	fresh = NULL;
	return 0;
}

size_t vw_gpus_count(const struct vw_gpus *g)
{
	return g ? g->n_dev : 0;
}

/*
 * What a device's list call (processes, vGPUs) returned: -EOPNOTSUPP turns the list off for
 * good (*off), a failure is complained about while it lasts (its note after the error), a list
 * after failures is said to be back. True where there is a list.
 */
static bool listed(const struct gpu_dev *d, int r, bool *off, struct vw_complaint *cx,
		   const char *what, const char *note)
{
	if (r == -EOPNOTSUPP) {
		*off = true;
		return false;
	}
	if (r < 0) {
		vw_complain(cx, VW_LOG_WARN, "gpu: %s device %u (%s): listing its %s: %s%s",
			    d->src->ops->name, d->info->index, d->info->uuid, what, strerror(-r),
			    note);
		return false;
	}
	vw_release(cx, VW_LOG_INFO, "gpu: %s device %u (%s): %s listed again", d->src->ops->name,
		   d->info->index, d->info->uuid, what);
	return true;
}

/* The processes on the device this tick, where the source lists them. */
static void sample_processes(struct gpu_dev *d)
{
	struct vw_gpu_proc_sample s[VW_GPU_MAX_PROCS];
	size_t n = 0;
	int r;

	if (d->procs_off)
		return;
	r = d->src->ops->processes ? d->src->ops->processes(d->src->state, d->idx, s,
							    ARRAY_SIZE(s), &n)
				   : -EOPNOTSUPP;
	if (listed(d, r, &d->procs_off, &d->proc_complaint, "processes", ""))
		vw_gpu_procs_add(&d->procs, s, n);
	else if (d->procs_off)
		vw_info("gpu: %s device %u (%s): no process list: its active energy stays the "
			"node's", d->src->ops->name, d->info->index, d->info->uuid);
}

/* The vGPUs on the device this tick, where the source lists them (a vGPU host; elsewhere,
 * nothing to say). */
static void sample_vgpus(struct gpu_dev *d)
{
	struct vw_gpu_vgpu_sample s[VW_GPU_MAX_VGPUS];
	size_t n = 0;
	int r;

	if (d->vgpus_off)
		return;
	r = d->src->ops->vgpus ? d->src->ops->vgpus(d->src->state, d->idx, s, ARRAY_SIZE(s), &n)
			       : -EOPNOTSUPP;
	if (listed(d, r, &d->vgpus_off, &d->vgpu_complaint, "vGPUs",
		   "; their energy stays the node's"))
		vw_gpu_procs_add_vgpus(&d->procs, s, n);
}

/*
 * Under the lock: a power reading of device d (r, uw) at now_ns, by either thread, counted over
 * the time since the last good one; one stamped no later than that counts nothing (the
 * integral never counts a span twice nor goes back). A failure breaks the integral: a gap
 * until the next good reading, which only sets the time again.
 */
static void count_power(struct gpu_dev *d, int r, uint64_t uw, uint64_t now_ns)
{
	if (r == 0 && uw > VW_GPU_MAX_POWER_UW)
		r = -ERANGE; /* junk: over the ceiling, a failed reading */
	if (r < 0) {
		d->gap_open = d->gap_open || d->integ.primed;
		vw_power_integrator_break(&d->integ);
		vw_complain(&d->power_complaint, VW_LOG_WARN,
			    "gpu: %s device %u (%s): reading power: %s; no energy counted until it "
			    "reads again (a gap, virtwatt_node_gpu_energy_gaps_total)",
			    d->src->ops->name, d->info->index, d->info->uuid, strerror(-r));
		return;
	}
	vw_release(&d->power_complaint, VW_LOG_INFO,
		   "gpu: %s device %u (%s): power readable again; energy counted from this reading "
		   "on",
		   d->src->ops->name, d->info->index, d->info->uuid);
	if (d->integ.primed && now_ns <= d->integ.last_ns)
		return;
	if (!d->integ.primed && d->gap_open) {
		d->gap_open = false;
		d->span_gaps++;
	}
	vw_power_integrate(&d->integ, uw, now_ns);
}

/* Every device read for power alone, each read outside the lock (neither thread waits on the
 * other's library call), stamped *at_ns, else vw_now_ns() once read. */
static void tick_at(struct vw_gpus *g, const uint64_t *at_ns)
{
	for (size_t i = 0; i < g->n_dev; i++) {
		struct gpu_dev *d = &g->dev[i];
		uint64_t uw = 0, now_ns;
		int r;

		if (!d->ticked || d->gone)
			continue;
		r = d->src->ops->power(d->src->state, d->idx, &uw);
		now_ns = at_ns ? *at_ns : vw_now_ns();
		pthread_mutex_lock(&g->tk.lock);
		count_power(d, r, uw, now_ns);
		pthread_mutex_unlock(&g->tk.lock);
	}
}

static void tick(void *arg)
{
	tick_at(arg, NULL);
}

void vw_gpus_tick(struct vw_gpus *g, uint64_t now_ns)
{
	if (g)
		tick_at(g, &now_ns);
}

/* A counter reading that could not be counted (it went back: a driver reload, a GPU reset; or
 * gained more than VW_GPU_MAX_POWER_UW could over its span): said, rate-limited. */
static void said_gap(struct gpu_dev *d, uint64_t prev_uj, uint64_t prev_ns, uint64_t raw_uj,
		     uint64_t now_ns)
{
	vw_complain(&d->gap_complaint, VW_LOG_WARN,
		    "gpu: %s device %u (%s): energy counter went from %" PRIu64 " to %" PRIu64
		    " uJ in %" PRIu64 " ms (%s): nothing counted for that span (a gap, "
		    "virtwatt_node_gpu_energy_gaps_total)",
		    d->src->ops->name, d->info->index, d->info->uuid, prev_uj, raw_uj,
		    now_ns >= prev_ns ? (now_ns - prev_ns) / 1000000 : 0,
		    raw_uj < prev_uj ? "back: a reset" : "faster than the device could draw");
}

/* A counter that has not moved while the device's power says it should have (rd: this reading,
 * the counter unchanged since the last): a gap once per stretch (VW_GPU_STILL_NS), said. */
static void check_still(struct gpu_dev *d, const struct vw_gpu_reading *rd, uint64_t now_ns)
{
	d->still_hot = d->still_hot && rd->power_err == 0 && rd->power_uw >= VW_GPU_STILL_MIN_UW;
	if (!d->still_hot || d->stuck || now_ns < d->still_ns + VW_GPU_STILL_NS)
		return;
	d->stuck = true;
	d->ctr.gaps++; /* the interval is not clean either: it teaches the idle floor nothing */
	vw_complain(&d->stuck_complaint, VW_LOG_WARN,
		    "gpu: %s device %u (%s): energy counter stuck at %" PRIu64 " uJ for %" PRIu64
		    " s while its power reads %" PRIu64 " W: energy not counted (a gap, "
		    "virtwatt_node_gpu_energy_gaps_total)",
		    d->src->ops->name, d->info->index, d->info->uuid, rd->energy_uj,
		    (uint64_t)((now_ns - d->still_ns) / VW_NSEC_PER_SEC), rd->power_uw / 1000000);
}

/*
 * A counter read again after it could not be (-ENODEV: a GPU lost, the driver gone) or after
 * its device was gone from the list: a GPU reset or a driver reload sets it back to 0, and one
 * that has counted past its last reading since cannot be told from one that kept counting, so
 * this reading is a new baseline and the span since the last good one a gap, said.
 */
static void rebase_counter(struct gpu_dev *d, uint64_t raw_uj)
{
	d->rebase = false;
	if (!d->ctr.primed)
		return; /* no baseline yet: this reading is one anyway */
	d->ctr.primed = d->idle_ctr.primed = false;
	d->ctr.gaps++;
	d->still_hot = false;
	vw_info("gpu: %s device %u (%s): energy counter read again after the device was lost or "
		"gone (at %" PRIu64 " uJ, last %" PRIu64 " uJ): a reset may have set it back "
		"meanwhile, so counted from this reading on; the span between is a gap "
		"(virtwatt_node_gpu_energy_gaps_total)",
		d->src->ops->name, d->info->index, d->info->uuid, raw_uj, d->ctr.last_raw_uj);
}

/* A device with a counter at now_ns: the counter (and the source's own split). */
static int sample_counter(struct gpu_dev *d, const struct vw_gpu_reading *rd, uint64_t now_ns)
{
	uint64_t prev_uj, prev_ns;
	bool primed;

	if (rd->energy_err == 0 && d->rebase)
		rebase_counter(d, rd->energy_uj);
	prev_uj = d->ctr.last_raw_uj;
	prev_ns = d->ctr.last_ns;
	primed = d->ctr.primed;

	if (rd->energy_err == 0 &&
	    vw_energy_counter_update(&d->ctr, rd->energy_uj, now_ns, NULL) == VW_ENERGY_GAP)
		said_gap(d, prev_uj, prev_ns, rd->energy_uj, now_ns);
	if (rd->energy_err == 0 && primed && rd->energy_uj == prev_uj) {
		check_still(d, rd, now_ns);
	} else if (rd->energy_err == 0) {
		if (d->stuck)
			vw_release(&d->stuck_complaint, VW_LOG_INFO,
				   "gpu: %s device %u (%s): energy counter moving again",
				   d->src->ops->name, d->info->index, d->info->uuid);
		d->still_ns = now_ns;
		d->still_hot = true;
		d->stuck = false;
	}
	if (rd->energy_err == 0 && rd->idle_err == 0) { /* the source's own split */
		d->source_split = true;
		vw_energy_counter_update(&d->idle_ctr, rd->idle_uj, now_ns, NULL);
	}
	if (rd->energy_err < 0) {
		vw_complain(&d->complaint, VW_LOG_WARN,
			    "gpu: %s device %u (%s): reading energy: %s; no energy counted until "
			    "it reads again",
			    d->src->ops->name, d->info->index, d->info->uuid,
			    strerror(-rd->energy_err));
	} else {
		vw_release(&d->complaint, VW_LOG_INFO,
			   "gpu: %s device %u (%s): energy readable again", d->src->ops->name,
			   d->info->index, d->info->uuid);
	}
	return rd->energy_err;
}

/* A device without one at now_ns: its power reading counted, then the integral as it stands
 * (the thread's readings since the last sample in it). */
static int sample_power(struct vw_gpus *g, struct gpu_dev *d, const struct vw_gpu_reading *rd,
			uint64_t now_ns)
{
	uint64_t uj;

	pthread_mutex_lock(&g->tk.lock);
	count_power(d, rd->power_err, rd->power_uw, now_ns);
	uj = d->integ.energy_uj;
	d->seen_gaps = d->span_gaps;
	pthread_mutex_unlock(&g->tk.lock);
	vw_energy_counter_update(&d->ctr, uj, now_ns, NULL); /* it never goes back */
	return rd->power_err;
}

/* One device at now_ns: its counter, or its power integrated; utilization summed. */
static void sample_device(struct vw_gpus *g, struct gpu_dev *d, uint64_t now_ns)
{
	struct vw_gpu_reading rd;
	int err;

	if (d->gone)
		return; /* not listed: its handle names nothing */
	d->src->ops->read(d->src->state, d->idx, &rd);
	err = d->info->has_energy ? sample_counter(d, &rd, now_ns)
				  : sample_power(g, d, &rd, now_ns);
	if (err < 0)
		d->view.read_errors++;
	if (err == -ENODEV) { /* lost, or the driver gone: the library is opened anew */
		g->trouble = true;
		d->rebase = d->info->has_energy && !d->info->counts_from_zero;
	}
	if (rd.util_err == 0 && isfinite(rd.util)) {
		d->util_sum += rd.util;
		d->util_n++;
	}
	sample_processes(d);
	sample_vgpus(d);
}

void vw_gpus_sample(struct vw_gpus *g, uint64_t now_ns)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->n_dev; i++) {
		struct gpu_dev *d = &g->dev[i];

		sample_device(g, d, now_ns);
		if (!g->sampled) { /* the baseline: what it saw was before the first interval */
			d->util_sum = 0;
			d->util_n = 0;
			vw_gpu_procs_reset(&d->procs);
		}
	}
	if (!g->sampled)
		g->start_ns = now_ns;
	g->last_ns = now_ns;
	g->sampled = true;
}

/* The idle power this interval's split uses, and how it was found (< 0: the residual rule). */
static double pick_idle(const struct vw_gpus *g, const struct gpu_dev *d,
			enum vw_idle_method *method)
{
	double w;

	if (g->idle_w > 0) {
		*method = VW_IDLE_CONFIGURED;
		return g->idle_w;
	}
	if (vw_idle_floor_get(d->floor, &w) == 0) {
		*method = VW_IDLE_FLOOR;
		return w;
	}
	*method = VW_IDLE_RESIDUAL;
	return -1;
}

static void close_device(const struct vw_gpus *g, struct gpu_dev *d, uint64_t dt_ns)
{
	struct vw_gpu_view *v = &d->view;
	double util = d->util_n ? d->util_sum / d->util_n : NAN;
	double idle_w = pick_idle(g, d, &v->idle_method);
	bool clean = v->read_errors == d->closed_errors && d->seen_gaps == d->closed_gaps;
	struct vw_interval_split s;

	/* As the source split it (the guest: its host's split), else by the idle power. */
	if (d->source_split)
		v->idle_method = VW_IDLE_SOURCE;
	clean &= vw_interval_close(&d->closed, &d->ctr, d->source_split ? &d->idle_ctr : NULL,
				   dt_ns, idle_w, util, &s);
	/* The baseline is learnt from whole intervals only: no gap, no failed read, listed. */
	if (clean && dt_ns > 0 && !d->gone)
		vw_idle_floor_add(d->floor, s.watts, util);
	d->closed_errors = v->read_errors;
	d->closed_gaps = d->seen_gaps;
	v->int_idle_uj = s.idle_uj;
	v->int_active_uj = s.active_uj;
	(void)vw_gpu_procs_close(&d->procs, v->int_active_uj, v->int_idle_uj,
				 d->util_n ? (uint64_t)llround(d->util_sum * 100) : 0);
	d->util_sum = 0;
	d->util_n = 0;
	VW_INTERVAL_ADD(v, &s);
	v->util = util;
	v->gaps = d->ctr.gaps + d->seen_gaps;
	v->gone = d->gone;
}

/* ---- devices that come and go --------------------------------------------------------- */

/* A device read for the first time at the interval's start (new, back, found late): its
 * readings are a baseline, nothing of them counted in the interval just closed. */
static void baseline(struct vw_gpus *g, struct gpu_dev *d)
{
	sample_device(g, d, g->last_ns);
	d->util_sum = 0;
	d->util_n = 0;
	vw_gpu_procs_reset(&d->procs);
}

static void said_new(const struct gpu_dev *d)
{
	const struct vw_gpu_info *gi = d->info;

	vw_info("gpu: %s: new device %u %s \"%s\": %s, utilization %s, MIG %s; read from this "
		"interval on (its first reading a baseline)",
		d->src->ops->name, gi->index, gi->uuid, gi->name,
		gi->has_energy ? "energy counter" : "power integrated",
		gi->has_utilization ? "read" : "not reported", vw_gpu_mig_name(gi->mig));
}

/* Device d as its source lists it after a rescan: gone (said once, not read, its series kept
 * at their last values), back (said, read from a new baseline, the time away one gap), or as
 * it was. True when it is to be read from a baseline now. */
static bool follow(struct vw_gpus *g, struct gpu_dev *d)
{
	const struct vw_gpu_info *gi = d->info;
	bool back = !gi->gone && (d->gone || gi->returns != d->returns);

	if (gi->gone && !d->gone) {
		vw_complain(&d->gone_complaint, VW_LOG_WARN,
			    "gpu: %s device %u (%s) is gone from the driver's list (removed, unbound "
			    "for a VM, reset, or the driver unloaded): not read; its series stay at "
			    "their last values, and it is read again if it comes back",
			    d->src->ops->name, gi->index, gi->uuid);
		d->gone_said = d->gone_complaint.suppressed == 0;
	}
	if (back && d->gone_said)
		vw_info("gpu: %s device %u (%s) is back: read from a new baseline, the time it was "
			"away one gap (virtwatt_node_gpu_energy_gaps_total)",
			d->src->ops->name, gi->index, gi->uuid);
	if (back)
		d->gone_said = false;
	d->gone = gi->gone;
	d->returns = gi->returns;
	if (back && d->info->has_energy) {
		d->rebase = !d->info->counts_from_zero;
	} else if (back) { /* the integral: broken, a gap once a good reading ends it */
		pthread_mutex_lock(&g->tk.lock);
		d->gap_open = d->gap_open || d->integ.primed;
		vw_power_integrator_break(&d->integ);
		pthread_mutex_unlock(&g->tk.lock);
	}
	return back;
}

/* Source s listed again (reinit: its session opened anew): what changed followed, new devices
 * appended; fresh[] marks those read from a baseline now. -errno when it could not list. */
static int rescan_source(struct vw_gpus *g, size_t s, bool reinit, bool *fresh)
{
	struct gpu_source *src = &g->src[s];
	size_t from = g->n_dev;
	char why[512] = "";
	int r = src->ops->rescan(src->state, reinit, why, sizeof(why)), ra;

	if (r < 0)
		vw_complain(&g->rescan_complaint, VW_LOG_WARN,
			    "gpu: %s: cannot list the devices (%s): none read until it can; tried "
			    "again in %llu s, then less often, up to every %llu min (a driver being "
			    "reloaded or upgraded comes back so)",
			    src->ops->name, why[0] ? why : strerror(-r),
			    (unsigned long long)(g->backoff_ns / VW_NSEC_PER_SEC),
			    (unsigned long long)(VW_GPU_RETRY_MAX_NS / VW_NSEC_PER_SEC / 60));
	else
		vw_release(&g->rescan_complaint, VW_LOG_INFO, "gpu: %s: devices listed again",
			   src->ops->name);
	for (size_t i = 0; i < g->n_dev; i++)
		if (g->dev[i].src == src)
			fresh[i] = follow(g, &g->dev[i]);
	ra = add_devices(g, s, src->taken); /* no memory: they are added at the next change */
	for (size_t i = from; i < g->n_dev; i++) {
		said_new(&g->dev[i]);
		fresh[i] = true;
	}
	return r < 0 ? r : ra;
}

/* No source opened at start (o->retry): every source tried again. True when one opened. */
static bool retry_start(struct vw_gpus *g, bool *fresh)
{
	size_t s0 = g->n_src, d0 = g->n_dev;
	char why[1024] = "";

	(void)open_sources(g, why, sizeof(why));
	if (!g->chain_opened) {
		vw_debug("gpu: still no GPU (%s); looked for again in %llu s", why,
			 (unsigned long long)(g->backoff_ns / VW_NSEC_PER_SEC));
		return false;
	}
	vw_ticker_stop(&g->tk); /* an attached source's devices may be read: the devices move */
	for (size_t s = s0; s < g->n_src; s++)
		(void)add_devices(g, s, 0); /* no memory: at the next change */
	for (size_t i = d0; i < g->n_dev; i++)
		fresh[i] = true;
	vw_info("gpu: %zu GPU%s found after start (the driver loaded since): read from this "
		"interval on, each first reading a baseline",
		g->n_dev - d0, g->n_dev - d0 == 1 ? "" : "s");
	return true;
}

/*
 * At each close: the sources' device lists looked at (changed(): NVML's count and a handle per
 * index), listed again where they changed; a source whose session broke (a device read -ENODEV,
 * or the list could not be read) opened anew, with back-off (VW_GPU_RETRY_MIN_NS doubling up to
 * VW_GPU_RETRY_MAX_NS); and where no source opened at start, the start retried so. Devices
 * new, back or found late are read at once, at the close's time: their baseline.
 */
static void look_again(struct vw_gpus *g)
{
	size_t n = g->n_dev + VW_GPU_MAX_DEVICES * ARRAY_SIZE(g->src);
	_cleanup_free_ bool *fresh = calloc(n + 1, sizeof(*fresh));
	bool due = g->last_ns >= g->retry_at_ns, had = g->trouble, stopped = false,
	     trouble = false, tried = false, started = false;

	if (!fresh)
		return;
	if (!g->chain_opened && g->retry) { /* nothing opened at start */
		tried = due;
		started = due && retry_start(g, fresh);
		trouble = !started;
	}
	for (size_t s = 0; s < g->n_src && !started; s++) {
		const struct vw_gpu_source_ops *ops = g->src[s].ops;
		bool reinit = had && due;
		int r;

		if (!ops->changed || !ops->rescan)
			continue;
		r = reinit ? 1 : ops->changed(g->src[s].state);
		if (r < 0)
			trouble = true; /* opened anew when due */
		if (r <= 0)
			continue;
		if (!stopped)
			vw_ticker_stop(&g->tk); /* the devices change: the thread reads them again */
		stopped = true;
		tried = tried || reinit;
		trouble = rescan_source(g, s, reinit, fresh) < 0 || trouble;
	}
	for (size_t i = 0; i < g->n_dev; i++)
		if (fresh[i])
			baseline(g, &g->dev[i]);
	(void)start_ticks(g); /* its failure: the samples' readings alone */
	g->trouble = trouble;
	if (!had && !trouble) { /* a clean interval: the next trouble is looked into at once */
		g->backoff_ns = VW_GPU_RETRY_MIN_NS;
		g->retry_at_ns = 0;
	} else if (tried) {
		g->retry_at_ns = g->last_ns + g->backoff_ns;
		g->backoff_ns = VW_MIN(2 * g->backoff_ns, VW_GPU_RETRY_MAX_NS);
	}
}

void vw_gpus_close_interval(struct vw_gpus *g)
{
	uint64_t dt_ns;

	if (!g || !g->sampled)
		return;
	dt_ns = g->last_ns > g->start_ns ? g->last_ns - g->start_ns : 0;
	for (size_t i = 0; i < g->n_dev; i++)
		close_device(g, &g->dev[i], dt_ns);
	g->start_ns = g->last_ns;
	look_again(g);
}

size_t vw_gpus_process_energy(const struct vw_gpus *g, struct vw_gpu_pid_energy *out, size_t max,
			      uint64_t *ret_active_uj)
{
	size_t n = 0;

	*ret_active_uj = 0;
	for (size_t i = 0; g && i < g->n_dev; i++) {
		const struct gpu_dev *d = &g->dev[i];

		*ret_active_uj = vw_energy_add(*ret_active_uj, d->view.int_active_uj);
		for (size_t k = 0; k < d->procs.n_last; k++) {
			const struct vw_gpu_pid_energy *e = &d->procs.last[k];
			size_t j = 0;

			while (j < n && out[j].pid != e->pid)
				j++;
			if (j == n && n == max)
				continue; /* no room: the node's */
			if (j == n)
				out[n++] = (struct vw_gpu_pid_energy){ .pid = e->pid };
			out[j].active_uj = vw_energy_add(out[j].active_uj, e->active_uj);
		}
	}
	return n;
}

size_t vw_gpus_vgpu_energy(const struct vw_gpus *g, struct vw_gpu_vgpu_energy *out, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; g && i < g->n_dev; i++) {
		const struct vw_gpu_procs *p = &g->dev[i].procs;

		for (size_t k = 0; k < p->n_vlast; k++) {
			const struct vw_gpu_vgpu_energy *e = &p->vlast[k];
			size_t j = 0;

			while (j < n && (out[j].vm_id_type != e->vm_id_type ||
					 strcmp(out[j].vm_id, e->vm_id) != 0))
				j++;
			if (j == n && n == max)
				continue; /* no room: the node's */
			if (j == n) {
				out[n++] = *e;
				continue;
			}
			out[j].idle_uj = vw_energy_add(out[j].idle_uj, e->idle_uj);
			out[j].active_uj = vw_energy_add(out[j].active_uj, e->active_uj);
		}
	}
	return n;
}

void vw_gpus_view(const struct vw_gpus *g, size_t i, struct vw_gpu_view *ret)
{
	*ret = g->dev[i].view;
}

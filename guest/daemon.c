/* SPDX-License-Identifier: Apache-2.0 */
#include "daemon.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon_base.h"
#include "energy.h"
#include "fileio.h"
#include "gpu.h"
#include "guest_families.h"
#include "guest_reader.h"
#include "guest_sources.h"
#include "log.h"
#include "metrics.h"
#include "node.h"
#include "cgroup_path.h"
#include "power_source.h"
#include "reader.h"
#include "selfstats.h"
#include "series_state.h"
#include "host_model.h"
#include "state_file.h"

struct vw_guest {
	struct vw_daemon d; /* roots, model, accountant, workloads, exposition (daemon_base.h) */
	const struct vw_guest_config *cfg;
	bool ticked;
	bool gpu_share_tried; /* the host's vGPU share attached as a GPU (src_gpu_passthrough.c) */
	struct vw_reader *reader;
	/* The node's energy from one chain: passthrough (when enabled), the host's model for this
	 * VM, then the estimator; the stage uses the first fresh one (node.h). */
	struct vw_node *node;
	size_t n_src; /* in the chain: the estimator is the last */
	struct vw_series_state *series;
	struct vw_state_file *state;
	struct vw_guest_host_model host_model; /* the model the host pushed for this VM */
	struct vw_guest_ctx ctx;               /* the guest's sources' input */
};

static const char *nonempty(const char *s)
{
	return s && *s ? s : NULL;
}

const char *vw_guest_source_name(enum vw_guest_source s)
{
	return s == VW_GUEST_PASSTHROUGH ? "passthrough" : "model";
}

/* ---- the model ---------------------------------------------------------------------------- */

static bool used_passthrough(const struct vw_guest *g)
{
	return vw_node_used(g->node, 0)->ops == &vw_src_passthrough;
}

/* The guest's chain: its host's figures while they come, else the model its host trained for
 * it once it has one, else the default model on this VM's CPU time (the engine's estimator).
 * One zone per zone kind whatever the source ("vm"): counters continue across switches. */
static int open_sources(struct vw_guest *g)
{
	static const struct vw_power_source_ops *const chain[] = {
		&vw_src_passthrough, &vw_src_host_model, &vw_src_estimator, NULL
	};
	struct vw_power_env env = { .sysfs_fd = g->d.sysfs_fd,
				    .model = g->d.model,
				    .model_origin = g->d.model_origin,
				    .host_cores = g->d.stat.ncpus,
				    .ctx = &g->ctx };
	struct vw_node_opts o = { .procfs_fd = g->d.procfs_fd,
				  .procfs = g->cfg->common.procfs,
				  .who = "guest",
				  .stat = g->d.stat,
				  .zone_path = "vm",
				  .estimated_idle_to_node = true };
	struct vw_node_chain c = { 0 };
	int r = vw_power_source_open_each(chain, &env, c.src, VW_NODE_MAX_CHAIN, &c.n);

	if (r < 0 || c.src[c.n - 1].ops != &vw_src_estimator) {
		vw_error("model: cannot use the model %s", g->d.model_origin);
		for (size_t i = 0; i < c.n; i++)
			vw_power_source_close(&c.src[i]);
		return r < 0 ? r : -EINVAL;
	}
	g->n_src = c.n;
	/* The model until the passthrough is fresh (the first tick's baselines). */
	return vw_node_new(&o, &c, 1, &g->node);
}

/* ---- state, passthrough, workloads --------------------------------------------------------- */

static int open_reader(struct vw_guest *g)
{
	int r = vw_guest_reader_open(g->cfg, &g->reader);

	if (r < 0 || !g->reader)
		return r;
	g->ctx = (struct vw_guest_ctx){ .reader = g->reader, .host_model = &g->host_model };
	return vw_guest_host_model_init(&g->host_model, nonempty(g->cfg->state_file));
}

static int setup_workloads(struct vw_guest *g)
{
	struct vw_workloads_opts o = { 0 };
	int r = vw_daemon_parse_levels(&g->cfg->metrics, false, &o);

	return r < 0 ? r : vw_daemon_open_workloads(&g->d, &o, false);
}

static const struct vw_daemon_hooks guest_hooks;

int vw_guest_new(const struct vw_guest_config *cfg, struct vw_guest **ret)
{
	struct vw_guest *g = calloc(1, sizeof(*g));
	int r;

	if (!g)
		return -ENOMEM;
	g->cfg = cfg;
	r = vw_daemon_init(&g->d, &cfg->common, &guest_hooks, g, false);
	if (r < 0)
		goto fail;
	g->series = vw_series_state_new((size_t)cfg->state_max_series);
	if (g->series)
		g->state = vw_state_file_open(cfg->state_file, g->series,
					      cfg->state_write_interval_ns);
	if (!g->series || !g->state) {
		r = -ENOMEM;
		goto fail;
	}
	r = vw_daemon_load_model(&g->d, cfg->model_server_url);
	if (r == 0)
		r = open_reader(g);
	if (r == 0)
		r = open_sources(g);
	if (r == 0)
		r = setup_workloads(g);
	if (r < 0)
		goto fail;
	vw_daemon_open_gpus(&g->d); /* a GPU passed through to this VM: read here, as on a host */
	*ret = g;
	return 0;
fail:
	vw_guest_free(g);
	return r;
}

void vw_guest_free(struct vw_guest *g)
{
	if (!g)
		return;
	/* A clean stop: the state is written whatever the interval (once something ran). */
	if (g->ticked)
		vw_state_file_flush(g->state);
	vw_state_file_free(g->state);
	vw_node_free(g->node);
	vw_reader_free(g->reader);
	vw_guest_host_model_done(&g->host_model);
	vw_daemon_fini(&g->d);
	vw_series_state_free(g->series);
	free(g);
}

/* ---- one interval -------------------------------------------------------------------------- */

static void attribute(struct vw_guest *g, uint64_t dt_ns)
{
	struct vw_zone_energy ze[VW_ZONE__COUNT];

	if (!g->d.workloads)
		return;
	/* Estimated idle stays unattributed (node.h: estimated_idle_to_node). */
	vw_node_zone_energy(g->node, ze);
	(void)vw_workloads_interval(g->d.workloads, &g->d.cpu, ze, dt_ns, &g->d.cpu_complaint);
}

/* The model behind this interval's energy: the host's (passthrough) or ours. */
static const char *source_model(const struct vw_guest *g)
{
	const struct vw_power_source *s = vw_node_used(g->node, 0);
	struct vw_power_source_stats st = { 0 };

	if (s->ops->stats)
		s->ops->stats(s->state, &st);
	return st.model;
}

static int render_guest(struct vw_guest *g, struct vw_prom_writer *w)
{
	const struct vw_host_frame *f = g->reader ? vw_reader_last(g->reader) : NULL;
	bool pt = used_passthrough(g);
	struct vw_guest_source_view s = {
		.source = vw_guest_source_name(vw_guest_source_used(g)),
		.host_source = pt && f ? f->source : "none",
		.measured = pt && f && strcmp(f->source, "estimator") != 0,
		.model = source_model(g),
		.switches = vw_node_switches(g->node),
	};

	return vw_guest_families_render(w, &s, g->reader, g->d.node_name);
}

/* The guest's families, then its state file's. */
static int guest_render(void *ud, struct vw_prom_writer *w)
{
	struct vw_guest *g = ud;
	int r = render_guest(g, w);

	if (r == 0)
		r = vw_guest_host_model_render(&g->host_model, g->reader, w, g->d.node_name);
	return r < 0 ? r : vw_state_file_render(g->state, w, g->d.node_name);
}

/* Every counter stays monotonic across restarts (series_state.h). */
static void guest_render_begin(void *ud, struct vw_prom_writer *w, bool text)
{
	vw_series_state_render_begin(((struct vw_guest *)ud)->series, w, text);
}

static int guest_render_end(void *ud, bool text)
{
	return vw_series_state_render_end(((struct vw_guest *)ud)->series, text);
}

static void guest_tables(void *ud, struct vw_table_stat t[VW_TABLE__COUNT])
{
	vw_series_state_table(((struct vw_guest *)ud)->series, &t[VW_TABLE_SERIES]);
}

static int render_and_publish(struct vw_guest *g)
{
	struct vw_node_zone_view views[VW_POWER_MAX_ZONES];
	struct vw_power_source_stats st = { 0 };
	const struct vw_host_frame *f = g->reader ? vw_reader_last(g->reader) : NULL;
	const struct vw_power_source *est = vw_node_source(g->node, 0, g->n_src - 1);
	bool pt = used_passthrough(g);
	struct vw_node_view v;

	if (est->ops->stats) /* the estimator's clamps count whoever is used */
		est->ops->stats(est->state, &st);
	v = (struct vw_node_view){
		.source = vw_guest_source_name(vw_guest_source_used(g)),
		.measured = pt && f && strcmp(f->source, "estimator") != 0,
		.model = source_model(g),
		.model_clamped = st.clamped,
		.model_extrapolated = st.extrapolated,
		.cpus = g->d.cpus,
		.n_cpus = g->d.n_cpus,
	};
	vw_node_fill_view(g->node, &v, views);
	return vw_daemon_render_publish(&g->d, &v);
}

/* Energy comes from another source from the next interval on: said once. */
static void say_switch(struct vw_guest *g)
{
	size_t k = vw_node_want_index(g->node, 0);
	struct vw_reader_health h;

	if (vw_node_source(g->node, 0, k)->ops != &vw_src_passthrough) {
		vw_warn("guest: passthrough is stale: estimating with the model %s",
			g->d.model_origin);
		return;
	}
	vw_reader_health(g->reader, &h);
	vw_info("guest: passthrough (%s %s) is fresh: using it", vw_reader_kind_name(h.kind),
		h.path);
}

int vw_guest_tick(struct vw_guest *g, uint64_t now_ns)
{
	size_t want = vw_node_want_index(g->node, 0);
	uint64_t dt_ns;
	int r;

	if (g->reader)
		(void)vw_reader_poll(g->reader); /* -ENOENT until a channel exists: not an error */
	vw_guest_host_model_poll(&g->host_model, g->reader);
	(void)vw_node_sample(g->node, now_ns); /* a /proc/stat it cannot read: complained */
	dt_ns = vw_node_close(g->node); /* a tick is an interval */
	if (vw_node_want_index(g->node, 0) != want)
		say_switch(g);
	attribute(g, dt_ns);
	vw_guest_gpu_share_attach(&g->d, g->reader, &g->gpu_share_tried);
	vw_gpus_sample(g->d.gpus, now_ns); /* once a tick: the interval is the tick's */
	vw_gpus_close_interval(g->d.gpus);
	vw_daemon_attribute_gpus(&g->d, NULL, NULL); /* no VMs in a guest */
	g->ticked = true;
	r = render_and_publish(g);
	vw_state_file_tick(g->state, now_ns);
	return r;
}

struct vw_exposition *vw_guest_exposition(struct vw_guest *g)
{
	return g->d.expo;
}

enum vw_guest_source vw_guest_source_used(const struct vw_guest *g)
{
	return used_passthrough(g) ? VW_GUEST_PASSTHROUGH : VW_GUEST_MODEL;
}

void vw_guest_last_interval(const struct vw_guest *g, uint64_t node[VW_ZONE__COUNT][2],
			    uint64_t given[VW_ZONE__COUNT][2])
{
	struct vw_zone_energy ze[VW_ZONE__COUNT];

	vw_node_zone_energy(g->node, ze);
	for (size_t i = 0; i < VW_ZONE__COUNT; i++) {
		node[i][0] = given[i][0] = ze[i].active_uj;
		node[i][1] = ze[i].idle_uj;
		given[i][1] = ze[i].idle_to_node ? 0 : ze[i].idle_uj;
	}
}

void vw_guest_workload_totals(const struct vw_guest *g, struct vw_workloads_totals *ret)
{
	if (g->d.workloads)
		vw_workloads_totals(g->d.workloads, ret);
	else
		memset(ret, 0, sizeof(*ret));
}

/* ---- the loop ------------------------------------------------------------------------------ */

static int guest_publish(void *ud, uint64_t now_ns)
{
	return vw_guest_tick(ud, now_ns);
}

static int reader_fd(void *ud)
{
	struct vw_guest *g = ud;

	return g->reader ? vw_reader_fd(g->reader) : -1;
}

/* Drain the port as frames come, so freshness is never judged late. */
static void reader_woken(void *ud, uint64_t now_ns, bool fd_ready)
{
	struct vw_guest *g = ud;

	(void)now_ns;
	if (fd_ready)
		(void)vw_reader_poll(g->reader);
}

/* Ready unless the state file cannot be kept (counters would go back at the next restart). */
static bool guest_ready(void *ud, char *why, size_t len)
{
	struct vw_guest *g = ud;

	return vw_state_file_ok(g->state, why, len);
}

static const struct vw_daemon_hooks guest_hooks = {
	.program = "virtwatt-guest",
	.publish = guest_publish,
	.wake_fd = reader_fd,
	.woken = reader_woken,
	.render = guest_render,
	.render_begin = guest_render_begin,
	.render_end = guest_render_end,
	.tables = guest_tables,
	.ready = guest_ready,
	.counters_persist = true, /* the state file keeps them across restarts */
};

int vw_guest_run(struct vw_guest *g, volatile sig_atomic_t *stop)
{
	/* The first snapshot soon (1 s), then one every interval. */
	return vw_daemon_run(&g->d, 0, VW_MIN(g->cfg->common.interval_ns, VW_NSEC_PER_SEC), stop);
}

/* SPDX-License-Identifier: Apache-2.0 */
#include "daemon.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon_base.h"
#include "energy.h"
#include "fileio.h"
#include "gpu.h"
#include "guest_families.h"
#include "guest_sources.h"
#include "idle.h"
#include "interval.h"
#include "log.h"
#include "metrics.h"
#include "cgroup_path.h"
#include "power_source.h"
#include "procfs.h"
#include "reader.h"
#include "selfstats.h"
#include "series_state.h"
#include "host_model.h"
#include "state_file.h"

#define ZONE_PATH "vm" /* one series per zone kind whatever the source: counters continue */

struct gzone {
	bool present;
	uint64_t idle_uj, active_uj;     /* node totals */
	uint64_t int_idle, int_active;   /* the last interval */
	uint64_t given_idle;             /* of int_idle, what the workloads got */
	double idle_w, active_w, baseline_w;
	enum vw_idle_method method;
};

#define GUEST_MAX_SOURCES 3

/* A source's counters at the end of the last interval it gave (or its baseline). */
struct source_base {
	uint64_t raw[VW_POWER_MAX_ZONES], idle[VW_POWER_MAX_ZONES];
};

struct vw_guest {
	struct vw_daemon d; /* roots, model, accountant, workloads, exposition (daemon_base.h) */
	const struct vw_guest_config *cfg;
	struct vw_cpu_stat stat;
	uint64_t last_ns;
	bool ticked;
	bool gpu_share_tried; /* the host's vGPU share attached as a GPU (src_gpu_passthrough.c) */
	double usage;
	struct vw_reader *reader;
	/* The chain: passthrough (when enabled), then the estimator; want: the source chosen for
	 * the next interval (hysteresis), used: the one the last interval's energy came from. */
	struct vw_power_source src[GUEST_MAX_SOURCES];
	size_t n_src, want, used;
	struct source_base base[GUEST_MAX_SOURCES];
	uint64_t switches;
	struct gzone z[VW_ZONE__COUNT];
	struct vw_series_state *series;
	struct vw_state_file *state;
	struct vw_complaint stat_complaint;
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

static bool is_passthrough(const struct vw_power_source *s)
{
	return s->ops == &vw_src_passthrough;
}

static bool used_passthrough(const struct vw_guest *g)
{
	return is_passthrough(&g->src[g->used]);
}

/* Take source k's counters now as its baseline: what came before is not its to give. */
static void rebase(struct vw_guest *g, size_t k, const struct vw_node_activity *act)
{
	const struct vw_power_source *s = &g->src[k];
	int errs[VW_POWER_MAX_ZONES] = { 0 };

	(void)s->ops->read(s->state, act, g->base[k].raw, errs);
	if (s->ops->idle)
		s->ops->idle(s->state, g->base[k].idle);
}

/* The guest's chain: its host's figures while they come, else the model its host trained for
 * it once it has one, else the default model on this VM's CPU time (the engine's estimator). */
static int open_sources(struct vw_guest *g)
{
	static const struct vw_power_source_ops *const chain[] = {
		&vw_src_passthrough, &vw_src_host_model, &vw_src_estimator, NULL
	};
	struct vw_power_env env = { .sysfs_fd = g->d.sysfs_fd,
				    .model = g->d.model,
				    .model_origin = g->d.model_origin,
				    .host_cores = g->stat.ncpus,
				    .ctx = &g->ctx };
	int r = vw_power_source_open_each(chain, &env, g->src, GUEST_MAX_SOURCES, &g->n_src);

	if (r < 0 || g->src[g->n_src - 1].ops != &vw_src_estimator) {
		vw_error("model: cannot use the model %s", g->d.model_origin);
		return r < 0 ? r : -EINVAL;
	}
	/* The model until the passthrough is fresh (the first tick's baselines). */
	g->want = g->used = g->n_src - 1;
	return 0;
}

/* ---- state, passthrough, workloads --------------------------------------------------------- */

/* Where deploy/libvirt/README.md mounted the host's folder before it agreed with the guest's
 * default (--passthrough.folder, /run/virtwatt/host): still looked at. */
#define GUEST_FOLDER_ALT "/run/virtwatt-host"

/*
 * Say at start where the passthrough was looked for, each place on its line, and which one is
 * used; none: one warning with the fix (the guest keeps looking, so a channel attached later
 * is picked up).
 */
static void report_search(struct vw_guest *g)
{
	char buf[2048];
	int r = vw_reader_search_report(g->reader, buf, sizeof(buf));

	for (char *line = buf, *end; *line; line = end + (*end == '\n')) {
		end = line + strcspn(line, "\n");
		if (end > line)
			vw_info("passthrough: looked at%.*s", (int)(end - line - 1), line + 1);
		if (!*end)
			break;
	}
	if (r == 0)
		return;
	vw_warn("passthrough: no channel or shared folder from the host found: this VM's power is "
		"estimated by a model (virtwatt_guest_power_source_info says estimated), not "
		"measured by its host. To receive it, attach deploy/libvirt/power-channel.xml to "
		"the VM (virsh attach-device --config), or share the host's folder read-only and "
		"mount it at %s (deploy/libvirt/README.md); either is picked up while this runs",
		g->cfg->passthrough_folder ? g->cfg->passthrough_folder : "/run/virtwatt/host");
}

static int open_reader(struct vw_guest *g)
{
	const struct vw_guest_config *c = g->cfg;
	struct vw_reader_config rc = { .path = nonempty(c->passthrough_path),
				       .dev_root = nonempty(c->devfs),
				       .sys_root = nonempty(c->common.sysfs),
				       .folder = nonempty(c->passthrough_folder),
				       .folder_alt = nonempty(c->passthrough_folder) &&
							     strcmp(c->passthrough_folder,
								    GUEST_FOLDER_ALT) != 0
							     ? GUEST_FOLDER_ALT
							     : NULL,
				       .vm_uuid = nonempty(c->passthrough_vm_uuid),
				       .stale_intervals = (unsigned)c->passthrough_stale_after,
				       .max_watts = c->passthrough_max_watts,
				       .hello = true };

	if (!c->passthrough_enable)
		return 0;
	g->reader = vw_reader_new(&rc);
	if (!g->reader) {
		vw_error("passthrough: %s", strerror(errno));
		return -errno;
	}
	g->ctx = (struct vw_guest_ctx){ .reader = g->reader, .host_model = &g->host_model };
	report_search(g);
	return vw_guest_host_model_init(&g->host_model, nonempty(c->state_file));
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
	g->stat = g->d.stat;
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
	for (size_t i = 0; i < g->n_src; i++)
		vw_power_source_close(&g->src[i]);
	vw_reader_free(g->reader);
	vw_guest_host_model_done(&g->host_model);
	vw_daemon_fini(&g->d);
	vw_series_state_free(g->series);
	free(g);
}

/* ---- one interval -------------------------------------------------------------------------- */

/*
 * The interval's energy from the source used: each zone's counter delta since that source's
 * base; split by the source where it knows the split (passthrough: the host's split for this
 * VM, given to the workloads), else by the zone's idle power and this VM's usage (the model's
 * idle is this VM's guess at a host idle share it cannot know: it stays with the node).
 */
static void source_interval(struct vw_guest *g, const struct vw_node_activity *act)
{
	const struct vw_power_source *s = &g->src[g->used];
	struct source_base *b = &g->base[g->used];
	const struct vw_zone_info *zones;
	size_t n = s->ops->zones(s->state, &zones);
	uint64_t raw[VW_POWER_MAX_ZONES] = { 0 }, idle_now[VW_POWER_MAX_ZONES] = { 0 };
	int errs[VW_POWER_MAX_ZONES] = { 0 };

	(void)s->ops->read(s->state, act, raw, errs);
	if (s->ops->idle)
		s->ops->idle(s->state, idle_now);
	for (size_t i = 0; i < n; i++) {
		struct gzone *z = &g->z[zones[i].zone];
		uint64_t e = raw[i] >= b->raw[i] ? raw[i] - b->raw[i] : 0;
		uint64_t source_idle = idle_now[i] >= b->idle[i] ? idle_now[i] - b->idle[i] : 0;
		struct vw_interval_split sp;

		if (errs[i] == -ENODATA) /* the source has never had this zone */
			continue;
		b->raw[i] = raw[i];
		b->idle[i] = idle_now[i];
		vw_interval_split(errs[i] < 0 ? 0 : e, s->ops->idle ? &source_idle : NULL,
				  act->elapsed_ns, zones[i].idle_w, g->usage, &sp);
		z->present = true;
		z->int_idle = vw_energy_add(z->int_idle, sp.idle_uj);
		z->int_active = vw_energy_add(z->int_active, sp.active_uj);
		if (s->ops->idle)
			z->given_idle = vw_energy_add(z->given_idle, sp.idle_uj);
		z->method = VW_IDLE_SOURCE;
		z->baseline_w = zones[i].idle_w;
	}
}

static void attribute(struct vw_guest *g, uint64_t dt_ns)
{
	struct vw_zone_energy ze[VW_ZONE__COUNT] = { 0 };

	if (!g->d.workloads)
		return;
	/* Estimated idle is this VM's guess at a host idle share it cannot know: it is not the
	 * workloads' and stays unattributed, so node = workloads + remainders still holds. */
	for (size_t i = 0; i < VW_ZONE__COUNT; i++)
		ze[i] = (struct vw_zone_energy){ .present = g->z[i].present,
						 .active_uj = g->z[i].int_active,
						 .idle_uj = g->z[i].int_idle,
						 .idle_to_node = g->z[i].given_idle != g->z[i].int_idle };
	(void)vw_workloads_interval(g->d.workloads, &g->d.cpu, ze, dt_ns, &g->d.cpu_complaint);
}

/* ---- metrics ------------------------------------------------------------------------------- */

static const char *const l_source[] = { "source", "host_source", "kind", "model", "node_name",
					NULL };
static const char *const l_node[] = { "node_name", NULL };
static const char *const l_reason[] = { "reason", "node_name", NULL };

enum { G_SOURCE, G_FRAMES, G_ACCEPTED, G_REJECTED, G_AGE, G_RESTARTS, G_SWITCHES, G__COUNT };

static const struct vw_metric_family guest_families[] = {
	[G_SOURCE] = { "virtwatt_guest_power_source_info", VW_METRIC_GAUGE,
		       "Where this VM's energy comes from: passthrough (the host's figures for this "
		       "VM) or model (estimated; no idle is given to workloads)",
		       NULL, l_source },
	[G_FRAMES] = { "virtwatt_guest_passthrough_frames_total", VW_METRIC_COUNTER,
		       "Passthrough lines or files received from the host", NULL, l_node },
	[G_ACCEPTED] = { "virtwatt_guest_passthrough_accepted_total", VW_METRIC_COUNTER,
			 "Passthrough frames accepted", NULL, l_node },
	[G_REJECTED] = { "virtwatt_guest_passthrough_rejected_total", VW_METRIC_COUNTER,
			 "Passthrough frames rejected, by reason (PROTOCOL.md section 9)", NULL,
			 l_reason },
	[G_AGE] = { "virtwatt_guest_passthrough_last_frame_age_seconds", VW_METRIC_GAUGE,
		    "Seconds since the last accepted passthrough frame", "seconds", l_node },
	[G_RESTARTS] = { "virtwatt_guest_passthrough_host_restarts_total", VW_METRIC_COUNTER,
			 "Host epoch changes accepted (host daemon restarts, migrations, another "
			 "publisher taking over)",
			 NULL,
			 l_node },
	[G_SWITCHES] = { "virtwatt_guest_power_source_switches_total", VW_METRIC_COUNTER,
			 "Switches between passthrough and model", NULL, l_node },
};

const struct vw_family_table vw_guest_family_table = {
	"guest/daemon.c: render_guest()", "virtwatt-guest",
	"where this VM's energy comes from and how the passthrough is doing", guest_families,
	G__COUNT,
};

/* The model behind this interval's energy: the host's (passthrough) or ours. */
static const char *source_model(const struct vw_guest *g)
{
	const struct vw_power_source *s = &g->src[g->used];
	struct vw_power_source_stats st = { 0 };

	if (s->ops->stats)
		s->ops->stats(s->state, &st);
	return st.model;
}

static int render_guest(struct vw_guest *g, struct vw_prom_writer *w)
{
	const struct vw_host_frame *f = g->reader ? vw_reader_last(g->reader) : NULL;
	bool pt = used_passthrough(g);
	bool measured = pt && f && strcmp(f->source, "estimator") != 0;
	const char *model = source_model(g);
	const char *node[] = { g->d.node_name, NULL };
	const char *src[] = { vw_guest_source_name(vw_guest_source_used(g)), pt && f ? f->source : "none",
			      measured ? "measured" : "estimated", model ? model : "none",
			      g->d.node_name, NULL };
	struct vw_reader_health h = { 0 };
	int r;

	if (g->reader)
		vw_reader_health(g->reader, &h);
	r = vw_prom_single(w, &guest_families[G_SOURCE], src, 1);
	if (r == 0)
		r = vw_prom_single(w, &guest_families[G_SWITCHES], node, (double)g->switches);
	if (r < 0 || !g->reader)
		return r;
	r = vw_prom_single(w, &guest_families[G_FRAMES], node, (double)h.frames);
	if (r == 0)
		r = vw_prom_single(w, &guest_families[G_ACCEPTED], node, (double)h.accepted);
	if (r == 0)
		r = vw_prom_single(w, &guest_families[G_RESTARTS], node, (double)h.epochs);
	if (r == 0)
		r = vw_prom_family(w, &guest_families[G_REJECTED]);
	for (int e = VW_PROTO_OK + 1; r == 0 && e < VW_PROTO_E__COUNT; e++) {
		const char *l[] = { vw_proto_error_name((enum vw_proto_error)e), g->d.node_name,
				    NULL };

		r = vw_prom_counter(w, l, (double)h.rejected[e]);
	}
	if (r == 0)
		r = vw_prom_family_end(w);
	if (r == 0 && h.have)
		r = vw_prom_single(w, &guest_families[G_AGE], node, (double)h.age_ns / 1e9);
	return r;
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

/* Every counter stays monotonic across restarts: the text rendering learns each counter's raw
 * value and writes raw + the saved offset; the OpenMetrics one writes the same values. */
static void guest_render_begin(void *ud, struct vw_prom_writer *w, bool text)
{
	struct vw_guest *g = ud;

	if (text)
		vw_series_state_begin(g->series);
	vw_prom_writer_filter_counters(w, text ? vw_series_state_learn : vw_series_state_offset,
				       g->series);
}

static int guest_render_end(void *ud, bool text)
{
	struct vw_guest *g = ud;

	return text ? vw_series_state_end(g->series) : 0;
}

static void guest_tables(void *ud, struct vw_table_stat t[VW_TABLE__COUNT])
{
	struct vw_guest *g = ud;

	t[VW_TABLE_SERIES] = (struct vw_table_stat){
		.present = true,
		.entries = vw_series_state_size(g->series),
		.evictions = vw_series_state_evictions(g->series),
	};
}

static int render_and_publish(struct vw_guest *g, uint64_t dt_ns)
{
	struct vw_node_zone_view views[VW_ZONE__COUNT];
	struct vw_power_source_stats st = { 0 };
	const struct vw_host_frame *f = g->reader ? vw_reader_last(g->reader) : NULL;
	const struct vw_power_source *est = &g->src[g->n_src - 1];
	bool pt = used_passthrough(g);
	size_t n = 0;
	struct vw_node_view v;

	for (size_t i = 0; i < VW_ZONE__COUNT; i++) {
		const struct gzone *z = &g->z[i];

		if (!z->present)
			continue;
		views[n++] = (struct vw_node_zone_view){
			.zone = (enum vw_zone)i,
			.path = ZONE_PATH,
			.total_uj = vw_energy_add(z->idle_uj, z->active_uj),
			.idle_uj = z->idle_uj,
			.active_uj = z->active_uj,
			.watts = vw_energy_watts(vw_energy_add(z->int_idle, z->int_active), dt_ns),
			.idle_watts = vw_energy_watts(z->int_idle, dt_ns),
			.active_watts = vw_energy_watts(z->int_active, dt_ns),
			.idle_baseline_w = z->baseline_w,
			.idle_method = z->method,
		};
	}
	if (est->ops->stats) /* the estimator's clamps count whoever is used */
		est->ops->stats(est->state, &st);
	v = (struct vw_node_view){
		.source = vw_guest_source_name(vw_guest_source_used(g)),
		.measured = pt && f && strcmp(f->source, "estimator") != 0,
		.model = source_model(g),
		.model_clamped = st.clamped,
		.model_extrapolated = st.extrapolated,
		.usage_ratio = g->usage,
		.zones = views,
		.n_zones = n,
		.cpus = g->d.cpus,
		.n_cpus = g->d.n_cpus,
	};
	return vw_daemon_render_publish(&g->d, &v);
}

/* From the next interval on, energy comes from source k (counted from its counters now). */
static void switch_to(struct vw_guest *g, size_t k, const struct vw_node_activity *act)
{
	struct vw_reader_health h;

	if (k != g->used)
		rebase(g, k, act);
	g->switches += g->ticked; /* the first tick's choice is no switch */
	g->want = k;
	if (!is_passthrough(&g->src[k])) {
		vw_warn("guest: passthrough is stale: estimating with the model %s",
			g->d.model_origin);
		return;
	}
	vw_reader_health(g->reader, &h);
	vw_info("guest: passthrough (%s %s) is fresh: using it", vw_reader_kind_name(h.kind),
		h.path);
}

/* Once the host sends this VM a vGPU share (a `gpu` zone), it becomes one of the guest's GPUs. */
static void attach_gpu_share(struct vw_guest *g)
{
	int r;

	if (g->gpu_share_tried || !g->reader || !vw_reader_acc(g->reader)->zones[VW_ZONE_GPU].seen)
		return;
	g->gpu_share_tried = true; /* said once either way */
	r = vw_daemon_attach_gpus(&g->d, &vw_gpu_src_passthrough, g->reader);
	if (r == 0)
		vw_info("gpu: the host sends this VM's vGPU share: exported as gpu=\"vm\"");
	else if (r != -ENODEV)
		vw_warn("gpu: cannot show the host's vGPU share: %s", strerror(-r));
}

int vw_guest_tick(struct vw_guest *g, uint64_t now_ns)
{
	struct vw_node_activity act = { .now_ns = now_ns, .ncpus = g->stat.ncpus };
	uint64_t dt_ns = g->ticked && now_ns > g->last_ns ? now_ns - g->last_ns : 0;
	struct vw_cpu_stat cur;
	size_t best;
	int r = vw_procfs_read_stat(g->d.procfs_fd, &cur);

	if (r < 0) {
		vw_complain(&g->stat_complaint, VW_LOG_WARN, "guest: reading %s/stat: %s",
			    g->cfg->common.procfs, strerror(-r));
		cur = g->stat;
	} else {
		vw_release(&g->stat_complaint, VW_LOG_INFO, "guest: %s/stat readable again",
			   g->cfg->common.procfs);
	}
	if (dt_ns) {
		long hz = sysconf(_SC_CLK_TCK);

		act.elapsed_ns = dt_ns;
		act.usage_ratio = g->usage = vw_cpu_stat_usage(&g->stat, &cur);
		act.cpu_ms_per_s = (double)vw_cpu_stat_busy_delta(&g->stat, &cur) * 1000.0 /
				   (double)(hz > 0 ? hz : 100) / ((double)dt_ns / 1e9);
	}
	g->stat = cur;
	if (g->reader)
		(void)vw_reader_poll(g->reader); /* -ENOENT until a channel exists: not an error */
	vw_guest_host_model_poll(&g->host_model, g->reader);
	for (size_t i = 0; i < VW_ZONE__COUNT; i++)
		g->z[i].int_idle = g->z[i].int_active = g->z[i].given_idle = 0;
	/* The source chosen stays while fresh; a stale one hands over to the next fresh one at
	 * once; a better one that comes back takes over at the next interval (hysteresis). */
	best = vw_power_source_pick(g->src, g->n_src);
	g->used = VW_MAX(g->want, best);
	source_interval(g, &act);
	for (size_t i = 0; i < VW_ZONE__COUNT; i++) {
		g->z[i].idle_uj = vw_energy_add(g->z[i].idle_uj, g->z[i].int_idle);
		g->z[i].active_uj = vw_energy_add(g->z[i].active_uj, g->z[i].int_active);
	}
	if (best != g->want)
		switch_to(g, best, &act);
	attribute(g, dt_ns);
	attach_gpu_share(g);
	vw_gpus_sample(g->d.gpus, now_ns); /* once a tick: the interval is the tick's */
	vw_gpus_close_interval(g->d.gpus);
	vw_daemon_attribute_gpus(&g->d, NULL, NULL); /* no VMs in a guest */
	g->last_ns = now_ns;
	g->ticked = true;
	r = render_and_publish(g, dt_ns);
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
	for (size_t i = 0; i < VW_ZONE__COUNT; i++) {
		node[i][0] = given[i][0] = g->z[i].int_active;
		node[i][1] = g->z[i].int_idle;
		given[i][1] = g->z[i].given_idle;
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

/* SPDX-License-Identifier: Apache-2.0 */
#include "daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <math.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "cgroupfs.h"
#include "energy.h"
#include "fileio.h"
#include "guest_families.h"
#include "idle.h"
#include "log.h"
#include "metrics.h"
#include "model.h"
#include "model_server.h"
#include "workload.h"
#include "power_source.h"
#include "procfs.h"
#include "reader.h"
#include "selfstats.h"
#include "series_state.h"
#include "sigstop.h"
#include "state_file.h"

#define ZONE_PATH "vm" /* one series per zone kind whatever the source: counters continue */

struct gzone {
	bool present;
	uint64_t idle_uj, active_uj;     /* node totals */
	uint64_t base_idle, base_active; /* passthrough: the accumulator at the last interval */
	uint64_t int_idle, int_active;   /* the last interval */
	uint64_t given_idle;             /* of int_idle, what the workloads got */
	double idle_w, active_w, baseline_w;
	enum vw_idle_method method;
};

struct vw_guest {
	const struct vw_guest_config *cfg;
	int sysfs_fd, procfs_fd;
	int self_fd;         /* <procfs>/self, for process_* (-1: not shown) */
	double start_time_s; /* Unix time at start */
	char node_name[256];
	struct vw_cpu_info *cpus;
	size_t n_cpus;
	struct vw_cpu_stat stat;
	uint64_t last_ns;
	bool ticked;
	double usage;
	struct vw_reader *reader;
	enum vw_guest_source src, used;
	uint64_t switches;
	struct vw_model *model;
	char model_origin[600];
	struct vw_power_source est;
	const struct vw_zone_info *est_zones;
	size_t n_est;
	uint64_t est_last[VW_POWER_MAX_ZONES];
	struct gzone z[VW_ZONE__COUNT];
	struct vw_cpu_accountant cpu;
	struct vw_podmeta *podmeta;
	struct vw_cgroupfs *cgroupfs;
	struct vw_ctrmeta *ctrmeta;
	struct vw_workloads *workloads;
	struct vw_series_state *series;
	struct vw_state_file *state;
	struct vw_exposition *expo;
	struct vw_selfstats *self;
	uint64_t snapshots; /* rendered so far */
	struct vw_complaint stat_complaint, cpu_complaint;
	uint64_t last_loop_ns;
};

static const char *nonempty(const char *s)
{
	return s && *s ? s : NULL;
}

const char *vw_guest_source_name(enum vw_guest_source s)
{
	return s == VW_GUEST_PASSTHROUGH ? "passthrough" : "model";
}

/* ---- the model: server, then file / URL / built-in --------------------------------------- */

static int load_model(struct vw_guest *g)
{
	const struct vw_guest_config *c = g->cfg;
	long timeout_ms = (long)(c->common.model_timeout_ns / VW_NSEC_PER_MSEC);
	const struct vw_model_source_opts mo = { .file = nonempty(c->common.model_file),
						 .url = nonempty(c->common.model_url),
						 .cache_dir = nonempty(c->common.model_cache_dir),
						 .timeout_ms = timeout_ms };
	char err[512] = "";
	int r;

	/* A local file is what the user asked for: it wins over the server. */
	if (nonempty(c->model_server_url) && !mo.file) {
		struct vw_model_server_opts so = { .url = c->model_server_url,
						   .timeout_ms = timeout_ms };
		struct vw_machine_spec spec;

		if (vw_machine_spec_read(g->procfs_fd, &spec) < 0)
			vw_warn("model: cannot read this machine's spec; asking the server anyway");
		r = vw_model_server_fetch(&so, &spec, &g->model, err, sizeof(err));
		if (r == 0) {
			snprintf(g->model_origin, sizeof(g->model_origin), "server:%s",
				 c->model_server_url);
			vw_info("model: %s from the model server %s", vw_model_name(g->model),
				c->model_server_url);
			return 0;
		}
		vw_warn("model: %s; falling back to the local model", err);
	}
	r = vw_model_source_load(&mo, &g->model, g->model_origin, sizeof(g->model_origin), err,
				 sizeof(err));
	if (r < 0)
		vw_error("model: %s", err[0] ? err : strerror(-r));
	return r;
}

static int open_model_source(struct vw_guest *g)
{
	struct vw_power_env env = { .sysfs_fd = g->sysfs_fd,
				    .model = g->model,
				    .model_origin = g->model_origin,
				    .host_cores = g->stat.ncpus };
	/* The engine's estimator, as the host has it: this VM's CPU time through the model. */
	static const struct vw_power_source_ops *const chain[] = { &vw_src_estimator, NULL };
	int r = vw_power_source_open(chain, &env, NULL, &g->est);

	if (r < 0) {
		vw_error("model: cannot use the model %s: %s", g->model_origin, strerror(-r));
		return r;
	}
	g->n_est = g->est.ops->zones(g->est.state, &g->est_zones);
	return 0;
}

/* ---- state, passthrough, workloads --------------------------------------------------------- */

static int open_reader(struct vw_guest *g)
{
	const struct vw_guest_config *c = g->cfg;
	struct vw_reader_config rc = { .path = nonempty(c->passthrough_path),
				       .dev_root = nonempty(c->devfs),
				       .sys_root = nonempty(c->common.sysfs),
				       .folder = nonempty(c->passthrough_folder),
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
	return 0;
}

static int parse_levels(const struct vw_strlist *l, struct vw_workloads_opts *o)
{
	static const char *const names[] = { "node", "process", "container", "pod" };
	bool *flags[] = { NULL, &o->processes, &o->containers, &o->pods };

	for (size_t i = 0; i < l->n; i++) {
		size_t k = 0;

		while (k < ARRAY_SIZE(names) && strcmp(l->v[i], names[k]) != 0)
			k++;
		if (k == ARRAY_SIZE(names)) {
			vw_error("config: --metrics: unknown level \"%s\" (node, process, "
				 "container, pod)",
				 l->v[i]);
			return -EINVAL;
		}
		if (flags[k])
			*flags[k] = true;
	}
	return 0;
}

static int setup_workloads(struct vw_guest *g)
{
	const struct vw_guest_config *c = g->cfg;
	struct vw_cpu_env env = { .procfs_fd = g->procfs_fd, .sysfs_fd = g->sysfs_fd };
	struct vw_workloads_opts o = { .procfs_fd = g->procfs_fd,
				       .host_cpus = g->stat.ncpus,
				       .process_top_n = (unsigned)c->common.process_top_n,
				       .max_terminated = (unsigned)c->common.max_terminated };
	struct vw_zone_energy none[VW_ZONE__COUNT] = { 0 };
	struct vw_cpu_snapshot snap = { 0 };
	const char *method = nonempty(c->common.cpu_accounting) && strcmp(c->common.cpu_accounting, "auto")
				     ? c->common.cpu_accounting
				     : NULL;
	int r = parse_levels(&c->metrics, &o);

	if (r < 0 || (!o.processes && !o.containers && !o.pods))
		return r;
	g->cgroupfs = vw_workloads_cgroupfs(g->sysfs_fd);
	env.cgroup_v1 = g->cgroupfs && vw_cgroupfs_is_v1(g->cgroupfs);
	r = vw_cpu_accountant_open(&env, method, &g->cpu);
	if (r < 0) {
		vw_error("cpu: no per-process CPU accounting: exporting node metrics only");
		return method ? r : 0;
	}
	if (c->common.kube_enable) {
		bool kubelet = strcmp(c->common.kube_pod_source, "kubelet") == 0;
		struct vw_podmeta_opts po = {
			.mode = kubelet ? VW_PODMETA_KUBELET : VW_PODMETA_APISERVER,
			.url = nonempty(kubelet ? c->common.kube_kubelet_url : c->common.kube_api_url),
			.token_file = nonempty(c->common.kube_token_file),
			.ca_file = nonempty(c->common.kube_ca_file),
			.node_name = g->node_name,
			.insecure_skip_verify = c->common.kube_insecure,
			.poll_ns = c->common.kube_poll_ns,
		};

		g->podmeta = vw_podmeta_start(&po);
		if (!g->podmeta) {
			vw_error("kube: cannot start pod metadata: %s", strerror(errno));
			return -errno;
		}
	}
	o.podmeta = g->podmeta;
	o.cgroupfs = g->cgroupfs;
	if (o.containers)
		o.ctrmeta = g->ctrmeta = vw_daemon_open_ctrmeta(&c->common);
	g->workloads = vw_workloads_new(&o);
	if (!g->workloads)
		return -ENOMEM;
	if (g->cpu.ops->read(g->cpu.state, &snap) == 0)
		(void)vw_workloads_update(g->workloads, &snap, none, 0);
	return 0;
}

int vw_guest_new(const struct vw_guest_config *cfg, struct vw_guest **ret)
{
	struct vw_guest *g = calloc(1, sizeof(*g));
	const char *env = getenv("NODE_NAME");
	struct utsname u;
	int r;

	if (!g)
		return -ENOMEM;
	g->cfg = cfg;
	g->sysfs_fd = g->procfs_fd = g->self_fd = -1;
	if (nonempty(cfg->common.node_name))
		snprintf(g->node_name, sizeof(g->node_name), "%s", cfg->common.node_name);
	else
		snprintf(g->node_name, sizeof(g->node_name), "%s",
			 nonempty(env) ? env : uname(&u) == 0 ? u.nodename : "unknown");
	g->procfs_fd = vw_root_open(cfg->common.procfs);
	g->sysfs_fd = vw_root_open(cfg->common.sysfs);
	if (g->procfs_fd < 0) {
		r = g->procfs_fd;
		vw_error("guest: cannot open procfs root %s: %s", cfg->common.procfs, strerror(-r));
		goto fail;
	}
	g->self_fd = vw_processinfo_open(g->procfs_fd, &g->start_time_s);
	if (g->sysfs_fd < 0) /* only BTF and cgroups live there: the procfs accountant works */
		vw_warn("guest: cannot open sysfs root %s: %s", cfg->common.sysfs,
			strerror(-g->sysfs_fd));
	r = vw_procfs_read_stat(g->procfs_fd, &g->stat);
	if (r < 0) {
		vw_error("guest: cannot read %s/stat: %s", cfg->common.procfs, strerror(-r));
		goto fail;
	}
	if (vw_procfs_read_cpuinfo(g->procfs_fd, &g->cpus, &g->n_cpus) < 0)
		vw_warn("guest: cannot read %s/cpuinfo", cfg->common.procfs);
	g->series = vw_series_state_new((size_t)cfg->state_max_series);
	g->expo = vw_exposition_new();
	g->self = vw_selfstats_new();
	if (g->series)
		g->state = vw_state_file_open(cfg->state_file, g->series,
					      cfg->state_write_interval_ns);
	if (!g->series || !g->expo || !g->self || !g->state) {
		r = -ENOMEM;
		goto fail;
	}
	r = load_model(g);
	if (r == 0)
		r = open_model_source(g);
	if (r == 0)
		r = open_reader(g);
	if (r == 0)
		r = setup_workloads(g);
	if (r < 0)
		goto fail;
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
	vw_selfstats_free(g->self);
	vw_workloads_free(g->workloads);
	vw_podmeta_stop(g->podmeta);
	vw_ctrmeta_free(g->ctrmeta);
	vw_cpu_accountant_close(&g->cpu);
	vw_cgroupfs_free(g->cgroupfs);
	vw_reader_free(g->reader);
	vw_power_source_close(&g->est);
	vw_model_free(g->model);
	vw_series_state_free(g->series);
	vw_exposition_free(g->expo);
	free(g->cpus);
	if (g->sysfs_fd >= 0)
		close(g->sysfs_fd);
	if (g->procfs_fd >= 0)
		close(g->procfs_fd);
	if (g->self_fd >= 0)
		close(g->self_fd);
	free(g);
}

/* ---- one interval -------------------------------------------------------------------------- */

/* The accumulator's totals become the baseline: what came before is not passthrough's to give. */
static void pt_rebase(struct vw_guest *g)
{
	const struct vw_proto_acc *acc = vw_reader_acc(g->reader);

	for (size_t i = 0; i < VW_ZONE__COUNT; i++) {
		g->z[i].base_idle = acc->zones[i].idle_uj;
		g->z[i].base_active = acc->zones[i].active_uj;
	}
}

static void pt_interval(struct vw_guest *g, uint64_t dt_ns)
{
	const struct vw_proto_acc *acc = vw_reader_acc(g->reader);

	for (size_t i = 0; i < VW_ZONE__COUNT; i++) {
		const struct vw_proto_acc_zone *a = &acc->zones[i];
		struct gzone *z = &g->z[i];

		if (!a->seen && !a->idle_uj && !a->active_uj)
			continue;
		z->present = true;
		/* Accumulator totals only grow; the guard is for a baseline taken in a later run. */
		z->int_idle = a->idle_uj >= z->base_idle ? a->idle_uj - z->base_idle : 0;
		z->int_active = a->active_uj >= z->base_active ? a->active_uj - z->base_active : 0;
		z->given_idle = z->int_idle; /* the host's split: this VM's idle share is exact */
		z->base_idle = a->idle_uj;
		z->base_active = a->active_uj;
		z->method = VW_IDLE_SOURCE;
		z->baseline_w = a->idle_w;
		(void)dt_ns;
	}
}

static void model_interval(struct vw_guest *g, const struct vw_node_activity *act)
{
	uint64_t raw[VW_POWER_MAX_ZONES] = { 0 };
	int errs[VW_POWER_MAX_ZONES] = { 0 };

	(void)g->est.ops->read(g->est.state, act, raw, errs);
	for (size_t i = 0; i < g->n_est; i++) {
		struct gzone *z = &g->z[g->est_zones[i].zone];
		uint64_t e = raw[i] >= g->est_last[i] ? raw[i] - g->est_last[i] : 0;
		uint64_t idle, active;

		g->est_last[i] = raw[i];
		if (errs[i] < 0)
			e = 0;
		vw_idle_split(e, act->elapsed_ns, g->est_zones[i].idle_w, g->usage, &idle, &active);
		z->present = true;
		z->int_idle = vw_energy_add(z->int_idle, idle);
		z->int_active = vw_energy_add(z->int_active, active);
		z->given_idle = 0; /* estimator-only: this VM's share of host idle is unknowable */
		z->method = VW_IDLE_SOURCE;
		z->baseline_w = g->est_zones[i].idle_w;
	}
}

static void attribute(struct vw_guest *g, uint64_t dt_ns)
{
	struct vw_zone_energy ze[VW_ZONE__COUNT] = { 0 };

	if (!g->workloads)
		return;
	/* Estimated idle is this VM's guess at a host idle share it cannot know: it is not the
	 * workloads' and stays unattributed, so node = workloads + remainders still holds. */
	for (size_t i = 0; i < VW_ZONE__COUNT; i++)
		ze[i] = (struct vw_zone_energy){ .present = g->z[i].present,
						 .active_uj = g->z[i].int_active,
						 .idle_uj = g->z[i].int_idle,
						 .idle_to_node = g->z[i].given_idle != g->z[i].int_idle };
	(void)vw_workloads_interval(g->workloads, &g->cpu, ze, dt_ns, &g->cpu_complaint);
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

static int counter_family(struct vw_prom_writer *w, int f, const char *const *labels, double v)
{
	int r = vw_prom_family(w, &guest_families[f]);

	if (r == 0)
		r = vw_prom_counter(w, labels, v);
	return r < 0 ? r : vw_prom_family_end(w);
}

static int render_guest(struct vw_guest *g, struct vw_prom_writer *w, const char *model)
{
	const struct vw_host_frame *f = g->reader ? vw_reader_last(g->reader) : NULL;
	bool pt = g->used == VW_GUEST_PASSTHROUGH;
	bool measured = pt && f && strcmp(f->source, "estimator") != 0;
	const char *node[] = { g->node_name, NULL };
	const char *src[] = { vw_guest_source_name(g->used), pt && f ? f->source : "none",
			      measured ? "measured" : "estimated", model ? model : "none",
			      g->node_name, NULL };
	struct vw_reader_health h = { 0 };
	int r;

	if (g->reader)
		vw_reader_health(g->reader, &h);
	r = vw_prom_family(w, &guest_families[G_SOURCE]);
	if (r == 0)
		r = vw_prom_gauge(w, src, 1);
	if (r == 0)
		r = vw_prom_family_end(w);
	if (r == 0)
		r = counter_family(w, G_SWITCHES, node, (double)g->switches);
	if (r < 0 || !g->reader)
		return r;
	r = counter_family(w, G_FRAMES, node, (double)h.frames);
	if (r == 0)
		r = counter_family(w, G_ACCEPTED, node, (double)h.accepted);
	if (r == 0)
		r = counter_family(w, G_RESTARTS, node, (double)h.epochs);
	if (r == 0)
		r = vw_prom_family(w, &guest_families[G_REJECTED]);
	for (int e = VW_PROTO_OK + 1; r == 0 && e < VW_PROTO_E__COUNT; e++) {
		const char *l[] = { vw_proto_error_name((enum vw_proto_error)e), g->node_name, NULL };

		r = vw_prom_counter(w, l, (double)h.rejected[e]);
	}
	if (r == 0)
		r = vw_prom_family_end(w);
	if (r == 0 && h.have) {
		r = vw_prom_family(w, &guest_families[G_AGE]);
		if (r == 0)
			r = vw_prom_gauge(w, node, (double)h.age_ns / 1e9);
		if (r == 0)
			r = vw_prom_family_end(w);
	}
	return r;
}

/* The bounded tables this daemon holds (virtwatt_table_*). */
static void guest_tables(const struct vw_guest *g, struct vw_table_stat t[VW_TABLE__COUNT])
{
	if (g->workloads)
		vw_workloads_table_stats(g->workloads, t);
	if (g->cgroupfs)
		vw_cgroupfs_table_stat(g->cgroupfs, &t[VW_TABLE_CGROUP]);
	if (g->podmeta)
		vw_podmeta_table_stats(g->podmeta, &t[VW_TABLE_POD_METADATA],
				       &t[VW_TABLE_CONTAINER_METADATA]);
	t[VW_TABLE_SERIES] = (struct vw_table_stat){
		.present = true,
		.entries = vw_series_state_size(g->series),
		.evictions = vw_series_state_evictions(g->series),
	};
}

/* A family that would overflow --metrics.max-bytes is left out whole, the rest is served. */
static int render(struct vw_guest *g, const struct vw_node_view *v, enum vw_prom_format fmt,
		  char **ret, size_t *ret_len)
{
	size_t max = (size_t)g->cfg->common.metrics_max_bytes;
	struct vw_prom_writer *w = vw_prom_writer_new(fmt, max);
	struct vw_table_stat tables[VW_TABLE__COUNT] = { 0 };
	_cleanup_free_ char *raw = NULL;
	size_t raw_len = 0;
	int r;

	if (!w)
		return -errno;
	vw_prom_writer_drop_oversize(w);
	vw_selfstats_hold_room(w, max);
	guest_tables(g, tables);
	r = vw_host_metrics_write(v, w);
	if (r == 0)
		r = render_guest(g, w, v->model);
	if (r == 0)
		r = vw_state_file_render(g->state, w, g->node_name);
	if (r == 0 && g->workloads)
		r = vw_workloads_render(g->workloads, w, g->node_name, g->cpu.ops->name);
	if (r == 0)
		r = vw_selfstats_write(g->self, w, tables, g->node_name, g->snapshots, max);
	if (r == 0)
		r = vw_prom_finish(w, &raw, &raw_len);
	vw_prom_writer_free(w);
	/* Learn from the text rendering, apply the same offsets to the OpenMetrics one. */
	if (r == 0)
		r = vw_series_state_apply(g->series, raw, raw_len, fmt == VW_PROM_TEXT_0_0_4, ret,
					  ret_len);
	return r;
}

static int render_and_publish(struct vw_guest *g, uint64_t dt_ns)
{
	struct vw_node_zone_view views[VW_ZONE__COUNT];
	struct vw_power_source_stats st = { 0 };
	const struct vw_host_frame *f = g->reader ? vw_reader_last(g->reader) : NULL;
	bool pt = g->used == VW_GUEST_PASSTHROUGH;
	struct vw_processinfo self = { .start_time_s = g->start_time_s };
	char *text = NULL, *om = NULL;
	size_t n = 0, text_len = 0, om_len = 0;
	struct vw_node_view v;
	uint64_t gen;
	int r;

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
	if (g->est.ops->stats)
		g->est.ops->stats(g->est.state, &st);
	v = (struct vw_node_view){
		.node_name = g->node_name,
		.source = vw_guest_source_name(g->used),
		.measured = pt && f && strcmp(f->source, "estimator") != 0,
		.model = pt ? (f && f->model[0] ? f->model : NULL) : st.model,
		.model_clamped = st.clamped,
		.usage_ratio = g->usage,
		.zones = views,
		.n_zones = n,
		.cpus = g->cpus,
		.n_cpus = g->n_cpus,
		.self = g->self_fd >= 0 ? &self : NULL,
	};
	g->snapshots++;
	if (g->self_fd >= 0)
		(void)vw_processinfo_read(g->self_fd, &self); /* what could be read is shown */
	r = render(g, &v, VW_PROM_TEXT_0_0_4, &text, &text_len);
	if (r == 0 && vw_exposition_openmetrics_wanted(g->expo, vw_now_ns()))
		r = render(g, &v, VW_PROM_OPENMETRICS_1_0_0, &om, &om_len);
	vw_selfstats_snapshot_done(g->self, g->snapshots);
	if (r < 0) {
		free(text);
		vw_error("metrics: rendering failed: %s", strerror(-r));
		return r;
	}
	gen = vw_exposition_publish(g->expo, text, text_len, om, om_len);
	if (g->workloads && gen)
		vw_workloads_published(g->workloads, gen, vw_exposition_served(g->expo));
	return 0;
}

int vw_guest_tick(struct vw_guest *g, uint64_t now_ns)
{
	struct vw_node_activity act = { .now_ns = now_ns, .ncpus = g->stat.ncpus };
	uint64_t dt_ns = g->ticked && now_ns > g->last_ns ? now_ns - g->last_ns : 0;
	struct vw_cpu_stat cur;
	bool fresh = false;
	int r = vw_procfs_read_stat(g->procfs_fd, &cur);

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
	if (g->reader) {
		(void)vw_reader_poll(g->reader); /* -ENOENT until a channel exists: not an error */
		fresh = vw_reader_fresh(g->reader);
	}
	for (size_t i = 0; i < VW_ZONE__COUNT; i++)
		g->z[i].int_idle = g->z[i].int_active = g->z[i].given_idle = 0;
	g->used = g->src == VW_GUEST_PASSTHROUGH && fresh ? VW_GUEST_PASSTHROUGH : VW_GUEST_MODEL;
	if (g->used == VW_GUEST_PASSTHROUGH)
		pt_interval(g, dt_ns);
	else
		model_interval(g, &act);
	for (size_t i = 0; i < VW_ZONE__COUNT; i++) {
		g->z[i].idle_uj = vw_energy_add(g->z[i].idle_uj, g->z[i].int_idle);
		g->z[i].active_uj = vw_energy_add(g->z[i].active_uj, g->z[i].int_active);
	}
	/* Hysteresis: the switch takes effect at the next interval. */
	if (fresh && g->src != VW_GUEST_PASSTHROUGH) {
		pt_rebase(g);
		g->src = VW_GUEST_PASSTHROUGH;
		g->switches += g->ticked;
		struct vw_reader_health h;

		vw_reader_health(g->reader, &h);
		vw_info("guest: passthrough (%s %s) is fresh: using it", vw_reader_kind_name(h.kind),
			h.path);
	} else if (!fresh && g->src == VW_GUEST_PASSTHROUGH) {
		g->src = VW_GUEST_MODEL;
		g->switches++;
		vw_warn("guest: passthrough is stale: estimating with the model %s",
			g->model_origin);
	}
	attribute(g, dt_ns);
	g->last_ns = now_ns;
	g->ticked = true;
	__atomic_store_n(&g->last_loop_ns, vw_now_ns(), __ATOMIC_RELAXED);
	r = render_and_publish(g, dt_ns);
	vw_state_file_tick(g->state, now_ns);
	return r;
}

struct vw_exposition *vw_guest_exposition(struct vw_guest *g)
{
	return g->expo;
}

enum vw_guest_source vw_guest_source_used(const struct vw_guest *g)
{
	return g->used;
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
	if (g->workloads)
		vw_workloads_totals(g->workloads, ret);
	else
		memset(ret, 0, sizeof(*ret));
}

/* ---- the loop ------------------------------------------------------------------------------ */

/* Ready unless the state file cannot be kept (counters would go back at the next restart). */
static bool guest_ready(void *userdata, char *why, size_t len)
{
	struct vw_guest *g = userdata;

	return vw_state_file_ok(g->state, why, len);
}

static bool guest_healthy(void *userdata, char *why, size_t len)
{
	struct vw_guest *g = userdata;

	return vw_daemon_loop_alive(__atomic_load_n(&g->last_loop_ns, __ATOMIC_RELAXED),
				    vw_daemon_stuck_after_ns(g->cfg->common.interval_ns), why, len);
}

int vw_guest_run(struct vw_guest *g, volatile sig_atomic_t *stop)
{
	const struct vw_guest_config *cfg = g->cfg;
	struct vw_http_opts ho = { .listen_address = cfg->common.listen_address,
				   .max_connections = (unsigned)cfg->common.web_max_connections,
				   .timeout_s = (unsigned)(cfg->common.web_timeout_ns / VW_NSEC_PER_SEC),
				   .web_config_file = cfg->common.web_config_file,
				   .program = "virtwatt-guest",
				   .version = VW_VERSION,
				   .healthy = guest_healthy,
				   .ready = guest_ready,
				   .userdata = g,
				   .stale_after_ns = vw_daemon_stale_after_ns(cfg->common.interval_ns) };
	uint64_t next = vw_now_ns();
	struct vw_http *http;

	(void)vw_guest_tick(g, next); /* baselines */
	http = vw_http_start(&ho, g->expo);
	if (!http)
		return -errno;
	/* The first snapshot soon (1 s), then one every interval. */
	next += VW_MIN(cfg->common.interval_ns, VW_NSEC_PER_SEC);
	while (!*stop) {
		struct pollfd pfd[] = {
			{ .fd = g->reader ? vw_reader_fd(g->reader) : -1, .events = POLLIN },
			{ .fd = vw_sigstop_fd(), .events = POLLIN }, /* a stop wakes us at once */
		};
		uint64_t now = vw_now_ns();
		int timeout_ms = next > now ? (int)VW_MIN((next - now + 999999) / 1000000, 60000) : 0;

		/* Drain the port as frames come, so freshness is never judged late. */
		if (poll(pfd, ARRAY_SIZE(pfd), timeout_ms) > 0 && pfd[0].revents)
			(void)vw_reader_poll(g->reader);
		if (*stop)
			break;
		now = vw_now_ns();
		if (now < next)
			continue;
		(void)vw_guest_tick(g, now);
		while (next <= now)
			next += cfg->common.interval_ns;
	}
	vw_info("guest: stopping");
	vw_http_stop(http);
	return 0;
}

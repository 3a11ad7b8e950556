/* SPDX-License-Identifier: Apache-2.0 */
#include "daemon.h"

#include <errno.h>
#include <malloc.h>
#include <poll.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>

#include "cgroupfs.h"
#include "energy.h"
#include "fileio.h"
#include "idle.h"
#include "log.h"
#include "metrics.h"
#include "model.h"
#include "power.h"
#include "procfs.h"
#include "publish.h"
#include "selfstats.h"
#include "sigstop.h"
#include "vm_source.h"
#include "workloads.h"

struct zone_state {
	struct vw_energy_counter ctr;
	uint64_t published_uj; /* ctr.total_uj at the last publication */
	uint64_t published_gaps;
	uint64_t read_errors;
	double configured_idle_w; /* < 0: none */
	struct vw_idle_fit *fit;
	struct vw_node_zone_view view;
	uint64_t int_idle_uj, int_active_uj; /* the last interval's split */
};

struct vw_host {
	const struct vw_host_config *cfg;
	int sysfs_fd, procfs_fd;
	int self_fd;          /* <procfs>/self, for process_* (-1: not shown) */
	double start_time_s;  /* Unix time at start */
	char node_name[256];
	struct vw_model *model;
	char model_origin[512];
	struct vw_power_source src;
	const struct vw_zone_info *zones;
	size_t n_zones;
	struct zone_state *zs;
	struct vw_cpu_info *cpus;
	size_t n_cpus;
	struct vw_cpu_stat stat_sample, stat_publish;
	uint64_t sample_ns, publish_ns; /* time of the last sample and publication */
	bool sampled;
	double usage;
	struct vw_complaint stat_complaint;
	struct vw_exposition *expo;
	struct vw_cpu_accountant cpu;
	struct vw_podmeta *podmeta;
	struct vw_cgroupfs *cgroupfs;
	struct vw_ctrmeta *ctrmeta;
	struct vw_workloads *workloads;
	struct vw_complaint cpu_complaint;
	struct vw_vms *vms;
	struct vm_channel *channels; /* each listed VM's channel, for the publisher */
	size_t n_channels;
	struct vw_publisher *publisher;
	struct vw_complaint vm_complaint;
	struct vw_selfstats *self;
	uint64_t snapshots;    /* rendered so far */
	uint64_t last_loop_ns; /* for /healthz; atomic */
};

static const char *nonempty(const char *s)
{
	return s && *s ? s : NULL;
}

static void pick_node_name(const struct vw_host_config *cfg, char *buf, size_t size)
{
	const char *env = getenv("NODE_NAME");
	struct utsname u;

	if (nonempty(cfg->common.node_name))
		snprintf(buf, size, "%s", cfg->common.node_name);
	else if (env && *env)
		snprintf(buf, size, "%s", env);
	else if (uname(&u) == 0)
		snprintf(buf, size, "%s", u.nodename);
	else
		snprintf(buf, size, "unknown");
}

static int parse_idle_overrides(const struct vw_strlist *l, double out[VW_ZONE__COUNT])
{
	for (size_t z = 0; z < VW_ZONE__COUNT; z++)
		out[z] = -1;
	for (size_t i = 0; i < l->n; i++) {
		char zone[32];
		const char *eq = strchr(l->v[i], '=');
		enum vw_zone zk;
		char *end;
		double w;

		if (!eq || (size_t)(eq - l->v[i]) >= sizeof(zone))
			goto bad;
		memcpy(zone, l->v[i], (size_t)(eq - l->v[i]));
		zone[eq - l->v[i]] = '\0';
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
			 l->v[i]);
		return -EINVAL;
	}
	return 0;
}

static int open_roots(struct vw_host *h)
{
	h->sysfs_fd = vw_root_open(h->cfg->common.sysfs);
	if (h->sysfs_fd < 0) {
		vw_error("host: cannot open sysfs root %s: %s", h->cfg->common.sysfs,
			 strerror(-h->sysfs_fd));
		return h->sysfs_fd;
	}
	h->procfs_fd = vw_root_open(h->cfg->common.procfs);
	if (h->procfs_fd < 0) {
		vw_error("host: cannot open procfs root %s: %s", h->cfg->common.procfs,
			 strerror(-h->procfs_fd));
		return h->procfs_fd;
	}
	h->self_fd = vw_processinfo_open(h->procfs_fd, &h->start_time_s);
	return 0;
}

static int load_model(struct vw_host *h)
{
	const struct vw_model_source_opts mo = {
		.file = nonempty(h->cfg->common.model_file),
		.url = nonempty(h->cfg->common.model_url),
		.cache_dir = h->cfg->common.model_cache_dir,
		.timeout_ms = (long)(h->cfg->common.model_timeout_ns / VW_NSEC_PER_MSEC),
	};
	char err[512] = "";
	int r = vw_model_source_load(&mo, &h->model, h->model_origin, sizeof(h->model_origin),
				     err, sizeof(err));

	if (r < 0)
		vw_error("model: %s", err[0] ? err : strerror(-r));
	return r;
}

static int setup_zones(struct vw_host *h)
{
	double overrides[VW_ZONE__COUNT];
	int r = parse_idle_overrides(&h->cfg->idle_watts, overrides);

	if (r < 0)
		return r;
	h->n_zones = h->src.ops->zones(h->src.state, &h->zones);
	h->zs = calloc(h->n_zones ? h->n_zones : 1, sizeof(*h->zs));
	if (!h->zs)
		return -ENOMEM;
	for (size_t i = 0; i < h->n_zones; i++) {
		struct zone_state *z = &h->zs[i];

		vw_energy_counter_init(&z->ctr, h->zones[i].max_range_uj, h->zones[i].max_power_uw);
		z->configured_idle_w = overrides[h->zones[i].zone];
		z->fit = vw_idle_fit_new(h->cfg->idle_window, h->cfg->idle_min_spread);
		if (!z->fit)
			return -ENOMEM;
		z->view = (struct vw_node_zone_view){ .zone = h->zones[i].zone,
						      .path = h->zones[i].path,
						      .idle_baseline_w = -1 };
		if (h->zones[i].max_range_uj)
			vw_info("power: zone %s socket %u at %s (wraps at %llu uJ)",
				vw_zone_name(h->zones[i].zone), h->zones[i].socket,
				h->zones[i].path, (unsigned long long)h->zones[i].max_range_uj);
		else
			vw_info("power: zone %s socket %u at %s", vw_zone_name(h->zones[i].zone),
				h->zones[i].socket, h->zones[i].path);
	}
	return 0;
}

static int parse_levels(const struct vw_strlist *l, struct vw_workloads_opts *o)
{
	for (size_t i = 0; i < l->n; i++) {
		if (strcmp(l->v[i], "node") == 0)
			continue;
		else if (strcmp(l->v[i], "process") == 0)
			o->processes = true;
		else if (strcmp(l->v[i], "container") == 0)
			o->containers = true;
		else if (strcmp(l->v[i], "pod") == 0)
			o->pods = true;
		else if (strcmp(l->v[i], "vm") == 0)
			o->vms = true;
		else {
			vw_error("config: --metrics: unknown level \"%s\" (node, process, container, "
				 "pod, vm)",
				 l->v[i]);
			return -EINVAL;
		}
	}
	return 0;
}

static int start_podmeta(struct vw_host *h)
{
	const struct vw_host_config *c = h->cfg;
	bool kubelet = c->common.kube_pod_source && strcmp(c->common.kube_pod_source, "kubelet") == 0;
	char kubelet_url[300];
	struct vw_podmeta_opts po = {
		.mode = kubelet ? VW_PODMETA_KUBELET : VW_PODMETA_APISERVER,
		.url = nonempty(kubelet ? c->common.kube_kubelet_url : c->common.kube_api_url),
		.token_file = nonempty(c->common.kube_token_file),
		.ca_file = nonempty(c->common.kube_ca_file),
		.node_name = h->node_name,
		.insecure_skip_verify = c->common.kube_insecure,
		.poll_ns = c->common.kube_poll_ns,
	};

	if (kubelet && !po.url) {
		snprintf(kubelet_url, sizeof(kubelet_url), "https://%s:10250", h->node_name);
		po.url = kubelet_url;
	}
	h->podmeta = vw_podmeta_start(&po);
	if (!h->podmeta) {
		vw_error("kube: cannot start pod metadata (%s): %s", kubelet ? "kubelet" : "apiserver",
			 strerror(errno));
		return -errno;
	}
	return 0;
}

/* Passthrough is on (the default) but cannot run as configured: an error that names the fix. */
static int passthrough_impossible(const char *why, const char *fix)
{
	vw_error("passthrough: --passthrough.enable is on but %s: %s, or set "
		 "--passthrough.enable=false if no guest needs its energy",
		 why, fix);
	return -EINVAL;
}

static int setup_vms(struct vw_host *h)
{
	const struct vw_host_config *c = h->cfg;
	/* New VMs outside libvirt show up within 10 s; libvirt's own are seen at once. */
	struct vw_vm_env env = { .procfs_fd = h->procfs_fd,
				 .libvirt_uri = nonempty(c->libvirt_uri),
				 .procscan_interval_ns = VW_MAX(c->common.interval_ns,
								10 * VW_NSEC_PER_SEC) };
	struct vw_power_source_stats st = { 0 };
	struct vw_publish_opts po;

	h->vms = vw_vms_open(&env);
	if (!h->vms) {
		if (c->passthrough)
			return passthrough_impossible("no VM source could be opened",
						      "check --libvirt.uri and --host.procfs");
		vw_warn("vm: no VM source could be opened: %s; no VM series", strerror(errno));
		return 0;
	}
	if (!c->passthrough)
		return 0;
	if (h->src.ops->stats)
		h->src.ops->stats(h->src.state, &st);
	po = (struct vw_publish_opts){
		.period_ns = c->passthrough_interval_ns ? c->passthrough_interval_ns
							: VW_MAX(c->common.interval_ns, VW_NSEC_PER_SEC),
		.jitter = c->passthrough_jitter,
		.energy_step_uj = (uint64_t)(c->passthrough_energy_step_j * 1e6),
		.power_step_w = c->passthrough_power_step_w,
		.share_root = nonempty(c->passthrough_share_root),
		.source = h->src.ops->name,
		.model = st.model,
		.lock_dir = nonempty(c->passthrough_lock_dir),
		.procfs_root = c->common.procfs,
	};
	if (!po.lock_dir)
		vw_warn("passthrough: --passthrough.lock-dir is empty: nothing stops another "
			"virtwatt-host from publishing the same VMs, whose guests would then count "
			"their energy twice");
	h->publisher = vw_publisher_new(&po);
	if (!h->publisher) {
		vw_error("passthrough: cannot start the publisher: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

static int setup_workloads(struct vw_host *h)
{
	const struct vw_host_config *c = h->cfg;
	struct vw_cpu_env env = { .procfs_fd = h->procfs_fd, .sysfs_fd = h->sysfs_fd };
	struct vw_workloads_opts o = { .procfs_fd = h->procfs_fd,
				       .host_cpus = h->stat_sample.ncpus,
				       .process_top_n = (unsigned)c->common.process_top_n,
				       .max_terminated = (unsigned)c->common.max_terminated,
				       .adopted_by = vw_vm_vhost_owner };
	struct vw_cpu_snapshot snap = { 0 };
	struct vw_zone_energy none[VW_ZONE__COUNT] = { 0 };
	const char *method = c->common.cpu_accounting && strcmp(c->common.cpu_accounting, "auto") != 0
				     ? c->common.cpu_accounting
				     : NULL;
	int r = parse_levels(&c->metrics, &o);

	if (r < 0)
		return r;
	if (c->passthrough && !o.vms)
		return passthrough_impossible("--metrics lacks vm (each VM's own energy is what is "
					      "passed through)", "add vm to --metrics");
	if (!o.processes && !o.containers && !o.pods && !o.vms)
		return 0; /* node level only: no per-process accounting at all */
	h->cgroupfs = vw_workloads_cgroupfs(h->sysfs_fd);
	env.cgroup_v1 = h->cgroupfs && vw_cgroupfs_is_v1(h->cgroupfs);
	r = vw_cpu_accountant_open(&env, method, &h->cpu);
	if (r < 0 && c->passthrough)
		return passthrough_impossible(
			"no per-process CPU accounting could be opened (a VM's energy is its QEMU "
			"threads' CPU-time share)",
			"run as root for bpf or give access to --host.procfs (--cpu.accounting=procfs)");
	if (r < 0) {
		/* Node power is still worth serving: degrade to node-level metrics. */
		vw_error("cpu: no per-process CPU accounting%s%s: exporting node metrics only",
			 method ? " with " : "", method ? method : "");
		return method ? r : 0;
	}
	if (c->common.kube_enable) {
		r = start_podmeta(h);
		if (r < 0)
			return r;
	}
	/* Loading BPF parses the kernel's BTF: give that transient heap back (~16 MiB of RSS). */
	malloc_trim(0);
	o.podmeta = h->podmeta;
	o.cgroupfs = h->cgroupfs;
	if (o.containers)
		o.ctrmeta = h->ctrmeta = vw_daemon_open_ctrmeta(&c->common);
	h->workloads = vw_workloads_new(&o);
	if (!h->workloads)
		return -ENOMEM;
	/* The baseline: CPU time spent before now belongs to no interval of ours. */
	if (h->cpu.ops->read(h->cpu.state, &snap) == 0)
		(void)vw_workloads_update(h->workloads, &snap, none, 0);
	return o.vms ? setup_vms(h) : 0;
}

int vw_host_new(const struct vw_host_config *cfg, struct vw_host **ret)
{
	struct vw_host *h = calloc(1, sizeof(*h));
	struct vw_power_env env;
	const char *const *only;
	int r;

	if (!h)
		return -ENOMEM;
	h->cfg = cfg;
	h->sysfs_fd = h->procfs_fd = h->self_fd = -1;
	pick_node_name(cfg, h->node_name, sizeof(h->node_name));
	r = open_roots(h);
	if (r < 0)
		goto fail;
	r = vw_procfs_read_stat(h->procfs_fd, &h->stat_sample);
	if (r < 0) {
		vw_error("host: cannot read %s/stat: %s", cfg->common.procfs, strerror(-r));
		goto fail;
	}
	if (vw_procfs_read_cpuinfo(h->procfs_fd, &h->cpus, &h->n_cpus) < 0)
		vw_warn("host: cannot read %s/cpuinfo; kepler_node_cpu_info will be empty",
			cfg->common.procfs);
	r = load_model(h);
	if (r < 0)
		goto fail;
	env = (struct vw_power_env){ .sysfs_fd = h->sysfs_fd,
				     .model = h->model,
				     .model_origin = h->model_origin,
				     .host_cores = h->stat_sample.ncpus };
	only = cfg->sources.n ? (const char *const *)cfg->sources.v : NULL;
	r = vw_power_source_open(vw_host_power_sources, &env, only, &h->src);
	if (r < 0) {
		vw_error("power: no power source could be opened");
		goto fail;
	}
	r = setup_zones(h);
	if (r < 0)
		goto fail;
	r = setup_workloads(h);
	if (r < 0)
		goto fail;
	h->expo = vw_exposition_new();
	h->self = vw_selfstats_new();
	if (!h->expo || !h->self) {
		r = -ENOMEM;
		goto fail;
	}
	*ret = h;
	return 0;
fail:
	vw_host_free(h);
	return r;
}

void vw_host_free(struct vw_host *h)
{
	if (!h)
		return;
	for (size_t i = 0; h->zs && i < h->n_zones; i++)
		vw_idle_fit_free(h->zs[i].fit);
	free(h->zs);
	vw_publisher_free(h->publisher);
	vw_vms_close(h->vms);
	free(h->channels);
	vw_workloads_free(h->workloads);
	vw_podmeta_stop(h->podmeta);
	vw_ctrmeta_free(h->ctrmeta);
	vw_cpu_accountant_close(&h->cpu);
	vw_cgroupfs_free(h->cgroupfs);
	vw_power_source_close(&h->src);
	vw_model_free(h->model);
	vw_exposition_free(h->expo);
	vw_selfstats_free(h->self);
	free(h->cpus);
	if (h->sysfs_fd >= 0)
		close(h->sysfs_fd);
	if (h->procfs_fd >= 0)
		close(h->procfs_fd);
	if (h->self_fd >= 0)
		close(h->self_fd);
	free(h);
}

struct vw_exposition *vw_host_exposition(struct vw_host *h)
{
	return h->expo;
}

static void read_meters(struct vw_host *h, const struct vw_node_activity *act)
{
	uint64_t raw[VW_POWER_MAX_ZONES] = { 0 };
	int errs[VW_POWER_MAX_ZONES] = { 0 };

	(void)h->src.ops->read(h->src.state, act, raw, errs);
	for (size_t i = 0; i < h->n_zones; i++) {
		struct zone_state *z = &h->zs[i];

		/* The source logs its own failures (rate-limited); count them here. */
		if (errs[i] < 0) {
			z->read_errors++;
			continue;
		}
		vw_energy_counter_update(&z->ctr, raw[i], act->now_ns, NULL);
	}
}

int vw_host_sample(struct vw_host *h, uint64_t now_ns)
{
	struct vw_node_activity act = { .now_ns = now_ns, .ncpus = h->stat_sample.ncpus };
	struct vw_cpu_stat cur;
	int r = vw_procfs_read_stat(h->procfs_fd, &cur);

	if (r < 0) {
		vw_complain(&h->stat_complaint, VW_LOG_WARN, "host: reading %s/stat: %s",
			    h->cfg->common.procfs, strerror(-r));
		cur = h->stat_sample; /* no CPU time seen this tick */
	} else {
		vw_release(&h->stat_complaint, VW_LOG_INFO, "host: %s/stat readable again",
			   h->cfg->common.procfs);
	}
	if (h->sampled && now_ns > h->sample_ns) {
		long hz = sysconf(_SC_CLK_TCK);
		double secs = (double)(now_ns - h->sample_ns) / 1e9;
		uint64_t busy = vw_cpu_stat_busy_delta(&h->stat_sample, &cur);

		act.elapsed_ns = now_ns - h->sample_ns;
		act.usage_ratio = vw_cpu_stat_usage(&h->stat_sample, &cur);
		act.cpu_ms_per_s = (double)busy * 1000.0 / (double)(hz > 0 ? hz : 100) / secs;
	} else {
		h->stat_publish = cur;
		h->publish_ns = now_ns;
	}
	read_meters(h, &act);
	h->stat_sample = cur;
	h->sample_ns = now_ns;
	h->sampled = true;
	__atomic_store_n(&h->last_loop_ns, now_ns, __ATOMIC_RELAXED);
	return r;
}

static double pick_idle(struct zone_state *z, const struct vw_zone_info *zi,
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
	if (vw_idle_fit_get(z->fit, &w) == 0) {
		*method = VW_IDLE_FITTED;
		return w;
	}
	*method = VW_IDLE_RESIDUAL;
	return -1;
}

static void close_zone_interval(struct vw_host *h, size_t i, uint64_t dt_ns)
{
	struct zone_state *z = &h->zs[i];
	struct vw_node_zone_view *v = &z->view;
	uint64_t energy = z->ctr.total_uj - z->published_uj;
	uint64_t idle_uj, active_uj;
	enum vw_idle_method method;
	double idle_w = pick_idle(z, &h->zones[i], &method);

	vw_idle_split(energy, dt_ns, idle_w, h->usage, &idle_uj, &active_uj);
	/* Learn the baseline only from clean intervals of a real meter. */
	if (h->src.ops->measured && z->ctr.gaps == z->published_gaps && dt_ns > 0)
		vw_idle_fit_add(z->fit, h->usage, vw_energy_watts(energy, dt_ns));
	z->published_uj = z->ctr.total_uj;
	z->published_gaps = z->ctr.gaps;
	z->int_idle_uj = idle_uj;
	z->int_active_uj = active_uj;
	v->total_uj = z->ctr.total_uj;
	v->idle_uj = vw_energy_add(v->idle_uj, idle_uj);
	v->active_uj = vw_energy_add(v->active_uj, active_uj);
	v->watts = vw_energy_watts(energy, dt_ns);
	v->idle_watts = vw_energy_watts(idle_uj, dt_ns);
	v->active_watts = vw_energy_watts(active_uj, dt_ns);
	/* The residual rule has no fixed baseline: report the idle power it gave. */
	v->idle_baseline_w = idle_w >= 0 ? idle_w : v->idle_watts;
	v->idle_method = method;
	v->gaps = z->ctr.gaps;
	v->read_errors = z->read_errors;
}

/* The bounded tables this daemon holds (virtwatt_table_*). */
static void host_tables(const struct vw_host *h, struct vw_table_stat t[VW_TABLE__COUNT])
{
	if (h->workloads)
		vw_workloads_table_stats(h->workloads, t);
	if (h->cgroupfs)
		vw_cgroupfs_table_stat(h->cgroupfs, &t[VW_TABLE_CGROUP]);
	if (h->podmeta)
		vw_podmeta_table_stats(h->podmeta, &t[VW_TABLE_POD_METADATA],
				       &t[VW_TABLE_CONTAINER_METADATA]);
	if (h->publisher)
		vw_publisher_table_stat(h->publisher, &t[VW_TABLE_PUBLISHER_VM]);
}

/* A family that would overflow --metrics.max-bytes is left out whole, the rest is served. */
static int render(struct vw_host *h, const struct vw_node_view *v, enum vw_prom_format fmt,
		  char **ret, size_t *ret_len)
{
	size_t max = (size_t)h->cfg->common.metrics_max_bytes;
	struct vw_prom_writer *w = vw_prom_writer_new(fmt, max);
	struct vw_table_stat tables[VW_TABLE__COUNT] = { 0 };
	int r;

	if (!w)
		return -errno;
	vw_prom_writer_drop_oversize(w);
	vw_selfstats_hold_room(w, max);
	host_tables(h, tables);
	r = vw_host_metrics_write(v, w);
	if (r == 0 && h->workloads)
		r = vw_workloads_render(h->workloads, w, h->node_name, h->cpu.ops->name);
	if (r == 0)
		r = vw_selfstats_write(h->self, w, tables, h->node_name, h->snapshots, max);
	if (r == 0)
		r = vw_prom_finish(w, ret, ret_len);
	vw_prom_writer_free(w);
	return r;
}

static int render_and_publish(struct vw_host *h)
{
	struct vw_node_zone_view views[VW_POWER_MAX_ZONES];
	struct vw_power_source_stats st = { 0 };
	struct vw_publish_stats ps = { 0 };
	struct vw_processinfo self = { .start_time_s = h->start_time_s };
	struct vw_node_view v;
	char *text = NULL, *om = NULL;
	size_t text_len = 0, om_len = 0;
	uint64_t gen;
	int r;

	for (size_t i = 0; i < h->n_zones; i++)
		views[i] = h->zs[i].view;
	if (h->src.ops->stats)
		h->src.ops->stats(h->src.state, &st);
	v = (struct vw_node_view){ .node_name = h->node_name,
				   .source = h->src.ops->name,
				   .measured = h->src.ops->measured,
				   .model = st.model,
				   .model_clamped = st.clamped,
				   .usage_ratio = h->usage,
				   .zones = views,
				   .n_zones = h->n_zones,
				   .cpus = h->cpus,
				   .n_cpus = h->n_cpus,
				   .publishing = h->publisher != NULL,
				   .self = h->self_fd >= 0 ? &self : NULL };
	h->snapshots++;
	if (h->publisher) {
		vw_publisher_stats(h->publisher, &ps);
		v.lock_refused = ps.lock_refused;
		v.vms_held_elsewhere = ps.vms_held_elsewhere;
		v.vms_lock_failed = ps.vms_lock_failed;
	}
	if (h->self_fd >= 0)
		(void)vw_processinfo_read(h->self_fd, &self); /* what could be read is shown */
	r = render(h, &v, VW_PROM_TEXT_0_0_4, &text, &text_len);
	if (r == 0 && vw_exposition_openmetrics_wanted(h->expo, vw_now_ns()))
		r = render(h, &v, VW_PROM_OPENMETRICS_1_0_0, &om, &om_len);
	vw_selfstats_snapshot_done(h->self, h->snapshots);
	if (r < 0) {
		free(text);
		vw_error("metrics: rendering failed: %s", strerror(-r));
		return r;
	}
	gen = vw_exposition_publish(h->expo, text, text_len, om, om_len);
	if (h->workloads && gen)
		vw_workloads_published(h->workloads, gen, vw_exposition_served(h->expo));
	return 0;
}

struct vm_channel {
	char uuid[VW_UUID_LEN];
	char path[sizeof(((struct vw_vm_info *)0)->channel_path)];
};

/* Each running VM is a reservation group: its QEMU process, the vhost threads adopted by it. */
static int vms_as_groups(const struct vw_vm_info *vms, size_t n, struct vw_group **ret,
			 size_t *ret_n)
{
	struct vw_group *g = calloc(n + 1, sizeof(*g));
	size_t k = 0;

	if (!g)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (vms[i].state == VW_VM_SHUTOFF)
			continue;
		g[k] = (struct vw_group){ .reserved_cpus = vms[i].vcpus,
					  .leader_pid = vms[i].qemu_pid,
					  .leader_start_time = vms[i].qemu_start_time };
		snprintf(g[k].id, sizeof(g[k].id), "%s", vms[i].uuid);
		snprintf(g[k].name, sizeof(g[k].name), "%s", vms[i].name);
		snprintf(g[k].kind, sizeof(g[k].kind), "%s",
			 vms[i].hypervisor[0] ? vms[i].hypervisor : "kvm");
		k++;
	}
	*ret = g;
	*ret_n = k;
	return 0;
}

/* The VM sources' current list (libvirt keeps its last list while libvirtd is away). */
static void refresh_vms(struct vw_host *h)
{
	struct vw_vm_info *vms = NULL;
	_cleanup_free_ struct vw_group *groups = NULL;
	size_t n = 0, n_groups = 0;
	int r;

	if (!h->vms)
		return;
	r = vw_vms_list(h->vms, &vms, &n);
	if (r < 0) {
		vw_complain(&h->vm_complaint, VW_LOG_WARN, "vm: listing VMs: %s", strerror(-r));
		return; /* keep the VMs as they were */
	}
	vw_release(&h->vm_complaint, VW_LOG_INFO, "vm: listing VMs works again");
	free(h->channels);
	h->n_channels = 0;
	h->channels = calloc(n + 1, sizeof(*h->channels));
	for (size_t i = 0; h->channels && i < n; i++) {
		struct vm_channel *c = &h->channels[h->n_channels++];

		snprintf(c->uuid, sizeof(c->uuid), "%s", vms[i].uuid);
		snprintf(c->path, sizeof(c->path), "%s", vms[i].channel_path);
	}
	if (!h->channels || vms_as_groups(vms, n, &groups, &n_groups) < 0 ||
	    vw_workloads_set_groups(h->workloads, groups, n_groups) < 0)
		vw_complain(&h->vm_complaint, VW_LOG_WARN, "vm: out of memory tracking VMs");
	free(vms);
}

static const char *vm_channel(const struct vw_host *h, const char *uuid)
{
	for (size_t i = 0; i < h->n_channels; i++)
		if (strcmp(h->channels[i].uuid, uuid) == 0)
			return h->channels[i].path;
	return "";
}

/* Each VM's own cumulative energy goes to its guest on the publisher's schedule. */
static void feed_publisher(struct vw_host *h)
{
	_cleanup_free_ struct vw_group_energy *ge = NULL;
	_cleanup_free_ struct vw_vm_energy *e = NULL;
	size_t max, n;

	if (!h->publisher)
		return;
	max = vw_workloads_n_groups(h->workloads);
	ge = calloc(max + 1, sizeof(*ge));
	e = calloc(max + 1, sizeof(*e));
	if (!ge || !e)
		return;
	n = vw_workloads_group_energy(h->workloads, ge, max);
	for (size_t i = 0; i < n; i++) {
		snprintf(e[i].uuid, sizeof(e[i].uuid), "%s", ge[i].id);
		snprintf(e[i].channel_path, sizeof(e[i].channel_path), "%s",
			 vm_channel(h, ge[i].id));
		e[i].n_zones = ge[i].n_zones;
		memcpy(e[i].zones, ge[i].zones, sizeof(e[i].zones));
	}
	if (vw_publisher_update(h->publisher, e, n) < 0)
		vw_complain(&h->vm_complaint, VW_LOG_WARN, "passthrough: update failed");
}

/* Hand the interval's split (sockets summed per zone kind) to the workloads. */
static void attribute_workloads(struct vw_host *h, uint64_t dt_ns)
{
	struct vw_zone_energy ze[VW_ZONE__COUNT] = { 0 };

	if (!h->workloads)
		return;
	for (size_t i = 0; i < h->n_zones; i++) {
		struct vw_zone_energy *e = &ze[h->zones[i].zone];

		e->present = true;
		e->active_uj += h->zs[i].int_active_uj;
		e->idle_uj += h->zs[i].int_idle_uj;
	}
	refresh_vms(h);
	(void)vw_workloads_interval(h->workloads, &h->cpu, ze, dt_ns, &h->cpu_complaint);
	feed_publisher(h);
}

int vw_host_publish(struct vw_host *h, uint64_t now_ns)
{
	uint64_t dt_ns;

	if (!h->sampled)
		return -EAGAIN;
	/* The interval ends at the last sample: energy and CPU time are both measured to it. */
	dt_ns = h->sample_ns - h->publish_ns;
	(void)now_ns;
	h->usage = vw_cpu_stat_usage(&h->stat_publish, &h->stat_sample);
	for (size_t i = 0; i < h->n_zones; i++)
		close_zone_interval(h, i, dt_ns);
	attribute_workloads(h, dt_ns);
	h->stat_publish = h->stat_sample;
	h->publish_ns = h->sample_ns;
	return render_and_publish(h);
}

static bool host_healthy(void *userdata, char *why, size_t len)
{
	struct vw_host *h = userdata;

	return vw_daemon_loop_alive(__atomic_load_n(&h->last_loop_ns, __ATOMIC_RELAXED),
				    vw_daemon_stuck_after_ns(h->cfg->common.interval_ns), why, len);
}

/* Sleep until deadline_ns, until the publisher's sockets need attention, or until a stop is
 * asked for (sigstop.h); the caller checks its stop flag. */
static void wait_until(struct vw_host *h, uint64_t deadline_ns)
{
	struct pollfd pfd[] = {
		{ .fd = vw_sigstop_fd(), .events = POLLIN },
		{ .fd = h->publisher ? vw_publisher_fd(h->publisher) : -1, .events = POLLIN },
	};
	uint64_t now = vw_now_ns(), due = deadline_ns;
	int timeout_ms;

	if (h->publisher)
		due = VW_MIN(due, vw_publisher_next_due(h->publisher));
	timeout_ms = due > now ? (int)VW_MIN((due - now + 999999) / 1000000, 60000) : 0;
	(void)poll(pfd, ARRAY_SIZE(pfd), timeout_ms); /* negative fds are skipped */
	if (h->publisher)
		(void)vw_publisher_tick(h->publisher, vw_now_ns(), NULL);
}

int vw_host_run(struct vw_host *h, volatile sig_atomic_t *stop)
{
	const struct vw_host_config *cfg = h->cfg;
	uint64_t sample_ns = VW_MIN(cfg->sample_ns, cfg->common.interval_ns);
	struct vw_http_opts ho = { .listen_address = cfg->common.listen_address,
				   .max_connections = (unsigned)cfg->common.web_max_connections,
				   .timeout_s = (unsigned)(cfg->common.web_timeout_ns / VW_NSEC_PER_SEC),
				   .web_config_file = cfg->common.web_config_file,
				   .program = "virtwatt-host",
				   .version = VW_VERSION,
				   .healthy = host_healthy,
				   .userdata = h,
				   .stale_after_ns = vw_daemon_stale_after_ns(cfg->common.interval_ns) };
	struct vw_http *http;
	uint64_t next_sample, next_publish;

	(void)vw_host_sample(h, vw_now_ns()); /* baseline */
	http = vw_http_start(&ho, h->expo);
	if (!http) {
		int r = -errno;

		vw_error("http: cannot serve on %s: %s", cfg->common.listen_address, strerror(-r));
		return r;
	}
	next_sample = h->sample_ns + sample_ns;
	/* The first snapshot after one sample period, then one every interval. */
	next_publish = h->sample_ns + sample_ns;
	while (!*stop) {
		uint64_t now;

		wait_until(h, next_sample);
		if (*stop)
			break;
		now = vw_now_ns();
		if (now < next_sample)
			continue;
		(void)vw_host_sample(h, now);
		/* Never fall behind: skip missed ticks rather than bursting. */
		while (next_sample <= now)
			next_sample += sample_ns;
		if (now + sample_ns / 2 >= next_publish) {
			(void)vw_host_publish(h, now);
			next_publish = now + cfg->common.interval_ns;
		}
	}
	vw_info("host: stopping");
	vw_http_stop(http);
	return 0;
}

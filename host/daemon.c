/* SPDX-License-Identifier: Apache-2.0 */
#include "daemon.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "daemon_base.h"
#include "energy.h"
#include "fileio.h"
#include "gpu.h"
#include "idle.h"
#include "interval.h"
#include "log.h"
#include "meters.h"
#include "metrics.h"
#include "model.h"
#include "power.h"
#include "procfs.h"
#include "publish.h"
#include "selfstats.h"
#include "training.h"
#include "vm_channels.h"
#include "vm_groups.h"
#include "vm_source.h"
#include "vm_meta.h"
#include "vm_vfio.h"
#include "workloads.h"

struct zone_state {
	struct vw_energy_counter ctr;
	struct vw_interval_mark closed; /* ctr at the last publication */
	uint64_t read_errors;
	uint64_t filled_ns; /* its source counted from a held reading (a polled meter's) */
	double configured_idle_w; /* < 0: none */
	struct vw_idle_fit *fit;
	struct vw_node_zone_view view;
	uint64_t int_idle_uj, int_active_uj; /* the last interval's split */
	bool measured; /* its source is a meter: the idle baseline may be learned from it */
};

/* An open power source and where its zones went: map[j] is the host's index of the source's
 * zone j, or -1 for one left out (a model's platform zone where a platform meter exists). */
struct host_source {
	struct vw_power_source ps;
	int map[VW_POWER_MAX_ZONES];
	size_t n_zones;
	uint64_t gaps_seen; /* the source's own gap count (a polled meter's) already added */
};

enum { SRC_CPU, SRC_PLATFORM }; /* the CPU zones' source (always), the platform meter's */

struct vw_host {
	struct vw_daemon d; /* roots, model, accountant, workloads, exposition (daemon_base.h) */
	const struct vw_host_config *cfg;
	struct vw_host_meters meters; /* the meters' configuration, from cfg */
	struct host_source src[2]; /* [SRC_CPU], then [SRC_PLATFORM] when a platform meter opened */
	size_t n_src;
	struct vw_zone_info zones[VW_POWER_MAX_ZONES]; /* every source's zones, as used */
	size_t n_zones;
	struct zone_state *zs;
	struct vw_cpu_stat stat_sample, stat_publish;
	uint64_t sample_ns, publish_ns; /* time of the last sample and publication */
	bool sampled;
	double usage;
	struct vw_complaint stat_complaint;
	bool has_noncpu;    /* a platform zone and CPU zones: their difference is shown */
	uint64_t noncpu_uj; /* platform minus package and dram, each interval's at least 0 */
	double noncpu_w;
	struct vw_vms *vms;
	struct vw_vm_info *vm_list; /* the VM sources' last list: vGPUs are matched to it */
	size_t n_vm_list;
	struct vw_vm_channels *channels; /* each listed VM's channel, for the publisher */
	struct vw_publisher *publisher;
	struct vw_complaint vm_complaint;
	struct vw_vm_vfio *vfio; /* GPUs passed through to VMs, named as theirs */
	struct vw_host_training *training; /* --model.train.*: NULL when off */
};

static const char *nonempty(const char *s)
{
	return s && *s ? s : NULL;
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

/* The sources' zones into h->zones: a platform meter's platform zone replaces a model's. */
static void gather_zones(struct vw_host *h)
{
	for (size_t s = 0; s < h->n_src; s++) {
		struct host_source *hs = &h->src[s];
		const struct vw_zone_info *zi;

		hs->n_zones = VW_MIN(hs->ps.ops->zones(hs->ps.state, &zi), VW_POWER_MAX_ZONES);
		for (size_t j = 0; j < hs->n_zones; j++) {
			bool replaced = s == SRC_CPU && h->n_src > SRC_PLATFORM &&
					zi[j].zone == VW_ZONE_PLATFORM;

			hs->map[j] = -1;
			if (replaced || h->n_zones == VW_POWER_MAX_ZONES)
				continue;
			hs->map[j] = (int)h->n_zones;
			h->zones[h->n_zones++] = zi[j];
		}
	}
}

static int setup_zones(struct vw_host *h)
{
	double overrides[VW_ZONE__COUNT];
	int r = parse_idle_overrides(&h->cfg->idle_watts, overrides);

	if (r < 0)
		return r;
	gather_zones(h);
	h->zs = calloc(h->n_zones ? h->n_zones : 1, sizeof(*h->zs));
	if (!h->zs)
		return -ENOMEM;
	for (size_t s = 0; s < h->n_src; s++)
		for (size_t j = 0; j < h->src[s].n_zones; j++)
			if (h->src[s].map[j] >= 0)
				h->zs[h->src[s].map[j]].measured = h->src[s].ps.ops->measured;
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

static bool passthrough_asked(const struct vw_host_config *c)
{
	return c->passthrough && strcmp(c->passthrough, "true") == 0;
}

static bool passthrough_wanted(const struct vw_host_config *c)
{
	return !c->passthrough || strcmp(c->passthrough, "false") != 0;
}

/*
 * Passthrough cannot run here. Asked for (--passthrough.enable=true): an error that names the
 * fix; by default (auto): said once, and the host runs without it.
 */
static int passthrough_impossible(const struct vw_host_config *c, const char *why,
				  const char *fix)
{
	if (!passthrough_asked(c)) {
		vw_info("passthrough: off: %s (--passthrough.enable=auto; to pass VMs their "
			"energy: %s)",
			why, fix);
		return 0;
	}
	vw_error("passthrough: --passthrough.enable=true but %s: %s, or leave "
		 "--passthrough.enable at auto",
		 why, fix);
	return -EINVAL;
}

/* The VM scan's view of the host's processes: the workload registry's (vw_vm_env.processes). */
static int host_processes(void *ud,
			  void (*each)(void *ctx, uint32_t pid, uint64_t start_time, const char *comm,
				       const char *exe),
			  void *ctx)
{
	const struct vw_host *h = ud;

	return h->d.workloads ? vw_workloads_each_process(h->d.workloads, each, ctx) : -EAGAIN;
}

static int setup_vms(struct vw_host *h)
{
	const struct vw_host_config *c = h->cfg;
	/* New VMs outside libvirt show up within 10 s; libvirt's own are seen at once. */
	struct vw_vm_env env = { .procfs_fd = h->d.procfs_fd,
				 .libvirt_uri = nonempty(c->libvirt_uri),
				 .procscan_interval_ns = VW_MAX(c->common.interval_ns,
								10 * VW_NSEC_PER_SEC),
				 .processes = host_processes,
				 .processes_ud = h };
	struct vw_power_source_stats st = { 0 };
	struct vw_publish_opts po;

	h->vms = vw_vms_open(&env);
	if (!h->vms) {
		vw_warn("vm: no VM source could be opened: %s; no VM series", strerror(errno));
		return passthrough_wanted(c)
			       ? passthrough_impossible(c, "no VM source could be opened",
							"check --libvirt.uri and --host.procfs")
			       : 0;
	}
	h->vfio = vw_vm_vfio_new(h->d.sysfs_fd);
	if (!h->vfio)
		return -ENOMEM;
	if (!passthrough_wanted(c))
		return 0;
	h->channels = vw_vm_channels_new(); /* what the publisher needs of each listing */
	if (!h->channels)
		return -ENOMEM;
	if (h->src[SRC_CPU].ps.ops->stats)
		h->src[SRC_CPU].ps.ops->stats(h->src[SRC_CPU].ps.state, &st);
	po = (struct vw_publish_opts){
		.period_ns = c->passthrough_interval_ns ? c->passthrough_interval_ns
							: VW_MAX(c->common.interval_ns, VW_NSEC_PER_SEC),
		.jitter = c->passthrough_jitter,
		.energy_step_uj = (uint64_t)(c->passthrough_energy_step_j * 1e6),
		.power_step_w = c->passthrough_power_step_w,
		.share_root = nonempty(c->passthrough_share_root),
		.source = h->src[SRC_CPU].ps.ops->name,
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
	struct vw_workloads_opts o = { .adopted_by = vw_vm_vhost_owner };
	int r = vw_daemon_parse_levels(&c->metrics, true, &o);

	if (r < 0)
		return r;
	/* A VM's energy is computed whenever VMs are accounted: passthrough needs it, whether or
	 * not the vm series are exported. */
	if (passthrough_wanted(c) && !o.vms)
		o.vms = o.vms_unexported = true;
	o.group_labels = (const char *const *)c->vm_info_labels.v; /* --vm.info-labels */
	if (vw_vm_groups_check(o.group_labels) < 0)
		return -EINVAL;
	r = vw_daemon_open_workloads(&h->d, &o, passthrough_asked(c));
	if (r == -ENODEV)
		return passthrough_impossible(
			c,
			"no per-process CPU accounting could be opened (a VM's energy is its QEMU "
			"threads' CPU-time share)",
			"run as root for bpf or give access to --host.procfs (--cpu.accounting=procfs)");
	if (r < 0)
		return r;
	if (!h->d.workloads) {
		if (passthrough_wanted(c) && !passthrough_asked(c))
			vw_info("passthrough: off: no per-process CPU accounting here (a VM's energy "
				"is its QEMU threads' CPU-time share)");
		else if (passthrough_asked(c))
			return passthrough_impossible(c, "no per-process CPU accounting is open",
						      "see the cpu: lines above");
		return 0;
	}
	return o.vms ? setup_vms(h) : 0;
}

static int host_sample(void *ud, uint64_t now_ns)
{
	return vw_host_sample(ud, now_ns);
}

static int host_publish(void *ud, uint64_t now_ns)
{
	return vw_host_publish(ud, now_ns);
}

static int publisher_fd(void *ud)
{
	struct vw_host *h = ud;

	return h->publisher ? vw_publisher_fd(h->publisher) : -1;
}

static uint64_t publisher_due(void *ud)
{
	struct vw_host *h = ud;

	return h->publisher ? vw_publisher_next_due(h->publisher) : UINT64_MAX;
}

/* The publisher's sockets and schedule are served between samples. */
static void publisher_woken(void *ud, uint64_t now_ns, bool fd_ready)
{
	struct vw_host *h = ud;

	(void)fd_ready;
	if (h->publisher)
		(void)vw_publisher_tick(h->publisher, now_ns, NULL);
}

static void host_tables(void *ud, struct vw_table_stat t[VW_TABLE__COUNT])
{
	struct vw_host *h = ud;

	if (h->publisher)
		vw_publisher_table_stat(h->publisher, &t[VW_TABLE_PUBLISHER_VM]);
}

/* The host's own families: its publication's locks, the models it trains, the GPUs passed
 * through to VMs. */
static int host_render(void *ud, struct vw_prom_writer *w)
{
	struct vw_host *h = ud;
	int r = vw_publisher_render(h->publisher, w, h->d.node_name);

	if (r == 0)
		r = vw_host_training_render(h->training, w, h->d.node_name);
	if (r == 0 && h->vms)
		r = vw_vm_meta_render(h->vm_list, h->n_vm_list, w, h->d.node_name);
	return r < 0 ? r : vw_vm_vfio_render(h->vfio, w, h->d.node_name);
}

static const struct vw_daemon_hooks host_hooks = {
	.program = "virtwatt-host",
	.sample = host_sample,
	.publish = host_publish,
	.wake_fd = publisher_fd,
	.wake_due = publisher_due,
	.woken = publisher_woken,
	.render = host_render,
	.tables = host_tables,
};

static const char *const *names_or_all(const struct vw_strlist *l)
{
	return l->n ? (const char *const *)l->v : NULL;
}

/*
 * The CPU zones' source (one must open), then a platform meter if the machine has one: none is
 * a value, not an error (said once; the platform zone is then a model's, or absent).
 */
static int open_sources(struct vw_host *h, const struct vw_power_env *env)
{
	const struct vw_strlist *plat = &h->cfg->platform_sources;
	const char *buf[9];
	const char *const *cpu_names;
	int r = vw_host_cpu_source_names(h->cfg, buf, &cpu_names);

	if (r == 0)
		r = vw_power_source_open(vw_host_power_sources, env, cpu_names, &h->src[SRC_CPU].ps);
	if (r < 0) {
		vw_error("power: no power source could be opened");
		return r;
	}
	h->n_src = 1;
	if (plat->n == 1 && strcmp(plat->v[0], "none") == 0)
		return 0;
	r = vw_power_source_open(vw_host_platform_sources, env, names_or_all(plat),
				 &h->src[SRC_PLATFORM].ps);
	if (r == -EINVAL) {
		char known[128];

		vw_power_chain_names(vw_host_platform_sources, known, sizeof(known));
		vw_error("config: --platform.sources names a meter this build does not have "
			 "(known: %s; none for no platform meter)",
			 known);
		return r;
	}
	if (r < 0) {
		vw_log(plat->n ? VW_LOG_WARN : VW_LOG_INFO,
		       "power: no platform meter found (%s): %s", strerror(-r),
		       plat->n ? "check --platform.sources and the meter" : "no measured platform zone");
		return 0;
	}
	h->n_src = 2;
	return 0;
}

int vw_host_new(const struct vw_host_config *cfg, struct vw_host **ret)
{
	struct vw_host *h = calloc(1, sizeof(*h));
	struct vw_power_env env;
	int r;

	if (!h)
		return -ENOMEM;
	h->cfg = cfg;
	r = vw_daemon_init(&h->d, &cfg->common, &host_hooks, h, true);
	if (r == 0)
		r = vw_daemon_load_model(&h->d, NULL);
	if (r < 0)
		goto fail;
	h->stat_sample = h->d.stat;
	r = vw_host_meters_setup(&h->meters, cfg, h->d.node_name);
	if (r < 0)
		goto fail;
	env = (struct vw_power_env){ .sysfs_fd = h->d.sysfs_fd,
				     .model = h->d.model,
				     .model_origin = h->d.model_origin,
				     .host_cores = h->d.stat.ncpus,
				     .configs = h->meters.configs,
				     .n_configs = h->meters.n };
	r = open_sources(h, &env);
	if (r == 0)
		r = setup_zones(h);
	if (r == 0)
		r = setup_workloads(h);
	if (r == 0)
		r = vw_host_training_new(&cfg->train, &h->training);
	if (r < 0)
		goto fail;
	vw_daemon_open_gpus(&h->d); /* none is no error */
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
	vw_host_training_free(h->training);
	vw_publisher_free(h->publisher);
	vw_vms_close(h->vms);
	free(h->vm_list);
	vw_vm_vfio_free(h->vfio);
	vw_vm_channels_free(h->channels);
	/* The workloads hold no reference to the sources: the engine's part goes after them. */
	for (size_t s = 0; s < h->n_src; s++)
		vw_power_source_close(&h->src[s].ps);
	vw_host_meters_fini(&h->meters);
	vw_daemon_fini(&h->d);
	free(h);
}

struct vw_exposition *vw_host_exposition(struct vw_host *h)
{
	return h->d.expo;
}

static void read_source(struct vw_host *h, struct host_source *hs,
			const struct vw_node_activity *act)
{
	uint64_t raw[VW_POWER_MAX_ZONES] = { 0 };
	int errs[VW_POWER_MAX_ZONES] = { 0 };

	struct vw_power_source_stats st = { 0 };
	uint64_t new_gaps = 0;

	(void)hs->ps.ops->read(hs->ps.state, act, raw, errs);
	/* A polled meter's gaps (spans it counted nothing for) are its zone's gaps too. */
	if (hs->ps.ops->stats) {
		hs->ps.ops->stats(hs->ps.state, &st);
		new_gaps = st.gaps > hs->gaps_seen ? st.gaps - hs->gaps_seen : 0;
		hs->gaps_seen = VW_MAX(hs->gaps_seen, st.gaps);
	}
	for (size_t j = 0; j < hs->n_zones; j++) {
		struct zone_state *z;

		if (hs->map[j] < 0)
			continue;
		z = &h->zs[hs->map[j]];
		z->ctr.gaps += new_gaps;
		z->filled_ns = VW_MAX(z->filled_ns, st.filled_ns);
		/* The source logs its own failures (rate-limited); count them here. */
		if (errs[j] < 0) {
			z->read_errors++;
			continue;
		}
		vw_energy_counter_update(&z->ctr, raw[j], act->now_ns, NULL);
	}
}

static void read_meters(struct vw_host *h, const struct vw_node_activity *act)
{
	for (size_t s = 0; s < h->n_src; s++)
		read_source(h, &h->src[s], act);
}

int vw_host_sample(struct vw_host *h, uint64_t now_ns)
{
	struct vw_node_activity act = { .now_ns = now_ns, .ncpus = h->stat_sample.ncpus };
	struct vw_cpu_stat cur;
	int r = vw_procfs_read_stat(h->d.procfs_fd, &cur);

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
	vw_gpus_sample(h->d.gpus, now_ns);
	h->stat_sample = cur;
	h->sample_ns = now_ns;
	h->sampled = true;
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
	double idle_w = pick_idle(z, &h->zones[i], &v->idle_method);
	struct vw_interval_split s;
	bool clean = vw_interval_close(&z->closed, &z->ctr, NULL, dt_ns, idle_w, h->usage, &s);

	/* Learn the baseline only from clean intervals of a real meter. */
	if (z->measured && clean && dt_ns > 0)
		vw_idle_fit_add(z->fit, h->usage, s.watts);
	z->int_idle_uj = s.idle_uj;
	z->int_active_uj = s.active_uj;
	VW_INTERVAL_ADD(v, &s);
	v->gaps = z->ctr.gaps;
	v->wraps = z->ctr.wraps;
	v->read_errors = z->read_errors;
	v->filled_us = z->filled_ns / 1000;
}

/* Platform energy beyond the CPU zones this interval (both measured to the same sample). */
static void close_noncpu(struct vw_host *h, uint64_t dt_ns)
{
	uint64_t plat = 0, cpu = 0, d;
	bool has_plat = false, has_cpu = false;

	for (size_t i = 0; i < h->n_zones; i++) {
		uint64_t e = h->zs[i].int_idle_uj + h->zs[i].int_active_uj;

		if (h->zones[i].zone == VW_ZONE_PLATFORM) {
			plat += e;
			has_plat = true;
		} else if (h->zones[i].zone == VW_ZONE_PACKAGE || h->zones[i].zone == VW_ZONE_DRAM) {
			cpu += e;
			has_cpu = true;
		}
	}
	h->has_noncpu = has_plat && has_cpu;
	d = plat > cpu ? plat - cpu : 0;
	h->noncpu_uj = vw_energy_add(h->noncpu_uj, d);
	h->noncpu_w = vw_energy_watts(d, dt_ns);
}

static int render_and_publish(struct vw_host *h)
{
	struct vw_platform_reading rows[VW_PLATFORM_MAX_READINGS];
	const struct vw_power_source *plat =
		h->n_src > SRC_PLATFORM ? &h->src[SRC_PLATFORM].ps : NULL;
	const struct vw_power_source *cpu = &h->src[SRC_CPU].ps;
	struct vw_node_zone_view views[VW_POWER_MAX_ZONES];
	struct vw_power_source_stats st = { 0 };
	struct vw_node_view v;

	for (size_t i = 0; i < h->n_zones; i++)
		views[i] = h->zs[i].view;
	if (cpu->ops->stats)
		cpu->ops->stats(cpu->state, &st);
	v = (struct vw_node_view){ .source = cpu->ops->name,
				   .measured = cpu->ops->measured,
				   .platform_source = plat ? plat->ops->name : NULL,
				   .model = st.model,
				   .model_clamped = st.clamped,
				   .model_extrapolated = st.extrapolated,
				   .usage_ratio = h->usage,
				   .zones = views,
				   .n_zones = h->n_zones,
				   .cpus = h->d.cpus,
				   .n_cpus = h->d.n_cpus,
				   .platform_readings = rows,
				   .has_noncpu = h->has_noncpu,
				   .noncpu_uj = h->noncpu_uj,
				   .noncpu_watts = h->noncpu_w };
	if (plat && plat->ops->readings)
		v.n_platform_readings = plat->ops->readings(plat->state, rows, ARRAY_SIZE(rows));
	return vw_daemon_render_publish(&h->d, &v);
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
	vw_vm_kubevirt_resolve(vms, n, h->d.podmeta); /* KubeVirt's VMs: named by their VMI */
	if ((h->channels && vw_vm_channels_set(h->channels, vms, n) < 0) ||
	    (h->vfio && vw_vm_vfio_update(h->vfio, vms, n) < 0) ||
	    vw_vm_groups(vms, n, (const char *const *)h->cfg->vm_info_labels.v, &groups,
			 &n_groups) < 0 ||
	    vw_workloads_set_groups(h->d.workloads, groups, n_groups) < 0)
		vw_complain(&h->vm_complaint, VW_LOG_WARN, "vm: out of memory tracking VMs");
	free(h->vm_list);
	h->vm_list = vms;
	h->n_vm_list = n;
}

/* A vGPU's VM among the listed ones (vw_vm_vgpu_owner). */
static bool vgpu_owner(void *ud, const struct vw_gpu_vgpu_energy *e, char id[VW_UUID_LEN])
{
	const struct vw_host *h = ud;

	return vw_vm_vgpu_owner(h->vm_list, h->n_vm_list, e->vm_id,
				e->vm_id_type == VW_GPU_VM_ID_UUID, e->mdev_uuid, id);
}

/* Each VM's own cumulative energy goes to its guest on the publisher's schedule. */
static void feed_publisher(struct vw_host *h)
{
	_cleanup_free_ struct vw_group_energy *ge = NULL;
	_cleanup_free_ struct vw_vm_energy *e = NULL;
	size_t max, n;

	if (!h->publisher || !h->d.workloads)
		return;
	max = vw_workloads_n_groups(h->d.workloads);
	ge = calloc(max + 1, sizeof(*ge));
	e = calloc(max + 1, sizeof(*e));
	if (!ge || !e)
		return;
	n = vw_workloads_group_energy(h->d.workloads, ge, max);
	for (size_t i = 0; i < n; i++) {
		snprintf(e[i].uuid, sizeof(e[i].uuid), "%s", ge[i].id);
		snprintf(e[i].channel_path, sizeof(e[i].channel_path), "%s",
			 vw_vm_channels_get(h->channels, ge[i].id));
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

	if (!h->d.workloads)
		return;
	for (size_t i = 0; i < h->n_zones; i++) {
		struct vw_zone_energy *e = &ze[h->zones[i].zone];

		e->present = true;
		e->active_uj += h->zs[i].int_active_uj;
		e->idle_uj += h->zs[i].int_idle_uj;
	}
	refresh_vms(h);
	(void)vw_workloads_interval(h->d.workloads, &h->d.cpu, ze, dt_ns, &h->d.cpu_complaint);
}

/* The interval's measured energy and CPU time to the models the host trains (training.h). */
static void train_interval(struct vw_host *h)
{
	struct vw_host_train_zone z[VW_POWER_MAX_ZONES];

	for (size_t i = 0; i < h->n_zones; i++)
		z[i] = (struct vw_host_train_zone){ &h->zs[i].view, h->zs[i].measured };
	vw_host_training_interval(h->training, h->sample_ns, &h->stat_sample, z, h->n_zones,
				  h->d.workloads);
}

/* A VM's model, freshly refitted, to its guest (PROTOCOL.md §2a). */
static void push_vm_model(void *ud, const char *vm_uuid, const char *name, const char *json,
			  size_t len)
{
	struct vw_host *h = ud;
	int r = vw_publisher_set_model(h->publisher, vm_uuid, name, json, len);

	if (r < 0 && r != -ENOENT) /* -ENOENT: not listed now */
		vw_complain(&h->vm_complaint, VW_LOG_WARN, "model: pushing VM %s's model: %s",
			    vm_uuid, strerror(-r));
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
	close_noncpu(h, dt_ns);
	vw_gpus_close_interval(h->d.gpus); /* to the same last sample */
	attribute_workloads(h, dt_ns);
	vw_daemon_attribute_gpus(&h->d, vgpu_owner, h);
	train_interval(h);
	feed_publisher(h); /* each VM's zones, its vGPUs' included */
	if (h->publisher)
		(void)vw_host_training_vm_models(h->training, push_vm_model, h);
	h->stat_publish = h->stat_sample;
	h->publish_ns = h->sample_ns;
	return render_and_publish(h);
}

int vw_host_run(struct vw_host *h, volatile sig_atomic_t *stop)
{
	uint64_t sample_ns = VW_MIN(h->cfg->sample_ns, h->cfg->common.interval_ns);

	/* The first snapshot after one sample period, then one every interval. */
	return vw_daemon_run(&h->d, sample_ns, sample_ns, stop);
}

/* SPDX-License-Identifier: Apache-2.0 */
#include "daemon.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "daemon_base.h"
#include "energy.h"
#include "fileio.h"
#include "gpu.h"
#include "log.h"
#include "meters.h"
#include "metrics.h"
#include "model.h"
#include "node.h"
#include "power.h"
#include "passthrough.h"
#include "publish.h"
#include "selfstats.h"
#include "training.h"
#include "vm_groups.h"
#include "vm_tracker.h"
#include "vm_trust.h"
#include "workloads.h"

enum { SRC_CPU, SRC_PLATFORM }; /* vw_host_meters_open()'s order */

struct vw_host {
	struct vw_daemon d; /* roots, model, accountant, workloads, exposition (daemon_base.h) */
	const struct vw_host_config *cfg;
	struct vw_host_meters meters; /* the meters' configuration, from cfg */
	/* Opened (vw_host_meters_open), then the stage's. */
	struct vw_power_source src[VW_HOST_METERS_OPENED];
	size_t n_src;
	struct vw_node *node; /* the node's energy: sources, counters, idle, split (node.h) */
	struct vw_vm_tracker *vms; /* the VMs, their GPUs and groups (vm_tracker.h); NULL: none */
	struct vw_qemu_trust *qemu_trust; /* --vm.qemu-users, for the VM sources (vm_trust.h) */
	struct vw_host_passthrough *pt; /* the publisher and its input (passthrough.h) */
	/* With pt: an epoll set of the publisher's fd and the VM sources' news (libvirt's answer:
	 * a VM's channel new mid-interval), the loop's wake descriptor; -1: the publisher's fd. */
	int wake_fd;
	struct vw_host_training *training; /* --model.train.*: NULL when off */
};

static const char *nonempty(const char *s)
{
	return s && *s ? s : NULL;
}

/* The stage over the sources, which it owns from here. */
static int setup_node(struct vw_host *h)
{
	double idle_w[VW_ZONE__COUNT];
	struct vw_node_chain chains[2] = { 0 };
	struct vw_node_opts o = { .procfs_fd = h->d.procfs_fd,
				  .procfs = h->cfg->common.procfs,
				  .who = "host",
				  .stat = h->d.stat,
				  .idle_w = idle_w,
				  .idle_window = h->cfg->idle_window,
				  .idle_min_spread = h->cfg->idle_min_spread,
				  .noncpu = true };
	int r = vw_node_parse_idle_watts((const char *const *)h->cfg->idle_watts.v,
					   h->cfg->idle_watts.n, idle_w);
	size_t n = h->n_src;

	if (r < 0)
		return r;
	for (size_t s = 0; s < n; s++)
		chains[s] = (struct vw_node_chain){ .src = { h->src[s] }, .n = 1 };
	h->n_src = 0;
	return vw_node_new(&o, chains, n, &h->node);
}

/* The VM scan's view of the host's processes: the workload registry's (vw_vm_env.processes). */
static int host_processes(void *ud,
			  void (*each)(void *ctx, uint32_t pid, uint64_t start_time, const char *comm,
				       const char *(*exe)(void *at), void *at),
			  void *ctx)
{
	const struct vw_host *h = ud;

	return h->d.workloads ? vw_workloads_each_process(h->d.workloads, each, ctx) : -EAGAIN;
}

/* Whose QEMU processes name VMs: root and --vm.qemu-users, names from the host's passwd. */
static int setup_qemu_trust(struct vw_host *h)
{
	const struct vw_host_config *c = h->cfg;
	_cleanup_close_ int root = -EBADF;

	if (c->common.rootfs && *c->common.rootfs) {
		root = vw_root_open(c->common.rootfs);
		if (root < 0)
			vw_info("vm: cannot open the host root %s: %s; --vm.qemu-users names no user",
				c->common.rootfs, strerror(-root));
	}
	h->qemu_trust = vw_qemu_trust_new(root, (const char *const *)c->vm_qemu_users.v,
					  c->vm_qemu_users.n);
	return h->qemu_trust ? 0 : -errno;
}

/*
 * The loop wakes for the publisher's sockets and for the VM sources' news: a restored VM's
 * channel reaches the publisher when libvirt's answer comes, not at the next interval's end
 * (its QEMU was listed, without a channel, the interval before). No news descriptor, or no
 * epoll set: the publisher's own fd, and channels at the intervals.
 */
static void setup_wake(struct vw_host *h)
{
	int news = vw_vm_tracker_news_fd(h->vms), fd;
	struct epoll_event ev = { .events = EPOLLIN };

	if (news < 0)
		return;
	fd = epoll_create1(EPOLL_CLOEXEC);
	if (fd >= 0 && epoll_ctl(fd, EPOLL_CTL_ADD, news, &ev) == 0 &&
	    epoll_ctl(fd, EPOLL_CTL_ADD, vw_publisher_fd(vw_host_passthrough_publisher(h->pt)),
		      &ev) == 0) {
		h->wake_fd = fd;
		return;
	}
	vw_info("passthrough: a VM's new channel waits for the interval's end: %m");
	if (fd >= 0)
		close(fd);
}

static int setup_vms(struct vw_host *h)
{
	const struct vw_host_config *c = h->cfg;
	struct vw_vm_source_config configs[VW_HOST_VM_SOURCES_MAX];
	/* New VMs show up within 10 s (the process scan; libvirt's helper is asked then). */
	struct vw_vm_env env = { .procfs_fd = h->d.procfs_fd,
				 .configs = configs,
				 .n_configs = vw_host_vm_configs(c, configs),
				 .procscan_interval_ns = VW_MAX(c->common.interval_ns,
								10 * VW_NSEC_PER_SEC),
				 .processes = host_processes,
				 .processes_ud = h,
				 /* a QEMU in a pod below the host's PID namespace: a VM only as
				  * KubeVirt's, as the pod metadata says (none: never) */
				 .kubevirt_pod = vw_vm_kubevirt_pod,
				 .kubevirt_pod_ud = h->d.podmeta };
	const char *pt = c->passthrough;
	struct vw_publish_opts po;
	int r = setup_qemu_trust(h);

	if (r < 0)
		return r;
	env.qemu_trust = h->qemu_trust;
	r = vw_vm_tracker_open(&env, h->d.sysfs_fd, &h->vms);

	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		vw_warn("vm: no VM source could be opened: %s; no VM series", strerror(-r));
		return vw_host_passthrough_wanted(pt)
			       ? vw_host_passthrough_impossible(pt, "no VM source could be opened",
								"check --libvirt.uri and --host.procfs")
			       : 0;
	}
	if (!vw_host_passthrough_wanted(pt))
		return 0;
	po = (struct vw_publish_opts){
		.period_ns = c->passthrough_interval_ns ? c->passthrough_interval_ns
							: VW_MAX(c->common.interval_ns, VW_NSEC_PER_SEC),
		.jitter = c->passthrough_jitter,
		.energy_step_uj = (uint64_t)(c->passthrough_energy_step_j * 1e6),
		.power_step_w = c->passthrough_power_step_w,
		.share_root = nonempty(c->passthrough_share_root),
		.lock_dir = nonempty(c->passthrough_lock_dir),
		.procfs_root = c->common.procfs,
	};
	r = vw_host_passthrough_new(&po, vw_node_source(h->node, SRC_CPU, 0), &h->pt);
	if (r == 0)
		setup_wake(h);
	return r;
}

static int setup_workloads(struct vw_host *h)
{
	const struct vw_host_config *c = h->cfg;
	struct vw_workloads_opts o = { .adopted_by = vw_vm_vhost_owner };
	const char *pt = c->passthrough;
	int r = vw_daemon_parse_levels(&c->metrics, true, &o);

	if (r < 0)
		return r;
	/* A VM's energy is computed whenever VMs are accounted: passthrough needs it, whether or
	 * not the vm series are exported. */
	if (vw_host_passthrough_wanted(pt) && !o.vms)
		o.vms = o.vms_unexported = true;
	o.group_labels = (const char *const *)c->vm_info_labels.v; /* --vm.info-labels */
	if (vw_vm_groups_check(o.group_labels) < 0)
		return -EINVAL;
	r = vw_daemon_open_workloads(&h->d, &o, vw_host_passthrough_asked(pt));
	if (r == -ENODEV)
		return vw_host_passthrough_impossible(
			pt,
			"no per-process CPU accounting could be opened (a VM's energy is its QEMU "
			"threads' CPU-time share)",
			"run as root for bpf or give access to --host.procfs (--cpu.accounting=procfs)");
	if (r < 0)
		return r;
	if (!h->d.workloads) {
		if (vw_host_passthrough_wanted(pt) && !vw_host_passthrough_asked(pt))
			vw_info("passthrough: off: no per-process CPU accounting here (a VM's energy "
				"is its QEMU threads' CPU-time share)");
		else if (vw_host_passthrough_asked(pt))
			return vw_host_passthrough_impossible(pt, "no per-process CPU accounting is open",
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

static struct vw_publisher *publisher(const struct vw_host *h)
{
	return vw_host_passthrough_publisher(h->pt);
}

static int publisher_fd(void *ud)
{
	struct vw_host *h = ud;

	if (h->wake_fd >= 0)
		return h->wake_fd;
	return publisher(h) ? vw_publisher_fd(publisher(h)) : -1;
}

/* A VM source's news mid-interval (vw_vm_tracker_news): the VMs' channels to the publisher. */
static int channels_listed(void *ud, const struct vw_vm_info *vms, size_t n)
{
	struct vw_host *h = ud;

	return vw_host_passthrough_channels(h->pt, vms, n);
}

static uint64_t publisher_due(void *ud)
{
	struct vw_host *h = ud;

	return publisher(h) ? vw_publisher_next_wake(publisher(h)) : UINT64_MAX;
}

/* The publisher's sockets and schedule are served between samples. */
static void publisher_woken(void *ud, uint64_t now_ns, bool fd_ready)
{
	struct vw_host *h = ud;

	if (fd_ready && h->wake_fd >= 0)
		vw_vm_tracker_news(h->vms, channels_listed, h); /* (no news: a read, nothing more) */
	if (publisher(h))
		(void)vw_publisher_tick(publisher(h), now_ns, NULL);
}

static void host_tables(void *ud, struct vw_table_stat t[VW_TABLE__COUNT])
{
	struct vw_host *h = ud;

	if (publisher(h))
		vw_publisher_table_stat(publisher(h), &t[VW_TABLE_PUBLISHER_VM]);
}

/* The host's own families: its publication's locks, the models it trains, the GPUs passed
 * through to VMs. */
static int host_render(void *ud, struct vw_prom_writer *w)
{
	struct vw_host *h = ud;
	int r = vw_publisher_render(publisher(h), w, h->d.node_name);

	if (r == 0)
		r = vw_host_training_render(h->training, w, h->d.node_name);
	return r < 0 ? r : vw_vm_tracker_render(h->vms, w, h->d.node_name);
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

int vw_host_new(const struct vw_host_config *cfg, struct vw_host **ret)
{
	struct vw_host *h = calloc(1, sizeof(*h));
	struct vw_power_env env;
	int r;

	if (!h)
		return -ENOMEM;
	h->wake_fd = -1;
	h->cfg = cfg;
	r = vw_daemon_init(&h->d, &cfg->common, &host_hooks, h, true);
	if (r == 0)
		r = vw_daemon_load_model(&h->d, NULL);
	if (r < 0)
		goto fail;
	r = vw_host_meters_setup(&h->meters, cfg, h->d.node_name);
	if (r < 0)
		goto fail;
	env = (struct vw_power_env){ .sysfs_fd = h->d.sysfs_fd,
				     .devfs = cfg->devfs && *cfg->devfs ? cfg->devfs : NULL,
				     .model = h->d.model,
				     .model_origin = h->d.model_origin,
				     .host_cores = h->d.stat.ncpus,
				     .configs = h->meters.configs,
				     .n_configs = h->meters.n };
	r = vw_host_meters_open(cfg, &env, h->src, &h->n_src);
	if (r == 0)
		r = setup_node(h);
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
	vw_host_training_free(h->training);
	vw_closep(&h->wake_fd);
	vw_host_passthrough_free(h->pt);
	vw_vm_tracker_free(h->vms);
	vw_qemu_trust_free(h->qemu_trust); /* (after the sources that counted in it) */
	/* The workloads hold no reference to the sources: the engine's part goes after them. */
	for (size_t s = 0; s < h->n_src; s++)
		vw_power_source_close(&h->src[s]);
	vw_node_free(h->node);
	vw_host_meters_fini(&h->meters);
	vw_daemon_fini(&h->d);
	free(h);
}

struct vw_exposition *vw_host_exposition(struct vw_host *h)
{
	return h->d.expo;
}

int vw_host_sample(struct vw_host *h, uint64_t now_ns)
{
	int r = vw_node_sample(h->node, now_ns);

	vw_gpus_sample(h->d.gpus, now_ns);
	return r;
}

static int render_and_publish(struct vw_host *h)
{
	struct vw_platform_reading rows[VW_PLATFORM_MAX_READINGS];
	const struct vw_power_source *plat = vw_node_source(h->node, SRC_PLATFORM, 0);
	const struct vw_power_source *cpu = vw_node_source(h->node, SRC_CPU, 0);
	struct vw_node_zone_view views[VW_POWER_MAX_ZONES];
	struct vw_power_source_stats st = { 0 };
	struct vw_node_view v;

	if (cpu->ops->stats)
		cpu->ops->stats(cpu->state, &st);
	v = (struct vw_node_view){ .source = cpu->ops->name,
				   .measured = cpu->ops->measured,
				   .platform_source = plat ? plat->ops->name : NULL,
				   .model = st.model,
				   .model_clamped = st.clamped,
				   .model_extrapolated = st.extrapolated,
				   .cpus = h->d.cpus,
				   .n_cpus = h->d.n_cpus,
				   .platform_readings = rows };
	vw_node_fill_view(h->node, &v, views);
	if (plat && plat->ops->readings)
		v.n_platform_readings = plat->ops->readings(plat->state, rows, ARRAY_SIZE(rows));
	return vw_daemon_render_publish(&h->d, &v);
}

/* A new VM list to the publisher and the VMs' groups to the workloads. */
static int vms_listed(void *ud, const struct vw_vm_info *vms, size_t n,
		      const struct vw_group *groups, size_t n_groups)
{
	struct vw_host *h = ud;

	if (h->pt && vw_host_passthrough_list(h->pt, vms, n) < 0)
		return -ENOMEM;
	return vw_workloads_set_groups(h->d.workloads, groups, n_groups);
}

/* Hand the interval's split (sockets summed per zone kind) to the workloads. */
static void attribute_workloads(struct vw_host *h, uint64_t dt_ns)
{
	struct vw_zone_energy ze[VW_ZONE__COUNT];

	if (!h->d.workloads)
		return;
	vw_node_zone_energy(h->node, ze);
	vw_vm_tracker_refresh(h->vms, h->d.podmeta, (const char *const *)h->cfg->vm_info_labels.v,
			      vms_listed, h);
	(void)vw_workloads_interval(h->d.workloads, &h->d.cpu, ze, dt_ns, &h->d.cpu_complaint);
}

/* The interval's measured energy and CPU time to the models the host trains (training.h). */
static void train_interval(struct vw_host *h)
{
	struct vw_host_train_zone z[VW_POWER_MAX_ZONES];
	size_t n = vw_node_n_zones(h->node);

	for (size_t i = 0; i < n; i++)
		z[i].view = vw_node_zone(h->node, i, &z[i].measured);
	vw_host_training_interval(h->training, vw_node_sample_ns(h->node), vw_node_stat(h->node),
				  z, n,
				  h->d.workloads);
}

int vw_host_publish(struct vw_host *h, uint64_t now_ns)
{
	uint64_t dt_ns;

	(void)now_ns;
	if (!vw_node_sampled(h->node))
		return -EAGAIN;
	dt_ns = vw_node_close(h->node); /* to the last sample */
	vw_gpus_close_interval(h->d.gpus); /* to the same last sample */
	attribute_workloads(h, dt_ns);
	vw_daemon_attribute_gpus(&h->d, vw_vm_tracker_vgpu_owner, h->vms);
	train_interval(h);
	vw_host_passthrough_interval(h->pt, h->d.workloads, h->training);
	return render_and_publish(h);
}

int vw_host_run(struct vw_host *h, volatile sig_atomic_t *stop)
{
	uint64_t sample_ns = VW_MIN(h->cfg->sample_ns, h->cfg->common.interval_ns);

	/* The first snapshot after one sample period, then one every interval. */
	return vw_daemon_run(&h->d, sample_ns, sample_ns, stop);
}

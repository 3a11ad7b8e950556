/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon skeleton's set-up and its render-and-publish step (daemon_base.h). */
#include "daemon_base.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "cgroupfs.h"
#include "cpu_fallback.h"
#include "ctrmeta.h"
#include "energy.h"
#include "kubeconfig.h"
#include "fileio.h"
#include "dmi.h"
#include "gpu.h"
#include "attribute_gpu.h"
#include "model.h"
#include "model_server.h"
#include "otlp.h"
#include "carbon.h"
#include "cgroup_path.h"

static const char *nonempty(const char *s)
{
	return s && *s ? s : NULL;
}

static void pick_node_name(const struct vw_daemon_options *o, char *buf, size_t size)
{
	const char *env = getenv("NODE_NAME");
	struct utsname u;

	if (nonempty(o->node_name))
		snprintf(buf, size, "%s", o->node_name);
	else if (nonempty(env))
		snprintf(buf, size, "%s", env);
	else if (uname(&u) == 0)
		snprintf(buf, size, "%s", u.nodename);
	else
		snprintf(buf, size, "unknown");
}

/* --exporter.otlp.endpoint: the pusher (nothing without it). -errno, logged. */
static int open_otlp(struct vw_daemon *d, const struct vw_daemon_options *o)
{
	char host[256] = "", why[512] = "";
	struct vw_otlp_opts oo = {
		.endpoint = o->otlp_endpoint,
		.interval_ns = VW_MAX(o->otlp_interval_ns, o->interval_ns),
		.timeout_ns = o->otlp_timeout_ns,
		.headers = o->otlp_headers,
		.ca_file = o->otlp_ca_file,
		.cert_file = o->otlp_cert_file,
		.key_file = o->otlp_key_file,
		.gzip = !o->otlp_compression || strcmp(o->otlp_compression, "none") != 0,
		.queue_max = (size_t)o->otlp_queue,
	};
	struct vw_otlp_resource res = { d->hooks->program, VW_VERSION, host,
					o->kube_enable ? d->node_name : NULL };
	int r;

	if (!o->otlp_endpoint || !*o->otlp_endpoint)
		return 0;
	(void)gethostname(host, sizeof(host) - 1);
	r = vw_otlp_new(&oo, &res, (uint64_t)(d->start_time_s * 1e9), &d->otlp, why, sizeof(why));
	if (r < 0) {
		vw_error("%s: OTLP export: %s", d->hooks->program, why[0] ? why : strerror(-r));
		return r;
	}
	vw_info("%s: pushing OTLP metrics to %s every %.0f s%s", d->hooks->program,
		o->otlp_endpoint, (double)oo.interval_ns / 1e9, oo.gzip ? " (gzip)" : "");
	return 0;
}

/* --carbon.intensity or --carbon.intensity-file: the tracker (nothing without). -errno. */
static int open_carbon(struct vw_daemon *d, const struct vw_daemon_options *o)
{
	struct vw_carbon_opts co = { .static_g_per_kwh = o->carbon_intensity,
				     .file = o->carbon_intensity_file,
				     .baseline_first = d->hooks->counters_persist };
	char why[600] = "";

	if (!(o->carbon_intensity > 0) && !nonempty(o->carbon_intensity_file))
		return 0;
	d->carbon = vw_carbon_new(&co, why, sizeof(why));
	if (!d->carbon) {
		vw_error("%s: carbon: %s", d->hooks->program, why[0] ? why : strerror(errno));
		return -errno;
	}
	vw_info("%s: carbon figures from %s", d->hooks->program,
		nonempty(o->carbon_intensity_file) ? o->carbon_intensity_file : "a static intensity");
	return 0;
}

int vw_daemon_init(struct vw_daemon *d, const struct vw_daemon_options *o,
		   const struct vw_daemon_hooks *hooks, void *ud, bool sysfs_required)
{
	const char *who = hooks->program;
	int r;

	*d = (struct vw_daemon){ .opts = o, .hooks = hooks, .ud = ud };
	d->sysfs_fd = d->procfs_fd = d->self_fd = -1;
	vw_processinfo_reader_init(&d->selfinfo, -1, 0); /* nothing open (fini) */
	/* One malloc arena: the HTTP threads allocate little, and an arena of their own kept
	 * ~70 KiB resident in the guest (a 6 MiB budget). Before any thread starts. */
	(void)mallopt(M_ARENA_MAX, 1);
	pick_node_name(o, d->node_name, sizeof(d->node_name));
	d->procfs_fd = vw_root_open(o->procfs);
	if (d->procfs_fd < 0) {
		vw_error("%s: cannot open procfs root %s: %s", who, o->procfs,
			 strerror(-d->procfs_fd));
		return d->procfs_fd;
	}
	d->sysfs_fd = vw_root_open(o->sysfs);
	if (d->sysfs_fd < 0 && sysfs_required) {
		vw_error("%s: cannot open sysfs root %s: %s", who, o->sysfs, strerror(-d->sysfs_fd));
		return d->sysfs_fd;
	}
	if (d->sysfs_fd < 0) /* only BTF and cgroups live there: the procfs accountant works */
		vw_warn("%s: cannot open sysfs root %s: %s", who, o->sysfs, strerror(-d->sysfs_fd));
	d->self_fd = vw_processinfo_open(d->procfs_fd, &d->start_time_s);
	vw_processinfo_reader_init(&d->selfinfo, d->self_fd, VW_PROCESSINFO_HEAP_PERIOD_NS);
	r = vw_procfs_read_stat(d->procfs_fd, &d->stat);
	if (r < 0) {
		vw_error("%s: cannot read %s/stat: %s", who, o->procfs, strerror(-r));
		return r;
	}
	if (vw_procfs_read_cpuinfo(d->procfs_fd, &d->cpus, &d->n_cpus) < 0)
		vw_warn("%s: cannot read %s/cpuinfo; kepler_node_cpu_info will be empty", who,
			o->procfs);
	d->expo = vw_exposition_new();
	d->self = vw_selfstats_new();
	if (!d->expo || !d->self)
		return -ENOMEM;
	r = open_carbon(d, o);
	return r < 0 ? r : open_otlp(d, o);
}

void vw_daemon_fini(struct vw_daemon *d)
{
	vw_otlp_free(d->otlp);
	vw_carbon_free(d->carbon);
	vw_workloads_free(d->workloads);
	vw_gpus_free(d->gpus);
	vw_pidns_fini(&d->pidns);
	vw_podmeta_stop(d->podmeta);
	vw_ctrmeta_free(d->ctrmeta);
	vw_cpu_accountant_close(&d->cpu);
	vw_cgroupfs_free(d->cgroupfs);
	vw_model_free(d->model);
	vw_exposition_free(d->expo);
	vw_selfstats_free(d->self);
	free(d->cpus);
	if (d->sysfs_fd >= 0)
		close(d->sysfs_fd);
	if (d->procfs_fd >= 0)
		close(d->procfs_fd);
	vw_processinfo_reader_close(&d->selfinfo);
	if (d->self_fd >= 0)
		close(d->self_fd);
	*d = (struct vw_daemon){ .sysfs_fd = -1, .procfs_fd = -1, .self_fd = -1 };
	vw_processinfo_reader_init(&d->selfinfo, -1, 0);
}

/* ---- the model ----------------------------------------------------------------------------- */

static int model_from_server(struct vw_daemon *d, const char *url, long timeout_ms)
{
	struct vw_model_server_opts so = { .url = url, .timeout_ms = timeout_ms };
	struct vw_machine_spec spec;
	char err[512] = "";

	if (vw_machine_spec_read(d->procfs_fd, &spec) < 0)
		vw_warn("model: cannot read this machine's spec; asking the server anyway");
	if (vw_model_server_fetch(&so, &spec, &d->model, err, sizeof(err)) < 0) {
		vw_warn("model: %s; falling back to the local model", err);
		return -ENOENT;
	}
	snprintf(d->model_origin, sizeof(d->model_origin), "server:%s", url);
	vw_info("model: %s from the model server %s", vw_model_name(d->model), url);
	return 0;
}

int vw_daemon_load_model(struct vw_daemon *d, const char *server_url)
{
	const struct vw_daemon_options *o = d->opts;
	long timeout_ms = (long)(o->model_timeout_ns / VW_NSEC_PER_MSEC);
	bool percpu = !o->model_builtin || strcmp(o->model_builtin, "kepler") != 0;
	char machine[128];
	bool dmi = vw_dmi_machine(d->sysfs_fd, machine, sizeof(machine)) == 0;
	const struct vw_model_source_opts mo = {
		.file = nonempty(o->model_file),
		.url = nonempty(o->model_url),
		.cache_dir = nonempty(o->model_cache_dir),
		.timeout_ms = timeout_ms,
		.cpus = d->cpus, /* read once at init, for kepler_node_cpu_info */
		.n_cpus = d->n_cpus,
		.percpu = percpu,
		.machine = dmi ? machine : NULL,
	};
	char err[512] = "";
	int r;

	if (o->model_builtin && strcmp(o->model_builtin, "auto") != 0 && percpu) {
		vw_error("config: --model.builtin: \"%s\" is not auto or kepler", o->model_builtin);
		return -EINVAL;
	}

	/* A local file is what the user asked for: it wins over the server. */
	if (nonempty(server_url) && !mo.file && model_from_server(d, server_url, timeout_ms) == 0)
		return 0;
	r = vw_model_source_load(&mo, &d->model, d->model_origin, sizeof(d->model_origin), err,
				 sizeof(err));
	if (r < 0)
		vw_error("model: %s", err[0] ? err : strerror(-r));
	return r;
}

/* ---- workloads ----------------------------------------------------------------------------- */

int vw_daemon_parse_levels(const struct vw_strlist *l, bool allow_vm, struct vw_workloads_opts *o)
{
	static const char *const names[] = { "node", "process", "container", "pod", "vm" };
	bool *flags[] = { NULL, &o->processes, &o->containers, &o->pods, &o->vms };
	size_t n = allow_vm ? ARRAY_SIZE(names) : ARRAY_SIZE(names) - 1;

	for (size_t i = 0; i < l->n; i++) {
		size_t k = 0;

		while (k < n && strcmp(l->v[i], names[k]) != 0)
			k++;
		if (k == n) {
			vw_error("config: --metrics: unknown level \"%s\" (node, process, container, "
				 "pod%s)",
				 l->v[i], allow_vm ? ", vm" : "");
			return -EINVAL;
		}
		if (flags[k])
			*flags[k] = true;
	}
	return 0;
}

/*
 * Kepler's kube.config: a kubeconfig for running outside a pod. Its current context's server
 * is the API server, its CA and credentials reach it (and the kubelet); --kube.api-server,
 * --kube.ca-file and --kube.token-file win over the file.
 */
static int apply_kubeconfig(const struct vw_daemon_options *c, struct vw_kubeconfig *k,
			    struct vw_podmeta_opts *po, bool kubelet)
{
	char err[512] = "";
	int r = vw_kubeconfig_load(c->kube_config, k, err, sizeof(err));

	if (r < 0) {
		vw_error("kube: --kube.config: %s", err[0] ? err : strerror(-r));
		return r;
	}
	vw_info("kube: kubeconfig %s: context %s, cluster %s (%s), user %s", c->kube_config,
		k->context, k->cluster, k->server, k->user ? k->user : "(none)");
	if (!kubelet && !po->url)
		po->url = k->server;
	if (!po->ca_file) {
		po->ca_file = k->ca_file;
		po->ca_pem = k->ca_pem;
	}
	if (!po->token_file) {
		po->token_file = k->token_file;
		po->token = k->token;
		po->cert_file = k->cert_file;
		po->key_file = k->key_file;
		po->cert_pem = k->cert_pem;
		po->key_pem = k->key_pem;
	}
	po->insecure_skip_verify = po->insecure_skip_verify || k->insecure;
	return 0;
}

static int start_podmeta(struct vw_daemon *d)
{
	const struct vw_daemon_options *c = d->opts;
	bool kubelet = nonempty(c->kube_pod_source) && strcmp(c->kube_pod_source, "kubelet") == 0;
	struct vw_podmeta_opts po = {
		.mode = kubelet ? VW_PODMETA_KUBELET : VW_PODMETA_APISERVER,
		/* none: in-cluster, or https://NODE:10250 for the kubelet */
		.url = nonempty(kubelet ? c->kube_kubelet_url : c->kube_api_url),
		.token_file = nonempty(c->kube_token_file),
		.ca_file = nonempty(c->kube_ca_file),
		.node_name = d->node_name,
		.insecure_skip_verify = c->kube_insecure,
		.poll_ns = c->kube_poll_ns,
	};
	struct vw_kubeconfig k = { 0 };

	if (nonempty(c->kube_config) && apply_kubeconfig(c, &k, &po, kubelet) < 0)
		return -EINVAL;
	d->podmeta = vw_podmeta_start(&po); /* copies what it keeps */
	vw_kubeconfig_free(&k);
	if (!d->podmeta) {
		vw_error("kube: cannot start pod metadata (%s): %s", kubelet ? "kubelet" : "apiserver",
			 strerror(errno));
		return -errno;
	}
	return 0;
}

/*
 * bpf was asked for (--cpu.accounting=bpf: an error follows) or expected (auto, built with BPF)
 * and did not open: the cause and its fix, once, as a warning (the alert is the metric).
 */
static enum vw_cpu_fallback bpf_fallback(struct vw_daemon *d, int err, bool asked)
{
	struct vw_cpu_probe p = { .err = err };
	enum vw_cpu_fallback f;

	p.btf = faccessat(d->sysfs_fd, "kernel/btf/vmlinux", F_OK, 0) == 0;
	vw_cpu_probe(&p);
	f = vw_cpu_fallback_classify(&p);
	vw_warn("cpu: %s: reason=%s (%s); to fix it: %s",
		asked ? "--cpu.accounting=bpf cannot open"
		      : "procfs accounts CPU time (coarser), not bpf",
		vw_cpu_fallback_name(f), strerror(-err), vw_cpu_fallback_fix(f));
	return f;
}

/* --cpu.ran-walk: auto (the default, and an unset field), true or false. */
static uint32_t ran_walk_flags(const char *mode)
{
	if (mode && strcmp(mode, "false") == 0)
		return VW_CPU_BPF_NO_RAN;
	if (mode && strcmp(mode, "true") == 0)
		return 0;
	return VW_CPU_BPF_RAN_AUTO;
}

/*
 * A /proc of a child PID namespace (a pod without hostPID, a container without --pid=host, a
 * system container) shows only that namespace's processes: bpf names the host's by PIDs it does
 * not hold (no exe, no cmdline, QEMU processes not found); procfs sees only those few and hands
 * them the node's whole active energy. Either way the per-process figures are wrong: said once.
 */
static void check_pid_namespace(const struct vw_daemon *d)
{
	struct vw_pidns ns;
	bool bpf = strcmp(d->cpu.ops->name, "bpf") == 0;

	if (vw_pidns_probe(d->procfs_fd, &ns) < 0)
		return;
	if (ns.mode == VW_PIDNS_CHILD_PROCFS)
		vw_warn("cpu: %s shows a child PID namespace, not the host's (%s): %s; run in the "
			"host's PID namespace (Kubernetes: hostPID: true; podman, docker: --pid=host), "
			"or mount the host's /proc and pass it as --host.procfs",
			d->opts->procfs, ns.how,
			bpf ? "bpf accounts the host's processes by the host's PIDs, which name no "
			      "process there or the wrong one (no exe labels; VMs' QEMU processes "
			      "not found)"
			    : "procfs sees only that namespace's processes and splits the node's "
			      "active energy among them alone");
	vw_pidns_fini(&ns);
}

int vw_daemon_open_workloads(struct vw_daemon *d, struct vw_workloads_opts *o, bool cpu_required)
{
	const struct vw_daemon_options *c = d->opts;
	struct vw_cpu_env env = { .procfs_fd = d->procfs_fd,
				  .sysfs_fd = d->sysfs_fd,
				  .flags = (c->cpu_hw_counters ? 0 : VW_CPU_BPF_NO_HW) |
					   ran_walk_flags(c->cpu_ran_walk) |
					   (c->cpu_irq_accounting &&
							    strcmp(c->cpu_irq_accounting, "off") == 0
						    ? VW_CPU_BPF_NO_IRQ
						    : 0) };
	struct vw_cpu_snapshot snap = { 0 };
	struct vw_zone_energy none[VW_ZONE__COUNT] = { 0 };
	const char *method = nonempty(c->cpu_accounting) && strcmp(c->cpu_accounting, "auto") != 0
				     ? c->cpu_accounting
				     : NULL;
	int r;

	if (!o->processes && !o->containers && !o->pods && !o->vms)
		return 0; /* node level only: no per-process accounting at all */
	d->cgroupfs = vw_workloads_cgroupfs(d->sysfs_fd);
	env.cgroup_v1 = d->cgroupfs && vw_cgroupfs_is_v1(d->cgroupfs);
	r = vw_cpu_accountant_open(&env, method, &d->cpu);
	if (r < 0 && VW_HAVE_BPF && method && strcmp(method, "bpf") == 0)
		(void)bpf_fallback(d, r, true);
	if (r < 0 && cpu_required)
		return -ENODEV;
	if (r < 0 && method) {
		vw_error("cpu: --cpu.accounting=%s cannot be used here: %s (auto picks what works)",
			 method, strerror(-r));
		return r;
	}
	if (r == 0 && !method && d->cpu.skipped_err && VW_HAVE_BPF)
		d->cpu_fallback = bpf_fallback(d, d->cpu.skipped_err, false);
	if (r < 0) {
		/* Node power is still worth serving: degrade to node-level metrics. */
		vw_error("cpu: no per-process CPU accounting: exporting node metrics only");
		return 0;
	}
	check_pid_namespace(d);
	if (c->kube_enable) {
		r = start_podmeta(d);
		if (r < 0)
			return r;
	}
	/* Start-up's transient heap goes back; BPF's BTF parse is in a child (cpu_bpf.c). */
	malloc_trim(0);
	o->procfs_fd = d->procfs_fd;
	o->host_cpus = d->stat.ncpus;
	o->process_top_n = (unsigned)c->process_top_n;
	o->max_terminated = (unsigned)c->max_terminated;
	o->podmeta = d->podmeta;
	o->cgroupfs = d->cgroupfs;
	if (o->containers)
		o->ctrmeta = d->ctrmeta = vw_daemon_open_ctrmeta(c);
	d->workloads = vw_workloads_new(o);
	if (!d->workloads)
		return -ENOMEM;
	/* The baseline: CPU time spent before now belongs to no interval of ours. */
	if (d->cpu.ops->read(d->cpu.state, &snap) == 0)
		(void)vw_workloads_update(d->workloads, &snap, none, 0);
	return 0;
}

/* ---- GPUs ---------------------------------------------------------------------------------- */

static struct vw_gpu_opts gpu_opts(const struct vw_daemon_options *o)
{
	return (struct vw_gpu_opts){ .nvml_library = nonempty(o->gpu_nvml_library),
				     .idle_w = o->gpu_idle_w,
				     .idle_window = (size_t)o->gpu_idle_window };
}

/* How the driver's PIDs stand to the procfs's, once there is a GPU (found at start or later). */
static void probe_gpu_pidns(struct vw_daemon *d)
{
	if (d->pidns_probed || vw_gpus_count(d->gpus) == 0)
		return;
	d->pidns_probed = true;
	if (vw_pidns_probe(d->procfs_fd, &d->pidns) == 0)
		vw_pidns_log_gpu(&d->pidns, d->opts->procfs);
}

void vw_daemon_open_gpus(struct vw_daemon *d)
{
	struct vw_gpu_opts go = gpu_opts(d->opts);
	int r;

	if (!d->opts->gpu_enable) {
		vw_info("gpu: --gpu.enable=false: no GPU series");
		return;
	}
	go.retry = true; /* none found: looked for again (a driver loaded after the daemon) */
	r = vw_gpus_open(&go, &d->gpus);
	if (r < 0 && r != -ENODEV) /* -ENODEV: none found, said already */
		vw_warn("gpu: cannot read the GPUs: %s; no GPU series", strerror(-r));
	probe_gpu_pidns(d);
}

int vw_daemon_attach_gpus(struct vw_daemon *d, const struct vw_gpu_source_ops *ops, void *ctx)
{
	struct vw_gpu_opts go = gpu_opts(d->opts);

	return d->opts->gpu_enable ? vw_gpus_attach(&d->gpus, &go, ops, ctx) : -ENODEV;
}

/* The VMs' vGPU shares, their groups named (ret[0..max), returns how many). */
static size_t vgpu_groups(struct vw_daemon *d, vw_vgpu_owner_fn owner, void *ud,
			  struct vw_group_gpu *ret, size_t max)
{
	_cleanup_free_ struct vw_gpu_vgpu_energy *e = calloc(max + 1, sizeof(*e));
	size_t n;

	if (!e)
		return 0; /* no memory: the node's */
	n = vw_gpus_vgpu_energy(d->gpus, e, max);
	for (size_t i = 0; i < n; i++) {
		ret[i] = (struct vw_group_gpu){ .idle_uj = e[i].idle_uj, .active_uj = e[i].active_uj };
		if (!owner || !owner(ud, &e[i], ret[i].id))
			ret[i].id[0] = '\0';
	}
	return n;
}

/* The driver's PIDs as the procfs numbers them (a daemon in a child PID namespace). */
static void map_gpu_pids(struct vw_daemon *d, struct vw_gpu_pid_energy *e, size_t n)
{
	_cleanup_free_ uint32_t *pids = NULL;

	if (d->pidns.mode != VW_PIDNS_DAEMON_IN_CHILD || n == 0)
		return;
	vw_pidns_next_interval(&d->pidns);
	pids = calloc(n, sizeof(*pids));
	if (!pids)
		return;
	for (size_t i = 0; i < n; i++)
		pids[i] = e[i].pid;
	if (vw_pidns_map(&d->pidns, d->procfs_fd, pids, n) < 0)
		return; /* as given: the host's, or unattributed */
	for (size_t i = 0; i < n; i++)
		e[i].pid = pids[i];
}

void vw_daemon_attribute_gpus(struct vw_daemon *d, vw_vgpu_owner_fn owner, void *ud)
{
	size_t n_gpus = vw_gpus_count(d->gpus), max = n_gpus * VW_GPU_MAX_TRACKED;
	size_t max_vgpus = n_gpus * VW_GPU_MAX_VGPUS;
	_cleanup_free_ struct vw_gpu_pid_energy *e = NULL;
	_cleanup_free_ struct vw_group_gpu *g = NULL;
	_cleanup_free_ struct vw_gpu_attr_device *dev = NULL;
	struct vw_gpu_attr_device all = { 0 };
	struct vw_workloads_gpu_in in = { 0 };
	uint64_t active = 0;
	size_t n_listed = 0;

	if (!n_gpus || !d->workloads)
		return; /* none (yet: GPUs found later are read from their first interval) */
	probe_gpu_pidns(d);
	g = calloc(max_vgpus + 1, sizeof(*g));
	dev = calloc(n_gpus + 1, sizeof(*dev));
	in.groups = g;
	in.n_groups = g ? vgpu_groups(d, owner, ud, g, max_vgpus) : 0;
	e = calloc(max, sizeof(*e));
	in.pids = e;
	in.n_pids = vw_gpus_process_energy(d->gpus, e, e ? max : 0, &active); /* no memory: the
										 * node's */
	map_gpu_pids(d, e, in.n_pids);
	for (size_t i = 0; i < n_gpus; i++) {
		struct vw_gpu_view v;

		vw_gpus_view(d->gpus, i, &v);
		if (v.gone)
			continue; /* not the node's now (handed to a VM, removed): no GPU to reserve */
		if (dev)
			dev[n_listed] = (struct vw_gpu_attr_device){ .idle_uj = v.int_idle_uj,
								     .active_uj = v.int_active_uj };
		n_listed++;
		all.idle_uj = vw_energy_add(all.idle_uj, v.int_idle_uj);
		all.active_uj = vw_energy_add(all.active_uj, v.int_active_uj);
	}
	/* No memory for the list: the devices as one, their energy all counted still. */
	in.devices = dev ? dev : &all;
	in.n_devices = dev || !n_listed ? n_listed : 1;
	(void)vw_workloads_gpu(d->workloads, &in);
}

/* ---- render and publish -------------------------------------------------------------------- */

static void daemon_tables(const struct vw_daemon *d, struct vw_table_stat t[VW_TABLE__COUNT])
{
	if (d->workloads)
		vw_workloads_table_stats(d->workloads, t);
	if (d->cgroupfs)
		vw_cgroupfs_table_stat(d->cgroupfs, &t[VW_TABLE_CGROUP]);
	if (d->podmeta)
		vw_podmeta_table_stats(d->podmeta, &t[VW_TABLE_POD_METADATA],
				       &t[VW_TABLE_CONTAINER_METADATA]);
	if (d->hooks->tables)
		d->hooks->tables(d->ud, t);
}

/* A family that would overflow --metrics.max-bytes is left out whole, the rest is served.
 * ret_layout (text only, or NULL): where OpenMetrics can be derived from, NULL if it cannot. */
static int render(struct vw_daemon *d, const struct vw_node_view *v, enum vw_prom_format fmt,
		  char **ret, size_t *ret_len, struct vw_prom_layout **ret_layout)
{
	const struct vw_daemon_hooks *k = d->hooks;
	size_t max = (size_t)d->opts->metrics_max_bytes;
	struct vw_prom_writer *w = vw_prom_writer_new(fmt, max);
	struct vw_table_stat tables[VW_TABLE__COUNT] = { 0 };
	bool text = fmt == VW_PROM_TEXT_0_0_4;
	int r;

	if (!w)
		return -errno;
	vw_prom_writer_expect(w, d->render_len);
	if (ret_layout)
		(void)vw_prom_writer_keep_layout(w); /* none without memory: a second render then */
	if (k->render_begin)
		k->render_begin(d->ud, w, text);
	if (text && d->carbon) { /* carbon follows the energy counters as they are written */
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		vw_carbon_begin(d->carbon, (int64_t)ts.tv_sec * (int64_t)VW_NSEC_PER_SEC + ts.tv_nsec);
		vw_prom_writer_observe_counters(w, vw_carbon_observe, d->carbon);
	}
	vw_prom_writer_drop_oversize(w);
	vw_selfstats_hold_room(w, max);
	daemon_tables(d, tables);
	r = vw_host_metrics_write(v, w);
	if (r == 0 && d->gpus)
		r = vw_gpus_render(d->gpus, w, d->node_name);
	if (r == 0 && k->render)
		r = k->render(d->ud, w);
	if (r == 0 && d->workloads)
		r = vw_workloads_render(d->workloads, w, d->node_name, d->cpu.ops->name,
					 vw_cpu_fallback_name(d->cpu_fallback));
	if (r == 0 && d->workloads)
		r = vw_workloads_render_gpu(d->workloads, w, d->node_name);
	if (r == 0)
		r = vw_carbon_render(d->carbon, w, d->node_name, text);
	if (r == 0)
		r = vw_otlp_render(d->otlp, w, d->node_name);
	if (r == 0)
		r = vw_selfstats_write(d->self, w, tables, d->node_name, d->snapshots, max);
	if (r == 0)
		r = vw_prom_finish(w, ret, ret_len);
	if (r == 0 && ret_len)
		d->render_len = *ret_len;
	if (r == 0 && ret_layout)
		*ret_layout = vw_prom_writer_take_layout(w);
	vw_prom_writer_free(w);
	if (k->render_end) {
		int e = k->render_end(d->ud, text);

		if (r == 0 && e < 0) {
			free(*ret);
			if (ret_layout)
				vw_prom_layout_free(VW_TAKE_PTR(*ret_layout));
			r = e;
		}
	}
	return r;
}

int vw_daemon_render_publish(struct vw_daemon *d, struct vw_node_view *v)
{
	struct vw_processinfo self = { .start_time_s = d->start_time_s };
	char *text = NULL, *om = NULL;
	size_t text_len = 0, om_len = 0;
	struct vw_prom_layout *layout = NULL;
	uint64_t gen;
	int r;

	v->node_name = d->node_name;
	v->self = d->self_fd >= 0 ? &self : NULL;
	if (d->self_fd >= 0)
		(void)vw_processinfo_reader_read(&d->selfinfo, &self); /* what could be read is shown */
	d->snapshots++;
	/* OpenMetrics only while a scraper asks for it (http.h); text is served until then. It is
	 * derived from the text by the first request for it (exposition.h), rendered a second
	 * time only where --metrics.max-bytes could make the two leave out different families. */
	if (vw_exposition_openmetrics_wanted(d->expo, vw_now_ns())) {
		r = render(d, v, VW_PROM_TEXT_0_0_4, &text, &text_len, &layout);
		if (r == 0 && !layout)
			r = render(d, v, VW_PROM_OPENMETRICS_1_0_0, &om, &om_len, NULL);
	} else {
		r = render(d, v, VW_PROM_TEXT_0_0_4, &text, &text_len, NULL);
	}
	vw_selfstats_snapshot_done(d->self, d->snapshots);
	v->self = NULL;
	if (r < 0) {
		free(text);
		vw_prom_layout_free(layout);
		vw_error("metrics: rendering failed: %s", strerror(-r));
		return r;
	}
	if (d->opts->exporter_stdout) { /* Kepler's stdout exporter: the snapshot as served */
		fwrite(text, 1, text_len, stdout);
		fflush(stdout);
	}
	if (d->otlp) { /* the very snapshot /metrics serves, stamped now */
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		vw_otlp_offer(d->otlp, text, text_len,
			      (uint64_t)ts.tv_sec * VW_NSEC_PER_SEC + (uint64_t)ts.tv_nsec);
	}
	gen = layout ? vw_exposition_publish_layout(d->expo, text, text_len, layout)
		     : vw_exposition_publish(d->expo, text, text_len, om, om_len);
	if (d->workloads && gen)
		vw_workloads_published(d->workloads, gen, vw_exposition_served(d->expo));
	return 0;
}

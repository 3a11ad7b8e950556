/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The daemon skeleton both virtwatt-host and virtwatt-guest are built on: they differ by the
 * power sources, accountants and sinks they plug in (struct vw_daemon_hooks), not by copied
 * loops.
 *
 *   set-up      vw_daemon_init (node name, roots, /proc/stat, CPU inventory, exposition),
 *               vw_daemon_load_model, vw_daemon_parse_levels + vw_daemon_open_workloads,
 *               vw_daemon_open_gpus
 *   an interval the daemon's own code closes it, then hands a node view to
 *               vw_daemon_render_publish (node families, the daemon's own, workloads,
 *               self-stats; text always, OpenMetrics while a scraper asks for it)
 *   the loop    vw_daemon_run: HTTP with /healthz and /readyz, sample and publish ticks, one
 *               extra descriptor (a publisher's sockets, a passthrough port), stop on signal
 */
#pragma once

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpu_account.h"
#include "daemon_options.h"
#include "pidns.h"
#include "http.h"
#include "log.h"
#include "metrics.h"
#include "procfs.h"
#include "selfstats.h"
#include "workloads.h"

struct vw_gpus;
struct vw_model;
struct vw_podmeta;
struct vw_ctrmeta;
struct vw_cgroupfs;

/* What a daemon plugs into the skeleton; every member may be NULL but publish. */
struct vw_daemon_hooks {
	const char *program; /* "virtwatt-host": the HTTP index and log lines */
	/* Read the meters at now_ns; when set, the loop samples every sample period and publishes
	 * after the sample closest to each interval's end. */
	int (*sample)(void *ud, uint64_t now_ns);
	/* Close the interval ending at now_ns and call vw_daemon_render_publish. Without sample,
	 * the first call (before the HTTP server starts) only takes baselines. */
	int (*publish)(void *ud, uint64_t now_ns);
	/* A descriptor to wake on (-1: none), the time the daemon wants to be woken at
	 * (UINT64_MAX: none), and what to do when woken (fd_ready: the descriptor is readable). */
	int (*wake_fd)(void *ud);
	uint64_t (*wake_due)(void *ud);
	void (*woken)(void *ud, uint64_t now_ns, bool fd_ready);
	/* The daemon's own families, rendered after the node's and before the workloads'. */
	int (*render)(void *ud, struct vw_prom_writer *w);
	/* Around each rendering of a snapshot (text: the Prometheus text one, always first): the
	 * guest filters every counter through its monotonic state (prom.h's counter filter). */
	void (*render_begin)(void *ud, struct vw_prom_writer *w, bool text);
	int (*render_end)(void *ud, bool text);
	/* The bounded tables the daemon holds beyond the skeleton's (virtwatt_table_*). */
	void (*tables)(void *ud, struct vw_table_stat t[VW_TABLE__COUNT]);
	/* /readyz beyond a fresh snapshot (NULL: ready). */
	bool (*ready)(void *ud, char *why, size_t len);
	/* The daemon's counters survive its restarts (the guest's state file): the first
	 * snapshot's are baselines for carbon, not energy of its first interval. */
	bool counters_persist;
};

/* The part of a daemon the skeleton owns; each daemon embeds one. */
/* web.listen-address: addresses served at most (each its own server). */
#define VW_DAEMON_MAX_LISTEN 8

struct vw_daemon {
	const struct vw_daemon_options *opts;
	const struct vw_daemon_hooks *hooks;
	void *ud; /* the hooks' argument */
	int sysfs_fd, procfs_fd;
	int self_fd;         /* <procfs>/self, for process_* (-1: not shown) */
	struct vw_processinfo_reader selfinfo; /* process_* through self_fd's open files */
	double start_time_s; /* Unix time at start */
	char node_name[256];
	struct vw_cpu_info *cpus;
	size_t n_cpus;
	struct vw_cpu_stat stat; /* /proc/stat at start */
	struct vw_model *model;
	char model_origin[600];
	struct vw_cpu_accountant cpu;
	int cpu_fallback; /* enum vw_cpu_fallback: why not bpf, when bpf was expected */
	struct vw_podmeta *podmeta;
	struct vw_cgroupfs *cgroupfs;
	struct vw_ctrmeta *ctrmeta;
	struct vw_workloads *workloads;
	struct vw_gpus *gpus; /* NULL: no GPU (or --gpu.enable=false) */
	struct vw_pidns pidns; /* the procfs's PID namespace and the daemon's; maps GPU PIDs (pidns.h) */
	bool pidns_probed;     /* pidns found out (once a GPU is there) */
	struct vw_complaint cpu_complaint;
	struct vw_exposition *expo;
	struct vw_selfstats *self;
	struct vw_otlp *otlp; /* --exporter.otlp.endpoint: NULL when off */
	struct vw_carbon *carbon; /* --carbon.*: NULL when off */
	uint64_t snapshots;    /* rendered so far */
	size_t render_len;     /* the last render's bytes: the next one's room (prom.h) */
	uint64_t last_loop_ns; /* for /healthz; atomic */
};

/*
 * Name the node (--kube.node-name, else $NODE_NAME, else the host name), open the roots (a
 * missing sysfs is an error only when sysfs_required), read /proc/stat and the CPU inventory.
 * -errno with the reason logged; vw_daemon_fini() cleans up after a failure too.
 */
int vw_daemon_init(struct vw_daemon *d, const struct vw_daemon_options *o,
		   const struct vw_daemon_hooks *hooks, void *ud, bool sysfs_required);
void vw_daemon_fini(struct vw_daemon *d);

/* The estimator's model: from a model server first when server_url is set and no local file
 * is, else --model.file, --model.url or the built-in one. -errno, logged. */
int vw_daemon_load_model(struct vw_daemon *d, const char *server_url);

/* --metrics: node, process, container, pod, and vm where allow_vm. -EINVAL, logged. */
int vw_daemon_parse_levels(const struct vw_strlist *l, bool allow_vm,
			   struct vw_workloads_opts *o);

/*
 * Per-workload accounting for the levels o asks for (nothing when none): the CPU accountant
 * (--cpu.accounting), pod metadata, container names, the registry and its baseline. When no
 * accountant opens: -ENODEV unlogged if cpu_required (the caller says why it needed one), the
 * error (logged) if --cpu.accounting named one, else logged and 0 (node metrics only).
 */
int vw_daemon_open_workloads(struct vw_daemon *d, struct vw_workloads_opts *o, bool cpu_required);

/*
 * The GPUs (--gpu.*) into d->gpus, whose families every snapshot then carries after the node's.
 * None found is said once and leaves an empty set that looks again with back-off (a driver
 * loaded after the daemon: gpu.h, VW_GPU_RETRY_*); none readable is said once and leaves
 * d->gpus NULL: never an error. The
 * daemon samples them with its meters (vw_gpus_sample) and closes their interval with its own
 * (vw_gpus_close_interval).
 */
void vw_daemon_open_gpus(struct vw_daemon *d);
/* One more GPU source into d->gpus (vw_gpus_attach), unless --gpu.enable=false: 0 or -errno. */
struct vw_gpu_source_ops;
int vw_daemon_attach_gpus(struct vw_daemon *d, const struct vw_gpu_source_ops *ops, void *ctx);
/*
 * Names the group (a VM's UUID) a vGPU's VM is, into id; false when it is none the caller knows
 * (its share stays the node's).
 */
struct vw_gpu_vgpu_energy;
typedef bool (*vw_vgpu_owner_fn)(void *ud, const struct vw_gpu_vgpu_energy *e,
				 char id[VW_UUID_LEN]);
/*
 * After the interval's workload update and the GPUs' close: the VMs' vGPU shares to their
 * groups (owner: NULL where there are no VMs), then the per-process active energy and the
 * pods' idle reservations out of what the VMs did not take (nothing without workloads).
 */
void vw_daemon_attribute_gpus(struct vw_daemon *d, vw_vgpu_owner_fn owner, void *ud);

/* Render the snapshot of v (the skeleton fills v->node_name and v->self) and publish it. */
int vw_daemon_render_publish(struct vw_daemon *d, struct vw_node_view *v);

/* Serve HTTP and loop until *stop. sample_ns: the sample period (with hooks->sample);
 * first_ns: the first snapshot after it (then one every interval). 0, or -errno logged. */
int vw_daemon_run(struct vw_daemon *d, uint64_t sample_ns, uint64_t first_ns,
		  volatile sig_atomic_t *stop);

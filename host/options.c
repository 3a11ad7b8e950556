/* SPDX-License-Identifier: Apache-2.0 */
#include "options.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "power.h"

#include "vm_meta.h"
#include "vm_source.h"

#define OFF(f) offsetof(struct vw_host_config, f)
#define ALIGN _Alignof(max_align_t)

static const char *const metric_levels[] = { "node", "process", "container", "pod", "vm", NULL };
static const char *const passthrough_modes[] = { "auto", "true", "false", NULL };
static const char *const kepler_meters[] = { "rapl", "hwmon", "fake", NULL };

static const struct vw_option host_options[] = {
	VW_DAEMON_OPTIONS(struct vw_host_config),
	VW_DAEMON_OTLP_OPTIONS(struct vw_host_config),
	VW_DAEMON_CARBON_OPTIONS(struct vw_host_config),
	{ "host.devfs", "host.devfs", VW_OPT_STRING, OFF(devfs), "/dev", "PATH",
	  "root of this machine's devfs (the in-band IPMI device, --platform.ipmi.device)" },
	{ "monitor.sample-interval", "monitor.sampleInterval", VW_OPT_DURATION, OFF(sample_ns), "1s",
	  "DURATION",
	  "how often meters are read (never slower than monitor.interval; fast enough that a "
	  "RAPL counter cannot wrap twice between reads)",
	  0.1, 3600 },
	/* Help NULL: their chain's meters, each with what it reads (chain_help). */
	{ "power.sources", "power.sources", VW_OPT_STRLIST, OFF(sources), NULL, "SOURCE,...", NULL },
	{ "platform.sources", "platform.sources", VW_OPT_STRLIST, OFF(platform_sources), NULL,
	  "SOURCE,...", NULL },
	{ "cpu.preferred-meters", "cpu.preferredMeters", VW_OPT_STRLIST, OFF(preferred_meters),
	  NULL, "METER,...",
	  "Kepler's CPU meter preference, used when power.sources is not set: rapl, hwmon, fake "
	  "(here the model estimate), the estimator always last",
	  0, 0, kepler_meters },
	{ "power.idle-watts", "power.idleWatts", VW_OPT_STRLIST, OFF(idle_watts), NULL,
	  "ZONE=WATTS,...", "fixed idle power per zone (e.g. package=42.5), overriding the fit" },
	{ "power.idle-window", "power.idleWindow", VW_OPT_UINT, OFF(idle_window), "720", "N",
	  "intervals in the sliding window the idle baseline is fitted over", 8, 1000000 },
	{ "power.idle-min-spread", "power.idleMinSpread", VW_OPT_DOUBLE, OFF(idle_min_spread),
	  "0.1", "RATIO", "CPU usage spread (max - min) the window needs before fitting", 0.01,
	  1 },
	{ "model.train.interval", "model.train.interval", VW_OPT_DURATION, OFF(train.interval_ns),
	  "10m", "DURATION",
	  "how often the node's model and each VM's are refitted from this host's meters and CPU "
	  "time (fit quality in virtwatt_model_fit_*; 0: no training)",
	  0, 86400 },
	{ "model.train.min-samples", "model.train.minSamples", VW_OPT_UINT, OFF(train.min_samples),
	  "30", "N",
	  "intervals with a measured power a zone needs before it is fitted (fewer: its last good "
	  "model stays)",
	  5, 100000 },
	{ "model.train.max-samples", "model.train.maxSamples", VW_OPT_UINT, OFF(train.max_samples),
	  "720", "N",
	  "latest intervals kept per model (the node and each VM): at most (1 + max-vms) x N x "
	  "(1 + zones) x 8 bytes",
	  5, 100000 },
	{ "model.train.max-vms", "model.train.maxVMs", VW_OPT_UINT, OFF(train.max_vms), "64", "N",
	  "VMs trained at most; those beyond are not (said in the log)", 0, 4096 },
	{ "model.train.dir", "model.train.dir", VW_OPT_STRING, OFF(train.dir), NULL, "PATH",
	  "write each model, after each refit, as a Kepler weight file usable with --model.file: "
	  "PATH/node.json, PATH/vm-<uuid>.json (PATH is created; default: no files)" },
	{ "metrics", "exporter.prometheus.metricsLevel", VW_OPT_STRLIST, OFF(metrics),
	  "node,process,container,pod,vm", "LEVEL,...",
	  "metric levels to export (node is always on)", 0, 0, metric_levels },
	{ "passthrough.enable", "passthrough.enable", VW_OPT_STRING, OFF(passthrough), "auto",
	  "auto|true|false",
	  "send each VM its own idle and active energy over its org.virtwatt.power.0 channel "
	  "(and shared folder, with passthrough.share-root), whether or not --metrics exports "
	  "vm series; auto: whenever VMs can be accounted here; true: or fail the start",
	  0, 0, passthrough_modes },
	{ "passthrough.interval", "passthrough.interval", VW_OPT_DURATION,
	  OFF(passthrough_interval_ns), "0s", "DURATION",
	  "publication period to guests, jittered, never under 1s (0: monitor.interval)", 0, 3600 },
	{ "passthrough.jitter", "passthrough.jitter", VW_OPT_DOUBLE, OFF(passthrough_jitter), "0.1",
	  "FRACTION", "random spread of each publication time, a fraction of the period", 0.01,
	  0.5 },
	{ "passthrough.share-root", "passthrough.shareRoot", VW_OPT_STRING,
	  OFF(passthrough_share_root), NULL, "PATH",
	  "write <PATH>/<vm-uuid>/ (frame.json and a powercap tree) for folders shared read-only "
	  "into guests (default: none)" },
	{ "passthrough.lock-dir", "passthrough.lockDir", VW_OPT_STRING, OFF(passthrough_lock_dir),
	  "/run/virtwatt/lock", "PATH",
	  "a VM is published only while this process holds <PATH>/<vm-uuid>.lock, so two "
	  "virtwatt-host processes never publish one VM; share it between all of them (a hostPath "
	  "in Kubernetes; empty: no locks)" },
	{ "passthrough.energy-step", "passthrough.energyStep", VW_OPT_DOUBLE,
	  OFF(passthrough_energy_step_j), "0.1", "JOULES",
	  "guests see energy rounded down to this step", 0.001, 1000 },
	{ "passthrough.power-step", "passthrough.powerStep", VW_OPT_DOUBLE,
	  OFF(passthrough_power_step_w), "0.1", "WATTS", "guests see power rounded to this step",
	  0.001, 1000 },
	{ "vm.info-labels", "vm.infoLabels", VW_OPT_STRLIST, OFF(vm_info_labels), NULL,
	  "LABEL,...",
	  "also put these virtwatt_vm_info labels on the VM energy series (kepler_vm_cpu_*, "
	  "virtwatt_vm_cpu_idle_*, virtwatt_vm_gpu_*), after Kepler's labels, for queries that "
	  "cannot join on vm_id (default: none, Kepler's label sets)",
	  0, 0, vw_vm_meta_copyable },
	/* KubeVirt runs QEMU as UID 107 in its virt-launcher pod (kubevirt/kubevirt
	 * pkg/util/util.go NonRootUID), a user the host's passwd need not have; 64055 is the UID
	 * Debian and Ubuntu allocate to libvirt-qemu (the libvirt packages' postinst), for an image
	 * whose own passwd lacks that user. */
	{ "vm.qemu-users", "vm.qemuUsers", VW_OPT_STRLIST, OFF(vm_qemu_users),
	  "libvirt-qemu,qemu,107,64055", "USER|UID,...",
	  "users whose QEMU processes the process scan takes as VMs, besides root: names from the "
	  "host's etc/passwd (below --host.rootfs, read at start) or UIDs; a QEMU-looking "
	  "process (argv[0], -uuid, -name are its own to write) of any other user is an ordinary "
	  "process, counted in virtwatt_vm_untrusted_qemu_processes (107: KubeVirt's QEMU; 64055: Debian's "
	  "libvirt-qemu)" },
};

/* Kepler's spellings of the host's own settings (config/config.go); the meters' are theirs. */
static const struct vw_option_alias host_aliases[] = {
	VW_DAEMON_ALIASES,
	{ NULL, NULL, NULL, NULL, NULL },
};

_Static_assert(offsetof(struct vw_host_config, common) == 0, "common options first");

/* The host's sources with options, in the order their rows and aliases follow the host's. */
static const struct vw_power_source_ops *const *const host_chains[] = {
	vw_host_platform_sources,
	vw_host_power_sources,
};

/* The i-th options of the host's sources, or NULL past the last: its meters' (a source is in
 * one chain only: in two, its rows would be there twice, which vw_config_check() refuses),
 * then its VM sources', then the settings of the VM sources this build lacks. */
static const struct vw_source_options *options_at(size_t i)
{
	for (size_t c = 0; c < ARRAY_SIZE(host_chains); c++)
		for (const struct vw_power_source_ops *const *s = host_chains[c]; *s; s++)
			if ((*s)->options && i-- == 0)
				return (*s)->options;
	for (const struct vw_vm_source_ops *const *s = vw_vm_sources; *s; s++)
		if ((*s)->options && i-- == 0)
			return (*s)->options;
	return i == 0 ? vw_vm_unbuilt_options : NULL;
}

/* Where source i's options struct starts in cfg->meters; past the end: their total size. */
static size_t options_place(size_t i)
{
	size_t at = 0;

	for (size_t j = 0; j < i && options_at(j); j++)
		at += (options_at(j)->size + ALIGN - 1) / ALIGN * ALIGN;
	return at;
}

static const void *options_in(const struct vw_host_config *cfg, const struct vw_source_options *o)
{
	for (size_t i = 0; o && options_at(i); i++)
		if (options_at(i) == o)
			return cfg->meters + options_place(i);
	return NULL;
}

const void *vw_host_meter_options(const struct vw_host_config *cfg,
				  const struct vw_power_source_ops *ops)
{
	return ops ? options_in(cfg, ops->options) : NULL;
}

size_t vw_host_vm_configs(const struct vw_host_config *cfg,
			  struct vw_vm_source_config *configs)
{
	size_t n = 0;

	for (const struct vw_vm_source_ops *const *s = vw_vm_sources; *s; s++)
		if ((*s)->options && n < VW_HOST_VM_SOURCES_MAX)
			configs[n++] = (struct vw_vm_source_config){
				.ops = *s, .config = options_in(cfg, (*s)->options)
			};
	return n;
}

/* The help of the rows that list a chain's meters, made from the chain (power/chain.c). */
static const struct chain_help {
	const char *flag;
	const struct vw_power_source_ops *const *chain;
	const char *before, *after;
} chain_helps[] = {
	{ "power.sources", vw_host_power_sources,
	  "power sources of the CPU zones to try, in order: ", " (default: all, in that order)" },
	{ "platform.sources", vw_host_platform_sources,
	  "whole-node meters to try for the platform zone, in order: ",
	  "; none: read no platform meter (default: all, the first found is used)" },
};

/* before, then each source of the chain as "name (about)", then after: malloc'd, or NULL. */
static char *chain_help(const struct chain_help *c)
{
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);

	if (!f)
		return NULL;
	fputs(c->before, f);
	for (size_t i = 0; c->chain[i]; i++)
		fprintf(f, "%s%s%s%s%s", i ? ", " : "", c->chain[i]->name,
			c->chain[i]->about ? " (" : "", c->chain[i]->about ? c->chain[i]->about : "",
			c->chain[i]->about ? ")" : "");
	fputs(c->after, f);
	if (fclose(f) != 0) {
		free(s);
		return NULL;
	}
	return s;
}

/* Fill the chains' rows' help (kept for the program's life); -ENOMEM. */
static int chain_helps_fill(struct vw_option *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t c = 0; c < ARRAY_SIZE(chain_helps); c++)
			if (strcmp(rows[i].flag, chain_helps[c].flag) == 0 &&
			    !(rows[i].help = chain_help(&chain_helps[c])))
				return -ENOMEM;
	return 0;
}

static void chain_helps_free(struct vw_option *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t c = 0; c < ARRAY_SIZE(chain_helps); c++)
			if (strcmp(rows[i].flag, chain_helps[c].flag) == 0)
				free((char *)rows[i].help);
}

static struct vw_config_program host_program;
static pthread_once_t host_program_once = PTHREAD_ONCE_INIT;

static size_t count_aliases(const struct vw_option_alias *a)
{
	size_t n = 0;

	while (a && (a[n].flag || a[n].yaml))
		n++;
	return n;
}

/* Copy source i's rows, rebased into cfg->meters, and its aliases behind the others. */
static void add_source(size_t i, struct vw_option *rows, size_t *n_rows,
		       struct vw_option_alias *aliases, size_t *n_aliases)
{
	const struct vw_source_options *o = options_at(i);
	size_t base = offsetof(struct vw_host_config, meters) + options_place(i);

	for (size_t r = 0; r < o->n_rows; r++) {
		rows[*n_rows] = o->rows[r];
		rows[(*n_rows)++].offset += base;
	}
	for (size_t a = 0; a < count_aliases(o->aliases); a++)
		aliases[(*n_aliases)++] = o->aliases[a];
}

static void host_program_build(void)
{
	size_t n_rows = ARRAY_SIZE(host_options), n_aliases = count_aliases(host_aliases), n = 0;
	struct vw_option *rows;
	struct vw_option_alias *aliases;

	for (const struct vw_source_options *o; (o = options_at(n)); n++) {
		n_rows += o->n_rows;
		n_aliases += count_aliases(o->aliases);
	}
	if (options_place(n) > VW_HOST_METER_OPTIONS_MAX)
		return;
	rows = calloc(n_rows, sizeof(*rows));
	aliases = calloc(n_aliases + 1, sizeof(*aliases)); /* and the all-NULL end */
	if (!rows || !aliases) {
		free(rows);
		free(aliases);
		return;
	}
	n_rows = ARRAY_SIZE(host_options);
	n_aliases = count_aliases(host_aliases);
	memcpy(rows, host_options, sizeof(host_options));
	memcpy(aliases, host_aliases, n_aliases * sizeof(*aliases));
	if (chain_helps_fill(rows, ARRAY_SIZE(host_options)) < 0) {
		chain_helps_free(rows, ARRAY_SIZE(host_options));
		free(rows);
		free(aliases);
		return;
	}
	for (size_t i = 0; i < n; i++)
		add_source(i, rows, &n_rows, aliases, &n_aliases);
	host_program = (struct vw_config_program){
		.name = "virtwatt-host",
		.version = VW_VERSION,
		.summary = "Power and energy exporter for bare-metal and virtualization hosts. "
			   "Measures node power (RAPL through powercap sysfs; a Kepler model of CPU "
			   "time where no meter exists), splits each interval's energy into idle "
			   "and active parts and serves Kepler-compatible Prometheus metrics on "
			   "/metrics.",
		.opts = rows,
		.n_opts = n_rows,
		.aliases = aliases,
		.groups = vw_daemon_help_groups,
	};
}

const struct vw_config_program *vw_host_program(void)
{
	(void)pthread_once(&host_program_once, host_program_build);
	return host_program.opts ? &host_program : NULL;
}

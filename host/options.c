/* SPDX-License-Identifier: Apache-2.0 */
#include "options.h"

#include <stddef.h>

#define OFF(f) offsetof(struct vw_host_config, f)

static const char *const accounting_names[] = { "auto", "bpf", "procfs", NULL };
static const char *const pod_sources[] = { "apiserver", "kubelet", NULL };

static const struct vw_option host_options[] = {
	{ "config.file", NULL, VW_OPT_STRING, OFF(config_file), NULL, "PATH",
	  "YAML configuration file; flags override its values" },
	{ "web.listen-address", "web.listenAddress", VW_OPT_STRING, OFF(listen_address), ":28282",
	  "[HOST]:PORT", "address to serve /metrics, /healthz, /readyz and / on" },
	{ "web.max-connections", "web.maxConnections", VW_OPT_UINT, OFF(web_max_connections), "64",
	  "N", "concurrent HTTP connections accepted", 1, 10000 },
	{ "web.timeout", "web.timeout", VW_OPT_DURATION, OFF(web_timeout_ns), "10s", "DURATION",
	  "idle HTTP connection timeout", 1, 600 },
	{ "host.sysfs", "host.sysfs", VW_OPT_STRING, OFF(sysfs), "/sys", "PATH",
	  "root of the host's sysfs (powercap zones are read below it)" },
	{ "host.procfs", "host.procfs", VW_OPT_STRING, OFF(procfs), "/proc", "PATH",
	  "root of the host's procfs (CPU time, CPU inventory)" },
	{ "monitor.interval", "monitor.interval", VW_OPT_DURATION, OFF(interval_ns), "5s",
	  "DURATION", "interval at which energy is split and metrics are refreshed", 1, 3600 },
	{ "monitor.sample-interval", "monitor.sampleInterval", VW_OPT_DURATION, OFF(sample_ns), "1s",
	  "DURATION",
	  "how often meters are read (never slower than monitor.interval; fast enough that a "
	  "RAPL counter cannot wrap twice between reads)",
	  0.1, 3600 },
	{ "log.level", "log.level", VW_OPT_LOG_LEVEL, OFF(log_level), "info", "LEVEL",
	  "error, warn, info or debug" },
	{ "kube.node-name", "kube.nodeName", VW_OPT_STRING, OFF(node_name), NULL, "NAME",
	  "node_name label (default: $NODE_NAME, else the host name)" },
	{ "power.sources", "power.sources", VW_OPT_STRLIST, OFF(sources), NULL, "SOURCE,...",
	  "power sources to try, in order: rapl, estimator (default: both, in that order)" },
	{ "power.idle-watts", "power.idleWatts", VW_OPT_STRLIST, OFF(idle_watts), NULL,
	  "ZONE=WATTS,...", "fixed idle power per zone (e.g. package=42.5), overriding the fit" },
	{ "power.idle-window", "power.idleWindow", VW_OPT_UINT, OFF(idle_window), "720", "N",
	  "intervals in the sliding window the idle baseline is fitted over", 8, 1000000 },
	{ "power.idle-min-spread", "power.idleMinSpread", VW_OPT_DOUBLE, OFF(idle_min_spread),
	  "0.1", "RATIO", "CPU usage spread (max - min) the window needs before fitting", 0.01,
	  1 },
	{ "model.file", "model.file", VW_OPT_STRING, OFF(model_file), NULL, "PATH",
	  "Kepler model weight file for the estimator (used where no meter exists)" },
	{ "model.url", "model.url", VW_OPT_STRING, OFF(model_url), NULL, "URL",
	  "HTTP(S) URL of a Kepler model weight file; the last good copy is cached" },
	{ "model.cache-dir", "model.cacheDir", VW_OPT_STRING, OFF(model_cache_dir),
	  "/var/cache/virtwatt", "PATH", "where a model fetched from model.url is cached" },
	{ "model.timeout", "model.timeout", VW_OPT_DURATION, OFF(model_timeout_ns), "10s",
	  "DURATION", "timeout for fetching model.url", 0.1, 600 },
	{ "metrics", "exporter.prometheus.metricsLevel", VW_OPT_STRLIST, OFF(metrics),
	  "node,process,container,pod,vm", "LEVEL,...",
	  "metric levels to export: node, process, container, pod, vm (node is always on)" },
	{ "metrics.process-top-n", "exporter.prometheus.processTopN", VW_OPT_UINT,
	  OFF(process_top_n), "50", "N",
	  "export at most N process series sets, the most energetic (0: all; beware cardinality)",
	  0, 1000000 },
	{ "monitor.max-terminated", "monitor.maxTerminated", VW_OPT_UINT, OFF(max_terminated), "500",
	  "N", "terminated workloads kept until a scrape has seen their final values", 1,
	  1000000 },
	{ "cpu.accounting", "cpu.accounting", VW_OPT_STRING, OFF(cpu_accounting), "auto", "METHOD",
	  "per-process CPU time: bpf (CO-RE eBPF, exact), procfs, or auto (bpf, else procfs)", 0,
	  0, accounting_names },
	{ "kube.enable", "kube.enable", VW_OPT_BOOL, OFF(kube_enable), "false", NULL,
	  "look up pod names, namespaces and CPU requests for containers" },
	{ "kube.pod-source", "kube.podSource", VW_OPT_STRING, OFF(kube_pod_source), "apiserver",
	  "SOURCE", "where pods come from: apiserver (list+watch, this node only) or kubelet (/pods)",
	  0, 0, pod_sources },
	{ "kube.api-server", "kube.apiServer", VW_OPT_STRING, OFF(kube_api_url), NULL, "URL",
	  "API server URL (default: in-cluster https://kubernetes.default.svc)" },
	{ "kube.kubelet-url", "kube.kubeletURL", VW_OPT_STRING, OFF(kube_kubelet_url), NULL, "URL",
	  "kubelet URL for kube.pod-source=kubelet (default: https://$NODE_NAME:10250)" },
	{ "kube.token-file", "kube.tokenFile", VW_OPT_STRING, OFF(kube_token_file), NULL, "PATH",
	  "bearer token file (default: the in-cluster service-account token)" },
	{ "kube.ca-file", "kube.caFile", VW_OPT_STRING, OFF(kube_ca_file), NULL, "PATH",
	  "CA bundle for the API server (default: the in-cluster service-account CA)" },
	{ "kube.insecure-skip-tls-verify", "kube.insecureSkipTLSVerify", VW_OPT_BOOL,
	  OFF(kube_insecure), "false", NULL,
	  "do not verify the kubelet's certificate (kubelets often have self-signed ones)" },
	{ "libvirt.uri", "libvirt.uri", VW_OPT_STRING, OFF(libvirt_uri), "qemu:///system", "URI",
	  "libvirt connection for VM discovery (read-only); VMs libvirt does not manage are found "
	  "from QEMU processes" },
	{ "passthrough.enable", "passthrough.enable", VW_OPT_BOOL, OFF(passthrough), "true", NULL,
	  "send each VM its own idle and active energy over its org.virtwatt.power.0 channel "
	  "(and shared folder, with passthrough.share-root)" },
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
	{ "passthrough.energy-step", "passthrough.energyStep", VW_OPT_DOUBLE,
	  OFF(passthrough_energy_step_j), "0.1", "JOULES",
	  "guests see energy rounded down to this step", 0.001, 1000 },
	{ "passthrough.power-step", "passthrough.powerStep", VW_OPT_DOUBLE,
	  OFF(passthrough_power_step_w), "0.1", "WATTS", "guests see power rounded to this step",
	  0.001, 1000 },
	{ "kube.poll-interval", "kube.pollInterval", VW_OPT_DURATION, OFF(kube_poll_ns), "15s",
	  "DURATION", "kubelet /pods poll period", 1, 3600 },
};

const struct vw_config_program vw_host_program = {
	.name = "virtwatt-host",
	.version = VW_VERSION,
	.summary =
		"Power and energy exporter for bare-metal and virtualization hosts. Measures node "
		"power (RAPL through powercap sysfs; a Kepler model of CPU time where no meter "
		"exists), splits each interval's energy into idle and active parts and serves "
		"Kepler-compatible Prometheus metrics on /metrics.",
	.opts = host_options,
	.n_opts = sizeof(host_options) / sizeof(host_options[0]),
};

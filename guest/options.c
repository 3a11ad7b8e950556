/* SPDX-License-Identifier: Apache-2.0 */
#include "options.h"

#include <stddef.h>

#define OFF(f) offsetof(struct vw_guest_config, f)

static const char *const accounting_names[] = { "auto", "bpf", "procfs", NULL };
static const char *const pod_sources[] = { "apiserver", "kubelet", NULL };

/* The flags shared with virtwatt-host keep its names, YAML keys and defaults. */
static const struct vw_option guest_options[] = {
	{ "config.file", NULL, VW_OPT_STRING, OFF(config_file), NULL, "PATH",
	  "YAML configuration file; flags override its values" },
	{ "web.listen-address", "web.listenAddress", VW_OPT_STRING, OFF(listen_address), ":28282",
	  "[HOST]:PORT", "address to serve /metrics, /healthz, /readyz and / on" },
	{ "web.max-connections", "web.maxConnections", VW_OPT_UINT, OFF(web_max_connections), "64",
	  "N", "concurrent HTTP connections accepted", 1, 10000 },
	{ "web.timeout", "web.timeout", VW_OPT_DURATION, OFF(web_timeout_ns), "10s", "DURATION",
	  "idle HTTP connection timeout", 1, 600 },
	{ "host.sysfs", "host.sysfs", VW_OPT_STRING, OFF(sysfs), "/sys", "PATH",
	  "root of this VM's sysfs (virtio-port names, BTF, cgroups)" },
	{ "host.procfs", "host.procfs", VW_OPT_STRING, OFF(procfs), "/proc", "PATH",
	  "root of this VM's procfs (CPU time, CPU inventory)" },
	{ "host.devfs", "host.devfs", VW_OPT_STRING, OFF(devfs), "/dev", "PATH",
	  "root of this VM's /dev (the virtio-serial port)" },
	{ "monitor.interval", "monitor.interval", VW_OPT_DURATION, OFF(interval_ns), "5s",
	  "DURATION", "interval at which energy is split and metrics are refreshed", 1, 3600 },
	{ "log.level", "log.level", VW_OPT_LOG_LEVEL, OFF(log_level), "info", "LEVEL",
	  "error, warn, info or debug" },
	{ "kube.node-name", "kube.nodeName", VW_OPT_STRING, OFF(node_name), NULL, "NAME",
	  "node_name label (default: $NODE_NAME, else the host name of this VM)" },
	{ "metrics", "exporter.prometheus.metricsLevel", VW_OPT_STRLIST, OFF(metrics),
	  "node,process,container,pod", "LEVEL,...",
	  "metric levels to export: node, process, container, pod (node is always on)" },
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
	{ "kube.poll-interval", "kube.pollInterval", VW_OPT_DURATION, OFF(kube_poll_ns), "15s",
	  "DURATION", "kubelet /pods poll period", 1, 3600 },
	{ "passthrough.enable", "passthrough.enable", VW_OPT_BOOL, OFF(passthrough_enable), "true",
	  NULL, "read the energy the host measured for this VM (else: models only)" },
	{ "passthrough.path", "passthrough.path", VW_OPT_STRING, OFF(passthrough_path), NULL,
	  "PATH",
	  "the host's channel: a virtio port or any character device, a FIFO, a shared folder or "
	  "a frame file (default: the org.virtwatt.power.0 port, then passthrough.folder)" },
	{ "passthrough.folder", "passthrough.folder", VW_OPT_STRING, OFF(passthrough_folder),
	  "/run/virtwatt/host", "PATH", "where the host's shared folder is conventionally mounted" },
	{ "passthrough.vm-uuid", "passthrough.vmUUID", VW_OPT_STRING, OFF(passthrough_vm_uuid),
	  NULL, "UUID", "accept frames for this VM only (default: the first frame's VM)" },
	{ "passthrough.stale-after", "passthrough.staleAfter", VW_OPT_UINT,
	  OFF(passthrough_stale_after), "3", "N",
	  "passthrough is stale after N publication intervals without a good frame: the model takes "
	  "over until frames come again",
	  1, 1000 },
	{ "model.file", "model.file", VW_OPT_STRING, OFF(model_file), NULL, "PATH",
	  "Kepler model weight file, used while no passthrough is fresh" },
	{ "model.url", "model.url", VW_OPT_STRING, OFF(model_url), NULL, "URL",
	  "HTTP(S) URL of a Kepler model weight file; the last good copy is cached" },
	{ "model.server-url", "model.serverURL", VW_OPT_STRING, OFF(model_server_url), NULL, "URL",
	  "Kepler model server (POST /model by this machine's spec), tried before model.url and "
	  "the built-in model" },
	{ "model.cache-dir", "model.cacheDir", VW_OPT_STRING, OFF(model_cache_dir),
	  "/var/cache/virtwatt", "PATH", "where a model fetched from model.url is cached" },
	{ "model.timeout", "model.timeout", VW_OPT_DURATION, OFF(model_timeout_ns), "10s",
	  "DURATION", "timeout for the model server and model.url", 0.1, 600 },
	{ "state.file", "state.file", VW_OPT_STRING, OFF(state_file),
	  "/var/lib/virtwatt-guest/state.json", "PATH",
	  "per-series totals kept across restarts and migrations, written atomically each interval "
	  "(empty: none)" },
};

const struct vw_config_program vw_guest_program = {
	.name = "virtwatt-guest",
	.version = VW_VERSION,
	.summary =
		"Power and energy exporter inside a VM. Takes the energy its host measured for this "
		"VM over the passthrough channel (virtio port or shared folder), or estimates it with "
		"a Kepler model when none is fresh, splits it over this VM's processes, containers "
		"and pods, and serves Kepler-compatible Prometheus metrics on /metrics.",
	.opts = guest_options,
	.n_opts = sizeof(guest_options) / sizeof(guest_options[0]),
};

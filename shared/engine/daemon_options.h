/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The options both daemons share, declared once: virtwatt-host and virtwatt-guest embed
 * struct vw_daemon_options as `common` and put VW_DAEMON_OPTIONS(their type) in their tables,
 * so the shared flags keep one name, YAML key, default and help.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "log.h"

struct vw_daemon_options {
	char *config_file;
	bool config_strict;
	struct vw_strlist listen_address; /* one server per address */
	uint64_t web_max_connections;
	uint64_t web_timeout_ns;
	char *web_config_file;
	char *sysfs;
	char *procfs;
	char *rootfs;
	uint64_t interval_ns;
	enum vw_log_level log_level;
	char *log_format; /* text, json */
	char *node_name;
	uint64_t process_top_n;
	uint64_t metrics_max_bytes;
	uint64_t max_terminated;
	bool exporter_stdout; /* each snapshot's exposition to stdout too */
	char *cpu_accounting; /* auto, bpf, procfs */
	bool cpu_hw_counters;
	char *cpu_ran_walk; /* auto, true, false */
	char *cpu_irq_accounting; /* auto, off */
	bool kube_enable;
	char *kube_config; /* a kubeconfig file: server, CA, token or client certificate */
	char *kube_pod_source; /* apiserver, kubelet */
	char *kube_api_url;
	char *kube_kubelet_url;
	char *kube_token_file;
	char *kube_ca_file;
	bool kube_insecure;
	uint64_t kube_poll_ns;
	char *model_file;
	char *model_url;
	char *model_cache_dir;
	uint64_t model_timeout_ns;
	char *model_builtin; /* "auto": per-vCPU figures by architecture; "kepler": Kepler's default */
	bool gpu_enable;
	char *gpu_nvml_library; /* NULL: libnvidia-ml.so.1 from the loader's search path */
	double gpu_idle_w;      /* 0: found per device (shared/gpu/gpu.h) */
	uint64_t gpu_idle_window;
	/* OTLP push (shared/export/otlp.h): off without an endpoint */
	char *otlp_endpoint;
	uint64_t otlp_interval_ns, otlp_timeout_ns;
	char *otlp_headers, *otlp_ca_file, *otlp_cert_file, *otlp_key_file;
	char *otlp_compression; /* gzip, none */
	uint64_t otlp_queue;
	/* carbon (shared/carbon/carbon.h): off when both are unset */
	double carbon_intensity;
	char *carbon_intensity_file;
};

extern const char *const vw_accounting_names[];
extern const char *const vw_ran_walk_names[];
extern const char *const vw_irq_accounting_names[];
extern const char *const vw_pod_source_names[];
extern const char *const vw_log_format_names[];
extern const struct vw_value_alias vw_max_terminated_kepler[];
extern const struct vw_help_group vw_daemon_help_groups[];

#define VW_DO_OFF(type, f) offsetof(type, common.f)

/* The shared rows of an option table (a comma-separated list of struct vw_option). */
#define VW_DAEMON_OPTIONS(type)                                                                    \
	{ "config.file", NULL, VW_OPT_STRING, VW_DO_OFF(type, config_file), NULL, "PATH",          \
	  "YAML configuration file (Kepler's files are read unchanged); flags override its "       \
	  "values" },                                                                              \
	{ "config.strict", NULL, VW_OPT_BOOL, VW_DO_OFF(type, config_strict), "false", NULL,       \
	  "an unknown key in the configuration file stops the start (without it: a warning, as in "\
	  "Kepler)" },                                                                             \
	{ "web.listen-address", "web.listenAddress", VW_OPT_STRLIST,                               \
	  VW_DO_OFF(type, listen_address), ":28282", "[HOST]:PORT",                                \
	  "addresses to serve /metrics, /healthz, /readyz and / on (Kepler's "                    \
	  "web.listenAddresses)" },                                                                \
	{ "web.max-connections", "web.maxConnections", VW_OPT_UINT,                                \
	  VW_DO_OFF(type, web_max_connections), "64", "N", "concurrent HTTP connections accepted", \
	  1, 10000 },                                                                              \
	{ "web.timeout", "web.timeout", VW_OPT_DURATION, VW_DO_OFF(type, web_timeout_ns), "10s",   \
	  "DURATION", "idle HTTP connection timeout", 1, 600 },                                   \
	{ "web.config-file", "web.configFile", VW_OPT_STRING, VW_DO_OFF(type, web_config_file),    \
	  NULL, "PATH",                                                                            \
	  "Prometheus exporter-toolkit web config (as for node_exporter --web.config.file): TLS, " \
	  "client certificates, basic_auth_users (bcrypt), headers; re-read when it changes" },    \
	{ "host.sysfs", "host.sysfs", VW_OPT_STRING, VW_DO_OFF(type, sysfs), "/sys", "PATH",       \
	  "root of this machine's sysfs (powercap zones, virtio ports, BTF, cgroups)" },          \
	{ "host.procfs", "host.procfs", VW_OPT_STRING, VW_DO_OFF(type, procfs), "/proc", "PATH",   \
	  "root of this machine's procfs (CPU time, processes, CPU inventory)" },                 \
	{ "host.rootfs", "host.rootfs", VW_OPT_STRING, VW_DO_OFF(type, rootfs), "/", "PATH",       \
	  "root of this machine's filesystem, read for container names outside Kubernetes "       \
	  "(Docker's, Podman's and nerdctl's metadata below var/lib and run; read-only)" },        \
	{ "monitor.interval", "monitor.interval", VW_OPT_DURATION, VW_DO_OFF(type, interval_ns),   \
	  "5s", "DURATION", "interval at which energy is split and metrics are refreshed", 1,     \
	  3600 },                                                                                  \
	{ "log.level", "log.level", VW_OPT_LOG_LEVEL, VW_DO_OFF(type, log_level), "info", "LEVEL", \
	  "least severe messages logged" },                                                        \
	{ "log.format", "log.format", VW_OPT_STRING, VW_DO_OFF(type, log_format), "text",          \
	  "FORMAT", "text (logfmt lines) or json (one JSON object per line)", 0, 0,              \
	  vw_log_format_names },                                                                   \
	{ "kube.node-name", "kube.nodeName", VW_OPT_STRING, VW_DO_OFF(type, node_name), NULL,      \
	  "NAME", "node_name label (default: $NODE_NAME, else the host name)" },                  \
	{ "metrics.process-top-n", "exporter.prometheus.processTopN", VW_OPT_UINT,                 \
	  VW_DO_OFF(type, process_top_n), "50", "N",                                               \
	  "export at most N process series sets, the most energetic (0: all; beware cardinality)", \
	  0, 1000000 },                                                                            \
	{ "metrics.max-bytes", "exporter.prometheus.maxBytes", VW_OPT_UINT,                       \
	  VW_DO_OFF(type, metrics_max_bytes), "67108864", "BYTES",                                 \
	  "largest /metrics body; a metric family that would not fit is left out whole (logged, "  \
	  "counted in virtwatt_exposition_families_dropped_total) and the others are served",      \
	  16384, 4294967296.0 },                                                                   \
	{ "monitor.max-terminated", "monitor.maxTerminated", VW_OPT_UINT,                          \
	  VW_DO_OFF(type, max_terminated), "500", "N",                                             \
	  "terminated workloads kept until a scrape has seen their final values (Kepler's 0 "    \
	  "and -1 are read as 1 and 1000000, warned)",                                            \
	  1, 1000000, NULL, vw_max_terminated_kepler },                                            \
	{ "exporter.stdout", "exporter.stdout.enabled", VW_OPT_BOOL,                               \
	  VW_DO_OFF(type, exporter_stdout), "false", NULL,                                         \
	  "also write each snapshot's exposition (the /metrics text) to standard output" },       \
	{ "cpu.accounting", "cpu.accounting", VW_OPT_STRING, VW_DO_OFF(type, cpu_accounting),     \
	  "auto", "METHOD",                                                                        \
	  "per-process CPU time: bpf (CO-RE eBPF, exact), procfs, or auto (bpf, else procfs)", 0, \
	  0, vw_accounting_names },                                                                \
	{ "cpu.hardware-counters", "cpu.hardwareCounters", VW_OPT_BOOL,                            \
	  VW_DO_OFF(type, cpu_hw_counters), "true", NULL,                                          \
	  "split package, core and dram by per-process instructions and cache misses where a PMU " \
	  "counts (bpf accounting; a program on every context switch, ~0.6 us each); false: by "   \
	  "CPU time, nothing on the switch path" },                                                \
	{ "cpu.ran-walk", "cpu.ranWalk", VW_OPT_STRING, VW_DO_OFF(type, cpu_ran_walk), "auto",     \
	  "auto|true|false",                                                                       \
	  "bpf accounting: read only the processes that ran since the last read, marked by a "    \
	  "program on every context switch (~45-230 ns each, paid by the switching tasks); pays " \
	  "where tasks far outnumber context switches per interval (many idle processes). auto: " \
	  "the program is attached only while it pays, weighed every 5 reads from /proc/stat's "  \
	  "context switches and /proc/loadavg's tasks (on when walking every task would cost "    \
	  "twice the marks, off when less than them); true: always; false: every read walks "     \
	  "every thread, nothing on the switch path",                                              \
	  0, 0, vw_ran_walk_names },                                                               \
	{ "cpu.irq-accounting", "cpu.irqAccounting", VW_OPT_STRING,                               \
	  VW_DO_OFF(type, cpu_irq_accounting), "auto", "auto|off",                                 \
	  "bpf accounting: time hardirq and interrupt-exit softirq spans (6 programs, ~100 ns "   \
	  "per interrupt) and take them out of the interrupted container's and process's "        \
	  "weight, so that a workload cannot make another pay for its interrupts. auto: where "   \
	  "the kernel counts interrupts in the interrupted task's runtime (no "                   \
	  "CONFIG_IRQ_TIME_ACCOUNTING); off: never (interrupt time stays with the task it "       \
	  "interrupted)",                                                                          \
	  0, 0, vw_irq_accounting_names },                                                         \
	{ "kube.enable", "kube.enable", VW_OPT_BOOL, VW_DO_OFF(type, kube_enable), "false", NULL, \
	  "look up pod names, namespaces and CPU requests for containers" },                      \
	{ "kube.config", "kube.config", VW_OPT_STRING, VW_DO_OFF(type, kube_config), NULL, "PATH", \
	  "kubeconfig file for running outside a pod: its current context's server, CA, and "     \
	  "token or client certificate reach the API server (kube.api-server, kube.ca-file and "  \
	  "kube.token-file win over it; default: in-cluster)" },                                  \
	{ "kube.pod-source", "kube.podSource", VW_OPT_STRING, VW_DO_OFF(type, kube_pod_source),   \
	  "apiserver", "SOURCE",                                                                   \
	  "where pods come from: apiserver (list+watch, this node only) or kubelet (/pods)", 0, 0, \
	  vw_pod_source_names },                                                                   \
	{ "kube.api-server", "kube.apiServer", VW_OPT_STRING, VW_DO_OFF(type, kube_api_url), NULL, \
	  "URL", "API server URL (default: in-cluster https://kubernetes.default.svc)" },          \
	{ "kube.kubelet-url", "kube.kubeletURL", VW_OPT_STRING, VW_DO_OFF(type, kube_kubelet_url), \
	  NULL, "URL", "kubelet URL for kube.pod-source=kubelet (default: https://$NODE_NAME:10250)" }, \
	{ "kube.token-file", "kube.tokenFile", VW_OPT_STRING, VW_DO_OFF(type, kube_token_file),   \
	  NULL, "PATH", "bearer token file (default: the in-cluster service-account token)" },    \
	{ "kube.ca-file", "kube.caFile", VW_OPT_STRING, VW_DO_OFF(type, kube_ca_file), NULL,       \
	  "PATH", "CA bundle for the API server (default: the in-cluster service-account CA)" },   \
	{ "kube.insecure-skip-tls-verify", "kube.insecureSkipTLSVerify", VW_OPT_BOOL,              \
	  VW_DO_OFF(type, kube_insecure), "false", NULL,                                           \
	  "do not verify the kubelet's certificate (kubelets often have self-signed ones)" },     \
	{ "kube.poll-interval", "kube.pollInterval", VW_OPT_DURATION, VW_DO_OFF(type, kube_poll_ns), \
	  "15s", "DURATION", "kubelet /pods poll period", 1, 3600 },                              \
	{ "model.file", "model.file", VW_OPT_STRING, VW_DO_OFF(type, model_file), NULL, "PATH",    \
	  "Kepler model weight file for the estimator (used where no meter or passthrough is)" }, \
	{ "model.url", "model.url", VW_OPT_STRING, VW_DO_OFF(type, model_url), NULL, "URL",       \
	  "HTTP(S) URL of a Kepler model weight file; the last good copy is cached" },            \
	{ "model.cache-dir", "model.cacheDir", VW_OPT_STRING, VW_DO_OFF(type, model_cache_dir),    \
	  "/var/cache/virtwatt", "PATH", "where a model fetched from model.url is cached" },       \
	{ "model.timeout", "model.timeout", VW_OPT_DURATION, VW_DO_OFF(type, model_timeout_ns),    \
	  "10s", "DURATION", "timeout for fetching a model", 0.1, 600 },                          \
	{ "model.builtin", "model.builtin", VW_OPT_STRING, VW_DO_OFF(type, model_builtin), "auto", \
	  "auto|kepler",                                                                           \
	  "the model used when none is given or fetched (model.file, model.url, the guest's "      \
	  "model.server-url): auto picks per-vCPU watts for this "                                 \
	  "processor's architecture (Kepler v0.7.12's table; a public-cloud VM's best guess), "    \
	  "Kepler's default m5.metal model where the table lacks it; kepler always that one" },    \
	{ "gpu.enable", "experimental.gpu.enabled", VW_OPT_BOOL, VW_DO_OFF(type, gpu_enable),     \
	  "true", NULL,                                                                            \
	  "read the GPUs (NVIDIA through NVML) for kepler_node_gpu_*; none found is not an error"  \
	},                                                                                         \
	{ "gpu.nvml-library", "experimental.gpu.nvmlLibrary", VW_OPT_STRING,                      \
	  VW_DO_OFF(type, gpu_nvml_library), NULL, "PATH",                                         \
	  "NVML library to load (default: libnvidia-ml.so.1 from the loader's search path)" },    \
	{ "gpu.idle-watts", "experimental.gpu.idlePower", VW_OPT_DOUBLE,                          \
	  VW_DO_OFF(type, gpu_idle_w), "0", "WATTS",                                               \
	  "every GPU's idle power (0: each GPU's lowest power sustained at low utilization over "  \
	  "gpu.idle-window)", 0, 10000 },                                                          \
	{ "gpu.idle-window", "experimental.gpu.idleWindow", VW_OPT_UINT,                          \
	  VW_DO_OFF(type, gpu_idle_window), "720", "N",                                            \
	  "intervals a GPU's idle power is sought over (it follows the GPU down at once, and up "  \
	  "once lower levels are older than this)", 3, 65536 }

extern const char *const vw_otlp_compression_names[];

/* OTLP push's rows (docs/fleet.md), after VW_DAEMON_OPTIONS in both daemons' tables. */
#define VW_DAEMON_OTLP_OPTIONS(type)                                                               \
	{ "exporter.otlp.endpoint", "exporter.otlp.endpoint", VW_OPT_STRING,                       \
	  VW_DO_OFF(type, otlp_endpoint), NULL, "URL",                                             \
	  "push every family /metrics serves to this OTLP/HTTP receiver (an OpenTelemetry "        \
	  "Collector: http://HOST:4318) as OTLP metrics in JSON, POSTed to URL/v1/metrics; off "   \
	  "when unset" },                                                                          \
	{ "exporter.otlp.interval", "exporter.otlp.interval", VW_OPT_DURATION,                     \
	  VW_DO_OFF(type, otlp_interval_ns), "30s", "DURATION",                                    \
	  "between OTLP exports (each sends the newest snapshot)", 1, 86400 },                    \
	{ "exporter.otlp.timeout", "exporter.otlp.timeout", VW_OPT_DURATION,                       \
	  VW_DO_OFF(type, otlp_timeout_ns), "10s", "DURATION", "one OTLP request", 0.1, 600 },    \
	{ "exporter.otlp.headers", "exporter.otlp.headers", VW_OPT_STRING,                         \
	  VW_DO_OFF(type, otlp_headers), NULL, "K=V,...",                                          \
	  "request headers, e.g. Authorization=Bearer TOKEN (OTEL_EXPORTER_OTLP_HEADERS' format)" }, \
	{ "exporter.otlp.ca-file", "exporter.otlp.caFile", VW_OPT_STRING,                          \
	  VW_DO_OFF(type, otlp_ca_file), NULL, "PATH", "CA bundle the receiver's certificate is "  \
	  "checked against (https; default: the system's)" },                                    \
	{ "exporter.otlp.cert-file", "exporter.otlp.certFile", VW_OPT_STRING,                      \
	  VW_DO_OFF(type, otlp_cert_file), NULL, "PATH", "client certificate (mutual TLS)" },     \
	{ "exporter.otlp.key-file", "exporter.otlp.keyFile", VW_OPT_STRING,                        \
	  VW_DO_OFF(type, otlp_key_file), NULL, "PATH", "client certificate's key" },             \
	{ "exporter.otlp.compression", "exporter.otlp.compression", VW_OPT_STRING,                 \
	  VW_DO_OFF(type, otlp_compression), "gzip", "gzip|none", "request body compression", 0,  \
	  0, vw_otlp_compression_names },                                                          \
	{ "exporter.otlp.queue", "exporter.otlp.queueSize", VW_OPT_UINT, VW_DO_OFF(type, otlp_queue), \
	  "8", "N", "snapshots kept while the receiver is away (the oldest go first)", 1, 1024 }

/* Carbon's rows (shared/carbon/carbon.h), after VW_DAEMON_OPTIONS in both daemons' tables. */
#define VW_DAEMON_CARBON_OPTIONS(type)                                                             \
	{ "carbon.intensity", "carbon.intensity", VW_OPT_DOUBLE,                                   \
	  VW_DO_OFF(type, carbon_intensity), "0", "GRAMS",                                         \
	  "a static grid carbon intensity in gCO2e/kWh: each interval's energy times it gives "    \
	  "virtwatt_{node,container,pod,vm}_co2e_grams_total (0: no carbon figures)", 0, 10000 },  \
	{ "carbon.intensity-file", "carbon.intensityFile", VW_OPT_STRING,                         \
	  VW_DO_OFF(type, carbon_intensity_file), NULL, "PATH",                                    \
	  "a table of \"TIME INTENSITY\" lines (Unix seconds or RFC 3339, gCO2e/kWh) you refresh " \
	  "from a grid operator's feed; each entry holds until the next; re-read when it changes; " \
	  "wins over carbon.intensity" }

/*
 * Kepler's spellings both daemons accept (config/config.go, main and v0.10): rows of a
 * struct vw_option_alias table, before the daemon's own and the all-NULL end.
 */
#define VW_DAEMON_ALIASES                                                                          \
	{ NULL, "web.listenAddresses", "web.listen-address", NULL, NULL },                          \
	{ NULL, "kube.enabled", "kube.enable", NULL, NULL },                                        \
	{ NULL, "kube.podInformer.mode", "kube.pod-source", NULL, NULL },                           \
	{ NULL, "kube.podInformer.pollInterval", "kube.poll-interval", NULL, NULL },                \
	{ "experimental.gpu.enabled", NULL, "gpu.enable", NULL, NULL },                             \
	{ "experimental.gpu.idle-power", NULL, "gpu.idle-watts", NULL, NULL },                      \
	{ "experimental.gpu.dcgm-endpoint", "experimental.gpu.dcgmEndpoint", NULL,                 \
	  "MIG partitions are read through NVML itself, no dcgm-exporter is needed", "" },          \
	{ "debug.pprof", "debug.pprof.enabled", NULL,                                               \
	  "virtwatt is not a Go program: it has no pprof; profile it with perf", "false" },         \
	{ NULL, "exporter.prometheus.debugCollectors", NULL,                                        \
	  "Go's runtime and process collectors do not exist here; virtwatt's own "                 \
	  "virtwatt_process_* and virtwatt_* families are always exported",                         \
	  "" },                                                                                     \
	{ "exporter.prometheus", "exporter.prometheus.enabled", NULL,                               \
	  "the Prometheus endpoint is virtwatt's output and is always served on "                  \
	  "web.listen-address",                                                                     \
	  "true" },                                                                                 \
	{ NULL, "dev.fake-cpu-meter.enabled", NULL,                                                 \
	  "virtwatt has no random fake meter: without a meter it estimates from CPU time with a "  \
	  "Kepler model (power.sources estimator)",                                                 \
	  "false" },                                                                                \
	{ NULL, "dev.fake-cpu-meter.zones", NULL,                                                   \
	  "virtwatt has no fake meter (see dev.fake-cpu-meter.enabled)", "" },                      \
	{ NULL, "monitor.staleness", NULL,                                                          \
	  "virtwatt computes once per monitor.interval and serves that one snapshot to every "     \
	  "scraper, so scrapers in a Prometheus HA pair already read the same values",              \
	  NULL },                                                                                   \
	{ NULL, "monitor.minTerminatedEnergyThreshold", NULL,                                       \
	  "a terminated workload is exported until a scrape has served its final value, whatever " \
	  "its energy, so no energy is lost from the sums (monitor.max-terminated bounds them)",    \
	  "0" }

/*
 * Health of a daemon's loop, for /healthz and /readyz (docs/configuration.md): the snapshot is
 * stale (not ready) once older than VW_STALE_INTERVALS monitor intervals plus 5 s, the loop is
 * stuck (unhealthy) after as many intervals plus 10 s without progress. The slack keeps a loaded
 * machine's late tick from flapping either.
 */
#define VW_STALE_INTERVALS 3
uint64_t vw_daemon_stale_after_ns(uint64_t interval_ns);
uint64_t vw_daemon_stuck_after_ns(uint64_t interval_ns);
/* Whether a loop last made progress at last_ns (vw_now_ns(); 0: never) within limit_ns; when
 * not, why in `why`. */
bool vw_daemon_loop_alive(uint64_t last_ns, uint64_t limit_ns, char *why, size_t len);

/*
 * What the option table cannot say about one value: every listen address parses ([HOST]:PORT,
 * port 0-65535). 0, or -EINVAL with the message; vw_daemon_main exits 2 on it before any
 * start-up line.
 */
int vw_daemon_options_check(const struct vw_daemon_options *o, char *err, size_t errlen);

/*
 * Container names from the runtimes' files below --host.rootfs, for vw_workloads_opts.ctrmeta.
 * NULL (logged: containers keep their IDs) when the root cannot be opened.
 */
struct vw_ctrmeta;
struct vw_ctrmeta *vw_daemon_open_ctrmeta(const struct vw_daemon_options *o);

/*
 * What both daemons' main() do: load the options (exit 0 after --help/--version, 2 on a bad
 * flag or file, with the message), set the log level and the signal handlers (sigstop.h: the
 * first SIGINT/SIGTERM sets *stop and wakes vw_sigstop_fd(), a second exits at once;
 * SIGPIPE/SIGHUP ignored), then hand over to run(cfg, stop). Returns main()'s exit code.
 */
#include <signal.h>
int vw_daemon_main(const struct vw_config_program *p, void *cfg, int argc, char **argv,
		   int (*run)(void *cfg, volatile sig_atomic_t *stop));
/*
 * A daemon's program for vw_daemon_main(): its name, summary and options table, whose config
 * type cfg_type must embed the shared options at its start (vw_daemon_main() reads them there).
 */
#define VW_DAEMON_PROGRAM(var, prog, cfg_type, options, alias_table, text)                         \
	_Static_assert(offsetof(cfg_type, common) == 0, "common options first");                   \
	const struct vw_config_program var = { .name = prog, .version = VW_VERSION,               \
						.summary = text, .opts = options,                  \
						.n_opts = sizeof(options) / sizeof(options[0]),    \
						.aliases = alias_table,                            \
						.groups = vw_daemon_help_groups }

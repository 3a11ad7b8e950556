/* SPDX-License-Identifier: Apache-2.0 */
#include "options.h"

#include <stddef.h>

#include "vm_meta.h"

#define OFF(f) offsetof(struct vw_host_config, f)

static const char *const ipmi_drivers[] = { "auto", "inband", "lan", NULL };
static const char *const ipmi_privileges[] = { "user", "operator", "admin", NULL };
static const char *const metric_levels[] = { "node", "process", "container", "pod", "vm", NULL };
static const char *const passthrough_modes[] = { "auto", "true", "false", NULL };
static const char *const kepler_meters[] = { "rapl", "hwmon", "fake", NULL };
static const char *const rapl_zone_names[] = { "package", "core", "uncore", "dram", "psys", NULL };


static const struct vw_option host_options[] = {
	VW_DAEMON_OPTIONS(struct vw_host_config),
	VW_DAEMON_OTLP_OPTIONS(struct vw_host_config),
	VW_DAEMON_CARBON_OPTIONS(struct vw_host_config),
	{ "monitor.sample-interval", "monitor.sampleInterval", VW_OPT_DURATION, OFF(sample_ns), "1s",
	  "DURATION",
	  "how often meters are read (never slower than monitor.interval; fast enough that a "
	  "RAPL counter cannot wrap twice between reads)",
	  0.1, 3600 },
	{ "power.sources", "power.sources", VW_OPT_STRLIST, OFF(sources), NULL, "SOURCE,...",
	  "power sources of the CPU zones to try, in order: rapl, hwmon (sensors a chip rule maps), "
	  "estimator (default: all three, in that order)" },
	{ "platform.sources", "platform.sources", VW_OPT_STRLIST, OFF(platform_sources), NULL,
	  "SOURCE,...",
	  "whole-node meters to try for the platform zone, in order: acpi (an ACPI power meter in "
	  "hwmon), redfish (the BMC named by platform.redfish.config-file), ipmi (a BMC's DCMI "
	  "power reading or watts sensor, in band or over LAN); none: read no platform meter "
	  "(default: all, the first found is used)" },
	{ "cpu.preferred-meters", "cpu.preferredMeters", VW_OPT_STRLIST, OFF(preferred_meters),
	  NULL, "METER,...",
	  "Kepler's CPU meter preference, used when power.sources is not set: rapl, hwmon, fake "
	  "(here the model estimate), the estimator always last",
	  0, 0, kepler_meters },
	{ "rapl.zones", "rapl.zones", VW_OPT_STRLIST, OFF(rapl_zones), NULL, "ZONE,...",
	  "read only these RAPL zones (default: all)", 0, 0, rapl_zone_names },
	{ "platform.redfish.enabled", "platform.redfish.enabled", VW_OPT_BOOL,
	  OFF(redfish_enabled), "true", NULL,
	  "read the BMC of platform.redfish.config-file (Kepler's "
	  "experimental.platform.redfish.enabled; false: no Redfish meter even with a file)" },
	{ "platform.redfish.config-file", "platform.redfish.configFile", VW_OPT_STRING,
	  OFF(redfish_config_file), NULL, "PATH",
	  "Kepler's BMC file (nodes: node name -> BMC id; bmcs: id -> endpoint, username, password "
	  "or passwordFile, insecure, caFile): this node's BMC gives the platform zone over "
	  "Redfish (default: none)" },
	{ "platform.redfish.node-name", "platform.redfish.nodeName", VW_OPT_STRING,
	  OFF(redfish_node_name), NULL, "NAME",
	  "this node's name in the BMC file (default: the node name, kube.node-name)" },
	{ "platform.redfish.interval", "platform.redfish.interval", VW_OPT_DURATION,
	  OFF(redfish_interval_ns), "5s", "DURATION",
	  "how often the BMC is polled (off the sampling thread; backs off to 60s while it fails)",
	  0.05, 3600 },
	{ "platform.redfish.timeout", "platform.redfish.httpTimeout", VW_OPT_DURATION,
	  OFF(redfish_timeout_ns), "5s", "DURATION", "limit for each request to the BMC", 0.05,
	  300 },
	{ "platform.redfish.staleness", "platform.redfish.staleness", VW_OPT_DURATION,
	  OFF(redfish_staleness_ns), "0s", "DURATION",
	  "a BMC reading older than this counts no energy (0: 2 x interval + timeout)", 0, 3600 },
	{ "platform.ipmi.driver", "platform.ipmi.driver", VW_OPT_STRING, OFF(ipmi.driver), "auto",
	  "DRIVER",
	  "how the ipmi meter reaches the BMC: inband (platform.ipmi.device), lan (IPMI 2.0 to "
	  "platform.ipmi.host), auto (lan with a host, else inband)",
	  0, 0, ipmi_drivers },
	{ "platform.ipmi.device", "platform.ipmi.device", VW_OPT_STRING, OFF(ipmi.device),
	  "/dev/ipmi0", "PATH",
	  "the kernel's IPMI device (ipmi_devintf) for in-band IPMI; absent: no in-band meter" },
	{ "platform.ipmi.host", "platform.ipmi.host", VW_OPT_STRING, OFF(ipmi.host), NULL, "HOST",
	  "the BMC's name or address for IPMI over LAN (default: none)" },
	{ "platform.ipmi.port", "platform.ipmi.port", VW_OPT_UINT, OFF(ipmi.port), "623", "PORT",
	  "the BMC's UDP port for IPMI over LAN", 1, 65535 },
	{ "platform.ipmi.username", "platform.ipmi.username", VW_OPT_STRING, OFF(ipmi.username),
	  NULL, "NAME", "the BMC user for IPMI over LAN (default: the null user)" },
	{ "platform.ipmi.password-file", "platform.ipmi.passwordFile", VW_OPT_STRING,
	  OFF(ipmi.password_file), NULL, "PATH",
	  "a file whose first line is the BMC user's password (a mounted Kubernetes Secret); "
	  "never on the command line" },
	{ "platform.ipmi.privilege", "platform.ipmi.privilege", VW_OPT_STRING,
	  OFF(ipmi.privilege), "user", "LEVEL",
	  "the IPMI over LAN session's privilege: user (enough for DCMI and sensors on most "
	  "BMCs), operator, admin",
	  0, 0, ipmi_privileges },
	{ "platform.ipmi.workarounds", "platform.ipmi.workarounds", VW_OPT_STRLIST,
	  OFF(ipmi.workarounds), NULL, "NAME,...",
	  "FreeIPMI's IPMI 2.0 workarounds for BMCs that need them (ipmi-sensors -W): authcap, "
	  "intel20, supermicro20, sun20, opensesspriv, integritycheckvalue, nochecksumcheck" },
	{ "platform.ipmi.timeout", "platform.ipmi.timeout", VW_OPT_DURATION, OFF(ipmi.timeout_ns),
	  "5s", "DURATION", "a request to the BMC over LAN fails after this", 0.1, 60 },
	{ "platform.ipmi.interval", "platform.ipmi.interval", VW_OPT_DURATION,
	  OFF(ipmi.interval_ns), "2s", "DURATION",
	  "how often the BMC is asked (in a thread of its own: the sampling never waits for it)",
	  0.1, 3600 },
	{ "platform.ipmi.staleness", "platform.ipmi.staleness", VW_OPT_DURATION,
	  OFF(ipmi.stale_ns), "0s", "DURATION",
	  "an older BMC reading counts no energy (0: 3 x platform.ipmi.interval)", 0, 86400 },
	{ "power.hwmon.chip-rules", "power.hwmon.chipRules", VW_OPT_STRLIST, OFF(hwmon_chip_rules),
	  NULL, "CHIP[:LABEL]=ZONE[@SOCKET],...",
	  "which hwmon sensor counts in which zone, before the built-in rules: a chip name and an "
	  "optional sensor label (globs, any case) to package, core, uncore, dram, psys or "
	  "platform, in a socket (a number, 0 by default; label: the number the label ends with; "
	  "chip: the chip's place among chips of its name), or to none "
	  "(e.g. amd_energy:Ecore*=core)" },
	{ "experimental.hwmon.enabled", "experimental.hwmon.enabled", VW_OPT_BOOL,
	  OFF(hwmon_enabled), "true", NULL,
	  "read generic hwmon sensors where no RAPL is (Kepler's key; false drops hwmon from "
	  "power.sources)" },
	{ "experimental.hwmon.force-enabled", "experimental.hwmon.forceEnabled", VW_OPT_BOOL,
	  OFF(hwmon_force), "false", NULL,
	  "prefer hwmon sensors to RAPL, when power.sources and cpu.preferred-meters are not set "
	  "(Kepler's deprecated key)" },
	{ "experimental.hwmon.zones", "experimental.hwmon.zones", VW_OPT_STRLIST, OFF(hwmon_zones),
	  NULL, "LABEL,...",
	  "use only the hwmon sensors with these labels, compared as Kepler names them (lower "
	  "case, _ for other characters; default: every sensor a chip rule maps)" },
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
	{ "libvirt.uri", "libvirt.uri", VW_OPT_STRING, OFF(libvirt_uri), "qemu:///system", "URI",
	  "libvirt connection for VM discovery (read-only); VMs libvirt does not manage are found "
	  "from QEMU processes" },
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
};

/* Kepler's spellings of the host's own settings (config/config.go). */
static const struct vw_option_alias host_aliases[] = {
	VW_DAEMON_ALIASES,
	{ "experimental.platform.redfish.enabled", "experimental.platform.redfish.enabled",
	  "platform.redfish.enabled", NULL, NULL },
	{ "experimental.platform.redfish.config-file", "experimental.platform.redfish.configFile",
	  "platform.redfish.config-file", NULL, NULL },
	{ "experimental.platform.redfish.node-name", "experimental.platform.redfish.nodeName",
	  "platform.redfish.node-name", NULL, NULL },
	{ NULL, "experimental.platform.redfish.httpTimeout", "platform.redfish.timeout", NULL,
	  NULL },
	{ NULL, "experimental.hwmon.chipRules", NULL,
	  "Kepler's rules pair voltage and current inputs; virtwatt reads power and energy sensors "
	  "and maps them with power.hwmon.chip-rules",
	  "" },
	{ NULL, NULL, NULL, NULL, NULL },
};

VW_DAEMON_PROGRAM(vw_host_program, "virtwatt-host", struct vw_host_config, host_options,
		  host_aliases,
		  "Power and energy exporter for bare-metal and virtualization hosts. Measures "
		  "node power (RAPL through powercap sysfs; a Kepler model of CPU time where no "
		  "meter exists), splits each interval's energy into idle and active parts and "
		  "serves Kepler-compatible Prometheus metrics on /metrics.");

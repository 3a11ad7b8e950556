/* SPDX-License-Identifier: Apache-2.0 */
#include "options.h"

#include <stddef.h>

#define OFF(f) offsetof(struct vw_guest_config, f)

static const char *const metric_levels[] = { "node", "process", "container", "pod", NULL };


/* The flags shared with virtwatt-host keep its names, YAML keys and defaults. */
static const struct vw_option guest_options[] = {
	VW_DAEMON_OPTIONS(struct vw_guest_config),
	VW_DAEMON_OTLP_OPTIONS(struct vw_guest_config),
	VW_DAEMON_CARBON_OPTIONS(struct vw_guest_config),
	{ "host.devfs", "host.devfs", VW_OPT_STRING, OFF(devfs), "/dev", "PATH",
	  "root of this VM's /dev (the virtio-serial port)" },
	{ "metrics", "exporter.prometheus.metricsLevel", VW_OPT_STRLIST, OFF(metrics),
	  "node,process,container,pod", "LEVEL,...",
	  "metric levels to export (node is always on)", 0, 0, metric_levels },
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
	{ "passthrough.max-watts", "passthrough.maxWatts", VW_OPT_DOUBLE,
	  OFF(passthrough_max_watts), "0", "WATTS",
	  "a frame whose energy rose faster than this in one zone is a spike and is ignored (0: 4 "
	  "times the power the frames report, at least 250 W, at most 20 kW)",
	  0, 1000000 },
	{ "model.server-url", "model.serverURL", VW_OPT_STRING, OFF(model_server_url), NULL, "URL",
	  "Kepler model server (POST /model by this machine's spec), tried before model.url and "
	  "the built-in model" },
	{ "state.file", "state.file", VW_OPT_STRING, OFF(state_file),
	  "/var/lib/virtwatt-guest/state.json", "PATH",
	  "per-series totals kept across restarts and migrations, written atomically (empty: none); "
	  "an unloadable file is set aside as PATH.bad-<time>, never overwritten" },
	{ "state.write-interval", "state.writeInterval", VW_OPT_DURATION,
	  OFF(state_write_interval_ns), "30s", "DURATION",
	  "write the state file when it changed, at most this often (and always on a clean stop); "
	  "after a crash counters resume up to this far behind",
	  1, 3600 },
	{ "state.max-series", "state.maxSeries", VW_OPT_UINT, OFF(state_max_series), "50000", "N",
	  "counter series the state keeps (the longest unseen are evicted first); also bounds the "
	  "state file size accepted at start",
	  100, 10000000 },
};

static const struct vw_option_alias guest_aliases[] = {
	VW_DAEMON_ALIASES,
	{ NULL, NULL, NULL, NULL, NULL },
};

VW_DAEMON_PROGRAM(vw_guest_program, "virtwatt-guest", struct vw_guest_config, guest_options,
		  guest_aliases,
		  "Power and energy exporter inside a VM. Takes the energy its host measured for "
		  "this VM over the passthrough channel (virtio port or shared folder), or "
		  "estimates it with a Kepler model when none is fresh, splits it over this VM's "
		  "processes, containers and pods, and serves Kepler-compatible Prometheus metrics "
		  "on /metrics.");

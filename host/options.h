/* SPDX-License-Identifier: Apache-2.0 */
/* virtwatt-host's options: one table gives flags, YAML keys, defaults and --help. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "daemon_options.h"
#include "log.h"
#include "training_options.h"

struct vw_host_config {
	struct vw_daemon_options common; /* the flags virtwatt-guest shares */
	uint64_t sample_ns;          /* meter sampling period (<= interval; wrap safety) */
	struct vw_strlist sources;   /* power sources in preference order; empty = all */
	struct vw_strlist platform_sources; /* whole-node meters; empty = all, "none" = off */
	char *redfish_config_file;          /* Kepler's BMC file; "": no Redfish */
	char *redfish_node_name;            /* this node in it; "": the node name */
	uint64_t redfish_interval_ns;       /* between polls of the BMC */
	uint64_t redfish_timeout_ns;        /* per request */
	uint64_t redfish_staleness_ns;      /* 0: 2 x interval + timeout */
	struct {
		char *driver;          /* auto, inband, lan */
		char *device;          /* in band: the kernel's IPMI device */
		char *host;            /* lan */
		uint64_t port;
		char *username;
		char *password_file;   /* the password, read by host/meters.c */
		char *privilege;       /* user, operator, admin */
		struct vw_strlist workarounds; /* FreeIPMI's -W names */
		uint64_t timeout_ns;
		uint64_t interval_ns;
		uint64_t stale_ns;     /* 0: 3 x interval */
	} ipmi; /* --platform.ipmi.*: a BMC over IPMI (power/src_ipmi.c) */
	struct vw_strlist idle_watts; /* zone=W overrides, e.g. package=42.5 */
	uint64_t idle_window;         /* intervals in the idle fit's sliding window */
	double idle_min_spread;       /* usage spread needed to fit */
	struct vw_strlist metrics;    /* levels: node, process, container, pod */
	char *libvirt_uri;
	struct vw_strlist vm_info_labels; /* virtwatt_vm_info labels copied onto the VM series */
	char *passthrough; /* auto (when VMs can be accounted), true (or fail), false */
	uint64_t passthrough_interval_ns; /* 0: monitor interval */
	double passthrough_jitter;
	char *passthrough_share_root;     /* "" : no shared folders */
	char *passthrough_lock_dir;       /* "" : no per-VM locks */
	double passthrough_energy_step_j;
	double passthrough_power_step_w;
	struct vw_strlist hwmon_chip_rules; /* CHIP[:LABEL]=ZONE[@SOCKET], before the built-in ones */
	bool hwmon_enabled;                 /* Kepler's experimental.hwmon.enabled */
	bool hwmon_force;                   /* Kepler's experimental.hwmon.forceEnabled */
	struct vw_strlist preferred_meters; /* Kepler's cpu.preferredMeters */
	struct vw_strlist rapl_zones;       /* Kepler's rapl.zones */
	bool redfish_enabled;               /* off: no Redfish meter even with a BMC file */
	struct vw_strlist hwmon_zones;      /* Kepler's experimental.hwmon.zones: labels to use */
	struct vw_host_train_options train; /* --model.train.*: what the host trains (training/) */
};

extern const struct vw_config_program vw_host_program;

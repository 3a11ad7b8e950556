/* SPDX-License-Identifier: Apache-2.0 */
/* virtwatt-host's options: one table gives flags, YAML keys, defaults and --help. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "log.h"

struct vw_host_config {
	char *config_file;
	char *listen_address;
	char *sysfs;
	char *procfs;
	uint64_t interval_ns;        /* attribution and publication interval */
	uint64_t sample_ns;          /* meter sampling period (<= interval; wrap safety) */
	enum vw_log_level log_level;
	char *node_name;
	struct vw_strlist sources;   /* power sources in preference order; empty = all */
	char *model_file;
	char *model_url;
	char *model_cache_dir;
	uint64_t model_timeout_ns;
	struct vw_strlist idle_watts; /* zone=W overrides, e.g. package=42.5 */
	uint64_t idle_window;         /* intervals in the idle fit's sliding window */
	double idle_min_spread;       /* usage spread needed to fit */
	uint64_t web_max_connections;
	uint64_t web_timeout_ns;
	struct vw_strlist metrics;    /* levels: node, process, container, pod */
	uint64_t process_top_n;
	uint64_t max_terminated;
	char *cpu_accounting;         /* auto, bpf, procfs */
	bool kube_enable;
	char *kube_pod_source;        /* apiserver, kubelet */
	char *kube_api_url;
	char *kube_kubelet_url;
	char *kube_token_file;
	char *kube_ca_file;
	bool kube_insecure;
	uint64_t kube_poll_ns;
	char *libvirt_uri;
	bool passthrough;
	uint64_t passthrough_interval_ns; /* 0: monitor interval */
	double passthrough_jitter;
	char *passthrough_share_root;     /* "" : no shared folders */
	double passthrough_energy_step_j;
	double passthrough_power_step_w;
};

extern const struct vw_config_program vw_host_program;

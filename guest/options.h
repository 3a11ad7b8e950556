/* SPDX-License-Identifier: Apache-2.0 */
/* virtwatt-guest's options: the host's common flags plus the passthrough, model and state. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "log.h"

struct vw_guest_config {
	char *config_file;
	char *listen_address;
	uint64_t web_max_connections;
	uint64_t web_timeout_ns;
	char *sysfs;
	char *procfs;
	char *devfs;
	uint64_t interval_ns;
	enum vw_log_level log_level;
	char *node_name;
	struct vw_strlist metrics;
	uint64_t process_top_n;
	uint64_t max_terminated;
	char *cpu_accounting;
	bool kube_enable;
	char *kube_pod_source;
	char *kube_api_url;
	char *kube_kubelet_url;
	char *kube_token_file;
	char *kube_ca_file;
	bool kube_insecure;
	uint64_t kube_poll_ns;
	char *passthrough_path;       /* NULL: discover the port, then passthrough_folder */
	char *passthrough_folder;     /* conventional mount point of the shared folder */
	char *passthrough_vm_uuid;    /* NULL: the first frame's VM */
	uint64_t passthrough_stale_after; /* publication intervals */
	bool passthrough_enable;
	char *model_file;
	char *model_url;
	char *model_server_url;
	char *model_cache_dir;
	uint64_t model_timeout_ns;
	char *state_file;             /* "" : no state kept */
};

extern const struct vw_config_program vw_guest_program;

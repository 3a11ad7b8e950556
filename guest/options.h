/* SPDX-License-Identifier: Apache-2.0 */
/* virtwatt-guest's options: the host's common flags plus the passthrough, model and state. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "daemon_options.h"
#include "log.h"

struct vw_guest_config {
	struct vw_daemon_options common; /* the flags virtwatt-host shares */
	char *devfs;
	struct vw_strlist metrics;
	char *passthrough_path;       /* NULL: discover the port, then passthrough_folder */
	char *passthrough_folder;     /* conventional mount point of the shared folder */
	char *passthrough_vm_uuid;    /* NULL: the first frame's VM */
	uint64_t passthrough_stale_after; /* publication intervals */
	double passthrough_max_watts;     /* spike ceiling per zone; 0: automatic */
	bool passthrough_enable;
	char *model_server_url;
	char *state_file;             /* "" : no state kept */
	uint64_t state_write_interval_ns;
	uint64_t state_max_series;
};

extern const struct vw_config_program vw_guest_program;

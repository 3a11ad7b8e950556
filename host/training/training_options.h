/* SPDX-License-Identifier: Apache-2.0 */
/* What the host trains (--model.train.*), as host/options.c fills it. */
#pragma once

#include <stdint.h>

struct vw_host_train_options {
	uint64_t interval_ns; /* between refits; 0: no training */
	uint64_t min_samples; /* intervals a zone needs to be fitted */
	uint64_t max_samples; /* intervals kept per model */
	uint64_t max_vms;     /* VMs trained at most */
	char *dir;            /* "": no files */
};

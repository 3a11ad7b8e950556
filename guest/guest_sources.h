/* SPDX-License-Identifier: Apache-2.0 */
/* The guest's power sources: its chain is passthrough, the host's model, then the engine's
 * estimator on the default model. */
#pragma once

#include <stdio.h>

#include "gpu_source.h"
#include "power_source.h"

struct vw_reader;
struct vw_guest_host_model;

/* vw_power_env.ctx of the guest's own sources. */
struct vw_guest_ctx {
	const struct vw_reader *reader;           /* NULL: --passthrough.enable=false */
	struct vw_guest_host_model *host_model;   /* NULL likewise */
};

/* This VM's energy from its host (src_passthrough.c). */
extern const struct vw_power_source_ops vw_src_passthrough;
/* The estimator on the model the host pushed for this VM (src_host_model.c). */
extern const struct vw_power_source_ops vw_src_host_model;

/* This VM's vGPU energy from its host (src_gpu_passthrough.c); vw_gpu_env.ctx is the reader. */
extern const struct vw_gpu_source_ops vw_gpu_src_passthrough;

/* Once the host sends this VM a vGPU share (a `gpu` zone: reader may be NULL), attach it as one
 * of d's GPUs (vw_gpu_src_passthrough), said once; *tried: whether that was done. */
struct vw_daemon;
void vw_guest_gpu_share_attach(struct vw_daemon *d, const struct vw_reader *reader, bool *tried);

/* One zone info per zone kind, each at path (a guest source's zones: passthrough, host model). */
static inline void vw_guest_zone_kinds(struct vw_zone_info info[VW_ZONE__COUNT], const char *path)
{
	for (size_t i = 0; i < VW_ZONE__COUNT; i++) {
		info[i] = (struct vw_zone_info){ .zone = (enum vw_zone)i, .idle_w = -1 };
		snprintf(info[i].path, sizeof(info[i].path), "%s", path);
	}
}

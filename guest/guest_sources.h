/* SPDX-License-Identifier: Apache-2.0 */
/* The guest's power sources: its chain is passthrough, then the engine's estimator. */
#pragma once

#include "gpu_source.h"
#include "power_source.h"

/* This VM's energy from its host (src_passthrough.c); vw_power_env.ctx is the reader. */
extern const struct vw_power_source_ops vw_src_passthrough;

/* This VM's vGPU energy from its host (src_gpu_passthrough.c); vw_gpu_env.ctx is the reader. */
extern const struct vw_gpu_source_ops vw_gpu_src_passthrough;

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The guest's GPU energy as its host measured and split it: a vGPU host gives each VM its vGPUs'
 * share of the devices' idle and active energy, in the passthrough frames' `gpu` zone
 * (virtio-channel/PROTOCOL.md). This GPU source shows it as one device, gpu="vm", in Kepler's
 * kepler_node_gpu_* families, split as the host split it. The guest attaches it once a frame
 * carries the zone (a VM without a vGPU shows no such device); a vGPU's own NVML in the guest
 * reports no power, so this is the only figure there is. The counter is the accumulator's:
 * it only grows, across host restarts too, and starts at the host's figure for this VM.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon_base.h"
#include "energy.h"
#include "gpu_source.h"
#include "guest_sources.h"
#include "log.h"
#include "reader.h"

struct gpu_pt {
	const struct vw_reader *reader;
	struct vw_gpu_info info;
};

static int gpt_open(const struct vw_gpu_env *env, void **ret_state, char *why, size_t len)
{
	struct gpu_pt *p;

	if (!env->ctx) {
		snprintf(why, len, "no passthrough reader");
		return -ENODEV;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->reader = env->ctx;
	p->info = (struct vw_gpu_info){ .has_energy = true,
					.counts_from_zero = true,
					.mig = VW_GPU_MIG_UNSUPPORTED };
	snprintf(p->info.label, sizeof(p->info.label), "vm");
	snprintf(p->info.name, sizeof(p->info.name), "vGPU share measured by the host");
	*ret_state = p;
	return 0;
}

static size_t gpt_devices(void *state, const struct vw_gpu_info **ret)
{
	struct gpu_pt *p = state;

	*ret = &p->info;
	return 1;
}

static void gpt_read(void *state, size_t i, struct vw_gpu_reading *ret)
{
	const struct gpu_pt *p = state;
	const struct vw_proto_acc_zone *a = &vw_reader_acc(p->reader)->zones[VW_ZONE_GPU];

	(void)i;
	*ret = (struct vw_gpu_reading){ .energy_uj = vw_energy_add(a->idle_uj, a->active_uj),
					.idle_uj = a->idle_uj,
					.power_err = -EOPNOTSUPP,
					.util_err = -EOPNOTSUPP };
}

static void gpt_close(void *state)
{
	free(state);
}

const struct vw_gpu_source_ops vw_gpu_src_passthrough = {
	.name = "passthrough",
	.vendor = "host",
	.open = gpt_open,
	.devices = gpt_devices,
	.read = gpt_read,
	.close = gpt_close,
};

void vw_guest_gpu_share_attach(struct vw_daemon *d, const struct vw_reader *reader, bool *tried)
{
	int r;

	if (*tried || !reader || !vw_reader_acc(reader)->zones[VW_ZONE_GPU].seen)
		return;
	*tried = true; /* said once either way */
	r = vw_daemon_attach_gpus(d, &vw_gpu_src_passthrough, (void *)reader);
	if (r == 0)
		vw_info("gpu: the host sends this VM's vGPU share: exported as gpu=\"vm\"");
	else if (r != -ENODEV)
		vw_warn("gpu: cannot show the host's vGPU share: %s", strerror(-r));
}

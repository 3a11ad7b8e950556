/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The host's side of passthrough (passthrough.c): whether it is wanted (--passthrough.enable
 * auto, true or false), and the publisher fed each interval with each VM's share of it from the
 * engine's groups, on the channels the VM sources listed.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "power_source.h"
#include "publish.h"
#include "training.h"
#include "vm_source.h"
#include "workloads.h"

/* --passthrough.enable (NULL: auto): true, and anything but false (auto: when it can). */
bool vw_host_passthrough_asked(const char *enable);
bool vw_host_passthrough_wanted(const char *enable);
/*
 * Passthrough cannot run here (why), fix naming what would make it run. Asked for: an error
 * naming the fix, -EINVAL; by default (auto): said once, 0, and the host runs without it.
 */
int vw_host_passthrough_impossible(const char *enable, const char *why, const char *fix);

struct vw_host_passthrough;

/* The publisher (o: --passthrough.*), naming cpu's source and model in its frames. -errno,
 * logged. */
int vw_host_passthrough_new(const struct vw_publish_opts *o, const struct vw_power_source *cpu,
			    struct vw_host_passthrough **ret);
void vw_host_passthrough_free(struct vw_host_passthrough *p);
struct vw_publisher *vw_host_passthrough_publisher(const struct vw_host_passthrough *p);

/* The VM sources' latest list: each VM's channel. -ENOMEM. */
int vw_host_passthrough_list(struct vw_host_passthrough *p, const struct vw_vm_info *vms,
			     size_t n);
/* The same mid-interval (vw_vm_tracker_news: a VM's channel new): the channel map, and each VM
 * the publisher lists its channel and QEMU at once (vw_publisher_set_channel: it connects and
 * sends the VM its frame at its next tick), not at the interval's end. -ENOMEM. */
int vw_host_passthrough_channels(struct vw_host_passthrough *p, const struct vw_vm_info *vms,
				 size_t n);
/* Each VM's share of the interval just attributed to the publisher, and the VMs' models the
 * host refitted this round (PROTOCOL.md §2a). */
void vw_host_passthrough_interval(struct vw_host_passthrough *p, const struct vw_workloads *w,
				  struct vw_host_training *t);

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Each listed VM's passthrough channel (the unix socket of its org.virtwatt.power.0 port) and
 * shared folder's export, kept between VM listings for the publisher: only UUID, paths and QEMU
 * PID (~560 bytes a VM),
 * sorted, looked up by binary search (hundreds of VMs each interval).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vm_source.h"

struct vw_vm_channels;

struct vw_vm_channels *vw_vm_channels_new(void);
void vw_vm_channels_free(struct vw_vm_channels *c);
/* Replace the map by the channels of vms[0..n). 0, or -ENOMEM (the previous map kept). */
int vw_vm_channels_set(struct vw_vm_channels *c, const struct vw_vm_info *vms, size_t n);
/* The channel of the VM with this UUID: "" when it has none or is unknown. */
const char *vw_vm_channels_get(const struct vw_vm_channels *c, const char *uuid);
/* ... and its QEMU's PID (0 unknown) in ret_qemu_pid and its starttime (0 unknown) in
 * ret_qemu_start (both optional): the channel's listener. */
const char *vw_vm_channels_find(const struct vw_vm_channels *c, const char *uuid,
				uint32_t *ret_qemu_pid, uint64_t *ret_qemu_start);
/* The source folder of its <filesystem> with target virtwatt ("" none or unknown), and whether
 * that element has <readonly/> (ret_readonly, optional). */
const char *vw_vm_channels_share(const struct vw_vm_channels *c, const char *uuid,
				 bool *ret_readonly);

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Who each VM belongs to: virtwatt_vm_info, one series per running or paused VM, joined to
 * Kepler's kepler_vm_* series on vm_id. Its labels name the platform that made the VM and what
 * that platform says of it: OpenStack Nova's instance name, flavor, user and project (from the
 * domain XML's <metadata>), Proxmox VE's VMID (from QEMU's -id). Kepler's own VM series keep
 * their label sets; a user who cannot join uses PromQL's group_left over this one.
 */
#pragma once

#include <stddef.h>

#include "prom.h"
#include "vm_source.h"

/* virtwatt_vm_info for vms[0..n) that are running or paused; nothing at all when none is. */
int vw_vm_meta_render(const struct vw_vm_info *vms, size_t n, struct vw_prom_writer *w,
		      const char *node_name);
/* The same over a packed list (vm_priv.h: the tracker keeps its list packed). */
struct vw_vm_packed;
int vw_vm_meta_render_packed(const struct vw_vm_packed *vms, size_t n,
			     struct vw_prom_writer *w, const char *node_name);

extern const struct vw_family_table vw_vm_meta_family_table;

/* The labels of virtwatt_vm_info that --vm.info-labels may copy onto the VM energy series
 * (those they do not have already), NULL-terminated. */
extern const char *const vw_vm_meta_copyable[];
/* A VM's value of one of them ("" when unknown), NULL for another key. */
const char *vw_vm_meta_value(const struct vw_vm_info *vm, const char *key);

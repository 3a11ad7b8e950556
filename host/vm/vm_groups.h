/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The VMs as the workload registry's reservation groups (workloads.h: vw_group): each running
 * or paused VM is one, its QEMU the leader (the vhost threads it adopts follow), its vCPUs its
 * reservation, a KubeVirt VM's processes its own (sole: not also its virt-launcher pod's), and
 * the virtwatt_vm_info labels chosen with --vm.info-labels as the group's labels.
 */
#pragma once

#include <stddef.h>

#include "vm_source.h"
#include "workloads.h"

/*
 * vms[0..n) as groups into *ret (malloc'd, *ret_n of them); info_labels: NULL-terminated keys of
 * vw_vm_meta_copyable (NULL: none), whose values each group gets in order. -ENOMEM, -EINVAL (an
 * unknown key, or more than VW_GROUP_MAX_LABELS).
 */
/* Whether keys (NULL-terminated, NULL: none) can be --vm.info-labels: each one of
 * vw_vm_meta_copyable, once; 0, or -EINVAL logged with the valid ones named. */
int vw_vm_groups_check(const char *const *keys);
int vw_vm_groups(const struct vw_vm_info *vms, size_t n, const char *const *info_labels,
		 struct vw_group **ret, size_t *ret_n);

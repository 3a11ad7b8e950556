/* SPDX-License-Identifier: Apache-2.0 */
/* The VMs as reservation groups (vm_groups.h). */
#include "vm_groups.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "vm_meta.h"

static bool copyable(const char *key)
{
	for (size_t i = 0; vw_vm_meta_copyable[i]; i++)
		if (strcmp(vw_vm_meta_copyable[i], key) == 0)
			return true;
	return false;
}

int vw_vm_groups_check(const char *const *keys)
{
	char valid[256];
	size_t o = 0;

	for (size_t i = 0; vw_vm_meta_copyable[i] && o < sizeof(valid); i++)
		o += (size_t)snprintf(valid + o, sizeof(valid) - o, "%s%s", i ? ", " : "",
				      vw_vm_meta_copyable[i]);
	for (size_t i = 0; keys && keys[i]; i++) {
		if (!copyable(keys[i])) {
			vw_error("config: vm.info-labels: \"%s\" is not a virtwatt_vm_info label "
				 "the VM series can take (one of: %s)", keys[i], valid);
			return -EINVAL;
		}
		if (i == VW_GROUP_MAX_LABELS) {
			vw_error("config: vm.info-labels: more than %d labels", VW_GROUP_MAX_LABELS);
			return -EINVAL;
		}
		for (size_t j = 0; j < i; j++)
			if (strcmp(keys[i], keys[j]) == 0) {
				vw_error("config: vm.info-labels: \"%s\" given twice", keys[i]);
				return -EINVAL;
			}
	}
	return 0;
}

int vw_vm_groups(const struct vw_vm_info *vms, size_t n, const char *const *info_labels,
		 struct vw_group **ret, size_t *ret_n)
{
	struct vw_group *g;
	size_t k = 0, n_labels = 0;

	if (vw_vm_groups_check(info_labels) < 0)
		return -EINVAL;
	while (info_labels && info_labels[n_labels])
		n_labels++;
	g = calloc(n + 1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (vms[i].state == VW_VM_SHUTOFF)
			continue;
		g[k] = (struct vw_group){ .reserved_cpus = vms[i].vcpus,
					  .leader_pid = vms[i].qemu_pid,
					  .leader_start_time = vms[i].qemu_start_time,
					  .sole = vw_vm_is_kubevirt(&vms[i]) };
		snprintf(g[k].id, sizeof(g[k].id), "%s", vms[i].uuid);
		snprintf(g[k].name, sizeof(g[k].name), "%s", vms[i].name);
		snprintf(g[k].kind, sizeof(g[k].kind), "%s",
			 vms[i].hypervisor[0] ? vms[i].hypervisor : "kvm");
		for (size_t l = 0; l < n_labels; l++)
			snprintf(g[k].labels[l], sizeof(g[k].labels[l]), "%s",
				 vw_vm_meta_value(&vms[i], info_labels[l]));
		k++;
	}
	*ret = g;
	*ret_n = k;
	return 0;
}

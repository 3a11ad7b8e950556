/* SPDX-License-Identifier: Apache-2.0 */
#include "vm_channels.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct entry {
	char uuid[VW_UUID_LEN];
	char path[sizeof(((struct vw_vm_info *)0)->channel_path)];
	uint32_t qemu_pid;
	uint64_t qemu_start; /* /proc/PID/stat starttime as listed (0 unknown) */
	char share[sizeof(((struct vw_vm_info *)0)->share_dir)];
	bool share_readonly;
};

struct vw_vm_channels {
	struct entry *e;
	size_t n;
};

struct vw_vm_channels *vw_vm_channels_new(void)
{
	return calloc(1, sizeof(struct vw_vm_channels));
}

void vw_vm_channels_free(struct vw_vm_channels *c)
{
	if (c)
		free(c->e);
	free(c);
}

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->uuid, ((const struct entry *)b)->uuid);
}

int vw_vm_channels_set(struct vw_vm_channels *c, const struct vw_vm_info *vms, size_t n)
{
	struct entry *e = calloc(n + 1, sizeof(*e));

	if (!e)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		snprintf(e[i].uuid, sizeof(e[i].uuid), "%s", vms[i].uuid);
		snprintf(e[i].path, sizeof(e[i].path), "%s", vms[i].channel_path);
		e[i].qemu_pid = vms[i].qemu_pid;
		e[i].qemu_start = vms[i].qemu_start_time;
		snprintf(e[i].share, sizeof(e[i].share), "%s", vms[i].share_dir);
		e[i].share_readonly = vms[i].share_readonly;
	}
	qsort(e, n, sizeof(*e), cmp_entry);
	free(c->e);
	c->e = e;
	c->n = n;
	return 0;
}

static const struct entry *find(const struct vw_vm_channels *c, const char *uuid)
{
	struct entry key;

	snprintf(key.uuid, sizeof(key.uuid), "%s", uuid);
	return c->n ? bsearch(&key, c->e, c->n, sizeof(key), cmp_entry) : NULL;
}

const char *vw_vm_channels_find(const struct vw_vm_channels *c, const char *uuid,
				uint32_t *ret_qemu_pid, uint64_t *ret_qemu_start)
{
	const struct entry *found = find(c, uuid);

	if (ret_qemu_pid)
		*ret_qemu_pid = found ? found->qemu_pid : 0;
	if (ret_qemu_start)
		*ret_qemu_start = found ? found->qemu_start : 0;
	return found ? found->path : "";
}

const char *vw_vm_channels_share(const struct vw_vm_channels *c, const char *uuid,
				 bool *ret_readonly)
{
	const struct entry *found = find(c, uuid);

	if (ret_readonly)
		*ret_readonly = found && found->share_readonly;
	return found ? found->share : "";
}

const char *vw_vm_channels_get(const struct vw_vm_channels *c, const char *uuid)
{
	return vw_vm_channels_find(c, uuid, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* VMs by UUID (vm_index.h): linear probing over a power-of-two table kept at most half full. */
#include "vm_index.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* FNV-1a over the UUID's text: 36 bytes, each VM's once a lookup. */
static uint32_t uuid_hash(const char *uuid)
{
	uint32_t h = 2166136261u;

	for (const unsigned char *p = (const unsigned char *)uuid; *p; p++)
		h = (h ^ *p) * 16777619u;
	return h;
}

void vw_vm_index_clear(struct vw_vm_index *x)
{
	if (x->slot)
		memset(x->slot, 0, x->cap * sizeof(*x->slot));
	x->n = 0;
}

void vw_vm_index_free(struct vw_vm_index *x)
{
	free(x->slot);
	*x = (struct vw_vm_index){ 0 };
}

ptrdiff_t vw_vm_index_find_in(const struct vw_vm_index *x, const char *uuid0, size_t stride,
			      const char *uuid)
{
	uint32_t h;

	if (!x->n)
		return -1;
	h = uuid_hash(uuid);
	for (size_t i = h & (x->cap - 1);; i = (i + 1) & (x->cap - 1)) {
		const struct vw_vm_index_slot *s = &x->slot[i];

		if (!s->pos1)
			return -1;
		if (s->hash == h && strcmp(uuid0 + (size_t)(s->pos1 - 1) * stride, uuid) == 0)
			return (ptrdiff_t)s->pos1 - 1;
	}
}

ptrdiff_t vw_vm_index_find(const struct vw_vm_index *x, const struct vw_vm_info *vms,
			   const char *uuid)
{
	return vw_vm_index_find_in(x, vms ? vms->uuid : NULL, sizeof(*vms), uuid);
}

static void put(struct vw_vm_index_slot *slot, size_t cap, struct vw_vm_index_slot s)
{
	size_t i = s.hash & (cap - 1);

	while (slot[i].pos1)
		i = (i + 1) & (cap - 1);
	slot[i] = s;
}

int vw_vm_index_add_in(struct vw_vm_index *x, const char *uuid0, size_t stride, size_t pos)
{
	if (pos >= UINT32_MAX)
		return -ENOMEM;
	if (2 * (x->n + 1) > x->cap) { /* at most half full: probes stay short */
		size_t cap = x->cap ? 2 * x->cap : 64;
		struct vw_vm_index_slot *slot = calloc(cap, sizeof(*slot));

		if (!slot)
			return -ENOMEM;
		for (size_t i = 0; i < x->cap; i++)
			if (x->slot[i].pos1)
				put(slot, cap, x->slot[i]);
		free(x->slot);
		x->slot = slot;
		x->cap = cap;
	}
	put(x->slot, x->cap,
	    (struct vw_vm_index_slot){ uuid_hash(uuid0 + pos * stride), (uint32_t)pos + 1 });
	x->n++;
	return 0;
}

int vw_vm_index_add(struct vw_vm_index *x, const struct vw_vm_info *vms, size_t pos)
{
	return vw_vm_index_add_in(x, vms ? vms->uuid : NULL, sizeof(*vms), pos);
}

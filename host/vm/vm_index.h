/* SPDX-License-Identifier: Apache-2.0 */
/*
 * VMs found by UUID in an array of them without a search through it: the merge of the
 * sources' lists and the process scan's looked each VM up by strcmp over those merged so far,
 * quadratic in the VMs (0.44 M instructions an interval at 100 VMs). An open-addressing table
 * of positions in the caller's array, which may move or grow between calls (positions, not
 * pointers, are kept); what decides order stays the array's.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "vm_source.h"

struct vw_vm_index_slot {
	uint32_t hash; /* the UUID's hash */
	uint32_t pos1; /* its position in the array + 1; 0: an empty slot */
};

struct vw_vm_index {
	struct vw_vm_index_slot *slot;
	size_t cap; /* slots: 0, or a power of two at least twice n */
	size_t n;   /* positions held */
};

/* Empty again, its memory kept for the next round. */
void vw_vm_index_clear(struct vw_vm_index *x);
void vw_vm_index_free(struct vw_vm_index *x);
/* The position in vms (the array x indexes) of the VM with this UUID, or -1. */
ptrdiff_t vw_vm_index_find(const struct vw_vm_index *x, const struct vw_vm_info *vms,
			   const char *uuid);
/* vms[pos], a UUID not indexed yet, indexed: 0, or -ENOMEM (x as it was). */
int vw_vm_index_add(struct vw_vm_index *x, const struct vw_vm_info *vms, size_t pos);
/* The same over any array whose element pos has its UUID at uuid0 + pos * stride (the process
 * scan's packed list). */
ptrdiff_t vw_vm_index_find_in(const struct vw_vm_index *x, const char *uuid0, size_t stride,
			      const char *uuid);
int vw_vm_index_add_in(struct vw_vm_index *x, const char *uuid0, size_t stride, size_t pos);

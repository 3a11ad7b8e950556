/* SPDX-License-Identifier: Apache-2.0 */
/* Who each VM belongs to (vm_meta.h). */
#include "vm_meta.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "vm_priv.h"

static const char *const l_meta[] = { "vm_id",        "vm_name",      "hypervisor",
				      "source",       "platform",     "instance_name",
				      "flavor",       "user_id",      "user_name",
				      "project_id",   "project_name", "proxmox_vmid",
				      "namespace",    "pod_name",     "node_name",
				      NULL };

/* The labels --vm.info-labels may copy: virtwatt_vm_info's but those the VM series have. */
const char *const vw_vm_meta_copyable[] = { "source",     "platform",     "instance_name",
					    "flavor",     "user_id",      "user_name",
					    "project_id", "project_name", "proxmox_vmid",
					    "namespace",  "pod_name",     NULL };

static const struct vw_metric_family meta_families[] = {
	{ "virtwatt_vm_info", VW_METRIC_GAUGE,
	  "A VM the host runs, and who it belongs to where its platform says so: platform is "
	  "openstack (Nova's metadata in the domain XML: instance_name, flavor, user_id, "
	  "user_name, project_id, project_name), proxmox (proxmox_vmid, QEMU's -id), kubevirt "
	  "(vm_name the VirtualMachineInstance, namespace, pod_name its virt-launcher pod, "
	  "instance_name its VirtualMachine) or empty; "
	  "source is the VM source that found it (libvirt, procscan). Always 1; join it to the "
	  "kepler_vm_* series on vm_id",
	  NULL, l_meta },
};

const struct vw_family_table vw_vm_meta_family_table = {
	"host/vm/vm_meta.c: vw_vm_meta_render()", "virtwatt-host",
	"with --metrics including vm: one row per running or paused VM of the VM sources",
	meta_families, ARRAY_SIZE(meta_families),
};

const char *vw_vm_meta_value(const struct vw_vm_info *vm, const char *key)
{
	const struct vw_vm_owner *o = &vm->owner;
	const struct {
		const char *key, *value;
	} kv[] = {
		{ "source", vm->source },
		{ "platform", o->platform },
		{ "instance_name", o->instance_name },
		{ "flavor", o->flavor },
		{ "user_id", o->user_id },
		{ "user_name", o->user_name },
		{ "project_id", o->project_id },
		{ "project_name", o->project_name },
		{ "proxmox_vmid", o->vmid },
		{ "namespace", o->namespace_ },
		{ "pod_name", o->pod_name },
	};

	for (size_t i = 0; i < ARRAY_SIZE(kv); i++)
		if (strcmp(kv[i].key, key) == 0)
			return kv[i].value;
	return NULL;
}

/* The labels from source on (source, the owner's, node_name): the same for every VM of a
 * source that no platform claims, escaped once a render for them all (a tail), where the row
 * escaped all fifteen. */
#define TAIL_FROM 3
#define TAILS 2 /* sources: libvirt, procscan */

struct tails {
	char source[TAILS][sizeof(((struct vw_vm_info *)0)->source)]; /* copies: rows are unpacked
									* into one struct in turn */
	struct vw_prom_piece piece[TAILS];
	size_t n;
};

/* Whether a row's owner labels (platform .. pod_name) are all empty. */
static bool no_owner(const char *const *labels)
{
	for (size_t i = TAIL_FROM + 1; i < ARRAY_SIZE(l_meta) - 2; i++)
		if (labels[i][0])
			return false;
	return true;
}

/* The tail for this row (labels: its values) when its owner is empty, made at the first row
 * of its source; NULL: none (an owner, or more sources than kept). */
static const struct vw_prom_piece *tail_of(struct tails *t, const char *const *labels)
{
	const char *source = labels[TAIL_FROM];

	if (!no_owner(labels))
		return NULL;
	for (size_t i = 0; i < t->n; i++)
		if (strcmp(t->source[i], source) == 0)
			return &t->piece[i];
	if (t->n == TAILS ||
	    !vw_prom_piece_set_from(&t->piece[t->n], l_meta, TAIL_FROM,
				    ARRAY_SIZE(l_meta) - 1 - TAIL_FROM, labels))
		return NULL;
	snprintf(t->source[t->n], sizeof(t->source[t->n]), "%s", source);
	return &t->piece[t->n++];
}

/* A row of these labels (l_meta's values), the family opened (and *t allocated: NULL, every
 * label escaped) before the first. */
static int row_of(const char *const *labels, struct vw_prom_writer *w, bool *open,
		  struct tails **t)
{
	int r = 0;

	if (!*open) {
		r = vw_prom_family(w, &meta_families[0]);
		*open = true;
		*t = calloc(1, sizeof(**t));
	}
	return r < 0 ? r : vw_prom_gauge_pieces(w, NULL, *t ? tail_of(*t, labels) : NULL, labels, 1);
}

/* vm's row (none for a stopped VM). */
static int row(const struct vw_vm_info *vm, struct vw_prom_writer *w, const char *node_name,
	       bool *open, struct tails **t)
{
	const struct vw_vm_owner *o = &vm->owner;
	const char *labels[] = { vm->uuid,
				 vm->name,
				 vm->hypervisor,
				 vm->source,
				 o->platform,
				 o->instance_name,
				 o->flavor,
				 o->user_id,
				 o->user_name,
				 o->project_id,
				 o->project_name,
				 o->vmid,
				 o->namespace_,
				 o->pod_name,
				 node_name,
				 NULL };

	_Static_assert(ARRAY_SIZE(labels) == ARRAY_SIZE(l_meta), "l_meta: a row's values");
	if (vm->state == VW_VM_SHUTOFF)
		return 0;
	return row_of(labels, w, open, t);
}

int vw_vm_meta_render(const struct vw_vm_info *vms, size_t n, struct vw_prom_writer *w,
		      const char *node_name)
{
	_cleanup_free_ struct tails *t = NULL;
	bool open = false;
	int r = 0;

	(void)vw_prom_table_trust(&vw_vm_meta_family_table); /* checked once, not each render */
	for (size_t i = 0; r == 0 && i < n; i++)
		r = row(&vms[i], w, node_name, &open, &t);
	return r < 0 || !open ? r : vw_prom_family_end(w);
}

int vw_vm_meta_render_packed(const struct vw_vm_packed *vms, size_t n,
			     struct vw_prom_writer *w, const char *node_name)
{
	_cleanup_free_ struct tails *t = NULL;
	bool open = false;
	int r = 0;

	(void)vw_prom_table_trust(&vw_vm_meta_family_table); /* checked once, not each render */
	for (size_t i = 0; r == 0 && i < n; i++) {
		const char *s[VW_PK__COUNT];

		if (vms[i].state == VW_VM_SHUTOFF)
			continue;
		/* The labels where the packed VM holds them: no whole struct unpacked a row. */
		vw_vm_packed_strings(&vms[i], s);
		r = row_of((const char *const[]){ vms[i].uuid, s[VW_PK_NAME], vms[i].hypervisor,
						  vms[i].source, s[VW_PK_PLATFORM],
						  s[VW_PK_INSTANCE_NAME], s[VW_PK_FLAVOR],
						  s[VW_PK_USER_ID], s[VW_PK_USER_NAME],
						  s[VW_PK_PROJECT_ID], s[VW_PK_PROJECT_NAME],
						  s[VW_PK_VMID], s[VW_PK_NAMESPACE],
						  s[VW_PK_POD_NAME], node_name, NULL },
			   w, &open, &t);
	}
	return r < 0 || !open ? r : vw_prom_family_end(w);
}

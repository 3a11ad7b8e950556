/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The host's VMs as a daemon follows them: the VM sources' merged list (vm_source.h), kept
 * packed between listings (vm_priv.h), each VM named by KubeVirt where it is one, the GPUs passed through to them
 * (vm_vfio.h) and their reservation groups (vm_groups.h); the vGPU owner and the VM families
 * (virtwatt_vm_info, the VFIO GPUs) read from the same list.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "vm_source.h"
#include "workloads.h"

struct vw_gpu_vgpu_energy;
struct vw_podmeta;
struct vw_prom_writer;
struct vw_vm_tracker;

/* The VM sources that open (env) and the VFIO view (sysfs_fd). -ENODEV (errno's, when another)
 * when no VM source opens: nothing is kept. */
int vw_vm_tracker_open(const struct vw_vm_env *env, int sysfs_fd, struct vw_vm_tracker **ret);
/* The same over these sources (NULL-terminated, in preference order): tests' fakes. */
int vw_vm_tracker_open_with(const struct vw_vm_env *env,
			    const struct vw_vm_source_ops *const *sources, int sysfs_fd,
			    struct vw_vm_tracker **ret);
void vw_vm_tracker_free(struct vw_vm_tracker *t);

/* Told each new list, with its VMs' groups (info_labels): < 0 is out of memory (said). */
typedef int (*vw_vm_listed_fn)(void *ud, const struct vw_vm_info *vms, size_t n,
			       const struct vw_group *groups, size_t n_groups);

/*
 * List the VMs now (pm: pod metadata for KubeVirt's names, may be NULL) and hand the list to
 * listed when it differs from the last one handed over (field by field, after KubeVirt's names;
 * one listed() failed is handed again): an unchanged list is neither grouped nor handed over
 * again. info_labels must stay the same between calls. A listing that fails keeps the last list
 * (complained once, its end said); t NULL: nothing.
 */
void vw_vm_tracker_refresh(struct vw_vm_tracker *t, struct vw_podmeta *pm,
			   const char *const *info_labels, vw_vm_listed_fn listed, void *ud);

/*
 * Mid-interval news of the VMs' channels (vw_vms_news: libvirt's answer came, a VM started or
 * restored, its channel new): a descriptor readable then (poll it; -1: none, t NULL too), and
 * the handling: when a source told news, list the VMs now and hand them to channels(), for the
 * publisher's channel map only (< 0: out of memory, said). The list is neither kept nor
 * grouped: the workloads' groups change at the interval's refresh alone (vw_workloads_set_groups
 * is called before each interval's update), which hands the VMs over whole as always. No news:
 * nothing listed. vw_vm_tracker_refresh() takes pending news too (its list says them).
 */
typedef int (*vw_vm_channels_fn)(void *ud, const struct vw_vm_info *vms, size_t n);
int vw_vm_tracker_news_fd(const struct vw_vm_tracker *t);
void vw_vm_tracker_news(struct vw_vm_tracker *t, vw_vm_channels_fn channels, void *ud);

/* The listed VM a vGPU serves (vw_vm_vgpu_owner), its UUID into id; ud: the tracker. */
bool vw_vm_tracker_vgpu_owner(void *ud, const struct vw_gpu_vgpu_energy *e, char id[VW_UUID_LEN]);

/* virtwatt_vm_info of the listed VMs, the VFIO GPUs' families and the untrusted QEMUs' gauge
 * (env->qemu_trust's, when given); t NULL: none. */
int vw_vm_tracker_render(const struct vw_vm_tracker *t, struct vw_prom_writer *w,
			 const char *node_name);

/* SPDX-License-Identifier: Apache-2.0 */
#include "vm_tracker.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpu.h"
#include "log.h"
#include "vm_groups.h"
#include "vm_meta.h"
#include "vm_priv.h"
#include "vm_trust.h"
#include "vm_vfio.h"

struct vw_vm_tracker {
	struct vw_vms *vms;
	/* The last list, packed (vm_priv.h: ~100 B a VM and its strings, against 2,312 B; it is
	 * kept a whole interval beside the round's lists): vGPUs are matched to it, and
	 * virtwatt_vm_info rendered from it. */
	struct vw_vm_packed *list;
	size_t n;
	bool delivered; /* list went to listed() whole: an equal one is not handed over again */
	struct vw_vm_vfio *vfio; /* GPUs passed through to VMs, named as theirs */
	const struct vw_qemu_trust *trust; /* env's (not owned): the untrusted QEMUs' gauge */
	struct vw_complaint complaint;
};

int vw_vm_tracker_open(const struct vw_vm_env *env, int sysfs_fd, struct vw_vm_tracker **ret)
{
	return vw_vm_tracker_open_with(env, vw_vm_sources, sysfs_fd, ret);
}

int vw_vm_tracker_open_with(const struct vw_vm_env *env,
			    const struct vw_vm_source_ops *const *sources, int sysfs_fd,
			    struct vw_vm_tracker **ret)
{
	struct vw_vm_tracker *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	t->trust = env->qemu_trust;
	t->vms = vw_vms_open_with(env, sources);
	if (!t->vms) {
		int r = errno ? -errno : -ENODEV;

		free(t);
		return r;
	}
	t->vfio = vw_vm_vfio_new(sysfs_fd);
	if (!t->vfio) {
		vw_vm_tracker_free(t);
		return -ENOMEM;
	}
	*ret = t;
	return 0;
}

static void free_list(struct vw_vm_packed *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		vw_vm_packed_free(&list[i]);
	free(list);
}

/* Whether vms[0..n) is the list kept, field by field. */
static bool same_list(const struct vw_vm_tracker *t, const struct vw_vm_info *vms, size_t n)
{
	if (n != t->n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!vw_vm_packed_same(&t->list[i], &vms[i]))
			return false;
	return true;
}

/* vms[0..n) packed into t's list, the old one freed; -ENOMEM with the old one kept. */
static int keep_list(struct vw_vm_tracker *t, const struct vw_vm_info *vms, size_t n)
{
	struct vw_vm_packed *list = calloc(n ? n : 1, sizeof(*list));

	if (!list)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (vw_vm_pack(&vms[i], &list[i]) < 0) {
			free_list(list, i);
			return -ENOMEM;
		}
	free_list(t->list, t->n);
	t->list = list;
	t->n = n;
	return 0;
}

void vw_vm_tracker_free(struct vw_vm_tracker *t)
{
	if (!t)
		return;
	vw_vms_close(t->vms);
	free_list(t->list, t->n);
	vw_vm_vfio_free(t->vfio);
	free(t);
}

void vw_vm_tracker_refresh(struct vw_vm_tracker *t, struct vw_podmeta *pm,
			   const char *const *info_labels, vw_vm_listed_fn listed, void *ud)
{
	_cleanup_free_ struct vw_vm_info *vms = NULL;
	_cleanup_free_ struct vw_group *groups = NULL;
	size_t n = 0, n_groups = 0;
	int r;

	if (!t)
		return;
	(void)vw_vms_news(t->vms); /* this listing tells it (news after it are told again) */
	r = vw_vms_list(t->vms, &vms, &n);
	if (r < 0) {
		vw_complain(&t->complaint, VW_LOG_WARN, "vm: listing VMs: %s", strerror(-r));
		return; /* keep the VMs as they were */
	}
	vw_release(&t->complaint, VW_LOG_INFO, "vm: listing VMs works again");
	vw_vm_kubevirt_resolve(vms, n, pm); /* KubeVirt's VMs: named by their VMI */
	if (t->delivered && same_list(t, vms, n)) {
		/* The same VMs as last interval: the groups and the publisher's list stand (the
		 * VFIO view reads sysfs, which can change under an unchanged list). */
		if (vw_vm_vfio_update(t->vfio, vms, n) < 0)
			vw_complain(&t->complaint, VW_LOG_WARN, "vm: out of memory tracking VMs");
		return;
	}
	t->delivered = false;
	if (keep_list(t, vms, n) < 0 || vw_vm_vfio_update(t->vfio, vms, n) < 0 ||
	    vw_vm_groups(vms, n, info_labels, &groups, &n_groups) < 0 ||
	    listed(ud, vms, n, groups, n_groups) < 0)
		vw_complain(&t->complaint, VW_LOG_WARN, "vm: out of memory tracking VMs");
	else
		t->delivered = true;
}

int vw_vm_tracker_news_fd(const struct vw_vm_tracker *t)
{
	return t ? vw_vms_news_fd(t->vms) : -1;
}

void vw_vm_tracker_news(struct vw_vm_tracker *t, vw_vm_channels_fn channels, void *ud)
{
	_cleanup_free_ struct vw_vm_info *vms = NULL;
	size_t n = 0;
	int r;

	if (!t || !vw_vms_news(t->vms))
		return;
	r = vw_vms_list(t->vms, &vms, &n);
	if (r < 0) {
		vw_complain(&t->complaint, VW_LOG_WARN, "vm: listing VMs: %s", strerror(-r));
		return; /* the interval's refresh lists again */
	}
	/* Not kept, not grouped: the interval's refresh hands the VMs over whole, as it does. */
	if (channels(ud, vms, n) < 0)
		vw_complain(&t->complaint, VW_LOG_WARN, "vm: out of memory tracking VMs");
}

bool vw_vm_tracker_vgpu_owner(void *ud, const struct vw_gpu_vgpu_energy *e, char id[VW_UUID_LEN])
{
	const struct vw_vm_tracker *t = ud;

	return t && vw_vm_vgpu_owner_packed(t->list, t->n, e->vm_id,
					    e->vm_id_type == VW_GPU_VM_ID_UUID, e->mdev_uuid, id);
}

int vw_vm_tracker_render(const struct vw_vm_tracker *t, struct vw_prom_writer *w,
			 const char *node_name)
{
	int r;

	if (!t)
		return 0;
	r = vw_vm_meta_render_packed(t->list, t->n, w, node_name);
	if (r >= 0)
		r = vw_vm_vfio_render(t->vfio, w, node_name);
	return r < 0 ? r : vw_qemu_trust_render(t->trust, w, node_name);
}

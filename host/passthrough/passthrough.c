/* SPDX-License-Identifier: Apache-2.0 */
#include "passthrough.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "vm_channels.h"

struct vw_host_passthrough {
	struct vw_publisher *publisher;
	struct vw_vm_channels *channels; /* each listed VM's channel, for the publisher */
	struct vw_group_energy *ge;      /* the publisher's input, kept: an interval is handed */
	struct vw_vm_energy *vm;         /* on once only */
	size_t cap;
	struct vw_complaint complaint;
};

bool vw_host_passthrough_asked(const char *enable)
{
	return enable && strcmp(enable, "true") == 0;
}

bool vw_host_passthrough_wanted(const char *enable)
{
	return !enable || strcmp(enable, "false") != 0;
}

int vw_host_passthrough_impossible(const char *enable, const char *why, const char *fix)
{
	if (!vw_host_passthrough_asked(enable)) {
		vw_info("passthrough: off: %s (--passthrough.enable=auto; to pass VMs their "
			"energy: %s)",
			why, fix);
		return 0;
	}
	vw_error("passthrough: --passthrough.enable=true but %s: %s, or leave "
		 "--passthrough.enable at auto",
		 why, fix);
	return -EINVAL;
}

int vw_host_passthrough_new(const struct vw_publish_opts *o, const struct vw_power_source *cpu,
			    struct vw_host_passthrough **ret)
{
	struct vw_host_passthrough *p = calloc(1, sizeof(*p));
	struct vw_power_source_stats st = { 0 };
	struct vw_publish_opts po = *o;

	if (!p)
		return -ENOMEM;
	p->channels = vw_vm_channels_new(); /* what the publisher needs of each listing */
	if (!p->channels) {
		vw_host_passthrough_free(p);
		return -ENOMEM;
	}
	if (cpu->ops->stats)
		cpu->ops->stats(cpu->state, &st);
	po.source = cpu->ops->name;
	po.model = st.model;
	if (!po.lock_dir)
		vw_warn("passthrough: --passthrough.lock-dir is empty: nothing stops another "
			"virtwatt-host from publishing the same VMs, whose guests would then count "
			"their energy twice");
	p->publisher = vw_publisher_new(&po);
	if (!p->publisher) {
		int r = -errno;

		vw_error("passthrough: cannot start the publisher: %s", strerror(errno));
		vw_host_passthrough_free(p);
		return r;
	}
	*ret = p;
	return 0;
}

void vw_host_passthrough_free(struct vw_host_passthrough *p)
{
	if (!p)
		return;
	vw_publisher_free(p->publisher);
	vw_vm_channels_free(p->channels);
	free(p->ge);
	free(p->vm);
	free(p);
}

struct vw_publisher *vw_host_passthrough_publisher(const struct vw_host_passthrough *p)
{
	return p ? p->publisher : NULL;
}

int vw_host_passthrough_list(struct vw_host_passthrough *p, const struct vw_vm_info *vms,
			     size_t n)
{
	return vw_vm_channels_set(p->channels, vms, n);
}

int vw_host_passthrough_channels(struct vw_host_passthrough *p, const struct vw_vm_info *vms,
				 size_t n)
{
	int r = vw_host_passthrough_list(p, vms, n);

	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		uint32_t pid;
		uint64_t start;
		const char *path;

		if (vms[i].state == VW_VM_SHUTOFF)
			continue; /* gone: the interval's update closes it */
		path = vw_vm_channels_find(p->channels, vms[i].uuid, &pid, &start);
		/* -ENOENT: a VM the publisher does not list yet: it comes with its interval */
		(void)vw_publisher_set_channel(p->publisher, vms[i].uuid, path, pid, start);
	}
	return 0;
}

/* Room for n VMs in the publisher's buffers (about 1.5 KiB a VM), given back when they shrink to
 * a quarter: a host that ran many VMs once does not keep room for them. */
static int reserve(struct vw_host_passthrough *p, size_t n)
{
	struct vw_group_energy *ge;
	struct vw_vm_energy *e;

	if (n <= p->cap && (p->cap <= 16 || n > p->cap / 4))
		return 0;
	ge = reallocarray(p->ge, n, sizeof(*ge));
	if (!ge)
		return n > p->cap ? -ENOMEM : 0; /* a shrink that failed keeps the room */
	p->ge = ge;
	e = reallocarray(p->vm, n, sizeof(*e));
	if (e)
		p->vm = e;
	else if (n > p->cap)
		return -ENOMEM; /* ge has room for more than cap: harmless */
	p->cap = n; /* (a shrink of vm that failed leaves it larger) */
	return 0;
}

/* What snprintf(dst, size, "%s", src) writes, without printf (two strings a VM an interval). */
static void copy_str(char *dst, size_t size, const char *src)
{
	size_t n = strnlen(src, size - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* Each VM's interval to the publisher, which adds them up for its guest. */
static void feed(struct vw_host_passthrough *p, const struct vw_workloads *w)
{
	size_t n;

	if (reserve(p, vw_workloads_n_groups(w) + 1) < 0) {
		vw_complain(&p->complaint, VW_LOG_WARN,
			    "passthrough: out of memory: this interval's VM energy is not published");
		return;
	}
	n = vw_workloads_group_energy(w, p->ge, p->cap);
	for (size_t i = 0; i < n; i++) {
		const struct vw_group_energy *g = &p->ge[i];
		struct vw_vm_energy *e = &p->vm[i];

		copy_str(e->uuid, sizeof(e->uuid), g->id);
		copy_str(e->channel_path, sizeof(e->channel_path),
			 vw_vm_channels_find(p->channels, g->id, &e->qemu_pid,
					     &e->qemu_start_time));
		copy_str(e->share_dir, sizeof(e->share_dir),
			 vw_vm_channels_share(p->channels, g->id, &e->share_readonly));
		e->n_zones = g->n_zones;
		memcpy(e->zones, g->zones, sizeof(e->zones));
	}
	if (vw_publisher_update(p->publisher, p->vm, n) < 0)
		vw_complain(&p->complaint, VW_LOG_WARN, "passthrough: update failed");
}

/* A VM's model, freshly refitted, to its guest (PROTOCOL.md §2a). */
static void push_model(void *ud, const char *vm_uuid, const char *name, const char *json,
		       size_t len)
{
	struct vw_host_passthrough *p = ud;
	int r = vw_publisher_set_model(p->publisher, vm_uuid, name, json, len);

	if (r < 0 && r != -ENOENT) /* -ENOENT: not listed now */
		vw_complain(&p->complaint, VW_LOG_WARN, "model: pushing VM %s's model: %s",
			    vm_uuid, strerror(-r));
}

void vw_host_passthrough_interval(struct vw_host_passthrough *p, const struct vw_workloads *w,
				  struct vw_host_training *t)
{
	if (!p || !w)
		return;
	feed(p, w); /* each VM's zones, its vGPUs' included */
	(void)vw_host_training_vm_models(t, push_model, p);
}

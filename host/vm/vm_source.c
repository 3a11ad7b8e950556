/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The VM source registry and the merged view. Sources are listed in preference order and a VM is
 * one VM per UUID: the first source that reports it decides its state and what it knows; later
 * sources fill only what it lacks (a libvirt VM whose QEMU was not found gets the process scan's
 * PID).
 *
 * A VM libvirt reports stopped can still be seen by the process scan while its QEMU exits; that
 * (UUID, PID, start time) is remembered and the scan's report of it is dropped until it is gone,
 * so consumers see exactly one VW_VM_SHUTOFF. A VM started again under the same UUID has a new
 * QEMU and is not affected.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "macro.h"
#include "vm_index.h"
#include "vm_priv.h"

#define MAX_SOURCES 8
#define MAX_SUPPRESSED 1024

const struct vw_vm_source_ops *const vw_vm_sources[] = {
#if VW_HAVE_LIBVIRT
	&vw_vm_libvirt,
#endif
	&vw_vm_procscan,
	NULL,
};

#if VW_HAVE_LIBVIRT
const struct vw_source_options *const vw_vm_unbuilt_options = NULL;
#else
static const struct vw_option_alias no_libvirt[] = {
	{ "libvirt.uri", "libvirt.uri", NULL,
	  "this virtwatt-host is built without libvirt (-Dlibvirt=disabled): VMs are found from "
	  "QEMU processes only",
	  "" },
	{ NULL, NULL, NULL, NULL, NULL },
};
static const struct vw_source_options no_libvirt_options = { .aliases = no_libvirt };
const struct vw_source_options *const vw_vm_unbuilt_options = &no_libvirt_options;
#endif

const void *vw_vm_source_config(const struct vw_vm_env *env, const struct vw_vm_source_ops *ops)
{
	for (size_t i = 0; env && i < env->n_configs; i++)
		if (env->configs[i].ops == ops)
			return env->configs[i].config;
	return NULL;
}

struct suppressed {
	char uuid[VW_UUID_LEN];
	uint32_t pid;
	uint64_t start_time;
	bool seen; /* reported by a later source in this round */
};

struct vw_vms {
	struct vw_vm_env env; /* the caller's, with qemu_starts set: what the sources were given */
	struct vw_qemu_starts starts;
	size_t n;
	const struct vw_vm_source_ops *ops[MAX_SOURCES];
	void *state[MAX_SOURCES];
	struct vw_complaint complaint[MAX_SOURCES];
	struct suppressed *supp;
	size_t n_supp, cap_supp;
	struct vw_vm_index index; /* the merged list's UUIDs, built afresh each round */
};

struct vw_vms *vw_vms_open_with(const struct vw_vm_env *env,
				const struct vw_vm_source_ops *const *sources)
{
	struct vw_vms *v;

	if (!env || env->procfs_fd < 0 || !sources) {
		errno = EINVAL;
		return NULL;
	}
	v = calloc(1, sizeof(*v));
	if (!v)
		return NULL;
	v->env = *env;
	v->env.qemu_starts = &v->starts;
	for (size_t i = 0; sources[i] && v->n < MAX_SOURCES; i++) {
		int r = sources[i]->open(&v->env, &v->state[v->n]);

		if (r < 0) {
			vw_info("vm: source %s unavailable: %s", sources[i]->name, strerror(-r));
			continue;
		}
		v->ops[v->n++] = sources[i];
	}
	if (v->n == 0) { /* a registry of nothing would list no VM, silently, forever */
		free(v);
		errno = ENODEV;
		return NULL;
	}
	return v;
}

struct vw_vms *vw_vms_open(const struct vw_vm_env *env)
{
	return vw_vms_open_with(env, vw_vm_sources);
}

void vw_vms_close(struct vw_vms *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->n; i++)
		v->ops[i]->close(v->state[i]);
	free(v->supp);
	vw_vm_index_free(&v->index);
	vw_qemu_starts_free(&v->starts);
	free(v);
}

/* What a preferred source did not know, from a later one. */
static void fill(struct vw_vm_info *dst, const struct vw_vm_info *src)
{
	if (!dst->qemu_pid && src->qemu_pid && src->state != VW_VM_SHUTOFF) {
		dst->qemu_pid = src->qemu_pid;
		dst->qemu_start_time = src->qemu_start_time;
	}
	if (!dst->name[0])
		memcpy(dst->name, src->name, sizeof(src->name));
	if (!dst->hypervisor[0])
		memcpy(dst->hypervisor, src->hypervisor, sizeof(src->hypervisor));
	if (!dst->vcpus)
		dst->vcpus = src->vcpus;
	if (!dst->n_pci_hostdev) {
		memcpy(dst->pci_hostdev, src->pci_hostdev, sizeof(src->pci_hostdev));
		dst->n_pci_hostdev = src->n_pci_hostdev;
	}
	if (!dst->n_mdev) {
		memcpy(dst->mdev, src->mdev, sizeof(src->mdev));
		dst->n_mdev = src->n_mdev;
	}
	if (!dst->owner.platform[0])
		dst->owner = src->owner;
	if (!dst->pod_uid[0])
		memcpy(dst->pod_uid, src->pod_uid, sizeof(src->pod_uid));
}

static struct suppressed *find_supp(struct vw_vms *v, const struct vw_vm_info *vm)
{
	for (size_t i = 0; i < v->n_supp; i++) {
		struct suppressed *s = &v->supp[i];

		if (strcmp(s->uuid, vm->uuid) == 0 && s->pid == vm->qemu_pid &&
		    s->start_time == vm->qemu_start_time)
			return s;
	}
	return NULL;
}

static void suppress(struct vw_vms *v, const struct vw_vm_info *vm)
{
	if (!vm->qemu_pid || find_supp(v, vm) || v->n_supp >= MAX_SUPPRESSED ||
	    vw_array_grow((void **)&v->supp, sizeof(*v->supp), v->n_supp, &v->cap_supp) < 0)
		return;
	v->supp[v->n_supp++] = (struct suppressed){ .pid = vm->qemu_pid,
						    .start_time = vm->qemu_start_time,
						    .seen = true };
	memcpy(v->supp[v->n_supp - 1].uuid, vm->uuid, VW_UUID_LEN);
}

/* One VM of a source into (*out)[0..*n), grown as it needs (capacity *cap); (*out)[0..first_n)
 * came from the preferred source. vm may be (*out)[*n] itself with *cap > *n (the first list,
 * filtered where it lies: never grown). v->index holds (*out)[0..*n)'s UUIDs, each VM found
 * there, not by a search through them (quadratic in the VMs). -ENOMEM, with what was merged so
 * far kept. */
static int merge_one(struct vw_vms *v, struct vw_vm_info **out, size_t *n, size_t *cap,
		     const struct vw_vm_info *vm, size_t first_n)
{
	ptrdiff_t at = vw_vm_index_find(&v->index, *out, vm->uuid);
	struct vw_vm_info *have = at >= 0 ? &(*out)[at] : NULL;
	struct suppressed *s = v->n_supp ? find_supp(v, vm) : NULL;

	if (s) {
		s->seen = vm->state != VW_VM_SHUTOFF;
		return 0;
	}
	if (have) {
		/* Stopped by a preferred source while this one still sees the process. */
		if (have - *out < (ptrdiff_t)first_n && have->state == VW_VM_SHUTOFF &&
		    vm->state != VW_VM_SHUTOFF && vm->qemu_pid &&
		    (!have->qemu_pid || have->qemu_pid == vm->qemu_pid))
			suppress(v, vm);
		fill(have, vm);
		return 0;
	}
	if (vw_array_grow((void **)out, sizeof(**out), *n, cap) < 0)
		return -ENOMEM;
	if (&(*out)[*n] != vm) /* (the first list, in place: not onto itself) */
		(*out)[*n] = *vm;
	if (vw_vm_index_add(&v->index, *out, *n) < 0)
		return -ENOMEM;
	(*n)++;
	return 0;
}

/* A whole list (m VMs at vms, which may be *out itself with *n 0 and *cap m) merged. */
static int merge(struct vw_vms *v, struct vw_vm_info **out, size_t *n, size_t *cap,
		 const struct vw_vm_info *vms, size_t m, size_t first_n)
{
	for (size_t j = 0; j < m; j++) {
		int r = merge_one(v, out, n, cap, &vms[j], first_n);

		if (r < 0)
			return r;
	}
	return 0;
}

/* A source that hands its VMs one by one (list_each), merged as they come. */
struct merging {
	struct vw_vms *v;
	struct vw_vm_info **out;
	size_t *n, *cap, first_n;
	int err; /* the merge's own failure, not the source's */
};

static int merge_each(void *ctx, const struct vw_vm_info *vm)
{
	struct merging *m = ctx;

	m->err = merge_one(m->v, m->out, m->n, m->cap, vm, m->first_n);
	return m->err;
}

/* Source i's listing failed (r < 0) or worked: said once, its end said. */
static void listed(struct vw_vms *v, size_t i, int r)
{
	if (r < 0)
		vw_complain(&v->complaint[i], VW_LOG_WARN, "vm: %s: list: %s", v->ops[i]->name,
			    strerror(-r));
	else if (v->complaint[i].active)
		vw_release(&v->complaint[i], VW_LOG_INFO, "vm: %s: listing again", v->ops[i]->name);
}

/* Source i's whole list in *ret (NULL, 0 where it failed: said once). */
static void list_whole(struct vw_vms *v, size_t i, struct vw_vm_info **ret, size_t *ret_n)
{
	int r = v->ops[i]->list(v->state[i], ret, ret_n);

	listed(v, i, r);
	if (r < 0) {
		*ret = NULL;
		*ret_n = 0;
	}
}

/*
 * Every source's list, merged. The merged list is the first source's own, filtered where it
 * lies (not copied), and grows only for VMs that one lacks (usually none: the process scan
 * finds the QEMUs libvirt runs); a later source that hands its VMs one by one (the process
 * scan) is merged as it lists, with no list of its own, each other's list made only when it is
 * merged and freed after; the merged list is cut to what it holds at the end: the daemon keeps
 * it a whole interval, and at 100 VMs each list of struct vw_vm_info is ~230 KiB. The sources
 * list in their order, each once a round.
 */
static int list_round(struct vw_vms *v, struct vw_vm_info **ret, size_t *ret_n)
{
	struct vw_vm_info *out = NULL;
	size_t n = 0, cap = 0, n_first = 0, count = 0;
	int r;

	vw_qemu_starts_clear(&v->starts); /* each round reads each QEMU's start time afresh */
	list_whole(v, 0, &out, &count);
	cap = out ? count : 1; /* a source's list is never NULL when it lists */
	if (!out)
		out = malloc(sizeof(*out));
	r = out ? 0 : -ENOMEM;
	if (r == 0) {
		vw_vm_index_clear(&v->index);
		for (size_t i = 0; i < v->n_supp; i++)
			v->supp[i].seen = false;
		r = merge(v, &out, &n, &cap, out, count, 0);
		n_first = n;
		/* The later sources in order, each listed only when merged: one list at a time. */
		for (size_t i = 1; i < v->n && r == 0; i++) {
			_cleanup_free_ struct vw_vm_info *list = NULL;

			if (v->ops[i]->list_each) {
				struct merging m = { v, &out, &n, &cap, n_first, 0 };
				int lr = v->ops[i]->list_each(v->state[i], merge_each, &m);

				r = m.err;
				if (r == 0)
					listed(v, i, lr);
				continue;
			}
			list_whole(v, i, &list, &count);
			r = merge(v, &out, &n, &cap, list, count, n_first);
		}
		/* Forget suppressions whose process no later source reports running any more. */
		for (size_t i = 0; r == 0 && i < v->n_supp;)
			if (v->supp[i].seen)
				i++;
			else
				v->supp[i] = v->supp[--v->n_supp];
	}
	if (r < 0) {
		free(out);
		return r;
	}
	if (n < cap) {
		struct vw_vm_info *fit = realloc(out, (n ? n : 1) * sizeof(*out));

		if (fit)
			out = fit;
	}
	*ret = out;
	*ret_n = n;
	return 0;
}

/* Tell the sources what the round found; true if one woke and would list differently now. */
static bool tell_sources(struct vw_vms *v, size_t n)
{
	bool woke = false;

	for (size_t i = 0; i < v->n; i++)
		if (v->ops[i]->vms_seen)
			woke |= v->ops[i]->vms_seen(v->state[i], n);
	return woke;
}

int vw_vms_list(struct vw_vms *v, struct vw_vm_info **ret, size_t *ret_n)
{
	int r;

	if (!v || !ret || !ret_n)
		return -EINVAL;
	r = list_round(v, ret, ret_n);
	/* A source that woke on this round's VMs (libvirt, at the first QEMU) lists them now:
	 * a VM is never reported by one source for a round and by another the next. */
	if (r == 0 && tell_sources(v, *ret_n)) {
		free(*ret);
		r = list_round(v, ret, ret_n);
	}
	return r;
}

int vw_vms_news_fd(const struct vw_vms *v)
{
	for (size_t i = 0; v && i < v->n; i++) {
		int fd = v->ops[i]->news_fd ? v->ops[i]->news_fd(v->state[i]) : -1;

		if (fd >= 0)
			return fd;
	}
	return -1;
}

bool vw_vms_news(struct vw_vms *v)
{
	bool news = false;

	for (size_t i = 0; v && i < v->n; i++) {
		int fd = v->ops[i]->news_fd ? v->ops[i]->news_fd(v->state[i]) : -1;
		uint64_t count;

		/* (an eventfd: one read takes the count and empties it) */
		news |= fd >= 0 && read(fd, &count, sizeof(count)) == (ssize_t)sizeof(count);
	}
	return news;
}

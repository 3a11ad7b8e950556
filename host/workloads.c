/* SPDX-License-Identifier: Apache-2.0 */
#include "workloads.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "energy.h"
#include "fileio.h"
#include "log.h"
#include "macro.h"
#include "perf_counters.h"
#include "publish.h"
#include "ratio.h"
#include "workloads_priv.h"

struct vw_workloads *vw_workloads_new(const struct vw_workloads_opts *opts)
{
	struct vw_workloads *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->o = *opts;
	if (w->o.max_terminated == 0)
		w->o.max_terminated = 500;
	return w;
}

void vw_workloads_free(struct vw_workloads *w)
{
	if (!w)
		return;
	free(w->procs);
	free(w->conts);
	free(w->pods);
	free(w->vms);
	free(w->weights);
	free(w->out);
	free(w->members);
	free(w->grp_start);
	free(w);
}

/* ---- Discovery ---- */

/* /proc/PID/stat: ppid (field 4) and starttime (field 22), after the parenthesised comm. */
static int read_stat(int procfd, uint32_t tgid, uint32_t *ret_ppid, uint64_t *ret_start)
{
	char rel[32], buf[1024];
	unsigned long long start = 0;
	unsigned ppid = 0;
	const char *p;
	int r;

	snprintf(rel, sizeof(rel), "%u/stat", tgid);
	r = vw_read_file_at(procfd, rel, buf, sizeof(buf), NULL);
	if (r < 0)
		return r;
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %u %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
			 "%*s %*s %*s %llu", &ppid, &start) != 2)
		return -EINVAL;
	*ret_ppid = ppid;
	*ret_start = start;
	return 0;
}

static void read_exe(int procfd, uint32_t tgid, char *buf, size_t size)
{
	char rel[32];
	ssize_t n;

	snprintf(rel, sizeof(rel), "%u/exe", tgid);
	n = readlinkat(procfd, rel, buf, size - 1);
	buf[n > 0 ? (size_t)n : 0] = '\0';
}

static int find_pod(struct vw_workloads *w, const struct vw_pod_info *pi)
{
	for (size_t i = 0; i < w->n_pods; i++)
		if (strcmp(w->pods[i].info.uid, pi->uid) == 0) {
			w->pods[i].terminated = false; /* a new process of a known pod */
			return (int)i;
		}
	if (vw_array_grow((void **)&w->pods, sizeof(*w->pods), w->n_pods, &w->cap_pods) < 0)
		return -1;
	w->pods[w->n_pods] = (struct wl_pod){ .info = *pi };
	return (int)w->n_pods++;
}

static int find_container(struct vw_workloads *w, const struct vw_cgroup_match *m)
{
	struct vw_pod_info pi;
	char name[254] = "";
	int pod = -1;

	for (size_t i = 0; i < w->n_conts; i++)
		if (strcmp(w->conts[i].id, m->container_id) == 0) {
			w->conts[i].terminated = false; /* a new process of a known container */
			if (w->conts[i].pod >= 0)
				w->pods[w->conts[i].pod].terminated = false;
			return (int)i;
		}
	if (w->o.podmeta &&
	    vw_podmeta_by_container(w->o.podmeta, m->container_id, &pi, name, sizeof(name)) == 0)
		pod = find_pod(w, &pi);
	if (!name[0])
		(void)vw_ctrmeta_name(w->o.ctrmeta, m->runtime, m->container_id, name, sizeof(name));
	if (vw_array_grow((void **)&w->conts, sizeof(*w->conts), w->n_conts, &w->cap_conts) < 0)
		return -1;
	w->conts[w->n_conts] = (struct wl_container){ .runtime = m->runtime, .pod = pod };
	snprintf(w->conts[w->n_conts].id, sizeof(w->conts[0].id), "%s", m->container_id);
	snprintf(w->conts[w->n_conts].name, sizeof(w->conts[0].name), "%s", name);
	return (int)w->n_conts++;
}

static int add_proc(struct vw_workloads *w, const struct vw_proc_cpu *p)
{
	struct vw_cgroup_match m;
	struct wl_proc *np;
	uint32_t ppid = 0;
	uint64_t start = p->start_time;

	if (vw_array_grow((void **)&w->procs, sizeof(*w->procs), w->n_procs, &w->cap_procs) < 0)
		return -ENOMEM;
	np = &w->procs[w->n_procs];
	*np = (struct wl_proc){ .tgid = p->tgid, .container = -1, .vm = -1 };
	memcpy(np->comm, p->comm, sizeof(np->comm));
	np->comm[VW_COMM_LEN - 1] = '\0';
	if (read_stat(w->o.procfs_fd, p->tgid, &ppid, &start) == 0 && !np->start_time)
		np->start_time = p->start_time ? p->start_time : start;
	np->kernel = p->tgid == 2 || ppid == 2 || p->tgid == 0;
	if (!np->kernel)
		read_exe(w->o.procfs_fd, p->tgid, np->exe, sizeof(np->exe));
	if (!np->kernel && vw_workload_read_pid(w->o.procfs_fd, p->tgid, &m) == 0 && m.container)
		np->container = find_container(w, &m);
	/* Before the baseline, CPU time already spent is not this interval's. */
	np->last_cpu_ns = w->baseline_taken ? 0 : p->cpu_ns;
	w->n_procs++;
	return 0;
}

static int cmp_proc(const void *a, const void *b)
{
	const struct wl_proc *x = a, *y = b;

	if (x->tgid != y->tgid)
		return x->tgid < y->tgid ? -1 : 1;
	/* A terminated entry sorts before the live one with the same (reused) PID. */
	return (int)y->terminated - (int)x->terminated;
}

static struct wl_proc *lookup_live(struct vw_workloads *w, uint32_t tgid, size_t sorted)
{
	size_t lo = 0, hi = sorted;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (w->procs[mid].tgid < tgid)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < sorted && w->procs[lo].tgid == tgid; lo++)
		if (!w->procs[lo].terminated)
			return &w->procs[lo];
	return NULL;
}

static void terminate_proc(struct wl_proc *p)
{
	p->terminated = true;
	p->final_gen = 0;
}

static uint64_t fwd(uint64_t prev, uint64_t cur)
{
	return cur >= prev ? cur - prev : 0;
}

static void take_counters(struct wl_proc *p, const struct vw_proc_counters *c)
{
	p->delta_hw = (struct vw_proc_counters){
		.cycles = fwd(p->last_hw.cycles, c->cycles),
		.instructions = fwd(p->last_hw.instructions, c->instructions),
		.cache_misses = fwd(p->last_hw.cache_misses, c->cache_misses),
	};
	p->last_hw = *c;
}

/* Merge the snapshot into the process table; sets each process's delta_ns. */
static int merge_snapshot(struct vw_workloads *w, const struct vw_cpu_snapshot *snap)
{
	size_t sorted = w->n_procs;

	for (size_t i = 0; i < w->n_procs; i++) {
		w->procs[i].delta_ns = 0;
		w->procs[i].delta_hw = (struct vw_proc_counters){ 0 };
		w->procs[i].seen = false;
	}
	w->hw_available = snap->counters ? snap->hw_available : 0;
	for (size_t i = 0; i < snap->n_procs; i++) {
		const struct vw_proc_cpu *s = &snap->procs[i];
		struct wl_proc *p = lookup_live(w, s->tgid, sorted);

		if (p && s->start_time && p->start_time && s->start_time != p->start_time) {
			terminate_proc(p); /* the PID was reused */
			p = NULL;
		}
		if (!p) {
			int r = add_proc(w, s);

			if (r < 0)
				return r;
			p = &w->procs[w->n_procs - 1];
		}
		p->seen = true;
		p->delta_ns = fwd(p->last_cpu_ns, s->cpu_ns);
		p->last_cpu_ns = s->cpu_ns;
		p->cpu_ns += p->delta_ns;
		if (snap->counters)
			take_counters(p, &snap->counters[i]);
		if (s->exited)
			terminate_proc(p);
	}
	qsort(w->procs, w->n_procs, sizeof(*w->procs), cmp_proc);
	return 0;
}

/* Every snapshot lists every live process (cpu_account.h): one missing from it has gone. */
static void reap_vanished(struct vw_workloads *w)
{
	for (size_t i = 0; i < w->n_procs; i++)
		if (!w->procs[i].seen && !w->procs[i].terminated)
			terminate_proc(&w->procs[i]);
}

/* ---- VMs ---- */

static int find_vm(struct vw_workloads *w, const char *uuid)
{
	for (size_t i = 0; i < w->n_vms; i++)
		if (strcmp(w->vms[i].uuid, uuid) == 0)
			return (int)i;
	return -1;
}

int vw_workloads_set_vms(struct vw_workloads *w, const struct vw_vm_info *vms, size_t n)
{
	for (size_t i = 0; i < w->n_vms; i++)
		w->vms[i].listed = false;
	for (size_t i = 0; i < n; i++) {
		const struct vw_vm_info *vi = &vms[i];
		int k;

		if (vi->state == VW_VM_SHUTOFF || !vi->uuid[0])
			continue;
		k = find_vm(w, vi->uuid);
		if (k < 0) {
			if (vw_array_grow((void **)&w->vms, sizeof(*w->vms), w->n_vms, &w->cap_vms) < 0)
				return -ENOMEM;
			k = (int)w->n_vms++;
			w->vms[k] = (struct wl_vm){ 0 };
			snprintf(w->vms[k].uuid, sizeof(w->vms[k].uuid), "%s", vi->uuid);
		}
		/* Same UUID, maybe a new QEMU: the counters carry on. */
		snprintf(w->vms[k].name, sizeof(w->vms[k].name), "%s", vi->name);
		snprintf(w->vms[k].channel_path, sizeof(w->vms[k].channel_path), "%s",
			 vi->channel_path);
		snprintf(w->vms[k].hypervisor, sizeof(w->vms[k].hypervisor), "%s",
			 vi->hypervisor[0] ? vi->hypervisor : "kvm");
		w->vms[k].vcpus = vi->vcpus;
		w->vms[k].qemu_pid = vi->qemu_pid;
		w->vms[k].qemu_start_time = vi->qemu_start_time;
		w->vms[k].listed = true;
		w->vms[k].terminated = false;
		w->vms[k].hidden = false;
		w->vms[k].publications_gone = 0;
	}
	return 0;
}

size_t vw_workloads_vm_energy(const struct vw_workloads *w, struct vw_vm_energy *out, size_t max)
{
	size_t n = 0;

	for (size_t k = 0; k < w->n_vms && n < max; k++) {
		const struct wl_vm *v = &w->vms[k];
		struct vw_vm_energy *e = &out[n];

		if (!v->listed)
			continue;
		*e = (struct vw_vm_energy){ 0 };
		snprintf(e->uuid, sizeof(e->uuid), "%s", v->uuid);
		snprintf(e->channel_path, sizeof(e->channel_path), "%s", v->channel_path);
		for (int z = 0; z < VW_ZONE__COUNT; z++) {
			if (!w->present[z])
				continue;
			e->zones[e->n_zones++] = (struct vw_vm_energy_zone){
				.zone = (enum vw_zone)z,
				.idle_uj = v->z[z].uj[M_IDLE],
				.active_uj = v->z[z].uj[M_ACTIVE],
				.idle_w = vw_energy_watts(v->z[z].interval[M_IDLE], w->dt_ns),
				.active_w = vw_energy_watts(v->z[z].interval[M_ACTIVE], w->dt_ns),
			};
		}
		n++;
	}
	return n;
}

/* vhost-<qemu pid> kernel threads do the VM's network and block I/O. */
static uint32_t vhost_owner(const struct wl_proc *p)
{
	unsigned long pid;
	char *end;

	if (strncmp(p->comm, "vhost-", 6) != 0)
		return 0;
	pid = strtoul(p->comm + 6, &end, 10);
	return *end == '\0' && pid > 0 && pid < UINT32_MAX ? (uint32_t)pid : 0;
}

static void map_vms(struct vw_workloads *w)
{
	for (size_t i = 0; i < w->n_procs; i++) {
		struct wl_proc *p = &w->procs[i];
		uint32_t owner = vhost_owner(p);

		if (p->terminated && !p->delta_ns)
			continue;
		p->vm = -1;
		for (size_t k = 0; k < w->n_vms; k++) {
			const struct wl_vm *v = &w->vms[k];
			bool same = v->qemu_pid == p->tgid &&
				    (!v->qemu_start_time || !p->start_time ||
				     v->qemu_start_time == p->start_time);

			if (v->listed && v->qemu_pid && (same || owner == v->qemu_pid)) {
				p->vm = (int)k;
				break;
			}
		}
	}
}

/* ---- Attribution ---- */

static int scratch(struct vw_workloads *w, size_t n, size_t groups)
{
	if (groups + 1 > w->cap_groups) {
		free(w->grp_start);
		w->grp_start = calloc(groups + 2, sizeof(size_t));
		w->cap_groups = w->grp_start ? groups + 1 : 0;
		if (!w->grp_start)
			return -ENOMEM;
	}
	if (n <= w->cap_scratch)
		return 0;
	free(w->weights);
	free(w->out);
	free(w->members);
	w->weights = calloc(n, sizeof(uint64_t));
	w->out = calloc(n, sizeof(uint64_t));
	w->members = calloc(n, sizeof(size_t));
	w->cap_scratch = w->weights && w->out && w->members ? n : 0;
	return w->cap_scratch ? 0 : -ENOMEM;
}

static void give(struct vw_workloads *w, struct wl_proc *p, enum vw_zone z, int m, uint64_t uj)
{
	p->z[z].uj[m] = vw_energy_add(p->z[z].uj[m], uj);
	p->z[z].interval[m] += uj;
	w->totals.processes[z][m] += uj;
	if (p->vm >= 0) {
		struct wl_vm *v = &w->vms[p->vm];

		v->z[z].uj[m] = vw_energy_add(v->z[z].uj[m], uj);
		v->z[z].interval[m] += uj;
		w->totals.vms[z][m] += uj;
	}
	if (p->container < 0) {
		w->totals.uncontained[z][m] += uj;
		return;
	}
	struct wl_container *c = &w->conts[p->container];

	c->z[z].uj[m] = vw_energy_add(c->z[z].uj[m], uj);
	c->z[z].interval[m] += uj;
	w->totals.containers[z][m] += uj;
	if (c->pod >= 0) {
		struct wl_pod *pod = &w->pods[c->pod];

		pod->z[z].uj[m] = vw_energy_add(pod->z[z].uj[m], uj);
		pod->z[z].interval[m] += uj;
		w->totals.pods[z][m] += uj;
	}
}

/*
 * The reservation group a process's idle share comes through: its pod (0 .. n_pods-1), else
 * its VM (n_pods + VM index), else -1. A KubeVirt VM's QEMU is in a pod: the pod's requests
 * are the VM's reservation, so it is counted once, through the pod.
 */
static int group_of(const struct vw_workloads *w, const struct wl_proc *p)
{
	int pod = p->container >= 0 ? w->conts[p->container].pod : -1;

	if (pod >= 0)
		return pod;
	return p->vm >= 0 ? (int)w->n_pods + p->vm : -1;
}

/* The usage that divides zone z: CPU time, or a hardware counter where it fits (Kepler v0.7:
 * instructions for package and core, cache misses for dram) and the snapshot has it. */
static uint64_t key_delta(const struct vw_workloads *w, const struct wl_proc *p, enum vw_zone z)
{
	switch (vw_split_key_for_zone(z, w->hw_available)) {
	case VW_SPLIT_INSTRUCTIONS:
		return p->delta_hw.instructions;
	case VW_SPLIT_CACHE_MISSES:
		return p->delta_hw.cache_misses;
	case VW_SPLIT_CPU_TIME:
	default:
		return p->delta_ns;
	}
}

/* Group the processes by reservation group once per interval (a counting sort), so each
 * group's split walks its own members only. */
static void build_groups(struct vw_workloads *w)
{
	size_t ng = w->n_pods + w->n_vms;

	memset(w->grp_start, 0, (ng + 2) * sizeof(size_t));
	for (size_t i = 0; i < w->n_procs; i++) {
		int g = group_of(w, &w->procs[i]);

		if (g >= 0)
			w->grp_start[g + 2]++;
	}
	for (size_t g = 0; g < ng; g++)
		w->grp_start[g + 2] += w->grp_start[g + 1];
	for (size_t i = 0; i < w->n_procs; i++) {
		int g = group_of(w, &w->procs[i]);

		if (g >= 0)
			w->members[w->grp_start[g + 1]++] = i;
	}
	/* grp_start[g] .. grp_start[g + 1] now delimit group g. */
}

/* Split `uj` over `n` processes (indices in idx, or all processes when idx is NULL) by their
 * key; equally among live ones when none ran. Returns what could not be given. */
static uint64_t split_among(struct vw_workloads *w, const size_t *idx, size_t n, enum vw_zone z,
			    int m, uint64_t uj)
{
	uint64_t rest = 0, any = 0;

	for (size_t k = 0; k < n; k++) {
		w->weights[k] = key_delta(w, &w->procs[idx ? idx[k] : k], z);
		any |= w->weights[k];
	}
	if (!any && idx)
		for (size_t k = 0; k < n; k++)
			w->weights[k] = !w->procs[idx[k]].terminated;
	(void)vw_ratio_split(uj, w->weights, n, w->out, &rest);
	for (size_t k = 0; k < n; k++)
		if (w->out[k])
			give(w, &w->procs[idx ? idx[k] : k], z, m, w->out[k]);
	return rest;
}

/* Split among every process (grp == -2) or the members of one reservation group. */
static uint64_t split_over(struct vw_workloads *w, int grp, enum vw_zone z, int m, uint64_t uj)
{
	if (grp == -2)
		return split_among(w, NULL, w->n_procs, z, m, uj);
	return split_among(w, w->members + w->grp_start[grp],
			   w->grp_start[grp + 1] - w->grp_start[grp], z, m, uj);
}

static int attribute_idle(struct vw_workloads *w, enum vw_zone z, uint64_t idle)
{
	size_t ng = w->n_pods + w->n_vms;
	_cleanup_free_ uint64_t *reserve = calloc(ng + 1, sizeof(uint64_t));
	_cleanup_free_ uint64_t *grp_idle = calloc(ng + 1, sizeof(uint64_t));
	uint64_t rest = 0, any = 0;

	if (!reserve || !grp_idle)
		return -ENOMEM;
	/* Pods reserve their CPU requests, VMs their vCPUs, of host CPUs x 1000. */
	for (size_t i = 0; i < w->n_pods; i++)
		reserve[i] = w->pods[i].live ? w->pods[i].info.cpu_request_millis : 0;
	for (size_t k = 0; k < w->n_vms; k++)
		reserve[w->n_pods + k] = w->vms[k].live ? (uint64_t)w->vms[k].vcpus * 1000 : 0;
	for (size_t i = 0; i < ng; i++)
		any |= reserve[i];
	if (!any) {
		/* Nothing reserved: idle follows CPU time, as active does. */
		w->totals.unattributed[z][M_IDLE] += split_over(w, -2, z, M_IDLE, idle);
		return 0;
	}
	(void)vw_ratio_split_idle(idle, reserve, NULL, ng, (uint64_t)w->o.host_cpus * 1000,
				  grp_idle, &rest);
	for (size_t i = 0; i < ng; i++)
		if (grp_idle[i])
			rest += split_over(w, (int)i, z, M_IDLE, grp_idle[i]);
	w->totals.unattributed[z][M_IDLE] += rest;
	return 0;
}

static void count_live(struct vw_workloads *w)
{
	for (size_t i = 0; i < w->n_conts; i++)
		w->conts[i].live = 0, w->conts[i].delta_ns = 0;
	for (size_t i = 0; i < w->n_pods; i++)
		w->pods[i].live = 0;
	for (size_t k = 0; k < w->n_vms; k++)
		w->vms[k].live = 0;
	for (size_t i = 0; i < w->n_procs; i++) {
		struct wl_proc *p = &w->procs[i];

		if (p->vm >= 0 && (!p->terminated || p->delta_ns)) {
			w->vms[p->vm].live++;
			w->vms[p->vm].cpu_ns += p->delta_ns;
		}

		if (p->container < 0)
			continue;
		w->conts[p->container].delta_ns += p->delta_ns;
		w->conts[p->container].cpu_ns += p->delta_ns;
		/* A process that ran this interval counts, even if it has just exited. */
		if (!p->terminated || p->delta_ns) {
			w->conts[p->container].live++;
			if (w->conts[p->container].pod >= 0)
				w->pods[w->conts[p->container].pod].live++;
		}
	}
}

static void clear_acc(struct acc *z)
{
	for (int i = 0; i < VW_ZONE__COUNT; i++)
		z[i].interval[M_ACTIVE] = z[i].interval[M_IDLE] = 0;
}

static void clear_intervals(struct vw_workloads *w)
{
	for (size_t i = 0; i < w->n_procs; i++)
		clear_acc(w->procs[i].z);
	for (size_t i = 0; i < w->n_conts; i++)
		clear_acc(w->conts[i].z);
	for (size_t i = 0; i < w->n_pods; i++)
		clear_acc(w->pods[i].z);
	for (size_t k = 0; k < w->n_vms; k++)
		clear_acc(w->vms[k].z);
}

/* Containers with no live process, and pods with no live container, are terminated. */
static void settle_states(struct vw_workloads *w)
{
	for (size_t i = 0; i < w->n_conts; i++)
		if (!w->conts[i].terminated && w->conts[i].live == 0) {
			w->conts[i].terminated = true;
			w->conts[i].final_gen = 0;
		}
	for (size_t i = 0; i < w->n_pods; i++)
		if (!w->pods[i].terminated && w->pods[i].live == 0) {
			w->pods[i].terminated = true;
			w->pods[i].final_gen = 0;
		}
	for (size_t k = 0; k < w->n_vms; k++)
		if (!w->vms[k].terminated && !w->vms[k].listed) {
			w->vms[k].terminated = true;
			w->vms[k].final_gen = 0;
		}
}

int vw_workloads_update(struct vw_workloads *w, const struct vw_cpu_snapshot *snap,
			const struct vw_zone_energy zones[VW_ZONE__COUNT], uint64_t dt_ns)
{
	int r = 0;

	if (snap) {
		r = merge_snapshot(w, snap);
		if (r < 0)
			return r;
		reap_vanished(w);
	} else {
		/* No CPU snapshot this interval: nobody ran, as far as we know; nobody ended. */
		for (size_t i = 0; i < w->n_procs; i++)
			w->procs[i].delta_ns = 0, w->procs[i].delta_hw = (struct vw_proc_counters){ 0 };
	}
	if (!w->baseline_taken) {
		w->baseline_taken = true;
		return 0;
	}
	r = scratch(w, w->n_procs, w->n_pods + w->n_vms);
	if (r < 0)
		return r;
	clear_intervals(w);
	map_vms(w);
	count_live(w);
	build_groups(w);
	w->dt_ns = dt_ns;
	for (int z = 0; z < VW_ZONE__COUNT; z++) {
		if (!zones[z].present)
			continue;
		w->present[z] = true;
		w->totals.unattributed[z][M_ACTIVE] +=
			split_over(w, -2, (enum vw_zone)z, M_ACTIVE, zones[z].active_uj);
		r = zones[z].idle_to_node ? -EPERM : attribute_idle(w, (enum vw_zone)z, zones[z].idle_uj);
		if (r < 0) /* the interval's idle is kept whole as unattributed */
			w->totals.unattributed[z][M_IDLE] += zones[z].idle_uj;
	}
	settle_states(w);
	return 0;
}

int vw_workloads_interval(struct vw_workloads *w, const struct vw_cpu_accountant *cpu,
			  const struct vw_zone_energy zones[VW_ZONE__COUNT], uint64_t dt_ns,
			  struct vw_complaint *complaint)
{
	struct vw_cpu_snapshot snap = { 0 };
	int r = cpu->ops->read(cpu->state, &snap);

	if (r < 0)
		vw_complain(complaint, VW_LOG_WARN, "cpu: %s snapshot failed: %s", cpu->ops->name,
			    strerror(-r));
	else
		vw_release(complaint, VW_LOG_INFO, "cpu: %s snapshots work again", cpu->ops->name);
	r = vw_workloads_update(w, r < 0 ? NULL : &snap, zones, dt_ns);
	if (r < 0)
		vw_complain(complaint, VW_LOG_WARN, "workloads: update failed: %s", strerror(-r));
	return r;
}

/* ---- Retention ---- */

/* Whether a terminated entry may go: its final value has been served (or the backlog of
 * unscraped terminated entries is over the cap). Stamps the generation on first call. */
static bool expired(bool terminated, uint64_t *final_gen, uint64_t gen, uint64_t served,
		    bool over_cap)
{
	if (!terminated)
		return false;
	if (*final_gen == 0) {
		*final_gen = gen;
		return false;
	}
	return served >= *final_gen || over_cap;
}

static size_t count_terminated(const struct vw_workloads *w)
{
	size_t n = 0;

	for (size_t i = 0; i < w->n_procs; i++)
		n += w->procs[i].terminated;
	return n;
}

static void drop_procs(struct vw_workloads *w, uint64_t gen, uint64_t served)
{
	bool over = count_terminated(w) > w->o.max_terminated;
	size_t j = 0;

	for (size_t i = 0; i < w->n_procs; i++)
		if (!expired(w->procs[i].terminated, &w->procs[i].final_gen, gen, served, over))
			w->procs[j++] = w->procs[i];
	w->n_procs = j;
}

/*
 * A parent (container, pod) goes once expired and no remaining child refers to it. `keep`
 * says per parent whether it stays; children's indices are remapped through it. Returns the
 * new parent count; the caller compacts its array with the same map.
 */
static int remap(const bool *keep, size_t n_parents, int *child_idx, size_t n_children,
		 size_t child_stride, int *map)
{
	int j = 0;

	for (size_t i = 0; i < n_parents; i++)
		map[i] = keep[i] ? j++ : -1;
	for (size_t i = 0; i < n_children; i++) {
		int *idx = (int *)((char *)child_idx + i * child_stride);

		if (*idx >= 0)
			*idx = map[*idx];
	}
	return j;
}

static int drop_containers(struct vw_workloads *w, uint64_t gen, uint64_t served)
{
	_cleanup_free_ bool *keep = calloc(w->n_conts + 1, sizeof(bool));
	_cleanup_free_ int *map = calloc(w->n_conts + 1, sizeof(int));
	size_t j = 0;

	if (!keep || !map)
		return -ENOMEM;
	for (size_t i = 0; i < w->n_procs; i++)
		if (w->procs[i].container >= 0)
			keep[w->procs[i].container] = true;
	for (size_t i = 0; i < w->n_conts; i++)
		keep[i] |= !expired(w->conts[i].terminated, &w->conts[i].final_gen, gen, served,
				    false);
	(void)remap(keep, w->n_conts, w->n_procs ? &w->procs[0].container : NULL, w->n_procs,
		    sizeof(*w->procs), map);
	for (size_t i = 0; i < w->n_conts; i++)
		if (keep[i])
			w->conts[j++] = w->conts[i];
	w->n_conts = j;
	return 0;
}

static int drop_pods(struct vw_workloads *w, uint64_t gen, uint64_t served)
{
	_cleanup_free_ bool *keep = calloc(w->n_pods + 1, sizeof(bool));
	_cleanup_free_ int *map = calloc(w->n_pods + 1, sizeof(int));
	size_t j = 0;

	if (!keep || !map)
		return -ENOMEM;
	for (size_t i = 0; i < w->n_conts; i++)
		if (w->conts[i].pod >= 0)
			keep[w->conts[i].pod] = true;
	for (size_t i = 0; i < w->n_pods; i++)
		keep[i] |= !expired(w->pods[i].terminated, &w->pods[i].final_gen, gen, served,
				    false);
	(void)remap(keep, w->n_pods, w->n_conts ? &w->conts[0].pod : NULL, w->n_conts,
		    sizeof(*w->conts), map);
	for (size_t i = 0; i < w->n_pods; i++)
		if (keep[i])
			w->pods[j++] = w->pods[i];
	w->n_pods = j;
	return 0;
}

/* Gone VMs stop being exported once served, and are forgotten after a grace period when no
 * remembered process refers to them. */
static int drop_vms(struct vw_workloads *w, uint64_t gen, uint64_t served)
{
	_cleanup_free_ bool *keep = calloc(w->n_vms + 1, sizeof(bool));
	_cleanup_free_ int *map = calloc(w->n_vms + 1, sizeof(int));
	size_t j = 0;

	if (!keep || !map)
		return -ENOMEM;
	for (size_t i = 0; i < w->n_procs; i++)
		if (w->procs[i].vm >= 0)
			keep[w->procs[i].vm] = true;
	for (size_t k = 0; k < w->n_vms; k++) {
		struct wl_vm *v = &w->vms[k];

		if (expired(v->terminated, &v->final_gen, gen, served, false))
			v->hidden = true;
		if (v->terminated)
			v->publications_gone++;
		keep[k] |= !v->terminated || v->publications_gone <= VW_VM_GRACE_PUBLICATIONS;
	}
	(void)remap(keep, w->n_vms, w->n_procs ? &w->procs[0].vm : NULL, w->n_procs,
		    sizeof(*w->procs), map);
	for (size_t k = 0; k < w->n_vms; k++)
		if (keep[k])
			w->vms[j++] = w->vms[k];
	w->n_vms = j;
	return 0;
}

void vw_workloads_published(struct vw_workloads *w, uint64_t gen, uint64_t served_gen)
{
	drop_procs(w, gen, served_gen);
	(void)drop_vms(w, gen, served_gen);
	/* On ENOMEM nothing is dropped this time; the next publication tries again. */
	if (drop_containers(w, gen, served_gen) == 0)
		(void)drop_pods(w, gen, served_gen);
}

void vw_workloads_totals(const struct vw_workloads *w, struct vw_workloads_totals *ret)
{
	*ret = w->totals;
}

size_t vw_workloads_n_processes(const struct vw_workloads *w)
{
	return w->n_procs;
}

size_t vw_workloads_n_vms(const struct vw_workloads *w)
{
	return w->n_vms;
}

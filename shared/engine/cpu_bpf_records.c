/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The bpf accountant's record reader (cpu_bpf_records.h). At open the seed iterator gives every
 * older thread's runtime: summed per process, the bases subtracted from what later reads find,
 * so values count from open. A read takes the per-process map (time of exited threads, exit
 * marks), then the live records (every live thread's runtime, as the scheduler counts it). The
 * live pass can only miss what moved into the map meanwhile, never count it twice: a read can
 * be a slice short, and the history layer holds the value until the next read catches up.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_bpf_records.h"
#include "cpu_time.h"
#include "macro.h"
#include "sort.h"

static void comm_copy(char dst[VW_COMM_LEN], const char src[VW_BPF_COMM_LEN])
{
	_Static_assert(VW_COMM_LEN == VW_BPF_COMM_LEN, "comm sizes");
	memcpy(dst, src, VW_COMM_LEN);
	dst[VW_COMM_LEN - 1] = '\0';
}

static uint64_t ticks(uint64_t ns, uint64_t ns_per_tick)
{
	return ns / (ns_per_tick ? ns_per_tick : 1);
}

int vw_bpf_rec_add_proc(struct vw_cpu_table *t, const void *key, const void *val,
			uint64_t ns_per_tick)
{
	struct vw_bpf_proc v;
	struct vw_proc_cpu *p = vw_cpu_table_new_proc(t);

	if (!p)
		return -ENOMEM;
	memcpy(&v, val, sizeof(v));
	memcpy(&p->tgid, key, sizeof(p->tgid));
	p->cgroup_id = v.cgroup_id;
	p->cpu_ns = v.dead_ns;
	p->start_time = ticks(v.start_ns, ns_per_tick);
	comm_copy(p->comm, v.comm);
	p->exited = v.exited != 0;
	return 0;
}

static int cmp_rec(const void *a, const void *b)
{
	const struct vw_bpf_task_rec *x = a, *y = b;
	bool xl = x->pid == x->tgid, yl = y->pid == y->tgid;

	if (x->tgid != y->tgid)
		return x->tgid < y->tgid ? -1 : 1;
	return xl != yl ? (xl ? -1 : 1) : 0; /* the group leader first */
}

int vw_bpf_bases_parse(void *buf, size_t len, uint64_t ns_per_tick, struct vw_bpf_bases *ret)
{
	struct vw_bpf_task_rec *recs = buf;
	size_t n = len / sizeof(*recs);

	*ret = (struct vw_bpf_bases){ 0 };
	if (len % sizeof(*recs))
		return -EBADMSG;
	vw_sort_runs(recs, n, sizeof(*recs), cmp_rec);
	ret->v = calloc(n ? n : 1, sizeof(*ret->v));
	if (!ret->v)
		return -ENOMEM;
	for (size_t i = 0, j; i < n; i = j) {
		struct vw_bpf_base *b = &ret->v[ret->n++];

		*b = (struct vw_bpf_base){ .tgid = recs[i].tgid,
					   .start_time = ticks(recs[i].start_ns, ns_per_tick) };
		for (j = i; j < n && recs[j].tgid == recs[i].tgid; j++)
			b->ns += recs[j].runtime_ns;
		if (b->ns == VW_BPF_BASE_GONE) /* the marker: a base a nanosecond short */
			b->ns--;
	}
	return 0;
}

void vw_bpf_bases_free(struct vw_bpf_bases *b)
{
	free(b->v);
	*b = (struct vw_bpf_bases){ 0 };
}

/*
 * The entry of t->procs[*at..n) for (tgid, start), NULL if none, for tgids asked in ascending
 * order: the sorted table is walked alongside the sorted records (a binary search each was
 * ~90 instructions a process), *at left on the first entry of tgid or above.
 */
static const struct vw_proc_cpu *walk_to(const struct vw_cpu_table *t, size_t n, size_t *at,
					 uint32_t tgid, uint64_t start)
{
	while (*at < n && t->procs[*at].tgid < tgid)
		(*at)++;
	for (size_t k = *at; k < n && t->procs[k].tgid == tgid; k++)
		if (t->procs[k].start_time == start)
			return &t->procs[k];
	return NULL;
}

/* Live records: their time since open goes to their process (created here when no thread of it
 * has exited yet). t is sorted. */
static int add_live(struct vw_cpu_table *t, struct vw_bpf_task_rec *recs, size_t n,
		    uint64_t ns_per_tick)
{
	size_t n_sorted = t->n_procs, at = 0;

	/* The walk's come in task-list (creation) order: a run of PIDs per wrap of pid_max. */
	vw_sort_runs(recs, n, sizeof(*recs), cmp_rec);
	for (size_t i = 0, j; i < n; i = j) {
		const struct vw_bpf_task_rec *lead = &recs[i];
		uint64_t start = ticks(lead->start_ns, ns_per_tick), runtime = 0;
		const struct vw_proc_cpu *found;
		struct vw_proc_cpu *p;

		for (j = i; j < n && recs[j].tgid == lead->tgid; j++)
			runtime += recs[j].runtime_ns;
		found = walk_to(t, n_sorted, &at, lead->tgid, start);
		if (found && found->exited)
			continue; /* cannot be: the iterator skips exiting threads */
		p = found ? &t->procs[found - t->procs] : vw_cpu_table_new_proc(t);
		if (!p)
			return -ENOMEM;
		p->tgid = lead->tgid;
		p->start_time = start;
		p->cpu_ns += runtime;
		p->cgroup_id = lead->cgroup_id;
		p->kind = lead->flags & VW_BPF_REC_KTHREAD ? VW_PROC_KIND_KTHREAD : VW_PROC_KIND_USER;
		comm_copy(p->comm, lead->comm);
	}
	return 0;
}

static int cmp_base(uint32_t tgid, uint64_t start, const struct vw_bpf_base *b)
{
	if (tgid != b->tgid)
		return tgid < b->tgid ? -1 : 1;
	return start < b->start_time ? -1 : start > b->start_time;
}

/*
 * Values from open: each process of the sorted table less its base. A value below its base (a
 * thread that exited between the map's read and the live pass is in neither) reads 0 here,
 * and the history layer keeps what the last read reported. An exited process's base goes with
 * its report.
 */
static void bases_apply(struct vw_bpf_bases *bs, struct vw_cpu_table *t)
{
	struct vw_bpf_base *base = bs->v;
	size_t j = 0, n = 0;

	for (size_t i = 0; i < t->n_procs && j < bs->n; i++) {
		struct vw_proc_cpu *p = &t->procs[i];
		int c = -1;

		while (j < bs->n && (c = cmp_base(p->tgid, p->start_time, &base[j])) > 0)
			j++;
		if (c != 0 || base[j].ns == VW_BPF_BASE_GONE)
			continue;
		p->cpu_ns = p->cpu_ns > base[j].ns ? p->cpu_ns - base[j].ns : 0;
		if (p->exited) {
			base[j].ns = VW_BPF_BASE_GONE;
			bs->n_gone++;
		}
	}
	if (bs->n_gone < 64 || bs->n_gone < bs->n / 2)
		return;
	for (size_t i = 0; i < bs->n; i++)
		if (base[i].ns != VW_BPF_BASE_GONE)
			base[n++] = base[i];
	bs->n = n;
	bs->n_gone = 0;
}

int vw_bpf_rec_finish(struct vw_cpu_table *t, void *live, size_t len, struct vw_bpf_bases *bases,
		      uint64_t ns_per_tick)
{
	int r;

	if (len % sizeof(struct vw_bpf_task_rec))
		return -EBADMSG;
	vw_cpu_table_sort(t);
	r = add_live(t, live, len / sizeof(struct vw_bpf_task_rec), ns_per_tick);
	if (r < 0)
		return r;
	vw_cpu_table_sort(t);
	bases_apply(bases, t);
	return 0;
}

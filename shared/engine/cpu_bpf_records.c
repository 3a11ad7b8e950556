/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The bpf accountant's record reader (cpu_bpf_records.h). At open the seed iterator gives every
 * older thread's runtime: summed per process, the bases subtracted from what later reads find,
 * so values count from open. A read takes the per-process map (time of exited threads, exit
 * marks: the picture of it the exits ring's events keep, vw_bpf_exits_*), then the live records (every live thread's runtime, as the scheduler counts it). The
 * live pass can only miss what moved into the map meanwhile, never count it twice: a read can
 * be a slice short, and the history layer holds the value until the next read catches up.
 * The live records may come from the live set (vw_bpf_live_*: the full walk's records, updated
 * by the ran walks'), one sorted record per live process.
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
	/* An exited group (its threads all freed): its kind is known (and its start), so the
	 * registry need not read /proc/PID/stat of a process that arrives already gone. Only
	 * then: one known from the map alone before that (a free never seen, a ghost) keeps kind
	 * unknown, which is what the ghost check looks up. */
	if (v.exited)
		p->kind = v.flags & VW_BPF_PROC_KTHREAD ? VW_PROC_KIND_KTHREAD : VW_PROC_KIND_USER;
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

/* The records' order, as one integer: tgid, then the group leader first. */
static inline uint64_t rec_key(const struct vw_bpf_task_rec *r)
{
	return (uint64_t)r->tgid << 1 | (r->pid != r->tgid);
}

/* Runs a[0..mid) and a[mid..n), each in order, merged in place (the shorter one set aside):
 * the generic merge's, with the key compared inline and records copied whole. */
static int merge_recs(struct vw_bpf_task_rec *a, size_t mid, size_t n)
{
	size_t nl = mid, nr = n - mid, i, j, k;
	struct vw_bpf_task_rec *tmp;

	if (!nl || !nr || rec_key(&a[mid - 1]) <= rec_key(&a[mid]))
		return 0;
	tmp = malloc((nl < nr ? nl : nr) * sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	if (nl <= nr) {
		memcpy(tmp, a, nl * sizeof(*a));
		for (i = 0, j = mid, k = 0; i < nl && j < n; k++)
			a[k] = rec_key(&a[j]) < rec_key(&tmp[i]) ? a[j++] : tmp[i++];
		memcpy(&a[k], &tmp[i], (nl - i) * sizeof(*a));
	} else {
		memcpy(tmp, &a[mid], nr * sizeof(*a));
		for (i = nl, j = nr, k = n; i > 0 && j > 0;) {
			--k;
			a[k] = rec_key(&tmp[j - 1]) < rec_key(&a[i - 1]) ? a[--i] : tmp[--j];
		}
		memcpy(a, tmp, j * sizeof(*a));
	}
	free(tmp);
	return 0;
}

#define RADIX_BITS 12
#define RADIX_MIN 64 /* fewer records: sorted where they lie */
#define MERGE_MAX 1 /* descents (runs less one) merged where they lie; more: the radix sort */

/*
 * The records' order, *ret: NULL where they are in order as they lie (or were sorted there),
 * else their indices in order (malloc'd). The walk's come in task-list (creation) order, one
 * ascending run of PIDs per wrap of pid_max, and on a busy host with a small pid_max many runs
 * (more than vw_sort_runs() merges before it falls back to qsort, at ~400 instructions a
 * record). Two runs are merged where they lie (~25 instructions a record, fewer where the
 * wrapped run is short); more, an LSD radix sort of (key, index) pairs, two passes for PIDs
 * below 2^23, costs the same whatever the order (~60; measured on 10,300 records in fully
 * interleaved runs, it matches one merge of two and beats the merges of three or more). Keys
 * of 32 bits or more (no PID is) go to the generic sort.
 */
static int rec_order(struct vw_bpf_task_rec *recs, size_t n, uint32_t **ret)
{
	uint64_t prev = 0, max = 0, *a, *b;
	size_t desc[MERGE_MAX + 1], n_desc = 0;
	unsigned passes = 0;

	*ret = NULL;
	for (size_t i = 0; i < n; i++) {
		uint64_t k = rec_key(&recs[i]);

		if (k < prev && n_desc <= MERGE_MAX)
			desc[n_desc++] = i;
		prev = k;
		max |= k;
	}
	if (n_desc == 0)
		return 0;
	if (n_desc <= MERGE_MAX) {
		for (size_t r = 0; r < n_desc; r++)
			if (merge_recs(recs, desc[r], r + 1 < n_desc ? desc[r + 1] : n) < 0) {
				qsort(recs, n, sizeof(*recs), cmp_rec); /* no memory for a copy */
				break;
			}
		return 0;
	}
	if (n < RADIX_MIN || max >> 32 || n > UINT32_MAX) {
		vw_sort_runs(recs, n, sizeof(*recs), cmp_rec);
		return 0;
	}
	a = malloc(2 * n * sizeof(*a));
	if (!a)
		return -ENOMEM;
	b = a + n;
	for (size_t i = 0; i < n; i++)
		a[i] = rec_key(&recs[i]) << 32 | i;
	for (uint64_t m = max; m; m >>= RADIX_BITS)
		passes++;
	for (unsigned p = 0, shift = 32; p < passes; p++, shift += RADIX_BITS) {
		uint32_t count[1u << RADIX_BITS] = { 0 }, sum = 0; /* n fits: checked above */
		uint64_t *swap;

		for (size_t i = 0; i < n; i++)
			count[(a[i] >> shift) & ((1u << RADIX_BITS) - 1)]++;
		for (size_t d = 0; d < (1u << RADIX_BITS); d++) {
			uint32_t c = count[d];

			count[d] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			b[count[(a[i] >> shift) & ((1u << RADIX_BITS) - 1)]++] = a[i];
		swap = a, a = b, b = swap;
	}
	if (a > b) /* the pairs ended in the upper half: the allocation starts at b */
		memcpy(b, a, n * sizeof(*a)), a = b;
	for (size_t i = 0; i < n; i++) { /* each index written behind the pair it came from */
		uint32_t idx = (uint32_t)a[i];

		memcpy((char *)a + i * sizeof(idx), &idx, sizeof(idx));
	}
	*ret = (uint32_t *)a;
	return 0;
}

static inline int cmp_key(uint32_t tgid, uint64_t start, uint32_t tgid2, uint64_t start2)
{
	if (tgid != tgid2)
		return tgid < tgid2 ? -1 : 1;
	return start < start2 ? -1 : start > start2;
}

/* A process's value from open: less its base, found by bases' cursor *j (processes come in
 * order). A value below its base (a thread that exited between the map's read and the live
 * pass is in neither) reads 0, and the history layer keeps what the last read reported. An
 * exited process's base goes with its report. */
static void base_apply(struct vw_bpf_bases *bs, size_t *j, struct vw_proc_cpu *p)
{
	struct vw_bpf_base *b = bs->v;
	int c = -1;

	while (*j < bs->n && (c = cmp_key(p->tgid, p->start_time, b[*j].tgid, b[*j].start_time)) > 0)
		(*j)++;
	if (c != 0 || b[*j].ns == VW_BPF_BASE_GONE)
		return;
	p->cpu_ns = p->cpu_ns > b[*j].ns ? p->cpu_ns - b[*j].ns : 0;
	if (p->exited) {
		b[*j].ns = VW_BPF_BASE_GONE;
		bs->n_gone++;
	}
}

/* The bases of reported exits dropped, once they are many. */
static void bases_compact(struct vw_bpf_bases *bs)
{
	size_t n = 0;

	if (bs->n_gone < 64 || bs->n_gone < bs->n / 2)
		return;
	for (size_t i = 0; i < bs->n; i++)
		if (bs->v[i].ns != VW_BPF_BASE_GONE)
			bs->v[n++] = bs->v[i];
	bs->n = n;
	bs->n_gone = 0;
}

/*
 * One pass: the map's entries (t, sorted, moved to the end of its array) and the sorted live
 * records, grouped by process, merged by (tgid, start time) into t from its start: a live
 * process's time since open goes to its entry (made when no thread of it has exited yet),
 * its kind, cgroup and comm its group leader's (the group's first record); then its base is
 * subtracted. The writes never overtake the entries still to read: the map's entries start
 * after a slot for each process of the records, and each entry written took a map entry or a
 * process's records.
 */
static int merge_live(struct vw_cpu_table *t, const struct vw_bpf_task_rec *live,
		      const uint32_t *ord, size_t n, struct vw_bpf_bases *bases,
		      uint64_t ns_per_tick)
{
	size_t m = t->n_procs, i = 0, r = 0, k = 0, jb = 0, groups = n;
	struct vw_proc_cpu *map;
	int e;

	if (n + m + 1 > t->cap_procs) /* the task/ iterator's: one a thread, fewer processes */
		for (size_t x = 1; x < n; x++)
			groups -= live[ord ? ord[x] : x].tgid == live[ord ? ord[x - 1] : x - 1].tgid;
	e = vw_cpu_table_reserve(t, groups + m + 1); /* + 1: an array even when both are empty */
	if (e < 0)
		return e;
	map = t->procs + groups;
	if (m)
		memmove(map, t->procs, m * sizeof(*map));
	while (i < m || r < n) {
		const struct vw_bpf_task_rec *lead = r < n ? &live[ord ? ord[r] : r] : NULL;
		uint64_t start = lead ? ticks(lead->start_ns, ns_per_tick) : 0, runtime = 0;
		/* !lead first: no record left means i < m; c > 0 or c == 0 then has a lead */
		int c = !lead ? -1 : i == m ? 1 : cmp_key(map[i].tgid, map[i].start_time,
							  lead->tgid, start);
		struct vw_proc_cpu p;

		if (c <= 0)
			p = map[i++];
		else
			p = (struct vw_proc_cpu){ .tgid = lead->tgid, .start_time = start };
		if (c >= 0) {
			for (; r < n && live[ord ? ord[r] : r].tgid == lead->tgid; r++)
				runtime += live[ord ? ord[r] : r].runtime_ns;
			if (!p.exited) { /* an exited one cannot be: the iterator skips exiting threads */
				p.cpu_ns += runtime;
				p.cgroup_id = lead->cgroup_id;
				p.kind = lead->flags & VW_BPF_REC_KTHREAD ? VW_PROC_KIND_KTHREAD
									  : VW_PROC_KIND_USER;
				comm_copy(p.comm, lead->comm);
			}
		}
		base_apply(bases, &jb, &p);
		t->procs[k++] = p;
	}
	t->n_procs = k;
	t->in_order = true;
	bases_compact(bases);
	return 0;
}

int vw_bpf_rec_finish(struct vw_cpu_table *t, void *live, size_t len, struct vw_bpf_bases *bases,
		      uint64_t ns_per_tick)
{
	size_t n = len / sizeof(struct vw_bpf_task_rec);
	_cleanup_free_ uint32_t *ord = NULL;
	int r;

	if (len % sizeof(struct vw_bpf_task_rec))
		return -EBADMSG;
	vw_cpu_table_sort(t);
	r = rec_order(live, n, &ord);
	if (r == 0)
		r = merge_live(t, live, ord, n, bases, ns_per_tick);
	return r;
}

/* ---- the live set ---- */

/* A ran walk's record applied (user space only: the BPF side never sets it). */
#define REC_TAKEN (1u << 31)

static int live_reserve(struct vw_bpf_live *c, size_t n)
{
	struct vw_bpf_task_rec *v;
	size_t cap;

	if (n <= c->cap)
		return 0;
	cap = n + n / 8 + 64;
	v = reallocarray(c->v, cap, sizeof(*v));
	if (!v)
		return -ENOMEM;
	c->v = v;
	c->cap = cap;
	return 0;
}

int vw_bpf_live_set(struct vw_bpf_live *c, void *buf, size_t len)
{
	struct vw_bpf_task_rec *recs = buf;
	size_t n = len / sizeof(*recs);
	_cleanup_free_ uint32_t *ord = NULL;
	int r;

	if (len % sizeof(*recs))
		return -EBADMSG;
	r = live_reserve(c, n);
	if (r == 0)
		r = rec_order(recs, n, &ord);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		c->v[i] = recs[ord ? ord[i] : i];
	c->n = n;
	return 0;
}

static int cmp_tgid_live_first(const void *a, const void *b)
{
	const struct vw_bpf_task_rec *x = a, *y = b;
	bool xg = x->flags & VW_BPF_REC_GONE, yg = y->flags & VW_BPF_REC_GONE;

	if (x->tgid != y->tgid)
		return x->tgid < y->tgid ? -1 : 1;
	return xg != yg ? (xg ? 1 : -1) : 0;
}

/* The first index in c->v whose tgid is >= tgid. */
static size_t live_lower(const struct vw_bpf_live *c, uint32_t tgid)
{
	return VW_LOWER_BOUND(c->v, 0, c->n, tgid, tgid);
}

int vw_bpf_live_update(struct vw_bpf_live *c, void *buf, size_t len)
{
	struct vw_bpf_task_rec *u = buf;
	size_t n = len / sizeof(*u), ins = 0, del = 0, k;
	int r;

	if (len % sizeof(*u))
		return -EBADMSG;
	qsort(u, n, sizeof(*u), cmp_tgid_live_first);
	for (size_t i = 0; i < n; i++)
		if (!u[i].tgid || (i && u[i].tgid == u[i - 1].tgid))
			u[i].flags |= REC_TAKEN; /* a second record of one tgid: the first wins */
		else if (!(u[i].flags & VW_BPF_REC_GONE))
			ins++;
	r = live_reserve(c, c->n + ins); /* at most: most of them replace a record */
	if (r < 0)
		return r;
	ins = 0;
	for (size_t i = 0; i < n; i++) {
		size_t at;

		if (u[i].flags & REC_TAKEN)
			continue;
		at = live_lower(c, u[i].tgid);
		if (at < c->n && c->v[at].tgid == u[i].tgid) {
			if (u[i].flags & VW_BPF_REC_GONE) {
				c->v[at].flags |= REC_TAKEN; /* to drop */
				del++;
			} else {
				c->v[at] = u[i];
			}
			u[i].flags |= REC_TAKEN;
		} else if (!(u[i].flags & VW_BPF_REC_GONE)) {
			ins++;
		} else {
			u[i].flags |= REC_TAKEN;
		}
	}
	if (del) {
		k = 0;
		for (size_t i = 0; i < c->n; i++)
			if (!(c->v[i].flags & REC_TAKEN))
				c->v[k++] = c->v[i];
		c->n = k;
	}
	if (ins) { /* merged in from the end: the records left in u are in order, new tgids */
		size_t i = c->n, j = n;

		k = c->n + ins;
		c->n = k;
		while (j > 0) {
			const struct vw_bpf_task_rec *x = &u[j - 1];

			if (x->flags & REC_TAKEN) {
				j--;
				continue;
			}
			if (i > 0 && c->v[i - 1].tgid > x->tgid) {
				c->v[--k] = c->v[--i];
				continue;
			}
			c->v[--k] = *x;
			u[--j].flags |= REC_TAKEN;
		}
	}
	return 0;
}

void vw_bpf_live_free(struct vw_bpf_live *c)
{
	free(c->v);
	*c = (struct vw_bpf_live){ 0 };
}

/* ---- the exits ring's picture of the per-process map ---- */

struct vw_bpf_exit_ent {
	uint32_t tgid;
	uint32_t gone; /* forgotten: dropped at the next exits_order() */
	struct vw_bpf_proc v;
};

struct vw_bpf_exit_tomb {
	uint32_t tgid;
	uint32_t gen; /* the drain it was forgotten before */
	uint64_t start_ns;
};

#define TOMB_DRAINS 2u /* drains a tombstone outlives */

static int exits_reserve(struct vw_bpf_exit_ent **v, size_t *cap, size_t n)
{
	struct vw_bpf_exit_ent *p;
	size_t c;

	if (n <= *cap)
		return 0;
	c = n + n / 2 + 16;
	p = reallocarray(*v, c, sizeof(*p));
	if (!p)
		return -ENOMEM;
	*v = p;
	*cap = c;
	return 0;
}

/* By tgid, then dead time: a process's events folded oldest first (the sort may not be stable). */
static int cmp_ev(const void *a, const void *b)
{
	const struct vw_bpf_exit_ev *x = a, *y = b;

	if (x->tgid != y->tgid)
		return x->tgid < y->tgid ? -1 : 1;
	return x->dead_ns < y->dead_ns ? -1 : x->dead_ns > y->dead_ns;
}

static int cmp_tomb(const void *a, const void *b)
{
	const struct vw_bpf_exit_tomb *x = a, *y = b;

	if (x->tgid != y->tgid)
		return x->tgid < y->tgid ? -1 : 1;
	return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

/* The exits of the last two reads, sorted once a drain (appended in table order: a merge). */
static void tombs_order(struct vw_bpf_exits *x)
{
	if (x->tomb_unsorted)
		vw_sort_runs(x->tomb, x->n_tomb, sizeof(*x->tomb), cmp_tomb);
	x->tomb_unsorted = false;
}

static bool tombstoned(const struct vw_bpf_exits *x, uint32_t tgid, uint64_t start_ns)
{
	struct vw_bpf_exit_tomb key = { .tgid = tgid, .start_ns = start_ns };

	return x->n_tomb && bsearch(&key, x->tomb, x->n_tomb, sizeof(key), cmp_tomb);
}

static void ev_to_proc(struct vw_bpf_proc *p, const struct vw_bpf_exit_ev *e)
{
	*p = (struct vw_bpf_proc){ .dead_ns = e->dead_ns, .cgroup_id = e->cgroup_id,
				   .start_ns = e->start_ns };
	memcpy(p->comm, e->comm, sizeof(p->comm));
	p->exited = !!(e->flags & VW_BPF_EXIT_EXITED);
	p->group_dead = !!(e->flags & VW_BPF_EXIT_GROUP_DEAD);
	p->flags = e->flags & VW_BPF_EXIT_KTHREAD ? VW_BPF_PROC_KTHREAD : 0;
}

/* Event e folded into entry *p of the same process: the newest copy's fields (the largest
 * dead_ns; on a tie the later event), the flags that were ever set. */
static void ev_fold(struct vw_bpf_proc *p, const struct vw_bpf_exit_ev *e)
{
	struct vw_bpf_proc n;

	ev_to_proc(&n, e);
	n.exited |= p->exited;
	n.group_dead |= p->group_dead;
	n.flags |= p->flags;
	if (e->dead_ns < p->dead_ns) {
		p->exited = n.exited;
		p->group_dead = n.group_dead;
		p->flags = n.flags;
		return;
	}
	*p = n;
}

static int cmp_ent(const void *a, const void *b)
{
	const struct vw_bpf_exit_ent *x = a, *y = b;

	return x->tgid < y->tgid ? -1 : x->tgid > y->tgid;
}

/* Sorted again after puts (a map's keys come in hash order), forgotten entries dropped. */
static void exits_order(struct vw_bpf_exits *x)
{
	size_t k = 0;

	if (x->unsorted)
		qsort(x->v, x->n, sizeof(*x->v), cmp_ent);
	x->unsorted = false;
	if (!x->n_gone)
		return;
	for (size_t i = 0; i < x->n; i++)
		if (!x->v[i].gone)
			x->v[k++] = x->v[i];
	x->n = k;
	x->n_gone = 0;
}

int vw_bpf_exits_apply(struct vw_bpf_exits *x, void *buf, size_t len)
{
	struct vw_bpf_exit_ev *ev = buf;
	size_t n = len / sizeof(*ev), i = 0, j = 0, k = 0, keep = 0, swap;
	struct vw_bpf_exit_ent *o;
	int r;

	if (len % sizeof(*ev))
		return -EBADMSG;
	x->gen++;
	for (size_t t = 0; t < x->n_tomb; t++)
		if (x->gen - x->tomb[t].gen <= TOMB_DRAINS)
			x->tomb[keep++] = x->tomb[t];
	x->n_tomb = keep;
	tombs_order(x);
	exits_order(x);
	if (!n)
		return 0;
	r = exits_reserve(&x->tmp, &x->cap_tmp, x->n + n);
	if (r < 0)
		return r;
	vw_sort_runs(ev, n, sizeof(*ev), cmp_ev);
	while (i < x->n || j < n) {

		if (j == n || (i < x->n && x->v[i].tgid < ev[j].tgid)) {
			x->tmp[k++] = x->v[i++];
			continue;
		}
		o = &x->tmp[k];
		if (i < x->n && x->v[i].tgid == ev[j].tgid)
			*o = x->v[i++];
		else
			o->tgid = 0; /* none yet */
		for (uint32_t tgid = ev[j].tgid; j < n && ev[j].tgid == tgid; j++) {
			if (tombstoned(x, tgid, ev[j].start_ns))
				continue;
			if (o->tgid && o->v.start_ns == ev[j].start_ns) {
				ev_fold(&o->v, &ev[j]);
				continue;
			}
			/* The first of this process, or of a new one (the old one's entry went
			 * with its report: only user space deletes, and forgets then). */
			o->tgid = tgid;
			o->gone = 0;
			ev_to_proc(&o->v, &ev[j]);
		}
		if (o->tgid)
			k++;
	}
	o = x->v, x->v = x->tmp, x->tmp = o;
	swap = x->cap, x->cap = x->cap_tmp, x->cap_tmp = swap;
	x->n = k;
	return 0;
}

void vw_bpf_exits_reset(struct vw_bpf_exits *x)
{
	x->n = 0;
	x->n_gone = 0;
	x->unsorted = false;
}

int vw_bpf_exits_put(struct vw_bpf_exits *x, const void *key, const void *val)
{
	struct vw_bpf_exit_ent e = { 0 };
	int r;

	memcpy(&e.tgid, key, sizeof(e.tgid));
	memcpy(&e.v, val, sizeof(e.v));
	tombs_order(x);
	if (tombstoned(x, e.tgid, e.v.start_ns))
		return 0;
	r = exits_reserve(&x->v, &x->cap, x->n + 1);
	if (r < 0)
		return r;
	if (x->n && x->v[x->n - 1].tgid >= e.tgid)
		x->unsorted = true;
	x->v[x->n++] = e;
	return 0;
}

int vw_bpf_exits_emit(struct vw_bpf_exits *x, struct vw_cpu_table *t, uint64_t ns_per_tick)
{
	exits_order(x);
	for (size_t i = 0; i < x->n; i++) {
		int r = vw_bpf_rec_add_proc(t, &x->v[i].tgid, &x->v[i].v, ns_per_tick);

		if (r < 0)
			return r;
	}
	return 0;
}

void vw_bpf_exits_forget(struct vw_bpf_exits *x, uint32_t tgid, uint64_t start_time,
			 uint64_t ns_per_tick)
{
	struct vw_bpf_exit_ent key = { .tgid = tgid }, *at;
	struct vw_bpf_exit_tomb *tb;

	if (x->unsorted)
		exits_order(x);
	at = x->n ? bsearch(&key, x->v, x->n, sizeof(key), cmp_ent) : NULL;
	if (!at || at->gone || ticks(at->v.start_ns, ns_per_tick) != start_time)
		return;
	if (x->n_tomb == x->cap_tomb) {
		size_t c = x->cap_tomb ? 2 * x->cap_tomb : 64;

		tb = reallocarray(x->tomb, c, sizeof(*tb));
		if (tb) {
			x->tomb = tb;
			x->cap_tomb = c;
		}
	}
	if (x->n_tomb < x->cap_tomb) { /* else a late event may bring it back: as before the ring */
		x->tomb[x->n_tomb++] = (struct vw_bpf_exit_tomb){ .tgid = tgid, .gen = x->gen,
								 .start_ns = at->v.start_ns };
		x->tomb_unsorted = true;
	}
	at->gone = 1; /* dropped at the next order: no move per exit */
	x->n_gone++;
}

const void *vw_bpf_exits_find(struct vw_bpf_exits *x, uint32_t tgid)
{
	struct vw_bpf_exit_ent key = { .tgid = tgid }, *at;

	exits_order(x);
	at = x->n ? bsearch(&key, x->v, x->n, sizeof(key), cmp_ent) : NULL;
	return at ? &at->v : NULL;
}

uint32_t vw_bpf_exits_tgid_at(struct vw_bpf_exits *x, size_t i)
{
	exits_order(x);
	return i < x->n ? x->v[i].tgid : 0;
}

void vw_bpf_exits_free(struct vw_bpf_exits *x)
{
	free(x->v);
	free(x->tmp);
	free(x->tomb);
	*x = (struct vw_bpf_exits){ 0 };
}

/* SPDX-License-Identifier: Apache-2.0 */
/* CPU accountant registry, and the snapshot table both accountants build their reads in. */
#include "cpu_account.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu_account_priv.h"
#include "log.h"
#include "sort.h"

const struct vw_cpu_account_ops *const vw_cpu_accountants[] = {
#if VW_HAVE_BPF
	&vw_cpu_bpf,
#endif
	&vw_cpu_procfs,
	NULL,
};

static bool unavailable(int r)
{
	return r == -ENODEV || r == -EPERM || r == -EOPNOTSUPP || r == -ENOPKG;
}

int vw_cpu_accountant_open(const struct vw_cpu_env *env, const char *name,
			   struct vw_cpu_accountant *ret)
{
	char why[256] = "";
	size_t used = 0;
	int first_err = 0;

	for (size_t i = 0; vw_cpu_accountants[i]; i++) {
		const struct vw_cpu_account_ops *ops = vw_cpu_accountants[i];
		void *state = NULL;
		int r;

		if (name && strcmp(name, ops->name) != 0)
			continue;
		r = ops->open(env, &state);
		if (r == 0) {
			vw_info("cpu: accounting CPU time with %s%s%s", ops->name,
				used ? ", not " : "", why);
			*ret = (struct vw_cpu_accountant){ .ops = ops, .state = state,
							   .skipped_err = first_err };
			return 0;
		}
		if (!unavailable(r))
			vw_warn("cpu: open %s accountant: %s", ops->name, strerror(-r));
		if (used < sizeof(why)) {
			int n = snprintf(why + used, sizeof(why) - used, "%s%s (%s)", used ? ", " : "",
					 ops->name, strerror(-r));

			used += n > 0 ? (size_t)n : 0;
		}
		if (!first_err)
			first_err = r;
	}
	if (!first_err) {
		vw_error("cpu: no CPU accountant named '%s'%s", name ? name : "",
			 name && strcmp(name, "bpf") == 0 ? " (built without BPF)" : "");
		return -ENOENT;
	}
	vw_error("cpu: no CPU accountant works here: %s", why);
	return first_err;
}

void vw_cpu_accountant_close(struct vw_cpu_accountant *a)
{
	if (!a || !a->ops)
		return;
	a->ops->close(a->state);
	*a = (struct vw_cpu_accountant){ 0 };
}

uint64_t vw_cpu_ns_per_tick(void)
{
	long hz = sysconf(_SC_CLK_TCK);

	return hz > 0 ? VW_NSEC_PER_SEC / (uint64_t)hz : VW_NSEC_PER_SEC / 100;
}

struct vw_proc_cpu *vw_cpu_table_new_proc(struct vw_cpu_table *t)
{
	struct vw_proc_cpu *p;

	if (vw_array_grow((void **)&t->procs, sizeof(*t->procs), t->n_procs, &t->cap_procs) < 0)
		return NULL;
	p = &t->procs[t->n_procs++];
	*p = (struct vw_proc_cpu){ 0 };
	t->in_order = false;
	return p;
}

int vw_cpu_table_reserve(struct vw_cpu_table *t, size_t n)
{
	struct vw_proc_cpu *p;

	if (n <= t->cap_procs)
		return 0;
	p = reallocarray(t->procs, n, sizeof(*t->procs));
	if (!p)
		return -ENOMEM;
	t->procs = p;
	t->cap_procs = n;
	return 0;
}

static int cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

static inline int cmp_proc(const void *a, const void *b)
{
	const struct vw_proc_cpu *x = a, *y = b;

	return x->tgid != y->tgid ? cmp_u64(x->tgid, y->tgid) : cmp_u64(x->start_time, y->start_time);
}

/* A read sorts its table where it needs it in order, then vw_cpu_history_finish() once more:
 * a table already in order costs one pass, a sorted part and another appended one merge. */
void vw_cpu_table_sort(struct vw_cpu_table *t)
{
	if (!t->in_order)
		vw_sort_runs(t->procs, t->n_procs, sizeof(*t->procs), cmp_proc);
	t->in_order = true;
}

const struct vw_proc_cpu *vw_cpu_table_find_n(const struct vw_cpu_table *t, size_t n,
					      uint32_t tgid, uint64_t start_time)
{
	struct vw_proc_cpu key = { .tgid = tgid, .start_time = start_time };

	if (!n)
		return NULL;
	return bsearch(&key, t->procs, n, sizeof(*t->procs), cmp_proc);
}

const struct vw_proc_cpu *vw_cpu_table_find(const struct vw_cpu_table *t, uint32_t tgid,
					    uint64_t start_time)
{
	return vw_cpu_table_find_n(t, t->n_procs, tgid, start_time);
}

void vw_cpu_table_clear(struct vw_cpu_table *t)
{
	t->n_procs = 0;
	t->in_order = false;
}

void vw_cpu_table_free(struct vw_cpu_table *t)
{
	free(t->procs);
	*t = (struct vw_cpu_table){ 0 };
}

static inline int cmp_seen(const void *a, const void *b)
{
	const struct vw_proc_seen *x = a, *y = b;

	return x->tgid != y->tgid ? cmp_u64(x->tgid, y->tgid) : cmp_u64(x->start_time, y->start_time);
}

const struct vw_proc_seen *vw_cpu_seen_find(struct vw_cpu_seen seen, uint32_t tgid,
					    uint64_t start_time)
{
	struct vw_proc_seen key = { .tgid = tgid, .start_time = start_time };

	if (!seen.n_procs)
		return NULL;
	return bsearch(&key, seen.procs, seen.n_procs, sizeof(*seen.procs), cmp_seen);
}

int vw_cpu_history_begin(struct vw_cpu_history *h, struct vw_cpu_table **ret)
{
	const struct vw_cpu_table *cur = &h->cur;

	if (h->finished) {
		if (cur->n_procs > h->cap_seen) {
			size_t cap = cur->n_procs + cur->n_procs / 8 + 16;
			struct vw_proc_seen *p = reallocarray(h->seen, cap, sizeof(*p));

			if (!p)
				return -ENOMEM;
			h->seen = p;
			h->cap_seen = cap;
		}
		for (size_t i = 0; i < cur->n_procs; i++) {
			const struct vw_proc_cpu *p = &cur->procs[i];

			h->seen[i] = (struct vw_proc_seen){ .tgid = p->tgid, .exited = p->exited,
							    .kind = p->kind, .quiet = p->quiet,
							    .unchecked = p->unchecked,
							    .start_time = p->start_time,
							    .cpu_ns = p->cpu_ns };
		}
		h->n_seen = cur->n_procs;
		if (h->keep_last) {
			struct vw_cpu_table t = h->last;

			h->last = h->cur;
			h->cur = t;
		}
		h->finished = false;
	}
	vw_cpu_table_clear(&h->cur);
	*ret = &h->cur;
	return 0;
}

struct vw_cpu_seen vw_cpu_history_prev(const struct vw_cpu_history *h)
{
	return (struct vw_cpu_seen){ .procs = h->seen, .n_procs = h->n_seen };
}

void vw_cpu_history_abort(struct vw_cpu_history *h)
{
	vw_cpu_table_clear(&h->cur);
	h->finished = false;
}

/* Both in order (the previous read's is an earlier finish's): one walk of the two, not a
 * search each. */
void vw_cpu_history_finish(struct vw_cpu_history *h, struct vw_cpu_snapshot *ret)
{
	struct vw_cpu_table *cur = &h->cur;
	const struct vw_proc_seen *prev = h->seen;
	size_t n = 0, j = 0;

	vw_cpu_table_sort(cur);
	for (size_t i = 0; i < cur->n_procs; i++) {
		struct vw_proc_cpu *p = &cur->procs[i];
		const struct vw_proc_seen *was = NULL;
		int c = -1;

		while (j < h->n_seen &&
		       (c = prev[j].tgid != p->tgid ? cmp_u64(prev[j].tgid, p->tgid)
						    : cmp_u64(prev[j].start_time, p->start_time)) < 0)
			j++;
		if (j < h->n_seen && c == 0)
			was = &prev[j];
		if (was && was->exited)
			continue; /* reported last time */
		if (was && was->cpu_ns > p->cpu_ns)
			p->cpu_ns = was->cpu_ns;
		if (n != i) /* once one was dropped */
			cur->procs[n] = *p;
		n++;
	}
	cur->n_procs = n;
	h->finished = true;
	*ret = (struct vw_cpu_snapshot){ .procs = cur->procs, .n_procs = cur->n_procs };
}

void vw_cpu_history_free(struct vw_cpu_history *h)
{
	vw_cpu_table_free(&h->cur);
	vw_cpu_table_free(&h->last);
	free(h->seen);
	*h = (struct vw_cpu_history){ 0 };
}

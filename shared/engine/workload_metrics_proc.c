/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The process level of the workload render (workload_metrics.c renders the other levels and
 * calls this one): the top N processes by energy, chosen in one pass, their Kepler label values,
 * and their series (energy in each zone, CPU seconds) with those labels escaped once a render.
 * Apart from the other levels: it alone ranks, caches labels between renders and builds its
 * pieces ahead, and workload_gpu.c ranks and labels its processes through it too.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "workloads_priv.h"

/* ---- Processes (top N by energy) ---- */

static uint64_t proc_energy(const struct wl_proc *p)
{
	uint64_t e = 0;

	for (size_t k = 0; k < p->n_z; k++)
		e += p->z[k].uj[M_ACTIVE] + p->z[k].uj[M_IDLE];
	return e;
}

struct ranked {
	uint64_t energy;
	size_t idx;
};

static int cmp_energy_desc(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;

	if (x->energy != y->energy)
		return x->energy > y->energy ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Sift h[i] down the heap h[0..n) whose root sorts last of all (cmp_energy_desc). */
static void sift_down(struct ranked *h, size_t n, size_t i)
{
	struct ranked t;

	for (;;) {
		size_t l = 2 * i + 1, m = i;

		if (l < n && cmp_energy_desc(&h[l], &h[m]) > 0)
			m = l;
		if (l + 1 < n && cmp_energy_desc(&h[l + 1], &h[m]) > 0)
			m = l + 1;
		if (m == i)
			return;
		t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

/*
 * The top k of the processes by energy (ties: the lower index), in order, through one pass: a
 * heap of the k best so far, whose root (the worst of them) most processes fail to beat, then
 * a heapsort of those k. O(n log k) time and k entries of memory: a full sort of 10,000 processes
 * to keep 50 was 5 % of the daemon's CPU, and a ranking of all of them (160 KiB zeroed and
 * filled each render) a third of what was left of the ranking.
 */
static inline __attribute__((always_inline)) int
top_procs(const struct vw_workloads *w, uint64_t (*energy)(const struct wl_proc *), bool skip_zero,
	  size_t *order, size_t *ret_n)
{
	size_t k = w->o.process_top_n, n = 0;
	_cleanup_free_ struct ranked *heap = NULL;
	bool heaped = false;

	if (!k || k >= w->n_procs) { /* no limit, or no more processes than it: all, in order */
		for (size_t i = 0; i < w->n_procs; i++)
			if (!w->procs[i].superseded && (!skip_zero || energy(&w->procs[i])))
				order[n++] = i;
		*ret_n = n;
		return 0;
	}
	heap = malloc(k * sizeof(*heap));
	if (!heap)
		return -ENOMEM;
	for (size_t i = 0; i < w->n_procs; i++) {
		struct ranked c = { .energy = energy(&w->procs[i]), .idx = i };

		if ((skip_zero && !c.energy) || w->procs[i].superseded)
			continue;
		if (n < k) { /* the first k, in index order until a (k + 1)-th shows up */
			heap[n++] = c;
			continue;
		}
		if (!heaped) {
			for (size_t j = k / 2; j-- > 0;)
				sift_down(heap, k, j);
			heaped = true;
		}
		/* Better than the worst kept: more energy (on a tie the lower index, which the
		 * kept ones all have: they came first). */
		if (c.energy > heap[0].energy) {
			heap[0] = c;
			sift_down(heap, k, 0);
		}
	}
	if (heaped) /* more than k: the best k, best first (heapsort: the worst kept to the end
		     * in turn; a qsort of them was a sixth of the ranking) */
		for (size_t end = k; end-- > 1;) {
			struct ranked t = heap[0];

			heap[0] = heap[end];
			heap[end] = t;
			sift_down(heap, end, 0);
		}
	for (size_t i = 0; i < n; i++)
		order[i] = heap[i].idx;
	*ret_n = n;
	return 0;
}

int vw_wl_top_procs(const struct vw_workloads *w, uint64_t (*energy)(const struct wl_proc *),
		    bool skip_zero, size_t *order, size_t *ret_n)
{
	return top_procs(w, energy, skip_zero, order, ret_n);
}

/* A PID's decimal digits (what "%u" prints, without printf: five series a process a render). */
static void pid_text(uint32_t pid, char out[16])
{
	char tmp[10];
	size_t n = 0, k = 0;

	do {
		tmp[n++] = (char)('0' + pid % 10);
		pid /= 10;
	} while (pid);
	while (n)
		out[k++] = tmp[--n];
	out[k] = '\0';
}

void vw_wl_proc_labels(const struct vw_workloads *w, struct wl_proc *p, const char *node,
		       const char *zone, struct wl_labels *l)
{
	const struct wl_container *c = p->container >= 0 ? &w->conts[p->container] : NULL;
	const struct wl_vm *vm = p->vm >= 0 ? &w->vms[p->vm] : NULL;

	_Static_assert(sizeof(l->pid) >= 11, "a uint32_t's digits");
	pid_text(p->tgid, l->pid);
	l->v[0] = l->pid;
	l->v[1] = p->comm;
	l->v[2] = vw_wl_proc_exe(w, p); /* read now if it never was */
	l->v[3] = vm ? "vm" : c ? "container" : "regular";
	l->v[4] = vw_wl_state_name(p->terminated);
	l->v[5] = c && vw_wl_in_container(w, p) ? c->id : ""; /* a sole VM's is the VM's alone */
	l->v[6] = vm ? vm->uuid : "";
	l->v[7] = zone ? zone : node;
	l->v[8] = zone ? node : NULL;
	l->v[9] = NULL;
}

/* The processes shown, and each one's labels pid to vm_id found once a render and escaped once
 * (a head piece, from the label cache where it has them: the same in its four families, every
 * zone and every render it is shown); zone and node_name escaped once a render for them all
 * (a tail per zone present). Without shown (no memory, or render_plain), each sample finds and
 * escapes every label. */
struct proc_shown {
	const struct vw_prom_piece *piece; /* NULL: its labels escaped in each sample */
	char pid[16];
	const char *v[7];                  /* pid (in pid), comm, exe, type, state, container_id, vm_id */
};
struct proc_items {
	const size_t *order;
	struct proc_shown *shown;                         /* NULL: none */
	const struct vw_prom_piece *tail[VW_ZONE__COUNT]; /* zone, node_name; NULL: escaped */
};
#define PROC_PIECE_LABELS 7 /* pid, comm, exe, type, state, container_id, vm_id */
#define PROC_PIECES_MAX 512 /* processes shown beyond which no piece is made (1 KiB each) */
#define PROC_STATE_LABEL 4  /* state: what the cpu-seconds family lacks of the piece's labels */
_Static_assert(PROC_PIECE_LABELS + 2 == ARRAY_SIZE(vw_wl_l_proc) - 1,
	       "vw_wl_l_proc: the piece, zone, node");
_Static_assert(PROC_PIECE_LABELS == ARRAY_SIZE(vw_wl_l_proc_sec) - 1,
	       "vw_wl_l_proc_sec: less state, node");

static const struct acc *proc_item(const struct vw_workloads *w, const void *ctx, size_t i,
				   int z, const char *node, struct wl_labels *l)
{
	const struct proc_items *it = ctx;
	struct wl_proc *p = &w->procs[it->order[i]];
	const struct proc_shown *s = it->shown ? &it->shown[i] : NULL;

	if (s) { /* the same values, zone and node_name apart */
		memcpy(l->v, s->v, sizeof(s->v));
		l->v[7] = vw_wl_zone(z);
		l->v[8] = node;
		l->v[9] = NULL;
		l->piece = s->piece;
		l->tail = it->tail[z];
	} else {
		vw_wl_proc_labels(w, p, node, vw_wl_zone(z), l);
	}
	return vw_wl_proc_acc(w, p, z);
}

/* Each shown process's labels, and its head piece from the cache, else made in *own (allocated
 * here, at most PROC_PIECES_MAX of them). */
static void shown_fill(const struct vw_workloads *w, const size_t *order, size_t n,
		       const char *node, struct proc_shown *shown, struct vw_prom_piece **own)
{
	size_t n_own = 0, cap_own = 0;

	for (size_t k = 0; k < n; k++) {
		struct wl_proc *p = &w->procs[order[k]];
		struct proc_shown *s = &shown[k];
		struct wl_labels l;

		vw_wl_proc_labels(w, p, node, NULL, &l);
		memcpy(s->pid, l.pid, sizeof(s->pid));
		memcpy(s->v, l.v, sizeof(s->v));
		s->v[0] = s->pid;
		s->piece = vw_wl_label_cache_piece(w->label_cache, p, vw_wl_l_proc,
						   PROC_PIECE_LABELS, s->v);
		if (s->piece)
			continue;
		if (!*own && n - k <= PROC_PIECES_MAX) { /* the rest at most */
			*own = malloc((n - k) * sizeof(**own));
			cap_own = *own ? n - k : 0;
		}
		if (n_own < cap_own &&
		    vw_prom_piece_set(&(*own)[n_own], vw_wl_l_proc, PROC_PIECE_LABELS, s->v))
			s->piece = &(*own)[n_own++];
	}
}

/* kepler_process_cpu_seconds_total: each shown process's head piece less state (nothing escaped
 * again), then node_name, escaped once. */
static int render_proc_seconds(const struct vw_workloads *w, struct vw_prom_writer *pw,
			       const char *node, const struct vw_metric_family *fam,
			       const struct proc_items *it, size_t n)
{
	const char *tv[] = { "", "", "", "", "", "", node, NULL }; /* pid..vm_id: unused */
	struct vw_prom_piece tail, head;
	bool have_tail = it->shown && vw_prom_piece_set_from(&tail, vw_wl_l_proc_sec, 6, 1, tv);
	int r = vw_prom_family(pw, fam);

	_Static_assert(ARRAY_SIZE(tv) == ARRAY_SIZE(vw_wl_l_proc_sec),
		       "vw_wl_l_proc_sec: a tail's values");
	for (size_t k = 0; r == 0 && k < n; k++) {
		struct wl_proc *p = &w->procs[it->order[k]];
		const struct proc_shown *s = it->shown ? &it->shown[k] : NULL;
		struct wl_labels l;
		const char *v[8];

		if (s) /* found for its energy families */
			memcpy(l.v, s->v, sizeof(s->v));
		else
			vw_wl_proc_labels(w, p, node, "", &l);
		/* pid, comm, exe, type, container_id, vm_id, node_name */
		v[0] = l.v[0], v[1] = l.v[1], v[2] = l.v[2], v[3] = l.v[3];
		v[4] = l.v[5], v[5] = l.v[6], v[6] = node, v[7] = NULL;
		if (s && s->piece &&
		    vw_prom_piece_without(&head, s->piece, vw_wl_l_proc_sec, PROC_STATE_LABEL))
			r = vw_prom_counter_micro_pieces(pw, &head, have_tail ? &tail : NULL, v,
							 p->cpu_ns / 1000);
		else
			r = vw_prom_counter_micro(pw, v, p->cpu_ns / 1000);
	}
	return r < 0 ? r : vw_prom_family_end(pw);
}

int vw_wl_render_processes(const struct vw_workloads *w, struct vw_prom_writer *pw,
			   const char *node, const struct vw_metric_family *energy,
			   const struct vw_metric_family *seconds)
{
	size_t room = w->o.process_top_n ? VW_MIN(w->n_procs, (size_t)w->o.process_top_n)
					 : w->n_procs;
	_cleanup_free_ size_t *order = malloc((room + 1) * sizeof(size_t));
	_cleanup_free_ struct proc_shown *shown = NULL;
	_cleanup_free_ struct vw_prom_piece *own = NULL; /* pieces the cache did not keep */
	struct vw_prom_piece tails[VW_ZONE__COUNT];
	struct proc_items it = { .order = order };
	size_t n = 0;
	/* (the ranking with proc_energy() inlined: a call a process was a third of it) */
	int r = order ? top_procs(w, proc_energy, false, order, &n) : -ENOMEM;

	if (r == 0 && n && !w->render_plain) {
		shown = malloc(n * sizeof(*shown)); /* none: every label found and escaped each sample */
		if (shown)
			shown_fill(w, order, n, node, shown, &own);
		it.shown = shown;
	}
	for (int z = 0; it.shown && z < VW_ZONE__COUNT; z++) {
		/* pid..vm_id unused: "" */
		const char *v[] = { "", "", "", "", "", "", "", vw_wl_zone(z), node, NULL };

		_Static_assert(ARRAY_SIZE(v) == ARRAY_SIZE(vw_wl_l_proc),
			       "vw_wl_l_proc: a tail's values");
		if (w->present[z] && vw_prom_piece_set_from(&tails[z], vw_wl_l_proc,
							    PROC_PIECE_LABELS, 2, v))
			it.tail[z] = &tails[z];
	}
	if (r == 0)
		r = vw_wl_render_level(w, pw, node, energy, VW_WL_IDLE_J + 1, true, n, proc_item,
				       &it);
	if (r == 0)
		r = render_proc_seconds(w, pw, node, seconds, &it, n);
	return r;
}

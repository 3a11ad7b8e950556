/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: the bpf accountant's picture of its per-process map kept from the exits
 * ring (shared/engine/cpu_bpf_records.c, vw_bpf_exits_*), against a model of the map the
 * input drives. Tokens, a byte each and what follows: op % 4 = 0, a change to tgid (1-16) as
 * the exit or free programs make it (more dead time, the group dead, the group exited; a new
 * entry when there is none, with its start), its event appended to the ring in the order the
 * input picks among those not drained (two CPUs may submit in the other order than they
 * added), or lost (ring full); 1, a read: the ring drained, the whole map read (in hash order)
 * where an event was lost, then the exited entries reported and forgotten; 2, a late copy of
 * an entry reported at the last read (a second free that saw the group done); 3, the ghost
 * check finding tgid gone (forgotten, deleted; its events still in the ring dropped).
 * Property, after every read: the picture is the map, entry for entry (tgid, start, dead time,
 * exit and kind), sorted, once each; nothing forgotten comes back.
 */
#include <stdlib.h>
#include <string.h>

#include "cpu_account_priv.h"
#include "cpu_bpf_records.h"
#include "cpu_time.h"
#include "fuzz_common.h"

#define TGIDS 16
#define RING 256

struct ment {
	bool used;
	bool seen; /* in the picture at the last read: the ghost check looks only at those */
	uint64_t start, dead, cgroup;
	uint32_t flags; /* VW_BPF_EXIT_* */
};

static struct {
	struct ment m[TGIDS + 1];
	struct vw_bpf_exit_ev ring[RING], stale[TGIDS + 1];
	size_t n_ring, n_stale;
	bool lost;
	uint64_t clock;
} f;

static const uint8_t *in;
static size_t left;

static uint8_t byte(void)
{
	if (!left)
		return 0;
	left--;
	return *in++;
}

static struct vw_bpf_exit_ev snap(uint32_t tgid, const struct ment *e)
{
	struct vw_bpf_exit_ev ev = { .dead_ns = e->dead, .cgroup_id = e->cgroup,
				     .start_ns = e->start, .tgid = tgid, .flags = e->flags };

	memcpy(ev.comm, "fuzz", 5);
	return ev;
}

/* An event into the ring at a place among the undrained ones, or lost. */
static void submit(const struct vw_bpf_exit_ev *ev, uint8_t how)
{
	size_t at;

	if (how % 8 == 7 || f.n_ring == RING) {
		f.lost = true;
		return;
	}
	at = f.n_ring - (how % 4 < f.n_ring ? how % 4 : f.n_ring);
	memmove(&f.ring[at + 1], &f.ring[at], (f.n_ring - at) * sizeof(*ev));
	f.ring[at] = *ev;
	f.n_ring++;
}

static void change(void)
{
	uint8_t a = byte(), b = byte();
	uint32_t tgid = a % TGIDS + 1;
	struct ment *e = &f.m[tgid];

	if (!e->used) {
		*e = (struct ment){ .used = true, .start = ++f.clock * 1000 + b % 7 };
	} else if (e->flags & VW_BPF_EXIT_EXITED) {
		return; /* done: no program changes it again */
	}
	e->dead += b;
	e->cgroup = a >> 4;
	if (b & 0x40)
		e->flags |= VW_BPF_EXIT_GROUP_DEAD | (a & 0x80 ? VW_BPF_EXIT_KTHREAD : 0);
	if ((e->flags & VW_BPF_EXIT_GROUP_DEAD) && (b & 0x20))
		e->flags |= VW_BPF_EXIT_EXITED;
	struct vw_bpf_exit_ev ev = snap(tgid, e);
	submit(&ev, byte());
}

static int cmp_proc_tgid(const void *a, const void *b)
{
	const struct vw_proc_cpu *x = a, *y = b;

	return x->tgid < y->tgid ? -1 : x->tgid > y->tgid;
}

static void forget(struct vw_bpf_exits *x, uint32_t tgid)
{
	vw_bpf_exits_forget(x, tgid, f.m[tgid].start, 1);
	f.m[tgid].used = false;
}

static void read_all(struct vw_bpf_exits *x, struct vw_cpu_table *t)
{
	struct vw_bpf_exit_ev ev[RING];
	size_t n = 0;
	int r;

	memcpy(ev, f.ring, f.n_ring * sizeof(*ev));
	r = vw_bpf_exits_apply(x, ev, f.n_ring * sizeof(*ev));
	vw_fuzz_assert(r == 0, "apply: %d", r);
	if (f.n_ring)
		vw_fuzz_assert(vw_bpf_exits_apply(x, ev, sizeof(*ev) - 1) == -EBADMSG,
			       "a cut event accepted");
	f.n_ring = 0;
	if (f.lost) { /* the whole map, in an order of the input's */
		uint8_t rot = byte();

		vw_bpf_exits_reset(x);
		for (uint32_t k = 0; k < TGIDS; k++) {
			uint32_t tgid = (k + rot) % TGIDS + 1;
			struct vw_bpf_proc v = { 0 };

			if (!f.m[tgid].used)
				continue;
			v.dead_ns = f.m[tgid].dead;
			v.start_ns = f.m[tgid].start;
			v.cgroup_id = f.m[tgid].cgroup;
			v.exited = !!(f.m[tgid].flags & VW_BPF_EXIT_EXITED);
			v.group_dead = !!(f.m[tgid].flags & VW_BPF_EXIT_GROUP_DEAD);
			v.flags = f.m[tgid].flags & VW_BPF_EXIT_KTHREAD ? VW_BPF_PROC_KTHREAD : 0;
			vw_fuzz_assert(vw_bpf_exits_put(x, &tgid, &v) == 0, "put");
		}
		f.lost = false;
	}
	vw_cpu_table_clear(t);
	vw_fuzz_assert(vw_bpf_exits_emit(x, t, 1) == 0, "emit");
	for (uint32_t tgid = 1; tgid <= TGIDS; tgid++) {
		const struct ment *e = &f.m[tgid];
		struct vw_proc_cpu key = { .tgid = tgid }, *p;

		p = t->n_procs ? bsearch(&key, t->procs, t->n_procs, sizeof(key), cmp_proc_tgid)
			       : NULL;
		if (!e->used) {
			vw_fuzz_assert(!p, "tgid %u: in the picture, not in the map", tgid);
			continue;
		}
		n++;
		vw_fuzz_assert(p, "tgid %u: in the map, not in the picture", tgid);
		f.m[tgid].seen = true;
		vw_fuzz_assert(p->start_time == e->start && p->cpu_ns == e->dead &&
				       p->exited == !!(e->flags & VW_BPF_EXIT_EXITED),
			       "tgid %u: start %llu dead %llu exited %d, the map's %llu %llu %d", tgid,
			       (unsigned long long)p->start_time, (unsigned long long)p->cpu_ns,
			       p->exited, (unsigned long long)e->start,
			       (unsigned long long)e->dead, !!(e->flags & VW_BPF_EXIT_EXITED));
		if (p->exited)
			vw_fuzz_assert(p->kind == (e->flags & VW_BPF_EXIT_KTHREAD
							   ? VW_PROC_KIND_KTHREAD
							   : VW_PROC_KIND_USER),
				       "tgid %u: kind %d", tgid, p->kind);
	}
	vw_fuzz_assert(t->n_procs == n, "%zu in the picture, %zu in the map", t->n_procs, n);
	for (size_t i = 1; i < t->n_procs; i++)
		vw_fuzz_assert(t->procs[i - 1].tgid < t->procs[i].tgid, "not sorted");
	f.n_stale = 0;
	for (uint32_t tgid = 1; tgid <= TGIDS; tgid++)
		if (f.m[tgid].used && (f.m[tgid].flags & VW_BPF_EXIT_EXITED)) {
			f.stale[f.n_stale++] = snap(tgid, &f.m[tgid]);
			forget(x, tgid);
		}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vw_bpf_exits x = { 0 };
	struct vw_cpu_table t = { 0 };

	memset(&f, 0, sizeof(f));
	in = data;
	left = size;
	while (left) {
		uint8_t op = byte();

		switch (op % 4) {
		case 0:
			change();
			break;
		case 1:
			read_all(&x, &t);
			break;
		case 2: /* within the drain after the report only: no program sees it later */
			if (f.n_stale)
				submit(&f.stale[byte() % f.n_stale], 0);
			break;
		case 3: {
			uint32_t tgid = byte() % TGIDS + 1;

			if (f.m[tgid].used && f.m[tgid].seen) /* later events of it: dropped */
				forget(&x, tgid);
			break;
		}
		}
	}
	read_all(&x, &t);
	vw_bpf_exits_free(&x);
	vw_cpu_table_free(&t);
	return 0;
}

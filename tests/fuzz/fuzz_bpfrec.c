/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: the bpf accountant's record reader (shared/engine/cpu_bpf_records.c), what
 * turns the per-process map's entries and the iterators' thread records (bpf/cpu_time.h) into
 * each read's process table, through the history layer (cpu_account.c) as the accountant runs
 * it. The input: a byte picking the clock tick (ns per tick), then tokens, each a byte and its
 * record: tag % 4 = 0, a seed record (the open's iterator; bases are taken at the first other
 * token); 1, a per-process map entry (a 4-byte tgid, a struct vw_bpf_proc); 2, a live record
 * (struct vw_bpf_task_rec); 3, the read's end. As the kernel hands them over, a map has each
 * tgid once, a thread (pid) is listed once, and every thread of a process carries its group
 * leader's start time: the target makes the input so (a later duplicate is dropped, the start
 * is the process's first record's).
 * Properties, against an independent reading of the same records: the table is sorted by (tgid,
 * start time), one entry a process; each map entry and each live process is there with its
 * exit mark, the runtime of its exited threads plus its live threads' less its base (0 when
 * below), the kind, cgroup and a NUL-terminated comm of its group leader (of one of its
 * threads when the leader is not listed; an exited map entry's kind from its exit flags, a
 * map entry's otherwise unknown), a live process whose map entry says exited left
 * out; after the history layer no value goes back and no exit is reported twice.
 */
#include <stdlib.h>
#include <string.h>

#include "cpu_account_priv.h"
#include "cpu_bpf_records.h"
#include "cpu_time.h"
#include "fuzz_common.h"

#define MAX_RECS 1024

struct exp {
	uint32_t tgid;
	uint64_t start, cpu, cgroup;
	bool exited, live, leader_seen;
	char comm[VW_COMM_LEN];
	uint8_t kind;
};

/* The oracle's bases: (tgid, start) -> ns, gone once an exit was reported. */
struct obase {
	uint32_t tgid;
	uint64_t start, ns;
	bool gone;
};

static struct {
	uint64_t tick;
	struct vw_bpf_task_rec seed[MAX_RECS], live[MAX_RECS], live_copy[MAX_RECS];
	size_t n_seed, n_live;
	uint32_t keys[MAX_RECS];
	struct vw_bpf_proc vals[MAX_RECS];
	size_t n_map;
	struct obase ob[MAX_RECS];
	size_t n_ob;
	struct exp e[2 * MAX_RECS];
	size_t n_e;
} f;

static uint64_t ticks(uint64_t ns)
{
	return ns / f.tick;
}

static void comm_of(char dst[VW_COMM_LEN], const char *src)
{
	memcpy(dst, src, VW_COMM_LEN);
	dst[VW_COMM_LEN - 1] = '\0';
}

/* The kernel's guarantees on a batch of thread records: each pid once, the start time the
 * process's. */
static bool add_rec(struct vw_bpf_task_rec *to, size_t *n, const struct vw_bpf_task_rec *r)
{
	struct vw_bpf_task_rec c = *r;

	if (*n == MAX_RECS)
		return false;
	for (size_t i = 0; i < *n; i++) {
		if (to[i].pid == c.pid)
			return false;
		if (to[i].tgid == c.tgid)
			c.start_ns = to[i].start_ns;
	}
	to[(*n)++] = c;
	return true;
}

static void take_bases(struct vw_bpf_bases *b)
{
	int r;

	for (size_t i = 0; i < f.n_seed; i++) {
		size_t k = 0;

		while (k < f.n_ob && f.ob[k].tgid != f.seed[i].tgid)
			k++;
		if (k == f.n_ob)
			f.ob[f.n_ob++] = (struct obase){ .tgid = f.seed[i].tgid,
							 .start = ticks(f.seed[i].start_ns) };
		f.ob[k].ns += f.seed[i].runtime_ns;
	}
	for (size_t k = 0; k < f.n_ob; k++)
		if (f.ob[k].ns == VW_BPF_BASE_GONE)
			f.ob[k].ns--;
	r = vw_bpf_bases_parse(f.seed, f.n_seed * sizeof(*f.seed), f.tick, b);
	vw_fuzz_assert(r == 0, "bases: %d", r);
	vw_fuzz_assert(b->n == f.n_ob, "%zu bases, expected %zu", b->n, f.n_ob);
	if (f.n_seed) /* a cut record is refused */
		vw_fuzz_assert(vw_bpf_bases_parse(f.seed, f.n_seed * sizeof(*f.seed) - 1, f.tick,
						  &(struct vw_bpf_bases){ 0 }) == -EBADMSG,
			       "a cut seed record accepted");
}

static struct exp *find_exp(uint32_t tgid, uint64_t start)
{
	for (size_t i = 0; i < f.n_e; i++)
		if (f.e[i].tgid == tgid && f.e[i].start == start)
			return &f.e[i];
	return NULL;
}

/* What the read's table must hold, from the records as they came. */
static void expect(void)
{
	f.n_e = 0;
	for (size_t i = 0; i < f.n_map; i++) {
		struct exp *x = &f.e[f.n_e++];

		*x = (struct exp){ .tgid = f.keys[i], .start = ticks(f.vals[i].start_ns),
				   .cpu = f.vals[i].dead_ns, .cgroup = f.vals[i].cgroup_id,
				   .exited = f.vals[i].exited != 0, .kind = VW_PROC_KIND_UNKNOWN };
		if (x->exited) /* its kind from the exit: no /proc/PID/stat read for it */
			x->kind = f.vals[i].flags & VW_BPF_PROC_KTHREAD ? VW_PROC_KIND_KTHREAD
									 : VW_PROC_KIND_USER;
		comm_of(x->comm, f.vals[i].comm);
	}
	for (size_t i = 0; i < f.n_live; i++) {
		const struct vw_bpf_task_rec *r = &f.live[i];
		struct exp *x = find_exp(r->tgid, ticks(r->start_ns));

		if (x && x->exited)
			continue;
		if (!x) {
			x = &f.e[f.n_e++];
			*x = (struct exp){ .tgid = r->tgid, .start = ticks(r->start_ns) };
		}
		x->cpu += r->runtime_ns;
		x->live = true;
	}
	for (size_t i = 0; i < f.n_e; i++) {
		struct exp *x = &f.e[i];

		for (size_t k = 0; k < f.n_ob; k++) {
			struct obase *b = &f.ob[k];

			if (b->gone || b->tgid != x->tgid || b->start != x->start)
				continue;
			x->cpu = x->cpu > b->ns ? x->cpu - b->ns : 0;
			b->gone = x->exited;
		}
	}
}

/* The live fields of entry p are those of one of its threads: the leader where it is listed. */
static void check_lead(const struct vw_proc_cpu *p)
{
	bool leader = false, match = false;

	for (size_t i = 0; i < f.n_live; i++)
		leader |= f.live[i].tgid == p->tgid && f.live[i].pid == p->tgid &&
			  ticks(f.live[i].start_ns) == p->start_time;
	for (size_t i = 0; i < f.n_live && !match; i++) {
		const struct vw_bpf_task_rec *r = &f.live[i];
		char comm[VW_COMM_LEN];

		if (r->tgid != p->tgid || ticks(r->start_ns) != p->start_time ||
		    (leader && r->pid != r->tgid))
			continue;
		comm_of(comm, r->comm);
		match = r->cgroup_id == p->cgroup_id && strcmp(comm, p->comm) == 0 &&
			p->kind == (r->flags & VW_BPF_REC_KTHREAD ? VW_PROC_KIND_KTHREAD
								 : VW_PROC_KIND_USER);
	}
	vw_fuzz_assert(match, "tgid %u: kind %u, cgroup %llu, comm '%s' from no thread%s", p->tgid,
		       p->kind, (unsigned long long)p->cgroup_id, p->comm,
		       leader ? " (the leader is listed)" : "");
}

static void run_read(struct vw_cpu_history *h, struct vw_bpf_bases *bases)
{
	struct vw_cpu_table *t;
	struct vw_cpu_seen prev;
	struct vw_cpu_snapshot snap;
	int r;

	vw_fuzz_assert(vw_cpu_history_begin(h, &t) == 0, "begin");
	expect();
	for (size_t i = 0; i < f.n_map; i++)
		vw_fuzz_assert(vw_bpf_rec_add_proc(t, &f.keys[i], &f.vals[i], f.tick) == 0, "add");
	if (f.n_live) /* a cut record is refused, nothing done */
		vw_fuzz_assert(vw_bpf_rec_finish(t, f.live, f.n_live * sizeof(*f.live) - 1, bases,
						 f.tick) == -EBADMSG,
			       "a cut live record accepted");
	memcpy(f.live_copy, f.live, f.n_live * sizeof(*f.live));
	r = vw_bpf_rec_finish(t, f.live_copy, f.n_live * sizeof(*f.live), bases, f.tick);
	vw_fuzz_assert(r == 0, "finish: %d", r);
	vw_fuzz_assert(t->n_procs == f.n_e, "%zu processes, expected %zu", t->n_procs, f.n_e);
	for (size_t i = 0; i < t->n_procs; i++) {
		const struct vw_proc_cpu *p = &t->procs[i];
		const struct exp *x = find_exp(p->tgid, p->start_time);

		if (i)
			vw_fuzz_assert(p[-1].tgid < p->tgid ||
					       (p[-1].tgid == p->tgid && p[-1].start_time < p->start_time),
				       "not sorted or twice at %zu: tgid %u", i, p->tgid);
		vw_fuzz_assert(x, "tgid %u start %llu from nowhere", p->tgid,
			       (unsigned long long)p->start_time);
		vw_fuzz_assert(p->cpu_ns == x->cpu, "tgid %u: %llu ns, expected %llu", p->tgid,
			       (unsigned long long)p->cpu_ns, (unsigned long long)x->cpu);
		vw_fuzz_assert(p->exited == x->exited, "tgid %u: exited %d", p->tgid, p->exited);
		vw_fuzz_assert(vw_fuzz_terminated(p->comm, sizeof(p->comm)), "comm unterminated");
		if (x->live)
			check_lead(p);
		else
			vw_fuzz_assert(p->kind == x->kind && p->cgroup_id == x->cgroup &&
					       strcmp(p->comm, x->comm) == 0,
				       "tgid %u: a map entry's fields changed", p->tgid);
	}
	vw_cpu_history_finish(h, &snap);
	prev = vw_cpu_history_prev(h);
	for (size_t i = 0; i < snap.n_procs; i++) {
		const struct vw_proc_cpu *p = &snap.procs[i];
		const struct vw_proc_seen *was = vw_cpu_seen_find(prev, p->tgid, p->start_time);

		vw_fuzz_assert(!was || !was->exited, "tgid %u reported exited twice", p->tgid);
		vw_fuzz_assert(!was || p->cpu_ns >= was->cpu_ns, "tgid %u went back", p->tgid);
	}
	f.n_map = f.n_live = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint64_t tick[4] = { 10000000, 1, 3, 1000000 };
	struct vw_cpu_history h = { 0 };
	struct vw_bpf_bases bases = { 0 };
	bool seeded = false;
	size_t at = 1;

	if (!size)
		return 0;
	memset(&f, 0, sizeof(f));
	f.tick = tick[data[0] & 3];
	while (at < size) {
		unsigned tag = data[at++] & 3;
		size_t need = tag == 1 ? 4 + sizeof(struct vw_bpf_proc)
			      : tag == 3 ? 0 : sizeof(struct vw_bpf_task_rec);
		struct vw_bpf_task_rec rec;

		if (size - at < need)
			break;
		if (tag != 0 && !seeded) {
			take_bases(&bases);
			seeded = true;
		}
		switch (tag) {
		case 0:
			memcpy(&rec, data + at, sizeof(rec));
			if (!seeded)
				add_rec(f.seed, &f.n_seed, &rec);
			break;
		case 1: {
			uint32_t key;
			bool dup = false;

			memcpy(&key, data + at, 4);
			for (size_t i = 0; i < f.n_map; i++)
				dup |= f.keys[i] == key;
			if (!dup && f.n_map < MAX_RECS) {
				f.keys[f.n_map] = key;
				memcpy(&f.vals[f.n_map++], data + at + 4, sizeof(struct vw_bpf_proc));
			}
			break;
		}
		case 2:
			memcpy(&rec, data + at, sizeof(rec));
			add_rec(f.live, &f.n_live, &rec);
			break;
		default:
			run_read(&h, &bases);
		}
		at += need;
	}
	if (!seeded)
		take_bases(&bases);
	run_read(&h, &bases);
	vw_bpf_bases_free(&bases);
	vw_cpu_history_free(&h);
	return 0;
}

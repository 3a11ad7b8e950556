/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CPU accountant on bpf/cpu_time.bpf.c. cpu_bpf_load.c opens the skeleton, sizes the maps,
 * picks tp_btf or its raw_tp twins, seeds every existing thread's runtime (values count from
 * open) and attaches, all in a short-lived child (libbpf's BTF parse, ~12 MiB at its peak, never
 * in this process); this process holds only the fds it hands over and reads the maps through
 * its own bpf(2) wrappers (bpf_sys.c): libbpf is loaded in the child alone.
 *
 * At open the seed iterator gives every older thread's runtime: summed per process, the bases
 * subtracted from what later reads find, so values count from open. A read takes,
 * in this order: the per-process map (time of exited threads, exit marks) as the exits ring
 * told it (the events since the last read folded into a picture of the map that
 * cpu_bpf_records.c keeps: mmapped, no system call when nothing exited; the whole map read
 * instead where the slow-path counters say an event found the ring full; the ring map exists
 * wherever the iterators do, 5.8, so the whole-map read stands in only where it does not map),
 * then the live
 * records: where the ran walk loaded (bpf/cpu_walk.bpf.c: 6.7+ with bpf_task_from_pid and
 * tp_btf), the live set (cpu_bpf_records.h), one record per live process, updated by a walk of
 * only the processes whose threads ran since the last read (a process that did not run keeps
 * its record, its runtime unchanged), rebuilt by a full walk at the first read, every
 * VW_BPF_FULL_EVERY reads and whenever a ring of marks overflowed, while the switch program
 * that marks is attached (here: always with --cpu.ran-walk=true, while it pays with auto,
 * cpu_ranwalk.h; the read after an attach or a detach is a full walk); else the full walk's
 * records, else the read iterator's (every live thread's runtime, as the scheduler counts it).
 * Gone-ness is unchanged: a process is gone when its exit mark comes (its live record is
 * dropped by the ran walk that follows its last thread's last switch-out) or when the ghost
 * check finds it gone from /proc. The iterator can only miss
 * what moved into the map meanwhile, never count it twice: a read can be a slice short, and the
 * history layer holds the value until the next read catches up. Exited processes are reported
 * once and deleted from the map (and from the picture, whose tombstones drop a late event). Every process carries the id of the cgroup it ran in last (in
 * the hierarchy vw_cpu_env.cgroup_v1 names); per-cgroup totals are the kernel's (cgroupfs.h).
 * The records become the table in cpu_bpf_records.c (fuzzed), the ghost check's cadence is
 * cpu_ghost.c's; this file makes the bpf(2) calls around them.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bpf_sys.h"
#include "cpu_account.h"
#include "cpu_account_priv.h"
#include "cpu_bpf_priv.h"
#include "cpu_bpf_records.h"
#include "cpu_ghost.h"
#include "cpu_ranwalk.h"
#include "cpu_slots.h"
#include "cpu_time.h"
#include "fileio.h"
#include "log.h"
#include "perf_counters.h"
#include "pidns.h"

#define BATCH_MIN 256u
#define ENOTSUPP_KERNEL 524 /* the kernel's internal ENOTSUPP, leaked by some map ops */
#define VW_BPF_MAX_CPUS 65536 /* the loader child's count, checked: it sizes per-CPU reads */
/* A full walk every this many reads, whatever the marks say: the safety net under the ran
 * walk (a cgroup move of a process that never ran since, anything a mark missed). */
#define VW_BPF_FULL_EVERY 30u


/* A hw_procs entry as read, and a key the collector saw without a process. */
struct hw_rec {
	uint32_t tgid;
	bool used; /* matched a process of this read */
	uint64_t start_ns;
	struct vw_proc_counters c;
};

struct hw_key {
	uint32_t tgid;
	uint64_t start_ns;
};

struct bpf_state {
	int fd[VW_BPF_FD__MAX]; /* from the loader child, -1 where absent */
	struct vw_cgroup_irq *irq; /* the last read's interrupt time per cgroup */
	size_t n_irq, cap_irq;
	struct vw_proc_irq *irq_procs; /* and per process, in tgid order */
	size_t n_irq_procs, cap_irq_procs;
	bool irq_no_atomic; /* no lookup-and-delete here: a lookup, then a delete */
	int procfd;             /* the procfs root (a dup): the ghost check's */
	struct vw_ghost_check ghost;
	struct vw_complaint ghost_complaint;
	struct vw_slot_sweep slots; /* the fallback hash's sweep (tp_btf; cpu_slots.h) */
	struct vw_slot *slot_buf;   /* the hash's entries this read */
	size_t n_slot_buf, cap_slot_buf;
	struct vw_complaint slots_complaint;
	bool slots_off;             /* the procfs cannot say a thread is gone: no sweep */
	bool no_batch;
	int ncpus;
	uint64_t ns_per_tick;
	struct vw_cpu_history hist;
	uint32_t walk_cap; /* records the walk's array holds; 0: no walk (the task/ iterator) */
	struct vw_bpf_task_rec *walk_map; /* its first walk_len bytes, mapped; or NULL */
	size_t walk_len;
	struct vw_complaint walk_complaint;
	bool ran;          /* the ran walk loaded: most reads walk only what ran, while marking */
	int mark_link;     /* the switch program's link: marking; -1 while detached */
	bool ran_auto;     /* --cpu.ran-walk=auto: attached while it pays (cpu_ranwalk.h) */
	struct vw_ranwalk_auto autow;
	struct vw_complaint ran_complaint;
	struct vw_complaint ran_switch[2]; /* the info lines of a detach [0] and an attach [1] */
	bool need_full;    /* the live set is not to be trusted: the next walk is a full one */
	unsigned since_full; /* ran walks since the last full one */
	struct vw_bpf_live live_set; /* the ran walks' set (ran only) */
	uint32_t last_n;   /* records of the last walk, in walk_map */
	struct vw_cpu_bpf_walk_stats walk_stats;
	struct vw_bpf_bases bases;
	/* The exits ring (struct vw_bpf_exit_ev), mapped: its consumer page (ours to write) and
	 * its producer page with the data twice after it; NULL where it did not map (then every
	 * read takes the whole map, as one that finds an event lost does). */
	uint64_t *ring_cons;
	const unsigned char *ring_prod;
	size_t ring_size, ring_page;
	struct vw_bpf_exits exits; /* the per-process map as the ring told it */
	bool exits_whole;          /* an event was lost: read the whole map (until one succeeds) */
	unsigned char *ev_buf;     /* a drain's events, copied out (sorted where they lie) */
	size_t ev_cap;
	uint32_t *gone;            /* the tgids of the exits a read reported: deleted in one call */
	size_t n_gone, cap_gone;
	/* scratch reused between reads */
	struct vw_bpf_iter_buf iter;
	struct vw_bpf_task_rec *live; /* this read's records: in walk_map or iter */
	size_t n_live;
	void *keys, *vals;
	uint32_t batch_cap;
	struct vw_bpf_cpu *cpu_a; /* the per-CPU value, ncpus */
	uint64_t stats_seen[VW_BPF_STAT__COUNT];
	struct vw_complaint stats_complaint, stats_note; /* a loss (warned); nothing lost (said) */
	uint64_t irq_seen[4]; /* the interrupt maps' stats at irq_check()'s last warning */
	struct vw_complaint irq_complaint;
	/* Per-process counters: none of this is used when hw_mask is 0. */
	unsigned hw_mask; /* VW_HW_BIT() of the kinds whose per-CPU events opened */
	struct hw_rec *hw_recs;
	size_t n_hw, cap_hw;
	struct vw_proc_counters *hwc[2]; /* [hw_cur]: parallel to the last snapshot's procs,
					  * [hw_cur ^ 1]: to the one before (the history's prev) */
	unsigned hw_cur;
	size_t cap_hwc[2];
	struct hw_key *hw_orphans; /* entries without a process at the last read */
	size_t n_orphans, cap_orphans;
	struct hw_key *hw_next;
	size_t n_next, cap_next;
	size_t n_hwc[2];
	struct vw_bpf_hw_cpu *hw_cpu; /* ncpus */
	uint64_t hw_stats_seen[VW_BPF_HW_STAT__COUNT];
	struct vw_complaint hw_complaint;
};

_Static_assert((int)VW_BPF_HW__COUNT == (int)VW_HW__COUNT &&
		       (int)VW_BPF_HW_CYCLES == (int)VW_HW_CYCLES &&
		       (int)VW_BPF_HW_INSTRUCTIONS == (int)VW_HW_INSTRUCTIONS &&
		       (int)VW_BPF_HW_CACHE_MISSES == (int)VW_HW_CACHE_MISSES,
	       "counter kinds");
/* A per-CPU lookup fills ncpus values of the size rounded up to 8. */
_Static_assert(sizeof(struct vw_bpf_cpu) % 8 == 0 && sizeof(struct vw_bpf_hw_cpu) % 8 == 0,
	       "per-CPU value sizes");


/* The maps are what bpf/cpu_time.h says: the reads below size their buffers by it. */
static int check_map(int fd, uint32_t ksz, uint32_t vsz)
{
	struct bpf_map_info info;
	int r = vw_bpf_map_info(fd, &info);

	if (r < 0)
		return r;
	if (info.key_size == ksz && info.value_size == vsz)
		return 0;
	vw_warn("cpu: bpf: map %s has %u-byte keys and %u-byte values, expected %u and %u",
		info.name, info.key_size, info.value_size, ksz, vsz);
	return -EIO;
}

static int check_maps(const struct bpf_state *s)
{
	int r = check_map(s->fd[VW_BPF_FD_PROCS], sizeof(uint32_t), sizeof(struct vw_bpf_proc));

	if (r == 0)
		r = check_map(s->fd[VW_BPF_FD_CPUS], sizeof(uint32_t), sizeof(struct vw_bpf_cpu));
	if (r == 0)
		r = check_map(s->fd[VW_BPF_FD_HW_PROCS], sizeof(uint32_t), sizeof(struct vw_bpf_hw_proc));
	if (r == 0)
		r = check_map(s->fd[VW_BPF_FD_HW_CPUS], sizeof(uint32_t), sizeof(struct vw_bpf_hw_cpu));
	return r;
}

static void bpf_close(void *state)
{
	struct bpf_state *s = state;

	if (!s)
		return;
	if (s->walk_map)
		munmap((void *)s->walk_map, s->walk_len);
	vw_closep(&s->mark_link);

	if (s->ring_cons)
		munmap(s->ring_cons, s->ring_page);
	if (s->ring_prod)
		munmap((void *)s->ring_prod, s->ring_page + 2 * s->ring_size);
	vw_bpf_exits_free(&s->exits);
	free(s->ev_buf);
	free(s->gone);
	free(s->irq);
	free(s->irq_procs);
	vw_slot_sweep_free(&s->slots);
	free(s->slot_buf);
	vw_cpu_bpf_close_fds(s->fd, VW_BPF_FD__MAX);
	vw_closep(&s->procfd);
	vw_cpu_history_free(&s->hist);
	vw_bpf_bases_free(&s->bases);
	vw_bpf_live_free(&s->live_set);
	free(s->iter.p);
	free(s->keys);
	free(s->vals);
	free(s->cpu_a);
	free(s->hw_recs);
	free(s->hwc[0]);
	free(s->hwc[1]);
	free(s->hw_orphans);
	free(s->hw_next);
	free(s->hw_cpu);
	free(s);
}

static int bases_read(struct bpf_state *s);
static void ran_mode_open(struct bpf_state *s, bool automatic);
static int ghost_gone(void *ctx, const struct vw_proc_cpu *p);
static void ghost_drop(void *ctx, const struct vw_proc_cpu *p);
static int slot_gone(void *ctx, uint32_t pid);
static int slot_delete(void *ctx, const struct vw_slot *sl);
static bool slots_procfs_off(int procfd);

/* One fd of s->fd closed before the others: -1 from now on (bpf_close closes the rest). */
static void close_slot(struct bpf_state *s, int k)
{
	vw_closep(&s->fd[k]);
	s->fd[k] = -1;
}

/* The walk's output array (cpu_walk.bpf.c), when it loaded: checked, its size noted. */
static int walk_check(struct bpf_state *s)
{
	int fd = s->fd[VW_BPF_FD_WALK_OUT];
	struct bpf_map_info info;
	int r;

	if (fd < 0 || s->fd[VW_BPF_FD_ITER_WALK] < 0)
		return 0;
	r = check_map(fd, sizeof(uint32_t), sizeof(struct vw_bpf_task_rec));
	if (r == 0)
		r = vw_bpf_map_info(fd, &info);
	if (r < 0)
		return r;
	s->walk_cap = info.max_entries;
	return 0;
}

/*
 * The first n records mapped, writable (a read sorts them where they lie). The kernel maps
 * every page of an mmap'd BPF array at once, so the mapping covers what the reads need, with
 * room to grow, not the whole array (1.5 MiB for 32,768 processes, all resident otherwise).
 */
static int walk_map_records(struct bpf_state *s, uint32_t n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), need = (size_t)n * sizeof(*s->walk_map), len;
	size_t full = ((size_t)s->walk_cap * sizeof(*s->walk_map) + page - 1) & ~(page - 1);
	void *p;

	if (s->walk_map && need <= s->walk_len)
		return 0;
	len = VW_MIN(((need + need / 2 + page - 1) & ~(page - 1)) + page, full);
	if (s->walk_map)
		munmap((void *)s->walk_map, s->walk_len);
	s->walk_map = NULL;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd[VW_BPF_FD_WALK_OUT], 0);
	if (p == MAP_FAILED)
		return -errno;
	s->walk_map = p;
	s->walk_len = len;
	return 0;
}

/*
 * The exits ring mapped as libbpf's consumer maps it: the consumer page writable, the producer
 * page and the data (mapped twice in a row by the kernel, so that no event wraps) read-only.
 * Its memlock is its data and two pages; what the daemon's RSS gains is the pages it has read.
 * Where it does not map, every read takes the whole map (-errno only logged).
 */
static void ring_map(struct bpf_state *s)
{
	int fd = s->fd[VW_BPF_FD_EXITS];
	struct bpf_map_info info;
	void *c, *p;
	int r;

	s->ring_page = (size_t)sysconf(_SC_PAGESIZE);
	r = vw_bpf_map_info(fd, &info);
	if (r == 0 && (info.type != BPF_MAP_TYPE_RINGBUF || !info.max_entries ||
		       info.max_entries & (info.max_entries - 1) || info.max_entries % s->ring_page))
		r = -EIO;
	if (r < 0)
		goto fail;
	s->ring_size = info.max_entries;
	c = mmap(NULL, s->ring_page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (c == MAP_FAILED) {
		r = -errno;
		goto fail;
	}
	p = mmap(NULL, s->ring_page + 2 * s->ring_size, PROT_READ, MAP_SHARED, fd,
		 (off_t)s->ring_page);
	if (p == MAP_FAILED) {
		r = -errno;
		munmap(c, s->ring_page);
		goto fail;
	}
	s->ring_cons = c;
	s->ring_prod = p;
	return;
fail:
	vw_info("cpu: bpf: the exits ring did not map (%s): reading the whole per-process map at "
		"every read", strerror(-r));
}

static int bpf_open(const struct vw_cpu_env *env, void **ret_state)
{
	struct vw_bpf_load_req q = { 0 };
	struct vw_bpf_load_msg m;
	struct bpf_state *s;
	int r;

	if (!env || env->sysfs_fd < 0 || env->procfs_fd < 0)
		return -EINVAL;
	r = vw_cpu_bpf_btf_path(env, q.btf, sizeof(q.btf));
	if (r < 0) {
		vw_info("cpu: bpf: no kernel BTF (kernel/btf/vmlinux) under the sysfs root");
		return r == -ENAMETOOLONG ? r : -ENODEV;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < VW_BPF_FD__MAX; i++)
		s->fd[i] = -1;
	s->mark_link = -1;
	s->procfd = fcntl(env->procfs_fd, F_DUPFD_CLOEXEC, 3);
	if (s->procfd < 0) {
		r = -errno;
		goto fail;
	}
	s->ns_per_tick = vw_cpu_ns_per_tick();
	s->ghost = (struct vw_ghost_check){ .budget = VW_GHOST_BUDGET, .gone = ghost_gone,
					    .drop = ghost_drop, .ctx = s };
	s->slots = (struct vw_slot_sweep){ .budget = VW_SLOTS_BUDGET,
					   .confirm_ns = VW_SLOTS_CONFIRM_NS, .gone = slot_gone,
					   .del = slot_delete, .ctx = s };
	s->slots_off = slots_procfs_off(s->procfd);
	s->no_batch = env->flags & VW_CPU_BPF_NO_BATCH;
	q.max_procs = env->max_procs ? env->max_procs : VW_CPU_DEFAULT_MAX_PROCS;
	q.flags = env->flags;
	q.cgroup_v1 = env->cgroup_v1;
	r = vw_cpu_bpf_load(&q, &m, s->fd);
	if (r == 0)
		r = m.err;
	if (r == 0 && (m.ncpus <= 0 || m.ncpus > VW_BPF_MAX_CPUS))
		r = -EBADMSG;
	if (r < 0)
		goto fail;
	s->ncpus = m.ncpus;
	if (!m.walk) { /* stand-ins */
		close_slot(s, VW_BPF_FD_WALK_OUT);
		close_slot(s, VW_BPF_FD_ITER_WALK);
	}
	if (!m.ran) {
		close_slot(s, VW_BPF_FD_ITER_RAN);
		close_slot(s, VW_BPF_FD_MARK);
	}
	s->ran = m.walk && m.ran;
	s->need_full = true;
	if (m.raw) /* an LRU hash: it reclaims the slots of lost frees itself */
		close_slot(s, VW_BPF_FD_TASK_HASH);
	s->cpu_a = calloc((size_t)s->ncpus, sizeof(*s->cpu_a));
	if (!s->cpu_a) {
		r = -ENOMEM;
		goto fail;
	}
	s->hw_mask = m.hw_mask;
	if (s->hw_mask) {
		s->hw_cpu = calloc((size_t)s->ncpus, sizeof(*s->hw_cpu));
		if (!s->hw_cpu) {
			r = -ENOMEM;
			goto fail;
		}
	}
	r = check_maps(s);
	if (r == 0 && s->fd[VW_BPF_FD_TASK_HASH] >= 0)
		r = check_map(s->fd[VW_BPF_FD_TASK_HASH], sizeof(uint32_t), sizeof(struct vw_bpf_task));
	if (r == 0)
		ring_map(s);
	if (r == 0)
		r = walk_check(s);
	if (r == 0)
		r = bases_read(s);
	if (r < 0)
		goto fail;
	s->ran = s->ran && s->walk_cap;
	if (s->ran)
		ran_mode_open(s, env->flags & VW_CPU_BPF_RAN_AUTO);
	vw_debug("cpu: bpf: %s programs attached%s, maps for %u processes, an exits ring of %zu "
		 "KiB, %d CPUs, reads by %s",
		 m.raw ? "raw_tp" : "tp_btf", s->hw_mask ? " with counters" : "", q.max_procs,
		 s->ring_prod ? s->ring_size / 1024 : 0, s->ncpus,
		 s->ran ? (s->ran_auto ? "the open-coded task walk, of the processes that ran "
					 "while that pays"
				       : "the open-coded task walk, of the processes that ran")
			: s->walk_cap ? "the open-coded task walk" : "the task iterator");
	*ret_state = s;
	return 0;
fail:
	bpf_close(s);
	return r;
}

typedef int (*entry_fn)(struct bpf_state *s, struct vw_cpu_table *t, const void *key,
			const void *val);

static int batch_buffers(struct bpf_state *s, uint32_t cap, size_t ksz, size_t vsz)
{
	void *k = realloc(s->keys, cap * ksz), *v;

	if (!k)
		return -ENOMEM;
	s->keys = k;
	v = realloc(s->vals, cap * vsz);
	if (!v)
		return -ENOMEM;
	s->vals = v;
	s->batch_cap = cap;
	return 0;
}

/* -EOPNOTSUPP when this kernel has no batch ops for the map: the caller iterates instead. */
static int for_each_batch(struct bpf_state *s, struct vw_cpu_table *t, int fd, size_t ksz,
			  size_t vsz, entry_fn fn)
{
	uint64_t in = 0, out = 0;
	bool first = true;
	uint32_t cap = VW_MAX(s->batch_cap, BATCH_MIN);
	int r;

	r = batch_buffers(s, cap, ksz, vsz);
	for (;;) {
		uint32_t count = cap;

		if (r < 0)
			return r;
		r = vw_bpf_map_lookup_batch(fd, first ? NULL : &in, &out, s->keys, s->vals, &count);
		if (r == -ENOSPC) { /* a hash bucket larger than the batch */
			cap *= 2;
			r = batch_buffers(s, cap, ksz, vsz);
			continue;
		}
		if (r < 0 && r != -ENOENT)
			return first && (r == -EINVAL || r == -EOPNOTSUPP || r == -ENOTSUPP_KERNEL)
				       ? -EOPNOTSUPP
				       : r;
		for (uint32_t i = 0; i < count; i++) {
			int e = fn(s, t, (char *)s->keys + i * ksz, (char *)s->vals + i * vsz);

			if (e < 0)
				return e;
		}
		if (r == -ENOENT)
			return 0;
		in = out;
		first = false;
	}
}

static int for_each_key(struct bpf_state *s, struct vw_cpu_table *t, int fd, size_t ksz,
			size_t vsz, entry_fn fn)
{
	_cleanup_free_ void *val = malloc(vsz);
	uint64_t cur = 0, next = 0;
	bool first = true;
	int r;

	if (!val)
		return -ENOMEM;
	while ((r = vw_bpf_map_get_next_key(fd, first ? NULL : &cur, &next)) == 0) {
		if (vw_bpf_map_lookup_elem(fd, &next, val) == 0) {
			r = fn(s, t, &next, val);
			if (r < 0)
				return r;
		}
		memcpy(&cur, &next, ksz);
		first = false;
	}
	return r == -ENOENT ? 0 : r;
}

/* Every entry of a map whose key and value sizes check_maps() confirmed. */
static int map_for_each(struct bpf_state *s, struct vw_cpu_table *t, int fd, size_t ksz,
			size_t vsz, entry_fn fn)
{
	int r;

	if (ksz > sizeof(uint64_t))
		return -EINVAL;
	if (!s->no_batch) {
		r = for_each_batch(s, t, fd, ksz, vsz, fn);
		if (r != -EOPNOTSUPP)
			return r;
		vw_debug("cpu: bpf: no batch map lookups here, iterating keys");
		s->no_batch = true; /* failed on its first call: nothing was added */
	}
	return for_each_key(s, t, fd, ksz, vsz, fn);
}

static int put_exit(struct bpf_state *s, struct vw_cpu_table *t, const void *key, const void *val)
{
	(void)t;
	return vw_bpf_exits_put(&s->exits, key, val);
}

/*
 * The exits ring drained into s->exits: the events copied out, folded in, and only then
 * consumed (a fold that fails leaves them for the next read). A sample of another size than
 * an event's is a mismatch of this build and the object: -EBADMSG.
 */
static int ring_drain(struct bpf_state *s)
{
	const unsigned char *data = s->ring_prod + s->ring_page;
	uint64_t cons = __atomic_load_n(s->ring_cons, __ATOMIC_ACQUIRE);
	uint64_t prod = __atomic_load_n((const uint64_t *)s->ring_prod, __ATOMIC_ACQUIRE);
	size_t len = 0;
	int r;

	while (cons < prod) {
		const uint32_t *hdr = (const uint32_t *)(data + (cons & (s->ring_size - 1)));
		uint32_t h = __atomic_load_n(hdr, __ATOMIC_ACQUIRE);
		uint32_t n = h & ~(BPF_RINGBUF_BUSY_BIT | BPF_RINGBUF_DISCARD_BIT);

		if (h & BPF_RINGBUF_BUSY_BIT) /* reserved, not yet submitted: the next read's */
			break;
		cons += (n + BPF_RINGBUF_HDR_SZ + 7) & ~7u;
		if (h & BPF_RINGBUF_DISCARD_BIT)
			continue;
		if (n != sizeof(struct vw_bpf_exit_ev))
			return -EBADMSG;
		if (len + n > s->ev_cap) {
			size_t cap = s->ev_cap ? 2 * s->ev_cap : 64 * n;
			unsigned char *b = realloc(s->ev_buf, cap);

			if (!b)
				return -ENOMEM;
			s->ev_buf = b;
			s->ev_cap = cap;
		}
		memcpy(s->ev_buf + len, hdr + BPF_RINGBUF_HDR_SZ / sizeof(*hdr), n);
		len += n;
	}
	r = vw_bpf_exits_apply(&s->exits, s->ev_buf, len);
	if (r == 0)
		__atomic_store_n(s->ring_cons, cons, __ATOMIC_RELEASE);
	return r;
}

/* The seed iterator, once: each process running at open gets a base, its threads' runtime now. */
static int bases_read(struct bpf_state *s)
{
	int r = vw_cpu_bpf_iter_run(&s->iter, s->fd[VW_BPF_FD_ITER_SEED]);

	close_slot(s, VW_BPF_FD_ITER_SEED);
	if (r < 0)
		return r;
	return vw_bpf_bases_parse(s->iter.p, s->iter.len, s->ns_per_tick, &s->bases);
}

/* The task/ iterator's records (one per thread) as this read's. */
static int read_threads(struct bpf_state *s)
{
	int r = vw_cpu_bpf_iter_run(&s->iter, s->fd[VW_BPF_FD_ITER_READ]);

	if (r < 0)
		return r;
	if (s->iter.len % sizeof(*s->live))
		return -EBADMSG;
	s->live = (struct vw_bpf_task_rec *)s->iter.p;
	s->n_live = s->iter.len / sizeof(*s->live);
	return 0;
}

/* One walk (its link: the full or the ran walk): *h, and its h->n records mapped. -EAGAIN
 * where some found no room (lost). */
static int run_walk(struct bpf_state *s, int link, struct vw_bpf_walk_hdr *h)
{
	int r = vw_cpu_bpf_iter_run(&s->iter, s->fd[link]);

	s->last_n = 0;
	if (r < 0)
		return r;
	if (s->iter.len != sizeof(*h))
		return -EBADMSG;
	memcpy(h, s->iter.p, sizeof(*h));
	if (h->lost || h->n > s->walk_cap) {
		vw_complain(&s->walk_complaint, VW_LOG_WARN,
			    "cpu: bpf: %u processes found no room in the walk's %u records: "
			    "reading the task iterator instead",
			    h->lost, s->walk_cap);
		return -EAGAIN;
	}
	r = walk_map_records(s, h->n);
	if (r == 0)
		s->last_n = h->n;
	return r;
}

/* The ran walk: the live set updated with the processes that ran. -EAGAIN: a full walk is
 * needed (a mark found no room). need_full stays set until the set is updated: a walk that
 * failed half way had taken marks that are then lost. */
static int read_ran(struct bpf_state *s)
{
	struct vw_bpf_walk_hdr h;
	int r;

	s->need_full = true;
	r = run_walk(s, VW_BPF_FD_ITER_RAN, &h);
	if (r < 0)
		return r;
	if (h.flags & VW_BPF_WALK_OVERFLOW) {
		s->walk_stats.overflows++;
		vw_debug("cpu: bpf: a ring of marks overflowed: walking every process");
		return -EAGAIN;
	}
	r = vw_bpf_live_update(&s->live_set, s->walk_map, (size_t)h.n * sizeof(*s->walk_map));
	if (r < 0)
		return r;
	s->walk_stats.ran++;
	s->walk_stats.last_records = h.n;
	s->walk_stats.last_marks = h.marks;
	s->need_full = false;
	s->since_full++;
	return 0;
}

/* ---- the ran walk's switch program: attached while it pays ---- */

/*
 * The switch program attached (BPF_RAW_TRACEPOINT_OPEN on its fd: the capabilities that
 * loaded it in the loader child, ours too, attach it). Nothing was marked before: the next
 * read is a full walk, whose ring reset and epoch move start the marks over.
 */
static int mark_attach(struct bpf_state *s)
{
	int fd;

	if (s->mark_link >= 0)
		return 0;
	fd = vw_bpf_raw_tp_open(s->fd[VW_BPF_FD_MARK]);
	if (fd < 0)
		return fd;
	s->mark_link = fd;
	s->need_full = true;
	s->walk_stats.attaches++;
	return 0;
}

/* Detached (the link closed): nothing marks from now on, so every read is a full walk, and
 * the ran walks' set is not kept. */
static void mark_detach(struct bpf_state *s)
{
	if (s->mark_link < 0)
		return;
	vw_closep(&s->mark_link);
	s->mark_link = -1;
	s->need_full = true;
	s->walk_stats.detaches++;
	vw_bpf_live_free(&s->live_set);
}

/* The switch program attached for good (--cpu.ran-walk=true), or left to the decision. */
static void ran_mode_open(struct bpf_state *s, bool automatic)
{
	int r;

	if (automatic) {
		s->ran_auto = true;
		vw_ranwalk_auto_init(&s->autow);
		return;
	}
	r = mark_attach(s);
	if (r == 0)
		return;
	vw_warn("cpu: bpf: attach the ran walk's switch program: %s: every read walks every "
		"process (--cpu.ran-walk=false does so without trying)", strerror(-r));
	s->ran = false;
}

/* What the decision weighs: the context switches so far (/proc/stat's ctxt) and the tasks
 * a full walk meets (/proc/loadavg's total), both under the procfs root. */
static int ran_counts(struct bpf_state *s, uint64_t *ctxt, uint64_t *tasks)
{
	_cleanup_free_ char *stat = NULL;
	char avg[128];
	size_t len = 0;
	int r = vw_read_whole_at(s->procfd, "stat", 1u << 22, &stat, &len);

	if (r == 0)
		r = vw_ranwalk_parse_ctxt(stat, len, ctxt);
	if (r == 0)
		r = vw_read_file_at(s->procfd, "loadavg", avg, sizeof(avg), NULL);
	if (r == 0)
		r = vw_ranwalk_parse_tasks(avg, tasks);
	return r;
}

/* --cpu.ran-walk=auto, before each read's walk: every VW_RANWALK_EVERY reads, the switch
 * program attached or detached as the window's counts say (cpu_ranwalk.h). */
static void ran_mode_decide(struct bpf_state *s)
{
	uint64_t ctxt = 0, tasks = 0, t0;
	bool was = s->autow.on, on;
	int r;

	if (!s->ran_auto || !vw_ranwalk_auto_tick(&s->autow))
		return;
	r = ran_counts(s, &ctxt, &tasks);
	if (r < 0) {
		vw_complain(&s->ran_complaint, VW_LOG_WARN,
			    "cpu: bpf: --cpu.ran-walk=auto: read stat and loadavg under the procfs "
			    "root: %s: the ran walk stays %s", strerror(-r), was ? "on" : "off");
		return;
	}
	on = vw_ranwalk_auto_end(&s->autow, ctxt, tasks);
	if (on == was)
		return;
	t0 = vw_now_ns();
	r = on ? mark_attach(s) : 0;
	if (!on)
		mark_detach(s);
	t0 = vw_now_ns() - t0;
	if (r < 0) {
		vw_warn("cpu: bpf: attach the ran walk's switch program: %s: every read walks every "
			"process from now on (--cpu.ran-walk=false does so without trying)",
			strerror(-r));
		s->ran_auto = false;
		s->ran = false;
		return;
	}
	vw_complain(&s->ran_switch[on], VW_LOG_INFO,
		    "cpu: bpf: ran walk %s: %llu tasks, %llu context switches a read (~%u ns a "
		    "task walked, ~%u ns a switch marked; %s in %llu us): %s",
		    on ? "on" : "off", (unsigned long long)tasks,
		    (unsigned long long)s->autow.last_switches,
		    s->autow.cost.task_ns, s->autow.cost.switch_ns, on ? "attached" : "detached",
		    (unsigned long long)(t0 / 1000),
		    on ? "walking only the processes that ran"
		       : "walking every process, nothing on the switch path");
}

/*
 * Every live process's runtime as s->live: where the ran walk loaded, the live set, updated
 * by the ran walk, or by a full walk at the first read, every VW_BPF_FULL_EVERY reads and
 * whenever a ring overflowed; else the full walk's records (one per process, read where the
 * walk left them, no copy) where it loaded and they all fit, else the task/ iterator's (one
 * per thread).
 */
static int read_live(struct bpf_state *s)
{
	struct vw_bpf_walk_hdr h;
	int r;

	if (!s->walk_cap)
		return read_threads(s);
	ran_mode_decide(s);
	if (s->mark_link >= 0 && !s->need_full && s->since_full + 1 < VW_BPF_FULL_EVERY) {
		r = read_ran(s);
		if (r == 0) {
			s->live = s->live_set.v;
			s->n_live = s->live_set.n;
			return 0;
		}
		if (r != -EAGAIN)
			return r;
	}
	s->need_full = true;
	r = run_walk(s, VW_BPF_FD_ITER_WALK, &h);
	if (r == -EAGAIN)
		return read_threads(s);
	if (r < 0)
		return r;
	s->walk_stats.full++;
	s->walk_stats.last_records = h.n;
	s->walk_stats.last_marks = UINT32_MAX;
	if (s->mark_link < 0) { /* every read a full walk: no set kept */
		s->live = s->walk_map;
		s->n_live = h.n;
		return 0;
	}
	r = vw_bpf_live_set(&s->live_set, s->walk_map, (size_t)h.n * sizeof(*s->walk_map));
	if (r < 0)
		return r;
	/* Copied: the mapping of every record goes (resident, it would double the set's memory);
	 * the ran walks map what they write, a few pages. */
	munmap((void *)s->walk_map, s->walk_len);
	s->walk_map = NULL;
	s->walk_len = 0;
	s->last_n = 0;
	s->need_full = false;
	s->since_full = 0;
	s->live = s->live_set.v;
	s->n_live = s->live_set.n;
	return 0;
}

int vw_cpu_bpf_walk_stats(void *state, struct vw_cpu_bpf_walk_stats *ret)
{
	const struct bpf_state *s = state;

	*ret = s->walk_stats;
	ret->ran_loaded = s->ran;
	ret->marking = s->mark_link >= 0;
	ret->auto_windows = s->autow.windows;
	return 0;
}

int vw_cpu_bpf_ran_costs(void *state, uint32_t task_ns, uint32_t switch_ns)
{
	struct bpf_state *s = state;

	if (!s->ran_auto)
		return -EINVAL;
	s->autow.cost = (struct vw_ranwalk_costs){ .task_ns = task_ns, .switch_ns = switch_ns };
	return 0;
}

int vw_cpu_bpf_exits_audit(void *state, size_t *only_map, size_t *only_picture, uint32_t *first)
{
	struct bpf_state *s = state;
	struct vw_bpf_exits whole = { 0 }, saved;
	int r = s->ring_prod ? ring_drain(s) : 0;

	*only_map = *only_picture = 0;
	*first = 0;
	if (r < 0)
		return r;
	saved = s->exits;
	s->exits = whole;
	r = map_for_each(s, NULL, s->fd[VW_BPF_FD_PROCS], sizeof(uint32_t),
			 sizeof(struct vw_bpf_proc), put_exit);
	whole = s->exits;
	s->exits = saved;
	for (size_t i = 0; r == 0; i++) {
		uint32_t tgid = vw_bpf_exits_tgid_at(&whole, i);
		const struct vw_bpf_proc *m, *p;

		if (!tgid)
			break;
		m = vw_bpf_exits_find(&whole, tgid);
		p = vw_bpf_exits_find(&s->exits, tgid);
		if (!p || p->start_ns != m->start_ns || p->dead_ns < m->dead_ns ||
		    p->exited != m->exited) {
			(*only_map)++;
			*first = *first ? *first : tgid;
		}
	}
	for (size_t i = 0; r == 0; i++) {
		uint32_t tgid = vw_bpf_exits_tgid_at(&s->exits, i);

		if (!tgid)
			break;
		if (!vw_bpf_exits_find(&whole, tgid)) {
			(*only_picture)++;
			*first = *first ? *first : tgid;
		}
	}
	vw_bpf_exits_free(&whole);
	return r;
}

uint64_t vw_cpu_bpf_stat(void *state, unsigned which)
{
	const struct bpf_state *s = state;

	return which < VW_BPF_STAT__COUNT ? s->stats_seen[which] : 0;
}

int vw_cpu_bpf_task_hash_fd(void *state)
{
	const struct bpf_state *s = state;

	return s->fd[VW_BPF_FD_TASK_HASH];
}

void vw_cpu_bpf_slot_sweep_set(void *state, unsigned budget, uint64_t confirm_ns)
{
	struct bpf_state *s = state;

	s->slots.budget = budget;
	s->slots.confirm_ns = confirm_ns;
}

bool vw_cpu_bpf_walked(void *state, uint32_t tgid)
{
	const struct bpf_state *s = state;

	if (s->walk_stats.last_marks == UINT32_MAX) /* a full walk's: every process */
		return true;
	for (uint32_t i = 0; i < s->last_n && s->walk_map; i++)
		if (s->walk_map[i].tgid == tgid)
			return true;
	return false;
}

int vw_cpu_bpf_pending(void *state, uint32_t tgid, uint64_t *ret)
{
	const struct bpf_state *s = state;
	struct vw_bpf_proc v;
	int r = vw_bpf_map_lookup_elem(s->fd[VW_BPF_FD_PROCS], &tgid, &v);

	*ret = r == 0 ? v.pending : 0;
	return r == -ENOENT ? 0 : r;
}

/*
 * The slow paths' counters, logged when they moved: a loss warned, a slow path that lost
 * nothing said at info (a full exits ring, or a thread the kernel gave no task storage, whose
 * slot the BPF side keeps in its per-thread hash: a nested program on the CPU, seen once under
 * load in a packaged daemon's journal). True where exit events were lost since the last call (or
 * the counters could not be read): this read takes the whole map.
 */
static bool check_stats(struct bpf_state *s)
{
	static const char *const what[VW_BPF_STAT__COUNT] = {
		[VW_BPF_STAT_PROC_FULL] = "exited threads lost to a full process map",
		[VW_BPF_STAT_TASK_FULL] = "exited threads lost for want of a slot",
		[VW_BPF_STAT_REUSED] = "exits lost to a pid reused before collection",
		[VW_BPF_STAT_RING_LOST] = "exit events that found the exits ring full (the "
					  "per-process map read whole instead: nothing lost)",
		[VW_BPF_STAT_TASK_HASHED] = "threads without task storage (their slot kept in "
					    "the per-thread hash instead: nothing lost)",
	};	/* The interrupt maps' are irq_check()'s. */
	static const bool lossless[VW_BPF_STAT__COUNT] = {
		[VW_BPF_STAT_RING_LOST] = true,
		[VW_BPF_STAT_TASK_HASHED] = true,
	};
	uint32_t zero = 0;
	char msg[2][512] = { "", "" }; /* [lossless] */
	size_t used[2] = { 0, 0 };
	uint64_t lost = s->stats_seen[VW_BPF_STAT_RING_LOST];

	if (vw_bpf_map_lookup_elem(s->fd[VW_BPF_FD_CPUS], &zero, s->cpu_a) < 0)
		return true;

	for (uint32_t k = 0; k < VW_BPF_STAT__COUNT; k++) {
		size_t m = lossless[k];
		uint64_t sum = 0;

		for (int i = 0; i < s->ncpus; i++)
			sum += s->cpu_a[i].stats[k];
		if (what[k] && sum != s->stats_seen[k] && used[m] < sizeof(msg[m])) {
			int w = snprintf(msg[m] + used[m], sizeof(msg[m]) - used[m], "%s%s: %llu",
					 used[m] ? ", " : "", what[k],
					 (unsigned long long)(sum - s->stats_seen[k]));

			used[m] += w > 0 ? (size_t)w : 0;
		}
		s->stats_seen[k] = sum;
	}
	if (used[0])
		vw_complain(&s->stats_complaint, VW_LOG_WARN, "cpu: bpf: %s", msg[0]);
	if (used[1])
		vw_complain(&s->stats_note, VW_LOG_INFO, "cpu: bpf: %s", msg[1]);
	return s->stats_seen[VW_BPF_STAT_RING_LOST] != lost;
}

/*
 * The per-process map as this read's start: the ring's events since the last read folded in
 * (a cost of what exited, nothing where nothing did: no bpf(2) call), then the counters: where
 * an event was lost (a full ring), or without a ring, the whole map read instead, as every
 * read did before the ring. An event lost after the counters were read is the next read's
 * to find: until then the map holds what it announced.
 */
static int exits_read(struct bpf_state *s)
{
	int r = s->ring_prod ? ring_drain(s) : 0;

	if (r < 0)
		return r;
	if (check_stats(s) || !s->ring_prod)
		s->exits_whole = true;
	if (!s->exits_whole)
		return 0;
	vw_bpf_exits_reset(&s->exits);
	r = map_for_each(s, NULL, s->fd[VW_BPF_FD_PROCS], sizeof(uint32_t),
			 sizeof(struct vw_bpf_proc), put_exit);
	if (r == 0)
		s->exits_whole = false; /* until the next loss (a failed read: the next read's) */
	return r;
}

/* ---- per-process counters ---- */

static int add_hw(struct bpf_state *s, struct vw_cpu_table *t, const void *key, const void *val)
{
	const struct vw_bpf_hw_proc *v = val;
	struct hw_rec *h;

	(void)t;
	if (vw_array_grow((void **)&s->hw_recs, sizeof(*s->hw_recs), s->n_hw, &s->cap_hw) < 0)
		return -ENOMEM;
	h = &s->hw_recs[s->n_hw++];
	*h = (struct hw_rec){ .start_ns = v->start_ns };
	memcpy(&h->tgid, key, sizeof(h->tgid));
	h->c.cycles = v->value[VW_BPF_HW_CYCLES];
	h->c.instructions = v->value[VW_BPF_HW_INSTRUCTIONS];
	h->c.cache_misses = v->value[VW_BPF_HW_CACHE_MISSES];
	return 0;
}

static int cmp_hw_key(const void *a, const void *b)
{
	const struct hw_key *x = a, *y = b;

	if (x->tgid != y->tgid)
		return x->tgid < y->tgid ? -1 : 1;
	return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

static int cmp_hw_rec(const void *a, const void *b)
{
	const struct hw_rec *x = a, *y = b;

	return x->tgid < y->tgid ? -1 : x->tgid > y->tgid;
}

/* The counter map, read after everything else: an exit's last slices are in by then. */
static int hw_collect(struct bpf_state *s, struct vw_cpu_table *t)
{
	int r;

	s->n_hw = 0;
	if (!s->hw_mask)
		return 0;
	r = map_for_each(s, t, s->fd[VW_BPF_FD_HW_PROCS], sizeof(uint32_t), sizeof(struct vw_bpf_hw_proc),
			 add_hw);
	if (r == 0 && s->n_hw)
		qsort(s->hw_recs, s->n_hw, sizeof(*s->hw_recs), cmp_hw_rec);
	return r;
}

static void hw_max(struct vw_proc_counters *c, const struct vw_proc_counters *was)
{
	c->cycles = VW_MAX(c->cycles, was->cycles);
	c->instructions = VW_MAX(c->instructions, was->instructions);
	c->cache_misses = VW_MAX(c->cache_misses, was->cache_misses);
}

/*
 * Entries that matched no process twice in a row go: an exited group's last switch-out after
 * its exit was collected, a reused tgid's stale counts. Once is not enough: a process born
 * after the read iterator passed has counts but no process yet.
 */
static int hw_sweep(struct bpf_state *s)
{
	int fd = s->fd[VW_BPF_FD_HW_PROCS];
	struct hw_key *swap;
	size_t cap;

	s->n_next = 0;
	for (size_t i = 0; i < s->n_hw; i++) {
		struct hw_key k = { .tgid = s->hw_recs[i].tgid, .start_ns = s->hw_recs[i].start_ns };

		if (s->hw_recs[i].used)
			continue;
		if (s->n_orphans &&
		    bsearch(&k, s->hw_orphans, s->n_orphans, sizeof(k), cmp_hw_key)) {
			(void)vw_bpf_map_delete_elem(fd, &k.tgid);
			continue;
		}
		if (vw_array_grow((void **)&s->hw_next, sizeof(k), s->n_next, &s->cap_next) < 0)
			return -ENOMEM;
		s->hw_next[s->n_next++] = k; /* hw_recs is sorted: so is this */
	}
	swap = s->hw_orphans, s->hw_orphans = s->hw_next, s->hw_next = swap;
	cap = s->cap_orphans, s->cap_orphans = s->cap_next, s->cap_next = cap;
	s->n_orphans = s->n_next;
	return 0;
}

/*
 * Counters parallel to the finished snapshot's processes: each process's entry when its start
 * time matches, never below what the previous read reported (as the history layer does for
 * CPU time). An exited process is reported with its final counts, then its entry goes.
 */
static int hw_attach(struct bpf_state *s, struct vw_cpu_snapshot *snap)
{
	unsigned cur = s->hw_cur ^= 1;
	struct vw_cpu_seen prev = vw_cpu_history_prev(&s->hist);
	int fd = s->fd[VW_BPF_FD_HW_PROCS];
	struct vw_proc_counters *out;

	if (!s->hw_mask)
		return 0;
	s->n_hwc[cur] = 0;
	if (snap->n_procs > s->cap_hwc[cur]) {
		out = reallocarray(s->hwc[cur], snap->n_procs, sizeof(*out));
		if (!out)
			return -ENOMEM;
		s->hwc[cur] = out;
		s->cap_hwc[cur] = snap->n_procs;
	}
	out = s->hwc[cur];
	for (size_t i = 0; i < snap->n_procs; i++) {
		const struct vw_proc_cpu *p = &snap->procs[i];
		struct hw_rec key = { .tgid = p->tgid }, *h = NULL;
		const struct vw_proc_seen *was;

		out[i] = (struct vw_proc_counters){ 0 };
		if (s->n_hw)
			h = bsearch(&key, s->hw_recs, s->n_hw, sizeof(key), cmp_hw_rec);
		if (h && h->start_ns / s->ns_per_tick == p->start_time) {
			h->used = true;
			out[i] = h->c;
			if (p->exited)
				(void)vw_bpf_map_delete_elem(fd, &h->tgid);
		}
		was = vw_cpu_seen_find(prev, p->tgid, p->start_time);
		if (was && (size_t)(was - prev.procs) < s->n_hwc[cur ^ 1])
			hw_max(&out[i], &s->hwc[cur ^ 1][was - prev.procs]);
	}
	s->n_hwc[cur] = snap->n_procs;
	snap->counters = out;
	snap->hw_available = s->hw_mask;
	return hw_sweep(s);
}

static void hw_check_stats(struct bpf_state *s)
{
	uint32_t zero = 0;
	uint64_t sum[VW_BPF_HW_STAT__COUNT] = { 0 };

	if (!s->hw_mask ||
	    vw_bpf_map_lookup_elem(s->fd[VW_BPF_FD_HW_CPUS], &zero, s->hw_cpu) < 0)
		return;
	for (int i = 0; i < s->ncpus; i++)
		for (uint32_t k = 0; k < VW_BPF_HW_STAT__COUNT; k++)
			sum[k] += s->hw_cpu[i].stats[k];
	if (sum[VW_BPF_HW_STAT_READ_ERR] != s->hw_stats_seen[VW_BPF_HW_STAT_READ_ERR] ||
	    sum[VW_BPF_HW_STAT_FULL] != s->hw_stats_seen[VW_BPF_HW_STAT_FULL] ||
	    sum[VW_BPF_HW_STAT_REUSED] != s->hw_stats_seen[VW_BPF_HW_STAT_REUSED])
		vw_complain(&s->hw_complaint, VW_LOG_WARN,
			    "cpu: bpf: counters: %llu failed reads, %llu slices lost to a full map, "
			    "%llu reused tgids",
			    (unsigned long long)(sum[VW_BPF_HW_STAT_READ_ERR] -
						 s->hw_stats_seen[VW_BPF_HW_STAT_READ_ERR]),
			    (unsigned long long)(sum[VW_BPF_HW_STAT_FULL] -
						 s->hw_stats_seen[VW_BPF_HW_STAT_FULL]),
			    (unsigned long long)(sum[VW_BPF_HW_STAT_REUSED] -
						 s->hw_stats_seen[VW_BPF_HW_STAT_REUSED]));
	memcpy(s->hw_stats_seen, sum, sizeof(sum));
}

/* ---- the ghost check ---- */

/* The starttime (ticks since boot) /proc/PID/stat gives; -ENOENT where there is no PID. */
static int proc_start_ticks(int procfd, uint32_t tgid, uint64_t *ret)
{
	char path[32], buf[1024], comm[VW_COMM_LEN];
	uint64_t ticks;
	size_t len;
	int r;

	snprintf(path, sizeof(path), "%u/stat", tgid);
	r = vw_read_file_at(procfd, path, buf, sizeof(buf), &len);
	if (r < 0)
		return r == -ESRCH ? -ENOENT : r;
	return vw_procfs_parse_pid_stat(buf, comm, &ticks, ret);
}

/*
 * A process is reported alive while its entry in the per-process map has no exit mark; the
 * mark waits for every exited thread's sched_process_free. That wait is not safe to rely on:
 * after a mass kill whose orphans init reaps, a share of those frees (5 to 45 % of 800 on
 * 6.18) never reached the program, though the tracepoint fired for each task and the
 * programs counted no recursion misses, and the processes stayed alive here for good. So a
 * process known only from the map (no live thread in the read: kind still unknown) for a
 * while is looked up in /proc under the procfs root (cpu_ghost.c says when): gone, or its
 * PID now another process's, at two lookups in a row (a zombie reaped just before the first
 * has its frees still to come, an RCU grace period later), it is reported exited with what
 * the map holds (all but the last moments of its threads after their exit) and its entry goes. A zombie not yet reaped
 * is still in /proc and stays alive, as it does there. Only such processes are looked at: a
 * process with a live thread is never checked.
 */
static int ghost_gone(void *ctx, const struct vw_proc_cpu *p)
{
	struct bpf_state *s = ctx;
	uint64_t start = 0;
	int r = proc_start_ticks(s->procfd, p->tgid, &start);

	if (r == 0 && start == p->start_time)
		return 0; /* there: a zombie, or (never seen yet) threads the read missed */
	return r < 0 && r != -ENOENT ? r : 1;
}

/* Reported exited by the check: its map entry (if still this process's) and exits go. */
static void ghost_drop(void *ctx, const struct vw_proc_cpu *p)
{
	struct bpf_state *s = ctx;
	struct vw_bpf_proc v;

	if (vw_bpf_map_lookup_elem(s->fd[VW_BPF_FD_PROCS], &p->tgid, &v) == 0 &&
	    v.start_ns / s->ns_per_tick == p->start_time)
		(void)vw_bpf_map_delete_elem(s->fd[VW_BPF_FD_PROCS], &p->tgid);
	vw_bpf_exits_forget(&s->exits, p->tgid, p->start_time, s->ns_per_tick);
}

static void ghost_check(struct bpf_state *s, struct vw_cpu_snapshot *snap)
{
	size_t caught = vw_ghost_check_run(&s->ghost, snap, vw_cpu_history_prev(&s->hist),
					   vw_now_ns());

	if (caught)
		vw_complain(&s->ghost_complaint, VW_LOG_WARN,
			    "cpu: bpf: %zu processes had exited without their exit being seen "
			    "(found gone from /proc): reported exited now "
			    "(virtwatt_cpu_accounting_ghosts_total counts them)",
			    caught);
	snap->ghosts = s->ghost.ghosts;
}

/* ---- the fallback hash's sweep (cpu_slots.h) ---- */

/* Thread pid in /proc under the procfs root (a thread's PID is there too, though not listed):
 * 1 gone, 0 there, -errno cannot tell. */
static int slot_gone(void *ctx, uint32_t pid)
{
	struct bpf_state *s = ctx;
	struct stat st;
	char path[16];

	snprintf(path, sizeof(path), "%u", pid);
	if (fstatat(s->procfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return 0;
	return errno == ENOENT || errno == ESRCH ? 1 : -errno;
}

/*
 * The sweep deletes a slot because /proc lacks its PID, and the slot may be a live thread's (a
 * seeded one whose task storage could not be made): deleting it loses that thread's time since
 * the start at its exit. The slots are keyed by the host's PIDs, so only a procfs of the host's
 * PID namespace that shows every process can say one is gone: a container's own /proc (no
 * hostPID) lacks nearly all of them, and one mounted hidepid=2/invisible hides other users'
 * from a reader without CAP_SYS_PTRACE (PID 1 then hidden too). Elsewhere the hash is not
 * swept: a lost free keeps its slot (counted in no_thread_slot once the hash is full), as
 * before the sweep. (The ghost check keeps running there: it looks only at processes no live
 * thread of which the read saw.)
 */
static bool slots_procfs_off(int procfd)
{
	struct vw_pidns ns;
	bool host = vw_pidns_probe(procfd, &ns) == 0 &&
		    (ns.mode == VW_PIDNS_SAME || ns.mode == VW_PIDNS_DAEMON_IN_CHILD);

	if (host && faccessat(procfd, "1", F_OK, 0) < 0) {
		snprintf(ns.how, sizeof(ns.how), "PID 1 hidden (hidepid?): %s", strerror(errno));
		host = false;
	}
	if (!host)
		vw_info("cpu: bpf: the per-thread hash is not swept: the procfs root is not the host's "
			"PID namespace's with every process shown (%s, %s); a thread slot whose free "
			"never comes stays taken",
			vw_pidns_mode_name(ns.mode), ns.how);
	vw_pidns_fini(&ns);
	return !host;
}

/* The entry deleted if still sl's: a thread that took the PID since (the pid space wrapped)
 * and its slot over has another start time. */
static int slot_delete(void *ctx, const struct vw_slot *sl)
{
	struct bpf_state *s = ctx;
	struct vw_bpf_task v;
	int r = vw_bpf_map_lookup_elem(s->fd[VW_BPF_FD_TASK_HASH], &sl->pid, &v);

	if (r < 0)
		return r;
	if (v.start_ns != sl->start_ns)
		return -ESTALE;
	return vw_bpf_map_delete_elem(s->fd[VW_BPF_FD_TASK_HASH], &sl->pid);
}

static int put_slot(struct bpf_state *s, struct vw_cpu_table *t, const void *key, const void *val)
{
	const struct vw_bpf_task *v = val;

	(void)t;
	if (vw_array_grow((void **)&s->slot_buf, sizeof(*s->slot_buf), s->n_slot_buf,
			  &s->cap_slot_buf) < 0)
		return -ENOMEM;
	memcpy(&s->slot_buf[s->n_slot_buf].pid, key, sizeof(uint32_t));
	s->slot_buf[s->n_slot_buf++].start_ns = v->start_ns;
	return 0;
}

/*
 * The fallback hash (tp_btf) read, and the slots of threads the kernel no longer has deleted:
 * a free that never reached the program would keep one taken for good, and a hash full of them
 * leaves every later thread that needs one without (VW_BPF_STAT_TASK_FULL). Usually empty: one
 * bpf(2) call. Errors leave it for the next read.
 */
static void slots_sweep(struct bpf_state *s, struct vw_cpu_snapshot *snap)
{
	int r = 0;

	s->n_slot_buf = 0;
	if (s->fd[VW_BPF_FD_TASK_HASH] >= 0 && !s->slots_off)
		r = map_for_each(s, NULL, s->fd[VW_BPF_FD_TASK_HASH], sizeof(uint32_t),
				 sizeof(struct vw_bpf_task), put_slot);
	if (r == 0 && s->n_slot_buf)
		r = vw_slot_sweep_run(&s->slots, s->slot_buf, s->n_slot_buf, vw_now_ns());
	if (r > 0)
		vw_complain(&s->slots_complaint, VW_LOG_WARN,
			    "cpu: bpf: %d threads' slots in the per-thread hash removed: their "
			    "threads are gone from /proc and their free never came (counted in "
			    "virtwatt_cpu_accounting_stale_slots_removed_total)",
			    r);
	else if (r < 0)
		vw_debug("cpu: bpf: sweep the per-thread hash: %s", strerror(-r));
	snap->stale_slots = s->slots.removed;
}

/*
 * The entries of the exits this read reported, deleted: one BPF_MAP_DELETE_BATCH (a call for
 * all of them, not one each), key by key where the kernel has no batch ops or the batch
 * failed otherwise. A key not there (-ENOENT) is passed over.
 */
static void exits_delete(struct bpf_state *s)
{
	int fd = s->fd[VW_BPF_FD_PROCS];
	bool one_by_one = s->no_batch;
	size_t i = 0;

	while (i < s->n_gone && !one_by_one) {
		uint32_t count = (uint32_t)VW_MIN(s->n_gone - i, (size_t)UINT32_MAX);
		int r = vw_bpf_map_delete_batch(fd, &s->gone[i], &count);

		i += count;
		if (r == 0)
			continue;
		if (r == -ENOENT) {
			i++;
			continue;
		}
		one_by_one = true;
		if (r != -EINVAL && r != -EOPNOTSUPP && r != -ENOTSUPP_KERNEL)
			continue;
		vw_debug("cpu: bpf: no batch map deletes here, deleting key by key");
		s->no_batch = true;
	}
	for (; i < s->n_gone; i++)
		(void)vw_bpf_map_delete_elem(fd, &s->gone[i]);
	s->n_gone = 0;
}

/*
 * Take one entry of an interrupt map (cpu_time.bpf.c: irq_cgroups, irq_procs) and delete it at
 * once, so the programs start it again from 0. Where the kernel has no lookup-and-delete for
 * hashes (before 5.14), a lookup then a delete: what a CPU adds between the two is lost
 * (microseconds).
 */
static int irq_take(struct bpf_state *s, int fd, const void *key, uint64_t *ns)
{
	int r = s->irq_no_atomic ? -EINVAL : vw_bpf_map_lookup_and_delete_elem(fd, key, ns);

	if (r == -EINVAL || r == -ENOTSUPP_KERNEL || r == -EOPNOTSUPP) {
		s->irq_no_atomic = true;
		r = vw_bpf_map_lookup_elem(fd, key, ns);
		if (r == 0)
			(void)vw_bpf_map_delete_elem(fd, key);
	}
	return r < 0 ? r : *ns ? 0 : -ENOENT;
}

static int cmp_proc_irq(const void *a, const void *b)
{
	const struct vw_proc_irq *x = a, *y = b;

	return (x->tgid > y->tgid) - (x->tgid < y->tgid);
}

/* Interrupt spans that found their map full (check_stats() summed them): counted, and said
 * (rate-limited) with what it means. */
static void irq_check(struct bpf_state *s, struct vw_cpu_snapshot *ret)
{
	static const uint32_t k[4] = { VW_BPF_STAT_IRQ_CGROUP_FULL, VW_BPF_STAT_IRQ_PROC_FULL,
				       VW_BPF_STAT_IRQ_CGROUP_FULL_NS, VW_BPF_STAT_IRQ_PROC_FULL_NS };
	uint64_t d[4];
	bool news = false;

	for (int i = 0; i < 4; i++) {
		d[i] = s->stats_seen[k[i]] - s->irq_seen[i];
		news |= d[i] != 0;
	}
	ret->irq_untracked_spans[VW_CPU_IRQ_CGROUP] = s->stats_seen[VW_BPF_STAT_IRQ_CGROUP_FULL];
	ret->irq_untracked_spans[VW_CPU_IRQ_PROCESS] = s->stats_seen[VW_BPF_STAT_IRQ_PROC_FULL];
	ret->irq_untracked_ns[VW_CPU_IRQ_CGROUP] = s->stats_seen[VW_BPF_STAT_IRQ_CGROUP_FULL_NS];
	ret->irq_untracked_ns[VW_CPU_IRQ_PROCESS] = s->stats_seen[VW_BPF_STAT_IRQ_PROC_FULL_NS];
	if (!news)
		return;
	vw_complain(&s->irq_complaint, VW_LOG_WARN,
		    "cpu: bpf: interrupt time not taken out: %llu spans (%.3f ms) of cgroups and "
		    "%llu (%.3f ms) of processes found their map full (more than %u cgroups or %u "
		    "processes interrupted between two reads): that time stays in the weight of "
		    "the container and process it interrupted, as on a kernel without interrupt "
		    "accounting; counted in virtwatt_cpu_accounting_irq_untracked_*_total",
		    (unsigned long long)d[0], (double)d[2] / 1e6, (unsigned long long)d[1],
		    (double)d[3] / 1e6, VW_BPF_IRQ_CGROUPS, VW_BPF_IRQ_PROCS);
	memcpy(s->irq_seen, (uint64_t[4]){ s->stats_seen[k[0]], s->stats_seen[k[1]],
					   s->stats_seen[k[2]], s->stats_seen[k[3]] },
	       sizeof(s->irq_seen));
}

/* The interrupt time per cgroup and per process since the last read. Errors only leave the
 * lists short. */
static void irq_collect(struct bpf_state *s, struct vw_cpu_snapshot *ret)
{
	int fd = s->fd[VW_BPF_FD_IRQ_CGROUPS];
	uint64_t key, next, ns;
	uint32_t tgid, tnext;

	s->n_irq = s->n_irq_procs = 0;
	for (unsigned i = 0; fd >= 0 && i < VW_BPF_IRQ_CGROUPS; i++) {
		if (vw_bpf_map_get_next_key(fd, i ? &key : NULL, &next) < 0)
			break;
		key = next;
		if (irq_take(s, fd, &key, &ns) < 0)
			continue;
		if (vw_array_grow((void **)&s->irq, sizeof(*s->irq), s->n_irq, &s->cap_irq) < 0)
			break;
		s->irq[s->n_irq++] = (struct vw_cgroup_irq){ .cgroup_id = key, .ns = ns };
	}
	fd = s->fd[VW_BPF_FD_IRQ_PROCS];
	for (unsigned i = 0; fd >= 0 && i < VW_BPF_IRQ_PROCS; i++) {
		if (vw_bpf_map_get_next_key(fd, i ? &tgid : NULL, &tnext) < 0)
			break;
		tgid = tnext;
		if (irq_take(s, fd, &tgid, &ns) < 0)
			continue;
		if (vw_array_grow((void **)&s->irq_procs, sizeof(*s->irq_procs), s->n_irq_procs,
				  &s->cap_irq_procs) < 0)
			break;
		s->irq_procs[s->n_irq_procs++] = (struct vw_proc_irq){ .tgid = tgid, .ns = ns };
	}
	if (s->n_irq_procs > 1)
		qsort(s->irq_procs, s->n_irq_procs, sizeof(*s->irq_procs), cmp_proc_irq);
	ret->irq = s->irq;
	ret->n_irq = s->n_irq;
	ret->irq_procs = s->irq_procs;
	ret->n_irq_procs = s->n_irq_procs;
}

static int bpf_read(void *state, struct vw_cpu_snapshot *ret)
{
	struct bpf_state *s = state;
	struct vw_cpu_table *t;
	int r;

	r = vw_cpu_history_begin(&s->hist, &t);
	if (r < 0)
		return r;
	r = exits_read(s);
	if (r == 0)
		r = vw_bpf_exits_emit(&s->exits, t, s->ns_per_tick);
	if (r == 0)
		r = read_live(s);
	if (r == 0)
		r = vw_bpf_rec_finish(t, s->live, s->n_live * sizeof(*s->live), &s->bases,
				      s->ns_per_tick);
	if (r == 0)
		r = hw_collect(s, t);
	if (r < 0) {
		vw_cpu_history_abort(&s->hist);
		return r;
	}
	/* Reported below, once: the entries go now (only the map's carry an exit mark). */
	for (size_t i = 0; i < t->n_procs; i++)
		if (t->procs[i].exited) {
			if (vw_array_grow((void **)&s->gone, sizeof(*s->gone), s->n_gone,
					  &s->cap_gone) == 0)
				s->gone[s->n_gone++] = t->procs[i].tgid;
			else /* no room to batch it */
				(void)vw_bpf_map_delete_elem(s->fd[VW_BPF_FD_PROCS], &t->procs[i].tgid);
			vw_bpf_exits_forget(&s->exits, t->procs[i].tgid, t->procs[i].start_time,
					    s->ns_per_tick);
		}
	exits_delete(s);
	hw_check_stats(s);
	vw_cpu_history_finish(&s->hist, ret);
	ret->ran_walk_on = s->mark_link >= 0;

	ret->exits_lost = s->stats_seen[VW_BPF_STAT_RING_LOST];
	ret->exits_untracked[VW_CPU_UNTRACKED_PROCESS_MAP_FULL] = s->stats_seen[VW_BPF_STAT_PROC_FULL];
	ret->exits_untracked[VW_CPU_UNTRACKED_NO_THREAD_SLOT] = s->stats_seen[VW_BPF_STAT_TASK_FULL];
	ret->exits_untracked[VW_CPU_UNTRACKED_PID_REUSED] = s->stats_seen[VW_BPF_STAT_REUSED];
	ghost_check(s, ret);
	slots_sweep(s, ret);
	irq_collect(s, ret);
	irq_check(s, ret);
	return hw_attach(s, ret);
}

const struct vw_cpu_account_ops vw_cpu_bpf = {
	.name = "bpf",
	.open = bpf_open,
	.read = bpf_read,
	.close = bpf_close,
};

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The BPF accountant's two halves: cpu_bpf_load.c loads and attaches the programs in a
 * short-lived child and hands over the fds to keep; cpu_bpf.c reads the maps through them with
 * bpf(2) (bpf_sys.h). Only the child loads libbpf (libbpf_lazy.c).
 */
#pragma once
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpu_account.h"
#include "perf_counters.h"

/*
 * The fds the loader child hands over, in this order. The perf event arrays are kept although
 * never read: their entries go when the map file they were set through is released.
 */
enum {
	VW_BPF_FD_PROCS,
	VW_BPF_FD_CPUS,
	VW_BPF_FD_HW_PROCS,
	VW_BPF_FD_HW_CPUS,
	VW_BPF_FD_HW_ARRAYS,                              /* one per enum vw_hw_counter */
	VW_BPF_FD_ITER_SEED = VW_BPF_FD_HW_ARRAYS + VW_HW__COUNT, /* run once at open, then closed */
	VW_BPF_FD_ITER_READ,                              /* the read iterator's link */
	VW_BPF_FD_WALK_OUT,  /* the walk's output array (cpu_walk.bpf.c): see vw_bpf_load_msg.walk */
	VW_BPF_FD_ITER_WALK, /* the walk's link */
	VW_BPF_FD_ITER_RAN,  /* the ran walk's link: see vw_bpf_load_msg.ran */
	VW_BPF_FD_MARK,      /* the switch program, which marks the threads that ran: loaded, not
			      * attached (cpu_bpf.c attaches it, vw_bpf_raw_tp_open) */
	VW_BPF_FD_EXITS,     /* the exits ring (struct vw_bpf_exit_ev), mmapped */
	VW_BPF_FD_IRQ_CGROUPS, /* interrupt time per interrupted cgroup (VW_BPF_IRQ_CGROUPS) */
	VW_BPF_FD_IRQ_PROCS,   /* and per interrupted process (VW_BPF_IRQ_PROCS) */
	VW_BPF_FD_TASK_HASH,   /* the per-thread hash: with tp_btf, the fallback one (cpu_slots.h) */
	VW_BPF_FD_LINKS,                                  /* then the attached programs' links */
	VW_BPF_FD__MAX = VW_BPF_FD_LINKS + 16, /* 16: every program of the skeleton */
};

/* What the parent decided, for the loader child. */
struct vw_bpf_load_req {
	char btf[PATH_MAX];
	uint32_t max_procs;
	uint32_t flags; /* VW_CPU_BPF_* */
	bool cgroup_v1;
};

/* One record on the loader's socket: a log line, or the result with the fds. */
enum { VW_BPF_MSG_LOG = 1, VW_BPF_MSG_RESULT };

struct vw_bpf_load_msg {
	uint32_t kind;
	int32_t level;    /* VW_BPF_MSG_LOG: enum vw_log_level */
	int32_t err;      /* VW_BPF_MSG_RESULT: what bpf_open returns */
	uint32_t raw;     /* the raw_tp twins were attached */
	uint32_t hw_mask; /* VW_HW_BIT() of the counters in use */
	uint32_t walk;    /* the walk loaded: VW_BPF_FD_WALK_OUT and _ITER_WALK are its */
	uint32_t ran;     /* the ran walk loaded too: VW_BPF_FD_ITER_RAN and _MARK are its */
	uint32_t n_fds;   /* VW_BPF_FD_LINKS plus the links, with err 0 */
	int32_t ncpus;    /* possible CPUs: the per-CPU maps' values, with err 0 */
	char text[1024];  /* VW_BPF_MSG_LOG */
};

struct vw_bpf_iter_buf {
	unsigned char *p;
	size_t len, cap;
};

/*
 * Load libbpf (in the loader child only): NULL, or what to tell the user, "libbpf is not
 * installed (<the loader's words>): install libbpf1".
 */
const char *vw_libbpf_load(void);

/* Test only: the library vw_libbpf_load loads, before it is first loaded ("libbpf.so.1"). */
void vw_libbpf_set_soname(const char *soname);

/* Kernel BTF below the injected sysfs root, as a path libbpf can open. */
int vw_cpu_bpf_btf_path(const struct vw_cpu_env *env, char *buf, size_t size);

/*
 * Load and attach in a child, which hands over the fds to keep (fds[], -1 where absent) and
 * its result (*m: err, raw, hw_mask, ncpus); its log lines are logged here. Reaped before return.
 * 0 when the child answered (then m->err says how the load went), or -errno.
 */
int vw_cpu_bpf_load(const struct vw_bpf_load_req *q, struct vw_bpf_load_msg *m,
		    int fds[VW_BPF_FD__MAX]);

/* Run an iterator link to its end into b (b->len bytes). */
int vw_cpu_bpf_iter_run(struct vw_bpf_iter_buf *b, int link_fd);

/* Close the n fds that are open, setting them to -1. */
void vw_cpu_bpf_close_fds(int *fds, size_t n);

/* Test and bench only: how the bpf accountant's reads walked (cpu_walk.bpf.c). */
struct vw_cpu_bpf_walk_stats {
	uint64_t full;          /* full walks (every process) */
	uint64_t ran;           /* ran walks (only the processes that ran) */
	uint64_t overflows;     /* ran walks that found a ring of marks overflowed: full instead */
	uint32_t last_records;  /* records the last walk wrote */
	uint32_t last_marks;    /* the last ran walk's marks and running tasks looked at;
				 * UINT32_MAX when the last walk was a full one */
	bool ran_loaded;        /* the ran walk loaded */
	bool marking;           /* its switch program is attached now */
	uint32_t attaches, detaches; /* of the switch program, since open */
	uint64_t auto_windows;  /* --cpu.ran-walk=auto's decisions taken */
};

/* The bpf accountant's (vw_cpu_bpf) state: its walks so far. */
int vw_cpu_bpf_walk_stats(void *state, struct vw_cpu_bpf_walk_stats *ret);
/*
 * Test only: the exits ring's picture against the per-process map read whole now (the ring
 * drained first): *only_map, entries of the map the picture lacks (or has with another start
 * or less dead time), *only_picture the reverse; the first such tgid in *first (0: none).
 */
int vw_cpu_bpf_exits_audit(void *state, size_t *only_map, size_t *only_picture, uint32_t *first);

/* Test only: the per-thread hash (cpu_time.bpf.c, task_hash; -1 under raw_tp), and the fallback
 * hash's sweep set to budget lookups a read and confirm_ns between the two (cpu_slots.h). */
int vw_cpu_bpf_task_hash_fd(void *state);
void vw_cpu_bpf_slot_sweep_set(void *state, unsigned budget, uint64_t confirm_ns);

/* Test only: a slow path's counter (enum vw_bpf_stat), summed over the CPUs by the last read. */
uint64_t vw_cpu_bpf_stat(void *state, unsigned which);

/* Test only: threads of tgid that passed sched_process_exit and whose free (an RCU grace period
 * later: their runtime final only then) has not come, from the per-process map (0: no entry). */
int vw_cpu_bpf_pending(void *state, uint32_t tgid, uint64_t *ret);

/* Whether the last walk wrote a record of tgid (every process, after a full walk). */
bool vw_cpu_bpf_walked(void *state, uint32_t tgid);
/* Test only, with VW_CPU_BPF_RAN_AUTO: the decision's costs (cpu_ranwalk.h), so that a test
 * can push it on (a task costs much) or off (a switch costs much) on this machine's own
 * counts. -EINVAL without VW_CPU_BPF_RAN_AUTO. */
int vw_cpu_bpf_ran_costs(void *state, uint32_t task_ns, uint32_t switch_ns);

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CPU accountant on bpf/cpu_time.bpf.c: open the skeleton, size the maps, pick tp_btf or its
 * raw_tp twins, seed every existing thread's runtime (values count from open), attach.
 *
 * All of that runs in a short-lived child: libbpf parses the kernel's BTF (CO-RE relocation,
 * the tp_btf probe), ~12 MiB of heap at its peak that this process would keep as VmHWM. Over
 * a socketpair the child sends its log lines, then its result with the fds to keep (SCM_RIGHTS):
 * the maps the reads use, the perf event arrays, the programs' links and the read iterator's.
 * This process holds only those fds and reads the maps through the bpf(2) wrappers.
 *
 * A read takes, in this order: the per-process map (time of exited threads, exit marks), then
 * the read iterator (every live thread's time since open). The iterator can only miss what
 * moved into the map meanwhile, never count it twice: a read can be a slice short, and the
 * history layer holds the value until the next read catches up. Exited processes are reported
 * once and deleted from the map. Every process carries the id of the cgroup it ran in last (in
 * the hierarchy vw_cpu_env.cgroup_v1 names); per-cgroup totals are the kernel's (cgroupfs.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "cpu_account.h"
#include "cpu_account_priv.h"
#include "cpu_time.h"
#include "cpu_time.skel.h"
#include "log.h"
#include "perf_counters.h"

#define BATCH_MIN 256u
#define ITER_CHUNK (64u * 1024u)
#define ENOTSUPP_KERNEL 524 /* the kernel's internal ENOTSUPP, leaked by some map ops */

/*
 * The fds the loader child hands over, in this order. The perf event arrays are kept although
 * never read: their entries go when the map file they were set through is released.
 */
enum {
	FD_PROCS,
	FD_CPUS,
	FD_HW_PROCS,
	FD_HW_CPUS,
	FD_HW_ARRAYS,                              /* one per enum vw_hw_counter */
	FD_ITER_READ = FD_HW_ARRAYS + VW_HW__COUNT, /* the read iterator's link */
	FD_LINKS,                                  /* then the attached programs' links */
	FD__MAX = FD_LINKS + 8,                    /* 8: every program of the skeleton */
};

/* What the parent decided, for the loader child. */
struct load_req {
	char btf[PATH_MAX];
	uint32_t max_procs;
	uint32_t flags; /* VW_CPU_BPF_* */
	bool cgroup_v1;
	int ncpus;
};

/* One record on the loader's socket: a log line, or the result with the fds. */
enum { MSG_LOG = 1, MSG_RESULT };

struct load_msg {
	uint32_t kind;
	int32_t level;    /* MSG_LOG: enum vw_log_level */
	int32_t err;      /* MSG_RESULT: what bpf_open returns */
	uint32_t raw;     /* the raw_tp twins were attached */
	uint32_t hw_mask; /* VW_HW_BIT() of the counters in use */
	uint32_t n_fds;   /* FD_LINKS plus the links, with err 0 */
	char text[1024];  /* MSG_LOG */
};

/* The loader child's objects: none of them outlives it. */
struct loader {
	struct cpu_time_bpf *skel;
	struct bpf_link *iter_read;
	int ncpus;
	bool cgroup_v1;
	unsigned hw_mask;
	int *hw_fds; /* [cpu * VW_HW__COUNT + kind], -1 when not open */
};

struct iter_buf {
	unsigned char *p;
	size_t len, cap;
};

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
	int fd[FD__MAX]; /* from the loader child, -1 where absent */
	bool no_batch;
	int ncpus;
	uint64_t ns_per_tick;
	struct vw_cpu_history hist;
	/* scratch reused between reads */
	struct iter_buf iter;
	uint32_t *exited;
	size_t n_exited, cap_exited;
	void *keys, *vals;
	uint32_t batch_cap;
	struct vw_bpf_cpu *cpu_a; /* the per-CPU value, ncpus */
	uint64_t stats_seen[VW_BPF_STAT__COUNT];
	struct vw_complaint stats_complaint;
	/* Per-process counters: none of this is used when hw_mask is 0. */
	unsigned hw_mask; /* VW_HW_BIT() of the kinds whose per-CPU events opened */
	struct hw_rec *hw_recs;
	size_t n_hw, cap_hw;
	struct vw_proc_counters *hwc[2]; /* parallel to hist.t[i].procs */
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

/* In the loader child: the socket its log lines go to. */
static int loader_sock = -1;

/* The parent's log; in the loader child a record for the parent to log. */
_printf_(2, 3) static void say(enum vw_log_level lv, const char *fmt, ...)
{
	struct load_msg m = { .kind = MSG_LOG, .level = (int32_t)lv };
	va_list ap;

	va_start(ap, fmt);
	if (loader_sock < 0)
		vw_logv(lv, fmt, ap);
	else if (lv <= vw_log_get_level() && vsnprintf(m.text, sizeof(m.text), fmt, ap) >= 0)
		(void)send(loader_sock, &m, offsetof(struct load_msg, text) + strlen(m.text) + 1,
			   MSG_NOSIGNAL);
	va_end(ap);
}

/* libbpf's messages go to our log; its debug chatter is dropped. */
_printf_(2, 0) static int libbpf_sink(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	enum vw_log_level lv = level == LIBBPF_WARN ? VW_LOG_WARN : VW_LOG_DEBUG;
	_cleanup_free_ char *msg = NULL;
	char *line, *save = NULL;

	if (level == LIBBPF_DEBUG || lv > vw_log_get_level())
		return 0;
	if (vasprintf(&msg, fmt, ap) < 0)
		return 0;
	for (line = strtok_r(msg, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		say(lv, "cpu: bpf: libbpf: %s", line);
	return 0;
}

static const char *verdict(int r)
{
	return r == -EPERM ? "not permitted (needs root, or CAP_BPF with CAP_PERFMON)" : strerror(-r);
}

/* Anything but "not permitted" or "not here" means this kernel cannot run us: try the next. */
static int unavailable(int r)
{
	return r == -EPERM || r == -ENODEV ? r : -EOPNOTSUPP;
}

/*
 * Kernel BTF below the injected sysfs root, as a path for libbpf's CO-RE relocation: the
 * root's own path comes from <procfs>/self/fd/N, so nothing here names /sys.
 */
static int btf_path(const struct vw_cpu_env *env, char *buf, size_t size)
{
	char link[64], root[PATH_MAX];
	ssize_t n;
	int r;

	if (faccessat(env->sysfs_fd, "kernel/btf/vmlinux", R_OK, 0) < 0)
		return -ENODEV;
	snprintf(link, sizeof(link), "self/fd/%d", env->sysfs_fd);
	n = readlinkat(env->procfs_fd, link, root, sizeof(root) - 1);
	if (n <= 0)
		return -ENODEV;
	root[n] = '\0';
	r = snprintf(buf, size, "%s/kernel/btf/vmlinux", strcmp(root, "/") == 0 ? "" : root);
	return r < 0 || (size_t)r >= size ? -ENAMETOOLONG : 0;
}

/*
 * Does this kernel attach BPF_PROG_TYPE_TRACING to the tracepoint's BTF type (tp_btf)? Loads a
 * two-instruction program, as libbpf-tools' probe_tp_btf() does, with libbpf muted. 1 yes,
 * 0 no, -EPERM.
 */
static int probe_tp_btf(const char *btf_file, const char *tp)
{
	const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	libbpf_print_fn_t old = libbpf_set_print(NULL);
	struct btf *btf = btf__parse(btf_file, NULL);
	char name[64];
	int id, fd, r = 0;

	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	id = btf ? btf__find_by_name_kind(btf, name, BTF_KIND_TYPEDEF) : -ENOENT;
	if (id > 0) {
		LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = BPF_TRACE_RAW_TP,
			    .attach_btf_id = (__u32)id);

		fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, NULL, "GPL", insns, ARRAY_SIZE(insns),
				   &opts);
		r = fd >= 0 ? 1 : (fd == -EPERM ? -EPERM : 0);
		if (fd >= 0)
			close(fd);
	}
	btf__free(btf);
	libbpf_set_print(old);
	return r;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * VW_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/*
 * Per-CPU counting events for the counter program: the hardware ones, or their software
 * stand-ins. A kind counts only if it opened on every CPU that is online (-ENODEV: offline);
 * without any, hw_mask stays 0 and the counter program is never loaded.
 */
static int hw_open(struct loader *l, bool standin)
{
	size_t n = (size_t)l->ncpus * VW_HW__COUNT;
	int err[VW_HW__COUNT] = { 0 };

	l->hw_fds = malloc(n * sizeof(*l->hw_fds));
	if (!l->hw_fds)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		l->hw_fds[i] = -1;
	for (unsigned c = 0; c < VW_HW__COUNT; c++) {
		bool any = false;

		for (int cpu = 0; cpu < l->ncpus && !err[c]; cpu++) {
			int fd = vw_hw_open_cpu(c, (unsigned)cpu, standin);

			if (fd >= 0)
				any = true;
			else if (fd != -ENODEV)
				err[c] = fd;
			l->hw_fds[(size_t)cpu * VW_HW__COUNT + c] = fd;
		}
		if (any && !err[c])
			l->hw_mask |= VW_HW_BIT(c);
		else
			for (int cpu = 0; cpu < l->ncpus; cpu++)
				vw_closep(&l->hw_fds[(size_t)cpu * VW_HW__COUNT + c]);
	}
	if (!l->hw_mask) {
		int r = err[VW_HW_INSTRUCTIONS] ? err[VW_HW_INSTRUCTIONS] : -ENOENT;

		say(VW_LOG_INFO,
		    "cpu: bpf: hardware counters unavailable (%s): splitting by CPU time",
		    strerror(-r));
		return 0;
	}
	say(VW_LOG_INFO, "cpu: bpf: per-process %s counters:%s%s%s",
	    standin ? "stand-in (software)" : "hardware",
	    l->hw_mask & VW_HW_BIT(VW_HW_CYCLES) ? " cycles" : "",
	    l->hw_mask & VW_HW_BIT(VW_HW_INSTRUCTIONS) ? " instructions" : "",
	    l->hw_mask & VW_HW_BIT(VW_HW_CACHE_MISSES) ? " cache_misses" : "");
	return 0;
}

static const struct bpf_map *hw_array(const struct cpu_time_bpf *skel, unsigned c)
{
	const struct bpf_map *maps[VW_HW__COUNT] = {
		[VW_HW_CYCLES] = skel->maps.hw_cycles,
		[VW_HW_INSTRUCTIONS] = skel->maps.hw_instructions,
		[VW_HW_CACHE_MISSES] = skel->maps.hw_cache_misses,
	};

	return maps[c];
}

/* The loaded perf event arrays get each CPU's event. */
static int hw_fill(struct loader *l, struct cpu_time_bpf *skel)
{
	for (unsigned c = 0; c < VW_HW__COUNT; c++) {
		int map_fd = bpf_map__fd(hw_array(skel, c));

		if (!(l->hw_mask & VW_HW_BIT(c)))
			continue;
		for (uint32_t cpu = 0; cpu < (uint32_t)l->ncpus; cpu++) {
			int fd = l->hw_fds[(size_t)cpu * VW_HW__COUNT + c];

			if (fd >= 0 && bpf_map_update_elem(map_fd, &cpu, &fd, BPF_ANY) < 0)
				return -errno;
		}
	}
	return 0;
}

/* Open and load one variant: the tp_btf programs with task storage, or the raw_tp twins. */
static int load_variant(struct loader *l, const char *btf_file, bool raw, uint32_t max_procs)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo, .btf_custom_path = btf_file);
	struct cpu_time_bpf *skel = cpu_time_bpf__open_opts(&oo);
	int r;

	if (!skel)
		return -errno;
	skel->rodata->open_ns = mono_ns();
	skel->rodata->use_pid_hash = raw;
	skel->rodata->cgroup_v1 = l->cgroup_v1;
	bpf_program__set_autoload(skel->progs.vw_switch_btf, !raw);
	bpf_program__set_autoload(skel->progs.vw_exit_btf, !raw);
	bpf_program__set_autoload(skel->progs.vw_switch_raw, raw);
	bpf_program__set_autoload(skel->progs.vw_exit_raw, raw);
	skel->rodata->hw_mask = l->hw_mask;
	bpf_program__set_autoload(skel->progs.vw_hwc_btf, l->hw_mask && !raw);
	bpf_program__set_autoload(skel->progs.vw_hwc_raw, l->hw_mask && raw);
	bpf_program__set_autoattach(skel->progs.vw_iter_seed, false);
	bpf_program__set_autoattach(skel->progs.vw_iter_read, false);
	r = bpf_map__set_max_entries(skel->maps.procs, max_procs);
	/* Threads outnumber processes; LRU evicts slots of tasks long gone first. */
	if (r == 0)
		r = bpf_map__set_max_entries(skel->maps.task_hash,
					     raw ? VW_MIN(max_procs, UINT32_MAX / 4) * 4 : 1);
	if (r == 0)
		r = bpf_map__set_max_entries(skel->maps.hw_procs, l->hw_mask ? max_procs : 1);
	if (r == 0)
		r = cpu_time_bpf__load(skel);
	if (r == 0)
		r = hw_fill(l, skel);
	if (r < 0) {
		cpu_time_bpf__destroy(skel);
		return r;
	}
	l->skel = skel;
	return 0;
}

/* Run an iterator (its link's fd) to the end; its output lands in *b. */
static int iter_run(struct iter_buf *b, int link_fd)
{
	_cleanup_close_ int fd = bpf_iter_create(link_fd);

	if (fd < 0)
		return fd;
	b->len = 0;
	for (;;) {
		ssize_t n;

		if (b->cap - b->len < ITER_CHUNK) {
			size_t cap = b->cap ? b->cap * 2 : 4 * ITER_CHUNK;
			unsigned char *nb = realloc(b->p, cap);

			if (!nb)
				return -ENOMEM;
			b->p = nb;
			b->cap = cap;
		}
		n = read(fd, b->p + b->len, b->cap - b->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		b->len += (size_t)n;
	}
}

/* Every existing thread gets its seed (its runtime now): values count from open. */
static int seed(struct loader *l)
{
	struct bpf_link *link = bpf_program__attach_iter(l->skel->progs.vw_iter_seed, NULL);
	struct iter_buf b = { 0 };
	int r;

	if (!link)
		return -errno;
	r = iter_run(&b, bpf_link__fd(link));
	free(b.p);
	bpf_link__destroy(link);
	return r;
}

static int attach(struct loader *l)
{
	int r = seed(l);

	if (r < 0)
		return r;
	r = cpu_time_bpf__attach(l->skel);
	if (r < 0)
		return r;
	l->iter_read = bpf_program__attach_iter(l->skel->progs.vw_iter_read, NULL);
	return l->iter_read ? 0 : -errno;
}

/* Everything that parses the kernel's BTF: the probe, CO-RE relocation at load, attach. */
static int load(struct loader *l, const struct load_req *q, bool *ret_raw)
{
	bool raw;
	int r, tp;

	tp = probe_tp_btf(q->btf, "sched_switch");
	if (tp < 0) {
		say(VW_LOG_INFO, "cpu: bpf: load a probe program: %s", verdict(tp));
		return tp;
	}
	r = hw_open(l, q->flags & VW_CPU_BPF_HW_STANDIN);
	if (r < 0)
		return r;
	raw = !tp || (q->flags & VW_CPU_BPF_RAW_TP);
	r = load_variant(l, q->btf, raw, q->max_procs);
	if (r < 0 && r != -EPERM && !raw) {
		say(VW_LOG_INFO, "cpu: bpf: tp_btf programs did not load (%s), trying raw_tp",
		    strerror(-r));
		raw = true;
		r = load_variant(l, q->btf, raw, q->max_procs);
	}
	if (r < 0) {
		say(VW_LOG_INFO, "cpu: bpf: load: %s", verdict(r));
		return unavailable(r);
	}
	r = attach(l);
	if (r < 0) {
		say(VW_LOG_INFO, "cpu: bpf: attach: %s", verdict(r));
		return unavailable(r);
	}
	*ret_raw = raw;
	return 0;
}

/* The fds the parent keeps, in the FD_* order; their number, or -E2BIG. */
static int loader_fds(const struct loader *l, int fds[FD__MAX])
{
	const struct bpf_object_skeleton *sk = l->skel->skeleton;
	int n = FD_LINKS;

	fds[FD_PROCS] = bpf_map__fd(l->skel->maps.procs);
	fds[FD_CPUS] = bpf_map__fd(l->skel->maps.cpus);
	fds[FD_HW_PROCS] = bpf_map__fd(l->skel->maps.hw_procs);
	fds[FD_HW_CPUS] = bpf_map__fd(l->skel->maps.hw_cpus);
	for (unsigned c = 0; c < VW_HW__COUNT; c++)
		fds[FD_HW_ARRAYS + c] = bpf_map__fd(hw_array(l->skel, c));
	fds[FD_ITER_READ] = bpf_link__fd(l->iter_read);
	for (int i = 0; i < sk->prog_cnt; i++) {
		struct bpf_link *link = *sk->progs[i].link;

		if (!link)
			continue;
		if (n == FD__MAX)
			return -E2BIG;
		fds[n++] = bpf_link__fd(link);
	}
	return n;
}

/*
 * The loader child: its result and fds go to the parent, then it is gone with every object
 * libbpf made (the kernel's BTF parsed, the ELF). _exit only: no atexit or test handlers here.
 */
__attribute__((noreturn)) static void loader_main(int sock, const struct load_req *q)
{
	static const int crash[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT };
	struct loader l = { .ncpus = q->ncpus, .cgroup_v1 = q->cgroup_v1 };
	struct load_msg m = { .kind = MSG_RESULT };
	char cbuf[CMSG_SPACE(sizeof(int) * FD__MAX)] = { 0 };
	struct iovec iov = { .iov_base = &m, .iov_len = offsetof(struct load_msg, text) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	int fds[FD__MAX], r;
	bool raw = false;

	/* A crash is to end this process, not to land in a handler of the parent's. */
	for (size_t i = 0; i < ARRAY_SIZE(crash); i++)
		signal(crash[i], SIG_DFL);
	loader_sock = sock;
	libbpf_set_print(libbpf_sink);
	r = load(&l, q, &raw);
	if (r == 0)
		r = loader_fds(&l, fds);
	if (r > 0) {
		struct cmsghdr *cm;

		m.n_fds = (uint32_t)r;
		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * m.n_fds);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * m.n_fds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * m.n_fds);
		r = 0;
	}
	m.err = r;
	m.raw = raw;
	m.hw_mask = l.hw_mask;
	_exit(sendmsg(sock, &mh, MSG_NOSIGNAL) < 0);
}

/* The fds of one received record, up to max; MSG_CMSG_CLOEXEC made them close-on-exec. */
static size_t take_fds(struct msghdr *mh, int *fds, size_t max)
{
	size_t n = 0;

	for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		size_t k;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(fd));
			if (n < max)
				fds[n++] = fd;
			else
				close(fd);
		}
	}
	return n;
}

static void close_fds(int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		vw_closep(&fds[i]);
}

/* Log the child's lines until its result comes: 0, or -EIO when it breaks off. */
static int recv_result(int sock, struct load_msg *m, int fds[FD__MAX])
{
	for (;;) {
		char cbuf[CMSG_SPACE(sizeof(int) * FD__MAX)];
		struct iovec iov = { .iov_base = m, .iov_len = sizeof(*m) };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
				     .msg_controllen = sizeof(cbuf) };
		ssize_t n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
		size_t got;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		got = take_fds(&mh, fds, FD__MAX);
		if ((size_t)n < offsetof(struct load_msg, text) ||
		    (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
			break;
		if (m->kind == MSG_LOG && got == 0) {
			enum vw_log_level lv = VW_MIN((uint32_t)m->level, (uint32_t)VW_LOG_DEBUG);

			m->text[VW_MIN((size_t)n - offsetof(struct load_msg, text),
				       sizeof(m->text) - 1)] = '\0';
			vw_log(lv, "%s", m->text);
			continue;
		}
		if (m->kind != MSG_RESULT || m->err > 0 || got != m->n_fds ||
		    (m->err == 0 && got < FD_LINKS))
			break;
		return 0;
	}
	close_fds(fds, FD__MAX);
	return -EIO;
}

/*
 * Load and attach in a child, which hands over the fds to keep: libbpf's BTF parse and
 * relocation (~12 MiB at peak) never touch this process's memory. Reaped before return.
 */
static int load_in_child(const struct load_req *q, struct load_msg *m, int fds[FD__MAX])
{
	int sv[2], status = 0, r;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	pid = fork();
	if (pid == 0) {
		close(sv[0]);
		loader_main(sv[1], q);
	}
	r = pid < 0 ? -errno : 0;
	close(sv[1]);
	if (r == 0)
		r = recv_result(sv[0], m, fds);
	close(sv[0]);
	if (pid < 0) {
		vw_warn("cpu: bpf: start the loader process: %s", strerror(-r));
		return r;
	}
	if (r < 0)
		(void)kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (r == 0)
		return 0;
	if (WIFSIGNALED(status))
		vw_warn("cpu: bpf: the loader process was killed by signal %d (%s) before its "
			"result", WTERMSIG(status), strsignal(WTERMSIG(status)));
	else
		vw_warn("cpu: bpf: the loader process ended (status %d) without a usable result",
			WEXITSTATUS(status));
	return -EIO;
}

/* The maps are what bpf/cpu_time.h says: the reads below size their buffers by it. */
static int check_map(int fd, uint32_t ksz, uint32_t vsz)
{
	struct bpf_map_info info = { 0 };
	uint32_t len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len) < 0)
		return -errno;
	if (info.key_size == ksz && info.value_size == vsz)
		return 0;
	vw_warn("cpu: bpf: map %s has %u-byte keys and %u-byte values, expected %u and %u",
		info.name, info.key_size, info.value_size, ksz, vsz);
	return -EIO;
}

static int check_maps(const struct bpf_state *s)
{
	int r = check_map(s->fd[FD_PROCS], sizeof(uint32_t), sizeof(struct vw_bpf_proc));

	if (r == 0)
		r = check_map(s->fd[FD_CPUS], sizeof(uint32_t), sizeof(struct vw_bpf_cpu));
	if (r == 0)
		r = check_map(s->fd[FD_HW_PROCS], sizeof(uint32_t), sizeof(struct vw_bpf_hw_proc));
	if (r == 0)
		r = check_map(s->fd[FD_HW_CPUS], sizeof(uint32_t), sizeof(struct vw_bpf_hw_cpu));
	return r;
}

static void bpf_close(void *state)
{
	struct bpf_state *s = state;

	if (!s)
		return;
	close_fds(s->fd, FD__MAX);
	vw_cpu_history_free(&s->hist);
	free(s->iter.p);
	free(s->exited);
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

static int bpf_open(const struct vw_cpu_env *env, void **ret_state)
{
	struct load_req q = { 0 };
	struct load_msg m;
	struct bpf_state *s;
	int r;

	if (!env || env->sysfs_fd < 0 || env->procfs_fd < 0)
		return -EINVAL;
	r = btf_path(env, q.btf, sizeof(q.btf));
	if (r < 0) {
		vw_info("cpu: bpf: no kernel BTF (kernel/btf/vmlinux) under the sysfs root");
		return r == -ENAMETOOLONG ? r : -ENODEV;
	}
	libbpf_set_print(libbpf_sink);
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < FD__MAX; i++)
		s->fd[i] = -1;
	s->ns_per_tick = vw_cpu_ns_per_tick();
	s->no_batch = env->flags & VW_CPU_BPF_NO_BATCH;
	s->ncpus = libbpf_num_possible_cpus();
	if (s->ncpus <= 0) {
		r = s->ncpus ? s->ncpus : -ENODEV;
		goto fail;
	}
	s->cpu_a = calloc((size_t)s->ncpus, sizeof(*s->cpu_a));
	if (!s->cpu_a) {
		r = -ENOMEM;
		goto fail;
	}
	q.max_procs = env->max_procs ? env->max_procs : VW_CPU_DEFAULT_MAX_PROCS;
	q.flags = env->flags;
	q.cgroup_v1 = env->cgroup_v1;
	q.ncpus = s->ncpus;
	r = load_in_child(&q, &m, s->fd);
	if (r == 0)
		r = m.err;
	if (r < 0)
		goto fail;
	s->hw_mask = m.hw_mask;
	if (s->hw_mask) {
		s->hw_cpu = calloc((size_t)s->ncpus, sizeof(*s->hw_cpu));
		if (!s->hw_cpu) {
			r = -ENOMEM;
			goto fail;
		}
	}
	r = check_maps(s);
	if (r < 0)
		goto fail;
	vw_debug("cpu: bpf: %s programs attached%s, maps for %u processes, %d CPUs",
		 m.raw ? "raw_tp" : "tp_btf", s->hw_mask ? " with counters" : "", q.max_procs,
		 s->ncpus);
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
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	uint64_t in = 0, out = 0;
	bool first = true;
	uint32_t cap = VW_MAX(s->batch_cap, BATCH_MIN);
	int r;

	r = batch_buffers(s, cap, ksz, vsz);
	for (;;) {
		uint32_t count = cap;

		if (r < 0)
			return r;
		r = bpf_map_lookup_batch(fd, first ? NULL : &in, &out, s->keys, s->vals, &count,
					 &opts);
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
	while ((r = bpf_map_get_next_key(fd, first ? NULL : &cur, &next)) == 0) {
		if (bpf_map_lookup_elem(fd, &next, val) == 0) {
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

static void comm_copy(char dst[VW_COMM_LEN], const char src[VW_BPF_COMM_LEN])
{
	_Static_assert(VW_COMM_LEN == VW_BPF_COMM_LEN, "comm sizes");
	memcpy(dst, src, VW_COMM_LEN);
	dst[VW_COMM_LEN - 1] = '\0';
}

static int add_proc(struct bpf_state *s, struct vw_cpu_table *t, const void *key, const void *val)
{
	const struct vw_bpf_proc *v = val;
	struct vw_proc_cpu *p = vw_cpu_table_new_proc(t);

	if (!p)
		return -ENOMEM;
	memcpy(&p->tgid, key, sizeof(p->tgid));
	p->cgroup_id = v->cgroup_id;
	p->cpu_ns = v->dead_ns;
	p->start_time = v->start_ns / s->ns_per_tick;
	comm_copy(p->comm, v->comm);
	p->exited = v->exited != 0;
	if (!p->exited)
		return 0;
	if (vw_array_grow((void **)&s->exited, sizeof(*s->exited), s->n_exited, &s->cap_exited) < 0)
		return -ENOMEM;
	s->exited[s->n_exited++] = p->tgid;
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

/*
 * Live threads from the read iterator: their time since open goes to their process (created
 * here when no thread of it has exited yet). t is sorted.
 */
static int add_live(struct bpf_state *s, struct vw_cpu_table *t)
{
	struct vw_bpf_task_rec *recs = (struct vw_bpf_task_rec *)s->iter.p;
	size_t n = s->iter.len / sizeof(*recs), n_sorted = t->n_procs;

	if (s->iter.len % sizeof(*recs))
		return -EBADMSG;
	if (n)
		qsort(recs, n, sizeof(*recs), cmp_rec);
	for (size_t i = 0, j; i < n; i = j) {
		const struct vw_bpf_task_rec *lead = &recs[i];
		uint64_t start = lead->start_ns / s->ns_per_tick, runtime = 0;
		const struct vw_proc_cpu *found;
		struct vw_proc_cpu *p;

		for (j = i; j < n && recs[j].tgid == lead->tgid; j++)
			runtime += recs[j].runtime_ns;
		found = vw_cpu_table_find_n(t, n_sorted, lead->tgid, start);
		if (found && found->exited)
			continue; /* cannot be: the iterator skips exiting threads */
		p = found ? &t->procs[found - t->procs] : vw_cpu_table_new_proc(t);
		if (!p)
			return -ENOMEM;
		p->tgid = lead->tgid;
		p->start_time = start;
		p->cpu_ns += runtime;
		p->cgroup_id = lead->cgroup_id;
		comm_copy(p->comm, lead->comm);
	}
	return 0;
}

static void check_stats(struct bpf_state *s)
{
	static const char *const what[VW_BPF_STAT__COUNT] = {
		[VW_BPF_STAT_PROC_FULL] = "exited threads lost to a full process map",
		[VW_BPF_STAT_TASK_FULL] = "threads without a slot",
		[VW_BPF_STAT_REUSED] = "exits lost to a pid reused before collection",
	};
	uint32_t zero = 0;
	bool news = false;
	char msg[256] = "";
	size_t used = 0;

	if (bpf_map_lookup_elem(s->fd[FD_CPUS], &zero, s->cpu_a) < 0)
		return;

	for (uint32_t k = 0; k < VW_BPF_STAT__COUNT; k++) {
		uint64_t sum = 0;

		for (int i = 0; i < s->ncpus; i++)
			sum += s->cpu_a[i].stats[k];
		if (what[k] && sum != s->stats_seen[k] && used < sizeof(msg)) {
			int w = snprintf(msg + used, sizeof(msg) - used, "%s%s: %llu", used ? ", " : "",
					 what[k], (unsigned long long)(sum - s->stats_seen[k]));

			used += w > 0 ? (size_t)w : 0;
			news = true;
		}
		s->stats_seen[k] = sum;
	}
	if (news)
		vw_complain(&s->stats_complaint, VW_LOG_WARN, "cpu: bpf: %s", msg);
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
	r = map_for_each(s, t, s->fd[FD_HW_PROCS], sizeof(uint32_t), sizeof(struct vw_bpf_hw_proc),
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
	int fd = s->fd[FD_HW_PROCS];
	struct hw_key *swap;
	size_t cap;

	s->n_next = 0;
	for (size_t i = 0; i < s->n_hw; i++) {
		struct hw_key k = { .tgid = s->hw_recs[i].tgid, .start_ns = s->hw_recs[i].start_ns };

		if (s->hw_recs[i].used)
			continue;
		if (s->n_orphans &&
		    bsearch(&k, s->hw_orphans, s->n_orphans, sizeof(k), cmp_hw_key)) {
			(void)bpf_map_delete_elem(fd, &k.tgid);
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
	unsigned cur = s->hist.cur;
	const struct vw_cpu_table *prev = vw_cpu_history_prev(&s->hist);
	int fd = s->fd[FD_HW_PROCS];
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
		const struct vw_proc_cpu *was;

		out[i] = (struct vw_proc_counters){ 0 };
		if (s->n_hw)
			h = bsearch(&key, s->hw_recs, s->n_hw, sizeof(key), cmp_hw_rec);
		if (h && h->start_ns / s->ns_per_tick == p->start_time) {
			h->used = true;
			out[i] = h->c;
			if (p->exited)
				(void)bpf_map_delete_elem(fd, &h->tgid);
		}
		was = vw_cpu_table_find(prev, p->tgid, p->start_time);
		if (was && (size_t)(was - prev->procs) < s->n_hwc[cur ^ 1])
			hw_max(&out[i], &s->hwc[cur ^ 1][was - prev->procs]);
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
	    bpf_map_lookup_elem(s->fd[FD_HW_CPUS], &zero, s->hw_cpu) < 0)
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

static int bpf_read(void *state, struct vw_cpu_snapshot *ret)
{
	struct bpf_state *s = state;
	struct vw_cpu_table *t = vw_cpu_history_begin(&s->hist);
	int r;

	s->n_exited = 0;
	r = map_for_each(s, t, s->fd[FD_PROCS], sizeof(uint32_t), sizeof(struct vw_bpf_proc),
			 add_proc);
	if (r == 0)
		r = iter_run(&s->iter, s->fd[FD_ITER_READ]);
	if (r == 0) {
		vw_cpu_table_sort(t);
		r = add_live(s, t);
	}
	if (r == 0)
		r = hw_collect(s, t);
	if (r < 0) {
		vw_cpu_history_abort(&s->hist);
		return r;
	}
	/* Reported below, once: the entries go now. */
	for (size_t i = 0; i < s->n_exited; i++)
		(void)bpf_map_delete_elem(s->fd[FD_PROCS], &s->exited[i]);
	check_stats(s);
	hw_check_stats(s);
	vw_cpu_history_finish(&s->hist, ret);
	return hw_attach(s, ret);
}

const struct vw_cpu_account_ops vw_cpu_bpf = {
	.name = "bpf",
	.open = bpf_open,
	.read = bpf_read,
	.close = bpf_close,
};

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The BPF accountant's loader (cpu_bpf_priv.h): everything that needs libbpf's object and the
 * kernel's BTF runs in a short-lived child: the tp_btf probe, opening the skeleton, sizing the
 * maps, the hardware counters' perf event arrays, the load (tp_btf, else the raw_tp twins) and
 * the attach. libbpf's BTF parse and CO-RE relocation (~12 MiB of heap at
 * its peak) never touch the daemon's memory. Over a SOCK_SEQPACKET socketpair the child sends
 * its log lines, then its result with the fds to keep (SCM_RIGHTS): the maps the reads use, the
 * perf event arrays, the programs' links and the seed and read iterators', and the ran walk's
 * switch program itself, not attached: the daemon attaches it (BPF_RAW_TRACEPOINT_OPEN on the
 * program's fd, with the capabilities that loaded it) while it pays, and detaches it by closing
 * the link (cpu_bpf.c, --cpu.ran-walk=auto). It then _exit()s.
 *
 * libbpf itself is loaded by the child (libbpf_lazy.c), so the daemon never maps it. dlopen
 * after fork is safe here: the guest has no other thread yet when its accountant opens, and
 * the host's only earlier ones are a BMC's pollers (Redfish, IPMI), which load nothing
 * themselves (libcurl and libfreeipmi are loaded before they start, and dynlib.c holds its
 * lock across fork); glibc resets the loader's own lock in the child.
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

#include "bpf_sys.h"
#include "cpu_account_priv.h"
#include "cpu_bpf_priv.h"
#include "cpu_time.h"
#include "cpu_time.skel.h"
#include "cpu_walk.skel.h"
#include "log.h"

#define ITER_CHUNK (64u * 1024u)

/* The loader child's objects: none of them outlives it. */
struct loader {
	struct cpu_time_bpf *skel;
	struct bpf_link *iter_seed, *iter_read;
	struct cpu_walk_bpf *walk; /* NULL where the kernel has no open-coded task iterator */
	struct bpf_link *iter_walk;
	struct bpf_link *iter_ran; /* NULL where the ran walk did not load */
	int ncpus;
	bool cgroup_v1;
	bool irq_spans; /* the interrupt programs: tp_btf, and the kernel does not do it itself */
	bool timer_tp;  /* the kernel has the local_timer_* tracepoints (x86) */
	unsigned hw_mask;
	int *hw_fds; /* [cpu * VW_HW__COUNT + kind], -1 when not open */
};

/* In the loader child: the socket its log lines go to. */
static int loader_sock = -1;

/* The parent's log; in the loader child a record for the parent to log. */
_printf_(2, 3) static void say(enum vw_log_level lv, const char *fmt, ...)
{
	struct vw_bpf_load_msg m = { .kind = VW_BPF_MSG_LOG, .level = (int32_t)lv };
	va_list ap;

	va_start(ap, fmt);
	if (loader_sock < 0)
		vw_logv(lv, fmt, ap);
	else if (lv <= vw_log_get_level() && vsnprintf(m.text, sizeof(m.text), fmt, ap) >= 0)
		(void)send(loader_sock, &m, offsetof(struct vw_bpf_load_msg, text) + strlen(m.text) + 1,
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
int vw_cpu_bpf_btf_path(const struct vw_cpu_env *env, char *buf, size_t size)
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

/*
 * Does the kernel leave interrupt time out of tasks' runtime itself (CONFIG_IRQ_TIME_ACCOUNTING:
 * its per-CPU struct irqtime exists)? Then the interrupt programs would take it out twice.
 */
static bool kernel_irqtime(const char *btf_file)
{
	libbpf_print_fn_t old = libbpf_set_print(NULL);
	struct btf *btf = btf__parse(btf_file, NULL);
	bool r = btf && btf__find_by_name_kind(btf, "irqtime", BTF_KIND_STRUCT) > 0;

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
static int load_variant(struct loader *l, const char *btf_file, bool raw, uint32_t max_procs,
			uint32_t flags)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo, .btf_custom_path = btf_file);
	struct cpu_time_bpf *skel = cpu_time_bpf__open_opts(&oo);
	int r;

	if (!skel)
		return -errno;
	skel->rodata->open_ns = mono_ns();
	skel->rodata->use_pid_hash = raw;
	skel->rodata->cgroup_v1 = l->cgroup_v1;
	bpf_program__set_autoload(skel->progs.vw_exit_btf, !raw);
	bpf_program__set_autoload(skel->progs.vw_free_btf, !raw);
	bpf_program__set_autoload(skel->progs.vw_exit_raw, raw);
	bpf_program__set_autoload(skel->progs.vw_free_raw, raw);
	skel->rodata->hw_mask = l->hw_mask;
	bpf_program__set_autoload(skel->progs.vw_hwc_btf, l->hw_mask && !raw);
	bpf_program__set_autoload(skel->progs.vw_hwc_raw, l->hw_mask && raw);
	/* The interrupt spans: tp_btf only (their raw_tp twins would probe-read every field). */
	bpf_program__set_autoload(skel->progs.vw_irq_entry, !raw && l->irq_spans);
	bpf_program__set_autoload(skel->progs.vw_irq_exit, !raw && l->irq_spans);
	bpf_program__set_autoload(skel->progs.vw_sirq_entry, !raw && l->irq_spans);
	bpf_program__set_autoload(skel->progs.vw_sirq_exit, !raw && l->irq_spans);
	bpf_program__set_autoload(skel->progs.vw_timer_entry, !raw && l->irq_spans && l->timer_tp);
	bpf_program__set_autoload(skel->progs.vw_timer_exit, !raw && l->irq_spans && l->timer_tp);
	bpf_program__set_autoattach(skel->progs.vw_iter_seed, false);
	bpf_program__set_autoattach(skel->progs.vw_iter_read, false);
	skel->rodata->no_storage = !!(flags & VW_CPU_BPF_NO_STORAGE);
	r = bpf_map__set_max_entries(skel->maps.procs, max_procs);
	/* Threads outnumber processes. raw_tp: every thread older than open from the seed to its
	 * exit, the others from exit to free, in an LRU hash that reclaims the slots of frees
	 * never seen (cpu_time.bpf.c). With task storage the hash only keeps threads whose
	 * storage could not be made, from their exit to their free: a plain hash, so that a full
	 * one fails counted rather than evicting a slot (the reads sweep out those of frees never
	 * seen: cpu_slots.h). */
	if (r == 0)
		r = bpf_map__set_max_entries(skel->maps.task_hash,
					     raw ? VW_MIN(max_procs, UINT32_MAX / 4) * 4
					     : flags & VW_CPU_BPF_NO_STORAGE ? max_procs
									      : VW_BPF_STORAGE_FALLBACK);
	if (r == 0 && !raw)
		r = bpf_map__set_type(skel->maps.task_hash, BPF_MAP_TYPE_HASH);
	if (r == 0)
		r = bpf_map__set_max_entries(skel->maps.hw_procs, l->hw_mask ? max_procs : 1);
	if (r == 0)
		r = bpf_map__set_max_entries(skel->maps.exits,
					     flags & VW_CPU_BPF_SMALL_EXIT_RING
						     ? (uint32_t)sysconf(_SC_PAGESIZE)
						     : VW_BPF_EXIT_RING_BYTES);
	if (r == 0 && (flags & VW_CPU_BPF_SMALL_IRQ_MAPS))
		r = bpf_map__set_max_entries(skel->maps.irq_cgroups, 1);
	if (r == 0 && (flags & VW_CPU_BPF_SMALL_IRQ_MAPS))
		r = bpf_map__set_max_entries(skel->maps.irq_procs, 1);
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
int vw_cpu_bpf_iter_run(struct vw_bpf_iter_buf *b, int link_fd)
{
	_cleanup_close_ int fd = vw_bpf_iter_create(link_fd);

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

/*
 * The exit and free programs first, then the two iterators' links: the daemon runs the seed
 * iterator once (cpu_bpf.c: every older thread's runtime now, its processes' bases) and the read
 * iterator at every read. A thread that exits before the seed iterator meets it is the exit
 * path's alone (task_init()).
 */
static int attach(struct loader *l)
{
	int r = cpu_time_bpf__attach(l->skel);

	if (r < 0)
		return r;
	l->iter_seed = bpf_program__attach_iter(l->skel->progs.vw_iter_seed, NULL);
	if (!l->iter_seed)
		return -errno;
	l->iter_read = bpf_program__attach_iter(l->skel->progs.vw_iter_read, NULL);
	return l->iter_read ? 0 : -errno;
}

/* Open, size and load the walks' object; the ran walk and its switch program too when ran. */
static int walk_open_load(struct loader *l, const char *btf_file, uint32_t max_procs,
			  uint32_t flags, bool ran, struct cpu_walk_bpf **ret)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo, .btf_custom_path = btf_file);
	struct cpu_walk_bpf *w = cpu_walk_bpf__open_opts(&oo);
	int r;

	if (!w)
		return -errno;
	w->rodata->cgroup_v1 = l->cgroup_v1;
	w->rodata->nr_cpus = (uint32_t)l->ncpus;
	w->rodata->ring_mask = (flags & VW_CPU_BPF_SMALL_RING ? 16u : VW_BPF_RING_CAP) - 1;
	bpf_program__set_autoload(w->progs.vw_mark, ran);
	bpf_program__set_autoload(w->progs.vw_walk_ran, ran);
	r = bpf_map__set_max_entries(w->maps.walk_out, max_procs);
	if (r == 0)
		r = bpf_map__set_max_entries(w->maps.anchors, (uint32_t)l->ncpus);
	if (r == 0)
		r = cpu_walk_bpf__load(w);
	if (r < 0) {
		cpu_walk_bpf__destroy(w);
		return r;
	}
	*ret = w;
	return 0;
}

/*
 * The walks (cpu_walk.bpf.c), where this kernel has the open-coded task iterator (6.7+): their
 * iterators run for the daemon's main thread only, our parent. Optional: without the full walk
 * the daemon reads the task/ iterator, as it does when the walk's array is full; without the
 * ran walk (no bpf_task_from_pid, no tp_btf, or VW_CPU_BPF_NO_RAN) every read is a full walk.
 * Its switch program has no raw_tp twin: the kfuncs it needs came after tp_btf (6.2, 6.7 where
 * tp_btf is 5.5), so where the raw_tp twins run (no tp_btf, or VW_CPU_BPF_RAW_TP) it is off.
 */
static void load_walk(struct loader *l, const char *btf_file, uint32_t max_procs, uint32_t flags,
		      bool raw)
{
	LIBBPF_OPTS(bpf_iter_attach_opts, ao);
	union bpf_iter_link_info info = { .task.tid = (__u32)getppid() };
	bool ran = !(flags & VW_CPU_BPF_NO_RAN) && !raw;
	struct cpu_walk_bpf *w = NULL;
	int r;

	r = walk_open_load(l, btf_file, max_procs, flags, ran, &w);
	if (r < 0 && ran) {
		say(VW_LOG_DEBUG, "cpu: bpf: the ran walk did not load (%s): walking every process "
				  "at every read", strerror(-r));
		ran = false;
		r = walk_open_load(l, btf_file, max_procs, flags, ran, &w);
	}
	if (r == 0) {
		ao.link_info = &info;
		ao.link_info_len = sizeof(info);
		l->iter_walk = bpf_program__attach_iter(w->progs.vw_walk, &ao);
		r = l->iter_walk ? 0 : -errno;
	}
	if (r < 0) {
		say(VW_LOG_DEBUG, "cpu: bpf: no open-coded task walk here (%s): reading the task "
				  "iterator", strerror(-r));
		bpf_link__destroy(l->iter_walk);
		l->iter_walk = NULL;
		cpu_walk_bpf__destroy(w);
		return;
	}
	l->walk = w;
	if (!ran)
		return;
	/* Its switch program is the daemon's to attach, loaded only here. */
	l->iter_ran = bpf_program__attach_iter(w->progs.vw_walk_ran, &ao);
	if (!l->iter_ran)
		say(VW_LOG_DEBUG, "cpu: bpf: the ran walk did not attach (%s): walking every "
				  "process at every read", strerror(errno));
}

/* Which way interrupt time goes, and why: said once at start. */
static void say_irq(const struct loader *l, const struct vw_bpf_load_req *q, bool raw)
{
	if (q->flags & VW_CPU_BPF_NO_IRQ)
		say(VW_LOG_INFO, "cpu: bpf: interrupt accounting off (--cpu.irq-accounting=off): "
				 "hardirq and softirq time stays in the weight of the task it "
				 "interrupted where the kernel counts it there");
	else if (l->irq_spans)
		say(VW_LOG_INFO, "cpu: bpf: interrupt accounting on (--cpu.irq-accounting=auto): "
				 "this kernel counts interrupt time in the interrupted task's runtime "
				 "(no CONFIG_IRQ_TIME_ACCOUNTING); hardirq and interrupt-exit softirq "
				 "spans are timed and taken out of the interrupted container's and "
				 "process's weight (~100 ns per interrupt)");
	else if (raw)
		say(VW_LOG_INFO, "cpu: bpf: interrupt accounting off: no tp_btf programs here (raw_tp): "
				 "interrupt time stays in the weight of the task it interrupted");
	else
		say(VW_LOG_INFO, "cpu: bpf: interrupt accounting off (--cpu.irq-accounting=auto): "
				 "the kernel leaves interrupt time out of tasks' runtime itself "
				 "(CONFIG_IRQ_TIME_ACCOUNTING), nothing to take out");
}

/* Everything that parses the kernel's BTF: the probe, CO-RE relocation at load, attach. */
static int load(struct loader *l, const struct vw_bpf_load_req *q, bool *ret_raw)
{
	bool raw;
	int r, tp;

	tp = probe_tp_btf(q->btf, "sched_process_free");
	if (tp < 0) {
		say(VW_LOG_INFO, "cpu: bpf: load a probe program: %s", verdict(tp));
		return tp;
	}
	if (q->flags & VW_CPU_BPF_NO_HW)
		say(VW_LOG_INFO, "cpu: bpf: hardware counters off (--cpu.hardware-counters=false): "
				 "splitting by CPU time");
	else if ((r = hw_open(l, q->flags & VW_CPU_BPF_HW_STANDIN)) < 0)
		return r;
	raw = !tp || (q->flags & VW_CPU_BPF_RAW_TP);
	l->irq_spans = !raw && !(q->flags & VW_CPU_BPF_NO_IRQ) && !kernel_irqtime(q->btf);
	say_irq(l, q, raw);
	l->timer_tp = l->irq_spans && probe_tp_btf(q->btf, "local_timer_entry") > 0;
	r = load_variant(l, q->btf, raw, q->max_procs, q->flags);
	if (r < 0 && r != -EPERM && !raw) {
		say(VW_LOG_INFO, "cpu: bpf: tp_btf programs did not load (%s), trying raw_tp",
		    strerror(-r));
		raw = true;
		r = load_variant(l, q->btf, raw, q->max_procs, q->flags);
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
	if (!(q->flags & VW_CPU_BPF_NO_WALK))
		load_walk(l, q->btf, q->max_procs, q->flags, raw);
	*ret_raw = raw;
	return 0;
}

/* The fds the parent keeps, in the FD_* order; their number, or -E2BIG. */
static int loader_fds(const struct loader *l, int fds[VW_BPF_FD__MAX])
{
	const struct bpf_object_skeleton *sk = l->skel->skeleton;
	int n = VW_BPF_FD_LINKS;

	fds[VW_BPF_FD_PROCS] = bpf_map__fd(l->skel->maps.procs);
	fds[VW_BPF_FD_CPUS] = bpf_map__fd(l->skel->maps.cpus);
	fds[VW_BPF_FD_HW_PROCS] = bpf_map__fd(l->skel->maps.hw_procs);
	fds[VW_BPF_FD_HW_CPUS] = bpf_map__fd(l->skel->maps.hw_cpus);
	for (unsigned c = 0; c < VW_HW__COUNT; c++)
		fds[VW_BPF_FD_HW_ARRAYS + c] = bpf_map__fd(hw_array(l->skel, c));
	fds[VW_BPF_FD_ITER_SEED] = bpf_link__fd(l->iter_seed);
	fds[VW_BPF_FD_ITER_READ] = bpf_link__fd(l->iter_read);
	/* No walk: the procs map stands in (SCM_RIGHTS has no empty slot); msg.walk says so. */
	fds[VW_BPF_FD_WALK_OUT] = l->walk ? bpf_map__fd(l->walk->maps.walk_out) : fds[VW_BPF_FD_PROCS];
	fds[VW_BPF_FD_ITER_WALK] = l->walk ? bpf_link__fd(l->iter_walk) : fds[VW_BPF_FD_PROCS];
	fds[VW_BPF_FD_ITER_RAN] = l->iter_ran ? bpf_link__fd(l->iter_ran) : fds[VW_BPF_FD_PROCS];
	fds[VW_BPF_FD_MARK] =
		l->iter_ran ? bpf_program__fd(l->walk->progs.vw_mark) : fds[VW_BPF_FD_PROCS];

	fds[VW_BPF_FD_EXITS] = bpf_map__fd(l->skel->maps.exits);
	fds[VW_BPF_FD_IRQ_CGROUPS] = bpf_map__fd(l->skel->maps.irq_cgroups);
	fds[VW_BPF_FD_IRQ_PROCS] = bpf_map__fd(l->skel->maps.irq_procs);
	fds[VW_BPF_FD_TASK_HASH] = bpf_map__fd(l->skel->maps.task_hash);
	for (int i = 0; i < sk->prog_cnt; i++) {
		struct bpf_link *link = *sk->progs[i].link;

		if (!link)
			continue;
		if (n == VW_BPF_FD__MAX)
			return -E2BIG;
		fds[n++] = bpf_link__fd(link);
	}
	return n;
}

/* libbpf, its messages routed to ours, and the CPUs it sizes per-CPU values by. */
static int load_libbpf(struct loader *l)
{
	const char *need = vw_libbpf_load();

	if (need) {
		say(VW_LOG_WARN, "cpu: bpf: %s", need);
		return -ENOPKG;
	}
	libbpf_set_print(libbpf_sink);
	l->ncpus = libbpf_num_possible_cpus();
	if (l->ncpus > 0)
		return 0;
	say(VW_LOG_WARN, "cpu: bpf: count the possible CPUs: %s",
	    strerror(l->ncpus ? -l->ncpus : ENODEV));
	return l->ncpus ? l->ncpus : -ENODEV;
}

/*
 * The loader child: its result and fds go to the parent, then it is gone with every object
 * libbpf made (the kernel's BTF parsed, the ELF). _exit only: no atexit or test handlers here.
 */
__attribute__((noreturn)) static void loader_main(int sock, const struct vw_bpf_load_req *q)
{
	static const int crash[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT };
	struct loader l = { .cgroup_v1 = q->cgroup_v1 };
	struct vw_bpf_load_msg m = { .kind = VW_BPF_MSG_RESULT };
	char cbuf[CMSG_SPACE(sizeof(int) * VW_BPF_FD__MAX)] = { 0 };
	struct iovec iov = { .iov_base = &m, .iov_len = offsetof(struct vw_bpf_load_msg, text) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	int fds[VW_BPF_FD__MAX], r;
	bool raw = false;

	/* A crash is to end this process, not to land in a handler of the parent's. */
	for (size_t i = 0; i < ARRAY_SIZE(crash); i++)
		signal(crash[i], SIG_DFL);
	loader_sock = sock;
	r = load_libbpf(&l);
	if (r == 0)
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
	m.walk = l.walk != NULL;
	m.ran = l.iter_ran != NULL;
	m.ncpus = l.ncpus;
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

void vw_cpu_bpf_close_fds(int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		vw_closep(&fds[i]);
		fds[i] = -1;
	}
}

/* Log the child's lines until its result comes: 0, or -EIO when it breaks off. */
static int recv_result(int sock, struct vw_bpf_load_msg *m, int fds[VW_BPF_FD__MAX])
{
	for (;;) {
		char cbuf[CMSG_SPACE(sizeof(int) * VW_BPF_FD__MAX)];
		struct iovec iov = { .iov_base = m, .iov_len = sizeof(*m) };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
				     .msg_controllen = sizeof(cbuf) };
		ssize_t n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
		size_t got;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		got = take_fds(&mh, fds, VW_BPF_FD__MAX);
		if ((size_t)n < offsetof(struct vw_bpf_load_msg, text) ||
		    (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
			break;
		if (m->kind == VW_BPF_MSG_LOG && got == 0) {
			enum vw_log_level lv = VW_MIN((uint32_t)m->level, (uint32_t)VW_LOG_DEBUG);

			m->text[VW_MIN((size_t)n - offsetof(struct vw_bpf_load_msg, text),
				       sizeof(m->text) - 1)] = '\0';
			vw_log(lv, "%s", m->text);
			continue;
		}
		if (m->kind != VW_BPF_MSG_RESULT || m->err > 0 || got != m->n_fds ||
		    (m->err == 0 && got < VW_BPF_FD_LINKS))
			break;
		return 0;
	}
	vw_cpu_bpf_close_fds(fds, VW_BPF_FD__MAX);
	return -EIO;
}

/*
 * Load and attach in a child, which hands over the fds to keep: libbpf's BTF parse and
 * relocation (~12 MiB at peak) never touch this process's memory. Reaped before return.
 */
int vw_cpu_bpf_load(const struct vw_bpf_load_req *q, struct vw_bpf_load_msg *m,
		    int fds[VW_BPF_FD__MAX])
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

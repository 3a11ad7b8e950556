/* SPDX-License-Identifier: Apache-2.0 */
/*
 * QEMU processes and their vCPU threads, read through the injected procfs directory.
 *
 * Threads. QEMU names its threads when started with -name ...,debug-threads=on (libvirt always
 * passes it; KubeVirt goes through libvirt): "CPU 0/KVM", "CPU 1/TCG" for vCPUs, "IO iothread1",
 * "IO mon_iothread", "worker", "vnc_worker", "call_rcu", the main loop under the binary's name.
 * Their count is a VM's vCPU count when its domain does not say. vhost workers are
 * "vhost-<QEMU PID>": threads of QEMU since Linux 6.4, kernel threads of their own before; the
 * workload registry adopts them by that name (vw_vm_vhost_owner).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fileio.h"
#include "log.h"
#include "macro.h"
#include "procfs.h"
#include "vm_priv.h"
#include "vm_trust.h"

#define CMDLINE_PEEK 4096u        /* enough for argv[0] and most command lines */
#define CMDLINE_MAX (256u << 10) /* libvirt's are a few KiB; QEMU's ARG_MAX is far above */

/*
 * starttime, the 22nd field of /proc/PID/stat, read straight from the text the kernel writes
 * (after the last ')': state and 19 more fields, then it, all plain decimals): each VM's QEMU
 * is checked this way every interval by two sources, and sscanf was most of it. false where
 * the text is not that shape (then vw_procfs_parse_pid_stat judges it).
 */
static bool fast_start_time(const char *text, uint64_t *ret)
{
	const char *p = strrchr(text, ')');
	uint64_t v = 0;

	if (!p || p[1] != ' ' || !p[2] || p[3] != ' ')
		return false;
	p += 4; /* past ") S " */
	for (int field = 0; field < 18; field++) { /* ppid ... itrealvalue */
		if (*p == '-')
			p++;
		if (*p < '0' || *p > '9')
			return false;
		while (*p >= '0' && *p <= '9')
			p++;
		if (*p++ != ' ')
			return false;
	}
	if (*p < '0' || *p > '9')
		return false;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (*p != ' ' && *p != '\n' && *p != '\0')
		return false;
	*ret = v;
	return true;
}

int vw_qemu_read_start_time(int procfd, uint32_t pid, uint64_t *ret)
{
	char rel[32], buf[1024], comm[VW_COMM_LEN];
	uint64_t ticks;
	int r;

	snprintf(rel, sizeof(rel), "%" PRIu32 "/stat", pid);
	r = vw_read_file_at(procfd, rel, buf, sizeof(buf), NULL);
	if (r == -ENOENT)
		return -ESRCH;
	if (r < 0)
		return r;
	if (fast_start_time(buf, ret))
		return 0;
	return vw_procfs_parse_pid_stat(buf, comm, &ticks, ret);
}

/* Is procfd this process's own procfs (its "self" names our PID) and do pidfds work? */
static int watch_init(struct vw_qemu_starts *starts, int procfd)
{
	char link[32], want[32];
	struct rlimit rl;
	ssize_t n;

	starts->watch = -1;
	n = readlinkat(procfd, "self", link, sizeof(link) - 1);
	if (n <= 0)
		return -1; /* a fixture's tree, or no procfs: read <pid>/stat each round */
	link[n] = '\0';
	snprintf(want, sizeof(want), "%ld", (long)getpid());
	if (strcmp(link, want) != 0)
		return -1; /* another PID namespace's procfs: its PIDs are not ours to open */
	starts->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (starts->epfd < 0)
		return -1;
	/* The pidfds take at most the upper half of the open-file limit's numbers: the channels,
	 * folders and locks of many VMs come first (a QEMU not watched is read each round). */
	starts->max_fd = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
				 ? (int)VW_MIN(rl.rlim_cur / 2, (rlim_t)INT32_MAX)
				 : INT32_MAX;
	starts->watch = 1;
	return 1;
}

static void watch_drop(struct vw_qemu_starts *starts, size_t i)
{
	close(starts->w[i].pidfd); /* (out of the epoll set with it) */
	starts->w[i] = starts->w[--starts->n_w];
}

/* Once a round: forget the watched QEMUs that exited (their PIDs are read afresh). */
static void watch_poll(struct vw_qemu_starts *starts)
{
	struct epoll_event ev[64];
	int n;

	starts->polled = true;
	if (!starts->n_w)
		return;
	do {
		n = epoll_wait(starts->epfd, ev, (int)ARRAY_SIZE(ev), 0);
		for (int k = 0; k < n; k++)
			for (size_t i = 0; i < starts->n_w; i++)
				if (starts->w[i].pid == ev[k].data.u32) {
					watch_drop(starts, i);
					starts->exits++;
					break;
				}
	} while (n == (int)ARRAY_SIZE(ev));
}

static const struct vw_qemu_watch *watch_find(struct vw_qemu_starts *starts, uint32_t pid)
{
	for (size_t i = 0; i < starts->n_w; i++)
		if (starts->w[i].pid == pid) {
			starts->w[i].asked = true;
			return &starts->w[i];
		}
	return NULL;
}

/* pid's start time read from <pid>/stat, its pidfd opened first: the pidfd is of the process
 * read, or of one that exited before the read (then it reports the exit next round). */
static int watch_read(struct vw_qemu_starts *starts, int procfd, uint32_t pid, uint64_t *ret)
{
	int fd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
	struct epoll_event e = { .events = EPOLLIN, .data.u32 = pid };
	int r;

	if (fd < 0 && errno == ENOSYS) { /* no pidfd_open (Linux < 5.3): never again */
		starts->watch = -1;
		close(starts->epfd);
		starts->epfd = -1;
	}
	if (fd >= starts->max_fd) { /* fds are getting scarce: read it each round instead */
		close(fd);
		fd = -1;
	}
	r = vw_qemu_read_start_time(procfd, pid, ret);
	starts->reads++;
	if (fd < 0)
		return r;
	if (r < 0 || vw_array_grow((void **)&starts->w, sizeof(*starts->w), starts->n_w,
				   &starts->cap_w) < 0 ||
	    epoll_ctl(starts->epfd, EPOLL_CTL_ADD, fd, &e) < 0) {
		close(fd);
		return r;
	}
	starts->w[starts->n_w++] = (struct vw_qemu_watch){
		.pid = pid, .pidfd = fd, .asked = true, .start = *ret,
	};
	return r;
}

int vw_qemu_start_time(struct vw_qemu_starts *starts, int procfd, uint32_t pid, uint64_t *ret)
{
	struct vw_qemu_start_entry *e;
	const struct vw_qemu_watch *w;
	uint64_t start = 0;
	int r;

	if (!starts)
		return vw_qemu_read_start_time(procfd, pid, ret);
	for (size_t i = starts->next < starts->n ? starts->next : 0, k = 0; k < starts->n; k++) {
		const struct vw_qemu_start_entry *f = &starts->e[i];

		if (f->pid == pid) {
			starts->next = i + 1;
			if (f->r == 0)
				*ret = f->start;
			return f->r;
		}
		if (++i == starts->n)
			i = 0;
	}
	if (starts->watch == 0)
		watch_init(starts, procfd);
	if (starts->watch > 0 && !starts->polled)
		watch_poll(starts);
	if (starts->watch > 0 && (w = watch_find(starts, pid))) {
		r = 0;
		start = w->start;
	} else if (starts->watch > 0) {
		r = watch_read(starts, procfd, pid, &start);
	} else {
		r = vw_qemu_read_start_time(procfd, pid, &start);
		starts->reads++;
	}
	if (r == 0)
		*ret = start;
	if (vw_array_grow((void **)&starts->e, sizeof(*starts->e), starts->n, &starts->cap) < 0)
		return r; /* not remembered: read again when asked again */
	e = &starts->e[starts->n++];
	*e = (struct vw_qemu_start_entry){ .pid = pid, .r = r, .start = start };
	starts->next = 0;
	return r;
}

/* A new round: its lookups poll the watched QEMUs' exits again; those nobody asked about in the
 * round that ended are no longer watched. */
void vw_qemu_starts_clear(struct vw_qemu_starts *starts)
{
	if (!starts)
		return;
	starts->n = starts->next = 0;
	starts->polled = false;
	for (size_t i = 0; i < starts->n_w;) {
		if (!starts->w[i].asked) {
			watch_drop(starts, i);
			continue;
		}
		starts->w[i++].asked = false;
	}
}

void vw_qemu_starts_free(struct vw_qemu_starts *starts)
{
	if (!starts)
		return;
	while (starts->n_w)
		watch_drop(starts, 0);
	if (starts->watch > 0)
		close(starts->epfd);
	free(starts->e);
	free(starts->w);
	*starts = (struct vw_qemu_starts){ 0 };
}

uint32_t vw_vm_vhost_owner(const char *comm)
{
	uint32_t owner;

	if (comm[0] != 'v' || strncmp(comm, "vhost-", 6) != 0)
		return 0; /* (asked of every process each interval: most fail at the first byte) */
	return vw_parse_pid(comm + 6, &owner) == 0 ? owner : 0;
}

/* A decimal UID at *p (after blanks) into *ret, *p moved past it. */
static int parse_uid(const char **p, uint32_t *ret)
{
	uint64_t v;

	if (vw_procfs_parse_u64(p, &v) < 0 || v >= UINT32_MAX)
		return -EINVAL;
	*ret = (uint32_t)v;
	return 0;
}

/* Whether status text's NSpid: line names one PID only: the process lives in the PID namespace
 * of the procfs mount, not in one below it (a container's without hostPID). No such line (a
 * kernel before 4.1, or pushed past the buffer by a long Groups: line): false. */
static bool nspid_single(const char *text)
{
	const char *p;
	uint64_t v;

	if (vw_procfs_field_u64(text, "NSpid", &v, &p) < 0)
		return false;
	/* its end seen: a line cut at the buffer's end (a Groups: line made long) is not one PID */
	return vw_procfs_parse_u64(&p, &v) == -ENODATA && *p == '\n';
}

int vw_qemu_read_uids(int procfd, uint32_t pid, uint32_t *ret_uid, uint32_t *ret_euid,
		      bool *ret_root_ns)
{
	/* Uid: is the 9th line, after Name (at most 64 bytes escaped); NSpid: follows Groups:
	 * (a few numbers for a QEMU) */
	char rel[32], buf[4096];
	const char *p;
	uint64_t v;

	snprintf(rel, sizeof(rel), "%" PRIu32 "/status", pid);
	if (vw_read_prefix_at(procfd, rel, buf, sizeof(buf), NULL) < 0)
		return -ESRCH;
	if (ret_root_ns)
		*ret_root_ns = nspid_single(buf);
	if (vw_procfs_field_u64(buf, "Uid", &v, &p) < 0 || v >= UINT32_MAX ||
	    parse_uid(&p, ret_euid) < 0)
		return -EINVAL;
	*ret_uid = (uint32_t)v;
	return 0;
}

int vw_qemu_scan_one(int procfd, uint32_t pid, struct vw_qemu_scan *s, size_t *cap)
{
	uint32_t uid, euid;
	bool root_ns = false;
	int r;
	_cleanup_free_ char *big = NULL;
	char rel[32], peek[CMDLINE_PEEK];
	struct vw_qemu_cmdline c;
	size_t len;
	uint64_t start, again;

	/* Its start time before and after its command line and owner are read: the same, they
	 * were this process's. Else it exited between (retried by the next scan): its command line
	 * (a -uuid of a VM) could have been an untrusted process's and its owner, its start time,
	 * a root process's that took its PID, which then took that VM's UUID, energy and channel. */
	if (vw_qemu_read_start_time(procfd, pid, &start) < 0)
		return -ESRCH;
	snprintf(rel, sizeof(rel), "%" PRIu32 "/cmdline", pid);
	if (vw_read_prefix_at(procfd, rel, peek, sizeof(peek), &len) < 0)
		return -ESRCH; /* exited meanwhile */
	if (vw_qemu_cmdline_parse(peek, len, &c) < 0)
		return 0; /* not a QEMU, or a kernel thread (empty) */
	if (len == sizeof(peek) - 1) {
		big = malloc(CMDLINE_MAX);
		if (!big)
			return -ENOMEM;
		if (vw_read_prefix_at(procfd, rel, big, CMDLINE_MAX, &len) < 0)
			return -ESRCH;
		if (vw_qemu_cmdline_parse(big, len, &c) < 0)
			return 0;
	}
	/* Its owner from status, not from the owner of <pid>/: a process that made itself
	 * non-dumpable shows its /proc files as root's. Unreadable or malformed: untrusted
	 * (UINT32_MAX is no user's), never gone, so that it is counted. */
	r = vw_qemu_read_uids(procfd, pid, &uid, &euid, &root_ns);
	if (r == -ESRCH)
		return -ESRCH;
	if (r < 0)
		uid = euid = UINT32_MAX;
	if (vw_qemu_read_start_time(procfd, pid, &again) < 0 || again != start)
		return -ESRCH;
	if (vw_array_grow((void **)&s->procs, sizeof(*s->procs), s->n, cap) < 0)
		return -ENOMEM;
	s->procs[s->n++] = (struct vw_qemu_proc){
		.pid = pid, .uid = uid, .euid = euid, .root_ns = root_ns, .start_time = start,
		.cmd = c
	};
	return 0;
}

int vw_qemu_scan(int procfd, struct vw_qemu_scan *ret)
{
	_cleanup_free_ uint32_t *pids = NULL;
	size_t n_pids = 0, cap = 0;
	struct vw_qemu_scan s = { 0 };
	int r;

	r = vw_dir_numbers(procfd, ".", vw_parse_pid, &pids, &n_pids);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n_pids; i++) {
		r = vw_qemu_scan_one(procfd, pids[i], &s, &cap);
		if (r < 0 && r != -ESRCH) {
			vw_qemu_scan_free(&s);
			return r;
		}
	}
	*ret = s;
	return 0;
}

void vw_qemu_scan_free(struct vw_qemu_scan *s)
{
	free(s->procs);
	*s = (struct vw_qemu_scan){ 0 };
}

/* Whether a QEMU p claiming a VM's UUID ranks above best (its rank: root_ns, named, start). */
static bool ranks_above(const struct vw_qemu_proc *p, bool named, const struct vw_qemu_proc *best,
			bool best_named)
{
	if (p->root_ns != best->root_ns)
		return p->root_ns;
	if (named != best_named)
		return named;
	return p->start_time > best->start_time;
}

const struct vw_qemu_proc *vw_qemu_scan_find(const struct vw_qemu_scan *s, const char *uuid,
					     const char *name)
{
	const struct vw_qemu_proc *best = NULL;
	bool best_named = false;

	for (size_t i = 0; i < s->n; i++) {
		const struct vw_qemu_proc *p = &s->procs[i];
		bool named = name && name[0] && strcmp(p->cmd.name, name) == 0;

		if (strcmp(p->cmd.uuid, uuid) != 0)
			continue;
		if (!best || ranks_above(p, named, best, best_named)) {
			best = p;
			best_named = named;
		}
	}
	return best;
}

/* ---- The QEMU of a known VM ---- */

/* Forget a QEMU whose PID now belongs to another process, or to nobody. */
static void recheck(int procfd, struct vw_qemu_starts *starts, struct vw_vm_info *vm)
{
	uint64_t start;

	if (vm->state == VW_VM_SHUTOFF || !vm->qemu_pid)
		return;
	if (vw_qemu_start_time(starts, procfd, vm->qemu_pid, &start) == 0 &&
	    start == vm->qemu_start_time)
		return;
	vw_debug("vm: QEMU %" PRIu32 " of %s is gone", vm->qemu_pid, vm->uuid);
	vm->qemu_pid = 0;
	vm->qemu_start_time = 0;
}

static bool lacks_qemu(const struct vw_vm_info *vm)
{
	return vm->state != VW_VM_SHUTOFF && !vm->qemu_pid;
}

/* The QEMUs of trusted users among s's, in place (vm_trust.h). */
static void keep_trusted(struct vw_qemu_scan *s, const struct vw_qemu_trust *trust)
{
	size_t k = 0;

	for (size_t i = 0; i < s->n; i++)
		if (vw_qemu_trusted(trust, &s->procs[i]))
			s->procs[k++] = s->procs[i];
	s->n = k;
}

static void find_missing(int procfd, const struct vw_qemu_trust *trust, struct vw_vm_info *vms,
			 size_t n)
{
	struct vw_qemu_scan scan;
	int r;

	r = vw_qemu_scan(procfd, &scan);
	if (r < 0) {
		vw_debug("vm: scan for QEMU processes: %s", strerror(-r));
		return;
	}
	keep_trusted(&scan, trust); /* another user's QEMU never takes a VM's UUID */
	for (size_t i = 0; i < n; i++) {
		const struct vw_qemu_proc *p;

		if (!lacks_qemu(&vms[i]))
			continue;
		p = vw_qemu_scan_find(&scan, vms[i].uuid, vms[i].name);
		if (p) {
			vms[i].qemu_pid = p->pid;
			vms[i].qemu_start_time = p->start_time;
		}
	}
	vw_qemu_scan_free(&scan);
}

/* "CPU <N>/<accelerator>", N a number. */
static bool is_vcpu_thread(const char *comm)
{
	const char *slash;
	uint64_t v;
	char num[12];

	if (strncmp(comm, "CPU ", 4) != 0 || !(slash = strchr(comm + 4, '/')) ||
	    slash == comm + 4 || (size_t)(slash - comm - 4) >= sizeof(num))
		return false;
	memcpy(num, comm + 4, (size_t)(slash - comm - 4));
	num[slash - comm - 4] = '\0';
	return vw_parse_u64(num, &v) == 0 && v <= UINT32_MAX;
}

/* The threads of pid named as vCPUs. -ESRCH when the process is gone. */
static int count_vcpu_threads(int procfd, uint32_t pid, unsigned *ret)
{
	_cleanup_free_ uint32_t *tids = NULL;
	size_t n_tids = 0;
	unsigned n = 0;
	char rel[64];
	int r;

	snprintf(rel, sizeof(rel), "%" PRIu32 "/task", pid);
	r = vw_dir_numbers(procfd, rel, vw_parse_pid, &tids, &n_tids);
	if (r < 0)
		return r == -ENOENT ? -ESRCH : r;
	for (size_t i = 0; i < n_tids; i++) {
		char comm[64];

		snprintf(rel, sizeof(rel), "%" PRIu32 "/task/%" PRIu32 "/comm", pid, tids[i]);
		if (vw_read_str_at(procfd, rel, comm, sizeof(comm)) == 0 && is_vcpu_thread(comm))
			n++; /* (a thread that cannot be read has exited) */
	}
	*ret = n;
	return 0;
}

void vw_qemu_resolve(int procfd, struct vw_qemu_starts *starts, const struct vw_qemu_trust *trust,
		     struct vw_vm_info *vms, size_t n)
{
	bool missing = false;

	for (size_t i = 0; i < n; i++) {
		recheck(procfd, starts, &vms[i]);
		missing |= lacks_qemu(&vms[i]);
	}
	if (missing)
		find_missing(procfd, trust, vms, n);
	for (size_t i = 0; i < n; i++) {
		struct vw_vm_info *vm = &vms[i];
		uint64_t start;

		if (vm->state == VW_VM_SHUTOFF || vm->vcpus || !vm->qemu_pid)
			continue;
		/* The start time read afresh after the count (not this round's, perhaps read before
		 * the QEMU exited): a process that took its PID meanwhile names its threads as it
		 * likes ("CPU 63/KVM"), and a count once given stays the domain's (the VM's reserved
		 * share of the node's idle power). */
		if (count_vcpu_threads(procfd, vm->qemu_pid, &vm->vcpus) == -ESRCH ||
		    vw_qemu_read_start_time(procfd, vm->qemu_pid, &start) < 0 ||
		    start != vm->qemu_start_time) {
			vm->qemu_pid = 0;
			vm->qemu_start_time = 0;
			vm->vcpus = 0;
		}
	}
}

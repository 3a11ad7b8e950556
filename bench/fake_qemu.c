/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A stand-in for one QEMU process, for bench/vms.sh: a copy named qemu-system-x86_64 (so its
 * executable and comm are a QEMU's), started with argv[0] qemu-system-x86_64 and the options
 * libvirt passes for a VM with a virtwatt channel and share,
 *
 *   qemu-system-x86_64 -name guest=NAME,debug-threads=on -uuid UUID -smp 1
 *     -chardev socket,id=charchannel0,path=SOCK,server=on,wait=off
 *     -device virtserialport,bus=virtio-serial0.0,nr=1,chardev=charchannel0,id=channel0,name=org.virtwatt.power.0
 *     -fsdev local,security_model=mapped,id=fsdev-fs0,path=DIR,readonly=on
 *     -device virtio-9p-pci,id=fs0,fsdev=fsdev-fs0,mount_tag=virtwatt
 *
 * so virtwatt-host's process scan (and libvirt's QEMU PID lookup, by -uuid) takes it for the VM.
 * It plays QEMU's side of the channel: the chardev is a listening unix socket (server=on) that
 * accepts one client at a time, as QEMU does, and virtwatt-host connects to it. It creates DIR
 * (the operator's job before the VM starts) and watches it with inotify.
 *
 * FAKE_QEMU_READ=1 (default): a guest that reads its port at once. Every line is timestamped
 * (CLOCK_MONOTONIC, when read() returned) and its seq kept. FAKE_QEMU_SHARE_READ=1: a guest that
 * reads its share every second, as QEMU's 9p serves it (open, read and close of the host's
 * frame.json); a new seq is recorded. FAKE_QEMU_SHARE_READ=0 (default): nobody reads the share;
 * each frame.json renamed into DIR is recorded (inotify IN_MOVED_TO), never opened (an open is
 * a reader to virtwatt-host, which then writes every round). FAKE_QEMU_READ=0: a guest that
 * never reads its port (QEMU then stops reading the
 * socket, whose buffers fill): the connection is accepted and never read. SIGUSR1 records the
 * bytes waiting in the socket (SIOCINQ). On SIGTERM or SIGINT it writes what it recorded to
 * FAKE_QEMU_LOG (or stdout) and exits; it also gets SIGTERM when its parent dies.
 *
 * Records, one a line, times in ns of CLOCK_MONOTONIC (the clock of perf -k mono):
 *   C SEQ T      a frame line on the channel      M LEN T   a model line on the channel
 *   S SEQ T      a new frame.json read in DIR      A 0 T     a connection accepted
 *   R 0 T        frame.json replaced in DIR (not read)
 *   Q BYTES T    bytes unread in the socket (SIGUSR1 and at exit)
 *   X BYTES T    0xFF resync bytes seen (a reconnect), partial line dropped
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <linux/sockios.h>

#define LINE_MAX_BYTES (64 * 1024) /* a model line is at most ~30 KiB */
#define RX_CHUNK 65536

struct rec {
	char kind;
	uint64_t v, t_ns;
};

struct fake {
	char sock_path[108], share_dir[PATH_MAX];
	bool reading, share_reading;
	int ep, lfd, cfd, ifd, sfd, tfd;
	char *line;
	size_t line_len;
	bool line_overflow;
	uint64_t last_share_seq;
	struct rec *recs;
	size_t n_recs, cap_recs;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void record(struct fake *f, char kind, uint64_t v, uint64_t t_ns)
{
	if (f->n_recs == f->cap_recs) {
		size_t cap = f->cap_recs ? 2 * f->cap_recs : 1024;
		struct rec *r = realloc(f->recs, cap * sizeof(*r));

		if (!r)
			return; /* the report is short then; the script sees missing rounds */
		f->recs = r;
		f->cap_recs = cap;
	}
	f->recs[f->n_recs++] = (struct rec){ kind, v, t_ns };
}

/* "key=value" in a QemuOpts string (no ",," escapes in what the script passes). */
static bool opt_value(const char *opts, const char *key, char *out, size_t size)
{
	size_t k = strlen(key);

	for (const char *p = opts; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
		if (strncmp(p, key, k) == 0 && p[k] == '=') {
			size_t n = strcspn(p + k + 1, ",");

			if (n >= size)
				return false;
			memcpy(out, p + k + 1, n);
			out[n] = '\0';
			return true;
		}
	}
	return false;
}

/* The first socket chardev's path and the first fsdev's path. */
static int parse_args(struct fake *f, int argc, char **argv)
{
	for (int i = 1; i + 1 < argc; i++) {
		const char *o = argv[i] + (strncmp(argv[i], "--", 2) == 0);

		if (strcmp(o, "-chardev") == 0 && !f->sock_path[0] &&
		    strncmp(argv[i + 1], "socket,", 7) == 0)
			(void)opt_value(argv[i + 1], "path", f->sock_path, sizeof(f->sock_path));
		else if (strcmp(o, "-fsdev") == 0 && !f->share_dir[0])
			(void)opt_value(argv[i + 1], "path", f->share_dir, sizeof(f->share_dir));
	}
	if (!f->sock_path[0] && !f->share_dir[0]) {
		fprintf(stderr, "fake_qemu: neither -chardev socket,path= nor -fsdev path= given\n");
		return -EINVAL;
	}
	return 0;
}

static int ep_add(int ep, int fd, uint32_t events)
{
	struct epoll_event e = { .events = events, .data.fd = fd };

	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
}

static int listen_on(struct fake *f)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	if (strlen(f->sock_path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, f->sock_path, strlen(f->sock_path));
	(void)unlink(f->sock_path);
	f->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (f->lfd < 0 || bind(f->lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(f->lfd, 1) < 0 || ep_add(f->ep, f->lfd, EPOLLIN) < 0)
		return -errno;
	return 0;
}

/* A reading guest polls its share every second; otherwise the renames are only counted. */
static int watch_share(struct fake *f)
{
	struct itimerspec its = { .it_interval = { 1, 0 }, .it_value = { 1, 0 } };

	if (mkdir(f->share_dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	if (f->share_reading) {
		f->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
		if (f->tfd < 0 || timerfd_settime(f->tfd, 0, &its, NULL) < 0 ||
		    ep_add(f->ep, f->tfd, EPOLLIN) < 0)
			return -errno;
		return 0;
	}
	f->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (f->ifd < 0 || inotify_add_watch(f->ifd, f->share_dir, IN_MOVED_TO) < 0 ||
	    ep_add(f->ep, f->ifd, EPOLLIN) < 0)
		return -errno;
	return 0;
}

static uint64_t seq_of(const char *s, size_t len)
{
	static const char key[] = "\"seq\":";
	const char *p = memmem(s, len, key, sizeof(key) - 1);

	return p ? strtoull(p + sizeof(key) - 1, NULL, 10) : 0;
}

static void on_line(struct fake *f, const char *s, size_t len, uint64_t t)
{
	static const char model[] = "\"kind\":\"model\"";

	if (memmem(s, len, model, sizeof(model) - 1))
		record(f, 'M', len, t);
	else
		record(f, 'C', seq_of(s, len), t);
}

static void feed(struct fake *f, const char *buf, size_t n, uint64_t t)
{
	for (size_t i = 0; i < n; i++) {
		char c = buf[i];

		if ((unsigned char)c == 0xff) { /* the host reconnected: drop any partial line */
			record(f, 'X', f->line_len, t);
			f->line_len = 0;
			f->line_overflow = false;
		} else if (c == '\n') {
			if (!f->line_overflow && f->line_len)
				on_line(f, f->line, f->line_len, t);
			f->line_len = 0;
			f->line_overflow = false;
		} else if (f->line_len < LINE_MAX_BYTES) {
			f->line[f->line_len++] = c;
		} else {
			f->line_overflow = true;
		}
	}
}

static void close_client(struct fake *f)
{
	(void)epoll_ctl(f->ep, EPOLL_CTL_DEL, f->cfd, NULL);
	close(f->cfd);
	f->cfd = -1;
	f->line_len = 0;
	(void)ep_add(f->ep, f->lfd, EPOLLIN); /* QEMU accepts the next client once this one is gone */
}

static void on_client(struct fake *f)
{
	static char buf[RX_CHUNK];
	ssize_t n;
	uint64_t t;

	if (!f->reading) { /* hung up */
		close_client(f);
		return;
	}
	n = read(f->cfd, buf, sizeof(buf));
	t = now_ns();

	if (n > 0)
		feed(f, buf, (size_t)n, t);
	else if (n == 0 || (errno != EAGAIN && errno != EINTR))
		close_client(f);
}

static void on_listen(struct fake *f)
{
	int fd = accept4(f->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (fd < 0)
		return;
	record(f, 'A', 0, now_ns());
	f->cfd = fd;
	/* One client at a time. With a guest that does not read its port QEMU leaves the socket
	 * unread but still watches for a hang-up. */
	(void)epoll_ctl(f->ep, EPOLL_CTL_DEL, f->lfd, NULL);
	(void)ep_add(f->ep, f->cfd, f->reading ? EPOLLIN : EPOLLRDHUP);
}

/* frame.json renamed into the share: recorded, not opened. */
static void on_share(struct fake *f)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n = read(f->ifd, buf, sizeof(buf));
	uint64_t t = now_ns();

	for (ssize_t off = 0; n > 0 && off < n;) {
		const struct inotify_event *e = (const struct inotify_event *)(buf + off);

		off += (ssize_t)sizeof(*e) + e->len;
		if (e->len && strcmp(e->name, "frame.json") == 0)
			record(f, 'R', 0, t);
	}
}

/* The guest's poll of its share, as 9p serves it: the host's file opened, read, closed. */
static void on_share_timer(struct fake *f)
{
	char path[PATH_MAX + 16], text[4096];
	uint64_t ticks, t;
	ssize_t len;
	int fd;

	if (read(f->tfd, &ticks, sizeof(ticks)) != (ssize_t)sizeof(ticks))
		return;
	snprintf(path, sizeof(path), "%s/frame.json", f->share_dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	len = read(fd, text, sizeof(text));
	t = now_ns();
	close(fd);
	if (len > 0 && seq_of(text, (size_t)len) != f->last_share_seq) {
		f->last_share_seq = seq_of(text, (size_t)len);
		record(f, 'S', f->last_share_seq, t);
	}
}

static void probe_queue(struct fake *f)
{
	int n = 0;

	if (f->cfd >= 0 && ioctl(f->cfd, SIOCINQ, &n) < 0)
		n = -1;
	record(f, 'Q', (uint64_t)(n < 0 ? 0 : n), now_ns());
}

static int report(const struct fake *f)
{
	const char *path = getenv("FAKE_QEMU_LOG");
	FILE *out = path && *path ? fopen(path, "w") : stdout;

	if (!out)
		return -errno;
	fprintf(out, "# reading=%d share_reading=%d sock=%s share=%s\n", f->reading,
		f->share_reading, f->sock_path, f->share_dir);
	for (size_t i = 0; i < f->n_recs; i++)
		fprintf(out, "%c %llu %llu\n", f->recs[i].kind, (unsigned long long)f->recs[i].v,
			(unsigned long long)f->recs[i].t_ns);
	return fclose(out) == 0 ? 0 : -errno;
}

int main(int argc, char **argv)
{
	struct fake f = { .lfd = -1, .cfd = -1, .ifd = -1, .sfd = -1, .tfd = -1 };
	const char *rd = getenv("FAKE_QEMU_READ"), *srd = getenv("FAKE_QEMU_SHARE_READ");
	pid_t parent = getppid();
	sigset_t set;
	int r;

	f.reading = !rd || strcmp(rd, "0") != 0;
	f.share_reading = srd && strcmp(srd, "1") == 0;
	if (parse_args(&f, argc, argv) < 0)
		return 2;
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent)
		return 1;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	f.line = malloc(LINE_MAX_BYTES);
	f.ep = epoll_create1(EPOLL_CLOEXEC);
	f.sfd = signalfd(-1, &set, SFD_CLOEXEC);
	if (!f.line || f.ep < 0 || f.sfd < 0 || ep_add(f.ep, f.sfd, EPOLLIN) < 0)
		return 1;
	r = f.sock_path[0] ? listen_on(&f) : 0;
	if (r == 0 && f.share_dir[0])
		r = watch_share(&f);
	if (r < 0) {
		fprintf(stderr, "fake_qemu: %s / %s: %s\n", f.sock_path, f.share_dir, strerror(-r));
		return 1;
	}
	for (;;) {
		struct epoll_event ev[8];
		int n = epoll_wait(f.ep, ev, 8, -1);

		for (int i = 0; i < n; i++) {
			int fd = ev[i].data.fd;

			if (fd == f.sfd) {
				struct signalfd_siginfo si;

				if (read(f.sfd, &si, sizeof(si)) != (ssize_t)sizeof(si))
					continue;
				if (si.ssi_signo == SIGUSR1) {
					probe_queue(&f);
					continue;
				}
				probe_queue(&f);
				if (f.sock_path[0])
					(void)unlink(f.sock_path);
				return report(&f) < 0;
			} else if (fd == f.lfd) {
				on_listen(&f);
			} else if (fd == f.cfd) {
				on_client(&f);
			} else if (fd == f.ifd) {
				on_share(&f);
			} else if (fd == f.tfd) {
				on_share_timer(&f);
			}
		}
	}
}

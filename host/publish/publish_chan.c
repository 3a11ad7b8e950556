/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One VM's virtio-serial channel: a non-blocking AF_UNIX stream connection to the socket QEMU
 * listens on, checked to be that QEMU's (publish_peer.c). Every write is
 * MSG_DONTWAIT|MSG_NOSIGNAL; at most two frames are buffered (one being written, one newest
 * waiting), so a guest that never reads costs bounded memory and never blocks the loop.
 * Whatever the guest sends is read (bounded per call) and dropped, except valid hello/ack lines,
 * which are counted.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "fileio.h"
#include "procfs.h"
#include "proto.h"
#include "publish_priv.h"

#define CHAN_SNDBUF 16384                     /* kernel-side backlog per VM (doubled by Linux) */
#define CHAN_RX_CHUNK 4096
#define CHAN_RX_MAX_PER_EVENT (16 * CHAN_RX_CHUNK) /* bound the work one guest can cause */
/* ... and a round: past it the socket is not polled for input until the next round (a guest
 * flooding its port woke the loop for every 64 KiB it wrote; a hello is 256 bytes at most). */
#define CHAN_RX_MAX_PER_ROUND (16 * CHAN_RX_CHUNK)
#define CHAN_BACKOFF_MIN_NS (500 * VW_NSEC_PER_MSEC)
#define CHAN_BACKOFF_MAX_NS (30 * VW_NSEC_PER_SEC)
/* A QEMU that just started (a VM started, restored, migrated in) listens within moments, and its
 * guest goes stale 3 intervals after its last frame: its first connects are retried this often
 * for this long, then with the backoff (a QEMU listed before it listens was otherwise tried
 * again 0.5 s, then 1 s, then 2 s later; test_new_qemu_eager). */
#define CHAN_EAGER_NS (100 * VW_NSEC_PER_MSEC)
#define CHAN_EAGER_WINDOW_NS (5 * VW_NSEC_PER_SEC)

uint64_t vw_pub_unix_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * VW_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

int vw_pub_chan_init(struct vw_pub_chan *c, int ifd)
{
	*c = (struct vw_pub_chan){ .fd = -1, .backoff_ns = CHAN_BACKOFF_MIN_NS, .ifd = ifd,
				   .wd = -1 };
	c->rx = vw_framer_new(VW_PROTO_MAX_HELLO);
	return c->rx ? 0 : -ENOMEM;
}

static int buf_set(struct vw_pub_buf *b, const char *data, size_t len)
{
	if (len > b->cap) {
		size_t cap = (len + 255) & ~(size_t)255; /* a frame of one zone: 256 B */
		char *n = realloc(b->data, cap);

		if (!n)
			return -ENOMEM;
		b->data = n;
		b->cap = cap;
	}
	memcpy(b->data, data, len);
	b->len = len;
	b->off = 0;
	return 0;
}

static void buf_free(struct vw_pub_buf *b)
{
	free(b->data);
	*b = (struct vw_pub_buf){ 0 };
}

static void set_events(struct vw_pub_chan *c, int epfd)
{
	bool out = c->connecting || c->resync || c->tx.off < c->tx.len || c->next_unsent;
	uint32_t ev = (c->rx_paused ? 0 : EPOLLIN) | EPOLLRDHUP | (out ? EPOLLOUT : 0);
	struct epoll_event e = { .events = ev, .data.ptr = c };

	if (c->fd < 0 || ev == c->events)
		return;
	if (epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &e) == 0)
		c->events = ev;
}

static void disconnect(struct vw_pub_chan *c, int epfd, uint64_t now_ns, bool failed)
{
	if (c->fd >= 0) {
		(void)epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
		close(c->fd);
		c->fd = -1;
		c->st.disconnects++;
	}
	c->connecting = c->resync = c->blocked = c->st.connected = false;
	c->events = 0;
	c->rx_round = 0;
	c->rx_paused = false;
	/* A partial frame is abandoned: the next connection resyncs first. */
	c->tx.len = c->tx.off = 0;
	c->next_unsent = c->next.len > 0;
	vw_framer_reset(c->rx);
	if (c->delivered && !failed)
		c->backoff_ns = CHAN_BACKOFF_MIN_NS;
	c->delivered = false;
	if (now_ns < c->eager_until_ns) {
		c->retry_ns = now_ns + CHAN_EAGER_NS;
		return;
	}
	c->retry_ns = now_ns + c->backoff_ns;
	c->backoff_ns = VW_MIN(c->backoff_ns * 2, CHAN_BACKOFF_MAX_NS);
}

void vw_pub_chan_done(struct vw_pub_chan *c, int epfd)
{
	disconnect(c, epfd, 0, true);
	buf_free(&c->tx);
	buf_free(&c->next);
	vw_framer_free(c->rx);
	c->rx = NULL;
}

void vw_pub_chan_set_path(struct vw_pub_chan *c, int epfd, const char *path, uint64_t now_ns)
{
	if (strcmp(c->path, path) == 0)
		return;
	disconnect(c, epfd, now_ns, false);
	snprintf(c->path, sizeof(c->path), "%s", path);
	if (!path[0]) { /* no channel any more: nothing to keep */
		buf_free(&c->tx);
		buf_free(&c->next);
		c->next_unsent = false;
	}
	c->backoff_ns = CHAN_BACKOFF_MIN_NS;
	c->retry_ns = now_ns;
	c->eager_until_ns = path[0] ? now_ns + CHAN_EAGER_WINDOW_NS : 0;
}

void vw_pub_chan_drop_unsent(struct vw_pub_chan *c)
{
	if (!c->next_unsent)
		return;
	c->next_unsent = false;
	c->next.len = 0; /* (a connect would send it again) */
	c->st.replaced++;
}

/* A whole frame went out on this connection. */
static void frame_sent(struct vw_pub_chan *c)
{
	c->st.sent++;
	c->st.last_ok_unix_ns = vw_pub_unix_ns();
	c->delivered = true;
}

/*
 * Write what the socket takes. 0 when drained or the socket is full, -errno when it broke. The
 * newest frame is written straight from next; only a frame the socket took part of is copied
 * into tx, to be finished (a guest that reads holds no tx buffer).
 */
static int flush(struct vw_pub_chan *c)
{
	static const char resync = (char)VW_PROTO_RESYNC;

	while (c->fd >= 0 && !c->connecting) {
		bool direct = false;
		const char *p;
		size_t n;
		ssize_t w;

		if (c->resync) {
			p = &resync;
			n = 1;
		} else if (c->tx.off < c->tx.len) {
			p = c->tx.data + c->tx.off;
			n = c->tx.len - c->tx.off;
		} else {
			if (c->tx.len > 0) {
				frame_sent(c);
				c->tx.len = c->tx.off = 0;
			}
			if (!c->next_unsent)
				return 0;
			direct = true;
			p = c->next.data;
			n = c->next.len;
		}
		w = send(c->fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				c->blocked = true; /* until epoll says it takes more */
				c->st.sends_refused++;
				return 0;
			}
			return -errno;
		}
		if (c->resync) {
			c->resync = false;
		} else if (!direct) {
			c->tx.off += (size_t)w;
		} else {
			c->next_unsent = false;
			if ((size_t)w == n) {
				frame_sent(c);
				continue;
			}
			/* Begun: finished from tx on this connection, whatever comes next. */
			if (buf_set(&c->tx, c->next.data, c->next.len) < 0)
				return -ENOMEM; /* a partial line: the connection goes, 0xFF on the next */
			c->tx.off = (size_t)w;
		}
	}
	return 0;
}

/* Count and log (rate-limited) a failure, then drop the connection. */
static void drop(struct vw_pub_chan *c, int epfd, uint64_t now_ns, uint64_t *counter,
		 const char *what, int r, bool failed)
{
	(*counter)++;
	vw_complain(&c->complaint, VW_LOG_DEBUG, "publish: %s %s: %s", what, c->path, strerror(-r));
	disconnect(c, epfd, now_ns, failed);
}

static void flush_or_drop(struct vw_pub_chan *c, int epfd, uint64_t now_ns)
{
	int r = flush(c);

	if (r < 0)
		drop(c, epfd, now_ns, &c->st.send_errors, "write to", r, false);
	else
		set_events(c, epfd);
}

int vw_pub_chan_offer(struct vw_pub_chan *c, int epfd, const char *frame, size_t len,
		      uint64_t now_ns)
{
	int r;

	if (len == 0 || len > VW_PUB_CHAN_MAX_OFFER)
		return -EINVAL;
	/* A new round: the guest's bytes are read again (set_events below polls for them). */
	c->rx_round = 0;
	c->rx_paused = false;
	/* Never-started frames are replaced, never queued. */
	if (c->tx.off == 0 && c->tx.len > 0) {
		c->tx.len = 0;
		c->st.replaced++;
	}
	if (c->next_unsent)
		c->st.replaced++;
	r = buf_set(&c->next, frame, len);
	if (r < 0) {
		c->next_unsent = false;
		return r;
	}
	c->next_unsent = true;
	c->st.published++;
	if (c->blocked) { /* full: no send() to be refused again; EPOLLOUT sends it */
		set_events(c, epfd);
		return 0;
	}
	flush_or_drop(c, epfd, now_ns);
	return 0;
}

static void on_line(const char *line, size_t len, void *userdata)
{
	struct vw_pub_chan *c = userdata;
	struct vw_guest_hello h;

	if (vw_proto_decode_hello(line, len, &h) == VW_PROTO_OK) {
		c->st.hellos++;
		c->st.ack_seq = h.ack_seq;
	} else {
		c->st.rx_bad++;
	}
}

/*
 * Read and drop what the guest sent, bounded per event and per round (past the round's budget
 * input is not polled until the next round; a hangup is still read through, to its end). False
 * when the peer closed or broke.
 */
static bool drain_rx(struct vw_pub_chan *c, bool hangup)
{
	char buf[CHAN_RX_CHUNK];
	size_t max = CHAN_RX_MAX_PER_EVENT;

	if (!hangup)
		max = VW_MIN(max, CHAN_RX_MAX_PER_ROUND - VW_MIN(c->rx_round, CHAN_RX_MAX_PER_ROUND));
	for (size_t total = 0; total < max;) {
		ssize_t n = recv(c->fd, buf, VW_MIN(sizeof(buf), max - total), MSG_DONTWAIT);

		if (n == 0)
			return false;
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
		c->st.rx_bytes += (uint64_t)n;
		total += (size_t)n;
		c->rx_round += (size_t)n;
		vw_framer_feed(c->rx, buf, (size_t)n, on_line, c);
	}
	if (!c->rx_paused && c->rx_round >= CHAN_RX_MAX_PER_ROUND) {
		c->rx_paused = true; /* set_events (flush_or_drop, after this) stops polling input */
		c->st.rx_paused++;
	}
	return true;
}

/*
 * The listener just connected to must be the VM's QEMU's (publish_peer.c). A stranger is
 * counted, said (rate-limited, naming the path and the peer) and refused: the caller closes and
 * retries with backoff. While the VM's QEMU is not known or gone (a VM starting or restarting
 * before its list names the new QEMU) it is refused the same, but neither counted nor said
 * (-ESRCH): every restart would look like an attack.
 */
/*
 * Is the process with QEMU's PID now the one listed (its starttime the list's)? Where the VM's
 * QEMU exited and its PID was taken by another process before the list said so, that process
 * could listen at the VM's path and pass as QEMU. True where it cannot be told (no starttime
 * listed, no procfs root).
 */
static bool qemu_same(const struct vw_pub_chan *c)
{
	char path[PATH_MAX], buf[1024], comm[VW_COMM_LEN];
	uint64_t ticks, start;

	if (!c->qemu_start || !c->procfs_root)
		return true;
	if (snprintf(path, sizeof(path), "%s/%d/stat", c->procfs_root, (int)c->qemu_pid) >=
	    (int)sizeof(path))
		return false;
	return vw_read_file_at(AT_FDCWD, path, buf, sizeof(buf), NULL) >= 0 &&
	       vw_procfs_parse_pid_stat(buf, comm, &ticks, &start) == 0 && start == c->qemu_start;
}

/*
 * Is the VM's QEMU gone (or not known)? Asked of the procfs root, whose PIDs are the list's:
 * a daemon in a container with the host's /proc bound (no hostPID) has its own PID namespace,
 * where kill() on a host PID finds nothing (or another process), and every listener was taken
 * for a restarting VM's and refused without a word.
 */
static bool qemu_gone(const struct vw_pub_chan *c)
{
	char path[PATH_MAX];

	if (c->qemu_pid <= 0)
		return true;
	if (!c->procfs_root)
		return kill(c->qemu_pid, 0) < 0 && errno == ESRCH;
	if (snprintf(path, sizeof(path), "%s/%d/stat", c->procfs_root, (int)c->qemu_pid) >=
	    (int)sizeof(path))
		return false;
	return access(path, F_OK) < 0 && errno == ENOENT;
}

static int check_peer(struct vw_pub_chan *c, int fd)
{
	_cleanup_(vw_pub_peer_done) struct vw_pub_peer peer = { .pidfd = -1 };
	int r = vw_pub_peer_check(fd, c->path, c->qemu_pid, c->procfs_root, &peer);
	bool reused = false;

	/* Taken by its PID: that PID must still be the QEMU listed (not when root's rule holds),
	 * and the listener alive after its stat was read (so the stat was the listener's). */
	if (r == 0 && peer.pid == c->qemu_pid && !(peer.uid == 0 && !strcmp(peer.name, c->path)) &&
	    (!qemu_same(c) || !vw_pub_peer_alive(&peer, c->procfs_root))) {
		r = -EPERM;
		reused = true;
	}
	if (r != -EPERM)
		return r;
	if (qemu_gone(c))
		return -ESRCH;
	c->st.peer_rejected++;
	if (c->peer_rejected_total)
		(*c->peer_rejected_total)++;
	if (peer.pid == 0) /* SO_PEERCRED: a listener outside this daemon's PID namespace */
		vw_complain(&c->peer_complaint, VW_LOG_WARN,
			    "publish: channel %s: its listener (uid %u, bound as \"%s\") is in a PID "
			    "namespace this daemon does not see, so it cannot be told to be the VM's "
			    "QEMU (pid %d): not connected, retried later. Run virtwatt-host in the "
			    "host's PID namespace to publish over channels (systemd; a container with "
			    "hostPID: true or podman --pid=host), or publish through shared folders "
			    "(--passthrough.share-root)",
			    c->path, (unsigned)peer.uid, peer.name, (int)c->qemu_pid);
	else
		vw_complain(&c->peer_complaint, VW_LOG_WARN,
			    "publish: channel %s: refusing its listener: pid %d (uid %u), bound as "
			    "\"%s\", is not the VM's QEMU (pid %d%s) nor a root process bound under "
			    "this path; something else put a socket or link there: not connected, "
			    "retried later",
			    c->path, (int)peer.pid, (unsigned)peer.uid, peer.name, (int)c->qemu_pid,
			    reused ? ", exited: its PID taken by a process started since"
			    : peer.pidfd_pid < 0 ? "; the process that listened has exited, its "
						    "socket kept by another" : "");
	return r;
}

void vw_pub_chan_set_qemu(struct vw_pub_chan *c, pid_t qemu_pid, uint64_t qemu_start,
			  uint64_t now_ns)
{
	if (c->qemu_pid == qemu_pid && c->qemu_start == qemu_start)
		return;
	c->qemu_pid = qemu_pid;
	c->qemu_start = qemu_start;
	if (c->fd < 0 && c->path[0]) { /* a new QEMU (the VM restarted): try it at once */
		c->backoff_ns = CHAN_BACKOFF_MIN_NS;
		c->retry_ns = VW_MIN(c->retry_ns, now_ns);
		c->eager_until_ns = now_ns + CHAN_EAGER_WINDOW_NS;
	}
}

static void connected(struct vw_pub_chan *c)
{
	c->connecting = false;
	c->st.connected = true;
	c->st.connects++;
	c->resync = true;
	c->next_unsent = c->next.len > 0;
	vw_release(&c->complaint, VW_LOG_INFO, "publish: connected to %s", c->path);
	vw_release(&c->peer_complaint, VW_LOG_INFO,
		   "publish: channel %s: its QEMU listens there again", c->path);
}

void vw_pub_chan_event(struct vw_pub_chan *c, int epfd, uint32_t events, uint64_t now_ns)
{
	if (c->fd < 0)
		return;
	if (c->connecting) {
		int err = 0;
		socklen_t l = sizeof(err);

		if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
			return;
		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l) < 0 || err) {
			drop(c, epfd, now_ns, &c->st.connect_errors, "connect to", err ? -err : -errno,
			     true);
			return;
		}
		err = check_peer(c, c->fd);
		if (err < 0) {
			drop(c, epfd, now_ns, &c->st.connect_errors, "connect to", err, true);
			return;
		}
		connected(c);
	}
	if (events & (EPOLLOUT | EPOLLHUP | EPOLLERR))
		c->blocked = false;
	if ((events & (EPOLLIN | EPOLLHUP | EPOLLRDHUP | EPOLLERR)) &&
	    !drain_rx(c, events & (EPOLLHUP | EPOLLRDHUP | EPOLLERR))) {
		disconnect(c, epfd, now_ns, false);
		return;
	}
	flush_or_drop(c, epfd, now_ns);
}

/* Watch the socket's directory before its identity is taken: whatever replaces or removes the
 * socket after that is an event. Without a watch (none possible), identity is checked each round. */
static void watch_dir(struct vw_pub_chan *c)
{
	const char *slash = strrchr(c->path, '/');
	char dir[sizeof(c->path)];

	c->wd = -1;
	if (c->ifd < 0)
		return;
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == c->path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - c->path), c->path);
	c->wd = inotify_add_watch(c->ifd, dir, VW_PUB_WATCH_MASK);
	if (c->wd < 0)
		c->wd = -1;
}

void vw_pub_chan_unwatched(struct vw_pub_chan *c, int wd)
{
	if (c->wd == wd)
		c->wd = -1;
}

static int try_connect(struct vw_pub_chan *c, int epfd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int sndbuf = CHAN_SNDBUF;
	struct epoll_event e = { .events = EPOLLIN | EPOLLRDHUP | EPOLLOUT, .data.ptr = c };
	_cleanup_close_ int fd = -1, pfd = -1;
	struct stat st;
	int r;

	if (strlen(c->path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	watch_dir(c);
	/* The socket file, reached without a link planted on the way, connected to through its
	 * O_PATH fd's <procfs>/self/fd/N: the file checked is the file connected to. */
	pfd = vw_pub_open_socket(c->path, &st);
	if (pfd < 0)
		return pfd;
	if (!c->procfs_root || snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/self/fd/%d",
					c->procfs_root, pfd) >= (int)sizeof(sa.sun_path))
		memcpy(sa.sun_path, c->path, strlen(c->path) + 1); /* fits: checked above */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (errno != EINPROGRESS)
			return -errno;
		c->connecting = true;
	} else if ((r = check_peer(c, fd)) < 0) {
		return r;
	}
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &e) < 0) {
		c->connecting = false;
		return -errno;
	}
	c->events = e.events;
	c->dev = st.st_dev;
	c->ino = st.st_ino;
	c->fd = VW_TAKE_FD(fd);
	return 0;
}

void vw_pub_chan_poll(struct vw_pub_chan *c, int epfd, uint64_t now_ns)
{
	int r;

	if (c->fd >= 0 || !c->path[0] || now_ns < c->retry_ns)
		return;
	r = try_connect(c, epfd);
	if (r < 0) {
		/* ENOENT/ECONNREFUSED/EAGAIN: the VM is (re)starting; retried with backoff. */
		drop(c, epfd, now_ns, &c->st.connect_errors, "connect to", r, true);
		return;
	}
	if (!c->connecting)
		connected(c);
	flush_or_drop(c, epfd, now_ns);
}

void vw_pub_chan_check_identity(struct vw_pub_chan *c, int epfd, uint64_t now_ns)
{
	struct stat st;

	if (c->fd < 0 || c->connecting)
		return;
	if (stat(c->path, &st) == 0 && st.st_dev == c->dev && st.st_ino == c->ino)
		return;
	disconnect(c, epfd, now_ns, false);
	c->retry_ns = now_ns;
}

uint64_t vw_pub_chan_next_ns(const struct vw_pub_chan *c)
{
	return c->fd < 0 && c->path[0] ? c->retry_ns : UINT64_MAX;
}

size_t vw_pub_chan_bytes_held(const struct vw_pub_chan *c)
{
	return c->tx.cap + c->next.cap;
}

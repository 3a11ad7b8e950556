/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Whose socket a VM's channel path leads to. A QEMU escaped into by its guest runs as the qemu
 * user, which may write the directories of other VMs' sockets: it could put a symlink, a hard
 * link or a listener of its own where VM A's socket is, and the host would send A's energy to
 * it (or A's figures to its guest). So the socket file is reached without following a link
 * planted on the way, connected to through that very file, and the listener checked after the
 * connect: it must be the VM's QEMU itself, or a root process (a libvirt daemon that listens
 * for QEMU and passes it the descriptor) that bound it under the VM's own path.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "fileio.h"
#include "macro.h"
#include "publish_priv.h"

#define WALK_MAX_LINKS 40 /* as the kernel's own limit */

/* A link in a directory component is followed only when root or this process made it: the
 * qemu user cannot make one of either (it could only rename one it can reach: the peer check
 * after the connect still holds). */
static bool link_trusted(const struct stat *st)
{
	return st->st_uid == 0 || st->st_uid == geteuid();
}

int vw_pub_open_socket(const char *path, struct stat *ret_st)
{
	char rest[PATH_MAX], comp[NAME_MAX + 1];
	_cleanup_close_ int dfd = -1;
	unsigned links = 0;
	size_t off = 0;

	if (!path[0])
		return -ENOENT;
	if (snprintf(rest, sizeof(rest), "%s", path) >= (int)sizeof(rest))
		return -ENAMETOOLONG;
	if (rest[0] == '/') {
		dfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0)
			return -errno;
	}
	for (;;) {
		_cleanup_close_ int fd = -1;
		size_t len, next;
		struct stat st;
		bool last;

		while (rest[off] == '/')
			off++;
		len = strcspn(rest + off, "/");
		if (len == 0)
			return -EISDIR; /* "/" or a path ending in a slash: no socket named */
		if (len > NAME_MAX)
			return -ENAMETOOLONG;
		memcpy(comp, rest + off, len);
		comp[len] = '\0';
		next = off + len;
		while (rest[next] == '/')
			next++;
		last = !rest[next];
		fd = openat(dfd >= 0 ? dfd : AT_FDCWD, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		if (fstat(fd, &st) < 0)
			return -errno;
		if (S_ISLNK(st.st_mode)) {
			char target[PATH_MAX];
			ssize_t n;

			/* Never the socket itself; a directory's only when trusted. */
			if (last || !link_trusted(&st) || ++links > WALK_MAX_LINKS)
				return -ELOOP;
			n = readlinkat(fd, "", target, sizeof(target) - 1);
			if (n < 0)
				return -errno;
			target[n] = '\0';
			{
				char joined[PATH_MAX];

				if (snprintf(joined, sizeof(joined), "%s/%s", target, rest + next) >=
				    (int)sizeof(joined))
					return -ENAMETOOLONG;
				memcpy(rest, joined, sizeof(rest));
			}
			off = 0;
			if (rest[0] == '/') {
				vw_closep(&dfd);
				dfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
				if (dfd < 0)
					return -errno;
			}
			continue; /* relative: from the link's directory, dfd */
		}
		if (last) {
			if (!S_ISSOCK(st.st_mode))
				return -ENOTSOCK;
			/* "sock/": no directory, as connect() by path says (the identity check's
			 * stat() of that path failed each round: a reconnect every round) */
			if (next > off + len)
				return -ENOTDIR;
			*ret_st = st;
			return VW_TAKE_FD(fd);
		}
		if (!S_ISDIR(st.st_mode))
			return -ENOTDIR;
		vw_closep(&dfd);
		dfd = VW_TAKE_FD(fd);
		off = next;
	}
}

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 /* Linux 6.5; Debian 12's headers (6.1) lack it */
#endif

/* The listener's pidfd (SO_PEERPIDFD): the very process that called listen(). */
static int peer_pidfd_kernel(int fd)
{
	socklen_t l = sizeof(int);
	int pidfd = -1;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &l) < 0)
		return -errno;
	return pidfd >= 0 ? pidfd : -EBADF;
}

/* A kernel without SO_PEERPIDFD (before 6.5: Debian 12's 6.1). */
static int peer_pidfd_none(int fd)
{
	(void)fd;
	return -ENOPROTOOPT;
}

const struct vw_pub_peer_ops vw_pub_peer_kernel = { .name = "SO_PEERPIDFD",
						    .pidfd = peer_pidfd_kernel };
const struct vw_pub_peer_ops vw_pub_peer_no_pidfd = { .name = "SO_PEERCRED only",
						      .pidfd = peer_pidfd_none };
static const struct vw_pub_peer_ops *peer_ops = &vw_pub_peer_kernel;

void vw_pub_peer_use_ops(const struct vw_pub_peer_ops *ops)
{
	peer_ops = ops ? ops : &vw_pub_peer_kernel;
}

int vw_pub_pidfd_pid(const char *procfs_root, int pidfd, pid_t *ret_pid)
{
	char path[PATH_MAX], buf[1024], *end;
	const char *at;
	long v;
	int r;

	if (!procfs_root)
		return -EOPNOTSUPP;
	if (snprintf(path, sizeof(path), "%s/self/fdinfo/%d", procfs_root, pidfd) >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	r = vw_read_file_at(AT_FDCWD, path, buf, sizeof(buf), NULL);
	if (r < 0)
		return r;
	at = strncmp(buf, "Pid:", 4) == 0 ? buf : strstr(buf, "\nPid:");
	if (!at)
		return -ENODATA; /* not a pidfd (or a kernel that says no Pid) */
	at += at == buf ? 4 : 5;
	errno = 0;
	v = strtol(at, &end, 10);
	if (errno || end == at || (*end && *end != '\n') || v < -1 || v > INT_MAX)
		return -EBADMSG;
	*ret_pid = (pid_t)v;
	return 0;
}

/* The listener's PID by its pidfd, in ret: 0 when known (ret->pidfd_pid its PID in the procfs
 * root's namespace, -1 exited, 0 outside it); -errno where the kernel or root cannot say. */
static int peer_by_pidfd(int fd, const char *procfs_root, struct vw_pub_peer *ret)
{
	int pidfd = peer_ops->pidfd(fd);

	if (pidfd == -ESRCH || pidfd == -EINVAL) { /* a kernel that gives none of a reaped peer */
		ret->pidfd_pid = -1;
		return 0;
	}
	if (pidfd < 0)
		return pidfd;
	ret->pidfd = pidfd;
	return vw_pub_pidfd_pid(procfs_root, pidfd, &ret->pidfd_pid);
}

void vw_pub_peer_done(struct vw_pub_peer *peer)
{
	vw_closep(&peer->pidfd);
}

bool vw_pub_peer_alive(const struct vw_pub_peer *peer, const char *procfs_root)
{
	pid_t now = -1;

	if (peer->pidfd < 0 || peer->pidfd_pid <= 0)
		return true; /* not told by a pidfd: the starttime rule alone */
	return vw_pub_pidfd_pid(procfs_root, peer->pidfd, &now) == 0 && now == peer->pidfd_pid;
}

int vw_pub_peer_check(int fd, const char *path, pid_t qemu_pid, const char *procfs_root,
		      struct vw_pub_peer *ret)
{
	struct sockaddr_un sa = { 0 };
	socklen_t l = sizeof(struct ucred), sl = sizeof(sa);
	struct ucred cred;

	*ret = (struct vw_pub_peer){ .pid = -1, .uid = (uid_t)-1, .pidfd = -1, .pidfd_pid = 0 };
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &l) < 0)
		return -errno;
	ret->pid = cred.pid;
	ret->uid = cred.uid;
	/* The name the listener was bound with (the peer's end inherits it at the connect). */
	if (getpeername(fd, (struct sockaddr *)&sa, &sl) == 0 && sa.sun_family == AF_UNIX &&
	    sl > offsetof(struct sockaddr_un, sun_path) && sa.sun_path[0])
		snprintf(ret->name, sizeof(ret->name), "%.*s",
			 (int)VW_MIN(sl - offsetof(struct sockaddr_un, sun_path),
				     sizeof(sa.sun_path)),
			 sa.sun_path);
	/* A root listener bound under this VM's path: a libvirt that calls listen() itself before
	 * passing QEMU the descriptor (libvirt 9 binds and QEMU listens: QEMU's PID, below). A link
	 * or rename of another VM's socket keeps the name it was bound with. */
	if (cred.uid == 0 && strcmp(ret->name, path) == 0)
		return 0;
	/* QEMU listening itself (libvirt without descriptor passing, a hand-started QEMU). Its
	 * pidfd names the process that listened: SO_PEERCRED's PID is only a number, which a
	 * listener whose maker exited (its socket kept by a child or passed on) still shows once
	 * the listed QEMU got that number. Read through the procfs root, the PID is the list's
	 * namespace's (a daemon in a container with the host's /proc sees its QEMUs). */
	if (peer_by_pidfd(fd, procfs_root, ret) == 0 && ret->pidfd_pid != 0) {
		if (ret->pidfd_pid < 0)
			return -EPERM; /* its maker exited: no QEMU's listener */
		ret->pid = ret->pidfd_pid;
		return qemu_pid > 0 && ret->pid == qemu_pid ? 0 : -EPERM;
	}
	/* No pidfd (Linux before 6.5), or its process outside the procfs root's namespace. */
	return qemu_pid > 0 && cred.pid == qemu_pid ? 0 : -EPERM;
}

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
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

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

int vw_pub_peer_check(int fd, const char *path, pid_t qemu_pid, struct vw_pub_peer *ret)
{
	struct sockaddr_un sa = { 0 };
	socklen_t l = sizeof(struct ucred), sl = sizeof(sa);
	struct ucred cred;

	*ret = (struct vw_pub_peer){ .pid = -1, .uid = (uid_t)-1 };
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
	/* QEMU listening itself (libvirt without descriptor passing, a hand-started QEMU). */
	if (qemu_pid > 0 && cred.pid == qemu_pid)
		return 0;
	/* A root listener bound under this VM's path: a libvirt that calls listen() itself before
	 * passing QEMU the descriptor (libvirt 9 binds and QEMU listens: QEMU's PID, above). A link
	 * or rename of another VM's socket keeps the name it was bound with. */
	if (cred.uid == 0 && strcmp(ret->name, path) == 0)
		return 0;
	return -EPERM;
}

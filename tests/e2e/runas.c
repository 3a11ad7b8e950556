/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/e2e/runas.c: the e2e guest's User=/Group= (deploy/systemd/virtwatt-guest.service).
 *   runas USER PROG [ARG]...
 * Runs PROG as USER of /etc/passwd, with its primary group and the /etc/group groups that list
 * it (as initgroups), and no capabilities (setuid from root clears them): what systemd does
 * for the unit, less its ambient capabilities. The image's busybox has no setuidgid or chpst,
 * its setpriv no --reuid, its su wants a login shell. Built static by tests/e2e/guest-image.sh;
 * no NSS: fgetpwent/fgetgrent read the files themselves.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define MAX_GROUPS 64

static void close_file(FILE **f)
{
	if (*f)
		fclose(*f);
}
#define _cleanup_fclose_ __attribute__((cleanup(close_file)))

static int user_ids(const char *name, uid_t *ret_uid, gid_t *ret_gid)
{
	_cleanup_fclose_ FILE *f = fopen("/etc/passwd", "re");
	struct passwd *pw;

	if (!f)
		return -errno;
	while ((pw = fgetpwent(f)))
		if (strcmp(pw->pw_name, name) == 0) {
			*ret_uid = pw->pw_uid;
			*ret_gid = pw->pw_gid;
			return 0;
		}
	return -ENOENT;
}

/* The primary group first, then every group of /etc/group listing the user. */
static int user_groups(const char *name, gid_t primary, gid_t *groups, size_t *ret_n)
{
	_cleanup_fclose_ FILE *f = fopen("/etc/group", "re");
	struct group *gr;
	size_t n = 0;

	if (!f)
		return -errno;
	groups[n++] = primary;
	while ((gr = fgetgrent(f)))
		for (char **m = gr->gr_mem; *m; m++)
			if (strcmp(*m, name) == 0 && gr->gr_gid != primary) {
				if (n == MAX_GROUPS)
					return -E2BIG;
				groups[n++] = gr->gr_gid;
			}
	*ret_n = n;
	return 0;
}

int main(int argc, char **argv)
{
	gid_t groups[MAX_GROUPS];
	size_t n = 0;
	uid_t uid = 0;
	gid_t gid = 0;
	int r;

	if (argc < 3) {
		fprintf(stderr, "usage: runas USER PROG [ARG]...\n");
		return 2;
	}
	r = user_ids(argv[1], &uid, &gid);
	if (r == 0)
		r = user_groups(argv[1], gid, groups, &n);
	if (r < 0) {
		fprintf(stderr, "runas: user %s: %s\n", argv[1], strerror(-r));
		return 1;
	}
	if (setgroups(n, groups) < 0 || setgid(gid) < 0 || setuid(uid) < 0) {
		fprintf(stderr, "runas: become %s (%u:%u): %s\n", argv[1], uid, gid, strerror(errno));
		return 1;
	}
	/* For good: no way back to root (a uid 0 target would defeat the test's point). */
	if (uid == 0 || setuid(0) == 0) {
		fprintf(stderr, "runas: %s is still root\n", argv[1]);
		return 1;
	}
	execv(argv[2], argv + 2);
	fprintf(stderr, "runas: exec %s: %s\n", argv[2], strerror(errno));
	return 127;
}

/* SPDX-License-Identifier: Apache-2.0 */
#define _XOPEN_SOURCE 700
#include "fixture.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *vw_fixture_mkdtemp(const char *tag)
{
	const char *tmp = getenv("TMPDIR");
	char *path;

	if (asprintf(&path, "%s/vw-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", tag) < 0)
		return NULL;
	if (!mkdtemp(path)) {
		free(path);
		return NULL;
	}
	return path;
}

static int mkdir_p(char *path)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0755) < 0 && errno != EEXIST) {
			*p = '/';
			return -errno;
		}
		*p = '/';
	}
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int vw_fixture_mkdir(const char *root, const char *rel)
{
	char *path;
	int r;

	if (asprintf(&path, "%s/%s", root, rel) < 0)
		return -ENOMEM;
	r = mkdir_p(path);
	free(path);
	return r;
}

int vw_fixture_write(const char *root, const char *rel, const char *text, int mode)
{
	char *path, *slash;
	FILE *f;
	int r = 0;

	if (asprintf(&path, "%s/%s", root, rel) < 0)
		return -ENOMEM;
	slash = strrchr(path, '/');
	*slash = '\0';
	r = mkdir_p(path);
	*slash = '/';
	if (r == 0) {
		(void)chmod(path, 0644);
		f = fopen(path, "w");
		if (!f) {
			r = -errno;
		} else {
			fputs(text, f);
			if (fclose(f) != 0)
				r = -errno;
			if (r == 0 && chmod(path, mode ? (mode_t)mode : 0644) < 0)
				r = -errno;
		}
	}
	free(path);
	return r;
}

int vw_fixture_symlink(const char *root, const char *target, const char *rel)
{
	char *path;
	int r = 0;

	if (asprintf(&path, "%s/%s", root, rel) < 0)
		return -ENOMEM;
	if (symlink(target, path) < 0)
		r = -errno;
	free(path);
	return r;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		return rmdir(path) < 0 ? 0 : 0;
	(void)unlink(path);
	return 0;
}

void vw_fixture_rm(char *root)
{
	if (!root)
		return;
	(void)nftw(root, rm_one, 32, FTW_DEPTH | FTW_PHYS);
	free(root);
}

char *vw_fixture_slurp(const char *path, size_t *ret_len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t len = 0, cap = 0;

	if (!f)
		return NULL;
	for (;;) {
		if (len + 4096 + 1 > cap) {
			char *nb;

			cap = (cap ? cap * 2 : 8192);
			nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = nb;
		}
		size_t n = fread(buf + len, 1, cap - len - 1, f);

		if (n == 0)
			break;
		len += n;
	}
	fclose(f);
	buf[len] = '\0';
	if (ret_len)
		*ret_len = len;
	return buf;
}

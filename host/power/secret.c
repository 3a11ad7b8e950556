/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "power.h"

#define PASSWORD_MAX 1024

/* A Kubernetes Secret mounted as a file has no newline; a file written by hand has one. */
int vw_power_read_secret(const char *path, char **ret)
{
	char buf[PASSWORD_MAX + 1];
	size_t len = 0;
	int r = vw_read_file_regular_at(AT_FDCWD, path, buf, sizeof(buf), &len);

	if (r < 0)
		return r;
	if (len > PASSWORD_MAX)
		return -EFBIG;
	buf[len] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
	*ret = strdup(buf);
	explicit_bzero(buf, sizeof(buf));
	return *ret ? 0 : -ENOMEM;
}

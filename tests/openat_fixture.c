/* SPDX-License-Identifier: Apache-2.0 */
#include "openat_fixture.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/types.h>

int __real_openat(int dirfd, const char *path, int flags, ...);
int __wrap_openat(int dirfd, const char *path, int flags, ...);
int __real_openat64(int dirfd, const char *path, int flags, ...);
int __wrap_openat64(int dirfd, const char *path, int flags, ...);

/* One body for both names; mode is read only where the flags say it was passed. */
#define WRAP_OPENAT(name)                                                                          \
	int __wrap_##name(int dirfd, const char *path, int flags, ...)                             \
	{                                                                                          \
		va_list ap;                                                                        \
		mode_t mode;                                                                       \
                                                                                                   \
		va_start(ap, flags);                                                               \
		mode = (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;              \
		va_end(ap);                                                                        \
		if (vw_fixture_openat_refused(dirfd, path, flags)) {                               \
			errno = EACCES;                                                            \
			return -1;                                                                 \
		}                                                                                  \
		return __real_##name(dirfd, path, flags, mode);                                    \
	}
WRAP_OPENAT(openat)
WRAP_OPENAT(openat64)

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * openat wrapped (a test's 'mock' : ['openat', 'openat64'] in tests/meson.build, with this
 * file's .c in its 'extra'): fileio.c calls openat64 where _FILE_OFFSET_BITS=64 redirects it, so
 * both names lead here. The test defines vw_fixture_openat_refused(); an open it refuses fails
 * with EACCES, even as root, where chmod 000 stops nobody.
 */
#pragma once

#include <stdbool.h>

bool vw_fixture_openat_refused(int dirfd, const char *path, int flags);

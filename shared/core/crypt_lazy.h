/* SPDX-License-Identifier: Apache-2.0 */
/* libcrypt is loaded on first use (crypt_lazy.c); code calls crypt_* as usual. */
#pragma once
#include <stddef.h>

/* Load libcrypt now: 0, or -ENOPKG with why naming the package to install. */
int vw_crypt_load(char *why, size_t len);

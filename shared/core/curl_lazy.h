/* SPDX-License-Identifier: Apache-2.0 */
/* libcurl is loaded on first use (curl_lazy.c); code calls curl_* as usual. */
#pragma once
#include <stddef.h>

/* Load libcurl now: 0, or -ENOPKG with why naming the package to install. */
int vw_curl_load(char *why, size_t len);

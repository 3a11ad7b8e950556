/* SPDX-License-Identifier: Apache-2.0 */
/* libyaml is loaded on first use (yaml_lazy.c); code calls yaml_* as usual. */
#pragma once
#include <stddef.h>

/* Load libyaml now: 0, or -ENOPKG with why naming the package to install. */
int vw_yaml_load(char *why, size_t len);

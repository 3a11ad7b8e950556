/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What every libFuzzer target shares: the entry points, logs silenced, the input as a C
 * string, properties that abort (a crash to libFuzzer, a failure to the replay), and the few
 * checks several targets make on what a parser accepted.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* Defined once, in fuzz_common.c: silences the logs (a rejected input is no news). */
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* A broken property: the message on stderr, then abort(). */
_Noreturn void vw_fuzz_fail(const char *fmt, ...) _printf_(1, 2);
#define vw_fuzz_assert(cond, ...)                                                                  \
	do {                                                                                       \
		if (!(cond))                                                                       \
			vw_fuzz_fail(__VA_ARGS__);                                                 \
	} while (0)

/* data as a malloc'd NUL-terminated string (it may hold NULs of its own); aborts on ENOMEM. */
char *vw_fuzz_strdup(const uint8_t *data, size_t size);

/* The distinct runs of exactly 64 lower-case hex digits in data (container IDs), at most max. */
#define VW_FUZZ_HEX64 65
size_t vw_fuzz_hex64(const uint8_t *data, size_t size, char (*ids)[VW_FUZZ_HEX64], size_t max);

/* Is s valid UTF-8 (no overlong forms, surrogates or code points past U+10FFFF)? */
bool vw_fuzz_utf8_valid(const char *s);
/* Is every byte of s in allowed (a NUL-terminated set)? */
bool vw_fuzz_charset(const char *s, const char *allowed);
/* s is NUL-terminated within size bytes. */
bool vw_fuzz_terminated(const char *s, size_t size);

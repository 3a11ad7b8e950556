/* SPDX-License-Identifier: Apache-2.0 */
/* Small helpers every module uses: cleanup attributes, array sizes, attributes. */
#pragma once

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _must_check_ __attribute__((warn_unused_result))
#define _unused_ __attribute__((unused))
#define _cleanup_(f) __attribute__((cleanup(f)))

#define VW_UUID_LEN 37 /* a canonical UUID string and its NUL */

#define VW_MIN(a, b) ((a) < (b) ? (a) : (b))
#define VW_MAX(a, b) ((a) > (b) ? (a) : (b))

/* a + b, stopping at UINT64_MAX rather than wrapping (2^64 µJ is 584 000 years at 1 kW). */
static inline uint64_t vw_add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static inline void vw_freep(void *p)
{
	free(*(void **)p);
}

static inline void vw_closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}

static inline void vw_fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

/* Free a secret (a password) after overwriting it; NULL is a no-op. */
static inline void vw_free_secret(char *s)
{
	if (s)
		explicit_bzero(s, strlen(s));
	free(s);
}

#define _cleanup_free_ _cleanup_(vw_freep)
#define _cleanup_close_ _cleanup_(vw_closep)
#define _cleanup_fclose_ _cleanup_(vw_fclosep)

/* Hand ownership out of a cleanup variable. */
#define VW_TAKE_PTR(p)                                                                             \
	({                                                                                         \
		__typeof__(p) _tmp = (p);                                                          \
		(p) = NULL;                                                                        \
		_tmp;                                                                              \
	})
#define VW_TAKE_FD(fd)                                                                             \
	({                                                                                         \
		int _tmp = (fd);                                                                   \
		(fd) = -1;                                                                         \
		_tmp;                                                                              \
	})

/*
 * Make room for element n of a growable array (capacity doubling from 16). 0 or -ENOMEM; the
 * array is untouched on failure.
 */
static inline int vw_array_grow(void **arr, size_t elem, size_t n, size_t *cap)
{
	size_t ncap;
	void *na;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 16;
	na = reallocarray(*arr, ncap, elem);
	if (!na)
		return -ENOMEM;
	*arr = na;
	*cap = ncap;
	return 0;
}

/*
 * The first index i in [lo, hi) of an array sorted by its member `field` whose field is not below
 * key (hi if none): a binary search, inlined for any element type.
 */
#define VW_LOWER_BOUND(base, lo, hi, field, key)                                                 \
	({                                                                                        \
		size_t vw_lo_ = (lo), vw_hi_ = (hi);                                             \
		while (vw_lo_ < vw_hi_) {                                                         \
			size_t vw_mid_ = vw_lo_ + (vw_hi_ - vw_lo_) / 2;                          \
			if ((base)[vw_mid_].field < (key))                                        \
				vw_lo_ = vw_mid_ + 1;                                             \
			else                                                                      \
				vw_hi_ = vw_mid_;                                                 \
		}                                                                                 \
		vw_lo_;                                                                           \
	})

#define VW_NSEC_PER_SEC 1000000000ULL
#define VW_NSEC_PER_MSEC 1000000ULL
#define VW_USEC_PER_SEC 1000000ULL

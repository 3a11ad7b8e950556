/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libm, loaded on first use (dynlib.h). A daemon's steady state needs only a few of its
 * functions, each a few lines: rounding a power to whole microjoules, a GPU's utilisation to a
 * percentage and a passthrough frame's values to their scale (round, llround, nearbyint), the
 * idle power fit (fmin, fmax, sqrt), and the exponent of a double before printing it (floor,
 * log10). They are done here. Mapping libm for them cost the guest ~0.5 MiB of resident memory
 * (VmRSS counts each 64 KiB the kernel maps around a fault: most of libm's 0.9 MiB once its
 * symbols are bound). exp and log, which only a curve-fit model evaluates (the built-in model is
 * linear), load libm on first use: the model loader calls vw_libm_load() for such a model, so
 * one that cannot be evaluated is refused when it is loaded, naming the package.
 *
 * These are libm's own names, so every caller in the program (none of the libraries it links
 * use libm) gets them: built with -fno-builtin (none becomes a call to itself) and
 * -fno-math-errno (sqrt is the instruction, as on every target we build for). Like the C
 * library's in the default rounding mode, which the daemons never change; they set no errno and
 * no floating-point exception beyond inexact. tests/test_libm_lazy.c checks each against libm's.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "dynlib.h"
#include "libm_lazy.h"

static struct vw_dynlib lib = VW_DYNLIB("libm.so.6");

int vw_libm_load(char *why, size_t len)
{
	return vw_dynlib_load(&lib, "libm", "libc6", why, len);
}

void vw_libm_set_soname(const char *soname)
{
	lib = (struct vw_dynlib)VW_DYNLIB(soname);
}

/* libm's NAME(x), bound on first use; NaN and errno ENOPKG when the library is missing (a model
 * using them is refused first). */
static double call_libm(void **slot, const char *name, double x)
{
	void *f = vw_dynlib_cached(&lib, slot, name);

	if (!f) {
		errno = ENOPKG;
		return NAN;
	}
	return ((double (*)(double))f)(x);
}

double exp(double x)
{
	static void *slot;

	return call_libm(&slot, "exp", x);
}

double log(double x)
{
	static void *slot;

	return call_libm(&slot, "log", x);
}

/* At and above 2^52 in magnitude every double is an integer. */
#define INTEGRAL 0x1p52

double floor(double x)
{
	double t;

	if (!(__builtin_fabs(x) < INTEGRAL))
		return x; /* an integer, an infinity or a NaN */
	t = (double)(int64_t)x; /* toward zero, exact */
	if (t > x)
		t -= 1;
	return t == 0 ? __builtin_copysign(0.0, x) : t; /* floor(-0.0) is -0.0 */
}

/* Halfway cases away from zero. */
double round(double x)
{
	double t;

	if (!(__builtin_fabs(x) < INTEGRAL))
		return x;
	t = (double)(int64_t)x;
	if (__builtin_fabs(x - t) >= 0.5) /* x - t: x's fraction, exact */
		t += x < 0 ? -1.0 : 1.0;
	return __builtin_copysign(t, x); /* round(-0.4) is -0.0 */
}

/* Out of range (C leaves it unspecified): LLONG_MIN, as x86-64's conversion gives. */
long long llround(double x)
{
	double r = round(x);

	if (!(r >= -0x1p63 && r < 0x1p63))
		return LLONG_MIN;
	return (long long)r;
}

/* To nearest, halfway cases to even (the default rounding mode). */
double nearbyint(double x)
{
	double a = __builtin_fabs(x);

	if (!(a < INTEGRAL))
		return x;
	a = (a + INTEGRAL) - INTEGRAL; /* rounded to an integer by the addition */
	return __builtin_copysign(a, x);
}

/* A quiet NaN gives the other, a signaling one a NaN (as libm's); -0.0 is below +0.0. */
static int signaling(double x)
{
	uint64_t b;

	memcpy(&b, &x, sizeof(b));
	return (b & 0x7ff8000000000000ull) == 0x7ff0000000000000ull && (b & ((1ull << 52) - 1));
}

/* fmin (min) or fmax: a NaN loses to a number, -0.0 is below +0.0. */
static double pick(double a, double b, bool min)
{
	if (signaling(a) || signaling(b))
		return a + b;
	if (__builtin_isnan(a))
		return b;
	if (__builtin_isnan(b))
		return a;
	if (a == b)
		return (__builtin_signbit(a) != 0) == min ? a : b;
	return (a < b) == min ? a : b;
}

double fmin(double a, double b)
{
	return pick(a, b, true);
}

double fmax(double a, double b)
{
	return pick(a, b, false);
}

double sqrt(double x)
{
	return __builtin_sqrt(x); /* the instruction (-fno-math-errno); NaN below 0 */
}

/*
 * log10(x) = e log10(2) + ln(m) / ln(10) with x = m 2^e, m in [sqrt(1/2), sqrt(2)); ln(m) =
 * 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.172, whose series to s^23 leaves less than 1e-19.
 * log10(2) in two parts, the first short enough that e times it is exact. Within 2 ulp of
 * glibc's (the test measures it); powers of ten from 1 to 1e22, which are exact doubles, give
 * their exponent exactly.
 */
#define LOG10_2_HI 0x1.3441350800000p-2
#define LOG10_2_LO 0x1.f79fef311f12bp-34
#define INV_LN10 0x1.bcb7b1526e50ep-2

double log10(double x)
{
	static const double pow10[] = { 1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
					1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
					1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22 };
	uint64_t bits;
	double m, s, s2, p, y;
	int e = 0;

	if (__builtin_isnan(x))
		return x;
	if (x == 0)
		return -HUGE_VAL;
	if (x < 0)
		return NAN;
	if (__builtin_isinf(x))
		return x;
	if (x < 0x1p-1022) { /* subnormal: scale into the normal range */
		x *= 0x1p54;
		e = -54;
	}
	memcpy(&bits, &x, sizeof(bits));
	e += (int)(bits >> 52) - 1023;
	bits = (bits & ((1ull << 52) - 1)) | 1023ull << 52; /* m in [1, 2) */
	memcpy(&m, &bits, sizeof(m));
	if (m > 0x1.6a09e667f3bcdp0) { /* above sqrt(2): m / 2, e + 1 */
		m *= 0.5;
		e++;
	}
	s = (m - 1) / (m + 1);
	s2 = s * s;
	p = 1.0 / 23;
	for (int k = 21; k >= 3; k -= 2)
		p = p * s2 + 1.0 / k;
	y = (double)e * LOG10_2_HI + ((double)e * LOG10_2_LO + 2 * (s + s * s2 * p) * INV_LN10);
	if (e >= 0 && e <= 73) { /* 1e22 < 2^74 */
		double n = nearbyint(y);

		if (n >= 0 && n <= 22 && x == pow10[(int)n])
			return n;
	}
	return y;
}

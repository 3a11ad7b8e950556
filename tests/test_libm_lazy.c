/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libm loaded on first use (shared/core/libm_lazy.c): the functions done in the daemons give
 * libm's own results (bit for bit; log10 within 2 ulp, exact at powers of ten), over special
 * values and a million pseudo-random doubles of every magnitude; exp and log reach libm; and
 * without libm (its name pointed at one that is not installed) exp says what is missing and a
 * curve-fit model is refused when loaded, naming the package, while a linear one loads.
 */
#include "vw_test.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "libm_lazy.h"
#include "macro.h"
#include "model.h"

typedef double (*fn1)(double);
typedef double (*fn2)(double, double);
typedef long long (*fnll)(double);

static void *libm;

static void *libm_sym(const char *name)
{
	void *p = dlsym(libm, name);

	assert_non_null(p);
	return p;
}

/* Bit patterns equal, or both NaN. */
static bool same(double a, double b)
{
	return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof(a)) == 0;
}

static uint64_t ulps(double a, double b)
{
	int64_t x, y;

	memcpy(&x, &a, sizeof(x));
	memcpy(&y, &b, sizeof(y));
	if (x < 0)
		x = INT64_MIN - x;
	if (y < 0)
		y = INT64_MIN - y;
	return x > y ? (uint64_t)x - (uint64_t)y : (uint64_t)y - (uint64_t)x;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

/* A double of any sign, exponent and mantissa (xorshift64*), sometimes near a half-integer. */
static double any_double(void)
{
	uint64_t bits;
	double d;

	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	bits = rng * 0x2545f4914f6cdd1dull;
	switch (bits & 3) {
	case 0: /* around the integers and halves that rounding decides on */
		return (double)(int64_t)(bits >> 40) / 4 - (double)(1 << 21);
	case 1: /* within 2^60 either way */
		d = (double)(bits >> 11) * 0x1p-53;
		return ((bits >> 2) & 1 ? -d : d) * ldexp(1.0, (int)((bits >> 3) % 120) - 60);
	default: /* any bit pattern */
		memcpy(&d, &bits, sizeof(d));
		return d;
	}
}

static const double specials[] = {
	0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999999999999994, -0.49999999999999994,
	0x1p52, -0x1p52, 0x1p52 + 1, 0x1p52 - 0.5, -(0x1p52 - 0.5), 0x1p53, 0x1p63, -0x1p63,
	4503599627370495.5, 1e300, -1e300, 0x1p-1074, -0x1p-1074, 0x1p-1022, 1e-310, 1.0, -1.0,
	0.1, 10, 1000, 1e22, 1e23, 999.9999999999999, INFINITY, -INFINITY, NAN,
};

/* floor, round, nearbyint, llround, sqrt, fmin, fmax: libm's results, bit for bit. */
static void test_exact_as_libm(void **state)
{
	static const char *const names1[] = { "floor", "round", "nearbyint", "sqrt" };
	const fn1 ours1[] = { floor, round, nearbyint, sqrt };
	const fnll ours_llround = llround;
	const fn2 ours2[] = { fmin, fmax };
	fn1 theirs1[ARRAY_SIZE(names1)];
	fnll theirs_llround;
	fn2 theirs2[2];
	size_t n = ARRAY_SIZE(specials) + 1000000;

	(void)state;
	for (size_t f = 0; f < ARRAY_SIZE(names1); f++) {
		void *p = libm_sym(names1[f]);

		memcpy(&theirs1[f], &p, sizeof(p));
		assert_true((void *)ours1[f] != p); /* the program's own, not libm's */
	}
	{
		void *p = libm_sym("llround"), *q = libm_sym("fmin"), *r = libm_sym("fmax");

		memcpy(&theirs_llround, &p, sizeof(p));
		memcpy(&theirs2[0], &q, sizeof(q));
		memcpy(&theirs2[1], &r, sizeof(r));
	}
	for (size_t i = 0; i < n; i++) {
		double x = i < ARRAY_SIZE(specials) ? specials[i] : any_double();
		double y = i < ARRAY_SIZE(specials) ? specials[(i * 7 + 3) % ARRAY_SIZE(specials)]
						    : any_double();

		for (size_t f = 0; f < ARRAY_SIZE(names1); f++)
			if (!same(ours1[f](x), theirs1[f](x))) {
				print_message("# %s(%a): %a, libm %a\n", names1[f], x, ours1[f](x),
					      theirs1[f](x));
				fail();
			}
		if (fabs(x) < 0x1p62 && ours_llround(x) != theirs_llround(x)) {
			print_message("# llround(%a): %lld, libm %lld\n", x, ours_llround(x),
				      theirs_llround(x));
			fail();
		}
		for (size_t f = 0; f < 2; f++) {
			double a = ours2[f](x, y), b = theirs2[f](x, y);

			/* fmin(0.0, -0.0) may be either zero (C11 F.10.9.2) */
			if (!same(a, b) && !(a == 0 && b == 0)) {
				print_message("# %s(%a, %a): %a, libm %a\n", f ? "fmax" : "fmin", x, y,
					      a, b);
				fail();
			}
		}
	}
	assert_int_equal(ours_llround(1e300), LLONG_MIN);
	assert_true(signbit(fmin(0.0, -0.0)) && !signbit(fmax(-0.0, 0.0)));
}

/* log10: within 2 ulp of libm's at every magnitude, exact at 1, 10, ... 1e22. */
static void test_log10_near_libm(void **state)
{
	const fn1 ours = log10;
	void *p = libm_sym("log10");
	fn1 theirs;
	uint64_t worst = 0, off = 0;
	double p10 = 1;

	(void)state;
	memcpy(&theirs, &p, sizeof(p));
	assert_true((void *)ours != p);
	for (size_t i = 0; i < ARRAY_SIZE(specials) + 1000000; i++) {
		double x = i < ARRAY_SIZE(specials) ? specials[i] : fabs(any_double());
		double a = ours(x), b = theirs(x);
		uint64_t u;

		if (isnan(b) || isinf(b)) {
			assert_true(same(a, b));
			continue;
		}
		u = ulps(a, b);
		off += u != 0;
		if (u > worst) {
			worst = u;
			print_message("# log10(%a): %a, libm %a (%llu ulp)\n", x, a, b,
				      (unsigned long long)u);
		}
	}
	print_message("# log10: worst %llu ulp, %llu of 1,000,000+ not libm's\n",
		      (unsigned long long)worst, (unsigned long long)off);
	assert_true(worst <= 2);
	assert_true(same(ours(-1), NAN) && ours(0) == -INFINITY && ours(-0.0) == -INFINITY);
	for (int k = 0; k <= 22; k++, p10 *= 10)
		assert_true(ours(p10) == (double)k);
}

/* Without libm: exp fails with ENOPKG, vw_libm_load names the package, a curve-fit model is
 * refused at load and a linear one still loads. Then libm again: exp and log are libm's. */
static void test_missing_then_present(void **state)
{
	const char *expo = VW_TEST_DATA "/models/kepler-model-db_v0.7_ec2-0.7.11_rapl-sysfs_"
			   "AbsPower_BPFOnly_ExponentialRegressionTrainer_0.json";
	const char *linear = VW_TEST_DATA "/models/kepler-v0.7.12_data_model_weight_intel_rapl_"
			     "AbsPowerModel.json";
	const fn1 our_exp = exp, our_log = log;
	struct vw_model *m = NULL;
	char why[512] = "", err[512] = "";
	fn1 their_exp, their_log;
	void *p;

	(void)state;
	vw_libm_set_soname("libvirtwatt-absent.so.0");
	errno = 0;
	assert_true(isnan(our_exp(1.0)));
	assert_int_equal(errno, ENOPKG);
	assert_int_equal(vw_libm_load(why, sizeof(why)), -ENOPKG);
	print_message("# %s\n", why);
	assert_true(strncmp(why, "libm is not installed (libvirtwatt-absent.so.0", 46) == 0);
	assert_non_null(strstr(why, "): install libc6"));
	assert_true(vw_model_load_file(expo, &m, err, sizeof(err)) < 0);
	print_message("# %s\n", err);
	assert_non_null(strstr(err, "the exponential fit needs libm's exp and log: libm is not "
				    "installed (libvirtwatt-absent.so.0"));
	assert_int_equal(vw_model_load_file(linear, &m, err, sizeof(err)), 0);
	vw_model_free(m);
	m = NULL;

	vw_libm_set_soname("libm.so.6");
	assert_int_equal(vw_libm_load(why, sizeof(why)), 0);
	assert_int_equal(vw_model_load_file(expo, &m, err, sizeof(err)), 0);
	vw_model_free(m);
	p = libm_sym("exp");
	memcpy(&their_exp, &p, sizeof(p));
	p = libm_sym("log");
	memcpy(&their_log, &p, sizeof(p));
	for (size_t i = 0; i < ARRAY_SIZE(specials) + 10000; i++) {
		double x = i < ARRAY_SIZE(specials) ? specials[i] : any_double();

		assert_true(same(our_exp(x), their_exp(x)));
		assert_true(same(our_log(x), their_log(x)));
	}
}

static int setup(void **state)
{
	(void)state;
	libm = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
	return libm ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	dlclose(libm);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		/* first: libm not loaded through libm_lazy.c yet */
		cmocka_unit_test(test_missing_then_present),
		cmocka_unit_test(test_exact_as_libm),
		cmocka_unit_test(test_log10_near_libm),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

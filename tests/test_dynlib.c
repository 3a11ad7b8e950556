/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Libraries loaded on first use (shared/core/dynlib.h): a missing library or entry point is a
 * value the forwarder returns, with the loader's words; a present one is called through; and
 * libcurl's two variadic calls carry each kind of argument (long, pointer, curl_off_t) intact.
 */
#include "vw_test.h"

#include <curl/curl.h>
#include <string.h>

#include "curl_lazy.h"
#include "dynlib.h"

static struct vw_dynlib absent = VW_DYNLIB("libvirtwatt-absent.so.0");

int vw_test_absent_call(int x);
VW_DYNLIB_FORWARD(absent, -42, int, vw_test_absent_call, (int x), (x))

/* A library that is not installed: the call's failure value, and the loader's reason. */
static void test_missing_library(void **state)
{
	const char *need;

	(void)state;
	assert_int_equal(vw_test_absent_call(7), -42);
	assert_false(vw_dynlib_available(&absent));
	assert_null(vw_dynlib_sym(&absent, "anything"));
	assert_non_null(strstr(vw_dynlib_error(&absent), "libvirtwatt-absent.so.0"));
	assert_int_equal(vw_test_absent_call(7), -42); /* asked again: the same answer */
	/* what the user reads: what is missing, the loader's words, the package */
	need = vw_dynlib_need(&absent, "libabsent", "libabsent0");
	assert_non_null(need);
	assert_true(strncmp(need, "libabsent is not installed (libvirtwatt-absent.so.0", 51) == 0);
	assert_non_null(strstr(need, "): install libabsent0"));
}

/* A present library: its entry points work; one it lacks is NULL and named. */
static void test_present_library(void **state)
{
	static struct vw_dynlib libm = VW_DYNLIB("libm.so.6");
	double (*fn)(double);
	void *p;

	(void)state;
	assert_true(vw_dynlib_available(&libm));
	assert_null(vw_dynlib_need(&libm, "libm", "libc6"));
	p = vw_dynlib_sym(&libm, "cbrt");
	assert_non_null(p);
	memcpy(&fn, &p, sizeof(fn));
	assert_double_near(fn(27.0), 3.0, 1e-12);
	assert_null(vw_dynlib_sym(&libm, "vw_no_such_function"));
	assert_string_equal(vw_dynlib_error(&libm), "libm.so.6 has no vw_no_such_function");
}

/* Through the forwarders: a long, a pointer and a curl_off_t reach libcurl, and getinfo's
 * pointer comes back with what libcurl holds. */
static void test_curl_forwarders(void **state)
{
	const char *url = "http://127.0.0.1:9/virtwatt-dynlib";
	char why[256] = "", *eff = NULL;
	long proto = 0;
	CURL *h;

	(void)state;
	assert_int_equal(vw_curl_load(why, sizeof(why)), 0);
	assert_int_equal(curl_global_init(CURL_GLOBAL_DEFAULT), CURLE_OK);
	h = curl_easy_init();
	assert_non_null(h);
	assert_int_equal(curl_easy_setopt(h, CURLOPT_URL, url), CURLE_OK);
	assert_int_equal(curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 50L), CURLE_OK);
	assert_int_equal(curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)1 << 40),
			 CURLE_OK);
	/* a value out of range is refused by libcurl itself: the long arrived as a long */
	assert_int_equal(curl_easy_setopt(h, CURLOPT_HTTP_VERSION, 99L),
			 CURLE_UNSUPPORTED_PROTOCOL);
	assert_int_equal(curl_easy_getinfo(h, CURLINFO_EFFECTIVE_URL, &eff), CURLE_OK);
	assert_non_null(eff);
	assert_string_equal(eff, url);
	assert_int_equal(curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &proto), CURLE_OK);
	assert_int_equal(proto, 0);
	assert_string_equal(curl_easy_strerror(CURLE_OK), "No error");
	curl_easy_cleanup(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_missing_library),
		cmocka_unit_test(test_present_library),
		cmocka_unit_test(test_curl_forwarders),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

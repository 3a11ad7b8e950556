/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcurl, loaded on first use (dynlib.h) by the one HTTP client (http_client.c), whose users
 * are the kubelet's pod metadata, a BMC over Redfish, a model server and the OTLP push; most
 * nodes have none of them, and libcurl with OpenSSL and Kerberos is ~3.5 MiB of a daemon's
 * resident memory. These are the calls the client makes. The two variadic ones carry one argument whose type the option's range names
 * (curl.h: CURLOPTTYPE_*; every CURLINFO takes a pointer).
 */
#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>
#include <errno.h>
#include <stdarg.h>

#include "curl_lazy.h"
#include "dynlib.h"

#undef curl_easy_setopt
#undef curl_easy_getinfo

static struct vw_dynlib lib = VW_DYNLIB("libcurl.so.4");

int vw_curl_load(char *why, size_t len)
{
	return vw_dynlib_load(&lib, "libcurl", "libcurl4", why, len);
}

VW_DYNLIB_FORWARD(lib, CURLE_FAILED_INIT, CURLcode, curl_global_init, (long flags), (flags))
VW_DYNLIB_FORWARD(lib, NULL, CURL *, curl_easy_init, (void), ())
VW_DYNLIB_FORWARD_VOID(lib, curl_easy_cleanup, (CURL *h), (h))
VW_DYNLIB_FORWARD_VOID(lib, curl_easy_reset, (CURL *h), (h))
VW_DYNLIB_FORWARD(lib, CURLE_FAILED_INIT, CURLcode, curl_easy_perform, (CURL *h), (h))
VW_DYNLIB_FORWARD(lib, NULL, struct curl_slist *, curl_slist_append,
		  (struct curl_slist *l, const char *s), (l, s))
VW_DYNLIB_FORWARD_VOID(lib, curl_slist_free_all, (struct curl_slist *l), (l))
VW_DYNLIB_FORWARD(lib, NULL, CURLM *, curl_multi_init, (void), ())
VW_DYNLIB_FORWARD(lib, CURLM_INTERNAL_ERROR, CURLMcode, curl_multi_cleanup, (CURLM *m), (m))
VW_DYNLIB_FORWARD(lib, CURLM_INTERNAL_ERROR, CURLMcode, curl_multi_add_handle,
		  (CURLM *m, CURL *h), (m, h))
VW_DYNLIB_FORWARD(lib, CURLM_INTERNAL_ERROR, CURLMcode, curl_multi_remove_handle,
		  (CURLM *m, CURL *h), (m, h))
VW_DYNLIB_FORWARD(lib, CURLM_INTERNAL_ERROR, CURLMcode, curl_multi_perform,
		  (CURLM *m, int *running), (m, running))
VW_DYNLIB_FORWARD(lib, CURLM_INTERNAL_ERROR, CURLMcode, curl_multi_poll,
		  (CURLM *m, struct curl_waitfd extra[], unsigned n, int timeout_ms, int *ret),
		  (m, extra, n, timeout_ms, ret))
VW_DYNLIB_FORWARD(lib, CURLM_INTERNAL_ERROR, CURLMcode, curl_multi_wakeup, (CURLM *m), (m))
VW_DYNLIB_FORWARD(lib, NULL, CURLMsg *, curl_multi_info_read, (CURLM *m, int *left),
		  (m, left))

/* With no library, the failure to explain is its absence. */
VW_DYNLIB_FORWARD(lib, vw_dynlib_error(&lib), const char *, curl_easy_strerror, (CURLcode code),
		  (code))

CURLcode curl_easy_setopt(CURL *h, CURLoption opt, ...)
{
	static void *slot;
	CURLcode (*fn)(CURL *, CURLoption, ...) = vw_dynlib_cached(&lib, &slot, "curl_easy_setopt");
	va_list ap;
	CURLcode r;

	if (!fn)
		return CURLE_FAILED_INIT;
	va_start(ap, opt);
	if (opt < CURLOPTTYPE_OBJECTPOINT)
		r = fn(h, opt, va_arg(ap, long));
	else if (opt < CURLOPTTYPE_OFF_T)
		r = fn(h, opt, va_arg(ap, void *)); /* object and function pointers alike */
	else if (opt < CURLOPTTYPE_BLOB)
		r = fn(h, opt, va_arg(ap, curl_off_t));
	else
		r = fn(h, opt, va_arg(ap, void *));
	va_end(ap);
	return r;
}

CURLcode curl_easy_getinfo(CURL *h, CURLINFO info, ...)
{
	static void *slot;
	CURLcode (*fn)(CURL *, CURLINFO, ...) = vw_dynlib_cached(&lib, &slot, "curl_easy_getinfo");
	va_list ap;
	void *arg;

	if (!fn)
		return CURLE_FAILED_INIT;
	va_start(ap, info);
	arg = va_arg(ap, void *); /* every CURLINFO_* takes a pointer */
	va_end(ap);
	return fn(h, info, arg);
}

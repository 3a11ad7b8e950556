/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Libraries loaded on first use. A back-end that only some machines need (libcurl for the
 * kubelet, a BMC or a model server; libvirt on hypervisors; libfreeipmi where a BMC is
 * configured; libbpf, which only the BPF accountant's short-lived loader child needs) is not
 * linked: a small forwarding file defines the calls the code makes, and the first call loads the
 * library (dlopen) and each entry point (dlsym). A daemon that never needs it never maps it: no
 * pages of it, nor of what it pulls in (OpenSSL, GLib, ICU, Kerberos, libelf...), are in its
 * memory.
 *
 * A missing library is a value, not a crash: the forwarders return the call's own failure value
 * (NULL, -1, an error code) and vw_dynlib_error() says what was missing, so each caller's
 * existing error path reports it.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>

struct vw_dynlib {
	const char *soname; /* what dlopen() is given, e.g. "libcurl.so.4" */
	/* private */
	int state; /* 0 not tried, 1 loaded, -1 failed */
	void *handle;
	char error[256];
	char need[384]; /* vw_dynlib_need's words */
};

#define VW_DYNLIB(name) { .soname = (name) }

/* The library's entry point `symbol`, loading the library first if need be; NULL if either is
 * missing (vw_dynlib_error says which). Thread-safe, and fork-safe: a child forked while
 * another thread loads a library starts with that load finished. The library stays loaded. */
void *vw_dynlib_sym(struct vw_dynlib *l, const char *symbol);

/* Whether the library is loaded (or loads now). */
bool vw_dynlib_available(struct vw_dynlib *l);

/* Why the last load or lookup failed: "libvirt.so.0: cannot open shared object file...". */
const char *vw_dynlib_error(const struct vw_dynlib *l);

/*
 * Load it now: NULL, or what to tell the user, "<what> is not installed (<the loader's words>):
 * install <package>" (kept in l).
 */
const char *vw_dynlib_need(struct vw_dynlib *l, const char *what, const char *package);
/* The same as 0, or -ENOPKG with those words copied into why (len bytes; why may be NULL). */
int vw_dynlib_load(struct vw_dynlib *l, const char *what, const char *package, char *why,
		   size_t len);

/* vw_dynlib_sym, remembered in *slot (a forwarder's static): one lookup per entry point. */
static inline void *vw_dynlib_cached(struct vw_dynlib *l, void **slot, const char *symbol)
{
	void *f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

	if (!f) {
		f = vw_dynlib_sym(l, symbol);
		if (f)
			__atomic_store_n(slot, f, __ATOMIC_RELEASE);
	}
	return f;
}

/*
 * One forwarder: `ret name params` calls the library's `name` with `args`, or returns `fail`
 * (an expression) when the library or the entry point is missing.
 */
#define VW_DYNLIB_FORWARD(lib, fail, ret, name, params, args)                                  \
	ret name params                                                                         \
	{                                                                                       \
		static void *slot;                                                              \
		void *f = vw_dynlib_cached(&(lib), &slot, #name);                               \
                                                                                                \
		return f ? ((__typeof__(&name))f) args : (fail);                                \
	}

/* The same for a call that returns nothing. */
#define VW_DYNLIB_FORWARD_VOID(lib, name, params, args)                                         \
	void name params                                                                        \
	{                                                                                       \
		static void *slot;                                                              \
		void *f = vw_dynlib_cached(&(lib), &slot, #name);                               \
                                                                                                \
		if (f)                                                                          \
			((__typeof__(&name))f) args;                                            \
	}

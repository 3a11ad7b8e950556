/* SPDX-License-Identifier: Apache-2.0 */
#include "dynlib.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER; /* dlerror() is per thread, state is not */

/*
 * Held across fork(): a child (the BPF loader, cpu_bpf_load.c, loads libbpf) never inherits it
 * locked, nor a library half loaded by another thread of ours.
 */
static void fork_lock(void)
{
	pthread_mutex_lock(&mu);
}

static void fork_unlock(void)
{
	pthread_mutex_unlock(&mu);
}

__attribute__((constructor)) static void fork_handlers(void)
{
	(void)pthread_atfork(fork_lock, fork_unlock, fork_unlock);
}

static bool load_locked(struct vw_dynlib *l)
{
	const char *e;

	if (l->state)
		return l->state > 0;
	/* RTLD_LOCAL: its symbols never interpose on anything else loaded here. */
	l->handle = dlopen(l->soname, RTLD_NOW | RTLD_LOCAL);
	if (l->handle) {
		l->state = 1;
		return true;
	}
	e = dlerror();
	snprintf(l->error, sizeof(l->error), "%s", e ? e : l->soname);
	l->state = -1;
	return false;
}

void *vw_dynlib_sym(struct vw_dynlib *l, const char *symbol)
{
	void *p = NULL;

	pthread_mutex_lock(&mu);
	if (load_locked(l)) {
		p = dlsym(l->handle, symbol);
		if (!p)
			snprintf(l->error, sizeof(l->error), "%s has no %s", l->soname, symbol);
	}
	pthread_mutex_unlock(&mu);
	return p;
}

bool vw_dynlib_available(struct vw_dynlib *l)
{
	bool ok;

	pthread_mutex_lock(&mu);
	ok = load_locked(l);
	pthread_mutex_unlock(&mu);
	return ok;
}

const char *vw_dynlib_error(const struct vw_dynlib *l)
{
	return l->error[0] ? l->error : "no error";
}

const char *vw_dynlib_need(struct vw_dynlib *l, const char *what, const char *package)
{
	if (vw_dynlib_available(l))
		return NULL;
	pthread_mutex_lock(&mu);
	snprintf(l->need, sizeof(l->need), "%s is not installed (%s): install %s", what, l->error,
		 package);
	pthread_mutex_unlock(&mu);
	return l->need;
}

int vw_dynlib_load(struct vw_dynlib *l, const char *what, const char *package, char *why,
		   size_t len)
{
	const char *need = vw_dynlib_need(l, what, package);

	if (!need)
		return 0;
	if (why && len)
		snprintf(why, len, "%s", need);
	return -ENOPKG;
}

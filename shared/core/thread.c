/* SPDX-License-Identifier: Apache-2.0 */
#include "thread.h"

#include <errno.h>

void vw_signals_block_all(sigset_t *ret_old)
{
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, ret_old);
}

void vw_signals_restore(const sigset_t *old)
{
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

int vw_thread_create(pthread_t *ret, void *(*fn)(void *), void *arg)
{
	sigset_t old;
	int r;

	vw_signals_block_all(&old);
	r = pthread_create(ret, NULL, fn, arg);
	vw_signals_restore(&old);
	return -r;
}

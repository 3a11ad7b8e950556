/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Threads that never take a signal: the main thread alone handles SIGTERM and SIGINT, so a stop
 * request always interrupts its wait (never a worker's, which would leave the main loop asleep
 * until its timeout). Threads inherit the signal mask of the thread that creates them, so every
 * thread we start, and every thread a library starts for us (libmicrohttpd's, libvirt's), is
 * created with all signals blocked.
 */
#pragma once

#include <pthread.h>
#include <signal.h>

/* pthread_create with every signal blocked in the new thread. 0 or -errno. */
int vw_thread_create(pthread_t *ret, void *(*fn)(void *), void *arg);

/* Around a library call that starts threads: block every signal in the calling thread, then
 * restore its mask. */
void vw_signals_block_all(sigset_t *ret_old);
void vw_signals_restore(const sigset_t *old);

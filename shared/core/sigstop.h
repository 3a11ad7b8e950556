/* SPDX-License-Identifier: Apache-2.0 */
/*
 * How a daemon stops: the first SIGTERM or SIGINT sets a flag and makes a wake-up descriptor
 * readable, so the main loop's poll() returns at once whatever it was waiting for (no race
 * between checking the flag and sleeping); the daemon then stops cleanly (state flushed).
 * A second one exits at once (_exit(128 + signal)), for a daemon stuck in a call that does not
 * return. SIGPIPE, SIGHUP, SIGUSR1, SIGUSR2 and SIGALRM are ignored (their default action
 * would kill the daemon without its state flush). Worker threads never take these signals
 * (thread.h), so they always land on the main thread and interrupt what it is doing.
 */
#pragma once

#include <signal.h>

/* Install the handlers (once; later calls do nothing). 0 or -errno. */
int vw_sigstop_install(void);
/* Set once a stop was asked for. */
volatile sig_atomic_t *vw_sigstop_flag(void);
/* Readable once a stop was asked for; -1 before vw_sigstop_install() (poll() skips it). */
int vw_sigstop_fd(void);

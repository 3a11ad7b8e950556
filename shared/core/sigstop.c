/* SPDX-License-Identifier: Apache-2.0 */
#include "sigstop.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t stop_requested;
static int wake[2] = { -1, -1 };

static void on_stop(int sig)
{
	static const char msg[] = "virtwatt: second stop signal: exiting now\n";
	int saved = errno;

	if (stop_requested) {
		(void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
		_exit(128 + sig);
	}
	stop_requested = 1;
	if (wake[1] >= 0)
		(void)!write(wake[1], "", 1);
	errno = saved;
}

int vw_sigstop_install(void)
{
	struct sigaction sa = { .sa_handler = on_stop };

	if (wake[0] >= 0)
		return 0;
	if (pipe2(wake, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
	/* No SA_RESTART: a blocking call of the main thread returns EINTR and the loop sees the
	 * flag; the signal itself is blocked while its handler runs, the other one is not. */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* Signals that mean nothing to us must not kill us with their default action (the guest
	 * would lose its state flush): a stray `kill -USR1` or an alarm is ignored. */
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	return 0;
}

volatile sig_atomic_t *vw_sigstop_flag(void)
{
	return &stop_requested;
}

int vw_sigstop_fd(void)
{
	return wake[0];
}

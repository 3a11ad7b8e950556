/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fork N children that sleep until told otherwise, for bench/daemon_cpu.sh: a host with N
 * (idle) processes. Prints "ready N" once all are forked, then waits for SIGTERM, SIGINT or
 * SIGHUP, kills and reaps every child and exits. Children also die with the parent
 * (PR_SET_PDEATHSIG), so a SIGKILLed spawner leaves nothing behind.
 *
 * With CHURN (per mille of N per second), that many of the children are replaced every second,
 * oldest first (killed, reaped, a new one forked): process churn at a steady population.
 *
 *   spawn_idle N [CHURN]
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

static void reap(pid_t *kids, long n)
{
	for (long i = 0; i < n; i++)
		kill(kids[i], SIGKILL);
	for (long i = 0; i < n; i++)
		while (waitpid(kids[i], NULL, 0) < 0 && errno == EINTR)
			;
}

/* A child that pauses until killed (or its parent dies); -1 on failure. */
static pid_t spawn(pid_t parent, const sigset_t *set)
{
	pid_t pid = fork();

	if (pid == 0) {
		sigprocmask(SIG_UNBLOCK, set, NULL);
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
			_exit(1);
		for (;;)
			pause();
	}
	return pid;
}

int main(int argc, char **argv)
{
	pid_t parent = getpid(), *kids;
	char *end = NULL, *end2 = NULL;
	long n = argc >= 2 ? strtol(argv[1], &end, 10) : 0;
	long churn = argc == 3 ? strtol(argv[2], &end2, 10) : 0, per_s, next = 0;
	struct timespec wait = { .tv_sec = 1 };
	sigset_t set;
	int sig;

	if (argc < 2 || argc > 3 || *end || (end2 && *end2) || n <= 0 || n > 1000000 || churn < 0 ||
	    churn > 1000) {
		fprintf(stderr, "usage: %s N [CHURN per mille per second]\n", argv[0]);
		return 2;
	}
	per_s = n * churn / 1000;
	kids = calloc((size_t)n, sizeof(*kids));
	if (!kids)
		return 1;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	for (long i = 0; i < n; i++) {
		kids[i] = spawn(parent, &set);
		if (kids[i] < 0) {
			fprintf(stderr, "spawn_idle: fork %ld of %ld: %s\n", i + 1, n, strerror(errno));
			reap(kids, i);
			return 1;
		}
	}
	printf("ready %ld\n", n);
	fflush(stdout);
	for (;;) {
		sig = per_s ? sigtimedwait(&set, NULL, &wait) : (sigwait(&set, &sig) == 0 ? sig : -1);
		if (sig > 0)
			break;
		if (!per_s)
			continue;
		/* A second passed: replace the oldest per_s children. */
		for (long k = 0; k < per_s; k++, next = (next + 1) % n) {
			pid_t pid;

			kill(kids[next], SIGKILL);
			while (waitpid(kids[next], NULL, 0) < 0 && errno == EINTR)
				;
			pid = spawn(parent, &set);
			if (pid < 0) {
				fprintf(stderr, "spawn_idle: churn fork: %s\n", strerror(errno));
				kids[next] = kids[(next + n - 1) % n]; /* keep the array valid */
				reap(kids, n);
				return 1;
			}
			kids[next] = pid;
		}
	}
	reap(kids, n);
	free(kids);
	return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fork N children that sleep until told otherwise, for bench/daemon_cpu.sh: a host with N
 * (idle) processes. Prints "ready N" once all are forked, then waits for SIGTERM, SIGINT or
 * SIGHUP, kills and reaps every child and exits. Children also die with the parent
 * (PR_SET_PDEATHSIG), so a SIGKILLed spawner leaves nothing behind.
 *
 *   spawn_idle N
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
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

int main(int argc, char **argv)
{
	pid_t parent = getpid(), *kids;
	char *end;
	long n = argc == 2 ? strtol(argv[1], &end, 10) : 0;
	sigset_t set;
	int sig;

	if (argc != 2 || *end || n <= 0 || n > 1000000) {
		fprintf(stderr, "usage: %s N\n", argv[0]);
		return 2;
	}
	kids = calloc((size_t)n, sizeof(*kids));
	if (!kids)
		return 1;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	for (long i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			fprintf(stderr, "spawn_idle: fork %ld of %ld: %s\n", i + 1, n, strerror(errno));
			reap(kids, i);
			return 1;
		}
		if (pid == 0) {
			sigprocmask(SIG_UNBLOCK, &set, NULL);
			if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
				_exit(1);
			for (;;)
				pause();
		}
		kids[i] = pid;
	}
	printf("ready %ld\n", n);
	fflush(stdout);
	while (sigwait(&set, &sig) != 0)
		;
	reap(kids, n);
	free(kids);
	return 0;
}

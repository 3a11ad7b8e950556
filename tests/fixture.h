/* SPDX-License-Identifier: Apache-2.0 */
/* Temporary fixture trees for tests: mkdtemp, write files by relative path, remove all. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Create a fresh directory under $TMPDIR (or /tmp); returns a malloc'd path or NULL. */
char *vw_fixture_mkdtemp(const char *tag);
/* The same on a memory file system (/dev/shm where it is one, else as above): for fixture
 * trees standing in for sysfs and procfs, whose reads never wait on a disk, as theirs do not. */
char *vw_fixture_mkdtemp_mem(const char *tag);
/* A port free on 127.0.0.1 now for socktype (SOCK_STREAM, SOCK_DGRAM); 0 on failure. */
unsigned vw_fixture_free_port(int socktype);
/* Write (creating parent directories) root/rel with the given text and mode (0 = 0644). */
int vw_fixture_write(const char *root, const char *rel, const char *text, int mode);
/* Write root/rel (0644) as a new file renamed over the old one: no reader sees it half written. */
int vw_fixture_replace(const char *root, const char *rel, const char *text);
int vw_fixture_mkdir(const char *root, const char *rel);
int vw_fixture_symlink(const char *root, const char *target, const char *rel);
/* Remove a tree and free the path. */
void vw_fixture_rm(char *root);
/*
 * A file system that does not answer (root): a FUSE mount on dir whose /dev/fuse descriptor
 * (*ret_fd) nobody reads, so every request below dir waits (a dead NFS hard mount, a stuck
 * virtiofsd). vw_fixture_fuse_end() closes the descriptor (every waiter gets ENOTCONN) and
 * detaches the mount (dir as it was). 0 or -errno.
 */
int vw_fixture_fuse_hang(const char *dir, int *ret_fd);
void vw_fixture_fuse_end(const char *dir, int *fd);
/*
 * A temporary directory for a whole cmocka group: vw_fixture_tmpdir_setup() makes it (named
 * after the test program) in vw_fixture_tmpdir, vw_fixture_tmpdir_teardown() removes it. Pass
 * them to cmocka_run_group_tests().
 */
extern char *vw_fixture_tmpdir;
int vw_fixture_tmpdir_setup(void **state);
int vw_fixture_tmpdir_teardown(void **state);
/*
 * A fresh directory (named after the test program) and an O_PATH fd on it, for one test:
 * vw_fixture_root_setup() makes them and puts a struct vw_fixture_root in *state,
 * vw_fixture_root_teardown() closes and removes them. Pass them to
 * cmocka_unit_test_setup_teardown().
 */
struct vw_fixture_root {
	char *path;
	int fd;
};
int vw_fixture_root_setup(void **state);
int vw_fixture_root_teardown(void **state);
/* Read a whole file into a malloc'd NUL-terminated buffer (NULL on error). */
char *vw_fixture_slurp(const char *path, size_t *ret_len);

/* This process's open descriptors, listed under an injected procfs root (<procfs>/self/fd);
 * (size_t)-1 where it cannot be listed. */
size_t vw_fixture_open_fds(int procfs_fd);

/* This thread's CPU time in seconds (CLOCK_THREAD_CPUTIME_ID). */
double vw_fixture_thread_cpu_s(void);
/* Busy-loop until this thread has run `seconds` more of CPU (safe in a forked child). */
void vw_fixture_spin(double seconds);

/*
 * A fork whose child has exactly PID want in this PID namespace, for tests that reuse a PID on
 * purpose (clone3() with set_tid, Linux 5.5, CAP_SYS_ADMIN in the PID namespace): 0 in the
 * child, want in the parent, -errno on failure: -EEXIST while a process (a zombie included)
 * has want, its holder not reaped: a test's bug (another fork takes a PID just reaped only if
 * the kernel's PID counter wraps onto it in between: not the race ns_last_pid had).
 * The child is a raw clone3 of a perhaps multithreaded process: it keeps to plain system
 * calls (no malloc, no cmocka, setres[ug]id through syscall()) and ends with _exit().
 */
pid_t vw_fixture_fork_at(pid_t want);
/* 0 where vw_fixture_fork_at() can work here; -EPERM (not root), -ENOSYS (no clone3, or a
 * seccomp filter refusing it) otherwise. It creates no process. */
int vw_fixture_fork_at_probe(void);

struct MHD_Daemon;
/*
 * An HTTP server on a free 127.0.0.1 port that answers every request 200 with body as
 * application/json (a fake kubelet or API server). body is not copied: it must outlive the
 * server. *ret_port gets the port; NULL on failure. Stop it with MHD_stop_daemon().
 */
struct MHD_Daemon *vw_fixture_json_server(const char *body, unsigned *ret_port);

/* GET a URL (5 s timeout); returns the malloc'd body (NUL-terminated) or NULL; *code the status. */
char *vw_fixture_http_get(const char *url, long *code);
/* The same with another method (HEAD: no body is read; the result is ""). */
char *vw_fixture_http(const char *url, const char *method, long *code);
/* The same within timeout_ms (a whole machine's processes, as a daemon with
 * --metrics.process-top-n=0 serves them, are megabytes: seconds on a loaded machine). */
char *vw_fixture_http_within(const char *url, const char *method, long *code, long timeout_ms);
/* /metrics of a daemon on 127.0.0.1:port, or NULL unless it answered 200 (503 before the first
 * snapshot). */
char *vw_fixture_try_scrape(unsigned port);
/* The first /metrics (polled for 10 s at most) that holds needle; NULL when none did. */
char *vw_fixture_scrape_when(unsigned port, const char *needle);
/* The first /metrics (polled every 50 ms for timeout_s at most) whose family's samples with
 * labels (vw_fixture_sample_sum) sum to want, or at least want when at_least; NULL when none
 * did. */
char *vw_fixture_await_sample(unsigned port, const char *family, const char *labels, double want,
			      bool at_least, double timeout_s);
/* CLOCK_MONOTONIC in seconds. */
double vw_fixture_monotonic_s(void);
/* The sum of the samples of a family in an exposition whose labels hold `match` (NULL: all). */
double vw_fixture_sample_sum(const char *text, const char *family, const char *match);
/* The same over the samples whose name and labels hold every string of must (NULL-terminated;
 * NULL: all). */
double vw_fixture_sample_sum_all(const char *text, const char *family, const char *const *must);
/*
 * Start a daemon (argv[0] is its path) with stdout+stderr to a file, and wait (up to 10 s) for
 * its "(port N)" log line. 0 with *ret_pid and *ret_port, or -errno; the daemon is killed on
 * failure. vw_fixture_stop_daemon() sends SIGTERM and returns its exit status (or 128+signal).
 */
int vw_fixture_start_daemon(char *const argv[], pid_t *ret_pid, unsigned *ret_port);
/* The same, its output kept in logpath (created or truncated; the caller removes it). */
int vw_fixture_start_daemon_logged(char *const argv[], const char *logpath, pid_t *ret_pid,
				   unsigned *ret_port);
/*
 * Start argv (argv[0] a path, or a name looked up in PATH) with stdout and stderr to logpath
 * (created or truncated): the child's pid, or -errno.
 */
pid_t vw_fixture_spawn_logged(char *const argv[], const char *logpath);
/* The same, the child killed (SIGKILL) when the test process dies, however it dies: a peer
 * server that must never outlive its test. */
pid_t vw_fixture_spawn_tied(char *const argv[], const char *logpath);
/* Run argv to its end, output in logpath: its exit status (128 + signal when killed), -errno. */
int vw_fixture_run_logged(char *const argv[], const char *logpath);
/* SIGKILL and reap *pid when it is > 0 (a daemon a failed test left running); *pid = 0. */
void vw_fixture_kill(pid_t *pid);
int vw_fixture_stop_daemon(pid_t pid);

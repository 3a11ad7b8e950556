/* SPDX-License-Identifier: Apache-2.0 */
/*
 * struct vw_virt_api through the libvirt helper: each run spawns the daemon's own binary
 * (posix_spawn: the daemon has threads; no fork of it), feeds it the request on a pipe, reads
 * one answer (vm_libvirt_wire.h) on another within timeout_ns, reaps it and keeps the answer
 * until the core has read it: the core's reconcile (list, the XML of new domains, stats) is one
 * run. The "connection" is this cache: starts and stops come from the process scan, the rest
 * from reconciles; a failed run is a lost connection.
 *
 * Faults: a helper that says nothing within the timeout is SIGKILLed and reaped; one that dies
 * of a signal is logged with it; an answer cut short, oversized or garbled is refused whole.
 * Each is a failed call (-ENOTCONN): the core keeps its last list and retries with its backoff.
 *
 * The XML of each (UUID, domain ID) is kept between runs, so a run fetches only the documents
 * of domains started since ("known UUID ID" lines in the request), except when the core's
 * periodic full pass asks for all of them again (hot-plugged devices).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "vm_libvirt_child.h"
#include "vm_libvirt_helper.h"
#include "vm_libvirt_wire.h"
#include "vm_priv.h"

extern char **environ;

#define DEFAULT_TIMEOUT_NS (10 * VW_NSEC_PER_SEC)
#define DELETED_SUFFIX " (deleted)"

struct xml_entry {
	char uuid[VW_UUID_LEN];
	int id;
	/* The document until the core takes it (get_xml): then NULL, the entry kept, so that the
	 * next runs name the domain as known and do not send it again (the core keeps what it
	 * read of it; 100 domains' documents were ~90 KiB held for nothing). */
	char *xml;
};

struct vw_virt_child {
	int procfs_fd;
	char *exe; /* NULL until the first run finds this program */
	char *uri;
	uint64_t timeout_ns;
	char err[320];
	struct vw_lvw_answer ans;
	bool list_unread, stats_unread, ans_full, want_full;
	struct xml_entry *xmls;
	size_t n_xmls, cap_xmls;
	struct vw_virt_child_counters counters;
	struct vw_complaint complaint;
	pthread_mutex_t mu; /* running, cancelled: vw_virt_child_cancel() from another thread */
	pid_t running;      /* the helper now running, 0: none */
	bool cancelled;
};

/* ---- One run ---- */

static bool self_serves;
static char *self_path; /* the path this program was started by, made absolute at start */

void vw_libvirt_helper_here(void)
{
	const char *fn = (const char *)getauxval(AT_EXECFN);

	self_serves = true;
	/* The program's own path as the kernel gave it (AT_EXECFN: the daemon's binary even when
	 * it runs under valgrind or through ld.so, where self/exe is theirs), resolved now, before
	 * anything could change the working directory. */
	if (fn && !self_path)
		self_path = realpath(fn, NULL);
}

/* The daemon's own binary: the path it was started by, else self/exe through the injected proc
 * root (a binary replaced by an upgrade is run from its path all the same: the new one speaks
 * the versioned answer or is refused with a clear error). Only a program whose main() serves
 * the helper: a test program that opened the source without naming the helper gets none,
 * never itself run again. */
static int own_exe(int procfs_fd, char **ret)
{
	char buf[4096];
	ssize_t k;
	size_t sl = strlen(DELETED_SUFFIX);

	if (!self_serves)
		return -ENOEXEC;
	if (self_path) {
		*ret = strdup(self_path);
		return *ret ? 0 : -ENOMEM;
	}
	k = readlinkat(procfs_fd, "self/exe", buf, sizeof(buf) - 1);
	if (k <= 0)
		return k < 0 ? -errno : -ENOENT;
	buf[k] = '\0';
	if ((size_t)k > sl && strcmp(buf + k - sl, DELETED_SUFFIX) == 0)
		buf[k - sl] = '\0';
	*ret = strdup(buf);
	return *ret ? 0 : -ENOMEM;
}

static const char *own_exe_why(int r)
{
	if (r == -ENOEXEC)
		return "this program does not serve as one (only virtwatt-host does)";
	if (r == -ENOMEM)
		return strerror(ENOMEM);
	return "this program is found neither by the path it was started by nor as self/exe "
	       "under --host.procfs";
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static struct xml_entry *find_xml(struct vw_virt_child *c, const char *uuid)
{
	for (size_t i = 0; i < c->n_xmls; i++)
		if (strcmp(c->xmls[i].uuid, uuid) == 0)
			return &c->xmls[i];
	return NULL;
}

/* The request: "full", or the domains whose XML is held. Small enough for the pipe's buffer
 * (64 KiB) up to ~1,400 domains; beyond, a full request (never a blocked write). */
static char *request(struct vw_virt_child *c, bool full, size_t *ret_len)
{
	size_t cap = 16 + c->n_xmls * 64, len = 0;
	char *s = malloc(cap);

	if (!s)
		return NULL;
	if (full || cap > 60000) {
		*ret_len = (size_t)snprintf(s, cap, "full\n");
		return s;
	}
	for (size_t i = 0; i < c->n_xmls; i++)
		len += (size_t)snprintf(s + len, cap - len, "known %s %d\n", c->xmls[i].uuid,
					c->xmls[i].id);
	*ret_len = len;
	return s;
}

/* Read until EOF, the deadline or the size cap. 0, -ETIMEDOUT, -E2BIG or -errno. */
static int read_answer(int fd, uint64_t deadline_ms, uint8_t **ret, size_t *ret_len)
{
	uint8_t *p = NULL;
	size_t len = 0, cap = 0;

	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		uint64_t now = mono_ms();
		ssize_t k;
		int r;

		if (now >= deadline_ms) {
			free(p);
			return -ETIMEDOUT;
		}
		r = poll(&pfd, 1, (int)VW_MIN(deadline_ms - now, (uint64_t)1000));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			r = -errno;
			free(p);
			return r;
		}
		if (r == 0)
			continue;
		if (len == cap) {
			size_t ncap = cap ? cap * 2 : 16384;
			uint8_t *np;

			if (cap >= (size_t)VW_LVW_MAX_ANSWER + 1) {
				free(p);
				return -E2BIG;
			}
			ncap = VW_MIN(ncap, (size_t)VW_LVW_MAX_ANSWER + 1);
			np = realloc(p, ncap);
			if (!np) {
				free(p);
				return -ENOMEM;
			}
			p = np;
			cap = ncap;
		}
		k = read(fd, p + len, cap - len);
		if (k < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (k < 0) {
			r = -errno;
			free(p);
			return r;
		}
		if (k == 0)
			break;
		len += (size_t)k;
	}
	*ret = p;
	*ret_len = len;
	return 0;
}

static int spawn(struct vw_virt_child *c, int in_fd, int out_fd, pid_t *ret_pid)
{
	_cleanup_free_ char *arg = NULL;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, all;
	int r;

	if (asprintf(&arg, "%s%s", VW_LIBVIRT_HELPER_ARG, c->uri) < 0)
		return -ENOMEM;
	char *argv[] = { c->exe, arg, NULL };

	sigemptyset(&none);
	sigfillset(&all);
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	posix_spawn_file_actions_adddup2(&fa, in_fd, STDIN_FILENO);
	posix_spawn_file_actions_adddup2(&fa, out_fd, STDOUT_FILENO);
	/* The daemon's signal mask and handlers stay the daemon's. */
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	/* Its own process group: a kill reaches what it started too (ssh, for qemu+ssh://). */
	posix_spawnattr_setpgroup(&at, 0);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
					      POSIX_SPAWN_SETPGROUP);
	r = posix_spawn(ret_pid, c->exe, &fa, &at, argv, environ);
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	return -r;
}

static void reap(pid_t pid, int *status)
{
	while (waitpid(pid, status, 0) < 0 && errno == EINTR)
		;
}

/* Reap a helper that has closed its stdout: it exits at once, or is killed at the deadline (it
 * may have closed its stdout and gone on). 0, or -ETIMEDOUT (killed). */
static int reap_by(pid_t pid, uint64_t deadline_ms, int *status)
{
	unsigned nap_us = 200;

	for (;;) {
		pid_t r = waitpid(pid, status, WNOHANG);

		if (r == pid || (r < 0 && errno != EINTR))
			return 0; /* (ECHILD: reaped by someone else; nothing to wait for) */
		if (mono_ms() >= deadline_ms) {
			kill(-pid, SIGKILL);
			reap(pid, status);
			return -ETIMEDOUT;
		}
		usleep(nap_us);
		nap_us = VW_MIN(nap_us * 2, 20000u);
	}
}

/* Spawn the helper, ask, read, reap, parse into *a. 0 or -errno, c->err says what. */
static int run_once(struct vw_virt_child *c, bool full, struct vw_lvw_answer *a)
{
	_cleanup_free_ uint8_t *buf = NULL;
	_cleanup_free_ char *rq = NULL;
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, status = 0, r;
	size_t rq_len = 0, len = 0;
	const char *why = "";
	uint64_t deadline;
	bool answered;
	pid_t pid;

	c->counters.runs++;
	if (!c->exe) {
		r = own_exe(c->procfs_fd, &c->exe);
		if (r < 0) {
			snprintf(c->err, sizeof(c->err), "no libvirt helper: %s", own_exe_why(r));
			return r;
		}
	}
	rq = request(c, full, &rq_len);
	if (!rq)
		return -ENOMEM;
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0) {
		r = -errno;
		snprintf(c->err, sizeof(c->err), "no pipe for the libvirt helper: %s",
			 strerror(-r));
		goto close_pipes;
	}
	pthread_mutex_lock(&c->mu);
	r = c->cancelled ? -ECANCELED : spawn(c, in[0], out[1], &pid);
	if (r == 0)
		c->running = pid;
	pthread_mutex_unlock(&c->mu);
	if (r == -ECANCELED) {
		snprintf(c->err, sizeof(c->err), "the libvirt source is closing");
		goto close_pipes;
	}
	if (r < 0) {
		snprintf(c->err, sizeof(c->err), "cannot run the libvirt helper %s: %s", c->exe,
			 strerror(-r));
		goto close_pipes;
	}
	close(VW_TAKE_FD(in[0]));
	close(VW_TAKE_FD(out[1]));
	/* The request fits the pipe's buffer: written whole without blocking; a helper that
	 * exited first leaves EPIPE (SIGPIPE is blocked in the daemon's threads), seen below. */
	if (write(in[1], rq, rq_len) < 0)
		vw_debug("vm: libvirt helper: request not written: %s", strerror(errno));
	close(VW_TAKE_FD(in[1]));
	deadline = mono_ms() + c->timeout_ns / VW_NSEC_PER_MSEC;
	r = read_answer(out[0], deadline, &buf, &len);
	answered = r == 0;
	close(VW_TAKE_FD(out[0]));
	if (r < 0) {
		kill(-pid, SIGKILL);
		reap(pid, &status);
	} else if (reap_by(pid, deadline, &status) < 0) {
		r = -ETIMEDOUT;
	}
	pthread_mutex_lock(&c->mu);
	c->running = 0;
	pthread_mutex_unlock(&c->mu);
	if (r == -ETIMEDOUT) {
		snprintf(c->err, sizeof(c->err),
			 answered ? "the libvirt helper answered but did not exit within %" PRIu64
				    " ms: killed"
				  : "the libvirt helper gave no answer within %" PRIu64
				    " ms: killed (libvirtd hung?)",
			 (uint64_t)(c->timeout_ns / VW_NSEC_PER_MSEC));
		return -ETIMEDOUT;
	}
	if (r < 0) {
		snprintf(c->err, sizeof(c->err), "the libvirt helper's answer: %s%s", strerror(-r),
			 r == -E2BIG ? " (over the size limit): killed" : "");
		return r;
	}
	if (WIFSIGNALED(status)) {
		snprintf(c->err, sizeof(c->err), "the libvirt helper died of signal %d (%s)",
			 WTERMSIG(status), strsignal(WTERMSIG(status)));
		return -ECHILD;
	}
	r = vw_lvw_parse(buf, len, a, &why);
	if (r < 0) {
		snprintf(c->err, sizeof(c->err), "the libvirt helper's answer (%zu bytes, exit %d) "
			 "is refused: %s", len, WIFEXITED(status) ? WEXITSTATUS(status) : -1, why);
		vw_lvw_answer_free(a);
		return r;
	}
	if (a->fail) {
		snprintf(c->err, sizeof(c->err), "%s", a->fail_msg);
		r = a->fail;
		vw_lvw_answer_free(a);
		return r;
	}
	return 0;

close_pipes:
	for (int i = 0; i < 2; i++) {
		if (in[i] >= 0)
			close(in[i]);
		if (out[i] >= 0)
			close(out[i]);
	}
	return r;
}

/* The XML held: this answer's documents, and the earlier ones of domains it lists with the
 * same ID (their documents were not asked for again). */
static void keep_xml(struct vw_virt_child *c, const struct vw_lvw_answer *a)
{
	size_t o = 0;

	for (size_t i = 0; i < c->n_xmls; i++) {
		struct xml_entry *e = &c->xmls[i];
		bool keep = false;

		for (size_t j = 0; j < a->n_doms && !keep; j++)
			keep = a->doms[j].id == e->id && strcmp(a->doms[j].uuid, e->uuid) == 0;
		for (size_t j = 0; j < a->n_xmls && keep; j++)
			keep = strcmp(a->xmls[j].uuid, e->uuid) != 0;
		if (!keep) {
			free(e->xml);
			continue;
		}
		c->xmls[o++] = *e;
	}
	c->n_xmls = o;
	for (size_t j = 0; j < a->n_xmls; j++) {
		int id = -1;

		for (size_t k = 0; k < a->n_doms && id < 0; k++)
			if (strcmp(a->doms[k].uuid, a->xmls[j].uuid) == 0)
				id = a->doms[k].id;
		if (id < 0 || vw_array_grow((void **)&c->xmls, sizeof(*c->xmls), c->n_xmls,
					    &c->cap_xmls) < 0)
			continue;
		c->xmls[c->n_xmls] = (struct xml_entry){ .id = id, .xml = a->xmls[j].xml };
		memcpy(c->xmls[c->n_xmls].uuid, a->xmls[j].uuid, VW_UUID_LEN);
		c->n_xmls++;
		a->xmls[j].xml = NULL; /* moved */
	}
}

static int run(struct vw_virt_child *c, bool full)
{
	struct vw_lvw_answer a;
	int r = run_once(c, full, &a);

	if (r < 0) {
		c->counters.failures++;
		/* A libvirtd that refuses is the core's to report (with its backoff); the rest is
		 * the helper's own fault, said here. */
		if (r != -ECONNREFUSED && r != -ENOTCONN)
			vw_complain(&c->complaint, VW_LOG_WARN, "vm: libvirt: %s", c->err);
		return r;
	}
	if (c->complaint.active)
		vw_release(&c->complaint, VW_LOG_INFO, "vm: libvirt: the helper answers again");
	keep_xml(c, &a);
	vw_lvw_answer_free(&c->ans);
	c->ans = a;
	c->list_unread = c->stats_unread = true;
	c->ans_full = full;
	return 0;
}

/* ---- The table ---- */

static int child_loop_start(void *data)
{
	(void)data;
	return 0;
}

static void child_loop_stop(void *data)
{
	(void)data;
}

static int child_connect(void *data, const char *uri, void **ret_conn)
{
	struct vw_virt_child *c = data;
	int r;

	if (!c->uri || strcmp(c->uri, uri) != 0) {
		char *u = strdup(uri);

		if (!u)
			return -ENOMEM;
		free(c->uri);
		c->uri = u;
	}
	r = run(c, true);
	if (r < 0)
		return r == -ENOTCONN ? -ECONNREFUSED : r;
	*ret_conn = c;
	return 0;
}

static void child_close(void *conn)
{
	struct vw_virt_child *c = conn;

	if (c)
		c->list_unread = c->stats_unread = false;
}

/* Every failure of a run is a lost "connection" for the core: it keeps its list and retries. */
static int call_result(int r)
{
	return r == -ENOMEM || r == -ENOENT ? r : -ENOTCONN;
}

static void child_pass(void *conn, bool full)
{
	struct vw_virt_child *c = conn;

	c->want_full = full;
}

static int child_list(void *conn, struct vw_virt_dom **ret, size_t *ret_n)
{
	struct vw_virt_child *c = conn;
	struct vw_virt_dom *out;
	int r;

	if (!c->list_unread || (c->want_full && !c->ans_full)) {
		r = run(c, c->want_full);
		if (r < 0)
			return call_result(r);
	}
	c->want_full = false;
	c->list_unread = false;
	/* Handed over, not copied: read once a run, so not held beside the core's copy. */
	out = c->ans.n_doms ? VW_TAKE_PTR(c->ans.doms) : malloc(sizeof(*out));
	if (!out)
		return -ENOMEM;
	*ret = out;
	*ret_n = c->ans.n_doms;
	c->ans.n_doms = 0;
	return 0;
}

static int child_get_xml(void *conn, const char *uuid, char **ret)
{
	struct vw_virt_child *c = conn;
	struct xml_entry *e = find_xml(c, uuid);

	if (!e) {
		snprintf(c->err, sizeof(c->err), "no XML for %s in the helper's answer", uuid);
		return -ENOENT;
	}
	if (!e->xml) {
		/* Taken already: forgotten, so that the next run sends it again. */
		snprintf(c->err, sizeof(c->err), "the XML of %s was taken: asked for at the next run",
			 uuid);
		*e = c->xmls[--c->n_xmls];
		return -EAGAIN;
	}
	*ret = VW_TAKE_PTR(e->xml);
	return 0;
}

static int child_stats(void *conn, struct vw_virt_stat **ret, size_t *ret_n)
{
	struct vw_virt_child *c = conn;
	struct vw_virt_stat *out;
	int r;

	if (!c->stats_unread) {
		r = run(c, false);
		if (r < 0)
			return call_result(r);
		c->list_unread = true; /* the same run's list: a reconcile it triggers reads it */
	}
	c->stats_unread = false;
	out = c->ans.n_stats ? VW_TAKE_PTR(c->ans.stats) : malloc(sizeof(*out)); /* (as the list) */
	if (!out)
		return -ENOMEM;
	*ret = out;
	*ret_n = c->ans.n_stats;
	c->ans.n_stats = 0;
	return 0;
}

static const char *child_last_error(void *data)
{
	return ((struct vw_virt_child *)data)->err;
}

const struct vw_virt_api vw_virt_child_api = {
	.loop_start = child_loop_start,
	.loop_stop = child_loop_stop,
	.connect = child_connect,
	.close = child_close,
	.pass = child_pass,
	.list = child_list,
	.get_xml = child_get_xml,
	.stats = child_stats,
	.last_error = child_last_error,
};


int vw_virt_child_new(int procfs_fd, const char *exe, uint64_t timeout_ns,
		      struct vw_virt_child **ret)
{
	struct vw_virt_child *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->procfs_fd = procfs_fd;
	if (exe && !(c->exe = strdup(exe))) {
		free(c);
		return -ENOMEM;
	}
	pthread_mutex_init(&c->mu, NULL);
	c->timeout_ns = timeout_ns ? timeout_ns : DEFAULT_TIMEOUT_NS;
	*ret = c;
	return 0;
}

void vw_virt_child_cancel(struct vw_virt_child *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	c->cancelled = true;
	if (c->running)
		kill(-c->running, SIGKILL); /* its read sees the end at once; it is reaped there */
	pthread_mutex_unlock(&c->mu);
}

void vw_virt_child_free(struct vw_virt_child *c)
{
	if (!c)
		return;
	pthread_mutex_destroy(&c->mu);
	for (size_t i = 0; i < c->n_xmls; i++)
		free(c->xmls[i].xml);
	free(c->xmls);
	vw_lvw_answer_free(&c->ans);
	free(c->uri);
	free(c->exe);
	free(c);
}

void vw_virt_child_get_counters(struct vw_virt_child *c, struct vw_virt_child_counters *ret)
{
	c->counters.held = c->ans.n_doms + c->ans.n_stats;
	c->counters.xml_held = 0;
	for (size_t i = 0; i < c->n_xmls; i++)
		c->counters.xml_held += c->xmls[i].xml != NULL;
	*ret = c->counters;
}

/* SPDX-License-Identifier: Apache-2.0 */
#define _XOPEN_SOURCE 700
#include "fixture.h"
#include "exposition_fixture.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <linux/magic.h> /* TMPFS_MAGIC */
#include <unistd.h>
#include <linux/sched.h> /* struct clone_args */
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>

char *vw_fixture_mkdtemp(const char *tag)
{
	const char *tmp = getenv("TMPDIR");
	char *path;

	if (asprintf(&path, "%s/vw-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", tag) < 0)
		return NULL;
	if (!mkdtemp(path)) {
		free(path);
		return NULL;
	}
	return path;
}

char *vw_fixture_mkdtemp_mem(const char *tag)
{
	static const char shm[] = "/dev/shm";
	struct statfs fs;
	char *path;

	if (statfs(shm, &fs) < 0 || fs.f_type != TMPFS_MAGIC || access(shm, W_OK) < 0)
		return vw_fixture_mkdtemp(tag);
	if (asprintf(&path, "%s/vw-%s-XXXXXX", shm, tag) < 0)
		return NULL;
	if (!mkdtemp(path)) {
		free(path);
		return vw_fixture_mkdtemp(tag);
	}
	return path;
}

char *vw_fixture_tmpdir;

int vw_fixture_tmpdir_setup(void **state)
{
	(void)state;
	vw_fixture_tmpdir = vw_fixture_mkdtemp(program_invocation_short_name);
	return vw_fixture_tmpdir ? 0 : -1;
}

int vw_fixture_tmpdir_teardown(void **state)
{
	(void)state;
	vw_fixture_rm(vw_fixture_tmpdir);
	vw_fixture_tmpdir = NULL;
	return 0;
}

int vw_fixture_root_setup(void **state)
{
	struct vw_fixture_root *r = calloc(1, sizeof(*r));

	*state = r;
	if (!r)
		return -1;
	r->path = vw_fixture_mkdtemp(program_invocation_short_name);
	r->fd = r->path ? open(r->path, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
	return r->fd >= 0 ? 0 : -1;
}

int vw_fixture_root_teardown(void **state)
{
	struct vw_fixture_root *r = *state;

	if (r->fd >= 0)
		close(r->fd);
	vw_fixture_rm(r->path);
	free(r);
	return 0;
}

static int mkdir_p(char *path)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0755) < 0 && errno != EEXIST) {
			*p = '/';
			return -errno;
		}
		*p = '/';
	}
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int vw_fixture_mkdir(const char *root, const char *rel)
{
	char *path;
	int r;

	if (asprintf(&path, "%s/%s", root, rel) < 0)
		return -ENOMEM;
	r = mkdir_p(path);
	free(path);
	return r;
}

int vw_fixture_write(const char *root, const char *rel, const char *text, int mode)
{
	char *path, *slash;
	FILE *f;
	int r = 0;

	if (asprintf(&path, "%s/%s", root, rel) < 0)
		return -ENOMEM;
	slash = strrchr(path, '/');
	*slash = '\0';
	r = mkdir_p(path);
	*slash = '/';
	if (r == 0) {
		(void)chmod(path, 0644);
		f = fopen(path, "w");
		if (!f) {
			r = -errno;
		} else {
			fputs(text, f);
			if (fclose(f) != 0)
				r = -errno;
			if (r == 0 && chmod(path, mode ? (mode_t)mode : 0644) < 0)
				r = -errno;
		}
	}
	free(path);
	return r;
}

int vw_fixture_replace(const char *root, const char *rel, const char *text)
{
	char *tmp = NULL, *from = NULL, *to = NULL;
	int r = -ENOMEM;

	if (asprintf(&tmp, "%s.new", rel) > 0 && asprintf(&from, "%s/%s", root, tmp) > 0 &&
	    asprintf(&to, "%s/%s", root, rel) > 0) {
		r = vw_fixture_write(root, tmp, text, 0);
		if (r == 0 && rename(from, to) < 0)
			r = -errno;
	}
	free(tmp);
	free(from);
	free(to);
	return r;
}

int vw_fixture_symlink(const char *root, const char *target, const char *rel)
{
	char *path;
	int r = 0;

	if (asprintf(&path, "%s/%s", root, rel) < 0)
		return -ENOMEM;
	if (symlink(target, path) < 0)
		r = -errno;
	free(path);
	return r;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		return rmdir(path) < 0 ? 0 : 0;
	(void)unlink(path);
	return 0;
}

void vw_fixture_rm(char *root)
{
	if (!root)
		return;
	(void)nftw(root, rm_one, 32, FTW_DEPTH | FTW_PHYS);
	free(root);
}

int vw_fixture_fuse_hang(const char *dir, int *ret_fd)
{
	char opts[128];
	int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC), r;

	*ret_fd = -1;
	if (fd < 0)
		return -errno;
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0", fd);
	if (mount("virtwatt-hang", dir, "fuse", MS_NOSUID | MS_NODEV, opts) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	*ret_fd = fd;
	return 0;
}

void vw_fixture_fuse_end(const char *dir, int *fd)
{
	if (*fd < 0)
		return;
	close(*fd);
	*fd = -1;
	(void)umount2(dir, MNT_DETACH);
}

char *vw_fixture_slurp(const char *path, size_t *ret_len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t len = 0, cap = 0;

	if (!f)
		return NULL;
	for (;;) {
		if (len + 4096 + 1 > cap) {
			char *nb;

			cap = (cap ? cap * 2 : 8192);
			nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = nb;
		}
		size_t n = fread(buf + len, 1, cap - len - 1, f);

		if (n == 0)
			break;
		len += n;
	}
	fclose(f);
	buf[len] = '\0';
	if (ret_len)
		*ret_len = len;
	return buf;
}

size_t vw_fixture_open_fds(int procfs_fd)
{
	int fd = openat(procfs_fd, "self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	size_t n = 0;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return (size_t)-1;
	}
	while ((e = readdir(d)))
		n += e->d_name[0] >= '0' && e->d_name[0] <= '9';
	closedir(d);
	return n - 1; /* less the listing's own */
}

double vw_fixture_thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void vw_fixture_spin(double seconds)
{
	double end = vw_fixture_thread_cpu_s() + seconds;
	volatile uint64_t x = 0;

	while (vw_fixture_thread_cpu_s() < end)
		for (int i = 0; i < 10000; i++)
			x += (uint64_t)i;
}

pid_t vw_fixture_fork_at(pid_t want)
{
	pid_t tid = want;
	struct clone_args args = {
		.exit_signal = SIGCHLD,
		.set_tid = (uint64_t)(uintptr_t)&tid,
		.set_tid_size = 1,
	};
	long r = syscall(SYS_clone3, &args, sizeof(args));

	return r < 0 ? -errno : (pid_t)r;
}

int vw_fixture_fork_at_probe(void)
{
	/* This process's own PID: the kernel checks the capability before the PID is taken, so
	 * allowed it says EEXIST, and no child is made. */
	pid_t r = vw_fixture_fork_at(getpid());

	if (r == 0)
		_exit(0); /* not reached: the PID is ours */
	if (r > 0) {
		(void)waitpid(r, NULL, 0);
		return -EINVAL;
	}
	return r == -EEXIST ? 0 : r;
}

#include <curl/curl.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <signal.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

static enum MHD_Result serve_json(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *data,
				  size_t *size, void **con_cls)
{
	const char *body = cls;
	struct MHD_Response *r;
	enum MHD_Result ret;

	(void)url, (void)method, (void)version, (void)data, (void)size, (void)con_cls;
	r = MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_PERSISTENT);
	MHD_add_response_header(r, "Content-Type", "application/json");
	ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

struct MHD_Daemon *vw_fixture_json_server(const char *body, unsigned *ret_port)
{
	struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL,
						serve_json, (void *)body, MHD_OPTION_END);

	if (d)
		*ret_port = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT)->port;
	return d;
}

struct body {
	char *data;
	size_t len;
};

static size_t body_write(char *ptr, size_t size, size_t n, void *ud)
{
	struct body *b = ud;
	char *nd = realloc(b->data, b->len + size * n + 1);

	if (!nd)
		return 0;
	b->data = nd;
	memcpy(b->data + b->len, ptr, size * n);
	b->len += size * n;
	b->data[b->len] = '\0';
	return size * n;
}

char *vw_fixture_http_get(const char *url, long *code)
{
	return vw_fixture_http(url, "GET", code);
}

char *vw_fixture_try_scrape(unsigned port)
{
	char url[64];
	long code = 0;
	char *body;

	snprintf(url, sizeof(url), "http://127.0.0.1:%u/metrics", port);
	body = vw_fixture_http_get(url, &code);
	if (code != 200) {
		free(body);
		return NULL;
	}
	return body;
}

char *vw_fixture_scrape_when(unsigned port, const char *needle)
{
	const struct timespec pause = { .tv_nsec = 100 * 1000 * 1000 };

	for (int i = 0; i < 100; i++) {
		char *body = vw_fixture_try_scrape(port);

		if (body && strstr(body, needle))
			return body;
		free(body);
		nanosleep(&pause, NULL);
	}
	return NULL;
}

char *vw_fixture_await_sample(unsigned port, const char *family, const char *labels, double want,
			      bool at_least, double timeout_s)
{
	const struct timespec pause = { .tv_nsec = 50 * 1000 * 1000 };

	for (double t = 0; t < timeout_s; t += 0.05) {
		char *body = vw_fixture_try_scrape(port);
		double v = body && strstr(body, family) ? vw_fixture_sample_sum(body, family, labels)
							: NAN;

		if (at_least ? v >= want : v == want)
			return body;
		free(body);
		nanosleep(&pause, NULL);
	}
	return NULL;
}

double vw_fixture_monotonic_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

char *vw_fixture_http(const char *url, const char *method, long *code)
{
	return vw_fixture_http_within(url, method, code, 5000);
}

char *vw_fixture_http_within(const char *url, const char *method, long *code, long timeout_ms)
{
	CURL *c = curl_easy_init();
	struct body b = { 0 };

	*code = 0;
	if (!c)
		return NULL;
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
	if (strcmp(method, "HEAD") == 0)
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	else if (strcmp(method, "GET") != 0)
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, body_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, code);
	curl_easy_cleanup(c);
	if (!b.data)
		b.data = calloc(1, 1);
	return b.data;
}

double vw_fixture_sample_sum_all(const char *text, const char *family, const char *const *must)
{
	return vw_expo_sum(text, family, must);
}

double vw_fixture_sample_sum(const char *text, const char *family, const char *match)
{
	return vw_fixture_sample_sum_all(text, family, (const char *const[]){ match, NULL });
}

static pid_t spawn_logged(char *const argv[], const char *logpath, bool tied)
{
	int fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	pid_t parent = getpid(), pid;

	if (fd < 0)
		return -errno;
	pid = fork();
	if (pid == 0) {
		if (tied && (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent))
			_exit(127);
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(fd);
	return pid < 0 ? -errno : pid;
}

unsigned vw_fixture_free_port(int socktype)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, socktype | SOCK_CLOEXEC, 0);
	unsigned port = 0;

	if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
		port = ntohs(sa.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

pid_t vw_fixture_spawn_logged(char *const argv[], const char *logpath)
{
	return spawn_logged(argv, logpath, false);
}

pid_t vw_fixture_spawn_tied(char *const argv[], const char *logpath)
{
	return spawn_logged(argv, logpath, true);
}

int vw_fixture_run_logged(char *const argv[], const char *logpath)
{
	pid_t pid = vw_fixture_spawn_logged(argv, logpath);
	int st;

	if (pid < 0)
		return pid;
	if (waitpid(pid, &st, 0) < 0)
		return -errno;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

void vw_fixture_kill(pid_t *pid)
{
	if (*pid > 0) {
		kill(*pid, SIGKILL);
		waitpid(*pid, NULL, 0);
		*pid = 0;
	}
}

int vw_fixture_start_daemon_logged(char *const argv[], const char *logpath, pid_t *ret_pid,
				   unsigned *ret_port)
{
	pid_t pid = vw_fixture_spawn_logged(argv, logpath);

	if (pid < 0)
		return pid;
	for (int waited = 0; waited < 10000; waited += 100) {
		char *log = vw_fixture_slurp(logpath, NULL);
		const char *p = log ? strstr(log, "(port ") : NULL;
		bool up = p && sscanf(p + 6, "%u", ret_port) == 1;

		if (up || waited + 100 >= 10000)
			fprintf(stderr, "%s", up ? "" : (log ? log : ""));
		free(log);
		if (up) {
			*ret_pid = pid;
			return 0;
		}
		usleep(100 * 1000);
	}
	vw_fixture_kill(&pid);
	return -ETIMEDOUT;
}

int vw_fixture_start_daemon(char *const argv[], pid_t *ret_pid, unsigned *ret_port)
{
	char logpath[] = "/tmp/vw-daemon-log-XXXXXX";
	int fd = mkstemp(logpath), r;

	if (fd < 0)
		return -errno;
	close(fd);
	r = vw_fixture_start_daemon_logged(argv, logpath, ret_pid, ret_port);
	unlink(logpath); /* the daemon keeps writing to the unlinked file */
	return r;
}

int vw_fixture_stop_daemon(pid_t pid)
{
	int st;

	kill(pid, SIGTERM);
	if (waitpid(pid, &st, 0) < 0)
		return -errno;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

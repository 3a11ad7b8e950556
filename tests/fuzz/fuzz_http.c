/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: what the metrics endpoint does with a request (http.c on libmicrohttpd,
 * basic authentication through webauth.c). One real server runs for the whole session on
 * 127.0.0.1, with a web config (a user "user" with password "pass", /healthz excluded from
 * authentication, one extra header); each input is sent as the raw bytes of a connection, an
 * empty line added, the connection half-closed, and the answer read to its end. MHD parses
 * the request line and headers; the method, path, Accept, Content-Length, Transfer-Encoding and
 * Authorization it hands over are what our code judges. Properties: an answer is HTTP; without
 * the right credentials (base64 of user:pass somewhere in the input) no answer carries the
 * metrics or the index page; every 401 asks for Basic; and the server answers within 10 s.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "http.h"

#define MARKER "vw_fuzz_secret_metric" /* in the metrics */
#define PROGRAM "virtwatt-fuzz-index"     /* on the index page */
#define TOKEN "dXNlcjpwYXNz" /* base64("user:pass"): padding-free, one spelling only */
#define ANSWER_MAX (256u << 10)
#define WAIT_MS 10000

/* bcrypt of "pass", cost 4 (the cheapest). */
static const char web_yml[] =
	"basic_auth_users:\n"
	"  user: $2b$04$v9EqN01B0eWuLNwfrOhby.I6G71ReSMbqXARdUFJW2nV6hMABlf9W\n"
	"basic_auth_excluded_paths: [/healthz]\n"
	"http_server_config:\n"
	"  headers:\n"
	"    X-Frame-Options: deny\n";

static char web_dir[4096], web_path[4200];

static void remove_web_config(void)
{
	unlink(web_path);
	rmdir(web_dir);
}

static uint16_t server_port(void)
{
	static uint16_t port;
	static struct vw_exposition *x;
	static struct vw_http *h;
	const char *tmp = getenv("TMPDIR");
	const char *text = "# HELP " MARKER " A value.\n# TYPE " MARKER " gauge\n" MARKER " 1\n";
	const char *om = "# HELP " MARKER " A value.\n# TYPE " MARKER " gauge\n" MARKER " 1\n"
			 "# EOF\n";
	FILE *f;

	if (port)
		return port;
	snprintf(web_dir, sizeof(web_dir), "%s/vw-fuzz-http-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(web_dir))
		abort();
	snprintf(web_path, sizeof(web_path), "%s/web.yml", web_dir);
	atexit(remove_web_config);
	f = fopen(web_path, "we");
	if (!f || fputs(web_yml, f) < 0 || fclose(f) != 0)
		abort();
	x = vw_exposition_new();
	if (!x)
		abort();
	vw_exposition_publish(x, strdup(text), strlen(text), strdup(om), strlen(om));
	h = vw_http_start(&(struct vw_http_opts){ .listen_address = "127.0.0.1:0",
						  .per_ip_connections = 64,
						  .timeout_s = 3, /* < WAIT_MS */
						  .program = PROGRAM,
						  .web_config_file = web_path },
			  x);
	if (!h)
		abort();
	port = vw_http_port(h);
	return port;
}

/* A connect that a signal interrupted goes on in the background: wait for its outcome. */
static int finish_connect(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	socklen_t len = sizeof(int);
	int r, err = 0;

	do
		r = poll(&p, 1, WAIT_MS);
	while (r < 0 && errno == EINTR);
	if (r != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		return r == 0 ? ETIMEDOUT : errno;
	return err;
}

/*
 * libFuzzer's -timeout ticks with SIGALRM every second, which can interrupt connect (EINTR:
 * the handshake completes anyway), and a busy machine can run short of ephemeral ports for a
 * moment (EADDRNOTAVAIL, EAGAIN: retried for up to a second). A refused connection is not
 * transient: the server is gone.
 */
static int connect_local(uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct linger lg = { .l_onoff = 1, .l_linger = 0 }; /* RST on close: no TIME_WAIT pile */
	int err = 0;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (int attempt = 0; attempt < 100; attempt++) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) < 0)
			vw_fuzz_fail("cannot make a socket: %s", strerror(errno));
		err = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 ? 0 : errno;
		if (err == EINTR || err == EINPROGRESS)
			err = finish_connect(fd);
		if (err == 0)
			return fd;
		close(fd);
		if (err != EADDRNOTAVAIL && err != EAGAIN)
			break;
		usleep(10000);
	}
	vw_fuzz_fail("cannot connect to the server on port %u: %s", port, strerror(err));
}

/* Send what the peer takes (it may answer and close before the end). */
static bool send_all(int fd, const void *data, size_t size)
{
	while (size > 0) {
		ssize_t n = send(fd, data, size, MSG_NOSIGNAL);

		if (n <= 0)
			return false;
		data = (const char *)data + n;
		size -= (size_t)n;
	}
	return true;
}

/* The whole answer, NUL-terminated (NULs inside only from a body we never send). */
static size_t read_all(int fd, char *buf, size_t cap)
{
	size_t len = 0;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;
		int r;

		/* libFuzzer's -timeout ticks with SIGALRM every second: EINTR is no answer yet. */
		do
			r = poll(&p, 1, WAIT_MS);
		while (r < 0 && errno == EINTR);
		vw_fuzz_assert(r == 1, "no answer within %d ms", WAIT_MS);
		n = recv(fd, buf + len, cap - 1 - len, 0);
		if (n <= 0 || (len += (size_t)n) == cap - 1)
			break;
	}
	buf[len] = '\0';
	return len;
}

static void check_answer(const char *a, size_t len, bool credentials)
{
	if (len == 0)
		return; /* MHD closed without answering (an incomplete request) */
	vw_fuzz_assert(strncmp(a, "HTTP/1.", 7) == 0, "not an HTTP answer: %.40s", a);
	if (!credentials)
		vw_fuzz_assert(!strstr(a, MARKER) && !strstr(a, PROGRAM),
			       "served without credentials:\n%s", a);
	for (const char *p = a; (p = strstr(p, "HTTP/1.")); p++) {
		const char *end = strstr(p, "\r\n\r\n");

		if (strncmp(p + 8, " 401 ", 5) == 0)
			vw_fuzz_assert(end && memmem(p, (size_t)(end - p), "WWW-Authenticate: Basic",
						     23),
				       "401 without WWW-Authenticate: Basic:\n%s", p);
	}
}

/*
 * Does MHD see a request line? It skips lines that are empty as C strings (a NUL first), and
 * with none left it waits out its idle timeout, never reaching our code: such inputs are not
 * sent.
 */
static bool has_request_line(const uint8_t *data, size_t size)
{
	for (size_t i = 0; i < size;) {
		if (data[i] != '\r' && data[i] != '\n' && data[i] != '\0')
			return true;
		while (i < size && data[i] != '\r' && data[i] != '\n')
			i++;
		i++;
	}
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char answer[ANSWER_MAX];
	int fd;
	size_t len;

	if (size > (64u << 10) || !has_request_line(data, size))
		return 0;
	fd = connect_local(server_port());
	/* An empty line ends the last request's header: MHD waits out its idle timeout on a
	 * header cut short, which would only make this slow. Then half-close. */
	if (send_all(fd, data, size))
		send_all(fd, "\r\n\r\n", 4);
	shutdown(fd, SHUT_WR);
	len = read_all(fd, answer, sizeof(answer));
	close(fd);
	check_answer(answer, len, memmem(data, size, TOKEN, strlen(TOKEN)) != NULL);
	return 0;
}

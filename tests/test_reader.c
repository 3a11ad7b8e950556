/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The guest reader on real files: a FIFO fed by the test, a pty standing in for a virtio-serial
 * character device, a shared folder, and discovery through fixture /dev and /sys trees.
 */
#include "vw_test.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "fileio.h"
#include "fixture.h"
#include "log.h"
#include "model_rx.h"
#include "reader.h"

#define UUID "6f1c2a9e-3b4d-4e5f-8a7b-0c1d2e3f4a5b"
#define SEC VW_NSEC_PER_SEC

static uint64_t fake_now = 1000 * SEC;

struct ctx {
	char *root;
	char path[512];
	struct vw_reader *r; /* a FIFO test's reader and its end of the FIFO (fifo_reader()) */
	int w;
};

static int setup(void **state)
{
	struct ctx *c = calloc(1, sizeof(*c));

	c->w = -1;
	c->root = vw_fixture_mkdtemp("reader");
	assert_non_null(c->root);
	snprintf(c->path, sizeof(c->path), "%s/port", c->root);
	fake_now = 1000 * SEC;
	vw_clock_set_fake(&fake_now);
	*state = c;
	return 0;
}

static int teardown(void **state)
{
	struct ctx *c = *state;

	if (c->w >= 0)
		close(c->w);
	vw_reader_free(c->r);
	vw_clock_set_fake(NULL);
	vw_fixture_rm(c->root);
	free(c);
	return 0;
}

/* One encoded frame; zones grow with seq so the energy rule holds within an epoch. */
static size_t frame_line(uint64_t epoch, uint64_t seq, char *buf, size_t size)
{
	struct vw_host_frame f = {
		.epoch = epoch, .seq = seq, .vm_uuid = UUID, .interval_ms = 5000,
		.source = "rapl", .n_zones = 1,
		.zones = {{VW_ZONE_PACKAGE, 1000 * seq, 2000 * seq, 10, 20}},
	};
	size_t len;

	assert_int_equal(vw_proto_encode_host(&f, buf, size, &len), 0);
	return len;
}

static void write_all(int fd, const void *data, size_t len)
{
	assert_int_equal(write(fd, data, len), (ssize_t)len);
}

static void send_frame(int fd, uint64_t epoch, uint64_t seq)
{
	char buf[VW_PROTO_MAX_FRAME];

	write_all(fd, buf, frame_line(epoch, seq, buf, sizeof(buf)));
}

/* The test's end of a FIFO: O_RDWR never blocks and keeps a writer present. */
static int fifo_writer(const char *path)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);

	assert_true(fd >= 0);
	return fd;
}

static struct vw_reader *reader_new(const struct vw_reader_config *cfg)
{
	struct vw_reader *r = vw_reader_new(cfg);

	assert_non_null(r);
	return r;
}

/* A FIFO at c->path, a reader of cfg on it (c->r) and the test's end of it (c->w), both
 * closed by the teardown; returns the reader. */
static struct vw_reader *fifo_reader(struct ctx *c, const struct vw_reader_config *cfg)
{
	assert_int_equal(mkfifo(c->path, 0600), 0);
	c->r = reader_new(cfg);
	c->w = fifo_writer(c->path);
	return c->r;
}

static void test_fifo_frames_and_garbage(void **state)
{
	struct ctx *c = *state;
	struct vw_reader_config cfg = {.path = c->path};
	struct vw_reader_health h;
	struct vw_reader *r = fifo_reader(c, &cfg);

	assert_int_equal(vw_reader_poll(r), 0); /* open, nothing yet */
	assert_true(vw_reader_fd(r) >= 0);
	assert_null(vw_reader_last(r));
	assert_false(vw_reader_fresh(r));

	send_frame(c->w, 7, 1);
	write_all(c->w, "\x01\x02{{{ garbage\n", 14);
	write_all(c->w, "{\"v\":1,\"half", 13);
	write_all(c->w, "\xff", 1); /* the host reconnected: the partial line is dropped */
	send_frame(c->w, 7, 2);
	send_frame(c->w, 7, 2); /* repeat */
	write_all(c->w, "{\"v\":9}\n", 8);
	assert_int_equal(vw_reader_poll(r), 2);
	assert_true(vw_reader_last(r)->seq == 2);
	assert_true(vw_reader_acc(r)->zones[VW_ZONE_PACKAGE].active_uj == 4000);
	vw_reader_health(r, &h);
	assert_int_equal(h.kind, VW_READER_FIFO);
	assert_string_equal(h.path, c->path);
	assert_true(h.open && h.have && h.fresh);
	assert_true(h.accepted == 2 && h.frames == 5 && h.resyncs == 1);
	assert_true(h.rejected[VW_PROTO_E_SYNTAX] == 1 && h.rejected[VW_PROTO_E_SEQ] == 1);
	assert_true(h.rejected[VW_PROTO_E_VERSION] == 1);
}

/* A model line for vm (epoch, mseq), its body naming the bias b; tampered: one byte of the
 * body changed after the hash was taken. */
static size_t model_line(const char *vm, uint64_t epoch, uint64_t mseq, int b, bool tampered,
			 char *buf, size_t size)
{
	static struct vw_model_frame m;
	size_t len;
	char *p;

	m = (struct vw_model_frame){ .epoch = epoch, .mseq = mseq };
	snprintf(m.vm_uuid, sizeof(m.vm_uuid), "%s", vm);
	snprintf(m.name, sizeof(m.name), "host:vm:%d", b);
	m.body_len = (size_t)snprintf(m.body, sizeof(m.body),
				      "{\"All_Weights\":{\"Bias_Weight\":%d}}", b);
	assert_int_equal(vw_proto_encode_model(&m, buf, size, &len), 0);
	if (tampered) {
		p = strstr(buf, "Bias_Weight");
		assert_non_null(p);
		p[0] = 'b';
	}
	return len;
}

static void send_model(int fd, const char *vm, uint64_t epoch, uint64_t mseq, int b,
		       bool tampered)
{
	char buf[VW_PROTO_MAX_FRAME];

	write_all(fd, buf, model_line(vm, epoch, mseq, b, tampered, buf, sizeof(buf)));
}

/* Model frames on the port: taken for this VM once its frames name it, a resend changes
 * nothing, and a tampered, foreign, older, too-soon or oversized one is refused and counted
 * while the last good model stays. Energy frames are not disturbed. */
static void test_fifo_models(void **state)
{
	struct ctx *c = *state;
	struct vw_reader_config cfg = {.path = c->path};
	struct vw_reader *r = fifo_reader(c, &cfg);
	const struct vw_model_rx *m = vw_reader_models(r);
	char big[VW_PROTO_MAX_FRAME + 100];

	send_model(c->w, UUID, 7, 1, 10, false); /* before any frame: which VM is this? */
	send_frame(c->w, 7, 1);
	send_model(c->w, UUID, 7, 1, 10, false);
	send_model(c->w, UUID, 7, 1, 10, false); /* the host's resend */
	assert_int_equal(vw_reader_poll(r), 1);
	assert_int_equal(m->rejected[VW_PROTO_E_UUID], 1);
	assert_true(m->gen == 1 && m->accepted == 1 && m->unchanged == 1);
	assert_string_equal(m->cur->name, "host:vm:10");
	assert_string_equal(m->cur->body, "{\"All_Weights\":{\"Bias_Weight\":10}}");
	/* Refused: tampered, another VM's, not newer, too soon after the last change. */
	send_model(c->w, UUID, 7, 2, 11, true);
	send_model(c->w, "0b6cbd1e-7a55-4f0e-9b8a-58a0b4c3d2e1", 7, 2, 12, false);
	send_model(c->w, UUID, 7, 1, 13, false);
	send_model(c->w, UUID, 7, 2, 14, false);
	memset(big, 'x', sizeof(big));
	big[sizeof(big) - 1] = '\n';
	write_all(c->w, big, sizeof(big)); /* dropped by the framer, never parsed */
	send_frame(c->w, 7, 2);
	assert_int_equal(vw_reader_poll(r), 1);
	assert_int_equal(m->rejected[VW_PROTO_E_INTEGRITY], 1);
	assert_int_equal(m->rejected[VW_PROTO_E_UUID], 2);
	assert_int_equal(m->rejected[VW_PROTO_E_SEQ], 1);
	assert_int_equal(m->rejected[VW_PROTO_E_RATE], 1);
	assert_string_equal(m->cur->name, "host:vm:10");
	assert_int_equal(m->gen, 1);
	assert_true(vw_reader_last(r)->seq == 2); /* the energy frames went on */
	/* Later, a newer model is taken; a restarted host's first model too. */
	fake_now += VW_MODEL_RX_MIN_CHANGE_NS;
	send_model(c->w, UUID, 7, 3, 15, false);
	assert_int_equal(vw_reader_poll(r), 0);
	assert_string_equal(m->cur->name, "host:vm:15");
	fake_now += VW_MODEL_RX_MIN_CHANGE_NS;
	send_model(c->w, UUID, 8, 1, 16, false);
	assert_int_equal(vw_reader_poll(r), 0);
	assert_true(m->gen == 3 && !strcmp(m->cur->name, "host:vm:16"));
}

static void test_fifo_staleness(void **state)
{
	struct ctx *c = *state;
	struct vw_reader_config cfg = {.path = c->path, .stale_intervals = 2};
	struct vw_reader_health h;
	struct vw_reader *r = fifo_reader(c, &cfg);

	send_frame(c->w, 1, 1);
	assert_int_equal(vw_reader_poll(r), 1);
	/* Interval 5 s, 2 intervals: fresh up to 10 s after the frame, stale after. */
	fake_now += 10 * SEC;
	assert_true(vw_reader_fresh(r));
	fake_now += 1;
	assert_false(vw_reader_fresh(r));
	vw_reader_health(r, &h);
	assert_false(h.fresh);
	assert_true(h.have && h.age_ns == 10 * SEC + 1);
	/* Rejected frames do not refresh; an accepted one does. */
	send_frame(c->w, 1, 1);
	assert_int_equal(vw_reader_poll(r), 0);
	assert_false(vw_reader_fresh(r));
	send_frame(c->w, 1, 2);
	assert_int_equal(vw_reader_poll(r), 1);
	assert_true(vw_reader_fresh(r));
	/* The last good frame is kept while stale. */
	fake_now += 3600 * SEC;
	assert_false(vw_reader_fresh(r));
	assert_true(vw_reader_last(r)->seq == 2);
}

static void test_fifo_writer_restarts(void **state)
{
	struct ctx *c = *state;
	struct vw_reader_config cfg = {.path = c->path};
	struct vw_reader_health h;
	struct vw_reader *r = fifo_reader(c, &cfg);
	uint64_t before;

	send_frame(c->w, 1, 5);
	write_all(c->w, "{\"v\":1,\"torn", 12); /* the writer dies mid-frame */
	assert_int_equal(vw_reader_poll(r), 1);
	close(c->w);
	c->w = -1;
	assert_int_equal(vw_reader_poll(r), 0); /* end of file: closed */
	assert_int_equal(vw_reader_fd(r), -1);
	before = vw_reader_acc(r)->zones[VW_ZONE_PACKAGE].idle_uj;
	/* A restarted host: a new epoch, counters from low values again. */
	c->w = fifo_writer(c->path);
	assert_int_equal(vw_reader_poll(r), 0);
	send_frame(c->w, 2, 1);
	assert_int_equal(vw_reader_poll(r), 1);
	assert_true(vw_reader_acc(r)->zones[VW_ZONE_PACKAGE].idle_uj == before + 1000);
	vw_reader_health(r, &h);
	assert_true(h.opens == 2 && h.reopens == 1 && h.epochs == 1 && h.open);
	assert_true(h.rejected[VW_PROTO_E_SYNTAX] == 0); /* the torn tail was dropped, not parsed */
}

/* A pty slave is a character device: the reader treats it as a port and writes its hello. */
/* A raw pty standing in for the port: its master in *m, a slave held open in *s (so the
 * master never sees a hangup), the slave's path in c->path. Skips without ptys. */
static void port_pty(struct ctx *c, int *m, int *s)
{
	struct termios t;

	*m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (*m < 0 || grantpt(*m) < 0 || unlockpt(*m) < 0 || !ptsname(*m)) {
		if (*m >= 0)
			close(*m);
		skip();
	}
	snprintf(c->path, sizeof(c->path), "%s", ptsname(*m));
	*s = open(c->path, O_RDWR | O_NOCTTY | O_CLOEXEC);
	assert_true(*s >= 0);
	assert_int_equal(tcgetattr(*s, &t), 0);
	cfmakeraw(&t);
	assert_int_equal(tcsetattr(*s, TCSANOW, &t), 0);
}

/* Polls r until it holds a frame, for at most 100 ms. */
static void poll_until_frame(struct vw_reader *r)
{
	for (int i = 0; i < 100 && !vw_reader_last(r); i++) {
		assert_true(vw_reader_poll(r) >= 0);
		usleep(1000);
	}
	assert_non_null(vw_reader_last(r));
}

static void test_port_hello(void **state)
{
	struct ctx *c = *state;
	struct vw_reader_config cfg = {.hello = true};
	struct vw_reader *r;
	char buf[512];
	int m, s;
	ssize_t n;

	port_pty(c, &m, &s);
	cfg.path = c->path;
	r = reader_new(&cfg);
	assert_int_equal(vw_reader_poll(r), 0);
	n = read(m, buf, sizeof(buf) - 1);
	assert_true(n > 0);
	buf[n] = '\0';
	assert_string_equal(buf, "{\"v\":1,\"hello\":\"virtwatt-guest\",\"ack\":0}\n");
	write_all(m, "\xff", 1);
	send_frame(m, 3, 9);
	tcdrain(m);
	poll_until_frame(r);
	assert_true(vw_reader_last(r)->seq == 9);
	struct vw_reader_health h;
	vw_reader_health(r, &h);
	assert_true(h.kind == VW_READER_PORT && h.hellos == 1);
	vw_reader_free(r);
	close(s);
	close(m);
}

#define NOBODY ((uid_t)65534)

/* One poll as an unprivileged owner would make it: root acts as UID 65534 (no DAC override) for
 * it; anyone else polls as itself. */
static int poll_unprivileged(struct vw_reader *r)
{
	bool root = geteuid() == 0;
	int err;

	if (root)
		assert_int_equal(seteuid(NOBODY), 0);
	err = vw_reader_poll(r);
	if (root)
		assert_int_equal(seteuid(0), 0);
	return err;
}

/* The pty slave at c->path owned by the UID poll_unprivileged() polls as, with this mode. */
static void port_mode(struct ctx *c, mode_t mode)
{
	if (geteuid() == 0)
		assert_int_equal(chown(c->path, NOBODY, (gid_t)-1), 0);
	assert_int_equal(chmod(c->path, mode), 0);
}

/* A port the guest may only read, as the shipped udev rule (0640, group virtwatt) and unit
 * (DeviceAllow= r) leave it to the unprivileged virtwatt-guest: read all the same, without
 * the hello. Here the pty's slave is read-only to its owner, as whom the reader opens it. */
static void test_port_read_only(void **state)
{
	struct ctx *c = *state;
	struct vw_reader_config cfg = {.hello = true};
	struct vw_reader_health h;
	struct vw_reader *r;
	int m, s;

	port_pty(c, &m, &s);
	port_mode(c, 0400);
	cfg.path = c->path;
	r = reader_new(&cfg);
	assert_int_equal(poll_unprivileged(r), 0);
	write_all(m, "\xff", 1);
	send_frame(m, 3, 9);
	tcdrain(m);
	poll_until_frame(r);
	assert_true(vw_reader_last(r)->seq == 9);
	vw_reader_health(r, &h);
	assert_true(h.kind == VW_READER_PORT && h.open && h.hellos == 0);
	vw_reader_free(r);
	close(s);
	close(m);
}

struct said {
	unsigned warned, opened; /* "cannot open" warnings, "opened" lines */
};

static void said_sink(enum vw_log_level level, const char *msg, void *userdata)
{
	struct said *s = userdata;

	if (level == VW_LOG_WARN && strstr(msg, "passthrough: cannot open port ") &&
	    strstr(msg, "70-virtwatt.rules"))
		s->warned++;
	if (level == VW_LOG_INFO && strstr(msg, "passthrough: port ") && strstr(msg, " opened"))
		s->opened++;
}

/* A port the daemon cannot open at all (without the udev rule: root's 0600; here mode 0000) is
 * said, once however often it is tried, naming the rule; once it can be read, that it was
 * opened. */
static void test_port_unopenable_said(void **state)
{
	struct ctx *c = *state;
	struct vw_reader_config cfg = {.hello = true};
	struct said said = {0};
	struct vw_reader *r;
	int m, s, err[3];

	port_pty(c, &m, &s);
	port_mode(c, 0000);
	cfg.path = c->path;
	r = reader_new(&cfg);
	vw_log_set_sink(said_sink, &said);
	err[0] = poll_unprivileged(r);
	err[1] = poll_unprivileged(r);
	port_mode(c, 0400);
	err[2] = poll_unprivileged(r);
	vw_log_set_sink(NULL, NULL);
	assert_int_equal(err[0], -EACCES);
	assert_int_equal(err[1], -EACCES);
	assert_int_equal(err[2], 0);
	assert_int_equal(said.warned, 1);
	assert_int_equal(said.opened, 1);
	vw_reader_free(r);
	close(s);
	close(m);
}

/* ---- the shared folder ---- */

static void put_frame(const char *dir, uint64_t epoch, uint64_t seq)
{
	char buf[VW_PROTO_MAX_FRAME];
	size_t len = frame_line(epoch, seq, buf, sizeof(buf));
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	assert_int_equal(vw_write_file_atomic_at(fd, VW_READER_FRAME_FILE, buf, len, 0644), 0);
	close(fd);
}

/* The folder's model.json beside frame.json: read when it changes; a tampered one refused
 * and the last good kept; a symlink in its place is never followed. */
static void test_folder_model(void **state)
{
	struct ctx *c = *state;
	struct vw_reader_config cfg = {.folder = c->root};
	struct vw_reader *r = reader_new(&cfg);
	const struct vw_model_rx *m = vw_reader_models(r);
	char buf[VW_PROTO_MAX_FRAME];
	int fd = open(c->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	size_t len;

	put_frame(c->root, 4, 1);
	len = model_line(UUID, 4, 1, 20, false, buf, sizeof(buf));
	assert_int_equal(vw_write_file_atomic_at(fd, VW_READER_MODEL_FILE, buf, len, 0644), 0);
	assert_int_equal(vw_reader_poll(r), 1);
	assert_true(m->gen == 1 && !strcmp(m->cur->name, "host:vm:20"));
	assert_int_equal(vw_reader_poll(r), 0); /* unchanged: not read again */
	assert_true(m->accepted == 1 && m->unchanged == 0);
	fake_now += VW_MODEL_RX_MIN_CHANGE_NS;
	len = model_line(UUID, 4, 2, 21, true, buf, sizeof(buf));
	assert_int_equal(vw_write_file_atomic_at(fd, VW_READER_MODEL_FILE, buf, len, 0644), 0);
	assert_int_equal(vw_reader_poll(r), 0);
	assert_int_equal(m->rejected[VW_PROTO_E_INTEGRITY], 1);
	assert_string_equal(m->cur->name, "host:vm:20");
	assert_int_equal(unlinkat(fd, VW_READER_MODEL_FILE, 0), 0);
	assert_int_equal(symlinkat("/etc/passwd", fd, VW_READER_MODEL_FILE), 0);
	assert_int_equal(vw_reader_poll(r), 0);
	assert_true(m->gen == 1 && m->rejected[VW_PROTO_E_SYNTAX] == 0);
	close(fd);
	vw_reader_free(r);
}

/* Warnings logged, for the checks that a silent fault is no longer silent. */
static char warned[2048];

static void warn_sink(enum vw_log_level level, const char *msg, void *userdata)
{
	(void)userdata;
	if (level <= VW_LOG_WARN && strlen(warned) + strlen(msg) + 2 < sizeof(warned)) {
		strcat(warned, msg);
		strcat(warned, "\n");
	}
}

static unsigned count_in(const char *hay, const char *needle)
{
	unsigned n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

static void test_folder(void **state)
{
	struct ctx *c = *state;
	struct vw_reader_config cfg = {.folder = c->root};
	struct vw_reader_health h;
	struct vw_reader *r;
	char buf[VW_PROTO_MAX_FRAME], *big;
	size_t len;

	r = reader_new(&cfg);
	assert_int_equal(vw_reader_poll(r), -ENOENT); /* the folder is there, frame.json not yet */
	put_frame(c->root, 4, 1);
	assert_int_equal(vw_reader_poll(r), 1);
	assert_int_equal(vw_reader_poll(r), 0); /* unchanged: neither accepted nor rejected */
	put_frame(c->root, 4, 2);
	assert_int_equal(vw_reader_poll(r), 1);
	/* Torn in place (truncated, no final newline): retried, rejected once, last good kept. */
	len = frame_line(4, 3, buf, sizeof(buf));
	buf[len / 2] = '\0';
	assert_int_equal(vw_fixture_write(c->root, VW_READER_FRAME_FILE, buf, 0), 0);
	assert_int_equal(vw_reader_poll(r), 0);
	assert_int_equal(vw_reader_poll(r), 0);
	vw_reader_health(r, &h);
	assert_true(h.kind == VW_READER_FOLDER && !h.open);
	assert_true(h.torn == 2 && h.rejected[VW_PROTO_E_SYNTAX] == 1 && h.frames == 3);
	assert_true(vw_reader_last(r)->seq == 2);
	/* Two lines, an empty file, an oversized file: never used. */
	len = frame_line(4, 3, buf, sizeof(buf));
	frame_line(4, 4, buf + len, sizeof(buf) - len);
	assert_int_equal(vw_fixture_write(c->root, VW_READER_FRAME_FILE, buf, 0), 0);
	assert_int_equal(vw_reader_poll(r), 0);
	assert_int_equal(vw_fixture_write(c->root, VW_READER_FRAME_FILE, "", 0), 0);
	assert_int_equal(vw_reader_poll(r), 0);
	big = malloc(VW_PROTO_MAX_FRAME + 100);
	memset(big, ' ', VW_PROTO_MAX_FRAME + 99);
	big[VW_PROTO_MAX_FRAME + 98] = '\n';
	big[VW_PROTO_MAX_FRAME + 99] = '\0';
	assert_int_equal(vw_fixture_write(c->root, VW_READER_FRAME_FILE, big, 0), 0);
	free(big);
	assert_int_equal(vw_reader_poll(r), 0);
	vw_reader_health(r, &h);
	assert_true(h.rejected[VW_PROTO_E_OVERSIZE] == 1 && h.rejected[VW_PROTO_E_SYNTAX] == 3);
	/* Replaced atomically again: accepted. */
	put_frame(c->root, 4, 9);
	assert_int_equal(vw_reader_poll(r), 1);
	assert_true(vw_reader_acc(r)->zones[VW_ZONE_PACKAGE].idle_uj == 9000);
	vw_reader_free(r);
}

/* frame.json as a directory, or far too large: ignored, and said once at warn. */
static void test_folder_odd_file_said(void **state)
{
	struct ctx *c = *state;
	struct vw_reader_config cfg = {.folder = c->root};
	struct vw_reader *r;
	char path[600];
	FILE *f;

	warned[0] = '\0';
	vw_log_set_sink(warn_sink, NULL);
	assert_int_equal(vw_fixture_mkdir(c->root, VW_READER_FRAME_FILE), 0);
	r = reader_new(&cfg);
	assert_int_equal(vw_reader_poll(r), -EINVAL);
	assert_int_equal(vw_reader_poll(r), -EINVAL);
	assert_int_equal(count_in(warned, "frame.json is not a regular file"), 1);
	snprintf(path, sizeof(path), "%s/" VW_READER_FRAME_FILE, c->root);
	assert_int_equal(rmdir(path), 0);
	/* 300 MB (sparse): read up to the cap, never whole. */
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(ftruncate(fileno(f), 300L << 20), 0);
	fclose(f);
	assert_int_equal(vw_reader_poll(r), 0);
	assert_int_equal(vw_reader_poll(r), 0);
	vw_log_set_sink(NULL, NULL);
	if (count_in(warned, "frame.json is larger than") != 1)
		fail_msg("expected one warning about the large file:\n%s", warned);
	vw_reader_free(r);
}

static void test_folder_layouts(void **state)
{
	struct ctx *c = *state;
	struct vw_reader_config cfg = {.path = c->root, .vm_uuid = "6F1C2A9E-3B4D-4E5F-8A7B-0C1D2E3F4A5B"};
	char dir[600], file[700];
	struct vw_reader *r;

	/* The whole share mounted: <uuid>/frame.json, found with a configured VM (any case). */
	snprintf(dir, sizeof(dir), "%s/" UUID, c->root);
	assert_int_equal(vw_fixture_mkdir(c->root, UUID), 0);
	put_frame(dir, 1, 1);
	r = reader_new(&cfg);
	assert_int_equal(vw_reader_poll(r), 1);
	vw_reader_free(r);
	/* The file itself as the path. */
	snprintf(file, sizeof(file), "%s/" VW_READER_FRAME_FILE, dir);
	cfg = (struct vw_reader_config){.path = file};
	r = reader_new(&cfg);
	assert_int_equal(vw_reader_poll(r), 1);
	vw_reader_free(r);
	/* frame.json as a symlink: refused (O_NOFOLLOW). */
	assert_int_equal(vw_fixture_symlink(c->root, UUID "/" VW_READER_FRAME_FILE,
					    VW_READER_FRAME_FILE), 0);
	cfg = (struct vw_reader_config){.path = c->root};
	r = reader_new(&cfg);
	assert_int_equal(vw_reader_poll(r), -ELOOP);
	vw_reader_free(r);
	/* A bad configured UUID is refused up front. */
	cfg.vm_uuid = "not-a-uuid";
	assert_null(vw_reader_new(&cfg));
	assert_int_equal(errno, EINVAL);
}

/* ---- discovery ---- */

static void make_fifo(const char *root, const char *rel)
{
	char p[600];

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	assert_int_equal(mkfifo(p, 0600), 0);
}

/* A reader of cfg polled once (the poll returns `want`): its health in *h, the reader freed. */
static void discover(const struct vw_reader_config *cfg, int want, struct vw_reader_health *h)
{
	struct vw_reader *r = reader_new(cfg);

	assert_int_equal(vw_reader_poll(r), want);
	vw_reader_health(r, h);
	vw_reader_free(r);
}

static void test_discovery(void **state)
{
	struct ctx *c = *state;
	char dev[600], sys[600], share[600], want[700];
	struct vw_reader_config cfg = {.dev_root = dev, .sys_root = sys};
	struct vw_reader_health h;
	struct vw_reader *r;

	snprintf(dev, sizeof(dev), "%s/dev", c->root);
	snprintf(sys, sizeof(sys), "%s/sys", c->root);
	snprintf(share, sizeof(share), "%s/share", c->root);
	assert_int_equal(vw_fixture_write(c->root, "sys/class/virtio-ports/vport1p0/name",
					  "org.qemu.guest_agent.0\n", 0), 0);
	assert_int_equal(vw_fixture_write(c->root, "sys/class/virtio-ports/vport1p1/name",
					  VW_PROTO_PORT_NAME "\n", 0), 0);
	assert_int_equal(vw_fixture_mkdir(c->root, "dev/virtio-ports"), 0);
	assert_int_equal(vw_fixture_mkdir(c->root, "share"), 0);
	make_fifo(c->root, "dev/vport1p0");

	/* Nothing yet: no port named ours has a device node, no folder configured. */
	discover(&cfg, -ENOENT, &h);
	/* The folder as the last resort. */
	cfg.folder = share;
	r = reader_new(&cfg);
	put_frame(share, 1, 1);
	assert_int_equal(vw_reader_poll(r), 1);
	vw_reader_health(r, &h);
	assert_string_equal(h.path, share);
	vw_reader_free(r);
	/* By name through sysfs (libvirt: vport1p1). */
	make_fifo(c->root, "dev/vport1p1");
	discover(&cfg, 0, &h);
	snprintf(want, sizeof(want), "%s/vport1p1", dev);
	assert_string_equal(h.path, want);
	/* The udev link wins when present. */
	make_fifo(c->root, "dev/vport9p9");
	assert_int_equal(vw_fixture_symlink(c->root, "../vport9p9",
					    "dev/virtio-ports/" VW_PROTO_PORT_NAME), 0);
	discover(&cfg, 0, &h);
	assert_int_equal(h.kind, VW_READER_FIFO);
	assert_non_null(strstr(h.path, "/virtio-ports/" VW_PROTO_PORT_NAME));
	/* Another name (plain QEMU numbering is the same lookup). */
	cfg.port_name = "org.qemu.guest_agent.0";
	cfg.folder = NULL;
	discover(&cfg, 0, &h);
	snprintf(want, sizeof(want), "%s/vport1p0", dev);
	assert_string_equal(h.path, want);
}

/*
 * The shared folder where the guest's default says (folder), or where an older document
 * mounted it (folder_alt): an empty mount point is no share, the other is found; the report
 * names each place looked at and what it holds.
 */
static void test_folder_alt_and_report(void **state)
{
	struct ctx *c = *state;
	char dev[600], sys[600], a[600], b[600], report[2048], want[800];
	struct vw_reader_config cfg = { .dev_root = dev, .sys_root = sys, .folder = a,
					.folder_alt = b };
	struct vw_reader_health h;
	struct vw_reader *r;

	snprintf(dev, sizeof(dev), "%s/dev", c->root);
	snprintf(sys, sizeof(sys), "%s/sys", c->root);
	snprintf(a, sizeof(a), "%s/run/virtwatt/host", c->root);
	snprintf(b, sizeof(b), "%s/run/virtwatt-host", c->root);
	assert_int_equal(vw_fixture_mkdir(c->root, "run/virtwatt/host"), 0); /* not mounted */
	r = reader_new(&cfg);
	assert_int_equal(vw_reader_search_report(r, report, sizeof(report)), -ENOENT);
	snprintf(want, sizeof(want), "  %s/virtio-ports/" VW_PROTO_PORT_NAME ": absent\n", dev);
	assert_non_null(strstr(report, want));
	snprintf(want, sizeof(want), "  %s (--passthrough.folder): an empty directory (not "
				     "mounted)\n", a);
	assert_non_null(strstr(report, want));
	snprintf(want, sizeof(want), "  %s: absent\n", b);
	assert_non_null(strstr(report, want));
	assert_null(strstr(report, "-> using"));
	assert_true(vw_reader_poll(r) <= 0);
	/* The share mounted where the old document said: found. */
	assert_int_equal(vw_fixture_mkdir(c->root, "run/virtwatt-host"), 0);
	put_frame(b, 1, 1);
	assert_int_equal(vw_reader_search_report(r, report, sizeof(report)), 0);
	snprintf(want, sizeof(want), "  -> using %s\n", b);
	assert_non_null(strstr(report, want));
	assert_int_equal(vw_reader_poll(r), 1);
	vw_reader_health(r, &h);
	assert_string_equal(h.path, b);
	vw_reader_free(r);
	/* Both: the default place wins. */
	put_frame(a, 1, 2);
	r = reader_new(&cfg);
	assert_int_equal(vw_reader_poll(r), 1);
	vw_reader_health(r, &h);
	assert_string_equal(h.path, a);
	vw_reader_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_fifo_frames_and_garbage, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fifo_staleness, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fifo_models, setup, teardown),
		cmocka_unit_test_setup_teardown(test_folder_model, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fifo_writer_restarts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_port_hello, setup, teardown),
		cmocka_unit_test_setup_teardown(test_port_read_only, setup, teardown),
		cmocka_unit_test_setup_teardown(test_port_unopenable_said, setup, teardown),
		cmocka_unit_test_setup_teardown(test_folder, setup, teardown),
		cmocka_unit_test_setup_teardown(test_folder_odd_file_said, setup, teardown),
		cmocka_unit_test_setup_teardown(test_folder_layouts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_discovery, setup, teardown),
		cmocka_unit_test_setup_teardown(test_folder_alt_and_report, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

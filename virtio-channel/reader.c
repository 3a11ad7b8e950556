/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The guest reader. Streams (a virtio-serial port, a FIFO) go through the framer; a shared
 * folder's frame.json is read whole and must be exactly one line. Every line goes through the
 * strict decoder and the acceptance rules; accepted frames feed the accumulator.
 */
#include "reader.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "log.h"
#include "macro.h"
#include "model_rx.h"

#define READ_CHUNK 65536
#define READ_BUDGET (16 * READ_CHUNK) /* per poll: a flooding host cannot starve the guest */
#define TORN_RETRIES 3

struct vw_reader {
	struct vw_reader_config cfg; /* strings point into the copies below */
	char *path, *dev_root, *sys_root, *folder, *folder_alt, *port_name;

	enum vw_reader_kind kind;
	char where[512]; /* resolved channel */
	int fd;          /* open port or FIFO, else -1 */
	bool got_bytes;  /* since the current open */
	bool read_only_said; /* the port opened read-only, without the hello: logged once */

	struct vw_framer *framer;
	struct vw_proto_rx rx;
	struct vw_proto_acc acc;
	uint64_t last_ok_ns;
	int accepted_now; /* frames accepted during this poll */
	uint64_t logged_takeovers; /* rx.takeovers already logged */
	struct vw_complaint conflict, spike;

	uint64_t frames, opens, reopens, torn, hellos;
	bool file_seen;       /* last_file holds the folder file last examined */
	size_t last_file_len; /* to skip it when unchanged */
	char last_file[VW_PROTO_MAX_FRAME + 1];

	struct vw_model_rx models; /* the host's model for this VM (model frames) */
	struct vw_complaint model_complaint;
	struct vw_complaint odd_file, big_file; /* frame.json not a regular file; too large */
	struct vw_complaint open_failed;        /* a port or FIFO found but not opened */
	bool model_file_seen;      /* the folder's model.json, as last examined */
	size_t model_file_len;
	char *model_file;          /* VW_PROTO_MAX_FRAME + 1 bytes, once a folder has one */
};

const char *vw_reader_kind_name(enum vw_reader_kind kind)
{
	static const char *const names[] = {"none", "port", "fifo", "folder"};

	return (unsigned)kind < ARRAY_SIZE(names) ? names[kind] : "unknown";
}

static int dup_str(char **dst, const char **src)
{
	if (!*src)
		return 0;
	*dst = strdup(*src);
	if (!*dst)
		return -ENOMEM;
	*src = *dst;
	return 0;
}

struct vw_reader *vw_reader_new(const struct vw_reader_config *cfg)
{
	struct vw_reader *r;

	if (cfg->vm_uuid && cfg->vm_uuid[0] && strlen(cfg->vm_uuid) != 36) {
		errno = EINVAL;
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->fd = -1;
	r->cfg = *cfg;
	if (!r->cfg.port_name)
		r->cfg.port_name = VW_PROTO_PORT_NAME;
	if (!r->cfg.stale_intervals)
		r->cfg.stale_intervals = VW_READER_STALE_INTERVALS;
	if (cfg->vm_uuid && cfg->vm_uuid[0]) {
		for (size_t i = 0; i < 36; i++) /* the wire form is lowercase */
			r->rx.expect_uuid[i] = (char)tolower((unsigned char)cfg->vm_uuid[i]);
		if (!vw_proto_uuid_valid(r->rx.expect_uuid)) {
			free(r);
			errno = EINVAL;
			return NULL;
		}
	}
	r->cfg.vm_uuid = NULL; /* lives in rx.expect_uuid */
	r->rx.max_watts = cfg->max_watts;
	r->framer = vw_framer_new(VW_PROTO_MAX_FRAME);
	if (!r->framer || vw_model_rx_init(&r->models) < 0 || dup_str(&r->path, &r->cfg.path) < 0 ||
	    dup_str(&r->dev_root, &r->cfg.dev_root) < 0 ||
	    dup_str(&r->sys_root, &r->cfg.sys_root) < 0 || dup_str(&r->folder, &r->cfg.folder) < 0 ||
	    dup_str(&r->folder_alt, &r->cfg.folder_alt) < 0 ||
	    dup_str(&r->port_name, &r->cfg.port_name) < 0) {
		vw_reader_free(r);
		errno = ENOMEM;
		return NULL;
	}
	return r;
}

static void reader_close(struct vw_reader *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
}

void vw_reader_free(struct vw_reader *r)
{
	if (!r)
		return;
	reader_close(r);
	vw_framer_free(r->framer);
	vw_model_rx_done(&r->models);
	free(r->model_file);
	free(r->path);
	free(r->dev_root);
	free(r->sys_root);
	free(r->folder);
	free(r->folder_alt);
	free(r->port_name);
	free(r);
}

/* ---- finding the channel ---- */

static enum vw_reader_kind kind_of(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return VW_READER_NONE;
	if (S_ISCHR(st.st_mode))
		return VW_READER_PORT;
	if (S_ISFIFO(st.st_mode))
		return VW_READER_FIFO;
	if (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode))
		return VW_READER_FOLDER;
	return VW_READER_NONE;
}

/* A directory with something in it (an empty one is a mount point without its share). */
static bool folder_populated(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;
	bool any = false;

	if (!d)
		return false;
	while (!any && (de = readdir(d)))
		any = strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
	closedir(d);
	return any;
}

static char *vw_str_join3(char *buf, size_t size, const char *a, const char *b, const char *c)
{
	snprintf(buf, size, "%s%s%s", a, b, c);
	return buf;
}

/* Is a/b (b may be "") something we can read? Sets where and kind. */
static bool try_path(struct vw_reader *r, const char *a, const char *b)
{
	int n = snprintf(r->where, sizeof(r->where), "%s%s%s", a, b[0] ? "/" : "", b);

	if (n < 0 || (size_t)n >= sizeof(r->where))
		return false;
	r->kind = kind_of(r->where);
	return r->kind != VW_READER_NONE;
}

/* <sys_root>/class/virtio-ports/<entry>/name == port_name: the lowest such entry. */
static int scan_sysfs(struct vw_reader *r, char *ret, size_t size)
{
	_cleanup_close_ int root = -1;
	DIR *d;
	struct dirent *de;
	int fd, found = -ENOENT;

	root = vw_root_open(r->sys_root);
	if (root < 0)
		return root;
	fd = openat(root, "class/virtio-ports", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	while ((de = readdir(d))) {
		char rel[300], name[256];

		if (de->d_name[0] == '.' || strlen(de->d_name) >= size)
			continue;
		snprintf(rel, sizeof(rel), "%s/name", de->d_name);
		if (vw_read_str_at(dirfd(d), rel, name, sizeof(name)) < 0 ||
		    strcmp(name, r->cfg.port_name) != 0)
			continue;
		if (found < 0 || strcmp(de->d_name, ret) < 0)
			snprintf(ret, size, "%s", de->d_name);
		found = 0;
	}
	closedir(d);
	return found;
}

/* A conventional folder: a directory with something in it, or a frame file. */
static bool try_folder(struct vw_reader *r, const char *folder)
{
	struct stat st;

	if (!folder || !try_path(r, folder, "") || r->kind != VW_READER_FOLDER)
		return false;
	if (stat(folder, &st) == 0 && S_ISDIR(st.st_mode) && !folder_populated(folder))
		return false;
	return true;
}

static int resolve(struct vw_reader *r)
{
	char entry[256];

	if (r->cfg.path)
		return try_path(r, r->cfg.path, "") ? 0 : -ENOENT;
	if (r->cfg.dev_root && !strchr(r->cfg.port_name, '/') &&
	    snprintf(entry, sizeof(entry), "virtio-ports/%s", r->cfg.port_name) < (int)sizeof(entry) &&
	    try_path(r, r->cfg.dev_root, entry))
		return 0;
	if (r->cfg.dev_root && r->cfg.sys_root && scan_sysfs(r, entry, sizeof(entry)) == 0 &&
	    try_path(r, r->cfg.dev_root, entry))
		return 0;
	if (try_folder(r, r->cfg.folder) || try_folder(r, r->cfg.folder_alt))
		return 0;
	r->kind = VW_READER_NONE;
	return -ENOENT;
}

/* What one place holds, for the report: "absent", "empty", "a folder", ... */
static const char *place_state(const char *path, bool folder)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return errno == ENOENT ? "absent" : "unreadable";
	if (folder && S_ISDIR(st.st_mode))
		return folder_populated(path) ? "a shared folder" : "an empty directory (not mounted)";
	switch (kind_of(path)) {
	case VW_READER_PORT:
		return "a port";
	case VW_READER_FIFO:
		return "a FIFO";
	case VW_READER_FOLDER:
		return S_ISDIR(st.st_mode) ? "a folder" : "a frame file";
	default:
		return "not a channel";
	}
}

int vw_reader_search_report(struct vw_reader *r, char *buf, size_t size)
{
	FILE *f = fmemopen(buf, size, "w");
	char entry[256];
	int found = resolve(r);

	if (!f)
		return -errno;
	if (r->cfg.path) {
		fprintf(f, "  %s (--passthrough.path): %s\n", r->cfg.path,
			place_state(r->cfg.path, false));
	} else {
		if (r->cfg.dev_root)
			fprintf(f, "  %s/virtio-ports/%s: %s\n", r->cfg.dev_root, r->cfg.port_name,
				place_state(vw_str_join3(entry, sizeof(entry), r->cfg.dev_root,
							 "/virtio-ports/", r->cfg.port_name),
					    false));
		if (r->cfg.dev_root && r->cfg.sys_root)
			fprintf(f, "  %s/class/virtio-ports/*/name = %s: %s\n", r->cfg.sys_root,
				r->cfg.port_name,
				scan_sysfs(r, entry, sizeof(entry)) == 0 ? entry : "none");
		if (r->cfg.folder)
			fprintf(f, "  %s (--passthrough.folder): %s\n", r->cfg.folder,
				place_state(r->cfg.folder, true));
		if (r->cfg.folder_alt)
			fprintf(f, "  %s: %s\n", r->cfg.folder_alt, place_state(r->cfg.folder_alt, true));
	}
	if (found == 0)
		fprintf(f, "  -> using %s\n", r->where);
	fclose(f);
	if (size)
		buf[size - 1] = '\0';
	(void)resolve(r); /* the place found, as before the report */
	return found;
}

/* ---- streams ---- */

static void send_hello(struct vw_reader *r)
{
	struct vw_guest_hello h = {.version = VW_PROTO_VERSION, .ack_seq = r->rx.seq};
	char buf[VW_PROTO_MAX_HELLO];
	size_t len;

	if (vw_proto_encode_hello(&h, buf, sizeof(buf), &len) < 0)
		return;
	/* Best effort: a host that does not read must not block the guest. */
	if (write(r->fd, buf, len) == (ssize_t)len)
		r->hellos++;
}

static int open_stream(struct vw_reader *r)
{
	const int flags = O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
	bool rw = r->kind == VW_READER_PORT && r->cfg.hello;
	int fd = open(r->where, (rw ? O_RDWR : O_RDONLY) | flags);

	/* A port the guest may only read (the shipped udev rule's 0640 for the virtwatt group, the
	 * unit's DeviceAllow= r): read it all the same, without the hello, a courtesy
	 * (PROTOCOL.md §4). */
	if (fd < 0 && rw && (errno == EACCES || errno == EPERM)) {
		rw = false;
		fd = open(r->where, O_RDONLY | flags);
		if (fd >= 0 && !r->read_only_said) {
			r->read_only_said = true;
			vw_info("passthrough: %s is readable only: reading it without the hello to "
				"the host (a courtesy, PROTOCOL.md §4)",
				r->where);
		}
	}
	if (fd < 0)
		return -errno;
	r->fd = fd;
	r->got_bytes = false;
	r->opens++;
	vw_framer_reset(r->framer);
	vw_debug("passthrough: opened %s %s", vw_reader_kind_name(r->kind), r->where);
	if (rw)
		send_hello(r);
	return 0;
}

/* After rx accepted or refused a frame (either way counted there). */
static void took(struct vw_reader *r, enum vw_proto_error e)
{
	if (e == VW_PROTO_E_CONFLICT)
		vw_complain(&r->conflict, VW_LOG_WARN,
			    "passthrough: frames of another host epoch than %" PRIu64 " (conflict): "
			    "two publishers for this VM? Counting the current one only "
			    "(docs/guest.md)",
			    r->rx.epoch);
	else if (e == VW_PROTO_E_SPIKE)
		vw_complain(&r->spike, VW_LOG_WARN,
			    "passthrough: a frame's energy rose faster than any VM draws (spike): "
			    "ignored, counting on from the last good frame "
			    "(--passthrough.max-watts)");
	else if (e != VW_PROTO_OK)
		vw_debug("passthrough: frame rejected: %s", vw_proto_error_name(e));
	if (e != VW_PROTO_OK)
		return;
	if (r->rx.takeovers != r->logged_takeovers)
		vw_warn("passthrough: the current publisher fell silent; epoch %" PRIu64
			" takes over without its history",
			r->rx.epoch);
	r->logged_takeovers = r->rx.takeovers;
	vw_proto_acc_add(&r->acc, &r->rx);
	r->last_ok_ns = r->rx.last_ns;
	r->accepted_now++;
}

/* The VM this guest is: configured, else fixed by the first accepted frame ("" before). */
static const char *this_vm(const struct vw_reader *r)
{
	return r->rx.expect_uuid[0] ? r->rx.expect_uuid : r->rx.have ? r->rx.last.vm_uuid : "";
}

static void took_model(struct vw_reader *r, const char *line, size_t len)
{
	uint64_t gen = r->models.gen;
	enum vw_proto_error e = vw_model_rx_line(&r->models, this_vm(r), line, len, vw_now_ns());

	if (e != VW_PROTO_OK)
		vw_complain(&r->model_complaint, VW_LOG_WARN,
			    "passthrough: a model frame refused (%s): keeping %s",
			    vw_proto_error_name(e),
			    r->models.cur ? r->models.cur->name : "the model this guest has");
	else if (r->models.gen != gen)
		vw_info("passthrough: the host sent its model %s for this VM",
			r->models.cur->name);
}

static void on_line(const char *line, size_t len, void *userdata)
{
	struct vw_reader *r = userdata;

	if (vw_proto_line_is_model(line, len)) {
		took_model(r, line, len);
		return;
	}
	r->frames++;
	took(r, vw_proto_rx_line(&r->rx, line, len, vw_now_ns()));
}

static int read_stream(struct vw_reader *r)
{
	char buf[READ_CHUNK];
	size_t total = 0;

	while (total < READ_BUDGET) {
		ssize_t n = read(r->fd, buf, sizeof(buf));

		if (n > 0) {
			r->got_bytes = true;
			total += (size_t)n;
			vw_framer_feed(r->framer, buf, (size_t)n, on_line, r);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		/* End of file (the writer or the host went away) or an error: reopen next time. */
		int err = n < 0 ? -errno : 0;

		if (r->got_bytes) {
			r->reopens++;
			vw_proto_rx_writer_gone(&r->rx); /* its epoch stopped with it */
		}
		vw_debug("passthrough: %s closed: %s", r->where, err ? strerror(-err) : "end of file");
		reader_close(r);
		return err;
	}
	return 0;
}

/* ---- the shared folder ---- */

static int open_folder_file(struct vw_reader *r, const char *name)
{
	_cleanup_close_ int dir = -1;
	struct stat st;
	char rel[64];
	int fd;

	if (stat(r->where, &st) < 0)
		return -errno;
	if (S_ISREG(st.st_mode)) { /* a frame file: no model beside it */
		if (strcmp(name, VW_READER_FRAME_FILE) != 0)
			return -ENOENT;
		fd = open(r->where, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		return fd < 0 ? -errno : fd;
	}
	dir = open(r->where, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return -errno;
	fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && r->rx.expect_uuid[0]) {
		snprintf(rel, sizeof(rel), "%s/%s", r->rx.expect_uuid, name);
		fd = openat(dir, rel, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	}
	return fd < 0 ? -errno : fd;
}

/* Read the whole file, at most VW_PROTO_MAX_FRAME + 1 bytes (one more than allowed). */
static int read_folder_file(struct vw_reader *r, const char *name, char *buf, size_t *ret_len)
{
	_cleanup_close_ int fd = open_folder_file(r, name);
	struct stat st;

	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	return vw_read_fd(fd, buf, VW_PROTO_MAX_FRAME + 1, ret_len);
}

/* Exactly one complete line, under the cap: anything else is torn, partial or hostile. */
static enum vw_proto_error check_file(const char *buf, size_t len)
{
	if (len > VW_PROTO_MAX_FRAME)
		return VW_PROTO_E_OVERSIZE;
	if (len == 0 || buf[len - 1] != '\n' || memchr(buf, '\n', len - 1))
		return VW_PROTO_E_SYNTAX;
	return VW_PROTO_OK;
}

/* The folder's model.json, when it changed: one line, as the channel's model frames. */
static void poll_model_file(struct vw_reader *r)
{
	char buf[VW_PROTO_MAX_FRAME + 1];
	size_t len = 0;

	if (read_folder_file(r, VW_READER_MODEL_FILE, buf, &len) < 0)
		return; /* none (yet): the host has no model for this VM */
	if (r->model_file_seen && len == r->model_file_len && memcmp(buf, r->model_file, len) == 0)
		return;
	if (!r->model_file && !(r->model_file = malloc(VW_PROTO_MAX_FRAME + 1)))
		return;
	r->model_file_seen = true;
	r->model_file_len = len;
	memcpy(r->model_file, buf, len);
	if (check_file(buf, len) != VW_PROTO_OK) {
		r->models.rejected[check_file(buf, len)]++;
		return;
	}
	took_model(r, buf, len - 1);
}

static int poll_frame_file(struct vw_reader *r)
{
	char buf[VW_PROTO_MAX_FRAME + 1];
	enum vw_proto_error e = VW_PROTO_OK;
	struct vw_host_frame f;
	size_t len = 0;

	for (int attempt = 0; attempt < TORN_RETRIES; attempt++) {
		int err = read_folder_file(r, VW_READER_FRAME_FILE, buf, &len);

		if (err == -EINVAL)
			vw_complain(&r->odd_file, VW_LOG_WARN,
				    "passthrough: %s: %s is not a regular file (a directory or a "
				    "device): ignored; the host writes a regular file there",
				    r->where, VW_READER_FRAME_FILE);
		if (err < 0)
			return err;
		if (r->file_seen && len == r->last_file_len && memcmp(buf, r->last_file, len) == 0)
			return 0; /* unchanged since last examined */
		e = check_file(buf, len);
		if (e == VW_PROTO_OK)
			e = vw_proto_decode_host(buf, len - 1, &f);
		if (e != VW_PROTO_E_SYNTAX || attempt == TORN_RETRIES - 1)
			break;
		r->torn++; /* torn or half-written: read it again, never use part of it */
	}
	r->frames++;
	r->file_seen = true;
	r->last_file_len = VW_MIN(len, sizeof(r->last_file));
	memcpy(r->last_file, buf, r->last_file_len);
	if (e == VW_PROTO_E_OVERSIZE)
		vw_complain(&r->big_file, VW_LOG_WARN,
			    "passthrough: %s: %s is larger than %u bytes: ignored", r->where,
			    VW_READER_FRAME_FILE, (unsigned)VW_PROTO_MAX_FRAME);
	if (e != VW_PROTO_OK)
		r->rx.rejected[e]++;
	else
		e = vw_proto_rx_accept(&r->rx, &f, vw_now_ns());
	took(r, e);
	return r->accepted_now;
}

/* The frame first (a model is taken for the VM the frames name), then the model. */
static int poll_folder(struct vw_reader *r)
{
	int n = poll_frame_file(r);

	if (n >= 0)
		poll_model_file(r);
	return n;
}

/* ---- the poll ---- */

int vw_reader_poll(struct vw_reader *r)
{
	int err;

	r->accepted_now = 0;
	if (r->fd < 0) {
		char was[sizeof(r->where)];

		memcpy(was, r->where, sizeof(was));
		err = resolve(r);
		if (err < 0)
			return err;
		if (strcmp(was, r->where) != 0)
			vw_info("passthrough: using %s %s", vw_reader_kind_name(r->kind), r->where);
		if (r->kind == VW_READER_FOLDER)
			return poll_folder(r);
		err = open_stream(r);
		if (err < 0) {
			vw_complain(&r->open_failed, VW_LOG_WARN,
				    "passthrough: cannot open %s %s: %s: this VM's power stays a model's "
				    "estimate (a port is root's 0600 unless a udev rule gives the daemon's "
				    "group read access: deploy/udev/70-virtwatt.rules)",
				    vw_reader_kind_name(r->kind), r->where, strerror(-err));
			return err;
		}
		vw_release(&r->open_failed, VW_LOG_INFO, "passthrough: %s %s opened",
			   vw_reader_kind_name(r->kind), r->where);
	}
	err = read_stream(r);
	return err < 0 ? err : r->accepted_now;
}

int vw_reader_fd(const struct vw_reader *r)
{
	return r->fd;
}

const struct vw_host_frame *vw_reader_last(const struct vw_reader *r)
{
	return r->rx.have ? &r->rx.last : NULL;
}

const struct vw_proto_acc *vw_reader_acc(const struct vw_reader *r)
{
	return &r->acc;
}

const struct vw_model_rx *vw_reader_models(const struct vw_reader *r)
{
	return &r->models;
}

static uint64_t age_ns(const struct vw_reader *r)
{
	uint64_t now = vw_now_ns();

	if (!r->rx.have)
		return UINT64_MAX;
	return now > r->last_ok_ns ? now - r->last_ok_ns : 0;
}

bool vw_reader_fresh(const struct vw_reader *r)
{
	uint64_t window = (uint64_t)r->cfg.stale_intervals * r->rx.last.interval_ms *
			  VW_NSEC_PER_MSEC;

	return r->rx.have && age_ns(r) <= window;
}

void vw_reader_health(const struct vw_reader *r, struct vw_reader_health *ret)
{
	struct vw_framer_stats fs = vw_framer_stats(r->framer);

	*ret = (struct vw_reader_health){
		.kind = r->kind,
		.open = r->fd >= 0,
		.have = r->rx.have,
		.fresh = vw_reader_fresh(r),
		.age_ns = age_ns(r),
		.frames = r->frames + fs.oversized + fs.invalid,
		.accepted = r->rx.accepted,
		.epochs = r->rx.epochs,
		.takeovers = r->rx.takeovers,
		.opens = r->opens,
		.reopens = r->reopens,
		.resyncs = fs.resyncs,
		.torn = r->torn,
		.hellos = r->hellos,
	};
	snprintf(ret->path, sizeof(ret->path), "%s", r->kind ? r->where : "");
	memcpy(ret->rejected, r->rx.rejected, sizeof(ret->rejected));
	ret->rejected[VW_PROTO_E_OVERSIZE] += fs.oversized;
	ret->rejected[VW_PROTO_E_SYNTAX] += fs.invalid;
}

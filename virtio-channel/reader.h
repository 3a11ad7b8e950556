/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The guest side of the passthrough channel: find the port (or the shared folder), read it
 * without blocking, frame, decode and accept, reopen when the host goes away, and tell fresh
 * data from stale. The guest daemon calls vw_reader_poll() on its tick (or when vw_reader_fd()
 * is readable) and takes values from vw_reader_acc().
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "accum.h"
#include "proto.h"

#define VW_READER_STALE_INTERVALS 3
#define VW_READER_FRAME_FILE "frame.json"
#define VW_READER_MODEL_FILE "model.json" /* the host's model for the VM (PROTOCOL.md §2a) */

enum vw_reader_kind {
	VW_READER_NONE,   /* nothing found or open yet */
	VW_READER_PORT,   /* a character device: the virtio-serial port */
	VW_READER_FIFO,   /* a named pipe (tests, or a relay) */
	VW_READER_FOLDER, /* a shared folder holding frame.json, or that file itself */
};

struct vw_reader_config {
	/*
	 * The channel, named explicitly: a character device, a FIFO, a directory (the shared
	 * folder: frame.json in it, or <vm_uuid>/frame.json) or a regular file (a frame file).
	 * NULL: discover, in order, <dev_root>/virtio-ports/<port_name>, then the entry of
	 * <sys_root>/class/virtio-ports/ whose `name` is port_name (opened as <dev_root>/<entry>),
	 * then the folder, then folder_alt (a folder counts once something is in it: an empty
	 * mount point is not a share).
	 */
	const char *path;
	const char *dev_root;  /* "/dev" in production; NULL skips both port lookups */
	const char *sys_root;  /* "/sys" in production; NULL skips the sysfs scan */
	const char *folder;    /* where the shared folder is conventionally mounted; NULL: none */
	const char *folder_alt; /* another place it may be mounted (an older document's); NULL */
	const char *port_name; /* NULL: VW_PROTO_PORT_NAME */
	const char *vm_uuid;   /* this VM (any case); NULL or "": the first frame's VM */
	unsigned stale_intervals; /* fresh while a frame came within this many intervals; 0: 3 */
	double max_watts;      /* spike ceiling per zone (accum.h); 0: automatic */
	bool hello;            /* send a hello on each open of a port (one only readable: none) */
};

struct vw_reader_health {
	enum vw_reader_kind kind;
	char path[512];    /* what is (or was last) open; "" before anything was found */
	bool open;         /* a port or FIFO is open now (a folder is opened per read) */
	bool have;         /* some frame was accepted since start */
	bool fresh;
	uint64_t age_ns;   /* since the last accepted frame; UINT64_MAX without one */
	uint64_t frames;   /* lines or files examined */
	uint64_t accepted;
	uint64_t rejected[VW_PROTO_E__COUNT]; /* by reason; framer drops folded in */
	uint64_t epochs;   /* epoch changes: host restarts and takeovers */
	uint64_t takeovers; /* another publisher's epoch taken over without its history */
	uint64_t opens, reopens; /* opens in all; of them, after the channel went away */
	uint64_t resyncs;  /* 0xFF bytes seen */
	uint64_t torn;     /* shared-folder reads retried for a torn or partial file */
	uint64_t hellos;   /* hellos written */
};

struct vw_reader;

/* Copies the config's strings. NULL with errno set (EINVAL for a bad vm_uuid). */
struct vw_reader *vw_reader_new(const struct vw_reader_config *cfg);
void vw_reader_free(struct vw_reader *r);

/*
 * Open the channel if needed and consume what is there, without blocking. Returns the number
 * of frames accepted (0 or more), -ENOENT when no channel was found, or another -errno from
 * opening or reading; the channel is closed after an error or end of file and reopened on the
 * next call (the host may have restarted). Bad input is counted, never returned.
 */
int vw_reader_poll(struct vw_reader *r);
/*
 * Where discovery looks, one place per line ("  /dev/virtio-ports/org.virtwatt.power.0:
 * absent"), and which one it uses: 0 when one was found (also said in buf), -ENOENT when none.
 */
int vw_reader_search_report(struct vw_reader *r, char *buf, size_t size);
/* The open port or FIFO, for poll(2); -1 otherwise. After POLLHUP call vw_reader_poll(). */
int vw_reader_fd(const struct vw_reader *r);

/* The last accepted frame, or NULL. */
const struct vw_host_frame *vw_reader_last(const struct vw_reader *r);
/* Monotonic guest totals built from every accepted frame. */
const struct vw_proto_acc *vw_reader_acc(const struct vw_reader *r);
/* Fresh: a frame was accepted within stale_intervals of its publication interval (vw_now_ns). */
bool vw_reader_fresh(const struct vw_reader *r);
void vw_reader_health(const struct vw_reader *r, struct vw_reader_health *ret);
/* The host's model frames for this VM: the last accepted (cur, gen) and the refusals. */
struct vw_model_rx;
const struct vw_model_rx *vw_reader_models(const struct vw_reader *r);
const char *vw_reader_kind_name(enum vw_reader_kind kind);

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The host <-> guest power passthrough protocol (PROTOCOL.md): newline-delimited JSON, one
 * object per line, versioned, with a size cap. The host sends each VM its own cumulative idle
 * and active energy per zone; the guest may send a tiny hello/ack. Decoding treats every byte
 * as hostile. One library for both daemons; no I/O here.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zone.h"

#define VW_PROTO_VERSION 1
#define VW_PROTO_MAX_FRAME 16384  /* bytes of one host frame line, '\n' included */
#define VW_PROTO_MAX_HELLO 256    /* bytes of one guest line */
#define VW_PROTO_RESYNC 0xFF      /* sent by the host on (re)connect; readers drop through it */

/* Value rules (PROTOCOL.md §2): the encoder refuses what the decoder would reject. */
#define VW_PROTO_MAX_ENERGY_UJ (1ULL << 62) /* per zone and mode, inclusive */
#define VW_PROTO_MAX_WATTS 1e6
#define VW_PROTO_MIN_INTERVAL_MS 1000ULL    /* never publish faster than 1 s (RAPL side channel) */
#define VW_PROTO_MAX_INTERVAL_MS 3600000ULL
#define VW_PROTO_PORT_NAME "org.virtwatt.power.0" /* the virtio-serial port's name */

struct vw_proto_zone {
	enum vw_zone zone;
	uint64_t idle_uj, active_uj; /* cumulative since the host epoch */
	double idle_w, active_w;     /* over the last publication interval */
};

struct vw_host_frame {
	unsigned version;
	uint64_t epoch;          /* host boot/start identity: a new value = the host restarted */
	uint64_t seq;            /* strictly increasing within an epoch */
	char vm_uuid[37];
	uint64_t interval_ms;    /* publication interval */
	char source[16];         /* the host's meter: "rapl", "estimator" */
	char model[128];         /* the host's model identity ("" for a meter) */
	size_t n_zones;
	struct vw_proto_zone zones[VW_ZONE__WIRE_COUNT];
};

enum vw_proto_error {
	VW_PROTO_OK,
	VW_PROTO_E_OVERSIZE,  /* line over the cap */
	VW_PROTO_E_SYNTAX,    /* not JSON, trailing garbage, bad UTF-8 */
	VW_PROTO_E_DEPTH,     /* nesting over the limit */
	VW_PROTO_E_TYPE,      /* a field of the wrong type, not an object */
	VW_PROTO_E_MISSING,   /* a required field absent */
	VW_PROTO_E_RANGE,     /* negative, non-finite, absurd, or a bad UUID/zone */
	VW_PROTO_E_VERSION,   /* unknown protocol version */
	VW_PROTO_E_SEQ,       /* sequence went back (or repeated) within an epoch */
	VW_PROTO_E_UUID,      /* a frame for another VM */
	VW_PROTO_E_ENERGY,    /* a cumulative counter fell within an epoch */
	VW_PROTO_E_CONFLICT,  /* another publisher's epoch, or a superseded one (accum.h) */
	VW_PROTO_E_SPIKE,     /* an energy increase no VM can have drawn (accum.h) */
	VW_PROTO_E_INTEGRITY, /* a model frame whose body does not match its sha256 */
	VW_PROTO_E_RATE,      /* a model change sooner than the guest takes them (model_rx.h) */
	VW_PROTO_E_PENDING,   /* a new epoch held until the current one is known to have stopped
			       * (a restart then, taken whole; else another publisher: accum.h) */
	VW_PROTO_E__COUNT,
};

const char *vw_proto_error_name(enum vw_proto_error e);
/* Canonical lowercase 8-4-4-4-12 hex, NUL-terminated after 36 characters. */
bool vw_proto_uuid_valid(const char *s);

/*
 * Encode one frame as a JSON line ending in '\n' (fixed field order, byte-exact, NUL written
 * after it), at most VW_PROTO_MAX_FRAME bytes. -ENOBUFS if it does not fit; -EINVAL for a frame
 * the decoder would reject (version other than 0 = current or VW_PROTO_VERSION, out-of-range
 * values, bad strings, no zones, a zone twice).
 */
int vw_proto_encode_host(const struct vw_host_frame *f, char *buf, size_t size, size_t *ret_len);
/* Decode one line (without its '\n'). Field rules only; acceptance rules are accum.h's. */
enum vw_proto_error vw_proto_decode_host(const char *line, size_t len, struct vw_host_frame *ret);

/*
 * Model frames (PROTOCOL.md §2a): the host's model for this VM, a Kepler model-server weight
 * file carried as a JSON string, with its SHA-256. Same line cap as energy frames; the body
 * at most VW_PROTO_MAX_MODEL bytes. A line is a model frame when its "kind" is "model".
 */
#define VW_PROTO_MAX_MODEL 12288
#define VW_PROTO_MODEL_NAME_MAX 64

struct vw_model_frame {
	unsigned version;
	uint64_t epoch;     /* the host's run, as its energy frames' */
	char vm_uuid[37];
	uint64_t mseq;      /* a newer model of the epoch has a higher mseq */
	char name[VW_PROTO_MODEL_NAME_MAX]; /* [A-Za-z0-9_.:-], 1-63 bytes */
	char sha256[65];    /* lower-case hex of the body */
	size_t body_len;
	char body[VW_PROTO_MAX_MODEL + 1]; /* NUL-terminated */
};

/* Whether a line is a model frame (a JSON object whose "kind" is "model"); anything else,
 * invalid JSON included, is for vw_proto_decode_host to judge. */
bool vw_proto_line_is_model(const char *line, size_t len);
/* Encode m (its sha256 computed here from the body) as one line ending in '\n'; -EINVAL for
 * what the decoder would reject, -ENOBUFS when it does not fit. */
int vw_proto_encode_model(struct vw_model_frame *m, char *buf, size_t size, size_t *ret_len);
/* Decode one line (without its '\n'): the field rules, and the body against its sha256. On
 * an error *ret holds whatever was decoded so far: decode into scratch, keep the last good. */
enum vw_proto_error vw_proto_decode_model(const char *line, size_t len, struct vw_model_frame *ret);

/* Guest -> host hello/ack: {"v":1,"hello":"virtwatt-guest","ack":SEQ} under VW_PROTO_MAX_HELLO. */
struct vw_guest_hello {
	unsigned version;
	uint64_t ack_seq;
};
int vw_proto_encode_hello(const struct vw_guest_hello *h, char *buf, size_t size, size_t *ret_len);
enum vw_proto_error vw_proto_decode_hello(const char *line, size_t len, struct vw_guest_hello *ret);

/*
 * Line framing with a size cap and resynchronisation: bytes in, complete lines out (without
 * '\n'). An oversized line is dropped (counted) up to its '\n'; a 0xFF byte discards the
 * partial line. Memory is bounded by max_line.
 *
 * max_line counts the '\n' (as VW_PROTO_MAX_FRAME does): lines of up to max_line - 1 bytes are
 * delivered, NUL-terminated for convenience. Empty lines are skipped; a line holding a NUL byte
 * is dropped and counted as invalid. NULL with errno EINVAL for max_line < 2 or > 1 MiB.
 */
struct vw_framer;
struct vw_framer *vw_framer_new(size_t max_line);
void vw_framer_free(struct vw_framer *f);
typedef void (*vw_framer_line_fn)(const char *line, size_t len, void *userdata);
void vw_framer_feed(struct vw_framer *f, const void *data, size_t len, vw_framer_line_fn cb,
		    void *userdata);
void vw_framer_reset(struct vw_framer *f);
struct vw_framer_stats {
	uint64_t oversized; /* lines longer than max_line, dropped */
	uint64_t invalid;   /* lines dropped for a NUL byte */
	uint64_t resyncs;   /* 0xFF bytes seen */
};
struct vw_framer_stats vw_framer_stats(const struct vw_framer *f);

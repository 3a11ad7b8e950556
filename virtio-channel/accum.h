/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The guest's side of PROTOCOL.md §3: which decoded host frames count, and how much of them.
 * Pure: no I/O, no clock of its own; the caller passes the monotonic time it received each
 * frame at.
 *
 * vw_proto_rx_accept() applies the acceptance rules (VM, sequence, energy, spike, epochs) and
 * says how an accepted frame counts (rx->take); vw_proto_acc_add() folds that frame into the
 * guest's own totals, which only grow. Within an epoch a zone adds cur - prev. The first frame
 * and a host restart add the frame's values (the energy since that epoch began), so a guest
 * daemon that restarts on a live host starts again at the host's own figure. A frame whose
 * increase no VM can have drawn is a spike: dropped, and the next good frame counts from the
 * last good one. An epoch that cannot be a restart (it comes back after being superseded, or
 * its counters began before the current epoch's last frame) is another publisher: rejected
 * (conflict) while the current epoch keeps coming, and taking over without its history once
 * the current epoch has fallen silent. One that can be a restart is held (pending) until the
 * current epoch has been silent VW_PROTO_TAKEOVER_INTERVALS, then taken whole; a frame of the
 * current epoch meanwhile shows it to be another publisher (a conflict from then on), so its
 * history is never counted on top of the current one's.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "proto.h"

/*
 * Spike ceiling per zone, unless the guest sets max_watts: this many times the larger of the
 * power the two frames report (idle_w + active_w) and a floor, at most a cap. It stays above
 * any real burst: a false spike would drop energy really used.
 */
#define VW_PROTO_SPIKE_FACTOR 4.0
#define VW_PROTO_SPIKE_FLOOR_W 250.0
#define VW_PROTO_SPIKE_MAX_W 20000.0 /* no VM zone draws 20 kW, whatever a frame says */
/*
 * A new epoch is a host restart when each zone's cumulative energy fits in this power over the
 * time since the last accepted frame plus one interval: this many times the larger of the
 * reported power and a floor, never above the spike ceiling. Tighter than the spike ceiling: a
 * false restart would add another publisher's history.
 */
#define VW_PROTO_RESTART_FACTOR 4.0
#define VW_PROTO_RESTART_FLOOR_W 25.0
/* Another publisher takes over once the current epoch has been silent this many intervals. */
#define VW_PROTO_TAKEOVER_INTERVALS 2
/* Epochs other than the current one remembered (superseded, or seen conflicting). */
#define VW_PROTO_KNOWN_EPOCHS 8

enum vw_proto_take {
	VW_PROTO_TAKE_DELTA, /* the current epoch: each zone adds cur - prev */
	VW_PROTO_TAKE_WHOLE, /* the first frame, or a host restart: each zone adds its values */
	VW_PROTO_TAKE_FROM,  /* each zone adds cur - rx->from: a takeover, or past a counter step */
	VW_PROTO_TAKE_BASE,  /* a baseline only: nothing added (a takeover with no base frame) */
};

/* The current epoch's last accepted values of one zone, and since when they stand. */
struct vw_proto_rx_zone {
	bool seen;
	uint64_t idle_uj, active_uj;
	double watts;       /* idle_w + active_w */
	uint64_t since_ns;  /* when these values first arrived */
	uint64_t since_seq; /* in which frame */
};

struct vw_proto_epoch_seen {
	uint64_t epoch, seq; /* the highest seq seen or accepted from it */
};

struct vw_proto_rx {
	/* Configuration: set before the first frame. */
	char expect_uuid[37]; /* "" = accept any VM's frames (the first one fixes it) */
	double max_watts;     /* spike ceiling per zone in W; 0: automatic (above) */

	bool have;
	uint64_t epoch, seq;
	struct vw_host_frame last; /* the last accepted frame */
	uint64_t last_ns;          /* when it was accepted */
	struct vw_proto_rx_zone zones[VW_ZONE__WIRE_COUNT];
	enum vw_proto_take take;   /* how the last accepted frame counts */
	struct vw_host_frame from; /* VW_PROTO_TAKE_FROM's base */

	/* The last spike of this epoch: a frame continuing from it shows a lasting counter step. */
	bool have_step;
	struct vw_host_frame step;
	uint64_t step_ns;
	/* A new epoch that may be a restart, held (VW_PROTO_E_PENDING) while the current epoch may
	 * still be publishing: its last frame. */
	bool have_pending;
	struct vw_host_frame pending;
	bool writer_gone; /* the stream the current epoch came on ended (vw_proto_rx_writer_gone) */
	/* Another publisher's first frame since the last accepted one: its base for a takeover. */
	bool have_rival;
	struct vw_host_frame rival;
	uint64_t rival_ns, rival_gen; /* rival_gen: `accepted` when it was kept */
	struct vw_proto_epoch_seen known[VW_PROTO_KNOWN_EPOCHS]; /* oldest first */
	size_t n_known;

	uint64_t accepted;
	uint64_t epochs;    /* epoch changes accepted after the first frame (restarts, takeovers) */
	uint64_t takeovers; /* of them, another publisher's epoch taken without its history */
	uint64_t rejected[VW_PROTO_E__COUNT];
};

/* Check f, received at now_ns, against what was accepted; counts the outcome in rx. */
enum vw_proto_error vw_proto_rx_accept(struct vw_proto_rx *rx, const struct vw_host_frame *f,
				       uint64_t now_ns);
/* The stream the frames come on ended (its writer closed it): the current epoch has stopped,
 * so a new one is a restart (or a takeover) at once, not held for two intervals. */
void vw_proto_rx_writer_gone(struct vw_proto_rx *rx);
/* Decode one line and accept it: decode errors are counted in rx->rejected too. */
enum vw_proto_error vw_proto_rx_line(struct vw_proto_rx *rx, const char *line, size_t len,
				     uint64_t now_ns);

struct vw_proto_acc_zone {
	bool seen;                        /* present in the current epoch */
	uint64_t prev_idle_uj, prev_active_uj;  /* the last frame's values, this epoch */
	uint64_t idle_uj, active_uj;      /* the guest totals: only grow */
	double idle_w, active_w;          /* from the last frame that carried the zone */
};

struct vw_proto_acc {
	bool have;
	uint64_t epoch;
	uint64_t restarts; /* epoch changes folded in (restarts and takeovers) */
	uint64_t falls;    /* a counter below its base: added 0 */
	struct vw_proto_acc_zone zones[VW_ZONE__WIRE_COUNT];
};

/* Zero-initialise acc; after each frame vw_proto_rx_accept() accepts, add it as rx->take says. */
void vw_proto_acc_add(struct vw_proto_acc *acc, const struct vw_proto_rx *rx);

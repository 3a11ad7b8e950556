/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The guest's monotonic energy totals from successive accepted host frames. Pure: no I/O, no
 * clock. Within an epoch a zone adds cur - prev; the first frame, a zone's first frame in an
 * epoch, and every zone of a new epoch (a host restart) add the frame's values, which are the
 * energy since that epoch began. So no total ever goes back, and a guest daemon restart on a
 * live host starts again at the host's own cumulative figure for this VM.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "proto.h"

struct vw_proto_acc_zone {
	bool seen;                        /* present in the current epoch */
	uint64_t prev_idle_uj, prev_active_uj;  /* the last frame's values, this epoch */
	uint64_t idle_uj, active_uj;      /* the guest totals: only grow */
	double idle_w, active_w;          /* from the last frame that carried the zone */
};

struct vw_proto_acc {
	bool have;
	uint64_t epoch;
	uint64_t restarts; /* epoch changes folded in */
	uint64_t falls;    /* a counter below its previous value within an epoch: added 0 */
	struct vw_proto_acc_zone zones[VW_ZONE__COUNT];
};

/* Zero-initialise acc, then add every frame vw_proto_rx_accept() accepted, in order. */
void vw_proto_acc_add(struct vw_proto_acc *acc, const struct vw_host_frame *f);

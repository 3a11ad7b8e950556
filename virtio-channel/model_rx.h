/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The guest's acceptance of model frames (PROTOCOL.md §2a), apart from the energy frames'
 * (accum.h): a model for this VM only, newer than the one kept within an epoch, a changed one
 * at most once per VW_MODEL_RX_MIN_CHANGE_NS; the same model again (a resend) changes nothing.
 * A refused frame changes nothing: the last good model stays. Memory is two frames, fixed.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "proto.h"

#define VW_MODEL_RX_MIN_CHANGE_NS (10ULL * 1000000000ULL)

struct vw_model_rx {
	struct vw_model_frame *cur;     /* the last accepted, or NULL */
	struct vw_model_frame *scratch; /* decode target */
	uint64_t gen;                   /* accepted changes: the guest reloads when it moves */
	uint64_t last_change_ns;
	uint64_t accepted, unchanged;
	uint64_t rejected[VW_PROTO_E__COUNT];
};

/* Zeroed, then this. -ENOMEM. */
int vw_model_rx_init(struct vw_model_rx *m);
void vw_model_rx_done(struct vw_model_rx *m);
/*
 * One model line received at now_ns for the VM expect_uuid ("" while the guest does not know
 * its VM yet: refused as uuid). VW_PROTO_OK when accepted or unchanged; the refusal's reason
 * otherwise (counted).
 */
enum vw_proto_error vw_model_rx_line(struct vw_model_rx *m, const char *expect_uuid,
				     const char *line, size_t len, uint64_t now_ns);

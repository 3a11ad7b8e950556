/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: the guest's real path, framer -> decoder -> acceptance -> accumulator, fed
 * the fuzz input as port bytes in two reads. Also the decoders on the whole input as one line,
 * and two properties: a frame the decoder accepts re-encodes to one that decodes equal, and no
 * guest total ever goes back. A broken property aborts (a crash to libFuzzer).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "accum.h"
#include "fuzz_common.h"
#include "proto.h"

#define MAX_INPUT (1u << 20)

struct fuzz_state {
	struct vw_proto_rx rx;
	struct vw_proto_acc acc;
	uint64_t now_ns; /* the guest's clock: advanced per line by an amount the input picks */
};

static void check_round_trip(const struct vw_host_frame *f)
{
	static char buf[VW_PROTO_MAX_FRAME + 1];
	struct vw_host_frame g;
	size_t len;

	if (vw_proto_encode_host(f, buf, sizeof(buf), &len) < 0)
		abort(); /* the decoder accepted what the encoder refuses */
	if (vw_proto_decode_host(buf, len - 1, &g) != VW_PROTO_OK)
		abort();
	if (g.epoch != f->epoch || g.seq != f->seq || g.n_zones != f->n_zones ||
	    strcmp(g.vm_uuid, f->vm_uuid) || strcmp(g.model, f->model) ||
	    strcmp(g.source, f->source) || g.interval_ms != f->interval_ms)
		abort();
	for (size_t i = 0; i < f->n_zones; i++)
		if (memcmp(&g.zones[i], &f->zones[i], sizeof(g.zones[i])) != 0)
			abort();
}

static void on_line(const char *line, size_t len, void *userdata)
{
	struct fuzz_state *st = userdata;
	uint64_t before[VW_ZONE__COUNT][2];

	st->now_ns += (uint64_t)(len % 7) * 500000000ULL; /* 0 to 3 s: bursts, gaps, silences */
	if (vw_proto_rx_line(&st->rx, line, len, st->now_ns) != VW_PROTO_OK)
		return;
	check_round_trip(&st->rx.last);
	for (size_t z = 0; z < VW_ZONE__COUNT; z++) {
		before[z][0] = st->acc.zones[z].idle_uj;
		before[z][1] = st->acc.zones[z].active_uj;
	}
	vw_proto_acc_add(&st->acc, &st->rx);
	for (size_t z = 0; z < VW_ZONE__COUNT; z++)
		if (st->acc.zones[z].idle_uj < before[z][0] ||
		    st->acc.zones[z].active_uj < before[z][1])
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_state st;
	struct vw_framer *fr;
	struct vw_host_frame f;
	struct vw_guest_hello h;
	size_t split;

	if (size > MAX_INPUT)
		return 0;
	memset(&st, 0, sizeof(st));
	if (vw_proto_decode_host((const char *)data, size, &f) == VW_PROTO_OK)
		check_round_trip(&f);
	(void)vw_proto_decode_hello((const char *)data, size, &h);

	fr = vw_framer_new(VW_PROTO_MAX_FRAME);
	if (!fr)
		return 0;
	split = size ? data[0] % (size + 1) : 0;
	vw_framer_feed(fr, data, split, on_line, &st);
	vw_framer_feed(fr, data + split, size - split, on_line, &st);
	vw_framer_free(fr);
	return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: the bpf accountant's live set (shared/engine/cpu_bpf_records.c,
 * vw_bpf_live_set and vw_bpf_live_update), what keeps one record per live process between the
 * walks: a full walk's records replace it, a ran walk's update it. The input: operations, each
 * a byte (bit 0: a ran walk's update, else a full walk's records), a count byte (% 48), then
 * that many 6-byte records: a tgid byte (tgids 1..256: collisions are the point), a flags byte
 * (bit 0: VW_BPF_REC_GONE, a ran walk's only; bit 1: VW_BPF_REC_KTHREAD) and a 4-byte runtime.
 * As the kernel hands them over, a full walk lists a tgid once and a ran walk a live process
 * once (its leader's storage says it was summed): the target makes the input so.
 * Properties, against an oracle of one slot per tgid: after each operation the set is sorted
 * by tgid, one record a tgid, and holds exactly the oracle's records (a full walk's, then each
 * update's live record of its tgid, a tgid with only GONE records dropped) with their runtime,
 * flags and tgid unchanged.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_bpf_records.h"
#include "cpu_time.h"
#include "fuzz_common.h"

#define MAX_OP 48
#define TGIDS 257

static struct {
	struct vw_bpf_task_rec slot[TGIDS];
	bool present[TGIDS];
} o;

static void check(const struct vw_bpf_live *c)
{
	size_t n = 0;

	for (uint32_t t = 1; t < TGIDS; t++)
		n += o.present[t];
	vw_fuzz_assert(c->n == n, "the set holds %zu records, the oracle %zu", c->n, n);
	for (size_t i = 0; i < c->n; i++) {
		const struct vw_bpf_task_rec *r = &c->v[i];

		vw_fuzz_assert(i == 0 || c->v[i - 1].tgid < r->tgid, "not sorted at %zu", i);
		vw_fuzz_assert(r->tgid > 0 && r->tgid < TGIDS && o.present[r->tgid],
			       "tgid %u is not live", r->tgid);
		vw_fuzz_assert(memcmp(r, &o.slot[r->tgid], sizeof(*r)) == 0,
			       "tgid %u: another record than its last walk's", r->tgid);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vw_bpf_live c = { 0 };
	struct vw_bpf_task_rec recs[MAX_OP];
	size_t at = 0;

	memset(&o, 0, sizeof(o));
	while (size - at >= 2) {
		bool update = data[at] & 1, seen[TGIDS] = { false }, live[TGIDS] = { false };
		size_t want = data[at + 1] % MAX_OP, n = 0;
		int r;

		at += 2;
		for (size_t i = 0; i < want && size - at >= 6; i++, at += 6) {
			struct vw_bpf_task_rec x = { 0 };
			uint32_t rt;

			x.tgid = 1u + data[at];
			x.pid = x.tgid;
			x.flags = (data[at + 1] & 2 ? VW_BPF_REC_KTHREAD : 0) |
				  (update && (data[at + 1] & 1) ? VW_BPF_REC_GONE : 0);
			memcpy(&rt, data + at + 2, sizeof(rt));
			x.runtime_ns = rt;
			x.start_ns = rt ^ 0x5555;
			if (!update && seen[x.tgid])
				continue; /* a full walk lists a process once */
			if (update && !(x.flags & VW_BPF_REC_GONE) && live[x.tgid])
				continue; /* a ran walk sums a live process once */
			seen[x.tgid] = true;
			live[x.tgid] |= !(x.flags & VW_BPF_REC_GONE);
			recs[n++] = x;
		}
		if (!update) {
			memset(&o, 0, sizeof(o));
			for (size_t i = 0; i < n; i++) {
				o.slot[recs[i].tgid] = recs[i];
				o.present[recs[i].tgid] = true;
			}
			r = vw_bpf_live_set(&c, recs, n * sizeof(*recs));
		} else {
			for (size_t i = 0; i < n; i++) {
				uint32_t t = recs[i].tgid;

				if (!(recs[i].flags & VW_BPF_REC_GONE)) {
					o.slot[t] = recs[i];
					o.present[t] = true;
				} else if (!live[t]) {
					o.present[t] = false;
				}
			}
			r = vw_bpf_live_update(&c, recs, n * sizeof(*recs));
		}
		vw_fuzz_assert(r == 0, "refused whole records: %d", r);
		check(&c);
	}
	vw_fuzz_assert(vw_bpf_live_set(&c, recs, 1) == -EBADMSG, "a cut record accepted");
	vw_bpf_live_free(&c);
	return 0;
}

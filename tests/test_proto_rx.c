/* SPDX-License-Identifier: Apache-2.0 */
/* Acceptance rules (sequence, epoch, VM, energy), the line framer and the guest accumulator. */
#include "vw_test.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accum.h"
#include "macro.h"
#include "proto.h"

#define UUID "6f1c2a9e-3b4d-4e5f-8a7b-0c1d2e3f4a5b"
#define OTHER_UUID "00000000-0000-4000-8000-000000000001"

static struct vw_host_frame frame(uint64_t epoch, uint64_t seq, uint64_t idle, uint64_t active)
{
	struct vw_host_frame f = {
		.version = VW_PROTO_VERSION, .epoch = epoch, .seq = seq, .vm_uuid = UUID,
		.interval_ms = 5000, .source = "rapl", .n_zones = 2,
		.zones = {{VW_ZONE_PACKAGE, idle, active, 10, 5},
			  {VW_ZONE_DRAM, idle / 10, active / 10, 1, 0.5}},
	};
	return f;
}

static size_t encode(const struct vw_host_frame *f, char *buf, size_t size)
{
	size_t len;

	assert_int_equal(vw_proto_encode_host(f, buf, size, &len), 0);
	return len;
}

/* ---- acceptance ---- */

static void test_rx_rules(void **state)
{
	struct vw_proto_rx rx = {0};
	struct vw_host_frame f;

	(void)state;
	f = frame(100, 5, 1000, 2000);
	assert_int_equal(vw_proto_rx_accept(&rx, &f), VW_PROTO_OK);
	assert_string_equal(rx.expect_uuid, UUID); /* the first frame fixes the VM */
	/* The sequence repeats, then goes back: dropped, counted, last good kept. */
	assert_int_equal(vw_proto_rx_accept(&rx, &f), VW_PROTO_E_SEQ);
	f.seq = 4;
	assert_int_equal(vw_proto_rx_accept(&rx, &f), VW_PROTO_E_SEQ);
	assert_true(rx.rejected[VW_PROTO_E_SEQ] == 2 && rx.last.seq == 5);
	/* Gaps are fine: cumulative counters make lost frames harmless. */
	f = frame(100, 50, 1500, 2500);
	assert_int_equal(vw_proto_rx_accept(&rx, &f), VW_PROTO_OK);
	/* A counter falling within an epoch: dropped; both modes, any zone. */
	f = frame(100, 51, 1499, 2500);
	assert_int_equal(vw_proto_rx_accept(&rx, &f), VW_PROTO_E_ENERGY);
	f = frame(100, 51, 1500, 2600);
	f.zones[1].active_uj = 0;
	assert_int_equal(vw_proto_rx_accept(&rx, &f), VW_PROTO_E_ENERGY);
	/* Another VM's frame. */
	f = frame(100, 52, 1600, 2600);
	memcpy(f.vm_uuid, OTHER_UUID, sizeof(f.vm_uuid));
	assert_int_equal(vw_proto_rx_accept(&rx, &f), VW_PROTO_E_UUID);
	/* A new epoch (host restart): lower seq and lower energy accepted. */
	f = frame(7, 1, 10, 20);
	assert_int_equal(vw_proto_rx_accept(&rx, &f), VW_PROTO_OK);
	assert_true(rx.epoch == 7 && rx.seq == 1 && rx.epochs == 1);
	/* An older epoch value is also "a new epoch": epochs are identities, not clocks. */
	f = frame(100, 1, 0, 0);
	assert_int_equal(vw_proto_rx_accept(&rx, &f), VW_PROTO_OK);
	/* A zone the last frame lacked cannot be checked against it. */
	f = frame(100, 2, 5, 5);
	f.n_zones = 1;
	assert_int_equal(vw_proto_rx_accept(&rx, &f), VW_PROTO_OK);
	f = frame(100, 3, 6, 6);
	assert_int_equal(vw_proto_rx_accept(&rx, &f), VW_PROTO_OK);
	assert_true(rx.accepted == 6);
	assert_true(rx.rejected[VW_PROTO_E_ENERGY] == 2 && rx.rejected[VW_PROTO_E_UUID] == 1);
}

static void test_rx_expected_vm(void **state)
{
	struct vw_proto_rx rx = {.expect_uuid = "6F1C2A9E-3B4D-4E5F-8A7B-0C1D2E3F4A5B"};
	struct vw_host_frame f = frame(1, 1, 1, 1);
	char buf[VW_PROTO_MAX_FRAME];
	size_t len;

	(void)state;
	assert_int_equal(vw_proto_rx_accept(&rx, &f), VW_PROTO_OK); /* any case configured */
	memcpy(f.vm_uuid, OTHER_UUID, sizeof(f.vm_uuid));
	f.seq = 2;
	assert_int_equal(vw_proto_rx_accept(&rx, &f), VW_PROTO_E_UUID);
	/* rx_line counts decode errors as well. */
	assert_int_equal(vw_proto_rx_line(&rx, "{", 1), VW_PROTO_E_SYNTAX);
	assert_true(rx.rejected[VW_PROTO_E_SYNTAX] == 1);
	f = frame(1, 3, 2, 2);
	len = encode(&f, buf, sizeof(buf));
	assert_int_equal(vw_proto_rx_line(&rx, buf, len - 1), VW_PROTO_OK);
	assert_int_equal(vw_proto_rx_line(&rx, buf, len - 1), VW_PROTO_E_SEQ);
	assert_true(rx.accepted == 2);
}

/* ---- framer ---- */

struct lines {
	size_t n;
	char got[16][VW_PROTO_MAX_FRAME];
	size_t len[16];
};

static void collect(const char *line, size_t len, void *userdata)
{
	struct lines *l = userdata;

	assert_true(l->n < ARRAY_SIZE(l->got));
	assert_int_equal(line[len], '\0');
	memcpy(l->got[l->n], line, len + 1);
	l->len[l->n++] = len;
}

static void test_framer_split_everywhere(void **state)
{
	struct vw_host_frame f1 = frame(1, 1, 10, 20), f2 = frame(1, 2, 11, 21);
	char stream[2 * VW_PROTO_MAX_FRAME];
	size_t n1, n2;
	struct lines *l = calloc(1, sizeof(*l));

	(void)state;
	n1 = encode(&f1, stream, sizeof(stream));
	n2 = encode(&f2, stream + n1, sizeof(stream) - n1);
	for (size_t cut = 0; cut <= n1 + n2; cut++) {
		struct vw_framer *fr = vw_framer_new(VW_PROTO_MAX_FRAME);

		l->n = 0;
		vw_framer_feed(fr, stream, cut, collect, l);
		vw_framer_feed(fr, stream + cut, n1 + n2 - cut, collect, l);
		assert_int_equal(l->n, 2);
		assert_int_equal(l->len[0], n1 - 1);
		assert_memory_equal(l->got[0], stream, n1 - 1);
		assert_memory_equal(l->got[1], stream + n1, n2 - 1);
		vw_framer_free(fr);
	}
	/* One byte at a time. */
	struct vw_framer *fr = vw_framer_new(VW_PROTO_MAX_FRAME);
	l->n = 0;
	for (size_t i = 0; i < n1 + n2; i++)
		vw_framer_feed(fr, stream + i, 1, collect, l);
	assert_int_equal(l->n, 2);
	vw_framer_free(fr);
	free(l);
}

static void test_framer_resync_and_limits(void **state)
{
	struct vw_framer *fr = vw_framer_new(16);
	struct lines *l = calloc(1, sizeof(*l));
	static const char a[] = "partial\xff" "one\n\n\nfifteen-bytes-x\nsixteen-bytes-xx\nok\n";
	static const char b[] = "ab\0cd\nef\n";

	(void)state;
	assert_null(vw_framer_new(1));
	assert_int_equal(errno, EINVAL);
	assert_null(vw_framer_new((1u << 20) + 1));
	vw_framer_free(NULL);
	vw_framer_feed(fr, a, sizeof(a) - 1, collect, l);
	/* 0xFF dropped "partial"; blank lines skipped; 15 bytes fit a 16-byte cap, 16 do not. */
	assert_int_equal(l->n, 3);
	assert_string_equal(l->got[0], "one");
	assert_string_equal(l->got[1], "fifteen-bytes-x");
	assert_string_equal(l->got[2], "ok");
	assert_true(vw_framer_oversized(fr) == 1 && vw_framer_resyncs(fr) == 1);
	/* A NUL inside a line makes it invalid; the next line is fine. */
	vw_framer_feed(fr, b, sizeof(b) - 1, collect, l);
	assert_int_equal(l->n, 4);
	assert_string_equal(l->got[3], "ef");
	assert_true(vw_framer_invalid(fr) == 1);
	/* 0xFF also ends an oversized line's drop; reset drops a partial line. */
	vw_framer_feed(fr, "0123456789abcdefXYZ\xffgood\nhalf", 29, collect, l);
	vw_framer_reset(fr);
	vw_framer_feed(fr, "new\n", 4, collect, l);
	assert_int_equal(l->n, 6);
	assert_string_equal(l->got[4], "good");
	assert_string_equal(l->got[5], "new");
	assert_true(vw_framer_oversized(fr) == 2);
	vw_framer_free(fr);
	free(l);
}

static void count_line(const char *line, size_t len, void *userdata)
{
	(void)line;
	(void)len;
	(*(size_t *)userdata)++;
}

/* Floods: 64 MiB with no newline, then many short and long lines; memory never grows. */
static void test_framer_flood(void **state)
{
	struct vw_framer *fr = vw_framer_new(VW_PROTO_MAX_FRAME);
	char *chunk = malloc(1 << 20);
	size_t lines = 0;

	(void)state;
	memset(chunk, 'x', 1 << 20);
	for (int i = 0; i < 64; i++)
		vw_framer_feed(fr, chunk, 1 << 20, count_line, &lines);
	vw_framer_feed(fr, "\nok\n", 4, count_line, &lines);
	assert_int_equal(lines, 1);
	assert_true(vw_framer_oversized(fr) == 1);
	for (size_t i = 0; i < (1 << 20); i += 2)
		chunk[i + 1] = '\n';
	for (int i = 0; i < 8; i++)
		vw_framer_feed(fr, chunk, 1 << 20, count_line, &lines);
	assert_int_equal(lines, 1 + 8 * (1 << 19));
	vw_framer_free(fr);
	free(chunk);
}

/* ---- accumulator ---- */

static void test_acc_epochs(void **state)
{
	struct vw_proto_acc acc = {0};
	struct vw_host_frame f;

	(void)state;
	/* The first frame counts whole: the guest total starts at the host's own figure. */
	f = frame(1, 1, 1000, 2000);
	vw_proto_acc_add(&acc, &f);
	assert_true(acc.zones[VW_ZONE_PACKAGE].idle_uj == 1000);
	assert_true(acc.zones[VW_ZONE_PACKAGE].active_uj == 2000);
	f = frame(1, 2, 1500, 2100);
	vw_proto_acc_add(&acc, &f);
	assert_true(acc.zones[VW_ZONE_PACKAGE].idle_uj == 1500);
	assert_true(acc.zones[VW_ZONE_DRAM].active_uj == 210);
	/* Host restart: counters start again near 0; the guest adds them on top. */
	f = frame(2, 1, 300, 40);
	vw_proto_acc_add(&acc, &f);
	assert_true(acc.zones[VW_ZONE_PACKAGE].idle_uj == 1800);
	assert_true(acc.zones[VW_ZONE_PACKAGE].active_uj == 2140);
	assert_true(acc.restarts == 1);
	f = frame(2, 2, 400, 50);
	vw_proto_acc_add(&acc, &f);
	assert_true(acc.zones[VW_ZONE_PACKAGE].idle_uj == 1900);
	assert_double_near(acc.zones[VW_ZONE_DRAM].active_w, 0.5, 0);
	/* A zone that vanishes and comes back lower within an epoch adds nothing. */
	f = frame(2, 3, 500, 60);
	f.n_zones = 1;
	vw_proto_acc_add(&acc, &f);
	f = frame(2, 4, 600, 70);
	f.zones[1].idle_uj = 1;
	vw_proto_acc_add(&acc, &f);
	assert_true(acc.zones[VW_ZONE_DRAM].idle_uj == 150 + 30 + 10);
	assert_true(acc.falls == 1);
}

/* Random epochs, gaps and lost frames: every total only grows, and sums what the host sent. */
static void test_acc_never_decreases(void **state)
{
	struct vw_proto_acc acc = {0};
	struct vw_proto_rx rx = {0};
	uint64_t s = 11, epoch = 1, seq = 0, idle = 0, active = 0, prev = 0;
	uint64_t done = 0, cur_epoch = 0, last_in_epoch = 0; /* what the host sent, per epoch */

	(void)state;
	for (int i = 0; i < 20000; i++) {
		struct vw_host_frame f;
		uint64_t r = vw_test_rng_range(&s, 0, 99);

		if (r < 3) { /* host restart */
			epoch = vw_test_rng(&s) >> 2;
			seq = vw_test_rng_range(&s, 0, 5);
			idle = active = 0;
		}
		seq += vw_test_rng_range(&s, 1, 3);
		idle += vw_test_rng_range(&s, 0, 5000000);
		active += vw_test_rng_range(&s, 0, 5000000);
		f = frame(epoch, seq, idle, active);
		if (r >= 3 && r < 10)
			continue; /* lost: the next frame's cumulative value covers it */
		if (vw_proto_rx_accept(&rx, &f) != VW_PROTO_OK)
			continue;
		vw_proto_acc_add(&acc, &f);
		assert_true(acc.zones[VW_ZONE_PACKAGE].idle_uj >= prev);
		prev = acc.zones[VW_ZONE_PACKAGE].idle_uj;
		if (f.epoch != cur_epoch) {
			done += last_in_epoch;
			cur_epoch = f.epoch;
		}
		last_in_epoch = idle;
		assert_true(prev == done + last_in_epoch);
	}
	assert_true(prev > 0);
	assert_true(acc.falls == 0);
	assert_true(acc.restarts == rx.epochs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rx_rules),
		cmocka_unit_test(test_rx_expected_vm),
		cmocka_unit_test(test_framer_split_everywhere),
		cmocka_unit_test(test_framer_resync_and_limits),
		cmocka_unit_test(test_framer_flood),
		cmocka_unit_test(test_acc_epochs),
		cmocka_unit_test(test_acc_never_decreases),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

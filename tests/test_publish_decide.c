/* SPDX-License-Identifier: Apache-2.0 */
/*
 * When a VM's frame.json is written (host/publish/publish_share_decide.c), pure: the first
 * frame of a folder, a folder whose opens cannot be seen, a change of zones, a reader within
 * the last minute, the 30 s keep-alive (the next round's lateness included), and the one case
 * that skips: nobody opened it lately and the file is recent. The same rules on a real tmpfs
 * folder with real readers are test_publish_share's share_* cases.
 */
#include "vw_test.h"

#include "publish_priv.h"

#define SEC VW_NSEC_PER_SEC
#define GAP (1100 * VW_NSEC_PER_MSEC) /* a 1 s period, jitter 0.1 */
#define PKG (1u << VW_ZONE_PACKAGE)
#define DRAM (1u << VW_ZONE_DRAM)

/* A folder watched, written at 1000 s with the package zone, never opened. */
static struct vw_pub_frame_state quiet(void)
{
	return (struct vw_pub_frame_state){ .written = true, .watched = true, .zones = PKG,
					    .last_write_ns = 1000 * SEC };
}

static void test_decide_writes(void **state)
{
	struct vw_pub_frame_state s = quiet();

	(void)state;
	/* Nothing of this process in the folder yet (or the last write failed). */
	s.written = false;
	assert_int_equal(vw_pub_frame_decide(&s, PKG, 1001 * SEC, GAP), VW_PUB_FRAME_FIRST);
	/* Opens cannot be seen: every round, as before. */
	s = quiet();
	s.watched = false;
	assert_int_equal(vw_pub_frame_decide(&s, PKG, 1001 * SEC, GAP), VW_PUB_FRAME_UNWATCHED);
	/* dram appeared, or went. */
	s = quiet();
	assert_int_equal(vw_pub_frame_decide(&s, PKG | DRAM, 1001 * SEC, GAP), VW_PUB_FRAME_ZONES);
	assert_int_equal(vw_pub_frame_decide(&s, 0, 1001 * SEC, GAP), VW_PUB_FRAME_ZONES);
	/* Opened in the gap before this round, and for a minute after the last open. */
	s = quiet();
	s.opened = true;
	s.last_open_ns = 1001 * SEC;
	assert_int_equal(vw_pub_frame_decide(&s, PKG, 1001 * SEC, GAP), VW_PUB_FRAME_OPENED);
	s.last_write_ns = 1059 * SEC;
	assert_int_equal(vw_pub_frame_decide(&s, PKG, 1060 * SEC, GAP), VW_PUB_FRAME_OPENED);
	/* A clock that went back (a test's) is no reason to stop. */
	assert_int_equal(vw_pub_frame_decide(&s, PKG, 1000 * SEC, GAP), VW_PUB_FRAME_OPENED);
}

static void test_decide_skips_unread(void **state)
{
	struct vw_pub_frame_state s = quiet();

	(void)state;
	assert_int_equal(vw_pub_frame_decide(&s, PKG, 1001 * SEC, GAP), VW_PUB_FRAME_UNREAD);
	assert_int_equal(vw_pub_frame_decide(&s, PKG, 1028 * SEC, GAP), VW_PUB_FRAME_UNREAD);
	/* Opened over a minute ago: unread again. */
	s.opened = true;
	s.last_open_ns = 1000 * SEC;
	s.last_write_ns = 1050 * SEC;
	assert_int_equal(vw_pub_frame_decide(&s, PKG, 1060 * SEC, GAP), VW_PUB_FRAME_UNREAD);
	assert_string_equal(vw_pub_frame_why_name(VW_PUB_FRAME_UNREAD), "unread");
	assert_string_equal(vw_pub_frame_why_name(VW_PUB_FRAME_OPENED), "opened");
}

/* The file is never older than 30 s: written when the next round, as late as it may come,
 * would find it older. At 1 s rounds that is the round 28.9 s on; at a 30 s period every round. */
static void test_decide_keepalive(void **state)
{
	struct vw_pub_frame_state s = quiet();
	uint64_t at = 1000 * SEC;

	(void)state;
	assert_int_equal(vw_pub_frame_decide(&s, PKG, at + 28800 * VW_NSEC_PER_MSEC, GAP),
			 VW_PUB_FRAME_UNREAD);
	assert_int_equal(vw_pub_frame_decide(&s, PKG, at + 28900 * VW_NSEC_PER_MSEC, GAP),
			 VW_PUB_FRAME_KEEPALIVE);
	assert_int_equal(vw_pub_frame_decide(&s, PKG, at + 45 * SEC, GAP), VW_PUB_FRAME_KEEPALIVE);
	assert_int_equal(vw_pub_frame_decide(&s, PKG, at + 1 * SEC, 33 * SEC),
			 VW_PUB_FRAME_KEEPALIVE);
	assert_int_equal(vw_pub_frame_decide(&s, PKG, at + 5 * SEC, 5500 * VW_NSEC_PER_MSEC),
			 VW_PUB_FRAME_UNREAD);
	assert_int_equal(vw_pub_frame_decide(&s, PKG, at + 25 * SEC, 5500 * VW_NSEC_PER_MSEC),
			 VW_PUB_FRAME_KEEPALIVE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decide_writes),
		cmocka_unit_test(test_decide_skips_unread),
		cmocka_unit_test(test_decide_keepalive),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Whether this round's frame.json is written to a VM's shared folder (docs/publish.md, "When
 * frame.json is written"). Pure: the folder's state and the clock in, a reason out.
 *
 * Opens, not atime: a read through a read-only bind mount (deploy/libvirt/README.md's virtiofs
 * export), a noatime mount or an O_NOATIME open leaves atime alone, but every open of the file
 * through any mount, in any mount namespace, is an inotify IN_OPEN event of the folder's watch
 * (virtiofsd and QEMU's 9p open the host's file for each guest open).
 */
#include "publish_priv.h"

static const char *const why_names[VW_PUB_FRAME__COUNT] = {
	[VW_PUB_FRAME_FIRST] = "first",	      [VW_PUB_FRAME_UNWATCHED] = "unwatched",
	[VW_PUB_FRAME_ZONES] = "zones",	      [VW_PUB_FRAME_OPENED] = "opened",
	[VW_PUB_FRAME_KEEPALIVE] = "keepalive", [VW_PUB_FRAME_UNREAD] = "unread",
};

const char *vw_pub_frame_why_name(enum vw_pub_frame_why why)
{
	return (unsigned)why < VW_PUB_FRAME__COUNT ? why_names[why] : "unknown";
}

enum vw_pub_frame_why vw_pub_frame_decide(const struct vw_pub_frame_state *s, unsigned zones,
					  uint64_t now_ns, uint64_t max_gap_ns)
{
	uint64_t age = now_ns > s->last_write_ns ? now_ns - s->last_write_ns : 0;

	if (!s->written)
		return VW_PUB_FRAME_FIRST;
	if (!s->watched)
		return VW_PUB_FRAME_UNWATCHED;
	if (zones != s->zones)
		return VW_PUB_FRAME_ZONES;
	if (s->opened && (now_ns <= s->last_open_ns ||
			  now_ns - s->last_open_ns < VW_PUB_FRAME_ACTIVE_NS))
		return VW_PUB_FRAME_OPENED;
	/* The file in the folder must never be older than the keep-alive, the next round late
	 * included: written now when skipping would leave it too old by then. */
	if (age >= VW_PUB_FRAME_KEEPALIVE_NS || VW_PUB_FRAME_KEEPALIVE_NS - age <= max_gap_ns)
		return VW_PUB_FRAME_KEEPALIVE;
	return VW_PUB_FRAME_UNREAD;
}

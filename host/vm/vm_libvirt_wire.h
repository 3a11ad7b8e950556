/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The answer of the libvirt helper (vm_libvirt_helper.c, a short-lived child of the daemon) to
 * the daemon (vm_libvirt_child.c): versioned, length-prefixed records on a pipe.
 *
 *   header  "VWLV" u32 version (1) u32 0
 *   record  u8 type, 3 bytes 0, u32 length, then `length` bytes:
 *     'D' an active domain: i32 id, 36 bytes of UUID, its name (at most 255 bytes)
 *     'S' its state: 36 bytes of UUID, u8 enum vw_vm_state
 *     'X' its live XML: 36 bytes of UUID, the document (no NUL; at most VW_LVW_MAX_XML)
 *     'F' the helper failed: i32 errno (positive), a message (at most 255 bytes)
 *     'E' the end: u32 the number of records before it
 * Integers little-endian. An answer without its 'E', with bytes after it, a record cut short,
 * an unknown type, a bad UUID or anything over the limits below is refused whole: the daemon
 * reads it as input, not as trusted data.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "vm_libvirt_priv.h"

#define VW_LVW_VERSION 1
#define VW_LVW_MAX_ANSWER (64u << 20) /* whole answer */
#define VW_LVW_MAX_XML (4u << 20)     /* one domain's XML */
#define VW_LVW_MAX_DOMS 65536u

struct vw_lvw_xml {
	char uuid[VW_UUID_LEN];
	char *xml; /* NUL-terminated */
};

struct vw_lvw_answer {
	int fail;           /* 0, or the helper's -errno ('F') */
	char fail_msg[256]; /* its message */
	struct vw_virt_dom *doms;
	size_t n_doms;
	struct vw_virt_stat *stats;
	size_t n_stats;
	struct vw_lvw_xml *xmls;
	size_t n_xmls;
};

/* A growing byte buffer the helper writes its answer into. */
struct vw_lvw_buf {
	uint8_t *p;
	size_t len, cap;
	int err; /* the first failure (-ENOMEM, -E2BIG): every later put is a no-op */
};

void vw_lvw_begin(struct vw_lvw_buf *b);
void vw_lvw_put_dom(struct vw_lvw_buf *b, const struct vw_virt_dom *d);
void vw_lvw_put_stat(struct vw_lvw_buf *b, const struct vw_virt_stat *s);
void vw_lvw_put_xml(struct vw_lvw_buf *b, const char *uuid, const char *xml, size_t len);
void vw_lvw_put_fail(struct vw_lvw_buf *b, int err, const char *msg);
/* The 'E' record: 0, or the first failure. */
int vw_lvw_end(struct vw_lvw_buf *b);

/*
 * Parse an answer into *ret (zeroed first; free with vw_lvw_answer_free even on failure).
 * 0, -EPROTO (another version), or -EBADMSG (anything malformed); *why says what.
 */
int vw_lvw_parse(const uint8_t *p, size_t len, struct vw_lvw_answer *ret, const char **why);
void vw_lvw_answer_free(struct vw_lvw_answer *a);

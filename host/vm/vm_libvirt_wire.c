/* SPDX-License-Identifier: Apache-2.0 */
/* The libvirt helper's answer: written by the helper, parsed by the daemon (vm_libvirt_wire.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "vm_libvirt_wire.h"
#include "vm_priv.h"

#define HDR_LEN 12
#define REC_HDR 8
#define UUID_RAW 36
#define MAX_NAME 255
#define MAX_MSG 255

static const uint8_t magic[4] = { 'V', 'W', 'L', 'V' };

/* ---- Writing ---- */

static void put_u32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static uint32_t get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Room for n more bytes, or b->err set. */
static uint8_t *room(struct vw_lvw_buf *b, size_t n)
{
	if (b->err)
		return NULL;
	if (n > VW_LVW_MAX_ANSWER - b->len) {
		b->err = -E2BIG;
		return NULL;
	}
	if (b->len + n > b->cap) {
		size_t cap = VW_MAX(b->cap * 2, b->len + n);
		uint8_t *p = realloc(b->p, VW_MAX(cap, (size_t)4096));

		if (!p) {
			b->err = -ENOMEM;
			return NULL;
		}
		b->p = p;
		b->cap = VW_MAX(cap, (size_t)4096);
	}
	b->len += n;
	return b->p + b->len - n;
}

static uint8_t *record(struct vw_lvw_buf *b, char type, size_t len)
{
	uint8_t *p = room(b, REC_HDR + len);

	if (!p)
		return NULL;
	memset(p, 0, REC_HDR);
	p[0] = (uint8_t)type;
	put_u32(p + 4, (uint32_t)len);
	return p + REC_HDR;
}

static size_t records(const struct vw_lvw_buf *b)
{
	size_t n = 0;

	for (size_t o = HDR_LEN; o + REC_HDR <= b->len; o += REC_HDR + get_u32(b->p + o + 4))
		n++;
	return n;
}

void vw_lvw_begin(struct vw_lvw_buf *b)
{
	uint8_t *p;

	*b = (struct vw_lvw_buf){ 0 };
	p = room(b, HDR_LEN);
	if (!p)
		return;
	memcpy(p, magic, 4);
	put_u32(p + 4, VW_LVW_VERSION);
	put_u32(p + 8, 0);
}

void vw_lvw_put_dom(struct vw_lvw_buf *b, const struct vw_virt_dom *d)
{
	size_t nl = strnlen(d->name, VW_MIN(sizeof(d->name), (size_t)MAX_NAME));
	uint8_t *p = record(b, 'D', 4 + UUID_RAW + nl);

	if (!p)
		return;
	put_u32(p, (uint32_t)d->id);
	memcpy(p + 4, d->uuid, UUID_RAW);
	memcpy(p + 4 + UUID_RAW, d->name, nl);
}

void vw_lvw_put_stat(struct vw_lvw_buf *b, const struct vw_virt_stat *s)
{
	uint8_t *p = record(b, 'S', UUID_RAW + 1);

	if (!p)
		return;
	memcpy(p, s->uuid, UUID_RAW);
	p[UUID_RAW] = (uint8_t)s->state;
}

void vw_lvw_put_xml(struct vw_lvw_buf *b, const char *uuid, const char *xml, size_t len)
{
	uint8_t *p;

	if (len > VW_LVW_MAX_XML)
		return; /* left out: the daemon fetches no XML for it, as for a failed fetch */
	p = record(b, 'X', UUID_RAW + len);
	if (!p)
		return;
	memcpy(p, uuid, UUID_RAW);
	memcpy(p + UUID_RAW, xml, len);
}

void vw_lvw_put_fail(struct vw_lvw_buf *b, int err, const char *msg)
{
	size_t ml = strnlen(msg, MAX_MSG);
	uint8_t *p = record(b, 'F', 4 + ml);

	if (!p)
		return;
	put_u32(p, (uint32_t)(err < 0 ? -err : err));
	memcpy(p + 4, msg, ml);
}

int vw_lvw_end(struct vw_lvw_buf *b)
{
	size_t n = b->err ? 0 : records(b);
	uint8_t *p = record(b, 'E', 4);

	if (p)
		put_u32(p, (uint32_t)n);
	return b->err;
}

/* ---- Parsing ---- */

void vw_lvw_answer_free(struct vw_lvw_answer *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->n_xmls; i++)
		free(a->xmls[i].xml);
	free(a->xmls);
	free(a->doms);
	free(a->stats);
	*a = (struct vw_lvw_answer){ 0 };
}

static int bad(const char **why, const char *what)
{
	*why = what;
	return -EBADMSG;
}

static bool uuid_ok(const uint8_t *p, char out[VW_UUID_LEN])
{
	return vw_vm_uuid_canon((const char *)p, UUID_RAW, out) == 0;
}

/* Count each type first: every array is sized once, and limits are checked before any copy. */
static int scan(const uint8_t *p, size_t len, size_t counts[3], const char **why)
{
	size_t o = HDR_LEN, n = 0;

	for (;;) {
		uint32_t rl;
		uint8_t t;

		if (len - o < REC_HDR)
			return bad(why, "answer cut short (no end record)");
		t = p[o];
		rl = get_u32(p + o + 4);
		if (p[o + 1] || p[o + 2] || p[o + 3])
			return bad(why, "record header has non-zero padding");
		if (rl > len - o - REC_HDR)
			return bad(why, "record runs past the end of the answer");
		switch (t) {
		case 'D':
			if (rl < 4 + UUID_RAW || rl > 4 + UUID_RAW + MAX_NAME)
				return bad(why, "domain record of a bad length");
			if (++counts[0] > VW_LVW_MAX_DOMS)
				return bad(why, "more domains than the limit");
			break;
		case 'S':
			if (rl != UUID_RAW + 1)
				return bad(why, "state record of a bad length");
			if (++counts[1] > VW_LVW_MAX_DOMS)
				return bad(why, "more states than the limit");
			break;
		case 'X':
			if (rl < UUID_RAW || rl > UUID_RAW + VW_LVW_MAX_XML)
				return bad(why, "XML record of a bad length");
			if (memchr(p + o + REC_HDR + UUID_RAW, '\0', rl - UUID_RAW))
				return bad(why, "XML record holds a NUL byte");
			if (++counts[2] > VW_LVW_MAX_DOMS)
				return bad(why, "more XML documents than the limit");
			break;
		case 'F':
			if (rl < 4 || rl > 4 + MAX_MSG)
				return bad(why, "failure record of a bad length");
			break;
		case 'E':
			if (rl != 4)
				return bad(why, "end record of a bad length");
			if (get_u32(p + o + REC_HDR) != n)
				return bad(why, "end record counts other records than were sent");
			if (o + REC_HDR + 4 != len)
				return bad(why, "bytes after the end record");
			return 0;
		default:
			return bad(why, "record of an unknown type");
		}
		o += REC_HDR + rl;
		n++;
	}
}

int vw_lvw_parse(const uint8_t *p, size_t len, struct vw_lvw_answer *a, const char **why)
{
	size_t counts[3] = { 0 }, o = HDR_LEN;
	const char *unused;
	int r;

	if (!why)
		why = &unused;
	*why = "";
	*a = (struct vw_lvw_answer){ 0 };
	if (!p || len < HDR_LEN || memcmp(p, magic, 4) != 0)
		return bad(why, "not a libvirt helper answer (no VWLV header)");
	if (get_u32(p + 4) != VW_LVW_VERSION) {
		*why = "the helper speaks another version (a daemon and a binary of different builds?)";
		return -EPROTO;
	}
	if (get_u32(p + 8) != 0)
		return bad(why, "header flags set");
	if (len > VW_LVW_MAX_ANSWER)
		return bad(why, "answer over the size limit");
	r = scan(p, len, counts, why);
	if (r < 0)
		return r;
	a->doms = calloc(counts[0] ? counts[0] : 1, sizeof(*a->doms));
	a->stats = calloc(counts[1] ? counts[1] : 1, sizeof(*a->stats));
	a->xmls = calloc(counts[2] ? counts[2] : 1, sizeof(*a->xmls));
	if (!a->doms || !a->stats || !a->xmls) {
		*why = "out of memory";
		return -ENOMEM;
	}
	for (;;) {
		const uint8_t *q = p + o + REC_HDR;
		uint32_t rl = get_u32(p + o + 4);

		switch (p[o]) {
		case 'D': {
			struct vw_virt_dom *d = &a->doms[a->n_doms];

			if (!uuid_ok(q + 4, d->uuid))
				return bad(why, "domain record with a bad UUID");
			d->id = (int)get_u32(q);
			memcpy(d->name, q + 4 + UUID_RAW, rl - 4 - UUID_RAW);
			d->name[rl - 4 - UUID_RAW] = '\0';
			a->n_doms++;
			break;
		}
		case 'S': {
			struct vw_virt_stat *s = &a->stats[a->n_stats];

			if (!uuid_ok(q, s->uuid))
				return bad(why, "state record with a bad UUID");
			if (q[UUID_RAW] > VW_VM_SHUTOFF)
				return bad(why, "state record with an unknown state");
			s->state = (enum vw_vm_state)q[UUID_RAW];
			a->n_stats++;
			break;
		}
		case 'X': {
			struct vw_lvw_xml *x = &a->xmls[a->n_xmls];

			if (!uuid_ok(q, x->uuid))
				return bad(why, "XML record with a bad UUID");
			x->xml = malloc(rl - UUID_RAW + 1);
			if (!x->xml) {
				*why = "out of memory";
				return -ENOMEM;
			}
			memcpy(x->xml, q + UUID_RAW, rl - UUID_RAW);
			x->xml[rl - UUID_RAW] = '\0';
			a->n_xmls++;
			break;
		}
		case 'F': {
			int e = (int)get_u32(q);

			a->fail = e > 0 && e < 4096 ? -e : -EIO;
			memcpy(a->fail_msg, q + 4, rl - 4);
			a->fail_msg[rl - 4] = '\0';
			break;
		}
		case 'E':
			return 0;
		}
		o += REC_HDR + rl;
	}
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The line framer: bytes from a port in, whole lines out. One buffer of max_line bytes is
 * allocated up front and never grows, whatever the peer sends.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

#define FRAMER_MAX_LINE (1u << 20)

struct vw_framer {
	size_t max_line; /* '\n' included */
	size_t len;      /* bytes of the partial line in buf */
	bool dropping;   /* inside an oversized line: discard up to its '\n' */
	bool has_nul;    /* the partial line holds a NUL byte */
	uint64_t oversized, invalid, resyncs;
	char buf[];      /* max_line bytes: up to max_line - 1 of line and a NUL */
};

struct vw_framer *vw_framer_new(size_t max_line)
{
	struct vw_framer *f;

	if (max_line < 2 || max_line > FRAMER_MAX_LINE) {
		errno = EINVAL;
		return NULL;
	}
	f = calloc(1, sizeof(*f) + max_line);
	if (!f)
		return NULL;
	f->max_line = max_line;
	return f;
}

void vw_framer_free(struct vw_framer *f)
{
	free(f);
}

void vw_framer_reset(struct vw_framer *f)
{
	f->len = 0;
	f->dropping = false;
	f->has_nul = false;
}

static void end_line(struct vw_framer *f, vw_framer_line_fn cb, void *userdata)
{
	if (f->dropping) {
		/* counted when it went over */
	} else if (f->has_nul) {
		f->invalid++;
	} else if (f->len > 0) {
		f->buf[f->len] = '\0';
		cb(f->buf, f->len, userdata);
	}
	vw_framer_reset(f);
}

/* Append a run of ordinary bytes (no '\n', no 0xFF) to the partial line. */
static void append(struct vw_framer *f, const char *p, size_t n)
{
	if (f->dropping)
		return;
	if (n > f->max_line - 1 - f->len) {
		f->oversized++;
		f->dropping = true;
		f->len = 0;
		f->has_nul = false;
		return;
	}
	if (memchr(p, '\0', n))
		f->has_nul = true;
	memcpy(f->buf + f->len, p, n);
	f->len += n;
}

void vw_framer_feed(struct vw_framer *f, const void *data, size_t len, vw_framer_line_fn cb,
		    void *userdata)
{
	const char *p = data, *end = p + len;

	while (p < end) {
		const char *q = memchr(p, '\n', (size_t)(end - p));
		const char *ff = memchr(p, VW_PROTO_RESYNC, (size_t)((q ? q : end) - p));

		if (ff)
			q = ff;
		else if (!q)
			q = end;
		append(f, p, (size_t)(q - p));
		if (q == end)
			break;
		if (*q == '\n') {
			end_line(f, cb, userdata);
		} else {
			f->resyncs++;
			vw_framer_reset(f);
		}
		p = q + 1;
	}
}

struct vw_framer_stats vw_framer_stats(const struct vw_framer *f)
{
	return (struct vw_framer_stats){ f->oversized, f->invalid, f->resyncs };
}

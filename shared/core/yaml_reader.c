/* SPDX-License-Identifier: Apache-2.0 */
/* YAML files read the same way everywhere: see yaml_reader.h. */
#include "yaml_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "yaml_lazy.h"

static int msg(struct vw_yaml *y, int r, const char *fmt, ...) _printf_(3, 4);
static int msg(struct vw_yaml *y, int r, const char *fmt, ...)
{
	va_list ap;

	if (y->err && y->errlen) {
		va_start(ap, fmt);
		vsnprintf(y->err, y->errlen, fmt, ap);
		va_end(ap);
	}
	return r;
}

static int at(struct vw_yaml *y, size_t line, size_t col, const char *text)
{
	return msg(y, -EINVAL, "%s:%zu:%zu: %s", y->path, line + 1, col + 1, text);
}

int vw_yaml_err(struct vw_yaml *y, const yaml_mark_t *m, const char *fmt, ...)
{
	char text[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	return at(y, m->line, m->column, text);
}

static int syntax_err(struct vw_yaml *y)
{
	const yaml_parser_t *p = &y->parser;
	size_t line = 0, col = 0;
	char text[512];

	if (p->error == YAML_MEMORY_ERROR)
		return msg(y, -ENOMEM, "%s: out of memory", y->path);
	if (p->error != YAML_READER_ERROR) {
		int r = vw_yaml_err(y, &p->problem_mark, "YAML syntax error: %s", p->problem);

		if (p->context && y->err)
			snprintf(y->err + strlen(y->err), y->errlen - strlen(y->err),
				 " (%s at line %zu, column %zu)", p->context,
				 p->context_mark.line + 1, p->context_mark.column + 1);
		return r;
	}
	/* The reader reports a byte offset only. */
	for (size_t i = 0; i < p->problem_offset && i < y->len; i++) {
		if (y->buf[i] == '\n') {
			line++;
			col = 0;
		} else if (((unsigned char)y->buf[i] & 0xc0) != 0x80) {
			col++;
		}
	}
	snprintf(text, sizeof(text), "invalid text: %s", p->problem);
	return at(y, line, col, text);
}

static const char *event_anchor(const yaml_event_t *ev)
{
	switch (ev->type) {
	case YAML_SCALAR_EVENT:
		return (const char *)ev->data.scalar.anchor;
	case YAML_SEQUENCE_START_EVENT:
		return (const char *)ev->data.sequence_start.anchor;
	case YAML_MAPPING_START_EVENT:
		return (const char *)ev->data.mapping_start.anchor;
	default:
		return NULL;
	}
}

int vw_yaml_next(struct vw_yaml *y, yaml_event_t *ev)
{
	const char *anchor;

	yaml_event_delete(ev);
	if (!yaml_parser_parse(&y->parser, ev))
		return syntax_err(y);
	if (ev->type == YAML_ALIAS_EVENT)
		return vw_yaml_err(y, &ev->start_mark, "aliases (*%s) are not supported",
				   (const char *)ev->data.alias.anchor);
	anchor = event_anchor(ev);
	if (anchor)
		return vw_yaml_err(y, &ev->start_mark, "anchors (&%s) are not supported", anchor);
	if (ev->type == YAML_SEQUENCE_START_EVENT || ev->type == YAML_MAPPING_START_EVENT) {
		if (++y->depth > VW_YAML_MAX_DEPTH)
			return vw_yaml_err(y, &ev->start_mark,
					   "nested deeper than %u levels: not a file of ours",
					   VW_YAML_MAX_DEPTH);
	} else if ((ev->type == YAML_SEQUENCE_END_EVENT || ev->type == YAML_MAPPING_END_EVENT) &&
		   y->depth > 0) {
		y->depth--;
	}
	return 0;
}

const char *vw_yaml_kind(const yaml_event_t *ev)
{
	switch (ev->type) {
	case YAML_SCALAR_EVENT:
		return "scalar";
	case YAML_SEQUENCE_START_EVENT:
		return "sequence";
	case YAML_MAPPING_START_EVENT:
		return "mapping";
	default:
		return "YAML event";
	}
}

bool vw_yaml_is_null(const yaml_event_t *ev)
{
	const char *v = (const char *)ev->data.scalar.value;

	return ev->type == YAML_SCALAR_EVENT && ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
	       (!*v || strcmp(v, "~") == 0 || strcasecmp(v, "null") == 0);
}

bool vw_yaml_has_nul(const yaml_event_t *ev)
{
	return strlen((const char *)ev->data.scalar.value) != ev->data.scalar.length;
}

int vw_yaml_next_scalar(struct vw_yaml *y, yaml_event_t *ev, yaml_event_type_t end,
			const char *what)
{
	int r = vw_yaml_next(y, ev);

	if (r < 0)
		return r;
	if (ev->type == end)
		return 0;
	if (ev->type != YAML_SCALAR_EVENT)
		return vw_yaml_err(y, &ev->start_mark, "%s must be a scalar, got a %s", what,
				   vw_yaml_kind(ev));
	return 1;
}

/* Read a regular file of at most max bytes into y->buf (a FIFO in its place refused, never
 * waited on: vw_read_regular_at). */
static int file_read(struct vw_yaml *y, const char *what, size_t max)
{
	char *buf = NULL;
	size_t len = 0;
	int r = vw_read_regular_at(AT_FDCWD, y->path, max, &buf, &len);

	if (r == -EINVAL || r == -EISDIR)
		return msg(y, -EINVAL, "%s %s: not a regular file", what, y->path);
	if (r == -EFBIG)
		return msg(y, r, "%s %s: larger than %zu bytes", what, y->path, max);
	if (r < 0)
		return msg(y, r, "cannot read %s %s: %s", what, y->path, strerror(-r));
	y->buf = buf;
	y->len = len;
	return 0;
}

/* Start the parser on y->buf. */
static int parser_start(struct vw_yaml *y)
{
	char why[512];
	int r = vw_yaml_load(why, sizeof(why));

	if (r < 0) {
		vw_yaml_close(y);
		return msg(y, r, "%s: %s", y->path, why);
	}
	if (!yaml_parser_initialize(&y->parser)) {
		vw_yaml_close(y);
		return msg(y, -ENOMEM, "%s: out of memory", y->path);
	}
	y->parser_ready = true;
	yaml_parser_set_input_string(&y->parser, (const unsigned char *)y->buf, y->len);
	return 0;
}

int vw_yaml_open(struct vw_yaml *y, const char *path, const char *what, size_t max_bytes,
		 char *err, size_t errlen)
{
	int r;

	*y = (struct vw_yaml){ .path = path, .err = err, .errlen = errlen };
	r = file_read(y, what, max_bytes);
	if (r < 0)
		return r;
	return parser_start(y);
}

int vw_yaml_open_buf(struct vw_yaml *y, const char *path, const char *what, const char *buf,
		     size_t len, size_t max_bytes, char *err, size_t errlen)
{
	*y = (struct vw_yaml){ .path = path, .err = err, .errlen = errlen };
	if (len > max_bytes)
		return msg(y, -EFBIG, "%s %s: larger than %zu bytes", what, path, max_bytes);
	y->buf = malloc(len + 1);
	if (!y->buf)
		return msg(y, -ENOMEM, "%s: out of memory", path);
	memcpy(y->buf, buf, len);
	y->buf[len] = '\0';
	y->len = len;
	return parser_start(y);
}

void vw_yaml_close(struct vw_yaml *y)
{
	if (y->parser_ready)
		yaml_parser_delete(&y->parser);
	y->parser_ready = false;
	free(y->buf);
	y->buf = NULL;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Encoder and strict decoder of the passthrough frames (PROTOCOL.md). The encoder writes a
 * fixed field order with printf, so its output is byte-exact and testable; it refuses any frame
 * the decoder would reject. The decoder parses with json-c under a depth limit, STRICT and UTF-8
 * validation, and checks the type and range of every field it uses.
 */
#include "proto.h"

#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digits.h"
#include "macro.h"
#include "proto_priv.h"

#define HOST_DEPTH 6  /* frames need 3 levels; a little room for unknown nested fields */
#define HELLO_DEPTH 3
#define HELLO_NAME "virtwatt-guest"

static const char *const error_names[VW_PROTO_E__COUNT] = {
	[VW_PROTO_OK] = "ok",
	[VW_PROTO_E_OVERSIZE] = "oversize",
	[VW_PROTO_E_SYNTAX] = "syntax",
	[VW_PROTO_E_DEPTH] = "depth",
	[VW_PROTO_E_TYPE] = "type",
	[VW_PROTO_E_MISSING] = "missing",
	[VW_PROTO_E_RANGE] = "range",
	[VW_PROTO_E_VERSION] = "version",
	[VW_PROTO_E_SEQ] = "seq",
	[VW_PROTO_E_UUID] = "uuid",
	[VW_PROTO_E_ENERGY] = "energy",
	[VW_PROTO_E_CONFLICT] = "conflict",
	[VW_PROTO_E_SPIKE] = "spike",
	[VW_PROTO_E_INTEGRITY] = "integrity",
	[VW_PROTO_E_RATE] = "rate",
	[VW_PROTO_E_PENDING] = "pending",
};

const char *vw_proto_error_name(enum vw_proto_error e)
{
	if ((unsigned)e >= VW_PROTO_E__COUNT)
		return "unknown";
	return error_names[e];
}

/* ---- value rules shared by the encoder and the decoder ---- */

bool vw_proto_uuid_valid(const char *s)
{
	for (size_t i = 0; i < 36; i++) {
		char c = s[i];

		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (c != '-')
				return false;
		} else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
			return false;
		}
	}
	return s[36] == '\0';
}

static bool source_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= sizeof(((struct vw_host_frame *)0)->source))
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_' ||
		      *s == '-' || *s == '.'))
			return false;
	return true;
}

static bool model_valid(const char *s)
{
	if (strlen(s) >= sizeof(((struct vw_host_frame *)0)->model))
		return false;
	for (; *s; s++)
		if (*s < 0x20 || *s > 0x7e)
			return false;
	return true;
}

/* A zone key we may ignore: short, lowercase identifier. Anything else is hostile. */
static bool zone_key_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 31)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_' || *s == '-'))
			return false;
	return true;
}

static bool watts_valid(double w)
{
	return isfinite(w) && w >= 0 && w <= VW_PROTO_MAX_WATTS;
}

static bool zone_valid(const struct vw_proto_zone *z)
{
	return (unsigned)z->zone < VW_ZONE__WIRE_COUNT && z->idle_uj <= VW_PROTO_MAX_ENERGY_UJ &&
	       z->active_uj <= VW_PROTO_MAX_ENERGY_UJ && watts_valid(z->idle_w) &&
	       watts_valid(z->active_w);
}

static bool frame_valid(const struct vw_host_frame *f)
{
	unsigned seen = 0;

	if ((f->version != 0 && f->version != VW_PROTO_VERSION) || f->epoch > INT64_MAX ||
	    f->seq > INT64_MAX || f->interval_ms < VW_PROTO_MIN_INTERVAL_MS ||
	    f->interval_ms > VW_PROTO_MAX_INTERVAL_MS)
		return false;
	if (!vw_proto_uuid_valid(f->vm_uuid) || !source_valid(f->source) || !model_valid(f->model))
		return false;
	if (f->n_zones == 0 || f->n_zones > VW_ZONE__WIRE_COUNT)
		return false;
	for (size_t i = 0; i < f->n_zones; i++) {
		if (!zone_valid(&f->zones[i]) || (seen & (1u << f->zones[i].zone)))
			return false;
		seen |= 1u << f->zones[i].zone;
	}
	return true;
}

/* ---- encoder ---- */

struct out {
	char *buf;
	size_t size, len;
	bool full;
};

_printf_(2, 3) static void out_printf(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->full)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->len, o->size - o->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= o->size - o->len)
		o->full = true;
	else
		o->len += (size_t)n;
}

/* Append n bytes, keeping room for the NUL (as vsnprintf would: full otherwise). */
static void out_put(struct out *o, const char *s, size_t n)
{
	if (o->full || n >= o->size - o->len) {
		o->full = true;
		return;
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
	o->buf[o->len] = '\0';
}

#define OUT_LIT(o, lit) out_put((o), (lit), sizeof(lit) - 1)

static void out_str(struct out *o, const char *s)
{
	out_put(o, s, strlen(s));
}

/* What "%" PRIu64 prints. */
static void out_u64(struct out *o, uint64_t v)
{
	char d[20];

	out_put(o, d, vw_u64_digits(v, d, 0));
}

/*
 * v as "%.*g" prints it with prec = n, when v is the double nearest k / 10^s for an integer k
 * of at most 15 digits: n is then k's significant digits (trailing zeros stripped), the
 * shortest "%.*g" that reads back as v (no two decimals of 15 digits or fewer read back as the
 * same double). False when v is no such number. Powers rounded to a 0.1 W (or 0.001 W) step
 * are: the printf loop below took most of a frame's encoding.
 */
static bool short_g(double v, char *out, size_t *ret_len)
{
	static const double scales[] = { 1, 10, 100, 1e3, 1e4, 1e5, 1e6 };
	char d[20];
	size_t n, o = 0;
	int s, x;
	double k = 0;

	for (s = 0; s < (int)ARRAY_SIZE(scales); s++) {
		k = nearbyint(v * scales[s]);
		if (k >= 0 && k < 1e15 && k / scales[s] == v)
			break;
	}
	if (s == (int)ARRAY_SIZE(scales))
		return false;
	if (k == 0) {
		out[0] = '0';
		*ret_len = 1;
		return true;
	}
	n = vw_u64_digits((uint64_t)k, d, 0);
	x = (int)n - 1 - s; /* the decimal exponent of the first digit */
	while (d[n - 1] == '0')
		n--;
	if (x < -4 || x >= (int)n) { /* %g's exponent form: d[.ddd]e+XX */
		out[o++] = d[0];
		if (n > 1) {
			out[o++] = '.';
			memcpy(out + o, d + 1, n - 1);
			o += n - 1;
		}
		out[o++] = 'e';
		out[o++] = x < 0 ? '-' : '+';
		x = x < 0 ? -x : x;
		if (x >= 100)
			out[o++] = (char)('0' + x / 100);
		out[o++] = (char)('0' + x / 10 % 10);
		out[o++] = (char)('0' + x % 10);
	} else if (x >= 0) { /* ddd[.ddd]: all n digits, the point after x + 1 of them */
		memcpy(out, d, (size_t)x + 1);
		o = (size_t)x + 1;
		if (n > o) {
			out[o] = '.';
			memcpy(out + o + 1, d + o, n - o);
			o = n + 1;
		}
	} else { /* 0.000ddd */
		out[o++] = '0';
		out[o++] = '.';
		for (int i = -1; i > x; i--)
			out[o++] = '0';
		memcpy(out + o, d, n);
		o += n;
	}
	*ret_len = o;
	return true;
}

/* Shortest %g form that reads back as the same double; never "-0". */
static void out_double(struct out *o, double v)
{
	char tmp[32];
	size_t n;

	if (v == 0)
		v = 0;
	if (short_g(v, tmp, &n)) {
		out_put(o, tmp, n);
		return;
	}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(tmp, sizeof(tmp), "%.*g", prec, v);
		if (strtod(tmp, NULL) == v)
			break;
	}
	out_str(o, tmp);
}

/* The model is printable ASCII (checked); only '"' and '\' need escaping. */
static void out_string(struct out *o, const char *s)
{
	OUT_LIT(o, "\"");
	while (*s) {
		size_t run = strcspn(s, "\"\\");

		out_put(o, s, run);
		s += run;
		if (*s) {
			char esc[2] = { '\\', *s++ };

			out_put(o, esc, 2);
		}
	}
	OUT_LIT(o, "\"");
}

static int out_finish(struct out *o, size_t *ret_len)
{
	if (o->full)
		return -ENOBUFS;
	if (ret_len)
		*ret_len = o->len;
	return 0;
}

int vw_proto_encode_host(const struct vw_host_frame *f, char *buf, size_t size, size_t *ret_len)
{
	struct out o = {.buf = buf, .size = VW_MIN(size, (size_t)VW_PROTO_MAX_FRAME + 1)};

	if (!frame_valid(f))
		return -EINVAL;
	if (size == 0)
		return -ENOBUFS;
	/* Written piece by piece (no printf: a frame per VM per round), byte-identical to
	 * {"v":%u,"epoch":%llu,"seq":%llu,"vm":"%s","interval_ms":%llu,"src":"%s","model":... */
	OUT_LIT(&o, "{\"v\":");
	out_u64(&o, VW_PROTO_VERSION);
	OUT_LIT(&o, ",\"epoch\":");
	out_u64(&o, f->epoch);
	OUT_LIT(&o, ",\"seq\":");
	out_u64(&o, f->seq);
	OUT_LIT(&o, ",\"vm\":\"");
	out_str(&o, f->vm_uuid);
	OUT_LIT(&o, "\",\"interval_ms\":");
	out_u64(&o, f->interval_ms);
	OUT_LIT(&o, ",\"src\":\"");
	out_str(&o, f->source);
	OUT_LIT(&o, "\",\"model\":");
	out_string(&o, f->model);
	OUT_LIT(&o, ",\"zones\":{");
	for (size_t i = 0; i < f->n_zones; i++) {
		const struct vw_proto_zone *z = &f->zones[i];

		if (i)
			OUT_LIT(&o, ",");
		OUT_LIT(&o, "\"");
		out_str(&o, vw_zone_name(z->zone));
		OUT_LIT(&o, "\":{\"idle_uj\":");
		out_u64(&o, z->idle_uj);
		OUT_LIT(&o, ",\"active_uj\":");
		out_u64(&o, z->active_uj);
		OUT_LIT(&o, ",\"idle_w\":");
		out_double(&o, z->idle_w);
		OUT_LIT(&o, ",\"active_w\":");
		out_double(&o, z->active_w);
		OUT_LIT(&o, "}");
	}
	OUT_LIT(&o, "}}\n");
	return out_finish(&o, ret_len);
}

int vw_proto_encode_hello(const struct vw_guest_hello *h, char *buf, size_t size, size_t *ret_len)
{
	struct out o = {.buf = buf, .size = VW_MIN(size, (size_t)VW_PROTO_MAX_HELLO + 1)};

	if ((h->version != 0 && h->version != VW_PROTO_VERSION) || h->ack_seq > INT64_MAX)
		return -EINVAL;
	if (size == 0)
		return -ENOBUFS;
	out_printf(&o, "{\"v\":%u,\"hello\":\"" HELLO_NAME "\",\"ack\":%" PRIu64 "}\n",
		   VW_PROTO_VERSION, h->ack_seq);
	return out_finish(&o, ret_len);
}

/* ---- decoder ---- */

void vw_proto_json_putp(struct json_object **o)
{
	json_object_put(*o);
}

/* An escaped NUL (\u0000) anywhere: json-c would silently cut an object key short at it. */
static bool has_escaped_nul(const char *s, size_t len)
{
	const char *p = s, *end = s + len;

	while ((p = memchr(p, '\\', (size_t)(end - p)))) {
		const char *q = p;

		while (q < end && *q == '\\')
			q++;
		if (((q - p) & 1) && end - q >= 5 && memcmp(q, "u0000", 5) == 0)
			return true;
		p = q;
	}
	return false;
}

/*
 * Parse one line (under cap bytes with its '\n') as a single JSON object: no partial parse, no
 * trailing bytes, no NUL, raw or escaped.
 */
enum vw_proto_error vw_proto_parse_object(const char *line, size_t len, size_t cap, int depth,
					struct json_object **ret)
{
	struct json_tokener *tok;
	struct json_object *obj;
	enum json_tokener_error err;
	size_t end;

	if (len >= cap)
		return VW_PROTO_E_OVERSIZE;
	if (memchr(line, '\0', len) || has_escaped_nul(line, len))
		return VW_PROTO_E_SYNTAX;
	tok = json_tokener_new_ex(depth);
	if (!tok)
		return VW_PROTO_E_SYNTAX; /* ENOMEM: nothing was accepted */
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	obj = json_tokener_parse_ex(tok, line, (int)len);
	err = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (err != json_tokener_success || end != len) {
		json_object_put(obj);
		return err == json_tokener_error_depth ? VW_PROTO_E_DEPTH : VW_PROTO_E_SYNTAX;
	}
	if (!json_object_is_type(obj, json_type_object)) {
		json_object_put(obj);
		return VW_PROTO_E_TYPE;
	}
	*ret = obj;
	return VW_PROTO_OK;
}

enum vw_proto_error vw_proto_get_field(struct json_object *o, const char *key, enum json_type type,
				     struct json_object **ret)
{
	if (!json_object_object_get_ex(o, key, ret))
		return VW_PROTO_E_MISSING;
	/* null parses as a NULL object of type null: a wrong type, like any other. */
	return json_object_is_type(*ret, type) ? VW_PROTO_OK : VW_PROTO_E_TYPE;
}

/* A JSON integer in [0, max] (max <= INT64_MAX). json-c clamps big values silently. */
static enum vw_proto_error int_value(struct json_object *v, uint64_t max, uint64_t *ret)
{
	int64_t i;
	uint64_t u;

	errno = 0;
	i = json_object_get_int64(v);
	if (errno != 0 || i < 0)
		return VW_PROTO_E_RANGE;
	errno = 0;
	u = json_object_get_uint64(v);
	if (errno != 0 || u > max || u != (uint64_t)i)
		return VW_PROTO_E_RANGE;
	*ret = u;
	return VW_PROTO_OK;
}

enum vw_proto_error vw_proto_get_u64(struct json_object *o, const char *key, uint64_t max,
				   uint64_t *ret)
{
	struct json_object *v;
	enum vw_proto_error e = vw_proto_get_field(o, key, json_type_int, &v);

	return e ? e : int_value(v, max, ret);
}

/* Watts: a JSON number (integer or not), finite, in [0, VW_PROTO_MAX_WATTS]. */
static enum vw_proto_error get_watts(struct json_object *o, const char *key, double *ret)
{
	struct json_object *v;
	uint64_t u;
	double d;

	if (!json_object_object_get_ex(o, key, &v))
		return VW_PROTO_E_MISSING;
	if (json_object_is_type(v, json_type_int)) {
		if (int_value(v, (uint64_t)VW_PROTO_MAX_WATTS, &u))
			return VW_PROTO_E_RANGE;
		*ret = (double)u;
		return VW_PROTO_OK;
	}
	if (!json_object_is_type(v, json_type_double))
		return VW_PROTO_E_TYPE;
	d = json_object_get_double(v);
	if (!watts_valid(d))
		return VW_PROTO_E_RANGE;
	*ret = d == 0 ? 0 : d; /* -0.0 passes >= 0; store +0.0 as the encoder writes it */
	return VW_PROTO_OK;
}

/* A string without embedded NULs that fits size and passes check(). */
enum vw_proto_error vw_proto_get_string(struct json_object *o, const char *key, char *buf,
				      size_t size, bool (*check)(const char *))
{
	struct json_object *v;
	enum vw_proto_error e = vw_proto_get_field(o, key, json_type_string, &v);
	const char *s;
	int n;

	if (e)
		return e;
	s = json_object_get_string(v);
	n = json_object_get_string_len(v);
	if (n < 0 || (size_t)n >= size || strlen(s) != (size_t)n || !check(s))
		return VW_PROTO_E_RANGE;
	memcpy(buf, s, (size_t)n + 1);
	return VW_PROTO_OK;
}

enum vw_proto_error vw_proto_get_version(struct json_object *o, unsigned *ret)
{
	uint64_t v;
	enum vw_proto_error e = vw_proto_get_u64(o, "v", INT64_MAX, &v);

	if (e == VW_PROTO_E_RANGE || (e == VW_PROTO_OK && v != VW_PROTO_VERSION))
		return VW_PROTO_E_VERSION;
	*ret = (unsigned)v;
	return e;
}

static int zone_lookup(const char *key)
{
	for (int z = 0; z < VW_ZONE__WIRE_COUNT; z++)
		if (strcmp(key, vw_zone_name((enum vw_zone)z)) == 0)
			return z;
	return -1;
}

static enum vw_proto_error decode_zone(struct json_object *o, struct vw_proto_zone *z)
{
	enum vw_proto_error e;

	if (!json_object_is_type(o, json_type_object))
		return VW_PROTO_E_TYPE;
	if ((e = vw_proto_get_u64(o, "idle_uj", VW_PROTO_MAX_ENERGY_UJ, &z->idle_uj)) ||
	    (e = vw_proto_get_u64(o, "active_uj", VW_PROTO_MAX_ENERGY_UJ, &z->active_uj)) ||
	    (e = get_watts(o, "idle_w", &z->idle_w)) || (e = get_watts(o, "active_w", &z->active_w)))
		return e;
	return VW_PROTO_OK;
}

/* Known zones in wire order; unknown well-formed names ignored; duplicates: json-c keeps the last. */
static enum vw_proto_error decode_zones(struct json_object *o, struct vw_host_frame *f)
{
	struct json_object *zones;
	enum vw_proto_error e = vw_proto_get_field(o, "zones", json_type_object, &zones);

	if (e)
		return e;
	json_object_object_foreach(zones, key, val) {
		int z;

		if (!zone_key_valid(key))
			return VW_PROTO_E_RANGE;
		z = zone_lookup(key);
		if (z < 0)
			continue;
		if (f->n_zones >= VW_ZONE__WIRE_COUNT)
			return VW_PROTO_E_RANGE; /* cannot happen: keys are unique */
		f->zones[f->n_zones].zone = (enum vw_zone)z;
		e = decode_zone(val, &f->zones[f->n_zones]);
		if (e)
			return e;
		f->n_zones++;
	}
	return f->n_zones ? VW_PROTO_OK : VW_PROTO_E_MISSING;
}

static enum vw_proto_error decode_host_fields(struct json_object *o, struct vw_host_frame *f)
{
	enum vw_proto_error e;

	if ((e = vw_proto_get_version(o, &f->version)) ||
	    (e = vw_proto_get_u64(o, "epoch", INT64_MAX, &f->epoch)) ||
	    (e = vw_proto_get_u64(o, "seq", INT64_MAX, &f->seq)) ||
	    (e = vw_proto_get_string(o, "vm", f->vm_uuid, sizeof(f->vm_uuid), vw_proto_uuid_valid)) ||
	    (e = vw_proto_get_u64(o, "interval_ms", VW_PROTO_MAX_INTERVAL_MS, &f->interval_ms)))
		return e;
	if (f->interval_ms < VW_PROTO_MIN_INTERVAL_MS)
		return VW_PROTO_E_RANGE;
	if ((e = vw_proto_get_string(o, "src", f->source, sizeof(f->source), source_valid)) ||
	    (e = vw_proto_get_string(o, "model", f->model, sizeof(f->model), model_valid)))
		return e;
	return decode_zones(o, f);
}

enum vw_proto_error vw_proto_decode_host(const char *line, size_t len, struct vw_host_frame *ret)
{
	_cleanup_(vw_proto_json_putp) struct json_object *obj = NULL;
	struct vw_host_frame f = {0};
	enum vw_proto_error e;

	e = vw_proto_parse_object(line, len, VW_PROTO_MAX_FRAME, HOST_DEPTH, &obj);
	if (e)
		return e;
	e = decode_host_fields(obj, &f);
	if (e)
		return e;
	*ret = f;
	return VW_PROTO_OK;
}

static bool hello_name_valid(const char *s)
{
	return strcmp(s, HELLO_NAME) == 0;
}

enum vw_proto_error vw_proto_decode_hello(const char *line, size_t len, struct vw_guest_hello *ret)
{
	_cleanup_(vw_proto_json_putp) struct json_object *obj = NULL;
	struct vw_guest_hello h = {0};
	char name[sizeof(HELLO_NAME)];
	enum vw_proto_error e;

	e = vw_proto_parse_object(line, len, VW_PROTO_MAX_HELLO, HELLO_DEPTH, &obj);
	if (e)
		return e;
	if ((e = vw_proto_get_version(obj, &h.version)) ||
	    (e = vw_proto_get_string(obj, "hello", name, sizeof(name), hello_name_valid)) ||
	    (e = vw_proto_get_u64(obj, "ack", INT64_MAX, &h.ack_seq)))
		return e;
	*ret = h;
	return VW_PROTO_OK;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* The passthrough codec: golden frames both ways, a hostile-input table, acceptance rules. */
#include "vw_test.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "proto.h"

#define UUID "6f1c2a9e-3b4d-4e5f-8a7b-0c1d2e3f4a5b"
#define OTHER_UUID "00000000-0000-4000-8000-000000000001"

/* The encoder's byte-exact output for golden_frame(); also a hand-checked decode input. */
static const char golden[] =
	"{\"v\":1,\"epoch\":1700000000123456,\"seq\":42,\"vm\":\"" UUID "\","
	"\"interval_ms\":5000,\"src\":\"rapl\",\"model\":\"\",\"zones\":{"
	"\"package\":{\"idle_uj\":123456789,\"active_uj\":987654321,\"idle_w\":12.5,\"active_w\":3.25},"
	"\"dram\":{\"idle_uj\":1000,\"active_uj\":2000,\"idle_w\":1.5,\"active_w\":0.1}}}\n";

static struct vw_host_frame golden_frame(void)
{
	struct vw_host_frame f = {
		.version = VW_PROTO_VERSION,
		.epoch = 1700000000123456ULL,
		.seq = 42,
		.vm_uuid = UUID,
		.interval_ms = 5000,
		.source = "rapl",
		.model = "",
		.n_zones = 2,
		.zones = {{VW_ZONE_PACKAGE, 123456789, 987654321, 12.5, 3.25},
			  {VW_ZONE_DRAM, 1000, 2000, 1.5, 0.1}},
	};
	return f;
}

static void assert_frames_equal(const struct vw_host_frame *a, const struct vw_host_frame *b)
{
	assert_int_equal(a->version, b->version);
	assert_true(a->epoch == b->epoch);
	assert_true(a->seq == b->seq);
	assert_string_equal(a->vm_uuid, b->vm_uuid);
	assert_true(a->interval_ms == b->interval_ms);
	assert_string_equal(a->source, b->source);
	assert_string_equal(a->model, b->model);
	assert_int_equal(a->n_zones, b->n_zones);
	for (size_t i = 0; i < a->n_zones; i++) {
		assert_int_equal(a->zones[i].zone, b->zones[i].zone);
		assert_true(a->zones[i].idle_uj == b->zones[i].idle_uj);
		assert_true(a->zones[i].active_uj == b->zones[i].active_uj);
		assert_true(a->zones[i].idle_w == b->zones[i].idle_w);
		assert_true(a->zones[i].active_w == b->zones[i].active_w);
	}
}

static enum vw_proto_error decode_str(const char *s, struct vw_host_frame *f)
{
	return vw_proto_decode_host(s, strlen(s), f);
}

static void test_golden_encode(void **state)
{
	struct vw_host_frame f = golden_frame();
	char buf[VW_PROTO_MAX_FRAME];
	size_t len;

	(void)state;
	assert_int_equal(vw_proto_encode_host(&f, buf, sizeof(buf), &len), 0);
	assert_int_equal(len, strlen(golden));
	assert_memory_equal(buf, golden, len);
	assert_int_equal(buf[len], '\0');
	/* Too small: -ENOBUFS, at every size short of the frame. */
	for (size_t n = 0; n <= len; n++)
		assert_int_equal(vw_proto_encode_host(&f, buf, n, NULL), -ENOBUFS);
	/* Escaping, integral and tiny watts, version 0 = current, -0 written as 0. */
	f.version = 0;
	snprintf(f.model, sizeof(f.model), "%s", "kepler \"sgd\" \\ v0.7");
	f.n_zones = 1;
	f.zones[0] = (struct vw_proto_zone){VW_ZONE_PSYS, 0, VW_PROTO_MAX_ENERGY_UJ, 7.0, -0.0};
	assert_int_equal(vw_proto_encode_host(&f, buf, sizeof(buf), &len), 0);
	assert_non_null(strstr(buf, "\"model\":\"kepler \\\"sgd\\\" \\\\ v0.7\""));
	assert_non_null(strstr(buf, "\"psys\":{\"idle_uj\":0,\"active_uj\":4611686018427387904,"
				    "\"idle_w\":7,\"active_w\":0}"));
}

/* The encoder as it was written with printf (before 2026-11-27): the wire's reference. */
static void ref_double(char *out, size_t size, double v)
{
	char tmp[32];

	if (v == 0)
		v = 0;
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(tmp, sizeof(tmp), "%.*g", prec, v);
		if (strtod(tmp, NULL) == v)
			break;
	}
	snprintf(out, size, "%s", tmp);
}

static size_t ref_encode(const struct vw_host_frame *f, char *buf, size_t size)
{
	size_t o = 0;

	o += (size_t)snprintf(buf + o, size - o,
			      "{\"v\":%u,\"epoch\":%llu,\"seq\":%llu,\"vm\":\"%s\",\"interval_ms\":%llu,"
			      "\"src\":\"%s\",\"model\":\"",
			      VW_PROTO_VERSION, (unsigned long long)f->epoch,
			      (unsigned long long)f->seq, f->vm_uuid,
			      (unsigned long long)f->interval_ms, f->source);
	for (const char *c = f->model; *c; c++)
		o += (size_t)snprintf(buf + o, size - o, *c == '"' || *c == '\\' ? "\\%c" : "%c", *c);
	o += (size_t)snprintf(buf + o, size - o, "\",\"zones\":{");
	for (size_t i = 0; i < f->n_zones; i++) {
		const struct vw_proto_zone *z = &f->zones[i];
		char iw[32], aw[32];

		ref_double(iw, sizeof(iw), z->idle_w);
		ref_double(aw, sizeof(aw), z->active_w);
		o += (size_t)snprintf(buf + o, size - o,
				      "%s\"%s\":{\"idle_uj\":%llu,\"active_uj\":%llu,\"idle_w\":%s,"
				      "\"active_w\":%s}",
				      i ? "," : "", vw_zone_name(z->zone),
				      (unsigned long long)z->idle_uj, (unsigned long long)z->active_uj,
				      iw, aw);
	}
	o += (size_t)snprintf(buf + o, size - o, "}}\n");
	return o;
}

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* A watts value of every kind the encoder meets: rounded to a step (0.1 W, 0.001 W, 1 W),
 * unrounded, tiny, huge, powers of ten, the limits. */
static double some_watts(uint64_t *rng, size_t i)
{
	static const double special[] = { 0, -0.0, 0.1, 0.5, 1, 5, 10, 100, 120, 1000, 123456.7,
					  999999.9, 1e6, 1e-4, 1e-5, 0.0001234, 0.00001, 3.25,
					  12.5, 7e5, 4.9e-324, 2.2250738585072014e-308, 0.3,
					  0.7000000000000001, 1.0000000000000002, 99.95, 1e5 };
	uint64_t r = splitmix(rng);
	double u = (double)(r >> 11) / (double)(1ULL << 53);

	if (i < ARRAY_SIZE(special))
		return special[i];
	switch (r % 7) {
	case 0:
		return nearbyint(u * 1e7) / 10; /* a 0.1 W step, up to 1 MW */
	case 1:
		return nearbyint(u * 1e4) / 10;
	case 2:
		return nearbyint(u * 1e6) / 1000; /* 0.001 W */
	case 3:
		return nearbyint(u * 1e3);
	case 4:
		return nearbyint(u * 1e3 / 0.3) * 0.3; /* a step no power of ten divides */
	case 5:
		return u * 1e6;
	default:
		return u * pow(10, -(double)(r % 300));
	}
}

/* The encoder writes what the printf encoder wrote, byte for byte, for any frame. */
static void test_encode_matches_printf(void **state)
{
	static const char *const models[] = { "", "kepler \"sgd\" \\ v0.7", "lr-v1", "\\\\\"\"" };
	uint64_t rng = 42;
	char buf[VW_PROTO_MAX_FRAME], ref[VW_PROTO_MAX_FRAME];
	size_t len, ref_len, compared = 0;

	(void)state;
	for (size_t i = 0; i < 30000; i++) {
		struct vw_host_frame f = golden_frame();

		f.epoch = splitmix(&rng) >> (1 + splitmix(&rng) % 63);
		f.seq = i % 3 ? i : splitmix(&rng) >> 1;
		f.interval_ms = 1000 + splitmix(&rng) % 3599001;
		snprintf(f.model, sizeof(f.model), "%s", models[i % ARRAY_SIZE(models)]);
		f.n_zones = 1 + i % 3;
		for (size_t z = 0; z < f.n_zones; z++) {
			f.zones[z].zone = (enum vw_zone)((i + z) % VW_ZONE__WIRE_COUNT);
			f.zones[z].idle_uj = splitmix(&rng) >> 2;
			f.zones[z].active_uj = i % 5 ? splitmix(&rng) % 1000000000 : 0;
			f.zones[z].idle_w = some_watts(&rng, i);
			f.zones[z].active_w = some_watts(&rng, i + 1);
		}
		if (f.n_zones > 1 && f.zones[0].zone == f.zones[1].zone)
			continue;
		if (f.n_zones > 2 && f.zones[2].zone == f.zones[0].zone)
			continue;
		ref_len = ref_encode(&f, ref, sizeof(ref));
		assert_int_equal(vw_proto_encode_host(&f, buf, sizeof(buf), &len), 0);
		if (len != ref_len || memcmp(buf, ref, len) != 0)
			fail_msg("frame %zu:\n got %.*s\nwant %.*s", i, (int)len, buf, (int)ref_len,
				 ref);
		compared++;
	}
	assert_true(compared == 30000);
}

static void test_golden_decode(void **state)
{
	struct vw_host_frame want = golden_frame(), got;
	char buf[VW_PROTO_MAX_FRAME];
	size_t len;

	(void)state;
	assert_int_equal(vw_proto_decode_host(golden, strlen(golden) - 1, &got), VW_PROTO_OK);
	assert_frames_equal(&got, &want);
	/* Hand-written: other order, whitespace, unknown fields, exponent watts, an unknown zone. */
	assert_int_equal(
		decode_str("{ \"zones\" : {\"npu\":{\"x\":1}, \"core\":{\"active_w\":2E1,\"idle_w\":0,"
			   "\"active_uj\":5,\"idle_uj\":6,\"note\":\"hi\"}}, \"model\":\"m\", "
			   "\"src\":\"estimator\", \"interval_ms\":15000, \"vm\":\"" UUID "\", "
			   "\"seq\":0, \"epoch\":0, \"v\":1, \"later\":{\"a\":[1,2,{}]} }",
			   &got),
		VW_PROTO_OK);
	assert_int_equal(got.n_zones, 1);
	assert_int_equal(got.zones[0].zone, VW_ZONE_CORE);
	assert_true(got.zones[0].idle_uj == 6 && got.zones[0].active_uj == 5);
	assert_double_near(got.zones[0].active_w, 20.0, 0);
	assert_string_equal(got.source, "estimator");
	assert_string_equal(got.model, "m");
	assert_true(got.interval_ms == 15000);
	/* -0.0 is not negative, and is stored as +0.0 so that it re-encodes to itself. */
	assert_int_equal(decode_str("{\"v\":1,\"epoch\":1,\"seq\":1,\"vm\":\"" UUID "\","
				    "\"interval_ms\":1000,\"src\":\"rapl\",\"model\":\"\",\"zones\":{"
				    "\"dram\":{\"idle_uj\":1,\"active_uj\":1,\"idle_w\":-0.0,"
				    "\"active_w\":-0}}}",
				    &got),
			 VW_PROTO_OK);
	assert_false(signbit(got.zones[0].idle_w));
	assert_false(signbit(got.zones[0].active_w));
	/* Round trip of random frames: decode(encode(f)) == f, doubles bit-exact. */
	uint64_t s = 7;
	for (int i = 0; i < 500; i++) {
		struct vw_host_frame f = golden_frame();

		f.epoch = vw_test_rng_range(&s, 0, INT64_MAX);
		f.seq = vw_test_rng_range(&s, 0, INT64_MAX);
		f.n_zones = vw_test_rng_range(&s, 1, VW_ZONE__WIRE_COUNT);
		for (size_t z = 0; z < f.n_zones; z++)
			f.zones[z] = (struct vw_proto_zone){
				(enum vw_zone)z, vw_test_rng_range(&s, 0, VW_PROTO_MAX_ENERGY_UJ),
				vw_test_rng_range(&s, 0, VW_PROTO_MAX_ENERGY_UJ),
				vw_test_rng_double(&s, 0, VW_PROTO_MAX_WATTS),
				vw_test_rng_double(&s, 0, 1e-3)};
		assert_int_equal(vw_proto_encode_host(&f, buf, sizeof(buf), &len), 0);
		assert_int_equal(buf[len - 1], '\n');
		assert_int_equal(vw_proto_decode_host(buf, len - 1, &got), VW_PROTO_OK);
		assert_frames_equal(&got, &f);
	}
}

static void test_encode_refuses(void **state)
{
	struct vw_host_frame f;
	char buf[VW_PROTO_MAX_FRAME];

	(void)state;
#define REFUSE(stmt)                                                                               \
	do {                                                                                       \
		f = golden_frame();                                                                \
		stmt;                                                                              \
		assert_int_equal(vw_proto_encode_host(&f, buf, sizeof(buf), NULL), -EINVAL);       \
	} while (0)
	REFUSE(f.version = 2);
	REFUSE(f.seq = (uint64_t)INT64_MAX + 1);
	REFUSE(f.epoch = UINT64_MAX);
	REFUSE(f.interval_ms = 999);
	REFUSE(f.interval_ms = VW_PROTO_MAX_INTERVAL_MS + 1);
	REFUSE(f.vm_uuid[0] = 'A');
	REFUSE(f.vm_uuid[8] = 'x');
	REFUSE(f.source[0] = '\0');
	REFUSE(f.source[0] = 'R');
	REFUSE(f.model[0] = '\n');
	REFUSE(f.n_zones = 0);
	REFUSE(f.n_zones = VW_ZONE__WIRE_COUNT + 1);
	REFUSE(f.zones[1].zone = VW_ZONE_PACKAGE);
	REFUSE(f.zones[1].zone = VW_ZONE__WIRE_COUNT);
	REFUSE(f.zones[0].idle_uj = VW_PROTO_MAX_ENERGY_UJ + 1);
	REFUSE(f.zones[0].active_w = NAN);
	REFUSE(f.zones[0].idle_w = INFINITY);
	REFUSE(f.zones[0].idle_w = -0.5);
	REFUSE(f.zones[0].idle_w = 1e6 + 1);
#undef REFUSE
}

/* ---- the hostile table: the golden frame with one substitution, or a generated line ---- */

struct hostile {
	const char *name;
	const char *from, *to; /* replace the first `from` of the golden frame with `to` */
	enum vw_proto_error want;
};

/* A hostile line made whole by a function (malloc'd, its length in *ret_len). */
struct generated {
	const char *name;
	char *(*gen)(size_t *ret_len);
	enum vw_proto_error want;
};

static char *gen_oversize(size_t *ret_len)
{
	/* A valid frame padded with an unknown field to exactly the cap, '\n' excluded. */
	size_t n = VW_PROTO_MAX_FRAME;
	char *s = malloc(n + 1);
	size_t head = strlen(golden) - 2; /* up to the final '}' */

	memcpy(s, golden, head);
	memcpy(s + head, ",\"pad\":\"", 8);
	memset(s + head + 8, 'x', n - head - 10);
	memcpy(s + n - 2, "\"}", 2);
	s[n] = '\0';
	*ret_len = n;
	return s;
}

static char *gen_just_fits(size_t *ret_len)
{
	char *s = gen_oversize(ret_len);

	memmove(s + *ret_len - 3, s + *ret_len - 2, 3);
	(*ret_len)--;
	return s;
}

static char *gen_deep(size_t *ret_len)
{
	size_t depth = 1000, n = 0;
	char *s = malloc(2 * depth + 16);

	n += (size_t)sprintf(s, "{\"a\":");
	for (size_t i = 0; i < depth; i++)
		s[n++] = '[';
	for (size_t i = 0; i < depth; i++)
		s[n++] = ']';
	s[n++] = '}';
	s[n] = '\0';
	*ret_len = n;
	return s;
}

static char *gen_binary(size_t *ret_len)
{
	uint64_t st = 99;
	char *s = malloc(4096);

	for (size_t i = 0; i < 4096; i++) {
		s[i] = (char)vw_test_rng(&st);
		if (s[i] == '\n')
			s[i] = 'n';
	}
	*ret_len = 4096;
	return s;
}

static char *gen_nul(size_t *ret_len)
{
	char *s = strdup(golden);

	*ret_len = strlen(s) - 1;
	s[30] = '\0';
	return s;
}

static char *gen_many_keys(size_t *ret_len)
{
	char *s = malloc(VW_PROTO_MAX_FRAME);
	size_t n = strlen(golden) - 2;

	memcpy(s, golden, n);
	for (int i = 0; n < VW_PROTO_MAX_FRAME - 40; i++)
		n += (size_t)sprintf(s + n, ",\"k%d\":%d", i, i);
	s[n++] = '}';
	s[n] = '\0';
	*ret_len = n;
	return s;
}

static char *gen_array(size_t *ret_len)
{
	char *s = malloc(strlen(golden) + 2);

	*ret_len = (size_t)sprintf(s, "[%.*s]", (int)strlen(golden) - 1, golden);
	return s;
}

static char *gen_empty(size_t *ret_len)
{
	*ret_len = 0;
	return strdup("");
}

#define P "\"package\":{\"idle_uj\":123456789,\"active_uj\":987654321,\"idle_w\":12.5,\"active_w\":3.25}"

static const struct hostile hostile[] = {
	{"valid", "", "", VW_PROTO_OK},
	{"extra top-level fields ignored", "\"v\":1,", "\"v\":1,\"future\":{\"x\":[1,2]},\"n\":null,",
	 VW_PROTO_OK},
	{"extra zone field ignored", "\"idle_w\":12.5", "\"idle_w\":12.5,\"cstate\":[1]",
	 VW_PROTO_OK},
	{"unknown zone ignored", "\"zones\":{", "\"zones\":{\"npu\":{\"w\":1},", VW_PROTO_OK},
	{"gpu zone is known", "\"zones\":{", "\"zones\":{\"gpu\":{\"w\":1},", VW_PROTO_E_MISSING},
	{"gpu zone", "\"zones\":{",
	 "\"zones\":{\"gpu\":{\"idle_uj\":1,\"active_uj\":2,\"idle_w\":0,\"active_w\":1},",
	 VW_PROTO_OK},
	{"duplicate key: last wins", "\"seq\":42", "\"seq\":1,\"seq\":42", VW_PROTO_OK},
	{"energy at 2^62", "987654321", "4611686018427387904", VW_PROTO_OK},
	{"watts -0.0 (stored as +0)", "\"active_w\":3.25", "\"active_w\":-0.0", VW_PROTO_OK},
	{"watts at the cap", "\"idle_w\":12.5", "\"idle_w\":1e6", VW_PROTO_OK},
	{"nesting within the limit", "\"v\":1,", "\"v\":1,\"x\":{\"y\":[[1]]},", VW_PROTO_OK},
	{"6-deep unknown field", "\"v\":1,", "\"v\":1,\"x\":[[[[[1]]]]],", VW_PROTO_E_DEPTH},
	{"watts NaN", "\"idle_w\":12.5", "\"idle_w\":NaN", VW_PROTO_E_RANGE},
	{"watts Infinity", "\"idle_w\":12.5", "\"idle_w\":Infinity", VW_PROTO_E_RANGE},
	{"watts -Infinity", "\"active_w\":3.25", "\"active_w\":-Infinity", VW_PROTO_E_RANGE},
	{"watts 1e999999", "\"idle_w\":12.5", "\"idle_w\":1e999999", VW_PROTO_E_RANGE},
	{"watts negative", "\"idle_w\":12.5", "\"idle_w\":-1", VW_PROTO_E_RANGE},
	{"watts absurd", "\"idle_w\":12.5", "\"idle_w\":1000001", VW_PROTO_E_RANGE},
	{"watts negative double", "\"active_w\":3.25", "\"active_w\":-0.5", VW_PROTO_E_RANGE},
	{"seq NaN", "\"seq\":42", "\"seq\":NaN", VW_PROTO_E_TYPE},
	{"energy -1", "123456789", "-1", VW_PROTO_E_RANGE},
	{"energy over 2^62", "987654321", "4611686018427387905", VW_PROTO_E_RANGE},
	{"energy 20 digits", "987654321", "99999999999999999999", VW_PROTO_E_RANGE},
	{"energy 2^64-1", "987654321", "18446744073709551615", VW_PROTO_E_RANGE},
	{"seq 2^63", "\"seq\":42", "\"seq\":9223372036854775808", VW_PROTO_E_RANGE},
	{"seq int64 max", "\"seq\":42", "\"seq\":9223372036854775807", VW_PROTO_OK},
	{"epoch below int64", "\"epoch\":1700000000123456", "\"epoch\":-9223372036854775809",
	 VW_PROTO_E_RANGE},
	{"seq as double", "\"seq\":42", "\"seq\":42.0", VW_PROTO_E_TYPE},
	{"seq as exponent", "\"seq\":42", "\"seq\":4e1", VW_PROTO_E_TYPE},
	{"seq as string", "\"seq\":42", "\"seq\":\"42\"", VW_PROTO_E_TYPE},
	{"seq true", "\"seq\":42", "\"seq\":true", VW_PROTO_E_TYPE},
	{"seq leading zero", "\"seq\":42", "\"seq\":042", VW_PROTO_E_SYNTAX},
	{"energy as string", "123456789", "\"123456789\"", VW_PROTO_E_TYPE},
	{"watts as string", "\"idle_w\":12.5", "\"idle_w\":\"12.5\"", VW_PROTO_E_TYPE},
	{"vm null", "\"" UUID "\"", "null", VW_PROTO_E_TYPE},
	{"zones null", "\"zones\":{" P ",", "\"zones\":null,\"z\":{", VW_PROTO_E_TYPE},
	{"zones array", "\"zones\":{" P ",", "\"zones\":[],\"z\":{", VW_PROTO_E_TYPE},
	{"zone not an object", P, "\"package\":5", VW_PROTO_E_TYPE},
	{"zones empty", "\"zones\":{" P ",", "\"zones\":{},\"z\":{", VW_PROTO_E_MISSING},
	{"known zone renamed unknown", "\"package\"", "\"npu\"", VW_PROTO_OK},
	{"zone key hostile", "\"package\"", "\"pack age\"", VW_PROTO_E_RANGE},
	{"zone key empty", "\"package\"", "\"\"", VW_PROTO_E_RANGE},
	{"zone name not canonical", "\"package\"", "\"package-0\"", VW_PROTO_OK},
	{"missing v", "\"v\":1,", "", VW_PROTO_E_MISSING},
	{"missing seq", "\"seq\":42,", "", VW_PROTO_E_MISSING},
	{"missing model", "\"model\":\"\",", "", VW_PROTO_E_MISSING},
	{"missing idle_w", "\"idle_w\":12.5,", "", VW_PROTO_E_MISSING},
	{"unknown version 2", "\"v\":1", "\"v\":2", VW_PROTO_E_VERSION},
	{"version 0", "\"v\":1", "\"v\":0", VW_PROTO_E_VERSION},
	{"version negative", "\"v\":1", "\"v\":-1", VW_PROTO_E_VERSION},
	{"version string", "\"v\":1", "\"v\":\"1\"", VW_PROTO_E_TYPE},
	{"v2 with other fields", "\"v\":1,\"epoch\"", "\"v\":2,\"boot\"", VW_PROTO_E_VERSION},
	{"uuid uppercase", "6f1c2a9e", "6F1C2A9E", VW_PROTO_E_RANGE},
	{"uuid short", "0c1d2e3f4a5b\"", "0c1d2e3f4a5\"", VW_PROTO_E_RANGE},
	{"uuid no dashes", "6f1c2a9e-", "6f1c2a9e0", VW_PROTO_E_RANGE},
	{"uuid with NUL escape", "4a5b\"", "4a\\u0000\"", VW_PROTO_E_SYNTAX},
	{"zone key cut by a NUL escape", "\"package\"", "\"package\\u0000x\"", VW_PROTO_E_SYNTAX},
	{"escaped backslash then u0000 is text", "\"model\":\"\"", "\"model\":\"\\\\u0000\"",
	 VW_PROTO_OK},
	{"escaped quote then \\u0000", "\"model\":\"\"", "\"model\":\"\\\"\\u0000\"",
	 VW_PROTO_E_SYNTAX},
	{"uuid path traversal", "\"" UUID "\"", "\"../../../etc/passwd\"", VW_PROTO_E_RANGE},
	{"src empty", "\"rapl\"", "\"\"", VW_PROTO_E_RANGE},
	{"src uppercase", "\"rapl\"", "\"RAPL\"", VW_PROTO_E_RANGE},
	{"src too long", "\"rapl\"", "\"raplraplraplrapl\"", VW_PROTO_E_RANGE},
	{"model control char", "\"model\":\"\"", "\"model\":\"a\\tb\"", VW_PROTO_E_RANGE},
	{"model overlong UTF-8", "\"model\":\"\"", "\"model\":\"\xc0\xaf\"", VW_PROTO_E_RANGE},
	{"model too long", "\"model\":\"\"",
	 "\"model\":\"0123456789012345678901234567890123456789012345678901234567890123"
	 "456789012345678901234567890123456789012345678901234567890123456789\"", VW_PROTO_E_RANGE},
	{"bad UTF-8", "\"model\":\"\"", "\"model\":\"\xff\xfe\"", VW_PROTO_E_SYNTAX},
	{"interval 0", "5000", "0", VW_PROTO_E_RANGE},
	{"interval under 1 s", "5000", "999", VW_PROTO_E_RANGE},
	{"interval over 1 h", "5000", "3600001", VW_PROTO_E_RANGE},
	{"truncated", "}}}\n", "}", VW_PROTO_E_SYNTAX},
	{"trailing garbage", "}}}\n", "}}}x", VW_PROTO_E_SYNTAX},
	{"two objects", "}}}\n", "}}}{}", VW_PROTO_E_SYNTAX},
	{"comment", "}}}\n", "}}}/**/", VW_PROTO_E_SYNTAX},
	{"trailing comma", "}}}\n", "}},}", VW_PROTO_E_SYNTAX},
	{"unclosed array around", "{\"v\"", "[{\"v\"", VW_PROTO_E_SYNTAX},
};

static const struct generated generated[] = {
	{"line exactly at the cap", gen_just_fits, VW_PROTO_OK},
	{"oversized line", gen_oversize, VW_PROTO_E_OVERSIZE},
	{"1000-deep nesting", gen_deep, VW_PROTO_E_DEPTH},
	{"many keys in the cap", gen_many_keys, VW_PROTO_OK},
	{"top-level array", gen_array, VW_PROTO_E_TYPE},
	{"binary garbage", gen_binary, VW_PROTO_E_SYNTAX},
	{"NUL byte in the line", gen_nul, VW_PROTO_E_SYNTAX},
	{"empty line", gen_empty, VW_PROTO_E_SYNTAX},
};

/* The golden frame (no '\n') with one substitution. */
static char *substitute(const char *from, const char *to, size_t *ret_len)
{
	size_t glen = strlen(golden) - 1;
	const char *at = from[0] ? strstr(golden, from) : golden;
	size_t flen = strlen(from), tlen = strlen(to), pre;
	char *s;

	assert_non_null(at);
	pre = (size_t)(at - golden);
	s = malloc(glen + tlen + 1);
	memcpy(s, golden, pre);
	memcpy(s + pre, to, tlen);
	if (pre + flen <= glen) {
		memcpy(s + pre + tlen, at + flen, glen - pre - flen);
		*ret_len = glen - flen + tlen;
	} else {
		*ret_len = pre + tlen; /* `from` included the '\n' */
	}
	s[*ret_len] = '\0';
	return s;
}

/* Decode one hostile line (then free it): the result is `want`, and a refusal writes nothing. */
static void check_hostile(const char *name, char *line, size_t len, enum vw_proto_error want)
{
	struct vw_host_frame f, before;
	enum vw_proto_error e;

	memset(&f, 0x5a, sizeof(f));
	before = f;
	e = vw_proto_decode_host(line, len, &f);
	if (e != want)
		fail_msg("case '%s': got %s, expected %s", name, vw_proto_error_name(e),
			 vw_proto_error_name(want));
	/* A rejected frame leaves the output untouched: no half values. */
	if (e != VW_PROTO_OK)
		assert_memory_equal(&f, &before, sizeof(f));
	free(line);
}

static void test_hostile_table(void **state)
{
	size_t len;
	char *line;

	(void)state;
	assert_true(ARRAY_SIZE(hostile) + ARRAY_SIZE(generated) >= 30);
	for (size_t i = 0; i < ARRAY_SIZE(hostile); i++) {
		line = substitute(hostile[i].from, hostile[i].to, &len);
		check_hostile(hostile[i].name, line, len, hostile[i].want);
	}
	for (size_t i = 0; i < ARRAY_SIZE(generated); i++) {
		line = generated[i].gen(&len);
		check_hostile(generated[i].name, line, len, generated[i].want);
	}
}

static void test_duplicate_key_last_wins(void **state)
{
	struct vw_host_frame f;

	(void)state;
	assert_int_equal(decode_str("{\"v\":1,\"epoch\":1,\"seq\":5,\"seq\":7,\"vm\":\"" UUID "\","
				    "\"interval_ms\":1000,\"src\":\"rapl\",\"model\":\"\",\"zones\":{"
				    "\"dram\":{\"idle_uj\":1,\"active_uj\":1,\"idle_w\":1,\"active_w\":1},"
				    "\"dram\":{\"idle_uj\":2,\"active_uj\":3,\"idle_w\":4,\"active_w\":5}}}",
				    &f),
			 VW_PROTO_OK);
	assert_true(f.seq == 7);
	assert_int_equal(f.n_zones, 1);
	assert_true(f.zones[0].idle_uj == 2 && f.zones[0].active_uj == 3);
}

static void test_error_names(void **state)
{
	(void)state;
	for (int e = 0; e < VW_PROTO_E__COUNT; e++) {
		assert_non_null(vw_proto_error_name((enum vw_proto_error)e));
		assert_string_not_equal(vw_proto_error_name((enum vw_proto_error)e), "unknown");
	}
	assert_string_equal(vw_proto_error_name(VW_PROTO_E__COUNT), "unknown");
	assert_string_equal(vw_proto_error_name(VW_PROTO_E_DEPTH), "depth");
}

/* ---- hello ---- */

static void test_hello(void **state)
{
	struct vw_guest_hello h = {.version = VW_PROTO_VERSION, .ack_seq = 42}, got;
	char buf[VW_PROTO_MAX_HELLO + 1], big[512];
	size_t len;

	(void)state;
	assert_int_equal(vw_proto_encode_hello(&h, buf, sizeof(buf), &len), 0);
	assert_string_equal(buf, "{\"v\":1,\"hello\":\"virtwatt-guest\",\"ack\":42}\n");
	assert_int_equal(vw_proto_decode_hello(buf, len - 1, &got), VW_PROTO_OK);
	assert_true(got.ack_seq == 42 && got.version == 1);
	h.ack_seq = INT64_MAX;
	assert_int_equal(vw_proto_encode_hello(&h, buf, sizeof(buf), &len), 0);
	assert_true(len <= VW_PROTO_MAX_HELLO);
	assert_int_equal(vw_proto_encode_hello(&h, buf, 10, &len), -ENOBUFS);
	h.ack_seq = (uint64_t)INT64_MAX + 1;
	assert_int_equal(vw_proto_encode_hello(&h, buf, sizeof(buf), &len), -EINVAL);
	h = (struct vw_guest_hello){.version = 3};
	assert_int_equal(vw_proto_encode_hello(&h, buf, sizeof(buf), &len), -EINVAL);

	static const struct {
		const char *line;
		enum vw_proto_error want;
	} cases[] = {
		{"{\"ack\":0,\"hello\":\"virtwatt-guest\",\"v\":1,\"x\":[1]}", VW_PROTO_OK},
		{"{\"v\":2,\"hello\":\"virtwatt-guest\",\"ack\":1}", VW_PROTO_E_VERSION},
		{"{\"v\":1,\"hello\":\"virtwatt\",\"ack\":1}", VW_PROTO_E_RANGE},
		{"{\"v\":1,\"hello\":1,\"ack\":1}", VW_PROTO_E_TYPE},
		{"{\"v\":1,\"hello\":\"virtwatt-guest\"}", VW_PROTO_E_MISSING},
		{"{\"v\":1,\"hello\":\"virtwatt-guest\",\"ack\":-1}", VW_PROTO_E_RANGE},
		{"{\"v\":1,\"hello\":\"virtwatt-guest\",\"ack\":1e3}", VW_PROTO_E_TYPE},
		{"{\"v\":1,\"hello\":\"virtwatt-guest\",\"ack\":1,\"x\":[[[1]]]}", VW_PROTO_E_DEPTH},
		{"{\"v\":1,\"hello\":\"virtwatt-guest\",\"ack\":1", VW_PROTO_E_SYNTAX},
		{"\"hello\"", VW_PROTO_E_TYPE},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		if (vw_proto_decode_hello(cases[i].line, strlen(cases[i].line), &got) != cases[i].want)
			fail_msg("hello case %zu", i);
	/* The budget: 256 bytes with '\n', so a line of 255 bytes at most. */
	memset(big, ' ', sizeof(big));
	len = (size_t)sprintf(big, "{\"v\":1,\"hello\":\"virtwatt-guest\",\"ack\":1");
	big[len] = ' ';
	big[VW_PROTO_MAX_HELLO - 2] = '}';
	assert_int_equal(vw_proto_decode_hello(big, VW_PROTO_MAX_HELLO - 1, &got), VW_PROTO_OK);
	big[VW_PROTO_MAX_HELLO - 2] = ' ';
	big[VW_PROTO_MAX_HELLO - 1] = '}';
	assert_int_equal(vw_proto_decode_hello(big, VW_PROTO_MAX_HELLO, &got), VW_PROTO_E_OVERSIZE);
	assert_int_equal(vw_proto_decode_hello(big, sizeof(big), &got), VW_PROTO_E_OVERSIZE);
}

/* A model frame round trip; a tampered, oversized, misnamed or mis-kinded one refused. */
static void test_model_frame(void **state)
{
	static struct vw_model_frame m, got;
	static char buf[VW_PROTO_MAX_FRAME + 64], big[VW_PROTO_MAX_FRAME + 64];
	const char *body = "{\"model_name\":\"host-vm\",\"All_Weights\":{\"Bias_Weight\":12.5,"
			   "\"Numerical_Variables\":{\"bpf_cpu_time_ms\":{\"weight\":0.01}}}}";
	struct vw_host_frame f = golden_frame();
	size_t len;
	const char *p;
	char *q;

	(void)state;
	m = (struct vw_model_frame){ .epoch = 17, .mseq = 3, .name = "host:vm:linear" };
	memcpy(m.vm_uuid, f.vm_uuid, sizeof(m.vm_uuid));
	m.body_len = strlen(body);
	memcpy(m.body, body, m.body_len + 1);
	assert_int_equal(vw_proto_encode_model(&m, buf, sizeof(buf), &len), 0);
	assert_int_equal(buf[len - 1], '\n');
	assert_true(vw_proto_line_is_model(buf, len - 1));
	assert_int_equal(vw_proto_decode_model(buf, len - 1, &got), VW_PROTO_OK);
	assert_string_equal(got.body, body);
	assert_int_equal(got.body_len, strlen(body));
	assert_int_equal(got.mseq, 3);
	assert_int_equal(got.epoch, 17);
	assert_string_equal(got.name, "host:vm:linear");
	assert_string_equal(got.sha256, m.sha256);
	/* An energy frame is not a model frame, nor is garbage. */
	assert_int_equal(vw_proto_encode_host(&f, big, sizeof(big), &len), 0);
	assert_false(vw_proto_line_is_model(big, len - 1));
	p = "{\"kind\":\"model\"";
	assert_false(vw_proto_line_is_model(p, strlen(p)));
	/* Tampered: one weight changed in transit, the hash left as it was. */
	assert_int_equal(vw_proto_encode_model(&m, buf, sizeof(buf), &len), 0);
	q = strstr(buf, "12.5");
	assert_non_null(q);
	q[0] = '9';
	assert_int_equal(vw_proto_decode_model(buf, len - 1, &got), VW_PROTO_E_INTEGRITY);
	/* The hash altered instead. */
	assert_int_equal(vw_proto_encode_model(&m, buf, sizeof(buf), &len), 0);
	q = strstr(buf, m.sha256);
	assert_non_null(q);
	q[0] = q[0] == 'a' ? 'b' : 'a';
	assert_int_equal(vw_proto_decode_model(buf, len - 1, &got), VW_PROTO_E_INTEGRITY);
	/* Oversized: a body past the cap cannot be encoded, and a line past the frame cap is
	 * refused before it is parsed. */
	memset(m.body, ' ', VW_PROTO_MAX_MODEL + 1);
	m.body_len = VW_PROTO_MAX_MODEL + 1;
	assert_int_equal(vw_proto_encode_model(&m, buf, sizeof(buf), &len), -EINVAL);
	memset(big, ' ', sizeof(big));
	memcpy(big, "{\"v\":1,\"kind\":\"model\",\"body\":\"", 29);
	memcpy(big + VW_PROTO_MAX_FRAME, "\"}", 2);
	assert_int_equal(vw_proto_decode_model(big, VW_PROTO_MAX_FRAME + 2, &got),
			 VW_PROTO_E_OVERSIZE);
	/* A name outside its alphabet; a body that is not a string; another kind. */
	m.body_len = strlen(body);
	memcpy(m.body, body, m.body_len + 1);
	snprintf(m.name, sizeof(m.name), "../x");
	assert_int_equal(vw_proto_encode_model(&m, buf, sizeof(buf), &len), -EINVAL);
	p = "{\"v\":1,\"kind\":\"model\",\"epoch\":1,\"vm\":\"6f1c2a9e-3b4d-4e5f-8a7b-0c1d2e3f4a5b\","
	    "\"mseq\":1,\"name\":\"a\",\"sha256\":\"00000000000000000000000000000000000000000000"
	    "00000000000000000000\",\"body\":{\"x\":1}}";
	assert_int_equal(vw_proto_decode_model(p, strlen(p), &got), VW_PROTO_E_TYPE);
	p = "{\"v\":1,\"kind\":\"frame\"}";
	assert_int_equal(vw_proto_decode_model(p, strlen(p), &got), VW_PROTO_E_RANGE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_encode),
		cmocka_unit_test(test_golden_decode),
		cmocka_unit_test(test_encode_refuses),
		cmocka_unit_test(test_hostile_table),
		cmocka_unit_test(test_duplicate_key_last_wins),
		cmocka_unit_test(test_error_names),
		cmocka_unit_test(test_hello),
		cmocka_unit_test(test_model_frame),
		cmocka_unit_test(test_encode_matches_printf),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The libvirt helper's answer (host/vm/vm_libvirt_wire.c) as the daemon reads it: a whole answer
 * round trip; every prefix of it refused as cut short; each malformation named in the format
 * refused with its reason (bad header, version, padding, lengths, UUIDs, states, NUL bytes,
 * counts, bytes after the end, limits); and 20,000 seeded random mutations of a real answer
 * that never crash or leak (ASan) and either parse within the limits or are refused with a
 * reason. tests/fuzz/fuzz_lvwire.c explores further with libFuzzer.
 */
#include "vw_test.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vm_libvirt_wire.h"

#define U1 "4dea22b3-1d52-d8f3-2516-782e98ab3fa0"
#define U2 "6695EB01-F6A4-8304-79AA-97F2502E193F"

static void answer(struct vw_lvw_buf *b)
{
	struct vw_virt_dom d1 = { .uuid = U1, .name = "web-01", .id = 7 };
	struct vw_virt_dom d2 = { .uuid = U2, .name = "db", .id = 12 };
	struct vw_virt_stat s1 = { .uuid = U1, .state = VW_VM_RUNNING };
	struct vw_virt_stat s2 = { .uuid = U2, .state = VW_VM_PAUSED };
	static const char xml[] = "<domain type='kvm'><name>web-01</name></domain>";

	vw_lvw_begin(b);
	vw_lvw_put_dom(b, &d1);
	vw_lvw_put_xml(b, U1, xml, strlen(xml));
	vw_lvw_put_dom(b, &d2);
	vw_lvw_put_stat(b, &s1);
	vw_lvw_put_stat(b, &s2);
	assert_int_equal(vw_lvw_end(b), 0);
}

static int parse(const uint8_t *p, size_t len, const char **why)
{
	struct vw_lvw_answer a;
	int r = vw_lvw_parse(p, len, &a, why);

	vw_lvw_answer_free(&a);
	return r;
}

static void test_round_trip(void **state)
{
	struct vw_lvw_buf b;
	struct vw_lvw_answer a;
	const char *why;

	(void)state;
	answer(&b);
	assert_int_equal(vw_lvw_parse(b.p, b.len, &a, &why), 0);
	assert_int_equal(a.fail, 0);
	assert_int_equal(a.n_doms, 2);
	assert_string_equal(a.doms[0].uuid, U1);
	assert_string_equal(a.doms[0].name, "web-01");
	assert_int_equal(a.doms[0].id, 7);
	assert_string_equal(a.doms[1].uuid, "6695eb01-f6a4-8304-79aa-97f2502e193f"); /* canonical */
	assert_int_equal(a.doms[1].id, 12);
	assert_int_equal(a.n_stats, 2);
	assert_int_equal(a.stats[1].state, VW_VM_PAUSED);
	assert_int_equal(a.n_xmls, 1);
	assert_string_equal(a.xmls[0].xml, "<domain type='kvm'><name>web-01</name></domain>");
	vw_lvw_answer_free(&a);

	/* A failure travels with its errno and message. */
	free(b.p);
	vw_lvw_begin(&b);
	vw_lvw_put_fail(&b, -ECONNREFUSED, "Failed to connect socket to '/x': No such file");
	assert_int_equal(vw_lvw_end(&b), 0);
	assert_int_equal(vw_lvw_parse(b.p, b.len, &a, &why), 0);
	assert_int_equal(a.fail, -ECONNREFUSED);
	assert_string_equal(a.fail_msg, "Failed to connect socket to '/x': No such file");
	vw_lvw_answer_free(&a);
	free(b.p);
}

/* Every prefix of an answer, the empty one included, is refused: no end record. */
static void test_truncated(void **state)
{
	struct vw_lvw_buf b;
	const char *why;

	(void)state;
	answer(&b);
	for (size_t len = 0; len < b.len; len++) {
		assert_int_equal(parse(b.p, len, &why), -EBADMSG);
		assert_true(why[0]);
	}
	assert_int_equal(parse(NULL, 0, &why), -EBADMSG);
	free(b.p);
}

struct bad {
	const char *what;
	size_t at;        /* byte to change */
	uint8_t value;
	int want;
	const char *why; /* part of the reason */
};

/* Offsets in answer(): header 0..11; 'D' web-01 at 12 (len 46: id 20, UUID 24, name 60);
 * 'X' at 66 (len 36 + 47: UUID 74, document 110). */
static const struct bad bads[] = {
	{ "magic", 0, 'X', -EBADMSG, "header" },
	{ "version", 4, 2, -EPROTO, "version" },
	{ "flags", 8, 1, -EBADMSG, "flags" },
	{ "padding", 13, 1, -EBADMSG, "padding" },
	{ "type", 12, 'Q', -EBADMSG, "unknown type" },
	{ "length past the end", 17, 0x10, -EBADMSG, "past the end" },
	{ "domain length short", 16, 10, -EBADMSG, "" },
	{ "UUID", 24, 'g', -EBADMSG, "UUID" },
	{ "UUID dash", 32, 'a', -EBADMSG, "UUID" },
	{ "NUL in XML", 115, 0, -EBADMSG, "NUL" },
};

static void test_malformed(void **state)
{
	struct vw_lvw_buf b;

	(void)state;
	answer(&b);
	assert_int_equal(b.p[12], 'D');
	assert_int_equal(b.p[66], 'X');
	for (size_t i = 0; i < ARRAY_SIZE(bads); i++) {
		uint8_t *p = malloc(b.len);
		const char *why = "";

		memcpy(p, b.p, b.len);
		p[bads[i].at] = bads[i].value;
		if (parse(p, b.len, &why) != bads[i].want || !strstr(why, bads[i].why))
			fail_msg("%s: got \"%s\"", bads[i].what, why);
		free(p);
	}
	/* An unknown state; a count in the end record that is not the records'; a byte after it. */
	{
		struct vw_lvw_buf c;
		struct vw_virt_stat s = { .uuid = U1, .state = VW_VM_RUNNING };
		const char *why;
		uint8_t *p;

		vw_lvw_begin(&c);
		vw_lvw_put_stat(&c, &s);
		assert_int_equal(vw_lvw_end(&c), 0);
		c.p[12 + 8 + 36] = 9;
		assert_int_equal(parse(c.p, c.len, &why), -EBADMSG);
		assert_non_null(strstr(why, "state"));
		c.p[12 + 8 + 36] = 0;
		c.p[c.len - 4] = 5;
		assert_int_equal(parse(c.p, c.len, &why), -EBADMSG);
		assert_non_null(strstr(why, "counts"));
		c.p[c.len - 4] = 1;
		assert_int_equal(parse(c.p, c.len, &why), 0);
		p = malloc(c.len + 1);
		memcpy(p, c.p, c.len);
		p[c.len] = 0;
		assert_int_equal(parse(p, c.len + 1, &why), -EBADMSG);
		assert_non_null(strstr(why, "after the end"));
		free(p);
		free(c.p);
	}
	free(b.p);
}

/* Limits: an XML record over 4 MiB is refused (the writer leaves such a document out), and so
 * is an answer over 64 MiB; a name over 255 bytes. */
static void test_limits(void **state)
{
	size_t big = VW_LVW_MAX_XML + 1;
	struct vw_lvw_buf b;
	struct vw_lvw_answer a;
	char *doc = malloc(big);
	const char *why;

	(void)state;
	memset(doc, 'x', big);
	vw_lvw_begin(&b);
	vw_lvw_put_xml(&b, U1, doc, big); /* left out */
	vw_lvw_put_xml(&b, U1, doc, big - 1);
	assert_int_equal(vw_lvw_end(&b), 0);
	assert_int_equal(vw_lvw_parse(b.p, b.len, &a, &why), 0);
	assert_int_equal(a.n_xmls, 1);
	assert_int_equal(strlen(a.xmls[0].xml), big - 1);
	vw_lvw_answer_free(&a);
	/* The same record grown by one byte by hand. */
	{
		size_t len = b.len + 1;
		uint8_t *p = calloc(1, len);

		memcpy(p, b.p, 12 + 8 + 36 + big - 1);
		p[16] = (uint8_t)(36 + big);
		p[17] = (uint8_t)((36 + big) >> 8);
		p[18] = (uint8_t)((36 + big) >> 16);
		memset(p + 12 + 8 + 36, 'x', big);
		memcpy(p + len - 12, b.p + b.len - 12, 12);
		assert_int_equal(parse(p, len, &why), -EBADMSG);
		assert_non_null(strstr(why, "XML record of a bad length"));
		free(p);
	}
	free(b.p);
	/* Over 64 MiB in all: the writer stops (-E2BIG), the reader refuses. */
	vw_lvw_begin(&b);
	for (int i = 0; i < 17 && !b.err; i++)
		vw_lvw_put_xml(&b, U1, doc, big - 1);
	assert_int_equal(vw_lvw_end(&b), -E2BIG);
	free(b.p);
	{
		size_t len = (size_t)VW_LVW_MAX_ANSWER + 1;
		uint8_t *p = calloc(1, len);

		vw_lvw_begin(&b);
		assert_int_equal(vw_lvw_end(&b), 0);
		memcpy(p, b.p, 12);
		assert_int_equal(parse(p, len, &why), -EBADMSG);
		assert_non_null(strstr(why, "size limit"));
		free(p);
		free(b.p);
	}
	/* A domain name over 255 bytes. */
	{
		uint8_t p[12 + 8 + 4 + 36 + 256 + 12] = { 0 };
		size_t o = 12;

		vw_lvw_begin(&b);
		memcpy(p, b.p, 12);
		free(b.p);
		p[o] = 'D';
		p[o + 4] = (uint8_t)(4 + 36 + 256);
		p[o + 5] = (uint8_t)((4 + 36 + 256) >> 8);
		memcpy(p + o + 12, U1, 36);
		memset(p + o + 48, 'n', 256);
		o += 8 + 4 + 36 + 256;
		p[o] = 'E';
		p[o + 4] = 4;
		p[o + 8] = 1;
		assert_int_equal(parse(p, sizeof(p), &why), -EBADMSG);
		assert_non_null(strstr(why, "domain record of a bad length"));
	}
	free(doc);
}

/* Seeded random mutations of a real answer: flips, cuts, splices, inserted runs. */
static void test_mutations(void **state)
{
	struct vw_lvw_buf b;
	unsigned seed = 33;
	size_t accepted = 0;

	(void)state;
	answer(&b);
	for (int round = 0; round < 20000; round++) {
		size_t len = b.len, cap = b.len + 64;
		uint8_t *p = malloc(cap);
		struct vw_lvw_answer a;
		const char *why = "";
		int r, k = 1 + rand_r(&seed) % 4;

		memcpy(p, b.p, len);
		while (k--) {
			size_t at = (size_t)rand_r(&seed) % len;

			switch (rand_r(&seed) % 4) {
			case 0:
				p[at] ^= (uint8_t)(1u << (rand_r(&seed) % 8));
				break;
			case 1:
				p[at] = (uint8_t)rand_r(&seed);
				break;
			case 2:
				len = at ? at : 1;
				break;
			default:
				if (len + 8 <= cap) {
					memmove(p + at + 8, p + at, len - at);
					memset(p + at, rand_r(&seed) & 0xff, 8);
					len += 8;
				}
			}
		}
		r = vw_lvw_parse(p, len, &a, &why);
		if (r == 0) {
			accepted++;
			for (size_t i = 0; i < a.n_doms; i++)
				assert_int_equal(strlen(a.doms[i].uuid), 36);
			for (size_t i = 0; i < a.n_stats; i++)
				assert_true(a.stats[i].state <= VW_VM_SHUTOFF);
		} else {
			assert_true(r == -EBADMSG || r == -EPROTO);
			assert_true(why[0]);
		}
		vw_lvw_answer_free(&a);
		free(p);
	}
	print_message("# %zu of 20000 mutations accepted\n", accepted);
	free(b.p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_mutations),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

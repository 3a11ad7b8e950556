/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one JSON string escaper (json.h's vw_json_escape, used by the guest's series state, the
 * OTLP/JSON writer and the probe endpoints): each escape, UTF-8 as it is, invalid bytes as
 * U+FFFD or kept, the length without writing, and json-c reading back what it wrote.
 */
#include "vw_test.h"

#include <string.h>

#include "json.h"

/* s[0, n) escaped: the text (NUL-terminated), checking the dry run's length and the bound. */
static char *escaped_as(const char *s, size_t n, enum vw_json_invalid invalid)
{
	static char out[256];
	size_t len = vw_json_escape(s, n, NULL, invalid);

	assert_true(len <= VW_JSON_ESCAPED_MAX(n));
	memset(out, '#', sizeof(out));
	assert_int_equal(vw_json_escape(s, n, out, invalid), len);
	assert_int_equal(out[len], '#'); /* nothing written past its length */
	out[len] = '\0';
	return out;
}

static char *escaped(const char *s, size_t n)
{
	return escaped_as(s, n, VW_JSON_INVALID_REPLACE);
}

#define ESC(lit) escaped(lit, sizeof(lit) - 1)
#define ESC_KEEP(lit) escaped_as(lit, sizeof(lit) - 1, VW_JSON_INVALID_KEEP)

static void test_escapes(void **state)
{
	(void)state;
	assert_string_equal(ESC(""), "");
	assert_string_equal(ESC("plain text {a=\"x\"}"), "plain text {a=\\\"x\\\"}");
	assert_string_equal(ESC("a\\b"), "a\\\\b");
	assert_string_equal(ESC("\b\f\n\r\t"), "\\b\\f\\n\\r\\t");
	assert_string_equal(ESC("\x01x\x1f\x0b"), "\\u0001x\\u001f\\u000b");
	/* A NUL inside the n bytes is a control byte like any other. */
	assert_string_equal(ESC("a\0b"), "a\\u0000b");
	/* DEL and the printable ASCII: as they are ('/' too: json-c's "\/" is optional). */
	assert_string_equal(ESC("~\x7f/ 'x'"), "~\x7f/ 'x'");
}

static void test_utf8(void **state)
{
	(void)state;
	/* Two-, three- and four-byte sequences pass through whole. */
	assert_string_equal(ESC("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\x8b"),
			    "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\x8b");
	/* Each byte that starts no valid sequence: U+FFFD, the rest of the text kept. */
	assert_string_equal(ESC("a\xffz"), "a\xef\xbf\xbdz");
	assert_string_equal(ESC("\xc0\xaf"), "\xef\xbf\xbd\xef\xbf\xbd");   /* overlong '/' */
	assert_string_equal(ESC("\xed\xa0\x80"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"); /* a surrogate */
	/* A sequence cut by n, though the byte after it would complete it. */
	assert_string_equal(escaped("x\xc3\xa9", 2), "x\xef\xbf\xbd");
	assert_string_equal(ESC("\x80\""), "\xef\xbf\xbd\\\"");
	/* Kept as they are when asked (the series state: its keys must read back the same),
	 * the escapes around them unchanged. */
	assert_string_equal(ESC_KEEP("a\xff\"\xc0\xaf\n\xc3\xa9"), "a\xff\\\"\xc0\xaf\\n\xc3\xa9");
	assert_string_equal(escaped_as("x\xc3\xa9", 2, VW_JSON_INVALID_KEEP), "x\xc3");
}

/* Every byte value, escaped and quoted, is one JSON string that json-c reads back (strict,
 * validating UTF-8) as the text, with U+FFFD for each invalid byte. */
static void test_json_c_reads_it_back(void **state)
{
	char in[256], text[VW_JSON_ESCAPED_MAX(256) + 3];
	struct json_tokener *tok = vw_json_tokener_new(4);
	struct json_object *o;
	size_t n;

	(void)state;
	assert_non_null(tok);
	for (int i = 0; i < 256; i++)
		in[i] = (char)i;
	text[0] = '"';
	n = 1 + vw_json_escape(in, sizeof(in), text + 1, VW_JSON_INVALID_REPLACE);
	text[n++] = '"';
	o = vw_json_parse(tok, text, n, json_type_string);
	assert_non_null(o);
	assert_int_equal(json_object_get_string_len(o), 128 + 128 * 3);
	assert_memory_equal(json_object_get_string(o), in, 128);
	for (int i = 128; i < 256; i++)
		assert_memory_equal(json_object_get_string(o) + 128 + 3 * (i - 128), "\xef\xbf\xbd", 3);
	json_object_put(o);
	json_tokener_free(tok);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escapes),
		cmocka_unit_test(test_utf8),
		cmocka_unit_test(test_json_c_reads_it_back),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

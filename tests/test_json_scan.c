/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The tree-less JSON walk (json_scan.h): spans of members and elements, exactly; malformed
 * texts refused before anything is handed out; depth.
 */
#include "vw_test.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "json_scan.h"

struct seen {
	char text[1024];
	int n;
	int stop_at;
};

static int member(const char *key, size_t key_len, struct vw_json_span v, void *ud)
{
	struct seen *s = ud;
	size_t used = strlen(s->text);

	snprintf(s->text + used, sizeof(s->text) - used, "%s%.*s=%.*s", s->n ? "|" : "",
		 (int)key_len, key, (int)v.len, v.p);
	return ++s->n == s->stop_at ? 7 : 0;
}

static int element(struct vw_json_span v, void *ud)
{
	return member("", 0, v, ud);
}

static void test_spans(void **state)
{
	const char *doc = " {\"kind\" : \"PodList\", \"items\":[ {\"a\":[1,2]} , 3,\"s\\\"]\" ,null],"
			  "\"m\":{\"x\":{}} , \"e\\u00e9\":-0.5e+3 }\n";
	struct seen s = { 0 };
	struct vw_json_span items = { 0 };

	(void)state;
	assert_int_equal(vw_json_members(doc, strlen(doc), 8, member, &s), 0);
	assert_string_equal(s.text, "kind=\"PodList\"|items=[ {\"a\":[1,2]} , 3,\"s\\\"]\" ,null]|"
				    "m={\"x\":{}}|e\\u00e9=-0.5e+3");
	items.p = strstr(doc, "[ {");
	items.len = strlen("[ {\"a\":[1,2]} , 3,\"s\\\"]\" ,null]");
	memset(&s, 0, sizeof(s));
	assert_int_equal(vw_json_elements(items, 8, element, &s), 0);
	assert_string_equal(s.text, "={\"a\":[1,2]}|=3|=\"s\\\"]\"|=null");
	assert_true(vw_json_is_null((struct vw_json_span){ "null", 4 }));
	assert_false(vw_json_is_null((struct vw_json_span){ "nul", 3 }));

	/* Empty containers, and a callback that stops the walk. */
	memset(&s, 0, sizeof(s));
	assert_int_equal(vw_json_members("{}", 2, 1, member, &s), 0);
	assert_int_equal(s.n, 0);
	assert_int_equal(vw_json_elements((struct vw_json_span){ "[ ]", 3 }, 1, element, &s), 0);
	s.stop_at = 2;
	assert_int_equal(vw_json_members("{\"a\":1,\"b\":2,\"c\":3}", 19, 1, member, &s), 7);
	assert_string_equal(s.text, "a=1|b=2");
}

/*
 * Refused, before anything is handed out. RFC 8259 strictly: json-c 0.16's leniencies (single
 * quotes, "1.", raw control bytes in strings, NaN and Infinity) are refused too; no Kubernetes
 * server writes them.
 */
static void test_refusals(void **state)
{
	static const char *const bad[] = {
		"", " ", "[]", "1", "\"s\"", "{", "}", "{\"a\"}", "{\"a\":}", "{\"a\":1,}",
		"{\"a\":1 \"b\":2}", "{a:1}", "{'a':1}", "{\"a\":01}", "{\"a\":1.}", "{\"a\":.5}",
		"{\"a\":1e}", "{\"a\":+1}", "{\"a\":-}", "{\"a\":tru}", "{\"a\":nul}", "{\"a\":True}",
		"{\"a\":\"\\x\"}", "{\"a\":\"\\u12G4\"}", "{\"a\":\"\\u12\"}", "{\"a\":\"tab\there\"}",
		"{\"a\":\"open}", "{\"a\":[1,2}", "{\"a\":[1,2]]}", "{\"a\":1}x", "{\"a\":1}{}",
		"{\"a\":[,1]}", "{\"a\":NaN}", "{\"a\":Infinity}", "{\"a\":\"\\",
	};
	struct seen s = { 0 };

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (vw_json_members(bad[i], strlen(bad[i]), 8, member, &s) != -EBADMSG)
			fail_msg("scanner accepted %s", bad[i]);
	assert_int_equal(s.n, 0);
	assert_int_equal(vw_json_elements((struct vw_json_span){ "[1,]", 4 }, 8, element, &s),
			 -EBADMSG);
}

static void test_depth(void **state)
{
	char deep[64] = "{\"a\":";
	struct seen s = { 0 };

	(void)state;
	strcat(deep, "[[[1]]]}"); /* depth 4 */
	assert_int_equal(vw_json_members(deep, strlen(deep), 4, member, &s), 0);
	assert_int_equal(vw_json_members(deep, strlen(deep), 3, member, &s), -EBADMSG);
	assert_int_equal(vw_json_elements((struct vw_json_span){ "[[[1]]]", 7 }, 3, element, &s), 0);
	assert_int_equal(vw_json_elements((struct vw_json_span){ "[[[1]]]", 7 }, 2, element, &s),
			 -EBADMSG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spans),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_depth),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

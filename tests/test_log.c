/* SPDX-License-Identifier: Apache-2.0 */
#include "vw_test.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"
#include "log.h"

struct capture {
	int count;
	char last[1024];
	enum vw_log_level level;
};

static void sink(enum vw_log_level level, const char *msg, void *ud)
{
	struct capture *c = ud;

	c->count++;
	c->level = level;
	snprintf(c->last, sizeof(c->last), "%s", msg);
}

static void test_level_parse(void **state)
{
	enum vw_log_level l;

	(void)state;
	assert_int_equal(vw_log_level_parse("DEBUG", &l), 0);
	assert_int_equal(l, VW_LOG_DEBUG);
	assert_int_equal(vw_log_level_parse("warning", &l), 0);
	assert_int_equal(l, VW_LOG_WARN);
	assert_int_equal(vw_log_level_parse("loud", &l), -EINVAL);
	assert_string_equal(vw_log_level_name(VW_LOG_ERROR), "error");
}

static void test_filter_and_sanitise(void **state)
{
	struct capture c = { 0 };

	(void)state;
	vw_log_set_sink(sink, &c);
	vw_log_set_level(VW_LOG_WARN);
	vw_info("hidden");
	assert_int_equal(c.count, 0);
	vw_error("bad \"name\"\nwith newline");
	assert_int_equal(c.count, 1);
	assert_int_equal(c.level, VW_LOG_ERROR);
	assert_null(strchr(c.last, '\n'));
	assert_null(strchr(c.last, '"'));
	vw_log_set_sink(NULL, NULL);
	vw_log_set_level(VW_LOG_INFO);
}

static void test_complain_rate_limited(void **state)
{
	struct capture c = { 0 };
	struct vw_complaint cp = { 0 };
	uint64_t now = 1000 * VW_NSEC_PER_SEC;

	(void)state;
	vw_clock_set_fake(&now);
	vw_log_set_sink(sink, &c);
	vw_complain(&cp, VW_LOG_WARN, "meter %s unreadable", "x");
	assert_int_equal(c.count, 1);
	for (int i = 0; i < 100; i++)
		vw_complain(&cp, VW_LOG_WARN, "meter %s unreadable", "x");
	assert_int_equal(c.count, 1);
	now += 2 * VW_NSEC_PER_SEC; /* past the first 1 s back-off */
	vw_complain(&cp, VW_LOG_WARN, "meter %s unreadable", "x");
	assert_int_equal(c.count, 2);
	assert_non_null(strstr(c.last, "repeated 100 times"));
	now += 1 * VW_NSEC_PER_SEC; /* back-off doubled to 2 s: still quiet */
	vw_complain(&cp, VW_LOG_WARN, "meter %s unreadable", "x");
	assert_int_equal(c.count, 2);
	vw_release(&cp, VW_LOG_INFO, "meter readable again");
	assert_int_equal(c.count, 3);
	assert_false(cp.active);
	vw_release(&cp, VW_LOG_INFO, "meter readable again");
	assert_int_equal(c.count, 3);
	vw_log_set_sink(NULL, NULL);
	vw_clock_set_fake(NULL);
}

/* --log.format=json: the stderr sink writes one JSON object per line, json-c parses each, and
 * the message comes back whole (a backslash escaped, quotes and control bytes as in text). */
static void test_json_format(void **state)
{
	char path[] = "/tmp/vw-log-json-XXXXXX";
	int fd = mkstemp(path), saved = dup(STDERR_FILENO);
	enum vw_log_format f;
	char *text, *line, *save = NULL;
	size_t n = 0;

	(void)state;
	assert_int_equal(vw_log_format_parse("json", &f), 0);
	assert_int_equal(f, VW_LOG_FORMAT_JSON);
	assert_int_equal(vw_log_format_parse("logfmt", &f), 0);
	assert_int_equal(vw_log_format_parse("yaml", &f), -EINVAL);
	assert_true(fd >= 0 && saved >= 0);
	fflush(stderr);
	dup2(fd, STDERR_FILENO);
	vw_log_set_format(VW_LOG_FORMAT_JSON);
	vw_log(VW_LOG_WARN, "path C:\\dir \"quoted\"\nnext");
	vw_log(VW_LOG_INFO, "plain");
	vw_log_set_format(VW_LOG_FORMAT_TEXT);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	close(fd);
	text = vw_fixture_slurp(path, NULL);
	assert_non_null(text);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save), n++) {
		json_object *j = json_tokener_parse(line), *msg, *level;

		if (!j)
			fail_msg("not JSON: %s", line);
		assert_true(json_object_object_get_ex(j, "time", NULL));
		assert_true(json_object_object_get_ex(j, "level", &level));
		assert_true(json_object_object_get_ex(j, "msg", &msg));
		if (n == 0) {
			assert_string_equal(json_object_get_string(level), "warn");
			assert_string_equal(json_object_get_string(msg),
					    "path C:\\dir 'quoted' next");
		}
		json_object_put(j);
	}
	assert_int_equal(n, 2);
	free(text);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_level_parse),
		cmocka_unit_test(test_filter_and_sanitise),
		cmocka_unit_test(test_complain_rate_limited),
		cmocka_unit_test(test_json_format),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

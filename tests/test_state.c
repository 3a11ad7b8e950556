/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The guest's state file: a large state (well over the old 16 MiB cap) loads; a file too big for
 * --state.max-series, a corrupt or truncated one, or one that is not a regular file is never
 * loaded nor overwritten but set aside, with counters starting from zero and the status saying
 * so; writes happen when the state changed, at most every write interval, and always on a clean
 * stop, which the next load can tell from a crash; a state that cannot be written says why.
 */
#include "vw_test.h"

#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "fixture.h"
#include "log.h"
#include "series_state_priv.h"
#include "state_file.h"

static uint64_t fake_now;

struct ctx {
	char *dir;
	char path[600];
	struct vw_series_state *s;
	struct vw_state_file *f;
};

static int setup(void **state)
{
	struct ctx *c = calloc(1, sizeof(*c));

	assert_non_null(c);
	c->dir = vw_fixture_mkdtemp("state");
	assert_non_null(c->dir);
	snprintf(c->path, sizeof(c->path), "%s/st/state.json", c->dir);
	fake_now = 1000 * VW_NSEC_PER_SEC;
	vw_clock_set_fake(&fake_now);
	*state = c;
	return 0;
}

static int teardown(void **state)
{
	struct ctx *c = *state;

	vw_state_file_free(c->f);
	vw_series_state_free(c->s);
	vw_clock_set_fake(NULL);
	vw_fixture_rm(c->dir);
	free(c);
	return 0;
}

static void open_state(struct ctx *c, size_t max_series, uint64_t interval_ns)
{
	vw_state_file_free(c->f);
	vw_series_state_free(c->s);
	c->s = vw_series_state_new(max_series);
	assert_non_null(c->s);
	c->f = vw_state_file_open(c->path, c->s, interval_ns);
	assert_non_null(c->f);
}

/* Learn one rendering of n counter series named by `tag`, each at `value`. */
static void learn(struct ctx *c, const char *tag, unsigned n, unsigned value)
{
	vw_series_state_begin(c->s);
	for (unsigned k = 0; k < n; k++) {
		char key[800];
		int len = snprintf(key, sizeof(key), "e_joules_total{%s=\"%u\"}", tag, k);
		uint64_t out;

		assert_true(vw_series_state_learn(c->s, key, (size_t)len, value * 1000000ull,
						  &out) >= 0);
	}
	assert_int_equal(vw_series_state_end(c->s), 0);
}

static char *file_text(const char *path)
{
	return vw_fixture_slurp(path, NULL);
}

/* The one file set aside next to the state, its path in out; false when there is none. */
static bool aside(struct ctx *c, char *out, size_t size)
{
	char pattern[700];
	glob_t g;
	bool one;

	snprintf(pattern, sizeof(pattern), "%s.bad-*", c->path);
	if (glob(pattern, 0, NULL, &g) != 0)
		return false;
	one = g.gl_pathc == 1;
	if (one)
		snprintf(out, size, "%s", g.gl_pathv[0]);
	globfree(&g);
	return one;
}

static void write_state_file(struct ctx *c, const char *text)
{
	char rel[64];

	snprintf(rel, sizeof(rel), "st/state.json");
	assert_int_equal(vw_fixture_write(c->dir, rel, text, 0), 0);
}

static void test_large_state_loads(void **state)
{
	struct ctx *c = *state;
	char tag[700], key[800];
	uint64_t v;
	struct stat st;

	/* 26,000 series with 680-byte label names: a file of about 18 MiB. */
	memset(tag, 'l', 680);
	tag[680] = '\0';
	open_state(c, 30000, VW_NSEC_PER_SEC);
	assert_int_equal(vw_state_file_status(c->f), VW_STATE_NEW);
	learn(c, tag, 26000, 7);
	vw_state_file_flush(c->f);
	assert_int_equal(vw_state_file_writes(c->f), 1);
	assert_int_equal(stat(c->path, &st), 0);
	assert_true(st.st_size > (16 << 20));
	open_state(c, 30000, VW_NSEC_PER_SEC);
	assert_int_equal(vw_state_file_status(c->f), VW_STATE_LOADED);
	assert_int_equal(vw_series_state_size(c->s), 26000);
	snprintf(key, sizeof(key), "e_joules_total{%s=\"25999\"}", tag);
	assert_int_equal(vw_series_state_get(c->s, key, &v), 0);
	assert_int_equal(v, 7000000);
}

static void test_unloadable_set_aside(void **state)
{
	static const char *const bad[] = {
		"{\"v\":1,\"clean\":true,\"series\":{\"a_total{x=\\\"1\\\"}\":5000000", /* cut */
		"{\"v\":1,\"series\":{\"a_total\":\"five\"}}",				/* not ours */
		"{\"v\":2,\"series\":{}}",
		"\x01\x02 binary",
	};
	struct ctx *c = *state;
	char kept[800];

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		char *text;
		uint64_t v;

		write_state_file(c, bad[i]);
		open_state(c, 100, VW_NSEC_PER_SEC);
		assert_int_equal(vw_state_file_status(c->f), VW_STATE_SET_ASIDE);
		assert_int_equal(vw_series_state_size(c->s), 0);
		assert_true(aside(c, kept, sizeof(kept)));
		text = file_text(kept);
		assert_string_equal(text, bad[i]); /* kept as it was */
		free(text);
		assert_int_equal(access(c->path, F_OK), -1);
		/* Counters start from zero, and the new state never touches the kept file. */
		learn(c, "k", 1, 3);
		vw_state_file_flush(c->f);
		assert_int_equal(vw_series_state_get(c->s, "e_joules_total{k=\"0\"}", &v), 0);
		assert_int_equal(v, 3000000);
		text = file_text(kept);
		assert_string_equal(text, bad[i]);
		free(text);
		assert_int_equal(unlink(kept), 0);
	}
}

static void test_too_big_for_max_series(void **state)
{
	struct ctx *c = *state;
	char kept[800];

	/* A state of 1000 series read by a daemon now allowed 100: too big, set aside. */
	open_state(c, 1000, VW_NSEC_PER_SEC);
	learn(c, "k", 1000, 1);
	vw_state_file_flush(c->f);
	open_state(c, 1000, VW_NSEC_PER_SEC);
	assert_int_equal(vw_series_state_size(c->s), 1000);
	{
		struct stat st;

		assert_int_equal(stat(c->path, &st), 0);
		assert_true((size_t)st.st_size > vw_series_state_max_file_bytes(1));
	}
	vw_state_file_free(c->f);
	c->f = NULL;
	vw_series_state_free(c->s);
	c->s = vw_series_state_new(1);
	{
		char dir[700];
		int fd;

		snprintf(dir, sizeof(dir), "%s/st", c->dir);
		fd = vw_root_open(dir);
		assert_true(fd >= 0);
		assert_int_equal(vw_series_state_load(c->s, fd, "state.json", NULL), -EFBIG);
		close(fd);
	}
	c->f = vw_state_file_open(c->path, c->s, VW_NSEC_PER_SEC);
	assert_int_equal(vw_state_file_status(c->f), VW_STATE_SET_ASIDE);
	assert_true(aside(c, kept, sizeof(kept)));
}

static void test_write_policy(void **state)
{
	struct ctx *c = *state;

	open_state(c, 100, 30 * VW_NSEC_PER_SEC);
	learn(c, "k", 3, 1);
	vw_state_file_tick(c->f, fake_now); /* changed, never written: now */
	assert_int_equal(vw_state_file_writes(c->f), 1);
	fake_now += 10 * VW_NSEC_PER_SEC;
	learn(c, "k", 3, 2);
	vw_state_file_tick(c->f, fake_now); /* changed, but 10 s < 30 s */
	assert_int_equal(vw_state_file_writes(c->f), 1);
	fake_now += 21 * VW_NSEC_PER_SEC;
	vw_state_file_tick(c->f, fake_now); /* 31 s */
	assert_int_equal(vw_state_file_writes(c->f), 2);
	fake_now += 60 * VW_NSEC_PER_SEC;
	learn(c, "k", 3, 2); /* the same values: nothing changed */
	vw_state_file_tick(c->f, fake_now);
	assert_int_equal(vw_state_file_writes(c->f), 2);
	/* A crash now: the next start knows the file was not written by a clean stop. */
	open_state(c, 100, 30 * VW_NSEC_PER_SEC);
	assert_int_equal(vw_state_file_status(c->f), VW_STATE_LOADED_UNCLEAN);
	/* A clean stop writes whatever the interval, and says so. */
	vw_state_file_flush(c->f);
	assert_int_equal(vw_state_file_writes(c->f), 1);
	open_state(c, 100, 30 * VW_NSEC_PER_SEC);
	assert_int_equal(vw_state_file_status(c->f), VW_STATE_LOADED);
	assert_true(vw_state_file_ok(c->f, NULL, 0));
}

static void test_unwritable_says_why(void **state)
{
	struct ctx *c = *state;
	char why[512] = "", dir[700];

	/* The state directory's parent is a file: nothing can be kept. */
	assert_int_equal(vw_fixture_write(c->dir, "file", "x", 0), 0);
	snprintf(c->path, sizeof(c->path), "%s/file/st/state.json", c->dir);
	open_state(c, 100, VW_NSEC_PER_SEC);
	assert_int_equal(vw_state_file_status(c->f), VW_STATE_UNWRITABLE);
	assert_false(vw_state_file_ok(c->f, why, sizeof(why)));
	assert_non_null(strstr(why, "cannot open the state directory"));
	learn(c, "k", 1, 1);
	vw_state_file_flush(c->f); /* nothing to write to */
	assert_int_equal(vw_state_file_writes(c->f) + vw_state_file_write_errors(c->f), 0);

	/* Writes that start failing (the directory went away) count and say why; then work. */
	snprintf(c->path, sizeof(c->path), "%s/st/state.json", c->dir);
	open_state(c, 100, VW_NSEC_PER_SEC);
	assert_true(vw_state_file_ok(c->f, why, sizeof(why)));
	snprintf(dir, sizeof(dir), "%s/st", c->dir);
	assert_int_equal(rmdir(dir), 0);
	learn(c, "k", 1, 1);
	vw_state_file_tick(c->f, fake_now);
	assert_int_equal(vw_state_file_write_errors(c->f), 1);
	assert_false(vw_state_file_ok(c->f, why, sizeof(why)));
	assert_non_null(strstr(why, "cannot be written"));
}

/*
 * Keys with every byte JSON must escape (quotes, backslashes, control bytes), a slash and
 * UTF-8, names shared and not, a key without labels survive a save and a load, each with its exported value; the file is one JSON object
 * with the flag.
 */
static void test_keys_round_trip(void **state)
{
	static const char *const keys[] = {
		"a_total{l=\"plain\"}",
		"a_total{exe=\"/usr/bin/x\",q=\"say \\\"hi\\\"\"}",
		"a_total{l=\"back\\\\slash\",t=\"tab\\there\"}",
		"a_total{c=\"\x01\x1f\x7f\n\r\b\f\t\"}",
		"a_total{u=\"\xc3\xa9t\xc3\xa9 \xe2\x82\xac\"}",
		"b_total{l=\"plain\"}", /* the same labels under another name */
		"no_labels_total",
	};
	struct ctx *c = *state;
	_cleanup_free_ char *text = NULL;
	uint64_t out, v;
	bool clean = false;

	open_state(c, 100, VW_NSEC_PER_SEC);
	vw_series_state_begin(c->s);
	for (size_t k = 0; k < ARRAY_SIZE(keys); k++)
		assert_true(vw_series_state_learn(c->s, keys[k], strlen(keys[k]),
						  (k + 1) * 1000000ull, &out) >= 0);
	assert_int_equal(vw_series_state_end(c->s), 0);
	vw_state_file_flush(c->f);
	text = file_text(c->path);
	assert_non_null(text);
	assert_non_null(strstr(text, "\"clean\":true"));
	/* Strict JSON, which json-c's reader does not insist on: no raw control byte. */
	assert_non_null(strstr(text, "\\u0001\\u001f\x7f\\n\\r\\b\\f\\t"));
	for (const char *p = text; *p; p++)
		assert_true((unsigned char)*p >= 0x20);
	open_state(c, 100, VW_NSEC_PER_SEC);
	assert_true(vw_state_file_ok(c->f, NULL, 0));
	assert_int_equal(vw_series_state_size(c->s), ARRAY_SIZE(keys));
	for (size_t k = 0; k < ARRAY_SIZE(keys); k++) {
		assert_int_equal(vw_series_state_get(c->s, keys[k], &v), 0);
		assert_int_equal(v, (k + 1) * 1000000ull);
	}
	assert_int_equal(vw_series_state_load_buf(c->s, text, strlen(text), &clean), 0);
	assert_true(clean);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_large_state_loads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unloadable_set_aside, setup, teardown),
		cmocka_unit_test_setup_teardown(test_too_big_for_max_series, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_policy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unwritable_says_why, setup, teardown),
		cmocka_unit_test_setup_teardown(test_keys_round_trip, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

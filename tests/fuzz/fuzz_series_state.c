/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: the guest's state file (guest/series_state.c), which travels with the VM's
 * disk. The input is the file, loaded into a table of at most MAX_SERIES series. Properties of
 * a loaded state: it holds at most MAX_SERIES series; saved (as written when stopping) and
 * loaded again, it is clean and every series keeps its value; and a counter sample of a loaded
 * series is exported as its saved value plus the new raw value, the series' value thereafter.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "series_state_priv.h"

#define RAW_MICRO 5000000u /* "5" */

#define MAX_SERIES 256 /* small, so that files reach the cap */
#define MAX_APPLIED 64 /* renders: far fewer than VW_SERIES_STATE_KEEP, nothing goes stale */

static char state_dir[4096], state_path[4200];

static void remove_state(void)
{
	unlink(state_path);
	rmdir(state_dir);
}

/* A directory for the saved file, made once. */
static int dir_fd(void)
{
	static int fd = -1;
	const char *tmp = getenv("TMPDIR");

	if (fd >= 0)
		return fd;
	snprintf(state_dir, sizeof(state_dir), "%s/vw-fuzz-state-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(state_dir))
		abort();
	snprintf(state_path, sizeof(state_path), "%s/state.json", state_dir);
	atexit(remove_state);
	fd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		abort();
	return fd;
}

/* A sample line of the series key as the exposition writes it, when key can be one. */
static bool sample_key(const char *key)
{
	size_t name = strcspn(key, "{ ");

	return key[0] && key[0] != '#' && !strchr(key, '\n') && name > 6 &&
	       memcmp(key + name - 6, "_total", 6) == 0;
}

/* The series key, a counter, sampled at 5: exported as its value + 5, in the state and as the
 * value the writer is given. */
static void check_apply(struct vw_series_state *s, const char *key, uint64_t before)
{
	uint64_t after, out = RAW_MICRO;
	int r;

	if (!sample_key(key) || before > UINT64_MAX - RAW_MICRO)
		return;
	vw_series_state_begin(s);
	r = vw_series_state_learn(s, key, strlen(key), RAW_MICRO, &out);
	if (r < 0 || vw_series_state_end(s) < 0)
		abort();
	vw_fuzz_assert(vw_series_state_get(s, key, &after) == 0 && after == before + RAW_MICRO,
		       "series %s: %" PRIu64 " before a sample of 5, %" PRIu64 " after", key,
		       before, after);
	vw_fuzz_assert(out == after, "series %s: %" PRIu64 " written, %" PRIu64 " kept", key, out,
		       after);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vw_series_state *s = vw_series_state_new(MAX_SERIES);
	struct vw_series_state *again = vw_series_state_new(MAX_SERIES);
	struct json_object *saved = NULL, *series;
	size_t applied = 0;
	bool clean = false;

	if (!s || !again)
		abort();
	if (vw_series_state_load_buf(s, (const char *)data, size, NULL) < 0)
		goto done;
	vw_fuzz_assert(vw_series_state_size(s) <= MAX_SERIES, "%zu series loaded",
		       vw_series_state_size(s));
	if (vw_series_state_save(s, dir_fd(), "state.json", true) < 0 ||
	    vw_series_state_load(again, dir_fd(), "state.json", &clean) < 0)
		vw_fuzz_fail("a loaded state does not save and load again");
	vw_fuzz_assert(clean, "saved clean, loaded unclean");
	vw_fuzz_assert(vw_series_state_size(s) == vw_series_state_size(again),
		       "%zu series, %zu once saved and loaded", vw_series_state_size(s),
		       vw_series_state_size(again));
	saved = json_object_from_file(state_path);
	vw_fuzz_assert(saved && json_object_object_get_ex(saved, "series", &series),
		       "the saved state is not JSON");
	json_object_object_foreach(series, key, val) {
		uint64_t a, b;

		vw_fuzz_assert(vw_series_state_get(s, key, &a) == 0 &&
				       vw_series_state_get(again, key, &b) == 0 && a == b &&
				       (uint64_t)json_object_get_int64(val) == a,
			       "series %s changed on the way", key);
		if (applied++ < MAX_APPLIED)
			check_apply(again, key, b);
	}
done:
	json_object_put(saved);
	vw_series_state_free(again);
	vw_series_state_free(s);
	return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* deploy/config/virtwatt-guest.yaml loads with virtwatt-guest's own option table. */
#include "vw_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config_fixture.h"
#include "macro.h"
#include "options.h"

/* Every key of the example is one virtwatt-guest knows (an unknown key fails the load). */
static void test_example_config_loads(void **state)
{
	struct vw_guest_config cfg = { 0 };

	(void)state;
	config_fixture_load_example(&vw_guest_program, &cfg);
	config_fixture_check_example_common(&cfg.common);
	assert_true(cfg.passthrough_enable);
	assert_int_equal(cfg.passthrough_stale_after, 3);
	assert_string_equal(cfg.passthrough_folder, "/run/virtwatt/host");
	assert_string_equal(cfg.state_file, "/var/lib/virtwatt-guest/state.json");
	assert_string_equal(cfg.devfs, "/dev");
	vw_config_free(&vw_guest_program, &cfg);
}

/* The check above is not vacuous: a key the guest does not have is refused. */
static void test_unknown_key_refused(void **state)
{
	struct vw_guest_config cfg = { 0 };
	char path[] = "/tmp/vw-guest-config-XXXXXX";
	char err[512] = "";
	int fd;
	FILE *f;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	/* passthrough.shareRoot is the host's key, not the guest's */
	fputs("passthrough:\n  shareRoot: /run/virtwatt/share\n", f);
	fclose(f);
	assert_int_not_equal(config_fixture_load(&vw_guest_program, &cfg, path, err, sizeof(err)),
			     0);
	assert_non_null(strstr(err, "shareRoot"));
	vw_config_free(&vw_guest_program, &cfg);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		vw_unit_test_case("test_guest_options", config_fixture_test_table, NULL, NULL,
				  &vw_guest_program),
		cmocka_unit_test(test_example_config_loads),
		cmocka_unit_test(test_unknown_key_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* deploy/config/virtwatt-guest.yaml loads with virtwatt-guest's own option table. */
#include "vw_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "macro.h"
#include "options.h"

static void test_guest_options(void **state)
{
	char err[512] = "";

	(void)state;
	if (vw_config_check(&vw_guest_program, err, sizeof(err)) != 0)
		fail_msg("virtwatt-guest option table: %s", err);
}

/* Every key of the example is one virtwatt-guest knows (an unknown key fails the load). */
static void test_example_config_loads(void **state)
{
	struct vw_guest_config cfg = { 0 };
	char arg[1024], err[512] = "";
	char *argv[] = { "virtwatt-guest", arg, NULL };

	(void)state;
	snprintf(arg, sizeof(arg), "--config.file=%s/deploy/config/virtwatt-guest.yaml",
		 VW_SOURCE_ROOT);
	if (vw_config_load(&vw_guest_program, &cfg, 2, argv, stdout, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(cfg.common.interval_ns, 5 * VW_NSEC_PER_SEC);
	assert_string_equal(cfg.common.listen_address, ":28282");
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
	char arg[1024], err[512] = "";
	char *argv[] = { "virtwatt-guest", arg, NULL };
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
	snprintf(arg, sizeof(arg), "--config.file=%s", path);
	assert_int_not_equal(vw_config_load(&vw_guest_program, &cfg, 2, argv, stdout, err,
					    sizeof(err)),
			     0);
	assert_non_null(strstr(err, "shareRoot"));
	vw_config_free(&vw_guest_program, &cfg);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_guest_options),
		cmocka_unit_test(test_example_config_loads),
		cmocka_unit_test(test_unknown_key_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

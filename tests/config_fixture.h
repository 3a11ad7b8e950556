/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A daemon's option table and configuration files, read as the daemon itself reads them
 * (test_selfcheck for virtwatt-host, test_guest_config for virtwatt-guest).
 */
#pragma once

#include "vw_test.h"

#include <stdio.h>

#include "config.h"
#include "daemon_options.h"

/* p's option table passes vw_config_check(); the test fails with its message otherwise. */
static inline void config_fixture_check_table(const struct vw_config_program *p)
{
	char err[512] = "";

	if (vw_config_check(p, err, sizeof(err)) != 0)
		fail_msg("%s option table: %s", p->name, err);
}

/* A cmocka test of the option table of the vw_config_program in *state (vw_unit_test_case()). */
static inline void config_fixture_test_table(void **state)
{
	config_fixture_check_table(*state);
}

/* Load cfg as `<p->name> --config.file=<path> --config.strict` would (our own files hold no
 * key we do not know): vw_config_load()'s result (err: why). */
static inline int config_fixture_load(const struct vw_config_program *p, void *cfg,
				      const char *path, char *err, size_t errlen)
{
	char arg[1024];
	char *argv[] = { (char *)p->name, arg, (char *)"--config.strict", NULL };

	snprintf(arg, sizeof(arg), "--config.file=%s", path);
	return vw_config_load(p, cfg, 3, argv, stdout, err, errlen);
}

/* The example deploy/config/<p->name>.yaml loads into cfg; the test fails with why otherwise. */
static inline void config_fixture_load_example(const struct vw_config_program *p, void *cfg)
{
	char path[1024], err[512] = "";

	snprintf(path, sizeof(path), "%s/deploy/config/%s.yaml", VW_SOURCE_ROOT, p->name);
	if (config_fixture_load(p, cfg, path, err, sizeof(err)) != 0)
		fail_msg("%s: %s", path, err);
}

/* The shared daemon options as both examples set them: a 5 s interval, /metrics on :28282. */
static inline void config_fixture_check_example_common(const struct vw_daemon_options *o)
{
	assert_int_equal(o->interval_ns, 5 * VW_NSEC_PER_SEC);
	assert_int_equal(o->listen_address.n, 1);
	assert_string_equal(o->listen_address.v[0], ":28282");
}

/* SPDX-License-Identifier: Apache-2.0 */
#include "meter_fixture.h"
#include "vw_test.h"

#include <string.h>

#define MAX_FLAGS 16

void meter_fixture_load(struct vw_host_config *cfg, const char *const *flags)
{
	char *argv[MAX_FLAGS + 2] = { (char *)"virtwatt-host" };
	char err[512];
	int argc = 1;

	memset(cfg, 0, sizeof(*cfg));
	for (; *flags && argc <= MAX_FLAGS; flags++)
		argv[argc++] = (char *)*flags;
	assert_non_null(vw_host_program());
	if (vw_config_load(vw_host_program(), cfg, argc, argv, NULL, err, sizeof(err)) != 0)
		fail_msg("%s", err);
}

void meter_fixture_free(struct vw_host_config *cfg)
{
	vw_config_free(vw_host_program(), cfg);
}

const void *meter_fixture_config(const struct vw_host_meters *hm,
				 const struct vw_power_source_ops *src)
{
	struct vw_power_env env = { .sysfs_fd = -1, .configs = hm->configs, .n_configs = hm->n };

	return vw_power_source_config(&env, src);
}

const struct vw_power_source_ops *meter_fixture_find(const char *name)
{
	const struct vw_power_source_ops *const *chains[] = { vw_host_power_sources,
							      vw_host_platform_sources };

	for (size_t c = 0; c < ARRAY_SIZE(chains); c++)
		for (const struct vw_power_source_ops *const *s = chains[c]; *s; s++)
			if (strcmp((*s)->name, name) == 0)
				return *s;
	fail_msg("no meter \"%s\" in the host's chains", name);
	return NULL;
}

/* SPDX-License-Identifier: Apache-2.0 */
#include "meters.h"

#include <errno.h>
#include <string.h>

#include "hwmon_rules.h"
#include "log.h"

/* The generic hwmon meter's chip rules and Kepler's experimental.hwmon keys. */
static int setup_hwmon(struct vw_host_meters *m, const struct vw_host_config *cfg)
{
	char err[256] = "";
	int r = vw_hwmon_rules_parse((const char *const *)cfg->hwmon_chip_rules.v,
				     cfg->hwmon_chip_rules.n, &m->hwmon_rules, err, sizeof(err));

	if (r == -EINVAL)
		vw_error("config: --power.hwmon.chip-rules (power.hwmon.chipRules): %s; a rule is "
			 "CHIP[:LABEL]=ZONE[@SOCKET] or CHIP[:LABEL]=none",
			 err);
	if (r < 0)
		return r;
	m->hwmon = (struct vw_hwmon_config){ .rules = m->hwmon_rules,
					     .zones = (const char *const *)cfg->hwmon_zones.v,
					     .n_zones = cfg->hwmon_zones.n,
					     .disabled = !cfg->hwmon_enabled };
	m->cfg.hwmon = &m->hwmon;
	return 0;
}

int vw_host_meters_setup(struct vw_host_meters *m, const struct vw_host_config *cfg,
			 const char *node_name)
{
	(void)node_name;
	memset(m, 0, sizeof(*m));
	return setup_hwmon(m, cfg);
}

void vw_host_meters_fini(struct vw_host_meters *m)
{
	vw_hwmon_rules_free(m->hwmon_rules);
	memset(m, 0, sizeof(*m));
}

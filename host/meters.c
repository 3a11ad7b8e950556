/* SPDX-License-Identifier: Apache-2.0 */
#include "meters.h"

#include <string.h>

int vw_host_meters_setup(struct vw_host_meters *m, const struct vw_host_config *cfg,
			 const char *node_name)
{
	(void)cfg;
	(void)node_name;
	memset(m, 0, sizeof(*m));
	return 0;
}

void vw_host_meters_fini(struct vw_host_meters *m)
{
	memset(m, 0, sizeof(*m));
}

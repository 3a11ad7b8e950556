/* SPDX-License-Identifier: Apache-2.0 */
/* virtwatt-host: options, signals, then the daemon loop. */
#include <stdio.h>

#include "daemon.h"
#include "daemon_options.h"
#include "options.h"

static int run(void *cfg, volatile sig_atomic_t *stop)
{
	struct vw_host *h = NULL;
	int r = vw_host_new(cfg, &h);

	if (r == 0)
		r = vw_host_run(h, stop);
	vw_host_free(h);
	return r;
}

int main(int argc, char **argv)
{
	const struct vw_config_program *p = vw_host_program();
	struct vw_host_config cfg = { 0 };

	if (!p) {
		fputs("virtwatt-host: the meters' options do not fit (out of memory?)\n", stderr);
		return 1;
	}
	return vw_daemon_main(p, &cfg, argc, argv, run);
}

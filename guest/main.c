/* SPDX-License-Identifier: Apache-2.0 */
/* virtwatt-guest: options, signals, then the daemon loop. */
#include "daemon.h"
#include "daemon_options.h"
#include "options.h"

static int run(void *cfg, volatile sig_atomic_t *stop)
{
	struct vw_guest *g = NULL;
	int r = vw_guest_new(cfg, &g);

	if (r == 0)
		r = vw_guest_run(g, stop);
	vw_guest_free(g);
	return r;
}

int main(int argc, char **argv)
{
	struct vw_guest_config cfg = { 0 };

	return vw_daemon_main(&vw_guest_program, &cfg, argc, argv, run);
}

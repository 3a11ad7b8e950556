/* SPDX-License-Identifier: Apache-2.0 */
/* virtwatt-host: options, signals, then the daemon loop; or the daemon's libvirt helper. */
#include <stdio.h>

#include "daemon.h"
#include "daemon_options.h"
#include "options.h"
#if VW_HAVE_LIBVIRT
#include "vm_libvirt_helper.h"
#endif

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

#if VW_HAVE_LIBVIRT
	/* The daemon's own libvirt helper (host/vm/vm_libvirt_helper.c): not an option. */
	if (vw_libvirt_helper_wanted(argc, argv))
		return vw_libvirt_helper_main(argc, argv);
	vw_libvirt_helper_here();
#endif
	if (!p) {
		fputs("virtwatt-host: the meters' options do not fit (out of memory?)\n", stderr);
		return 1;
	}
	return vw_daemon_main(p, &cfg, argc, argv, run);
}

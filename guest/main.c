/* SPDX-License-Identifier: Apache-2.0 */
/* virtwatt-guest: options, signals, then the daemon loop. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "daemon.h"
#include "log.h"
#include "options.h"

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
	(void)sig;
	stop_requested = 1;
}

int main(int argc, char **argv)
{
	struct vw_guest_config cfg = { 0 };
	struct sigaction sa = { .sa_handler = on_stop };
	struct vw_guest *g = NULL;
	char err[1024] = "";
	int r;

	r = vw_config_load(&vw_guest_program, &cfg, argc, argv, stdout, err, sizeof(err));
	if (r == VW_CONFIG_EXIT_OK) {
		vw_config_free(&vw_guest_program, &cfg);
		return 0;
	}
	if (r < 0) {
		fprintf(stderr, "virtwatt-guest: %s\nTry 'virtwatt-guest --help'.\n",
			err[0] ? err : strerror(-r));
		vw_config_free(&vw_guest_program, &cfg);
		return 2;
	}
	vw_log_set_level(cfg.log_level);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	vw_info("virtwatt-guest %s (%s) starting", VW_VERSION, VW_REVISION);
	r = vw_guest_new(&cfg, &g);
	if (r == 0)
		r = vw_guest_run(g, &stop_requested);
	vw_guest_free(g);
	vw_config_free(&vw_guest_program, &cfg);
	return r < 0 ? 1 : 0;
}

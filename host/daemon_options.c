/* SPDX-License-Identifier: Apache-2.0 */
#include "daemon_options.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ctrmeta.h"
#include "fileio.h"

const char *const vw_accounting_names[] = { "auto", "bpf", "procfs", NULL };
const char *const vw_pod_source_names[] = { "apiserver", "kubelet", NULL };

struct vw_ctrmeta *vw_daemon_open_ctrmeta(const struct vw_daemon_options *o)
{
	_cleanup_close_ int fd = vw_root_open(o->rootfs);
	struct vw_ctrmeta *m;

	if (fd < 0) {
		vw_warn("containers: cannot open the host root %s: %s; containers outside "
			"Kubernetes are shown by ID only", o->rootfs, strerror(-fd));
		return NULL;
	}
	m = vw_ctrmeta_new(&(struct vw_ctrmeta_opts){ .root_fd = fd });
	if (!m)
		vw_warn("containers: cannot read container names: %s", strerror(errno));
	return m;
}

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void install_signals(void)
{
	struct sigaction sa = { .sa_handler = on_stop };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

int vw_daemon_main(const struct vw_config_program *p, void *cfg, int argc, char **argv,
		   int (*run)(void *cfg, volatile sig_atomic_t *stop))
{
	const struct vw_daemon_options *common = cfg; /* the first member of every daemon config */
	char err[1024] = "";
	int r = vw_config_load(p, cfg, argc, argv, stdout, err, sizeof(err));

	if (r == VW_CONFIG_EXIT_OK || r < 0) {
		if (r < 0)
			fprintf(stderr, "%s: %s\nTry '%s --help'.\n", p->name,
				err[0] ? err : strerror(-r), p->name);
		vw_config_free(p, cfg);
		return r < 0 ? 2 : 0;
	}
	vw_log_set_level(common->log_level);
	install_signals();
	vw_info("%s %s (%s) starting", p->name, VW_VERSION, VW_REVISION);
	r = run(cfg, &stop_requested);
	vw_config_free(p, cfg);
	return r < 0 ? 1 : 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
#include "daemon_options.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ctrmeta.h"
#include "fileio.h"
#include "sigstop.h"

const char *const vw_accounting_names[] = { "auto", "bpf", "procfs", NULL };
const char *const vw_pod_source_names[] = { "apiserver", "kubelet", NULL };
const char *const vw_otlp_compression_names[] = { "gzip", "none", NULL };

struct vw_ctrmeta *vw_daemon_open_ctrmeta(const struct vw_daemon_options *o)
{
	_cleanup_close_ int fd = -ENOENT;
	struct vw_ctrmeta *m;

	if (!o->rootfs || !*o->rootfs)
		return NULL; /* --host.rootfs="": containers keep their IDs */
	fd = vw_root_open(o->rootfs);
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

uint64_t vw_daemon_stale_after_ns(uint64_t interval_ns)
{
	return VW_STALE_INTERVALS * interval_ns + 5 * VW_NSEC_PER_SEC;
}

uint64_t vw_daemon_stuck_after_ns(uint64_t interval_ns)
{
	return VW_STALE_INTERVALS * interval_ns + 10 * VW_NSEC_PER_SEC;
}

bool vw_daemon_loop_alive(uint64_t last_ns, uint64_t limit_ns, char *why, size_t len)
{
	uint64_t now = vw_now_ns();

	if (last_ns && now - last_ns <= limit_ns)
		return true;
	if (!last_ns)
		snprintf(why, len, "the sampling loop has not run yet");
	else
		snprintf(why, len,
			 "the sampling loop made no progress for %.1f s (limit %.1f s): a meter or "
			 "source read is blocked, see the log",
			 (double)(now - last_ns) / 1e9, (double)limit_ns / 1e9);
	return false;
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
	r = vw_sigstop_install();
	if (r < 0) {
		vw_error("%s: cannot install signal handlers: %s", p->name, strerror(-r));
		vw_config_free(p, cfg);
		return 1;
	}
	vw_info("%s %s (%s) starting", p->name, VW_VERSION, VW_REVISION);
	r = run(cfg, vw_sigstop_flag());
	vw_config_free(p, cfg);
	return r < 0 ? 1 : 0;
}

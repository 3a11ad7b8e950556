/* SPDX-License-Identifier: Apache-2.0 */
#include "daemon_options.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ctrmeta.h"
#include "fileio.h"
#include "http.h"
#include "sigstop.h"

const char *const vw_accounting_names[] = { "auto", "bpf", "procfs", NULL };
const char *const vw_ran_walk_names[] = { "auto", "true", "false", NULL };
const char *const vw_irq_accounting_names[] = { "auto", "off", NULL };
const char *const vw_pod_source_names[] = { "apiserver", "kubelet", NULL };
const char *const vw_otlp_compression_names[] = { "gzip", "none", NULL };
const char *const vw_log_format_names[] = { "text", "json", NULL };

/* Kepler's --monitor.max-terminated (monitor.maxTerminated): 0 tracks no terminated workload,
 * a negative value any number of them (config/config.go). Our tables are bounded. */
const struct vw_value_alias vw_max_terminated_kepler[] = {
	{ "0", "1",
	  "Kepler's 0 (no terminated workload kept); virtwatt keeps each until a scrape has served "
	  "its final value, and 1 per level is the least" },
	{ "-*", "1000000",
	  "Kepler's negative value (no limit); virtwatt bounds every table, 1000000 per level is "
	  "the most" },
	{ NULL, NULL, NULL },
};

/* --help's headings (both daemons); the first prefix an option's flag starts with wins. */
const struct vw_help_group vw_daemon_help_groups[] = {
	{ "config.", "Configuration", false },
	{ "log.", "Logging", false },
	{ "web.", "Web server", false },
	{ "metrics", "Metrics exported", false },
	{ "exporter.", "Metrics exported", false },
	{ "monitor.", "Monitor", false },
	{ "host.", "Host paths", false },
	{ "power.idle", "Idle power fit", true },
	{ "power.hwmon.", "hwmon sensors", true },
	{ "experimental.hwmon.", "hwmon sensors", true },
	{ "power.", "Power meters", false },
	{ "rapl.", "Power meters", false },
	{ "cpu.preferred", "Power meters", false },
	{ "cpu.", "CPU accounting", false },
	{ "platform.ipmi.", "Platform meter: IPMI", true },
	{ "platform.redfish.", "Platform meter: Redfish", true },
	{ "platform.", "Platform meters", false },
	{ "gpu.", "GPUs", false },
	{ "kube.", "Kubernetes", false },
	{ "libvirt.", "VMs and passthrough", false },
	{ "vm.", "VMs and passthrough", false },
	{ "passthrough.", "VMs and passthrough", false },
	{ "host.devfs", "VMs and passthrough", false },
	{ "model.train.", "Model training", true },
	{ "model.", "Model", false },
	{ "state.", "Guest state", false },
	{ "carbon.", "Carbon", false },
	{ "", "Other", false },
	{ NULL, NULL, false },
};

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

int vw_daemon_options_check(const struct vw_daemon_options *o, char *err, size_t errlen)
{
	char host[256];
	uint16_t port;

	if (!o->listen_address.n) {
		snprintf(err, errlen, "--web.listen-address: no address given");
		return -EINVAL;
	}
	for (size_t i = 0; i < o->listen_address.n; i++) {
		if (vw_http_parse_listen(o->listen_address.v[i], host, sizeof(host), &port) == 0)
			continue;
		snprintf(err, errlen,
			 "--web.listen-address: invalid address \"%.64s\" (expected [HOST]:PORT, "
			 "PORT from 0 to 65535, an IPv6 HOST in brackets: [::1]:28282)",
			 o->listen_address.v[i]);
		return -EINVAL;
	}
	return 0;
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
	_cleanup_(vw_strlist_free) struct vw_strlist warnings = { 0 };
	enum vw_log_format format = VW_LOG_FORMAT_TEXT;
	char err[1024] = "";
	int r = vw_config_load_warn(p, cfg, argc, argv, stdout, &warnings, err, sizeof(err));

	if (r == VW_CONFIG_CONTINUE)
		r = vw_daemon_options_check(common, err, sizeof(err));
	if (r == VW_CONFIG_EXIT_OK || r < 0) {
		if (r < 0)
			fprintf(stderr, "%s: %s\nTry '%s --help'.\n", p->name,
				err[0] ? err : strerror(-r), p->name);
		vw_config_free(p, cfg);
		return r < 0 ? 2 : 0;
	}
	vw_log_set_level(common->log_level);
	(void)vw_log_format_parse(common->log_format, &format); /* a choice: checked when loaded */
	vw_log_set_format(format);
	for (size_t i = 0; i < warnings.n; i++)
		vw_warn("config: %s", warnings.v[i]);
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

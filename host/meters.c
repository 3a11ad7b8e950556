/* SPDX-License-Identifier: Apache-2.0 */
#include "meters.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "hwmon_rules.h"
#include "log.h"

#define PASSWORD_MAX 1024
#define MS(ns) ((long)((ns) / 1000000ULL))

/* A secret file's first line (a Kubernetes Secret mounted as a file has no newline). */
static int read_secret(const char *path, char **ret)
{
	char buf[PASSWORD_MAX + 1];
	size_t len = 0;
	int r = vw_read_file_at(AT_FDCWD, path, buf, sizeof(buf), &len);

	if (r < 0)
		return r;
	if (len > PASSWORD_MAX)
		return -EFBIG;
	buf[len] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
	*ret = strdup(buf);
	explicit_bzero(buf, sizeof(buf));
	return *ret ? 0 : -ENOMEM;
}

static int setup_redfish(struct vw_host_meters *m, const struct vw_host_config *cfg,
			 const char *node_name)
{
	const char *file = cfg->redfish_config_file;
	const char *node = cfg->redfish_node_name && *cfg->redfish_node_name
				   ? cfg->redfish_node_name
				   : node_name;
	char err[512] = "";
	int r;

	if (!file || !*file)
		return 0;
	if (!cfg->redfish_enabled) {
		vw_info("redfish: platform.redfish.enabled is false: %s is not read", file);
		return 0;
	}
	r = vw_bmc_file_lookup(file, node, &m->bmc, err, sizeof(err));
	if (r == -ENOENT && err[0]) {
		vw_warn("config: %s; no Redfish platform meter (set platform.redfish.node-name to "
			"this node's name in the file)",
			err);
		return 0;
	}
	if (r < 0) {
		vw_error("config: platform.redfish.config-file: %s", err[0] ? err : strerror(-r));
		return r;
	}
	if (m->bmc.password_file) {
		r = read_secret(m->bmc.password_file, &m->bmc_password);
		if (r < 0) {
			vw_error("config: %s: BMC \"%s\": cannot read passwordFile %s: %s", file,
				 m->bmc.id, m->bmc.password_file, strerror(-r));
			return r;
		}
	}
	m->redfish = (struct vw_redfish_config){
		.id = m->bmc.id,
		.endpoint = m->bmc.endpoint,
		.username = m->bmc.username,
		.password = m->bmc_password ? m->bmc_password : m->bmc.password,
		.ca_file = m->bmc.ca_file,
		.insecure = m->bmc.insecure,
		.timeout_ms = MS(cfg->redfish_timeout_ns),
		.interval_ms = MS(cfg->redfish_interval_ns),
		.staleness_ms = MS(cfg->redfish_staleness_ns),
	};
	if (strncmp(m->bmc.endpoint, "https://", 8) != 0) {
		vw_error("config: %s: BMC \"%s\": endpoint %s is not https:// (credentials are not "
			 "sent in clear)",
			 file, m->bmc.id, m->bmc.endpoint);
		return -EINVAL;
	}
	if (m->bmc.insecure)
		vw_warn("redfish: BMC \"%s\": insecure: its certificate is not checked", m->bmc.id);
	m->cfg.redfish = &m->redfish;
	vw_info("redfish: node \"%s\" -> BMC \"%s\" (%s)", node, m->bmc.id, m->bmc.endpoint);
	return 0;
}

static bool empty(const char *s)
{
	return !s || !*s;
}

static int ipmi_privilege(const char *s, enum vw_ipmi_privilege *ret)
{
	static const char *const names[] = {
		[VW_IPMI_PRIV_USER] = "user",
		[VW_IPMI_PRIV_OPERATOR] = "operator",
		[VW_IPMI_PRIV_ADMIN] = "admin",
	};

	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (s && strcmp(s, names[i]) == 0) {
			*ret = (enum vw_ipmi_privilege)i;
			return 0;
		}
	return -EINVAL; /* the option table's choices keep this from happening */
}

/* The LAN part: the password from its file, the workarounds as a NULL-ended list. */
static int setup_ipmi_lan(struct vw_host_meters *m, const struct vw_host_config *cfg)
{
	const char *file = cfg->ipmi.password_file;
	int r;

	if (!m->ipmi.host) {
		vw_error("config: --platform.ipmi.driver=lan needs --platform.ipmi.host");
		return -EINVAL;
	}
	if (!empty(file)) {
		r = read_secret(file, &m->ipmi_password);
		if (r == 0 && !*m->ipmi_password)
			r = -ENODATA;
		if (r < 0) {
			vw_error("config: --platform.ipmi.password-file: cannot read %s: %s", file,
				 r == -ENODATA ? "it is empty" : strerror(-r));
			return r;
		}
		m->ipmi.password = m->ipmi_password;
	}
	m->ipmi_workarounds = calloc(cfg->ipmi.workarounds.n + 1, sizeof(char *));
	if (!m->ipmi_workarounds)
		return -ENOMEM;
	for (size_t i = 0; i < cfg->ipmi.workarounds.n; i++)
		m->ipmi_workarounds[i] = cfg->ipmi.workarounds.v[i];
	m->ipmi.workarounds = m->ipmi_workarounds;
	return 0;
}

/* --platform.ipmi.*: always a configuration (in band by default, the device's path injected). */
static int setup_ipmi(struct vw_host_meters *m, const struct vw_host_config *cfg)
{
	const char *driver = cfg->ipmi.driver ? cfg->ipmi.driver : "auto";
	bool lan = strcmp(driver, "lan") == 0 ||
		   (strcmp(driver, "auto") == 0 && !empty(cfg->ipmi.host));
	int r;

	m->ipmi = (struct vw_ipmi_config){
		.driver = lan ? VW_IPMI_DRIVER_LAN : VW_IPMI_DRIVER_INBAND,
		.device = empty(cfg->ipmi.device) ? NULL : cfg->ipmi.device,
		.host = empty(cfg->ipmi.host) ? NULL : cfg->ipmi.host,
		.port = (unsigned)cfg->ipmi.port,
		.username = empty(cfg->ipmi.username) ? NULL : cfg->ipmi.username,
		.timeout_ms = MS(cfg->ipmi.timeout_ns),
		.interval_ns = cfg->ipmi.interval_ns,
		.stale_ns = cfg->ipmi.stale_ns,
	};
	r = ipmi_privilege(cfg->ipmi.privilege ? cfg->ipmi.privilege : "user", &m->ipmi.privilege);
	if (r < 0) {
		vw_error("config: --platform.ipmi.privilege: not user, operator or admin");
		return r;
	}
	r = lan ? setup_ipmi_lan(m, cfg) : 0;
	if (r == 0)
		m->cfg.ipmi = &m->ipmi;
	return r;
}

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
	int r;

	memset(m, 0, sizeof(*m)); /* on failure, vw_host_meters_fini() frees what was set */
	r = setup_hwmon(m, cfg);
	m->cfg.rapl_zones = cfg->rapl_zones.n ? (const char *const *)cfg->rapl_zones.v : NULL;
	if (r == 0)
		r = setup_redfish(m, cfg, node_name);
	return r < 0 ? r : setup_ipmi(m, cfg);
}

void vw_host_meters_fini(struct vw_host_meters *m)
{
	vw_hwmon_rules_free(m->hwmon_rules);
	vw_free_secret(m->bmc_password);
	vw_bmc_entry_clear(&m->bmc);
	vw_free_secret(m->ipmi_password);
	free(m->ipmi_workarounds);
	memset(m, 0, sizeof(*m));
}

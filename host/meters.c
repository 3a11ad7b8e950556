/* SPDX-License-Identifier: Apache-2.0 */
#include "meters.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "log.h"

#define PASSWORD_MAX 256 /* IPMI 2.0 takes 20 bytes; longer is refused by the meter itself */

static bool empty(const char *s)
{
	return !s || !*s;
}

/* The first line of --platform.ipmi.password-file, trailing whitespace removed. */
static int read_password(const char *path, char **ret)
{
	char buf[PASSWORD_MAX];
	int r = vw_read_str_at(AT_FDCWD, path, buf, sizeof(buf));

	if (r == -ENODATA)
		vw_error("config: --platform.ipmi.password-file: %s is empty", path);
	else if (r < 0)
		vw_error("config: --platform.ipmi.password-file: cannot read %s: %s", path,
			 strerror(-r));
	if (r < 0)
		return r;
	*ret = strdup(buf);
	explicit_bzero(buf, sizeof(buf));
	return *ret ? 0 : -ENOMEM;
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

/* --platform.ipmi.*: always a configuration (in band by default, the device's path injected). */
static int setup_ipmi(struct vw_host_meters *m, const struct vw_host_config *cfg)
{
	const char *driver = cfg->ipmi.driver ? cfg->ipmi.driver : "auto";
	struct vw_ipmi_config *ic = &m->ipmi;
	bool lan = strcmp(driver, "lan") == 0 ||
		   (strcmp(driver, "auto") == 0 && !empty(cfg->ipmi.host));
	int r;

	*ic = (struct vw_ipmi_config){
		.driver = lan ? VW_IPMI_DRIVER_LAN : VW_IPMI_DRIVER_INBAND,
		.device = empty(cfg->ipmi.device) ? NULL : cfg->ipmi.device,
		.host = empty(cfg->ipmi.host) ? NULL : cfg->ipmi.host,
		.port = (unsigned)cfg->ipmi.port,
		.username = empty(cfg->ipmi.username) ? NULL : cfg->ipmi.username,
		.timeout_ms = (long)(cfg->ipmi.timeout_ns / VW_NSEC_PER_MSEC),
		.interval_ns = cfg->ipmi.interval_ns,
		.stale_ns = cfg->ipmi.stale_ns,
	};
	m->cfg.ipmi = ic;
	r = ipmi_privilege(cfg->ipmi.privilege ? cfg->ipmi.privilege : "user", &ic->privilege);
	if (r < 0) {
		vw_error("config: --platform.ipmi.privilege: not user, operator or admin");
		return r;
	}
	if (lan && !ic->host) {
		vw_error("config: --platform.ipmi.driver=lan needs --platform.ipmi.host");
		return -EINVAL;
	}
	if (!lan)
		return 0;
	if (!empty(cfg->ipmi.password_file)) {
		r = read_password(cfg->ipmi.password_file, &m->ipmi_password);
		if (r < 0)
			return r;
		ic->password = m->ipmi_password;
	}
	m->ipmi_workarounds = calloc(cfg->ipmi.workarounds.n + 1, sizeof(char *));
	if (!m->ipmi_workarounds)
		return -ENOMEM;
	for (size_t i = 0; i < cfg->ipmi.workarounds.n; i++)
		m->ipmi_workarounds[i] = cfg->ipmi.workarounds.v[i];
	ic->workarounds = m->ipmi_workarounds;
	return 0;
}

int vw_host_meters_setup(struct vw_host_meters *m, const struct vw_host_config *cfg,
			 const char *node_name)
{
	int r;

	(void)node_name;
	memset(m, 0, sizeof(*m));
	r = setup_ipmi(m, cfg);
	if (r < 0)
		vw_host_meters_fini(m);
	return r;
}

void vw_host_meters_fini(struct vw_host_meters *m)
{
	if (m->ipmi_password)
		explicit_bzero(m->ipmi_password, strlen(m->ipmi_password));
	free(m->ipmi_password);
	free(m->ipmi_workarounds);
	memset(m, 0, sizeof(*m));
}

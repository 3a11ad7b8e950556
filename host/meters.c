/* SPDX-License-Identifier: Apache-2.0 */
#include "meters.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "log.h"

static bool configured(const struct vw_host_meters *m, const struct vw_power_source_ops *ops)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->configs[i].ops == ops)
			return true;
	return false;
}

static int setup_one(struct vw_host_meters *m, const struct vw_host_config *cfg,
		     const struct vw_power_source_ops *ops, const char *node_name)
{
	const struct vw_source_options *o = ops->options;
	const void *opts = vw_host_meter_options(cfg, ops);
	void *config = NULL;
	int r;

	if (!o || configured(m, ops))
		return 0;
	if (m->n == VW_HOST_METERS_MAX)
		return -E2BIG;
	if (!o->configure) {
		m->configs[m->n++] = (struct vw_source_config){ .ops = ops, .config = opts };
		return 0;
	}
	r = o->configure(opts, node_name, &config);
	if (r < 0)
		return r;
	m->configs[m->n++] = (struct vw_source_config){ .ops = ops, .config = config };
	return 0;
}

int vw_host_meters_setup(struct vw_host_meters *m, const struct vw_host_config *cfg,
			 const char *node_name)
{
	const struct vw_power_source_ops *const *chains[] = { vw_host_power_sources,
							      vw_host_platform_sources };
	int r = 0;

	memset(m, 0, sizeof(*m)); /* on failure, vw_host_meters_fini() frees what was set */
	for (size_t c = 0; c < 2 && r == 0; c++)
		for (const struct vw_power_source_ops *const *s = chains[c]; *s && r == 0; s++)
			r = setup_one(m, cfg, *s, node_name);
	return r;
}

void vw_host_meters_fini(struct vw_host_meters *m)
{
	for (size_t i = 0; i < m->n; i++) {
		const struct vw_source_options *o = m->configs[i].ops->options;

		if (o->configure && o->release && m->configs[i].config)
			o->release((void *)m->configs[i].config);
	}
	memset(m, 0, sizeof(*m));
}

/* The chain's names at most 8, those a source's options put first before the others
 * (experimental.hwmon.forceEnabled); 0 when none asks to. */
static size_t first_then_rest(const struct vw_host_config *c, const char **names)
{
	const struct vw_power_source_ops *const *chain = vw_host_power_sources;
	size_t n = 0, first;

	for (size_t i = 0; chain[i] && n < 8; i++)
		if (chain[i]->options && chain[i]->options->first &&
		    chain[i]->options->first(vw_host_meter_options(c, chain[i])))
			names[n++] = chain[i]->name;
	first = n;
	for (size_t i = 0; first && chain[i] && n < 8; i++) {
		bool named = false;

		for (size_t j = 0; j < first && !named; j++)
			named = names[j] == chain[i]->name;
		if (!named)
			names[n++] = chain[i]->name;
	}
	return n;
}

int vw_host_cpu_source_names(const struct vw_host_config *c, const char **names,
			     const char *const **ret)
{
	size_t n = 0;

	*ret = c->sources.n ? (const char *const *)c->sources.v : NULL;
	if (c->sources.n)
		return 0;
	for (size_t i = 0; i < c->preferred_meters.n && n < 6; i++) {
		const char *m = c->preferred_meters.v[i];

		if (strcmp(m, "rapl") != 0 && strcmp(m, "hwmon") != 0 && strcmp(m, "fake") != 0) {
			vw_error("config: cpu.preferredMeters: unknown meter \"%s\" (rapl, hwmon, fake)",
				 m);
			return -EINVAL;
		}
		names[n++] = strcmp(m, "fake") == 0 ? "estimator" : m;
	}
	if (n)
		names[n++] = "estimator";
	else
		n = first_then_rest(c, names);
	if (!n)
		return 0;
	names[n] = NULL;
	*ret = names;
	return 0;
}

static const char *const *names_or_all(const struct vw_strlist *l)
{
	return l->n ? (const char *const *)l->v : NULL;
}

int vw_host_meters_open(const struct vw_host_config *cfg, const struct vw_power_env *env,
			struct vw_power_source src[VW_HOST_METERS_OPENED], size_t *n)
{
	const struct vw_strlist *plat = &cfg->platform_sources;
	const char *buf[9];
	const char *const *cpu_names;
	int r = vw_host_cpu_source_names(cfg, buf, &cpu_names);

	*n = 0;
	if (r == 0)
		r = vw_power_source_open(vw_host_power_sources, env, cpu_names, &src[0]);
	if (r < 0) {
		vw_error("power: no power source could be opened");
		return r;
	}
	*n = 1;
	if (plat->n == 1 && strcmp(plat->v[0], "none") == 0)
		return 0;
	r = vw_power_source_open(vw_host_platform_sources, env, names_or_all(plat), &src[1]);
	if (r == -EINVAL) {
		char known[128];

		vw_power_chain_names(vw_host_platform_sources, known, sizeof(known));
		vw_error("config: --platform.sources names a meter this build does not have "
			 "(known: %s; none for no platform meter)",
			 known);
		return r;
	}
	if (r < 0) {
		vw_log(plat->n ? VW_LOG_WARN : VW_LOG_INFO,
		       "power: no platform meter found (%s): %s", strerror(-r),
		       plat->n ? "check --platform.sources and the meter" : "no measured platform zone");
		return 0;
	}
	*n = 2;
	return 0;
}

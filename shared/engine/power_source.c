/* SPDX-License-Identifier: Apache-2.0 */
#include "power_source.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "log.h"

static int try_open(const struct vw_power_source_ops *ops, const struct vw_power_env *env,
		    struct vw_power_source *ret, const char *what)
{
	void *state = NULL;
	int r = ops->open(env, &state);

	if (r < 0) {
		if (r == -ENODEV)
			vw_info("power: source %s: not present on this machine", ops->name);
		else
			vw_warn("power: source %s: cannot open: %s", ops->name, strerror(-r));
		return r;
	}
	ret->ops = ops;
	ret->state = state;
	if (ops->standby)
		vw_info("power: source %s standing by: used while its data comes", ops->name);
	else
		vw_info("power: %s source %s (%s)", what, ops->name,
			ops->measured ? "measured" : "estimated");
	return 0;
}

static const struct vw_power_source_ops *find(const struct vw_power_source_ops *const *chain,
					      const char *name)
{
	for (size_t j = 0; chain[j]; j++)
		if (strcmp(chain[j]->name, name) == 0)
			return chain[j];
	vw_error("power: unknown source \"%s\"", name);
	return NULL;
}

int vw_power_source_open(const struct vw_power_source_ops *const *chain,
			 const struct vw_power_env *env, const char *const *only,
			 struct vw_power_source *ret)
{
	bool named = only && only[0];
	int err = -ENODEV;

	*ret = (struct vw_power_source){ 0 };
	for (size_t i = 0; named ? only[i] != NULL : chain[i] != NULL; i++) {
		const struct vw_power_source_ops *ops = named ? find(chain, only[i]) : chain[i];
		int r;

		if (!ops)
			return -EINVAL;
		r = try_open(ops, env, ret, "using");
		if (r == 0)
			return 0;
		if (err == -ENODEV)
			err = r;
	}
	return err;
}

int vw_power_read_result(const int *errs, size_t n)
{
	int first = 0;

	for (size_t i = 0; i < n; i++) {
		if (errs[i] == 0)
			return 0;
		first = first ? first : errs[i];
	}
	return first ? first : -ENODEV;
}

void vw_power_source_close(struct vw_power_source *src)
{
	if (src->ops && src->state)
		src->ops->close(src->state);
	*src = (struct vw_power_source){ 0 };
}

int vw_power_source_open_each(const struct vw_power_source_ops *const *chain,
			      const struct vw_power_env *env, struct vw_power_source *ret,
			      size_t max, size_t *ret_n)
{
	size_t n = 0;

	for (size_t i = 0; chain[i] && n < max; i++)
		if (try_open(chain[i], env, &ret[n], n ? "falling back to" : "using") == 0)
			n++;
	*ret_n = n;
	return n ? 0 : -ENODEV;
}

size_t vw_power_source_pick(const struct vw_power_source *s, size_t n)
{
	for (size_t i = 0; i + 1 < n; i++)
		if (!s[i].ops->fresh || s[i].ops->fresh(s[i].state))
			return i;
	return n ? n - 1 : 0;
}

const void *vw_power_source_config(const struct vw_power_env *env,
				   const struct vw_power_source_ops *ops)
{
	for (size_t i = 0; env && i < env->n_configs; i++)
		if (env->configs[i].ops == ops)
			return env->configs[i].config;
	return NULL;
}

/* SPDX-License-Identifier: Apache-2.0 */
#include "power_source.h"

#include <errno.h>
#include <string.h>

#include "log.h"

static int try_open(const struct vw_power_source_ops *ops, const struct vw_power_env *env,
		    struct vw_power_source *ret)
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
	vw_info("power: using source %s (%s)", ops->name, ops->measured ? "measured" : "estimated");
	return 0;
}

int vw_power_source_open(const struct vw_power_source_ops *const *chain,
			 const struct vw_power_env *env, const char *const *only,
			 struct vw_power_source *ret)
{
	int err = -ENODEV;

	*ret = (struct vw_power_source){ 0 };
	if (only && only[0]) {
		for (size_t i = 0; only[i]; i++) {
			size_t j;
			int r;

			for (j = 0; chain[j]; j++)
				if (strcmp(chain[j]->name, only[i]) == 0)
					break;
			if (!chain[j]) {
				vw_error("power: unknown source \"%s\"", only[i]);
				return -EINVAL;
			}
			r = try_open(chain[j], env, ret);
			if (r == 0)
				return 0;
			if (err == -ENODEV)
				err = r;
		}
		return err;
	}
	for (size_t j = 0; chain[j]; j++) {
		int r = try_open(chain[j], env, ret);

		if (r == 0)
			return 0;
		if (err == -ENODEV)
			err = r;
	}
	return err;
}

void vw_power_source_close(struct vw_power_source *src)
{
	if (src->ops && src->state)
		src->ops->close(src->state);
	*src = (struct vw_power_source){ 0 };
}

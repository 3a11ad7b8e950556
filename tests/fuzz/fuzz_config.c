/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: the --config.file YAML reader (config_yaml.c over yaml_reader.c) with the
 * real option tables of both daemons. The input is the file. Properties of an accepted file:
 * every bounded number lies within its option's bounds and every string with choices is one
 * of them; and the effective configuration --config.print writes reads back to the same
 * configuration (printed again, byte for byte).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../guest/options.h"
#include "../../host/options.h"
#include "config_priv.h"
#include "fuzz_common.h"

/* Large enough for either daemon's configuration struct. */
union any_config {
	struct vw_host_config host;
	struct vw_guest_config guest;
};

/* Defaults only: a load without flags and without a file. */
static void defaults(const struct vw_config_program *p, union any_config *cfg)
{
	char *argv[] = { (char *)p->name, NULL };
	char err[512];

	memset(cfg, 0, sizeof(*cfg));
	if (vw_config_load(p, cfg, 1, argv, NULL, err, sizeof(err)) != VW_CONFIG_CONTINUE)
		vw_fuzz_fail("%s: defaults do not load: %s", p->name, err);
}

static char *print(const struct vw_config_program *p, const union any_config *cfg, size_t *len)
{
	char *text = NULL;
	FILE *f = open_memstream(&text, len);

	if (!f)
		abort();
	vw_config_print(p, cfg, f);
	if (fclose(f) != 0)
		abort();
	return text;
}

static void check_values(const struct vw_config_program *p, const union any_config *cfg)
{
	for (size_t i = 0; i < p->n_opts; i++) {
		const struct vw_option *o = &p->opts[i];
		const void *f = vw_opt_cfield(o, cfg);
		double v = 0;
		bool ok = o->choices == NULL;

		if (o->type == VW_OPT_STRING && o->choices && *(char *const *)f)
			for (size_t c = 0; o->choices[c]; c++)
				ok = ok || strcmp(*(char *const *)f, o->choices[c]) == 0;
		vw_fuzz_assert(ok || o->type != VW_OPT_STRING || !*(char *const *)f,
			       "%s: \"%s\" is not one of its choices", o->flag, *(char *const *)f);
		if (!vw_opt_bounded(o))
			continue;
		if (o->type == VW_OPT_DURATION)
			v = (double)*(const uint64_t *)f / 1e9;
		else if (o->type == VW_OPT_UINT)
			v = (double)*(const uint64_t *)f;
		else
			v = *(const double *)f;
		vw_fuzz_assert(v >= o->min && v <= o->max, "%s: %g outside [%g, %g]", o->flag, v,
			       o->min, o->max);
	}
}

static void one_program(const struct vw_config_program *p, const uint8_t *data, size_t size)
{
	union any_config cfg, again;
	char err[1024];
	_cleanup_free_ char *text = NULL, *text2 = NULL;
	size_t len, len2;
	int r;

	defaults(p, &cfg);
	r = vw_config_yaml_load_buf(p, &cfg, "fuzz.yaml", (const char *)data, size, NULL, err,
				    sizeof(err));
	vw_fuzz_assert(r <= 0, "%s: load returned %d", p->name, r);
	if (r < 0) {
		vw_fuzz_assert(err[0] != '\0', "%s: error %d without a message", p->name, r);
		vw_config_free(p, &cfg);
		return;
	}
	check_values(p, &cfg);
	text = print(p, &cfg, &len);
	vw_config_free(p, &cfg);

	defaults(p, &again);
	r = vw_config_yaml_load_buf(p, &again, "printed.yaml", text, len, NULL, err, sizeof(err));
	vw_fuzz_assert(r == 0, "%s: the printed configuration does not load: %s\n%s", p->name,
		       err, text);
	text2 = print(p, &again, &len2);
	vw_config_free(p, &again);
	vw_fuzz_assert(len == len2 && memcmp(text, text2, len) == 0,
		       "%s: printed, read back and printed again differs:\n%s\n---\n%s", p->name,
		       text, text2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > VW_CONFIG_MAX_BYTES + 1)
		return 0;
	one_program(vw_host_program(), data, size);
	one_program(&vw_guest_program, data, size);
	return 0;
}

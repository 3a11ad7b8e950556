/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libyaml, loaded on first use (dynlib.h): only a --config.file, a --web.config.file or a BMC
 * file is YAML, and most daemons run with flags alone, so they never map it. These are the
 * calls yaml_reader.c makes.
 */
#include <errno.h>
#include <yaml.h>

#include "dynlib.h"
#include "yaml_lazy.h"

static struct vw_dynlib lib = VW_DYNLIB("libyaml-0.so.2");

int vw_yaml_load(char *why, size_t len)
{
	return vw_dynlib_load(&lib, "libyaml", "libyaml-0-2", why, len);
}

VW_DYNLIB_FORWARD(lib, 0, int, yaml_parser_initialize, (yaml_parser_t *p), (p))
VW_DYNLIB_FORWARD_VOID(lib, yaml_parser_delete, (yaml_parser_t *p), (p))
VW_DYNLIB_FORWARD_VOID(lib, yaml_parser_set_input_string,
		       (yaml_parser_t *p, const unsigned char *input, size_t size),
		       (p, input, size))
VW_DYNLIB_FORWARD(lib, 0, int, yaml_parser_parse, (yaml_parser_t *p, yaml_event_t *ev), (p, ev))
VW_DYNLIB_FORWARD_VOID(lib, yaml_event_delete, (yaml_event_t *ev), (ev))

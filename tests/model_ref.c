/* SPDX-License-Identifier: Apache-2.0 */
#include "vw_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_ref.h"

json_object *vw_ref_parse(const char *json)
{
	json_object *o = json_tokener_parse(json);

	if (!o)
		fail_msg("reference parse failed: %.60s", json);
	return o;
}

json_object *vw_ref_load(const char *file)
{
	char path[1024];
	json_object *o;

	snprintf(path, sizeof(path), "%s/models/%s", VW_TEST_DATA, file);
	o = json_object_from_file(path);
	if (!o)
		fail_msg("reference load failed: %s", path);
	return o;
}

static json_object *walk(json_object *root, const char *path)
{
	char buf[512], *save = NULL;
	json_object *o = root;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *k = strtok_r(buf, "/", &save); k; k = strtok_r(NULL, "/", &save))
		if (!json_object_object_get_ex(o, k, &o))
			fail_msg("reference: no %s (at %s)", path, k);
	return o;
}

double vw_ref_num(json_object *root, const char *path)
{
	json_object *o = walk(root, path);

	if (!json_object_is_type(o, json_type_double) && !json_object_is_type(o, json_type_int))
		fail_msg("reference: %s is not a number", path);
	return json_object_get_double(o);
}

double vw_ref_idx(json_object *root, const char *path, size_t i)
{
	json_object *o = walk(root, path);

	if (!json_object_is_type(o, json_type_array) || i >= json_object_array_length(o))
		fail_msg("reference: %s[%zu] missing", path, i);
	return json_object_get_double(json_object_array_get_idx(o, i));
}

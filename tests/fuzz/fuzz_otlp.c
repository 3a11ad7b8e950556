/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: the exposition → OTLP/JSON conversion of the OTLP pusher (otlp_json.c).
 * The input is read as an exposition (any bytes: the converter trusts our own writer's
 * grammar, but must never read out of bounds or write invalid JSON on anything else).
 * Properties: the output is one JSON object that json-c's strict parser accepts, with the
 * request's envelope (resourceMetrics -> scopeMetrics -> metrics, an array).
 */
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "otlp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct vw_otlp_resource res = { "virtwatt-fuzz", "0", "host\"\n", "" };
	struct json_tokener *tok;
	struct json_object *o, *rm, *sm, *metrics;
	char *out = NULL;
	size_t len = 0;

	if (vw_otlp_json_from_text((const char *)data, size, &res, 1, 2, &out, &len) < 0)
		return 0;
	if (strlen(out) != len)
		abort();
	tok = json_tokener_new();
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	o = json_tokener_parse_ex(tok, out, (int)len);
	if (!o || json_tokener_get_error(tok) != json_tokener_success ||
	    !json_object_object_get_ex(o, "resourceMetrics", &rm) ||
	    !json_object_is_type(rm, json_type_array) ||
	    !json_object_object_get_ex(json_object_array_get_idx(rm, 0), "scopeMetrics", &sm) ||
	    !json_object_object_get_ex(json_object_array_get_idx(sm, 0), "metrics", &metrics) ||
	    !json_object_is_type(metrics, json_type_array))
		abort();
	json_object_put(o);
	json_tokener_free(tok);
	free(out);
	return 0;
}

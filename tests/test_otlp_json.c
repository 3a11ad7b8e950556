/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The exposition -> OTLP/JSON conversion (shared/export/otlp_json.c) on fixed input: the exact
 * request for a counter and a gauge family (sums without _total, units from the name, start
 * and point times, empty labels absent), escapes undone in labels and help and JSON-escaped
 * again, NaN and infinities as the protobuf JSON mapping spells them, malformed lines left out.
 * (tests/otlp/test_otlp.py decodes the real daemon's pushes with the official protos.)
 */
#include "vw_test.h"

#include <stdlib.h>
#include <string.h>

#include "otlp.h"

static char *convert(const char *text)
{
	const struct vw_otlp_resource res = { "virtwatt-host", "1.2", "h1", "node-1" };
	char *out = NULL;
	size_t len = 0;

	assert_int_equal(vw_otlp_json_from_text(text, strlen(text), &res, 100, 200, &out, &len), 0);
	assert_int_equal(strlen(out), len);
	return out;
}

static void test_exact(void **state)
{
	char *out;

	(void)state;
	out = convert("# HELP kepler_node_cpu_joules_total Energy\n"
		      "# TYPE kepler_node_cpu_joules_total counter\n"
		      "kepler_node_cpu_joules_total{zone=\"package\",path=\"\",node_name=\"n\"} 1.5\n"
		      "# HELP kepler_node_cpu_watts Power\n"
		      "# TYPE kepler_node_cpu_watts gauge\n"
		      "kepler_node_cpu_watts{zone=\"package\"} 0.25\n"
		      "kepler_node_cpu_watts 3\n");
	assert_string_equal(
		out,
		"{\"resourceMetrics\":[{\"resource\":{\"attributes\":["
		"{\"key\":\"service.name\",\"value\":{\"stringValue\":\"virtwatt-host\"}},"
		"{\"key\":\"service.version\",\"value\":{\"stringValue\":\"1.2\"}},"
		"{\"key\":\"host.name\",\"value\":{\"stringValue\":\"h1\"}},"
		"{\"key\":\"k8s.node.name\",\"value\":{\"stringValue\":\"node-1\"}}]},"
		"\"scopeMetrics\":[{\"scope\":{\"name\":\"virtwatt\",\"version\":\"" VW_VERSION "\"},"
		"\"metrics\":["
		"{\"name\":\"kepler_node_cpu_joules\",\"description\":\"Energy\",\"unit\":\"J\","
		"\"sum\":{\"dataPoints\":[{\"attributes\":["
		"{\"key\":\"zone\",\"value\":{\"stringValue\":\"package\"}},"
		"{\"key\":\"node_name\",\"value\":{\"stringValue\":\"n\"}}],"
		"\"startTimeUnixNano\":\"100\",\"timeUnixNano\":\"200\",\"asDouble\":1.5}],"
		"\"aggregationTemporality\":2,\"isMonotonic\":true}},"
		"{\"name\":\"kepler_node_cpu_watts\",\"description\":\"Power\",\"unit\":\"W\","
		"\"gauge\":{\"dataPoints\":[{\"attributes\":["
		"{\"key\":\"zone\",\"value\":{\"stringValue\":\"package\"}}],"
		"\"timeUnixNano\":\"200\",\"asDouble\":0.25},"
		"{\"attributes\":[],\"timeUnixNano\":\"200\",\"asDouble\":3}]}}"
		"]}]}]}");
	free(out);
}

static void test_escapes_and_values(void **state)
{
	char *out;

	(void)state;
	out = convert("# HELP x_seconds_total A \\\\ b\\nc \"q\"\n"
		      "# TYPE x_seconds_total counter\n"
		      "x_seconds_total{comm=\"a \\\"q\\\" \\\\ b\\nc\\u\"} 2\n"
		      "# TYPE y_ratio gauge\n"
		      "y_ratio{a=\"1\"} NaN\n"
		      "y_ratio{a=\"2\"} +Inf\n"
		      "y_ratio{a=\"3\"} -Inf\n"
		      "y_ratio{a=\"4\"} not-a-number\n"
		      "y_ratio{a=\"5\" 1\n"
		      "y_ratio{a=\"6\"}\n"
		      "other_family 7\n"
		      "y_ratio{a=\"7\"} 1e-05\n");
	/* \\ and \n and \" undone, then JSON-escaped; \u is no escape of the text format. */
	assert_non_null(strstr(out, "\"description\":\"A \\\\ b\\nc \\\"q\\\"\""));
	assert_non_null(strstr(out, "\"stringValue\":\"a \\\"q\\\" \\\\ b\\nc\\\\u\""));
	assert_non_null(strstr(out, "\"unit\":\"s\""));
	assert_non_null(strstr(out, "\"name\":\"x_seconds\""));
	assert_non_null(strstr(out, "\"name\":\"y_ratio\",\"description\":\"\",\"unit\":\"1\""));
	assert_non_null(strstr(out, "\"asDouble\":\"NaN\""));
	assert_non_null(strstr(out, "\"asDouble\":\"Infinity\""));
	assert_non_null(strstr(out, "\"asDouble\":\"-Infinity\""));
	assert_non_null(strstr(out, "\"asDouble\":1.0000000000000001e-05"));
	/* Malformed samples and a sample of no declared family are left out. */
	assert_null(strstr(out, "\"stringValue\":\"4\""));
	assert_null(strstr(out, "\"stringValue\":\"5\""));
	assert_null(strstr(out, "\"stringValue\":\"6\""));
	assert_null(strstr(out, "other_family"));
	free(out);

	/* Nothing at all: the envelope, no metric. */
	out = convert("");
	assert_non_null(strstr(out, "\"metrics\":[]}]}]}"));
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact),
		cmocka_unit_test(test_escapes_and_values),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The model compiled in, used when no file or URL gives one.
 *
 * Provenance (Apache-2.0, sustainable-computing-io):
 * - The weights are kepler tag v0.7.12, data/model_weight/intel_rapl_AbsPowerModel.json, verbatim:
 *   the default Kepler's image loads for RAPL. It is kepler-model-db models/v0.7/ec2-0.7.11,
 *   rapl-sysfs AbsPower BPFOnly SGDRegressorTrainer_0: node type 0, an AWS m5.metal running
 *   `stress`. Inputs: bpf_cpu_time_ms (CPU ms per second, scale 95877); bpf_page_cache_hit has
 *   weight 0. Components package, core, uncore (both zero) and dram.
 * - machine_spec added here from kepler-model-db models/v0.7/ec2-0.7.11/node_type_index.json,
 *   node type "0" (attrs of m5.metal-ami-0e4d0bb9670ea8db0). Its 96 "cores" are the logical
 *   CPUs (2 x 24 cores x 2 threads), so on a smaller host idle is scaled by host/96.
 * A copy of the weight file is tests/data/models/kepler-v0.7.12_*_intel_rapl_AbsPowerModel.json;
 * test_model.c checks the two evaluate the same.
 */
#include <string.h>

#include "log.h"
#include "model.h"

const char vw_model_builtin_name[] = "builtin:kepler-v0.7.12-intel_rapl-AbsPower-SGD-m5.metal";

/*
 * The file's four components differ only in the bias and the weight of bpf_cpu_time_ms (the same
 * scale in all; bpf_page_cache_hit weighs 0 everywhere): one macro writes each, the numbers as
 * the file's text.
 */
#define COMPONENT(name, bias, cpu_weight)                                                          \
	"  \"" name "\": {\n"                                                                      \
	"    \"All_Weights\": {\n"                                                                 \
	"      \"Bias_Weight\": " bias ",\n"                                                       \
	"      \"Categorical_Variables\": {},\n"                                                   \
	"      \"Numerical_Variables\": {\n"                                                       \
	"        \"bpf_cpu_time_ms\": {\n"                                                         \
	"          \"scale\": 95877.00000000001,\n"                                                \
	"          \"weight\": " cpu_weight "\n"                                                   \
	"        },\n"                                                                             \
	"        \"bpf_page_cache_hit\": {\n"                                                      \
	"          \"scale\": 1.0,\n"                                                              \
	"          \"weight\": 0.0\n"                                                              \
	"        }\n"                                                                              \
	"      }\n"                                                                                \
	"    }\n"                                                                                  \
	"  }"

static const char builtin_json[] =
	"{\n"
	"  \"model_name\": \"SGDRegressorTrainer_0\",\n"
	"  \"machine_spec\": {\"processor\": \"intel_xeon_platinum_8259cl\", \"cores\": 96,\n"
	"    \"chips\": 2, \"memory\": 377, \"frequency\": 3500},\n"
	COMPONENT("package", "143.81206324506658", "305.148172889668") ",\n"
	COMPONENT("core", "0.0", "0.0") ",\n"
	COMPONENT("uncore", "0.0", "0.0") ",\n"
	COMPONENT("dram", "18.616285480502686", "8.434209551249596") "\n"
	"}\n";

int vw_model_load_builtin(struct vw_model **ret)
{
	char err[256];
	int r = vw_model_parse(builtin_json, sizeof(builtin_json) - 1, vw_model_builtin_name, ret,
			       err, sizeof(err));

	if (r < 0)
		vw_error("model: parse the built-in model: %s", err);
	return r;
}

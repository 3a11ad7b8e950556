/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A model for a machine no one trained on (a public-cloud VM): watts per vCPU by processor
 * architecture, from what the machine shows of itself in /proc/cpuinfo.
 *
 *     watts = vCPUs x min + (max - min) x busy vCPUs        (busy vCPUs = CPU ms per s / 1000)
 *
 * Provenance (Apache-2.0): Kepler tag v0.7.12, data/legacy/power_data.csv, the
 * "Min Watts" and "Max Watts" per vCPU of each architecture, which Kepler took from Cloud Carbon
 * Footprint's coefficients (SPECpower results averaged per microarchitecture). The numbers below
 * are that file's, to the digit.
 *
 * The model is written as a Kepler linear weight file (component "package": the CPU's power, as
 * those coefficients are) and parsed like any other, so it evaluates, clamps and names itself
 * the same way.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "model.h"
#include "procfs.h"

static const struct {
	const char *name;
	double min_w, max_w;
} archs[] = {
	{ "Graviton", 0.4742621527777778, 1.6929615162037037 },
	{ "Ivy Bridge", 3.0369270833333335, 8.248611111111112 },
	{ "Sandy Bridge", 2.1694411458333334, 8.575357663690477 },
	{ "Haswell", 1.9005681818181814, 6.012910353535353 },
	{ "Sky Lake", 0.6446044454253452, 4.193436438541878 },
	{ "Cascade Lake", 0.6389493581523519, 3.9673047343937564 },
	{ "EPYC 2nd Gen", 0.4742621527777778, 1.6929615162037037 },
	{ "Graviton2", 0.4742621527777778, 1.6929615162037037 },
	{ "Broadwell", 0.7128342245989304, 3.6853275401069516 },
	{ "EPYC 1st Gen", 0.82265625, 2.553125 },
	{ "Coffee Lake", 1.138425925925926, 5.421759259259258 },
	{ "Alder Lake", 1.138425925925926, 5.421759259259258 },
};

/* Intel family 6 models (Intel's SDM, vol. 4, table 2-1; the kernel's intel-family.h). */
static const struct {
	int model;
	const char *arch;
} intel6[] = {
	{ 42, "Sandy Bridge" }, { 45, "Sandy Bridge" }, { 58, "Ivy Bridge" },
	{ 62, "Ivy Bridge" },   { 60, "Haswell" },	{ 63, "Haswell" },
	{ 69, "Haswell" },	{ 70, "Haswell" },	{ 61, "Broadwell" },
	{ 71, "Broadwell" },    { 79, "Broadwell" },    { 86, "Broadwell" },
	{ 78, "Sky Lake" },	{ 94, "Sky Lake" },	{ 142, "Coffee Lake" },
	{ 158, "Coffee Lake" }, { 165, "Coffee Lake" }, { 166, "Coffee Lake" },
	{ 151, "Alder Lake" },  { 154, "Alder Lake" },  { 183, "Alder Lake" },
	{ 186, "Alder Lake" },  { 191, "Alder Lake" },
};

static const char *intel_arch(const struct vw_cpu_info *id, bool *exact)
{
	if (id->family != 6)
		return NULL;
	if (id->model == 85 && id->stepping < 5) /* Skylake-SP */
		return "Sky Lake";
	if (id->model == 85) { /* steppings 5-7 Cascade Lake, 10-11 Cooper Lake */
		*exact = id->stepping <= 7;
		return "Cascade Lake";
	}
	for (size_t i = 0; i < ARRAY_SIZE(intel6); i++)
		if (intel6[i].model == id->model)
			return intel6[i].arch;
	/* Newer server parts (Ice Lake-SP 106, Sapphire Rapids 143, ...): the newest listed. */
	*exact = false;
	return id->model > 85 ? "Cascade Lake" : NULL;
}

static const char *amd_arch(const struct vw_cpu_info *id, bool *exact)
{
	if (id->family == 0x17) { /* Zen, Zen 2: Naples is model 0x01, Rome 0x31 */
		*exact = id->model == 0x01 || id->model == 0x31;
		return id->model < 0x30 ? "EPYC 1st Gen" : "EPYC 2nd Gen";
	}
	*exact = false; /* Zen 3 and later (Milan, Genoa, Turin): the newest listed */
	return id->family > 0x17 ? "EPYC 2nd Gen" : NULL;
}

static const char *arm_arch(const struct vw_cpu_info *id, bool *exact)
{
	if (id->implementer != 0x41) /* Arm Ltd's own cores: Graviton's */
		return NULL;
	switch (id->part) {
	case 0xd08: /* Cortex-A72: Graviton */
		return "Graviton";
	case 0xd0c: /* Neoverse N1: Graviton2 */
		return "Graviton2";
	case 0xd40: /* Neoverse V1: Graviton3 */
	case 0xd4f: /* Neoverse V2: Graviton4 */
		*exact = false;
		return "Graviton2";
	default:
		return NULL;
	}
}

const char *vw_cpu_arch(const struct vw_cpu_info *id, bool *ret_exact)
{
	bool exact = true;
	const char *a = NULL;

	if (strcmp(id->vendor_id, "GenuineIntel") == 0)
		a = intel_arch(id, &exact);
	else if (strcmp(id->vendor_id, "AuthenticAMD") == 0)
		a = amd_arch(id, &exact);
	else if (id->implementer > 0)
		a = arm_arch(id, &exact);
	if (ret_exact)
		*ret_exact = a && exact;
	return a;
}

int vw_model_percpu(const char *arch, unsigned ncpu, struct vw_model **ret, char *name,
		    size_t namelen)
{
	char json[1024], err[256];
	size_t i;

	for (i = 0; i < ARRAY_SIZE(archs) && (!arch || strcmp(archs[i].name, arch) != 0); i++)
		;
	if (i == ARRAY_SIZE(archs) || ncpu == 0)
		return -ENOENT;
	/* x/scale with scale 1000: the busy vCPUs; weight max - min per busy vCPU. */
	snprintf(json, sizeof(json),
		 "{\"model_name\": \"percpu\", \"package\": {\"All_Weights\": {"
		 "\"Bias_Weight\": %.17g, \"Categorical_Variables\": {}, \"Numerical_Variables\": "
		 "{\"bpf_cpu_time_ms\": {\"scale\": 1000, \"weight\": %.17g}}}}}",
		 archs[i].min_w * ncpu, archs[i].max_w - archs[i].min_w);
	snprintf(name, namelen, "builtin:percpu-%s-%uvcpu", archs[i].name, ncpu);
	for (char *p = name; *p; p++)
		if (*p == ' ')
			*p = '_';
	return vw_model_parse(json, strlen(json), name, ret, err, sizeof(err));
}

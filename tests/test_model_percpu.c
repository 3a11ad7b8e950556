/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The per-vCPU built-in model (shared/model/model_percpu.c): which architecture each
 * processor's /proc/cpuinfo names (texts shaped like the kernel's, for the cloud's common
 * parts), the watts the model gives, and when vw_model_source_load picks it.
 */
#include "vw_test.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "macro.h"
#include "model.h"
#include "procfs.h"

/* n processors of one x86 part, as /proc/cpuinfo lists them. */
static void x86(char *buf, size_t size, unsigned n, const char *vendor, int family, int model,
		int stepping, const char *name)
{
	size_t off = 0;

	for (unsigned i = 0; i < n; i++)
		off += (size_t)snprintf(buf + off, size - off,
					"processor\t: %u\nvendor_id\t: %s\ncpu family\t: %d\n"
					"model\t\t: %d\nmodel name\t: %s\nstepping\t: %d\n"
					"cpu MHz\t\t: 2500.000\n\n",
					i, vendor, family, model, name, stepping);
}

static void test_architectures(void **state)
{
	static const struct {
		const char *vendor;
		int family, model, stepping;
		const char *name, *arch;
		bool exact;
	} cases[] = {
		{ "GenuineIntel", 6, 85, 7, "Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz",
		  "Cascade Lake", true },
		{ "GenuineIntel", 6, 85, 4, "Intel(R) Xeon(R) Platinum 8175M CPU @ 2.50GHz",
		  "Sky Lake", true },
		{ "GenuineIntel", 6, 79, 1, "Intel(R) Xeon(R) CPU E5-2686 v4 @ 2.30GHz", "Broadwell",
		  true },
		{ "GenuineIntel", 6, 63, 2, "Intel(R) Xeon(R) CPU E5-2676 v3 @ 2.40GHz", "Haswell",
		  true },
		{ "GenuineIntel", 6, 106, 6, "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz",
		  "Cascade Lake", false },
		{ "AuthenticAMD", 23, 1, 2, "AMD EPYC 7571", "EPYC 1st Gen", true },
		{ "AuthenticAMD", 23, 49, 0, "AMD EPYC 7R32", "EPYC 2nd Gen", true },
		{ "AuthenticAMD", 25, 1, 1, "AMD EPYC 7R13 Processor", "EPYC 2nd Gen", false },
		{ "AuthenticAMD", 15, 107, 1, "QEMU Virtual CPU version 2.5+", NULL, false },
		{ "GenuineIntel", 15, 6, 1, "Common KVM processor", NULL, false },
	};
	char text[4096];

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		_cleanup_free_ struct vw_cpu_info *cpus = NULL;
		const char *arch;
		size_t n;
		bool exact;

		x86(text, sizeof(text), 3, cases[i].vendor, cases[i].family, cases[i].model,
		    cases[i].stepping, cases[i].name);
		assert_int_equal(vw_procfs_parse_cpuinfo(text, &cpus, &n), 0);
		assert_int_equal(n, 3);
		assert_string_equal(cpus[2].model_name, cases[i].name);
		assert_int_equal(cpus[2].stepping, cases[i].stepping);
		arch = vw_cpu_arch(&cpus[0], &exact);
		if (!cases[i].arch) {
			assert_null(arch);
			continue;
		}
		if (!arch || strcmp(arch, cases[i].arch) != 0 || exact != cases[i].exact)
			fail_msg("%s: got %s (exact %d)", cases[i].name, arch ? arch : "none", exact);
	}
}

/* aarch64's /proc/cpuinfo: no vendor_id or model name, the implementer and part instead
 * (hexadecimal, read by the project's cpuinfo parser). */
static void test_arm(void **state)
{
	static const struct {
		const char *part, *arch;
		bool exact;
	} cases[] = {
		{ "0xd0c", "Graviton2", true }, /* Neoverse N1 */
		{ "0xd08", "Graviton", true },  /* Cortex-A72 */
		{ "0xd40", "Graviton2", false }, /* Neoverse V1 (Graviton3) */
		{ "0xd03", NULL, false },        /* Cortex-A53: not a server part the table has */
	};
	char text[1024];

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		_cleanup_free_ struct vw_cpu_info *cpus = NULL;
		bool exact;
		const char *arch;
		size_t n;

		snprintf(text, sizeof(text),
			 "processor\t: 0\nBogoMIPS\t: 243.75\nFeatures\t: fp asimd\n"
			 "CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x3\n"
			 "CPU part\t: %s\nCPU revision\t: 1\n\n"
			 "processor\t: 1\nCPU implementer\t: 0x41\nCPU part\t: %s\n\n",
			 cases[i].part, cases[i].part);
		assert_int_equal(vw_procfs_parse_cpuinfo(text, &cpus, &n), 0);
		assert_int_equal(n, 2);
		assert_int_equal(cpus[0].implementer, 0x41);
		assert_int_equal(cpus[0].family, -1);
		arch = vw_cpu_arch(&cpus[0], &exact);
		if (!cases[i].arch) {
			assert_null(arch);
			continue;
		}
		assert_non_null(arch);
		assert_string_equal(arch, cases[i].arch);
		assert_int_equal(exact, cases[i].exact);
	}
}

static double eval(const struct vw_model *m, double cpu_ms, double *idle)
{
	const struct vw_feature f = { "bpf_cpu_time_ms", cpu_ms };
	const struct vw_model_input in = { .features = &f, .n_features = 1 };
	struct vw_model_result r;

	assert_int_equal(vw_model_n_components(m), 1);
	assert_string_equal(vw_model_component(m, 0), "package");
	assert_int_equal(vw_model_eval(m, 0, &in, &r), 0);
	*idle = r.idle_watts;
	return r.watts;
}

/* watts = vCPUs x min + (max - min) x busy vCPUs: Kepler v0.7.12's Cascade Lake row. */
static void test_watts(void **state)
{
	const double min = 0.6389493581523519, max = 3.9673047343937564;
	struct vw_model *m = NULL;
	char name[128];
	double idle;

	(void)state;
	assert_int_equal(vw_model_percpu("Cascade Lake", 4, &m, name, sizeof(name)), 0);
	assert_string_equal(name, "builtin:percpu-Cascade_Lake-4vcpu");
	assert_double_near(eval(m, 0, &idle), 4 * min, 1e-9);
	assert_double_near(idle, 4 * min, 1e-9);
	assert_double_near(eval(m, 2000, &idle), 4 * min + 2 * (max - min), 1e-9);
	assert_double_near(eval(m, 4000, &idle), 4 * max, 1e-9);
	vw_model_free(m);
	assert_int_equal(vw_model_percpu("Zen 9", 4, &m, name, sizeof(name)), -ENOENT);
	assert_int_equal(vw_model_percpu("Haswell", 0, &m, name, sizeof(name)), -ENOENT);
}

/* The loader's model for o, which must say it came from want. */
static struct vw_model *load_from(const struct vw_model_source_opts *o, const char *want)
{
	char origin[128], err[256];
	struct vw_model *m = NULL;

	assert_int_equal(vw_model_source_load(o, &m, origin, sizeof(origin), err, sizeof(err)), 0);
	assert_string_equal(origin, want);
	return m;
}

/* The loader: per-vCPU where the architecture is known and asked for, the default otherwise. */
static void test_source_load(void **state)
{
	char text[4096];
	struct vw_model_source_opts o = { .percpu = true };
	struct vw_cpu_info *cpus = NULL;
	struct vw_model *m = NULL;
	double idle;

	(void)state;
	x86(text, sizeof(text), 2, "AuthenticAMD", 23, 49, 0, "AMD EPYC 7R32");
	assert_int_equal(vw_procfs_parse_cpuinfo(text, &cpus, &o.n_cpus), 0);
	o.cpus = cpus;
	m = load_from(&o, "builtin:percpu-EPYC_2nd_Gen-2vcpu");
	assert_double_near(eval(m, 0, &idle), 2 * 0.4742621527777778, 1e-9);
	vw_model_free(m);

	o.percpu = false; /* --model.builtin=kepler */
	m = load_from(&o, "builtin");
	vw_model_free(m);

	o.percpu = true;
	free(cpus);
	x86(text, sizeof(text), 2, "AuthenticAMD", 15, 107, 1, "QEMU Virtual CPU version 2.5+");
	assert_int_equal(vw_procfs_parse_cpuinfo(text, &cpus, &o.n_cpus), 0);
	o.cpus = cpus;
	m = load_from(&o, "builtin");
	vw_model_free(m);
	free(cpus);

	o.cpus = NULL, o.n_cpus = 0; /* no cpuinfo read: the default */
	m = load_from(&o, "builtin");
	vw_model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_architectures),
		cmocka_unit_test(test_arm),
		cmocka_unit_test(test_watts),
		cmocka_unit_test(test_source_load),
	};

	vw_log_set_level(VW_LOG_WARN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hwmon chip rules (host/power/hwmon_rules.c) on their own: parsing CHIP[:LABEL]=ZONE[@SOCKET],
 * matching chips and labels, the socket each form gives, the built-in rules, Kepler's zone
 * filter. No sysfs.
 */
#include "vw_test.h"

#include <errno.h>
#include <stdio.h>

#include "hwmon_rules.h"
#include "macro.h"

static struct vw_hwmon_rules *parse_ok(const char *const *specs, size_t n)
{
	struct vw_hwmon_rules *r = NULL;
	char err[256] = "";
	int q = vw_hwmon_rules_parse(specs, n, &r, err, sizeof(err));

	if (q != 0)
		fail_msg("parse: %d: %s", q, err);
	assert_non_null(r);
	return r;
}

static struct vw_hwmon_rules *builtin(void)
{
	size_t n = 0;

	while (vw_hwmon_builtin_rules[n])
		n++;
	return parse_ok(vw_hwmon_builtin_rules, n);
}

/* The zone and socket a sensor gets, or "-" (no rule), "none" (left out), "?" (no socket). */
static const char *where(const struct vw_hwmon_rules *r, const char *chip, unsigned instance,
			 const char *label, char *buf, size_t size)
{
	struct vw_hwmon_target t;
	unsigned socket;

	if (vw_hwmon_rules_match(r, chip, label, &t) < 0)
		return "-";
	if (t.ignore)
		return "none";
	assert_non_null(t.rule);
	if (vw_hwmon_target_socket(&t, instance, label, &socket) < 0)
		return "?";
	snprintf(buf, size, "%s@%u", vw_zone_name(t.zone), socket);
	return buf;
}

/* A sensor and where it should count. */
struct sensor_case {
	const char *chip;
	unsigned instance; /* the chip's place among its namesakes */
	const char *label;
	const char *expected; /* as where() says it */
};

static void assert_cases(const struct vw_hwmon_rules *r, const struct sensor_case *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char buf[64];
		const char *got = where(r, c[i].chip, c[i].instance, c[i].label, buf, sizeof(buf));

		if (strcmp(got, c[i].expected) != 0)
			fail_msg("%s #%u '%s': %s, expected %s", c[i].chip, c[i].instance,
				 c[i].label, got, c[i].expected);
	}
}

/* Every built-in rule parses, and says what docs/platform.md says it does. */
static void test_builtin(void **state)
{
	static const struct sensor_case cases[] = {
		/* amd_energy and zenergy: each socket's counter is its package, the socket its
		 * label's. */
		{ "amd_energy", 0, "Esocket0", "package@0" },
		{ "amd_energy", 0, "Esocket1", "package@1" },
		{ "zenergy", 0, "Esocket1", "package@1" },
		/* The per-core counters are left to a rule of the operator's. */
		{ "amd_energy", 0, "Ecore000", "-" },
		{ "zenergy", 0, "Ecore017", "-" },
		/* Jetson ina3221 rails: the module input, the CPU-only rails; one socket. */
		{ "ina3221", 0, "VDD_IN", "platform@0" },
		{ "ina3221", 1, "VDD_IN", "platform@0" },
		{ "ina3221", 0, "POM_5V_IN", "platform@0" },
		{ "ina3221", 0, "POM_5V_CPU", "package@0" },
		{ "ina3221", 0, "VDD_SYS_CPU", "package@0" },
		{ "ina3221", 0, "VDD_CPU_GPU_CV", "-" },
		{ "ina3221", 0, "VDD_SOC", "-" },
		/* Chips with no safe meaning: none. */
		{ "zenpower", 0, "SVI2_P_Core", "-" },
		{ "amdgpu", 0, "PPT", "-" },
		{ "power_meter", 0, "power1", "-" },
	};
	struct vw_hwmon_rules *r = builtin();

	(void)state;
	assert_cases(r, cases, ARRAY_SIZE(cases));
	vw_hwmon_rules_free(r);
}

static void test_forms(void **state)
{
	static const char *const specs[] = {
		"amd_energy:Ecore*=core",        /* every core, in socket 0 */
		"ina226=platform",               /* any sensor of the chip */
		"ina3221:VDD_CPU*=package@3",    /* a fixed socket */
		"ina2??:vdd_?n*=dram@label",     /* globs on both, socket from the label */
		"k10temp=none",                  /* left out */
		"zen*:svi2_p_*=uncore@chip",     /* a chip glob, a socket per chip */
		"chip:a=b=psys",                 /* the last '=' ends the label */
		"chip:x:y=core@4095",            /* the first ':' ends the chip */
	};
	static const struct sensor_case cases[] = {
		{ "amd_energy", 0, "Ecore042", "core@0" },
		{ "amd_energy", 1, "Ecore042", "core@0" },
		{ "amd_energy", 0, "Esocket0", "-" },
		{ "ina226", 2, "power1", "platform@0" },
		{ "ina226", 0, "anything at all", "platform@0" },
		{ "ina3221", 0, "VDD_CPU_GPU_CV", "package@3" },
		{ "ina3221", 0, "VDD_SOC", "-" },
		/* Globs and case: ? is one character, names and labels in any case. */
		{ "INA219", 0, "VDD_IN7", "dram@7" },
		{ "ina219", 0, "vdd_xin7", "-" },
		{ "ina21", 0, "vdd_in7", "-" },
		/* @label with no number at the end: no socket. */
		{ "ina219", 0, "vdd_in", "?" },
		{ "k10temp", 0, "Tctl", "none" },
		{ "zenpower", 1, "SVI2_P_SoC", "uncore@1" },
		{ "zenpower", 0, "SVI2_P_Core", "uncore@0" },
		{ "chip", 0, "a=b", "psys@0" },
		{ "chip", 0, "a", "-" },
		{ "chip", 0, "x:y", "core@4095" },
	};
	struct vw_hwmon_rules *r = parse_ok(specs, ARRAY_SIZE(specs));
	struct vw_hwmon_target t;

	(void)state;
	assert_cases(r, cases, ARRAY_SIZE(cases));
	/* The rule comes back as written, for the logs. */
	assert_int_equal(vw_hwmon_rules_match(r, "ina3221", "VDD_CPU", &t), 0);
	assert_string_equal(t.rule, "ina3221:VDD_CPU*=package@3");
	assert_int_equal(t.socket_from, VW_HWMON_SOCKET_FIXED);
	assert_int_equal(vw_hwmon_rules_match(r, "nct6775", "power1", &t), -ENOENT);
	assert_int_equal(vw_hwmon_rules_match(NULL, "ina226", "power1", &t), -ENOENT);
	vw_hwmon_rules_free(r);
	vw_hwmon_rules_free(NULL);
}

/* The first rule that matches decides: an operator's rule before the built-in one. */
static void test_first_match_wins(void **state)
{
	static const char *const specs[] = {
		"amd_energy:Esocket1=none",
		"amd_energy:Esocket*=package@0",
		"amd_energy:Esocket0=dram",
	};
	static const struct sensor_case cases[] = {
		{ "amd_energy", 0, "Esocket1", "none" },
		{ "amd_energy", 0, "Esocket0", "package@0" },
		{ "amd_energy", 0, "Esocket2", "package@0" },
	};
	static const struct sensor_case builtin_case = { "amd_energy", 0, "Esocket2", "package@2" };
	struct vw_hwmon_rules *r = parse_ok(specs, ARRAY_SIZE(specs));
	struct vw_hwmon_rules *b = builtin();

	(void)state;
	assert_cases(r, cases, ARRAY_SIZE(cases));
	assert_cases(b, &builtin_case, 1);
	vw_hwmon_rules_free(r);
	vw_hwmon_rules_free(b);
}

/* @label: the number the label ends with, leading zeros allowed, 0..4095. */
static void test_socket_from_label(void **state)
{
	static const char *const specs[] = { "c=package@label" };
	static const struct sensor_case cases[] = {
		{ "c", 5, "Esocket0", "package@0" },
		{ "c", 5, "Esocket01", "package@1" },
		{ "c", 5, "Esocket000", "package@0" },
		{ "c", 5, "CPU 12", "package@12" },
		{ "c", 5, "s4095", "package@4095" },
		{ "c", 5, "s4096", "?" },
		{ "c", 5, "s99999999999999999999999", "?" },
		{ "c", 5, "Esocket", "?" },
		{ "c", 5, "1st socket", "?" },
		{ "c", 5, "", "?" },
	};
	struct vw_hwmon_rules *r = parse_ok(specs, 1);

	(void)state;
	assert_cases(r, cases, ARRAY_SIZE(cases));
	vw_hwmon_rules_free(r);
}

/* A bad rule: -EINVAL, and the message quotes it and says what is wrong. */
static void test_errors(void **state)
{
	static const struct {
		const char *spec, *why;
	} bad[] = {
		{ "", "not CHIP[:LABEL]=ZONE[@SOCKET]" },
		{ "ina226", "not CHIP[:LABEL]=ZONE[@SOCKET]" },
		{ "ina226:VDD_IN", "not CHIP[:LABEL]=ZONE[@SOCKET]" },
		{ "=package", "CHIP is empty" },
		{ ":VDD_IN=package", "CHIP is empty" },
		{ "ina 226=package", "has a space" },
		{ "ina226:=package", "LABEL after ':' is empty" },
		{ "ina226=pkg", "unknown zone" },
		{ "ina226=", "unknown zone" },
		{ "ina226=Package", "unknown zone" },
		{ "ina226=package-0", "unknown zone" },
		{ "ina226=package@", "SOCKET is a number" },
		{ "ina226=package@-1", "SOCKET is a number" },
		{ "ina226=package@4096", "SOCKET is a number" },
		{ "ina226=package@01", "SOCKET is a number" },
		{ "ina226=package@one", "SOCKET is a number" },
		{ "ina226=package@Label", "SOCKET is a number" },
		{ "ina226=package@1@2", "SOCKET is a number" },
		{ "ina226=none@1", "none takes no @SOCKET" },
		{ "power_meter=platform", "power_meter is the ACPI power meter" },
		{ "POWER_METER:power1=platform", "power_meter is the ACPI power meter" },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		/* A good rule first: the bad one is found wherever it is. */
		const char *specs[] = { "ina226=platform", bad[i].spec };
		struct vw_hwmon_rules *r = NULL;
		char err[256] = "", quoted[128];

		assert_int_equal(vw_hwmon_rules_parse(specs, 2, &r, err, sizeof(err)), -EINVAL);
		assert_null(r);
		snprintf(quoted, sizeof(quoted), "\"%s\": ", bad[i].spec);
		if (strncmp(err, quoted, strlen(quoted)) != 0 || !strstr(err, bad[i].why))
			fail_msg("\"%s\": said \"%s\", expected \"%s...%s\"", bad[i].spec, err,
				 quoted, bad[i].why);
	}
}

/* No rule at all: parses, matches nothing. */
static void test_empty(void **state)
{
	struct vw_hwmon_rules *r = parse_ok(NULL, 0);
	struct vw_hwmon_target t;

	(void)state;
	assert_int_equal(vw_hwmon_rules_match(r, "amd_energy", "Esocket0", &t), -ENOENT);
	vw_hwmon_rules_free(r);
}

/* Kepler's experimental.hwmon.zones: names compared as Kepler cleans them. */
static void test_zone_filter(void **state)
{
	static const char *const zones[] = { "vdd_in", " CPU Power ", "esocket1", "ina226_power1" };

	(void)state;
	assert_true(vw_hwmon_zone_wanted(NULL, 0, "anything"));
	assert_true(vw_hwmon_zone_wanted(zones, 4, "VDD_IN"));
	assert_true(vw_hwmon_zone_wanted(zones, 4, "vdd-in"));
	assert_true(vw_hwmon_zone_wanted(zones, 4, "cpu_power"));
	assert_true(vw_hwmon_zone_wanted(zones, 4, "_CPU-Power_"));
	assert_true(vw_hwmon_zone_wanted(zones, 4, "Esocket1"));
	assert_true(vw_hwmon_zone_wanted(zones, 4, "ina226_power1"));
	assert_false(vw_hwmon_zone_wanted(zones, 4, "Esocket0"));
	assert_false(vw_hwmon_zone_wanted(zones, 4, "vdd_in2"));
	assert_false(vw_hwmon_zone_wanted(zones, 4, "cpu"));
	assert_false(vw_hwmon_zone_wanted(zones, 1, "cpu_power"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_builtin),
		cmocka_unit_test(test_forms),
		cmocka_unit_test(test_first_match_wins),
		cmocka_unit_test(test_socket_from_label),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_zone_filter),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

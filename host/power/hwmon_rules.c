/* SPDX-License-Identifier: Apache-2.0 */
#include "hwmon_rules.h"

#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "hwmon_chip.h"
#include "macro.h"

#define MAX_SOCKET 4095
#define SOCKET_FROM_LABEL "label"
#define SOCKET_FROM_CHIP "chip"
#define ZONE_NONE "none"

/*
 * Each rule's reason is in docs/platform.md. amd_energy and zenergy (its successor out of tree)
 * count each socket's energy in Esocket<N>; their per-core Ecore<NNN> counters are left out (each
 * read is an IPI to that core, and the socket's counter already holds them). On Jetson boards'
 * ina3221 rails (device-tree labels) only the module's input and the CPU-only rails have one
 * meaning; VDD_CPU_GPU_CV and the like are for a rule of the operator's.
 */
const char *const vw_hwmon_builtin_rules[] = {
	"amd_energy:Esocket*=package@label",
	"zenergy:Esocket*=package@label",
	"ina3221:VDD_IN=platform",
	"ina3221:POM_5V_IN=platform",
	"ina3221:POM_5V_CPU=package",
	"ina3221:VDD_SYS_CPU=package",
	NULL,
};

struct rule {
	char *spec;  /* as written */
	char *chip;  /* glob */
	char *label; /* glob, or NULL: any */
	struct vw_hwmon_target target;
};

struct vw_hwmon_rules {
	size_t n;
	struct rule v[];
};

static void rule_fini(struct rule *r)
{
	free(r->spec);
	free(r->chip);
	free(r->label);
}

void vw_hwmon_rules_free(struct vw_hwmon_rules *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++)
		rule_fini(&r->v[i]);
	free(r);
}

static void rules_freep(struct vw_hwmon_rules **r)
{
	vw_hwmon_rules_free(*r);
}

/* "0".."4095", no sign, no leading zero. */
static int parse_socket(const char *s, unsigned *ret)
{
	uint64_t v;

	if ((s[0] == '0' && s[1] != '\0') || vw_parse_u64(s, &v) < 0 || v > MAX_SOCKET)
		return -EINVAL;
	*ret = (unsigned)v;
	return 0;
}

static int parse_zone_word(const char *s, struct vw_hwmon_target *t)
{
	for (size_t z = 0; z < VW_ZONE__COUNT; z++)
		if (strcmp(s, vw_zone_name((enum vw_zone)z)) == 0) {
			t->zone = (enum vw_zone)z;
			return 0;
		}
	return -EINVAL;
}

/* ZONE[@SOCKET] or none, into t; a static reason on failure. */
static const char *parse_target(char *s, struct vw_hwmon_target *t)
{
	char *at = strchr(s, '@');

	if (at)
		*at++ = '\0';
	if (strcmp(s, ZONE_NONE) == 0) {
		t->ignore = true;
		return at ? "none takes no @SOCKET" : NULL;
	}
	if (parse_zone_word(s, t) < 0)
		return "unknown zone (package, core, uncore, dram, psys, platform, or none)";
	t->socket_from = VW_HWMON_SOCKET_FIXED;
	if (!at)
		t->socket = 0;
	else if (strcmp(at, SOCKET_FROM_LABEL) == 0)
		t->socket_from = VW_HWMON_SOCKET_LABEL;
	else if (strcmp(at, SOCKET_FROM_CHIP) == 0)
		t->socket_from = VW_HWMON_SOCKET_CHIP;
	else if (parse_socket(at, &t->socket) < 0)
		return "SOCKET is a number from 0 to 4095, label or chip";
	return NULL;
}

static bool has_space(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (isspace((unsigned char)s[i]))
			return true;
	return false;
}

/* One rule into r (its strings owned by r even on failure): 0, -ENOMEM, or -EINVAL and *why. */
static int parse_rule(const char *spec, struct rule *r, const char **why)
{
	const char *eq = strrchr(spec, '=');
	const char *colon = eq ? memchr(spec, ':', (size_t)(eq - spec)) : NULL;
	const char *chip_end = colon ? colon : eq;
	_cleanup_free_ char *target = NULL;

	*why = NULL;
	if (!eq)
		*why = "not CHIP[:LABEL]=ZONE[@SOCKET]";
	else if (chip_end == spec || has_space(spec, (size_t)(chip_end - spec)))
		*why = "CHIP is empty or has a space";
	else if (colon && colon + 1 == eq)
		*why = "LABEL after ':' is empty";
	if (*why)
		return -EINVAL;
	r->spec = strdup(spec);
	r->chip = strndup(spec, (size_t)(chip_end - spec));
	r->label = colon ? strndup(colon + 1, (size_t)(eq - colon - 1)) : NULL;
	target = strdup(eq + 1);
	if (!r->spec || !r->chip || (colon && !r->label) || !target)
		return -ENOMEM;
	r->target.rule = r->spec;
	if (strcasecmp(r->chip, VW_HWMON_ACPI_CHIP) == 0)
		*why = "power_meter is the ACPI power meter, read by the acpi platform source "
		       "(--platform.sources)";
	else
		*why = parse_target(target, &r->target);
	return *why ? -EINVAL : 0;
}

int vw_hwmon_rules_parse(const char *const *specs, size_t n, struct vw_hwmon_rules **ret,
			 char *err, size_t errlen)
{
	_cleanup_(rules_freep) struct vw_hwmon_rules *r = calloc(1, sizeof(*r) + n * sizeof(r->v[0]));

	if (!r)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const char *why = NULL;
		int q = parse_rule(specs[i], &r->v[i], &why);

		r->n = i + 1; /* freed with the rest from here on */
		if (q == -EINVAL)
			snprintf(err, errlen, "\"%s\": %s", specs[i], why);
		if (q < 0)
			return q;
	}
	*ret = VW_TAKE_PTR(r);
	return 0;
}

static bool glob_matches(const char *glob, const char *s)
{
	return fnmatch(glob, s, FNM_CASEFOLD) == 0;
}

int vw_hwmon_rules_match(const struct vw_hwmon_rules *r, const char *chip, const char *label,
			 struct vw_hwmon_target *ret)
{
	for (size_t i = 0; r && i < r->n; i++) {
		const struct rule *x = &r->v[i];

		if (glob_matches(x->chip, chip) && (!x->label || glob_matches(x->label, label))) {
			*ret = x->target;
			return 0;
		}
	}
	return -ENOENT;
}

int vw_hwmon_target_socket(const struct vw_hwmon_target *t, unsigned chip_instance,
			   const char *label, unsigned *ret)
{
	const char *end = label + strlen(label), *digits = end;

	switch (t->socket_from) {
	case VW_HWMON_SOCKET_FIXED:
		*ret = t->socket;
		return 0;
	case VW_HWMON_SOCKET_CHIP:
		*ret = chip_instance;
		return 0;
	case VW_HWMON_SOCKET_LABEL:
		break;
	}
	while (digits > label && isdigit((unsigned char)digits[-1]))
		digits--;
	/* Esocket01 reads as 1: drivers do pad numbers. */
	while (digits + 1 < end && *digits == '0')
		digits++;
	return digits == end ? -EINVAL : parse_socket(digits, ret);
}

/* Kepler's cleanMetricName: lower case, [^a-z0-9:_] -> '_', '_' trimmed at both ends. */
static void kepler_name(const char *s, char *buf, size_t size)
{
	size_t n = 0;

	while (*s == '_' || (*s && !isalnum((unsigned char)*s) && *s != ':'))
		s++;
	for (; *s && n + 1 < size; s++) {
		char c = (char)tolower((unsigned char)*s);

		buf[n++] = (isalnum((unsigned char)c) || c == ':') ? c : '_';
	}
	while (n && buf[n - 1] == '_')
		n--;
	buf[n] = '\0';
}

bool vw_hwmon_zone_wanted(const char *const *zones, size_t n, const char *name)
{
	char have[128], want[128];

	if (n == 0)
		return true;
	kepler_name(name, have, sizeof(have));
	for (size_t i = 0; i < n; i++) {
		kepler_name(zones[i], want, sizeof(want));
		if (strcmp(have, want) == 0)
			return true;
	}
	return false;
}

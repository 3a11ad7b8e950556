/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The generic hwmon meter's sensors (hwmon_sensors_priv.h): on each chip, its energyN_input
 * counters, its powerN_average (else powerN_input) readings, and the rails of the chips read as
 * inN x currN; each named by its label, placed by the chip rules, read once. src_hwmon_generic.c
 * says what becomes of them.
 */
#include "hwmon_sensors_priv.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "macro.h"

const char *const vw_hwmon_kind_names[] = {
	[HG_ENERGY] = "energy counter",
	[HG_POWER] = "power reading",
	[HG_VI] = "voltage x current",
};

/*
 * Chips whose rails read as a bus voltage and a current of the same number, with no power
 * attribute (Kepler's chipRules pair these): ina3221's in1..3 (in4..6 are its shunt voltages).
 */
static const struct {
	const char *chip;
	unsigned first, last;
} vi_chips[] = {
	{ "ina3221", 1, 3 },
};

/* What the scan is told and keeps while it runs. */
struct scan {
	const struct vw_hwmon_config *cfg; /* may be NULL */
	const struct vw_hwmon_rules *builtin;
	char (*names)[64]; /* every chip's name so far, for the chip's place among its namesakes */
	size_t n_names, cap_names;
};

/* ---- reading --------------------------------------------------------------------------- */

/* A signed decimal: what currN_input and inN_input are (a current may flow back). */
static int read_s64_at(int dirfd, const char *file, int64_t *ret)
{
	char buf[32];
	uint64_t v;
	int r = vw_read_str_at(dirfd, file, buf, sizeof(buf));
	bool neg = r == 0 && buf[0] == '-';

	if (r < 0)
		return r;
	r = vw_parse_u64(buf + neg, &v);
	if (r < 0)
		return r;
	if (v > INT64_MAX)
		return -ERANGE;
	*ret = neg ? -(int64_t)v : (int64_t)v;
	return 0;
}

/* mV x mA = µW; a reverse current (noise around zero at idle) is no power. */
static int read_vi_uw(int dirfd, const struct hg_sensor *s, uint64_t *ret_uw)
{
	int64_t mv, ma;
	int r = read_s64_at(dirfd, s->file, &mv);

	if (r == 0)
		r = read_s64_at(dirfd, s->curr, &ma);
	if (r < 0)
		return r;
	if (mv > UINT32_MAX || ma > UINT32_MAX)
		return -ERANGE; /* 4 MV or 4 MA: junk */
	*ret_uw = mv > 0 && ma > 0 ? (uint64_t)mv * (uint64_t)ma : 0;
	return 0;
}

/* One reading: µJ for HG_ENERGY, µW for the others. */
int vw_hwmon_sensor_read(int dirfd, const struct hg_sensor *s, uint64_t *ret)
{
	return s->kind == HG_VI ? read_vi_uw(dirfd, s, ret) : vw_read_u64_at(dirfd, s->file, ret);
}

/* ---- the scan -------------------------------------------------------------------------- */

/* "<type>N_<attr>" -> N (decimal, no sign, no leading zero). */
static int parse_channel(const char *name, const char *type, const char *attr, uint32_t *ret)
{
	size_t tl = strlen(type);
	const char *s = name + tl;
	uint64_t v = 0;

	if (strncmp(name, type, tl) != 0 || !isdigit((unsigned char)*s) ||
	    (s[0] == '0' && isdigit((unsigned char)s[1])))
		return -EINVAL;
	for (; isdigit((unsigned char)*s); s++)
		if ((v = v * 10 + (uint64_t)(*s - '0')) > 99999)
			return -ERANGE;
	if (*s != '_' || strcmp(s + 1, attr) != 0)
		return -EINVAL;
	*ret = (uint32_t)v;
	return 0;
}

static int parse_energy_input(const char *name, uint32_t *ret)
{
	return parse_channel(name, "energy", "input", ret);
}

static int parse_power_average(const char *name, uint32_t *ret)
{
	return parse_channel(name, "power", "average", ret);
}

static int parse_power_input(const char *name, uint32_t *ret)
{
	return parse_channel(name, "power", "input", ret);
}

/* The chip's place among the chips of its name scanned so far (then counted itself). */
static int chip_instance(struct scan *sc, const char *name, unsigned *ret)
{
	unsigned k = 0;

	for (size_t i = 0; i < sc->n_names; i++)
		k += strcmp(sc->names[i], name) == 0;
	if (vw_array_grow((void **)&sc->names, sizeof(*sc->names), sc->n_names, &sc->cap_names) < 0)
		return -ENOMEM;
	snprintf(sc->names[sc->n_names++], sizeof(*sc->names), "%s", name);
	*ret = k;
	return 0;
}

/* A sensor found on a chip, before any rule is asked. */
struct found {
	enum hg_kind kind;
	unsigned n;
	const char *type; /* "energy", "power", "in": its other attributes' prefix */
	char file[FILE_LEN];
};

/* <type>N_enable reads 0: the driver says the channel is off (ina3221's unused rails). */
static bool disabled(int dirfd, const struct found *f)
{
	char file[FILE_LEN];
	uint64_t on;

	snprintf(file, sizeof(file), "%s%u_enable", f->type, f->n);
	return vw_read_u64_at(dirfd, file, &on) == 0 && on == 0;
}

/*
 * The sensor's label: <type>N_label, else the chip's own `label` (the device tree's, for chips of
 * one rail such as ina226), else the sensor's name (power1). ret_kepler gets what Kepler calls
 * it: the label, else <chip>_<name>.
 */
static void sensor_label(int dirfd, const char *chip, const struct found *f, char *ret,
			 char *ret_kepler)
{
	char file[FILE_LEN], chip_label[LABEL_LEN];

	snprintf(file, sizeof(file), "%s%u_label", f->type, f->n);
	if (vw_read_str_at(dirfd, file, ret, LABEL_LEN) == 0) {
		snprintf(ret_kepler, LABEL_LEN, "%s", ret);
		return;
	}
	snprintf(ret, LABEL_LEN, "%s%u", f->type, f->n);
	if (snprintf(ret_kepler, LABEL_LEN, "%s_%s", chip, ret) >= LABEL_LEN)
		vw_log(VW_LOG_DEBUG, "hwmon: %s: sensor %s: Kepler's name cut to %s", chip, ret,
		       ret_kepler);
	if (vw_read_str_at(dirfd, "label", chip_label, sizeof(chip_label)) == 0)
		snprintf(ret, LABEL_LEN, "%s", chip_label);
}

/* Which zone and socket the rules give the sensor: 0, or -ENOENT when it is not used. */
static int place(struct scan *sc, const struct vw_hwmon_chip *c, unsigned instance,
		 struct hg_sensor *s, const char *kepler)
{
	const struct vw_hwmon_config *cfg = sc->cfg;
	struct vw_hwmon_target t;

	if (cfg && !vw_hwmon_zone_wanted(cfg->zones, cfg->n_zones, kepler)) {
		vw_debug("hwmon: %s ('%s'): not in experimental.hwmon.zones; unused", s->path,
			 s->label);
		return -ENOENT;
	}
	if (vw_hwmon_rules_match(cfg ? cfg->rules : NULL, c->name, s->label, &t) < 0 &&
	    vw_hwmon_rules_match(sc->builtin, c->name, s->label, &t) < 0) {
		vw_debug("hwmon: %s (%s '%s'): no chip rule maps it; unused", s->path, c->name,
			 s->label);
		return -ENOENT;
	}
	if (t.ignore) {
		vw_debug("hwmon: %s (%s '%s'): left out by rule %s", s->path, c->name, s->label,
			 t.rule);
		return -ENOENT;
	}
	if (vw_hwmon_target_socket(&t, instance, s->label, &s->socket) < 0) {
		vw_warn("hwmon: %s (%s '%s'): rule %s takes the socket from the label, which "
			"does not end in a number (0..4095); unused",
			s->path, c->name, s->label, t.rule);
		return -ENOENT;
	}
	s->zone = t.zone;
	vw_debug("hwmon: %s (%s '%s'): %s, zone %s socket %u by rule %s", s->path, c->name,
		 s->label, vw_hwmon_kind_names[s->kind], vw_zone_name(s->zone), s->socket, t.rule);
	return 0;
}

/* The chip's slot in hg->chip, taking its fd when it gets its first sensor. */
static int keep_chip(struct hwmon_generic *hg, struct vw_hwmon_chip *c, size_t *ret)
{
	if (hg->n_chip && hg->chip[hg->n_chip - 1].index == c->index) {
		*ret = hg->n_chip - 1;
		return 0;
	}
	if (vw_array_grow((void **)&hg->chip, sizeof(*hg->chip), hg->n_chip, &hg->cap_chip) < 0)
		return -ENOMEM;
	hg->chip[hg->n_chip] = (struct hg_chip){ .index = c->index, .dirfd = VW_TAKE_FD(c->dirfd) };
	snprintf(hg->chip[hg->n_chip].name, sizeof(hg->chip[0].name), "%s", c->name);
	*ret = hg->n_chip++;
	return 0;
}

/* The chip's fd, whether hg holds it yet or not. */
static int chip_fd(const struct hwmon_generic *hg, const struct vw_hwmon_chip *c)
{
	return c->dirfd >= 0 ? c->dirfd : hg->chip[hg->n_chip - 1].dirfd;
}

/* One sensor of chip c: named, placed by the rules, read once; kept when all of that works. */
static int add_sensor(struct hwmon_generic *hg, struct scan *sc, struct vw_hwmon_chip *c,
		      unsigned instance, const struct found *f)
{
	int dirfd = chip_fd(hg, c);
	char kepler[LABEL_LEN];
	struct hg_sensor s = { .kind = f->kind };
	uint64_t v;
	int r;

	if (disabled(dirfd, f))
		return 0;
	snprintf(s.file, sizeof(s.file), "%s", f->file);
	if (f->kind == HG_VI)
		snprintf(s.curr, sizeof(s.curr), "curr%u_input", f->n);
	snprintf(s.path, sizeof(s.path), VW_HWMON_PATH_PREFIX VW_HWMON_PREFIX "%u/%s", c->index,
		 s.file);
	sensor_label(dirfd, c->name, f, s.label, kepler);
	if (place(sc, c, instance, &s, kepler) < 0)
		return 0;
	r = vw_hwmon_sensor_read(dirfd, &s, &v);
	if (r < 0) {
		hg->eacces += r == -EACCES;
		vw_log(r == -EACCES ? VW_LOG_DEBUG : VW_LOG_WARN,
		       "hwmon: %s ('%s'): cannot read: %s; unused", s.path, s.label,
		       strerror(-r));
		return 0;
	}
	s.raw_uj = f->kind == HG_ENERGY ? v : 0;
	r = keep_chip(hg, c, &s.chip);
	if (r == 0)
		r = vw_array_grow((void **)&hg->s, sizeof(*hg->s), hg->n_s, &hg->cap_s);
	if (r < 0)
		return r;
	hg->s[hg->n_s++] = s;
	return 0;
}

/* Every energyN_input of the chip. */
static int add_energy(struct hwmon_generic *hg, struct scan *sc, struct vw_hwmon_chip *c,
		      unsigned instance)
{
	_cleanup_free_ uint32_t *num = NULL;
	size_t n = 0;
	int r = vw_dir_numbers(chip_fd(hg, c), ".", parse_energy_input, &num, &n);

	for (size_t i = 0; r == 0 && i < n; i++) {
		struct found f = { .kind = HG_ENERGY, .n = num[i], .type = "energy" };

		snprintf(f.file, sizeof(f.file), "energy%u_input", num[i]);
		r = add_sensor(hg, sc, c, instance, &f);
	}
	return r;
}

/* powerN_average where the chip has it, else powerN_input. */
static int add_power(struct hwmon_generic *hg, struct scan *sc, struct vw_hwmon_chip *c,
		     unsigned instance)
{
	_cleanup_free_ uint32_t *avg = NULL, *in = NULL;
	size_t n_avg = 0, n_in = 0;
	int fd = chip_fd(hg, c);
	int r = vw_dir_numbers(fd, ".", parse_power_average, &avg, &n_avg);

	if (r == 0)
		r = vw_dir_numbers(fd, ".", parse_power_input, &in, &n_in);
	for (size_t i = 0, j = 0; r == 0 && (i < n_avg || j < n_in);) {
		bool take_avg = i < n_avg && (j == n_in || avg[i] <= in[j]);
		struct found f = { .kind = HG_POWER, .n = take_avg ? avg[i] : in[j], .type = "power" };

		snprintf(f.file, sizeof(f.file), take_avg ? "power%u_average" : "power%u_input", f.n);
		/* The input of a channel that has an average is skipped with it. */
		if (take_avg && j < n_in && in[j] == avg[i])
			j++;
		if (take_avg)
			i++;
		else
			j++;
		r = add_sensor(hg, sc, c, instance, &f);
	}
	return r;
}

/* The rails of a chip read as voltage x current (vi_chips). */
static int add_vi(struct hwmon_generic *hg, struct scan *sc, struct vw_hwmon_chip *c,
		  unsigned instance)
{
	for (size_t k = 0; k < ARRAY_SIZE(vi_chips); k++) {
		if (strcmp(vi_chips[k].chip, c->name) != 0)
			continue;
		for (unsigned n = vi_chips[k].first; n <= vi_chips[k].last; n++) {
			struct found f = { .kind = HG_VI, .n = n, .type = "in" };
			int r;

			snprintf(f.file, sizeof(f.file), "in%u_input", n);
			r = add_sensor(hg, sc, c, instance, &f);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

static int scan_chip(struct hwmon_generic *hg, struct scan *sc, struct vw_hwmon_chip *c)
{
	unsigned instance;
	int r = chip_instance(sc, c->name, &instance);

	if (r == 0)
		r = add_energy(hg, sc, c, instance);
	if (r == 0)
		r = add_power(hg, sc, c, instance);
	if (r == 0)
		r = add_vi(hg, sc, c, instance);
	return r;
}

int vw_hwmon_sensors_find(struct hwmon_generic *hg, const struct vw_hwmon_config *cfg,
			  const struct vw_hwmon_rules *builtin)
{
	_cleanup_free_ uint32_t *idx = NULL;
	struct scan scan = { .cfg = cfg, .builtin = builtin };
	struct scan *sc = &scan;
	size_t n = 0;
	int r = vw_hwmon_chip_numbers(hg->classfd, &idx, &n);

	for (size_t i = 0; r == 0 && i < n; i++) {
		struct vw_hwmon_chip c;

		if (vw_hwmon_chip_open(hg->classfd, idx[i], &c) < 0) {
			vw_debug("hwmon: " VW_HWMON_PREFIX "%u: no readable name; skipped", idx[i]);
			continue;
		}
		/* The ACPI power meter is the acpi platform source's. */
		if (strcmp(c.name, VW_HWMON_ACPI_CHIP) != 0)
			r = scan_chip(hg, sc, &c);
		vw_closep(&c.dirfd);
	}
	free(scan.names);
	return r;
}

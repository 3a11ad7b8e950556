/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Generic hwmon sensors under <sysfs>/class/hwmon/hwmonN (name "hwmon"): every chip but the ACPI
 * power meter (src_hwmon.c's), each of its sensors of one of three kinds, best first:
 *
 *   energyN_input                    a cumulative µJ counter (amd_energy, zenergy, ibmpowernv)
 *   powerN_average, else powerN_input a power reading in µW (ina2xx, BMC-backed drivers)
 *   inN_input x currN_input          mV x mA = µW, for chips whose rails read that way (ina3221)
 *
 * Chip rules (hwmon_rules.h: the operator's, then the built-in ones) say which zone and socket a
 * sensor counts in, by the chip's name and the sensor's label (<kind>N_label, else the chip's own
 * `label`, else the sensor's name such as power1); a sensor no rule maps is not used. Sensors of
 * one zone and socket are summed. An energy counter beats a power reading: where a zone and
 * socket has one, that zone's power sensors are left out.
 *
 * Energy zones hand the engine the sum of their counters as they read, with max_range_uj 0: the
 * energy counter (shared/energy) takes any decrease, a counter reset by a reloaded driver or a
 * wrap at a width hwmon does not publish, as a gap (that interval counts nothing) rather than
 * guess a range. Power zones hand the sum of their sensors' integrals, kept here exactly as the
 * ACPI meter keeps its own (hwmon_chip.h): a failed read counts nothing, and the next good read
 * only sets the time. A zone reads while one of its sensors does; a failing sensor stands still
 * (its last counter, or its integral) and is logged, rate-limited, until it reads again.
 *
 * Nothing here writes. Every file is read relative to a chip's directory fd, opened below the
 * injected sysfs root; a chip whose directory went away (its driver reloaded) is looked up again
 * at the same hwmonN, by name.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "energy.h"
#include "fileio.h"
#include "hwmon_chip.h"
#include "hwmon_rules.h"
#include "log.h"
#include "macro.h"
#include "power.h"

#define FILE_LEN 32
#define LABEL_LEN 64

enum hg_kind {
	HG_ENERGY, /* energyN_input, µJ */
	HG_POWER,  /* powerN_average or powerN_input, µW */
	HG_VI,     /* inN_input (mV) x currN_input (mA) */
};

static const char *const kind_names[] = {
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

struct hg_chip {
	unsigned index; /* hwmonN */
	int dirfd;
	char name[64];
};

struct hg_sensor {
	enum hg_kind kind;
	size_t chip;          /* into hwmon_generic.chip */
	char file[FILE_LEN];  /* the reading: energyN_input, powerN_average, inN_input */
	char curr[FILE_LEN];  /* HG_VI: currN_input */
	char label[LABEL_LEN];
	char path[128];       /* /sys/class/hwmon/hwmonN/<file>, for the logs and the zone */
	enum vw_zone zone;
	unsigned socket;
	size_t zone_idx;
	uint64_t raw_uj;      /* HG_ENERGY: the last good reading */
	struct vw_hwmon_integral integ; /* HG_POWER, HG_VI */
	struct vw_complaint complaint;
};

struct hwmon_generic {
	int classfd; /* to look a chip up again */
	struct hg_chip *chip;
	size_t n_chip, cap_chip;
	struct hg_sensor *s;
	size_t n_s, cap_s;
	size_t n;
	struct vw_zone_info info[VW_POWER_MAX_ZONES];
	bool energy[VW_POWER_MAX_ZONES]; /* counted from energy counters (else integrated) */
	size_t eacces;                   /* sensors refused for permission while opening */
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
static int read_value(int dirfd, const struct hg_sensor *s, uint64_t *ret)
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
	snprintf(ret_kepler, LABEL_LEN, "%s_%s", chip, ret);
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
		 s->label, kind_names[s->kind], vw_zone_name(s->zone), s->socket, t.rule);
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
	r = read_value(dirfd, &s, &v);
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

static int scan(struct hwmon_generic *hg, struct scan *sc)
{
	_cleanup_free_ uint32_t *idx = NULL;
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
	return r;
}

/* ---- sensors into zones ---------------------------------------------------------------- */

static bool same_place(const struct hg_sensor *a, const struct hg_sensor *b)
{
	return a->zone == b->zone && a->socket == b->socket;
}

/* Where a zone and socket has an energy counter, its power sensors are left out. */
static void prefer_energy(struct hwmon_generic *hg)
{
	size_t k = 0;

	for (size_t i = 0; i < hg->n_s; i++) {
		struct hg_sensor *s = &hg->s[i];
		bool beaten = false;

		for (size_t j = 0; s->kind != HG_ENERGY && j < hg->n_s && !beaten; j++)
			beaten = hg->s[j].kind == HG_ENERGY && same_place(&hg->s[j], s);
		if (beaten) {
			vw_info("hwmon: %s ('%s'): zone %s socket %u has an energy counter; this "
				"%s is left out",
				s->path, s->label, vw_zone_name(s->zone), s->socket,
				kind_names[s->kind]);
			continue;
		}
		hg->s[k++] = *s;
	}
	hg->n_s = k;
}

static int cmp_place(const void *a, const void *b)
{
	const struct vw_zone_info *x = a, *y = b;

	if (x->zone != y->zone)
		return x->zone < y->zone ? -1 : 1;
	return x->socket < y->socket ? -1 : x->socket > y->socket;
}

static size_t find_zone(const struct hwmon_generic *hg, enum vw_zone zone, unsigned socket)
{
	for (size_t z = 0; z < hg->n; z++)
		if (hg->info[z].zone == zone && hg->info[z].socket == socket)
			return z;
	return hg->n;
}

/* One zone per zone and socket, in that order, named by its first sensor's path. */
static void make_zones(struct hwmon_generic *hg)
{
	size_t k = 0;

	for (size_t i = 0; i < hg->n_s; i++) {
		const struct hg_sensor *s = &hg->s[i];

		if (find_zone(hg, s->zone, s->socket) < hg->n)
			continue;
		if (hg->n == VW_POWER_MAX_ZONES) {
			vw_warn("hwmon: more than %d zones; %s (zone %s socket %u) and later unused",
				VW_POWER_MAX_ZONES, s->path, vw_zone_name(s->zone), s->socket);
			break;
		}
		hg->info[hg->n] = (struct vw_zone_info){ .zone = s->zone, .socket = s->socket,
							 .idle_w = -1 };
		snprintf(hg->info[hg->n].path, sizeof(hg->info[0].path), "%s", s->path);
		hg->n++;
	}
	qsort(hg->info, hg->n, sizeof(hg->info[0]), cmp_place);
	for (size_t i = 0; i < hg->n_s; i++) {
		struct hg_sensor *s = &hg->s[i];

		s->zone_idx = find_zone(hg, s->zone, s->socket);
		if (s->zone_idx == hg->n)
			continue; /* over the limit */
		hg->energy[s->zone_idx] = s->kind == HG_ENERGY;
		hg->s[k++] = *s;
	}
	hg->n_s = k;
}

static void log_zones(const struct hwmon_generic *hg)
{
	for (size_t z = 0; z < hg->n; z++) {
		size_t n = 0;

		for (size_t i = 0; i < hg->n_s; i++)
			n += hg->s[i].zone_idx == z;
		vw_info("hwmon: zone %s socket %u: %zu %s%s summed, the first %s",
			vw_zone_name(hg->info[z].zone), hg->info[z].socket, n,
			hg->energy[z] ? "energy counter" : "power sensor", n == 1 ? "" : "s",
			hg->info[z].path);
	}
}

/* ---- the ops --------------------------------------------------------------------------- */

static void hg_close(void *state)
{
	struct hwmon_generic *hg = state;

	if (!hg)
		return;
	for (size_t i = 0; i < hg->n_chip; i++)
		vw_closep(&hg->chip[i].dirfd);
	vw_closep(&hg->classfd);
	free(hg->chip);
	free(hg->s);
	free(hg);
}

static void hg_closep(struct hwmon_generic **hg)
{
	hg_close(*hg);
}

static void rules_freep(struct vw_hwmon_rules **r)
{
	vw_hwmon_rules_free(*r);
}

static bool has_cpu_zone(const struct hwmon_generic *hg)
{
	for (size_t z = 0; z < hg->n; z++)
		if (hg->info[z].zone != VW_ZONE_PLATFORM)
			return true;
	return false;
}

/* What opening found, said once: 0, or -ENODEV / -EACCES for nothing this source can use. */
static int judge(const struct hwmon_generic *hg)
{
	if (hg->n == 0 && hg->eacces) {
		vw_error("hwmon: permission denied reading %zu hwmon sensor(s) a chip rule maps: "
			 "run with access to them, or map other sensors",
			 hg->eacces);
		return -EACCES;
	}
	if (hg->n == 0) {
		vw_debug("hwmon: no hwmon sensor a chip rule maps");
		return -ENODEV;
	}
	if (!has_cpu_zone(hg)) {
		vw_info("hwmon: only platform sensors are mapped (the first %s): hwmon gives CPU "
			"zones, so the next source does; map a CPU sensor with "
			"--power.hwmon.chip-rules to use them",
			hg->info[0].path);
		return -ENODEV;
	}
	if (hg->eacces)
		vw_warn("hwmon: %zu mapped hwmon sensor(s) refused reading; skipped", hg->eacces);
	log_zones(hg);
	return 0;
}

static int hg_open(const struct vw_power_env *env, void **ret_state)
{
	const struct vw_meter_config *mc = env ? env->ctx : NULL;
	_cleanup_(hg_closep) struct hwmon_generic *hg = NULL;
	_cleanup_(rules_freep) struct vw_hwmon_rules *builtin = NULL;
	struct scan sc = { .cfg = mc ? mc->hwmon : NULL };
	char err[256];
	size_t n_builtin = 0;
	int classfd, r;

	if (sc.cfg && sc.cfg->disabled) {
		vw_debug("hwmon: off (experimental.hwmon.enabled is false)");
		return -ENODEV;
	}
	classfd = vw_power_sysfs_class(env, VW_HWMON_DIR);
	if (classfd < 0)
		return classfd;
	hg = calloc(1, sizeof(*hg));
	if (!hg) {
		vw_closep(&classfd);
		return -ENOMEM;
	}
	hg->classfd = classfd;
	while (vw_hwmon_builtin_rules[n_builtin])
		n_builtin++;
	r = vw_hwmon_rules_parse(vw_hwmon_builtin_rules, n_builtin, &builtin, err, sizeof(err));
	if (r < 0)
		return r; /* the tests parse every built-in rule */
	sc.builtin = builtin;
	r = scan(hg, &sc);
	free(sc.names);
	if (r < 0)
		return r;
	prefer_energy(hg);
	make_zones(hg);
	r = judge(hg);
	if (r < 0)
		return r;
	*ret_state = VW_TAKE_PTR(hg);
	return 0;
}

static size_t hg_zones(void *state, const struct vw_zone_info **ret_zones)
{
	struct hwmon_generic *hg = state;

	*ret_zones = hg->info;
	return hg->n;
}

/*
 * The chip's directory is gone (its driver reloaded: the class device is new): look hwmonN up
 * again, and take it if it is still the chip of that name. A chip that comes back under another
 * number is not followed.
 */
static int reopen_chip(int classfd, struct hg_chip *c)
{
	struct vw_hwmon_chip again;
	int r = vw_hwmon_chip_open(classfd, c->index, &again);

	if (r < 0)
		return r;
	if (strcmp(again.name, c->name) != 0) {
		vw_closep(&again.dirfd);
		return -ENODEV;
	}
	vw_closep(&c->dirfd);
	c->dirfd = again.dirfd;
	return 0;
}

static int read_sensor(struct hwmon_generic *hg, struct hg_sensor *s, uint64_t *ret)
{
	struct hg_chip *c = &hg->chip[s->chip];
	int r = read_value(c->dirfd, s, ret);

	if ((r == -ENOENT || r == -ENODEV || r == -ESTALE) && reopen_chip(hg->classfd, c) == 0)
		r = read_value(c->dirfd, s, ret);
	return r;
}

/* Read one sensor into its counter at now_ns (NULL: no time, so only energy counters read). */
static int update_sensor(struct hwmon_generic *hg, struct hg_sensor *s, const uint64_t *now_ns)
{
	uint64_t v;
	int r;

	if (s->kind != HG_ENERGY && !now_ns)
		return -EINVAL; /* no time: nothing to integrate over */
	r = read_sensor(hg, s, &v);
	if (r < 0) {
		if (s->kind != HG_ENERGY)
			vw_hwmon_integral_lose(&s->integ);
		vw_complain(&s->complaint, VW_LOG_WARN,
			    "hwmon: %s ('%s'): cannot read: %s; %s", s->path, s->label,
			    strerror(-r),
			    s->kind == HG_ENERGY ? "its counter stands still until it reads again"
						 : "no energy counted until it reads again");
		return r;
	}
	vw_release(&s->complaint, VW_LOG_INFO, "hwmon: %s ('%s'): readable again", s->path,
		   s->label);
	if (s->kind == HG_ENERGY)
		s->raw_uj = v;
	else
		vw_hwmon_integrate(&s->integ, v, *now_ns);
	return 0;
}

static int hg_read(void *state, const struct vw_node_activity *act, uint64_t *raw_uj, int *errs)
{
	struct hwmon_generic *hg = state;
	bool read_one[VW_POWER_MAX_ZONES] = { false };

	for (size_t z = 0; z < hg->n; z++) {
		raw_uj[z] = 0;
		errs[z] = 0;
	}
	for (size_t i = 0; i < hg->n_s; i++) {
		struct hg_sensor *s = &hg->s[i];
		size_t z = s->zone_idx;
		int r = update_sensor(hg, s, act ? &act->now_ns : NULL);

		/* A zone reads while one of its sensors does; else its first error. */
		if (r == 0)
			read_one[z] = true;
		else if (!errs[z])
			errs[z] = r;
		raw_uj[z] = vw_energy_add(raw_uj[z],
					  s->kind == HG_ENERGY ? s->raw_uj : s->integ.energy_uj);
	}
	for (size_t z = 0; z < hg->n; z++)
		if (read_one[z])
			errs[z] = 0;
	return vw_power_read_result(errs, hg->n);
}

const struct vw_power_source_ops vw_src_hwmon = {
	.name = "hwmon",
	.measured = true,
	.open = hg_open,
	.zones = hg_zones,
	.read = hg_read,
	.close = hg_close,
};

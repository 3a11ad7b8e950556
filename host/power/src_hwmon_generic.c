/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Generic hwmon sensors under <sysfs>/class/hwmon/hwmonN (name "hwmon"): every chip but the ACPI
 * power meter (src_acpi.c's), each of its sensors of one of three kinds, best first:
 *
 *   energyN_input                    a cumulative µJ counter (amd_energy, zenergy, ibmpowernv)
 *   powerN_average, else powerN_input a power reading in µW (ina2xx, BMC-backed drivers)
 *   inN_input x currN_input          mV x mA = µW, for chips whose rails read that way (ina3221)
 *
 * Chip rules (hwmon_rules.h: the operator's, then the built-in ones) say which zone and socket a
 * sensor counts in, by the chip's name and the sensor's label (<kind>N_label, else the chip's own
 * `label`, else the sensor's name such as power1); a sensor no rule maps is not used. Finding
 * and reading the sensors is hwmon_sensors.c's; here they become zones. Sensors of one zone
 * and socket are summed. An energy counter beats a power reading: where a zone and
 * socket has one, that zone's power sensors are left out.
 *
 * Energy zones hand the engine the sum of their counters as they read, with max_range_uj 0: the
 * energy counter (shared/energy) takes any decrease, a counter reset by a reloaded driver or a
 * wrap at a width hwmon does not publish, as a gap (that interval counts nothing) rather than
 * guess a range. Power zones hand the sum of their sensors' integrals, kept here exactly as the
 * ACPI meter keeps its own (src_acpi.c): a thread of the source's own reads every power sensor
 * every VW_GAUGE_TICK_NS (stamped vw_now_ns()) and each read() once more at act->now_ns, each
 * reading counted over the time since the one before it (one stamped no later counts nothing),
 * so a late read() does not spread its reading over its whole wait; a failed read counts
 * nothing, the next good read only sets the time, and that span is a gap (stats()). The lock
 * covers the sensors and chips (a chip looked up again) for both threads. A zone reads while one of its sensors does; a failing sensor stands still
 * (its last counter, or its integral) and is logged, rate-limited, until it reads again.
 *
 * Nothing here writes. Every file is read relative to a chip's directory fd, opened below the
 * injected sysfs root; a chip whose directory went away (its driver reloaded) is looked up again
 * at the same hwmonN, by name.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "energy.h"
#include "hwmon_sensors_priv.h"
#include "macro.h"

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
				vw_hwmon_kind_names[s->kind]);
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
	vw_ticker_fini(&hg->tk);
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

static int start_ticks(struct hwmon_generic *hg, const struct vw_hwmon_config *cfg);

static int hg_open(const struct vw_power_env *env, void **ret_state)
{
	_cleanup_(hg_closep) struct hwmon_generic *hg = NULL;
	_cleanup_(rules_freep) struct vw_hwmon_rules *builtin = NULL;
	const struct vw_hwmon_config *cfg = vw_power_source_config(env, &vw_src_hwmon);
	char err[256];
	size_t n_builtin = 0;
	int classfd, r;

	if (cfg && cfg->disabled) {
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
	r = vw_hwmon_sensors_find(hg, cfg, builtin);
	if (r < 0)
		return r;
	prefer_energy(hg);
	make_zones(hg);
	r = judge(hg);
	if (r < 0)
		return r;
	r = start_ticks(hg, cfg);
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
	int r = vw_hwmon_sensor_read(c->dirfd, s, ret);

	if ((r == -ENOENT || r == -ENODEV || r == -ESTALE) && reopen_chip(hg->classfd, c) == 0)
		r = vw_hwmon_sensor_read(c->dirfd, s, ret);
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
		if (s->kind != HG_ENERGY) {
			s->gap_open = s->gap_open || s->integ.primed;
			vw_power_integrator_break(&s->integ);
		}
		vw_complain(&s->complaint, VW_LOG_WARN,
			    "hwmon: %s ('%s'): cannot read: %s; %s", s->path, s->label,
			    strerror(-r),
			    s->kind == HG_ENERGY ? "its counter stands still until it reads again"
						 : "no energy counted until it reads again");
		return r;
	}
	vw_release(&s->complaint, VW_LOG_INFO, "hwmon: %s ('%s'): readable again", s->path,
		   s->label);
	if (s->kind == HG_ENERGY) {
		s->raw_uj = v;
	} else if (!s->integ.primed || *now_ns > s->integ.last_ns) {
		/* (One stamped no later than the last reading counts nothing.) */
		if (!s->integ.primed && s->gap_open) {
			s->gap_open = false;
			s->gaps++;
		}
		vw_power_integrate(&s->integ, v, *now_ns);
	}
	return 0;
}

void vw_hwmon_tick(void *state, uint64_t now_ns)
{
	struct hwmon_generic *hg = state;

	pthread_mutex_lock(&hg->tk.lock);
	for (size_t i = 0; i < hg->n_s; i++)
		if (hg->s[i].kind != HG_ENERGY)
			(void)update_sensor(hg, &hg->s[i], &now_ns);
	pthread_mutex_unlock(&hg->tk.lock);
}

/* Every VW_GAUGE_TICK_NS: the power sensors read (under the lock: a chip may be looked up
 * again), each stamped vw_now_ns() as it is read. */
static void tick(void *arg)
{
	struct hwmon_generic *hg = arg;

	pthread_mutex_lock(&hg->tk.lock);
	for (size_t i = 0; i < hg->n_s; i++) {
		uint64_t t = vw_now_ns();

		if (hg->s[i].kind != HG_ENERGY)
			(void)update_sensor(hg, &hg->s[i], &t);
	}
	pthread_mutex_unlock(&hg->tk.lock);
}

/* The lock, and the thread where a power sensor is and cfg does not leave the ticks to a
 * test. 0 or -errno. */
static int start_ticks(struct hwmon_generic *hg, const struct vw_hwmon_config *cfg)
{
	bool power = false;
	int r = vw_ticker_init(&hg->tk, "hwmon");

	if (r < 0)
		return r;
	for (size_t i = 0; i < hg->n_s; i++)
		power = power || hg->s[i].kind != HG_ENERGY;
	if (!power || (cfg && cfg->manual_ticks))
		return 0;
	return vw_ticker_start(&hg->tk, VW_GAUGE_TICK_NS, tick, hg, "hwmon");
}

static int hg_read(void *state, const struct vw_node_activity *act, uint64_t *raw_uj, int *errs)
{
	struct hwmon_generic *hg = state;
	bool read_one[VW_POWER_MAX_ZONES] = { false };

	pthread_mutex_lock(&hg->tk.lock);
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
	pthread_mutex_unlock(&hg->tk.lock);
	for (size_t z = 0; z < hg->n; z++)
		if (read_one[z])
			errs[z] = 0;
	return vw_power_read_result(errs, hg->n);
}

/* The power sensors' gaps (spans a failed reading left uncounted), summed. */
static void hg_stats(void *state, struct vw_power_source_stats *ret)
{
	struct hwmon_generic *hg = state;

	pthread_mutex_lock(&hg->tk.lock);
	for (size_t i = 0; i < hg->n_s; i++)
		ret->gaps += hg->s[i].gaps;
	pthread_mutex_unlock(&hg->tk.lock);
}

/* ---- options: --power.hwmon.*, Kepler's experimental.hwmon.* -------------------------- */

/* The flags as given; hg_configure() parses the chip rules. */
struct hg_options {
	struct vw_strlist chip_rules; /* CHIP[:LABEL]=ZONE[@SOCKET], before the built-in ones */
	bool enabled;                 /* Kepler's experimental.hwmon.enabled */
	bool force;                   /* Kepler's experimental.hwmon.forceEnabled */
	struct vw_strlist zones;      /* Kepler's experimental.hwmon.zones: labels to use */
};

#define OFF(f) offsetof(struct hg_options, f)
static const struct vw_option hg_rows[] = {
	{ "power.hwmon.chip-rules", "power.hwmon.chipRules", VW_OPT_STRLIST, OFF(chip_rules),
	  NULL, "CHIP[:LABEL]=ZONE[@SOCKET],...",
	  "which hwmon sensor counts in which zone, before the built-in rules: a chip name and an "
	  "optional sensor label (globs, any case) to package, core, uncore, dram, psys or "
	  "platform, in a socket (a number, 0 by default; label: the number the label ends with; "
	  "chip: the chip's place among chips of its name), or to none "
	  "(e.g. amd_energy:Ecore*=core)" },
	{ "experimental.hwmon.enabled", "experimental.hwmon.enabled", VW_OPT_BOOL,
	  OFF(enabled), "true", NULL,
	  "read generic hwmon sensors where no RAPL is (Kepler's key; false drops hwmon from "
	  "power.sources)" },
	{ "experimental.hwmon.force-enabled", "experimental.hwmon.forceEnabled", VW_OPT_BOOL,
	  OFF(force), "false", NULL,
	  "prefer hwmon sensors to RAPL, when power.sources and cpu.preferred-meters are not set "
	  "(Kepler's deprecated key)" },
	{ "experimental.hwmon.zones", "experimental.hwmon.zones", VW_OPT_STRLIST, OFF(zones),
	  NULL, "LABEL,...",
	  "use only the hwmon sensors with these labels, compared as Kepler names them (lower "
	  "case, _ for other characters; default: every sensor a chip rule maps)" },
};
#undef OFF

static const struct vw_option_alias hg_aliases[] = {
	{ NULL, "experimental.hwmon.chipRules", NULL,
	  "Kepler's rules pair voltage and current inputs; virtwatt reads power and energy sensors "
	  "and maps them with power.hwmon.chip-rules",
	  "" },
	{ NULL, NULL, NULL, NULL, NULL },
};

/* The configuration and the rules it owns. */
struct hg_configured {
	struct vw_hwmon_config cfg; /* first: what the meter gets */
	struct vw_hwmon_rules *rules;
};

static void hg_release(void *config)
{
	struct hg_configured *c = config;

	if (!c)
		return;
	vw_hwmon_rules_free(c->rules);
	free(c);
}

static int hg_configure(const void *opts, const char *node_name, void **ret)
{
	const struct hg_options *o = opts;
	struct hg_configured *c = calloc(1, sizeof(*c));
	char err[256] = "";
	int r;

	(void)node_name;
	if (!c)
		return -ENOMEM;
	r = vw_hwmon_rules_parse((const char *const *)o->chip_rules.v, o->chip_rules.n, &c->rules,
				 err, sizeof(err));
	if (r == -EINVAL)
		vw_error("config: --power.hwmon.chip-rules (power.hwmon.chipRules): %s; a rule is "
			 "CHIP[:LABEL]=ZONE[@SOCKET] or CHIP[:LABEL]=none",
			 err);
	if (r < 0) {
		hg_release(c);
		return r;
	}
	c->cfg = (struct vw_hwmon_config){ .rules = c->rules,
					   .zones = (const char *const *)o->zones.v,
					   .n_zones = o->zones.n,
					   .disabled = !o->enabled };
	*ret = c;
	return 0;
}

/* Kepler's experimental.hwmon.forceEnabled: hwmon before RAPL. */
static bool hg_first(const void *opts)
{
	return ((const struct hg_options *)opts)->force;
}

static const struct vw_source_options hg_options = {
	.rows = hg_rows,
	.n_rows = ARRAY_SIZE(hg_rows),
	.aliases = hg_aliases,
	.size = sizeof(struct hg_options),
	.configure = hg_configure,
	.release = hg_release,
	.first = hg_first,
};

const struct vw_power_source_ops vw_src_hwmon = {
	.name = "hwmon",
	.about = "sensors a chip rule maps",
	.measured = true,
	.open = hg_open,
	.zones = hg_zones,
	.read = hg_read,
	.stats = hg_stats,
	.close = hg_close,
	.options = &hg_options,
};

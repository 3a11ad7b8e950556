/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RAPL through the powercap class: <sysfs>/class/powercap/intel-rapl:N (package-N, psys) and
 * intel-rapl:N:M (core, uncore, dram of package N). intel-rapl-mmio:* zones that repeat a zone
 * already found are skipped, as Kepler does. Every file is read relative to a directory fd
 * opened below the injected sysfs root; nothing here knows where /sys is.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config.h"
#include "fileio.h"
#include "log.h"
#include "macro.h"
#include "power.h"

#define POWERCAP_DIR "class/powercap"
/* Only the `path` label: independent of --host.sysfs so that output is stable. */
#define PATH_LABEL_PREFIX "/sys/class/powercap/"
#define PREFIX_MSR "intel-rapl:"
#define PREFIX_MMIO "intel-rapl-mmio:"
/*
 * constraint_0_max_power_uw is the highest long-term limit (PL1) one may set; turbo (PL2, PL4)
 * runs well above it for seconds. The plausibility ceiling gets this much headroom so that only
 * junk and clock jumps trip it, never a real burst.
 */
#define CEILING_FACTOR 4
#define ENTRY_NAME_MAX 64

struct pc_entry {
	char name[ENTRY_NAME_MAX]; /* directory entry, e.g. "intel-rapl:0:1" */
	bool mmio;
	bool sub;
	unsigned top; /* N */
};

struct pc_zone {
	struct vw_zone_info info;
	int dirfd;
	bool mmio;
	struct vw_complaint complaint;
};

struct powercap {
	int pcfd; /* <sysfs>/class/powercap, to open a zone again that was re-created */
	size_t n;
	struct vw_zone_info info[VW_POWER_MAX_ZONES]; /* what zones() hands out */
	struct pc_zone zone[VW_POWER_MAX_ZONES];
};

/* Growable list of candidate zones found while scanning. */
struct pc_list {
	struct pc_zone *z;
	size_t n, cap;
};

static void pc_list_done(struct pc_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		vw_closep(&l->z[i].dirfd);
	free(l->z);
	*l = (struct pc_list){ 0 };
}

static int pc_list_push(struct pc_list *l, const struct pc_zone *z)
{
	if (vw_array_grow((void **)&l->z, sizeof(*l->z), l->n, &l->cap) < 0)
		return -ENOMEM;
	l->z[l->n++] = *z;
	return 0;
}

/* Strict decimal index ending at ':' or NUL; advances *p. */
static int parse_index(const char **p, unsigned *ret)
{
	unsigned v = 0;
	const char *s = *p;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (v > 99999)
			return -ERANGE;
		v = v * 10 + (unsigned)(*s - '0');
	}
	if (*s != ':' && *s != '\0')
		return -EINVAL;
	*p = s;
	*ret = v;
	return 0;
}

/* "intel-rapl:N", "intel-rapl:N:M", "intel-rapl-mmio:N[:M]"; anything else is not a zone. */
static int parse_entry(const char *name, struct pc_entry *ret)
{
	const char *p;
	unsigned sub;

	*ret = (struct pc_entry){ 0 };
	if (strlen(name) >= sizeof(ret->name))
		return -EINVAL;
	if (strncmp(name, PREFIX_MSR, strlen(PREFIX_MSR)) == 0) {
		p = name + strlen(PREFIX_MSR);
	} else if (strncmp(name, PREFIX_MMIO, strlen(PREFIX_MMIO)) == 0) {
		p = name + strlen(PREFIX_MMIO);
		ret->mmio = true;
	} else {
		return -EINVAL;
	}
	if (parse_index(&p, &ret->top) < 0)
		return -EINVAL;
	if (*p == ':') {
		p++;
		if (parse_index(&p, &sub) < 0 || *p != '\0')
			return -EINVAL;
		ret->sub = true;
	}
	strcpy(ret->name, name);
	return 0;
}

/*
 * vw_zone_parse() plus the multi-die package names, "package-N-die-M" (one zone per die, all
 * on socket N; the path label keeps them apart).
 */
static int parse_zone_name(const char *name, enum vw_zone *ret, unsigned *ret_socket)
{
	char pkg[64];
	const char *die = strstr(name, "-die-");
	uint64_t v;

	if (!die || strncmp(name, "package-", 8) != 0)
		return vw_zone_parse(name, ret, ret_socket);
	if (vw_parse_u64(die + 5, &v) < 0 || (size_t)(die - name) >= sizeof(pkg))
		return -EINVAL;
	memcpy(pkg, name, (size_t)(die - name));
	pkg[die - name] = '\0';
	return vw_zone_parse(pkg, ret, ret_socket);
}

/* Package index of the parent of a sub-zone: from the parent's name, else N. */
static unsigned parent_socket(int pcfd, const struct pc_entry *e)
{
	char rel[ENTRY_NAME_MAX + 16], name[64];
	enum vw_zone zone;
	unsigned socket;

	snprintf(rel, sizeof(rel), "%s%u/name", e->mmio ? PREFIX_MMIO : PREFIX_MSR, e->top);
	if (vw_read_str_at(pcfd, rel, name, sizeof(name)) == 0 &&
	    parse_zone_name(name, &zone, &socket) == 0 && zone == VW_ZONE_PACKAGE)
		return socket;
	vw_debug("powercap: %s: parent is no package zone; socket %u from its index", e->name,
		 e->top);
	return e->top;
}

static bool zone_disabled(int dirfd)
{
	uint64_t enabled;

	return vw_read_u64_at(dirfd, "enabled", &enabled) == 0 && enabled == 0;
}

static uint64_t read_ceiling(int dirfd)
{
	uint64_t uw;

	if (vw_read_u64_at(dirfd, "constraint_0_max_power_uw", &uw) < 0 ||
	    uw > UINT64_MAX / CEILING_FACTOR)
		return 0;
	return uw * CEILING_FACTOR;
}

/* Fill z from the zone directory. -ENOENT-like errors mean "not a zone we use". */
static int inspect_zone(int pcfd, const struct pc_entry *e, struct pc_zone *z)
{
	_cleanup_close_ int dirfd = -1;
	char name[64];
	int r;

	*z = (struct pc_zone){ .dirfd = -1, .mmio = e->mmio };
	dirfd = vw_dir_open_at(pcfd, e->name);
	if (dirfd < 0)
		return dirfd;
	if (zone_disabled(dirfd)) {
		vw_debug("powercap: %s: disabled, skipped", e->name);
		return -ENODEV;
	}
	r = vw_read_str_at(dirfd, "name", name, sizeof(name));
	if (r < 0) {
		vw_debug("powercap: %s: cannot read name: %s", e->name, strerror(-r));
		return r;
	}
	if (parse_zone_name(name, &z->info.zone, &z->info.socket) < 0) {
		vw_debug("powercap: %s: unknown zone name \"%s\", skipped", e->name, name);
		return -ENODEV;
	}
	if (e->sub)
		z->info.socket = parent_socket(pcfd, e);
	snprintf(z->info.path, sizeof(z->info.path), PATH_LABEL_PREFIX "%s", e->name);
	if (vw_read_u64_at(dirfd, "max_energy_range_uj", &z->info.max_range_uj) < 0)
		z->info.max_range_uj = 0;
	z->info.max_power_uw = read_ceiling(dirfd);
	z->info.idle_w = -1;
	z->dirfd = VW_TAKE_FD(dirfd);
	return 0;
}

static int scan_entries(int pcfd, struct pc_list *out)
{
	_cleanup_close_ int fd = openat(pcfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d;
	struct dirent *de;
	int r = 0;

	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d)
		return -errno;
	fd = -1; /* owned by d now */
	while (r == 0 && (de = readdir(d))) {
		struct pc_entry e;
		struct pc_zone z;

		if (parse_entry(de->d_name, &e) < 0 || inspect_zone(pcfd, &e, &z) < 0)
			continue;
		r = pc_list_push(out, &z);
		if (r < 0)
			vw_closep(&z.dirfd);
	}
	closedir(d);
	return r;
}

static bool same_zone(const struct pc_zone *a, const struct pc_zone *b)
{
	return a->info.zone == b->info.zone && a->info.socket == b->info.socket;
}

/* Drop each MMIO zone that repeats a zone of the MSR interface. */
static void drop_mmio_duplicates(struct pc_list *l)
{
	size_t keep = 0;

	for (size_t i = 0; i < l->n; i++) {
		bool dup = false;

		for (size_t j = 0; l->z[i].mmio && j < l->n && !dup; j++)
			dup = !l->z[j].mmio && same_zone(&l->z[i], &l->z[j]);
		if (dup) {
			vw_debug("powercap: %s duplicates an intel-rapl zone, skipped",
				 l->z[i].info.path);
			vw_closep(&l->z[i].dirfd);
			continue;
		}
		l->z[keep++] = l->z[i];
	}
	l->n = keep;
}

/* Keep zones whose energy_uj reads now; count those refused with EACCES. */
static void drop_unreadable(struct pc_list *l, size_t *ret_eacces)
{
	size_t keep = 0, eacces = 0;

	for (size_t i = 0; i < l->n; i++) {
		uint64_t v;
		int r = vw_read_u64_at(l->z[i].dirfd, "energy_uj", &v);

		if (r < 0) {
			/* Permission is reported once for all zones, by the caller. */
			vw_log(r == -EACCES ? VW_LOG_DEBUG : VW_LOG_WARN,
			       "powercap: %s: cannot read energy_uj: %s; zone skipped",
			       l->z[i].info.path, strerror(-r));
			eacces += r == -EACCES;
			vw_closep(&l->z[i].dirfd);
			continue;
		}
		l->z[keep++] = l->z[i];
	}
	l->n = keep;
	*ret_eacces = eacces;
}

static int cmp_zone(const void *a, const void *b)
{
	const struct vw_zone_info *x = &((const struct pc_zone *)a)->info;
	const struct vw_zone_info *y = &((const struct pc_zone *)b)->info;

	if (x->socket != y->socket)
		return x->socket < y->socket ? -1 : 1;
	if (x->zone != y->zone)
		return x->zone < y->zone ? -1 : 1;
	return strcmp(x->path, y->path);
}

static void warn_unknown_ranges(const struct powercap *pc)
{
	size_t unknown = 0, first = 0;

	for (size_t i = 0; i < pc->n; i++)
		if (!pc->info[i].max_range_uj && !unknown++)
			first = i;
	if (unknown)
		vw_warn("powercap: max_energy_range_uj missing or unreadable for %zu zone(s), "
			"first %s: a counter decrease there counts as a gap, not a wrap",
			unknown, pc->info[first].path);
}

/* Sorted, truncated to VW_POWER_MAX_ZONES; takes the fds out of l. */
static void take_zones(struct powercap *pc, struct pc_list *l)
{
	qsort(l->z, l->n, sizeof(*l->z), cmp_zone);
	if (l->n > VW_POWER_MAX_ZONES)
		vw_warn("powercap: %zu zones, only the first %d are used", l->n,
			VW_POWER_MAX_ZONES);
	for (size_t i = 0; i < l->n; i++) {
		if (i >= VW_POWER_MAX_ZONES) {
			vw_closep(&l->z[i].dirfd);
			continue;
		}
		pc->zone[i] = l->z[i];
		pc->info[i] = l->z[i].info;
		pc->n++;
	}
	l->n = 0;
}

static void powercap_close(void *state)
{
	struct powercap *pc = state;

	if (!pc)
		return;
	for (size_t i = 0; i < pc->n; i++)
		vw_closep(&pc->zone[i].dirfd);
	vw_closep(&pc->pcfd);
	free(pc);
}

static void powercap_closep(struct powercap **pc)
{
	powercap_close(*pc);
}

static void log_eacces(void)
{
	vw_error("powercap: permission denied reading energy_uj of every RAPL zone: since "
		 "Linux 5.10 (commit 949dd0104c49, CVE-2020-8694) it is readable by root only; "
		 "run virtwatt-host as root or grant it CAP_DAC_READ_SEARCH");
}

static int find_zones(int pcfd, struct pc_list *l)
{
	size_t found, eacces;
	int r = scan_entries(pcfd, l);

	if (r < 0)
		return r;
	drop_mmio_duplicates(l);
	found = l->n;
	if (found == 0)
		return -ENODEV;
	drop_unreadable(l, &eacces);
	if (l->n > 0) {
		if (eacces)
			vw_warn("powercap: energy_uj of %zu of %zu zones is root-only here; "
				"those zones are skipped",
				eacces, found);
		return 0;
	}
	if (eacces == found) {
		log_eacces();
		return -EACCES;
	}
	return -ENODEV;
}

/* ---- options: Kepler's rapl.zones ------------------------------------------------------ */

/* The flags as given: the meter reads them as they are (no configure()). */
struct powercap_options {
	struct vw_strlist zones; /* by name: package, core, uncore, dram, psys; none: all */
};

static const char *const rapl_zone_names[] = { "package", "core", "uncore", "dram", "psys", NULL };

static const struct vw_option powercap_rows[] = {
	{ "rapl.zones", "rapl.zones", VW_OPT_STRLIST, offsetof(struct powercap_options, zones), NULL,
	  "ZONE,...", "read only these RAPL zones (default: all)", 0, 0, rapl_zone_names },
};

static const struct vw_source_options powercap_options = {
	.rows = powercap_rows,
	.n_rows = ARRAY_SIZE(powercap_rows),
	.size = sizeof(struct powercap_options),
};

/* Kepler's rapl.zones: keep only the zones named (none named: all); -ENODEV if none is left. */
static int keep_named(struct pc_list *l, const char *const *names)
{
	size_t keep = 0;

	if (!names || !names[0])
		return 0;
	for (size_t i = 0; i < l->n; i++) {
		const char *name = vw_zone_name(l->z[i].info.zone);
		bool wanted = false;

		for (size_t k = 0; names[k] && !wanted; k++)
			wanted = strcasecmp(names[k], name) == 0;
		if (!wanted) {
			vw_debug("powercap: %s (%s) is not in rapl.zones, skipped", l->z[i].info.path,
				 name);
			vw_closep(&l->z[i].dirfd);
			continue;
		}
		l->z[keep++] = l->z[i];
	}
	l->n = keep;
	if (keep)
		return 0;
	vw_warn("powercap: no RAPL zone here is named in rapl.zones (package, core, uncore, dram, "
		"psys): no RAPL meter");
	return -ENODEV;
}

static int powercap_open(const struct vw_power_env *env, void **ret_state)
{
	const struct powercap_options *o = vw_power_source_config(env, &vw_src_powercap);
	_cleanup_(powercap_closep) struct powercap *pc = NULL;
	_cleanup_close_ int pcfd = -1;
	_cleanup_(pc_list_done) struct pc_list l = { 0 };
	int r;

	pcfd = vw_power_sysfs_class(env, POWERCAP_DIR);
	if (pcfd < 0)
		return pcfd;
	pc = calloc(1, sizeof(*pc));
	if (!pc)
		return -ENOMEM;
	pc->pcfd = -1;
	r = find_zones(pcfd, &l);
	if (r == 0 && o && o->zones.n)
		r = keep_named(&l, (const char *const *)o->zones.v);
	if (r < 0)
		return r;
	take_zones(pc, &l);
	pc->pcfd = VW_TAKE_FD(pcfd);
	warn_unknown_ranges(pc);
	for (size_t i = 0; i < pc->n; i++)
		vw_debug("powercap: zone %s socket %u at %s, range %llu uJ, ceiling %llu uW",
			 vw_zone_name(pc->info[i].zone), pc->info[i].socket, pc->info[i].path,
			 (unsigned long long)pc->info[i].max_range_uj,
			 (unsigned long long)pc->info[i].max_power_uw);
	*ret_state = VW_TAKE_PTR(pc);
	return 0;
}

static size_t powercap_zones(void *state, const struct vw_zone_info **ret_zones)
{
	struct powercap *pc = state;

	*ret_zones = pc->info;
	return pc->n;
}

/*
 * The zone's directory is gone (intel_rapl unloaded and loaded again, the device re-created): our
 * handle points at a removed directory, so look the entry up again, once per read while it
 * fails. The counter behind it is the hardware's, which ran on meanwhile; the energy counter's
 * rules (a gap when the time away could hide a wrap) decide what the absence costs.
 */
static int reopen_zone(int pcfd, struct pc_zone *z)
{
	_cleanup_close_ int fd = vw_dir_open_at(pcfd, z->info.path + strlen(PATH_LABEL_PREFIX));
	char name[64];
	enum vw_zone zone;
	unsigned socket;

	if (fd < 0)
		return fd;
	if (vw_read_str_at(fd, "name", name, sizeof(name)) < 0 ||
	    parse_zone_name(name, &zone, &socket) < 0 || zone != z->info.zone)
		return -ENODEV; /* another zone under that name: not this one */
	vw_closep(&z->dirfd);
	z->dirfd = VW_TAKE_FD(fd);
	return 0;
}

static int read_zone(int pcfd, struct pc_zone *z, uint64_t *ret_raw)
{
	int r = vw_read_u64_at(z->dirfd, "energy_uj", ret_raw);

	if ((r == -ENOENT || r == -ENODEV || r == -ESTALE) && reopen_zone(pcfd, z) == 0)
		r = vw_read_u64_at(z->dirfd, "energy_uj", ret_raw);
	if (r < 0) {
		*ret_raw = 0;
		vw_complain(&z->complaint, VW_LOG_WARN, "powercap: %s: cannot read energy_uj: %s",
			    z->info.path, strerror(-r));
		return r;
	}
	vw_release(&z->complaint, VW_LOG_INFO, "powercap: %s: energy_uj readable again",
		   z->info.path);
	return 0;
}

static int powercap_read(void *state, const struct vw_node_activity *act, uint64_t *raw_uj,
			 int *errs)
{
	struct powercap *pc = state;

	(void)act;
	for (size_t i = 0; i < pc->n; i++)
		errs[i] = read_zone(pc->pcfd, &pc->zone[i], &raw_uj[i]);
	return vw_power_read_result(errs, pc->n);
}

const struct vw_power_source_ops vw_src_powercap = {
	.name = "rapl",
	.measured = true,
	.open = powercap_open,
	.zones = powercap_zones,
	.read = powercap_read,
	.close = powercap_close,
	.options = &powercap_options,
};

/* SPDX-License-Identifier: Apache-2.0 */
/* The carbon tracker (carbon.h): energy counters' increases times the interval's intensity. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "carbon.h"
#include "fileio.h"
#include "log.h"
#include "macro.h"

#define INTENSITY_FILE_MAX (4u << 20)

/* ---- Families: each level's energy labels plus intensity_source ---- */

enum level { L_NODE, L_CONTAINER, L_POD, L_VM, L__COUNT };

static const char *const l_node[] = { "zone", "path", "node_name", "intensity_source", NULL };
static const char *const l_container[] = { "container_id", "container_name", "runtime", "state",
					   "zone", "pod_id", "node_name", "intensity_source",
					   NULL };
static const char *const l_pod[] = { "pod_id", "pod_name", "pod_namespace", "state", "zone",
				     "node_name", "intensity_source", NULL };
static const char *const l_vm[] = { "vm_id", "vm_name", "hypervisor", "state", "zone",
				    "node_name", "intensity_source", NULL };
static const char *const l_source[] = { "intensity_source", "node_name", NULL };
static const char *const l_node_name[] = { "node_name", NULL };

/* The energy family each level follows. */
static const char *const energy_family[L__COUNT] = {
	"kepler_node_cpu_joules_total", "kepler_container_cpu_joules_total",
	"kepler_pod_cpu_joules_total", "kepler_vm_cpu_joules_total",
};

static const struct vw_metric_family carbon_families[] = {
	[L_NODE] = { "virtwatt_node_co2e_grams_total", VW_METRIC_COUNTER,
		     "Estimated emissions of the node's energy in grams of CO2 equivalent: each "
		     "interval's kepler_node_cpu_joules_total times the grid's carbon intensity "
		     "over that interval (intensity_source: static, or file:NAME). Per zone like "
		     "the energy: zones overlap, never sum them",
		     "grams", l_node },
	[L_CONTAINER] = { "virtwatt_container_co2e_grams_total", VW_METRIC_COUNTER,
			  "Estimated emissions of a container's (active) cpu energy in grams of "
			  "CO2 equivalent, as kepler_container_cpu_joules_total times the "
			  "interval's carbon intensity",
			  "grams", l_container },
	[L_POD] = { "virtwatt_pod_co2e_grams_total", VW_METRIC_COUNTER,
		    "Estimated emissions of a pod's (active) cpu energy in grams of CO2 "
		    "equivalent, as kepler_pod_cpu_joules_total times the interval's carbon "
		    "intensity",
		    "grams", l_pod },
	[L_VM] = { "virtwatt_vm_co2e_grams_total", VW_METRIC_COUNTER,
		   "Estimated emissions of a VM's (active) cpu energy in grams of CO2 equivalent, "
		   "as kepler_vm_cpu_joules_total times the interval's carbon intensity",
		   "grams", l_vm },
	{ "virtwatt_carbon_intensity_grams_per_kwh", VW_METRIC_GAUGE,
	  "The grid's carbon intensity in effect now (gCO2e/kWh) and where it comes from "
	  "(static: --carbon.intensity; file:NAME: --carbon.intensity-file); absent before the "
	  "table's first entry",
	  NULL, l_source },
	{ "virtwatt_carbon_intensity_missing_seconds_total", VW_METRIC_COUNTER,
	  "Seconds with no carbon intensity (before the intensity table's first entry): their "
	  "energy was not converted",
	  "seconds", l_node_name },
};

const struct vw_family_table vw_carbon_family_table = {
	"shared/carbon/carbon.c: vw_carbon_render()", "virtwatt-host, virtwatt-guest",
	"with --carbon.intensity or --carbon.intensity-file; a workload level's family only where "
	"that level's energy is exported",
	carbon_families, ARRAY_SIZE(carbon_families),
};

/* ---- State ---- */

struct series {
	enum level level;
	char *id;       /* the level and its labels but state, for identity */
	char **values;  /* the energy labels' current values (state follows the workload) */
	size_t nvalues;
	uint64_t last_micro;
	double grams;
	bool seen;
};

struct vw_carbon {
	struct vw_carbon_opts o;
	char *file;
	char source[128]; /* intensity_source */
	struct vw_intensity_point *table;
	size_t n_table;
	struct timespec file_mtime;
	off_t file_size;
	struct series *s;
	size_t n, cap;
	size_t *index; /* open addressing over s, 0 = empty, else i + 1 */
	size_t index_cap;
	int64_t prev_ns, now_ns;
	double mean_g_per_kwh; /* over the interval being rendered */
	double missing_s;
	bool first;
	bool level_seen[L__COUNT]; /* a sample of the level was written this render */
	struct vw_complaint file_complaint;
};

static uint64_t fnv(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	return h;
}

static int index_rebuild(struct vw_carbon *c)
{
	size_t cap = 64;

	while (cap < 2 * c->n + 2)
		cap *= 2;
	if (cap != c->index_cap) {
		size_t *ix = calloc(cap, sizeof(*ix));

		if (!ix)
			return -ENOMEM;
		free(c->index);
		c->index = ix;
		c->index_cap = cap;
	} else {
		memset(c->index, 0, cap * sizeof(*c->index));
	}
	for (size_t i = 0; i < c->n; i++) {
		size_t h = (size_t)fnv(c->s[i].id) & (c->index_cap - 1);

		while (c->index[h])
			h = (h + 1) & (c->index_cap - 1);
		c->index[h] = i + 1;
	}
	return 0;
}

static struct series *find(struct vw_carbon *c, const char *id)
{
	size_t h;

	if (!c->index_cap)
		return NULL;
	for (h = (size_t)fnv(id) & (c->index_cap - 1); c->index[h]; h = (h + 1) & (c->index_cap - 1))
		if (strcmp(c->s[c->index[h] - 1].id, id) == 0)
			return &c->s[c->index[h] - 1];
	return NULL;
}

static void series_free(struct series *s)
{
	for (size_t i = 0; i < s->nvalues; i++)
		free(s->values[i]);
	free(s->values);
	free(s->id);
}

/* ---- The intensity file ---- */

static int load_file(struct vw_carbon *c, char *why, size_t whylen)
{
	_cleanup_free_ char *text = NULL;
	struct vw_intensity_point *t;
	struct stat st;
	size_t len = 0, n;
	int r;

	if (stat(c->file, &st) < 0) {
		snprintf(why, whylen, "%s: %s", c->file, strerror(errno));
		return -errno;
	}
	/* A regular file only, opened O_NONBLOCK: a FIFO in its place never blocks the loop */
	r = vw_read_regular_at(AT_FDCWD, c->file, INTENSITY_FILE_MAX, &text, &len);
	if (r < 0) {
		snprintf(why, whylen, "%s: %s", c->file,
			 r == -EINVAL ? "not a regular file" : strerror(-r));
		return r;
	}
	r = vw_intensity_parse(text, len, &t, &n, why, whylen);
	if (r < 0) {
		char tmp[512];

		snprintf(tmp, sizeof(tmp), "%s: %s", c->file, why);
		snprintf(why, whylen, "%s", tmp);
		return r;
	}
	free(c->table);
	c->table = t;
	c->n_table = n;
	c->file_mtime = st.st_mtim;
	c->file_size = st.st_size;
	return 0;
}

/* A changed file is read again; a bad one keeps the previous table (said). */
static void reload_if_changed(struct vw_carbon *c)
{
	char why[600] = "";
	struct stat st;

	if (!c->file || stat(c->file, &st) < 0 ||
	    (st.st_mtim.tv_sec == c->file_mtime.tv_sec &&
	     st.st_mtim.tv_nsec == c->file_mtime.tv_nsec && st.st_size == c->file_size))
		return;
	if (load_file(c, why, sizeof(why)) < 0)
		vw_complain(&c->file_complaint, VW_LOG_WARN,
			    "carbon: %s; keeping the previous intensity table (%zu entries)", why,
			    c->n_table);
	else
		vw_release(&c->file_complaint, VW_LOG_INFO,
			   "carbon: intensity table %s read again (%zu entries)", c->file, c->n_table);
}

/* ---- The tracker ---- */

struct vw_carbon *vw_carbon_new(const struct vw_carbon_opts *o, char *why, size_t whylen)
{
	struct vw_carbon *c = calloc(1, sizeof(*c));
	struct timespec ts;

	if (!c)
		return NULL;
	c->o = *o;
	c->first = true;
	clock_gettime(CLOCK_REALTIME, &ts);
	c->prev_ns = o->start_ns ? o->start_ns
				 : (int64_t)ts.tv_sec * (int64_t)VW_NSEC_PER_SEC + ts.tv_nsec;
	if (o->file && *o->file) {
		const char *base = strrchr(o->file, '/');

		c->file = strdup(o->file);
		snprintf(c->source, sizeof(c->source), "file:%s", base ? base + 1 : o->file);
		if (!c->file || load_file(c, why, whylen) < 0) {
			vw_carbon_free(c);
			errno = EINVAL;
			return NULL;
		}
	} else if (!(o->static_g_per_kwh > 0 && isfinite(o->static_g_per_kwh))) {
		snprintf(why, whylen, "--carbon.intensity must be above 0 gCO2e/kWh");
		free(c);
		errno = EINVAL;
		return NULL;
	} else {
		snprintf(c->source, sizeof(c->source), "static");
	}
	return c;
}

void vw_carbon_free(struct vw_carbon *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++)
		series_free(&c->s[i]);
	free(c->s);
	free(c->index);
	free(c->table);
	free(c->file);
	free(c);
}

void vw_carbon_begin(struct vw_carbon *c, int64_t now_ns)
{
	double missing = 0, integral;

	if (!c)
		return;
	reload_if_changed(c);
	if (now_ns < c->prev_ns)
		now_ns = c->prev_ns; /* the wall clock stepped back: an empty interval */
	c->now_ns = now_ns;
	if (c->file) {
		integral = vw_intensity_integral(c->table, c->n_table, c->prev_ns, now_ns, &missing);
	} else {
		integral = c->o.static_g_per_kwh * (double)(now_ns - c->prev_ns) / 1e9;
	}
	/* energy drawn at a steady rate over the interval, converted exactly */
	c->mean_g_per_kwh = now_ns > c->prev_ns ? integral / ((double)(now_ns - c->prev_ns) / 1e9) : 0;
	c->missing_s += missing;
	c->prev_ns = now_ns;
}

static int level_of(const struct vw_metric_family *f)
{
	for (int l = 0; l < L__COUNT; l++)
		if (strcmp(f->name, energy_family[l]) == 0)
			return l;
	return -1;
}

/* Whether f's labels start with the level's carbon labels but intensity_source (the contract;
 * labels after them, --vm.info-labels' on the VM series, are not carbon's): how many in *ret_n. */
static bool labels_match(const struct vw_metric_family *f, enum level l, size_t *ret_n)
{
	const char *const *want = carbon_families[l].labels;
	size_t n = 0;

	for (; want[n] && strcmp(want[n], "intensity_source") != 0; n++)
		if (!f->labels || !f->labels[n] || strcmp(want[n], f->labels[n]) != 0)
			return false;
	*ret_n = n;
	return want[n] && !want[n + 1];
}

static char *identity(enum level l, const struct vw_metric_family *f, const char *const *values,
		      size_t n)
{
	size_t len = 4;
	char *id, *p;

	for (size_t i = 0; i < n; i++)
		len += strlen(values[i]) + 1;
	id = malloc(len);
	if (!id)
		return NULL;
	p = id + sprintf(id, "%d", (int)l);
	for (size_t i = 0; i < n; i++) {
		if (strcmp(f->labels[i], "state") == 0)
			continue;
		*p++ = '\x1f';
		p = stpcpy(p, values[i]);
	}
	return id;
}

static int set_values(struct series *s, const char *const *values, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char *v;

		if (s->values[i] && strcmp(s->values[i], values[i]) == 0)
			continue;
		v = strdup(values[i]);
		if (!v)
			return -ENOMEM;
		free(s->values[i]);
		s->values[i] = v;
	}
	return 0;
}

/* A new series owning id (freed on failure too). */
static struct series *add(struct vw_carbon *c, enum level l, char *id, const char *const *values,
			  size_t n)
{
	struct series *s;

	if (vw_array_grow((void **)&c->s, sizeof(*c->s), c->n, &c->cap) < 0) {
		free(id);
		return NULL;
	}
	s = &c->s[c->n];
	*s = (struct series){ .level = l, .id = id, .values = calloc(n, sizeof(char *)),
			      .nvalues = n };
	if (!s->values || set_values(s, values, n) < 0) {
		series_free(s);
		return NULL;
	}
	c->n++;
	if (2 * c->n + 2 > c->index_cap) { /* grown: every series placed again */
		if (index_rebuild(c) < 0) {
			c->n--;
			series_free(s);
			return NULL;
		}
	} else { /* the new one placed alone */
		size_t h = (size_t)fnv(id) & (c->index_cap - 1);

		while (c->index[h])
			h = (h + 1) & (c->index_cap - 1);
		c->index[h] = c->n;
	}
	return &c->s[c->n - 1];
}

void vw_carbon_observe(void *ctx, const struct vw_metric_family *f, const char *const *values,
		       uint64_t micro)
{
	struct vw_carbon *c = ctx;
	int l = level_of(f);
	struct series *s;
	uint64_t delta;
	size_t n;
	char *id;

	if (l < 0 || !labels_match(f, (enum level)l, &n))
		return;
	id = identity((enum level)l, f, values, n);
	if (!id)
		return;
	s = find(c, id);
	if (s) {
		free(id);
		delta = micro >= s->last_micro ? micro - s->last_micro : micro; /* a reset */
		(void)set_values(s, values, n);
	} else {
		s = add(c, (enum level)l, id, values, n);
		if (!s)
			return;
		delta = c->first && c->o.baseline_first ? 0 : micro;
	}
	s->last_micro = micro;
	s->seen = true;
	c->level_seen[l] = true;
	/* J x g/kWh / (3.6e6 J/kWh) */
	s->grams += (double)delta / 1e6 * c->mean_g_per_kwh / 3.6e6;
}

static int render_level(struct vw_carbon *c, struct vw_prom_writer *w, enum level l)
{
	bool open = false;
	int r = 0;

	for (size_t i = 0; r == 0 && i < c->n; i++) {
		const struct series *s = &c->s[i];
		const char *labels[16];

		if (s->level != l || s->nvalues + 2 > ARRAY_SIZE(labels))
			continue;
		for (size_t k = 0; k < s->nvalues; k++)
			labels[k] = s->values[k];
		labels[s->nvalues] = c->source;
		labels[s->nvalues + 1] = NULL;
		if (!open) {
			r = vw_prom_family(w, &carbon_families[l]);
			open = true;
		}
		if (r == 0)
			r = vw_prom_counter(w, labels, s->grams);
	}
	return r < 0 || !open ? r : vw_prom_family_end(w);
}

/* The series not written this time are gone (their workload's energy series went), in the
 * levels written at all: a family left out whole (--metrics.max-bytes) keeps its series, whose
 * energy is then converted when it is written again. */
static void sweep(struct vw_carbon *c)
{
	size_t o = 0;

	for (size_t i = 0; i < c->n; i++) {
		if (!c->s[i].seen && c->level_seen[c->s[i].level]) {
			series_free(&c->s[i]);
			continue;
		}
		c->s[o++] = c->s[i];
	}
	if (o != c->n) {
		c->n = o;
		(void)index_rebuild(c);
	}
}

int vw_carbon_render(struct vw_carbon *c, struct vw_prom_writer *w, const char *node_name,
		     bool commit)
{
	const char *src[] = { c ? c->source : "", node_name, NULL };
	const char *node[] = { node_name, NULL };
	int r = 0;

	(void)vw_prom_table_trust(&vw_carbon_family_table); /* checked once, not each render */
	if (!c)
		return 0;
	if (commit)
		sweep(c);
	for (int l = 0; r == 0 && l < L__COUNT; l++)
		r = render_level(c, w, (enum level)l);
	if (r == 0) {
		double now_g = c->o.static_g_per_kwh, missing = 0;

		if (c->file)
			now_g = vw_intensity_integral(c->table, c->n_table, c->now_ns,
						      c->now_ns + (int64_t)VW_NSEC_PER_SEC, &missing);
		if (!missing)
			r = vw_prom_single(w, &carbon_families[L__COUNT], src, now_g);
	}
	if (r == 0)
		r = vw_prom_single(w, &carbon_families[L__COUNT + 1], node, c->missing_s);
	if (commit) {
		for (size_t i = 0; i < c->n; i++)
			c->s[i].seen = false;
		memset(c->level_seen, 0, sizeof(c->level_seen));
		c->first = false;
	}
	return r;
}

/* SPDX-License-Identifier: Apache-2.0 */
#include "selfstats.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

static const char *const table_names[VW_TABLE__COUNT] = {
	[VW_TABLE_PROCESS] = "process",
	[VW_TABLE_CONTAINER] = "container",
	[VW_TABLE_POD] = "pod",
	[VW_TABLE_VM] = "vm",
	[VW_TABLE_CGROUP] = "cgroup",
	[VW_TABLE_POD_METADATA] = "pod_metadata",
	[VW_TABLE_CONTAINER_METADATA] = "container_metadata",
	[VW_TABLE_PUBLISHER_VM] = "publisher_vm",
	[VW_TABLE_SERIES] = "series",
};

const char *vw_table_name(enum vw_table t)
{
	return (unsigned)t < VW_TABLE__COUNT ? table_names[t] : "unknown";
}

static const char *const l_table[] = { "table", "node_name", NULL };
static const char *const l_family[] = { "family", "node_name", NULL };

enum { S_ENTRIES, S_EVICTIONS, S_DROPPED };

const struct vw_metric_family vw_selfstats_families[] = {
	[S_ENTRIES] = { "virtwatt_table_entries", VW_METRIC_GAUGE,
			"Entries in one of the exporter's bounded tables", NULL, l_table },
	[S_EVICTIONS] = { "virtwatt_table_evictions_total", VW_METRIC_COUNTER,
			  "Entries a bounded table let go before their time because it was at its "
			  "cap (terminated workloads no scrape had seen yet, gone VMs, unseen "
			  "series), or new entries a full table of live objects refused",
			  NULL, l_table },
	[S_DROPPED] = { "virtwatt_exposition_families_dropped_total", VW_METRIC_COUNTER,
			"Snapshots that left this metric family out because it would not fit "
			"--metrics.max-bytes (the other families were served)",
			NULL, l_family },
};
const struct vw_family_table vw_selfstats_family_table = {
	"shared/core/selfstats.c: vw_selfstats_write()", "virtwatt-host, virtwatt-guest",
	"the exporter's bounded tables and the families a capped exposition left out",
	vw_selfstats_families, ARRAY_SIZE(vw_selfstats_families),
};

/* One family ever dropped. Families come from static tables: the pointer to the name is kept. */
struct dropped {
	const char *name;
	uint64_t count, seq;
	struct vw_complaint complaint; /* each family named in the log (a site's one would name
					* only the first of several left out together) */
};

struct vw_selfstats {
	struct dropped *d;
	size_t n, cap;
};

struct vw_selfstats *vw_selfstats_new(void)
{
	return calloc(1, sizeof(struct vw_selfstats));
}

void vw_selfstats_free(struct vw_selfstats *s)
{
	if (!s)
		return;
	free(s->d);
	free(s);
}

static struct dropped *find(const struct vw_selfstats *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->d[i].name, name) == 0)
			return &s->d[i];
	return NULL;
}

void vw_selfstats_note_dropped(struct vw_selfstats *s, const struct vw_prom_writer *w,
			       uint64_t seq, size_t max_bytes)
{
	const struct vw_metric_family *f;

	for (size_t i = 0; (f = vw_prom_writer_dropped(w, i)); i++) {
		struct dropped *d = find(s, f->name);

		if (!d) {
			if (vw_array_grow((void **)&s->d, sizeof(*s->d), s->n, &s->cap) < 0)
				continue;
			d = &s->d[s->n++];
			*d = (struct dropped){ .name = f->name };
		}
		if (d->seq == seq && d->count)
			continue;
		d->seq = seq;
		d->count++;
		vw_complain(&d->complaint, VW_LOG_ERROR,
			    "metrics: family %s left out of the exposition: it would exceed "
			    "--metrics.max-bytes (%zu bytes); the other families are served. Raise "
			    "--metrics.max-bytes or lower the series count (--metrics.process-top-n, "
			    "--monitor.max-terminated, --metrics levels)",
			    f->name, max_bytes);
	}
}

void vw_selfstats_snapshot_done(struct vw_selfstats *s, uint64_t seq)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->d[i].seq == seq)
			return;
	struct vw_complaint *first = NULL;

	for (size_t i = 0; i < s->n; i++) {
		if (!s->d[i].complaint.active)
			continue;
		if (first)
			s->d[i].complaint = (struct vw_complaint){ 0 };
		else
			first = &s->d[i].complaint;
	}
	if (first)
		vw_release(first, VW_LOG_INFO, "metrics: every family fits the exposition again");
}

uint64_t vw_selfstats_dropped(const struct vw_selfstats *s, const char *name)
{
	const struct dropped *d = find(s, name);

	return d ? d->count : 0;
}

static int render_tables(struct vw_prom_writer *w, int fam,
			 const struct vw_table_stat tables[VW_TABLE__COUNT], const char *node)
{
	int r = vw_prom_family(w, &vw_selfstats_families[fam]);

	for (int t = 0; r == 0 && t < VW_TABLE__COUNT; t++) {
		const char *v[] = { vw_table_name((enum vw_table)t), node, NULL };

		if (!tables[t].present)
			continue;
		r = fam == S_ENTRIES ? vw_prom_gauge(w, v, (double)tables[t].entries)
				     : vw_prom_counter(w, v, (double)tables[t].evictions);
	}
	return r < 0 ? r : vw_prom_family_end(w);
}

int vw_selfstats_render(const struct vw_selfstats *s, struct vw_prom_writer *w,
			const struct vw_table_stat tables[VW_TABLE__COUNT], const char *node_name)
{
	int r = render_tables(w, S_ENTRIES, tables, node_name);

	if (r == 0)
		r = render_tables(w, S_EVICTIONS, tables, node_name);
	if (r == 0)
		r = vw_prom_family(w, &vw_selfstats_families[S_DROPPED]);
	for (size_t i = 0; r == 0 && i < s->n; i++) {
		const char *v[] = { s->d[i].name, node_name, NULL };

		r = vw_prom_counter(w, v, (double)s->d[i].count);
	}
	return r < 0 ? r : vw_prom_family_end(w);
}

/* Room for the families above: two lines a table, a line a dropped family, their headers. */
#define SELFSTATS_ROOM 4096

void vw_selfstats_hold_room(struct vw_prom_writer *w, size_t max_bytes)
{
	vw_prom_writer_hold_back(w, max_bytes ? VW_MIN(SELFSTATS_ROOM, max_bytes / 4)
					      : SELFSTATS_ROOM);
}

int vw_selfstats_write(struct vw_selfstats *s, struct vw_prom_writer *w,
		       const struct vw_table_stat tables[VW_TABLE__COUNT], const char *node_name,
		       uint64_t seq, size_t max_bytes)
{
	int r;

	(void)vw_prom_table_trust(&vw_selfstats_family_table); /* checked once, not each render */
	vw_prom_writer_hold_back(w, 0);
	vw_selfstats_note_dropped(s, w, seq, max_bytes);
	r = vw_selfstats_render(s, w, tables, node_name);
	vw_selfstats_note_dropped(s, w, seq, max_bytes);
	return r;
}

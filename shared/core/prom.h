/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Prometheus exposition: metric families declared once in static tables (name, type, help,
 * label names); a bounded writer producing text 0.0.4 or OpenMetrics 1.0.0; label values
 * sanitised (invalid UTF-8 and control bytes replaced, length capped) and escaped exactly as
 * the text format requires.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum vw_metric_type {
	VW_METRIC_COUNTER, /* name ends in _total */
	VW_METRIC_GAUGE,
};

struct vw_metric_family {
	const char *name;
	enum vw_metric_type type;
	const char *help;
	const char *unit;          /* OpenMetrics # UNIT ("joules", "watts", "seconds"), or NULL */
	const char *const *labels; /* NULL-terminated label names (may be NULL for none) */
};

/*
 * One module's families as docs/metrics.md lists them (generated from these tables): where they
 * are produced and which daemons serve them.
 */
struct vw_family_table {
	const char *producer; /* "shared/engine/metrics.c: vw_host_metrics_write()" */
	const char *daemons;  /* "virtwatt-host, virtwatt-guest" */
	const char *note;     /* when they appear, or NULL */
	const struct vw_metric_family *families;
	size_t n;
};

/*
 * Check every family of t once (as vw_prom_family() does) and remember its array by address: a
 * family started from it is not checked again. Only for a static const table whose families,
 * and all they point to, never change. 0 (also when it was already), -EINVAL (a family that
 * fails the check: none of them is trusted, each is checked as it starts), -ENOSPC (too many
 * tables: checked as they start). Thread-safe.
 */
int vw_prom_table_trust(const struct vw_family_table *t);

enum vw_prom_format {
	VW_PROM_TEXT_0_0_4,
	VW_PROM_OPENMETRICS_1_0_0,
	/* Negotiation only: OpenMetrics 0.0.1 (what Prometheus 2.x asked for) is the 1.0.0
	 * rendering announced as 0.0.1, as client_golang's expfmt answers it. Writers take
	 * VW_PROM_OPENMETRICS_1_0_0. */
	VW_PROM_OPENMETRICS_0_0_1,
	/* Negotiation only: Prometheus text 1.0.0 (Prometheus 3: UTF-8 names, quoted). Every name
	 * here is a legacy one, so the 0.0.4 rendering is that text unchanged (escaping
	 * "underscores" changes nothing in it). Writers take VW_PROM_TEXT_0_0_4. */
	VW_PROM_TEXT_1_0_0,
};

/* Either OpenMetrics version. */
static inline bool vw_prom_is_openmetrics(enum vw_prom_format f)
{
	return f == VW_PROM_OPENMETRICS_1_0_0 || f == VW_PROM_OPENMETRICS_0_0_1;
}

/*
 * OpenMetrics only when Accept names application/openmetrics-text (version absent, 1.0.0 or
 * 0.0.1) with a q above 0 and at least the best q of text/plain (version absent or 0.0.4)
 * and the text and full wildcards; else text. The version answered is the one the best
 * OpenMetrics range names: 0.0.1 when only 0.0.1 ranges have that q, else 1.0.0. Text is 1.0.0
 * when a text/plain;version=1.0.0 range has a higher q than text 0.0.4 (version absent or
 * 0.0.4, and the wildcards), else 0.0.4. Media ranges with an invalid q are ignored. NULL or
 * empty: 0.0.4.
 */
enum vw_prom_format vw_prom_negotiate(const char *accept);
const char *vw_prom_content_type(enum vw_prom_format fmt);

#define VW_PROM_LABEL_MAX 256 /* bytes of a label value after sanitising */
/* Room vw_prom_escape_label() needs for any input: every byte escaped, plus the NUL. */
#define VW_PROM_LABEL_ESCAPED_MAX (2 * VW_PROM_LABEL_MAX + 1)

struct vw_prom_writer;

/*
 * max_bytes caps the whole output, "# EOF\n" included (0: no cap). A family that would
 * overflow is rolled back whole (-ENOBUFS) and the writer stays usable for the next family.
 * NULL with errno EINVAL (bad format, max_bytes too small for the trailer) or ENOMEM.
 */
struct vw_prom_writer *vw_prom_writer_new(enum vw_prom_format fmt, size_t max_bytes);
/* Room for about this many bytes made at once (best effort): a render the size of the last one
 * is then written without growing its buffer step by step (each step a realloc that may copy
 * what was written; 0.4 M instructions a render at 100 VMs). */
void vw_prom_writer_expect(struct vw_prom_writer *w, size_t bytes);
void vw_prom_writer_free(struct vw_prom_writer *w);
/*
 * Degrade per family: from now on a family that overflows (or cannot get memory) is still
 * rolled back whole, but the calls that hit it and the rest of its samples return 0, so a
 * renderer carries on with the next family. The families dropped are listed by
 * vw_prom_writer_dropped(); other errors (-EINVAL, -EEXIST) are returned as before.
 */
void vw_prom_writer_drop_oversize(struct vw_prom_writer *w);
/*
 * Keep `bytes` of the cap back from the families written from now on (0: release it), so the
 * families that report on the exposition itself still fit after a large one was dropped.
 */
void vw_prom_writer_hold_back(struct vw_prom_writer *w, size_t bytes);
/*
 * A filter every counter sample passes through before its value is written: key is the series
 * as the text format names it (`name{label="value",...}`, the same in both formats), micro its
 * value in micro-units. Returns 1 to write *ret_micro instead, 0 to write the value as given,
 * or -errno (the family is rolled back with that error). The guest keeps its counters
 * monotonic across restarts this way (guest/series_state.h).
 */
typedef int (*vw_prom_counter_filter)(void *ctx, const char *key, size_t key_len, uint64_t micro,
				      uint64_t *ret_micro);
void vw_prom_writer_filter_counters(struct vw_prom_writer *w, vw_prom_counter_filter filter,
				    void *ctx);
/*
 * A callback that sees every counter sample as it is written (after the filter): its family,
 * label values (in the family's order) and value in micro-units. Read-only; it runs inside
 * the writer's call. Carbon figures follow the energy counters this way (carbon.h).
 */
typedef void (*vw_prom_counter_observer)(void *ctx, const struct vw_metric_family *f,
					 const char *const *label_values, uint64_t micro);
void vw_prom_writer_observe_counters(struct vw_prom_writer *w, vw_prom_counter_observer observer,
				     void *ctx);
/* The i-th family dropped so far (in drop-oversize mode), NULL past the last. */
const struct vw_metric_family *vw_prom_writer_dropped(const struct vw_prom_writer *w, size_t i);

/*
 * Start a family: HELP, TYPE (and UNIT in OpenMetrics), closing any family still open.
 * -EINVAL: a name not [a-zA-Z][a-zA-Z0-9_]*, a counter not named *_total or a gauge that is,
 * a label name not [a-zA-Z][a-zA-Z0-9_]* (so never "__..."), a repeated label name, empty
 * help or help with invalid UTF-8 or control bytes other than LF. -EEXIST: that name was
 * already started on this writer (even if it was rolled back). -ENOBUFS: the header does not
 * fit; the family stays open and its samples return -ENOBUFS too.
 * OpenMetrics: TYPE and HELP name the family without _total; UNIT only when f->unit equals
 * the name's last "_"-separated suffix(es) ("joules" for *_joules(_total)), else it is omitted.
 */
int vw_prom_family(struct vw_prom_writer *w, const struct vw_metric_family *f);
/*
 * A sample of the current family. label_values holds one value per declared label, in order,
 * followed by a NULL terminator (or is NULL for a family without labels). -EINVAL: no open
 * family, a missing or extra (or NULL) value. An empty value is written as "" and means the
 * label is absent, as in Prometheus and Kepler (container_id="" for a process in no container),
 * so `{pod_id!=""}` filters keep working. Values are sanitised as vw_prom_escape_label()
 * describes.
 * -ENOBUFS / -ENOMEM: the family no longer fits and has been rolled back whole.
 */
int vw_prom_gauge(struct vw_prom_writer *w, const char *const *label_values, double value);
/*
 * The first n labels of a series escaped once, for samples of several families that share
 * those label names (the same `labels` array) and values: a process's pid to vm_id in each of
 * its zones' joules and watts. vw_prom_piece_set() fills it (false: it would not fit, or n
 * names more labels than there are; the samples then escape every label). A sample given a
 * piece writes its bytes for those labels where its family's labels are the piece's array,
 * else ignores it; the text is the same either way. label_values are still passed whole
 * (counter filters and observers see them).
 */
#define VW_PROM_PIECE_MAX 1024
#define VW_PROM_PIECE_ENDS 16 /* labels of a piece whose ends it notes (vw_prom_piece_without) */
struct vw_prom_piece {
	const char *const *labels; /* the family label array it was made for; NULL: none */
	size_t from;               /* the first label it holds (0: a head; else a tail) */
	size_t n;                  /* labels it holds */
	size_t len;
	uint16_t ends[VW_PROM_PIECE_ENDS]; /* where each of its first labels ends in text */
	char text[VW_PROM_PIECE_MAX]; /* "{name=\"value\",..." as a sample writes them */
};
bool vw_prom_piece_set(struct vw_prom_piece *p, const char *const *labels, size_t n,
		       const char *const *label_values);
/*
 * A head for a family whose labels are src's without its label k (src: a head of at most
 * VW_PROM_PIECE_ENDS labels; labels: that family's array, src's names but its k-th, in order),
 * made from src's text, nothing escaped again: the text vw_prom_piece_set() would make for
 * labels and the same values. false (dst unset) when src is not such a head or labels do not
 * name its labels less the k-th.
 */
bool vw_prom_piece_without(struct vw_prom_piece *dst, const struct vw_prom_piece *src,
			   const char *const *labels, size_t k);
/*
 * src's text for another family's label array: labels[from..) names src's labels in order, and
 * from is 0 exactly where src is a head (a tail of one family as a tail of another that has
 * the same last labels; a head as a head). false (dst unset) otherwise.
 */
bool vw_prom_piece_as(struct vw_prom_piece *dst, const struct vw_prom_piece *src,
		      const char *const *labels, size_t from);
int vw_prom_gauge_piece(struct vw_prom_writer *w, const struct vw_prom_piece *piece,
			const char *const *label_values, double value);
int vw_prom_counter_micro_piece(struct vw_prom_writer *w, const struct vw_prom_piece *piece,
				const char *const *label_values, uint64_t micro);
int vw_prom_counter_piece(struct vw_prom_writer *w, const struct vw_prom_piece *piece,
			  const char *const *label_values, double value);
/*
 * The last labels of a series escaped once (a tail): labels[from..from+n), the family's last n,
 * label_values indexed as the family's (from those the tail takes). Shared by samples of many
 * series whose labels end alike (a VM's transport and node_name, a zone and node_name): with a
 * head (a piece, from 0) a sample escapes nothing. A tail whose family's labels are not its
 * array, that does not end the series or overlaps the head is ignored; the text is the same
 * either way.
 */
bool vw_prom_piece_set_from(struct vw_prom_piece *p, const char *const *labels, size_t from,
			    size_t n, const char *const *label_values);
int vw_prom_gauge_pieces(struct vw_prom_writer *w, const struct vw_prom_piece *piece,
			 const struct vw_prom_piece *tail, const char *const *label_values,
			 double value);
int vw_prom_counter_pieces(struct vw_prom_writer *w, const struct vw_prom_piece *piece,
			   const struct vw_prom_piece *tail, const char *const *label_values,
			   double value);
/* A gauge of integer milli-units (a Unix time in ms, as seconds): the very text
 * vw_prom_gauge_pieces() writes for milli / 1e3, without formatting a double. */
int vw_prom_gauge_milli_pieces(struct vw_prom_writer *w, const struct vw_prom_piece *piece,
			       const struct vw_prom_piece *tail, const char *const *label_values,
			       uint64_t milli);
int vw_prom_counter_micro_pieces(struct vw_prom_writer *w, const struct vw_prom_piece *piece,
				 const struct vw_prom_piece *tail,
				 const char *const *label_values, uint64_t micro);
/*
 * A counter sample in joules (or any base unit) from integer micro-units, printed exactly:
 * 1234567 -> "1.234567", 1000000 -> "1", 0 -> "0", no float rounding.
 */
int vw_prom_counter_micro(struct vw_prom_writer *w, const char *const *label_values,
			  uint64_t micro);
/* A counter sample; -EINVAL (nothing written) for NaN, infinite or negative values. */
int vw_prom_counter(struct vw_prom_writer *w, const char *const *label_values, double value);
/*
 * A whole family of one sample (a gauge or a counter, by the family's type): start, sample,
 * end. Returns what those return.
 */
int vw_prom_single(struct vw_prom_writer *w, const struct vw_metric_family *f,
		   const char *const *label_values, double value);
/*
 * A sample whose value is a field of a struct, for families rendered from a table of rows that
 * each name a field (offsetof) and its kind: a uint64_t in micro-units as an exact counter
 * (vw_prom_counter_micro), a uint64_t count as a counter, or a double as a gauge.
 */
enum vw_prom_field { VW_PROM_FIELD_MICRO, VW_PROM_FIELD_COUNT, VW_PROM_FIELD_GAUGE };
int vw_prom_field_sample(struct vw_prom_writer *w, const char *const *label_values,
			 const void *base, size_t off, enum vw_prom_field kind);
/* A family of such samples, one an item: its index in its module's table, and the field. */
struct vw_prom_field_family {
	int family;
	enum vw_prom_field kind;
	size_t off;
};
#define VW_PROM_FIELD_FAMILY(f, kind, type, field)                                                 \
	{ (f), VW_PROM_FIELD_##kind, offsetof(type, field) }
/*
 * Item i (0..n_items): the struct its fields are read from, and in *ret_labels its label values
 * for family f (valid until the next call).
 */
typedef const void *(*vw_prom_item_fn)(void *ctx, size_t i, const struct vw_metric_family *f,
				       const char *const **ret_labels);
/*
 * Each row in turn, a whole family (table[row.family]) with one sample of each item: families
 * declared once, produced by one callback. Returns 0 or the first error.
 */
int vw_prom_field_families(struct vw_prom_writer *w, const struct vw_metric_family *table,
			   const struct vw_prom_field_family *rows, size_t n_rows, size_t n_items,
			   vw_prom_item_fn item, void *ctx);
/*
 * Close the current family: 0, or the error that rolled it back (-ENOBUFS, -ENOMEM);
 * -EINVAL when no family is open.
 */
int vw_prom_family_end(struct vw_prom_writer *w);
/*
 * Finish (closing any open family; OpenMetrics: "# EOF") and hand out the NUL-terminated
 * buffer (caller frees). The writer accepts nothing afterwards but vw_prom_writer_free().
 */
int vw_prom_finish(struct vw_prom_writer *w, char **ret_buf, size_t *ret_len);

/*
 * OpenMetrics derived from a text rendering in one pass, instead of a second render: the two
 * differ only in each family's header (TYPE and HELP name a counter without _total, UNIT,
 * HELP's quotes escaped) and OpenMetrics' "# EOF"; sample lines are the same bytes. A text
 * writer keeping a layout notes where each family's header and samples begin (an entry a
 * family, not a sample); vw_prom_openmetrics_derive() then writes each header as an
 * OpenMetrics writer would and copies the samples: byte for byte what an OpenMetrics writer
 * given the same calls (and filters that give the same values) writes.
 */
struct vw_prom_layout;
/* Keep one: a text writer before its first family; -EINVAL otherwise, -ENOMEM. */
int vw_prom_writer_keep_layout(struct vw_prom_writer *w);
/*
 * After vw_prom_finish(): the layout of what it handed out (caller frees), or NULL when none
 * was kept, or when an OpenMetrics writer of the same max_bytes could have left out other
 * families than this one did (it left one out, or the OpenMetrics rendering may come near the
 * cap): then only a second render gives the OpenMetrics rendering.
 */
struct vw_prom_layout *vw_prom_writer_take_layout(struct vw_prom_writer *w);
void vw_prom_layout_free(struct vw_prom_layout *l);
/*
 * The OpenMetrics rendering of text (the rendering l describes, text_len its length), malloc'd
 * and NUL-terminated like vw_prom_finish()'s. -EINVAL: text is not the one l describes.
 */
int vw_prom_openmetrics_derive(const struct vw_prom_layout *l, const char *text,
			       size_t text_len, char **ret, size_t *ret_len);

/* Room for any number the writer prints, its NUL included. */
#define VW_PROM_NUM_MAX 40
/*
 * A gauge's value as the writer prints it: the shortest of "%.15g", "%.16g" and "%.17g" that
 * strtod reads back as v (C locale), NaN, +Inf and -Inf spelt out; NUL-terminated, returns the
 * length. Computed in integers where it can be (the same text: tests/test_prom.c checks it
 * against printf), else with printf and strtod.
 */
size_t vw_prom_format_double(double v, char out[VW_PROM_NUM_MAX]);

/*
 * Sanitise and escape one label value into out (NUL-terminated); returns bytes written
 * (without the NUL). Sanitising, in this order: each byte that does not start a valid UTF-8
 * sequence (stray continuation bytes, overlong forms, surrogates, > U+10FFFF, truncated
 * sequences) becomes U+FFFD; every control character (C0 including TAB, LF and CR, DEL, C1)
 * becomes one space, so a value is always one line; the result is cut at VW_PROM_LABEL_MAX
 * bytes on a character boundary. Escaping then turns \ into \\ and " into \" (LF into \n
 * too, though no LF survives sanitising). With outlen < VW_PROM_LABEL_ESCAPED_MAX a long
 * value is cut further, never inside an escape or a character.
 */
size_t vw_prom_escape_label(const char *in, char *out, size_t outlen);

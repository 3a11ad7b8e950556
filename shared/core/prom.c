/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Prometheus exposition writer: text 0.0.4 and OpenMetrics 1.0.0 into one bounded buffer.
 * Rules follow prometheus/common expfmt (text_create.go, openmetrics_create.go) and the
 * OpenMetrics 1.0 ABNF. Number formatting assumes the C LC_NUMERIC locale: the daemons never
 * call setlocale().
 */
#include "prom.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "digits.h"
#include "macro.h"
#include "utf8.h"

#define TOTAL_SUFFIX "_total"
#define EOF_TRAILER "# EOF\n"
#define NUM_MAX VW_PROM_NUM_MAX /* room for any number this file prints */
#define LABEL_LEN_MAX 32        /* label names whose lengths a family start keeps */
#define LABEL_NAME_PIECE_MAX 128 /* a label name a piece takes */

struct vw_prom_writer {
	enum vw_prom_format fmt;
	size_t limit; /* bytes families may use: max_bytes less the OpenMetrics trailer */
	size_t held; /* of limit, bytes kept back for families written after a release */
	char *buf;
	size_t len;
	size_t cap;
	/* The open family: where it started, its label count and the error that rolled it back. */
	const struct vw_metric_family *fam;
	size_t mark;
	size_t nlabels;
	size_t fam_nlen;               /* strlen(fam->name) */
	size_t lab_len[LABEL_LEN_MAX]; /* strlen of its first label names */
	size_t fam_need;               /* room a sample of it may take at most */
	int fam_err;
	bool done;
	/* Drop-oversize mode: the families rolled back, reported instead of returned. */
	bool drop_oversize;
	const struct vw_metric_family **dropped;
	size_t ndropped, dropped_cap;
	/* Names of the families started so far, for -EEXIST, and a hash of them (indices + 1 in
	 * names, 0: empty; a power of two, at least twice nnames): a linear search per family
	 * was a fifth of starting one. Each name is an offset into one buffer of them all,
	 * NUL-terminated (a strdup and a free a family were 7 % of starting one). */
	size_t *names;
	size_t nnames;
	size_t names_cap;
	char *name_text;
	size_t name_text_len, name_text_cap;
	uint32_t *name_slots;
	size_t n_slots;
	/* Sees every counter sample (vw_prom_writer_filter_counters). */
	vw_prom_counter_filter filter;
	void *filter_ctx;
	/* Sees every counter sample as written (vw_prom_writer_observe_counters). */
	vw_prom_counter_observer observer;
	void *observer_ctx;
	/* Text writers keeping a layout (vw_prom_writer_keep_layout): each family started, where
	 * its header and its samples begin; what its OpenMetrics header may add at most; the most
	 * ever held back. */
	bool keep_layout;
	bool layout_failed; /* a family rolled back, or no memory for an entry: no layout */
	struct vw_prom_layout *layout;
	size_t held_max;
};

struct layout_family {
	const struct vw_metric_family *f;
	size_t start; /* its header, in the text */
	size_t body;  /* its first sample */
};

struct vw_prom_layout {
	size_t text_len; /* of the rendering it describes */
	size_t om_extra; /* what its OpenMetrics headers add to the text's, at most */
	size_t n, cap;
	struct layout_family *fams;
};

/* ---- UTF-8 and escaping ---- */

static bool is_control(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f);
}

/*
 * Escape n bytes of HELP text (validated UTF-8) into out (outlen > 0, NUL-terminated):
 * \ -> \\, LF -> \n and, when quote is set, " -> \". Stops before a character that does
 * not fit whole. Returns the length. Label values take vw_prom_escape_label() instead.
 */
static size_t escape(const char *s, size_t n, bool quote, char *out, size_t outlen)
{
	size_t len = 0;

	for (size_t i = 0; i < n;) {
		size_t clen = 1, need;

		if ((unsigned char)s[i] >= 0xc0) {
			while (i + clen < n && ((unsigned char)s[i + clen] & 0xc0) == 0x80)
				clen++;
		}
		bool esc = s[i] == '\\' || s[i] == '\n' || (quote && s[i] == '"');
		need = esc ? 2 : clen;
		if (len + need >= outlen)
			break;
		if (esc) {
			out[len++] = '\\';
			out[len++] = s[i] == '\n' ? 'n' : s[i];
		} else {
			memcpy(out + len, s + i, clen);
			len += clen;
		}
		i += clen;
	}
	out[len] = '\0';
	return len;
}

/*
 * The sanitised form of the character at s (what to emit: ret_piece, ret_len), returning how
 * many input bytes it consumed. See vw_prom_escape_label() for the rules.
 */
static size_t label_char(const unsigned char *s, const char **ret_piece, size_t *ret_len)
{
	static const char replacement[] = "\xef\xbf\xbd"; /* U+FFFD */
	uint32_t cp;
	size_t n = vw_utf8_decode(s, SIZE_MAX, &cp);

	if (n == 0) {
		*ret_piece = replacement;
		*ret_len = sizeof(replacement) - 1;
		return 1;
	}
	*ret_piece = is_control(cp) ? " " : (const char *)s;
	*ret_len = is_control(cp) ? 1 : n;
	return n;
}

/* Printable ASCII but " (0x22) and \\ (0x5c): copied as is (a table: one test a byte, not four). */
static const bool plain_ascii[256] = {
	[0x20 ... 0x21] = true, [0x23 ... 0x5b] = true, [0x5d ... 0x7e] = true,
};

/* Sanitise, cap and escape in one pass; printable ASCII, the common case, is copied as is. */
size_t vw_prom_escape_label(const char *in, char *out, size_t outlen)
{
	const unsigned char *s = (const unsigned char *)in;
	size_t clean = 0, len = 0; /* sanitised bytes so far (the cap), output bytes */

	if (!out || outlen == 0)
		return 0;
	while (s && *s) {
		const char *piece = (const char *)s;
		size_t take = 1, used = 1, run = 0;
		bool esc = *s == '\\' || *s == '"';

		/* A run of printable ASCII needing no escape: copied whole, as far as it fits. */
		while (plain_ascii[s[run]])
			run++;
		if (run) {
			size_t fit = VW_MIN(run, VW_MIN(VW_PROM_LABEL_MAX - clean, outlen - 1 - len));

			memcpy(out + len, s, fit);
			len += fit;
			clean += fit;
			s += fit;
			if (fit < run)
				break;
			continue;
		}

		if (*s < 0x20 || *s >= 0x7f)
			used = label_char(s, &piece, &take);
		if (clean + take > VW_PROM_LABEL_MAX || len + (esc ? 2 : take) >= outlen)
			break;
		if (esc)
			out[len++] = '\\';
		for (size_t i = 0; i < take; i++)
			out[len++] = piece[i];
		clean += take;
		s += used;
	}
	out[len] = '\0';
	return len;
}

/* ---- Numbers ---- */

/* Integer micro-units as an exact decimal, trailing zeros trimmed. */
static size_t format_micro(uint64_t micro, char out[NUM_MAX])
{
	uint64_t frac = micro % VW_USEC_PER_SEC;
	size_t n = vw_u64_digits(micro / VW_USEC_PER_SEC, out, 0);

	if (frac) {
		out[n++] = '.';
		n += vw_u64_digits(frac, out + n, 6);
		while (out[n - 1] == '0')
			n--;
	}
	out[n] = '\0';
	return n;
}

typedef unsigned __int128 u128;

static const uint64_t pow10_u64[] = {
	1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull, 100000000ull,
	1000000000ull, 10000000000ull, 100000000000ull, 1000000000000ull, 10000000000000ull,
	100000000000000ull, 1000000000000000ull, 10000000000000000ull, 100000000000000000ull,
	1000000000000000000ull,
};

static const uint64_t pow5_u64[] = {
	1ull, 5ull, 25ull, 125ull, 625ull, 3125ull, 15625ull, 78125ull, 390625ull, 1953125ull,
	9765625ull, 48828125ull, 244140625ull, 1220703125ull, 6103515625ull, 30517578125ull,
	152587890625ull, 762939453125ull, 3814697265625ull, 19073486328125ull, 95367431640625ull,
	476837158203125ull, 2384185791015625ull, 11920928955078125ull, 59604644775390625ull,
	298023223876953125ull, 1490116119384765625ull, 7450580596923828125ull,
};

/*
 * The prec (15..17) significant digits of v (> 0, finite) as "%.*g" gives them: *ret_d (prec
 * digits, or 10^prec where rounding carried) and the decimal exponent *ret_x of its first
 * digit, rounded to nearest with ties to even, as glibc's printf does with the exact binary
 * value; *ret_back: whether that decimal reads back as v (strtod: the nearest double, ties to
 * the even mantissa). Exact integer arithmetic: v = m 2^e, and v 10^k = m 5^k / 2^s in 128
 * bits. false where that does not fit (v below about 1e-15, at or above 2^32 with a fraction,
 * subnormal): the caller asks printf.
 */
static bool decimal_digits(double v, int prec, uint64_t *ret_d, int *ret_x, bool *ret_back)
{
	uint64_t bits, m;
	int be, e, x;

	memcpy(&bits, &v, sizeof(bits));
	be = (int)(bits >> 52 & 0x7ff);
	if (be == 0 || be == 0x7ff)
		return false;
	m = (bits & ((1ull << 52) - 1)) | 1ull << 52;
	e = be - 1075;
	x = (int)floor(log10(v)); /* may be one off near a power of ten: checked below */
	for (int tries = 0; tries < 3; tries++) {
		int k = prec - 1 - x, s = -(e + k);
		u128 p5, n, d, r, half, ds, diff;
		bool even = !(m & 1), back;

		if (k < 0 || k > 31 || s < 1 || s > 68)
			return false;
		p5 = k < 28 ? (u128)pow5_u64[k] : (u128)pow5_u64[27] * pow5_u64[k - 27];
		n = (u128)m * p5; /* v 10^k 2^s, below 2^125 (5^31 < 2^72) */
		d = n >> s;
		if (d < pow10_u64[prec - 1]) {
			x--;
			continue;
		}
		if (d >= pow10_u64[prec]) {
			x++;
			continue;
		}
		r = n & (((u128)1 << s) - 1);
		half = (u128)1 << (s - 1);
		if (r > half || (r == half && (d & 1)))
			d++;
		/* Reads back when within half a gap of v (scaled: 5^k / 2; a quarter below a
		 * power of two, whose lower neighbour is nearer), the bounds where m is even. */
		ds = d << s;
		if (ds >= n) {
			diff = 2 * (ds - n);
			back = diff < p5 || (even && diff == p5);
		} else {
			diff = (m == 1ull << 52 && be > 1 ? 4 : 2) * (n - ds);
			back = diff < p5 || (even && diff == p5);
		}
		*ret_d = (uint64_t)d;
		*ret_x = x;
		*ret_back = back;
		return true;
	}
	return false;
}

/* d (prec digits, or 10^prec) with first-digit exponent x, as "%.*g" writes it: trailing
 * zeros dropped, exponent form (two digits at least) below 1e-4 or from 10^prec. */
static size_t format_g(bool neg, uint64_t d, int x, int prec, char out[NUM_MAX])
{
	char dig[20];
	size_t n = 0, nd;

	if (d >= pow10_u64[prec]) { /* rounding carried into a new digit */
		d /= 10;
		x++;
	}
	nd = vw_u64_digits(d, dig, 0);
	while (nd > 1 && dig[nd - 1] == '0')
		nd--;
	if (neg)
		out[n++] = '-';
	if (x < -4 || x >= prec) {
		out[n++] = dig[0];
		if (nd > 1) {
			out[n++] = '.';
			memcpy(out + n, dig + 1, nd - 1);
			n += nd - 1;
		}
		out[n++] = 'e';
		out[n++] = x < 0 ? '-' : '+';
		n += vw_u64_digits((uint64_t)(x < 0 ? -x : x), out + n, 2);
	} else if (x < 0) {
		out[n++] = '0';
		out[n++] = '.';
		for (int z = -1; z > x; z--)
			out[n++] = '0';
		memcpy(out + n, dig, nd);
		n += nd;
	} else {
		size_t ip = (size_t)x + 1; /* integer digits, at most prec */

		for (size_t i = 0; i < ip; i++)
			out[n++] = i < nd ? dig[i] : '0';
		if (nd > ip) {
			out[n++] = '.';
			memcpy(out + n, dig + ip, nd - ip);
			n += nd - ip;
		}
	}
	out[n] = '\0';
	return n;
}

/* Shortest of %.15g..%.17g that reads back as the same double; NaN, +Inf, -Inf spelt out. */
size_t vw_prom_format_double(double v, char out[VW_PROM_NUM_MAX])
{
	int n = 0;

	if (isnan(v))
		return (size_t)snprintf(out, NUM_MAX, "NaN");
	if (isinf(v))
		return (size_t)snprintf(out, NUM_MAX, "%s", v > 0 ? "+Inf" : "-Inf");
	/* An integer below 1e15 (counts, states, most counters): "%.15g" prints its digits and
	 * strtod gives it back; written here without printf and strtod, the same text. */
	if (v > -1e15 && v < 1e15 && v == (double)(int64_t)v && !(v == 0 && signbit(v))) {
		int64_t i = (int64_t)v;
		uint64_t u = i < 0 ? (uint64_t)-i : (uint64_t)i;
		char tmp[24];
		size_t k = 0;

		do {
			tmp[k++] = (char)('0' + u % 10);
			u /= 10;
		} while (u);
		if (i < 0)
			out[n++] = '-';
		while (k)
			out[n++] = tmp[--k];
		out[n] = '\0';
		return (size_t)n;
	}
	/* Any other (a watts gauge): the same digits in integers where they fit (printf and
	 * strtod were a sixth of a render), else printf's. */
	for (int prec = 15; prec <= 17; prec++) {
		uint64_t d;
		int x;
		bool back;

		if (!decimal_digits(fabs(v), prec, &d, &x, &back))
			break;
		if (back || prec == 17)
			return format_g(v < 0, d, x, prec, out);
	}
	for (int prec = 15; prec <= 17; prec++) {
		n = snprintf(out, NUM_MAX, "%.*g", prec, v);
		if (strtod(out, NULL) == v)
			break;
	}
	return (size_t)n;
}

static size_t format_double(double v, char out[NUM_MAX])
{
	return vw_prom_format_double(v, out);
}

/* ---- Names ---- */

/* Bytes of a name: 1 a letter (may start it), 2 a digit or _ (may follow). */
static const unsigned char name_byte[256] = {
	['a' ... 'z'] = 1, ['A' ... 'Z'] = 1, ['0' ... '9'] = 2, ['_'] = 2,
};

/* strlen(s) when s is a valid metric or label name, else 0. */
static size_t name_len(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;

	if (!u || name_byte[*u] != 1)
		return 0;
	for (u++; name_byte[*u]; u++)
		;
	return *u == '\0' ? (size_t)(u - (const unsigned char *)s) : 0;
}

static bool has_suffix(const char *s, size_t len, const char *suffix)
{
	size_t n = strlen(suffix);

	return len > n && memcmp(s + len - n, suffix, n) == 0;
}

/* Help text: non-empty, valid UTF-8, no control characters but LF. */
static bool help_valid(const char *help)
{
	const unsigned char *s = (const unsigned char *)help;

	if (!s || !*s)
		return false;
	while (*s) {
		uint32_t cp;
		size_t n;

		if (*s >= 0x20 && *s < 0x7f) { /* printable ASCII: valid, no control */
			s++;
			continue;
		}
		n = vw_utf8_decode(s, SIZE_MAX, &cp);
		if (n == 0 || (is_control(cp) && cp != '\n'))
			return false;
		s += n;
	}
	return true;
}

/* Count the label names and check each (valid, not repeated), keeping the first
 * LABEL_LEN_MAX lengths in lens. -EINVAL on a bad one. */
static int labels_check(const char *const *labels, size_t *ret_n, size_t lens[LABEL_LEN_MAX])
{
	size_t n = 0;

	for (; labels && labels[n]; n++) {
		size_t len = name_len(labels[n]);

		if (!len)
			return -EINVAL;
		for (size_t j = 0; j < n; j++) /* equal names have equal lengths */
			if ((j >= LABEL_LEN_MAX || lens[j] == len) && strcmp(labels[j], labels[n]) == 0)
				return -EINVAL;
		if (n < LABEL_LEN_MAX)
			lens[n] = len;
	}
	*ret_n = n;
	return 0;
}

/* The family's name, help, type and labels checked; its name's and first labels' lengths. */
static int family_check(const struct vw_metric_family *f, size_t *ret_nlen, size_t *ret_nlabels,
			size_t lens[LABEL_LEN_MAX])
{
	size_t len = f ? name_len(f->name) : 0;

	if (!len || !help_valid(f->help))
		return -EINVAL;
	if ((f->type == VW_METRIC_COUNTER) != has_suffix(f->name, len, TOTAL_SUFFIX))
		return -EINVAL;
	if (f->type != VW_METRIC_COUNTER && f->type != VW_METRIC_GAUGE)
		return -EINVAL;
	*ret_nlen = len;
	return labels_check(f->labels, ret_nlabels, lens);
}

/* ---- Tables validated once ---- */

/*
 * Static const tables whose families were all checked (vw_prom_table_trust): a family started
 * from one is not checked again at each render (name, help and labels walked: a third of
 * starting a family, ~1,600 instructions). Appended under the lock, read without it: an entry
 * is written before the count that shows it.
 */
#define TRUSTED_MAX 64
static struct {
	uintptr_t first, end; /* the table's families' addresses */
} trusted[TRUSTED_MAX];
static _Atomic size_t n_trusted;
static pthread_mutex_t trust_lock = PTHREAD_MUTEX_INITIALIZER;

static bool trusted_range(uintptr_t first, uintptr_t end)
{
	size_t n = atomic_load_explicit(&n_trusted, memory_order_acquire);

	for (size_t i = 0; i < n; i++)
		if (first >= trusted[i].first && end <= trusted[i].end)
			return true;
	return false;
}

static bool family_trusted(const struct vw_metric_family *f)
{
	uintptr_t a = (uintptr_t)f;

	return trusted_range(a, a + sizeof(*f));
}

int vw_prom_table_trust(const struct vw_family_table *t)
{
	uintptr_t first, end;
	int r = 0;

	if (!t || !t->families || !t->n)
		return -EINVAL;
	first = (uintptr_t)t->families;
	end = (uintptr_t)(t->families + t->n);
	if (trusted_range(first, end))
		return 0;
	for (size_t i = 0; i < t->n; i++) {
		size_t nlen, nlabels, lens[LABEL_LEN_MAX];

		if (family_check(&t->families[i], &nlen, &nlabels, lens) < 0)
			return -EINVAL;
	}
	pthread_mutex_lock(&trust_lock);
	if (!trusted_range(first, end)) {
		size_t n = atomic_load_explicit(&n_trusted, memory_order_relaxed);

		if (n < TRUSTED_MAX) {
			trusted[n].first = first;
			trusted[n].end = end;
			atomic_store_explicit(&n_trusted, n + 1, memory_order_release);
		} else {
			r = -ENOSPC;
		}
	}
	pthread_mutex_unlock(&trust_lock);
	return r;
}

/* A trusted family's name length, label count and first label lengths (family_check's,
 * without the checks). */
static void family_lens(const struct vw_metric_family *f, size_t *ret_nlen, size_t *ret_nlabels,
			size_t lens[LABEL_LEN_MAX])
{
	size_t n = 0;

	for (; f->labels && f->labels[n]; n++)
		if (n < LABEL_LEN_MAX)
			lens[n] = strlen(f->labels[n]);
	*ret_nlen = strlen(f->name);
	*ret_nlabels = n;
}

/* ---- Buffer ---- */

static int reserve(struct vw_prom_writer *w, size_t n)
{
	size_t want = w->len + n + 1, cap = w->cap ? w->cap : 4096;
	char *p;

	if (want <= w->cap)
		return 0;
	while (cap < want)
		cap *= 2;
	p = realloc(w->buf, cap);
	if (!p)
		return -ENOMEM;
	w->buf = p;
	w->cap = cap;
	return 0;
}

void vw_prom_writer_expect(struct vw_prom_writer *w, size_t bytes)
{
	size_t want = bytes + bytes / 8 + 1; /* and an eighth more: the next one may be longer */
	char *p;

	if (!w || w->done || want <= w->cap || bytes > w->limit)
		return;
	p = realloc(w->buf, want);
	if (!p)
		return; /* it grows as it goes instead */
	w->buf = p;
	w->cap = want;
}

/*
 * n more bytes for the open family: where to write them (len already counts them), or NULL.
 * The first failure (-ENOBUFS, -ENOMEM) sticks in fam_err and turns later appends into no-ops,
 * so a sequence of appends is checked once, at its end.
 */
static char *put_room(struct vw_prom_writer *w, size_t n)
{
	size_t room = w->limit - w->len > w->held ? w->limit - w->len - w->held : 0;
	char *p;

	if (w->fam_err)
		return NULL;
	w->fam_err = n > room ? -ENOBUFS : reserve(w, n);
	if (w->fam_err)
		return NULL;
	p = w->buf + w->len;
	w->len += n;
	return p;
}

/* In drop-oversize mode, note the open family as dropped (once). */
static void note_dropped(struct vw_prom_writer *w)
{
	if (w->ndropped && w->dropped[w->ndropped - 1] == w->fam)
		return;
	if (vw_array_grow((void **)&w->dropped, sizeof(*w->dropped), w->ndropped,
			  &w->dropped_cap) == 0)
		w->dropped[w->ndropped++] = w->fam;
}

/* The error a rolled-back family reports: none in drop-oversize mode. */
static int family_error(const struct vw_prom_writer *w)
{
	return w->drop_oversize ? 0 : w->fam_err;
}

/* After a run of appends: if one failed, drop everything the open family wrote. */
static int family_settle(struct vw_prom_writer *w)
{
	if (!w->fam_err)
		return 0;
	w->len = w->mark;
	w->layout_failed = true; /* an OpenMetrics writer may have kept it */
	if (w->drop_oversize)
		note_dropped(w);
	return family_error(w);
}

static size_t name_hash(const char *name)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */

	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 1099511628211ull;
	return (size_t)(h ^ h >> 32);
}

/* The hash's slot for name: where it is, or the empty one where it would go. */
static uint32_t *name_slot(const struct vw_prom_writer *w, const char *name)
{
	size_t mask = w->n_slots - 1;

	for (size_t i = name_hash(name) & mask;; i = (i + 1) & mask)
		if (!w->name_slots[i] ||
		    strcmp(w->name_text + w->names[w->name_slots[i] - 1], name) == 0)
			return &w->name_slots[i];
}

static int name_remember(struct vw_prom_writer *w, const char *name, size_t nlen)
{
	uint32_t *slot;

	if (w->n_slots < 2 * (w->nnames + 1)) { /* grown, and every name hashed again */
		size_t n = w->n_slots ? 2 * w->n_slots : 64;
		uint32_t *ns = calloc(n, sizeof(*ns));

		if (!ns || w->nnames >= UINT32_MAX - 1) {
			free(ns);
			return -ENOMEM;
		}
		free(w->name_slots);
		w->name_slots = ns;
		w->n_slots = n;
		for (size_t i = 0; i < w->nnames; i++)
			*name_slot(w, w->name_text + w->names[i]) = (uint32_t)(i + 1);
	}
	slot = name_slot(w, name);
	if (*slot)
		return -EEXIST;
	if (vw_array_grow((void **)&w->names, sizeof(*w->names), w->nnames, &w->names_cap) < 0)
		return -ENOMEM;
	if (w->name_text_len + nlen + 1 > w->name_text_cap) {
		size_t cap = VW_MAX(2 * w->name_text_cap, w->name_text_len + nlen + 1 + 2048);
		char *t = realloc(w->name_text, cap);

		if (!t)
			return -ENOMEM;
		w->name_text = t;
		w->name_text_cap = cap;
	}
	memcpy(w->name_text + w->name_text_len, name, nlen + 1);
	w->names[w->nnames++] = w->name_text_len;
	w->name_text_len += nlen + 1;
	*slot = (uint32_t)w->nnames;
	return 0;
}

/* ---- Writer ---- */

struct vw_prom_writer *vw_prom_writer_new(enum vw_prom_format fmt, size_t max_bytes)
{
	size_t trailer = fmt == VW_PROM_OPENMETRICS_1_0_0 ? strlen(EOF_TRAILER) : 0;
	struct vw_prom_writer *w;

	if ((fmt != VW_PROM_TEXT_0_0_4 && fmt != VW_PROM_OPENMETRICS_1_0_0) ||
	    (max_bytes && max_bytes < trailer)) {
		errno = EINVAL;
		return NULL;
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->fmt = fmt;
	/* Unbounded still leaves room for the trailer and the NUL without overflow. */
	w->limit = (max_bytes ? max_bytes : SIZE_MAX / 2) - trailer;
	return w;
}

void vw_prom_writer_drop_oversize(struct vw_prom_writer *w)
{
	if (w)
		w->drop_oversize = true;
}

void vw_prom_writer_filter_counters(struct vw_prom_writer *w, vw_prom_counter_filter filter,
				    void *ctx)
{
	if (w) {
		w->filter = filter;
		w->filter_ctx = ctx;
	}
}

void vw_prom_writer_observe_counters(struct vw_prom_writer *w, vw_prom_counter_observer observer,
				     void *ctx)
{
	if (w) {
		w->observer = observer;
		w->observer_ctx = ctx;
	}
}

void vw_prom_writer_hold_back(struct vw_prom_writer *w, size_t bytes)
{
	if (w) {
		w->held = VW_MIN(bytes, w->limit);
		w->held_max = VW_MAX(w->held_max, w->held);
	}
}

const struct vw_metric_family *vw_prom_writer_dropped(const struct vw_prom_writer *w, size_t i)
{
	return w && i < w->ndropped ? w->dropped[i] : NULL;
}

void vw_prom_writer_free(struct vw_prom_writer *w)
{
	if (!w)
		return;
	free(w->names);
	free(w->name_text);
	free(w->name_slots);
	free(w->dropped);
	free(w->buf);
	vw_prom_layout_free(w->layout);
	free(w);
}

/* "# KEYWORD name[suffix-less] rest\n" (keyword: 4 letters), one room check for the line: the
 * same bytes and the same error as its seven appends, an eighth of starting a family. */
static void put_meta(struct vw_prom_writer *w, const char *keyword, const char *name,
		     size_t nlen, const char *rest, size_t rlen)
{
	char *p = put_room(w, 2 + 4 + 1 + nlen + 1 + rlen + 1);

	if (!p)
		return;
	memcpy(p, "# ", 2);
	memcpy(p + 2, keyword, 4);
	p[6] = ' ';
	memcpy(p + 7, name, nlen);
	p[7 + nlen] = ' ';
	memcpy(p + 8 + nlen, rest, rlen);
	p[8 + nlen + rlen] = '\n';
}

static void put_help(struct vw_prom_writer *w, const struct vw_metric_family *f, size_t nlen)
{
	bool om = w->fmt == VW_PROM_OPENMETRICS_1_0_0;
	size_t hlen = strcspn(f->help, om ? "\\\n\"" : "\\\n"), cap;
	_cleanup_free_ char *esc = NULL;

	if (!f->help[hlen]) { /* nothing to escape: as is */
		put_meta(w, "HELP", f->name, nlen, f->help, hlen);
		return;
	}
	hlen += strlen(f->help + hlen);
	cap = 2 * hlen + 1;
	esc = malloc(cap);
	if (!esc) {
		w->fam_err = w->fam_err ? w->fam_err : -ENOMEM;
		return;
	}
	/* 0.0.4 HELP escapes only \ and LF (text_parse.go rejects \"); OpenMetrics also ". */
	hlen = escape(f->help, hlen, om, esc, cap);
	put_meta(w, "HELP", f->name, nlen, esc, hlen);
}

/* The length of f's unit where its name (nlen bytes of it, without _total) ends in "_<unit>",
 * else 0. */
static size_t unit_len(const struct vw_metric_family *f, size_t nlen)
{
	size_t ulen = f->unit ? strlen(f->unit) : 0;

	if (ulen == 0 || ulen + 1 >= nlen || f->name[nlen - ulen - 1] != '_' ||
	    memcmp(f->name + nlen - ulen, f->unit, ulen) != 0)
		return 0;
	return ulen;
}

/* OpenMetrics: UNIT when the family name ends in "_<unit>". */
static void put_unit(struct vw_prom_writer *w, const struct vw_metric_family *f, size_t nlen)
{
	size_t ulen = unit_len(f, nlen);

	if (ulen)
		put_meta(w, "UNIT", f->name, nlen, f->unit, ulen);
}

static void put_header(struct vw_prom_writer *w, const struct vw_metric_family *f)
{
	const char *type = f->type == VW_METRIC_COUNTER ? "counter" : "gauge";
	size_t nlen = w->fam_nlen; /* f's: vw_prom_family() set it */

	if (w->fmt == VW_PROM_TEXT_0_0_4) {
		put_help(w, f, nlen);
		put_meta(w, "TYPE", f->name, nlen, type, strlen(type));
		return;
	}
	/* OpenMetrics: metadata names the family, which for a counter lacks _total. */
	if (f->type == VW_METRIC_COUNTER)
		nlen -= strlen(TOTAL_SUFFIX);
	put_meta(w, "TYPE", f->name, nlen, type, strlen(type));
	put_unit(w, f, nlen);
	put_help(w, f, nlen);
}

/* ---- OpenMetrics derived from the text ---- */

/* What f's OpenMetrics header adds to its text one, at most: its UNIT line, and HELP's quotes
 * escaped (a counter's names lose "_total" instead, which is not counted). */
static size_t om_header_extra(const struct vw_metric_family *f, size_t nlen)
{
	size_t short_len = nlen - (f->type == VW_METRIC_COUNTER ? strlen(TOTAL_SUFFIX) : 0);
	size_t ulen = unit_len(f, short_len);
	size_t extra = ulen ? 2 + 4 + 1 + short_len + 1 + ulen + 1 : 0;

	for (const char *q = strchr(f->help, '"'); q; q = strchr(q + 1, '"'))
		extra++;
	return extra;
}

/* The family just started (its header written, or rolled back) in the layout. */
static void layout_note(struct vw_prom_writer *w, const struct vw_metric_family *f)
{
	struct vw_prom_layout *l = w->layout;

	if (w->layout_failed)
		return;
	if (vw_array_grow((void **)&l->fams, sizeof(*l->fams), l->n, &l->cap) < 0) {
		w->layout_failed = true;
		return;
	}
	l->fams[l->n++] = (struct layout_family){ .f = f, .start = w->mark, .body = w->len };
	l->om_extra += om_header_extra(f, w->fam_nlen);
}

int vw_prom_writer_keep_layout(struct vw_prom_writer *w)
{
	if (!w || w->fmt != VW_PROM_TEXT_0_0_4 || w->done || w->nnames)
		return -EINVAL;
	if (!w->layout) {
		w->layout = calloc(1, sizeof(*w->layout));
		if (!w->layout)
			return -ENOMEM;
	}
	w->keep_layout = true;
	return 0;
}

struct vw_prom_layout *vw_prom_writer_take_layout(struct vw_prom_writer *w)
{
	struct vw_prom_layout *l;
	size_t text_len;

	if (!w || !w->done || !w->layout)
		return NULL;
	l = VW_TAKE_PTR(w->layout);
	l->text_len = text_len = w->len;
	/* An OpenMetrics writer of the same cap would have left out what the text one did, and
	 * may leave out more where its longer headers and "# EOF" run past the cap: the derived
	 * rendering would not be its. Its length at any point is at most the text's final one
	 * plus every extra, and it holds back at most what the text one did. */
	if (w->layout_failed || w->ndropped || l->om_extra > w->limit ||
	    text_len > w->limit - l->om_extra ||
	    w->limit - l->om_extra - text_len < strlen(EOF_TRAILER) + w->held_max) {
		vw_prom_layout_free(l);
		return NULL;
	}
	return l;
}

void vw_prom_layout_free(struct vw_prom_layout *l)
{
	if (!l)
		return;
	free(l->fams);
	free(l);
}

int vw_prom_openmetrics_derive(const struct vw_prom_layout *l, const char *text,
			       size_t text_len, char **ret, size_t *ret_len)
{
	struct vw_prom_writer *w;
	int r = 0;

	if (!l || !text || !ret || text_len != l->text_len ||
	    (l->n ? l->fams[0].start != 0 : text_len != 0))
		return -EINVAL; /* not the text it describes */
	w = vw_prom_writer_new(VW_PROM_OPENMETRICS_1_0_0, 0);
	if (!w)
		return -errno;
	/* Its exact size at most: one allocation, no copy as it grows. */
	vw_prom_writer_expect(w, text_len + l->om_extra + strlen(EOF_TRAILER));
	for (size_t i = 0; r == 0 && i < l->n; i++) {
		const struct layout_family *lf = &l->fams[i];
		size_t end = i + 1 < l->n ? l->fams[i + 1].start : text_len;
		char *p;

		if (lf->start > end || lf->body > end || lf->start > text_len) {
			r = -EINVAL;
			break;
		}
		if (lf->start == end)
			continue; /* rolled back (no layout is handed out then): nothing of it */
		w->fam_nlen = strlen(lf->f->name);
		put_header(w, lf->f);
		p = put_room(w, end - lf->body);
		if (p)
			memcpy(p, text + lf->body, end - lf->body); /* its samples: the same bytes */
		r = w->fam_err;
	}
	if (r == 0)
		r = vw_prom_finish(w, ret, ret_len);
	vw_prom_writer_free(w);
	return r;
}

int vw_prom_family(struct vw_prom_writer *w, const struct vw_metric_family *f)
{
	size_t nlabels, nlen, lens[LABEL_LEN_MAX], need;
	int r;

	if (!w || w->done)
		return -EINVAL;
	if (f && family_trusted(f)) {
		family_lens(f, &nlen, &nlabels, lens);
	} else {
		r = family_check(f, &nlen, &nlabels, lens);
		if (r < 0)
			return r;
	}
	r = name_remember(w, f->name, nlen);
	if (r < 0)
		return r;
	if (w->fam)
		(void)vw_prom_family_end(w);
	w->fam = f;
	w->nlabels = nlabels;
	w->fam_nlen = nlen;
	need = nlen + 1 + 1 + NUM_MAX + 1; /* name, "}", " ", the value, LF */
	for (size_t i = 0; i < nlabels; i++) {
		if (i < LABEL_LEN_MAX)
			w->lab_len[i] = lens[i];
		need += (i < LABEL_LEN_MAX ? lens[i] : strlen(f->labels[i])) + 4 +
			VW_PROM_LABEL_ESCAPED_MAX;
	}
	w->fam_need = need;
	w->mark = w->len;
	w->fam_err = 0;
	put_header(w, f);
	if (w->keep_layout)
		layout_note(w, f);
	return family_settle(w);
}

int vw_prom_family_end(struct vw_prom_writer *w)
{
	int r;

	if (!w || !w->fam)
		return -EINVAL;
	r = family_error(w);
	w->fam = NULL;
	w->fam_err = 0;
	return r;
}

/* Exactly nlabels values then NULL (or NULL for a family without labels). */
static int values_check(const struct vw_prom_writer *w, const char *const *values)
{
	if (!values)
		return w->nlabels == 0 ? 0 : -EINVAL;
	for (size_t i = 0; i < w->nlabels; i++)
		if (!values[i])
			return -EINVAL;
	return values[w->nlabels] ? -EINVAL : 0;
}

/* Whether the open family has run past the cap (less what is held back). */
static bool over_cap(const struct vw_prom_writer *w)
{
	return w->len > w->limit - w->held;
}

/*
 * The series' name and labels written in place from p (room reserved): each value escaped
 * straight into the buffer. Returns the end. Five appends and a copy through a stack buffer
 * per label were a fifth of a render; a reservation and a cap check per label and per piece,
 * and a strlen of each name per sample, a third of what was left.
 */
/* Label i ("{" or ",", the name, "=\"", the value escaped, "\"") at p; returns the end. */
static char *put_label(char *p, size_t i, const char *name, size_t nlen, const char *value)
{
	*p++ = i == 0 ? '{' : ',';
	memcpy(p, name, nlen);
	p += nlen;
	*p++ = '=';
	*p++ = '"';
	p += vw_prom_escape_label(value, p, VW_PROM_LABEL_ESCAPED_MAX);
	*p++ = '"';
	return p;
}

static char *put_series(const struct vw_prom_writer *w, char *p, const char *const *values,
			const struct vw_prom_piece *piece, const struct vw_prom_piece *tail)
{
	size_t i = 0, end = w->nlabels;

	memcpy(p, w->fam->name, w->fam_nlen);
	p += w->fam_nlen;
	if (piece && piece->labels && piece->labels == w->fam->labels && piece->from == 0 &&
	    piece->n <= w->nlabels) {
		memcpy(p, piece->text, piece->len);
		p += piece->len;
		i = piece->n;
	}
	if (tail && tail->labels && tail->labels == w->fam->labels && tail->from >= i &&
	    tail->from > 0 && tail->from + tail->n == w->nlabels)
		end = tail->from;
	else
		tail = NULL;
	for (; i < end; i++)
		p = put_label(p, i, w->fam->labels[i],
			      i < LABEL_LEN_MAX ? w->lab_len[i] : strlen(w->fam->labels[i]),
			      values[i]);
	if (tail) {
		memcpy(p, tail->text, tail->len);
		p += tail->len;
	}
	if (w->nlabels)
		*p++ = '}';
	return p;
}

bool vw_prom_piece_set_from(struct vw_prom_piece *p, const char *const *labels, size_t from,
			    size_t n, const char *const *label_values)
{
	char tmp[LABEL_NAME_PIECE_MAX + 4 + VW_PROM_LABEL_ESCAPED_MAX];
	size_t len = 0;

	p->labels = NULL;
	for (size_t i = 0; i < from; i++)
		if (!labels || !labels[i])
			return false; /* from past the family's labels */
	for (size_t i = from; i < from + n; i++) {
		size_t nlen, k;

		if (!labels || !labels[i] || !label_values || !label_values[i])
			return false;
		nlen = strlen(labels[i]);
		if (nlen > LABEL_NAME_PIECE_MAX)
			return false;
		k = (size_t)(put_label(tmp, i, labels[i], nlen, label_values[i]) - tmp);
		if (k > sizeof(p->text) - len)
			return false; /* too long for a piece: the samples escape it */
		memcpy(p->text + len, tmp, k);
		len += k;
		if (i - from < VW_PROM_PIECE_ENDS)
			p->ends[i - from] = (uint16_t)len;
	}
	p->labels = labels;
	p->from = from;
	p->n = n;
	p->len = len;
	return true;
}

bool vw_prom_piece_set(struct vw_prom_piece *p, const char *const *labels, size_t n,
		       const char *const *label_values)
{
	return vw_prom_piece_set_from(p, labels, 0, n, label_values);
}

bool vw_prom_piece_as(struct vw_prom_piece *dst, const struct vw_prom_piece *src,
		      const char *const *labels, size_t from)
{
	dst->labels = NULL;
	if (!src || !src->labels || !labels || (from == 0) != (src->from == 0))
		return false;
	for (size_t i = 0; i < from; i++)
		if (!labels[i])
			return false;
	for (size_t i = 0; i < src->n; i++) {
		const char *a = labels[from + i], *b = src->labels[src->from + i];

		if (!a || (a != b && strcmp(a, b) != 0))
			return false;
	}
	memcpy(dst->text, src->text, src->len);
	memcpy(dst->ends, src->ends, sizeof(dst->ends));
	dst->len = src->len;
	dst->n = src->n;
	dst->from = from;
	dst->labels = labels;
	return true;
}

bool vw_prom_piece_without(struct vw_prom_piece *dst, const struct vw_prom_piece *src,
			   const char *const *labels, size_t k)
{
	size_t start, end, cut;

	dst->labels = NULL;
	if (!src || !src->labels || src->from != 0 || k >= src->n ||
	    src->n > VW_PROM_PIECE_ENDS || !labels)
		return false;
	for (size_t i = 0; i + 1 < src->n; i++) { /* labels: src's less its k-th, in order */
		const char *a = labels[i], *b = src->labels[i < k ? i : i + 1];

		if (!a || (a != b && strcmp(a, b) != 0))
			return false;
	}
	start = k ? src->ends[k - 1] : 0;
	end = src->ends[k];
	cut = end - start;
	memcpy(dst->text, src->text, start);
	memcpy(dst->text + start, src->text + end, src->len - end);
	if (k == 0 && src->n > 1)
		dst->text[0] = '{'; /* the next label opens the series now */
	for (size_t i = 0; i + 1 < src->n; i++)
		dst->ends[i] = i < k ? src->ends[i] : (uint16_t)(src->ends[i + 1] - cut);
	dst->len = src->len - cut;
	dst->n = src->n - 1;
	dst->from = 0;
	dst->labels = labels;
	return true;
}

/* One sample line with an already formatted value; a counter's micro-units go through the
 * filter, which may give another value to write. Room for its worst case is reserved once;
 * the cap is checked where the filter would see the series and at the end (the buffer only
 * grows, so it is past the cap at the end when it was at any point). */
static int put_sample(struct vw_prom_writer *w, const char *const *values, const char *num,
		      size_t numlen, const uint64_t *micro, const struct vw_prom_piece *piece,
		      const struct vw_prom_piece *tail)
{
	char filtered[NUM_MAX];
	uint64_t seen = micro ? *micro : 0;
	size_t start;
	char *p;
	int r;

	if (!w || w->done || !w->fam)
		return -EINVAL;
	if (w->fam_err)
		return family_error(w);
	r = values_check(w, values);
	if (r < 0)
		return r;
	start = w->len;
	w->fam_err = reserve(w, w->fam_need); /* computed when the family started */
	if (w->fam_err)
		return family_settle(w);
	w->len = (size_t)(put_series(w, w->buf + start, values, piece, tail) - w->buf);
	if (over_cap(w)) {
		w->fam_err = -ENOBUFS;
		return family_settle(w);
	}
	if (micro && w->filter) {
		uint64_t out;

		/* The key is the series as the text format names it, just written. */
		r = w->filter(w->filter_ctx, w->buf + start, w->len - start, *micro, &out);
		if (r < 0) {
			w->fam_err = r;
			return family_settle(w);
		}
		if (r > 0) {
			numlen = format_micro(out, filtered);
			num = filtered;
			seen = out;
		}
	}
	if (micro && w->observer)
		w->observer(w->observer_ctx, w->fam, values, seen);
	p = w->buf + w->len;
	*p++ = ' ';
	memcpy(p, num, numlen);
	p += numlen;
	*p++ = '\n';
	w->len = (size_t)(p - w->buf);
	if (over_cap(w))
		w->fam_err = -ENOBUFS;
	return family_settle(w);
}

static bool family_is(const struct vw_prom_writer *w, enum vw_metric_type type)
{
	return w && w->fam && w->fam->type == type;
}

int vw_prom_gauge_pieces(struct vw_prom_writer *w, const struct vw_prom_piece *piece,
			 const struct vw_prom_piece *tail, const char *const *label_values,
			 double value)
{
	char num[NUM_MAX];

	if (!family_is(w, VW_METRIC_GAUGE))
		return -EINVAL;
	return put_sample(w, label_values, num, format_double(value, num), NULL, piece, tail);
}

int vw_prom_gauge_milli_pieces(struct vw_prom_writer *w, const struct vw_prom_piece *piece,
			       const struct vw_prom_piece *tail, const char *const *label_values,
			       uint64_t milli)
{
	char num[NUM_MAX];
	size_t len;

	if (!family_is(w, VW_METRIC_GAUGE))
		return -EINVAL;
	/* Below 1e15 the value has at most 15 significant digits, all of them at or above the
	 * 15th digit of milli / 1e3 (it is under 1e12): the double nearest it is within half a
	 * unit of that digit, so "%.15g" prints milli / 1e3 itself, and it reads back as that
	 * double. format_double() would print the same; the exact digits need no double. */
	if (milli < 1000000000000000ull)
		len = format_micro(milli * 1000, num);
	else
		len = format_double((double)milli / 1e3, num);
	return put_sample(w, label_values, num, len, NULL, piece, tail);
}

int vw_prom_gauge_piece(struct vw_prom_writer *w, const struct vw_prom_piece *piece,
			const char *const *label_values, double value)
{
	return vw_prom_gauge_pieces(w, piece, NULL, label_values, value);
}

int vw_prom_gauge(struct vw_prom_writer *w, const char *const *label_values, double value)
{
	return vw_prom_gauge_piece(w, NULL, label_values, value);
}

int vw_prom_counter_micro_pieces(struct vw_prom_writer *w, const struct vw_prom_piece *piece,
				 const struct vw_prom_piece *tail,
				 const char *const *label_values, uint64_t micro)
{
	char num[NUM_MAX];

	if (!family_is(w, VW_METRIC_COUNTER))
		return -EINVAL;
	return put_sample(w, label_values, num, format_micro(micro, num), &micro, piece, tail);
}

int vw_prom_counter_micro_piece(struct vw_prom_writer *w, const struct vw_prom_piece *piece,
				const char *const *label_values, uint64_t micro)
{
	return vw_prom_counter_micro_pieces(w, piece, NULL, label_values, micro);
}

int vw_prom_counter_micro(struct vw_prom_writer *w, const char *const *label_values,
			  uint64_t micro)
{
	return vw_prom_counter_micro_piece(w, NULL, label_values, micro);
}

int vw_prom_counter(struct vw_prom_writer *w, const char *const *label_values, double value)
{
	return vw_prom_counter_piece(w, NULL, label_values, value);
}

int vw_prom_counter_piece(struct vw_prom_writer *w, const struct vw_prom_piece *piece,
			  const char *const *label_values, double value)
{
	return vw_prom_counter_pieces(w, piece, NULL, label_values, value);
}

int vw_prom_counter_pieces(struct vw_prom_writer *w, const struct vw_prom_piece *piece,
			   const struct vw_prom_piece *tail, const char *const *label_values,
			   double value)
{
	char num[NUM_MAX];
	uint64_t micro = 0;
	bool filtered;

	if (!family_is(w, VW_METRIC_COUNTER) || !isfinite(value) || value < 0)
		return -EINVAL;
	if (value == 0)
		value = 0; /* -0 prints as 0 */
	/* For a filter only; from 1.8e13 units on, micro-units would overflow: not filtered. */
	filtered = (w->filter || w->observer) && value < 1.8e13;
	if (filtered)
		micro = (uint64_t)llround(value * 1e6);
	return put_sample(w, label_values, num, format_double(value, num),
			  filtered ? &micro : NULL, piece, tail);
}

int vw_prom_field_sample(struct vw_prom_writer *w, const char *const *label_values,
			 const void *base, size_t off, enum vw_prom_field kind)
{
	const char *p = (const char *)base + off;
	uint64_t u;
	double d;

	switch (kind) {
	case VW_PROM_FIELD_MICRO:
		memcpy(&u, p, sizeof(u));
		return vw_prom_counter_micro(w, label_values, u);
	case VW_PROM_FIELD_COUNT:
		memcpy(&u, p, sizeof(u));
		return vw_prom_counter(w, label_values, (double)u);
	default:
		memcpy(&d, p, sizeof(d));
		return vw_prom_gauge(w, label_values, d);
	}
}

int vw_prom_field_families(struct vw_prom_writer *w, const struct vw_metric_family *table,
			   const struct vw_prom_field_family *rows, size_t n_rows, size_t n_items,
			   vw_prom_item_fn item, void *ctx)
{
	int r = 0;

	for (size_t k = 0; r == 0 && k < n_rows; k++) {
		const struct vw_metric_family *f = &table[rows[k].family];

		r = vw_prom_family(w, f);
		for (size_t i = 0; r == 0 && i < n_items; i++) {
			const char *const *labels;
			const void *base = item(ctx, i, f, &labels);

			r = vw_prom_field_sample(w, labels, base, rows[k].off, rows[k].kind);
		}
		if (r == 0)
			r = vw_prom_family_end(w);
	}
	return r;
}

int vw_prom_single(struct vw_prom_writer *w, const struct vw_metric_family *f,
		   const char *const *label_values, double value)
{
	int r = vw_prom_family(w, f);

	if (r == 0)
		r = f->type == VW_METRIC_COUNTER ? vw_prom_counter(w, label_values, value)
						 : vw_prom_gauge(w, label_values, value);
	return r < 0 ? r : vw_prom_family_end(w);
}

int vw_prom_finish(struct vw_prom_writer *w, char **ret_buf, size_t *ret_len)
{
	int r;

	if (!w || w->done || !ret_buf)
		return -EINVAL;
	if (w->fam)
		(void)vw_prom_family_end(w);
	r = reserve(w, strlen(EOF_TRAILER));
	if (r < 0)
		return r;
	if (w->fmt == VW_PROM_OPENMETRICS_1_0_0) {
		/* Room was kept below limit, so this never overflows. */
		memcpy(w->buf + w->len, EOF_TRAILER, strlen(EOF_TRAILER));
		w->len += strlen(EOF_TRAILER);
	}
	w->buf[w->len] = '\0';
	w->done = true;
	*ret_buf = VW_TAKE_PTR(w->buf);
	if (ret_len)
		*ret_len = w->len;
	return 0;
}

/* ---- Content negotiation ---- */

const char *vw_prom_content_type(enum vw_prom_format fmt)
{
	if (fmt == VW_PROM_OPENMETRICS_1_0_0)
		return "application/openmetrics-text; version=1.0.0; charset=utf-8";
	if (fmt == VW_PROM_OPENMETRICS_0_0_1)
		return "application/openmetrics-text; version=0.0.1; charset=utf-8";
	if (fmt == VW_PROM_TEXT_1_0_0)
		return "text/plain; version=1.0.0; charset=utf-8; escaping=underscores";
	return "text/plain; version=0.0.4; charset=utf-8";
}

/* One media range of an Accept header, as far as negotiation needs it. */
struct media_range {
	const char *type; /* "type/subtype", not NUL-terminated */
	size_t type_len;
	const char *version; /* value of a version parameter, or NULL */
	size_t version_len;
	int q; /* 0..1000, or -1 when the range carried an invalid q */
};

static bool is_ows(char c)
{
	return c == ' ' || c == '\t';
}

/* Trim optional whitespace from both ends of [*s, *s + *n). */
static void trim(const char **s, size_t *n)
{
	while (*n && is_ows(**s))
		(*s)++, (*n)--;
	while (*n && is_ows((*s)[*n - 1]))
		(*n)--;
}

/* RFC 9110 qvalue: "0" ["." 0-3 digits] or "1" ["." 0-3 zeros], as 0..1000; -1 if invalid. */
static int parse_qvalue(const char *s, size_t n)
{
	int q, scale = 100;

	if (n == 0 || (s[0] != '0' && s[0] != '1') || n > 5 || (n > 1 && s[1] != '.'))
		return -1;
	q = (s[0] - '0') * 1000;
	for (size_t i = 2; i < n; i++, scale /= 10) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		q += (s[i] - '0') * scale;
	}
	return q > 1000 ? -1 : q;
}

/* Parse one "name=value" parameter into r (q and version; others are ignored). */
static void parse_param(const char *s, size_t n, struct media_range *r)
{
	const char *eq = memchr(s, '=', n);
	const char *val;
	size_t name_len, val_len;

	if (!eq)
		return;
	name_len = (size_t)(eq - s);
	val = eq + 1;
	val_len = n - name_len - 1;
	trim(&s, &name_len);
	trim(&val, &val_len);
	if (val_len >= 2 && val[0] == '"' && val[val_len - 1] == '"')
		val++, val_len -= 2;
	if (name_len == 1 && (s[0] == 'q' || s[0] == 'Q')) {
		r->q = parse_qvalue(val, val_len);
	} else if (name_len == 7 && strncasecmp(s, "version", 7) == 0) {
		r->version = val;
		r->version_len = val_len;
	}
}

/* Length of s up to the first sep outside a quoted string (n when there is none). */
static size_t span_until(const char *s, size_t n, char sep)
{
	bool quoted = false;

	for (size_t i = 0; i < n; i++) {
		if (s[i] == '"')
			quoted = !quoted;
		else if (s[i] == '\\' && quoted && i + 1 < n)
			i++;
		else if (s[i] == sep && !quoted)
			return i;
	}
	return n;
}

/* Parse one comma-separated element: "type/subtype *( ; param )". */
static void parse_range(const char *s, size_t n, struct media_range *r)
{
	size_t i = span_until(s, n, ';');

	*r = (struct media_range){.type = s, .type_len = i, .q = 1000};
	trim(&r->type, &r->type_len);
	while (i < n) {
		const char *p = s + i + 1;
		size_t len = span_until(p, n - i - 1, ';');

		parse_param(p, len, r);
		i += len + 1;
	}
}

static bool range_is(const struct media_range *r, const char *type)
{
	return r->type_len == strlen(type) && strncasecmp(r->type, type, r->type_len) == 0;
}

static bool version_is(const struct media_range *r, const char *v)
{
	return r->version_len == strlen(v) && memcmp(r->version, v, r->version_len) == 0;
}

enum vw_prom_format vw_prom_negotiate(const char *accept)
{
	size_t left = accept ? strlen(accept) : 0;
	int om_q = 0, om001_q = 0, text_q = 0, text100_q = 0;

	for (const char *s = accept; left > 0;) {
		size_t n = span_until(s, left, ',');
		struct media_range r;

		parse_range(s, n, &r);
		s += VW_MIN(n + 1, left);
		left -= VW_MIN(n + 1, left);
		if (r.q < 0)
			continue;
		if (range_is(&r, "application/openmetrics-text")) {
			if (!r.version || version_is(&r, "1.0.0"))
				om_q = VW_MAX(om_q, r.q);
			else if (version_is(&r, "0.0.1"))
				om001_q = VW_MAX(om001_q, r.q);
		} else if (range_is(&r, "text/plain")) {
			if (!r.version || version_is(&r, "0.0.4"))
				text_q = VW_MAX(text_q, r.q);
			else if (version_is(&r, "1.0.0"))
				text100_q = VW_MAX(text100_q, r.q);
		} else if (range_is(&r, "text/*") || range_is(&r, "*/*")) {
			text_q = VW_MAX(text_q, r.q);
		}
	}
	if (VW_MAX(om_q, om001_q) == 0 || VW_MAX(om_q, om001_q) < VW_MAX(text_q, text100_q))
		return text100_q > text_q ? VW_PROM_TEXT_1_0_0 : VW_PROM_TEXT_0_0_4;
	return om_q >= om001_q ? VW_PROM_OPENMETRICS_1_0_0 : VW_PROM_OPENMETRICS_0_0_1;
}

/* SPDX-License-Identifier: Apache-2.0 */
#include "vw_test.h"

#include <float.h>
#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wchar.h>

#include "macro.h"
#include "prom.h"
#include "selfstats.h"

static const char *const zone_labels[] = {"zone", NULL};
static const char *const vm_labels[] = {"uuid", "name", NULL};
static const char *const case_labels[] = {"case", NULL};

static const struct vw_metric_family fam_energy = {
	"virtwatt_node_energy_joules_total", VW_METRIC_COUNTER, "Energy used by the node, by zone.",
	"joules", zone_labels
};
static const struct vw_metric_family fam_power = {
	"virtwatt_vm_power_watts", VW_METRIC_GAUGE, "Power drawn by a VM.\nEstimated; see \\docs.",
	"watts", vm_labels
};
static const struct vw_metric_family fam_up = {
	"virtwatt_up", VW_METRIC_GAUGE, "Whether the last read \"worked\".", NULL, NULL
};
/* A unit that does not match the name: no UNIT line. */
static const struct vw_metric_family fam_cpu = {
	"virtwatt_cpu_time_total", VW_METRIC_COUNTER, "CPU time.", "seconds", NULL
};

static size_t golden_expect; /* vw_prom_writer_expect()'s bytes, 0: not called */
static struct vw_prom_layout *golden_layout; /* kept by render_golden() when keep_golden */
static bool keep_golden;

static char *render_golden(enum vw_prom_format fmt, size_t *ret_len)
{
	struct vw_prom_writer *w = vw_prom_writer_new(fmt, 0);
	char *buf = NULL;

	assert_non_null(w);
	if (golden_expect)
		vw_prom_writer_expect(w, golden_expect);
	if (keep_golden)
		assert_int_equal(vw_prom_writer_keep_layout(w), 0);
	assert_int_equal(vw_prom_family(w, &fam_energy), 0);
	assert_int_equal(vw_prom_counter_micro(w, (const char *[]){"package-0", NULL}, 1234567), 0);
	assert_int_equal(vw_prom_counter_micro(w, (const char *[]){"dram", NULL}, 0), 0);
	assert_int_equal(vw_prom_family_end(w), 0);
	assert_int_equal(vw_prom_family(w, &fam_power), 0);
	assert_int_equal(vw_prom_gauge(w, (const char *[]){"6f1c", "web \"1\"", NULL}, 12.5), 0);
	assert_int_equal(vw_prom_gauge(w, (const char *[]){"77ab", "db\\2", NULL}, NAN), 0);
	assert_int_equal(vw_prom_family_end(w), 0);
	assert_int_equal(vw_prom_family(w, &fam_up), 0);
	assert_int_equal(vw_prom_gauge(w, NULL, 1), 0);
	assert_int_equal(vw_prom_family_end(w), 0);
	assert_int_equal(vw_prom_family(w, &fam_cpu), 0);
	assert_int_equal(vw_prom_counter(w, NULL, 2.5), 0);
	/* finish closes the open family */
	assert_int_equal(vw_prom_finish(w, &buf, ret_len), 0);
	if (keep_golden)
		golden_layout = vw_prom_writer_take_layout(w);
	vw_prom_writer_free(w);
	return buf;
}

/* The families of render_golden() in one exposition format, as they must be written. */
struct golden {
	enum vw_prom_format fmt;
	const char *expected;
};

static const struct golden golden_text = {
	VW_PROM_TEXT_0_0_4,
	"# HELP virtwatt_node_energy_joules_total Energy used by the node, by zone.\n"
	"# TYPE virtwatt_node_energy_joules_total counter\n"
	"virtwatt_node_energy_joules_total{zone=\"package-0\"} 1.234567\n"
	"virtwatt_node_energy_joules_total{zone=\"dram\"} 0\n"
	"# HELP virtwatt_vm_power_watts Power drawn by a VM.\\nEstimated; see \\\\docs.\n"
	"# TYPE virtwatt_vm_power_watts gauge\n"
	"virtwatt_vm_power_watts{uuid=\"6f1c\",name=\"web \\\"1\\\"\"} 12.5\n"
	"virtwatt_vm_power_watts{uuid=\"77ab\",name=\"db\\\\2\"} NaN\n"
	"# HELP virtwatt_up Whether the last read \"worked\".\n"
	"# TYPE virtwatt_up gauge\n"
	"virtwatt_up 1\n"
	"# HELP virtwatt_cpu_time_total CPU time.\n"
	"# TYPE virtwatt_cpu_time_total counter\n"
	"virtwatt_cpu_time_total 2.5\n"
};

static const struct golden golden_openmetrics = {
	VW_PROM_OPENMETRICS_1_0_0,
	"# TYPE virtwatt_node_energy_joules counter\n"
	"# UNIT virtwatt_node_energy_joules joules\n"
	"# HELP virtwatt_node_energy_joules Energy used by the node, by zone.\n"
	"virtwatt_node_energy_joules_total{zone=\"package-0\"} 1.234567\n"
	"virtwatt_node_energy_joules_total{zone=\"dram\"} 0\n"
	"# TYPE virtwatt_vm_power_watts gauge\n"
	"# UNIT virtwatt_vm_power_watts watts\n"
	"# HELP virtwatt_vm_power_watts Power drawn by a VM.\\nEstimated; see \\\\docs.\n"
	"virtwatt_vm_power_watts{uuid=\"6f1c\",name=\"web \\\"1\\\"\"} 12.5\n"
	"virtwatt_vm_power_watts{uuid=\"77ab\",name=\"db\\\\2\"} NaN\n"
	"# TYPE virtwatt_up gauge\n"
	"# HELP virtwatt_up Whether the last read \\\"worked\\\".\n"
	"virtwatt_up 1\n"
	"# TYPE virtwatt_cpu_time counter\n"
	"# HELP virtwatt_cpu_time CPU time.\n"
	"virtwatt_cpu_time_total 2.5\n"
	"# EOF\n"
};

/* *state: the struct golden of one format. */
static void test_golden(void **state)
{
	const struct golden *g = *state;
	size_t len;
	_cleanup_free_ char *out = render_golden(g->fmt, &len);

	assert_string_equal(out, g->expected);
	assert_int_equal(len, strlen(g->expected));
}

/* Room made up front (a size hint, smaller or larger than the text) changes nothing written. */
static void test_expect(void **state)
{
	static const size_t hints[] = { 1, 100, 1 << 20 };

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(hints); i++) {
		size_t len;
		char *out;

		golden_expect = hints[i];
		out = render_golden(VW_PROM_TEXT_0_0_4, &len);
		assert_string_equal(out, golden_text.expected);
		assert_int_equal(len, strlen(golden_text.expected));
		free(out);
	}
	golden_expect = 0;
}

static void test_empty_output(void **state)
{
	struct vw_prom_writer *w = vw_prom_writer_new(VW_PROM_OPENMETRICS_1_0_0, 6);
	_cleanup_free_ char *om = NULL, *text = NULL;
	size_t len = 99;

	(void)state;
	assert_non_null(w);
	assert_int_equal(vw_prom_finish(w, &om, &len), 0);
	assert_string_equal(om, "# EOF\n");
	assert_int_equal(len, 6);
	/* nothing is accepted after finish */
	assert_int_equal(vw_prom_family(w, &fam_up), -EINVAL);
	assert_int_equal(vw_prom_finish(w, &text, &len), -EINVAL);
	vw_prom_writer_free(w);

	w = vw_prom_writer_new(VW_PROM_TEXT_0_0_4, 0);
	assert_non_null(w);
	assert_int_equal(vw_prom_finish(w, &text, &len), 0);
	assert_string_equal(text, "");
	assert_int_equal(len, 0);
	vw_prom_writer_free(w);
	vw_prom_writer_free(NULL);

	errno = 0;
	assert_null(vw_prom_writer_new(VW_PROM_OPENMETRICS_1_0_0, 5));
	assert_int_equal(errno, EINVAL);
	assert_null(vw_prom_writer_new((enum vw_prom_format)7, 0));
}

/* ---- Label values ---- */

static char *escape(const char *in)
{
	static char out[VW_PROM_LABEL_ESCAPED_MAX];
	size_t n = vw_prom_escape_label(in, out, sizeof(out));

	assert_int_equal(n, strlen(out));
	return out;
}

/* Valid UTF-8 by glibc's decoder (rejects overlong forms and surrogates), no controls. */
static void assert_clean_utf8(const char *s)
{
	mbstate_t st = {0};
	size_t left = strlen(s);

	while (left) {
		wchar_t wc;
		size_t n = mbrtowc(&wc, s, left, &st);

		assert_true(n != (size_t)-1 && n != (size_t)-2 && n != 0);
		assert_false(wc < 0x20 || (wc >= 0x7f && wc <= 0x9f));
		s += n;
		left -= n;
	}
}

struct escape_case {
	const char *in;
	const char *out;
};

static void check_escapes(const struct escape_case *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *got = escape(cases[i].in);

		if (strcmp(got, cases[i].out) != 0)
			fail_msg("case %zu: got \"%s\", expected \"%s\"", i, got, cases[i].out);
		assert_clean_utf8(got);
	}
}

#define FFFD "\xef\xbf\xbd"

static void test_label_escaping(void **state)
{
	static const struct escape_case cases[] = {
		{"plain", "plain"},
		{"a\\b", "a\\\\b"},
		{"say \"hi\"", "say \\\"hi\\\""},
		/* Control characters, LF included, become one space each: a value stays one line. */
		{"l1\nl2", "l1 l2"},
		{"cr\rlf\n", "cr lf "},
		{"\x01tab\t\x1f\x7f", " tab   "},
		{"nel\xc2\x85", "nel "},
		{"", ""},
	};

	(void)state;
	check_escapes(cases, ARRAY_SIZE(cases));
}

static void test_label_invalid_utf8(void **state)
{
	static const struct escape_case cases[] = {
		{"\xff", FFFD},
		{"a\xffz", "a" FFFD "z"},
		/* Overlong '/' in two and three bytes: every byte is replaced. */
		{"\xc0\xaf", FFFD FFFD},
		{"\xe0\x80\xaf", FFFD FFFD FFFD},
		/* Overlong NUL (modified UTF-8) must not come back as a NUL or a control byte. */
		{"x\xc0\x80y", "x" FFFD FFFD "y"},
		/* A surrogate, above U+10FFFF, a truncated sequence, a lone continuation, 5 bytes. */
		{"\xed\xa0\x80", FFFD FFFD FFFD},
		{"\xf4\x90\x80\x80", FFFD FFFD FFFD FFFD},
		{"\xe2\x82", FFFD FFFD},
		{"\x80", FFFD},
		{"\xf8\x88\x80\x80\x80", FFFD FFFD FFFD FFFD FFFD},
		/* Valid multi-byte UTF-8 is kept byte for byte (2, 3 and 4 bytes, U+FFFD itself). */
		{"Zo\xc3\xab \xe9\x9b\xbb\xe5\x8a\x9b \xf0\x9f\x94\x8b " FFFD,
		 "Zo\xc3\xab \xe9\x9b\xbb\xe5\x8a\x9b \xf0\x9f\x94\x8b " FFFD},
	};

	(void)state;
	check_escapes(cases, ARRAY_SIZE(cases));
}

static char *repeat(const char *unit, size_t total)
{
	size_t n = strlen(unit);
	char *s = malloc(total + 1);

	assert_non_null(s);
	for (size_t i = 0; i + n <= total; i += n)
		memcpy(s + i, unit, n);
	s[total - total % n] = '\0';
	return s;
}

static void test_label_cap(void **state)
{
	_cleanup_free_ char *ascii = repeat("a", 10240);
	_cleanup_free_ char *two = repeat("\xc3\xa9", 10240);   /* e acute */
	_cleanup_free_ char *three = repeat("\xe2\x82\xac", 10239); /* euro sign */
	_cleanup_free_ char *quotes = repeat("\"", 10240);
	_cleanup_free_ char *bad = repeat("\xff", 10240);
	char small[4];

	(void)state;
	assert_int_equal(strlen(escape(ascii)), VW_PROM_LABEL_MAX);
	assert_int_equal(strlen(escape(two)), VW_PROM_LABEL_MAX);
	/* 85 whole euro signs: the cap never splits a character. */
	assert_int_equal(strlen(escape(three)), 255);
	assert_clean_utf8(escape(three));
	/* Capped before escaping: 256 quotes, each escaped. */
	assert_int_equal(strlen(escape(quotes)), 2 * VW_PROM_LABEL_MAX);
	/* 85 replacement characters */
	assert_int_equal(strlen(escape(bad)), 255);
	assert_clean_utf8(escape(bad));
	/* A small output buffer never splits an escape or a character. */
	assert_int_equal(vw_prom_escape_label("ab\"c", small, sizeof(small)), 2);
	assert_string_equal(small, "ab");
	assert_int_equal(vw_prom_escape_label("a\xc3\xa9\xc3\xa9", small, sizeof(small)), 3);
	assert_string_equal(small, "a\xc3\xa9");
	assert_int_equal(vw_prom_escape_label(NULL, small, sizeof(small)), 0);
	assert_string_equal(small, "");
	assert_int_equal(vw_prom_escape_label("x", small, 0), 0);
}

static void test_label_in_sample(void **state)
{
	static const char *const hostile[] = {"q\"b\\s\nc\rz\x01\xff\xc0\xaf", NULL};
	struct vw_prom_writer *w = vw_prom_writer_new(VW_PROM_TEXT_0_0_4, 0);
	_cleanup_free_ char *out = NULL;

	(void)state;
	assert_int_equal(vw_prom_family(w, &fam_energy), 0);
	assert_int_equal(vw_prom_counter_micro(w, hostile, 1), 0);
	assert_int_equal(vw_prom_finish(w, &out, NULL), 0);
	assert_non_null(strstr(out, "{zone=\"q\\\"b\\\\s c z \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"} "
				    "0.000001\n"));
	vw_prom_writer_free(w);
}

/* ---- Values ---- */

/* The value printed for one sample, written through a real writer. */
static char *value_text(bool counter, uint64_t micro, double v, int *ret)
{
	static char line[128];
	const struct vw_metric_family *f = counter ? &fam_cpu : &fam_up;
	struct vw_prom_writer *w = vw_prom_writer_new(VW_PROM_TEXT_0_0_4, 0);
	_cleanup_free_ char *out = NULL;
	char *nl;

	assert_int_equal(vw_prom_family(w, f), 0);
	if (!counter)
		*ret = vw_prom_gauge(w, NULL, v);
	else if (isnan(v) || v != 0 || signbit(v))
		*ret = vw_prom_counter(w, NULL, v);
	else
		*ret = vw_prom_counter_micro(w, NULL, micro);
	assert_int_equal(vw_prom_finish(w, &out, NULL), 0);
	vw_prom_writer_free(w);
	nl = strrchr(out, '\n');
	*nl = '\0';
	nl = strrchr(out, '\n');
	snprintf(line, sizeof(line), "%s", strchr(nl + 1, ' ') + 1);
	return line;
}

static const char *micro(uint64_t v)
{
	int r;
	const char *s = value_text(true, v, 0, &r);

	assert_int_equal(r, 0);
	return s;
}

static const char *gauge(double v)
{
	int r;
	const char *s = value_text(false, 0, v, &r);

	assert_int_equal(r, 0);
	return s;
}

static void test_micro_exact(void **state)
{
	(void)state;
	assert_string_equal(micro(0), "0");
	assert_string_equal(micro(1), "0.000001");
	assert_string_equal(micro(10), "0.00001");
	assert_string_equal(micro(999999), "0.999999");
	assert_string_equal(micro(1000000), "1");
	assert_string_equal(micro(1234567), "1.234567");
	assert_string_equal(micro(1500000), "1.5");
	assert_string_equal(micro(9007199254740993ULL), "9007199254.740993");
	assert_string_equal(micro(UINT64_MAX), "18446744073709.551615");
}

static void test_double_values(void **state)
{
	static const double roundtrip[] = {0.1, 1.0 / 3, 2.0 / 3, 1e-300, 5e-324, 1.7976931348623157e308,
					   123456789.123456789, -273.15, 4.35, 0.3};

	(void)state;
	assert_string_equal(gauge(0), "0");
	assert_string_equal(gauge(-0.0), "-0");
	assert_string_equal(gauge(2.5), "2.5");
	assert_string_equal(gauge(-1), "-1");
	assert_string_equal(gauge(0.1), "0.1");
	assert_string_equal(gauge(1e21), "1e+21");
	assert_string_equal(gauge(NAN), "NaN");
	assert_string_equal(gauge(INFINITY), "+Inf");
	assert_string_equal(gauge(-INFINITY), "-Inf");
	assert_string_equal(gauge(1.0 / 3), "0.3333333333333333");
	assert_string_equal(gauge(0.1 + 0.2), "0.30000000000000004");
	for (size_t i = 0; i < ARRAY_SIZE(roundtrip); i++) {
		const char *s = gauge(roundtrip[i]);

		assert_true(strtod(s, NULL) == roundtrip[i]);
		assert_true(strlen(s) <= 24);
	}
}

/* What the writer printed before it formatted doubles in integers: the shortest of %.15g,
 * %.16g and %.17g that strtod reads back. */
static void reference_double(double v, char out[VW_PROM_NUM_MAX])
{
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(out, VW_PROM_NUM_MAX, "%.*g", prec, v);
		if (strtod(out, NULL) == v)
			return;
	}
}

static void check_double(double v)
{
	char got[VW_PROM_NUM_MAX], want[VW_PROM_NUM_MAX];
	size_t n = vw_prom_format_double(v, got);

	if (isnan(v) || isinf(v))
		return;
	reference_double(v, want);
	if (strcmp(got, want) != 0 || n != strlen(want))
		fail_msg("%a: wrote \"%s\", printf \"%s\"", v, got, want);
}

/* The gauges' text, computed in integers, is printf's for every kind of value: watts as the
 * registry computes them (uj x 1e3 / ns), random bit patterns, neighbours of powers of ten,
 * exact ties at the 15th, 16th and 17th digit (rounded to even), and both signs. */
static void test_double_format_matches_printf(void **state)
{
	uint64_t x = 0x9e3779b97f4a7c15ULL;

	(void)state;
	for (int i = 0; i < 60000; i++) {
		uint64_t uj = vw_test_xorshift(&x) % 100000000000ULL >> (vw_test_xorshift(&x) % 40);
		uint64_t ns = 1000000000ULL + vw_test_xorshift(&x) % 200000000ULL - 100000000ULL;
		double w = (double)uj * 1e3 / (double)ns;
		uint64_t bits = vw_test_xorshift(&x);
		double r;

		check_double(w);
		check_double(-w);
		/* Any double from about 1e-20 to 1e20 (exponents 960..1090), and any at all. */
		bits = (bits & ~(0x7ffull << 52)) |
		       (uint64_t)(960 + vw_test_xorshift(&x) % 130) << 52;
		memcpy(&r, &bits, sizeof(r));
		check_double(r);
		bits = vw_test_xorshift(&x);
		memcpy(&r, &bits, sizeof(r));
		check_double(r);
	}
	for (int e = -20; e <= 20; e++) {
		double p = pow(10, e);

		check_double(p);
		check_double(nextafter(p, 0));
		check_double(nextafter(p, INFINITY));
		check_double(nextafter(nextafter(p, 0), 0));
		check_double(ldexp(1, e * 3));
		check_double(nextafter(ldexp(1, e * 3), 0));
	}
	for (int i = 0; i < 30000; i++) {
		/* A 12-digit integer plus an odd multiple of 1/16 (4 decimals, ending in 5): 16
		 * significant digits, a tie at 15; 13 digits: a tie at 16; 11 digits + 1/32: 16. */
		uint64_t odd = 2 * (vw_test_xorshift(&x) % 8) + 1;

		check_double((double)(100000000000ULL + vw_test_xorshift(&x) % 900000000000ULL) +
			     odd / 16.0);
		check_double((double)(1000000000000ULL + vw_test_xorshift(&x) % 9000000000000ULL) +
			     odd / 16.0);
		check_double((double)(10000000000ULL + vw_test_xorshift(&x) % 90000000000ULL) +
			     (2 * (vw_test_xorshift(&x) % 16) + 1) / 32.0);
		check_double((double)(vw_test_xorshift(&x) % 1000000) / 1024.0);
	}
	check_double(0.1 + 0.2);
	check_double(1.0 / 3);
	check_double(123456789.123456789);
	check_double(4.35);
	check_double(DBL_MIN);
	check_double(5e-324);
	check_double(DBL_MAX);
}

static const char *const proc_labels[] = {"pid", "comm", "exe", "zone", NULL};
static const char *const other_labels[] = {"pid", "comm", "exe", "zone", NULL};
static const struct vw_metric_family fam_proc_j = {
	"t_process_joules_total", VW_METRIC_COUNTER, "Joules.", "joules", proc_labels
};
static const struct vw_metric_family fam_proc_w = {
	"t_process_watts", VW_METRIC_GAUGE, "Watts.", "watts", proc_labels
};
/* The same label names in another array: a piece made for proc_labels is not used. */
static const struct vw_metric_family fam_other_w = {
	"t_other_watts", VW_METRIC_GAUGE, "Watts.", "watts", other_labels
};

/* Render two processes' series in both families, with pieces or without. */
static char *render_pieces(enum vw_prom_format fmt, bool with)
{
	static const char *const procs[][3] = {{"1", "init", "/sbin/init"},
					       {"42", "we\"ird\\", "/bin/\xff\x01x"}};
	static const char *const zones[] = {"package", "dram"};
	struct vw_prom_piece pieces[2];
	struct vw_prom_writer *w = vw_prom_writer_new(fmt, 0);
	char *buf = NULL;

	assert_non_null(w);
	for (size_t p = 0; p < 2; p++) {
		const char *v[] = {procs[p][0], procs[p][1], procs[p][2], "", NULL};

		assert_true(vw_prom_piece_set(&pieces[p], proc_labels, 3, v));
	}
	for (int f = 0; f < 3; f++) {
		assert_int_equal(vw_prom_family(w, f == 0 ? &fam_proc_j : f == 1 ? &fam_proc_w
								     : &fam_other_w), 0);
		for (size_t p = 0; p < 2; p++)
			for (size_t z = 0; z < 2; z++) {
				const char *v[] = {procs[p][0], procs[p][1], procs[p][2], zones[z],
						   NULL};
				const struct vw_prom_piece *pc = with ? &pieces[p] : NULL;

				if (f == 0)
					assert_int_equal(vw_prom_counter_micro_piece(w, pc, v,
										     1500000 * (p + 1)),
							 0);
				else
					assert_int_equal(vw_prom_gauge_piece(w, pc, v, 0.25 * (z + 1)), 0);
			}
		assert_int_equal(vw_prom_family_end(w), 0);
	}
	assert_int_equal(vw_prom_finish(w, &buf, NULL), 0);
	vw_prom_writer_free(w);
	return buf;
}

/* A series' labels escaped once (a piece) write the very bytes escaping them each sample does,
 * in both formats; a piece is used only by families of its label array, and it keeps what the
 * writer sanitises and escapes. */
static void test_label_pieces(void **state)
{
	static const enum vw_prom_format fmts[] = {VW_PROM_TEXT_0_0_4, VW_PROM_OPENMETRICS_1_0_0};
	struct vw_prom_piece pc;
	const char *v[] = {"7", "x", "y", NULL};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(fmts); i++) {
		_cleanup_free_ char *plain = render_pieces(fmts[i], false);
		_cleanup_free_ char *pieces = render_pieces(fmts[i], true);

		assert_string_equal(pieces, plain);
		assert_non_null(strstr(plain, "t_process_watts{pid=\"42\",comm=\"we\\\"ird\\\\\","
					      "exe=\"/bin/\xef\xbf\xbd x\",zone=\"dram\"} 0.5\n"));
		assert_non_null(strstr(plain, "t_other_watts{pid=\"1\""));
	}
	/* More labels than given values, or a value missing: no piece. */
	assert_false(vw_prom_piece_set(&pc, proc_labels, 4, (const char *[]){"7", "x", NULL}));
	assert_null(pc.labels);
	assert_true(vw_prom_piece_set(&pc, proc_labels, 3, v));
	assert_int_equal(pc.len, strlen("{pid=\"7\",comm=\"x\",exe=\"y\""));
	assert_memory_equal(pc.text, "{pid=\"7\",comm=\"x\",exe=\"y\"", pc.len);
}

/* Two processes' series with heads and tails: mode 0 neither, 1 a head (pid..exe) and a tail
 * (zone), 2 a tail alone (comm..zone), 3 a head and a tail overlapping it (ignored), 4 a tail
 * that does not end the series (ignored). */
static char *render_tails(enum vw_prom_format fmt, int mode)
{
	static const char *const procs[][3] = {{"1", "init", "/sbin/init"},
					       {"42", "we\"ird\\", "/bin/\xff\x01x"}};
	static const char *const zones[] = {"pack\"age", "dr\nam"}; /* "\n": a space */
	struct vw_prom_piece heads[2], tails[2][2];
	struct vw_prom_writer *w = vw_prom_writer_new(fmt, 0);
	char *buf = NULL;

	assert_non_null(w);
	for (size_t p = 0; p < 2; p++)
		for (size_t z = 0; z < 2; z++) {
			const char *v[] = {procs[p][0], procs[p][1], procs[p][2], zones[z], NULL};
			size_t from = mode == 1 ? 3 : mode == 4 ? 1 : mode == 3 ? 2 : 1;

			assert_true(vw_prom_piece_set(&heads[p], proc_labels, 3, v));
			assert_true(vw_prom_piece_set_from(&tails[p][z], proc_labels, from,
							   mode == 4 ? 1 : 4 - from, v));
		}
	for (int f = 0; f < 3; f++) {
		assert_int_equal(vw_prom_family(w, f == 0 ? &fam_proc_j : f == 1 ? &fam_proc_w
								     : &fam_other_w), 0);
		for (size_t p = 0; p < 2; p++)
			for (size_t z = 0; z < 2; z++) {
				const char *v[] = {procs[p][0], procs[p][1], procs[p][2], zones[z],
						   NULL};
				const struct vw_prom_piece *hd =
					mode == 1 || mode == 3 || mode == 4 ? &heads[p] : NULL;
				const struct vw_prom_piece *tl = mode ? &tails[p][z] : NULL;

				if (f == 0)
					assert_int_equal(vw_prom_counter_micro_pieces(
								 w, hd, tl, v, 1500000 * (p + 1)),
							 0);
				else if (f == 1)
					assert_int_equal(vw_prom_gauge_pieces(w, hd, tl, v,
									      0.25 * (z + 1)),
							 0);
				else
					assert_int_equal(vw_prom_gauge_pieces(w, hd, tl, v, 3), 0);
			}
		assert_int_equal(vw_prom_family_end(w), 0);
	}
	assert_int_equal(vw_prom_family(w, &(struct vw_metric_family){
				"t_proc_total", VW_METRIC_COUNTER, "Count.", NULL, proc_labels}),
			 0);
	for (size_t p = 0; p < 2; p++) {
		const char *v[] = {procs[p][0], procs[p][1], procs[p][2], zones[1], NULL};

		assert_int_equal(vw_prom_counter_pieces(w, mode == 1 ? &heads[p] : NULL,
							mode ? &tails[p][1] : NULL, v, 7.5),
				 0);
	}
	assert_int_equal(vw_prom_finish(w, &buf, NULL), 0);
	vw_prom_writer_free(w);
	return buf;
}

/* A series' last labels escaped once (a tail), with a head or without, write the very bytes
 * escaping them each sample does, in both formats; a tail that overlaps the head, does not end
 * the series or was made for another label array is not used. */
static void test_label_tails(void **state)
{
	static const enum vw_prom_format fmts[] = {VW_PROM_TEXT_0_0_4, VW_PROM_OPENMETRICS_1_0_0};
	struct vw_prom_piece pc;
	const char *v[] = {"7", "x", "y", "z\"", NULL};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(fmts); i++) {
		_cleanup_free_ char *plain = render_tails(fmts[i], 0);

		for (int mode = 1; mode <= 4; mode++) {
			_cleanup_free_ char *text = render_tails(fmts[i], mode);

			assert_string_equal(text, plain);
		}
		assert_non_null(strstr(plain, "{pid=\"42\",comm=\"we\\\"ird\\\\\","
					      "exe=\"/bin/\xef\xbf\xbd x\",zone=\"dr am\"} 0.5\n"));
	}
	assert_true(vw_prom_piece_set_from(&pc, proc_labels, 2, 2, v));
	assert_int_equal(pc.from, 2);
	assert_int_equal(pc.len, strlen(",exe=\"y\",zone=\"z\\\"\""));
	assert_memory_equal(pc.text, ",exe=\"y\",zone=\"z\\\"\"", pc.len);
	/* Past the labels, or a value missing: no tail. */
	assert_false(vw_prom_piece_set_from(&pc, proc_labels, 3, 2, v));
	assert_null(pc.labels);
	assert_false(vw_prom_piece_set_from(&pc, proc_labels, 6, 1, v));
	assert_false(vw_prom_piece_set_from(&pc, proc_labels, 1, 3,
					    (const char *[]){"7", "x", NULL}));
}

/* A head less one label (vw_prom_piece_without) is, byte for byte, the head made for the
 * family without it from the same values (odd values escaped once, never again); labels that
 * are not the head's less that one, a tail or a k past its labels give none. A piece as another
 * family's (vw_prom_piece_as): the same text where the names match, a head stays a head. */
static void test_piece_without(void **state)
{
	static const char *const five[] = {"pid", "comm", "state", "exe", "zone", NULL};
	static const char *const odd[] = {"4\"2", "we\"ird\\", "run\nning", "/bin/\xff\x01x",
					  "caf\xc3\xa9", NULL};
	struct vw_prom_piece src, got, want;

	(void)state;
	assert_true(vw_prom_piece_set(&src, five, 5, odd));
	for (size_t k = 0; k < 5; k++) {
		const char *labels[5], *values[5];
		size_t n = 0;

		for (size_t i = 0; i < 5; i++)
			if (i != k)
				labels[n] = five[i], values[n++] = odd[i];
		labels[n] = values[n] = NULL;
		assert_true(vw_prom_piece_without(&got, &src, labels, k));
		assert_true(vw_prom_piece_set(&want, labels, 4, values));
		assert_int_equal(got.n, 4);
		assert_int_equal(got.from, 0);
		assert_ptr_equal(got.labels, labels);
		assert_int_equal(got.len, want.len);
		assert_memory_equal(got.text, want.text, want.len);
		assert_memory_equal(got.ends, want.ends, 4 * sizeof(want.ends[0]));
		/* and again from it: less its first label */
		assert_true(vw_prom_piece_without(&want, &got, labels + 1, 0));
		assert_int_equal(want.text[0], '{');
	}
	/* labels that are not the head's less label 2 */
	assert_false(vw_prom_piece_without(&got, &src,
					   (const char *[]){"pid", "comm", "exe", "state", NULL}, 2));
	assert_null(got.labels);
	assert_false(vw_prom_piece_without(&got, &src, five, 5)); /* past its labels */
	/* As another family's: a head as a head, a tail as a tail where the names match. */
	assert_true(vw_prom_piece_as(&got, &src,
				     (const char *[]){"pid", "comm", "state", "exe", "zone", "x", NULL},
				     0));
	assert_int_equal(got.len, src.len);
	assert_memory_equal(got.text, src.text, src.len);
	assert_false(vw_prom_piece_as(&got, &src, (const char *[]){"pid", "comm", NULL}, 0));
	assert_false(vw_prom_piece_as(&got, &src,
				      (const char *[]){"x", "pid", "comm", "state", "exe", "zone",
						       NULL},
				      1));
	assert_true(vw_prom_piece_set_from(&want, five, 3, 2, odd));
	assert_true(vw_prom_piece_as(&got, &want, (const char *[]){"a", "exe", "zone", NULL}, 1));
	assert_int_equal(got.from, 1);
	assert_memory_equal(got.text, want.text, want.len);
	assert_false(vw_prom_piece_as(&got, &want, (const char *[]){"exe", "zone", NULL}, 0));
	assert_true(vw_prom_piece_set_from(&src, five, 2, 3, odd));
	assert_false(vw_prom_piece_without(&got, &src, five, 0)); /* a tail */
}

/* Families of a trusted table (checked once) start as checked ones do: the same text, a
 * repeated name still refused; a table with a bad family is not trusted and its families are
 * refused as before. */
static const struct vw_metric_family trust_ok[] = {
	{ "t_trust_joules_total", VW_METRIC_COUNTER, "Joules \"q\" \\ of\nit.", "joules",
	  proc_labels },
	{ "t_trust_watts", VW_METRIC_GAUGE, "Watts.", "watts", NULL },
};
static const struct vw_family_table trust_ok_table = { "t", "t", NULL, trust_ok, 2 };
static const char *const dup_labels[] = {"a", "b", "a", NULL};
static const struct vw_metric_family trust_bad[] = {
	{ "t_fine_watts", VW_METRIC_GAUGE, "Watts.", "watts", NULL },
	{ "t_dup_watts", VW_METRIC_GAUGE, "Watts.", "watts", dup_labels },
};
static const struct vw_family_table trust_bad_table = { "t", "t", NULL, trust_bad, 2 };

static char *render_trust(enum vw_prom_format fmt)
{
	const char *v[] = {"1", "x\"", "y", "z", NULL};
	struct vw_prom_writer *w = vw_prom_writer_new(fmt, 0);
	char *buf = NULL;

	assert_non_null(w);
	assert_int_equal(vw_prom_family(w, &trust_ok[0]), 0);
	assert_int_equal(vw_prom_counter_micro(w, v, 1500000), 0);
	assert_int_equal(vw_prom_family(w, &trust_ok[1]), 0);
	assert_int_equal(vw_prom_gauge(w, NULL, 0.5), 0);
	assert_int_equal(vw_prom_family(w, &trust_ok[0]), -EEXIST);
	assert_int_equal(vw_prom_family(w, &trust_bad[1]), -EINVAL);
	assert_int_equal(vw_prom_finish(w, &buf, NULL), 0);
	vw_prom_writer_free(w);
	return buf;
}

static void test_table_trust(void **state)
{
	static const enum vw_prom_format fmts[] = {VW_PROM_TEXT_0_0_4, VW_PROM_OPENMETRICS_1_0_0};
	char *before[2];

	(void)state;
	for (size_t i = 0; i < 2; i++)
		before[i] = render_trust(fmts[i]);
	assert_int_equal(vw_prom_table_trust(&trust_bad_table), -EINVAL);
	assert_int_equal(vw_prom_table_trust(&trust_ok_table), 0);
	assert_int_equal(vw_prom_table_trust(&trust_ok_table), 0); /* again: nothing more */
	for (size_t i = 0; i < 2; i++) {
		_cleanup_free_ char *after = render_trust(fmts[i]);

		assert_string_equal(after, before[i]);
		free(before[i]);
	}
	assert_int_equal(vw_prom_table_trust(NULL), -EINVAL);
}

/* The text of one gauge sample of value v (milli: through vw_prom_gauge_milli_pieces). */
static void gauge_text(bool milli, uint64_t ms, char *out, size_t size)
{
	static const struct vw_metric_family fam = { "t_gauge_seconds", VW_METRIC_GAUGE, "S.",
						     NULL, NULL };
	struct vw_prom_writer *w = vw_prom_writer_new(VW_PROM_TEXT_0_0_4, 0);
	char *buf = NULL;

	assert_non_null(w);
	assert_int_equal(vw_prom_family(w, &fam), 0);
	if (milli)
		assert_int_equal(vw_prom_gauge_milli_pieces(w, NULL, NULL, NULL, ms), 0);
	else
		assert_int_equal(vw_prom_gauge(w, NULL, (double)ms / 1e3), 0);
	assert_int_equal(vw_prom_finish(w, &buf, NULL), 0);
	vw_prom_writer_free(w);
	snprintf(out, size, "%s", strstr(buf, "t_gauge_seconds "));
	free(buf);
}

/* A gauge of milli-units writes what the gauge of its double (ms / 1e3) does: at the edges of
 * its digits, around the integers, at Unix times in ms, and at random up to 1e17. */
static void test_gauge_milli(void **state)
{
	static const uint64_t edges[] = { 0, 1, 5, 9, 10, 99, 100, 999, 1000, 1001, 1010, 1100,
					  123456, 1764290000000, 1764290000001, 1764290000120,
					  1764290000123, 999999999999999, 1000000000000000,
					  1000000000000001, 12345678901234567, UINT64_MAX / 1000 };
	uint64_t x = 88172645463325252ull;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(edges) + 30000; i++) {
		char a[128], b[128];
		uint64_t ms;

		if (i < ARRAY_SIZE(edges)) {
			ms = edges[i];
		} else {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
			ms = x % (i % 3 == 0 ? 100000000000000000ull : i % 3 == 1 ? 2000000000000ull
										 : 1000000ull);
		}
		gauge_text(true, ms, a, sizeof(a));
		gauge_text(false, ms, b, sizeof(b));
		if (strcmp(a, b) != 0)
			fail_msg("%" PRIu64 " ms: %s against %s", ms, a, b);
	}
}

static void test_counter_values(void **state)
{
	int r;

	(void)state;
	assert_string_equal(value_text(true, 0, 3.25, &r), "3.25");
	assert_int_equal(r, 0);
	assert_string_equal(value_text(true, 0, -0.0, &r), "0");
	assert_int_equal(r, 0);
	/* rejected: nothing but the header was written, so the last line is the TYPE line */
	assert_string_equal(value_text(true, 0, NAN, &r), "TYPE virtwatt_cpu_time_total counter");
	assert_int_equal(r, -EINVAL);
	value_text(true, 0, -1e-9, &r);
	assert_int_equal(r, -EINVAL);
	value_text(true, 0, INFINITY, &r);
	assert_int_equal(r, -EINVAL);
	value_text(true, 0, -INFINITY, &r);
	assert_int_equal(r, -EINVAL);
}

/* ---- Bounded buffer ---- */

static const struct vw_metric_family fam_many = {
	"virtwatt_many_watts", VW_METRIC_GAUGE, "Many.", NULL, case_labels
};

/* fam_up at 1 as text: what a writer holds when a family does not fit after it. */
static const char up_text[] = "# HELP virtwatt_up Whether the last read \"worked\".\n"
			      "# TYPE virtwatt_up gauge\n"
			      "virtwatt_up 1\n";

/* A text writer with room for up_text and 200 bytes more, up_text written. */
static struct vw_prom_writer *writer_with_up(bool drop_oversize)
{
	struct vw_prom_writer *w = vw_prom_writer_new(VW_PROM_TEXT_0_0_4, strlen(up_text) + 200);

	assert_non_null(w);
	if (drop_oversize)
		vw_prom_writer_drop_oversize(w);
	assert_int_equal(vw_prom_family(w, &fam_up), 0);
	assert_int_equal(vw_prom_gauge(w, NULL, 1), 0);
	assert_int_equal(vw_prom_family_end(w), 0);
	return w;
}

/* Finish and free w: up_text, then fam_cpu at 7; the family that did not fit left nothing. */
static void finish_up_then_cpu(struct vw_prom_writer *w)
{
	_cleanup_free_ char *out = NULL;
	size_t len;

	assert_int_equal(vw_prom_finish(w, &out, &len), 0);
	assert_true(len <= strlen(up_text) + 200);
	assert_int_equal(strncmp(out, up_text, strlen(up_text)), 0);
	assert_string_equal(out + strlen(up_text), "# HELP virtwatt_cpu_time_total CPU time.\n"
						   "# TYPE virtwatt_cpu_time_total counter\n"
						   "virtwatt_cpu_time_total 7\n");
	vw_prom_writer_free(w);
}

static void test_rollback(void **state)
{
	struct vw_prom_writer *w = writer_with_up(false);
	int r = 0, i;

	(void)state;
	/* This family does not fit: every sample from the overflow on fails, end reports it. */
	assert_int_equal(vw_prom_family(w, &fam_many), 0);
	for (i = 0; i < 100 && r == 0; i++)
		r = vw_prom_gauge(w, (const char *[]){"x", NULL}, i);
	assert_int_equal(r, -ENOBUFS);
	assert_true(i > 1);
	assert_int_equal(vw_prom_gauge(w, (const char *[]){"x", NULL}, 1), -ENOBUFS);
	assert_int_equal(vw_prom_family_end(w), -ENOBUFS);
	/* The writer is still usable; a rolled-back name stays taken. */
	assert_int_equal(vw_prom_family(w, &fam_many), -EEXIST);
	assert_int_equal(vw_prom_family(w, &fam_cpu), 0);
	assert_int_equal(vw_prom_counter(w, NULL, 7), 0);
	assert_int_equal(vw_prom_family_end(w), 0);
	finish_up_then_cpu(w);
}

static void test_rollback_header_and_eof(void **state)
{
	static const char up_om[] = "# TYPE virtwatt_up gauge\n"
				    "# HELP virtwatt_up Whether the last read \\\"worked\\\".\n"
				    "virtwatt_up 1\n";
	/* Exactly enough for one family and the trailer. */
	struct vw_prom_writer *w = vw_prom_writer_new(VW_PROM_OPENMETRICS_1_0_0,
						      strlen(up_om) + strlen("# EOF\n"));
	_cleanup_free_ char *out = NULL;
	size_t len;

	(void)state;
	assert_int_equal(vw_prom_family(w, &fam_up), 0);
	assert_int_equal(vw_prom_gauge(w, NULL, 1), 0);
	/* the next header does not fit at all */
	assert_int_equal(vw_prom_family(w, &fam_cpu), -ENOBUFS);
	assert_int_equal(vw_prom_counter(w, NULL, 1), -ENOBUFS);
	assert_int_equal(vw_prom_family_end(w), -ENOBUFS);
	assert_int_equal(vw_prom_finish(w, &out, &len), 0);
	assert_int_equal(len, strlen(up_om) + strlen("# EOF\n"));
	assert_int_equal(strncmp(out, up_om, strlen(up_om)), 0);
	assert_string_equal(out + strlen(up_om), "# EOF\n");
	vw_prom_writer_free(w);
}

/*
 * The cap at every byte: a family whose label values are long and need escaping is written
 * whole or not at all, and the output never passes the cap, wherever in a label, a value or
 * the line's end the cap falls.
 */
static void test_cap_every_byte(void **state)
{
	char value[300];
	const char *v[] = { value, NULL };
	size_t full = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(value) - 1; i++)
		value[i] = i % 7 == 0 ? '"' : i % 11 == 0 ? '\\' : (char)('a' + i % 26);
	value[sizeof(value) - 1] = '\0';
	for (size_t max = 7; full == 0 || max <= full + 1; max++) {
		struct vw_prom_writer *w = vw_prom_writer_new(VW_PROM_OPENMETRICS_1_0_0, max);
		_cleanup_free_ char *out = NULL;
		size_t len;
		int r;

		assert_non_null(w);
		r = vw_prom_family(w, &fam_many);
		for (int k = 0; r == 0 && k < 3; k++)
			r = vw_prom_gauge(w, v, k);
		if (r == 0)
			r = vw_prom_family_end(w);
		assert_int_equal(vw_prom_finish(w, &out, &len), 0);
		vw_prom_writer_free(w);
		assert_true(len <= max);
		if (r == 0) {
			if (full == 0)
				full = len; /* the first cap it fits in is its length */
			assert_int_equal(len, full);
			assert_non_null(strstr(out, "\nvirtwatt_many_watts{case=\"\\\"bcdefg\\\"ijk"));
		} else {
			assert_int_equal(r, -ENOBUFS);
			assert_string_equal(out, "# EOF\n");
		}
	}
	assert_true(full > 3 * sizeof(value));
}

/* Drop-oversize mode: the overflowing family is left out whole, reported, and the next one fits. */
static void test_drop_oversize(void **state)
{
	struct vw_prom_writer *w = writer_with_up(true);

	(void)state;
	assert_int_equal(vw_prom_family(w, &fam_many), 0);
	for (int i = 0; i < 100; i++) /* every sample "succeeds": the renderer carries on */
		assert_int_equal(vw_prom_gauge(w, (const char *[]){"x", NULL}, i), 0);
	assert_int_equal(vw_prom_family_end(w), 0);
	/* Usage errors are still errors. */
	assert_int_equal(vw_prom_family(w, &fam_many), -EEXIST);
	assert_int_equal(vw_prom_family(w, &fam_cpu), 0);
	assert_int_equal(vw_prom_gauge(w, NULL, 1), -EINVAL);
	assert_int_equal(vw_prom_counter(w, NULL, 7), 0);
	assert_int_equal(vw_prom_family_end(w), 0);
	assert_ptr_equal(vw_prom_writer_dropped(w, 0), &fam_many);
	assert_null(vw_prom_writer_dropped(w, 1));
	finish_up_then_cpu(w);
}

/* A family dropped from both renderings of a snapshot counts once; tables render by name. */
static void test_selfstats(void **state)
{
	struct vw_selfstats *st = vw_selfstats_new();
	struct vw_table_stat t[VW_TABLE__COUNT] = {
		[VW_TABLE_CONTAINER] = { .present = true, .entries = 4, .evictions = 9 },
	};
	_cleanup_free_ char *out = NULL;
	struct vw_prom_writer *w;

	(void)state;
	assert_non_null(st);
	for (uint64_t seq = 1; seq <= 2; seq++)
		for (int fmt = 0; fmt < 2; fmt++) {
			w = vw_prom_writer_new(fmt ? VW_PROM_OPENMETRICS_1_0_0 : VW_PROM_TEXT_0_0_4, 100);
			vw_prom_writer_drop_oversize(w);
			assert_int_equal(vw_prom_family(w, &fam_many), 0);
			for (int i = 0; i < 10; i++)
				assert_int_equal(vw_prom_gauge(w, (const char *[]){"x", NULL}, i), 0);
			vw_selfstats_note_dropped(st, w, seq, 100);
			vw_prom_writer_free(w);
		}
	assert_int_equal(vw_selfstats_dropped(st, "virtwatt_many_watts"), 2);
	assert_int_equal(vw_selfstats_dropped(st, "virtwatt_up"), 0);
	w = vw_prom_writer_new(VW_PROM_TEXT_0_0_4, 0);
	assert_int_equal(vw_selfstats_render(st, w, t, "n"), 0);
	assert_int_equal(vw_prom_finish(w, &out, NULL), 0);
	vw_prom_writer_free(w);
	assert_non_null(strstr(out, "\nvirtwatt_table_entries{table=\"container\",node_name=\"n\"} 4\n"));
	assert_non_null(strstr(out, "\nvirtwatt_table_evictions_total{table=\"container\",node_name=\"n\"} 9\n"));
	assert_null(strstr(out, "table=\"pod\""));
	assert_non_null(strstr(out, "\nvirtwatt_exposition_families_dropped_total{family=\"virtwatt_many_watts\","
				    "node_name=\"n\"} 2\n"));
	vw_selfstats_free(st);
}

/* One snapshot: 200 samples of many, then the self-stats; the room held back or not. */
static char *render_many_then_selfstats(size_t max, bool hold, size_t *ret_len)
{
	struct vw_table_stat t[VW_TABLE__COUNT] = {
		[VW_TABLE_PROCESS] = { .present = true, .entries = 3, .evictions = 0 },
	};
	struct vw_selfstats *st = vw_selfstats_new();
	struct vw_prom_writer *w = vw_prom_writer_new(VW_PROM_TEXT_0_0_4, max);
	char *out = NULL;

	vw_prom_writer_drop_oversize(w);
	if (hold)
		vw_selfstats_hold_room(w, max);
	assert_int_equal(vw_prom_family(w, &fam_many), 0);
	for (int i = 0; i < 200; i++)
		assert_int_equal(vw_prom_gauge(w, (const char *[]){"x", NULL}, i), 0);
	assert_int_equal(vw_prom_family_end(w), 0);
	assert_int_equal(vw_selfstats_write(st, w, t, "n", 1, max), 0);
	assert_int_equal(vw_prom_finish(w, &out, ret_len), 0);
	vw_prom_writer_free(w);
	vw_selfstats_free(st);
	return out;
}

/*
 * A family that fits the cap with a few bytes to spare leaves no room for the counter that
 * reports a drop: the room the self-stats hold back is theirs alone, so the report is served.
 */
static void test_selfstats_room_held(void **state)
{
	static const char report[] = "\nvirtwatt_exposition_families_dropped_total{family="
				     "\"virtwatt_many_watts\",node_name=\"n\"} 1\n";
	_cleanup_free_ char *alone = NULL, *held = NULL, *not_held = NULL;
	size_t len, max;

	(void)state;
	alone = render_many_then_selfstats(0, false, &len);
	/* The family and 300 bytes: less than the self-stats need, less than they hold back. */
	max = (size_t)(strstr(alone, "# HELP virtwatt_table_entries") - alone) + 300;
	held = render_many_then_selfstats(max, true, &len);
	assert_true(len <= max);
	assert_null(strstr(held, "\nvirtwatt_many_watts{"));
	assert_non_null(strstr(held, report));
	assert_non_null(strstr(held, "\nvirtwatt_table_entries{table=\"process\",node_name=\"n\"} 3\n"));
	/* The same snapshot without the room: the family is served, self-stats are lost. */
	not_held = render_many_then_selfstats(max, false, &len);
	assert_true(len <= max);
	assert_non_null(strstr(not_held, "\nvirtwatt_many_watts{"));
	assert_null(strstr(not_held, "virtwatt_table_evictions_total"));
}

/* ---- Usage rules ---- */

static int family_named(const char *name, enum vw_metric_type type, const char *const *labels,
			const char *help)
{
	struct vw_metric_family f = {.name = name, .type = type, .help = help, .labels = labels};
	struct vw_prom_writer *w = vw_prom_writer_new(VW_PROM_TEXT_0_0_4, 0);
	int r = vw_prom_family(w, &f);

	vw_prom_writer_free(w);
	return r;
}

static void test_name_rules(void **state)
{
	static const char *const bad_labels[][4] = {
		{"__name__", NULL}, {"_x", NULL}, {"a b", NULL}, {"1a", NULL}, {"a:b", NULL},
		{"", NULL},	    {"zone", "zone", NULL}, {"a", "bb", "a", NULL},
		{"bb", "ab", "bb", NULL}, {"zone", "a", "b:c", NULL},
	};
	const char *many[42];
	char many_names[41][8];
	static const char *const bad_names[] = {"", "1abc", "a-b", "a:b", "_x", "__x", "a b",
						"a\xc3\xa9"};

	(void)state;
	assert_int_equal(family_named("ok_watts", VW_METRIC_GAUGE, NULL, "h"), 0);
	assert_int_equal(family_named("Ok_Watts2", VW_METRIC_GAUGE, zone_labels, "h"), 0);
	for (size_t i = 0; i < ARRAY_SIZE(bad_names); i++)
		assert_int_equal(family_named(bad_names[i], VW_METRIC_GAUGE, NULL, "h"), -EINVAL);
	assert_int_equal(family_named(NULL, VW_METRIC_GAUGE, NULL, "h"), -EINVAL);
	for (size_t i = 0; i < ARRAY_SIZE(bad_labels); i++)
		assert_int_equal(family_named("ok_watts", VW_METRIC_GAUGE, bad_labels[i], "h"),
				 -EINVAL);
	/* counters end in _total, gauges do not */
	assert_int_equal(family_named("x_joules", VW_METRIC_COUNTER, NULL, "h"), -EINVAL);
	assert_int_equal(family_named("_total", VW_METRIC_COUNTER, NULL, "h"), -EINVAL);
	assert_int_equal(family_named("x_total", VW_METRIC_GAUGE, NULL, "h"), -EINVAL);
	assert_int_equal(family_named("x", (enum vw_metric_type)9, NULL, "h"), -EINVAL);
	/* help: present, valid UTF-8, no control bytes but LF */
	assert_int_equal(family_named("x", VW_METRIC_GAUGE, NULL, NULL), -EINVAL);
	assert_int_equal(family_named("x", VW_METRIC_GAUGE, NULL, ""), -EINVAL);
	assert_int_equal(family_named("x", VW_METRIC_GAUGE, NULL, "a\rb"), -EINVAL);
	assert_int_equal(family_named("x", VW_METRIC_GAUGE, NULL, "a\xff"), -EINVAL);
	assert_int_equal(family_named("x", VW_METRIC_GAUGE, NULL, "two\nlines \xc3\xa9"), 0);
	/* more labels than the writer keeps lengths of (32): each still checked */
	for (size_t i = 0; i < 41; i++) {
		snprintf(many_names[i], sizeof(many_names[i]), "l%zu", i);
		many[i] = many_names[i];
	}
	many[41] = NULL;
	assert_int_equal(family_named("x", VW_METRIC_GAUGE, many, "h"), 0);
	many[40] = "l35"; /* a repeat past the 32nd */
	assert_int_equal(family_named("x", VW_METRIC_GAUGE, many, "h"), -EINVAL);
	many[40] = "l3"; /* of one of the first */
	assert_int_equal(family_named("x", VW_METRIC_GAUGE, many, "h"), -EINVAL);
	many[40] = "l:0";
	assert_int_equal(family_named("x", VW_METRIC_GAUGE, many, "h"), -EINVAL);
}

/* Family names remembered past the writer's first buffer of them and its first hash: each
 * one still refused a second time, the output whole. */
static void test_many_families(void **state)
{
	enum { N = 600 };
	static char names[N][48];
	static struct vw_metric_family fams[N];
	struct vw_prom_writer *w = vw_prom_writer_new(VW_PROM_TEXT_0_0_4, 0);
	_cleanup_free_ char *out = NULL;
	size_t len = 0, lines = 0;

	(void)state;
	for (int i = 0; i < N; i++) {
		snprintf(names[i], sizeof(names[i]), "virtwatt_family_number_%d_watts", i);
		fams[i] = (struct vw_metric_family){.name = names[i], .type = VW_METRIC_GAUGE,
						    .help = "h", .labels = zone_labels};
		assert_int_equal(vw_prom_family(w, &fams[i]), 0);
		assert_int_equal(vw_prom_gauge(w, (const char *[]){"package", NULL}, i), 0);
	}
	for (int i = 0; i < N; i += 7)
		assert_int_equal(vw_prom_family(w, &fams[i]), -EEXIST);
	assert_int_equal(vw_prom_finish(w, &out, &len), 0);
	for (size_t i = 0; i < len; i++)
		lines += out[i] == '\n';
	assert_int_equal(lines, 3 * N);
	assert_non_null(strstr(out, "# HELP virtwatt_family_number_599_watts h\n"
				    "# TYPE virtwatt_family_number_599_watts gauge\n"
				    "virtwatt_family_number_599_watts{zone=\"package\"} 599\n"));
	vw_prom_writer_free(w);
}

static void test_order_rules(void **state)
{
	struct vw_prom_writer *w = vw_prom_writer_new(VW_PROM_TEXT_0_0_4, 0);
	_cleanup_free_ char *out = NULL;

	(void)state;
	/* no family open */
	assert_int_equal(vw_prom_gauge(w, NULL, 1), -EINVAL);
	assert_int_equal(vw_prom_counter_micro(w, NULL, 1), -EINVAL);
	assert_int_equal(vw_prom_family_end(w), -EINVAL);
	assert_int_equal(vw_prom_family(w, NULL), -EINVAL);
	assert_int_equal(vw_prom_family(w, &fam_power), 0);
	/* label count: missing, extra, NULL array; an empty value is allowed (= absent) */
	assert_int_equal(vw_prom_gauge(w, (const char *[]){"u", NULL}, 1), -EINVAL);
	assert_int_equal(vw_prom_gauge(w, (const char *[]){"u", "n", "x", NULL}, 1), -EINVAL);
	assert_int_equal(vw_prom_gauge(w, NULL, 1), -EINVAL);
	assert_int_equal(vw_prom_gauge(w, (const char *[]){"", "", NULL}, 1), 0);
	/* counter sample in a gauge family */
	assert_int_equal(vw_prom_counter_micro(w, (const char *[]){"u", "n", NULL}, 1), -EINVAL);
	assert_int_equal(vw_prom_counter(w, (const char *[]){"u", "n", NULL}, 1), -EINVAL);
	assert_int_equal(vw_prom_gauge(w, (const char *[]){"u", "n", NULL}, 1), 0);
	/* starting the next family closes this one; a family once only */
	assert_int_equal(vw_prom_family(w, &fam_up), 0);
	assert_int_equal(vw_prom_gauge(w, (const char *[]){"extra", NULL}, 1), -EINVAL);
	assert_int_equal(vw_prom_family(w, &fam_power), -EEXIST);
	assert_int_equal(vw_prom_family(w, &fam_up), -EEXIST);
	assert_int_equal(vw_prom_gauge(w, NULL, 3), 0);
	assert_int_equal(vw_prom_family_end(w), 0);
	assert_int_equal(vw_prom_finish(w, &out, NULL), 0);
	assert_string_equal(out, "# HELP virtwatt_vm_power_watts Power drawn by a VM.\\nEstimated; see "
				 "\\\\docs.\n"
				 "# TYPE virtwatt_vm_power_watts gauge\n"
				 "virtwatt_vm_power_watts{uuid=\"\",name=\"\"} 1\n"
				 "virtwatt_vm_power_watts{uuid=\"u\",name=\"n\"} 1\n"
				 "# HELP virtwatt_up Whether the last read \"worked\".\n"
				 "# TYPE virtwatt_up gauge\n"
				 "virtwatt_up 3\n");
	vw_prom_writer_free(w);
	assert_int_equal(vw_prom_family(NULL, &fam_up), -EINVAL);
	assert_int_equal(vw_prom_finish(NULL, &out, NULL), -EINVAL);
}

/* ---- Negotiation ---- */

static void test_negotiate(void **state)
{
	static const struct {
		const char *accept;
		enum vw_prom_format want;
	} cases[] = {
		{NULL, VW_PROM_TEXT_0_0_4},
		{"", VW_PROM_TEXT_0_0_4},
		{"*/*", VW_PROM_TEXT_0_0_4},
		{"text/plain", VW_PROM_TEXT_0_0_4},
		{"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", VW_PROM_TEXT_0_0_4},
		{"application/openmetrics-text", VW_PROM_OPENMETRICS_1_0_0},
		{"application/openmetrics-text; version=1.0.0; charset=utf-8", VW_PROM_OPENMETRICS_1_0_0},
		/* Prometheus 2.x */
		{"application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
		 "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
		 VW_PROM_OPENMETRICS_1_0_0},
		{"APPLICATION/OpenMetrics-Text;Version=1.0.0", VW_PROM_OPENMETRICS_1_0_0},
		{"application/openmetrics-text;version=\"1.0.0\"", VW_PROM_OPENMETRICS_1_0_0},
		{"application/openmetrics-text;version=0.0.1", VW_PROM_OPENMETRICS_0_0_1},
		{"application/openmetrics-text; version=0.0.1,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
		 VW_PROM_OPENMETRICS_0_0_1},
		{"application/openmetrics-text;version=0.0.1,application/openmetrics-text;version=1.0.0;q=0.5",
		 VW_PROM_OPENMETRICS_0_0_1},
		/* Prometheus 2.5x: 1.0.0 first, 0.0.1 as a fallback. */
		{"application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
		 "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1", VW_PROM_OPENMETRICS_1_0_0},
		{"application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=0.0.4;q=0.5",
		 VW_PROM_TEXT_0_0_4},
		/* Prometheus 3's default, and with scrape_protocols [PrometheusText1.0.0] or
		 * [PrometheusText0.0.4]. */
		{"application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,application/"
		 "openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;escaping=allow-utf-8;"
		 "q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2", VW_PROM_OPENMETRICS_1_0_0},
		{"text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,*/*;q=0.2", VW_PROM_TEXT_1_0_0},
		{"text/plain;version=0.0.4;q=0.3,*/*;q=0.2", VW_PROM_TEXT_0_0_4},
		{"text/plain;version=1.0.0;q=0.3,text/plain;version=0.0.4;q=0.3", VW_PROM_TEXT_0_0_4},
		{"text/plain;version=1.0.0", VW_PROM_TEXT_1_0_0},
		{"text/plain;version=2.0.0", VW_PROM_TEXT_0_0_4},
		{"application/openmetrics-text;version=2.0.0", VW_PROM_TEXT_0_0_4},
		{"application/openmetrics-text;q=0", VW_PROM_TEXT_0_0_4},
		{"application/openmetrics-text; q=0.000", VW_PROM_TEXT_0_0_4},
		{"application/openmetrics-text;q=0.001", VW_PROM_OPENMETRICS_1_0_0},
		{"application/openmetrics-text;q=abc", VW_PROM_TEXT_0_0_4},
		{"application/openmetrics-text;q=1.5", VW_PROM_TEXT_0_0_4},
		{"application/openmetrics-text;q=0.5555", VW_PROM_TEXT_0_0_4},
		{"application/openmetrics-text;q=", VW_PROM_TEXT_0_0_4},
		{"text/plain;q=1, application/openmetrics-text;q=0.5", VW_PROM_TEXT_0_0_4},
		{"application/openmetrics-text;q=0.5, text/plain;q=0.4", VW_PROM_OPENMETRICS_1_0_0},
		{"text/plain;version=0.0.4;q=0.9,application/openmetrics-text;q=0.9",
		 VW_PROM_OPENMETRICS_1_0_0},
		{"application/openmetrics-text;q=0.3 , */*;q=0.2", VW_PROM_OPENMETRICS_1_0_0},
		{"application/openmetrics-text;q=0.3, text/*", VW_PROM_TEXT_0_0_4},
		{"application/openmetrics-text;q=0.3, text/plain;version=9;q=1", VW_PROM_OPENMETRICS_1_0_0},
		{"application/openmetrics-textx", VW_PROM_TEXT_0_0_4},
		{"application/*", VW_PROM_TEXT_0_0_4},
		{" , ,application/openmetrics-text", VW_PROM_OPENMETRICS_1_0_0},
		{"application/openmetrics-text;foo=\"a,b;q=0\"", VW_PROM_OPENMETRICS_1_0_0},
		{"garbage;;;=,,=;q", VW_PROM_TEXT_0_0_4},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		if (vw_prom_negotiate(cases[i].accept) != cases[i].want)
			fail_msg("Accept: %s: expected %s", cases[i].accept ? cases[i].accept : "(null)",
				 vw_prom_content_type(cases[i].want));
	}
	assert_string_equal(vw_prom_content_type(VW_PROM_TEXT_0_0_4),
			    "text/plain; version=0.0.4; charset=utf-8");
	assert_string_equal(vw_prom_content_type(VW_PROM_OPENMETRICS_1_0_0),
			    "application/openmetrics-text; version=1.0.0; charset=utf-8");
	assert_string_equal(vw_prom_content_type(VW_PROM_OPENMETRICS_0_0_1),
			    "application/openmetrics-text; version=0.0.1; charset=utf-8");
	assert_string_equal(vw_prom_content_type(VW_PROM_TEXT_1_0_0),
			    "text/plain; version=1.0.0; charset=utf-8; escaping=underscores");
}

/* A filter that records what it sees and adds 1 to the dram series (micro-units: 1e-6). */
struct seen {
	char keys[4][128];
	uint64_t micro[4];
	size_t n;
};

static int add_to_dram(void *ctx, const char *key, size_t len, uint64_t micro, uint64_t *ret)
{
	struct seen *s = ctx;

	assert_true(s->n < 4 && len < sizeof(s->keys[0]));
	memcpy(s->keys[s->n], key, len);
	s->micro[s->n++] = micro;
	if (!memmem(key, len, "dram", 4))
		return 0;
	*ret = micro + 1000000;
	return 1;
}

static int fail_filter(void *ctx, const char *key, size_t len, uint64_t micro, uint64_t *ret)
{
	(void)ctx, (void)key, (void)len, (void)micro, (void)ret;
	return -ENOMEM;
}

/* Counters pass through the filter with their text-format key, in both formats; gauges do
 * not; a filter error rolls the family back. */
static void test_counter_filter(void **state)
{
	for (int om = 0; om <= 1; om++) {
		struct vw_prom_writer *w =
			vw_prom_writer_new(om ? VW_PROM_OPENMETRICS_1_0_0 : VW_PROM_TEXT_0_0_4, 0);
		struct seen seen = { 0 };
		_cleanup_free_ char *buf = NULL;
		size_t len;

		(void)state;
		assert_non_null(w);
		vw_prom_writer_filter_counters(w, add_to_dram, &seen);
		assert_int_equal(vw_prom_family(w, &fam_energy), 0);
		assert_int_equal(vw_prom_counter_micro(w, (const char *[]){ "package", NULL }, 2500000),
				 0);
		assert_int_equal(vw_prom_counter(w, (const char *[]){ "dram", NULL }, 0.25), 0);
		assert_int_equal(vw_prom_family(w, &fam_power), 0);
		assert_int_equal(vw_prom_gauge(w, (const char *[]){ "6f1c", "dram", NULL }, 3), 0);
		assert_int_equal(vw_prom_family(w, &fam_cpu), 0);
		vw_prom_writer_filter_counters(w, fail_filter, NULL);
		assert_int_equal(vw_prom_counter(w, NULL, 1), -ENOMEM);
		assert_int_equal(vw_prom_finish(w, &buf, &len), 0);
		vw_prom_writer_free(w);
		assert_int_equal(seen.n, 2); /* the gauge is not a counter */
		assert_string_equal(seen.keys[0], "virtwatt_node_energy_joules_total{zone=\"package\"}");
		assert_int_equal(seen.micro[0], 2500000);
		assert_string_equal(seen.keys[1], "virtwatt_node_energy_joules_total{zone=\"dram\"}");
		assert_int_equal(seen.micro[1], 250000);
		assert_non_null(strstr(buf, "{zone=\"package\"} 2.5\n"));
		assert_non_null(strstr(buf, "{zone=\"dram\"} 1.25\n"));
		assert_non_null(strstr(buf, "virtwatt_vm_power_watts{uuid=\"6f1c\",name=\"dram\"} 3\n"));
		assert_null(strstr(buf, "virtwatt_cpu_time_total 1")); /* rolled back */
	}
}

/* ---- OpenMetrics derived from the text ---- */

/* The golden text's layout gives the golden OpenMetrics, byte for byte; only for that text. */
static void test_derive_golden(void **state)
{
	_cleanup_free_ char *text = NULL, *om = NULL;
	struct vw_prom_writer *w;
	size_t len, om_len = 0;

	(void)state;
	keep_golden = true;
	text = render_golden(VW_PROM_TEXT_0_0_4, &len);
	keep_golden = false;
	assert_string_equal(text, golden_text.expected);
	assert_non_null(golden_layout);
	assert_int_equal(vw_prom_openmetrics_derive(golden_layout, text, len, &om, &om_len), 0);
	assert_string_equal(om, golden_openmetrics.expected);
	assert_int_equal(om_len, strlen(golden_openmetrics.expected));
	free(VW_TAKE_PTR(om));
	assert_int_equal(vw_prom_openmetrics_derive(golden_layout, text, len - 1, &om, &om_len),
			 -EINVAL);
	assert_null(om);
	assert_int_equal(vw_prom_openmetrics_derive(NULL, text, len, &om, &om_len), -EINVAL);
	vw_prom_layout_free(golden_layout);
	golden_layout = NULL;

	/* Text writers only, before their first family; none kept: none taken. */
	w = vw_prom_writer_new(VW_PROM_OPENMETRICS_1_0_0, 0);
	assert_int_equal(vw_prom_writer_keep_layout(w), -EINVAL);
	vw_prom_writer_free(w);
	free(VW_TAKE_PTR(text));
	w = vw_prom_writer_new(VW_PROM_TEXT_0_0_4, 0);
	assert_int_equal(vw_prom_single(w, &fam_up, NULL, 1), 0);
	assert_int_equal(vw_prom_writer_keep_layout(w), -EINVAL);
	assert_int_equal(vw_prom_finish(w, &text, &len), 0);
	assert_null(vw_prom_writer_take_layout(w));
	vw_prom_writer_free(w);
	/* An empty rendering: an empty OpenMetrics one, "# EOF" alone. */
	free(VW_TAKE_PTR(text));
	w = vw_prom_writer_new(VW_PROM_TEXT_0_0_4, 0);
	assert_int_equal(vw_prom_writer_keep_layout(w), 0);
	assert_null(vw_prom_writer_take_layout(w)); /* not finished */
	assert_int_equal(vw_prom_finish(w, &text, &len), 0);
	golden_layout = vw_prom_writer_take_layout(w);
	vw_prom_writer_free(w);
	assert_non_null(golden_layout);
	assert_int_equal(vw_prom_openmetrics_derive(golden_layout, text, len, &om, &om_len), 0);
	assert_string_equal(om, "# EOF\n");
	vw_prom_layout_free(golden_layout);
	golden_layout = NULL;
}

static const struct vw_metric_family fam_quoted = {
	"virtwatt_quoted_seconds_total", VW_METRIC_COUNTER, "A \"quoted\" help,\nover \\ lines.",
	"seconds", case_labels
};
static const struct vw_metric_family fam_last = {
	"virtwatt_last_bytes", VW_METRIC_GAUGE, "Written last, after the room held back is released.",
	"bytes", NULL
};
static const struct vw_metric_family fam_plain = {
	"virtwatt_plain_events_total", VW_METRIC_COUNTER, "Events.", NULL, NULL
};

/* The renderings render_mixed() makes. */
enum shape {
	SHAPE_MIXED,    /* counters with and without UNIT, helps to escape, a family with no sample */
	SHAPE_GAUGES,   /* gauges only: every OpenMetrics header as long as the text's or longer */
	SHAPE_COUNTERS, /* counters without UNIT first: OpenMetrics headers shorter than the text's */
	SHAPE__COUNT,
};

/*
 * What a daemon renders: families dropped past the cap, room held back for the last family and
 * released before it. With ret_layout, the layout is taken into it.
 */
static char *render_mixed(enum vw_prom_format fmt, enum shape shape, size_t max, size_t hold,
			  struct vw_prom_layout **ret_layout, size_t *ret_len)
{
	struct vw_prom_writer *w = vw_prom_writer_new(fmt, max);
	char *out = NULL;

	assert_non_null(w);
	vw_prom_writer_drop_oversize(w);
	if (ret_layout)
		assert_int_equal(vw_prom_writer_keep_layout(w), 0);
	vw_prom_writer_hold_back(w, hold);
	if (shape == SHAPE_GAUGES) {
		assert_int_equal(vw_prom_family(w, &fam_power), 0);
		assert_int_equal(vw_prom_gauge(w, (const char *[]){"6f1c", "web", NULL}, 12.5), 0);
		assert_int_equal(vw_prom_single(w, &fam_up, NULL, 1), 0);
	} else if (shape == SHAPE_COUNTERS) {
		assert_int_equal(vw_prom_single(w, &fam_cpu, NULL, 3), 0);
		assert_int_equal(vw_prom_single(w, &fam_plain, NULL, 4), 0);
	}
	if (shape != SHAPE_MIXED) {
		assert_int_equal(vw_prom_family(w, &fam_many), 0);
		for (int i = 0; i < 8; i++)
			assert_int_equal(vw_prom_gauge(w, (const char *[]){"many", NULL}, i * 0.25), 0);
		assert_int_equal(vw_prom_family_end(w), 0);
		goto last;
	}
	assert_int_equal(vw_prom_family(w, &fam_energy), 0);
	assert_int_equal(vw_prom_counter_micro(w, (const char *[]){"package-0", NULL}, 1234567), 0);
	assert_int_equal(vw_prom_counter_micro(w, (const char *[]){"dram", NULL}, 5), 0);
	assert_int_equal(vw_prom_family(w, &fam_quoted), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(vw_prom_counter(w, (const char *[]){i ? "b" : "a\"\\", NULL}, i), 0);
	assert_int_equal(vw_prom_family(w, &fam_many), 0);
	for (int i = 0; i < 8; i++)
		assert_int_equal(vw_prom_gauge(w, (const char *[]){"many", NULL}, i * 0.25), 0);
	assert_int_equal(vw_prom_family(w, &fam_cpu), 0); /* no sample */
	assert_int_equal(vw_prom_family(w, &fam_up), 0);
	assert_int_equal(vw_prom_gauge(w, NULL, 1), 0);
	assert_int_equal(vw_prom_family(w, &fam_power), 0);
	assert_int_equal(vw_prom_gauge(w, (const char *[]){"6f1c", "web", NULL}, 12.5), 0);
	assert_int_equal(vw_prom_family_end(w), 0);
last:
	vw_prom_writer_hold_back(w, 0);
	assert_int_equal(vw_prom_single(w, &fam_last, NULL, 4096), 0);
	assert_int_equal(vw_prom_finish(w, &out, ret_len), 0);
	if (ret_layout)
		*ret_layout = vw_prom_writer_take_layout(w);
	vw_prom_writer_free(w);
	return out;
}

/*
 * At every cap from too small for anything to past the whole: where the text writer hands out
 * a layout, the OpenMetrics derived from it is exactly what an OpenMetrics writer of the same
 * cap writes for the same calls (the families each leaves out included); unbounded and with
 * room to spare, it always hands one out.
 */
static void test_derive_every_cap(void **state)
{
	static const size_t holds[] = { 0, 300 };
	size_t derived = 0, refused = 0;

	(void)state;
	for (size_t k = 0; k < SHAPE__COUNT * ARRAY_SIZE(holds); k++) {
		enum shape shape = (enum shape)(k / ARRAY_SIZE(holds));
		size_t hold = holds[k % ARRAY_SIZE(holds)];
		size_t full_len, text_full_len;
		_cleanup_free_ char *full = render_mixed(VW_PROM_OPENMETRICS_1_0_0, shape, 0, hold,
							 NULL, &full_len);
		_cleanup_free_ char *text_full = render_mixed(VW_PROM_TEXT_0_0_4, shape, 0, hold,
							      NULL, &text_full_len);

		for (size_t max = 0; max <= full_len + 400; max = max ? max + 1 : 6) {
			struct vw_prom_layout *l = NULL;
			size_t text_len, om_len, d_len;
			_cleanup_free_ char *text = render_mixed(VW_PROM_TEXT_0_0_4, shape, max,
								 hold, &l, &text_len);
			_cleanup_free_ char *om = render_mixed(VW_PROM_OPENMETRICS_1_0_0, shape, max,
							       hold, NULL, &om_len);
			_cleanup_free_ char *d = NULL;

			if (!l) {
				refused++;
				if (max == 0 || max >= VW_MAX(full_len, text_full_len) + 200 + hold)
					fail_msg("shape %d: no layout at max %zu (hold %zu)", shape, max,
						 hold);
				continue;
			}
			derived++;
			assert_int_equal(vw_prom_openmetrics_derive(l, text, text_len, &d, &d_len), 0);
			vw_prom_layout_free(l);
			if (d_len != om_len || strcmp(d, om) != 0)
				fail_msg("shape %d max %zu hold %zu: derived\n%s\nrendered\n%s", shape,
					 max, hold, d, om);
		}
	}
	print_message("# %zu caps derived, %zu refused (a second render)\n", derived, refused);
	assert_true(derived > 400 && refused > 400);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		vw_unit_test_case("test_golden_text", test_golden, NULL, NULL, &golden_text),
		vw_unit_test_case("test_golden_openmetrics", test_golden, NULL, NULL,
				  &golden_openmetrics),
		cmocka_unit_test(test_empty_output),
		cmocka_unit_test(test_label_escaping),
		cmocka_unit_test(test_label_invalid_utf8),
		cmocka_unit_test(test_label_cap),
		cmocka_unit_test(test_label_in_sample),
		cmocka_unit_test(test_micro_exact),
		cmocka_unit_test(test_double_values),
		cmocka_unit_test(test_double_format_matches_printf),
		cmocka_unit_test(test_label_pieces),
		cmocka_unit_test(test_counter_values),
		cmocka_unit_test(test_rollback),
		cmocka_unit_test(test_rollback_header_and_eof),
		cmocka_unit_test(test_cap_every_byte),
		cmocka_unit_test(test_drop_oversize),
		cmocka_unit_test(test_selfstats_room_held),
		cmocka_unit_test(test_selfstats),
		cmocka_unit_test(test_name_rules),
		cmocka_unit_test(test_order_rules),
		cmocka_unit_test(test_negotiate),
		cmocka_unit_test(test_counter_filter),
		cmocka_unit_test(test_expect),
		cmocka_unit_test(test_many_families),
		cmocka_unit_test(test_derive_golden),
		cmocka_unit_test(test_derive_every_cap),
		cmocka_unit_test(test_label_tails),
		cmocka_unit_test(test_piece_without),
		cmocka_unit_test(test_table_trust),
		cmocka_unit_test(test_gauge_milli),
	};

	if (!setlocale(LC_CTYPE, "C.UTF-8")) {
		fprintf(stderr, "C.UTF-8 locale missing\n");
		return 1;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
#include "vw_test.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "fixture.h"
#include "log.h"

/* A realistic table, shaped like Kepler's flags and config (anchors §1.5). */
struct test_cfg {
	char *config_file;
	char *listen_address;
	char *web_config_file;
	char *sysfs;
	char *procfs;
	uint64_t interval_ns;
	uint64_t staleness_ns;
	uint64_t max_terminated;
	bool pprof;
	bool exporter_stdout;
	bool exporter_prometheus;
	double idle_watts;
	struct vw_strlist sources;
	struct vw_strlist metrics;
	enum vw_log_level log_level;
	char *log_format;
	char *model_file;
};

static const char *const log_formats[] = { "text", "json", NULL };

#define F(field) offsetof(struct test_cfg, field)

static const struct vw_option test_opts[] = {
	{ VW_CONFIG_FILE_FLAG, NULL, VW_OPT_STRING, F(config_file), NULL, "PATH",
	  "Read settings from this YAML file." },
	{ "web.listen-address", "web.listenAddress", VW_OPT_STRING, F(listen_address), ":28282",
	  "ADDR", "Address and port of the /metrics endpoint." },
	{ "web.config-file", "web.configFile", VW_OPT_STRING, F(web_config_file), NULL, "PATH",
	  "TLS and basic authentication settings in the exporter-toolkit format." },
	{ "host.sysfs", "host.sysfs", VW_OPT_STRING, F(sysfs), "/sys", "PATH",
	  "Where the host's sysfs is mounted." },
	{ "host.procfs", "host.procfs", VW_OPT_STRING, F(procfs), "/proc", "PATH",
	  "Where the host's procfs is mounted." },
	{ "monitor.interval", "monitor.interval", VW_OPT_DURATION, F(interval_ns), "5s", NULL,
	  "How often energy is read and attributed to workloads.", 0.1, 3600 },
	{ "monitor.staleness", "monitor.staleness", VW_OPT_DURATION, F(staleness_ns), "500ms", NULL,
	  "A scrape finding results older than this recomputes them." },
	{ "monitor.max-terminated", "monitor.maxTerminated", VW_OPT_UINT, F(max_terminated), "500",
	  NULL, "Terminated workloads kept for export, highest energy first.", 0, 100000 },
	{ "debug.pprof", "debug.pprof", VW_OPT_BOOL, F(pprof), NULL, NULL,
	  "Serve profiling data." },
	{ "exporter.stdout", "exporter.stdout", VW_OPT_BOOL, F(exporter_stdout), "false", NULL,
	  "Print metrics to stdout." },
	{ "exporter.prometheus", "exporter.prometheus", VW_OPT_BOOL, F(exporter_prometheus), "true",
	  NULL, "Serve /metrics." },
	{ "power.idle-watts", "power.idleWatts", VW_OPT_DOUBLE, F(idle_watts), "0", "WATTS",
	  "Known idle power of the node, or 0 to derive it", 0, 10000 }, /* no full stop */
	{ "power.sources", "power.sources", VW_OPT_STRLIST, F(sources), "rapl,hwmon", "SOURCE",
	  "Power sources in order of preference." },
	{ "metrics", "metrics", VW_OPT_STRLIST, F(metrics), "node,process,container,vm,pod",
	  "LEVEL", "Metric levels to export." },
	{ "log.level", "log.level", VW_OPT_LOG_LEVEL, F(log_level), "info", NULL,
	  "Least severe messages logged." },
	{ "log.format", "log.format", VW_OPT_STRING, F(log_format), "text", "FORMAT",
	  "Log line format.", 0, 0, log_formats },
	{ "model.file", "model.file", VW_OPT_STRING, F(model_file), NULL, "PATH",
	  "Power model used when no power source is available." },
};

static const struct vw_config_program prog = {
	.name = "virtwatt-test",
	.version = "1.2.3",
	.summary = "Exports the power of this test to Prometheus. It reads nothing at all and "
		   "exists so that the option loader has a realistic table to chew on.",
	.opts = test_opts,
	.n_opts = ARRAY_SIZE(test_opts),
};

#define ERRLEN 1024
#define MAX_ARGS 32

/* Write text to the group's tmpdir/name; the path stays valid until the next call. */
static const char *yaml_file(const char *name, const char *text)
{
	static char path[4096];

	assert_int_equal(vw_fixture_write(vw_fixture_tmpdir, name, text, 0), 0);
	snprintf(path, sizeof(path), "%s/%s", vw_fixture_tmpdir, name);
	return path;
}

static int load_args(struct test_cfg *c, char *err, FILE *out, const char *const *args)
{
	char *argv[MAX_ARGS + 2] = { (char *)"virtwatt-test" };
	int argc = 1;

	for (; *args && argc <= MAX_ARGS; args++)
		argv[argc++] = (char *)*args;
	return vw_config_load(&prog, c, argc, argv, out, err, ERRLEN);
}

/* LOAD(&cfg, err, "--flag", "value", ...); LOAD(&cfg, err, NULL) for no flags. */
#define LOAD(c, err, ...) load_args(c, err, NULL, (const char *const[]){ __VA_ARGS__, NULL })

/* Load with --config.file=<tmpdir>/name holding text. */
static int load_yaml(struct test_cfg *c, char *err, const char *name, const char *text)
{
	char flag[4200];

	snprintf(flag, sizeof(flag), "--config.file=%s", yaml_file(name, text));
	return LOAD(c, err, flag);
}

static void expect_err(int r, int want_r, const char *err, const char *want)
{
	if (r != want_r || !strstr(err, want))
		fail_msg("got %d \"%s\"\n     want %d with \"%s\"", r, err, want_r, want);
}

static void assert_list(const struct vw_strlist *l, const char *const *want)
{
	size_t n = 0;

	for (; want[n]; n++) {
		if (n >= l->n)
			fail_msg("list has %zu items, want more (\"%s\")", l->n, want[n]);
		assert_string_equal(l->v[n], want[n]);
	}
	assert_int_equal(l->n, n);
}

#define ASSERT_LIST(l, ...) assert_list(l, (const char *const[]){ __VA_ARGS__, NULL })

/* ---- value parsers --------------------------------------------------------------------------- */

static void test_duration_valid(void **state)
{
	static const struct {
		const char *s;
		uint64_t ns;
	} cases[] = {
		{ "0", 0 },
		{ "0s", 0 },
		{ "100ns", 100 },
		{ "2us", 2000 },
		{ "2\u00b5s", 2000 },
		{ "2\u03bcs", 2000 },
		{ "300ms", 300 * VW_NSEC_PER_MSEC },
		{ "5s", 5 * VW_NSEC_PER_SEC },
		{ "1m30s", 90 * VW_NSEC_PER_SEC },
		{ "1.5h", 5400 * VW_NSEC_PER_SEC },
		{ ".5s", 500 * VW_NSEC_PER_MSEC },
		{ "1.s", VW_NSEC_PER_SEC },
		{ "0.000000001s", 1 },
		{ "1h2m3s4ms5us6ns", 3723004005006ULL },
		{ "10s10s", 20 * VW_NSEC_PER_SEC },
		{ "9223372036854775807ns", INT64_MAX },
		{ "2562047h47m16.854775807s", INT64_MAX },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		uint64_t ns = 1;

		if (vw_parse_duration(cases[i].s, &ns) != 0 || ns != cases[i].ns)
			fail_msg("\"%s\": got %llu, want %llu", cases[i].s, (unsigned long long)ns,
				 (unsigned long long)cases[i].ns);
	}
}

static void test_duration_invalid(void **state)
{
	static const struct {
		const char *s;
		int r;
	} cases[] = {
		{ "", -EINVAL },
		{ "5", -EINVAL },
		{ "s", -EINVAL },
		{ "-5s", -EINVAL },
		{ "+5s", -EINVAL },
		{ "-0", -EINVAL },
		{ "5x", -EINVAL },
		{ "5S", -EINVAL },
		{ "5sec", -EINVAL },
		{ "5 s", -EINVAL },
		{ " 5s", -EINVAL },
		{ "5s ", -EINVAL },
		{ "1.5.5s", -EINVAL },
		{ ".", -EINVAL },
		{ ".s", -EINVAL },
		{ "1h-5m", -EINVAL },
		{ "1e3s", -EINVAL },
		{ "5s3", -EINVAL },
		{ "9223372036854775808ns", -ERANGE },
		{ "2562048h", -ERANGE },
		{ "2562047h47m17s", -ERANGE },
		{ "99999999999999999999999h", -ERANGE },
		{ "9223372036854775807ns1ns", -ERANGE },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		uint64_t ns = 7;
		int r = vw_parse_duration(cases[i].s, &ns);

		if (r != cases[i].r || ns != 7)
			fail_msg("\"%s\": got %d, want %d", cases[i].s, r, cases[i].r);
	}
	assert_int_equal(vw_parse_duration(NULL, &(uint64_t){ 0 }), -EINVAL);
}

static void test_duration_format(void **state)
{
	static const struct {
		uint64_t ns;
		const char *s;
	} cases[] = {
		{ 0, "0s" },
		{ 1, "1ns" },
		{ 1500, "1500ns" },
		{ 2000, "2us" },
		{ 300 * VW_NSEC_PER_MSEC, "300ms" },
		{ 1500 * VW_NSEC_PER_MSEC, "1500ms" },
		{ 5 * VW_NSEC_PER_SEC, "5s" },
		{ 90 * VW_NSEC_PER_SEC, "1m30s" },
		{ 3600 * VW_NSEC_PER_SEC, "1h" },
		{ 5400 * VW_NSEC_PER_SEC, "1h30m" },
		{ 3661 * VW_NSEC_PER_SEC, "1h1m1s" },
		{ INT64_MAX, "9223372036854775807ns" },
	};
	char buf[VW_DURATION_STRLEN];

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		uint64_t back = 0;

		assert_int_equal(vw_format_duration(cases[i].ns, buf, sizeof(buf)), 0);
		assert_string_equal(buf, cases[i].s);
		assert_int_equal(vw_parse_duration(buf, &back), 0);
		assert_true(back == cases[i].ns);
	}
	assert_int_equal(vw_format_duration(3661 * VW_NSEC_PER_SEC, buf, 4), -ENOBUFS);
	assert_int_equal(vw_format_duration(300 * VW_NSEC_PER_MSEC, buf, 4), -ENOBUFS);
}

static void test_parse_bool(void **state)
{
	static const char *const yes[] = { "true", "TRUE", "True", "yes", "YES", "1" };
	static const char *const no[] = { "false", "False", "no", "NO", "0" };
	static const char *const bad[] = { "", "maybe", "on", "off", "2", "tru", " true", "yes " };
	bool b;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		b = false;
		assert_int_equal(vw_parse_bool(yes[i], &b), 0);
		assert_true(b);
	}
	for (size_t i = 0; i < ARRAY_SIZE(no); i++) {
		b = true;
		assert_int_equal(vw_parse_bool(no[i], &b), 0);
		assert_false(b);
	}
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		assert_int_equal(vw_parse_bool(bad[i], &b), -EINVAL);
	assert_int_equal(vw_parse_bool(NULL, &b), -EINVAL);
}

/* ---- the table ------------------------------------------------------------------------------- */

static int check_one(const struct vw_option *opt, char *err)
{
	struct vw_option opts[] = {
		{ .flag = "a.b", .yaml = "a.b", .type = VW_OPT_STRING, .offset = F(sysfs) },
		*opt,
	};
	struct vw_config_program p = { .name = "t", .opts = opts, .n_opts = ARRAY_SIZE(opts) };

	return vw_config_check(&p, err, ERRLEN);
}

static void test_check_table(void **state)
{
	static const char *const choices[] = { "x", NULL };
	static const struct {
		struct vw_option opt;
		const char *want;
	} bad[] = {
		{ { .flag = "a.b", .type = VW_OPT_STRING }, "--a.b: declared twice" },
		{ { .flag = "c", .yaml = "a.b", .type = VW_OPT_UINT },
		  "YAML key a.b: declared twice" },
		{ { .flag = "c", .yaml = "a", .type = VW_OPT_UINT },
		  "a: both a value and a mapping" },
		{ { .flag = "c", .yaml = "a.b.c", .type = VW_OPT_UINT },
		  "both a value and a mapping" },
		{ { .flag = "c",
		    .type = VW_OPT_DURATION,
		    .offset = F(interval_ns),
		    .defval = "5x" },
		  "--c: bad default: invalid duration \"5x\"" },
		{ { .flag = "c", .type = VW_OPT_UINT, .defval = "7", .min = 1, .max = 5 },
		  "--c: bad default: 7 is out of range (expected 1 to 5)" },
		{ { .flag = "c", .type = VW_OPT_UINT, .choices = choices },
		  "choices need a string" },
		{ { .flag = "c", .type = VW_OPT_UINT, .min = 2, .max = 1 }, "--c: min > max" },
		{ { .flag = "help", .type = VW_OPT_BOOL }, "bad flag name \"help\"" },
		{ { .flag = "--c", .type = VW_OPT_BOOL }, "bad flag name \"--c\"" },
		{ { .flag = "c d", .type = VW_OPT_BOOL }, "bad flag name \"c d\"" },
		{ { .flag = "", .type = VW_OPT_BOOL }, "bad flag name \"\"" },
		{ { .flag = "c", .yaml = "c..d", .type = VW_OPT_BOOL }, "bad YAML key \"c..d\"" },
		{ { .flag = "c", .yaml = "c.", .type = VW_OPT_BOOL }, "bad YAML key \"c.\"" },
		{ { .flag = "c", .type = (enum vw_opt_type)99 }, "--c: unknown type 99" },
		{ { .flag = VW_CONFIG_FILE_FLAG, .yaml = "config.file", .type = VW_OPT_STRING },
		  "--config.file: must be a flag-only string" },
		{ { .flag = VW_CONFIG_FILE_FLAG, .type = VW_OPT_BOOL },
		  "--config.file: must be a flag-only string" },
	};
	char err[ERRLEN];

	(void)state;
	assert_int_equal(vw_config_check(&prog, err, sizeof(err)), 0);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		expect_err(check_one(&bad[i].opt, err), -EINVAL, err, bad[i].want);
}

/* ---- defaults, file, flags ------------------------------------------------------------------- */

/* Every field but config_file at its default. */
static void assert_defaults(const struct test_cfg *c)
{
	assert_string_equal(c->listen_address, ":28282");
	assert_null(c->web_config_file);
	assert_string_equal(c->sysfs, "/sys");
	assert_string_equal(c->procfs, "/proc");
	assert_true(c->interval_ns == 5 * VW_NSEC_PER_SEC);
	assert_true(c->staleness_ns == 500 * VW_NSEC_PER_MSEC);
	assert_int_equal(c->max_terminated, 500);
	assert_false(c->pprof);
	assert_false(c->exporter_stdout);
	assert_true(c->exporter_prometheus);
	assert_double_near(c->idle_watts, 0, 0);
	ASSERT_LIST(&c->sources, "rapl", "hwmon");
	ASSERT_LIST(&c->metrics, "node", "process", "container", "vm", "pod");
	assert_int_equal(c->log_level, VW_LOG_INFO);
	assert_string_equal(c->log_format, "text");
	assert_null(c->model_file);
}

static void test_defaults(void **state)
{
	struct test_cfg c = { 0 };
	char err[ERRLEN];

	(void)state;
	assert_int_equal(LOAD(&c, err, NULL), VW_CONFIG_CONTINUE);
	assert_defaults(&c);
	assert_null(c.config_file);
	vw_config_free(&prog, &c);
	/* argc 0 (no argv[0]) is no different. */
	assert_int_equal(vw_config_load(&prog, &c, 0, NULL, NULL, err, sizeof(err)), 0);
	assert_defaults(&c);
	vw_config_free(&prog, &c);
	assert_null(c.sysfs);
	assert_null(c.sources.v);
	assert_int_equal(c.sources.n, 0);
}

static void test_file_only(void **state)
{
	struct test_cfg c = { 0 };
	char err[ERRLEN];

	(void)state;
	assert_int_equal(LOAD(&c, err, "--config.file", VW_TEST_DATA "/config/full.yaml"), 0);
	assert_string_equal(c.config_file, VW_TEST_DATA "/config/full.yaml");
	assert_string_equal(c.listen_address, "127.0.0.1:9102");
	assert_string_equal(c.web_config_file, "/etc/virtwatt/web.yaml");
	assert_string_equal(c.sysfs, "/host/sys");
	assert_string_equal(c.procfs, "/host/proc");
	assert_true(c.interval_ns == 90 * VW_NSEC_PER_SEC);
	assert_true(c.staleness_ns == 250 * VW_NSEC_PER_MSEC);
	assert_int_equal(c.max_terminated, 100);
	assert_true(c.pprof);
	assert_true(c.exporter_stdout);
	assert_false(c.exporter_prometheus);
	assert_double_near(c.idle_watts, 42.5, 0);
	ASSERT_LIST(&c.sources, "msr", "hwmon");
	ASSERT_LIST(&c.metrics, "node", "vm");
	assert_int_equal(c.log_level, VW_LOG_DEBUG);
	assert_string_equal(c.log_format, "json");
	assert_string_equal(c.model_file, "/var/lib/virtwatt/model.json");
	vw_config_free(&prog, &c);
}

static void test_flags_override_file(void **state)
{
	struct test_cfg c = { 0 };
	char err[ERRLEN];
	const char *path = yaml_file("override.yaml", "monitor:\n"
						      "  interval: 10s\n"
						      "  staleness: 1s\n"
						      "web:\n"
						      "  listenAddress: \":9000\"\n"
						      "power:\n"
						      "  sources: [msr]\n"
						      "debug:\n"
						      "  pprof: true\n");

	(void)state;
	/* Flags before and after --config.file win alike. */
	assert_int_equal(LOAD(&c, err, "--monitor.interval=1s", "--config.file", path,
			      "--power.sources=a", "--power.sources", "b, c", "--debug.pprof=no"),
			 0);
	assert_true(c.interval_ns == VW_NSEC_PER_SEC);
	assert_true(c.staleness_ns == VW_NSEC_PER_SEC); /* from the file */
	assert_string_equal(c.listen_address, ":9000"); /* from the file */
	assert_string_equal(c.sysfs, "/sys");		/* default */
	ASSERT_LIST(&c.sources, "a", "b", "c");
	assert_false(c.pprof);
	vw_config_free(&prog, &c);
}

static void test_flag_forms(void **state)
{
	struct test_cfg c = { 0 };
	char err[ERRLEN];

	(void)state;
	assert_int_equal(LOAD(&c, err, "--web.listen-address", ":1", "--host.sysfs=/s",
			      "--monitor.interval", "2s", "--monitor.staleness=3ms",
			      "--monitor.max-terminated", "7", "--power.idle-watts=1.25",
			      "--log.level", "DEBUG", "--log.format=json", "--model.file", "",
			      "--web.listen-address=:2"),
			 0);
	assert_string_equal(c.listen_address, ":2"); /* the last one wins */
	assert_string_equal(c.sysfs, "/s");
	assert_true(c.interval_ns == 2 * VW_NSEC_PER_SEC);
	assert_true(c.staleness_ns == 3 * VW_NSEC_PER_MSEC);
	assert_int_equal(c.max_terminated, 7);
	assert_double_near(c.idle_watts, 1.25, 0);
	assert_int_equal(c.log_level, VW_LOG_DEBUG);
	assert_string_equal(c.log_format, "json");
	assert_string_equal(c.model_file, "");
	vw_config_free(&prog, &c);
}

static void test_bools(void **state)
{
	struct test_cfg c = { 0 };
	char err[ERRLEN];

	(void)state;
	assert_int_equal(LOAD(&c, err, "--debug.pprof", "--exporter.prometheus=false",
			      "--exporter.stdout=YES"),
			 0);
	assert_true(c.pprof);
	assert_false(c.exporter_prometheus);
	assert_true(c.exporter_stdout);
	assert_int_equal(LOAD(&c, err, "--debug.pprof=1", "--debug.pprof=0"), 0);
	assert_false(c.pprof);
	expect_err(LOAD(&c, err, "--debug.pprof=maybe"), -EINVAL, err,
		   "--debug.pprof: invalid value \"maybe\" (expected true or false");
	expect_err(LOAD(&c, err, "--debug.pprof="), -EINVAL, err,
		   "--debug.pprof: invalid value \"\"");
	/* A bool takes no separate value: say how to write it. */
	expect_err(LOAD(&c, err, "--debug.pprof", "false"), -EINVAL, err,
		   "unexpected argument \"false\" (a boolean flag takes its value after '=': "
		   "--debug.pprof=false)");
	assert_int_equal(load_yaml(&c, err, "bool.yaml",
				   "debug:\n  pprof: Yes\nexporter:\n  prometheus: \"false\"\n"),
			 0);
	assert_true(c.pprof);
	assert_false(c.exporter_prometheus);
	vw_config_free(&prog, &c);
}

static void test_lists(void **state)
{
	struct test_cfg c = { 0 };
	char err[ERRLEN];

	(void)state;
	/* The first flag replaces the default, later ones append. */
	assert_int_equal(LOAD(&c, err, "--power.sources=msr", "--metrics", "vm", "--power.sources",
			      "a,b", "--metrics=pod"),
			 0);
	ASSERT_LIST(&c.sources, "msr", "a", "b");
	ASSERT_LIST(&c.metrics, "vm", "pod");
	/* An empty value empties the list. */
	assert_int_equal(LOAD(&c, err, "--power.sources="), 0);
	assert_int_equal(c.sources.n, 0);
	expect_err(LOAD(&c, err, "--power.sources=a,,b"), -EINVAL, err,
		   "--power.sources: empty item in list \"a,,b\"");
	expect_err(LOAD(&c, err, "--power.sources=a, "), -EINVAL, err, "empty item in list");
	/* YAML: a sequence keeps commas inside items; a scalar is split like the flag. */
	assert_int_equal(load_yaml(&c, err, "list.yaml",
				   "power:\n  sources:\n    - \"a,b\"\n    - c\n"
				   "metrics: node , vm\n"),
			 0);
	ASSERT_LIST(&c.sources, "a,b", "c");
	ASSERT_LIST(&c.metrics, "node", "vm");
	assert_int_equal(load_yaml(&c, err, "list.yaml", "power:\n  sources: []\nmetrics: [x]\n"),
			 0);
	assert_int_equal(c.sources.n, 0);
	ASSERT_LIST(&c.metrics, "x");
	/* A flag replaces what the file said, then appends. */
	char flag[4200];

	snprintf(flag, sizeof(flag), "--config.file=%s",
		 yaml_file("list.yaml", "metrics: [node, vm]\n"));
	assert_int_equal(LOAD(&c, err, flag, "--metrics=pod", "--metrics=process"), 0);
	ASSERT_LIST(&c.metrics, "pod", "process");
	vw_config_free(&prog, &c);
}

static void test_flag_errors(void **state)
{
	static const struct {
		const char *args[4];
		const char *want;
	} cases[] = {
		{ { "--monitor.intervl=5s" },
		  "unknown flag --monitor.intervl (did you mean --monitor.interval?)" },
		{ { "--web.listenAddress=:1" },
		  "unknown flag --web.listenAddress (did you mean --web.listen-address?)" },
		{ { "--web.listen=:1" },
		  "unknown flag --web.listen (did you mean --web.listen-address?)" },
		/* an abbreviation without its value, last: unknown too, not "missing value" */
		{ { "--web.listen" },
		  "unknown flag --web.listen (did you mean --web.listen-address?)" },
		{ { "--hel" }, "unknown flag --hel (did you mean --help?)" },
		{ { "--bogus" }, "unknown flag --bogus (see --help)" },
		{ { "-x" }, "unknown flag -x (long flags start with --; see --help)" },
		{ { "-web.sysfs=/" }, "unknown flag -w (long flags start with --" },
		{ { "--help=1" }, "--help takes no value" },
		{ { "stray" }, "unexpected argument \"stray\" (flags start with --; see --help)" },
		{ { "--", "extra" }, "unexpected argument \"extra\"" },
		{ { "--", "--debug.pprof" }, "unexpected argument \"--debug.pprof\" after \"--\"" },
		{ { "--monitor.interval" },
		  "--monitor.interval: missing value (expected a duration" },
		{ { "--monitor.interval=5x" },
		  "--monitor.interval: invalid duration \"5x\" (expected a duration such as "
		  "300ms" },
		{ { "--monitor.interval", "10ms" },
		  "--monitor.interval: 10ms is out of range (expected 100ms to 1h)" },
		{ { "--monitor.interval=99999999999h" },
		  "--monitor.interval: duration \"99999999999h\" "
		  "is too long" },
		{ { "--monitor.max-terminated=-1" },
		  "--monitor.max-terminated: invalid value \"-1\" (expected an unsigned" },
		{ { "--monitor.max-terminated=100001" },
		  "--monitor.max-terminated: 100001 is out of range (expected 0 to 100000)" },
		{ { "--monitor.max-terminated=18446744073709551616" },
		  "--monitor.max-terminated: 18446744073709551616 is too large" },
		{ { "--power.idle-watts=inf" }, "--power.idle-watts: invalid value \"inf\"" },
		{ { "--power.idle-watts=nan" }, "--power.idle-watts: invalid value \"nan\"" },
		{ { "--power.idle-watts=1e999" }, "--power.idle-watts: invalid value \"1e999\"" },
		{ { "--power.idle-watts= 1" }, "--power.idle-watts: invalid value \" 1\"" },
		{ { "--power.idle-watts=-0.5" },
		  "--power.idle-watts: -0.5 is out of range (expected 0 to 10000)" },
		{ { "--log.level=loud" },
		  "--log.level: invalid value \"loud\" (expected one of: error, warn, info, "
		  "debug)" },
		{ { "--log.format", "xml" },
		  "--log.format: invalid value \"xml\" (expected one of: text, json)" },
		{ { "--config.file" }, "--config.file: missing value" },
	};
	struct test_cfg c = { 0 };
	char err[ERRLEN];

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		int r = load_args(&c, err, NULL, cases[i].args);

		expect_err(r, -EINVAL, err, cases[i].want);
		/* A failed load leaves nothing allocated. */
		assert_null(c.sysfs);
		assert_null(c.sources.v);
	}
}

static void test_argv_untouched(void **state)
{
	struct test_cfg c = { 0 };
	char err[ERRLEN];
	char *argv[] = { (char *)"virtwatt-test", (char *)"--debug.pprof",
			 (char *)"--host.sysfs",  (char *)"/x",
			 (char *)"--metrics=vm",  NULL };
	char *copy[ARRAY_SIZE(argv)];

	(void)state;
	memcpy(copy, argv, sizeof(argv));
	assert_int_equal(vw_config_load(&prog, &c, 5, argv, NULL, err, sizeof(err)), 0);
	assert_memory_equal(copy, argv, sizeof(argv));
	/* And again: getopt's state is reset between loads. */
	assert_int_equal(vw_config_load(&prog, &c, 5, argv, NULL, err, sizeof(err)), 0);
	assert_string_equal(c.sysfs, "/x");
	ASSERT_LIST(&c.metrics, "vm");
	vw_config_free(&prog, &c);
}

/* ---- YAML errors ----------------------------------------------------------------------------- */

static void test_yaml_errors(void **state)
{
	static const struct {
		const char *yaml;
		const char *want;
	} cases[] = {
		{ "monitr:\n  interval: 5s\n",
		  "bad.yaml:1:1: unknown key \"monitr\" (did you mean \"monitor\"?)" },
		{ "monitor:\n  intervl: 5s\n", "bad.yaml:2:3: unknown key \"monitor.intervl\" (did "
					       "you mean \"monitor.interval\"?)" },
		{ "web:\n  listen_address: x\n",
		  "bad.yaml:2:3: unknown key \"web.listen_address\" (did you mean "
		  "\"web.listenAddress\"?)" },
		{ "interval: 5s\n",
		  "bad.yaml:1:1: unknown key \"interval\" (did you mean \"monitor.interval\"?)" },
		{ "web.listenAddress: x\n",
		  "bad.yaml:1:1: key \"web.listenAddress\" contains a dot: write it as nested "
		  "mappings" },
		{ "monitor:\n  interval:\n    every: 5s\n",
		  "bad.yaml:3:5: monitor.interval: expected a duration such as 300ms, 5s, 1m30s or "
		  "1.5h, got a mapping" },
		{ "host:\n  sysfs: [a, b]\n",
		  "bad.yaml:2:10: host.sysfs: expected a string, got a sequence" },
		{ "monitor: 5s\n", "bad.yaml:1:10: monitor: expected a mapping of settings, got a "
				   "scalar" },
		{ "monitor:\n  - interval\n",
		  "bad.yaml:2:3: monitor: expected a mapping of settings, got a sequence" },
		{ "power:\n  sources:\n    a: b\n",
		  "bad.yaml:3:5: power.sources: expected a list (YAML sequence, or comma-separated "
		  "values), got a mapping" },
		{ "monitor:\n  interval: 5x\n",
		  "bad.yaml:2:13: monitor.interval: invalid duration \"5x\" (expected a duration" },
		{ "monitor:\n  interval: 10ms\n",
		  "bad.yaml:2:13: monitor.interval: 10ms is out of range (expected 100ms to 1h)" },
		{ "monitor:\n  maxTerminated: -1\n", "bad.yaml:2:18: monitor.maxTerminated: "
						     "invalid value \"-1\" (expected an unsigned "
						     "decimal integer)" },
		{ "monitor:\n  maxTerminated: 100001\n",
		  "bad.yaml:2:18: monitor.maxTerminated: 100001 is out of range (expected 0 to "
		  "100000)" },
		{ "power:\n  idleWatts: .nan\n", "bad.yaml:2:14: power.idleWatts: invalid value "
						 "\".nan\" (expected a finite number" },
		{ "log:\n  level: loud\n",
		  "bad.yaml:2:10: log.level: invalid value \"loud\" (expected one of: error, warn, "
		  "info, debug)" },
		{ "log:\n  format: 'xml'\n", "bad.yaml:2:11: log.format: invalid value \"xml\" "
					     "(expected one of: text, json)" },
		{ "debug:\n  pprof: maybe\n",
		  "bad.yaml:2:10: debug.pprof: invalid value \"maybe\" (expected true or false" },
		{ "monitor:\n  interval:\n",
		  "bad.yaml:2:12: monitor.interval: missing value (expected a duration" },
		{ "model:\n  file: ~\n",
		  "bad.yaml:2:9: model.file: missing value (expected a string)" },
		{ "model:\n  file: \"a\\0b\"\n",
		  "bad.yaml:2:9: model.file: value contains a NUL byte" },
		{ "monitor:\n  interval: 5s\n  interval: 6s\n",
		  "bad.yaml:3:3: duplicate key \"monitor.interval\" (first set at line 2)" },
		{ "log:\n  level: info\nlog:\n  format: json\n",
		  "bad.yaml:3:1: duplicate key \"log\" (first set at line 1)" },
		{ "power:\n  sources: [rapl\n", "bad.yaml:3:1: YAML syntax error: did not find "
						"expected ',' or ']' (while parsing a "
						"flow sequence at line 2, column 12)" },
		{ "monitor:\n\tinterval: 5s\n",
		  "bad.yaml:2:1: YAML syntax error: found character that cannot start any token "
		  "(while scanning for the next token at line 2, column 1)" },
		{ "log:\n  level: info\n format: json\n",
		  "bad.yaml:3:2: YAML syntax error: did not find expected key" },
		{ "log:\n  format: \"json\n",
		  "bad.yaml:3:1: YAML syntax error: found unexpected end "
		  "of stream (while scanning a quoted scalar at line 2, "
		  "column 11)" },
		{ "log:\n  format: \xff\n",
		  "bad.yaml:2:11: invalid text: invalid leading UTF-8 octet" },
		{ "log:\n  format: \"\xc3\xa9\" \xff\n",
		  "bad.yaml:2:15: invalid text: invalid leading UTF-8 octet" },
		{ "log:\n  level: &lvl info\n  format: *lvl\n",
		  "bad.yaml:2:10: anchors (&lvl) are not supported" },
		{ "metrics: *x\n", "bad.yaml:1:10: aliases (*x) are not supported" },
		/* Billion laughs: refused at the first anchor. */
		{ "power:\n  sources: &a [lol, lol, lol]\nmetrics: [*a, *a, *a, *a]\n",
		  "bad.yaml:2:12: anchors (&a) are not supported" },
		{ "---\nlog:\n  level: info\n---\nlog:\n  level: debug\n",
		  "bad.yaml:4:1: only one YAML document is allowed" },
		{ "- a\n- b\n", "bad.yaml:1:1: the top level must be a mapping of settings, got a "
				"sequence" },
		{ "just text\n", "bad.yaml:1:1: the top level must be a mapping of settings, got a "
				 "scalar" },
		{ "power:\n  sources:\n    - rapl\n    - {a: 1}\n",
		  "bad.yaml:4:7: power.sources: a list item must be a scalar, got a mapping" },
		{ "power:\n  sources:\n    - rapl\n    -\n",
		  "bad.yaml:4:6: power.sources: empty list "
		  "item" },
		{ "power:\n  sources: [rapl, \"\"]\n",
		  "bad.yaml:2:19: power.sources: empty list item" },
		{ "power:\n  sources: \"a,,b\"\n",
		  "bad.yaml:2:12: power.sources: empty item in list \"a,,b\"" },
		{ "? [a]\n: 1\n", "bad.yaml:1:3: a key must be a scalar, got a sequence" },
	};
	struct test_cfg c = { 0 };
	char err[ERRLEN];

	(void)state;
	/* Nothing close: no suggestion. */
	assert_int_equal(load_yaml(&c, err, "bad.yaml", "log:\n  level: info\nbogus: 1\n"),
			 -EINVAL);
	assert_string_equal(strstr(err, "bad.yaml:"), "bad.yaml:3:1: unknown key \"bogus\"");
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		const char *want = cases[i].want;
		int r = load_yaml(&c, err, "bad.yaml", cases[i].yaml);

		expect_err(r, -EINVAL, err, want);
		/* The message begins with the file's full path. */
		assert_memory_equal(err, vw_fixture_tmpdir, strlen(vw_fixture_tmpdir));
		assert_null(c.sysfs);
	}
}

static void test_file_errors(void **state)
{
	struct test_cfg c = { 0 };
	char err[ERRLEN], flag[4200];
	size_t big = VW_CONFIG_MAX_BYTES;
	char *text = malloc(big + 2);

	(void)state;
	snprintf(flag, sizeof(flag), "--config.file=%s/nope.yaml", vw_fixture_tmpdir);
	expect_err(LOAD(&c, err, flag), -ENOENT, err, "/nope.yaml: No such file or directory");
	assert_memory_equal(err, "cannot read config file ", 24);
	snprintf(flag, sizeof(flag), "--config.file=%s", vw_fixture_tmpdir);
	expect_err(LOAD(&c, err, flag), -EINVAL, err, ": not a regular file");

	/* Exactly the cap is fine, one byte more is not. */
	assert_non_null(text);
	memset(text, '#', big);
	text[0] = '\n';
	text[big] = '\0';
	assert_int_equal(load_yaml(&c, err, "big.yaml", text), 0);
	assert_defaults(&c);
	text[big] = '#';
	text[big + 1] = '\0';
	expect_err(load_yaml(&c, err, "big.yaml", text), -EFBIG, err,
		   "big.yaml: larger than 1048576 bytes");
	free(text);

	if (geteuid() != 0) { /* root reads anything */
		assert_int_equal(vw_fixture_write(vw_fixture_tmpdir, "secret.yaml", "log:\n", 0000),
				 0);
		snprintf(flag, sizeof(flag), "--config.file=%s/secret.yaml", vw_fixture_tmpdir);
		expect_err(LOAD(&c, err, flag), -EACCES, err, "secret.yaml: Permission denied");
	}
}

static void test_empty_files(void **state)
{
	static const char *const texts[] = {
		"",
		"\n",
		"# only a comment\n",
		"---\n",
		"--- # comment\n...\n",
		"~\n",
		"web:\n",
		"web:\n  # listenAddress: (unset)\nmodel: ~\n",
		"{}\n",
	};
	struct test_cfg c = { 0 };
	char err[ERRLEN];

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(texts); i++) {
		int r = load_yaml(&c, err, "empty.yaml", texts[i]);

		if (r != 0)
			fail_msg("\"%s\": %d %s", texts[i], r, err);
		assert_defaults(&c);
	}
	/* An empty --config.file means no file. */
	assert_int_equal(LOAD(&c, err, "--config.file="), 0);
	vw_config_free(&prog, &c);
}

/* ---- --help, --version, print ---------------------------------------------------------------- */

static char *capture(int *ret_r, const char *const *args)
{
	struct test_cfg c = { 0 };
	char err[ERRLEN], *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);

	assert_non_null(m);
	*ret_r = load_args(&c, err, m, args);
	assert_int_equal(fclose(m), 0);
	assert_null(c.sysfs); /* exit paths free the config */
	return text;
}

/* text's runs of spaces and newlines as one space (--help wraps anywhere). */
static char *squeeze_spaces(const char *text)
{
	char *s = strdup(text), *d = s;

	assert_non_null(s);
	for (const char *p = text; *p; p++)
		if (!isspace((unsigned char)*p) || (d > s && d[-1] != ' '))
			*d++ = isspace((unsigned char)*p) ? ' ' : *p;
	*d = '\0';
	return s;
}

static void test_help(void **state)
{
	int r;
	char *text = capture(&r, (const char *const[]){ "--host.sysfs=/x", "--help", NULL });
	_cleanup_free_ char *squeezed = NULL;
	char want[256];

	(void)state;
	assert_int_equal(r, VW_CONFIG_EXIT_OK);
	squeezed = squeeze_spaces(text);
	assert_non_null(strstr(text, "Usage: virtwatt-test [--FLAG[=VALUE]]..."));
	assert_non_null(strstr(text, "Exports the power of this test"));
	assert_non_null(strstr(text, "flags win"));
	for (size_t i = 0; i < ARRAY_SIZE(test_opts); i++) {
		const struct vw_option *o = &test_opts[i];

		snprintf(want, sizeof(want), "  --%s%s", o->flag,
			 o->type == VW_OPT_BOOL ? " " : "=");
		if (!strstr(text, want))
			fail_msg("--help lacks \"%s\":\n%s", want, text);
		snprintf(want, sizeof(want), "YAML: %s\n", o->yaml ? o->yaml : "(flag only)");
		if (!strstr(text, want))
			fail_msg("--help lacks \"%s\"", want);
		if (o->defval) {
			snprintf(want, sizeof(want), "(default: %s)", o->defval);
			if (!strstr(text, want))
				fail_msg("--help lacks \"%s\":\n%s", want, text);
		}
	}
	assert_non_null(strstr(text, "--web.listen-address=ADDR"));
	assert_non_null(strstr(text, "--monitor.interval=DURATION"));
	assert_non_null(strstr(text, "(default: false)")); /* debug.pprof has no defval */
	assert_non_null(strstr(text, "One of: text, json."));
	assert_non_null(strstr(text, "Range: 100ms to 1h."));
	assert_non_null(strstr(text, "Range: 0 to 100000."));
	/* A help text without its full stop gets one before the sentence appended to it. */
	assert_non_null(strstr(squeezed, "derive it. Range: 0 to 10000."));
	assert_non_null(strstr(squeezed, "logged. One of: error, warn, info, debug."));
	assert_non_null(strstr(text, "-h, --help"));
	assert_non_null(strstr(text, "--help-all"));
	assert_non_null(strstr(text, "--version"));
	/* Wrapped to 80 columns. */
	for (const char *line = text; *line; line += strcspn(line, "\n") + 1)
		if (strcspn(line, "\n") > 80)
			fail_msg("long line: %.*s", (int)strcspn(line, "\n"), line);
	free(text);

	text = capture(&r, (const char *const[]){ "-h", NULL });
	assert_int_equal(r, VW_CONFIG_EXIT_OK);
	assert_non_null(strstr(text, "Usage: virtwatt-test"));
	free(text);
	text = capture(&r, (const char *const[]){ "--version", NULL });
	assert_int_equal(r, VW_CONFIG_EXIT_OK);
	assert_memory_equal(text, "virtwatt-test 1.2.3\n", 20);
	free(text);
	/* A bad flag before --help is still an error. */
	text = capture(&r, (const char *const[]){ "--nope", "--help", NULL });
	assert_int_equal(r, -EINVAL);
	assert_string_equal(text, "");
	free(text);
}

static char *print_cfg(const struct test_cfg *c)
{
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);

	assert_non_null(m);
	vw_config_print(&prog, c, m);
	assert_int_equal(fclose(m), 0);
	return text;
}

static void test_print_defaults(void **state)
{
	static const char want[] = "# virtwatt-test 1.2.3: effective configuration\n"
				   "web:\n"
				   "  listenAddress: \":28282\"\n"
				   "  # configFile: (unset)\n"
				   "host:\n"
				   "  sysfs: \"/sys\"\n"
				   "  procfs: \"/proc\"\n"
				   "monitor:\n"
				   "  interval: 5s\n"
				   "  staleness: 500ms\n"
				   "  maxTerminated: 500\n"
				   "debug:\n"
				   "  pprof: false\n"
				   "exporter:\n"
				   "  stdout: false\n"
				   "  prometheus: true\n"
				   "power:\n"
				   "  idleWatts: 0\n"
				   "  sources:\n"
				   "    - \"rapl\"\n"
				   "    - \"hwmon\"\n"
				   "metrics:\n"
				   "  - \"node\"\n"
				   "  - \"process\"\n"
				   "  - \"container\"\n"
				   "  - \"vm\"\n"
				   "  - \"pod\"\n"
				   "log:\n"
				   "  level: info\n"
				   "  format: \"text\"\n"
				   "model:\n"
				   "  # file: (unset)\n";
	struct test_cfg c = { 0 };
	char err[ERRLEN], *text;

	(void)state;
	assert_int_equal(LOAD(&c, err, NULL), 0);
	text = print_cfg(&c);
	assert_string_equal(text, want);
	free(text);
	vw_config_free(&prog, &c);
}

static void test_print_roundtrip(void **state)
{
	struct test_cfg a = { 0 }, b = { 0 };
	char err[ERRLEN], flag[4200], *text, *again;

	(void)state;
	assert_int_equal(
		LOAD(&a, err, "--web.listen-address=[::1]:9100",
		     "--host.sysfs=/tmp/a \"b\"\\c\td: e # f", "--host.procfs=mod\xc3\xa8le",
		     "--monitor.interval=1m30s", "--monitor.staleness=1500ms",
		     "--monitor.max-terminated=42", "--debug.pprof", "--exporter.prometheus=false",
		     "--power.idle-watts=0.1", "--power.sources=a, b c", "--power.sources=- x",
		     "--metrics=", "--log.level=warning", "--log.format=json",
		     /* What YAML folds or refuses inside double quotes: NEL, LS, PS, a C1
		      * control, the BOM and U+FFFF (found by fuzz_config). */
		     "--model.file=a\xc2\x85" "b\xe2\x80\xa8" "c\xe2\x80\xa9" "d\xc2\x9f" "e\xef\xbb\xbf"
		     "f\xef\xbf\xbf" "g"),
		0);
	text = print_cfg(&a);
	snprintf(flag, sizeof(flag), "--config.file=%s", yaml_file("printed.yaml", text));
	if (LOAD(&b, err, flag) != 0)
		fail_msg("%s\n%s", err, text);
	assert_string_equal(b.listen_address, a.listen_address);
	assert_null(b.web_config_file);
	assert_string_equal(b.sysfs, "/tmp/a \"b\"\\c\td: e # f");
	assert_string_equal(b.procfs, "mod\xc3\xa8le");
	assert_true(b.interval_ns == a.interval_ns);
	assert_true(b.staleness_ns == a.staleness_ns);
	assert_int_equal(b.max_terminated, 42);
	assert_true(b.pprof);
	assert_false(b.exporter_stdout);
	assert_false(b.exporter_prometheus);
	assert_true(b.idle_watts == 0.1);
	ASSERT_LIST(&b.sources, "a", "b c", "- x");
	assert_int_equal(b.metrics.n, 0);
	assert_int_equal(b.log_level, VW_LOG_WARN);
	assert_string_equal(b.log_format, "json");
	assert_string_equal(b.model_file, a.model_file);
	assert_non_null(strstr(text, "a\\x85b\\u2028c\\u2029d\\x9fe\\ufefff\\uffffg"));
	/* Printing what was loaded gives the same text. */
	again = print_cfg(&b);
	assert_string_equal(again, text);
	free(again);
	free(text);
	vw_config_free(&prog, &a);
	vw_config_free(&prog, &b);
}

static void test_load_twice(void **state)
{
	struct test_cfg c = { 0 };
	char err[ERRLEN], flag[4200];

	(void)state;
	snprintf(flag, sizeof(flag), "--config.file=%s",
		 yaml_file("twice.yaml", "model:\n  file: /m\npower:\n  sources: [a, b]\n"));
	for (int i = 0; i < 3; i++) {
		assert_int_equal(LOAD(&c, err, flag, "--host.sysfs=/s", "--metrics=vm"), 0);
		assert_string_equal(c.model_file, "/m");
		ASSERT_LIST(&c.sources, "a", "b");
	}
	/* Nothing from the earlier load survives into the next. */
	assert_int_equal(LOAD(&c, err, NULL), 0);
	assert_defaults(&c);
	/* A failure in the file, after defaults and flags were set, frees them all. */
	snprintf(flag, sizeof(flag), "--config.file=%s",
		 yaml_file("twice.yaml", "model:\n  file: /m\n  nope: 1\n"));
	expect_err(LOAD(&c, err, "--host.sysfs=/s", flag), -EINVAL, err, "unknown key");
	assert_null(c.model_file);
	assert_null(c.sysfs);
	vw_config_free(&prog, &c);
	vw_config_free(&prog, &c); /* twice is harmless */
	vw_config_free(NULL, &c);
	vw_config_free(&prog, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_duration_valid),
		cmocka_unit_test(test_duration_invalid),
		cmocka_unit_test(test_duration_format),
		cmocka_unit_test(test_parse_bool),
		cmocka_unit_test(test_check_table),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_file_only),
		cmocka_unit_test(test_flags_override_file),
		cmocka_unit_test(test_flag_forms),
		cmocka_unit_test(test_bools),
		cmocka_unit_test(test_lists),
		cmocka_unit_test(test_flag_errors),
		cmocka_unit_test(test_argv_untouched),
		cmocka_unit_test(test_yaml_errors),
		cmocka_unit_test(test_file_errors),
		cmocka_unit_test(test_empty_files),
		cmocka_unit_test(test_help),
		cmocka_unit_test(test_print_defaults),
		cmocka_unit_test(test_print_roundtrip),
		cmocka_unit_test(test_load_twice),
	};

	return cmocka_run_group_tests(tests, vw_fixture_tmpdir_setup, vw_fixture_tmpdir_teardown);
}

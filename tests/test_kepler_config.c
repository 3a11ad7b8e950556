/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kepler's configuration surface as virtwatt-host's own option table reads it: Kepler's config
 * files (tests/data/kepler-config/, unchanged) map to our settings or are accepted with one
 * warning each; Kepler's flags, kingpin's --no-NAME form and repeatable flags parse; unknown
 * keys warn unless --config.strict; values are checked when parsed; --help is grouped.
 */
#include "vw_test.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "daemon_options.h"
#include "fixture.h"
#include "macro.h"
#include "options.h"

#define MAX_ARGS 40

struct run {
	struct vw_host_config cfg;
	struct vw_strlist warnings;
	char err[1024];
	char *out; /* --help's text */
	size_t out_len;
};

static int load(struct run *r, const char *const *args)
{
	char *argv[MAX_ARGS + 2] = { (char *)"virtwatt-host" };
	int argc = 1;
	FILE *out;
	int rc;

	vw_config_free(vw_host_program(), &r->cfg);
	vw_strlist_free(&r->warnings);
	free(r->out);
	r->out = NULL;
	memset(&r->cfg, 0, sizeof(r->cfg));
	for (; *args && argc <= MAX_ARGS; args++)
		argv[argc++] = (char *)*args;
	out = open_memstream(&r->out, &r->out_len);
	assert_non_null(out);
	rc = vw_config_load_warn(vw_host_program(), &r->cfg, argc, argv, out, &r->warnings, r->err,
				 sizeof(r->err));
	fclose(out);
	return rc;
}

/* A meter's option (it lives in the meter's own struct): its field, by flag. */
#define OPT(c, flag, type) (*(const type *)opt_field(c, flag))

static const void *opt_field(const struct vw_host_config *c, const char *flag)
{
	const void *f = vw_config_field(vw_host_program(), c, flag);

	if (!f)
		fail_msg("no option --%s", flag);
	return f;
}

#define LOAD(r, ...) load(r, (const char *const[]){ __VA_ARGS__, NULL })

static void run_free(struct run *r)
{
	vw_config_free(vw_host_program(), &r->cfg);
	vw_strlist_free(&r->warnings);
	free(r->out);
}

static size_t warned(const struct run *r, const char *needle)
{
	size_t n = 0;

	for (size_t i = 0; i < r->warnings.n; i++)
		n += strstr(r->warnings.v[i], needle) != NULL;
	return n;
}

static void assert_list(const struct vw_strlist *l, const char *const *want)
{
	size_t n = 0;

	for (; want[n]; n++) {
		assert_true(n < l->n);
		assert_string_equal(l->v[n], want[n]);
	}
	assert_int_equal(l->n, n);
}

static const char *kepler_file(const char *name)
{
	static char arg[1024];

	snprintf(arg, sizeof(arg), "--config.file=%s/tests/data/kepler-config/%s", VW_SOURCE_ROOT,
		 name);
	return arg;
}

/* Kepler's Compose config.yaml (hack/config.yaml's keys, /host roots): every key Kepler reads,
 * each mapped or warned about once. */
static void test_kepler_file_maps(void **state)
{
	struct run r = { 0 };
	const struct vw_host_config *c = &r.cfg;

	(void)state;
	if (LOAD(&r, kepler_file("compose-default-config.yaml")) != 0)
		fail_msg("%s", r.err);
	assert_int_equal(c->common.log_level, VW_LOG_DEBUG);
	assert_string_equal(c->common.log_format, "text");
	assert_string_equal(c->common.sysfs, "/host/sys");
	assert_string_equal(c->common.procfs, "/host/proc");
	assert_int_equal(c->common.interval_ns, 5 * VW_NSEC_PER_SEC);
	assert_int_equal(c->common.max_terminated, 500);
	assert_list(&c->preferred_meters, (const char *const[]){ "rapl", "hwmon", NULL });
	assert_int_equal(OPT(c, "rapl.zones", struct vw_strlist).n, 0);
	assert_false(c->common.exporter_stdout);
	assert_list(&c->metrics,
		    (const char *const[]){ "node", "process", "container", "vm", "pod", NULL });
	assert_string_equal(c->common.web_config_file, "");
	assert_list(&c->common.listen_address, (const char *const[]){ ":28282", NULL });
	assert_false(c->common.kube_enable);
	assert_string_equal(c->common.kube_config, "/host/kube/kubeconfig");
	assert_string_equal(c->common.node_name, "kind-control-plane");
	assert_string_equal(c->common.kube_pod_source, "kubelet");
	assert_int_equal(c->common.kube_poll_ns, 15 * VW_NSEC_PER_SEC);
	assert_false(OPT(c, "platform.redfish.enabled", bool));
	assert_string_equal(OPT(c, "platform.redfish.config-file", char *), "/etc/kepler/redfish.yaml");
	assert_string_equal(OPT(c, "platform.redfish.node-name", char *), "");
	assert_int_equal(OPT(c, "platform.redfish.timeout", uint64_t), 5 * VW_NSEC_PER_SEC);
	assert_false(OPT(c, "experimental.hwmon.force-enabled", bool));
	assert_int_equal(OPT(c, "experimental.hwmon.zones", struct vw_strlist).n, 0);
	assert_false(c->common.gpu_enable);
	assert_true(c->common.gpu_idle_w == 0);
	/* Accepted without effect: one warning each, with the file's line; those whose value
	 * asks for nothing we lack (pprof off, no fake meter, no chip rules) are silent. */
	assert_int_equal(warned(&r, "compose-default-config.yaml:21: monitor.staleness is accepted but has no "
				    "effect in virtwatt: "),
			 1);
	assert_int_equal(warned(&r, "monitor.minTerminatedEnergyThreshold is accepted"), 1);
	assert_int_equal(warned(&r, "exporter.prometheus.debugCollectors is accepted"), 1);
	assert_int_equal(warned(&r, "debug.pprof.enabled is accepted"), 1);
	assert_int_equal(r.warnings.n, 4);
	/* hack/config.yaml: the same keys, the host's own roots. */
	if (LOAD(&r, kepler_file("config.yaml")) != 0)
		fail_msg("%s", r.err);
	assert_string_equal(c->common.sysfs, "/sys");
	assert_string_equal(c->common.kube_config, "");
	assert_string_equal(OPT(c, "platform.redfish.config-file", char *), "hack/redfish.yaml");
	assert_int_equal(r.warnings.n, 4);
	run_free(&r);
}

/* A file that asks for the features without effect, or holds keys nobody knows. */
static void test_warnings_and_strict(void **state)
{
	char path[] = "/tmp/vw-kepler-XXXXXX";
	char arg[64];
	struct run r = { 0 };
	FILE *f;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	fputs("dev:\n  fake-cpu-meter:\n    enabled: true\n    zones: [package]\n"
	      "experimental:\n  hwmon:\n    chipRules:\n      - name: ina3221\n        pairings: {1: 1}\n"
	      "  gpu:\n    dcgmEndpoint: http://dcgm:9400/metrics\n"
	      "monitr:\n  interval: 1s\n"
	      "monitor:\n  intervl: [1, {a: b}]\n  interval: 2s\n",
	      f);
	fclose(f);
	snprintf(arg, sizeof(arg), "--config.file=%s", path);
	if (LOAD(&r, arg) != 0)
		fail_msg("%s", r.err);
	assert_int_equal(r.cfg.common.interval_ns, 2 * VW_NSEC_PER_SEC); /* after the skipped */
	assert_int_equal(warned(&r, "dev.fake-cpu-meter.enabled is accepted"), 1);
	assert_int_equal(warned(&r, "dev.fake-cpu-meter.zones is accepted"), 1);
	assert_int_equal(warned(&r, "experimental.hwmon.chipRules is accepted"), 1);
	assert_int_equal(warned(&r, "experimental.gpu.dcgmEndpoint is accepted"), 1);
	assert_int_equal(warned(&r, ":12:1: unknown key \"monitr\" (did you mean \"monitor\"?); "
				    "ignored (--config.strict makes it an error)"),
			 1);
	assert_int_equal(warned(&r, ":15:3: unknown key \"monitor.intervl\""), 1);
	assert_int_equal(r.warnings.n, 6);
	/* --config.strict keeps our strictness, wherever it stands among the flags. */
	assert_int_equal(LOAD(&r, "--config.strict", arg), -EINVAL);
	assert_non_null(strstr(r.err, ":12:1: unknown key \"monitr\" (did you mean \"monitor\"?)"));
	assert_int_equal(LOAD(&r, arg, "--config.strict=true"), -EINVAL);
	assert_int_equal(LOAD(&r, arg, "--no-config.strict"), 0);
	run_free(&r);
	unlink(path);
}

static uint64_t mono_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* Load text as --config.file (not strict: unknown keys warn, their values skipped); ms taken. */
static int load_text(struct run *r, const char *text, uint64_t *ret_ms)
{
	char path[] = "/tmp/vw-kepler-XXXXXX", arg[64];
	int fd = mkstemp(path), rc;
	uint64_t t0;
	FILE *f;

	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	fclose(f);
	snprintf(arg, sizeof(arg), "--config.file=%s", path);
	t0 = mono_ms();
	rc = LOAD(r, arg);
	*ret_ms = mono_ms() - t0;
	unlink(path);
	return rc;
}

/*
 * A value nested 100,000 deep under a key nobody knows (skipped with a warning, not strict):
 * refused at the 33rd level (the file's mappings count). Before, every level was read: libyaml's scanner costs O(depth) a
 * token, so the file (200 KB, under the 1 MiB cap) took seconds (200,000 levels: over 20 s).
 */
static void test_deep_nesting(void **state)
{
	const size_t depth = 100000;
	const char *head = "monitor:\n  unknown: ";
	char *text = malloc(strlen(head) + 2 * depth + 2);
	struct run r = { 0 };
	uint64_t ms;
	int rc;

	(void)state;
	assert_non_null(text);
	strcpy(text, head);
	memset(text + strlen(head), '[', depth);
	memset(text + strlen(head) + depth, ']', depth);
	strcpy(text + strlen(head) + 2 * depth, "\n");
	rc = load_text(&r, text, &ms);
	print_message("# %zu levels: %d in %" PRIu64 " ms\n", depth, rc, ms);
	assert_int_equal(rc, -EINVAL);
	if (!strstr(r.err, ":2:42: nested deeper than 32 levels"))
		fail_msg("%s", r.err);
	assert_true(ms < 1000);
	free(text);
	run_free(&r);
}

/*
 * 50,000 keys nobody knows (a 600 KB file under the 1 MiB cap; not strict: each a warning): the
 * first 32 are warned about one by one, the rest in one warning that counts them. Before, each
 * was compared with every option for a suggestion and with every warning before it (dropping
 * repeats): quadratic, over 20 s and 1.5 GiB in the test build, and 50,000 log lines.
 */
static void test_many_unknown_keys(void **state)
{
	const size_t n = 50000;
	char *text = malloc(n * 16 + 16), *p = text;
	struct run r = { 0 };
	uint64_t ms;
	int rc;

	(void)state;
	assert_non_null(text);
	p += sprintf(p, "monitor:\n");
	for (size_t i = 0; i < n; i++)
		p += sprintf(p, "  k%zu: 1\n", i);
	rc = load_text(&r, text, &ms);
	print_message("# %zu unknown keys: %d in %" PRIu64 " ms, %zu warnings\n", n, rc, ms,
		      r.warnings.n);
	if (rc != 0)
		fail_msg("%s", r.err);
	assert_int_equal(r.warnings.n, 33);
	assert_int_equal(warned(&r, ":2:3: unknown key \"monitor.k0\""), 1);
	assert_int_equal(warned(&r, ":33:3: unknown key \"monitor.k31\""), 1);
	assert_int_equal(warned(&r, ": 49968 more unknown keys ignored (the first at line 34)"), 1);
	assert_true(ms < 2000);
	free(text);
	run_free(&r);
}

/* Kepler's --monitor.max-terminated (monitor.maxTerminated) takes 0 (none kept) and any negative
 * integer (no limit), which our bounded range refuses: each is read as our nearest bound, with a
 * warning; anything else outside the range is still an error. */
static void test_kepler_max_terminated(void **state)
{
	static const struct {
		const char *arg;
		uint64_t want;
		size_t warns;
	} flags[] = {
		{ "--monitor.max-terminated=-1", 1000000, 1 },
		{ "--monitor.max-terminated=-500", 1000000, 1 },
		{ "--monitor.max-terminated=0", 1, 1 },
		{ "--monitor.max-terminated=1000000", 1000000, 0 },
	};
	struct run r = { 0 };
	uint64_t ms;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(flags); i++) {
		if (LOAD(&r, flags[i].arg) != 0)
			fail_msg("%s: %s", flags[i].arg, r.err);
		assert_int_equal(r.cfg.common.max_terminated, flags[i].want);
		assert_int_equal(warned(&r, "is read as"), flags[i].warns);
	}
	assert_int_not_equal(LOAD(&r, "--monitor.max-terminated=-x"), 0);
	assert_non_null(strstr(r.err, "invalid value \"-x\""));
	assert_int_not_equal(LOAD(&r, "--monitor.max-terminated=1000001"), 0);

	if (load_text(&r, "monitor:\n  maxTerminated: -1\n", &ms) != 0)
		fail_msg("%s", r.err);
	assert_int_equal(r.cfg.common.max_terminated, 1000000);
	assert_int_equal(warned(&r, ":2: monitor.maxTerminated=-1 is read as 1000000: Kepler's"), 1);
	if (load_text(&r, "monitor:\n  maxTerminated: 0\n", &ms) != 0)
		fail_msg("%s", r.err);
	assert_int_equal(r.cfg.common.max_terminated, 1);
	run_free(&r);
}

/* Kepler's flags, as kingpin reads them. */
static void test_kepler_flags(void **state)
{
	struct run r = { 0 };
	const struct vw_host_config *c = &r.cfg;

	(void)state;
	if (LOAD(&r, "--log.level=warn", "--log.format=json", "--host.sysfs=/hs", "--host.procfs",
		 "/hp", "--monitor.interval=3s", "--monitor.max-terminated=7", "--debug.pprof",
		 "--web.config-file=/w.yml", "--web.listen-address=:1", "--web.listen-address",
		 "[::1]:2", "--exporter.stdout", "--exporter.prometheus", "--metrics=node",
		 "--metrics", "pod", "--metrics=container,vm", "--kube.enable", "--kube.config=/kc",
		 "--kube.node-name=n1", "--experimental.platform.redfish.enabled=false",
		 "--experimental.platform.redfish.node-name=bmc-n1",
		 "--experimental.platform.redfish.config-file=/r.yaml",
		 "--experimental.hwmon.force-enabled", "--experimental.hwmon.zones=power1",
		 "--experimental.gpu.enabled=false", "--experimental.gpu.idle-power=12.5",
		 "--experimental.gpu.dcgm-endpoint=http://x") != 0)
		fail_msg("%s", r.err);
	assert_int_equal(c->common.log_level, VW_LOG_WARN);
	assert_string_equal(c->common.log_format, "json");
	assert_string_equal(c->common.sysfs, "/hs");
	assert_string_equal(c->common.procfs, "/hp");
	assert_int_equal(c->common.interval_ns, 3 * VW_NSEC_PER_SEC);
	assert_int_equal(c->common.max_terminated, 7);
	assert_string_equal(c->common.web_config_file, "/w.yml");
	assert_list(&c->common.listen_address, (const char *const[]){ ":1", "[::1]:2", NULL });
	assert_true(c->common.exporter_stdout);
	assert_list(&c->metrics, (const char *const[]){ "node", "pod", "container", "vm", NULL });
	assert_true(c->common.kube_enable);
	assert_string_equal(c->common.kube_config, "/kc");
	assert_string_equal(c->common.node_name, "n1");
	assert_false(OPT(c, "platform.redfish.enabled", bool));
	assert_string_equal(OPT(c, "platform.redfish.node-name", char *), "bmc-n1");
	assert_string_equal(OPT(c, "platform.redfish.config-file", char *), "/r.yaml");
	assert_true(OPT(c, "experimental.hwmon.force-enabled", bool));
	assert_list(&OPT(c, "experimental.hwmon.zones", struct vw_strlist), (const char *const[]){ "power1", NULL });
	assert_false(c->common.gpu_enable);
	assert_true(c->common.gpu_idle_w == 12.5);
	/* --debug.pprof and --experimental.gpu.dcgm-endpoint (a string flag) warn;
	 * --exporter.prometheus (on, as here always) does not. */
	assert_int_equal(warned(&r, "--debug.pprof is accepted but has no effect"), 1);
	assert_int_equal(warned(&r, "--experimental.gpu.dcgm-endpoint is accepted"), 1);
	assert_int_equal(warned(&r, "exporter.prometheus"), 0);

	/* kingpin's --no-NAME for every boolean, ours and Kepler's. */
	if (LOAD(&r, "--kube.enable", "--no-kube.enable", "--no-exporter.stdout", "--no-debug.pprof",
		 "--no-experimental.gpu.enabled", "--no-exporter.prometheus",
		 "--no-cpu.hardware-counters", "--no-passthrough.enable") != 0)
		fail_msg("%s", r.err);
	assert_false(c->common.kube_enable);
	assert_false(c->common.exporter_stdout);
	assert_false(c->common.gpu_enable);
	assert_false(c->common.cpu_hw_counters);
	assert_string_equal(c->common.cpu_ran_walk, "auto"); /* attached while it pays */
	assert_string_equal(c->passthrough, "false");
	assert_int_equal(warned(&r, "--no-exporter.prometheus is accepted but has no effect"), 1);
	assert_int_equal(warned(&r, "pprof"), 0);
	assert_int_equal(r.warnings.n, 1);
	if (LOAD(&r, "--cpu.ran-walk") != 0)
		fail_msg("%s", r.err);
	assert_string_equal(c->common.cpu_ran_walk, "true");
	assert_int_equal(LOAD(&r, "--no-cpu.ran-walk"), 0);
	assert_string_equal(c->common.cpu_ran_walk, "false");
	assert_int_equal(LOAD(&r, "--cpu.ran-walk=auto"), 0);
	assert_string_equal(c->common.cpu_ran_walk, "auto");
	assert_int_equal(LOAD(&r, "--cpu.ran-walk=0"), 0);
	assert_string_equal(c->common.cpu_ran_walk, "false");
	assert_int_not_equal(LOAD(&r, "--cpu.ran-walk=sometimes"), 0);
	{ /* the config file's key: a YAML boolean or auto */
		char path[] = "/tmp/vw-ranwalk-XXXXXX", arg[64];
		int fd = mkstemp(path);

		assert_true(fd >= 0);
		assert_int_equal(write(fd, "cpu:\n  ranWalk: false\n", 22), 22);
		close(fd);
		snprintf(arg, sizeof(arg), "--config.file=%s", path);
		assert_int_equal(LOAD(&r, arg), 0);
		assert_string_equal(c->common.cpu_ran_walk, "false");
		assert_int_equal(LOAD(&r, arg, "--cpu.ran-walk=auto"), 0); /* the flag wins */
		assert_string_equal(c->common.cpu_ran_walk, "auto");
		unlink(path);
	}
	/* passthrough.enable: auto by default; every boolean spelling is true or false. */
	assert_int_equal(LOAD(&r, "--passthrough.enable"), 0);
	assert_string_equal(c->passthrough, "true");
	assert_int_equal(LOAD(&r, "--passthrough.enable=no"), 0);
	assert_string_equal(c->passthrough, "false");
	assert_int_equal(LOAD(&r, "--monitor.interval=2s"), 0);
	assert_string_equal(c->passthrough, "auto");
	/* The --no- form takes no value. */
	assert_int_equal(LOAD(&r, "--no-kube.enable=true"), -EINVAL);
	assert_non_null(strstr(r.err, "--no-kube.enable takes no value"));
	run_free(&r);
}

/* Values are checked as they are parsed: the daemon exits 2 before starting anything. */
static void test_values_checked_at_parse(void **state)
{
	struct run r = { 0 };
	char err[512];

	(void)state;
	assert_int_equal(LOAD(&r, "--metrics=node,containers"), -EINVAL);
	assert_non_null(strstr(r.err, "--metrics: invalid item \"containers\" (expected one of: "
				      "node, process, container, pod, vm)"));
	assert_int_equal(LOAD(&r, "--cpu.preferred-meters=rapl,msr"), -EINVAL);
	assert_non_null(strstr(r.err, "invalid item \"msr\""));
	assert_int_equal(LOAD(&r, "--rapl.zones=package,gpu"), -EINVAL);
	assert_int_equal(LOAD(&r, "--log.format=xml"), -EINVAL);
	assert_non_null(strstr(r.err, "--log.format: invalid value \"xml\" (expected one of: text, "
				      "json)"));
	assert_int_equal(LOAD(&r, "--monitor.interval=0s"), -EINVAL);
	assert_int_equal(LOAD(&r, "--monitor.interval=10"), -EINVAL);
	assert_non_null(strstr(r.err, "invalid duration"));
	/* A port out of range: the options' own check (vw_daemon_main, before any start-up). */
	assert_int_equal(LOAD(&r, "--web.listen-address=:8080", "--web.listen-address=:70000"), 0);
	assert_int_equal(vw_daemon_options_check(&r.cfg.common, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "invalid address \":70000\""));
	assert_int_equal(LOAD(&r, "--web.listen-address=[::1]:8080"), 0);
	assert_int_equal(vw_daemon_options_check(&r.cfg.common, err, sizeof(err)), 0);
	run_free(&r);
}

/* --help: headings by prefix, the common flags; --help-all: every flag and Kepler's spellings. */
static void test_help_grouped(void **state)
{
	struct run r = { 0 };
	const char *web, *kube, *pt, *model;

	(void)state;
	assert_int_equal(LOAD(&r, "--help"), VW_CONFIG_EXIT_OK);
	web = strstr(r.out, "\nWeb server:\n  --web.listen-address");
	kube = strstr(r.out, "\nKubernetes:\n");
	pt = strstr(r.out, "\nVMs and passthrough:\n");
	model = strstr(r.out, "\nModel:\n");
	assert_non_null(web);
	assert_non_null(kube);
	assert_non_null(pt);
	assert_non_null(model);
	assert_non_null(strstr(r.out, "\nPower meters:\n"));
	assert_non_null(strstr(r.out, "\nMonitor:\n"));
	/* Each option once, under its heading: --kube.config between Kubernetes and the next. */
	assert_true(strstr(r.out, "--kube.config=PATH") > kube);
	assert_null(strstr(r.out, "--platform.ipmi.host"));
	assert_null(strstr(r.out, "--model.train.interval"));
	assert_non_null(strstr(r.out, "more flags (advanced tuning), each setting's YAML key and "
				      "Kepler's spellings: --help-all"));
	assert_null(strstr(r.out, "YAML: ")); /* the short form */
	assert_int_equal(LOAD(&r, "--help-all"), VW_CONFIG_EXIT_OK);
	assert_non_null(strstr(r.out, "\nPlatform meter: IPMI:\n"));
	assert_non_null(strstr(r.out, "--platform.ipmi.host"));
	assert_non_null(strstr(r.out, "--model.train.interval"));
	assert_non_null(strstr(r.out, "\nKepler's spellings (accepted as they are):\n"));
	assert_non_null(strstr(r.out, "YAML: web.listenAddress\n"));
	assert_non_null(strstr(r.out, "YAML kube.enabled -> --kube.enable"));
	assert_non_null(strstr(r.out, "--debug.pprof, YAML debug.pprof.enabled has no effect: "));
	/* Every option appears exactly once in --help-all. */
	for (size_t i = 0; i < vw_host_program()->n_opts; i++) {
		char flag[128];
		const char *at;

		snprintf(flag, sizeof(flag), "  --%s", vw_host_program()->opts[i].flag);
		at = strstr(r.out, flag);
		while (at && at[strlen(flag)] != '=' && at[strlen(flag)] != ' ' &&
		       at[strlen(flag)] != '\n')
			at = strstr(at + 1, flag);
		if (!at)
			fail_msg("--help-all lacks %s", flag);
	}
	run_free(&r);
}

/* --vm.qemu-users (YAML vm.qemuUsers): by default libvirt's users, KubeVirt's UID and Debian's
 * libvirt-qemu UID, said in --help-all under the VMs' heading; names or UIDs, replaced whole by
 * the flag or the file. */
static void test_qemu_users(void **state)
{
	struct run r = { 0 };
	char *dir = vw_fixture_mkdtemp("qemuusers"), file[600];
	const char *vms, *flag;

	(void)state;
	assert_int_equal(LOAD(&r, "--web.listen-address=:0"), 0);
	assert_int_equal(r.cfg.vm_qemu_users.n, 4);
	assert_string_equal(r.cfg.vm_qemu_users.v[0], "libvirt-qemu");
	assert_string_equal(r.cfg.vm_qemu_users.v[1], "qemu");
	assert_string_equal(r.cfg.vm_qemu_users.v[2], "107");
	assert_string_equal(r.cfg.vm_qemu_users.v[3], "64055"); /* Debian's libvirt-qemu */
	assert_int_equal(LOAD(&r, "--vm.qemu-users=qemu,2000"), 0);
	assert_int_equal(r.cfg.vm_qemu_users.n, 2);
	assert_string_equal(r.cfg.vm_qemu_users.v[1], "2000");
	assert_int_equal(vw_fixture_write(dir, "c.yaml", "vm:\n  qemuUsers: [libvirt-qemu]\n", 0),
			 0);
	snprintf(file, sizeof(file), "--config.file=%s/c.yaml", dir);
	assert_int_equal(LOAD(&r, file), 0);
	assert_int_equal(r.cfg.vm_qemu_users.n, 1);
	assert_string_equal(r.cfg.vm_qemu_users.v[0], "libvirt-qemu");
	assert_int_equal(LOAD(&r, "--help-all"), VW_CONFIG_EXIT_OK);
	vms = strstr(r.out, "\nVMs and passthrough:\n");
	flag = strstr(r.out, "  --vm.qemu-users=USER|UID,...");
	assert_non_null(vms);
	assert_non_null(flag);
	assert_true(flag > vms);
	assert_non_null(strstr(flag, "(default: libvirt-qemu,qemu,107,64055)\n"));
	assert_non_null(strstr(flag, "YAML: vm.qemuUsers\n"));
	run_free(&r);
	vw_fixture_rm(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kepler_file_maps),
		cmocka_unit_test(test_warnings_and_strict),
		cmocka_unit_test(test_deep_nesting),
		cmocka_unit_test(test_many_unknown_keys),
		cmocka_unit_test(test_kepler_flags),
		cmocka_unit_test(test_kepler_max_terminated),
		cmocka_unit_test(test_values_checked_at_parse),
		cmocka_unit_test(test_help_grouped),
		cmocka_unit_test(test_qemu_users),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

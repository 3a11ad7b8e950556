/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Meters that own their options (power/src_*.c): the host's table holds every meter's rows,
 * each meter's struct has a place of its own in the host's configuration, the flags reach the
 * meter's configuration through its configure() (IPMI: driver, privilege, password file,
 * workarounds), a meter's options may ask it first in its chain (hwmon's forceEnabled), the
 * chains' help is made from the chains, and a VM source owns its options the same way.
 */
#include "vw_test.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"
#include "log.h"
#include "meter_fixture.h"
#include "vm_priv.h"
#include "vm_source.h"

static const struct vw_power_source_ops *const *const chains[] = { vw_host_power_sources,
								   vw_host_platform_sources };

/* Each meter's rows are in the host's table, each field inside cfg->meters, in its own struct. */
static void test_rows_in_the_table(void **state)
{
	const struct vw_config_program *p = vw_host_program();
	static struct vw_host_config cfg;
	size_t meters = 0;

	(void)state;
	assert_non_null(p);
	for (size_t c = 0; c < ARRAY_SIZE(chains); c++)
		for (const struct vw_power_source_ops *const *s = chains[c]; *s; s++) {
			const struct vw_source_options *o = (*s)->options;
			const char *base = vw_host_meter_options(&cfg, *s);

			if (!o) {
				assert_null(base);
				continue;
			}
			meters++;
			assert_non_null(base);
			assert_true(base >= (const char *)cfg.meters &&
				    base + o->size <= (const char *)cfg.meters + sizeof(cfg.meters));
			for (size_t i = 0; i < o->n_rows; i++)
				assert_ptr_equal(vw_config_field(p, &cfg, o->rows[i].flag),
						 base + o->rows[i].offset);
		}
	assert_int_equal(meters, 4); /* powercap, hwmon, redfish, ipmi */
	assert_ptr_equal(meter_fixture_find("acpi"), &vw_src_acpi_power_meter);
	assert_ptr_equal(vw_host_meter_options(&cfg, &vw_src_estimator), NULL);
	assert_int_equal(vw_config_check(p, NULL, 0), 0);
}

/* --platform.ipmi.* into the meter's struct vw_ipmi_config, and a refusal naming the flag. */
static void test_ipmi_options(void **state)
{
	char *dir = vw_fixture_mkdtemp("ipmiopts");
	char pw[320];
	struct vw_host_config cfg;
	struct vw_host_meters hm;
	const struct vw_ipmi_config *ic;

	(void)state;
	assert_non_null(dir);
	assert_int_equal(vw_fixture_write(dir, "pw", "s3cret\n", 0600), 0);
	snprintf(pw, sizeof(pw), "--platform.ipmi.password-file=%s/pw", dir);

	/* The device by default: ipmi0 below --host.devfs (/dev unless given). */
	METER_FIXTURE_LOAD(&cfg, "--host.devfs=/host/dev");
	assert_int_equal(vw_host_meters_setup(&hm, &cfg, "n1"), 0);
	ic = meter_fixture_config(&hm, &vw_src_ipmi);
	assert_string_equal(ic->device, "ipmi0");
	assert_string_equal(cfg.devfs, "/host/dev");
	vw_host_meters_fini(&hm);
	meter_fixture_free(&cfg);

	/* The defaults: in band on the device, the user privilege. */
	METER_FIXTURE_LOAD(&cfg, "--platform.ipmi.device=/nonexistent/ipmi0");
	assert_int_equal(vw_host_meters_setup(&hm, &cfg, "n1"), 0);
	ic = meter_fixture_config(&hm, &vw_src_ipmi);
	assert_non_null(ic);
	assert_int_equal(ic->driver, VW_IPMI_DRIVER_INBAND);
	assert_string_equal(ic->device, "/nonexistent/ipmi0");
	assert_int_equal(ic->port, 623);
	assert_int_equal(ic->privilege, VW_IPMI_PRIV_USER);
	assert_int_equal(ic->interval_ns, 2 * VW_NSEC_PER_SEC);
	assert_null(ic->password);
	vw_host_meters_fini(&hm);
	meter_fixture_free(&cfg);

	/* auto with a host: over LAN, the password from its file. */
	METER_FIXTURE_LOAD(&cfg, "--platform.ipmi.host=bmc.example", "--platform.ipmi.port=700",
			   "--platform.ipmi.username=u", pw, "--platform.ipmi.privilege=operator",
			   "--platform.ipmi.workarounds=authcap,intel20",
			   "--platform.ipmi.timeout=1500ms", "--platform.ipmi.staleness=9s");
	assert_int_equal(vw_host_meters_setup(&hm, &cfg, "n1"), 0);
	ic = meter_fixture_config(&hm, &vw_src_ipmi);
	assert_int_equal(ic->driver, VW_IPMI_DRIVER_LAN);
	assert_string_equal(ic->host, "bmc.example");
	assert_int_equal(ic->port, 700);
	assert_string_equal(ic->username, "u");
	assert_string_equal(ic->password, "s3cret");
	assert_int_equal(ic->privilege, VW_IPMI_PRIV_OPERATOR);
	assert_string_equal(ic->workarounds[0], "authcap");
	assert_string_equal(ic->workarounds[1], "intel20");
	assert_null(ic->workarounds[2]);
	assert_int_equal(ic->timeout_ms, 1500);
	assert_int_equal(ic->stale_ns, 9 * VW_NSEC_PER_SEC);
	vw_host_meters_fini(&hm);
	meter_fixture_free(&cfg);

	/* lan without a host, and an empty password file: the start stops. */
	METER_FIXTURE_LOAD(&cfg, "--platform.ipmi.driver=lan");
	assert_int_equal(vw_host_meters_setup(&hm, &cfg, "n1"), -EINVAL);
	vw_host_meters_fini(&hm);
	meter_fixture_free(&cfg);
	assert_int_equal(vw_fixture_write(dir, "pw", "", 0600), 0);
	METER_FIXTURE_LOAD(&cfg, "--platform.ipmi.host=bmc.example", pw);
	assert_int_equal(vw_host_meters_setup(&hm, &cfg, "n1"), -ENODATA);
	vw_host_meters_fini(&hm);
	meter_fixture_free(&cfg);
	vw_fixture_rm(dir);
}

static void assert_order(const char *const *flags, const char *const *want)
{
	struct vw_host_config cfg;
	const char *buf[9];
	const char *const *got = NULL;
	size_t i = 0;

	meter_fixture_load(&cfg, flags);
	assert_int_equal(vw_host_cpu_source_names(&cfg, buf, &got), 0);
	for (; want && want[i]; i++) {
		assert_non_null(got);
		assert_non_null(got[i]);
		assert_string_equal(got[i], want[i]);
	}
	if (want)
		assert_null(got[i]);
	else
		assert_null(got);
	meter_fixture_free(&cfg);
}

#define ORDER(want, ...) assert_order((const char *const[]){ __VA_ARGS__, NULL }, want)

/* The CPU zones' chain: power.sources, else cpu.preferredMeters, else forceEnabled's hwmon
 * first, else all in chain order. */
static void test_cpu_order(void **state)
{
	(void)state;
	ORDER(NULL, "--log.level=error");
	ORDER(((const char *const[]){ "hwmon", "rapl", "estimator", NULL }),
	      "--experimental.hwmon.force-enabled");
	ORDER(((const char *const[]){ "rapl", "estimator", NULL }),
	      "--experimental.hwmon.force-enabled", "--cpu.preferred-meters=rapl");
	ORDER(((const char *const[]){ "estimator", "rapl", NULL }),
	      "--experimental.hwmon.force-enabled", "--power.sources=estimator,rapl");
}

/* The row of the host's table whose flag is flag. */
static const struct vw_option *row(const struct vw_config_program *p, const char *flag)
{
	for (size_t i = 0; i < p->n_opts; i++)
		if (strcmp(p->opts[i].flag, flag) == 0)
			return &p->opts[i];
	fail_msg("no --%s", flag);
	return NULL;
}

/* --power.sources' and --platform.sources' help list their chain's meters, made from the chain
 * (a new meter is listed by its line in chain.c): every name in chain order, each with what it
 * reads, and nothing else between "in order: " and the defaults. */
static void test_chain_help(void **state)
{
	static const struct {
		const char *flag;
		const struct vw_power_source_ops *const *chain;
	} rows[] = { { "power.sources", vw_host_power_sources },
		     { "platform.sources", vw_host_platform_sources } };
	const struct vw_config_program *p = vw_host_program();

	(void)state;
	assert_non_null(p);
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		const char *help = row(p, rows[i].flag)->help, *list;
		char want[512];
		size_t at = 0;

		for (const struct vw_power_source_ops *const *s = rows[i].chain; *s; s++)
			at += (size_t)snprintf(want + at, sizeof(want) - at, "%s%s%s%s%s",
					       s == rows[i].chain ? "" : ", ", (*s)->name,
					       (*s)->about ? " (" : "", (*s)->about ? (*s)->about : "",
					       (*s)->about ? ")" : "");
		assert_true(at < sizeof(want));
		assert_non_null(help);
		list = strstr(help, "in order: ");
		assert_non_null(list);
		list += strlen("in order: ");
		assert_memory_equal(list, want, at);
		assert_true(list[at] == ';' || strncmp(list + at, " (default", 9) == 0);
	}
	assert_string_equal(vw_src_hwmon.about, "sensors a chip rule maps");
	assert_non_null(strstr(row(p, "platform.sources")->help,
			       "ipmi (a BMC's DCMI power reading or watts sensor, in band or over LAN)"));
}

#if VW_HAVE_LIBVIRT
/* libvirt.uri is the libvirt source's own option: its row in the host's table, its struct in
 * cfg->meters, and the flag reaches the source through vw_vm_env.configs (the test driver's
 * one running domain is listed; without it, qemu:///system would wait for a QEMU). */
static void test_vm_source_options(void **state)
{
	static const struct vw_vm_source_ops *const libvirt_only[] = { &vw_vm_libvirt, NULL };
	const struct vw_config_program *p = vw_host_program();
	struct vw_vm_source_config configs[VW_HOST_VM_SOURCES_MAX];
	struct vw_host_config cfg;
	struct vw_vm_env env = { .configs = configs };
	struct vw_vm_info *v = NULL;
	struct vw_vms *vms;
	size_t n = 0;

	(void)state;
	assert_non_null(p);
	assert_string_equal(row(p, "libvirt.uri")->defval, "qemu:///system");
	METER_FIXTURE_LOAD(&cfg, "--log.level=error");
	env.n_configs = vw_host_vm_configs(&cfg, configs);
	assert_int_equal(env.n_configs, 1);
	assert_ptr_equal(configs[0].ops, &vw_vm_libvirt);
	assert_ptr_equal(configs[0].config, vw_config_field(p, &cfg, "libvirt.uri"));
	assert_true((const char *)configs[0].config >= (const char *)cfg.meters &&
		    (const char *)configs[0].config < (const char *)cfg.meters + sizeof(cfg.meters));
	assert_string_equal(*(char *const *)configs[0].config, "qemu:///system");
	meter_fixture_free(&cfg);

	METER_FIXTURE_LOAD(&cfg, "--libvirt.uri=test:///default");
	env.n_configs = vw_host_vm_configs(&cfg, configs);
	env.procfs_fd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
	env.libvirt_helper = VW_HOST_BIN; /* (this test program does not serve as the helper) */
	assert_true(env.procfs_fd >= 0);
	vms = vw_vms_open_with(&env, libvirt_only);
	assert_non_null(vms);
	assert_int_equal(vw_vms_list(vms, &v, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(v[0].name, "test");
	assert_string_equal(v[0].source, "libvirt");
	free(v);
	vw_vms_close(vms);
	close(env.procfs_fd);
	meter_fixture_free(&cfg);
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows_in_the_table),
		cmocka_unit_test(test_ipmi_options),
		cmocka_unit_test(test_cpu_order),
		cmocka_unit_test(test_chain_help),
#if VW_HAVE_LIBVIRT
		cmocka_unit_test(test_vm_source_options),
#endif
	};

	vw_log_set_level(VW_LOG_ERROR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

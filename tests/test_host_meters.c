/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Meters that own their options (power/src_*.c): the host's table holds every meter's rows,
 * each meter's struct has a place of its own in the host's configuration, the flags reach the
 * meter's configuration through its configure() (IPMI: driver, privilege, password file,
 * workarounds), and a meter's options may ask it first in its chain (hwmon's forceEnabled).
 */
#include "vw_test.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fixture.h"
#include "log.h"
#include "meter_fixture.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows_in_the_table),
		cmocka_unit_test(test_ipmi_options),
		cmocka_unit_test(test_cpu_order),
	};

	vw_log_set_level(VW_LOG_ERROR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kepler's BMC file (host/bmc_file.c) and what the host makes of it (the Redfish meter's options, host/power/src_redfish.c): the file
 * as Kepler documents it, read unchanged; our passwordFile and caFile; what is not a BMC file.
 */
#include "vw_test.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bmc_file.h"
#include "fixture.h"
#include "log.h"
#include "meter_fixture.h"

/* Kepler EP-001's example, byte for byte in shape, with a key Kepler's reader ignores too. */
static const char kepler[] =
	"nodes:\n"
	"  baremetal-worker-1: bmc-1\n"
	"  baremetal-worker-2: bmc-2\n"
	"  vm_worker-3: BMC_2_VM\n"
	"  vm_worker-4: BMC_2_VM\n"
	"\n"
	"bmcs:\n"
	"  bmc-1:\n"
	"    endpoint: \"https://192.168.1.100\"\n"
	"    username: \"admin\"\n"
	"    password: \"secret\"\n"
	"    insecure: true  # TLS verification\n"
	"\n"
	"  bmc-2:\n"
	"    endpoint: \"https://192.168.1.101\"\n"
	"    username: \"admin\"\n"
	"    password: \"secret456\"\n"
	"    insecure: false               # Verify TLS certificates\n"
	"    vendor: { name: dell, models: [r750, r650] }\n"
	"\n"
	"  BMC_2_VM:\n"
	"    endpoint: \"https://192.168.1.103\"\n"
	"    username: \"admin\"\n"
	"    passwordFile: /run/secrets/bmc\n"
	"    caFile: /etc/virtwatt/bmc-ca.pem\n"
	"    insecure: false\n";

static int lookup(const char *text, const char *node, struct vw_bmc_entry *e, char *err)
{
	return vw_bmc_file_lookup_buf("bmcs.yaml", text, strlen(text), node, e, err, 256);
}

static void test_kepler_file(void **state)
{
	struct vw_bmc_entry e;
	char err[256];

	(void)state;
	assert_int_equal(lookup(kepler, "baremetal-worker-1", &e, err), 0);
	assert_string_equal(e.id, "bmc-1");
	assert_string_equal(e.endpoint, "https://192.168.1.100");
	assert_string_equal(e.username, "admin");
	assert_string_equal(e.password, "secret");
	assert_null(e.password_file);
	assert_true(e.insecure);
	vw_bmc_entry_clear(&e);

	assert_int_equal(lookup(kepler, "baremetal-worker-2", &e, err), 0);
	assert_string_equal(e.id, "bmc-2");
	assert_string_equal(e.password, "secret456");
	assert_false(e.insecure);
	vw_bmc_entry_clear(&e);

	assert_int_equal(lookup(kepler, "vm_worker-4", &e, err), 0); /* two nodes, one BMC */
	assert_string_equal(e.id, "BMC_2_VM");
	assert_null(e.password);
	assert_string_equal(e.password_file, "/run/secrets/bmc");
	assert_string_equal(e.ca_file, "/etc/virtwatt/bmc-ca.pem");
	vw_bmc_entry_clear(&e);

	assert_int_equal(lookup(kepler, "worker-9", &e, err), -ENOENT);
	assert_non_null(strstr(err, "no BMC for node \"worker-9\""));
}

static void test_not_a_bmc_file(void **state)
{
	static const struct {
		const char *text, *node, *said;
		int r;
	} bad[] = {
		{ "nodes:\n  n1: gone\nbmcs:\n  b: {endpoint: https://x}\n", "n1",
		  "names BMC \"gone\", which bmcs: lacks", -EINVAL },
		{ "nodes: {n1: b}\nbmcs:\n  b: {username: u}\n", "n1", "has no endpoint", -EINVAL },
		{ "nodes: {n1: b}\nbmcs:\n  b: {endpoint: https://x, password: p, passwordFile: /f}\n",
		  "n1", "not both", -EINVAL },
		{ "nodes: {n1: b}\nbmcs:\n  b: {endpoint: https://x, insecure: maybe}\n", "n1",
		  "insecure must be true or false", -EINVAL },
		{ "nodes: [n1, b]\n", "n1", "nodes must be a mapping", -EINVAL },
		{ "nodes: {n1: b}\nbmcs:\n  b: &a {endpoint: https://x}\n", "n1", "bmcs.yaml:3:",
		  -EINVAL },
		{ "nodes: {n1: [b]}\n", "n1", "bmcs.yaml:1:13", -EINVAL },
		{ "- just\n- a list\n", "n1", "must be a mapping", -EINVAL },
	};
	struct vw_bmc_entry e;
	char err[256];

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		err[0] = '\0';
		assert_int_equal(lookup(bad[i].text, bad[i].node, &e, err), bad[i].r);
		if (!strstr(err, bad[i].said))
			fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err, bad[i].said);
		assert_null(e.id);
	}
}

/* The host's side: the node named by the flag (else the node name), the password from its
 * file (first line), an http:// endpoint refused, a file that does not name the node leaving
 * Redfish off rather than failing the daemon. */
static void test_meters_setup(void **state)
{
	char *dir = vw_fixture_mkdtemp("bmcfile");
	char file[320], text[600];
	struct vw_host_config cfg;
	struct vw_host_meters m;
	const struct vw_redfish_config *rf;

	(void)state;
	assert_non_null(dir);
	assert_int_equal(vw_fixture_write(dir, "pw", "s3cret\nignored\n", 0600), 0);
	snprintf(text, sizeof(text),
		 "nodes: {n1: b, n2: plain}\nbmcs:\n"
		 "  b: {endpoint: https://bmc.example, username: u, passwordFile: %s/pw}\n"
		 "  plain: {endpoint: http://bmc.example, username: u, password: p}\n",
		 dir);
	assert_int_equal(vw_fixture_write(dir, "bmcs.yaml", text, 0600), 0);
	snprintf(file, sizeof(file), "--platform.redfish.config-file=%s/bmcs.yaml", dir);

	/* Kepler's experimental.platform.redfish.enabled: false: the file is not read. */
	METER_FIXTURE_LOAD(&cfg, file, "--platform.redfish.interval=2s",
			   "--experimental.platform.redfish.enabled=false");
	assert_int_equal(vw_host_meters_setup(&m, &cfg, "n1"), 0);
	assert_null(meter_fixture_config(&m, &vw_src_redfish));
	vw_host_meters_fini(&m);
	meter_fixture_free(&cfg);

	METER_FIXTURE_LOAD(&cfg, file, "--platform.redfish.interval=2s");
	assert_int_equal(vw_host_meters_setup(&m, &cfg, "n1"), 0);
	rf = meter_fixture_config(&m, &vw_src_redfish);
	assert_non_null(rf);
	assert_string_equal(rf->id, "b");
	assert_string_equal(rf->password, "s3cret");
	assert_int_equal(rf->interval_ms, 2000);
	vw_host_meters_fini(&m);
	meter_fixture_free(&cfg);

	/* The flag beats the node name. */
	METER_FIXTURE_LOAD(&cfg, file, "--platform.redfish.node-name=n2");
	assert_int_equal(vw_host_meters_setup(&m, &cfg, "n1"), -EINVAL);
	vw_host_meters_fini(&m);
	meter_fixture_free(&cfg);

	METER_FIXTURE_LOAD(&cfg, file);
	assert_int_equal(vw_host_meters_setup(&m, &cfg, "elsewhere"), 0);
	assert_null(meter_fixture_config(&m, &vw_src_redfish));
	vw_host_meters_fini(&m);

	snprintf(text, sizeof(text), "%s/pw", dir);
	assert_int_equal(remove(text), 0); /* the password file gone */
	assert_int_not_equal(vw_host_meters_setup(&m, &cfg, "n1"), 0);
	vw_host_meters_fini(&m);
	/* A FIFO in its place: refused at once; open() waited for a writer for ever (the start). */
	assert_int_equal(mkfifo(text, 0600), 0);
	alarm(5);
	assert_int_equal(vw_host_meters_setup(&m, &cfg, "n1"), -EINVAL);
	alarm(0);
	vw_host_meters_fini(&m);
	meter_fixture_free(&cfg);
	vw_fixture_rm(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kepler_file),
		cmocka_unit_test(test_not_a_bmc_file),
		cmocka_unit_test(test_meters_setup),
	};

	vw_log_set_level(VW_LOG_ERROR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

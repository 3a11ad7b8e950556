/* SPDX-License-Identifier: Apache-2.0 */
#include "bmc_fixture.h"

#include "vw_test.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"

bool vw_test_bmc_available(void)
{
	return system("command -v python3 >/dev/null && command -v openssl >/dev/null") == 0;
}

int vw_test_bmc_start(struct vw_test_bmc *b, const char *user, const char *password)
{
	char log[256], port_s[32];
	char *argv[] = { "python3", VW_SOURCE_ROOT "/tests/redfish/bmc.py", "--port", "0",
			 "--control", NULL, "--ca-out", b->ca, "--user", (char *)user,
			 "--password", (char *)password, NULL };

	memset(b, 0, sizeof(*b));
	b->dir = vw_fixture_mkdtemp("bmc");
	if (!b->dir)
		return -1;
	argv[5] = b->dir;
	snprintf(b->ca, sizeof(b->ca), "%s/ca.pem", b->dir);
	snprintf(log, sizeof(log), "%s/bmc.log", b->dir);
	b->pid = vw_fixture_spawn_logged(argv, log);
	if (b->pid < 0)
		return -1;
	for (int i = 0; i < 200; i++) { /* 10 s for openssl and the listening socket */
		char *out = vw_fixture_slurp(log, NULL);
		unsigned port;
		bool up = out && sscanf(out, "port %u", &port) == 1 && strchr(out, '\n');

		free(out);
		if (up) {
			snprintf(port_s, sizeof(port_s), "%u", port);
			snprintf(b->endpoint, sizeof(b->endpoint), "https://127.0.0.1:%s", port_s);
			return 0;
		}
		usleep(50000);
	}
	{
		char *out = vw_fixture_slurp(log, NULL);

		fprintf(stderr, "test BMC did not start: %s\n", out ? out : "(no log)");
		free(out);
	}
	vw_fixture_kill(&b->pid);
	return -1;
}

void vw_test_bmc_stop(struct vw_test_bmc *b)
{
	if (b->pid > 0)
		vw_fixture_stop_daemon(b->pid);
	b->pid = 0;
	if (b->dir)
		vw_fixture_rm(b->dir);
	b->dir = NULL;
}

void vw_test_bmc_ctl(const struct vw_test_bmc *b, const char *name, const char *text)
{
	assert_int_equal(vw_fixture_replace(b->dir, name, text), 0);
}

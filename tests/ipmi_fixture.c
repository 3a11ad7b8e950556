/* SPDX-License-Identifier: Apache-2.0 */
#include "ipmi_fixture.h"

#include "vw_test.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fixture.h"

#ifndef VW_IPMI_DCMI_MODULE
#define VW_IPMI_DCMI_MODULE ""
#endif

/* Whether something listens on UDP 127.0.0.1:port (/proc/net/udp: 0100007F:PORT). */
static bool udp_bound(unsigned port)
{
	char *t = vw_fixture_slurp("/proc/net/udp", NULL);
	char want[32];
	bool bound;

	snprintf(want, sizeof(want), "0100007F:%04X ", port);
	bound = t && strstr(t, want);
	free(t);
	return bound;
}

/* tests/ipmi/<name> with each @KEY@ replaced, written to <dir>/<name>. */
static int instantiate(const struct vw_test_ipmi *b, const char *name, const char *const *subst)
{
	char src[512];
	char *t = NULL;
	int r;

	snprintf(src, sizeof(src), VW_SOURCE_ROOT "/tests/ipmi/%s", name);
	t = vw_fixture_slurp(src, NULL);
	if (!t)
		return -ENOENT;
	for (; subst[0]; subst += 2) {
		char *at;

		while ((at = strstr(t, subst[0]))) {
			char *n = NULL;

			if (asprintf(&n, "%.*s%s%s", (int)(at - t), t, subst[1],
				     at + strlen(subst[0])) < 0) {
				free(t);
				return -ENOMEM;
			}
			free(t);
			t = n;
		}
	}
	r = vw_fixture_write(b->dir, name, t, 0);
	free(t);
	return r;
}

int vw_test_ipmi_restart(struct vw_test_ipmi *b)
{
	char *argv[] = { "ipmi_sim", "-c", b->conf, "-f", b->emu, "-s", b->state, "-n", NULL };

	b->pid = vw_fixture_spawn_tied(argv, b->log);
	if (b->pid < 0)
		return -1;
	for (int i = 0; i < 200; i++) { /* 10 s */
		if (udp_bound(b->port))
			return 0;
		usleep(50000);
	}
	vw_fixture_kill(&b->pid);
	return -1;
}

int vw_test_ipmi_start(struct vw_test_ipmi *b)
{
	char port_s[16], dcmi[320], sdr[360], log[320];
	char *sdrcomp[] = { "sdrcomp", "-o", sdr, VW_SOURCE_ROOT "/tests/ipmi/bmc.sdrs", NULL };

	memset(b, 0, sizeof(*b));
	b->can_run = VW_IPMI_DCMI_MODULE[0] && access("/usr/bin/ipmi_sim", X_OK) == 0;
	if (!b->can_run)
		return 0; /* each case skips, saying why */
	b->dir = vw_fixture_mkdtemp("ipmi");
	b->port = vw_fixture_free_port(SOCK_DGRAM);
	if (!b->dir || !b->port)
		return -1;
	snprintf(port_s, sizeof(port_s), "%u", b->port);
	snprintf(dcmi, sizeof(dcmi), "%s/dcmi", b->dir);
	snprintf(b->conf, sizeof(b->conf), "%s/lan.conf", b->dir);
	snprintf(b->emu, sizeof(b->emu), "%s/bmc.emu", b->dir);
	snprintf(b->log, sizeof(b->log), "%s/ipmi_sim.log", b->dir);
	snprintf(b->state, sizeof(b->state), "%s/state", b->dir);
	/* where `mc_add ... persist_sdr` looks: <state>/ipmi_sim/<name>/sdr.<mc>.main */
	snprintf(sdr, sizeof(sdr), "%s/state/ipmi_sim/vwbmc/sdr.20.main", b->dir);
	snprintf(log, sizeof(log), "%s/sdrcomp.log", b->dir);
	if (instantiate(b, "lan.conf", (const char *const[]){ "@PORT@", port_s, "@MODULE@",
							       VW_IPMI_DCMI_MODULE, "@DCMI@", dcmi,
							       NULL }) < 0 ||
	    instantiate(b, "bmc.emu", (const char *const[]){ "@DIR@", b->dir, NULL }) < 0 ||
	    vw_fixture_mkdir(b->dir, "state/ipmi_sim/vwbmc") < 0 ||
	    vw_fixture_run_logged(sdrcomp, log) != 0)
		return -1;
	if (vw_fixture_replace(b->dir, "cpu", "90\n") < 0 ||
	    vw_fixture_replace(b->dir, "psu1", "130\n") < 0 ||
	    vw_fixture_replace(b->dir, "total", "180\n") < 0 ||
	    vw_fixture_replace(b->dir, "dcmi", "250\n") < 0)
		return -1;
	return vw_test_ipmi_restart(b);
}

void vw_test_ipmi_stop(struct vw_test_ipmi *b)
{
	vw_fixture_kill(&b->pid);
	if (b->dir)
		vw_fixture_rm(b->dir);
	b->dir = NULL;
}

void vw_test_ipmi_ctl(const struct vw_test_ipmi *b, const char *name, const char *text)
{
	assert_int_equal(vw_fixture_replace(b->dir, name, text), 0);
}

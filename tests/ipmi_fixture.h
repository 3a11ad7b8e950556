/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The test BMC for IPMI (tests/ipmi/): OpenIPMI's ipmi_sim over IPMI 2.0 (RMCP+) on 127.0.0.1,
 * its SDRs compiled with sdrcomp, our DCMI Get Power Reading module (dcmi_mod.c) loaded. Its
 * readings are files in its directory the test writes: dcmi (W, or "inactive"/"invalid"), and
 * the sensors' total, cpu, psu1. ipmi_sim is tied to the test process (killed if it dies).
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#define VW_TEST_IPMI_USER "vw"
#define VW_TEST_IPMI_PASSWORD "s3cret"

struct vw_test_ipmi {
	char *dir;
	char state[300];
	char conf[300];
	char emu[300];
	char log[300];
	unsigned port; /* UDP, on 127.0.0.1 */
	pid_t pid;
	bool can_run; /* ipmi_sim and the module are here */
};

/* Set up and start it (DCMI 250 W, total sensor 180 W); 0 also when !can_run (nothing done). */
int vw_test_ipmi_start(struct vw_test_ipmi *b);
/* Start ipmi_sim again on the same port and state (after a kill). */
int vw_test_ipmi_restart(struct vw_test_ipmi *b);
void vw_test_ipmi_stop(struct vw_test_ipmi *b);
/* Replace a reading file (atomically): asserts. */
void vw_test_ipmi_ctl(const struct vw_test_ipmi *b, const char *name, const char *text);

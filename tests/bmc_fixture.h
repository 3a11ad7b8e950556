/* SPDX-License-Identifier: Apache-2.0 */
/* The test BMC (tests/redfish/bmc.py: DMTF's mockup over HTTPS, a CA of its own) for C tests. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

struct vw_test_bmc {
	char *dir;         /* its control directory (watts, mode, hide, expire; sessions) */
	char ca[256];      /* the CA's PEM */
	char endpoint[64]; /* https://127.0.0.1:PORT */
	pid_t pid;
};

/* Whether python3 and the openssl CLI are here (the BMC needs both). */
bool vw_test_bmc_available(void);
/* Start it with one user; 0 or -1 (with the BMC's own log on stderr). */
int vw_test_bmc_start(struct vw_test_bmc *b, const char *user, const char *password);
void vw_test_bmc_stop(struct vw_test_bmc *b);
/* Replace a control file (atomically): asserts. */
void vw_test_bmc_ctl(const struct vw_test_bmc *b, const char *name, const char *text);

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kepler's BMC file (--platform.redfish.config-file), read unchanged:
 *
 *   nodes:                    # node name -> BMC id
 *     worker-1: bmc-1
 *   bmcs:
 *     bmc-1:
 *       endpoint: https://10.0.0.10
 *       username: admin
 *       password: secret      # or, ours: passwordFile: /run/secrets/bmc-1 (its first line)
 *       insecure: false       # true: no certificate check
 *       caFile: /etc/...      # ours: the PEM CA the BMC's certificate is checked against
 *
 * Keys Kepler's reader ignores are ignored here too; every error names file:line:column.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct vw_bmc_entry {
	char *id;
	char *endpoint;
	char *username;
	char *password;      /* NULL with password_file */
	char *password_file; /* NULL with password */
	char *ca_file;
	bool insecure;
};

/*
 * The BMC of `node` in the file at path: 0, -ENOENT when the file does not name the node (err
 * says so), -EINVAL for a file that is not a BMC file, or one whose entry for it lacks an
 * endpoint or has both password and passwordFile (err says where), other -errno from reading.
 */
int vw_bmc_file_lookup(const char *path, const char *node, struct vw_bmc_entry *ret, char *err,
		       size_t errlen);
/* The same over a file already in memory (path only names it in messages). */
int vw_bmc_file_lookup_buf(const char *path, const char *buf, size_t len, const char *node,
			   struct vw_bmc_entry *ret, char *err, size_t errlen);
void vw_bmc_entry_clear(struct vw_bmc_entry *e);

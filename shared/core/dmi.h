/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The machine as its firmware names it (SMBIOS/DMI, <sysfs>/class/dmi/id): a cloud VM's
 * instance type ("Amazon EC2 c5.large", "Google Google Compute Engine"), a server's model. For
 * provenance only: which machine a built-in model's estimate is for.
 */
#pragma once

#include <stddef.h>

/*
 * "<sys_vendor> <product_name>" (either alone where the other is missing or empty) into buf,
 * printable ASCII only (anything else becomes '?'), cut to size. -ENOENT when neither can be
 * read (no DMI: many ARM boards, containers without /sys/class/dmi).
 */
int vw_dmi_machine(int sysfs_fd, char *buf, size_t size);

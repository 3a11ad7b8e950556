/* SPDX-License-Identifier: Apache-2.0 */
#include "dmi.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fileio.h"

/* One DMI string (trailing whitespace stripped), printable; "" when absent. */
static void dmi_string(int sysfs_fd, const char *rel, char *out, size_t size)
{
	out[0] = '\0';
	if (vw_read_str_at(sysfs_fd, rel, out, size) < 0) {
		out[0] = '\0';
		return;
	}
	for (char *p = out; *p; p++)
		if (*p < 0x20 || *p > 0x7e)
			*p = '?';
}

int vw_dmi_machine(int sysfs_fd, char *buf, size_t size)
{
	char vendor[64], product[64];

	dmi_string(sysfs_fd, "class/dmi/id/sys_vendor", vendor, sizeof(vendor));
	dmi_string(sysfs_fd, "class/dmi/id/product_name", product, sizeof(product));
	if (!vendor[0] && !product[0])
		return -ENOENT;
	snprintf(buf, size, "%s%s%s", vendor, vendor[0] && product[0] ? " " : "", product);
	return 0;
}

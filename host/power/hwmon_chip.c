/* SPDX-License-Identifier: Apache-2.0 */
#include "hwmon_chip.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "energy.h"
#include "fileio.h"
#include "macro.h"

#define NS_UW_PER_UJ 1000000000ULL /* ns x µW per µJ */

typedef unsigned __int128 hw_u128;

/* "hwmonN" -> N (decimal, no sign, no leading zero); anything else is not a hwmon device. */
static int parse_hwmon(const char *name, uint32_t *ret)
{
	const char *s = name + strlen(VW_HWMON_PREFIX);
	unsigned v = 0;

	if (strncmp(name, VW_HWMON_PREFIX, strlen(VW_HWMON_PREFIX)) != 0 || *s < '0' || *s > '9' ||
	    (s[0] == '0' && s[1] != '\0'))
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		if (v > 99999999)
			return -ERANGE;
		v = v * 10 + (unsigned)(*s - '0');
	}
	*ret = v;
	return 0;
}

int vw_hwmon_chip_numbers(int classfd, uint32_t **ret, size_t *ret_n)
{
	return vw_dir_numbers(classfd, ".", parse_hwmon, ret, ret_n);
}

/*
 * hwmonN is a symlink into devices/, followed relative to classfd. Drivers still on
 * hwmon_device_register(), acpi_power_meter among them, put no attribute on the class device:
 * `name` and the readings sit on the parent, hwmonN/device (libsensors looks in both places too).
 */
int vw_hwmon_chip_open(int classfd, unsigned index, struct vw_hwmon_chip *ret)
{
	_cleanup_close_ int fd = -1;
	char rel[32];
	int r;

	*ret = (struct vw_hwmon_chip){ .index = index, .dirfd = -1 };
	snprintf(rel, sizeof(rel), VW_HWMON_PREFIX "%u", index);
	fd = vw_dir_open_at(classfd, rel);
	if (fd < 0)
		return fd;
	r = vw_read_str_at(fd, "name", ret->name, sizeof(ret->name));
	if (r == -ENOENT) {
		_cleanup_close_ int dev = vw_dir_open_at(fd, "device");

		if (dev < 0)
			return r;
		r = vw_read_str_at(dev, "name", ret->name, sizeof(ret->name));
		if (r == 0) {
			vw_closep(&fd);
			fd = VW_TAKE_FD(dev);
		}
	}
	if (r < 0)
		return r;
	ret->dirfd = VW_TAKE_FD(fd);
	return 0;
}


/* SPDX-License-Identifier: Apache-2.0 */
/* PCI devices from sysfs (vm_pci.h). */
#include "vm_pci.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "macro.h"

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* n lower-case hex digits at s; -1 when one is not. */
static long hex_field(const char *s, size_t n)
{
	long v = 0;

	for (size_t i = 0; i < n; i++) {
		int d = hex_digit(s[i]);

		if (d < 0)
			return -1;
		v = v * 16 + d;
	}
	return v;
}

bool vw_pci_addr_valid(const char *s)
{
	long slot, fn;

	if (!s || strlen(s) != 12 || s[4] != ':' || s[7] != ':' || s[10] != '.')
		return false;
	slot = hex_field(s + 8, 2);
	fn = hex_field(s + 11, 1);
	return hex_field(s, 4) >= 0 && hex_field(s + 5, 2) >= 0 && slot >= 0 && slot <= 0x1f &&
	       fn >= 0 && fn <= 7;
}

/* A sysfs hex attribute of exactly `digits` digits after "0x" (either case). */
static int read_hex(int dirfd, const char *name, size_t digits, uint32_t *ret)
{
	char buf[32];
	long v;
	int r = vw_read_str_at(dirfd, name, buf, sizeof(buf));

	if (r < 0)
		return r;
	for (char *c = buf; *c; c++)
		if (*c >= 'A' && *c <= 'F')
			*c = (char)(*c - 'A' + 'a');
	if (strlen(buf) != digits + 2 || buf[0] != '0' || buf[1] != 'x' ||
	    (v = hex_field(buf + 2, digits)) < 0)
		return -EINVAL;
	*ret = (uint32_t)v;
	return 0;
}

/* The basename of the device's driver link; "" when it has none (no driver bound). */
static int read_driver(int devfd, char *out, size_t size)
{
	char link[512];
	const char *base;
	ssize_t n = readlinkat(devfd, "driver", link, sizeof(link) - 1);

	out[0] = '\0';
	if (n < 0)
		return errno == ENOENT ? 0 : -errno;
	link[n] = '\0';
	base = strrchr(link, '/');
	base = base ? base + 1 : link;
	if (!*base || strlen(base) >= size)
		return -EINVAL;
	memcpy(out, base, strlen(base) + 1);
	return 0;
}

int vw_pci_read(int sysfs_fd, const char *address, struct vw_pci_dev *ret)
{
	char rel[64];
	_cleanup_close_ int devfd = -1;
	uint32_t vendor, device, class_code;
	int r;

	memset(ret, 0, sizeof(*ret));
	if (!vw_pci_addr_valid(address))
		return -EINVAL;
	snprintf(rel, sizeof(rel), "bus/pci/devices/%s", address);
	devfd = vw_dir_open_at(sysfs_fd, rel);
	if (devfd < 0)
		return devfd;
	r = read_hex(devfd, "vendor", 4, &vendor);
	if (r == 0)
		r = read_hex(devfd, "device", 4, &device);
	if (r == 0)
		r = read_hex(devfd, "class", 6, &class_code);
	if (r == 0)
		r = read_driver(devfd, ret->driver, sizeof(ret->driver));
	if (r != 0) { /* as the chain tests it: class_code is read only when all before were 0 */
		memset(ret, 0, sizeof(*ret));
		return r;
	}
	memcpy(ret->address, address, strlen(address) + 1);
	ret->vendor_id = (uint16_t)vendor;
	ret->device_id = (uint16_t)device;
	ret->class_code = class_code;
	return 0;
}

bool vw_pci_is_gpu(const struct vw_pci_dev *d)
{
	return (d->class_code >> 16) == 0x03 ||
	       ((d->class_code >> 8) == 0x1200 && d->vendor_id == VW_PCI_VENDOR_AMD);
}

const char *vw_pci_vendor_name(uint16_t vendor_id, char buf[8])
{
	static const struct {
		uint16_t id;
		const char *name;
	} known[] = { { VW_PCI_VENDOR_NVIDIA, "nvidia" },
		      { VW_PCI_VENDOR_AMD, "amd" },
		      { VW_PCI_VENDOR_INTEL, "intel" } };

	for (size_t i = 0; i < ARRAY_SIZE(known); i++)
		if (known[i].id == vendor_id)
			return known[i].name;
	snprintf(buf, 8, "%04x", vendor_id);
	return buf;
}

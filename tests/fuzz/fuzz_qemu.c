/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: QEMU command lines from /proc/PID/cmdline (host/vm/vm_qemu.c, what
 * vm_procscan.c reads for every process): the input is the NUL-separated argument list, and
 * its text (up to the first NUL) is also an -smp value. Properties: the binary and the name are
 * valid UTF-8 without control characters (they become label values), the UUID is empty or
 * canonical lower case, the vCPU count lies in 1..16384, and the stable ID of a QEMU without
 * -uuid is a version-8 UUID.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "vm_priv.h"

#define SMP_MAX 16384u /* vm_qemu.c */

static bool label_safe(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return false;
	return vw_fuzz_utf8_valid(s);
}

static bool uuid_canonical(const char *s)
{
	for (size_t i = 0; i < VW_UUID_LEN - 1; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? s[i] != '-' : !strchr("0123456789abcdef", s[i]) || !s[i])
			return false;
	}
	return s[VW_UUID_LEN - 1] == '\0';
}

static void check_cmdline(const uint8_t *data, size_t size)
{
	struct vw_qemu_cmdline c;
	char id[VW_UUID_LEN];
	int r = vw_qemu_cmdline_parse((const char *)data, size, &c);

	vw_fuzz_assert(r == 0 || r == -ENOENT || r == -EINVAL, "parse: %d", r);
	if (r < 0)
		return;
	vw_fuzz_assert(label_safe(c.binary) && label_safe(c.name), "binary \"%s\", name \"%s\"",
		       c.binary, c.name);
	vw_fuzz_assert(!c.uuid[0] || uuid_canonical(c.uuid), "UUID \"%s\"", c.uuid);
	vw_fuzz_assert(c.vcpus >= 1 && c.vcpus <= SMP_MAX, "%u vCPUs", c.vcpus);
	vw_qemu_stable_id(&c, 4242, 123456, "0f8e0a5c-2c1e-4c9a-9a51-6d0e2f7b9a10", id);
	vw_fuzz_assert(uuid_canonical(id) && id[14] == '8' && strchr("89ab", id[19]),
		       "stable ID %s", id);
}

static void check_smp(const uint8_t *data, size_t size)
{
	_cleanup_free_ char *text = vw_fuzz_strdup(data, size);
	unsigned smp = vw_qemu_parse_smp(text);

	vw_fuzz_assert(smp >= 1 && smp <= SMP_MAX, "-smp %s: %u", text, smp);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > (1u << 20))
		return 0;
	check_cmdline(data, size);
	check_smp(data, size);
	return 0;
}

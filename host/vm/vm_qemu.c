/* SPDX-License-Identifier: Apache-2.0 */
/*
 * QEMU command lines, UUIDs and label-safe names.
 *
 * A QEMU is recognised by argv[0] alone (basename qemu-system-*, qemu-kvm or kvm): Kepler's
 * regex over the whole command line (#2276, #2419) also matches a shell or an editor whose
 * arguments mention /usr/bin/qemu-system-x86_64, and misses OpenStack's qemu-kvm in some
 * spellings. Options are read the way QEMU reads them: "-opt" or "--opt", the value in the next
 * argument, the last occurrence winning, QemuOpts values with ",," as an escaped comma.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "macro.h"
#include "utf8.h"
#include "vm_priv.h"

#define SMP_MAX 16384u

int vw_vm_uuid_canon(const char *s, size_t len, char out[VW_UUID_LEN])
{
	if (!s || len != VW_UUID_LEN - 1)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? s[i] != '-' : vw_vm_hexval(s[i]) < 0)
			return -EINVAL;
	}
	for (size_t i = 0; i < len; i++)
		out[i] = (s[i] >= 'A' && s[i] <= 'F') ? (char)(s[i] - 'A' + 'a') : s[i];
	out[len] = '\0';
	return 0;
}

void vw_vm_name_sanitize(char *dst, size_t size, const char *src, size_t len)
{
	const unsigned char *s = (const unsigned char *)src;
	size_t o = 0;

	if (size == 0)
		return;
	for (size_t i = 0; i < len && s[i];) {
		uint32_t cp;
		size_t n = vw_utf8_decode(s + i, len - i, &cp);

		if (n == 0 || s[i] < 0x20 || s[i] == 0x7f) {
			if (o + 1 >= size)
				break;
			dst[o++] = '?';
			i++;
			continue;
		}
		if (o + n >= size)
			break;
		memcpy(dst + o, s + i, n);
		o += n;
		i += n;
	}
	dst[o] = '\0';
}

/* ---- QemuOpts ---- */

/*
 * The next comma-separated element of a QemuOpts string, ",," unescaped, into buf. Returns the
 * position after it, or NULL at the end.
 */
static const char *opts_next(const char *p, char *buf, size_t size)
{
	size_t o = 0;

	if (!*p)
		return NULL;
	for (; *p; p++) {
		if (*p == ',') {
			if (p[1] != ',') {
				p++;
				break;
			}
			p++;
		}
		if (o + 1 < size)
			buf[o++] = *p;
	}
	buf[o] = '\0';
	return p;
}

/* "key=value" -> key matches and *val points at value; an element without '=' has no key. */
static bool opts_key(const char *elem, const char *key, const char **val)
{
	size_t n = strlen(key);

	if (strncmp(elem, key, n) != 0 || elem[n] != '=')
		return false;
	*val = elem + n + 1;
	return true;
}

static void parse_name(const char *val, char *out, size_t size)
{
	char elem[512];
	bool first = true;

	for (const char *p = val; (p = opts_next(p, elem, sizeof(elem))); first = false) {
		const char *v;

		if (opts_key(elem, "guest", &v))
			vw_vm_name_sanitize(out, size, v, strlen(v));
		else if (first && !strchr(elem, '='))
			vw_vm_name_sanitize(out, size, elem, strlen(elem));
	}
}

/* Proxmox VE's "-id VMID" (its own QEMU option; upstream QEMU has none): digits only. */
static void parse_vmid(const char *val, char *out, size_t size)
{
	size_t n = strlen(val);

	out[0] = '\0';
	if (!n || n >= size || strspn(val, "0123456789") != n)
		return;
	memcpy(out, val, n + 1);
}

/* "-smbios type=1,...,uuid=U": U canonical into out, else out untouched. */
static void parse_smbios_uuid(const char *val, char out[VW_UUID_LEN])
{
	char elem[512], uuid[VW_UUID_LEN];
	const char *u = NULL;
	bool type1 = false;

	for (const char *p = val; (p = opts_next(p, elem, sizeof(elem)));) {
		const char *v;

		if (opts_key(elem, "type", &v))
			type1 = strcmp(v, "1") == 0;
		else if (opts_key(elem, "uuid", &v) && vw_vm_uuid_canon(v, strlen(v), uuid) == 0)
			u = uuid;
	}
	if (type1 && u)
		memcpy(out, u, VW_UUID_LEN);
}

static unsigned smp_value(const char *s)
{
	uint64_t v;

	if (vw_parse_u64(s, &v) < 0 || v == 0 || v > SMP_MAX)
		return 0;
	return (unsigned)v;
}

unsigned vw_qemu_parse_smp(const char *val)
{
	static const char *const topo[] = { "sockets", "dies", "clusters", "cores", "threads" };
	unsigned cpus = 0;
	uint64_t product = 1;
	bool any_topo = false, first = true;
	char elem[128];

	for (const char *p = val; (p = opts_next(p, elem, sizeof(elem))); first = false) {
		const char *v;

		if (opts_key(elem, "cpus", &v) || (first && !strchr(elem, '=') && (v = elem))) {
			cpus = smp_value(v);
			continue;
		}
		for (size_t i = 0; i < ARRAY_SIZE(topo); i++) {
			unsigned n;

			if (!opts_key(elem, topo[i], &v) || !(n = smp_value(v)))
				continue;
			product = VW_MIN(product * n, (uint64_t)SMP_MAX);
			any_topo = true;
		}
	}
	if (cpus)
		return cpus;
	return any_topo ? (unsigned)product : 1;
}

/* ---- Command lines ---- */

bool vw_qemu_binary_name(const char *argv0)
{
	const char *base = strrchr(argv0, '/');

	base = base ? base + 1 : argv0;
	return (strncmp(base, "qemu-system-", 12) == 0 && base[12]) || strcmp(base, "qemu-kvm") == 0 ||
	       strcmp(base, "kvm") == 0;
}

/* The next argument of a NUL-separated buffer (the last may lack its NUL), or NULL. */
static const char *next_arg(const char *buf, size_t len, size_t *pos, char *tmp, size_t tmpsize)
{
	const char *a = buf + *pos, *nul;
	size_t n;

	if (*pos >= len)
		return NULL;
	nul = memchr(a, '\0', len - *pos);
	if (nul) {
		*pos = (size_t)(nul - buf) + 1;
		return a;
	}
	/* Unterminated: the read was cut short. Copy what there is. */
	n = VW_MIN(len - *pos, tmpsize - 1);
	memcpy(tmp, a, n);
	tmp[n] = '\0';
	*pos = len;
	return tmp;
}

int vw_qemu_cmdline_parse(const char *buf, size_t len, struct vw_qemu_cmdline *ret)
{
	char tmp[4][512];
	const char *a, *argv0;
	char smbios_uuid[VW_UUID_LEN] = "";
	size_t pos = 0;
	unsigned t = 0;

	memset(ret, 0, sizeof(*ret));
	ret->vcpus = 1;
	argv0 = next_arg(buf, len, &pos, tmp[t++ % 4], sizeof(tmp[0]));
	if (!argv0 || !*argv0)
		return -EINVAL;
	if (!vw_qemu_binary_name(argv0))
		return -ENOENT;
	vw_vm_name_sanitize(ret->binary, sizeof(ret->binary), argv0, strlen(argv0));
	while ((a = next_arg(buf, len, &pos, tmp[t++ % 4], sizeof(tmp[0])))) {
		const char *opt = a, *val;

		if (opt[0] != '-')
			continue;
		opt += opt[1] == '-' ? 2 : 1;
		if (strcmp(opt, "xen-domid") == 0)
			ret->xen = true;
		if (strcmp(opt, "uuid") != 0 && strcmp(opt, "name") != 0 && strcmp(opt, "smp") != 0 &&
		    strcmp(opt, "accel") != 0 && strcmp(opt, "id") != 0 && strcmp(opt, "smbios") != 0)
			continue;
		val = next_arg(buf, len, &pos, tmp[t++ % 4], sizeof(tmp[0]));
		if (!val)
			break;
		if (strcmp(opt, "uuid") == 0 &&
		    vw_vm_uuid_canon(val, strlen(val), ret->uuid) < 0)
			ret->uuid[0] = '\0';
		else if (strcmp(opt, "name") == 0)
			parse_name(val, ret->name, sizeof(ret->name));
		else if (strcmp(opt, "smp") == 0)
			ret->vcpus = vw_qemu_parse_smp(val);
		else if (strcmp(opt, "accel") == 0 && strncmp(val, "xen", 3) == 0)
			ret->xen = true;
		else if (strcmp(opt, "id") == 0)
			parse_vmid(val, ret->vmid, sizeof(ret->vmid));
		else if (strcmp(opt, "smbios") == 0)
			parse_smbios_uuid(val, smbios_uuid);
	}
	/* Proxmox VE gives the VM's identity as its SMBIOS UUID, not -uuid. */
	if (!ret->uuid[0] && smbios_uuid[0])
		memcpy(ret->uuid, smbios_uuid, VW_UUID_LEN);
	return 0;
}

/* ---- Stable IDs ---- */

static uint64_t fnv1a(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* splitmix64's finaliser: spreads FNV's weak high bits. */
static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void vw_qemu_stable_id(const struct vw_qemu_cmdline *c, uint32_t pid, uint64_t start_time,
		       const char *boot_id, char out[VW_UUID_LEN])
{
	char key[1024];
	unsigned char b[16];
	uint64_t h[2];
	int n;

	n = snprintf(key, sizeof(key), "%s%c%s%c%" PRIu32 "%c%" PRIu64 "%c%s", c->binary, 0,
		     c->name, 0, pid, 0, start_time, 0, boot_id ? boot_id : "");
	n = VW_MIN(VW_MAX(n, 0), (int)sizeof(key) - 1);
	h[0] = mix64(fnv1a(0xcbf29ce484222325ULL, key, (size_t)n));
	h[1] = mix64(fnv1a(0x84222325cbf29ce4ULL ^ h[0], key, (size_t)n));
	for (int i = 0; i < 8; i++) {
		b[i] = (unsigned char)(h[0] >> (8 * i));
		b[8 + i] = (unsigned char)(h[1] >> (8 * i));
	}
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x80); /* version 8: custom */
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* variant 10 */
	snprintf(out, VW_UUID_LEN,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
		 b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
		 b[15]);
}

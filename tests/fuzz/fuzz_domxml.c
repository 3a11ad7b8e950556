/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: the libvirt domain XML reader (host/vm/vm_xml.c). The input is the document
 * libvirt's virDomainGetXMLDesc returns. Properties: a refused document leaves every field
 * empty; an accepted one yields a hypervisor label of [a-z0-9], a vCPU count within 0..16384,
 * host devices within their bounds, canonical and each once, and the same values again when they
 * are written back as a minimal domain (attribute values escaped).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "vm_priv.h"

static void attr(FILE *f, const char *name, const char *v)
{
	fprintf(f, " %s='", name);
	for (; *v; v++) {
		switch (*v) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '\'':
			fputs("&apos;", f);
			break;
		default:
			fputc(*v, f);
		}
	}
	fputc('\'', f);
}

static char *write_back(const struct vw_domxml *d, size_t *len)
{
	char *text = NULL;
	FILE *f = open_memstream(&text, len);

	if (!f)
		abort();
	fputs("<domain", f);
	attr(f, "type", d->hypervisor);
	fputs(">", f);
	if (d->vcpus)
		fprintf(f, "<vcpu placement='static'>%u</vcpu>", d->vcpus);
	fputs("<devices>", f);
	if (d->channel_path[0]) {
		fputs("<channel type='unix'><source mode='bind'", f);
		attr(f, "path", d->channel_path);
		fputs("/><target type='virtio' name='" VW_DOMXML_CHANNEL "'/></channel>", f);
	}
	if (d->share_dir[0]) {
		fputs("<filesystem type='mount'><source", f);
		attr(f, "dir", d->share_dir);
		fputs("/><target dir='" VW_DOMXML_SHARE "'/><readonly/></filesystem>", f);
	}
	for (size_t i = 0; i < d->n_pci_hostdev; i++) {
		unsigned dom, bus, slot, fn;

		if (sscanf(d->pci_hostdev[i], "%4x:%2x:%2x.%1x", &dom, &bus, &slot, &fn) != 4)
			abort();
		fprintf(f, "<hostdev mode='subsystem' type='pci' managed='yes'><source><address "
			   "domain='0x%04x' bus='0x%02x' slot='0x%02x' function='0x%x'/></source>"
			   "</hostdev>", dom, bus, slot, fn);
	}
	for (size_t i = 0; i < d->n_mdev; i++)
		fprintf(f, "<hostdev mode='subsystem' type='mdev' model='vfio-pci'><source><address "
			   "uuid='%s'/></source></hostdev>", d->mdev_uuid[i]);
	fputs("</devices></domain>\n", f);
	if (fclose(f) != 0)
		abort();
	return text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct vw_domxml empty;
	struct vw_domxml d, again;
	_cleanup_free_ char *text = NULL;
	size_t len;
	int r = vw_domxml_parse((const char *)data, size, &d);

	if (r < 0) {
		vw_fuzz_assert(r == -EINVAL || r == -EFBIG, "parse: %d", r);
		vw_fuzz_assert(memcmp(&d, &empty, sizeof(d)) == 0, "refused, yet values are set");
		return 0;
	}
	vw_fuzz_assert(vw_fuzz_terminated(d.hypervisor, sizeof(d.hypervisor)) &&
			       vw_fuzz_charset(d.hypervisor, "abcdefghijklmnopqrstuvwxyz0123456789"),
		       "hypervisor \"%s\"", d.hypervisor);
	vw_fuzz_assert(d.vcpus <= 16384, "%u vCPUs", d.vcpus);
	vw_fuzz_assert(vw_fuzz_terminated(d.channel_path, sizeof(d.channel_path)) &&
			       vw_fuzz_terminated(d.share_dir, sizeof(d.share_dir)),
		       "unterminated path");
	vw_fuzz_assert(d.n_pci_hostdev <= VW_VM_MAX_HOSTDEVS && d.n_mdev <= VW_VM_MAX_HOSTDEVS,
		       "%zu PCI, %zu mdev host devices", d.n_pci_hostdev, d.n_mdev);
	for (size_t i = 0; i < d.n_pci_hostdev; i++) {
		unsigned dom, bus, slot, fn;
		char canon[VW_PCI_ADDR_SIZE];

		vw_fuzz_assert(sscanf(d.pci_hostdev[i], "%4x:%2x:%2x.%1x", &dom, &bus, &slot,
				      &fn) == 4 &&
				       slot <= 0x1f && fn <= 7 &&
				       snprintf(canon, sizeof(canon), "%04x:%02x:%02x.%x", dom, bus,
						slot, fn) == 12 &&
				       strcmp(canon, d.pci_hostdev[i]) == 0,
			       "PCI address \"%s\"", d.pci_hostdev[i]);
		for (size_t j = 0; j < i; j++)
			vw_fuzz_assert(strcmp(d.pci_hostdev[i], d.pci_hostdev[j]) != 0, "%s twice",
				       d.pci_hostdev[i]);
	}
	for (size_t i = 0; i < d.n_mdev; i++) {
		vw_fuzz_assert(strlen(d.mdev_uuid[i]) == 36 &&
				       vw_fuzz_charset(d.mdev_uuid[i], "0123456789abcdef-"),
			       "mdev \"%s\"", d.mdev_uuid[i]);
		for (size_t j = 0; j < i; j++)
			vw_fuzz_assert(strcmp(d.mdev_uuid[i], d.mdev_uuid[j]) != 0, "%s twice",
				       d.mdev_uuid[i]);
	}
	text = write_back(&d, &len);
	r = vw_domxml_parse(text, len, &again);
	vw_fuzz_assert(r == 0, "written back, the domain is refused (%d):\n%s", r, text);
	vw_fuzz_assert(strcmp(d.hypervisor, again.hypervisor) == 0 && d.vcpus == again.vcpus &&
			       strcmp(d.channel_path, again.channel_path) == 0 &&
			       strcmp(d.share_dir, again.share_dir) == 0 &&
			       d.n_pci_hostdev == again.n_pci_hostdev && d.n_mdev == again.n_mdev &&
			       memcmp(d.pci_hostdev, again.pci_hostdev,
				      sizeof(d.pci_hostdev)) == 0 &&
			       memcmp(d.mdev_uuid, again.mdev_uuid, sizeof(d.mdev_uuid)) == 0,
		       "written back, the domain reads differently:\n%s", text);
	return 0;
}

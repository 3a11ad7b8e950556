/* SPDX-License-Identifier: Apache-2.0 */
/* The passthrough reader as the guest's options configure it, and where it looked said once. */
#include "guest_reader.h"

#include <errno.h>
#include <string.h>

#include "log.h"

static const char *nonempty(const char *s)
{
	return s && *s ? s : NULL;
}

/* Where deploy/libvirt/README.md mounted the host's folder before it agreed with the guest's
 * default (--passthrough.folder, /run/virtwatt/host): still looked at. */
#define GUEST_FOLDER_ALT "/run/virtwatt-host"

/*
 * Say at start where the passthrough was looked for, each place on its line, and which one is
 * used; none: one warning with the fix (the guest keeps looking, so a channel attached later
 * is picked up).
 */
static void report_search(struct vw_reader *rd, const char *folder)
{
	char buf[2048];
	int r = vw_reader_search_report(rd, buf, sizeof(buf));

	for (char *line = buf, *end; *line; line = end + (*end == '\n')) {
		end = line + strcspn(line, "\n");
		if (end > line)
			vw_info("passthrough: looked at%.*s", (int)(end - line - 1), line + 1);
		if (!*end)
			break;
	}
	if (r == 0)
		return;
	vw_warn("passthrough: no channel or shared folder from the host found: this VM's power is "
		"estimated by a model (virtwatt_guest_power_source_info says estimated), not "
		"measured by its host. To receive it, attach deploy/libvirt/power-channel.xml to "
		"the VM (virsh attach-device --config), or share the host's folder read-only and "
		"mount it at %s (deploy/libvirt/README.md); either is picked up while this runs",
		folder ? folder : "/run/virtwatt/host");
}

int vw_guest_reader_open(const struct vw_guest_config *c, struct vw_reader **ret)
{
	struct vw_reader_config rc = { .path = nonempty(c->passthrough_path),
				       .dev_root = nonempty(c->devfs),
				       .sys_root = nonempty(c->common.sysfs),
				       .folder = nonempty(c->passthrough_folder),
				       .folder_alt = nonempty(c->passthrough_folder) &&
							     strcmp(c->passthrough_folder,
								    GUEST_FOLDER_ALT) != 0
							     ? GUEST_FOLDER_ALT
							     : NULL,
				       .vm_uuid = nonempty(c->passthrough_vm_uuid),
				       .stale_intervals = (unsigned)c->passthrough_stale_after,
				       .max_watts = c->passthrough_max_watts,
				       .hello = true };

	*ret = NULL;
	if (!c->passthrough_enable)
		return 0;
	*ret = vw_reader_new(&rc);
	if (!*ret) {
		vw_error("passthrough: %s", strerror(errno));
		return -errno;
	}
	report_search(*ret, c->passthrough_folder);
	return 0;
}

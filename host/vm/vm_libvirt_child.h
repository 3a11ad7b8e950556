/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The daemon's side of the libvirt helper (vm_libvirt_child.c): struct vw_virt_api answered by
 * short-lived runs of `EXE --internal-libvirt-list=URI` (vm_libvirt_helper.c), so that libvirt
 * is never loaded in the daemon.
 */
#pragma once

#include <stdint.h>

#include "vm_libvirt_priv.h"

struct vw_virt_child;

extern const struct vw_virt_api vw_virt_child_api;

/* exe: the binary to run (NULL: this program, <procfs>/self/exe, if its main() serves the
 * helper: vw_libvirt_helper_here()); timeout_ns: how long one run may take before it is killed
 * (0: 10 s). */
int vw_virt_child_new(int procfs_fd, const char *exe, uint64_t timeout_ns,
		      struct vw_virt_child **ret);
/* From any thread: kill the helper now running, and run none from now on (the source closes:
 * its worker is not kept up to the helper's timeout). */
void vw_virt_child_cancel(struct vw_virt_child *c);
void vw_virt_child_free(struct vw_virt_child *c);

/* ---- For tests ---- */
struct vw_virt_child_counters {
	unsigned runs, failures;
	unsigned xml_held; /* documents held, not yet taken by get_xml */
	size_t held;       /* domains and stats records of the last answer not yet taken */
};
void vw_virt_child_get_counters(struct vw_virt_child *c, struct vw_virt_child_counters *ret);

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libvirt, loaded on first use (dynlib.h), only in the libvirt helper (vm_libvirt_helper.c), a
 * short-lived child of the daemon: libvirt with GLib, libxml2, ICU and its transports is
 * ~14 MiB of resident memory. A node without libvirt installed gets a clear answer naming the
 * package, and the process scan finds its QEMUs. These are the calls the helper makes.
 */
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include "dynlib.h"
#include "vm_libvirt_priv.h"

static struct vw_dynlib lib = VW_DYNLIB("libvirt.so.0");

const char *vw_libvirt_load(void)
{
	return vw_dynlib_need(&lib, "libvirt", "libvirt0");
}

VW_DYNLIB_FORWARD(lib, -1, int, virInitialize, (void), ())
VW_DYNLIB_FORWARD_VOID(lib, virSetErrorFunc, (void *ud, virErrorFunc handler), (ud, handler))
VW_DYNLIB_FORWARD(lib, vw_dynlib_error(&lib), const char *, virGetLastErrorMessage, (void), ())
VW_DYNLIB_FORWARD(lib, NULL, virConnectPtr, virConnectOpenReadOnly, (const char *name), (name))
VW_DYNLIB_FORWARD(lib, -1, int, virConnectClose, (virConnectPtr c), (c))
VW_DYNLIB_FORWARD(lib, -1, int, virConnectIsAlive, (virConnectPtr c), (c))
VW_DYNLIB_FORWARD(lib, -1, int, virConnectListAllDomains,
		  (virConnectPtr c, virDomainPtr **doms, unsigned int flags), (c, doms, flags))
VW_DYNLIB_FORWARD(lib, -1, int, virConnectGetAllDomainStats,
		  (virConnectPtr c, unsigned int stats, virDomainStatsRecordPtr **ret,
		   unsigned int flags),
		  (c, stats, ret, flags))
VW_DYNLIB_FORWARD_VOID(lib, virDomainStatsRecordListFree, (virDomainStatsRecordPtr *stats),
		       (stats))
VW_DYNLIB_FORWARD(lib, -1, int, virDomainFree, (virDomainPtr d), (d))
VW_DYNLIB_FORWARD(lib, (unsigned int)-1, unsigned int, virDomainGetID, (virDomainPtr d), (d))
VW_DYNLIB_FORWARD(lib, NULL, const char *, virDomainGetName, (virDomainPtr d), (d))
VW_DYNLIB_FORWARD(lib, -1, int, virDomainGetUUIDString, (virDomainPtr d, char *buf), (d, buf))
VW_DYNLIB_FORWARD(lib, NULL, char *, virDomainGetXMLDesc, (virDomainPtr d, unsigned int flags),
		  (d, flags))

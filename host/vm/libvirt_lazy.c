/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libvirt, loaded on first use (dynlib.h): when the libvirt VM source opens. libvirt with GLib,
 * libxml2, ICU and its transports is ~7 MiB of resident memory, and a node where the VM level
 * is off, or libvirt is not installed, needs none of it: there the process scan finds QEMUs.
 * These are the calls vm_libvirt.c makes.
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
VW_DYNLIB_FORWARD(lib, NULL, virErrorPtr, virGetLastError, (void), ())
VW_DYNLIB_FORWARD(lib, vw_dynlib_error(&lib), const char *, virGetLastErrorMessage, (void), ())
VW_DYNLIB_FORWARD(lib, -1, int, virEventRegisterDefaultImpl, (void), ())
VW_DYNLIB_FORWARD(lib, -1, int, virEventRunDefaultImpl, (void), ())
VW_DYNLIB_FORWARD(lib, -1, int, virEventAddTimeout,
		  (int frequency, virEventTimeoutCallback cb, void *opaque, virFreeCallback ff),
		  (frequency, cb, opaque, ff))
VW_DYNLIB_FORWARD_VOID(lib, virEventUpdateTimeout, (int timer, int frequency), (timer, frequency))
VW_DYNLIB_FORWARD(lib, -1, int, virEventRemoveTimeout, (int timer), (timer))
VW_DYNLIB_FORWARD(lib, NULL, virConnectPtr, virConnectOpenReadOnly, (const char *name), (name))
VW_DYNLIB_FORWARD(lib, -1, int, virConnectClose, (virConnectPtr c), (c))
VW_DYNLIB_FORWARD(lib, -1, int, virConnectIsAlive, (virConnectPtr c), (c))
VW_DYNLIB_FORWARD(lib, -1, int, virConnectSetKeepAlive,
		  (virConnectPtr c, int interval, unsigned int count), (c, interval, count))
VW_DYNLIB_FORWARD(lib, -1, int, virConnectDomainEventRegisterAny,
		  (virConnectPtr c, virDomainPtr dom, int event_id,
		   virConnectDomainEventGenericCallback cb, void *opaque, virFreeCallback freecb),
		  (c, dom, event_id, cb, opaque, freecb))
VW_DYNLIB_FORWARD(lib, -1, int, virConnectDomainEventDeregisterAny, (virConnectPtr c, int id),
		  (c, id))
VW_DYNLIB_FORWARD(lib, -1, int, virConnectRegisterCloseCallback,
		  (virConnectPtr c, virConnectCloseFunc cb, void *opaque, virFreeCallback freecb),
		  (c, cb, opaque, freecb))
VW_DYNLIB_FORWARD(lib, -1, int, virConnectUnregisterCloseCallback,
		  (virConnectPtr c, virConnectCloseFunc cb), (c, cb))
VW_DYNLIB_FORWARD(lib, -1, int, virConnectListAllDomains,
		  (virConnectPtr c, virDomainPtr **doms, unsigned int flags), (c, doms, flags))
VW_DYNLIB_FORWARD(lib, -1, int, virConnectGetAllDomainStats,
		  (virConnectPtr c, unsigned int stats, virDomainStatsRecordPtr **ret,
		   unsigned int flags),
		  (c, stats, ret, flags))
VW_DYNLIB_FORWARD_VOID(lib, virDomainStatsRecordListFree, (virDomainStatsRecordPtr *stats),
		       (stats))
VW_DYNLIB_FORWARD(lib, NULL, virDomainPtr, virDomainLookupByUUIDString,
		  (virConnectPtr c, const char *uuid), (c, uuid))
VW_DYNLIB_FORWARD(lib, -1, int, virDomainFree, (virDomainPtr d), (d))
VW_DYNLIB_FORWARD(lib, (unsigned int)-1, unsigned int, virDomainGetID, (virDomainPtr d), (d))
VW_DYNLIB_FORWARD(lib, NULL, const char *, virDomainGetName, (virDomainPtr d), (d))
VW_DYNLIB_FORWARD(lib, -1, int, virDomainGetUUIDString, (virDomainPtr d, char *buf), (d, buf))
VW_DYNLIB_FORWARD(lib, NULL, char *, virDomainGetXMLDesc, (virDomainPtr d, unsigned int flags),
		  (d, flags))

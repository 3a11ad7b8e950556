/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internals shared by the VM sources (vm_*.c) and their tests: QEMU command lines, QEMU
 * processes and their vCPU threads under an injected procfs, the small domain XML reader, UUIDs
 * and label-safe names.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vm_source.h"

/* A hex digit's value (either case), or -1. */
static inline int vw_vm_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* ---- UUIDs and names (vm_qemu.c) ---- */

/* A canonical 8-4-4-4-12 UUID (either case) of exactly len bytes into lower case. 0, -EINVAL. */
int vw_vm_uuid_canon(const char *s, size_t len, char out[VW_UUID_LEN]);

/*
 * Copy len bytes of an untrusted name into dst (size >= 1), always NUL-terminated: every byte
 * that is not part of valid UTF-8 (overlong forms, surrogates, > U+10FFFF, truncated sequences)
 * and every control character becomes '?', and a name too long is cut at a character boundary.
 */
void vw_vm_name_sanitize(char *dst, size_t size, const char *src, size_t len);

/* ---- QEMU command lines (vm_qemu.c) ---- */

struct vw_qemu_cmdline {
	char binary[256];       /* argv[0] as given */
	char uuid[VW_UUID_LEN]; /* from -uuid, lower case, or "" */
	char name[256];         /* -name guest=X / -name X, sanitized, or "" */
	char vmid[16];          /* Proxmox VE's -id N (digits only), or "" */
	unsigned vcpus;         /* -smp; 1 when absent */
	bool xen;               /* -xen-domid or -accel xen */
};

/*
 * Parse a NUL-separated /proc/PID/cmdline. 0 when argv[0] names a QEMU system emulator
 * (basename qemu-system-*, qemu-kvm or kvm), -ENOENT when it does not (a process that merely
 * mentions qemu in its arguments), -EINVAL when empty.
 */
int vw_qemu_cmdline_parse(const char *buf, size_t len, struct vw_qemu_cmdline *ret);

/* Whether a path's (or a comm's) last part names a QEMU binary: qemu-system-*, qemu-kvm, kvm. */
bool vw_qemu_binary_name(const char *path);

/* The value of -smp ("4", "cpus=4,sockets=2", "sockets=2,cores=2"): cpus, else the product of the
 * topology, else 1. */
unsigned vw_qemu_parse_smp(const char *val);

/*
 * The stable ID of a QEMU started without -uuid: a version-8 UUID (RFC 9562) whose 122 free bits
 * hash the binary, the name, the PID, its start time and the boot ID. The same process keeps its
 * ID for life; another process (or the same command line started again) gets a new one.
 */
void vw_qemu_stable_id(const struct vw_qemu_cmdline *c, uint32_t pid, uint64_t start_time,
		       const char *boot_id, char out[VW_UUID_LEN]);

/* ---- QEMU processes and threads (vm_threads.c) ---- */

struct vw_qemu_proc {
	uint32_t pid;
	uint32_t uid, euid; /* <pid>/status Uid: real and effective (vm_trust.h judges them) */
	bool root_ns; /* in the procfs's own PID namespace (status NSpid: one PID), not below it */
	uint64_t start_time;
	struct vw_qemu_cmdline cmd;
};

struct vw_qemu_scan {
	struct vw_qemu_proc *procs;
	size_t n;
};

/* Every QEMU process under procfd. */
int vw_qemu_scan(int procfd, struct vw_qemu_scan *ret);
void vw_qemu_scan_free(struct vw_qemu_scan *s);
/* Process pid appended to s (cap: its capacity) when it is a QEMU (whoever runs it: its UIDs
 * recorded): 0 when classified either way, -ESRCH when its command line, status or start time
 * could not be read (gone), -ENOMEM. */
int vw_qemu_scan_one(int procfd, uint32_t pid, struct vw_qemu_scan *s, size_t *cap);
/* The QEMU process running the VM with this UUID, or NULL. Several (the VM started again while
 * its old QEMU exits, or an impostor): one in the procfs's own PID namespace over one in a
 * namespace below it (a container's, which cannot start a process above it), then the one whose
 * -name equals name when given, then the youngest. */
const struct vw_qemu_proc *vw_qemu_scan_find(const struct vw_qemu_scan *s, const char *uuid,
					     const char *name);

/*
 * The QEMU of each VM that libvirt knows by UUID. A VM's qemu_pid is rechecked (same start time:
 * not a reused PID); missing ones are looked up by a scan, done only when some VM lacks its
 * QEMU, among the QEMUs of trusted users only (vm_trust.h; trust NULL: root's). A VM whose vcpus
 * is 0 gets the number of its QEMU's vCPU threads ("CPU N/KVM", ...). VW_VM_SHUTOFF entries are
 * left alone.
 */
struct vw_qemu_trust;
void vw_qemu_resolve(int procfd, struct vw_qemu_starts *starts, const struct vw_qemu_trust *trust,
		     struct vw_vm_info *vms, size_t n);

/* <pid>/status's Uid: line: the real and effective UIDs; *ret_root_ns (may be NULL): whether its
 * NSpid: line names one PID (the process is in the procfs's own PID namespace). -ESRCH when
 * gone or unreadable, -EINVAL when the Uid: line is missing or malformed. */
int vw_qemu_read_uids(int procfd, uint32_t pid, uint32_t *ret_uid, uint32_t *ret_euid,
		      bool *ret_root_ns);

/* <pid>/stat starttime (clock ticks since boot). -ESRCH when the process is gone. */
int vw_qemu_read_start_time(int procfd, uint32_t pid, uint64_t *ret);

/*
 * The start times read in one listing round (vw_vms_list clears it at each round's start):
 * libvirt's PID check and the process scan's both ask for each QEMU's, and <pid>/stat is read
 * once. Each round reads afresh, so a PID reused between two rounds is caught as before.
 */
struct vw_qemu_start_entry {
	uint32_t pid;
	int r; /* what vw_qemu_read_start_time returned */
	uint64_t start;
};
/*
 * A QEMU known alive by a pidfd (Linux 5.3): its start time, read once after the pidfd was
 * opened, holds while the pidfd does not report the process's exit, so a round does not read
 * <pid>/stat again (three system calls a QEMU a round; one epoll_wait a round for them all).
 */
struct vw_qemu_watch {
	uint32_t pid;
	int pidfd;
	bool asked; /* looked up in the round that ended: kept */
	uint64_t start;
};
struct vw_qemu_starts {
	struct vw_qemu_start_entry *e;
	size_t n, cap, next; /* next: where the following lookup starts (sources ask in order) */
	uint64_t reads;      /* <pid>/stat read through it, for the tests */
	/* The watched QEMUs: only where procfd is this process's own procfs (its "self" names this
	 * process: the PIDs are ours to pidfd_open) and pidfds work. */
	struct vw_qemu_watch *w;
	size_t n_w, cap_w;
	int watch;     /* 0: not known yet, 1: watching, -1: not (another procfs, no pidfd) */
	int epfd;      /* the pidfds, when watch == 1 */
	int max_fd;    /* pidfds numbered from this on are not kept (half the open-file limit) */
	bool polled;   /* their exits taken in this round */
	uint64_t exits; /* watched QEMUs seen exit, for the tests */
};
/* vw_qemu_read_start_time, answered from starts when this round read it already (starts NULL:
 * read). */
int vw_qemu_start_time(struct vw_qemu_starts *starts, int procfd, uint32_t pid, uint64_t *ret);
void vw_qemu_starts_clear(struct vw_qemu_starts *starts);
void vw_qemu_starts_free(struct vw_qemu_starts *starts);

/* ---- Domain XML (vm_xml.c) ---- */

#define VW_DOMXML_MAX (4u << 20) /* larger documents are refused, not parsed */
#define VW_DOMXML_CHANNEL "org.virtwatt.power.0"
#define VW_DOMXML_SHARE "virtwatt"

struct vw_domxml {
	char hypervisor[16];     /* Kepler's label from <domain type=>: kvm (kvm, qemu), xen, ... */
	unsigned vcpus;          /* <vcpu current=>, else <vcpu>N</vcpu>; 0 when absent */
	char channel_path[256];  /* <channel type='unix'> with target name VW_DOMXML_CHANNEL */
	char share_dir[256];     /* <filesystem> with target dir VW_DOMXML_SHARE */
	bool share_readonly;     /* ... and <readonly/> in it */
	/* <hostdev mode='subsystem' type='pci'> <source><address domain= bus= slot= function=/>:
	 * numbers as libvirt reads them (0x hex, 0 octal, else decimal; domain may be absent),
	 * within 0xffff, 0xff, 0x1f and 7, canonical "dddd:bb:ss.f"; any other is left out. */
	char pci_hostdev[VW_VM_MAX_HOSTDEVS][VW_PCI_ADDR_SIZE];
	size_t n_pci_hostdev;
	/* <hostdev mode='subsystem' type='mdev'> <source><address uuid=/>, lower case. */
	char mdev_uuid[VW_VM_MAX_HOSTDEVS][VW_UUID_LEN];
	size_t n_mdev;
	/* <metadata><nova:instance xmlns:nova="http://openstack.org/xmlns/libvirt/nova/1.x">
	 * (any prefix bound to that namespace, or none): name, flavor, owner; platform
	 * "openstack" when the element is there. */
	struct vw_vm_owner owner;
};

/*
 * A small, non-recursive reader for the few elements above (a repeated host device is kept
 * once); everything else is skipped. Linear in len whatever the nesting. -EFBIG over
 * VW_DOMXML_MAX, -EINVAL when malformed (unbalanced, a DOCTYPE, an unterminated construct, no
 * <domain> root); *ret is then all empty.
 */
int vw_domxml_parse(const char *xml, size_t len, struct vw_domxml *ret);

/* The XML's host devices into vm's packed lists (vm_hostdev.c): those that do not pack (none,
 * from vw_domxml_parse) are left out. */
void vw_vm_hostdevs_from_xml(struct vw_vm_info *vm, const struct vw_domxml *x);

/* ---- A VM packed (vm_pack.c) ---- */

/*
 * A struct vw_vm_info kept long (libvirt's domain table): its fixed fields inline, its strings
 * (name, channel, share, the owner's, the pod's UID) and host devices in one allocation sized
 * to them, ext, NULL when all are empty: ~100 B and the strings' lengths, against the
 * struct's 2,312 B (three quarters of it the owner's names, the three 256-byte strings and
 * the 64 host-device slots, nearly always empty).
 */
struct vw_vm_packed {
	char uuid[VW_UUID_LEN];
	uint8_t n_pci_hostdev, n_mdev;
	bool share_readonly;
	char hypervisor[16];
	char source[16];
	enum vw_vm_state state;
	unsigned vcpus;
	uint32_t qemu_pid;
	uint64_t qemu_start_time;
	char *ext;
};

/* vm into *ret (its old ext freed), or -ENOMEM with *ret as it was. vw_vm_unpack gives back
 * the very bytes of a vm whose strings are NUL-padded (the lists' memcmp holds). */
int vw_vm_pack(const struct vw_vm_info *vm, struct vw_vm_packed *ret);
void vw_vm_unpack(const struct vw_vm_packed *p, struct vw_vm_info *ret);
void vw_vm_packed_free(struct vw_vm_packed *p);
/* Whether vm is what p holds, field by field: its strings up to their NUL, its host devices up
 * to their counts (the bytes past them do not count). */
bool vw_vm_packed_same(const struct vw_vm_packed *p, const struct vw_vm_info *vm);
/* The strings a packed VM holds, in their order (each NUL-terminated in ext, "" without). */
enum {
	VW_PK_NAME,
	VW_PK_CHANNEL,
	VW_PK_SHARE,
	VW_PK_PLATFORM,
	VW_PK_INSTANCE_NAME,
	VW_PK_FLAVOR,
	VW_PK_USER_ID,
	VW_PK_USER_NAME,
	VW_PK_PROJECT_ID,
	VW_PK_PROJECT_NAME,
	VW_PK_VMID,
	VW_PK_NAMESPACE,
	VW_PK_POD_NAME,
	VW_PK_POD_UID,
	VW_PK__COUNT,
};
/* Each of p's strings where it lies (valid while p is), not unpacked into a whole struct. */
void vw_vm_packed_strings(const struct vw_vm_packed *p, const char *ret[VW_PK__COUNT]);
/* vw_vm_vgpu_owner over a packed list (vm_vgpu.c). */
bool vw_vm_vgpu_owner_packed(const struct vw_vm_packed *vms, size_t n, const char *vm_id,
			     bool is_uuid, const char *mdev, char out[VW_UUID_LEN]);

/* ---- Shared by the sources ---- */



/* vw_vms_open() over another registry (tests: a fake libvirt). */
struct vw_vms *vw_vms_open_with(const struct vw_vm_env *env,
				const struct vw_vm_source_ops *const *sources);

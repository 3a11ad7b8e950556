/* SPDX-License-Identifier: Apache-2.0 */
/*
 * VM sources: static const ops tables probed in preference order. libvirt (read-only, asked
 * by a short-lived helper process, reconcile, retries with backoff) finds the VMs it
 * manages; a process scan (QEMU command lines: plain qemu-system-*, OpenStack's qemu-kvm,
 * Proxmox, KubeVirt virt-launcher) finds the rest. A VM found by both is one VM, keyed by UUID.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"
#include "power_source.h" /* struct vw_source_options: a VM source declares its options as a meter does */

enum vw_vm_state {
	VW_VM_RUNNING,
	VW_VM_PAUSED,
	VW_VM_SHUTOFF, /* gone: reported once, then forgotten */
};

/*
 * Host devices a domain's XML assigns to it (libvirt only: a QEMU command line is not read for
 * them). 32 each: a VM given a whole 8-GPU board also gets its NVSwitches and NICs, and a GPU
 * must not be lost behind them; those beyond are left out.
 */
#define VW_VM_MAX_HOSTDEVS 32
#define VW_PCI_ADDR_SIZE 16 /* "0000:3b:00.0" and its NUL, with room */

/*
 * Who a VM belongs to, where the platform that made it says so (vm_meta.c renders it as
 * virtwatt_vm_info). Every field is "" when unknown; names are label-safe (valid UTF-8, no
 * control characters), IDs as the platform wrote them.
 */
struct vw_vm_owner {
	char platform[16];      /* "openstack" (Nova metadata), "proxmox" (-id), "kubevirt", or "" */
	char instance_name[128]; /* <nova:name>: the instance's display name; KubeVirt: the
				  * VirtualMachine (label vm.kubevirt.io/name) */
	char flavor[64];        /* <nova:flavor name=> */
	char user_id[48], user_name[64];       /* <nova:owner><nova:user uuid=>name */
	char project_id[48], project_name[64]; /* <nova:owner><nova:project uuid=>name */
	char vmid[16];          /* Proxmox VE's VMID (QEMU's -id) */
	char namespace_[64];    /* KubeVirt: the VirtualMachineInstance's namespace */
	char pod_name[254];     /* KubeVirt: its virt-launcher pod (from the pod metadata) */
};

struct vw_vm_info {
	char uuid[VW_UUID_LEN]; /* lower-case canonical */
	uint8_t n_pci_hostdev, n_mdev; /* the host devices below, each at most VW_VM_MAX_HOSTDEVS */
	bool share_readonly;    /* share_dir's <filesystem> has <readonly/> */
	char name[256];         /* libvirt name or -name guest=; may be "" */
	char hypervisor[16];    /* Kepler's label: "kvm" (also for TCG QEMU), "xen", ... */
	char source[16];        /* "libvirt", "procscan" */
	enum vw_vm_state state;
	unsigned vcpus;         /* the domain's or -smp; else its QEMU's vCPU threads; 0 unknown */
	uint32_t qemu_pid;      /* the VMM process (TGID); 0 if unknown */
	uint64_t qemu_start_time; /* /proc/PID/stat starttime: detects PID reuse */
	char channel_path[256]; /* unix socket of the org.virtwatt.power.0 channel, or "" */
	char share_dir[256];    /* source dir of a filesystem with target virtwatt, or "" */
	/*
	 * The host devices, packed: every list of VMs is copied several times a round (each
	 * source's, the merge, the daemon's), and as text the 64 slots took 1.7 KiB of each VM's
	 * 3.4 KiB. <hostdev mode='subsystem' type='pci'>: each <source><address>, as
	 * vw_vm_pci_pack() packs "dddd:bb:ss.f", each once, in document order.
	 */
	uint32_t pci_hostdev[VW_VM_MAX_HOSTDEVS];
	/* <hostdev mode='subsystem' type='mdev'>: each <source><address uuid=> in its 16 bytes
	 * (vw_vm_mdev_pack) (mediated devices: an NVIDIA vGPU is one), each once, in document
	 * order. */
	uint8_t mdev[VW_VM_MAX_HOSTDEVS][16];
	struct vw_vm_owner owner;
	/* The Kubernetes pod its QEMU runs in (the UID its cgroup path names), or "": a KubeVirt
	 * VM's virt-launcher pod (vm_kubevirt.c). */
	char pod_uid[VW_UUID_LEN];
};

/* Host devices packed and back (vm_hostdev.c). A canonical PCI address ("dddd:bb:ss.f", lower
 * case, slot <= 0x1f, function <= 7) into domain << 16 | bus << 8 | slot << 3 | function:
 * 0, or -EINVAL for any other string. */
int vw_vm_pci_pack(const char *addr, uint32_t *ret);
void vw_vm_pci_format(uint32_t packed, char out[VW_PCI_ADDR_SIZE]);
/* A UUID (either case, 8-4-4-4-12) into its 16 bytes: 0, or -EINVAL. */
int vw_vm_mdev_pack(const char *uuid, uint8_t out[16]);
/* 16 bytes as a canonical lower-case UUID. */
void vw_vm_mdev_format(const uint8_t in[16], char out[VW_UUID_LEN]);

struct vw_vm_source_ops;
struct vw_qemu_starts;
struct vw_qemu_trust;

/* A source's options struct (its ops->options), as the daemon filled it. */
struct vw_vm_source_config {
	const struct vw_vm_source_ops *ops;
	const void *config;
};

struct vw_vm_env {
	int procfs_fd;
	/* Each source's options (vw_vm_source_config()); a source without its own: its defaults. */
	const struct vw_vm_source_config *configs;
	size_t n_configs;
	/* libvirt's connection, default "qemu:///system": the libvirt source sets it from its
	 * options (libvirt.uri) when given them; the core (vm_libvirt_core.c) reads it here. */
	const char *libvirt_uri;
	uint64_t reconcile_ns;   /* periodic full reconcile; 0 = 30 s */
	/* ... while the process scan sees every active domain's QEMU (libvirt's QEMU driver): 0 =
	 * the longer of reconcile_ns and 5 min. */
	uint64_t reconcile_covered_ns;
	uint64_t backoff_min_ns, backoff_max_ns; /* libvirt reconnect delay, doubling; 0 = 1 s, 60 s */
	uint64_t list_timeout_ns; /* how long list() waits for fresh libvirt stats; 0 = 500 ms */
	/* libvirt's domain stats (states, and a stop whose QEMU was never found) at most this
	 * often, and at once when an active domain's QEMU process is gone; 0 = 30 s. */
	uint64_t libvirt_stats_every_ns;
	/* The program run as the libvirt helper (vm_libvirt_child.c): NULL, this one
	 * (<procfs>/self/exe); tests name the built virtwatt-host. */
	const char *libvirt_helper;
	uint64_t libvirt_helper_timeout_ns; /* one helper run at most this long; 0 = 10 s */
	/* The process scan reads every process's command line: at most once per this period,
	 * returning its last list (QEMUs re-checked by start time) in between; 0 = every list(). */
	uint64_t procscan_interval_ns;
	/*
	 * Optional: the host's live processes as its CPU accountant last listed them, each given
	 * to `each` (PID, start time in clock ticks since boot, comm, and exe(at): its executable,
	 * NULL for a kernel thread, "" if unknown, read only when asked); -EAGAIN when it has no
	 * current list. With it, a full scan
	 * reads the command line only of processes it has not classified before under the same
	 * PID, start time and comm (new ones, and those that exec'd or renamed themselves), and of
	 * those only where the comm or the executable is a QEMU's name (vw_qemu_binary_name) or
	 * the executable is unknown; without it, or on -EAGAIN, every process's.
	 */
	int (*processes)(void *ud,
			 void (*each)(void *ctx, uint32_t pid, uint64_t start_time, const char *comm,
				      const char *(*exe)(void *at), void *at),
			 void *ctx);
	void *processes_ud;
	/* Set by vw_vms_open() for its sources, NULL otherwise: the QEMU start times read in the
	 * current listing round, so that each QEMU's <pid>/stat is read once a round whichever
	 * source asks first (vm_priv.h, vw_qemu_start_time). */
	struct vw_qemu_starts *qemu_starts;
	/* Whose QEMU processes name VMs (vm_trust.h: root and --vm.qemu-users); NULL: root's
	 * only. The process scan counts the others' in it (its gauge). */
	struct vw_qemu_trust *qemu_trust;
	/*
	 * Optional: whether the Kubernetes pod pod_uid is KubeVirt's virt-launcher, as its
	 * metadata says (vw_vm_kubevirt_pod: 1 yes, 0 no, -ENOENT not listed (yet), -ENODEV no
	 * pod metadata). A QEMU in a pod's cgroup and in a PID namespace below the procfs's (a
	 * container without hostPID: any tenant's root can start one under a QEMU's name) names
	 * a VM only when this says 1, and keeps naming it while it runs; NULL: never.
	 */
	int (*kubevirt_pod)(void *ud, const char *pod_uid);
	void *kubevirt_pod_ud;
};

struct vw_vm_source_ops {
	const char *name;
	/* -ENODEV/-ECONNREFUSED when unavailable now. libvirt keeps retrying inside. */
	int (*open)(const struct vw_vm_env *env, void **ret_state);
	/*
	 * The current VMs (malloc'd array in *ret, caller frees). Never blocks for long: a dead
	 * libvirtd returns the last known list and schedules a reconnect.
	 */
	int (*list)(void *state, struct vw_vm_info **ret, size_t *ret_n);
	void (*close)(void *state);
	/* Optional: after each list round, how many VMs all sources listed together; true when
	 * that woke the source (it lists what it did not before: the round is listed again). */
	bool (*vms_seen)(void *state, size_t n);
	/* Optional: its option rows, their Kepler spellings and its options struct, as a meter's
	 * (power_source.h); the host puts them in its option table and hands the filled struct
	 * back in env->configs. No configure()/first() here. */
	const struct vw_source_options *options;
	/*
	 * Optional: the same VMs, in the same order, each handed to `each` (vm lives only during
	 * the call) instead of a whole list: the registry merges a later source's VMs one by one,
	 * with no list of ~2.3 KiB a VM built each round. It fails (-errno) before handing any VM,
	 * or returns the first error `each` returns (after which it hands no more).
	 */
	int (*list_each)(void *state, int (*each)(void *ctx, const struct vw_vm_info *vm),
			 void *ctx);
	/* Optional: an eventfd (non-blocking, the source's) readable when list() has news for
	 * the VMs' channels since it was last read: a VM started or restored, its channel's path
	 * new (libvirt's, which learns it off the daemon's thread); -1: none now. */
	int (*news_fd)(void *state);
};

/* ops's options struct in env->configs, or NULL. */
const void *vw_vm_source_config(const struct vw_vm_env *env, const struct vw_vm_source_ops *ops);

extern const struct vw_vm_source_ops vw_vm_libvirt; /* only when built with libvirt (VW_HAVE_LIBVIRT) */
extern const struct vw_vm_source_ops vw_vm_procscan;
extern const struct vw_vm_source_ops *const vw_vm_sources[];
/* The settings of the sources this build lacks (libvirt's, built without it): accepted with a
 * warning that says so, as Kepler's settings without effect are; NULL when none is missing. */
extern const struct vw_source_options *const vw_vm_unbuilt_options;

/*
 * The QEMU a process named `comm` works for: vhost-<QEMU PID> kernel threads (before Linux 6.4)
 * do a VM's network and block I/O. 0: none.
 */
uint32_t vw_vm_vhost_owner(const char *comm);

/* All sources that open, merged by UUID (libvirt's data wins); NULL with ENODEV if none opens. */
struct vw_vms;
struct vw_vms *vw_vms_open(const struct vw_vm_env *env);
void vw_vms_close(struct vw_vms *v);
int vw_vms_list(struct vw_vms *v, struct vw_vm_info **ret, size_t *ret_n);
/* A descriptor readable when a source has news for the VMs' channels (its news_fd: libvirt's,
 * the only one that has one), or -1. */
int vw_vms_news_fd(const struct vw_vms *v);
/* Whether a source told news since the last call (its news_fd read empty): a list() now
 * says something new of a VM's channel. */
bool vw_vms_news(struct vw_vms *v);

/*
 * KubeVirt (vm_kubevirt.c): each VM whose QEMU runs in a pod (pod_uid) is named by its
 * VirtualMachineInstance: with pod metadata (pm, may be NULL), from a virt-launcher pod's labels
 * (kubevirt.io=virt-launcher, kubevirt.io/domain, vm.kubevirt.io/name) and the pod's namespace
 * and name, the pod's controller that VMI (vw_vm_kubevirt_pod); a pod known to be no
 * virt-launcher (or labelled so without that controller) leaves the VM as it is (a Kata
 * sandbox's QEMU);
 * without the pod's metadata, from its libvirt domain name, <namespace>_<vmi>, when both parts
 * are valid Kubernetes names. A KubeVirt VM gets platform "kubevirt", name = the VMI's, and
 * owner.namespace_ (and pod_name, instance_name = its VirtualMachine, where the pod says).
 */
struct vw_podmeta;
void vw_vm_kubevirt_resolve(struct vw_vm_info *vms, size_t n, struct vw_podmeta *pm);
/* env->kubevirt_pod over pod metadata (pm: a struct vw_podmeta *, NULL: none): 1 when the pod
 * is listed with KubeVirt's labels (kubevirt.io=virt-launcher and kubevirt.io/domain) and its
 * controller ownerReference is the kubevirt.io VirtualMachineInstance the domain label names, 0
 * when listed without the labels, -EPERM with them but no VMI for controller, -EBADMSG with a VMI
 * controller of another name, -ENOENT when not listed, -ENODEV without pod metadata. */
int vw_vm_kubevirt_pod(void *pm, const char *pod_uid);
/* Whether a libvirt domain name is KubeVirt's <namespace>_<vmi>: the parts into ns and vmi. */
bool vw_vm_kubevirt_split(const char *domain, char ns[64], char vmi[254]);
/* Whether the VM is counted as KubeVirt's (its QEMU's energy is the VM's, not its pod's). */
bool vw_vm_is_kubevirt(const struct vw_vm_info *vm);

/*
 * The running VM of vms[0..n) a vGPU serves, its UUID into out: by the VM id its driver gives
 * (is_uuid: a UUID, KVM's; a domain id names none by itself), else by its mediated device
 * (mdev, "" or NULL: none) among the VMs' mdev host devices. vm_vgpu.c.
 */
bool vw_vm_vgpu_owner(const struct vw_vm_info *vms, size_t n, const char *vm_id, bool is_uuid,
		      const char *mdev, char out[VW_UUID_LEN]);

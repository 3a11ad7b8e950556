/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Publication of each VM's own energy to its guest (issue #5, host side).
 *
 * Two transports, both fed from the same frame:
 *  - the VM's virtio-serial channel (libvirt's org.virtwatt.power.0, a unix socket that QEMU
 *    listens on): a non-blocking connection per VM, at most one frame in flight and one pending
 *    (a newer frame replaces an unsent one, never queued), a 0xFF resync byte first on every
 *    connection, reconnect with backoff when the VM restarts;
 *  - a shared folder per VM, <share_root>/<uuid>/, that the operator exports read-only into the
 *    guest: frame.json plus a powercap-compatible tree (intel-rapl:0 "package-0", and
 *    intel-rapl:0:0 "dram" when the VM has dram energy), every file replaced atomically.
 *
 * Publication is host-driven: tick() publishes when the jittered schedule says so (each interval
 * period +- jitter x period, never under 1 s), whatever guests or scrapers do. Values are rounded
 * (energy down to a step so it stays monotonic, power to the nearest step) and each VM gets only
 * its own numbers. Nothing here ever blocks on a guest, nor on a folder's file system: the
 * folders are written off this thread, a round waiting for them 1 s at most (publish_share_io.c;
 * a folder not back by then is stalled, counted and not written until its file system answers;
 * so is the share root's own open: a root not open within 1 s leaves every folder off meanwhile).
 *
 * One publisher per VM: with a lock directory, a VM is published (its channel connected, its
 * folder written) only while this process holds <lock_dir>/<uuid>.lock. A VM whose lock another
 * process holds is not published; the lock is tried again every second, so a new instance
 * takes over when an old one exits. See docs/publish.md.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"
#include "prom.h"
#include "zone.h"

#define VW_PUBLISH_MIN_PERIOD_NS (1 * 1000000000ULL)     /* the floor, not configurable */
#define VW_PUBLISH_DEFAULT_PERIOD_NS (5 * 1000000000ULL)
#define VW_PUBLISH_DEFAULT_JITTER 0.1
#define VW_PUBLISH_MAX_JITTER 0.5
#define VW_PUBLISH_DEFAULT_ENERGY_STEP_UJ 100000ULL /* 0.1 J */
#define VW_PUBLISH_DEFAULT_POWER_STEP_W 0.1
/* The powercap tree's synthetic max_energy_range_uj: 2^48 uJ (about 32 days at 100 W). */
#define VW_PUBLISH_DEFAULT_MAX_RANGE_UJ (1ULL << 48)
#define VW_PUBLISH_CHANNEL_NAME "org.virtwatt.power.0"

struct vw_publish_opts {
	uint64_t period_ns;     /* 0: VW_PUBLISH_DEFAULT_PERIOD_NS; under 1 s or over 1 h: EINVAL */
	double jitter;          /* fraction of the period, (0, 0.5]; 0: default. Never off. */
	uint64_t energy_step_uj; /* 0: 0.1 J */
	double power_step_w;    /* 0: 0.1 W; at least 0.001 */
	const char *share_root; /* NULL: no shared folders */
	uint64_t max_energy_range_uj; /* 0: VW_PUBLISH_DEFAULT_MAX_RANGE_UJ */
	uint64_t epoch;         /* the host's identity for this run, <= INT64_MAX; 0: random */
	const char *source;     /* "rapl", "estimator"; NULL: "rapl" */
	const char *model;      /* model identity, NULL or "" for a meter */
	uint64_t seed;          /* jitter generator seed; 0: getrandom() */
	uint64_t retain_ns;     /* state of vanished VMs kept this long; 0: 1 h */
	const char *lock_dir;   /* per-VM locks, created (0755) when first needed; NULL: no locks */
	const char *procfs_root; /* names a lock's holder from <procfs>/locks (NULL: from the file);
				  * channels connect through <procfs>/self/fd/N (NULL: by path) */
};

#define VW_PUBLISH_LOCK_RETRY_NS (1 * 1000000000ULL) /* a refused VM's lock is tried this often */

/* One VM's input: its energy per zone over the interval since the previous update. */
struct vw_vm_energy {
	char uuid[VW_UUID_LEN];   /* canonical lower-case */
	char channel_path[256];   /* unix socket of the VM's org.virtwatt.power.0 channel, or "" */
	uint32_t qemu_pid;        /* its QEMU (0: unknown): the channel's listener must be it, or
				   * a root process's bound under channel_path (publish_peer.c) */
	uint64_t qemu_start_time; /* its /proc/PID/stat starttime as listed (0: unknown): a
				   * listener whose PID is QEMU's but started since is refused */
	char share_dir[256];      /* the folder its <filesystem> with target virtwatt exports, or
				   * "": checked to be read-only to the guest (publish_share.c) */
	bool share_readonly;      /* that <filesystem> has <readonly/> */
	size_t n_zones;
	struct vw_zone_owner_energy zones[VW_ZONE__WIRE_COUNT];
};

struct vw_publish_vm_stats {
	bool connected;
	uint64_t published;      /* frames handed to the channel */
	uint64_t sent;           /* frames written completely */
	uint64_t replaced;       /* unsent frames replaced by a newer one */
	uint64_t connects, disconnects, connect_errors, send_errors;
	uint64_t peer_rejected;  /* connects refused: the listener was not the VM's QEMU's (also
				  * in connect_errors) */
	uint64_t sends_refused; /* send() calls a full socket refused (EAGAIN) */
	uint64_t rx_bytes;       /* bytes the guest sent (read and dropped) */
	uint64_t rx_bad;         /* guest lines that were not a valid hello/ack */
	uint64_t rx_paused;      /* rounds whose guest bytes went past the budget (the rest left
				  * unread until the next round) */
	uint64_t hellos;         /* valid hello/ack lines */
	uint64_t ack_seq;        /* the last acknowledged seq */
	uint64_t share_writes, share_errors;
	uint64_t share_timeouts; /* rounds its folder was not written: its file system did not
				  * answer within VW_PUB_SHARE_WAIT_NS (1 s) */
	bool share_stalled;      /* ... and has not answered since */
	size_t bytes_held;       /* frame buffer bytes held for this VM (at most 2 x 32 KiB: a
				  * frame and its model frame, in flight and pending) */
	bool locked;             /* this process holds the VM's lock (always true without locks) */
	uint64_t lock_refused;   /* attempts refused because another process held the lock */
	int lock_holder_pid;     /* that process, as last seen (0: unknown) */
	uint64_t last_ok_unix_ns; /* wall clock of the last frame written whole, either way (0:
				   * none yet) */
	bool has_channel;        /* the VM has an org.virtwatt.power.0 channel */
	bool has_share;          /* ... and a shared folder is written (passthrough.share-root) */
	bool lock_failed;        /* not published: its lock could not be taken (not refused) */
};

#define VW_PUBLISH_SHARE_REASONS 6
/* "first", ..., "unread" for i < VW_PUBLISH_SHARE_REASONS; whether that reason skips the frame. */
const char *vw_publisher_share_reason(size_t i, bool *ret_skipped);

/* The lock's effect on the VMs listed in the latest update. */
struct vw_publish_stats {
	uint64_t lock_refused;      /* lock attempts another process's lock refused, all VMs */
	size_t vms_held_elsewhere;  /* listed VMs not published: another process holds their lock */
	size_t vms_lock_failed;     /* listed VMs not published: their lock could not be taken */
	uint64_t identity_checks;   /* lock files' and sockets' identities checked (stat), all VMs */
	uint64_t peer_rejected;     /* channel connects refused, all VMs: the listener was not the
				     * VM's QEMU's */
	/* Shared folders' frame.json, all VMs: written by reason (first, unwatched, zones, opened,
	 * keepalive) and skipped (unread), in that order (vw_publisher_share_reason()). */
	uint64_t share_frames[VW_PUBLISH_SHARE_REASONS];
	bool share_root;            /* shared folders are on (passthrough.share-root) */
	bool share_root_stalled;    /* ... but the root's open does not answer: none written */
	size_t share_writable_vms;  /* listed VMs published to whose guest may write its folder */
	size_t share_stalled_vms;   /* listed VMs whose folder's file system does not answer */
};

struct vw_publisher;

/* NULL with errno set (EINVAL for bad options, or the share_root's open error). A share_root
 * whose open does not answer within 1 s (its file system hung) is no error:
 * the folders are off until it answers, tried again each round (share_root_stalled). */
struct vw_publisher *vw_publisher_new(const struct vw_publish_opts *opts);
void vw_publisher_free(struct vw_publisher *p);

/*
 * The VMs now and their energy since the previous update (each interval given once: the
 * publisher adds them up, per epoch). VMs missing from the list are closed (their state is
 * kept retain_ns, so one that comes back continues its counters); a changed channel_path
 * (or a new QEMU behind it) reconnects, and the VM's frame goes out at the next tick. Invalid
 * UUIDs are skipped: -EINVAL after processing the rest.
 */
int vw_publisher_update(struct vw_publisher *p, const struct vw_vm_energy *vms, size_t n);

/*
 * A VM listed in the latest update, its channel and QEMU new between updates (path "": none;
 * the VM source's answer came mid-interval: a VM restored): as update() would take them, with
 * no energy. A new channel (another path, or a new QEMU behind it) is connected at the next
 * tick, and the VM's frame goes out then, not at the next round (update() does the same).
 * -ENOENT for a VM not listed (the next update() lists it).
 */
int vw_publisher_set_channel(struct vw_publisher *p, const char *uuid, const char *path,
			     uint32_t qemu_pid, uint64_t qemu_start);

/*
 * Service sockets (drain guest bytes, finish writes, reconnect when due) and publish when due.
 * now_ns is CLOCK_MONOTONIC (or a test's fake clock). Never blocks, but for a round's wait for
 * its folders (1 s at most, real time). ret_published (optional)
 * is true when this call published a round.
 */
int vw_publisher_tick(struct vw_publisher *p, uint64_t now_ns, bool *ret_published);
/* When tick() next has work without any socket event: publication or a reconnect. */
uint64_t vw_publisher_next_due(const struct vw_publisher *p);
/*
 * When the daemon must wake for tick(): next_due() while a VM is listed; while none is (a round
 * would publish to nobody: no wake-up between samples), only when a vanished VM's retention
 * ends (so update() forgets it on time), else UINT64_MAX. The rounds that passed
 * meanwhile are counted by the next tick() on their schedule, so seq is what it would have been.
 */
uint64_t vw_publisher_next_wake(const struct vw_publisher *p);
/* An epoll fd that is readable when a VM socket needs tick(). */
int vw_publisher_fd(const struct vw_publisher *p);

/*
 * The model for VM uuid (listed in the last update) that its guest should estimate with when
 * publication stops (PROTOCOL.md §2a): a Kepler weight file body[0..len), named name
 * ([A-Za-z0-9_.:-]). Unchanged (the same bytes): nothing. A new one goes out with the VM's next
 * frame on its channel (again every VW_PUBLISH_MODEL_RESEND rounds and after each reconnect,
 * for guests that start later) and as model.json in its folder. -ENOENT for a VM not listed,
 * -EINVAL for a body or name a frame cannot carry.
 */
#define VW_PUBLISH_MODEL_RESEND 60
int vw_publisher_set_model(struct vw_publisher *p, const char *uuid, const char *name,
			   const char *body, size_t len);

/* Rounds published so far (the seq of the latest frame). */
uint64_t vw_publisher_seq(const struct vw_publisher *p);
/* -ENOENT for an unknown VM. */
int vw_publisher_vm_stats(const struct vw_publisher *p, const char *uuid,
			  struct vw_publish_vm_stats *ret);
void vw_publisher_stats(const struct vw_publisher *p, struct vw_publish_stats *ret);
/* Each VM listed in the latest update, with its delivery statistics. */
void vw_publisher_each_vm(const struct vw_publisher *p,
			  void (*fn)(void *ud, const char *uuid,
				     const struct vw_publish_vm_stats *st),
			  void *ud);

/* virtwatt_passthrough_lock_refused_total and _vms_not_published; nothing when p is NULL. */
int vw_publisher_render(const struct vw_publisher *p, struct vw_prom_writer *w,
			const char *node_name);
/* Those families (publish_metrics.c), for docs/metrics.md. */
extern const struct vw_family_table vw_publish_family_table;
/* Frame bytes held for all VMs together. */
size_t vw_publisher_bytes_held(const struct vw_publisher *p);
/* Per-VM states held (listed and vanished ones) and vanished ones forgotten early at the cap. */
struct vw_table_stat;
void vw_publisher_table_stat(const struct vw_publisher *p, struct vw_table_stat *ret);

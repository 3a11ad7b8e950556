/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internals of the publisher: the per-VM channel connection, the per-VM shared folder and the
 * per-VM publication lock.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "log.h"
#include "proto.h"
#include "publish.h"

/* ---- channel (publish_chan.c) ---- */

struct vw_pub_buf {
	char *data;
	size_t len, off, cap; /* off: bytes already written (tx only) */
};

/*
 * One VM's connection to its channel socket. Partial-frame policy: a frame whose first byte is
 * on the wire is always finished on that connection (the guest's line stays parseable); a newer
 * frame waits in `next`, replacing any older waiting one. A frame nothing of which was written
 * is replaced outright. A lost connection abandons the partial frame: the next connection starts
 * with 0xFF, which makes the guest's reader drop the partial line, then the newest frame.
 */
struct vw_pub_chan {
	char path[256];
	int fd;                  /* -1: not connected */
	bool connecting;         /* connect() in progress (EINPROGRESS) */
	bool resync;             /* the 0xFF byte is still to be written on this connection */
	bool next_unsent;        /* next holds a frame not yet written on this connection */
	bool delivered;          /* a whole frame went out on this connection */
	bool blocked;            /* the last send() found the socket full: wait for EPOLLOUT */
	uint32_t events;         /* registered epoll events */
	dev_t dev;
	ino_t ino;               /* the socket file we connected to */
	int ifd;                 /* the publisher's inotify fd, or -1 */
	int wd;                  /* its watch of the socket's directory: -1 none (stat each round) */
	struct vw_pub_buf tx;    /* the frame being written */
	struct vw_pub_buf next;  /* the newest frame (kept to resend after a reconnect) */
	uint64_t retry_ns, backoff_ns;
	uint64_t eager_until_ns; /* a new QEMU or path: failed connects retried every
				  * CHAN_EAGER_NS until then, not with the backoff */
	struct vw_framer *rx;    /* guest -> host lines (hello/ack), bounded */
	size_t rx_round;         /* guest bytes read since the last round's offer */
	bool rx_paused;          /* rx_round reached its budget: EPOLLIN off until the next round */
	struct vw_publish_vm_stats st;
	struct vw_complaint complaint;
	pid_t qemu_pid;          /* the VM's QEMU (0: unknown): the listener it must be */
	uint64_t qemu_start;     /* its starttime as listed (0: unknown): a listener with its PID
				  * but another starttime is a process that took the PID since */
	const char *procfs_root; /* connects through <procfs>/self/fd/N of the socket file's O_PATH
				  * fd (the file checked is the file connected to); NULL: its path */
	uint64_t *peer_rejected_total; /* the publisher's count of refused listeners, or NULL */
	struct vw_complaint peer_complaint;
};

/* ---- whose socket a channel path leads to (publish_peer.c) ---- */

/*
 * The socket file at path, opened O_PATH (its stat in ret_st): fd, or -ELOOP when its last
 * component is a symlink, or a directory's is one that neither root nor this process owns;
 * -ENOTSOCK when it is no socket (a FIFO, a regular file: never opened for reading).
 */
int vw_pub_open_socket(const char *path, struct stat *ret_st);

struct vw_pub_peer {
	pid_t pid;               /* the process that called listen(): its pidfd's PID in the procfs
				  * root's namespace, else SO_PEERCRED's (0: not in our PID
				  * namespace) */
	uid_t uid;
	char name[108];          /* the name the listener was bound with ("" unnamed) */
	int pidfd;               /* SO_PEERPIDFD (Linux 6.5), or -1: vw_pub_peer_done() closes it */
	pid_t pidfd_pid;         /* its PID as <procfs>/self/fdinfo says: -1 exited, 0 outside the
				  * root's namespace or not known (SO_PEERCRED's rule then) */
};

/* How the listener's process is named: the kernel's SO_PEERPIDFD, or none (the fallback of
 * kernels before 6.5, forced by tests). */
struct vw_pub_peer_ops {
	const char *name;
	int (*pidfd)(int fd); /* the connected fd's listener's pidfd, or -errno */
};
extern const struct vw_pub_peer_ops vw_pub_peer_kernel, vw_pub_peer_no_pidfd;
/* Tests: the ops every check uses from now on (NULL: the kernel's). */
void vw_pub_peer_use_ops(const struct vw_pub_peer_ops *ops);

/* A pidfd's process's PID in procfs_root's namespace (<procfs>/self/fdinfo/N "Pid:"): -1 when
 * it exited, 0 outside that namespace; -errno when not known (-EOPNOTSUPP: no root). */
int vw_pub_pidfd_pid(const char *procfs_root, int pidfd, pid_t *ret_pid);

/* 0 when the connected socket fd's listener is the VM's QEMU (qemu_pid, when > 0: by its pidfd
 * where the kernel and procfs root tell, else by SO_PEERCRED's PID) or a root process's bound
 * under path; -EPERM else (ret says who it is), -errno when not known. ret holds a pidfd:
 * vw_pub_peer_done() in every case. */
int vw_pub_peer_check(int fd, const char *path, pid_t qemu_pid, const char *procfs_root,
		      struct vw_pub_peer *ret);
void vw_pub_peer_done(struct vw_pub_peer *peer);
/* Is the listener named by its pidfd still alive as the same PID (so what was read of
 * <procfs>/PID since its check was of it)? True when it was not named by a pidfd. */
bool vw_pub_peer_alive(const struct vw_pub_peer *peer, const char *procfs_root);

/* CLOCK_REALTIME in ns: when a frame last reached a guest, for the delivery metrics. */
uint64_t vw_pub_unix_ns(void);

/* ifd: an inotify fd watching each socket's directory from before its connect (then the
 * socket's identity is checked only in rounds after an event), or -1. */
int vw_pub_chan_init(struct vw_pub_chan *c, int ifd);
/* The watch wd was dropped (its directory went): this connection's identity is checked each
 * round until its next connect watches again. */
void vw_pub_chan_unwatched(struct vw_pub_chan *c, int wd);
/* Close the socket and free buffers. */
void vw_pub_chan_done(struct vw_pub_chan *c, int epfd);
/* A new path (or "" for none): disconnect and retry at once. */
void vw_pub_chan_set_path(struct vw_pub_chan *c, int epfd, const char *path, uint64_t now_ns);
/* An offer: a frame line, and the VM's model frame line after it when it is due. */
#define VW_PUB_CHAN_MAX_OFFER (2 * VW_PROTO_MAX_FRAME)
/* Hand over the newest frame; written at once as far as the socket takes it. */
int vw_pub_chan_offer(struct vw_pub_chan *c, int epfd, const char *frame, size_t len,
		      uint64_t now_ns);
/* Handle epoll events for this connection. */
void vw_pub_chan_event(struct vw_pub_chan *c, int epfd, uint32_t events, uint64_t now_ns);
/* The VM's QEMU now (0: unknown) and its starttime (0: unknown); a live connection stays (a new
 * QEMU means a new socket), a disconnected channel is retried at once when it changed. */
void vw_pub_chan_set_qemu(struct vw_pub_chan *c, pid_t qemu_pid, uint64_t qemu_start,
			  uint64_t now_ns);
/* A newer frame comes at the next tick (the channel new: publish_early): the unsent one is
 * dropped (counted replaced), not sent on connecting just before it. */
void vw_pub_chan_drop_unsent(struct vw_pub_chan *c);
/* Connect when disconnected and the retry time has come. */
void vw_pub_chan_poll(struct vw_pub_chan *c, int epfd, uint64_t now_ns);
/* The directory events that may replace or remove a socket or lock file. */
#define VW_PUB_WATCH_MASK                                                                     \
	(IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF |  \
	 IN_ONLYDIR)
/* The socket file was replaced or removed (the VM restarted): reconnect. */
void vw_pub_chan_check_identity(struct vw_pub_chan *c, int epfd, uint64_t now_ns);
/* When poll() has work to do, UINT64_MAX for never. */
uint64_t vw_pub_chan_next_ns(const struct vw_pub_chan *c);
size_t vw_pub_chan_bytes_held(const struct vw_pub_chan *c);

/* ---- shared folder (publish_share.c) ---- */

enum vw_pub_rapl {
	VW_PUB_RAPL_PACKAGE, /* intel-rapl:0, "package-0" */
	VW_PUB_RAPL_DRAM,    /* intel-rapl:0:0, "dram" */
	VW_PUB_RAPL__COUNT,
};

/*
 * When frame.json is replaced (publish_share_decide.c, pure). A frame nobody opens is not
 * written every round: each frame is a new file (a tmpfs inode made and freed, four system
 * calls, ~6 us), and most VMs' guests read the channel. Written when the folder has no frame of
 * this process yet, when opens of frame.json cannot be seen (no inotify watch), when the set of
 * zones changed, while someone opened it within VW_PUB_FRAME_ACTIVE_NS (a reading guest gets
 * every round, as before), and at least every VW_PUB_FRAME_KEEPALIVE_NS; else skipped.
 */
#define VW_PUB_FRAME_FILE "frame.json"
#define VW_PUB_FRAME_ACTIVE_NS (60 * VW_NSEC_PER_SEC)
#define VW_PUB_FRAME_KEEPALIVE_NS (30 * VW_NSEC_PER_SEC)

enum vw_pub_frame_why {
	VW_PUB_FRAME_FIRST,     /* written: no frame of this process yet, or a write failed since */
	VW_PUB_FRAME_UNWATCHED, /* written: its opens cannot be seen (no inotify watch) */
	VW_PUB_FRAME_ZONES,     /* written: the VM's set of zones changed */
	VW_PUB_FRAME_OPENED,    /* written: frame.json was opened within VW_PUB_FRAME_ACTIVE_NS */
	VW_PUB_FRAME_KEEPALIVE, /* written: the last one would be older than the keep-alive */
	VW_PUB_FRAME_UNREAD,    /* skipped: nobody opened it lately, the file is recent enough */
	VW_PUB_FRAME__COUNT,
};

struct vw_pub_frame_state {
	bool written;           /* a frame of this process is in the folder (the last write's) */
	bool watched;           /* opens of frame.json are reported (inotify IN_OPEN) */
	unsigned zones;         /* the frame's zones (1 << enum vw_zone each) */
	uint64_t last_write_ns; /* when it was written (the publisher's clock) */
	bool opened;            /* frame.json was opened since the folder was watched ... */
	uint64_t last_open_ns;  /* ... last seen at this time */
};

/* Write this round's frame (any reason but VW_PUB_FRAME_UNREAD) or skip it. zones: the frame's
 * zones now; now_ns: this round; max_gap_ns: the longest time to the next round (the keep-alive
 * is kept even when the next round comes late). */
enum vw_pub_frame_why vw_pub_frame_decide(const struct vw_pub_frame_state *s, unsigned zones,
					  uint64_t now_ns, uint64_t max_gap_ns);
const char *vw_pub_frame_why_name(enum vw_pub_frame_why why);

/* What a closed folder keeps for a VM that comes back, or for its removal: its energy_uj files'
 * offsets and last values, the folder's time as left. A gone VM holds this (vw_pub_vm), not its
 * folder's work (600 bytes), for the hour it is remembered. */
struct vw_pub_share_kept {
	uint64_t offset_uj[VW_PUB_RAPL__COUNT]; /* energy_uj found at first sight (continued) */
	uint64_t last_uj[VW_PUB_RAPL__COUNT];   /* last value written, unwrapped */
	bool primed[VW_PUB_RAPL__COUNT];        /* offset read back (once per process) */
	bool left_known;            /* left_mtime read when the folder was last left */
	struct timespec left_mtime; /* the folder's mtime then: its last change was ours */
};

struct vw_pub_share {
	int dirfd;                        /* <share_root>/<uuid>, -1 until opened */
	int ifd, wd;                      /* the publisher's inotify fd (or -1), the folder's watch */
	struct vw_pub_frame_state frame;  /* when frame.json was written and opened */
	int zone_fd[VW_PUB_RAPL__COUNT];  /* intel-rapl:0, intel-rapl:0:0; -1 until opened */
	struct vw_pub_share_kept kept;    /* what outlives the folder's open */
	bool written[VW_PUB_RAPL__COUNT]; /* energy_uj holds kept.last_uj (since the zone opened) */
	bool no_fsync; /* the folder is on tmpfs or ramfs, where fsync() does nothing */
	long pid;      /* this process's, for the temps' names (NAME.tmp.PID), asked once */
	struct vw_complaint complaint;
};

/* Once per VM; done() closes the folder (and drops its watch) but keeps the offsets for a VM
 * that comes back, with no system call on the folder itself (its file system may not answer);
 * leave() before it notes the folder's time as this writer leaves it (vw_pub_share_remove()).
 * ifd: an inotify fd told of opens in the folder (IN_OPEN), or -1. */
void vw_pub_share_init(struct vw_pub_share *s, int ifd);
void vw_pub_share_leave(struct vw_pub_share *s);
void vw_pub_share_done(struct vw_pub_share *s);
/*
 * Open (creating it) <root_fd>/<uuid>, once; watched for opens of frame.json when root_path
 * (the share root's path) is given and the watch is on the folder the fd holds.
 */
int vw_pub_share_open(struct vw_pub_share *s, int root_fd, const char *root_path,
		      const char *uuid);
/* frame.json was opened (an IN_OPEN event of the folder's watch) at now_ns. */
void vw_pub_share_opened(struct vw_pub_share *s, uint64_t now_ns);
/* The watch is gone (IN_IGNORED: the folder was removed or unmounted): frames always written. */
void vw_pub_share_unwatched(struct vw_pub_share *s);
/*
 * Write, for each zone with have[z], energy_uj = (continued offset + energy_uj[z]) mod
 * max_range_uj, never below the last value written (and not written again while it has not
 * changed: an idle VM's dram, say), then frame.json when vw_pub_frame_decide() says so
 * (*ret_why, optional, says why it was written or skipped). Opens the folder and tree on first
 * use. -errno; a symlink in place of a directory is refused (-ENOTDIR), never followed, and
 * one in place of a file is replaced, its target untouched.
 */
int vw_pub_share_write(struct vw_pub_share *s, int root_fd, const char *uuid, const char *frame,
		       size_t len, const bool have[VW_PUB_RAPL__COUNT],
		       const uint64_t energy_uj[VW_PUB_RAPL__COUNT], uint64_t max_range_uj,
		       unsigned zones, uint64_t now_ns, uint64_t max_gap_ns,
		       enum vw_pub_frame_why *ret_why);

/*
 * A VM gone for good: remove its folder, <root_fd>/<uuid>, and what this writer made in it
 * (frame.json, model.json, the zones' files and directories, leftover temps), through directory
 * fds opened O_NOFOLLOW: a link planted anywhere in it is never followed (a link in place of a
 * directory is left, with the folder around it). What another hand put there is left too, and
 * the folder with it. left: the folder's mtime when this writer last closed it (NULL: unknown);
 * a folder changed since (the libvirt hook, preparing the VM's start) is kept: -EBUSY. 0 (also
 * when nothing was there), -errno.
 */
int vw_pub_share_remove(int root_fd, const char *uuid, const struct timespec *left);
/*
 * Whether a VM's guest may write the folder it is given (dir: the source of its <filesystem>
 * with target virtwatt, absolute): 0 no (xml_readonly, or dir is on a read-only mount), 1 yes,
 * -errno not known. Looked at below its QEMU's root (<procfs>/PID/root: procfs_fd >= 0,
 * qemu_pid > 0; symlinks resolved there too, vw_open_in_root; that root or dir unreadable: not
 * known), else (no QEMU known) in this process's mount namespace.
 */
int vw_pub_share_export_writable(int procfs_fd, pid_t qemu_pid, const char *dir,
				 bool xml_readonly);

/* The VM's model frame line as model.json in its folder (after a first frame made the folder). */
int vw_pub_share_write_model(struct vw_pub_share *s, const char *line, size_t len);

/* ---- the folders' file-system work, off the publisher's thread (publish_share_io.c) ---- */

/*
 * A file system that stops answering (a dead NFS hard mount, a stuck virtiofsd or FUSE daemon)
 * blocks every system call on it until it answers, if ever. So each VM's folder work (its
 * export's check, the folder's open and watch, its files' replacement, its removal) runs on a
 * worker of a small pool, one piece of work per VM at a time. The publisher waits for a round's
 * work at most VW_PUB_SHARE_WAIT_NS, then gives up on what is not back (that VM's folder is
 * stalled: counted each round, no new work for it until the old comes back); a stalled VM
 * holds one worker, VW_PUB_SHARE_WORKERS more serve the others. A VM freed while its work is
 * out leaves it to the worker, which frees it when it comes back.
 */
#define VW_PUB_SHARE_WAIT_NS (1 * VW_NSEC_PER_SEC)
#define VW_PUB_SHARE_WORKERS 4

/* What a piece of work does, in this order, and what came of it. */
struct vw_pub_share_work {
	bool check_export;       /* vw_pub_share_export_writable() of export_* into export_r */
	char export_dir[256];
	bool export_ro;
	pid_t export_pid;
	bool write;              /* open the folder, vw_pub_share_write() the frame into r, why */
	char *buf;               /* the frame (frame_len), then the model line (model_len, 0: none) */
	size_t frame_len, model_len, cap;
	bool have[VW_PUB_RAPL__COUNT];
	uint64_t energy_uj[VW_PUB_RAPL__COUNT];
	unsigned zones;
	uint64_t now_ns, max_gap_ns, max_range_uj;
	bool leave;              /* vw_pub_share_leave() (the VM goes: the folder closed after) */
	bool remove;             /* vw_pub_share_remove() into r (the folder closed before) */
	int export_r, r, model_r;
	enum vw_pub_frame_why why;
};

struct vw_pub_share_pool;

/* One VM's folder and its work. The publisher's while not out (submit() to collect()), the
 * worker's while out: share and work are touched by one side at a time. */
struct vw_pub_share_job {
	struct vw_pub_share share;
	struct vw_pub_share_work work;
	char uuid[VW_UUID_LEN];
	/* the pool's, under its lock */
	struct vw_pub_share_pool *pool;
	struct vw_pub_share_job *next; /* queued */
	bool out;      /* submitted, not collected (the publisher alone writes it) */
	bool back;     /* done, not collected */
	bool waited;   /* the publisher waits for it (this round's) */
	bool running;  /* a worker runs it */
	bool stuck;    /* ... and the publisher no longer waits for it */
	bool orphan;   /* its VM is gone: the worker frees it */
};

/* root_fd, procfs_fd (-1: none) are duplicated; root_path names the root for the watches. NULL
 * with errno set. */
struct vw_pub_share_pool *vw_pub_share_pool_new(int root_fd, const char *root_path,
						int procfs_fd);
/* Waits for the workers at most VW_PUB_SHARE_WAIT_NS; one still out frees the pool when back.
 * Every job must have been freed. */
void vw_pub_share_pool_free(struct vw_pub_share_pool *pool);
/* ifd: as for vw_pub_share_init(). NULL with errno set. */
struct vw_pub_share_job *vw_pub_share_job_new(struct vw_pub_share_pool *pool, const char *uuid,
					      int ifd);
/* Closes the folder (left to the worker when the job is out); NULL is a no-op. */
void vw_pub_share_job_free(struct vw_pub_share_job *j);
/* Hand the work over: -EBUSY while the previous work is out, -errno when no worker could be
 * started (then nothing is out). */
int vw_pub_share_submit(struct vw_pub_share_job *j);
/* The same, queued without waking an idle worker: the next vw_pub_share_wait() does (a round's
 * work, a piece per VM, woken once). A worker already awake may take it before. */
int vw_pub_share_queue(struct vw_pub_share_job *j);
/* Is the work out (submitted, not collected)? */
bool vw_pub_share_out(struct vw_pub_share_job *j);
/* True once when the work came back: its results are the publisher's to read. */
bool vw_pub_share_collect(struct vw_pub_share_job *j);
/* Wake the idle workers for the work queued, then wait until the work submitted since the last
 * give-up is back, at most timeout_ns. */
void vw_pub_share_wait(struct vw_pub_share_pool *pool, uint64_t timeout_ns);
/* True when the job's work was waited for and is not back: no longer waited for. */
bool vw_pub_share_give_up(struct vw_pub_share_job *j);

/*
 * The share root opened (vw_root_open()) on a thread of its own: its file system may not answer
 * either (a folder of a dead NFS mount), and the pool works in the root it was given. One open
 * out at a time; one that never comes back holds its thread, nothing else.
 */
struct vw_pub_root_open;
/* NULL with errno set. */
struct vw_pub_root_open *vw_pub_root_open_start(const char *path);
/* Wait for it at most timeout_ns: the root's fd (the caller's), -errno (the open failed), or
 * -EINPROGRESS (not back yet: wait again later). */
int vw_pub_root_open_wait(struct vw_pub_root_open *o, uint64_t timeout_ns);
/* An open still out is left to its thread, which closes what it opens; NULL is a no-op. */
void vw_pub_root_open_free(struct vw_pub_root_open *o);

/* ---- publication lock (publish_lock.c) ---- */

#define VW_PUB_LOCK_NOTE_MAX 128

struct vw_pub_lock {
	int fd; /* the locked <uuid>.lock while held, else -1 */
	dev_t dev;
	ino_t ino; /* the file held (its identity never changes while held) */
};

/* Who holds a lock this process was refused. */
struct vw_pub_lock_holder {
	int pid;                         /* from <procfs>/locks; 0: not found */
	char note[VW_PUB_LOCK_NOTE_MAX]; /* what the holder wrote in the file ("" if nothing) */
};

void vw_pub_lock_init(struct vw_pub_lock *l);
bool vw_pub_lock_held(const struct vw_pub_lock *l);
/*
 * Take <dir_fd>/<uuid>.lock without waiting (0 when already held): 0, -EBUSY when another open
 * file holds it (ret_holder, optional, names the holder; procfs_fd may be -1), -EAGAIN when the
 * file was unlinked under it VW_PUB_LOCK_TRIES times running, or another -errno from opening
 * it. The lock taken is on the file the name names once locked (never on an unlinked one).
 * Writes "pid=N epoch=E host=H" into a file it may write.
 */
int vw_pub_lock_take(struct vw_pub_lock *l, int dir_fd, const char *uuid, uint64_t epoch,
		     int procfs_fd, struct vw_pub_lock_holder *ret_holder);
void vw_pub_lock_drop(struct vw_pub_lock *l);
/* How many times take opens the name again when the file it locked was unlinked meanwhile. */
#define VW_PUB_LOCK_TRIES 4
/*
 * A VM gone for good: unlink its lock file while still holding it, then drop the lock. 0, -ENOLCK
 * (not held), -ESTALE (the name no longer names the file held: left alone), -errno from unlinkat
 * (e.g. a lock directory this process may not write). The lock is dropped in every case.
 */
int vw_pub_lock_remove(struct vw_pub_lock *l, int dir_fd, const char *uuid);
/* Is the file held still <dir_fd>/<uuid>.lock? Not when it was removed or replaced: another
 * process may have locked the new one. */
bool vw_pub_lock_still_ours(const struct vw_pub_lock *l, int dir_fd, const char *uuid);

/* ---- the publisher's state (publish.c; each VM's folder side: publish_share_vm.c) ---- */

struct vw_pub_zone {
	bool present;                  /* ever seen */
	bool listed;                   /* in the latest update */
	uint64_t acc_idle, acc_active; /* the caller's intervals added up (this epoch) */
	double idle_w, active_w;
};

struct vw_pub_vm {
	char uuid[VW_UUID_LEN];
	bool listed; /* in the latest update */
	bool live;   /* lock held, channel and folder open */
	bool published; /* a frame went out for it in this epoch */
	bool early;     /* live since the last round: its frame at the next tick (publish_early) */
	uint64_t gone_ns;
	char *channel_path; /* as listed (at most 255 bytes), NULL: none; connected while live */
	pid_t qemu_pid;     /* as listed: the channel's listener must be this QEMU */
	uint64_t qemu_start; /* ... started then (/proc/PID/stat starttime; 0 unknown) */
	struct vw_pub_zone z[VW_ZONE__WIRE_COUNT];
	struct vw_pub_chan chan;
	/* Its folder and the work on it, done off this thread (publish_share_io.c; NULL: no
	 * share root). What the folder's watch said meanwhile is kept here and handed over with
	 * the next work: its wd as last known, an open of frame.json, a watch dropped. */
	struct vw_pub_share_job *share_job; /* while its folder is open or its work out */
	struct vw_pub_share_kept share_kept; /* ... else what the folder keeps */
	int share_wd, share_ignored_wd;
	bool share_opened;
	uint64_t share_opened_ns;
	bool share_close_due; /* closed while its work was out: the folder closed when back */
	bool share_stalled;   /* its work not back within VW_PUB_SHARE_WAIT_NS, still out */
	uint64_t share_writes, share_errors, share_timeouts;
	uint64_t share_ok_unix_ns; /* wall clock of the last complete folder write */
	struct vw_complaint share_complaint, stall_complaint;
	/* The export of its folder to the guest as last checked (vw_pub_share_export_writable):
	 * the source folder (NULL: none), its <readonly/>, the QEMU it was asked of, the answer (1
	 * the guest may write it, 0 not, -errno not known: asked again at the next update). */
	char *share_export;
	bool share_export_ro;
	pid_t share_export_pid;
	uint64_t share_export_start;
	int share_writable;
	bool share_export_due; /* to check with its folder's next work */
	struct vw_pub_lock lock;
	/* Its model frame line (vw_publisher_set_model), and when it last went out. */
	char *model_line;
	size_t model_len;
	char model_sha[65];
	uint64_t model_rounds; /* rounds since it went on the channel */
	bool model_share_due;  /* model.json to (re)write */
	int lock_err; /* the last attempt: 0, -EBUSY (another process holds it) or -errno */
	bool lock_ours_once; /* this process held its lock at some time: the file is ours to remove */
	int lock_holder_pid;
	uint64_t lock_retry_ns, lock_refused;
	struct vw_complaint lock_complaint;
};

struct vw_publisher {
	uint64_t period_ns, energy_step_uj, max_range_uj, epoch, retain_ns, rng;
	double jitter, power_step_w;
	char source[16], model[128];
	int epfd, share_fd, lock_fd, procfs_fd;
	char *share_root; /* its path, for the folders' watches */
	int share_ifd;    /* inotify: opens in the VMs' folders (IN_OPEN), or -1 */
	struct vw_pub_share_pool *share_pool; /* the folders' work (NULL: no share root open) */
	/* The root's open while it is not (share_fd -1): one out at a time, waited for
	 * VW_PUB_SHARE_WAIT_NS, tried again each round until it answers. */
	struct vw_pub_root_open *share_root_open;
	bool share_root_stalled; /* ... not back within VW_PUB_SHARE_WAIT_NS, and not since */
	struct vw_complaint share_root_complaint;
	uint64_t share_frames[VW_PUB_FRAME__COUNT]; /* frame.json written by reason, skipped */
	/* inotify on the lock directory and the channels' socket directories: a round after no
	 * event checks no lock file's nor socket's identity (two system calls a VM a round). */
	int ifd, lock_wd;
	bool watch_dirty; /* an event (or no watch): check every identity this round */
	uint64_t identity_checks;
	char *lock_dir;
	uint64_t lock_refused;
	char *procfs_root;      /* channels connect through <procfs>/self/fd/N (publish_peer.c) */
	uint64_t peer_rejected; /* channel listeners refused, all VMs */
	struct vw_complaint lock_dir_complaint;
	struct vw_pub_vm **vms;
	size_t n_vms, cap_vms;
	uint64_t seq, next_due_ns, now_ns;
	bool started;
	bool published_none; /* the last round had no VM to publish to */
	struct vw_complaint bad_uuid;
	struct vw_complaint share_writable_complaint;
	uint64_t evictions; /* vanished VMs forgotten early, past PUB_MAX_RETAINED */
	uint64_t mseq;      /* model frames made (PROTOCOL.md §2a: newer, higher) */
};

/* Every event queued on the inotify fd, each handed to on(); the loop ends on an empty queue.
 * -errno where a read failed otherwise (0 from read() is -EIO), 0 once drained. */
int vw_pub_inotify_drain(int fd,
			 void (*on)(struct vw_publisher *p, const struct inotify_event *ev,
				    uint64_t now_ns, size_t *hint),
			 struct vw_publisher *p, uint64_t now_ns);

/* The VMs' locks, from the publisher's thread (publish_vm_lock.c): the watches' events read
 * before a round, the lock directory opened (0 or -errno, said), and a VM's lock taken: true when
 * it is ours (or there is no lock directory); the VM's counters of this epoch start when the lock
 * is first taken (what it used while another process published it is that process's). */
void vw_pub_watch_drain(struct vw_publisher *p);
int vw_pub_lock_dir_open(struct vw_publisher *p);
bool vw_pub_vm_lock(struct vw_publisher *p, struct vw_pub_vm *vm);

/* A VM's shared folder, from the publisher's thread (publish_share_vm.c): the export's check
 * asked (at an update), the watch's news read (before a round), the folder's work collected,
 * the round's frame handed over, the folder closed (the VM goes) or removed (forgotten,
 * waited for VW_PUB_SHARE_WAIT_NS at most), and the round's work waited for at its end. */
void vw_pub_vm_check_export(struct vw_pub_vm *vm, const struct vw_vm_energy *in);
void vw_pub_vm_share_drain(struct vw_publisher *p, uint64_t now_ns);
void vw_pub_vm_share_collect(struct vw_publisher *p, struct vw_pub_vm *vm);
void vw_pub_vm_share_frame(struct vw_publisher *p, struct vw_pub_vm *vm,
			   const struct vw_host_frame *f, const char *buf, size_t len,
			   uint64_t now_ns);
void vw_pub_vm_share_close(struct vw_publisher *p, struct vw_pub_vm *vm);
int vw_pub_vm_share_remove(struct vw_publisher *p, struct vw_pub_vm *vm);
void vw_pub_vm_share_round_end(struct vw_publisher *p);
/* The share root opened (a new open waited for timeout_ns, one still out looked at): 0 open
 * (the folders' pool made, each VM's folder work with it), -EINPROGRESS its file system does
 * not answer (said once, counted while so), -errno the open failed (said when say_errors). */
int vw_pub_share_root_open(struct vw_publisher *p, uint64_t timeout_ns, bool say_errors);

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The VMs' folder work off the publisher's thread (publish_priv.h): a small pool of detached
 * workers and one queue. The publisher submits a VM's work only when its previous work came
 * back, so a VM has one piece out at most, and a worker stuck on a file system that does not
 * answer is one per stalled VM, never one per round. Workers start when work waits and none is
 * free, up to VW_PUB_SHARE_WORKERS besides those stuck, and leave when more than that are free.
 * The pool is freed by the publisher or, when a worker is still out then, by the last worker.
 * A round's work is queued without waking a worker each (vw_pub_share_queue()) and the idle
 * workers woken once, by the round's wait; a job back wakes the publisher only when it was the
 * last one waited for: two futex wake-ups a round, not two a VM (bench/README.md, 2026-11-30).
 * The share root's own open runs on a thread of its own, before the pool has a root to work in.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fileio.h"
#include "macro.h"
#include "publish_priv.h"
#include "thread.h"

struct vw_pub_share_pool {
	pthread_mutex_t mu;
	pthread_cond_t work; /* a job queued, or stop */
	pthread_cond_t back; /* a job back, or a worker gone */
	struct vw_pub_share_job *head, *tail;
	unsigned workers, idle, queued;
	unsigned stuck;      /* workers on a job the publisher no longer waits for */
	unsigned waited;     /* jobs out that the publisher waits for */
	bool stop;           /* the publisher let go: workers leave when nothing is queued */
	bool left;           /* ... with workers out: the last of them frees the pool */
	int root_fd, procfs_fd;
	char *root_path;
};

static void pool_destroy(struct vw_pub_share_pool *pool)
{
	pthread_cond_destroy(&pool->work);
	pthread_cond_destroy(&pool->back);
	pthread_mutex_destroy(&pool->mu);
	vw_closep(&pool->root_fd);
	vw_closep(&pool->procfs_fd);
	free(pool->root_path);
	free(pool);
}

static int dup_fd(int fd)
{
	return fd < 0 ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 3);
}

struct vw_pub_share_pool *vw_pub_share_pool_new(int root_fd, const char *root_path,
						int procfs_fd)
{
	struct vw_pub_share_pool *pool = calloc(1, sizeof(*pool));
	pthread_condattr_t ca;
	int e;

	if (!pool)
		return NULL;
	pool->root_fd = dup_fd(root_fd);
	pool->procfs_fd = dup_fd(procfs_fd);
	pool->root_path = root_path ? strdup(root_path) : NULL;
	pthread_mutex_init(&pool->mu, NULL);
	pthread_cond_init(&pool->work, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&pool->back, &ca);
	pthread_condattr_destroy(&ca);
	if (pool->root_fd < 0 || (procfs_fd >= 0 && pool->procfs_fd < 0) ||
	    (root_path && !pool->root_path)) {
		e = pool->root_fd < 0 && root_fd < 0 ? EBADF : errno;
		pool_destroy(pool);
		errno = e;
		return NULL;
	}
	return pool;
}

/* Wait on cv until the monotonic deadline: false once it passed. */
static bool wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, uint64_t deadline_ns)
{
	struct timespec ts = { .tv_sec = (time_t)(deadline_ns / VW_NSEC_PER_SEC),
			       .tv_nsec = (long)(deadline_ns % VW_NSEC_PER_SEC) };

	return pthread_cond_timedwait(cv, mu, &ts) != ETIMEDOUT;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts); /* the condition's clock, never a test's fake one */
	return (uint64_t)ts.tv_sec * VW_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

void vw_pub_share_pool_free(struct vw_pub_share_pool *pool)
{
	uint64_t deadline = mono_ns() + VW_PUB_SHARE_WAIT_NS;
	bool last;

	if (!pool)
		return;
	pthread_mutex_lock(&pool->mu);
	pool->stop = true;
	pthread_cond_broadcast(&pool->work);
	while (pool->workers > 0 && wait_until(&pool->back, &pool->mu, deadline))
		;
	last = pool->workers == 0;
	pool->left = !last;
	pthread_mutex_unlock(&pool->mu);
	if (last)
		pool_destroy(pool); /* else the last worker does, when its call comes back */
}

struct vw_pub_share_job *vw_pub_share_job_new(struct vw_pub_share_pool *pool, const char *uuid,
					      int ifd)
{
	struct vw_pub_share_job *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	vw_pub_share_init(&j->share, ifd);
	snprintf(j->uuid, sizeof(j->uuid), "%s", uuid);
	j->pool = pool;
	return j;
}

static void job_destroy(struct vw_pub_share_job *j)
{
	vw_pub_share_done(&j->share);
	free(j->work.buf);
	free(j);
}

/* Under the lock: the publisher waits no longer for the job; a worker running it is stuck. */
static void unwait(struct vw_pub_share_pool *pool, struct vw_pub_share_job *j)
{
	if (j->waited) {
		j->waited = false;
		pool->waited--;
	}
	if (j->running && !j->stuck) {
		j->stuck = true;
		pool->stuck++;
	}
}

void vw_pub_share_job_free(struct vw_pub_share_job *j)
{
	struct vw_pub_share_pool *pool;
	bool out;

	if (!j)
		return;
	pool = j->pool;
	pthread_mutex_lock(&pool->mu);
	out = j->out && !j->back;
	j->orphan = out;
	if (out)
		unwait(pool, j);
	pthread_mutex_unlock(&pool->mu);
	if (!out)
		job_destroy(j);
}

/* The work itself, on a worker: nothing here is under the pool's lock. */
static void run(const struct vw_pub_share_pool *pool, struct vw_pub_share_job *j)
{
	struct vw_pub_share_work *w = &j->work;

	if (w->check_export)
		w->export_r = vw_pub_share_export_writable(pool->procfs_fd, w->export_pid,
							   w->export_dir, w->export_ro);
	if (w->write) {
		w->why = VW_PUB_FRAME__COUNT;
		w->r = vw_pub_share_open(&j->share, pool->root_fd, pool->root_path, j->uuid);
		if (w->r == 0)
			w->r = vw_pub_share_write(&j->share, pool->root_fd, j->uuid, w->buf,
						  w->frame_len, w->have, w->energy_uj,
						  w->max_range_uj, w->zones, w->now_ns,
						  w->max_gap_ns, &w->why);
		w->model_r = w->model_len ? vw_pub_share_write_model(&j->share, w->buf + w->frame_len,
								     w->model_len)
					  : 0;
	}
	if (w->leave)
		vw_pub_share_leave(&j->share);
	if (w->remove)
		w->r = vw_pub_share_remove(pool->root_fd, j->uuid,
					   j->share.kept.left_known ? &j->share.kept.left_mtime : NULL);
}

/* A job run: back to the publisher, or freed when its VM is gone. Under the lock. */
static void job_back(struct vw_pub_share_pool *pool, struct vw_pub_share_job *j)
{
	if (j->stuck)
		pool->stuck--;
	if (j->waited && --pool->waited == 0)
		pthread_cond_broadcast(&pool->back); /* (the publisher waits for them all) */
	j->running = j->stuck = j->waited = false;
	j->back = true;
	if (j->orphan) {
		/* (its watch, on the publisher's inotify fd, is left: the publisher may be gone) */
		j->share.wd = -1;
		pthread_mutex_unlock(&pool->mu);
		job_destroy(j);
		pthread_mutex_lock(&pool->mu);
	}
}

static void *worker(void *arg)
{
	struct vw_pub_share_pool *pool = arg;
	bool last;

	pthread_mutex_lock(&pool->mu);
	for (;;) {
		struct vw_pub_share_job *j;

		while (!pool->head && !pool->stop) {
			pool->idle++;
			pthread_cond_wait(&pool->work, &pool->mu);
			pool->idle--;
		}
		j = pool->head;
		if (!j)
			break; /* stopped, nothing queued */
		pool->head = j->next;
		if (!pool->head)
			pool->tail = NULL;
		j->next = NULL;
		pool->queued--;
		if (!j->orphan || !pool->stop) { /* (a gone VM's work is dropped at the stop) */
			j->running = true;
			if (!j->waited) { /* given up on while queued: not one the others wait for */
				j->stuck = true;
				pool->stuck++;
			}
			pthread_mutex_unlock(&pool->mu);
			run(pool, j);
			pthread_mutex_lock(&pool->mu);
		}
		job_back(pool, j);
		if (pool->workers - pool->stuck > VW_PUB_SHARE_WORKERS)
			break; /* one came back from a file system: more than needed now */
	}
	pool->workers--;
	pthread_cond_broadcast(&pool->back);
	last = pool->left && pool->workers == 0;
	pthread_mutex_unlock(&pool->mu);
	if (last)
		pool_destroy(pool);
	return NULL;
}

/* Under the lock: a worker more when more jobs are queued than workers are free, and fewer than
 * VW_PUB_SHARE_WORKERS are not stuck. -errno when none could start and none will come. */
static int spawn(struct vw_pub_share_pool *pool)
{
	pthread_t t;
	int r;

	if (pool->queued <= pool->idle || pool->workers - pool->stuck >= VW_PUB_SHARE_WORKERS)
		return 0;
	r = vw_thread_create(&t, worker, pool);
	if (r < 0)
		return pool->workers > pool->stuck || pool->idle ? 0 : r;
	pthread_detach(t);
	pool->workers++;
	return 0;
}

static int submit(struct vw_pub_share_job *j, bool wake)
{
	struct vw_pub_share_pool *pool = j->pool;
	int r;

	pthread_mutex_lock(&pool->mu);
	if (j->out) {
		pthread_mutex_unlock(&pool->mu);
		return -EBUSY;
	}
	pool->queued++;
	r = spawn(pool);
	if (r < 0) { /* nobody would run it */
		pool->queued--;
		pthread_mutex_unlock(&pool->mu);
		return r;
	}
	*(pool->tail ? &pool->tail->next : &pool->head) = j;
	pool->tail = j;
	j->out = j->waited = true;
	j->back = false;
	pool->waited++;
	if (wake)
		pthread_cond_signal(&pool->work);
	pthread_mutex_unlock(&pool->mu);
	return 0;
}

int vw_pub_share_submit(struct vw_pub_share_job *j)
{
	return submit(j, true);
}

int vw_pub_share_queue(struct vw_pub_share_job *j)
{
	return submit(j, false);
}

/* out is written by the publisher alone (submit, collect), the thread that asks. */
bool vw_pub_share_out(struct vw_pub_share_job *j)
{
	return j->out;
}

bool vw_pub_share_collect(struct vw_pub_share_job *j)
{
	bool back;

	if (!j->out)
		return false;
	pthread_mutex_lock(&j->pool->mu);
	back = j->out && j->back;
	if (back)
		j->out = j->back = false;
	pthread_mutex_unlock(&j->pool->mu);
	return back;
}

void vw_pub_share_wait(struct vw_pub_share_pool *pool, uint64_t timeout_ns)
{
	uint64_t deadline = mono_ns() + timeout_ns;

	pthread_mutex_lock(&pool->mu);
	if (pool->head && pool->idle)
		pthread_cond_broadcast(&pool->work); /* the work queued (vw_pub_share_queue()) */
	while (pool->waited > 0 && wait_until(&pool->back, &pool->mu, deadline))
		;
	pthread_mutex_unlock(&pool->mu);
}

bool vw_pub_share_give_up(struct vw_pub_share_job *j)
{
	struct vw_pub_share_pool *pool = j->pool;
	bool given_up;

	pthread_mutex_lock(&pool->mu);
	given_up = j->out && !j->back && j->waited;
	if (given_up) {
		unwait(pool, j);
		(void)spawn(pool); /* for the work queued behind a stuck worker */
	}
	pthread_mutex_unlock(&pool->mu);
	return given_up;
}

/* ---- the share root's open, off the publisher's thread ---- */

struct vw_pub_root_open {
	pthread_mutex_t mu;
	pthread_cond_t back; /* the open came back */
	char *path;
	int r;       /* its fd (the publisher's once taken), or -errno */
	bool done;   /* the open came back */
	bool orphan; /* the publisher let go: the thread frees it */
};

static void root_open_destroy(struct vw_pub_root_open *o)
{
	if (o->r >= 0)
		close(o->r);
	pthread_cond_destroy(&o->back);
	pthread_mutex_destroy(&o->mu);
	free(o->path);
	free(o);
}

static void *root_opener(void *arg)
{
	struct vw_pub_root_open *o = arg;
	int r = vw_root_open(o->path); /* may wait as long as its file system does */
	bool orphan;

	pthread_mutex_lock(&o->mu);
	o->r = r;
	o->done = true;
	orphan = o->orphan;
	pthread_cond_broadcast(&o->back);
	pthread_mutex_unlock(&o->mu);
	if (orphan)
		root_open_destroy(o);
	return NULL;
}

struct vw_pub_root_open *vw_pub_root_open_start(const char *path)
{
	struct vw_pub_root_open *o = calloc(1, sizeof(*o));
	pthread_condattr_t ca;
	pthread_t t;
	int r;

	if (!o)
		return NULL;
	o->r = -EINPROGRESS;
	pthread_mutex_init(&o->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&o->back, &ca);
	pthread_condattr_destroy(&ca);
	o->path = strdup(path);
	r = o->path ? vw_thread_create(&t, root_opener, o) : -ENOMEM;
	if (r < 0) {
		root_open_destroy(o);
		errno = -r;
		return NULL;
	}
	pthread_detach(t);
	return o;
}

int vw_pub_root_open_wait(struct vw_pub_root_open *o, uint64_t timeout_ns)
{
	uint64_t deadline = mono_ns() + timeout_ns;
	int r;

	pthread_mutex_lock(&o->mu);
	while (!o->done && wait_until(&o->back, &o->mu, deadline))
		;
	r = o->done ? o->r : -EINPROGRESS;
	if (o->done)
		o->r = -EBADF; /* the fd is the caller's now */
	pthread_mutex_unlock(&o->mu);
	return r;
}

void vw_pub_root_open_free(struct vw_pub_root_open *o)
{
	bool done;

	if (!o)
		return;
	pthread_mutex_lock(&o->mu);
	done = o->done;
	o->orphan = !done;
	pthread_mutex_unlock(&o->mu);
	if (done)
		root_open_destroy(o);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* bcrypt on a bounded worker pool with a bounded queue and per-source limits (authpool.h). */
#include "authpool.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "thread.h"

#define MAX_WORKERS 4

struct vw_auth_job {
	struct vw_auth_job *next;
	unsigned refs; /* the caller's and the pool's */
	enum vw_auth_result result; /* written before done(), read after */
	struct vw_src_key src;
	char *user, *pass;
	void (*done)(void *cls);
	void *cls;
};

struct vw_authpool {
	struct vw_webauth *auth;
	struct vw_src_limiter *limiter;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct vw_auth_job *head, *tail; /* queued, under lock */
	unsigned queued;
	bool stopping;
	pthread_t workers[MAX_WORKERS];
	unsigned n_workers;
};

static void secret_free(char *s)
{
	if (s)
		explicit_bzero(s, strlen(s));
	free(s);
}

void vw_auth_job_release(struct vw_auth_job *j)
{
	if (!j || __atomic_sub_fetch(&j->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	secret_free(j->user);
	secret_free(j->pass);
	free(j);
}

enum vw_auth_result vw_auth_job_result(const struct vw_auth_job *j)
{
	return __atomic_load_n(&j->result, __ATOMIC_ACQUIRE);
}

/* Publish the result, tell the caller, drop the pool's reference. */
static void job_finish(struct vw_auth_job *j, enum vw_auth_result r)
{
	__atomic_store_n(&j->result, r, __ATOMIC_RELEASE);
	j->done(j->cls);
	vw_auth_job_release(j);
}

static void *worker_main(void *arg)
{
	struct vw_authpool *p = arg;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct vw_auth_job *j;
		bool ok;

		while (!p->head && !p->stopping)
			pthread_cond_wait(&p->cond, &p->lock);
		if (!p->head)
			break;
		j = p->head;
		p->head = j->next;
		if (!p->head)
			p->tail = NULL;
		p->queued--;
		pthread_mutex_unlock(&p->lock);
		ok = vw_webauth_check(p->auth, j->user, j->pass);
		if (ok)
			vw_src_limiter_refund(p->limiter, &j->src);
		job_finish(j, ok ? VW_AUTH_OK : VW_AUTH_DENIED);
		pthread_mutex_lock(&p->lock);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

static unsigned default_workers(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return (unsigned)VW_MIN(VW_MAX(n / 2, 1L), (long)MAX_WORKERS);
}

struct vw_authpool *vw_authpool_new(struct vw_webauth *auth, unsigned workers)
{
	struct vw_authpool *p = calloc(1, sizeof(*p));
	int r = 0;

	if (!p)
		return NULL;
	p->auth = auth;
	p->limiter = vw_src_limiter_new(VW_AUTHPOOL_SOURCES, VW_AUTHPOOL_SOURCE_BURST,
					VW_AUTHPOOL_SOURCE_EVERY_MS * 1000000ULL);
	if (!p->limiter) {
		free(p);
		return NULL;
	}
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	workers = workers ? VW_MIN(workers, (unsigned)MAX_WORKERS) : default_workers();
	for (unsigned i = 0; i < workers && r == 0; i++) {
		r = vw_thread_create(&p->workers[i], worker_main, p);
		if (r == 0)
			p->n_workers++;
	}
	if (r < 0) {
		vw_authpool_free(p);
		errno = -r;
		return NULL;
	}
	return p;
}

void vw_authpool_stop(struct vw_authpool *p)
{
	struct vw_auth_job *j;
	unsigned n;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stopping = true;
	j = p->head;
	p->head = p->tail = NULL;
	p->queued = 0;
	n = p->n_workers;
	p->n_workers = 0;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	while (j) {
		struct vw_auth_job *next = j->next;

		job_finish(j, VW_AUTH_CANCELLED);
		j = next;
	}
	for (unsigned i = 0; i < n; i++)
		pthread_join(p->workers[i], NULL);
}

void vw_authpool_free(struct vw_authpool *p)
{
	if (!p)
		return;
	vw_authpool_stop(p);
	vw_src_limiter_free(p->limiter);
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

enum vw_auth_result vw_authpool_submit(struct vw_authpool *p, const struct vw_src_key *src,
				       const char *user, const char *pass,
				       void (*park)(void *cls), void (*done)(void *cls),
				       void *cls, struct vw_auth_job **ret_job)
{
	struct vw_auth_job *j;

	if (!user || !pass)
		return VW_AUTH_DENIED;
	if (vw_webauth_cached(p->auth, user, pass))
		return VW_AUTH_OK;
	if (!vw_src_limiter_take(p->limiter, src, vw_now_ns()))
		return VW_AUTH_LIMITED;
	j = calloc(1, sizeof(*j));
	if (j) {
		*j = (struct vw_auth_job){ .refs = 2, .src = *src, .user = strdup(user),
					   .pass = strdup(pass), .done = done, .cls = cls };
		if (!j->user || !j->pass) {
			j->refs = 1;
			vw_auth_job_release(j);
			j = NULL;
		}
	}
	pthread_mutex_lock(&p->lock);
	if (!j || p->stopping || p->queued >= VW_AUTHPOOL_QUEUE) {
		pthread_mutex_unlock(&p->lock);
		vw_src_limiter_refund(p->limiter, src);
		if (j) {
			j->refs = 1;
			vw_auth_job_release(j);
		}
		return VW_AUTH_BUSY;
	}
	park(cls);
	if (p->tail)
		p->tail->next = j;
	else
		p->head = j;
	p->tail = j;
	p->queued++;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
	*ret_job = j;
	return VW_AUTH_QUEUED;
}

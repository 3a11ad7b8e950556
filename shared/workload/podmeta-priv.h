/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal to the pod metadata client: the pod table (podtable.c) that podmeta.c fills from the
 * API server or the kubelet, using the type-checked json-c accessors of json.h (untrusted input).
 * Not for other modules; tests drive the table directly with explicit times.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "json.h"
#include "selfstats.h"
#include "cgroup_path.h"

/* Copy a non-empty string that fits (NUL included), else -EINVAL. */
static inline int vw_copy_str(char *dst, size_t size, const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n >= size)
		return -EINVAL;
	memcpy(dst, s, n + 1);
	return 0;
}

/*
 * Pods by UID and by static-pod config hash, containers by ID. Deleted pods and replaced
 * containers answer lookups until grace_ns after they went. Not thread-safe: the caller locks.
 * Every list or poll is a generation: pods applied with it stay, vw_podtable_retire() marks the
 * others deleted.
 */
struct vw_podtable;

struct vw_podtable *vw_podtable_new(uint64_t grace_ns);
void vw_podtable_free(struct vw_podtable *t);
/* One Pod object. 0, -EINVAL (no valid uid/name/namespace), -ENOSPC (table full). */
int vw_podtable_apply(struct vw_podtable *t, struct json_object *pod, uint64_t gen, bool deleted,
		      uint64_t now_ns);
void vw_podtable_retire(struct vw_podtable *t, uint64_t gen, uint64_t now_ns);
/* Free what has been gone for longer than the grace period. */
void vw_podtable_sweep(struct vw_podtable *t, uint64_t now_ns);
int vw_podtable_by_container(struct vw_podtable *t, const char *id, uint64_t now_ns,
			     struct vw_pod_info *ret, char *name, size_t namelen);
int vw_podtable_by_uid(struct vw_podtable *t, const char *uid, uint64_t now_ns,
		       struct vw_pod_info *ret);
/* Pods not deleted. */
size_t vw_podtable_count(const struct vw_podtable *t);
/* Entries and evictions (pods, containers); caps lowered by tests to drive the table full. At
 * the cap the entry gone the longest is let go before its grace ends, else a new one refused. */
void vw_podtable_table_stats(const struct vw_podtable *t, struct vw_table_stat *pods,
			     struct vw_table_stat *ctrs);
void vw_podtable_set_caps(struct vw_podtable *t, size_t max_pods, size_t max_ctrs);

/*
 * For tests and fuzzing: a client without its worker thread (vw_podmeta_stop frees it), fed the
 * bodies the worker would receive: a list response (-EBADMSG when it is not a PodList), and
 * chunks of one watch stream, framed and applied as the worker does (-EMSGSIZE for an event
 * over max_event_bytes, -ESTALE for a 410 ERROR event, -EPROTO for another; the stream then
 * ends, and the next chunk starts a new one).
 */
struct vw_podmeta *vw_podmeta_new_offline(const struct vw_podmeta_opts *opts);
int vw_podmeta_feed_list(struct vw_podmeta *pm, const char *body, size_t len);
int vw_podmeta_feed_watch(struct vw_podmeta *pm, const char *data, size_t len);

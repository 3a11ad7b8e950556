/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Container names outside Kubernetes, from the runtimes' own on-disk metadata, read-only: Docker's
 * per-container config.v2.json, containers/storage's containers.json (Podman) and nerdctl's name
 * store (containerd). Never a runtime's socket. Every file is untrusted: size-capped, parsed
 * strictly, and a name reaches the caller only if it has Docker's name syntax. Missing,
 * unreadable or odd metadata gives no name, never a wrong one. docs/workloads.md lists the files
 * and the privilege each needs.
 *
 * Not thread-safe: one caller thread (the sampling loop) or a lock around it.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "cgroup_path.h"

/* Longest name passed on (Docker sets none; containerd's identifiers stop at 76). */
#define VW_CTRMETA_NAME_MAX 128

struct vw_ctrmeta_opts {
	int root_fd; /* the host's filesystem root (duplicated; the caller keeps its own) */
	/* Relative to root_fd; NULL: the default, "": that runtime is not looked at. */
	const char *docker_dir;  /* "var/lib/docker/containers": <id>/config.v2.json */
	const char *podman_dirs; /* ':'-separated containers/storage roots:
				  * "var/lib/containers/storage:run/containers/storage" */
	const char *nerdctl_dir; /* "var/lib/nerdctl": <addrhash>/names/<namespace>/<name> */
	size_t max_cached;       /* Docker results kept (0: 256) */
};

struct vw_ctrmeta;

/* NULL with errno set (EBADF: no root_fd, ENOMEM, EINVAL: an absolute or ".." path). */
struct vw_ctrmeta *vw_ctrmeta_new(const struct vw_ctrmeta_opts *o);
void vw_ctrmeta_free(struct vw_ctrmeta *m);

struct vw_ctrmeta_info {
	char name[VW_CTRMETA_NAME_MAX + 1];
	char project[VW_CTRMETA_NAME_MAX + 1]; /* Docker Compose project, or "" */
};

/*
 * The container's name (and what else its runtime keeps) by runtime and full ID (64 hex).
 * 0; -ENOENT: no metadata names it (yet: a later call looks again); -EINVAL: its metadata is
 * malformed or the name is not a valid container name; -EFBIG: a file over its cap; other
 * -errno from reading (-EACCES without the privilege). *ret is cleared on failure.
 */
int vw_ctrmeta_lookup(struct vw_ctrmeta *m, enum vw_runtime rt, const char *id,
		      struct vw_ctrmeta_info *ret);
/* The name alone into name[len]; -ERANGE if it does not fit ("" on any failure). */
int vw_ctrmeta_name(struct vw_ctrmeta *m, enum vw_runtime rt, const char *id, char *name,
		    size_t len);

/* Docker's name syntax [a-zA-Z0-9][a-zA-Z0-9_.-]*, at most VW_CTRMETA_NAME_MAX bytes. */
bool vw_ctrmeta_valid_name(const char *s, size_t n);

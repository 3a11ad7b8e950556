/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Process -> container -> pod mapping. Containers are found from /proc/PID/cgroup paths
 * (docker, containerd, cri-o, podman, kubepods; cgroupfs and systemd drivers; cgroup v1 and v2).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum vw_runtime {
	VW_RUNTIME_UNKNOWN,
	VW_RUNTIME_DOCKER,
	VW_RUNTIME_CONTAINERD,
	VW_RUNTIME_CRIO,
	VW_RUNTIME_PODMAN,
	VW_RUNTIME_KUBERNETES, /* bare ID under a cgroupfs-driver pod: the path names no runtime */
	VW_RUNTIME__COUNT,
};

/* Kepler's runtime label values: "docker", "containerd", "crio", "podman", "kubernetes",
 * "unknown". */
const char *vw_runtime_name(enum vw_runtime rt);

#define VW_CONTAINER_ID_LEN 65 /* 64 hex + NUL */
#define VW_POD_UID_LEN 37      /* canonical UUID + NUL */

struct vw_cgroup_match {
	bool container;              /* a container was found */
	enum vw_runtime runtime;
	char container_id[VW_CONTAINER_ID_LEN];
	bool kubepods;               /* under a kubepods hierarchy */
	char pod_uid[VW_POD_UID_LEN]; /* dashes restored ("pod1234_5678" -> "1234-5678"), or "" */
};

/* One cgroup path (the part after "hierarchy:controllers:"). 0 when a container matched,
 * -ENOENT when none. *ret is filled either way: a process inside a pod but in no container
 * (cri-o's conmon, a pod-level cgroup) gets -ENOENT with kubepods and pod_uid set. */
int vw_workload_parse_cgroup_path(const char *path, struct vw_cgroup_match *ret);
/* The same for the path of a cgroup directory, plus the length of the prefix of path that names
 * the container's own cgroup (its sub-cgroups, e.g. podman's ".../libpod-<id>/container", are
 * the container's too). */
int vw_workload_container_cgroup(const char *path, struct vw_cgroup_match *ret, size_t *ret_len);
/* The whole /proc/PID/cgroup text: v1 and v2 lines; the deepest match wins. */
int vw_workload_parse_proc_cgroup(const char *text, struct vw_cgroup_match *ret);
/* Read and parse <procfs>/<pid>/cgroup. -ENOENT: no container; -ESRCH: the process is gone. */
int vw_workload_read_pid(int procfd, uint32_t pid, struct vw_cgroup_match *ret);
/* <procfs>/<pid>/cgroup itself, malloc'd and NUL-terminated (*ret_len bytes, optional):
 * 0, -ESRCH when the process is gone, else -errno. */
int vw_workload_read_cgroup_file(int procfd, uint32_t pid, char **ret, size_t *ret_len);

/* Pod metadata from the Kubernetes API server (list then watch, filtered by node) or the
 * kubelet's /pods (polled). Runs on its own thread; lookups are thread-safe copies. */
struct vw_pod_info {
	char uid[VW_POD_UID_LEN];
	char name[254];
	char namespace_[64];
	uint64_t cpu_request_millis; /* sum of its containers' CPU requests */
	uint64_t gpu_request;        /* sum of its containers' nvidia.com/gpu (whole GPUs) */
	/* A KubeVirt virt-launcher pod (label kubevirt.io=virt-launcher): the VirtualMachineInstance
	 * it runs (label kubevirt.io/domain) and the VirtualMachine that made it (label
	 * vm.kubevirt.io/name, "" for a bare VMI); both "" for any other pod. */
	char kubevirt_vmi[64];
	char kubevirt_vm[64];
	/* Whether its controller (the ownerReference with controller: true) is a kubevirt.io
	 * VirtualMachineInstance, as a virt-launcher pod's is, and that VMI's name ("" when over
	 * 63 bytes: no kubevirt.io/domain matches it). Labels are the pod's creator's to write; an
	 * owner that does not exist in the pod's namespace gets the pod garbage-collected. */
	bool kubevirt_owned;
	char kubevirt_owner[64];
};

enum vw_podmeta_mode {
	VW_PODMETA_APISERVER,
	VW_PODMETA_KUBELET,
};

struct vw_podmeta_opts {
	enum vw_podmeta_mode mode;
	const char *url;        /* https://kubernetes.default.svc, https://NODE:10250; "" = in-cluster */
	const char *token_file; /* service-account token (re-read on 401); NULL/"" = in-cluster */
	const char *ca_file;    /* NULL/"" = in-cluster CA when present, else the system store */
	const char *node_name;  /* spec.nodeName field selector (apiserver mode) */
	bool insecure_skip_verify; /* kubelet self-signed certs */
	/* From a kubeconfig (kube.config): a bearer token given inline (used when token_file is
	 * not given), the CA and a client certificate and key as PEM text or files. A client
	 * certificate replaces the in-cluster token. */
	const char *token;
	const char *ca_pem;
	const char *cert_file, *key_file;
	const char *cert_pem, *key_pem;
	bool allow_http;        /* accept http:// (kubectl proxy on localhost, tests) */
	uint64_t poll_ns;       /* kubelet mode poll period (0 = 15 s) */
	uint64_t timeout_ns;    /* one list or poll request (0 = 30 s) */
	uint64_t grace_ns;      /* deleted pods and containers stay resolvable (0 = 2 min) */
	uint64_t backoff_min_ns, backoff_max_ns; /* retry delay, doubling (0 = 1 s, 60 s) */
	size_t max_event_bytes; /* one watch event (0 = 4 MiB); larger -> dropped, re-list */
};

struct vw_podmeta;

/* NULL with errno set when options are invalid; connection problems are retried with backoff. */
struct vw_podmeta *vw_podmeta_start(const struct vw_podmeta_opts *opts);
void vw_podmeta_stop(struct vw_podmeta *pm);
/* By container ID (64 hex, no runtime prefix) or by pod UID. 0, or -ENOENT. */
int vw_podmeta_by_container(struct vw_podmeta *pm, const char *container_id,
			    struct vw_pod_info *ret, char *container_name, size_t namelen);
int vw_podmeta_by_uid(struct vw_podmeta *pm, const char *uid, struct vw_pod_info *ret);
/* The pod and container tables' entries and evictions (virtwatt_table_*). */
struct vw_table_stat;
void vw_podmeta_table_stats(struct vw_podmeta *pm, struct vw_table_stat *pods,
			    struct vw_table_stat *ctrs);
/* Synced once (list done) and how many pods are known (live ones, not those in grace). */
bool vw_podmeta_synced(struct vw_podmeta *pm);
size_t vw_podmeta_count(struct vw_podmeta *pm);

/* A Kubernetes CPU quantity ("250m", "1", "0.5", "2k", "1e3", "1Ki") in millicores, rounded up as
 * Quantity.MilliValue() does. -EINVAL for garbage or a negative value, -ERANGE on overflow. */
int vw_podmeta_parse_cpu_millis(const char *s, uint64_t *ret);
/* A containerStatuses[].containerID ("containerd://<64 hex>", "docker://", "cri-o://") into the
 * bare ID and the runtime (VW_RUNTIME_UNKNOWN for other schemes). -EINVAL when malformed. */
int vw_podmeta_parse_container_id(const char *s, char id[VW_CONTAINER_ID_LEN],
				  enum vw_runtime *ret_runtime);

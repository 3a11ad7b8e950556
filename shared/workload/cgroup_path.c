/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PID -> container and pod from the names in its cgroup path, without regex. A path is split
 * into components at '/' (and at ':' for runc's systemd "slice:prefix:id" spelling that cgroup
 * v1 hierarchies show), each component is matched against two small tables, and the deepest
 * container match wins. docs/workloads.md lists every form and where this beats Kepler.
 */
#include "cgroup_path.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "fileio.h"
#include "macro.h"

/* /proc/PID/cgroup: about a dozen v1 hierarchies of at most PATH_MAX each. */
#define CGROUP_FILE_MAX (64u << 10)
#define ID_HEX 64

static const char *const runtime_names[] = {
	[VW_RUNTIME_UNKNOWN] = "unknown",
	[VW_RUNTIME_DOCKER] = "docker",
	[VW_RUNTIME_CONTAINERD] = "containerd",
	[VW_RUNTIME_CRIO] = "crio",
	[VW_RUNTIME_PODMAN] = "podman",
	[VW_RUNTIME_KUBERNETES] = "kubernetes",
};
_Static_assert(ARRAY_SIZE(runtime_names) == VW_RUNTIME__COUNT, "a name per runtime");

const char *vw_runtime_name(enum vw_runtime rt)
{
	if ((unsigned)rt >= ARRAY_SIZE(runtime_names))
		return runtime_names[VW_RUNTIME_UNKNOWN];
	return runtime_names[rt];
}

/* Marks a table row whose match means "a runtime helper, not a container". */
#define NOT_A_CONTAINER VW_RUNTIME__COUNT

/*
 * <prefix><64 hex>, optionally followed by ".scope" (systemd driver). First row that matches
 * decides, so the conmon rows come before the prefixes they share.
 */
static const struct prefix_rule {
	const char *prefix;
	enum vw_runtime runtime;
} prefix_rules[] = {
	{ "crio-conmon-", NOT_A_CONTAINER },   /* cri-o's monitor process: pod overhead */
	{ "libpod-conmon-", NOT_A_CONTAINER }, /* podman's monitor process */
	{ "cri-containerd-", VW_RUNTIME_CONTAINERD },
	{ "containerd-", VW_RUNTIME_CONTAINERD },
	{ "nerdctl-", VW_RUNTIME_CONTAINERD },
	{ "crio-", VW_RUNTIME_CRIO },
	{ "docker-", VW_RUNTIME_DOCKER },
	{ "libpod-payload-", VW_RUNTIME_PODMAN },
	{ "libpod-", VW_RUNTIME_PODMAN },
};

/* A bare <64 hex> component (runc's cgroupfs naming) takes its runtime from the parent. */
static const struct parent_rule {
	const char *parent;
	enum vw_runtime runtime;
} parent_rules[] = {
	{ "docker", VW_RUNTIME_DOCKER },
	{ "containerd", VW_RUNTIME_CONTAINERD },
	{ "cri-containerd", VW_RUNTIME_CONTAINERD },
	{ "crio", VW_RUNTIME_CRIO },
};

/* A component: a view into the path, not NUL-terminated. */
struct comp {
	const char *s;
	size_t n;
};

static bool comp_eq(struct comp c, const char *lit)
{
	size_t n = strlen(lit);

	return c.n == n && memcmp(c.s, lit, n) == 0;
}

static bool comp_starts(struct comp c, const char *lit)
{
	size_t n = strlen(lit);

	return c.n >= n && memcmp(c.s, lit, n) == 0;
}

static bool comp_ends(struct comp c, const char *lit)
{
	size_t n = strlen(lit);

	return c.n >= n && memcmp(c.s + c.n - n, lit, n) == 0;
}

static bool comp_contains(struct comp c, const char *lit)
{
	return memmem(c.s, c.n, lit, strlen(lit)) != NULL;
}

/* Lower-case hex only: every runtime prints IDs that way. */
static bool is_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	}
	return true;
}

/* Exactly 64 hex, then nothing or ".scope". */
static bool id_with_suffix(const char *s, size_t n)
{
	if (n < ID_HEX || !is_hex(s, ID_HEX))
		return false;
	n -= ID_HEX;
	return n == 0 || (n == 6 && memcmp(s + ID_HEX, ".scope", 6) == 0);
}

/*
 * A pod UID as the kubelet names cgroups: canonical 8-4-4-4-12 (dashes, or underscores under the
 * systemd driver, which reserves '-' for hierarchy), or the 32-hex config hash static pods use.
 * Copied to out with dashes restored.
 */
static bool parse_uid(const char *s, size_t n, char out[VW_POD_UID_LEN])
{
	if (n == 32) {
		if (!is_hex(s, n))
			return false;
	} else if (n == 36) {
		for (size_t i = 0; i < n; i++) {
			bool sep = i == 8 || i == 13 || i == 18 || i == 23;

			if (sep ? (s[i] != '-' && s[i] != '_') : !is_hex(s + i, 1))
				return false;
		}
	} else {
		return false;
	}
	for (size_t i = 0; i < n; i++)
		out[i] = s[i] == '_' ? '-' : s[i];
	out[n] = '\0';
	return true;
}

static bool is_kubepods(struct comp c)
{
	return comp_eq(c, "kubepods") || (comp_ends(c, ".slice") && comp_contains(c, "kubepods"));
}

/*
 * systemd driver: "[kubelet-]kubepods[-<qos>]-pod<uid_with_underscores>.slice";
 * cgroupfs driver: "pod<uid>" below a "kubepods" directory (QoS directory optional: guaranteed
 * pods sit right under kubepods).
 */
static bool match_pod(struct comp c, bool in_kubepods, char uid[VW_POD_UID_LEN])
{
	if (comp_ends(c, ".slice")) {
		struct comp body = { c.s, c.n - 6 };
		const char *p = NULL;

		for (const char *q = body.s; (q = memmem(q, (size_t)(body.s + body.n - q), "-pod", 4));
		     q++)
			p = q;
		if (!p || !memmem(body.s, (size_t)(p - body.s), "kubepods", 8))
			return false;
		p += 4;
		return parse_uid(p, (size_t)(body.s + body.n - p), uid);
	}
	return in_kubepods && comp_starts(c, "pod") && parse_uid(c.s + 3, c.n - 3, uid);
}

/* 1: a container (runtime, id set); -1: a runtime helper, not a container; 0: neither. */
static int match_container(struct comp c, struct comp parent, bool parent_is_pod,
			   enum vw_runtime *rt, const char **id)
{
	for (size_t i = 0; i < ARRAY_SIZE(prefix_rules); i++) {
		size_t pn = strlen(prefix_rules[i].prefix);

		if (!comp_starts(c, prefix_rules[i].prefix) || !id_with_suffix(c.s + pn, c.n - pn))
			continue;
		if (prefix_rules[i].runtime == NOT_A_CONTAINER)
			return -1;
		*rt = prefix_rules[i].runtime;
		*id = c.s + pn;
		return 1;
	}
	if (c.n != ID_HEX || !is_hex(c.s, c.n))
		return 0;
	*id = c.s;
	*rt = parent_is_pod ? VW_RUNTIME_KUBERNETES : VW_RUNTIME_UNKNOWN;
	for (size_t i = 0; i < ARRAY_SIZE(parent_rules); i++) {
		if (comp_eq(parent, parent_rules[i].parent))
			*rt = parent_rules[i].runtime;
	}
	return 1;
}

/* Fills m; returns the depth (component index, from 1) of the container match, or 0, and
 * (when ret_end is not NULL) where the matching component ends in path. */
static int parse_path(const char *path, size_t len, struct vw_cgroup_match *m, size_t *ret_end)
{
	static const char deleted[] = " (deleted)"; /* cgroup v2: the cgroup was removed */
	struct comp prev = { "", 0 };
	bool in_kubepods = false, prev_pod = false;
	int depth = 0, found = 0;
	const char *end;

	memset(m, 0, sizeof(*m));
	if (len >= sizeof(deleted) - 1 &&
	    memcmp(path + len - (sizeof(deleted) - 1), deleted, sizeof(deleted) - 1) == 0)
		len -= sizeof(deleted) - 1;
	end = path + len;
	for (const char *p = path; p < end;) {
		const char *q = p;
		struct comp c;
		enum vw_runtime rt;
		const char *id;

		while (q < end && *q != '/' && *q != ':')
			q++;
		c = (struct comp){ p, (size_t)(q - p) };
		p = q + 1;
		if (c.n == 0)
			continue;
		depth++;
		if (is_kubepods(c))
			in_kubepods = true;
		if (match_pod(c, in_kubepods, m->pod_uid)) {
			prev = c;
			prev_pod = true;
			continue;
		}
		if (match_container(c, prev, prev_pod, &rt, &id) > 0) {
			m->container = true;
			m->runtime = rt;
			memcpy(m->container_id, id, ID_HEX);
			m->container_id[ID_HEX] = '\0';
			found = depth;
			if (ret_end)
				*ret_end = (size_t)(q - path);
		}
		prev = c;
		prev_pod = false;
	}
	m->kubepods = in_kubepods;
	return found;
}

int vw_workload_parse_cgroup_path(const char *path, struct vw_cgroup_match *ret)
{
	if (!path || !ret)
		return -EINVAL;
	parse_path(path, strlen(path), ret, NULL);
	return ret->container ? 0 : -ENOENT;
}

int vw_workload_container_cgroup(const char *path, struct vw_cgroup_match *ret, size_t *ret_len)
{
	size_t end = 0;

	if (!path || !ret || !ret_len)
		return -EINVAL;
	parse_path(path, strlen(path), ret, &end);
	*ret_len = end;
	return ret->container ? 0 : -ENOENT;
}

/* Rank one line's result: any container beats pod-only information, deeper beats shallower. */
static int rank(const struct vw_cgroup_match *m, int depth)
{
	if (m->container)
		return 3 + depth;
	if (m->pod_uid[0])
		return 2;
	return m->kubepods ? 1 : 0;
}

int vw_workload_parse_proc_cgroup(const char *text, struct vw_cgroup_match *ret)
{
	struct vw_cgroup_match best, cur;
	int best_rank = 0;

	if (!text || !ret)
		return -EINVAL;
	memset(&best, 0, sizeof(best));
	for (const char *line = text; *line;) {
		const char *eol = strchrnul(line, '\n');
		const char *c1 = memchr(line, ':', (size_t)(eol - line));
		const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(eol - c1 - 1)) : NULL;

		/* "hierarchy-ID:controller-list:path"; the path itself may hold ':'. */
		if (c2) {
			int depth = parse_path(c2 + 1, (size_t)(eol - c2 - 1), &cur, NULL);
			int r = rank(&cur, depth);

			if (r > best_rank) {
				best = cur;
				best_rank = r;
			}
		}
		line = *eol ? eol + 1 : eol;
	}
	*ret = best;
	return best.container ? 0 : -ENOENT;
}

int vw_workload_read_cgroup_file(int procfd, uint32_t pid, char **ret, size_t *ret_len)
{
	_cleanup_free_ char *buf = malloc(CGROUP_FILE_MAX);
	char rel[32];
	int r;

	if (!buf)
		return -ENOMEM;
	snprintf(rel, sizeof(rel), "%" PRIu32 "/cgroup", pid);
	r = vw_read_file_at(procfd, rel, buf, CGROUP_FILE_MAX, ret_len);
	if (r == -ENOENT || r == -ESRCH)
		return -ESRCH; /* exited between the directory scan and now */
	if (r < 0)
		return r;
	*ret = VW_TAKE_PTR(buf);
	return 0;
}

int vw_workload_read_pid(int procfd, uint32_t pid, struct vw_cgroup_match *ret)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r;

	if (pid == 0 || !ret)
		return -EINVAL;
	memset(ret, 0, sizeof(*ret));
	r = vw_workload_read_cgroup_file(procfd, pid, &buf, &len);
	if (r < 0)
		return r;
	if (memchr(buf, '\0', len))
		return -EINVAL;
	return vw_workload_parse_proc_cgroup(buf, ret);
}

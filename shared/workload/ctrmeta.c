/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Container names from the runtimes' files (ctrmeta.h). Two shapes:
 *  - Docker keeps one file per container: config.v2.json is read when a container is looked up
 *    and the result kept in a small cache, valid while the file keeps its inode, size and mtime.
 *  - Podman (containers/storage's containers.json) and nerdctl (a name store directory) keep an
 *    index of all containers: it is parsed into memory and parsed again only when the stamps
 *    (inode, size, mtime) of its files and directories change, so a container created after its
 *    first lookup is found at the next one.
 * The runtimes are a static table; each row answers for the cgroup runtime it serves.
 */
#include "ctrmeta.h"
#include "ctrmeta-priv.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "fileio.h"
#include "json.h"
#include "macro.h"

#define ID_HEX 64
#define DOCKER_CONFIG_MAX (1u << 20)  /* config.v2.json: a few KiB, more with health logs */
#define PODMAN_INDEX_MAX (16u << 20)  /* containers.json: about 0.5 KiB a container */
#define NERDCTL_NAME_FILE_MAX 128     /* a name file holds one ID */
#define INDEX_MAX_ENTRIES 65536       /* per runtime */
#define NERDCTL_MAX_DIRS 1024         /* address hashes x namespaces walked */
#define JSON_DEPTH 16                 /* config.v2.json nests about 6 deep */
#define DEFAULT_MAX_CACHED 256
/*
 * Timestamps advance in clock ticks (milliseconds), so a file changed twice within a tick keeps
 * its mtime. As git does with its index ("racy git"), a stamp younger than this is not trusted:
 * what was read from it is read again at the next lookup.
 */
#define RACY_NS (2 * VW_NSEC_PER_SEC)

static const char DEFAULT_DOCKER_DIR[] = "var/lib/docker/containers";
static const char DEFAULT_PODMAN_DIRS[] = "var/lib/containers/storage:run/containers/storage";
static const char DEFAULT_NERDCTL_DIR[] = "var/lib/nerdctl";

/* containers/storage keeps <graphroot>/<driver>-containers/containers.json; newer releases keep
 * --rm containers in volatile-containers.json beside it, or under the run root with a transient
 * store. Podman 4.3 (Debian 12) writes containers.json only. */
static const char *const podman_drivers[] = { "overlay", "vfs", "btrfs", "zfs", "devmapper",
					      "aufs" };
static const char *const podman_files[] = { "containers.json", "volatile-containers.json" };

struct entry {
	char id[VW_CONTAINER_ID_LEN];
	char name[VW_CTRMETA_NAME_MAX + 1];
};

/* All containers of one runtime, as parsed from files whose stamps hash to sig. */
struct index {
	bool loaded;
	bool racy; /* a stamp was too recent to vouch for what was read */
	uint64_t sig;
	int err; /* the first error met while loading (a file unreadable or malformed), or 0 */
	struct entry *e;
	size_t n, cap;
};

struct stamp {
	uint64_t dev, ino, size, mtime_ns;
};

/* One Docker result, valid while config.v2.json keeps its stamp. */
struct cached {
	bool valid;
	char id[VW_CONTAINER_ID_LEN];
	struct stamp st;
	int result;
	struct vw_ctrmeta_info info;
	uint64_t used;
};

struct vw_ctrmeta {
	int root_fd;
	char *docker_dir, *podman_dirs, *nerdctl_dir; /* podman_dirs: NUL-separated, "" ended */
	struct json_tokener *tok;
	struct index podman, nerdctl;
	struct cached *cache; /* grown on demand up to max_cached (most nodes run no Docker) */
	size_t n_cached, cap_cached, max_cached;
	uint64_t tick;
};

bool vw_ctrmeta_valid_name(const char *s, size_t n)
{
	if (n == 0 || n > VW_CTRMETA_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			     (c >= '0' && c <= '9');

		if (!alnum && (i == 0 || (c != '_' && c != '.' && c != '-')))
			return false;
	}
	return true;
}

static bool valid_id(const char *s, size_t n)
{
	if (n != ID_HEX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* ---- stamps and signatures ---- */

static struct stamp stamp_of(const struct stat *st)
{
	return (struct stamp){
		.dev = (uint64_t)st->st_dev,
		.ino = (uint64_t)st->st_ino,
		.size = (uint64_t)st->st_size,
		.mtime_ns = (uint64_t)st->st_mtim.tv_sec * VW_NSEC_PER_SEC +
			    (uint64_t)st->st_mtim.tv_nsec,
	};
}

static bool stamp_eq(const struct stamp *a, const struct stamp *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime_ns == b->mtime_ns;
}

static bool racy(const struct stamp *s)
{
	struct timespec now;

	if (clock_gettime(CLOCK_REALTIME, &now) < 0)
		return true;
	return s->mtime_ns + RACY_NS >
	       (uint64_t)now.tv_sec * VW_NSEC_PER_SEC + (uint64_t)now.tv_nsec;
}

/* What a walk saw: the stamps of its files and directories hashed in order, and the newest. */
struct sig {
	uint64_t h;
	struct stamp newest;
};

#define SIG_INIT ((struct sig){ .h = 0xcbf29ce484222325ULL })

/* FNV-1a over one 64-bit value. */
static void mix(struct sig *sig, uint64_t v)
{
	for (int i = 0; i < 8; i++) {
		sig->h ^= (v >> (8 * i)) & 0xff;
		sig->h *= 0x100000001b3ULL;
	}
}

static void mix_stat(struct sig *sig, const struct stat *st)
{
	struct stamp s = stamp_of(st);

	mix(sig, s.dev);
	mix(sig, s.ino);
	mix(sig, s.size);
	mix(sig, s.mtime_ns);
	if (s.mtime_ns > sig->newest.mtime_ns)
		sig->newest = s;
}

/* Mix in the stamp of rel (or why it has none). 0, or the open/fstat error. */
static int mix_path(struct vw_ctrmeta *m, const char *rel, struct sig *sig)
{
	_cleanup_close_ int fd = vw_open_in_root(m->root_fd, rel, O_PATH);
	struct stat st;

	if (fd >= 0 && fstat(fd, &st) < 0)
		fd = -errno;
	if (fd < 0) {
		mix(sig, (uint64_t)-fd);
		return fd;
	}
	mix_stat(sig, &st);
	return 0;
}

/* ---- indexes ---- */

static void note_err(struct index *idx, int r)
{
	if (idx && r < 0 && r != -ENOENT && !idx->err)
		idx->err = r;
}

static void index_add(struct index *idx, const char *id, size_t id_len, const char *name,
		      size_t name_len)
{
	struct entry *e;

	if (!valid_id(id, id_len) || !vw_ctrmeta_valid_name(name, name_len)) {
		note_err(idx, -EINVAL);
		return;
	}
	if (idx->n >= INDEX_MAX_ENTRIES) {
		note_err(idx, -ENOSPC);
		return;
	}
	if (vw_array_grow((void **)&idx->e, sizeof(*idx->e), idx->n, &idx->cap) < 0) {
		note_err(idx, -ENOMEM);
		return;
	}
	e = &idx->e[idx->n++];
	memcpy(e->id, id, ID_HEX);
	e->id[ID_HEX] = '\0';
	memcpy(e->name, name, name_len);
	e->name[name_len] = '\0';
}

/* The one name the index gives id: an ID listed under two different names names nothing. */
static int index_find(const struct index *idx, const char *id, struct vw_ctrmeta_info *ret)
{
	const struct entry *found = NULL;

	for (size_t i = 0; i < idx->n; i++) {
		if (strcmp(idx->e[i].id, id) != 0)
			continue;
		if (found && strcmp(found->name, idx->e[i].name) != 0)
			return -EINVAL;
		found = &idx->e[i];
	}
	if (!found)
		return idx->err ? idx->err : -ENOENT;
	memcpy(ret->name, found->name, sizeof(ret->name));
	return 0;
}

/*
 * A walk visits a runtime's files and directories in a stable order, mixing each one's stamp into
 * *sig; with load set it also parses them into load.
 */
typedef void (*walk_fn)(struct vw_ctrmeta *m, struct index *load, struct sig *sig);

static int index_lookup(struct vw_ctrmeta *m, struct index *idx, walk_fn walk, const char *id,
			struct vw_ctrmeta_info *ret)
{
	struct sig sig = SIG_INIT;

	walk(m, NULL, &sig);
	if (!idx->loaded || idx->racy || sig.h != idx->sig) {
		idx->n = 0;
		idx->err = 0;
		sig = SIG_INIT;
		walk(m, idx, &sig);
		idx->sig = sig.h;
		idx->racy = racy(&sig.newest);
		idx->loaded = true;
	}
	return index_find(idx, id, ret);
}

/* ---- Podman: containers/storage's containers.json ---- */

/*
 * [{"id": "<64 hex>", "names": ["web"], "image": ..., "layer": ..., "metadata": "<JSON text>",
 *   "created": ..., "flags": {...}}, ...]: names[0] is the name `podman ps` shows.
 */
static void podman_parse(struct vw_ctrmeta *m, const char *buf, size_t len, struct index *idx)
{
	_cleanup_json_ struct json_object *arr = vw_json_parse(m->tok, buf, len, json_type_array);

	if (!arr) {
		note_err(idx, -EINVAL);
		return;
	}
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		struct json_object *c = json_object_array_get_idx(arr, i);
		struct json_object *names = vw_jarr(c, "names");
		const char *id = json_object_is_type(c, json_type_object) ? vw_jstr(c, "id") : NULL;
		const char *name;

		if (!id || !names || json_object_array_length(names) == 0)
			continue; /* a container with no name: nothing to tell */
		name = vw_jstr_value(json_object_array_get_idx(names, 0));
		if (!name) {
			note_err(idx, -EINVAL);
			continue;
		}
		index_add(idx, id, strlen(id), name, strlen(name));
	}
}

static void podman_walk(struct vw_ctrmeta *m, struct index *load, struct sig *sig)
{
	for (const char *root = m->podman_dirs; *root; root += strlen(root) + 1)
		for (size_t d = 0; d < ARRAY_SIZE(podman_drivers); d++)
			for (size_t f = 0; f < ARRAY_SIZE(podman_files); f++) {
				_cleanup_free_ char *buf = NULL;
				char rel[PATH_MAX];
				size_t len;
				int r;

				int n = snprintf(rel, sizeof(rel), "%s/%s-containers/%s", root,
						 podman_drivers[d], podman_files[f]);

				if (n >= (int)sizeof(rel))
					continue;
				r = mix_path(m, rel, sig);
				if (r < 0)
					note_err(load, r);
				if (r < 0 || !load)
					continue;
				r = vw_read_alloc_in_root(m->root_fd, rel, PODMAN_INDEX_MAX, &buf,
							  &len, NULL);
				if (r < 0)
					note_err(load, r);
				else
					podman_parse(m, buf, len, load);
			}
}

/* ---- nerdctl: <data root>/<address hash>/names/<namespace>/<name>, each holding an ID ---- */

static void nerdctl_parse(const char *buf, size_t len, const char *name, struct index *idx)
{
	while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
		len--; /* nerdctl writes the bare ID; tolerate a newline from a hand edit */
	index_add(idx, buf, len, name, strlen(name));
}

static void nerdctl_read_name(struct vw_ctrmeta *m, const char *dir, const char *name,
			      struct index *idx)
{
	_cleanup_free_ char *buf = NULL;
	char rel[PATH_MAX];
	size_t len;
	int r;

	if (snprintf(rel, sizeof(rel), "%s/%s", dir, name) >= (int)sizeof(rel))
		return;
	r = vw_read_alloc_in_root(m->root_fd, rel, NERDCTL_NAME_FILE_MAX, &buf, &len, NULL);
	if (r < 0) {
		note_err(idx, r);
		return;
	}
	nerdctl_parse(buf, len, name, idx);
}

/* Each subdirectory of rel (no dot entries) passed to fn; the count of directories visited is
 * capped through *budget. */
typedef void (*subdir_fn)(struct vw_ctrmeta *m, const char *rel, struct index *load,
			  struct sig *sig, size_t *budget);

static void walk_dir(struct vw_ctrmeta *m, const char *rel, struct index *load, struct sig *sig,
		     size_t *budget, subdir_fn fn, bool files)
{
	int fd = vw_open_in_root(m->root_fd, rel, O_RDONLY | O_DIRECTORY);
	struct dirent *de;
	struct stat st;
	DIR *d;

	if (fd < 0 || fstat(fd, &st) < 0) {
		mix(sig, (uint64_t)(fd < 0 ? -fd : errno));
		note_err(load, fd < 0 ? fd : -errno);
		if (fd >= 0)
			close(fd);
		return;
	}
	mix_stat(sig, &st);
	if (!fn && !(files && load)) {
		close(fd);
		return;
	}
	d = fdopendir(fd);
	if (!d) {
		note_err(load, -errno);
		close(fd);
		return;
	}
	while ((de = readdir(d))) {
		char sub[PATH_MAX];

		if (de->d_name[0] == '.')
			continue;
		if (files) {
			if (de->d_type == DT_REG || de->d_type == DT_UNKNOWN)
				nerdctl_read_name(m, rel, de->d_name, load);
			continue;
		}
		if ((de->d_type != DT_DIR && de->d_type != DT_UNKNOWN) || *budget == 0 ||
		    snprintf(sub, sizeof(sub), "%s/%s", rel, de->d_name) >= (int)sizeof(sub))
			continue;
		(*budget)--;
		fn(m, sub, load, sig, budget);
	}
	closedir(d);
}

static void nerdctl_namespace(struct vw_ctrmeta *m, const char *rel, struct index *load,
			      struct sig *sig, size_t *budget)
{
	walk_dir(m, rel, load, sig, budget, NULL, true);
}

static void nerdctl_store(struct vw_ctrmeta *m, const char *rel, struct index *load,
			  struct sig *sig, size_t *budget)
{
	char names[PATH_MAX];

	if (snprintf(names, sizeof(names), "%s/names", rel) < (int)sizeof(names))
		walk_dir(m, names, load, sig, budget, nerdctl_namespace, false);
}

static void nerdctl_walk(struct vw_ctrmeta *m, struct index *load, struct sig *sig)
{
	size_t budget = NERDCTL_MAX_DIRS;

	if (*m->nerdctl_dir)
		walk_dir(m, m->nerdctl_dir, load, sig, &budget, nerdctl_store, false);
}

/* ---- Docker: <containers dir>/<id>/config.v2.json ---- */

static void docker_project(struct json_object *cfg, struct vw_ctrmeta_info *ret)
{
	const char *p = vw_jstr(vw_jobj(vw_jobj(cfg, "Config"), "Labels"),
				"com.docker.compose.project");

	/* Compose project names are [a-z0-9][a-z0-9_-]*: a subset of the name syntax. */
	if (p && vw_ctrmeta_valid_name(p, strlen(p)))
		memcpy(ret->project, p, strlen(p) + 1);
}

/* {"ID": "<id>", "Name": "/web", "Config": {"Labels": {...}}, ...}, as moby's container.Container
 * serializes it. The ID must be the one asked for: a file copied elsewhere names nothing. */
static int docker_parse(struct vw_ctrmeta *m, const char *buf, size_t len, const char *id,
			struct vw_ctrmeta_info *ret)
{
	_cleanup_json_ struct json_object *cfg = vw_json_parse(m->tok, buf, len, json_type_object);
	const char *fid = vw_jstr(cfg, "ID"), *name = vw_jstr(cfg, "Name");

	if (!fid || strcmp(fid, id) != 0 || !name)
		return -EINVAL;
	if (*name == '/')
		name++;
	if (!vw_ctrmeta_valid_name(name, strlen(name)))
		return -EINVAL;
	memcpy(ret->name, name, strlen(name) + 1);
	docker_project(cfg, ret);
	return 0;
}

/* The entry for id, else a new one (or the least recently used); NULL on ENOMEM. */
static struct cached *cache_slot(struct vw_ctrmeta *m, const char *id)
{
	struct cached *lru = NULL;

	for (size_t i = 0; i < m->n_cached; i++) {
		if (strcmp(m->cache[i].id, id) == 0)
			return &m->cache[i];
		if (!lru || m->cache[i].used < lru->used)
			lru = &m->cache[i];
	}
	if (m->n_cached < m->max_cached) {
		if (m->n_cached == m->cap_cached) {
			size_t cap = VW_MIN(m->cap_cached ? m->cap_cached * 2 : 8, m->max_cached);
			struct cached *nc = reallocarray(m->cache, cap, sizeof(*nc));

			if (!nc)
				return NULL;
			m->cache = nc;
			m->cap_cached = cap;
		}
		lru = &m->cache[m->n_cached++];
	}
	*lru = (struct cached){ 0 };
	memcpy(lru->id, id, ID_HEX + 1);
	return lru;
}

static int docker_lookup(struct vw_ctrmeta *m, const char *id, struct vw_ctrmeta_info *ret)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	char rel[PATH_MAX];
	struct cached *c;
	struct stamp now;
	struct stat st;
	size_t len;
	int r;

	if (!*m->docker_dir)
		return -ENOENT;
	if (snprintf(rel, sizeof(rel), "%s/%s/config.v2.json", m->docker_dir, id) >=
	    (int)sizeof(rel))
		return -ENOENT;
	fd = vw_open_in_root(m->root_fd, rel, O_PATH);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0)
		return -errno;
	now = stamp_of(&st);
	c = cache_slot(m, id);
	if (!c)
		return -ENOMEM;
	c->used = ++m->tick;
	if (c->valid && stamp_eq(&c->st, &now)) {
		*ret = c->info;
		return c->result;
	}
	c->valid = false;
	r = vw_read_alloc_in_root(m->root_fd, rel, DOCKER_CONFIG_MAX, &buf, &len, &st);
	if (r < 0)
		return r; /* failing before parsing is cheap to do again: not cached */
	c->st = stamp_of(&st);
	c->valid = !racy(&c->st);
	c->result = docker_parse(m, buf, len, id, &c->info);
	if (c->result < 0)
		c->info = (struct vw_ctrmeta_info){ 0 };
	*ret = c->info;
	return c->result;
}

/* ---- the parsers on a buffer (ctrmeta-priv.h) ---- */

int vw_ctrmeta_parse_docker(struct vw_ctrmeta *m, const char *buf, size_t len, const char *id,
			    struct vw_ctrmeta_info *ret)
{
	int r;

	*ret = (struct vw_ctrmeta_info){ 0 };
	r = docker_parse(m, buf, len, id, ret);
	if (r < 0)
		*ret = (struct vw_ctrmeta_info){ 0 };
	return r;
}

/* The name an index of one file gives id. */
static int index_of_one(struct index *idx, const char *id, struct vw_ctrmeta_info *ret)
{
	int r;

	*ret = (struct vw_ctrmeta_info){ 0 };
	r = index_find(idx, id, ret);
	if (r < 0)
		*ret = (struct vw_ctrmeta_info){ 0 };
	free(idx->e);
	return r;
}

int vw_ctrmeta_parse_podman(struct vw_ctrmeta *m, const char *buf, size_t len, const char *id,
			    struct vw_ctrmeta_info *ret)
{
	struct index idx = { 0 };

	podman_parse(m, buf, len, &idx);
	return index_of_one(&idx, id, ret);
}

int vw_ctrmeta_parse_nerdctl(const char *name, const char *buf, size_t len, const char *id,
			     struct vw_ctrmeta_info *ret)
{
	struct index idx = { 0 };

	nerdctl_parse(buf, len, name, &idx);
	return index_of_one(&idx, id, ret);
}

/* ---- the runtimes ---- */

static int podman_lookup(struct vw_ctrmeta *m, const char *id, struct vw_ctrmeta_info *ret)
{
	return index_lookup(m, &m->podman, podman_walk, id, ret);
}

static int nerdctl_lookup(struct vw_ctrmeta *m, const char *id, struct vw_ctrmeta_info *ret)
{
	return index_lookup(m, &m->nerdctl, nerdctl_walk, id, ret);
}

static const struct ctrmeta_ops {
	enum vw_runtime runtime; /* the cgroup path's runtime this source names */
	const char *source;
	int (*lookup)(struct vw_ctrmeta *m, const char *id, struct vw_ctrmeta_info *ret);
} sources[] = {
	{ VW_RUNTIME_DOCKER, "docker", docker_lookup },
	{ VW_RUNTIME_PODMAN, "podman", podman_lookup },
	{ VW_RUNTIME_CONTAINERD, "nerdctl", nerdctl_lookup },
};

int vw_ctrmeta_lookup(struct vw_ctrmeta *m, enum vw_runtime rt, const char *id,
		      struct vw_ctrmeta_info *ret)
{
	*ret = (struct vw_ctrmeta_info){ 0 };
	if (!m || !id || !valid_id(id, strlen(id)))
		return -ENOENT;
	for (size_t i = 0; i < ARRAY_SIZE(sources); i++)
		if (sources[i].runtime == rt) {
			int r = sources[i].lookup(m, id, ret);

			if (r < 0)
				*ret = (struct vw_ctrmeta_info){ 0 };
			return r;
		}
	return -ENOENT;
}

int vw_ctrmeta_name(struct vw_ctrmeta *m, enum vw_runtime rt, const char *id, char *name,
		    size_t len)
{
	struct vw_ctrmeta_info info;
	int r;

	if (len == 0)
		return -ERANGE;
	name[0] = '\0';
	r = vw_ctrmeta_lookup(m, rt, id, &info);
	if (r < 0)
		return r;
	if (strlen(info.name) >= len)
		return -ERANGE;
	memcpy(name, info.name, strlen(info.name) + 1);
	return 0;
}

/* ---- set-up ---- */

/* A relative path with no ".." component (RESOLVE_IN_ROOT would contain it; refuse it anyway). */
static bool valid_rel(const char *p)
{
	if (*p == '/')
		return false;
	for (const char *c = p; *c; c = strchrnul(c, '/'), c += *c == '/')
		if (c[0] == '.' && c[1] == '.' && (c[2] == '/' || c[2] == '\0'))
			return false;
	return true;
}

static char *dup_rel(const char *given, const char *def)
{
	const char *p = given ? given : def;

	if (!valid_rel(p)) {
		errno = EINVAL;
		return NULL;
	}
	return strdup(p);
}

/* "a:b" -> "a\0b\0\0", each checked; empty parts dropped. */
static char *split_dirs(const char *given)
{
	const char *p = given ? given : DEFAULT_PODMAN_DIRS;
	size_t n = strlen(p);
	char *out = calloc(n + 2, 1), *o = out;

	if (!out)
		return NULL;
	for (const char *s = p; *s;) {
		size_t k = strcspn(s, ":");

		if (k > 0) {
			memcpy(o, s, k);
			if (!valid_rel(o)) {
				free(out);
				errno = EINVAL;
				return NULL;
			}
			o += k + 1;
		}
		s += k + (s[k] == ':');
	}
	return out;
}

struct vw_ctrmeta *vw_ctrmeta_new(const struct vw_ctrmeta_opts *o)
{
	struct vw_ctrmeta *m;

	if (o->root_fd < 0) {
		errno = EBADF;
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->root_fd = fcntl(o->root_fd, F_DUPFD_CLOEXEC, 3);
	if (m->root_fd < 0)
		goto fail;
	m->docker_dir = dup_rel(o->docker_dir, DEFAULT_DOCKER_DIR);
	m->nerdctl_dir = m->docker_dir ? dup_rel(o->nerdctl_dir, DEFAULT_NERDCTL_DIR) : NULL;
	m->podman_dirs = m->nerdctl_dir ? split_dirs(o->podman_dirs) : NULL;
	if (!m->podman_dirs)
		goto fail;
	m->max_cached = o->max_cached ? o->max_cached : DEFAULT_MAX_CACHED;
	m->tok = vw_json_tokener_new(JSON_DEPTH);
	if (!m->tok) {
		errno = ENOMEM;
		goto fail;
	}
	return m;
fail:
	vw_ctrmeta_free(m);
	return NULL;
}

void vw_ctrmeta_free(struct vw_ctrmeta *m)
{
	int saved = errno;

	if (!m)
		return;
	if (m->root_fd >= 0)
		close(m->root_fd);
	free(m->docker_dir);
	free(m->podman_dirs);
	free(m->nerdctl_dir);
	if (m->tok)
		json_tokener_free(m->tok);
	free(m->podman.e);
	free(m->nerdctl.e);
	free(m->cache);
	free(m);
	errno = saved;
}

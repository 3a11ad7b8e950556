/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Container names from runtime metadata (shared/workload/ctrmeta.c): the checked-in Docker, Podman and
 * nerdctl trees (tests/data/ctrmeta, provenance in tests/data/README.md), then hostile files in
 * temporary trees, the mtime-driven re-reads and the bounded cache.
 */
#include "vw_test.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctrmeta.h"
#include "fileio.h"
#include "fixture.h"
#include "macro.h"

#define DATA VW_TEST_DATA "/ctrmeta"

#define ID_WEB "3f1c0e1b7a2d4c5e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e"
#define ID_SHOP "9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b"
#define ID_VWN "b4346598c5056a234adf515916bbdea3fc076b9e44b398e913128a6f04d076c7"
#define ID_DB "da04e27b728225d960d65c8c5b39e0abbe8bbaa10f1869dfb16c9f15d9878a5a"
#define ID_JOB "c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00"
#define ID_NGINX "5e4cbd0bd0c9a1d6bd8fd1e23a64e7a5cd27fdf1a9a3c43f96c8b4b2b8e2d7f1"
#define ID_WP "77aa9f1e0b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6"
#define ID_X "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define ID_Y "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"

#define DOCKER_DIR "var/lib/docker/containers/"
#define PODMAN_JSON "var/lib/containers/storage/overlay-containers/containers.json"
#define NERD_NS "var/lib/nerdctl/1935db59/names/default/"

static struct vw_ctrmeta *open_root(const char *root, size_t max_cached)
{
	_cleanup_close_ int fd = vw_root_open(root);
	struct vw_ctrmeta *m;

	assert_true(fd >= 0);
	m = vw_ctrmeta_new(&(struct vw_ctrmeta_opts){ .root_fd = fd, .max_cached = max_cached });
	assert_non_null(m);
	return m;
}

static void expect_name(struct vw_ctrmeta *m, enum vw_runtime rt, const char *id,
			const char *name)
{
	char buf[VW_CTRMETA_NAME_MAX + 1];
	int r = vw_ctrmeta_name(m, rt, id, buf, sizeof(buf));

	if (r != 0 || strcmp(buf, name) != 0)
		fail_msg("%s %.12s: %d \"%s\", expected \"%s\"", vw_runtime_name(rt), id, r, buf,
			 name);
}

static void expect_err(struct vw_ctrmeta *m, enum vw_runtime rt, const char *id, int err)
{
	char buf[VW_CTRMETA_NAME_MAX + 1] = "junk";
	int r = vw_ctrmeta_name(m, rt, id, buf, sizeof(buf));

	if (r != err || buf[0])
		fail_msg("%s %.12s: %d \"%s\", expected %d and no name", vw_runtime_name(rt), id, r,
			 buf, err);
}

/* ---- the checked-in trees ---- */

/* Every row against a fresh reader on its tree: a name, or the error and no name. */
static const struct tree_case {
	const char *tree;
	enum vw_runtime rt;
	const char *id, *name;
	int err;
} tree_cases[] = {
	{ "docker", VW_RUNTIME_DOCKER, ID_WEB, "web", 0 },
	{ "docker", VW_RUNTIME_DOCKER, ID_SHOP, "shop-api-1", 0 },
	{ "docker", VW_RUNTIME_DOCKER, ID_X, NULL, -ENOENT },
	/* The runtime the cgroup path gave picks the source: no cross-runtime guesses. */
	{ "docker", VW_RUNTIME_PODMAN, ID_WEB, NULL, -ENOENT },
	{ "docker", VW_RUNTIME_CRIO, ID_WEB, NULL, -ENOENT },
	{ "docker", VW_RUNTIME_KUBERNETES, ID_WEB, NULL, -ENOENT },
	{ "podman", VW_RUNTIME_PODMAN, ID_VWN, "vwn-exp", 0 },
	{ "podman", VW_RUNTIME_PODMAN, ID_DB, "db", 0 },
	{ "podman", VW_RUNTIME_PODMAN, ID_JOB, "job-42", 0 }, /* the run root's volatile store */
	{ "podman", VW_RUNTIME_PODMAN, ID_X, NULL, -ENOENT },
	{ "podman", VW_RUNTIME_DOCKER, ID_VWN, NULL, -ENOENT },
	{ "nerdctl", VW_RUNTIME_CONTAINERD, ID_NGINX, "nginx", 0 },
	{ "nerdctl", VW_RUNTIME_CONTAINERD, ID_WP, "compose-wordpress_db_1", 0 },
	{ "nerdctl", VW_RUNTIME_CONTAINERD, ID_X, NULL, -ENOENT },
};

static void test_trees(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(tree_cases); i++) {
		const struct tree_case *c = &tree_cases[i];
		char root[512];
		struct vw_ctrmeta *m;

		snprintf(root, sizeof(root), DATA "/%s", c->tree);
		m = open_root(root, 0);
		if (c->name)
			expect_name(m, c->rt, c->id, c->name);
		else
			expect_err(m, c->rt, c->id, c->err);
		vw_ctrmeta_free(m);
	}
}

/* Docker Compose's project label comes along with the name. */
static void test_docker_project(void **state)
{
	struct vw_ctrmeta *m = open_root(DATA "/docker", 0);
	struct vw_ctrmeta_info info;

	(void)state;
	assert_int_equal(vw_ctrmeta_lookup(m, VW_RUNTIME_DOCKER, ID_SHOP, &info), 0);
	assert_string_equal(info.name, "shop-api-1");
	assert_string_equal(info.project, "shop");
	assert_int_equal(vw_ctrmeta_lookup(m, VW_RUNTIME_DOCKER, ID_WEB, &info), 0);
	assert_string_equal(info.project, "");
	assert_int_equal(vw_ctrmeta_lookup(m, VW_RUNTIME_DOCKER, ID_X, &info), -ENOENT);
	assert_string_equal(info.name, "");
	vw_ctrmeta_free(m);
}

static void test_bad_ids_and_buffers(void **state)
{
	struct vw_ctrmeta *m = open_root(DATA "/docker", 0);
	char small[3] = "xx";

	(void)state;
	expect_err(m, VW_RUNTIME_DOCKER, "../../../../etc/passwd", -ENOENT);
	expect_err(m, VW_RUNTIME_DOCKER,
		   "3F1C0E1B7A2D4C5E8F9A0B1C2D3E4F5A6B7C8D9E0F1A2B3C4D5E6F7A8B9C0D1E", -ENOENT);
	expect_err(m, VW_RUNTIME_DOCKER, "3f1c0e1b7a2d", -ENOENT);
	expect_err(m, VW_RUNTIME_DOCKER, "", -ENOENT);
	assert_int_equal(vw_ctrmeta_name(m, VW_RUNTIME_DOCKER, ID_WEB, small, sizeof(small)),
			 -ERANGE);
	assert_string_equal(small, "");
	assert_int_equal(vw_ctrmeta_name(NULL, VW_RUNTIME_DOCKER, ID_WEB, small, sizeof(small)),
			 -ENOENT);
	vw_ctrmeta_free(m);
	vw_ctrmeta_free(NULL);
}

static void test_valid_name(void **state)
{
	static const char *const good[] = { "web", "a", "shop-api-1", "compose_wp.db", "0abc",
					    "A.b_c-D" };
	static const char *const bad[] = { "", "-web", "_web", ".web", "a b", "a/b", "a\"b",
					   "a\nb", "a{b}", "caf\xc3\xa9", "a=b", "a,b", "a\\b" };
	char longest[VW_CTRMETA_NAME_MAX + 2];

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(good); i++)
		assert_true(vw_ctrmeta_valid_name(good[i], strlen(good[i])));
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		if (vw_ctrmeta_valid_name(bad[i], strlen(bad[i])))
			fail_msg("\"%s\" passed", bad[i]);
	memset(longest, 'a', sizeof(longest));
	assert_true(vw_ctrmeta_valid_name(longest, VW_CTRMETA_NAME_MAX));
	assert_false(vw_ctrmeta_valid_name(longest, VW_CTRMETA_NAME_MAX + 1));
}

static void test_opts(void **state)
{
	_cleanup_close_ int fd = vw_root_open(DATA "/docker");
	static const char *const bad[] = { "/var/lib/docker/containers", "../docker",
					   "var/lib/../../x", "var/.." };
	struct vw_ctrmeta *m;

	(void)state;
	errno = 0;
	assert_null(vw_ctrmeta_new(&(struct vw_ctrmeta_opts){ .root_fd = -1 }));
	assert_int_equal(errno, EBADF);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		errno = 0;
		assert_null(vw_ctrmeta_new(&(struct vw_ctrmeta_opts){ .root_fd = fd,
								       .docker_dir = bad[i] }));
		assert_int_equal(errno, EINVAL);
		assert_null(vw_ctrmeta_new(&(struct vw_ctrmeta_opts){ .root_fd = fd,
								       .podman_dirs = bad[i] }));
		assert_null(vw_ctrmeta_new(&(struct vw_ctrmeta_opts){ .root_fd = fd,
								       .nerdctl_dir = bad[i] }));
	}
	/* "" turns a runtime off; names with dots that are not ".." are fine. */
	m = vw_ctrmeta_new(&(struct vw_ctrmeta_opts){ .root_fd = fd, .docker_dir = "" });
	assert_non_null(m);
	expect_err(m, VW_RUNTIME_DOCKER, ID_WEB, -ENOENT);
	vw_ctrmeta_free(m);
	m = vw_ctrmeta_new(&(struct vw_ctrmeta_opts){
		.root_fd = fd, .docker_dir = "./var/lib/docker/containers", .podman_dirs = "a..b::c" });
	assert_non_null(m);
	expect_name(m, VW_RUNTIME_DOCKER, ID_WEB, "web");
	vw_ctrmeta_free(m);
}

/* ---- hostile Docker files ---- */

static char *docker_json(const char *id, const char *name_json)
{
	char *s = NULL;

	assert_true(asprintf(&s,
			     "{\"StreamConfig\":{},\"State\":{\"Running\":true,\"Pid\":7},"
			     "\"ID\":\"%s\",\"Config\":{\"Labels\":{\"com.docker.compose.project\":"
			     "\"p\"}},\"Name\":%s,\"Driver\":\"overlay2\"}",
			     id, name_json) > 0);
	return s;
}

static void put_docker(const char *root, const char *id, const char *text)
{
	char rel[256];

	snprintf(rel, sizeof(rel), DOCKER_DIR "%s/config.v2.json", id);
	assert_int_equal(vw_fixture_write(root, rel, text, 0600), 0);
}

static void test_docker_hostile(void **state)
{
	static const struct {
		const char *name_json;
		int err;
	} cases[] = {
		{ "\"/ok\"", 0 },
		{ "\"ok-no-slash\"", 0 },
		{ "42", -EINVAL },
		{ "null", -EINVAL },
		{ "[\"/web\"]", -EINVAL },
		{ "\"/\"", -EINVAL },
		{ "\"\"", -EINVAL },
		{ "\"/a b\"", -EINVAL },
		{ "\"/web\\\"} 1\"", -EINVAL },
		{ "\"/a\\nb\"", -EINVAL },
		{ "\"/a\\u0000b\"", -EINVAL },
		{ "\"/parent/child\"", -EINVAL },
		{ "\"//x\"", -EINVAL },
		{ "\"/caf\\u00e9\"", -EINVAL },
		{ "\"/-x\"", -EINVAL },
	};
	char *root = vw_fixture_mkdtemp("ctrmeta");
	struct vw_ctrmeta *m;
	char id[65];

	(void)state;
	assert_non_null(root);
	m = open_root(root, 0);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		_cleanup_free_ char *s = NULL;
		char name[64];
		int r;

		snprintf(id, sizeof(id), "%064zx", i + 1);
		s = docker_json(id, cases[i].name_json);
		put_docker(root, id, s);
		r = vw_ctrmeta_name(m, VW_RUNTIME_DOCKER, id, name, sizeof(name));
		if (r != cases[i].err || (r < 0 && name[0]))
			fail_msg("Name %s: %d \"%s\", expected %d", cases[i].name_json, r, name,
				 cases[i].err);
	}
	vw_ctrmeta_free(m);
	vw_fixture_rm(root);
}

static void test_docker_malformed(void **state)
{
	char *root = vw_fixture_mkdtemp("ctrmeta"), *outside = vw_fixture_mkdtemp("ctrmeta-out");
	_cleanup_free_ char *good = docker_json(ID_X, "\"/x\""), *other = docker_json(ID_Y, "\"/y\"");
	_cleanup_free_ char *huge = malloc((2u << 20) + 1), *deep = malloc(4096);
	struct vw_ctrmeta *m;
	char path[512], rel[256];

	(void)state;
	assert_non_null(root);
	assert_non_null(outside);
	m = open_root(root, 0);
	/* Truncated, not JSON, trailing garbage, the wrong top-level type, an ID not its own. */
	put_docker(root, ID_X, "{\"ID\":\"" ID_X "\",\"Name\":\"/x\"");
	expect_err(m, VW_RUNTIME_DOCKER, ID_X, -EINVAL);
	put_docker(root, ID_X, "Name: /x\n");
	expect_err(m, VW_RUNTIME_DOCKER, ID_X, -EINVAL);
	put_docker(root, ID_X, "{\"ID\":\"" ID_X "\",\"Name\":\"/x\"} {}");
	expect_err(m, VW_RUNTIME_DOCKER, ID_X, -EINVAL);
	put_docker(root, ID_X, "[{\"ID\":\"" ID_X "\",\"Name\":\"/x\"}]");
	expect_err(m, VW_RUNTIME_DOCKER, ID_X, -EINVAL);
	put_docker(root, ID_X, other); /* a copied file: its ID is ID_Y's */
	expect_err(m, VW_RUNTIME_DOCKER, ID_X, -EINVAL);
	put_docker(root, ID_X, "");
	expect_err(m, VW_RUNTIME_DOCKER, ID_X, -EINVAL);
	/* Nested past the depth limit. */
	{
		static const char head[] = "{\"ID\":\"" ID_X "\",\"Name\":\"/x\",\"A\":";

		memset(deep, '[', 4095);
		deep[4095] = '\0';
		memcpy(deep, head, sizeof(head) - 1);
	}
	put_docker(root, ID_X, deep);
	expect_err(m, VW_RUNTIME_DOCKER, ID_X, -EINVAL);
	/* Over the size cap: refused by its size, never read. */
	memset(huge, ' ', 2u << 20);
	huge[2u << 20] = '\0';
	memcpy(huge, good, strlen(good));
	put_docker(root, ID_X, huge);
	expect_err(m, VW_RUNTIME_DOCKER, ID_X, -EFBIG);
	/* A FIFO does not block the reader; a directory is no file. */
	snprintf(path, sizeof(path), "%s/" DOCKER_DIR ID_X "/config.v2.json", root);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkfifo(path, 0600), 0);
	expect_err(m, VW_RUNTIME_DOCKER, ID_X, -EINVAL);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkdir(path, 0700), 0);
	expect_err(m, VW_RUNTIME_DOCKER, ID_X, -EISDIR);
	assert_int_equal(rmdir(path), 0);
	/* An absolute symlink resolves inside the root, not to the exporter's own /. */
	assert_int_equal(vw_fixture_write(outside, "config.v2.json", good, 0600), 0);
	snprintf(path, sizeof(path), "%s/config.v2.json", outside);
	snprintf(rel, sizeof(rel), DOCKER_DIR ID_X "/config.v2.json");
	assert_int_equal(vw_fixture_symlink(root, path, rel), 0);
	expect_err(m, VW_RUNTIME_DOCKER, ID_X, -ENOENT);
	/* ... and so does a containers directory that is a symlink (/var/lib/docker -> /data). */
	assert_int_equal(vw_fixture_write(root, "data/containers/" ID_Y "/config.v2.json", other, 0600),
			 0);
	assert_int_equal(vw_fixture_symlink(root, "/data", "var/lib/dockerd"), 0);
	vw_ctrmeta_free(m);
	{
		_cleanup_close_ int fd = vw_root_open(root);

		m = vw_ctrmeta_new(&(struct vw_ctrmeta_opts){
			.root_fd = fd, .docker_dir = "var/lib/dockerd/containers" });
		assert_non_null(m);
	}
	expect_name(m, VW_RUNTIME_DOCKER, ID_Y, "y");
	vw_ctrmeta_free(m);
	vw_fixture_rm(outside);
	vw_fixture_rm(root);
}

static void set_mtime(const char *root, const char *rel, const struct timespec *t)
{
	char path[512];
	struct timespec ts[2] = { *t, *t };

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

static struct timespec mtime_of(const char *root, const char *rel)
{
	char path[512];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	assert_int_equal(stat(path, &st), 0);
	return st.st_mtim;
}

/* Overwrite a file in place (same inode, same size) and put its mtime back. */
static void rewrite_keep_stamp(const char *root, const char *rel, const char *text)
{
	struct timespec t = mtime_of(root, rel);
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "r+");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
	set_mtime(root, rel, &t);
}

/* An old mtime: a stamp that old is trusted (a fresh one is read again, see RACY_NS). */
static void age(const char *root, const char *rel)
{
	set_mtime(root, rel, &(struct timespec){ .tv_sec = 1000000000 });
}

static void bump_mtime(const char *root, const char *rel)
{
	struct timespec t = mtime_of(root, rel);

	t.tv_sec += 1;
	set_mtime(root, rel, &t);
}

static void test_docker_cache(void **state)
{
	char *root = vw_fixture_mkdtemp("ctrmeta");
	_cleanup_free_ char *a = docker_json(ID_X, "\"/aaa\""), *b = docker_json(ID_X, "\"/bbb\"");
	_cleanup_free_ char *y = docker_json(ID_Y, "\"/y\"");
	struct vw_ctrmeta *m;
	char id[65];

	(void)state;
	assert_non_null(root);
	m = open_root(root, 2);
	/* Metadata that appears after the first lookup is found by the next one. */
	expect_err(m, VW_RUNTIME_DOCKER, ID_X, -ENOENT);
	put_docker(root, ID_X, a);
	expect_name(m, VW_RUNTIME_DOCKER, ID_X, "aaa"); /* fresh: read, not trusted yet */
	age(root, DOCKER_DIR ID_X "/config.v2.json");
	expect_name(m, VW_RUNTIME_DOCKER, ID_X, "aaa");
	/* Cached while the stamp holds (proved by an in-place edit it does not see) ... */
	rewrite_keep_stamp(root, DOCKER_DIR ID_X "/config.v2.json", b);
	expect_name(m, VW_RUNTIME_DOCKER, ID_X, "aaa");
	/* ... re-read once the mtime moves (docker rename rewrites the file). */
	bump_mtime(root, DOCKER_DIR ID_X "/config.v2.json");
	expect_name(m, VW_RUNTIME_DOCKER, ID_X, "bbb");
	/* Bounded: two slots, three containers, every answer still right. */
	put_docker(root, ID_Y, y);
	for (int i = 0; i < 3; i++) {
		snprintf(id, sizeof(id), "%064x", i + 1);
		expect_err(m, VW_RUNTIME_DOCKER, id, -ENOENT);
		expect_name(m, VW_RUNTIME_DOCKER, ID_X, "bbb");
		expect_name(m, VW_RUNTIME_DOCKER, ID_Y, "y");
	}
	/* A removed container names nothing. */
	{
		char path[512];

		snprintf(path, sizeof(path), "%s/" DOCKER_DIR ID_Y "/config.v2.json", root);
		assert_int_equal(unlink(path), 0);
	}
	expect_err(m, VW_RUNTIME_DOCKER, ID_Y, -ENOENT);
	vw_ctrmeta_free(m);
	vw_fixture_rm(root);
}

/* ---- hostile and changing Podman indexes ---- */

static void put_text(const char *root, const char *rel, const char *text)
{
	assert_int_equal(vw_fixture_write(root, rel, text, 0600), 0);
}

static void test_podman_hostile(void **state)
{
	char *root = vw_fixture_mkdtemp("ctrmeta");
	_cleanup_free_ char *huge = malloc((17u << 20) + 1);
	struct vw_ctrmeta *m;

	(void)state;
	assert_non_null(root);
	m = open_root(root, 0);
	/* Wrong types and odd names are skipped one by one; the good entries still count. */
	put_text(root, PODMAN_JSON,
		 "[{\"id\":\"" ID_X "\",\"names\":[\"good\"]},"
		 "{\"id\":42,\"names\":[\"num-id\"]},"
		 "{\"id\":\"" ID_Y "\",\"names\":\"not-an-array\"},"
		 "{\"id\":\"" ID_NGINX "\",\"names\":[7]},"
		 "{\"id\":\"" ID_WP "\",\"names\":[\"bad name\\\"}\"]},"
		 "{\"id\":\"" ID_DB "\",\"names\":[]},"
		 "{\"id\":\"" ID_VWN "\"},"
		 "{\"id\":\"short\",\"names\":[\"short\"]},"
		 "\"a string\", 17, null, [],"
		 "{\"id\":\"" ID_JOB "\",\"names\":[\"first\",\"second\"]}]");
	expect_name(m, VW_RUNTIME_PODMAN, ID_X, "good");
	expect_name(m, VW_RUNTIME_PODMAN, ID_JOB, "first");
	expect_err(m, VW_RUNTIME_PODMAN, ID_Y, -EINVAL); /* not found, and the index had junk */
	expect_err(m, VW_RUNTIME_PODMAN, ID_NGINX, -EINVAL);
	expect_err(m, VW_RUNTIME_PODMAN, ID_WP, -EINVAL);
	expect_err(m, VW_RUNTIME_PODMAN, ID_DB, -EINVAL);
	/* One file broken, the other (the run root's) still read. */
	put_text(root, PODMAN_JSON, "[{\"id\":\"" ID_X "\",\"names\":[\"good\"]");
	put_text(root, "run/containers/storage/vfs-containers/volatile-containers.json",
		 "[{\"id\":\"" ID_Y "\",\"names\":[\"vol\"]}]");
	expect_err(m, VW_RUNTIME_PODMAN, ID_X, -EINVAL);
	expect_name(m, VW_RUNTIME_PODMAN, ID_Y, "vol");
	/* One ID under two different names (two files disagreeing) names nothing. */
	put_text(root, PODMAN_JSON, "[{\"id\":\"" ID_Y "\",\"names\":[\"other\"]}]");
	expect_err(m, VW_RUNTIME_PODMAN, ID_Y, -EINVAL);
	put_text(root, PODMAN_JSON, "[{\"id\":\"" ID_Y "\",\"names\":[\"vol\"]}]");
	expect_name(m, VW_RUNTIME_PODMAN, ID_Y, "vol");
	/* Not JSON at all; the wrong top-level type; over the cap. */
	put_text(root, PODMAN_JSON, "\x7f" "ELF\x02\x01");
	expect_err(m, VW_RUNTIME_PODMAN, ID_X, -EINVAL);
	put_text(root, PODMAN_JSON, "{\"id\":\"" ID_X "\",\"names\":[\"good\"]}");
	expect_err(m, VW_RUNTIME_PODMAN, ID_X, -EINVAL);
	memset(huge, ' ', 17u << 20);
	huge[17u << 20] = '\0';
	huge[0] = '[';
	huge[(17u << 20) - 1] = ']';
	put_text(root, PODMAN_JSON, huge);
	expect_err(m, VW_RUNTIME_PODMAN, ID_X, -EFBIG);
	expect_name(m, VW_RUNTIME_PODMAN, ID_Y, "vol");
	vw_ctrmeta_free(m);
	vw_fixture_rm(root);
}

static void test_podman_reload(void **state)
{
	char *root = vw_fixture_mkdtemp("ctrmeta");
	struct vw_ctrmeta *m;
	_cleanup_close_ int fd = -1;

	(void)state;
	assert_non_null(root);
	m = open_root(root, 0);
	/* No storage at all yet: nothing, and no error. */
	expect_err(m, VW_RUNTIME_PODMAN, ID_X, -ENOENT);
	put_text(root, PODMAN_JSON, "[{\"id\":\"" ID_Y "\",\"names\":[\"y\"]}]");
	expect_err(m, VW_RUNTIME_PODMAN, ID_X, -ENOENT);
	/* podman writes the index by rename: a new inode, seen at the next lookup. */
	fd = vw_root_open(root);
	assert_true(fd >= 0);
	{
		static const char text[] = "[{\"id\":\"" ID_Y "\",\"names\":[\"y\"]},"
					   "{\"id\":\"" ID_X "\",\"names\":[\"x\"]}]";
		_cleanup_close_ int dir = vw_dir_open_at(fd, "var/lib/containers/storage/overlay-containers");
		_cleanup_close_ int d = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		assert_int_equal(vw_write_file_atomic_at(d, "containers.json", text, sizeof(text) - 1,
							 0600),
				 0);
	}
	expect_name(m, VW_RUNTIME_PODMAN, ID_X, "x");
	age(root, PODMAN_JSON);
	expect_name(m, VW_RUNTIME_PODMAN, ID_X, "x");
	/* An in-place edit that keeps the stamp is not re-read (the index is cached) ... */
	rewrite_keep_stamp(root, PODMAN_JSON, "[{\"id\":\"" ID_Y "\",\"names\":[\"z\"]}");
	expect_name(m, VW_RUNTIME_PODMAN, ID_Y, "y");
	/* ... until its mtime moves. */
	bump_mtime(root, PODMAN_JSON);
	expect_name(m, VW_RUNTIME_PODMAN, ID_Y, "z");
	expect_name(m, VW_RUNTIME_PODMAN, ID_X, "x");
	vw_ctrmeta_free(m);
	vw_fixture_rm(root);
}

/* ---- nerdctl's name store ---- */

static void test_nerdctl_changes(void **state)
{
	char *root = vw_fixture_mkdtemp("ctrmeta");
	char from[512], to[512];
	_cleanup_free_ char *big = malloc(4096);
	struct vw_ctrmeta *m;

	(void)state;
	assert_non_null(root);
	m = open_root(root, 0);
	expect_err(m, VW_RUNTIME_CONTAINERD, ID_X, -ENOENT);
	/* A store with no names directory yet; then a name in a new namespace. */
	assert_int_equal(vw_fixture_mkdir(root, "var/lib/nerdctl/1935db59/containers"), 0);
	expect_err(m, VW_RUNTIME_CONTAINERD, ID_X, -ENOENT);
	put_text(root, NERD_NS "web", ID_X);
	expect_name(m, VW_RUNTIME_CONTAINERD, ID_X, "web");
	/* A second store (another containerd address) and another namespace. */
	put_text(root, "var/lib/nerdctl/0a1b2c3d/names/builds/ci-7", ID_Y "\n");
	expect_name(m, VW_RUNTIME_CONTAINERD, ID_Y, "ci-7");
	/* nerdctl rename: the file is renamed. */
	snprintf(from, sizeof(from), "%s/" NERD_NS "web", root);
	snprintf(to, sizeof(to), "%s/" NERD_NS "web2", root);
	assert_int_equal(rename(from, to), 0);
	expect_name(m, VW_RUNTIME_CONTAINERD, ID_X, "web2");
	/* Hostile entries are skipped, never named: junk contents, an odd file name, a big
	 * file, a FIFO, a symlink out of the root, a directory. */
	put_text(root, NERD_NS "junk", "not an id");
	put_text(root, NERD_NS "a b", ID_NGINX);
	memset(big, 'a', 4095);
	big[4095] = '\0';
	memcpy(big, ID_WP, 64);
	put_text(root, NERD_NS "big", big);
	snprintf(to, sizeof(to), "%s/" NERD_NS "fifo", root);
	assert_int_equal(mkfifo(to, 0600), 0);
	assert_int_equal(vw_fixture_symlink(root, "/etc/hostname", NERD_NS "link"), 0);
	assert_int_equal(vw_fixture_mkdir(root, NERD_NS "dir"), 0);
	expect_err(m, VW_RUNTIME_CONTAINERD, ID_NGINX, -EINVAL);
	expect_err(m, VW_RUNTIME_CONTAINERD, ID_WP, -EINVAL);
	expect_name(m, VW_RUNTIME_CONTAINERD, ID_X, "web2");
	/* Two names holding one ID: no name rather than a guess. */
	put_text(root, NERD_NS "web3", ID_X);
	expect_err(m, VW_RUNTIME_CONTAINERD, ID_X, -EINVAL);
	vw_ctrmeta_free(m);
	vw_fixture_rm(root);
}

/* Without read permission (a non-root exporter without CAP_DAC_READ_SEARCH): no name, -EACCES. */
static void test_unreadable(void **state)
{
	char *root = vw_fixture_mkdtemp("ctrmeta");
	_cleanup_free_ char *x = docker_json(ID_X, "\"/x\"");
	struct vw_ctrmeta *m;
	pid_t pid;
	int status;

	(void)state;
	assert_non_null(root);
	put_docker(root, ID_X, x);
	put_text(root, PODMAN_JSON, "[{\"id\":\"" ID_X "\",\"names\":[\"x\"]}]");
	if (geteuid() != 0) {
		vw_fixture_rm(root);
		skip(); /* as a user the files are ours: the drop below needs root */
	}
	assert_int_equal(chmod(root, 0755), 0); /* directories searchable: only the 0600 files shut */
	m = open_root(root, 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char name[64];
		int r1, r2;

		if (setgid(65534) < 0 || setuid(65534) < 0)
			_exit(3);
		r1 = vw_ctrmeta_name(m, VW_RUNTIME_DOCKER, ID_X, name, sizeof(name));
		r2 = vw_ctrmeta_name(m, VW_RUNTIME_PODMAN, ID_X, name, sizeof(name));
		_exit(r1 == -EACCES && r2 == -EACCES && !name[0] ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	expect_name(m, VW_RUNTIME_DOCKER, ID_X, "x");
	vw_ctrmeta_free(m);
	vw_fixture_rm(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_trees),
		cmocka_unit_test(test_docker_project),
		cmocka_unit_test(test_bad_ids_and_buffers),
		cmocka_unit_test(test_valid_name),
		cmocka_unit_test(test_opts),
		cmocka_unit_test(test_docker_hostile),
		cmocka_unit_test(test_docker_malformed),
		cmocka_unit_test(test_docker_cache),
		cmocka_unit_test(test_podman_hostile),
		cmocka_unit_test(test_podman_reload),
		cmocka_unit_test(test_nerdctl_changes),
		cmocka_unit_test(test_unreadable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

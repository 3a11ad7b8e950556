/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: the container runtimes' on-disk metadata (ctrmeta.c): the input is read as
 * Docker's config.v2.json and as Podman's containers.json, each asked for every 64-hex ID in
 * it, and as a nerdctl name file: the part before the first '/' is its name (a directory entry
 * holds no '/'), the rest its content. Properties: a name given is Docker's syntax
 * (vw_ctrmeta_valid_name), a Compose project too, and a nerdctl file names exactly the ID it
 * holds.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctrmeta-priv.h"
#include "fuzz_common.h"

#define MAX_LOOKUPS 16

static struct vw_ctrmeta *meta(void)
{
	static struct vw_ctrmeta *m;

	if (!m) {
		struct vw_ctrmeta_opts o = { .root_fd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC) };

		m = o.root_fd >= 0 ? vw_ctrmeta_new(&o) : NULL;
		if (!m)
			abort();
		close(o.root_fd);
	}
	return m;
}

static void check_info(const char *what, const char *id, int r, const struct vw_ctrmeta_info *i)
{
	vw_fuzz_assert(r == 0 || r == -ENOENT || r == -EINVAL || r == -ENOSPC || r == -ENOMEM,
		       "%s %s: %d", what, id, r);
	if (r < 0) {
		vw_fuzz_assert(!i->name[0] && !i->project[0], "%s %s: %d with a name", what, id, r);
		return;
	}
	vw_fuzz_assert(vw_ctrmeta_valid_name(i->name, strlen(i->name)), "%s %s: name \"%s\"", what,
		       id, i->name);
	vw_fuzz_assert(!i->project[0] || vw_ctrmeta_valid_name(i->project, strlen(i->project)),
		       "%s %s: project \"%s\"", what, id, i->project);
}

static void nerdctl(const uint8_t *data, size_t size)
{
	const uint8_t *slash = memchr(data, '/', VW_MIN(size, (size_t)256));
	size_t nlen = slash ? (size_t)(slash - data) : 0;
	_cleanup_free_ char *name = vw_fuzz_strdup(data, nlen);
	const char *body = slash ? (const char *)slash + 1 : "";
	size_t blen = slash ? size - nlen - 1 : 0;
	char id[VW_FUZZ_HEX64];
	struct vw_ctrmeta_info info;
	int r;

	if (strlen(name) != nlen)
		return; /* a NUL: no directory entry is called that */
	memcpy(id, body, VW_MIN(blen, (size_t)64));
	id[VW_MIN(blen, (size_t)64)] = '\0';
	r = vw_ctrmeta_parse_nerdctl(name, body, blen, id, &info);
	check_info("nerdctl", id, r, &info);
	if (r < 0)
		return;
	vw_fuzz_assert(strcmp(info.name, name) == 0, "nerdctl: %s named %s", id, info.name);
	for (size_t i = 64; i < blen; i++) /* after the ID, only the blanks a hand edit leaves */
		vw_fuzz_assert(body[i] == '\n' || body[i] == ' ', "nerdctl: %s named, byte %zu is "
			       "0x%02x", id, i, (unsigned char)body[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char ids[MAX_LOOKUPS][VW_FUZZ_HEX64];
	size_t n;

	if (size > (1u << 20))
		return 0;
	n = vw_fuzz_hex64(data, size, ids, MAX_LOOKUPS);
	for (size_t i = 0; i < n; i++) {
		struct vw_ctrmeta_info info;
		int r = vw_ctrmeta_parse_docker(meta(), (const char *)data, size, ids[i], &info);

		check_info("docker", ids[i], r, &info);
		r = vw_ctrmeta_parse_podman(meta(), (const char *)data, size, ids[i], &info);
		check_info("podman", ids[i], r, &info);
	}
	nerdctl(data, size);
	return 0;
}

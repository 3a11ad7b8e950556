/* SPDX-License-Identifier: Apache-2.0 */
#include "vm_fixture.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"

static int write_bytes(const char *root, const char *rel, const char *data, size_t len)
{
	char path[4096];
	FILE *f;
	int r;

	r = vw_fixture_write(root, rel, "", 0);
	if (r < 0)
		return r;
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	if (len && fwrite(data, 1, len, f) != len)
		r = -EIO;
	if (fclose(f) != 0)
		r = -errno;
	return r;
}

int vm_fixture_proc(const char *root, uint32_t pid, uint64_t start_time, const char *argv,
		    const char *const *threads, const char *cgroup)
{
	char rel[128], stat[512], *cmd;
	const char *comm = threads && threads[0] ? threads[0] : "proc";
	size_t len = argv ? strlen(argv) : 0, nthreads = 0;
	int r;

	cmd = malloc(len + 1);
	if (!cmd)
		return -ENOMEM;
	for (size_t i = 0; i < len; i++)
		cmd[i] = argv[i] == '|' ? '\0' : argv[i];
	cmd[len] = '\0';
	snprintf(rel, sizeof(rel), "%" PRIu32 "/cmdline", pid);
	r = write_bytes(root, rel, cmd, len ? len + 1 : 0);
	free(cmd);
	while (threads && threads[nthreads])
		nthreads++;
	snprintf(stat, sizeof(stat),
		 "%" PRIu32 " (%s) S 1 %" PRIu32 " %" PRIu32 " 0 -1 4194560 0 0 0 0 5 3 0 0 20 0 %zu 0 "
		 "%" PRIu64 " 0 0\n",
		 pid, comm, pid, pid, nthreads ? nthreads : 1, start_time);
	snprintf(rel, sizeof(rel), "%" PRIu32 "/stat", pid);
	if (r == 0)
		r = vw_fixture_write(root, rel, stat, 0);
	snprintf(rel, sizeof(rel), "%" PRIu32 "/comm", pid);
	snprintf(stat, sizeof(stat), "%s\n", comm);
	if (r == 0)
		r = vw_fixture_write(root, rel, stat, 0);
	snprintf(rel, sizeof(rel), "%" PRIu32 "/cgroup", pid);
	if (r == 0)
		r = vw_fixture_write(root, rel, cgroup ? cgroup : "0::/\n", 0);
	if (r == 0)
		r = vm_fixture_owner(root, pid, comm, 0, 0);
	for (size_t i = 0; r == 0 && i < nthreads; i++) {
		snprintf(rel, sizeof(rel), "%" PRIu32 "/task/%" PRIu32 "/comm", pid, pid + (uint32_t)i);
		snprintf(stat, sizeof(stat), "%s\n", threads[i]);
		r = vw_fixture_write(root, rel, stat, 0);
	}
	if (r == 0 && !nthreads) {
		snprintf(rel, sizeof(rel), "%" PRIu32 "/task/%" PRIu32 "/comm", pid, pid);
		r = vw_fixture_write(root, rel, "proc\n", 0);
	}
	return r;
}

int vm_fixture_owner(const char *root, uint32_t pid, const char *comm, uint32_t uid,
		     uint32_t euid)
{
	return vm_fixture_status(root, pid, comm, uid, euid, NULL);
}

int vm_fixture_status(const char *root, uint32_t pid, const char *comm, uint32_t uid,
		      uint32_t euid, const char *nspid)
{
	char rel[64], text[8192];

	snprintf(rel, sizeof(rel), "%" PRIu32 "/status", pid);
	snprintf(text, sizeof(text),
		 "Name:\t%s\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t%" PRIu32 "\nNgid:\t0\n"
		 "Pid:\t%" PRIu32 "\nPPid:\t1\nTracerPid:\t0\nUid:\t%" PRIu32 "\t%" PRIu32
		 "\t%" PRIu32 "\t%" PRIu32 "\nGid:\t%" PRIu32 "\t%" PRIu32 "\t%" PRIu32 "\t%" PRIu32
		 "\n%s%s%s",
		 comm, pid, pid, uid, euid, euid, euid, uid, euid, euid, euid,
		 nspid ? "FDSize:\t64\nGroups:\t" : "", nspid ? nspid : "", nspid ? "\n" : "");
	return vw_fixture_write(root, rel, text, 0);
}

int vm_fixture_kill(const char *root, uint32_t pid)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%" PRIu32, root, pid);
	vw_fixture_rm(strdup(path));
	return 0;
}

int vm_fixture_boot_id(const char *root, const char *boot_id)
{
	return vw_fixture_write(root, "sys/kernel/random/boot_id", boot_id, 0);
}

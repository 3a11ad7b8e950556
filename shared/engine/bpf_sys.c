/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bpf(2) for the BPF accountant's reader (bpf_sys.h). The attribute union is zeroed beyond the
 * fields each command uses, as the kernel requires of a size larger than it knows.
 */
#include "bpf_sys.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static uint64_t ptr(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

static int sys_bpf(enum bpf_cmd cmd, union bpf_attr *attr)
{
	long r = syscall(__NR_bpf, cmd, attr, sizeof(*attr));

	return r < 0 ? -errno : (int)r;
}

/* The three per-key map commands: `out` is the value (lookup) or the next key (get_next_key),
 * which share their place in the attribute; delete has none. */
static int map_key_cmd(enum bpf_cmd cmd, int fd, const void *key, void *out)
{
	union bpf_attr a;

	_Static_assert(offsetof(union bpf_attr, value) == offsetof(union bpf_attr, next_key),
		       "bpf_attr: value and next_key share their place");
	memset(&a, 0, sizeof(a));
	a.map_fd = (uint32_t)fd;
	a.key = ptr(key);
	a.value = ptr(out);
	return sys_bpf(cmd, &a);
}

int vw_bpf_map_lookup_elem(int fd, const void *key, void *value)
{
	return map_key_cmd(BPF_MAP_LOOKUP_ELEM, fd, key, value);
}

int vw_bpf_map_delete_elem(int fd, const void *key)
{
	return map_key_cmd(BPF_MAP_DELETE_ELEM, fd, key, NULL);
}

int vw_bpf_map_lookup_and_delete_elem(int fd, const void *key, void *value)
{
	return map_key_cmd(BPF_MAP_LOOKUP_AND_DELETE_ELEM, fd, key, value);
}

int vw_bpf_map_get_next_key(int fd, const void *key, void *next_key)
{
	return map_key_cmd(BPF_MAP_GET_NEXT_KEY, fd, key, next_key);
}

int vw_bpf_map_lookup_batch(int fd, const void *in_batch, void *out_batch, void *keys,
			    void *values, uint32_t *count)
{
	union bpf_attr a;
	int r;

	memset(&a, 0, sizeof(a));
	a.batch.map_fd = (uint32_t)fd;
	a.batch.in_batch = ptr(in_batch);
	a.batch.out_batch = ptr(out_batch);
	a.batch.keys = ptr(keys);
	a.batch.values = ptr(values);
	a.batch.count = *count;
	r = sys_bpf(BPF_MAP_LOOKUP_BATCH, &a);
	*count = a.batch.count; /* what was copied, on -ENOENT too */
	return r;
}

int vw_bpf_map_delete_batch(int fd, const void *keys, uint32_t *count)
{
	union bpf_attr a;
	int r;

	memset(&a, 0, sizeof(a));
	a.batch.map_fd = (uint32_t)fd;
	a.batch.keys = ptr(keys);
	a.batch.count = *count;
	r = sys_bpf(BPF_MAP_DELETE_BATCH, &a);
	*count = a.batch.count;
	return r;
}

int vw_bpf_obj_info(int fd, void *info, uint32_t size)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	memset(info, 0, size);
	a.info.bpf_fd = (uint32_t)fd;
	a.info.info_len = size;
	a.info.info = ptr(info);
	return sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &a);
}

int vw_bpf_map_info(int fd, struct bpf_map_info *ret)
{
	return vw_bpf_obj_info(fd, ret, sizeof(*ret));
}

int vw_bpf_prog_fd_by_id(uint32_t id)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.prog_id = id;
	return sys_bpf(BPF_PROG_GET_FD_BY_ID, &a);
}

int vw_bpf_iter_create(int link_fd)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.iter_create.link_fd = (uint32_t)link_fd;
	return sys_bpf(BPF_ITER_CREATE, &a);
}

int vw_bpf_raw_tp_open(int prog_fd)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.raw_tracepoint.prog_fd = (uint32_t)prog_fd; /* name 0: a tp_btf program's own */
	return sys_bpf(BPF_RAW_TRACEPOINT_OPEN, &a);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The bpf(2) commands the BPF accountant's reader makes on the fds its loader child handed
 * over (cpu_bpf.c): map reads and deletes, one map's info, an iterator's instance, a tp_btf
 * program's attach (and, for the tests, a link's program and its name). Thin
 * wrappers over the system call, so that the running daemon needs no libbpf: only the loader
 * child loads it (libbpf_lazy.c). Each returns 0 (vw_bpf_iter_create: the new fd) or -errno,
 * with errno set as well.
 */
#pragma once
#include <linux/bpf.h>
#include <stdint.h>

int vw_bpf_map_lookup_elem(int fd, const void *key, void *value);
int vw_bpf_map_delete_elem(int fd, const void *key);
/* Both at once, atomically (hash maps, 5.14+; -EINVAL or -ENOTSUPP before). */
int vw_bpf_map_lookup_and_delete_elem(int fd, const void *key, void *value);

/* The key after key (NULL: the first); -ENOENT past the last. */
int vw_bpf_map_get_next_key(int fd, const void *key, void *next_key);

/*
 * Up to *count entries from in_batch (NULL: the start) into keys and values; *count is set to
 * how many came, out_batch to where the next call starts. -ENOENT with the last entries.
 */
int vw_bpf_map_lookup_batch(int fd, const void *in_batch, void *out_batch, void *keys,
			    void *values, uint32_t *count);

/* Deletes the *count keys at keys, in order, until one fails; *count is set to how many
 * went (-ENOENT: keys[*count] was not there). */
int vw_bpf_map_delete_batch(int fd, const void *keys, uint32_t *count);

/* The map's key and value sizes, type, name... */
int vw_bpf_map_info(int fd, struct bpf_map_info *ret);

/* Any object's info (a link's, a program's...) into info, size bytes, zeroed first. */
int vw_bpf_obj_info(int fd, void *info, uint32_t size);

/* A new fd for the program with this id (close-on-exec by the kernel's default), or -errno. */
int vw_bpf_prog_fd_by_id(uint32_t id);

/* A new instance of an iterator link: read it to its end. Close-on-exec. */
int vw_bpf_iter_create(int link_fd);

/*
 * Attach a loaded tp_btf program to the tracepoint it was loaded for (BPF_RAW_TRACEPOINT_OPEN,
 * no name): the link's fd (close-on-exec), which detaches it when closed; or -errno. The
 * capabilities that loaded it (CAP_BPF + CAP_PERFMON, or root) attach it.
 */
int vw_bpf_raw_tp_open(int prog_fd);

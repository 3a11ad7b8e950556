/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libbpf, loaded on first use (dynlib.h), and only in the BPF accountant's loader child
 * (cpu_bpf_load.c): the running daemon reads the maps with bpf(2) itself (bpf_sys.c) and never
 * maps libbpf, nor libelf and zlib with it (~0.4 MiB of its resident memory). These are the
 * calls the loader and the generated skeleton (cpu_time.skel.h) make, with libbpf's own
 * prototypes. The child loads the library first (vw_libbpf_load): none of these is reached
 * without it.
 */
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>

#include "cpu_bpf_priv.h"
#include "dynlib.h"

static struct vw_dynlib lib = VW_DYNLIB("libbpf.so.1");

/* What a call returning an object gives without the library: NULL with errno, as libbpf's. */
#define NO_OBJECT (errno = ENOPKG, NULL)

const char *vw_libbpf_load(void)
{
	return vw_dynlib_need(&lib, "libbpf", "libbpf1");
}

void vw_libbpf_set_soname(const char *soname)
{
	lib.soname = soname;
}

VW_DYNLIB_FORWARD(lib, NULL, libbpf_print_fn_t, libbpf_set_print, (libbpf_print_fn_t fn), (fn))
VW_DYNLIB_FORWARD(lib, -ENOPKG, int, libbpf_num_possible_cpus, (void), ())

/* The tp_btf probe */
VW_DYNLIB_FORWARD(lib, NO_OBJECT, struct btf *, btf__parse,
		  (const char *path, struct btf_ext **btf_ext), (path, btf_ext))
VW_DYNLIB_FORWARD(lib, -ENOPKG, __s32, btf__find_by_name_kind,
		  (const struct btf *btf, const char *type_name, __u32 kind),
		  (btf, type_name, kind))
VW_DYNLIB_FORWARD_VOID(lib, btf__free, (struct btf *btf), (btf))
VW_DYNLIB_FORWARD(lib, -ENOPKG, int, bpf_prog_load,
		  (enum bpf_prog_type prog_type, const char *prog_name, const char *license,
		   const struct bpf_insn *insns, size_t insn_cnt,
		   const struct bpf_prog_load_opts *opts),
		  (prog_type, prog_name, license, insns, insn_cnt, opts))

/* The skeleton's life */
VW_DYNLIB_FORWARD(lib, -ENOPKG, int, bpf_object__open_skeleton,
		  (struct bpf_object_skeleton *s, const struct bpf_object_open_opts *opts),
		  (s, opts))
VW_DYNLIB_FORWARD(lib, -ENOPKG, int, bpf_object__load_skeleton, (struct bpf_object_skeleton *s),
		  (s))
VW_DYNLIB_FORWARD(lib, -ENOPKG, int, bpf_object__attach_skeleton,
		  (struct bpf_object_skeleton *s), (s))
VW_DYNLIB_FORWARD_VOID(lib, bpf_object__detach_skeleton, (struct bpf_object_skeleton *s), (s))
VW_DYNLIB_FORWARD_VOID(lib, bpf_object__destroy_skeleton, (struct bpf_object_skeleton *s), (s))

/* Setting it up between open and load, attaching, the fds handed over */
VW_DYNLIB_FORWARD(lib, -ENOPKG, int, bpf_program__set_autoload,
		  (struct bpf_program *prog, bool autoload), (prog, autoload))
VW_DYNLIB_FORWARD_VOID(lib, bpf_program__set_autoattach,
		       (struct bpf_program *prog, bool autoattach), (prog, autoattach))
VW_DYNLIB_FORWARD(lib, -ENOPKG, int, bpf_map__set_max_entries,
		  (struct bpf_map *map, __u32 max_entries), (map, max_entries))
VW_DYNLIB_FORWARD(lib, -ENOPKG, int, bpf_map__set_type,
		  (struct bpf_map *map, enum bpf_map_type type), (map, type))
VW_DYNLIB_FORWARD(lib, -ENOPKG, int, bpf_map_update_elem,
		  (int fd, const void *key, const void *value, __u64 flags),
		  (fd, key, value, flags))
VW_DYNLIB_FORWARD(lib, NO_OBJECT, struct bpf_link *, bpf_program__attach_iter,
		  (const struct bpf_program *prog, const struct bpf_iter_attach_opts *opts),
		  (prog, opts))
VW_DYNLIB_FORWARD(lib, NO_OBJECT, struct bpf_link *, bpf_program__attach,
		  (const struct bpf_program *prog), (prog))
VW_DYNLIB_FORWARD(lib, -ENOPKG, int, bpf_link__destroy, (struct bpf_link *link), (link))
VW_DYNLIB_FORWARD(lib, -ENOPKG, int, bpf_map__fd, (const struct bpf_map *map), (map))
VW_DYNLIB_FORWARD(lib, -ENOPKG, int, bpf_link__fd, (const struct bpf_link *link), (link))
VW_DYNLIB_FORWARD(lib, -ENOPKG, int, bpf_program__fd, (const struct bpf_program *prog), (prog))

/* SPDX-License-Identifier: Apache-2.0 */
/* procfs fixture trees with QEMU processes, their threads and cgroups (VM source tests). */
#pragma once

#include <stdint.h>

/*
 * <root>/<pid>/{cmdline,comm,stat,cgroup,status} and task/<tid>/comm for each thread name (thread i
 * gets TID pid + i; the first is the main thread). argv is '|'-separated ("a|-b|c"); NULL or ""
 * writes an empty cmdline (a kernel thread). cgroup NULL writes "0::/\n".
 */
int vm_fixture_proc(const char *root, uint32_t pid, uint64_t start_time, const char *argv,
		    const char *const *threads, const char *cgroup);
/* <root>/<pid>/status as the kernel writes it, owned (Uid:) by uid, euid: vm_fixture_proc
 * writes root's (0, 0). */
int vm_fixture_owner(const char *root, uint32_t pid, const char *comm, uint32_t uid,
		     uint32_t euid);
/* The same with "FDSize:", then "Groups:" followed by the text nspid (NULL: neither; e.g.
 * "\nNStgid:\t20\t7\nNSpid:\t20\t7": a process of a PID namespace below the procfs's). */
int vm_fixture_status(const char *root, uint32_t pid, const char *comm, uint32_t uid,
		      uint32_t euid, const char *nspid);
/* Remove <root>/<pid>. */
int vm_fixture_kill(const char *root, uint32_t pid);
/* Fill an empty /proc with boot_id. */
int vm_fixture_boot_id(const char *root, const char *boot_id);

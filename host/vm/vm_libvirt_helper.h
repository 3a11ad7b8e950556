/* SPDX-License-Identifier: Apache-2.0 */
/* The libvirt helper's entry point (vm_libvirt_helper.c), reached from virtwatt-host's main(). */
#pragma once

#include <stdbool.h>

#define VW_LIBVIRT_HELPER_ARG "--internal-libvirt-list="

/* Whether argv asks for the helper (never shown in --help). */
bool vw_libvirt_helper_wanted(int argc, char **argv);
/* Say that this program's main() serves the helper: the libvirt source may run the program
 * itself (<procfs>/self/exe) as its helper. vm_libvirt_child.c. */
void vw_libvirt_helper_here(void);
/* Run it: the process's exit status. */
int vw_libvirt_helper_main(int argc, char **argv);

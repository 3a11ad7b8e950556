/* SPDX-License-Identifier: Apache-2.0 */
/* libfreeipmi is loaded on first use (ipmi_lazy.c); src_ipmi.c calls it as usual. */
#pragma once
#include <freeipmi/freeipmi.h>

/* Load libfreeipmi now: NULL, or why not, naming the package to install (a static string). */
const char *vw_ipmi_load(void);

/* A FreeIPMI template (data the library exports, so it cannot be forwarded): NULL unloaded. */
struct fiid_field *vw_ipmi_template(const char *name);
#define VW_IPMI_TMPL(name) vw_ipmi_template(#name)

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Interned strings: one reference-counted copy of each distinct string, so a table whose rows
 * repeat a few values (the registry's processes and their executables' paths) keeps a pointer
 * per row instead of a fixed-size array. "" is never stored: it is a static empty string that
 * needs no reference.
 */
#pragma once

struct vw_intern;

struct vw_intern *vw_intern_new(void); /* NULL with errno set */
void vw_intern_free(struct vw_intern *t); /* every string of it goes; NULL is a no-op */

/* The interned copy of s with one more reference (s itself may go), NULL on ENOMEM. */
const char *vw_intern_get(struct vw_intern *t, const char *s);
/* Drop a reference vw_intern_get() gave (or ""); the copy goes with its last one. */
void vw_intern_put(struct vw_intern *t, const char *s);
/* Distinct strings held (tests). */
unsigned long vw_intern_count(const struct vw_intern *t);

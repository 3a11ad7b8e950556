/* SPDX-License-Identifier: Apache-2.0 */
/* The guest's passthrough reader (virtio-channel/reader.h) from its options (guest_reader.c). */
#pragma once

#include "options.h"
#include "reader.h"

/*
 * Open the reader --passthrough.* describe (*ret NULL when --passthrough.enable=false), saying
 * where it looked, each place on its line, and which one it uses; none: one warning with the
 * fix (it keeps looking). -errno, logged.
 */
int vw_guest_reader_open(const struct vw_guest_config *c, struct vw_reader **ret);

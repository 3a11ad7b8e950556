/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The model this VM's host trained for it (docs/models.md "The host's model for its guests"):
 * taken from the passthrough's model frames (virtio-channel/model_rx.h), checked as a model
 * the estimator can run (Kepler weight file, a usable component), kept beside the state file
 * (<state.file>.model, the frame line itself, its SHA-256 checked again when read back at
 * start) and handed to the host-model power source (src_host_model.c), which takes it at its
 * next read. A frame whose body is no usable model is refused and counted; the last good model
 * stays.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "log.h"
#include "prom.h"

struct vw_model;
struct vw_reader;

#define VW_GUEST_MODEL_NAME_MAX 64

struct vw_guest_host_model {
	/* Handed to the source: a newly taken model (owned until the source takes it). */
	struct vw_model *pending;
	char pending_name[VW_GUEST_MODEL_NAME_MAX];
	char name[VW_GUEST_MODEL_NAME_MAX]; /* the model in use or pending ("" none) */
	uint64_t reader_gen;    /* the reader's model generation last looked at */
	uint64_t refused_model; /* frames whose body the model loader refused */
	char *keep_path;        /* <state.file>.model, or NULL */
	struct vw_complaint complaint;
};

/* keep_path: where to keep the model (NULL: nowhere); a model kept there is loaded. -ENOMEM. */
int vw_guest_host_model_init(struct vw_guest_host_model *h, const char *keep_path);
void vw_guest_host_model_done(struct vw_guest_host_model *h);
/* A newer model from the reader, if any: checked, kept, handed over. */
void vw_guest_host_model_poll(struct vw_guest_host_model *h, const struct vw_reader *r);
/* virtwatt_guest_host_model_info and the model frames refused, by reason. */
int vw_guest_host_model_render(const struct vw_guest_host_model *h, const struct vw_reader *r,
			       struct vw_prom_writer *w, const char *node_name);
extern const struct vw_family_table vw_guest_host_model_family_table;

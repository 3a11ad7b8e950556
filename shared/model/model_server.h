/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A Kepler model server (kepler-model-server, :8100): POST /model asks for the weight file that
 * best fits this machine's spec (docs/models.md). Any failure (timeout,
 * HTTP error, a body that is not a model) is reported; the caller falls back to its local
 * sources (vw_model_source_load: file, URL, built-in).
 */
#pragma once

#include <stddef.h>

#include "model.h"

/* This machine as the model server's similarity ranks it. */
struct vw_machine_spec {
	char vendor[64];     /* "intel", "amd" */
	char processor[128]; /* normalised model name: "intel_xeon_platinum_8259cl" */
	unsigned cores;      /* logical CPUs */
	unsigned chips;      /* distinct physical ids (sockets), at least 1 */
	unsigned threads_per_core;
	unsigned memory_gb;  /* MemTotal rounded to GiB */
	unsigned frequency_mhz; /* "cpu MHz" of the first CPU, 0 when unknown */
};

/* Fill spec from <procfs>/cpuinfo and <procfs>/meminfo (what is missing stays 0 / ""). */
int vw_machine_spec_read(int procfs_fd, struct vw_machine_spec *ret);
/* The same from the two files' text (meminfo may be NULL). */
int vw_machine_spec_parse(const char *cpuinfo, const char *meminfo, struct vw_machine_spec *ret);
/* Kepler's normalisation of a CPU model name: lower case, runs of other characters -> '_'. */
void vw_machine_spec_normalise(const char *model_name, char *buf, size_t size);

struct vw_model_server_opts {
	const char *url;         /* base URL: "http://kepler-model-server:8100" ("/model" added) */
	const char *source;      /* energy source: NULL = "rapl-sysfs" */
	const char *output_type; /* NULL = "AbsPower" */
	long timeout_ms;         /* whole request; <= 0: 10 s */
};

/*
 * The request body: {"metrics":["bpf_cpu_time_ms"],"output_type":..,"source":..,
 * "node_type":-1,"weight":true,"filter":"","trainer_name":"","machine_spec":{...}}.
 * malloc'd string or NULL (ENOMEM).
 */
char *vw_model_server_request(const struct vw_model_server_opts *o,
			      const struct vw_machine_spec *spec);

/* POST the request and parse the answer. 0, or -errno with a one-line reason in err. */
int vw_model_server_fetch(const struct vw_model_server_opts *o, const struct vw_machine_spec *spec,
			  struct vw_model **ret, char *err, size_t errlen);

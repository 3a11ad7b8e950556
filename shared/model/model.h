/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kepler model-server weight files, every era (see docs/models.md): linear with x/scale (v0.6+),
 * x*scale (the nx12 LinearRegression anomaly, flagged), mean/variance (<= v0.5), exponential,
 * logarithmic, logistic curve fits; one model per component or one total model. Evaluation is a
 * pure function. Negative outputs are clamped to zero and reported.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

enum vw_model_kind {
	VW_MODEL_LINEAR,
	VW_MODEL_EXPONENTIAL,
	VW_MODEL_LOGARITHMIC,
	VW_MODEL_LOGISTIC,
};

enum vw_model_output {
	VW_MODEL_ABS_POWER, /* includes idle */
	VW_MODEL_DYN_POWER, /* trained after idle removal */
};

struct vw_model; /* opaque, immutable once loaded */

/* Largest model file accepted (parse, file and URL). */
#define VW_MODEL_MAX_BYTES (4u << 20)

/* One named input: features are per-second rates (bpf_cpu_time_ms = CPU ms per second). */
struct vw_feature {
	const char *name;
	double value;
};

/* A categorical input, e.g. {"cpu_architecture", "Sky Lake"}. */
struct vw_category {
	const char *name;
	const char *value;
};

struct vw_model_input {
	const struct vw_feature *features;
	size_t n_features;
	const struct vw_category *categories;
	size_t n_categories;
	unsigned host_cores; /* for machine_spec core ratio; 0 = unknown (no ratio) */
};

/*
 * With a machine_spec of at least host_cores cores, idle is scaled by host_cores/spec_cores and
 * watts = scaled idle + (model(x) - model(0)); otherwise watts = model(x), idle = model(0).
 */
/* No component of one node draws more: an output above is clamped to it (a model whose weights
 * pass the parser's bounds still gave 1e10 W at 1000 ms/s with a scale of 1). */
#define VW_MODEL_MAX_WATTS 1e4

struct vw_model_result {
	double watts;      /* model output, clamped to [0, VW_MODEL_MAX_WATTS] */
	double idle_watts; /* model at zero load (core ratio applied), clamped alike */
	bool clamped;      /* the raw output (or idle) was negative or above VW_MODEL_MAX_WATTS */
	bool extrapolated; /* a scaled input exceeded 1 (outside the training range); never set
			    * for <= v0.5 mean/variance files, whose x̂ is a z-score */
};

/*
 * Parse a weight file. `origin` (file path or URL, may be NULL) helps infer the trainer and the
 * output type (AbsPower/DynPower) when the file does not say. On failure returns -EINVAL (or
 * -ENOMEM) and writes a one-line reason to err.
 */
int vw_model_parse(const char *json, size_t len, const char *origin, struct vw_model **ret,
		   char *err, size_t errlen);
/* A file of any kind (a pipe too: virtwatt-model's command line, the trainer). */
int vw_model_load_file(const char *path, struct vw_model **ret, char *err, size_t errlen);
/* The same for dirfd/rel (read at most VW_MODEL_MAX_BYTES), with the origin given apart: a
 * regular file only, opened O_NONBLOCK (the daemons' --model.file and cached copy: a FIFO
 * there is "not a regular file", -EINVAL, never waited on). */
int vw_model_load_file_at(int dirfd, const char *rel, const char *origin, struct vw_model **ret,
			  char *err, size_t errlen);
void vw_model_free(struct vw_model *m);

const char *vw_model_name(const struct vw_model *m);    /* model_name, else trainer */
const char *vw_model_trainer(const struct vw_model *m); /* e.g. "SGDRegressorTrainer" */
enum vw_model_output vw_model_output_type(const struct vw_model *m);
/* Warnings found at load (x*scale anomaly, ...); NULL when none. */
const char *vw_model_warning(const struct vw_model *m);
/* The file's top-level "mae" (W), NAN when absent. */
double vw_model_mae(const struct vw_model *m);
/* machine_spec.cores of the training machine, 0 when absent (no core ratio). */
unsigned vw_model_spec_cores(const struct vw_model *m);

size_t vw_model_n_components(const struct vw_model *m);
/* Normalised: "package", "core", "uncore", "dram", "platform", or "total" for one-model files. */
const char *vw_model_component(const struct vw_model *m, size_t i);
enum vw_model_kind vw_model_component_kind(const struct vw_model *m, size_t i);
/* True when a component is identically zero (no bias, no weights): not worth exporting. */
bool vw_model_component_is_zero(const struct vw_model *m, size_t i);
/* Canonical names of the features the model uses (non-zero terms), aliases folded. */
size_t vw_model_n_features(const struct vw_model *m);
const char *vw_model_feature(const struct vw_model *m, size_t i);
/* Canonical feature name for an alias ("bpf_cpu_time_us" -> "bpf_cpu_time_ms", ...). */
const char *vw_model_feature_canonical(const char *name);

/*
 * Evaluate one component. -EINVAL for a bad index or input (NULL name, non-finite value);
 * -ERANGE when the model's output is not finite (an exponential far outside its range). A
 * feature the input lacks counts as 0; input names may be aliases.
 */
int vw_model_eval(const struct vw_model *m, size_t comp, const struct vw_model_input *in,
		  struct vw_model_result *ret);

/* The model compiled in (see docs/models.md for its provenance). Never fails but for ENOMEM. */
int vw_model_load_builtin(struct vw_model **ret);
extern const char vw_model_builtin_name[];

/*
 * The architecture of the per-vCPU table ("Cascade Lake", "EPYC 2nd Gen", "Graviton2", ...)
 * or NULL when none fits; *ret_exact false when it is the nearest listed (a newer part).
 */
struct vw_cpu_info;
const char *vw_cpu_arch(const struct vw_cpu_info *cpu, bool *ret_exact);
/*
 * The per-vCPU model of arch for ncpu vCPUs (Kepler v0.7.12's legacy power data: min and max
 * watts per vCPU), named in name ("builtin:percpu-Cascade_Lake-4vcpu"). -ENOENT for an
 * architecture the table lacks.
 */
int vw_model_percpu(const char *arch, unsigned ncpu, struct vw_model **ret, char *name,
		    size_t namelen);

/*
 * Where a model comes from, in order: a local file (an error if it is bad: the user asked for
 * it), an HTTP(S) URL fetched with the HTTP client (timeout; the last good copy cached in
 * cache_dir and used when the fetch fails), then a built-in one: with `cpus` and `percpu`, the per-vCPU
 * model of this processor's architecture for n_cpus vCPUs where the table has it, else the
 * default (vw_model_load_builtin).
 */
struct vw_model_source_opts {
	const char *file;
	const char *url;
	const char *cache_dir; /* NULL: no cache */
	long timeout_ms;       /* 0: 10 s */
	const struct vw_cpu_info *cpus; /* this machine's /proc/cpuinfo (procfs.h), or NULL */
	size_t n_cpus;
	bool percpu; /* pick the built-in model by architecture (--model.builtin=auto) */
	const char *machine; /* the firmware's name of the machine (dmi.h), for the log; or NULL */
};

/*
 * ret_origin gets "file:PATH", "url:URL", "cache:PATH", "builtin:percpu-..." or "builtin". A
 * bad file, or a URL that is
 * not http(s), is an error (-errno, reason in err, not logged: the caller logs it with context);
 * a failed fetch or a bad body falls back to the cache, then to the builtin, and logs a warning
 * saying which. The cache file is cache_dir/model-<FNV-1a 64 of the URL>.json, replaced
 * atomically and only by a body that parses as a model.
 */
int vw_model_source_load(const struct vw_model_source_opts *o, struct vw_model **ret,
			 char *ret_origin, size_t originlen, char *err, size_t errlen);

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtwatt-host's options: one table gives flags, YAML keys, defaults and --help; each meter
 * declares its own rows beside its ops (power/src_*.c), and the host collects them.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "daemon_options.h"
#include "log.h"
#include "training_options.h"

struct vw_power_source_ops;
struct vw_vm_source_config;

/* VM sources with options at most (vw_host_vm_configs). */
#define VW_HOST_VM_SOURCES_MAX 4

/* Room for every meter's options struct (power/src_*.c), each aligned to max_align_t (typed
 * access into bytes: the project builds with -fno-strict-aliasing). */
#define VW_HOST_METER_OPTIONS_MAX 1024

struct vw_host_config {
	struct vw_daemon_options common; /* the flags virtwatt-guest shares */
	uint64_t sample_ns;          /* meter sampling period (<= interval; wrap safety) */
	struct vw_strlist sources;   /* power sources in preference order; empty = all */
	struct vw_strlist platform_sources; /* whole-node meters; empty = all, "none" = off */
	struct vw_strlist idle_watts; /* zone=W overrides, e.g. package=42.5 */
	uint64_t idle_window;         /* intervals in the idle fit's sliding window */
	double idle_min_spread;       /* usage spread needed to fit */
	struct vw_strlist metrics;    /* levels: node, process, container, pod */
	struct vw_strlist vm_info_labels; /* virtwatt_vm_info labels copied onto the VM series */
	struct vw_strlist vm_qemu_users;  /* whose QEMU processes name VMs, besides root */
	char *passthrough; /* auto (when VMs can be accounted), true (or fail), false */
	uint64_t passthrough_interval_ns; /* 0: monitor interval */
	double passthrough_jitter;
	char *passthrough_share_root;     /* "" : no shared folders */
	char *passthrough_lock_dir;       /* "" : no per-VM locks */
	double passthrough_energy_step_j;
	double passthrough_power_step_w;
	struct vw_strlist preferred_meters; /* Kepler's cpu.preferredMeters */
	struct vw_host_train_options train; /* --model.train.*: what the host trains (training/) */
	char *devfs;                  /* root of this machine's devfs (the in-band IPMI device) */
	/* Each meter's and VM source's own options (the struct its src_*.c or vm_*.c declares
	 * beside its ops), where vw_host_program() placed it: vw_host_meter_options() and
	 * vw_host_vm_configs() find it. */
	_Alignas(max_align_t) unsigned char meters[VW_HOST_METER_OPTIONS_MAX];
};

/*
 * The host's option table: its own rows, then the rows of each source of the host's chains
 * (power/chain.c: the platform meters', then the CPU zones') that has options, then each VM
 * source's (vm/vm_source.c: vw_vm_sources), their offsets moved into cfg->meters, and their
 * Kepler spellings after the host's (with the settings of VM sources this build lacks). Built once; NULL when
 * out of memory or when the meters' options outgrow VW_HOST_METER_OPTIONS_MAX (test_options
 * would fail first).
 */
const struct vw_config_program *vw_host_program(void);

/* ops's options struct in cfg (NULL: ops declares none, or is in no host chain). */
const void *vw_host_meter_options(const struct vw_host_config *cfg,
				  const struct vw_power_source_ops *ops);

/* The VM sources' options structs in cfg, one per VM source (vm_source.h: vw_vm_sources) that
 * declares options, for vw_vm_env.configs (room for VW_HOST_VM_SOURCES_MAX): how many. */
size_t vw_host_vm_configs(const struct vw_host_config *cfg,
			  struct vw_vm_source_config *configs);

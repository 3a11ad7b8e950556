/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtwatt-host's meters: one file per meter behind the engine's power-source ops table
 * (shared/engine/power_source.h), and the host's chain of them in preference order.
 */
#pragma once

#include "power_source.h"

/*
 * RAPL through <sysfs>/class/powercap (src_powercap.c). open(): -ENODEV without zones,
 * -EACCES when every energy_uj is root-only. read() logs per-zone failures itself, rate-limited.
 */
extern const struct vw_power_source_ops vw_src_powercap;

/*
 * The ACPI 4.0 power meter through <sysfs>/class/hwmon (src_acpi.c, name "acpi"): one
 * VW_ZONE_PLATFORM zone per hwmon device named "power_meter", socket = its place in hwmon
 * order, path "/sys/class/hwmon/hwmonN". Its power1_average (µW) is read by a thread of the
 * source's own every VW_GAUGE_TICK_NS (stamped vw_now_ns()) and by each read() (at act->now_ns),
 * each reading counting over the time since the one before it, into a µJ counter that never
 * wraps: a late read() does not spread its reading over its whole wait. A failed reading counts
 * no energy up to the next good one, a span stats() counts as a gap. open(): -ENODEV without a
 * meter (logged at debug only), -EACCES when every meter refuses. Not in
 * vw_host_power_sources: the host's platform chain takes it.
 */
extern const struct vw_power_source_ops vw_src_acpi_power_meter;
/*
 * Its configuration (vw_power_source_config()), for tests only: the daemon gives none. With
 * manual_ticks no thread runs and the test reads the meters with vw_acpi_tick() itself, on its
 * own clock, where the thread would.
 */
struct vw_acpi_config {
	bool manual_ticks;
};
/* What the thread does every VW_GAUGE_TICK_NS (ticker.h): every meter read once, at now_ns. */
void vw_acpi_tick(void *state, uint64_t now_ns);

/*
 * Generic hwmon sensors through <sysfs>/class/hwmon (src_hwmon_generic.c, name "hwmon"): each
 * chip's energyN_input counters (µJ), else its powerN_average / powerN_input readings (µW,
 * integrated like the ACPI meter's, read by a thread of the source's own as well), else the rails of chips read as inN x currN (ina3221),
 * mapped to zones by chip rules (hwmon_rules.h) and summed per zone and socket; an energy
 * counter beats a power reading of the same zone and socket. Not the ACPI meter's power_meter.
 * A source of CPU zones (a RAPL fallback, as in Kepler): open() gives -ENODEV unless some sensor
 * maps to a zone other than platform; a platform sensor rides along (a platform meter replaces
 * it). Its configuration (vw_power_source_config(); NULL: the built-in rules only) is made from
 * its options, declared in src_hwmon_generic.c.
 */
struct vw_hwmon_rules; /* hwmon_rules.h */
struct vw_hwmon_config {
	const struct vw_hwmon_rules *rules; /* --power.hwmon.chip-rules: before the built-in ones */
	const char *const *zones; /* Kepler's experimental.hwmon.zones: the sensors to use by label */
	size_t n_zones;           /* 0: every sensor a rule maps */
	bool disabled;            /* Kepler's experimental.hwmon.enabled=false */
	/* Tests only (no option sets it): no thread reads the power sensors; the test calls
	 * vw_hwmon_tick() where the thread would, on its own clock. */
	bool manual_ticks;
};
/* What the thread does every VW_GAUGE_TICK_NS: every power sensor read once, at now_ns. */
void vw_hwmon_tick(void *state, uint64_t now_ns);
extern const struct vw_power_source_ops vw_src_hwmon;

/*
 * A BMC's whole-node power over Redfish (src_redfish.c, name "redfish"): one VW_ZONE_PLATFORM
 * zone, the first chassis with EnvironmentMetrics, Power or PowerSubsystem readings, polled by
 * a thread of its own (a BMC takes seconds) and integrated on the sampling clock like the ACPI
 * meter; a reading older than `staleness` counts nothing. Its configuration
 * (vw_power_source_config()) is made from its options and the BMC file they name (src_redfish.c):
 * -ENODEV without one.
 */
enum vw_redfish_auth {
	VW_REDFISH_AUTH_SESSION, /* a session (X-Auth-Token), basic where the BMC has none */
	VW_REDFISH_AUTH_BASIC,   /* HTTP basic on every request */
};
struct vw_redfish_config {
	const char *id;       /* the BMC's id in the BMC file (kepler_platform_watts bmc_id) */
	const char *endpoint; /* https://host[:port] */
	const char *username;
	const char *password;
	const char *ca_file; /* PEM CA bundle; NULL: the system's */
	bool insecure;       /* no certificate check (Kepler's `insecure`) */
	long timeout_ms;     /* per request; 0: 5000 */
	long interval_ms;    /* between polls; 0: 5000 */
	long staleness_ms;   /* a reading older than this counts nothing; 0: 2 x interval +
			      * timeout */
	enum vw_redfish_auth auth;
};
extern const struct vw_power_source_ops vw_src_redfish;

/*
 * A BMC's whole-node power over IPMI (src_ipmi.c, name "ipmi", libfreeipmi): one
 * VW_ZONE_PLATFORM zone from DCMI Get Power Reading, or, where the BMC has no DCMI, from its SDR
 * sensors in watts; integrated like the ACPI meter. A poller thread of its own asks the BMC
 * (slow: 10 ms to seconds a request) every interval_ns; read() only integrates the last reading
 * it left, and only while it is fresh. open(): -ENODEV without a configuration (vw_power_source_config()), or in band
 * without the device, or with a BMC that has neither DCMI nor a watts sensor; -EACCES when the
 * BMC refuses the user, password or privilege.
 */
enum vw_ipmi_driver {
	VW_IPMI_DRIVER_INBAND, /* the kernel's IPMI device (ipmi_devintf: /dev/ipmi0) */
	VW_IPMI_DRIVER_LAN,    /* IPMI 2.0 over LAN (RMCP+) */
};
enum vw_ipmi_privilege {
	VW_IPMI_PRIV_USER, /* enough for DCMI and sensor reads on a compliant BMC */
	VW_IPMI_PRIV_OPERATOR,
	VW_IPMI_PRIV_ADMIN,
};
struct vw_ipmi_config {
	enum vw_ipmi_driver driver;
	const char *device;   /* in band: the device, below the injected devfs root
			       * (vw_power_env.devfs) unless an absolute path (as given) */
	const char *host;     /* lan: the BMC's name or address */
	unsigned port;        /* lan: its UDP port; 0: 623 */
	const char *username; /* lan; NULL: the null user */
	const char *password; /* lan; NULL: none (read from --platform.ipmi.password-file) */
	enum vw_ipmi_privilege privilege;     /* lan: the session's */
	const char *const *workarounds;       /* lan: FreeIPMI's -W names, NULL-ended (or NULL) */
	long timeout_ms;      /* per request (the LAN session timeout); 0: 5000 */
	uint64_t interval_ns; /* the poller's period; 0: 2 s */
	uint64_t stale_ns;    /* an older reading counts no energy; 0: 3 x interval_ns */
};
extern const struct vw_power_source_ops vw_src_ipmi;

/*
 * A meter's class directory below --host.sysfs (class/powercap, class/hwmon): its fd, -EBADF
 * without a sysfs root, -ENODEV when the machine has no such class (no meter of that kind).
 */
int vw_power_sysfs_class(const struct vw_power_env *env, const char *rel);

/* A secret file's first line (a mounted Kubernetes Secret), into *ret (free with
 * vw_free_secret). -errno; -EFBIG past 1024 bytes; -EINVAL for what is not a regular file (a
 * FIFO in its place is refused at once, never waited on). */
int vw_power_read_secret(const char *path, char **ret);

/* The names of chain's sources, ", " between them ("acpi, redfish, ipmi"), cut to fit buf. */
void vw_power_chain_names(const struct vw_power_source_ops *const *chain, char *buf, size_t len);

/* Preference order: a real meter first, the model only where no meter exists (NULL-ended). */
extern const struct vw_power_source_ops *const vw_host_power_sources[];
/*
 * Whole-node meters, in preference order (NULL-ended): the first that opens gives the node's
 * platform zone, beside the CPU zones of vw_host_power_sources.
 */
extern const struct vw_power_source_ops *const vw_host_platform_sources[];

/* SPDX-License-Identifier: Apache-2.0 */
/* One log sink for the whole process, with rate-limited repeated complaints. */
#pragma once

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include "macro.h"

enum vw_log_level {
	VW_LOG_ERROR,
	VW_LOG_WARN,
	VW_LOG_INFO,
	VW_LOG_DEBUG,
};

typedef void (*vw_log_sink_fn)(enum vw_log_level level, const char *msg, void *userdata);

/* Parse "error", "warn"/"warning", "info", "debug" (case-insensitive). 0 or -EINVAL. */
int vw_log_level_parse(const char *s, enum vw_log_level *ret);
const char *vw_log_level_name(enum vw_log_level level);
void vw_log_set_level(enum vw_log_level level);
enum vw_log_level vw_log_get_level(void);
/* Replace the sink (NULL restores stderr). Thread-safe: messages are serialised. */
void vw_log_set_sink(vw_log_sink_fn fn, void *userdata);
/* The stderr sink's format: logfmt (time=... level=... msg="...", the default) or one JSON
 * object per line ({"time":"...","level":"...","msg":"..."}), as Kepler's --log.format. */
enum vw_log_format { VW_LOG_FORMAT_TEXT, VW_LOG_FORMAT_JSON };
int vw_log_format_parse(const char *s, enum vw_log_format *ret);
void vw_log_set_format(enum vw_log_format f);

void vw_log(enum vw_log_level level, const char *fmt, ...) _printf_(2, 3);
void vw_logv(enum vw_log_level level, const char *fmt, va_list ap) _printf_(2, 0);

#define vw_error(...) vw_log(VW_LOG_ERROR, __VA_ARGS__)
#define vw_warn(...) vw_log(VW_LOG_WARN, __VA_ARGS__)
#define vw_info(...) vw_log(VW_LOG_INFO, __VA_ARGS__)
#define vw_debug(...) vw_log(VW_LOG_DEBUG, __VA_ARGS__)

/*
 * A repeating failure logs once, then at most once per back-off interval (doubling from 1 s up
 * to 1 h), with the number of repeats it swallowed; release logs once that it cleared.
 * Zero-initialise the struct. Time comes from CLOCK_MONOTONIC.
 */
struct vw_complaint {
	uint64_t next_ns;
	uint64_t interval_ns;
	uint64_t suppressed;
	bool active;
};

void vw_complain(struct vw_complaint *c, enum vw_log_level level, const char *fmt, ...)
	_printf_(3, 4);
void vw_release(struct vw_complaint *c, enum vw_log_level level, const char *fmt, ...)
	_printf_(3, 4);

/* CLOCK_MONOTONIC in ns; overridable in tests with vw_clock_set_fake(). */
uint64_t vw_now_ns(void);
void vw_clock_set_fake(const uint64_t *now_ns);

/* SPDX-License-Identifier: Apache-2.0 */
#include "log.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static const char *const level_names[] = {
	[VW_LOG_ERROR] = "error",
	[VW_LOG_WARN] = "warn",
	[VW_LOG_INFO] = "info",
	[VW_LOG_DEBUG] = "debug",
};

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static enum vw_log_level log_level = VW_LOG_INFO;
static vw_log_sink_fn log_sink;
static void *log_userdata;
static const uint64_t *fake_now;
static enum vw_log_format log_format = VW_LOG_FORMAT_TEXT;

int vw_log_format_parse(const char *s, enum vw_log_format *ret)
{
	if (s && (strcasecmp(s, "text") == 0 || strcasecmp(s, "logfmt") == 0))
		*ret = VW_LOG_FORMAT_TEXT;
	else if (s && strcasecmp(s, "json") == 0)
		*ret = VW_LOG_FORMAT_JSON;
	else
		return -EINVAL;
	return 0;
}

void vw_log_set_format(enum vw_log_format f)
{
	__atomic_store_n(&log_format, f, __ATOMIC_RELAXED);
}

int vw_log_level_parse(const char *s, enum vw_log_level *ret)
{
	if (!s)
		return -EINVAL;
	for (size_t i = 0; i < ARRAY_SIZE(level_names); i++) {
		if (strcasecmp(s, level_names[i]) == 0) {
			*ret = (enum vw_log_level)i;
			return 0;
		}
	}
	if (strcasecmp(s, "warning") == 0) {
		*ret = VW_LOG_WARN;
		return 0;
	}
	return -EINVAL;
}

const char *vw_log_level_name(enum vw_log_level level)
{
	if ((size_t)level >= ARRAY_SIZE(level_names))
		return "unknown";
	return level_names[level];
}

void vw_log_set_level(enum vw_log_level level)
{
	__atomic_store_n(&log_level, level, __ATOMIC_RELAXED);
}

enum vw_log_level vw_log_get_level(void)
{
	return __atomic_load_n(&log_level, __ATOMIC_RELAXED);
}

void vw_log_set_sink(vw_log_sink_fn fn, void *userdata)
{
	pthread_mutex_lock(&log_lock);
	log_sink = fn;
	log_userdata = userdata;
	pthread_mutex_unlock(&log_lock);
}

static void stderr_sink(enum vw_log_level level, const char *msg)
{
	struct timespec ts;
	struct tm tm;
	char stamp[32] = "";

	clock_gettime(CLOCK_REALTIME, &ts);
	if (gmtime_r(&ts.tv_sec, &tm))
		strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	/* msg holds no quote or control byte (vw_logv); a backslash is the one JSON escape left. */
	if (__atomic_load_n(&log_format, __ATOMIC_RELAXED) == VW_LOG_FORMAT_JSON) {
		fprintf(stderr, "{\"time\":\"%s.%03ldZ\",\"level\":\"%s\",\"msg\":\"", stamp,
			ts.tv_nsec / 1000000L, vw_log_level_name(level));
		for (const char *p = msg; *p; p++) {
			if (*p == '\\')
				fputc('\\', stderr);
			fputc(*p, stderr);
		}
		fputs("\"}\n", stderr);
		return;
	}
	fprintf(stderr, "time=%s.%03ldZ level=%s msg=\"%s\"\n", stamp, ts.tv_nsec / 1000000L,
		vw_log_level_name(level), msg);
}

void vw_logv(enum vw_log_level level, const char *fmt, va_list ap)
{
	char msg[1024];

	if (level > vw_log_get_level())
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	/* One line per message, no raw quotes or control bytes from data we were handed. */
	for (char *p = msg; *p; p++) {
		if ((unsigned char)*p < 0x20 || *p == '"')
			*p = (*p == '"') ? '\'' : ' ';
	}
	pthread_mutex_lock(&log_lock);
	if (log_sink)
		log_sink(level, msg, log_userdata);
	else
		stderr_sink(level, msg);
	pthread_mutex_unlock(&log_lock);
}

void vw_log(enum vw_log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vw_logv(level, fmt, ap);
	va_end(ap);
}

uint64_t vw_now_ns(void)
{
	struct timespec ts;
	const uint64_t *fake = __atomic_load_n(&fake_now, __ATOMIC_ACQUIRE);

	if (fake)
		return *fake;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * VW_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

void vw_clock_set_fake(const uint64_t *now_ns)
{
	__atomic_store_n(&fake_now, now_ns, __ATOMIC_RELEASE);
}

#define COMPLAIN_MIN_NS (1 * VW_NSEC_PER_SEC)
#define COMPLAIN_MAX_NS (3600 * VW_NSEC_PER_SEC)

void vw_complain(struct vw_complaint *c, enum vw_log_level level, const char *fmt, ...)
{
	uint64_t now = vw_now_ns();
	char msg[900];
	va_list ap;

	if (c->active && now < c->next_ns) {
		c->suppressed++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (c->suppressed)
		vw_log(level, "%s (repeated %llu times since last report)", msg,
		       (unsigned long long)c->suppressed);
	else
		vw_log(level, "%s", msg);
	c->interval_ns = c->active ? VW_MIN(c->interval_ns * 2, COMPLAIN_MAX_NS) : COMPLAIN_MIN_NS;
	c->next_ns = now + c->interval_ns;
	c->suppressed = 0;
	c->active = true;
}

void vw_release(struct vw_complaint *c, enum vw_log_level level, const char *fmt, ...)
{
	va_list ap;

	if (!c->active)
		return;
	va_start(ap, fmt);
	vw_logv(level, fmt, ap);
	va_end(ap);
	*c = (struct vw_complaint){ 0 };
}

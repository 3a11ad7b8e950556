/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The IPMI meter (issue #13): a BMC's whole-node power through libfreeipmi, one
 * VW_ZONE_PLATFORM zone, in band (the kernel's OpenIPMI device, --platform.ipmi.device below
 * the injected devfs root, vw_power_env.devfs: nothing here knows /dev) or over LAN (IPMI 2.0,
 * RMCP+).
 *
 * What is read, chosen at open():
 *   1. DCMI Get Power Reading (NetFn 0x2C, cmd 0x02, group extension 0xDC), mode "system power
 *      statistics": its current watts, while its "power measurement active" bit is set (clear:
 *      -ENODATA, no energy). Path label "dcmi".
 *   2. Where the BMC has no DCMI (the command invalid or unsupported), or DCMI measures nothing
 *      at open while a sensor does: the SDR repository's threshold sensors whose unit is plain
 *      watts (no rate, no modifier, no percentage), by name (case ignored, '_' and '-' read as
 *      spaces):
 *        a. the first, in repository order, whose name says it is the node's total: it holds
 *           "total", "consumption", "system power", "sys power", "node power" or "power meter",
 *           or is "power" or "pwr" alone ("Pwr Consumption", "Total_Power", "SYS_POWER");
 *        b. else the sum of the power supplies' inputs: names holding "input" or the word
 *           "pin" ("PS1 Input Power", "PSU2_PIN"); every one must read, a partial sum is no
 *           node power.
 *      A sensor in watts that is neither (CPU, memory, a supply's output) is a part, never the
 *      node. Path label "sdr:<sensor name>" (the first's, for a sum). Nothing: -ENODEV.
 *
 * BMCs are slow (tens of ms to seconds a request, more when they time out), so no request runs
 * on the sampling thread after open(): a poller thread (poller.h) owns the IPMI context, asks
 * every interval_ns (backing off while the BMC fails) and read() counts the readings, each
 * from its own time to the next's (poller.h), while the last is at most stale_ns old; an older one, or none, counts nothing and reports the last
 * request's error (-ENODATA for a BMC that says it measures nothing, -ESTALE while a request
 * is still out), and counting resumes from the next fresh reading's time, the outage a counted
 * gap (stats()), never made up with invented energy. fresh() says whether there is a fresh
 * reading now.
 *
 * A transport failure (timeout, session lost) drops the session and the next attempt opens a
 * new one (a BMC that restarted forgets its sessions). Every LAN request has the session
 * timeout timeout_ms (retransmissions within it); in band the kernel driver's own timeouts
 * apply. close() wakes the poller and joins it: at most one request's timeout.
 *
 * Errors (-errno): a refused user, password or privilege -EACCES; no answer -ETIMEDOUT; a BMC
 * without the command -EOPNOTSUPP; a busy one -EBUSY; a reply that does not parse -EBADMSG;
 * watts out of range -ERANGE; anything else -EIO. The poller and read() each complain once
 * while a failure lasts (rate-limited) and once when it clears.
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"
#include "ipmi_lazy.h"
#include "log.h"
#include "macro.h"
#include "poller.h"
#include "power.h"

#define IPMI_TIMEOUT_MS_DEFAULT 5000L
#define IPMI_INTERVAL_NS_DEFAULT (2 * VW_NSEC_PER_SEC)
#define IPMI_STALE_PERIODS 3
#define IPMI_PORT_DEFAULT 623u
#define IPMI_CIPHER_SUITE 3 /* HMAC-SHA1, HMAC-SHA1-96, AES-CBC-128: FreeIPMI's default */
#define IPMI_MAX_WATTS 10e6 /* 10 MW: beyond any node; junk */
#define IPMI_MAX_SENSORS 8
#define SDR_MAX_RECORDS 4096 /* a repository walk stops there whatever the links say */
#define SDR_HEADER_LEN 5
#define SDR_RECORD_MAX (SDR_HEADER_LEN + 255)
#define SDR_CHUNK 16 /* bytes per Get SDR where a BMC will not return a whole record */
#define SDR_LAST_RECORD 0xFFFF

enum ipmi_method {
	IPMI_METHOD_DCMI,
	IPMI_METHOD_SDR,
};

struct ipmi_sensor {
	uint8_t record[SDR_RECORD_MAX];
	unsigned len;
	char name[32];
};

struct ipmi {
	/* Set by open(), read-only afterwards. */
	enum vw_ipmi_driver driver;
	char *device, *hostname, *username, *password; /* hostname: "host[:port]" for FreeIPMI */
	uint8_t privilege;
	unsigned workaround_flags;
	unsigned timeout_ms;
	uint64_t interval_ns, stale_ns;
	const char *where; /* for the log: the device or the hostname */
	struct vw_zone_info info;
	enum ipmi_method method;
	struct ipmi_sensor sensor[IPMI_MAX_SENSORS];
	size_t nsensor;

	/* The poller's own (open()'s until the poller starts). */
	ipmi_ctx_t ctx;
	ipmi_sensor_read_ctx_t sread;

	struct vw_poller poller; /* its readings: uint64_t µW */
};

static void fiid_obj_destroyp(fiid_obj_t *o)
{
	if (*o)
		fiid_obj_destroy(*o);
}
#define _cleanup_fiid_ _cleanup_(fiid_obj_destroyp)

/* ---- errors ----------------------------------------------------------------------------- */

static int ctx_errno(ipmi_ctx_t ctx)
{
	switch (ipmi_ctx_errnum(ctx)) {
	case IPMI_ERR_PERMISSION:
	case IPMI_ERR_USERNAME_INVALID:
	case IPMI_ERR_PASSWORD_INVALID:
	case IPMI_ERR_K_G_INVALID:
	case IPMI_ERR_PRIVILEGE_LEVEL_INSUFFICIENT:
	case IPMI_ERR_PRIVILEGE_LEVEL_CANNOT_BE_OBTAINED:
	case IPMI_ERR_AUTHENTICATION_TYPE_UNAVAILABLE:
	case IPMI_ERR_PASSWORD_VERIFICATION_TIMEOUT:
		return -EACCES;
	case IPMI_ERR_CONNECTION_TIMEOUT:
	case IPMI_ERR_SESSION_TIMEOUT:
	case IPMI_ERR_MESSAGE_TIMEOUT:
	case IPMI_ERR_DRIVER_TIMEOUT:
		return -ETIMEDOUT;
	case IPMI_ERR_DEVICE_NOT_FOUND:
	case IPMI_ERR_DEVICE_NOT_SUPPORTED:
		return -ENODEV;
	case IPMI_ERR_COMMAND_INVALID_OR_UNSUPPORTED:
	case IPMI_ERR_COMMAND_INVALID_FOR_SELECTED_INTERFACE:
		return -EOPNOTSUPP;
	case IPMI_ERR_BMC_BUSY:
	case IPMI_ERR_DRIVER_BUSY:
		return -EBUSY;
	case IPMI_ERR_IPMI_2_0_UNAVAILABLE:
	case IPMI_ERR_CIPHER_SUITE_ID_UNAVAILABLE:
		return -EPROTONOSUPPORT;
	case IPMI_ERR_HOSTNAME_INVALID:
	case IPMI_ERR_PARAMETERS:
		return -EINVAL;
	case IPMI_ERR_OUT_OF_MEMORY:
		return -ENOMEM;
	default:
		return -EIO;
	}
}

/* Whether a failure leaves the session usable (else it is dropped and opened again). */
static bool session_survives(int r)
{
	return r == -ENODATA || r == -EBUSY || r == -ERANGE || r == -EOPNOTSUPP;
}

/* ---- the session ------------------------------------------------------------------------ */

static void ipmi_disconnect(struct ipmi *ip)
{
	if (ip->sread) {
		ipmi_sensor_read_ctx_destroy(ip->sread);
		ip->sread = NULL;
	}
	if (ip->ctx) {
		ipmi_ctx_close(ip->ctx);
		ipmi_ctx_destroy(ip->ctx);
		ip->ctx = NULL;
	}
}

static int open_ctx(struct ipmi *ip, ipmi_ctx_t ctx)
{
	if (ip->driver == VW_IPMI_DRIVER_INBAND)
		return ipmi_ctx_open_inband(ctx, IPMI_DEVICE_OPENIPMI, 0, 0, 0, ip->device, 0,
					    IPMI_FLAGS_DEFAULT);
	return ipmi_ctx_open_outofband_2_0(ctx, ip->hostname, ip->username, ip->password, NULL,
					   0, ip->privilege, IPMI_CIPHER_SUITE, ip->timeout_ms,
					   VW_MAX(ip->timeout_ms / 4, 50u), ip->workaround_flags,
					   IPMI_FLAGS_DEFAULT);
}

/* A session (in band: the device opened); *ret_msg FreeIPMI's words for a failure. */
static int ipmi_connect(struct ipmi *ip, const char **ret_msg)
{
	ipmi_ctx_t ctx = ipmi_ctx_create();
	int r;

	*ret_msg = NULL;
	if (!ctx) {
		*ret_msg = vw_ipmi_load(); /* NULL when loaded: then it was memory */
		return *ret_msg ? -ENOPKG : -ENOMEM;
	}
	if (open_ctx(ip, ctx) < 0) {
		r = ctx_errno(ctx);
		*ret_msg = ipmi_ctx_errormsg(ctx); /* a static string */
		ipmi_ctx_destroy(ctx);
		return r;
	}
	ip->ctx = ctx;
	ip->sread = ipmi_sensor_read_ctx_create(ctx);
	if (!ip->sread) {
		ipmi_disconnect(ip);
		return -ENOMEM;
	}
	return 0;
}

/* ---- DCMI ------------------------------------------------------------------------------- */

static int read_dcmi(struct ipmi *ip, uint64_t *ret_uw)
{
	_cleanup_fiid_ fiid_obj_t rs =
		fiid_obj_create(VW_IPMI_TMPL(tmpl_cmd_dcmi_get_power_reading_rs));
	uint64_t watts, active;

	if (!rs)
		return -ENOMEM;
	if (ipmi_cmd_dcmi_get_power_reading(ip->ctx,
					    IPMI_DCMI_POWER_READING_MODE_SYSTEM_POWER_STATISTICS, 0,
					    rs) < 0)
		return ctx_errno(ip->ctx);
	if (fiid_obj_get(rs, "power_reading_state.power_measurement", &active) <= 0 ||
	    fiid_obj_get(rs, "current_power", &watts) <= 0)
		return -EBADMSG;
	if (active != IPMI_DCMI_POWER_READING_STATE_POWER_MEASUREMENT_ACTIVE)
		return -ENODATA;
	*ret_uw = watts * VW_USEC_PER_SEC;
	return 0;
}

/* ---- SDR sensors ------------------------------------------------------------------------ */

static int get_sdr_part(struct ipmi *ip, uint16_t reservation, uint16_t id, uint8_t off,
			uint8_t n, uint8_t *buf, unsigned *ret_len, uint16_t *ret_next)
{
	_cleanup_fiid_ fiid_obj_t rs = fiid_obj_create(VW_IPMI_TMPL(tmpl_cmd_get_sdr_rs));
	uint64_t next;
	int len;

	if (!rs)
		return -ENOMEM;
	if (ipmi_cmd_get_sdr(ip->ctx, reservation, id, off, n, rs) < 0)
		return ctx_errno(ip->ctx);
	len = fiid_obj_get_data(rs, "record_data", buf, SDR_RECORD_MAX - off);
	if (len < 0 || fiid_obj_get(rs, "next_record_id", &next) <= 0)
		return -EBADMSG;
	*ret_len = (unsigned)len;
	*ret_next = (uint16_t)next;
	return 0;
}

/*
 * Record `id` into buf: whole (bytes_to_read 0xFF), or, where the BMC cannot return that many
 * bytes, its header and then SDR_CHUNK bytes at a time under a reservation.
 */
static int get_sdr(struct ipmi *ip, uint16_t id, uint8_t *buf, unsigned *ret_len,
		   uint16_t *ret_next)
{
	_cleanup_fiid_ fiid_obj_t res = NULL;
	unsigned len, got;
	uint64_t reservation;
	int r = get_sdr_part(ip, 0, id, 0, 0xFF, buf, &len, ret_next);

	if (r == 0 && len >= SDR_HEADER_LEN && len == SDR_HEADER_LEN + (unsigned)buf[4]) {
		*ret_len = len;
		return 0;
	}
	if (r < 0 && !session_survives(r) && r != -EIO)
		return r;
	res = fiid_obj_create(VW_IPMI_TMPL(tmpl_cmd_reserve_sdr_repository_rs));
	if (!res)
		return -ENOMEM;
	if (ipmi_cmd_reserve_sdr_repository(ip->ctx, res) < 0)
		return ctx_errno(ip->ctx);
	if (fiid_obj_get(res, "reservation_id", &reservation) <= 0)
		return -EBADMSG;
	r = get_sdr_part(ip, (uint16_t)reservation, id, 0, SDR_HEADER_LEN, buf, &got, ret_next);
	if (r < 0)
		return r;
	if (got != SDR_HEADER_LEN)
		return -EBADMSG;
	len = SDR_HEADER_LEN + (unsigned)buf[4];
	for (unsigned off = SDR_HEADER_LEN; off < len; off += got) {
		r = get_sdr_part(ip, (uint16_t)reservation, id, (uint8_t)off,
				 (uint8_t)VW_MIN(SDR_CHUNK, len - off), buf + off, &got, ret_next);
		if (r < 0)
			return r;
		if (got == 0)
			return -EBADMSG;
	}
	*ret_len = len;
	return 0;
}

enum sensor_tier {
	TIER_TOTAL,     /* the node's total */
	TIER_PSU_INPUT, /* one power supply's input: summed */
	TIER_NONE,
};

/* Lower case, '_' and '-' as spaces, surrounded by one space each side (for word matches). */
static void normalise(const char *name, char *out, size_t size)
{
	size_t n = 0;

	out[n++] = ' ';
	for (; *name && n + 2 < size; name++)
		out[n++] = *name == '_' || *name == '-' ? ' ' :
			   (char)(*name >= 'A' && *name <= 'Z' ? *name - 'A' + 'a' : *name);
	out[n++] = ' ';
	out[n] = '\0';
}

static enum sensor_tier sensor_tier(const char *name)
{
	static const char *const total[] = { "total", "consumption", "system power",
					     "sys power", "node power", "power meter" };
	static const char *const alone[] = { " power ", " pwr " };
	char s[48];

	normalise(name, s, sizeof(s));
	for (size_t i = 0; i < ARRAY_SIZE(total); i++)
		if (strstr(s, total[i]))
			return TIER_TOTAL;
	for (size_t i = 0; i < ARRAY_SIZE(alone); i++)
		if (strcmp(s, alone[i]) == 0)
			return TIER_TOTAL;
	if (strstr(s, "input") || strstr(s, " pin "))
		return TIER_PSU_INPUT;
	return TIER_NONE;
}

/* A threshold sensor whose reading is plain watts: its tier by name, else TIER_NONE. */
static enum sensor_tier classify(ipmi_sdr_ctx_t sdr, const uint8_t *rec, unsigned len,
				 char *name, size_t name_size)
{
	uint8_t pct, mod, rate, base, mod_base, erc;
	uint16_t id;
	uint8_t type;
	int n;

	if (ipmi_sdr_parse_record_id_and_type(sdr, rec, len, &id, &type) < 0 ||
	    (type != IPMI_SDR_FORMAT_FULL_SENSOR_RECORD &&
	     type != IPMI_SDR_FORMAT_COMPACT_SENSOR_RECORD) ||
	    ipmi_sdr_parse_event_reading_type_code(sdr, rec, len, &erc) < 0 ||
	    erc != IPMI_EVENT_READING_TYPE_CODE_THRESHOLD ||
	    ipmi_sdr_parse_sensor_units(sdr, rec, len, &pct, &mod, &rate, &base, &mod_base) < 0 ||
	    pct != IPMI_SDR_PERCENTAGE_NO || mod != IPMI_SDR_MODIFIER_UNIT_NONE ||
	    rate != IPMI_SENSOR_RATE_UNIT_NONE || base != IPMI_SENSOR_UNIT_WATTS)
		return TIER_NONE;
	n = ipmi_sdr_parse_id_string(sdr, rec, len, name, (unsigned)name_size - 1);
	if (n < 0)
		return TIER_NONE;
	name[n] = '\0';
	return sensor_tier(name);
}

static void keep_sensor(struct ipmi *ip, const uint8_t *rec, unsigned len, const char *name)
{
	struct ipmi_sensor *s = &ip->sensor[ip->nsensor++];

	memcpy(s->record, rec, len);
	s->len = len;
	snprintf(s->name, sizeof(s->name), "%s", name);
}

/* Walk the repository: the first total sensor, else every power supply input. */
static int find_sensors(struct ipmi *ip)
{
	ipmi_sdr_ctx_t sdr = ipmi_sdr_ctx_create();
	uint16_t id = 0, next;
	int r = 0;

	if (!sdr)
		return -ENOMEM;
	ip->nsensor = 0;
	for (unsigned i = 0; i < SDR_MAX_RECORDS && id != SDR_LAST_RECORD; i++, id = next) {
		uint8_t rec[SDR_RECORD_MAX];
		char name[sizeof(ip->sensor[0].name)];
		unsigned len = 0; /* set when get_sdr() returns 0: gcc does not see it (below) */

		r = get_sdr(ip, id, rec, &len, &next);
		if (r < 0)
			break;
		switch (classify(sdr, rec, len, name, sizeof(name))) {
		case TIER_TOTAL:
			ip->nsensor = 0;
			keep_sensor(ip, rec, len, name);
			ipmi_sdr_ctx_destroy(sdr);
			return 0;
		case TIER_PSU_INPUT:
			if (ip->nsensor < IPMI_MAX_SENSORS)
				keep_sensor(ip, rec, len, name);
			break;
		case TIER_NONE:
			break;
		}
	}
	ipmi_sdr_ctx_destroy(sdr);
	/* An empty repository answers "not present" to its first record. */
	if (r < 0 && !(id == 0 && r == -EIO))
		return r;
	return ip->nsensor ? 0 : -ENODEV;
}

static int sread_errno(struct ipmi *ip)
{
	switch (ipmi_sensor_read_ctx_errnum(ip->sread)) {
	case IPMI_SENSOR_READ_ERR_SENSOR_READING_UNAVAILABLE:
	case IPMI_SENSOR_READ_ERR_SENSOR_SCANNING_DISABLED:
	case IPMI_SENSOR_READ_ERR_SENSOR_READING_CANNOT_BE_OBTAINED:
		return -ENODATA;
	case IPMI_SENSOR_READ_ERR_NODE_BUSY:
		return -EBUSY;
	case IPMI_SENSOR_READ_ERR_IPMI_ERROR:
		return ctx_errno(ip->ctx);
	case IPMI_SENSOR_READ_ERR_OUT_OF_MEMORY:
		return -ENOMEM;
	default:
		return -EIO;
	}
}

static int read_sensor(struct ipmi *ip, const struct ipmi_sensor *s, uint64_t *ret_uw)
{
	_cleanup_free_ double *watts = NULL;
	uint16_t events;
	uint8_t raw;
	int r = ipmi_sensor_read(ip->sread, s->record, s->len, 0, &raw, &watts, &events);

	if (r < 0)
		return sread_errno(ip);
	if (r == 0 || !watts)
		return -ENODATA;
	if (!isfinite(*watts) || *watts < 0 || *watts > IPMI_MAX_WATTS)
		return -ERANGE;
	*ret_uw = (uint64_t)llround(*watts * 1e6);
	return 0;
}

static int read_sdr(struct ipmi *ip, uint64_t *ret_uw)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < ip->nsensor; i++) {
		/* set when read_sensor() returns 0; gcc -O2 does not follow that sread_errno() and
		 * ctx_errno() return only negative values, and warns without the 0 */
		uint64_t uw = 0;
		int r = read_sensor(ip, &ip->sensor[i], &uw);

		if (r < 0)
			return r; /* a partial sum would be a wrong node power */
		sum += uw;
	}
	*ret_uw = sum;
	return 0;
}

static int read_uw(struct ipmi *ip, uint64_t *ret_uw)
{
	return ip->method == IPMI_METHOD_DCMI ? read_dcmi(ip, ret_uw) : read_sdr(ip, ret_uw);
}

/* ---- the poller ------------------------------------------------------------------------- */

/* The poller's request (µW into *ret), a session first where there is none; a broken session
 * is dropped. */
static int poll_once(void *ctx, void *ret)
{
	struct ipmi *ip = ctx;
	uint64_t *ret_uw = ret;
	const char *msg;
	int r = ip->ctx ? 0 : ipmi_connect(ip, &msg);

	if (r == 0)
		r = read_uw(ip, ret_uw);
	if (r < 0 && !session_survives(r))
		ipmi_disconnect(ip);
	return r;
}

static const char *failing(void *ctx)
{
	const struct ipmi *ip = ctx;

	return ip->method == IPMI_METHOD_DCMI ? "the DCMI power reading" : "the sensor reading";
}

static const struct vw_poller_ops ipmi_poller_ops = { .poll = poll_once, .failing = failing };

/* ---- configuration ---------------------------------------------------------------------- */

/* FreeIPMI's names for its IPMI 2.0 workarounds (ipmi-sensors -W). */
static const struct {
	const char *name;
	unsigned flag;
} workarounds[] = {
	{ "authcap", IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_AUTHENTICATION_CAPABILITIES },
	{ "intel20", IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_INTEL_2_0_SESSION },
	{ "supermicro20", IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_SUPERMICRO_2_0_SESSION },
	{ "sun20", IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_SUN_2_0_SESSION },
	{ "opensesspriv", IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_OPEN_SESSION_PRIVILEGE },
	{ "integritycheckvalue", IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_NON_EMPTY_INTEGRITY_CHECK_VALUE },
	{ "nochecksumcheck", IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_NO_CHECKSUM_CHECK },
};

static int workaround_flags(const char *const *names, unsigned *ret)
{
	*ret = 0;
	for (; names && *names; names++) {
		size_t i;

		for (i = 0; i < ARRAY_SIZE(workarounds); i++)
			if (strcmp(*names, workarounds[i].name) == 0)
				break;
		if (i == ARRAY_SIZE(workarounds)) {
			vw_error("ipmi: unknown workaround \"%s\" (known: authcap, intel20, "
				 "supermicro20, sun20, opensesspriv, integritycheckvalue, "
				 "nochecksumcheck)",
				 *names);
			return -EINVAL;
		}
		*ret |= workarounds[i].flag;
	}
	return 0;
}

static int lan_setup(struct ipmi *ip, const struct vw_ipmi_config *cfg)
{
	static const uint8_t privs[] = {
		[VW_IPMI_PRIV_USER] = IPMI_PRIVILEGE_LEVEL_USER,
		[VW_IPMI_PRIV_OPERATOR] = IPMI_PRIVILEGE_LEVEL_OPERATOR,
		[VW_IPMI_PRIV_ADMIN] = IPMI_PRIVILEGE_LEVEL_ADMIN,
	};
	unsigned port = cfg->port ? cfg->port : IPMI_PORT_DEFAULT;
	int r;

	if (!cfg->host || !*cfg->host || port > 65535 || (unsigned)cfg->privilege >= ARRAY_SIZE(privs))
		return -EINVAL;
	/* FreeIPMI takes "host:port"; an IPv6 address only on the standard port. */
	if (port != IPMI_PORT_DEFAULT && strchr(cfg->host, ':'))
		return -EINVAL;
	r = port == IPMI_PORT_DEFAULT ? asprintf(&ip->hostname, "%s", cfg->host)
				      : asprintf(&ip->hostname, "%s:%u", cfg->host, port);
	if (r < 0) {
		ip->hostname = NULL;
		return -ENOMEM;
	}
	ip->username = cfg->username ? strdup(cfg->username) : NULL;
	ip->password = cfg->password ? strdup(cfg->password) : NULL;
	if ((cfg->username && !ip->username) || (cfg->password && !ip->password))
		return -ENOMEM;
	ip->privilege = privs[cfg->privilege];
	ip->where = ip->hostname;
	return workaround_flags(cfg->workarounds, &ip->workaround_flags);
}

/* The device's path: below the devfs root (no root: NULL, errno ENODEV) unless absolute. */
static char *device_path(const char *device, const char *devfs)
{
	char *p = NULL;

	if (device[0] == '/')
		return strdup(device);
	if (!devfs || !*devfs) {
		errno = ENODEV;
		return NULL;
	}
	if (asprintf(&p, "%s%s%s", devfs, devfs[strlen(devfs) - 1] == '/' ? "" : "/", device) < 0)
		return NULL;
	return p;
}

/* In band: -ENODEV (quietly) without the device, the usual case on a machine with no BMC. */
static int inband_setup(struct ipmi *ip, const struct vw_ipmi_config *cfg, const char *devfs)
{
	struct stat st;
	int r;

	if (!cfg->device || !*cfg->device)
		return -ENODEV;
	ip->device = device_path(cfg->device, devfs);
	if (!ip->device) {
		r = errno == ENODEV ? -ENODEV : -ENOMEM;
		if (r == -ENODEV)
			vw_debug("ipmi: no in-band IPMI device: no devfs root to find %s below",
				 cfg->device);
		return r;
	}
	if (stat(ip->device, &st) < 0) {
		r = -errno;
		vw_debug("ipmi: no in-band IPMI device %s: %s", ip->device, strerror(-r));
		return r == -ENOENT || r == -ENOTDIR ? -ENODEV : r;
	}
	ip->where = ip->device;
	return 0;
}

static int setup(struct ipmi *ip, const struct vw_ipmi_config *cfg, const char *devfs)
{
	ip->driver = cfg->driver;
	ip->timeout_ms = (unsigned)(cfg->timeout_ms > 0 ? cfg->timeout_ms : IPMI_TIMEOUT_MS_DEFAULT);
	ip->interval_ns = cfg->interval_ns ? cfg->interval_ns : IPMI_INTERVAL_NS_DEFAULT;
	ip->stale_ns = cfg->stale_ns ? cfg->stale_ns : IPMI_STALE_PERIODS * ip->interval_ns;
	ip->info = (struct vw_zone_info){ .zone = VW_ZONE_PLATFORM, .idle_w = -1 };
	return cfg->driver == VW_IPMI_DRIVER_LAN ? lan_setup(ip, cfg) : inband_setup(ip, cfg, devfs);
}

/* ---- discovery -------------------------------------------------------------------------- */

static void label_sdr(struct ipmi *ip)
{
	ip->method = IPMI_METHOD_SDR;
	snprintf(ip->info.path, sizeof(ip->info.path), "sdr:%s%s", ip->sensor[0].name,
		 ip->nsensor > 1 ? " (+ other supplies)" : "");
}

/*
 * DCMI first; the SDR sensors where it is missing, or where it measures nothing now and a
 * sensor does. The first reading (or DCMI's -ENODATA) in *ret_uw / the result.
 */
static int discover(struct ipmi *ip, uint64_t *ret_uw)
{
	int r = read_dcmi(ip, ret_uw), s;

	if (r == 0 || (r < 0 && r != -EOPNOTSUPP && r != -ENODATA)) {
		ip->method = IPMI_METHOD_DCMI;
		snprintf(ip->info.path, sizeof(ip->info.path), "dcmi");
		return r;
	}
	s = find_sensors(ip);
	if (s == 0) {
		label_sdr(ip);
		return read_sdr(ip, ret_uw);
	}
	if (r == -ENODATA) { /* DCMI, measuring nothing yet, and no sensor: wait for DCMI */
		ip->method = IPMI_METHOD_DCMI;
		snprintf(ip->info.path, sizeof(ip->info.path), "dcmi");
		return r;
	}
	vw_info("ipmi: %s: the BMC has no DCMI power reading and no sensor in watts for the "
		"node (%s)",
		ip->where, strerror(-s));
	return s == -ENODEV ? -ENODEV : s;
}

/* ---- the ops ---------------------------------------------------------------------------- */

static void ipmi_close(void *state)
{
	struct ipmi *ip = state;

	if (!ip)
		return;
	vw_poller_fini(&ip->poller);
	ipmi_disconnect(ip);
	free(ip->device);
	free(ip->hostname);
	free(ip->username);
	vw_free_secret(ip->password);
	free(ip);
}

static void ipmi_closep(struct ipmi **ip)
{
	ipmi_close(*ip);
}

static void log_refusal(const struct ipmi *ip, int r, const char *msg)
{
	if (r == -EACCES)
		vw_error("ipmi: %s: the BMC refuses user \"%s\": %s (check the user, its password "
			 "file and the privilege level)",
			 ip->where, ip->username ? ip->username : "", msg ? msg : strerror(-r));
	else
		vw_warn("ipmi: %s: no IPMI session: %s", ip->where, msg ? msg : strerror(-r));
}

static int ipmi_open(const struct vw_power_env *env, void **ret_state)
{
	const struct vw_ipmi_config *cfg = vw_power_source_config(env, &vw_src_ipmi);
	_cleanup_(ipmi_closep) struct ipmi *ip = NULL;
	char what[160];
	const char *msg;
	uint64_t uw = 0;
	int r;

	if (!cfg)
		return -ENODEV; /* nothing configured: nothing to look for */
	ip = calloc(1, sizeof(*ip));
	if (!ip)
		return -ENOMEM;
	r = setup(ip, cfg, env->devfs);
	if (r < 0)
		return r;
	snprintf(what, sizeof(what), "ipmi: %s", ip->where);
	r = vw_poller_init(&ip->poller, &ipmi_poller_ops, ip, what, ip->interval_ns, ip->stale_ns,
			   sizeof(uint64_t));
	if (r < 0)
		return r;
	r = ipmi_connect(ip, &msg);
	if (r < 0) {
		log_refusal(ip, r, msg);
		return r;
	}
	r = discover(ip, &uw);
	if (r == -EACCES)
		vw_error("ipmi: %s: the BMC refuses user \"%s\" the power reading at this privilege "
			 "level (see --platform.ipmi.privilege)",
			 ip->where, ip->username ? ip->username : "");
	else if (r < 0 && r != -ENODATA)
		vw_debug("ipmi: %s: no power reading: %s", ip->where, strerror(-r));
	if (r < 0 && r != -ENODATA)
		return r;
	vw_poller_seed(&ip->poller, r, &uw);
	r = vw_poller_start(&ip->poller, ip->interval_ns); /* after this first reading */
	if (r < 0)
		return r;
	vw_info("ipmi: %s: reading %s every %llu ms (%llu W now)", ip->where, ip->info.path,
		(unsigned long long)(ip->interval_ns / VW_NSEC_PER_MSEC),
		(unsigned long long)(uw / VW_USEC_PER_SEC));
	*ret_state = VW_TAKE_PTR(ip);
	return 0;
}

static size_t ipmi_zones(void *state, const struct vw_zone_info **ret_zones)
{
	struct ipmi *ip = state;

	*ret_zones = &ip->info;
	return 1;
}

static int ipmi_read(void *state, const struct vw_node_activity *act, uint64_t *raw_uj,
		     int *errs)
{
	struct ipmi *ip = state;

	if (!act)
		return -EINVAL;
	return vw_poller_read(&ip->poller, act->now_ns, raw_uj, errs);
}

static void ipmi_stats(void *state, struct vw_power_source_stats *ret)
{
	struct ipmi *ip = state;

	vw_poller_stats(&ip->poller, ret);
}

static bool ipmi_fresh(void *state)
{
	struct ipmi *ip = state;

	return vw_poller_current(&ip->poller, NULL) == 0;
}

/*
 * kepler_platform_watts: one row while fresh, bmc_id the BMC's address (or the in-band device),
 * source_id the zone's path, source_type DCMI or SDR (a sum of supplies: its first's name).
 */
static size_t ipmi_readings(void *state, struct vw_platform_reading *out, size_t max)
{
	struct ipmi *ip = state;
	uint64_t uw;

	if (max == 0 || vw_poller_current(&ip->poller, &uw) < 0)
		return 0;
	out[0] = (struct vw_platform_reading){ .uw = uw };
	snprintf(out[0].bmc_id, sizeof(out[0].bmc_id), "%s", ip->where);
	snprintf(out[0].source_id, sizeof(out[0].source_id), "%.*s",
		 (int)sizeof(out[0].source_id) - 1, ip->info.path);
	snprintf(out[0].source_name, sizeof(out[0].source_name), "%s",
		 ip->method == IPMI_METHOD_DCMI ? "Get Power Reading" : ip->sensor[0].name);
	snprintf(out[0].source_type, sizeof(out[0].source_type), "%s",
		 ip->method == IPMI_METHOD_DCMI ? "DCMI" : "SDR");
	return 1;
}

/* ---- options: --platform.ipmi.* --------------------------------------------------------- */

/* The flags as given; ipmi_configure() makes a struct vw_ipmi_config of them. */
struct ipmi_options {
	char *driver;          /* auto, inband, lan */
	char *device;          /* in band: the kernel's IPMI device */
	char *host;            /* lan */
	uint64_t port;
	char *username;
	char *password_file;   /* the password, read by ipmi_configure() */
	char *privilege;       /* user, operator, admin */
	struct vw_strlist workarounds; /* FreeIPMI's -W names */
	uint64_t timeout_ns;
	uint64_t interval_ns;
	uint64_t stale_ns;     /* 0: 3 x interval */
};

#define OFF(f) offsetof(struct ipmi_options, f)
static const char *const ipmi_drivers[] = { "auto", "inband", "lan", NULL };
static const char *const ipmi_privileges[] = { "user", "operator", "admin", NULL };

static const struct vw_option ipmi_rows[] = {
	{ "platform.ipmi.driver", "platform.ipmi.driver", VW_OPT_STRING, OFF(driver), "auto",
	  "DRIVER",
	  "how the ipmi meter reaches the BMC: inband (platform.ipmi.device), lan (IPMI 2.0 to "
	  "platform.ipmi.host), auto (lan with a host, else inband)",
	  0, 0, ipmi_drivers },
	{ "platform.ipmi.device", "platform.ipmi.device", VW_OPT_STRING, OFF(device),
	  "ipmi0", "PATH",
	  "the kernel's IPMI device (ipmi_devintf) for in-band IPMI, below --host.devfs (an "
	  "absolute path: as given); absent: no in-band meter" },
	{ "platform.ipmi.host", "platform.ipmi.host", VW_OPT_STRING, OFF(host), NULL, "HOST",
	  "the BMC's name or address for IPMI over LAN (default: none)" },
	{ "platform.ipmi.port", "platform.ipmi.port", VW_OPT_UINT, OFF(port), "623", "PORT",
	  "the BMC's UDP port for IPMI over LAN", 1, 65535 },
	{ "platform.ipmi.username", "platform.ipmi.username", VW_OPT_STRING, OFF(username),
	  NULL, "NAME", "the BMC user for IPMI over LAN (default: the null user)" },
	{ "platform.ipmi.password-file", "platform.ipmi.passwordFile", VW_OPT_STRING,
	  OFF(password_file), NULL, "PATH",
	  "a file whose first line is the BMC user's password (a mounted Kubernetes Secret); "
	  "never on the command line" },
	{ "platform.ipmi.privilege", "platform.ipmi.privilege", VW_OPT_STRING,
	  OFF(privilege), "user", "LEVEL",
	  "the IPMI over LAN session's privilege: user (enough for DCMI and sensors on most "
	  "BMCs), operator, admin",
	  0, 0, ipmi_privileges },
	{ "platform.ipmi.workarounds", "platform.ipmi.workarounds", VW_OPT_STRLIST,
	  OFF(workarounds), NULL, "NAME,...",
	  "FreeIPMI's IPMI 2.0 workarounds for BMCs that need them (ipmi-sensors -W): authcap, "
	  "intel20, supermicro20, sun20, opensesspriv, integritycheckvalue, nochecksumcheck" },
	{ "platform.ipmi.timeout", "platform.ipmi.timeout", VW_OPT_DURATION, OFF(timeout_ns),
	  "5s", "DURATION", "a request to the BMC over LAN fails after this", 0.1, 60 },
	{ "platform.ipmi.interval", "platform.ipmi.interval", VW_OPT_DURATION,
	  OFF(interval_ns), "2s", "DURATION",
	  "how often the BMC is asked (in a thread of its own: the sampling never waits for it)",
	  0.1, 3600 },
	{ "platform.ipmi.staleness", "platform.ipmi.staleness", VW_OPT_DURATION,
	  OFF(stale_ns), "0s", "DURATION",
	  "an older BMC reading counts no energy (0: 3 x platform.ipmi.interval)", 0, 86400 },
};
#undef OFF

/* The configuration and what it owns: the password read from its file, the workarounds'
 * NULL-ended list (its strings the options'). */
struct ipmi_configured {
	struct vw_ipmi_config cfg; /* first: what the meter gets */
	char *password;
	const char **workarounds;
};

static bool empty(const char *s)
{
	return !s || !*s;
}

static void ipmi_release(void *config)
{
	struct ipmi_configured *c = config;

	if (!c)
		return;
	vw_free_secret(c->password);
	free(c->workarounds);
	free(c);
}

static int ipmi_privilege(const char *s, enum vw_ipmi_privilege *ret)
{
	for (size_t i = 0; ipmi_privileges[i]; i++)
		if (s && strcmp(s, ipmi_privileges[i]) == 0) {
			*ret = (enum vw_ipmi_privilege)i; /* user, operator, admin: the enum's order */
			return 0;
		}
	return -EINVAL; /* the option's choices keep this from happening */
}

/* The LAN part: the password from its file, the workarounds as a NULL-ended list. */
static int configure_lan(struct ipmi_configured *c, const struct ipmi_options *o)
{
	const char *file = o->password_file;
	int r;

	if (!c->cfg.host) {
		vw_error("config: --platform.ipmi.driver=lan needs --platform.ipmi.host");
		return -EINVAL;
	}
	if (!empty(file)) {
		r = vw_power_read_secret(file, &c->password);
		if (r == 0 && !*c->password)
			r = -ENODATA;
		if (r < 0) {
			vw_error("config: --platform.ipmi.password-file: cannot read %s: %s", file,
				 r == -ENODATA ? "it is empty" : strerror(-r));
			return r;
		}
		c->cfg.password = c->password;
	}
	c->workarounds = calloc(o->workarounds.n + 1, sizeof(char *));
	if (!c->workarounds)
		return -ENOMEM;
	for (size_t i = 0; i < o->workarounds.n; i++)
		c->workarounds[i] = o->workarounds.v[i];
	c->cfg.workarounds = c->workarounds;
	return 0;
}

/* Always a configuration: in band by default, the device's path injected. */
static int ipmi_configure(const void *opts, const char *node_name, void **ret)
{
	const struct ipmi_options *o = opts;
	const char *driver = o->driver ? o->driver : "auto";
	bool lan = strcmp(driver, "lan") == 0 || (strcmp(driver, "auto") == 0 && !empty(o->host));
	struct ipmi_configured *c = calloc(1, sizeof(*c));
	int r;

	(void)node_name;
	if (!c)
		return -ENOMEM;
	c->cfg = (struct vw_ipmi_config){
		.driver = lan ? VW_IPMI_DRIVER_LAN : VW_IPMI_DRIVER_INBAND,
		.device = empty(o->device) ? NULL : o->device,
		.host = empty(o->host) ? NULL : o->host,
		.port = (unsigned)o->port,
		.username = empty(o->username) ? NULL : o->username,
		.timeout_ms = (long)(o->timeout_ns / 1000000ULL),
		.interval_ns = o->interval_ns,
		.stale_ns = o->stale_ns,
	};
	r = ipmi_privilege(o->privilege ? o->privilege : "user", &c->cfg.privilege);
	if (r < 0)
		vw_error("config: --platform.ipmi.privilege: not user, operator or admin");
	if (r == 0 && lan)
		r = configure_lan(c, o);
	if (r < 0) {
		ipmi_release(c);
		return r;
	}
	*ret = c;
	return 0;
}

static const struct vw_source_options ipmi_options = {
	.rows = ipmi_rows,
	.n_rows = ARRAY_SIZE(ipmi_rows),
	.size = sizeof(struct ipmi_options),
	.configure = ipmi_configure,
	.release = ipmi_release,
};

const struct vw_power_source_ops vw_src_ipmi = {
	.name = "ipmi",
	.about = "a BMC's DCMI power reading or watts sensor, in band or over LAN",
	.measured = true,
	.open = ipmi_open,
	.zones = ipmi_zones,
	.read = ipmi_read,
	.stats = ipmi_stats,
	.fresh = ipmi_fresh,
	.readings = ipmi_readings,
	.close = ipmi_close,
	.options = &ipmi_options,
};

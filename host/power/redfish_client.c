/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A BMC's whole-node power over Redfish (the client behind src_redfish.c's poller).
 *
 * Discovery (vw_rf_client_connect): the service root -> its Chassis collection -> the first
 * chassis (in the collection's order) that links one of these, newest schema first:
 *
 *   EnvironmentMetrics          PowerWatts.Reading (a Sensors/ Power excerpt in DMTF's schema)
 *   Sensors                     Reading of the first sensor with ReadingType Power and
 *                               PhysicalContext Chassis (the whole chassis's)
 *   Power (deprecated)          PowerControl[0].PowerConsumedWatts (the most common in service)
 *   PowerSubsystem              the sum of PowerSupplies/<each>/Metrics InputPowerWatts.Reading
 *
 * and whose reading answers now. The path kept is that resource's path on the BMC
 * (/redfish/v1/Chassis/1U/EnvironmentMetrics), never the endpoint, so that labels stay put.
 * Each read also names what it read as kepler_platform_watts rows: the chassis's Id, and
 * source_type EnvironmentMetrics, PowerControl (its MemberId and Name) or PowerSupply (one row
 * per supply, its Id and Name, its input power: the wall's side) or Sensor (its Id and Name).
 *
 * Auth (cfg->auth): a session by default: POST SessionService/Sessions, X-Auth-Token on every
 * request, one new login when the BMC refuses the token (it times sessions out), DELETE of the
 * session's Location when freed (BMCs allow 4-16 sessions: never leave one behind); a BMC with
 * no session service gets basic auth. VW_REDFISH_AUTH_BASIC: HTTP basic on every request. A
 * login refused for too many sessions is -EUSERS. Errors map to -errno: 401/403 -EACCES, 404
 * -ENOENT, 503 and 429 -EAGAIN, another status -EIO, a timeout -ETIMEDOUT, a TLS failure
 * -EPROTO, a connection refused/reset -ECONNREFUSED/-ECONNRESET, a body that is no JSON or a
 * short one -EBADMSG, a reading that is null -ENODATA, a cancelled request -ECANCELED. The
 * transport (TLS, timeouts, the body's cap, cancellation) is the HTTP client's (http_client.h).
 */
#include "redfish_client.h"

#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http_client.h"
#include "log.h"
#include "macro.h"

#define RF_ROOT "/redfish/v1/"
#define RF_SESSIONS RF_ROOT "SessionService/Sessions"
#define RF_BODY_MAX (1u << 20)      /* a resource larger than 1 MiB is not one we read */
#define RF_TIMEOUT_MS_DEFAULT 5000L
#define RF_MAX_PSU VW_PLATFORM_MAX_READINGS
#define RF_FIELD 256 /* a session's token and path, as kept */
#define RF_MAX_WATTS 10e6           /* 10 MW: beyond any node; junk */
#define LOGOUT_MS_MAX 2000L
#define RF_MAX_SENSORS 256 /* GETs at discovery, once, to find the chassis's power sensor */
/* GETs one discovery may make in all (a chassis's sensors included): a BMC listing 100,000
 * chassis or supplies made as many, each up to the timeout, on the daemon's start thread */
#define RF_DISCOVERY_MAX_GETS 512

enum rf_kind {
	RF_KIND_ENV_METRICS,
	RF_KIND_SENSOR,
	RF_KIND_POWER_CONTROL,
	RF_KIND_PSU_METRICS,
};

struct rf_psu {
	char *metrics; /* its Metrics path */
	char id[VW_PLATFORM_LABEL], name[VW_PLATFORM_LABEL];
};

struct vw_rf_client {
	struct vw_httpc *http;
	char *endpoint; /* https://host[:port], no trailing slash */
	char bmc_id[VW_PLATFORM_LABEL];
	long timeout_ms;
	enum vw_redfish_auth auth;
	const atomic_bool *cancel;
	char *ca_file;
	struct vw_httpc_resp resp; /* the last answer */
	long req_timeout_ms;	   /* 0: timeout_ms */
	/* Session auth: the token sent as X-Auth-Token, the session's path to DELETE at close. */
	bool use_session;
	char *username, *password;
	char token[RF_FIELD];
	char session[RF_FIELD];
	char token_header[RF_FIELD + 16]; /* "X-Auth-Token: ...", "" before a login */
	enum rf_kind kind;
	char path[128];
	char chassis_id[VW_PLATFORM_LABEL];
	struct rf_psu psu[RF_MAX_PSU]; /* RF_KIND_PSU_METRICS: each supply */
	size_t npsu;
	bool discovering;	/* GETs are counted against RF_DISCOVERY_MAX_GETS */
	unsigned discovery_gets;
};

/* ---- HTTP ------------------------------------------------------------------------------- */

static int status_errno(long status)
{
	if (status == 200)
		return 0;
	if (status == 401 || status == 403)
		return -EACCES;
	if (status == 404)
		return -ENOENT;
	if (status == 429 || status == 503)
		return -EAGAIN;
	return -EIO;
}

static void json_putp(struct json_object **p)
{
	json_object_put(*p);
}
#define _cleanup_json_ _cleanup_(json_putp)

/* During a login: X-Auth-Token and Location. */
static void on_header(void *userdata, const char *p, size_t len)
{
	struct vw_rf_client *rf = userdata;
	size_t k, v;
	static const struct {
		const char *name;
		size_t off;
	} want[] = {
		{ "X-Auth-Token", offsetof(struct vw_rf_client, token) },
		{ "Location", offsetof(struct vw_rf_client, session) },
	};

	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		k = strlen(want[i].name);
		if (len <= k || strncasecmp(p, want[i].name, k) != 0 || p[k] != ':')
			continue;
		for (v = k + 1; v < len && (p[v] == ' ' || p[v] == '\t'); v++)
			;
		while (len > v && (p[len - 1] == '\r' || p[len - 1] == '\n' || p[len - 1] == ' '))
			len--;
		if (len - v < RF_FIELD) /* longer: not a token or a path we keep */
			snprintf((char *)rf + want[i].off, RF_FIELD, "%.*s", (int)(len - v), p + v);
	}
}

/*
 * One request: method "GET", "POST" (body: JSON text) or "DELETE" on `path` (an @odata.id,
 * /redfish/v1/...); login: the answer's X-Auth-Token and Location are kept. 0 with *ret_status
 * for any HTTP answer (its body in rf->resp), -errno for transport failures.
 */
static int rf_request(struct vw_rf_client *rf, const char *method, const char *path,
		      const char *body, bool login, long *ret_status)
{
	static const char *const post_headers[] = { "Content-Type: application/json", NULL };
	const char *token_headers[] = { rf->token_header, NULL };
	_cleanup_free_ char *url = NULL;
	struct vw_httpc_req req;
	int r;

	*ret_status = 0;
	if (strncmp(path, RF_ROOT, strlen(RF_ROOT)) != 0 || strchr(path, '#'))
		return -EBADMSG;
	if (asprintf(&url, "%s%s", rf->endpoint, path) < 0)
		return -ENOMEM;
	req = (struct vw_httpc_req){
		.method = method, .url = url, .timeout_ms = rf->req_timeout_ms,
		.headers = body ? post_headers : rf->token_header[0] ? token_headers : NULL,
		.body = body, .body_len = body ? strlen(body) : 0,
		/* basic credentials until a session's token takes over */
		.username = rf->use_session ? NULL : rf->username,
		.password = rf->use_session ? NULL : rf->password,
		.on_header = login ? on_header : NULL, .userdata = rf,
	};
	r = vw_httpc_do(rf->http, &req, &rf->resp);
	if (r < 0)
		return r;
	*ret_status = rf->resp.status;
	return 0;
}

/* GET `path` and parse it; *ret owned by the caller. */
static int rf_get_once(struct vw_rf_client *rf, const char *path, struct json_object **ret)
{
	enum json_tokener_error jerr;
	struct json_object *doc;
	long status;
	int r;

	*ret = NULL;
	if (rf->discovering && ++rf->discovery_gets > RF_DISCOVERY_MAX_GETS)
		return -E2BIG;
	r = rf_request(rf, "GET", path, NULL, false, &status);
	if (r < 0)
		return r;
	r = status_errno(status);
	if (r < 0)
		return r;
	if (!rf->resp.body)
		return -EBADMSG;
	doc = json_tokener_parse_verbose(rf->resp.body, &jerr);
	if (!doc || !json_object_is_type(doc, json_type_object)) {
		json_object_put(doc);
		return -EBADMSG;
	}
	*ret = doc;
	return 0;
}

/* ---- sessions --------------------------------------------------------------------------- */

static void set_token_header(struct vw_rf_client *rf)
{
	rf->token_header[0] = '\0';
	if (rf->token[0])
		snprintf(rf->token_header, sizeof(rf->token_header), "X-Auth-Token: %s", rf->token);
}

/* DELETE our session (best effort: the BMC may have timed it out already). */
static void rf_logout(struct vw_rf_client *rf)
{
	long status;
	int r;

	if (!rf->session[0])
		return;
	r = rf_request(rf, "DELETE", rf->session, NULL, false, &status);
	if (r == 0 && status != 200 && status != 204 && status != 404 && status != 401)
		r = -EIO;
	if (r < 0)
		vw_warn("redfish: %s: cannot end session %s: %s", rf->endpoint, rf->session,
			strerror(-r));
	rf->session[0] = rf->token[0] = '\0';
	set_token_header(rf);
}

/* Location may be a path or an absolute URL on the BMC: keep the path. */
static int session_path(struct vw_rf_client *rf)
{
	const char *p = rf->session;

	if (strncmp(p, "https://", 8) == 0) {
		p = strchr(p + 8, '/');
		if (!p)
			return -EBADMSG;
		memmove(rf->session, p, strlen(p) + 1);
	}
	return strncmp(rf->session, RF_ROOT, strlen(RF_ROOT)) == 0 ? 0 : -EBADMSG;
}

/* POST SessionService/Sessions; from then on X-Auth-Token instead of basic auth. */
static int rf_login(struct vw_rf_client *rf)
{
	_cleanup_json_ struct json_object *req = json_object_new_object();
	long status;
	int r;

	if (!req || json_object_object_add(req, "UserName",
					   json_object_new_string(rf->username)) < 0 ||
	    json_object_object_add(req, "Password", json_object_new_string(rf->password)) < 0)
		return -ENOMEM;
	rf->session[0] = rf->token[0] = '\0';
	set_token_header(rf);
	r = rf_request(rf, "POST", RF_SESSIONS,
		       json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN), true, &status);
	if (r < 0)
		return r;
	if (status != 201 && status != 200)
		return status == 503 ? -EUSERS : status_errno(status) ?: -EIO;
	if (!rf->token[0] || !rf->session[0] || session_path(rf) < 0) {
		rf->session[0] = rf->token[0] = '\0';
		return -EBADMSG;
	}
	set_token_header(rf);
	return 0;
}

/* GET, logging in again once when the BMC has forgotten our session (it times them out). */
static int rf_get(struct vw_rf_client *rf, const char *path, struct json_object **ret)
{
	int r = rf_get_once(rf, path, ret);

	if (r != -EACCES || !rf->use_session)
		return r;
	vw_debug("redfish: %s: session refused, logging in again", rf->endpoint);
	rf_logout(rf);
	r = rf_login(rf);
	if (r < 0)
		return r;
	return rf_get_once(rf, path, ret);
}


/* obj[key]["@odata.id"], or NULL. */
static const char *link_of(struct json_object *obj, const char *key)
{
	struct json_object *l, *id;

	if (!json_object_object_get_ex(obj, key, &l) ||
	    !json_object_object_get_ex(l, "@odata.id", &id) ||
	    !json_object_is_type(id, json_type_string))
		return NULL;
	return json_object_get_string(id);
}

/* A reading in W -> µW: -ENODATA when null or absent, -ERANGE when negative or absurd. */
static int watts_uw(struct json_object *v, uint64_t *ret_uw)
{
	double w;

	if (!v || json_object_is_type(v, json_type_null))
		return -ENODATA;
	if (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int))
		return -EBADMSG;
	w = json_object_get_double(v);
	if (!isfinite(w) || w < 0 || w > RF_MAX_WATTS)
		return -ERANGE;
	*ret_uw = (uint64_t)llround(w * 1e6);
	return 0;
}

/* obj[a][b] (b NULL: obj[a]), or NULL. */
static struct json_object *member(struct json_object *obj, const char *a, const char *b)
{
	struct json_object *x;

	if (!json_object_object_get_ex(obj, a, &x))
		return NULL;
	if (b && !json_object_object_get_ex(x, b, &x))
		return NULL;
	return x;
}

/*
 * GET path, follow its link `key` to a collection and GET that: *ret_coll (the caller's to put)
 * and its Members array in *ret_members. -ENOENT without the link, -EBADMSG without Members.
 */
static int get_members(struct vw_rf_client *rf, const char *path, const char *key,
		       struct json_object **ret_coll, struct json_object **ret_members)
{
	_cleanup_json_ struct json_object *obj = NULL, *coll = NULL;
	const char *link;
	int r = rf_get(rf, path, &obj);

	if (r < 0)
		return r;
	link = link_of(obj, key);
	if (!link)
		return -ENOENT;
	r = rf_get(rf, link, &coll);
	if (r < 0)
		return r;
	*ret_members = member(coll, "Members", NULL);
	if (!*ret_members || !json_object_is_type(*ret_members, json_type_array))
		return -EBADMSG;
	*ret_coll = VW_TAKE_PTR(coll);
	return 0;
}

/* ---- readings --------------------------------------------------------------------------- */

/* obj[key] as a label value ("" when absent or not a string). */
static void label_of(struct json_object *obj, const char *key, char out[VW_PLATFORM_LABEL])
{
	const char *v = json_object_get_string(member(obj, key, NULL));

	snprintf(out, VW_PLATFORM_LABEL, "%s",
		 v && json_object_is_type(member(obj, key, NULL), json_type_string) ? v : "");
}

static struct vw_platform_reading *add_row(struct vw_rf_client *rf, struct vw_rf_reading *rd,
					   const char *type, uint64_t uw)
{
	struct vw_platform_reading *row = &rd->rows[rd->n_rows++];

	memset(row, 0, sizeof(*row));
	snprintf(row->bmc_id, sizeof(row->bmc_id), "%s", rf->bmc_id);
	snprintf(row->chassis_id, sizeof(row->chassis_id), "%s", rf->chassis_id);
	snprintf(row->source_type, sizeof(row->source_type), "%s", type);
	row->uw = uw;
	return row;
}

static int read_psu_sum(struct vw_rf_client *rf, struct vw_rf_reading *rd)
{
	for (size_t i = 0; i < rf->npsu; i++) {
		_cleanup_json_ struct json_object *m = NULL;
		struct vw_platform_reading *row;
		uint64_t uw;
		int r = rf_get(rf, rf->psu[i].metrics, &m);

		if (r == 0)
			r = watts_uw(member(m, "InputPowerWatts", "Reading"), &uw);
		if (r < 0)
			return r; /* a partial sum would be a wrong node power */
		row = add_row(rf, rd, "PowerSupply", uw);
		memcpy(row->source_id, rf->psu[i].id, sizeof(row->source_id));
		memcpy(row->source_name, rf->psu[i].name, sizeof(row->source_name));
		rd->uw += uw;
	}
	return 0;
}

/*
 * One resource, one reading: where the watts are in it, and where the row's labels are (in the
 * resource itself, or in the first PowerControl member).
 */
static const struct {
	const char *type;    /* source_type */
	const char *a, *b;   /* the reading: obj[a][b], or obj[a] */
	bool in_first_pc;    /* the reading and labels are in PowerControl[0] */
	const char *id_key;  /* source_id */
	const char *default_id; /* when the resource has none (Id is required, yet DMTF's own
				 * mockup omits it in EnvironmentMetrics) */
} single[] = {
	[RF_KIND_ENV_METRICS] = { "EnvironmentMetrics", "PowerWatts", "Reading", false, "Id",
				  "EnvironmentMetrics" },
	[RF_KIND_SENSOR] = { "Sensor", "Reading", NULL, false, "Id", "" },
	[RF_KIND_POWER_CONTROL] = { "PowerControl", "PowerConsumedWatts", NULL, true, "MemberId",
				    "" },
};

/* The node's power now, in µW, and what it is made of. */
static int read_uw(struct vw_rf_client *rf, struct vw_rf_reading *rd)
{
	_cleanup_json_ struct json_object *doc = NULL;
	struct vw_platform_reading *row;
	struct json_object *obj, *pc;
	uint64_t uw;
	int r;

	memset(rd, 0, sizeof(*rd));
	if (rf->kind == RF_KIND_PSU_METRICS)
		return read_psu_sum(rf, rd);
	r = rf_get(rf, rf->path, &doc);
	if (r < 0)
		return r;
	obj = doc;
	if (single[rf->kind].in_first_pc) {
		pc = member(doc, "PowerControl", NULL);
		if (!pc || !json_object_is_type(pc, json_type_array) ||
		    json_object_array_length(pc) == 0)
			return -ENODATA;
		obj = json_object_array_get_idx(pc, 0);
	}
	r = watts_uw(member(obj, single[rf->kind].a, single[rf->kind].b), &uw);
	if (r < 0)
		return r;
	row = add_row(rf, rd, single[rf->kind].type, uw);
	label_of(obj, single[rf->kind].id_key, row->source_id);
	if (!row->source_id[0])
		snprintf(row->source_id, sizeof(row->source_id), "%s",
			 single[rf->kind].default_id);
	label_of(obj, "Name", row->source_name);
	rd->uw = uw;
	return 0;
}

/* ---- discovery -------------------------------------------------------------------------- */

static void psus_clear(struct vw_rf_client *rf)
{
	for (size_t i = 0; i < rf->npsu; i++)
		free(rf->psu[i].metrics);
	rf->npsu = 0;
}

/* PowerSubsystem -> PowerSupplies -> each member's Metrics link (a previous chassis's gone). */
static int find_psus(struct vw_rf_client *rf, const char *subsystem)
{
	_cleanup_json_ struct json_object *coll = NULL;
	struct json_object *members;
	const char *link;
	int r;

	psus_clear(rf);
	r = get_members(rf, subsystem, "PowerSupplies", &coll, &members);
	if (r < 0)
		return r;
	for (size_t i = 0; i < json_object_array_length(members) && rf->npsu < RF_MAX_PSU; i++) {
		_cleanup_json_ struct json_object *psu = NULL;
		struct rf_psu *p = &rf->psu[rf->npsu];
		const char *id = json_object_get_string(
			member(json_object_array_get_idx(members, i), "@odata.id", NULL));

		if (!id || rf_get(rf, id, &psu) < 0 || !(link = link_of(psu, "Metrics")))
			continue; /* a supply without metrics (Bay2 in DMTF's mockup) adds nothing */
		p->metrics = strdup(link);
		if (!p->metrics)
			return -ENOMEM;
		label_of(psu, "Id", p->id);
		label_of(psu, "Name", p->name);
		rf->npsu++;
	}
	return rf->npsu > 0 ? 0 : -ENOENT;
}

/* Sensors: the first that reads the whole chassis's power (its path into rf->path). */
static int find_power_sensor(struct vw_rf_client *rf, const char *sensors)
{
	_cleanup_json_ struct json_object *coll = NULL;
	struct json_object *members;
	int r = rf_get(rf, sensors, &coll);

	if (r < 0)
		return r;
	members = member(coll, "Members", NULL);
	if (!members || !json_object_is_type(members, json_type_array))
		return -EBADMSG;
	for (size_t i = 0; i < json_object_array_length(members) && i < RF_MAX_SENSORS; i++) {
		_cleanup_json_ struct json_object *sn = NULL;
		const char *id = json_object_get_string(
			member(json_object_array_get_idx(members, i), "@odata.id", NULL));
		const char *type, *context;

		if (!id || strlen(id) >= sizeof(rf->path) || rf_get(rf, id, &sn) < 0)
			continue;
		type = json_object_get_string(member(sn, "ReadingType", NULL));
		context = json_object_get_string(member(sn, "PhysicalContext", NULL));
		if (type && context && !strcmp(type, "Power") && !strcmp(context, "Chassis")) {
			snprintf(rf->path, sizeof(rf->path), "%s", id);
			return 0;
		}
	}
	return -ENOENT;
}

/* Try one chassis: its first representation, newest first, that reads now. */
static int try_chassis(struct vw_rf_client *rf, const char *chassis)
{
	static const struct {
		const char *key;
		enum rf_kind kind;
	} order[] = {
		{ "EnvironmentMetrics", RF_KIND_ENV_METRICS },
		{ "Sensors", RF_KIND_SENSOR },
		{ "Power", RF_KIND_POWER_CONTROL },
		{ "PowerSubsystem", RF_KIND_PSU_METRICS },
	};
	_cleanup_json_ struct json_object *ch = NULL;
	int r = rf_get(rf, chassis, &ch), first = -ENOENT;
	struct vw_rf_reading rd;

	if (r < 0)
		return r;
	label_of(ch, "Id", rf->chassis_id);
	for (size_t i = 0; i < ARRAY_SIZE(order); i++) {
		const char *link = link_of(ch, order[i].key);

		if (!link || strlen(link) >= sizeof(rf->path))
			continue;
		rf->kind = order[i].kind;
		snprintf(rf->path, sizeof(rf->path), "%s", link);
		r = rf->kind == RF_KIND_PSU_METRICS ? find_psus(rf, link)
		    : rf->kind == RF_KIND_SENSOR    ? find_power_sensor(rf, link)
						    : 0;
		if (r == 0)
			r = read_uw(rf, &rd);
		if (r == 0)
			return 0;
		vw_debug("redfish: %s: %s does not read: %s", rf->endpoint, link, strerror(-r));
		if (first == -ENOENT)
			first = r;
	}
	return first;
}

static int discover(struct vw_rf_client *rf)
{
	_cleanup_json_ struct json_object *coll = NULL;
	struct json_object *members;
	int r, first = -ENODEV;

	r = get_members(rf, RF_ROOT, "Chassis", &coll, &members);
	if (r < 0)
		return r == -ENOENT ? -ENODEV : r;
	for (size_t i = 0; i < json_object_array_length(members); i++) {
		const char *id = json_object_get_string(
			member(json_object_array_get_idx(members, i), "@odata.id", NULL));

		if (!id)
			continue;
		r = try_chassis(rf, id);
		if (r == 0)
			return 0;
		if (rf->discovery_gets > RF_DISCOVERY_MAX_GETS)
			return -E2BIG; /* whatever try_chassis made of it */
		if (first == -ENODEV && r != -ENOENT)
			first = r;
	}
	return first;
}

/* ---- the client ------------------------------------------------------------------------- */

/* Polled during a request: true cuts it (-ECANCELED). */
static bool rf_cancelled(void *userdata)
{
	const struct vw_rf_client *rf = userdata;

	return rf->cancel && atomic_load(rf->cancel);
}

static int rf_setup(struct vw_rf_client *rf, const struct vw_redfish_config *cfg)
{
	size_t n = strlen(cfg->endpoint);
	struct vw_httpc_opts o;
	char why[320];
	int r;

	while (n > 0 && cfg->endpoint[n - 1] == '/')
		n--;
	rf->endpoint = strndup(cfg->endpoint, n);
	rf->username = strdup(cfg->username ? cfg->username : "");
	rf->password = strdup(cfg->password ? cfg->password : "");
	rf->ca_file = cfg->ca_file ? strdup(cfg->ca_file) : NULL;
	if (!rf->endpoint || !rf->username || !rf->password || (cfg->ca_file && !rf->ca_file))
		return -ENOMEM;
	snprintf(rf->bmc_id, sizeof(rf->bmc_id), "%s", cfg->id ? cfg->id : "");
	rf->auth = cfg->auth;
	rf->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : RF_TIMEOUT_MS_DEFAULT;
	o = (struct vw_httpc_opts){
		.what = "redfish", .timeout_ms = rf->timeout_ms, .connect_timeout_ms = rf->timeout_ms,
		.max_body = RF_BODY_MAX, .tls = { .ca_file = rf->ca_file, .insecure = cfg->insecure },
		.cancelled = rf_cancelled, .userdata = rf,
	};
	r = vw_httpc_new(&o, &rf->http, why, sizeof(why));
	if (r < 0)
		vw_error("redfish: %s: %s", cfg->endpoint, why);
	return r;
}

/*
 * Session auth where asked for; a BMC without a session service (404, 405, 501 to the login)
 * is read with basic auth instead. Basic auth stays configured on the handle meanwhile: the
 * token header takes over once set (a BMC accepts either).
 */
static int rf_auth(struct vw_rf_client *rf)
{
	int r;

	if (rf->auth == VW_REDFISH_AUTH_BASIC || rf->use_session)
		return 0;
	r = rf_login(rf);
	if (r == -ENOENT || r == -EIO) {
		vw_info("redfish: %s: no session service (%s), using basic auth", rf->endpoint,
			strerror(-r));
		return 0;
	}
	if (r < 0)
		return r;
	rf->use_session = true; /* with a token, no basic credentials are sent */
	return 0;
}

int vw_rf_client_new(const struct vw_redfish_config *cfg, const atomic_bool *cancel,
		     struct vw_rf_client **ret)
{
	struct vw_rf_client *rf;
	int r;

	if (!cfg || !cfg->endpoint || !*cfg->endpoint)
		return -ENODEV;
	if (strncmp(cfg->endpoint, "https://", 8) != 0)
		return -EINVAL;
	rf = calloc(1, sizeof(*rf));
	if (!rf)
		return -ENOMEM;
	rf->cancel = cancel;
	r = rf_setup(rf, cfg);
	if (r < 0) {
		vw_rf_client_free(rf);
		return r;
	}
	*ret = rf;
	return 0;
}

int vw_rf_client_connect(struct vw_rf_client *rf)
{
	int r = rf_auth(rf);

	if (r < 0)
		return r;
	rf->discovering = true;
	rf->discovery_gets = 0;
	r = discover(rf);
	rf->discovering = false;
	if (r == -E2BIG) {
		vw_warn("redfish: %s: no power reading found in %u requests: the BMC lists too many "
			"chassis, power supplies or sensors; given up",
			rf->endpoint, RF_DISCOVERY_MAX_GETS);
		r = -ENODEV;
	}
	return r;
}

int vw_rf_client_read(struct vw_rf_client *rf, struct vw_rf_reading *ret)
{
	return rf->path[0] ? read_uw(rf, ret) : -ENODATA;
}

const char *vw_rf_client_path(const struct vw_rf_client *rf)
{
	return rf->path;
}

const char *vw_rf_client_endpoint(const struct vw_rf_client *rf)
{
	return rf->endpoint;
}

bool vw_rf_error_is_config(int r)
{
	return r == -EACCES || r == -EPROTO || r == -ENODEV || r == -EINVAL || r == -ENOMEM;
}

void vw_rf_client_free(struct vw_rf_client *rf)
{
	if (!rf)
		return;
	if (rf->http) {
		/* Not cancelled (a session left is a slot lost until the BMC times it out), but not
		 * waited for long either: a hung BMC must not hold up a daemon's exit. */
		rf->cancel = NULL;
		rf->req_timeout_ms = VW_MIN(rf->timeout_ms, LOGOUT_MS_MAX);
		rf_logout(rf);
		vw_httpc_free(rf->http);
	}
	vw_httpc_resp_clear(&rf->resp);
	free(rf->ca_file);
	free(rf->username);
	free(rf->password);
	psus_clear(rf);
	free(rf->endpoint);
	free(rf);
}

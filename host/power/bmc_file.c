/* SPDX-License-Identifier: Apache-2.0 */
#include "bmc_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "yaml_reader.h"

#define BMC_FILE_MAX (4u << 20) /* a fleet's file: thousands of nodes */
#define WHAT "BMC file"

/* Skip the node whose start event is ev (a scalar, or a whole sequence or mapping). */
static int skip(struct vw_yaml *y, const yaml_event_t *start)
{
	_cleanup_yaml_event_ yaml_event_t ev = { 0 };
	int depth;
	int r;

	if (start->type == YAML_SCALAR_EVENT)
		return 0;
	for (depth = 1; depth > 0;) {
		r = vw_yaml_next(y, &ev);
		if (r < 0)
			return r;
		if (ev.type == YAML_SEQUENCE_START_EVENT || ev.type == YAML_MAPPING_START_EVENT)
			depth++;
		else if (ev.type == YAML_SEQUENCE_END_EVENT || ev.type == YAML_MAPPING_END_EVENT)
			depth--;
	}
	return 0;
}

static int expect(struct vw_yaml *y, yaml_event_t *ev, yaml_event_type_t type, const char *what)
{
	int r = vw_yaml_next(y, ev);

	if (r < 0)
		return r;
	if (ev->type != type)
		return vw_yaml_err(y, &ev->start_mark, "%s must be a %s, got a %s", what,
				   type == YAML_MAPPING_START_EVENT ? "mapping" : "scalar",
				   vw_yaml_kind(ev));
	return 0;
}

static int dup_scalar(const yaml_event_t *ev, char **out)
{
	free(*out);
	*out = strdup((const char *)ev->data.scalar.value);
	return *out ? 0 : -ENOMEM;
}

/* One BMC's mapping into e. */
static int read_bmc(struct vw_yaml *y, struct vw_bmc_entry *e)
{
	static const struct {
		const char *key;
		size_t off;
	} fields[] = {
		{ "endpoint", offsetof(struct vw_bmc_entry, endpoint) },
		{ "username", offsetof(struct vw_bmc_entry, username) },
		{ "password", offsetof(struct vw_bmc_entry, password) },
		{ "passwordFile", offsetof(struct vw_bmc_entry, password_file) },
		{ "caFile", offsetof(struct vw_bmc_entry, ca_file) },
	};
	_cleanup_yaml_event_ yaml_event_t key = { 0 };
	_cleanup_yaml_event_ yaml_event_t val = { 0 };
	int r;

	r = expect(y, &val, YAML_MAPPING_START_EVENT, "a BMC");
	while (r == 0 && (r = vw_yaml_next_scalar(y, &key, YAML_MAPPING_END_EVENT, "a key")) > 0) {
		const char *k = (const char *)key.data.scalar.value;
		size_t i;

		r = vw_yaml_next(y, &val);
		if (r < 0)
			break;
		for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
			if (strcmp(k, fields[i].key) == 0)
				break;
		if (i == sizeof(fields) / sizeof(fields[0]) && strcmp(k, "insecure") != 0) {
			r = skip(y, &val); /* as Kepler's reader: other keys mean nothing */
			continue;
		}
		if (val.type != YAML_SCALAR_EVENT || vw_yaml_has_nul(&val)) {
			r = vw_yaml_err(y, &val.start_mark, "%s must be a plain value", k);
			break;
		}
		if (strcmp(k, "insecure") == 0) {
			const char *v = (const char *)val.data.scalar.value;

			e->insecure = !strcasecmp(v, "true") || !strcasecmp(v, "yes");
			if (!e->insecure && strcasecmp(v, "false") && strcasecmp(v, "no"))
				r = vw_yaml_err(y, &val.start_mark, "insecure must be true or false");
			continue;
		}
		r = dup_scalar(&val, (char **)((char *)e + fields[i].off));
	}
	return r < 0 ? r : 0;
}

/*
 * One pass over the file: with *bmc_id NULL, find node's BMC id under nodes:; else read the
 * entry *bmc_id under bmcs: into e. 1 when found, 0 when not, -errno.
 */
static int scan(struct vw_yaml *y, const char *node, char **bmc_id, struct vw_bmc_entry *e)
{
	_cleanup_yaml_event_ yaml_event_t ev = { 0 };
	_cleanup_yaml_event_ yaml_event_t key = { 0 };
	_cleanup_yaml_event_ yaml_event_t sec = { 0 };
	const char *want = *bmc_id ? "bmcs" : "nodes";
	int found = 0, r;

	for (int i = 0; i < 2; i++) { /* stream start, document start */
		r = vw_yaml_next(y, &ev);
		if (r < 0)
			return r;
		if (ev.type == YAML_STREAM_END_EVENT)
			return 0; /* an empty file */
	}
	r = expect(y, &ev, YAML_MAPPING_START_EVENT, "the BMC file");
	while (r == 0 && (r = vw_yaml_next_scalar(y, &sec, YAML_MAPPING_END_EVENT, "a key")) > 0) {
		bool ours = strcmp((const char *)sec.data.scalar.value, want) == 0;

		r = vw_yaml_next(y, &ev);
		if (r < 0 || !ours) {
			r = r < 0 ? r : skip(y, &ev);
			continue;
		}
		if (ev.type != YAML_MAPPING_START_EVENT) {
			r = vw_yaml_err(y, &ev.start_mark, "%s must be a mapping, got a %s", want,
					vw_yaml_kind(&ev));
			break;
		}
		while ((r = vw_yaml_next_scalar(y, &key, YAML_MAPPING_END_EVENT, "a key")) > 0) {
			const char *k = (const char *)key.data.scalar.value;

			if (!*bmc_id && strcmp(k, node) == 0) {
				r = expect(y, &ev, YAML_SCALAR_EVENT, "a node's BMC id");
				if (r == 0)
					r = dup_scalar(&ev, bmc_id);
				found = r == 0;
			} else if (*bmc_id && strcmp(k, *bmc_id) == 0) {
				r = read_bmc(y, e);
				found = r == 0;
			} else if ((r = vw_yaml_next(y, &ev)) == 0) {
				r = skip(y, &ev);
			}
			if (r < 0)
				return r;
		}
	}
	return r < 0 ? r : found;
}

static int scan_buf(const char *path, const char *buf, size_t len, const char *node,
		    char **bmc_id, struct vw_bmc_entry *e, char *err, size_t errlen)
{
	struct vw_yaml y;
	int r = vw_yaml_open_buf(&y, path, WHAT, buf, len, BMC_FILE_MAX, err, errlen);

	if (r == 0)
		r = scan(&y, node, bmc_id, e);
	vw_yaml_close(&y);
	return r;
}

int vw_bmc_file_lookup_buf(const char *path, const char *buf, size_t len, const char *node,
			   struct vw_bmc_entry *ret, char *err, size_t errlen)
{
	char *id = NULL;
	int r;

	memset(ret, 0, sizeof(*ret));
	r = scan_buf(path, buf, len, node, &id, ret, err, errlen);
	if (r == 0) {
		snprintf(err, errlen, "%s: no BMC for node \"%s\" under nodes:", path, node);
		r = -ENOENT;
	}
	if (r == 1) {
		r = scan_buf(path, buf, len, node, &id, ret, err, errlen);
		if (r == 0) {
			snprintf(err, errlen, "%s: node \"%s\" names BMC \"%s\", which bmcs: lacks",
				 path, node, id);
			r = -EINVAL;
		}
	}
	ret->id = id;
	if (r == 1 && (!ret->endpoint || !*ret->endpoint)) {
		snprintf(err, errlen, "%s: BMC \"%s\" has no endpoint", path, id);
		r = -EINVAL;
	}
	if (r == 1 && ret->password && ret->password_file) {
		snprintf(err, errlen, "%s: BMC \"%s\": give password or passwordFile, not both",
			 path, id);
		r = -EINVAL;
	}
	if (r < 0) {
		vw_bmc_entry_clear(ret);
		return r;
	}
	return 0;
}

int vw_bmc_file_lookup(const char *path, const char *node, struct vw_bmc_entry *ret, char *err,
		       size_t errlen)
{
	struct vw_yaml y;
	int r = vw_yaml_open(&y, path, WHAT, BMC_FILE_MAX, err, errlen);

	if (r == 0)
		r = vw_bmc_file_lookup_buf(path, y.buf, y.len, node, ret, err, errlen);
	vw_yaml_close(&y);
	return r;
}

void vw_bmc_entry_clear(struct vw_bmc_entry *e)
{
	free(e->id);
	free(e->endpoint);
	free(e->username);
	if (e->password)
		explicit_bzero(e->password, strlen(e->password));
	free(e->password);
	free(e->password_file);
	free(e->ca_file);
	memset(e, 0, sizeof(*e));
}

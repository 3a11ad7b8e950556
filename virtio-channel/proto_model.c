/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Model frames (PROTOCOL.md §2a): the host hands a VM's guest the model it trained for that VM.
 * The body is a Kepler weight file carried as a JSON string, so the frame stays three levels
 * deep whatever the model's nesting, and its SHA-256 travels beside it: a body cut or altered
 * on the way is refused (`integrity`) before anything parses it as a model. What the body
 * means is the model loader's to judge (shared/model), under its own hostile-input rules.
 */
#include <errno.h>
#include <gnutls/crypto.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"
#include "proto_priv.h"

#define MODEL_DEPTH 3 /* the frame needs 2; room for nothing deeper */

static bool name_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= VW_PROTO_MODEL_NAME_MAX)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || strchr("_.:-", *s)))
			return false;
	return true;
}

static bool hex64_valid(const char *s)
{
	for (size_t i = 0; i < 64; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return s[64] == '\0';
}

static bool kind_model(const char *s)
{
	return strcmp(s, "model") == 0;
}

static bool any_string(const char *s)
{
	(void)s;
	return true;
}

/* The lower-case hex SHA-256 of body. */
static int sha256_hex(const char *body, size_t len, char out[65])
{
	unsigned char d[32];

	if (gnutls_hash_fast(GNUTLS_DIG_SHA256, body, len, d) < 0)
		return -EIO;
	for (size_t i = 0; i < sizeof(d); i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
	return 0;
}

bool vw_proto_line_is_model(const char *line, size_t len)
{
	_cleanup_(vw_proto_json_putp) struct json_object *obj = NULL;
	char kind[8];

	return vw_proto_parse_object(line, len, VW_PROTO_MAX_FRAME, MODEL_DEPTH + 3, &obj) ==
		       VW_PROTO_OK &&
	       vw_proto_get_string(obj, "kind", kind, sizeof(kind), kind_model) == VW_PROTO_OK;
}

int vw_proto_encode_model(struct vw_model_frame *m, char *buf, size_t size, size_t *ret_len)
{
	_cleanup_(vw_proto_json_putp) struct json_object *body = NULL;
	const char *esc;
	int n;

	if ((m->version != 0 && m->version != VW_PROTO_VERSION) || m->epoch > INT64_MAX ||
	    m->mseq > INT64_MAX || !vw_proto_uuid_valid(m->vm_uuid) || !name_valid(m->name) ||
	    m->body_len == 0 || m->body_len > VW_PROTO_MAX_MODEL ||
	    memchr(m->body, '\0', m->body_len))
		return -EINVAL;
	if (sha256_hex(m->body, m->body_len, m->sha256) < 0)
		return -EIO;
	body = json_object_new_string_len(m->body, (int)m->body_len);
	esc = body ? json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN |
								  JSON_C_TO_STRING_NOSLASHESCAPE)
		   : NULL;
	if (!esc)
		return -ENOMEM;
	n = snprintf(buf, VW_MIN(size, (size_t)VW_PROTO_MAX_FRAME),
		     "{\"v\":%u,\"kind\":\"model\",\"epoch\":%" PRIu64 ",\"vm\":\"%s\",\"mseq\":%" PRIu64
		     ",\"name\":\"%s\",\"sha256\":\"%s\",\"body\":%s}\n",
		     VW_PROTO_VERSION, m->epoch, m->vm_uuid, m->mseq, m->name, m->sha256, esc);
	if (n < 0 || (size_t)n >= VW_MIN(size, (size_t)VW_PROTO_MAX_FRAME))
		return -ENOBUFS;
	if (ret_len)
		*ret_len = (size_t)n;
	return 0;
}

enum vw_proto_error vw_proto_decode_model(const char *line, size_t len, struct vw_model_frame *ret)
{
	_cleanup_(vw_proto_json_putp) struct json_object *obj = NULL;
	struct vw_model_frame *m = ret;
	char kind[8], sha[65];
	enum vw_proto_error e;

	e = vw_proto_parse_object(line, len, VW_PROTO_MAX_FRAME, MODEL_DEPTH, &obj);
	if (e)
		return e;
	m->body_len = 0;
	if ((e = vw_proto_get_version(obj, &m->version)) ||
	    (e = vw_proto_get_string(obj, "kind", kind, sizeof(kind), kind_model)) ||
	    (e = vw_proto_get_u64(obj, "epoch", INT64_MAX, &m->epoch)) ||
	    (e = vw_proto_get_string(obj, "vm", m->vm_uuid, sizeof(m->vm_uuid),
				     vw_proto_uuid_valid)) ||
	    (e = vw_proto_get_u64(obj, "mseq", INT64_MAX, &m->mseq)) ||
	    (e = vw_proto_get_string(obj, "name", m->name, sizeof(m->name), name_valid)) ||
	    (e = vw_proto_get_string(obj, "sha256", m->sha256, sizeof(m->sha256), hex64_valid)) ||
	    (e = vw_proto_get_string(obj, "body", m->body, sizeof(m->body), any_string)))
		return e;
	m->body_len = strlen(m->body);
	if (m->body_len == 0)
		return VW_PROTO_E_RANGE;
	if (sha256_hex(m->body, m->body_len, sha) < 0 || strcmp(sha, m->sha256) != 0)
		return VW_PROTO_E_INTEGRITY;
	return VW_PROTO_OK;
}

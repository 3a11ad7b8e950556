/* SPDX-License-Identifier: Apache-2.0 */
/* The decoder's rules (proto.c), shared by the energy frames' and the model frames' codecs. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

void vw_proto_json_putp(struct json_object **o);
/* One line under cap bytes (its '\n' included) as a single JSON object, nesting under depth:
 * no partial parse, no trailing bytes, no NUL, raw or escaped. */
enum vw_proto_error vw_proto_parse_object(const char *line, size_t len, size_t cap, int depth,
					  struct json_object **ret);
enum vw_proto_error vw_proto_get_field(struct json_object *o, const char *key,
				       enum json_type type, struct json_object **ret);
/* A JSON integer in [0, max] (max <= INT64_MAX). */
enum vw_proto_error vw_proto_get_u64(struct json_object *o, const char *key, uint64_t max,
				     uint64_t *ret);
/* A string without embedded NULs that fits size (its NUL included) and passes check(). */
enum vw_proto_error vw_proto_get_string(struct json_object *o, const char *key, char *buf,
					size_t size, bool (*check)(const char *));
/* "v": VW_PROTO_VERSION, else VW_PROTO_E_VERSION. */
enum vw_proto_error vw_proto_get_version(struct json_object *o, unsigned *ret);

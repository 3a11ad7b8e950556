/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Independent reading of model files for the model tests: numbers come straight out of the JSON
 * with json-c, never through shared/model/model.c, so the tests check the module against the formulas
 * written in the tests themselves.
 */
#pragma once

#include <json-c/json.h>

/* Parse VW_TEST_DATA/models/<file> (the test fails if it cannot). json_object_put() it. */
json_object *vw_ref_load(const char *file);
/* Parse a JSON string (the test fails if it cannot). */
json_object *vw_ref_parse(const char *json);
/* The number at a '/'-separated path ("package/All_Weights/Bias_Weight"); fails the test if absent.
 */
double vw_ref_num(json_object *root, const char *path);
/* Element i of the array at path. */
double vw_ref_idx(json_object *root, const char *path, size_t i);

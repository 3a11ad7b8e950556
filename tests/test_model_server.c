/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The model server client against a local libmicrohttpd server standing in for
 * kepler-model-server: a good answer (a fixture weight file), a slow one (timeout), a 500 and
 * garbage (both refused, so the caller falls back to its local model).
 */
#include "vw_test.h"

#include <errno.h>
#include <json-c/json.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "fixture.h"
#include "model.h"
#include "model_server.h"

#define GOOD_MODEL                                                                                 \
	VW_TEST_DATA "/models/kepler-model-db_v0.7_ec2-0.7.11_rapl-sysfs_AbsPower_BPFOnly_"         \
		     "SGDRegressorTrainer_0.json"

enum mode { GOOD, SLOW, FAIL500, GARBAGE };

struct server {
	struct MHD_Daemon *d;
	enum mode mode;
	char url[64];
	char *model;
	size_t model_len;
	char body[8192]; /* the last request body */
	size_t body_len;
	char method[16], path[64];
};

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
			       const char *method, const char *version, const char *data,
			       size_t *data_size, void **con_cls)
{
	struct server *s = cls;
	struct MHD_Response *resp;
	const char *text = "";
	size_t len = 0;
	unsigned code = 200;
	enum MHD_Result ret;

	(void)version;
	if (!*con_cls) { /* first call: headers only */
		*con_cls = s;
		s->body_len = 0;
		return MHD_YES;
	}
	if (*data_size) {
		size_t n = *data_size < sizeof(s->body) - 1 - s->body_len
				   ? *data_size
				   : sizeof(s->body) - 1 - s->body_len;
		memcpy(s->body + s->body_len, data, n);
		s->body_len += n;
		s->body[s->body_len] = '\0';
		*data_size = 0;
		return MHD_YES;
	}
	snprintf(s->method, sizeof(s->method), "%s", method);
	snprintf(s->path, sizeof(s->path), "%s", url);
	switch (s->mode) {
	case GOOD:
		text = s->model;
		len = s->model_len;
		break;
	case SLOW:
		usleep(1500 * 1000);
		text = s->model;
		len = s->model_len;
		break;
	case FAIL500:
		code = 500;
		text = "internal error";
		len = strlen(text);
		break;
	case GARBAGE:
		text = "{\"this is\": not a model";
		len = strlen(text);
		break;
	}
	resp = MHD_create_response_from_buffer(len, (void *)text, MHD_RESPMEM_MUST_COPY);
	ret = MHD_queue_response(c, code, resp);
	MHD_destroy_response(resp);
	return ret;
}

static int setup(void **state)
{
	struct server *s = calloc(1, sizeof(*s));
	const union MHD_DaemonInfo *info;

	assert_non_null(s);
	s->model = vw_fixture_slurp(GOOD_MODEL, &s->model_len);
	assert_non_null(s->model);
	s->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0,
				NULL, NULL, handler, s, MHD_OPTION_END);
	assert_non_null(s->d);
	info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
	snprintf(s->url, sizeof(s->url), "http://127.0.0.1:%u", info->port);
	*state = s;
	return 0;
}

static int teardown(void **state)
{
	struct server *s = *state;

	MHD_stop_daemon(s->d);
	free(s->model);
	free(s);
	return 0;
}

static const struct vw_machine_spec spec = { .vendor = "intel",
					     .processor = "intel_xeon_platinum_8259cl",
					     .cores = 4,
					     .chips = 1,
					     .threads_per_core = 2,
					     .memory_gb = 16,
					     .frequency_mhz = 2500 };

/* Ask url for the model of `spec` (timeout_ms): vw_model_server_fetch()'s result, *m, err. */
static int fetch(const char *url, unsigned timeout_ms, struct vw_model **m, char *err,
		 size_t errlen)
{
	struct vw_model_server_opts o = { .url = url, .timeout_ms = timeout_ms };

	*m = NULL;
	err[0] = '\0';
	return vw_model_server_fetch(&o, &spec, m, err, errlen);
}

static void test_good(void **state)
{
	struct server *s = *state;
	struct json_object *req, *v, *ms;
	struct vw_model *m;
	char err[256];

	s->mode = GOOD;
	assert_int_equal(fetch(s->url, 5000, &m, err, sizeof(err)), 0);
	assert_non_null(m);
	assert_true(vw_model_n_components(m) > 0);
	vw_model_free(m);
	/* What the server was asked: models.md section 5. */
	assert_string_equal(s->method, "POST");
	assert_string_equal(s->path, "/model");
	req = json_tokener_parse(s->body);
	assert_non_null(req);
	assert_true(json_object_object_get_ex(req, "node_type", &v));
	assert_int_equal(json_object_get_int(v), -1);
	assert_true(json_object_object_get_ex(req, "weight", &v));
	assert_true(json_object_get_boolean(v));
	assert_true(json_object_object_get_ex(req, "output_type", &v));
	assert_string_equal(json_object_get_string(v), "AbsPower");
	assert_true(json_object_object_get_ex(req, "source", &v));
	assert_string_equal(json_object_get_string(v), "rapl-sysfs");
	assert_true(json_object_object_get_ex(req, "metrics", &v));
	assert_string_equal(json_object_get_string(json_object_array_get_idx(v, 0)),
			    "bpf_cpu_time_ms");
	assert_true(json_object_object_get_ex(req, "machine_spec", &ms));
	assert_true(json_object_object_get_ex(ms, "processor", &v));
	assert_string_equal(json_object_get_string(v), "intel_xeon_platinum_8259cl");
	assert_true(json_object_object_get_ex(ms, "cores", &v));
	assert_int_equal(json_object_get_int(v), 4);
	assert_true(json_object_object_get_ex(ms, "memory", &v));
	assert_int_equal(json_object_get_int(v), 16);
	json_object_put(req);
}

static void test_slow_times_out(void **state)
{
	struct server *s = *state;
	struct vw_model *m;
	char err[256];

	s->mode = SLOW;
	assert_int_equal(fetch(s->url, 300, &m, err, sizeof(err)), -ETIMEDOUT);
	assert_null(m);
	assert_non_null(strstr(err, "/model"));
}

static void test_500_and_garbage_refused(void **state)
{
	struct server *s = *state;
	struct vw_model *m;
	char err[256];

	s->mode = FAIL500;
	assert_true(fetch(s->url, 5000, &m, err, sizeof(err)) < 0);
	assert_null(m);
	s->mode = GARBAGE;
	assert_int_equal(fetch(s->url, 5000, &m, err, sizeof(err)), -EINVAL);
	assert_null(m);
	assert_non_null(strstr(err, "not a model"));
	/* Not http(s): refused before any request. */
	assert_int_equal(fetch("file:///etc/passwd", 5000, &m, err, sizeof(err)), -EINVAL);
}

static void test_machine_spec(void **state)
{
	static const char cpuinfo[] =
		"processor\t: 0\nvendor_id\t: GenuineIntel\n"
		"model name\t: Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz\n"
		"cpu MHz\t\t: 2499.998\nphysical id\t: 0\ncore id\t\t: 0\n\n"
		"processor\t: 1\nvendor_id\t: GenuineIntel\n"
		"model name\t: Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz\n"
		"physical id\t: 0\ncore id\t\t: 0\n\n";
	static const char meminfo[] = "MemTotal:       16318508 kB\n";
	const struct vw_fixture_root *root = *state;
	struct vw_machine_spec sp;
	char norm[64];

	assert_int_equal(vw_fixture_write(root->path, "cpuinfo", cpuinfo, 0), 0);
	assert_int_equal(vw_fixture_write(root->path, "meminfo", meminfo, 0), 0);
	assert_int_equal(vw_machine_spec_read(root->fd, &sp), 0);
	assert_string_equal(sp.vendor, "intel");
	assert_string_equal(sp.processor, "intel_r_xeon_r_platinum_8259cl_cpu_2_50ghz");
	assert_int_equal(sp.cores, 2);
	assert_int_equal(sp.chips, 1);
	assert_int_equal(sp.threads_per_core, 2);
	assert_int_equal(sp.memory_gb, 16);
	assert_int_equal(sp.frequency_mhz, 2500);
	vw_machine_spec_normalise("  AMD EPYC 7R13 ", norm, sizeof(norm));
	assert_string_equal(norm, "amd_epyc_7r13");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_good, setup, teardown),
		cmocka_unit_test_setup_teardown(test_slow_times_out, setup, teardown),
		cmocka_unit_test_setup_teardown(test_500_and_garbage_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_machine_spec, vw_fixture_root_setup,
						vw_fixture_root_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
#include "workloads_fixture.h"

#include "vw_test.h"

#include <microhttpd.h>
#include <stdio.h>
#include <unistd.h>

#include "fixture.h"
#include "cgroup_path.h"
#include "prom.h"
#include "workloads.h"

void kubelet_fixture_start(struct kubelet_fixture *k, const char *body)
{
	struct vw_podmeta_opts po = { .mode = VW_PODMETA_KUBELET, .allow_http = true,
				      .node_name = "n1", .poll_ns = VW_NSEC_PER_SEC };
	unsigned port = 0;
	char url[64];

	k->d = vw_fixture_json_server(body, &port);
	assert_non_null(k->d);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", port);
	po.url = url;
	k->pm = vw_podmeta_start(&po);
	assert_non_null(k->pm);
	for (int i = 0; i < 500 && !vw_podmeta_synced(k->pm); i++)
		usleep(20000);
	assert_true(vw_podmeta_synced(k->pm));
}

void kubelet_fixture_stop(struct kubelet_fixture *k)
{
	vw_podmeta_stop(k->pm);
	MHD_stop_daemon(k->d);
}

char *workloads_fixture_render(struct vw_workloads *w)
{
	struct vw_prom_writer *pw = vw_prom_writer_new(VW_PROM_TEXT_0_0_4, 0);
	char *out = NULL;

	assert_non_null(pw);
	assert_int_equal(vw_workloads_render(w, pw, "n1", "procfs", NULL), 0);
	assert_int_equal(vw_workloads_render_gpu(w, pw, "n1"), 0); /* nothing without GPUs */
	assert_int_equal(vw_prom_finish(pw, &out, NULL), 0);
	vw_prom_writer_free(pw);
	return out;
}
